/*
 * test_http_quota.c - per-tenant quotas end to end: asyncexec-admin tenant set TENANT
 * --max-open N, then submits through nginx. With a limit N, N submits pass; once the
 * workers' counts are current (the documented lag: at most cache_ttl_seconds, waited for
 * with a bound) every further new submit gets 429 quota_exceeded with Retry-After, from
 * every worker; an identical resubmit (a retry) still gets 202 and another body 409;
 * another tenant on the same route is unaffected, the same tenant on another route is not;
 * completing one and cancelling one each free a slot within the TTL; 0 = unlimited;
 * tenant list shows the limit; usage errors exit 2.
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIMIT		3
#define WORKERS_MAX	16	/* 429 asked this many times: every worker answers */

static struct fx F, G;
static long ttl_s;

/* Waits the documented lag: every worker's cached limit and count is then newer. */
static void
wait_ttl(void)
{
	int64_t until = ut_now_ms() + ttl_s * 1000 + 300;

	while (ut_now_ms() < until)
		usleep(50000);
}

/* asyncexec-admin --config CONF with up to 6 words; its exit status (output dropped). */
static int
admin_rc(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
    const char *a6)
{
	const char *argv[10] = { test_env("ASYNCEXEC_ADMIN"), "--config",
	    test_env("ASYNCEXEC_TEST_CONFIG"), a1, a2, a3, a4, a5, a6, NULL };
	pid_t pid;
	int st, fd;

	if ((pid = fork()) == 0) {
		if ((fd = open("/dev/null", O_WRONLY)) != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void
test_usage(void)
{
	CHECK_EQ_INT(admin_rc("tenant", NULL, NULL, NULL, NULL, NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", NULL, NULL, NULL, NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, NULL, NULL, NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "--max-open", NULL, NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "--max-open", "-1", NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "--max-open", "3x", NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "--max-open", "1000000001",
	    NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", "bad tenant", "--max-open", "1", NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "extra", "--max-open", "1"), 2);
	CHECK_EQ_INT(admin_rc("tenant", "list", "--max-open", "1", NULL, NULL), 2);
	CHECK_EQ_INT(admin_rc("tenant", "set", F.tenant, "--retention-days", "1", NULL), 2);
}

/* Submits a new execution (its own correlation id) with KEY on F's route. */
static int
submit_new(const struct fx *f, const char *key, const char *tag, struct http_resp *r)
{
	char cid[CID_MAX];

	fx_cid(cid, sizeof cid, tag);
	return fx_submit(f, key, cid, "{\"q\":1}", r);
}

/* A 429 quota_exceeded with Retry-After of at least the TTL (and 1). */
static int
is_quota_exceeded(const struct http_resp *r)
{
	const char *ra = http_header(r, "Retry-After");
	long want = ttl_s > config_long("retry_after_seconds", 1) ? ttl_s :
	    config_long("retry_after_seconds", 1);

	if (!expect_problem(r, 429, "quota_exceeded"))
		return 0;
	if (ra == NULL || !is_digits(ra) || atol(ra) != (want > 0 ? want : 1)) {
		fprintf(stderr, "  Retry-After %s, want %ld\n", ra ? ra : "(none)", want);
		return 0;
	}
	return 1;
}

/* Every worker refuses a new submit of F's tenant on ROUTE (asked WORKERS_MAX times). */
static void
check_full(const struct fx *route, const char *what)
{
	struct http_resp r;
	int i, refused = 0;

	for (i = 0; i < WORKERS_MAX; i++) {
		submit_new(route, F.ckey, "full", &r);
		refused += is_quota_exceeded(&r);
		http_resp_free(&r);
	}
	if (refused != WORKERS_MAX)
		fprintf(stderr, "  %s: %d of %d refused\n", what, refused, WORKERS_MAX);
	CHECK_EQ_INT(refused, WORKERS_MAX);
}

/* A new submit passes within the TTL (+ margin): a slot was freed. Returns 1 if so. */
static int
passes_within_ttl(struct sub *s)
{
	int64_t until = ut_now_ms() + ttl_s * 1000 + 1500;
	struct http_resp r;
	char cid[CID_MAX];
	int st;

	fx_cid(cid, sizeof cid, "freed");
	do {
		st = fx_submit(&F, F.ckey, cid, "{\"q\":2}", &r);
		http_resp_free(&r);
		if (st == 202) {
			/* the same id and body again: a retry, its token is the one kept */
			return fx_submit_ok(&F, cid, "{\"q\":2}", s);
		}
		if (st != 429)
			break;
		usleep(100000);
	} while (ut_now_ms() < until);
	fprintf(stderr, "  no slot freed within %ld s (last status %d)\n", ttl_s + 1, st);
	return 0;
}

static void
test_quota(void)
{
	struct sub s[LIMIT], again, freed;
	struct claim c;
	struct http_resp r;
	char *other_key, *line;
	char other_tenant[80];
	int i;

	line = admin("tenant set %s --max-open %d", F.tenant, LIMIT);
	CHECK(line != NULL && strstr(line, "at most 3") != NULL);
	free(line);
	line = admin("tenant list");
	free(line);
	for (i = 0; i < LIMIT; i++) {
		char cid[CID_MAX];

		fx_cid(cid, sizeof cid, "q");
		CHECK(fx_submit_ok(&F, cid, "{\"n\":1}", &s[i]));
	}
	wait_ttl();
	check_full(&F, "at the limit");
	/* the same tenant on another route: the quota is the tenant's */
	check_full(&G, "another route");
	/* a server-generated id is never a retry */
	CHECK(is_quota_exceeded((fx_submit(&F, F.ckey, NULL, "{\"n\":1}", &r), &r)));
	http_resp_free(&r);
	/* a retry at the limit: 202 with a fresh token; another body: 409 */
	CHECK(fx_submit_ok(&F, s[0].cid, "{\"n\":1}", &again));
	CHECK(strcmp(again.token, s[0].token) != 0);
	CHECK_EQ_STR(fx_status(&F, &again), "waiting_callback");
	CHECK_EQ_INT(fx_submit(&F, F.ckey, s[0].cid, "{\"n\":2}", &r), 409);
	CHECK(expect_problem(&r, 409, "correlation_id_conflict"));
	http_resp_free(&r);
	/* another tenant on the same route is unaffected */
	snprintf(other_tenant, sizeof other_tenant, "%s-o", F.tenant);
	other_key = fx_consumer_key(other_tenant);
	for (i = 0; i < LIMIT + 1; i++) {
		CHECK_EQ_INT(submit_new(&F, other_key, "other", &r), 202);
		http_resp_free(&r);
	}
	free(other_key);
	/* completing one frees a slot within the TTL */
	CHECK(fx_claim_one(&F, &c));
	CHECK_EQ_INT(fx_complete(&F, &c, "{\"ok\":true}"), 200);
	CHECK(passes_within_ttl(&freed));
	wait_ttl();
	check_full(&F, "full again");
	/* cancelling one (unclaimed: at once) frees a slot too */
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, freed.cid, freed.token, &r), 200);
	http_resp_free(&r);
	CHECK(passes_within_ttl(&freed));
	/* 0: unlimited again, within the TTL */
	line = admin("tenant set %s --max-open 0", F.tenant);
	CHECK(line != NULL && strstr(line, "no quota") != NULL);
	free(line);
	wait_ttl();
	for (i = 0; i < LIMIT + 2; i++) {
		CHECK_EQ_INT(submit_new(&F, F.ckey, "unlimited", &r), 202);
		http_resp_free(&r);
	}
}

/* tenant list --json names the tenant with its limit and its waiting count. */
static void
test_list(void)
{
	static char out[1 << 20];
	char cmd[2048], *line;
	struct json_object *a;
	size_t i, n = 0;
	int found = 0;
	FILE *p;

	line = admin("tenant set %s --max-open 7", G.tenant);
	free(line);
	snprintf(cmd, sizeof cmd, "'%s' --config '%s' --json tenant list",
	    test_env("ASYNCEXEC_ADMIN"), test_env("ASYNCEXEC_TEST_CONFIG"));
	if ((p = popen(cmd, "r")) != NULL) {
		n = fread(out, 1, sizeof out - 1, p);
		CHECK_EQ_INT(pclose(p), 0);
	}
	out[n] = '\0';
	a = json_tokener_parse(out);
	for (i = 0; a != NULL && json_object_is_type(a, json_type_array) &&
	    i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		const char *t = jstr(e, "tenant");
		int64_t m = -1, w = -1;

		if (t != NULL && strcmp(t, G.tenant) == 0 && jint(e, "max_open", &m) &&
		    m == 7 && jint(e, "waiting", &w) && w == 0)
			found = 1;
	}
	if (!found)
		fprintf(stderr, "  tenant list --json: %.500s\n", out);
	CHECK(found);
	json_object_put(a);
	line = admin("tenant set %s --max-open 0", G.tenant);
	free(line);
}

int
main(void)
{
	http_test_init();
	ttl_s = config_long("cache_ttl_seconds", 5);
	fx_setup(&F, "quota");
	fx_setup(&G, "quota2");
	/* G's route serves F's tenant too: a key of F's tenant may submit anywhere */
	test_usage();
	test_quota();
	test_list();
	fx_free(&F);
	fx_free(&G);
	return check_done("http_quota");
}
