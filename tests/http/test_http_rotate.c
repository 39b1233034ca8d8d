/*
 * test_http_rotate.c - asyncexec-admin key rotate through nginx.
 *
 * An execution submitted before a rotation is polled, listed and cancelled with the new
 * key, and still with the old one during the grace; a third key of the tenant gets the
 * same 404 and an empty list; a rotated key's own submits are seen by the keys rotated
 * from it, never by the key it was rotated from (poll and cancel 404; not listed once the
 * workers' cached keys are a TTL old, and a page of the old key reads a bounded number of
 * its successor's entries: a short or empty page with a page token past them);
 * --grace-hours 0 revokes the old key on every worker once the cache TTL has passed; a
 * revoked key cannot be rotated; a row without a lineage (written by a schema-6 binary)
 * is still matched by the initiator's key hash, and only by it;
 * a second rotation of a key in its grace keeps the earlier end, and
 * says the end it kept.
 */
#include "util/clock.h"
#include "api.h"
#include "check.h"
#include "fixture.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* after the cache TTL, for the clocks of the test and the workers read apart */
#define SEEN_MARGIN_MS	250
#define REFUSALS	16	/* polls with a revoked key that must all be 401 */
#define HOUR_MS		3600000LL

static struct fx F;

/*
 * Waits until SEEN_MARGIN_MS past the monotonic time bound (ut_now_ms),
 * by which every worker's cache entry of g's consumer key that could
 * still take it for live has expired (src/lib/cache.c), then polls the
 * execution s with that key REFUSALS times: the number of 401 problems.
 * Which worker answers is nginx's choice (a kept connection stays with
 * its worker), so no number of 401s proves every worker before then.
 */
static int
refused_after(struct fx *g, const struct sub *s, int64_t bound)
{
	struct http_resp	 r;
	int64_t			 left;
	int			 i, n = 0;

	while ((left = bound + SEEN_MARGIN_MS - ut_now_ms()) > 0)
		ut_pause_ms(left);
	for (i = 0; i < REFUSALS; i++) {
		fx_poll(g, g->ckey, s->cid, s->token, NULL, &r);
		n += r.status == 401 && expect_unauthorized(&r);
		http_resp_free(&r);
	}
	return n;
}

/* Waits until SEEN_MARGIN_MS past the monotonic time bound (ut_now_ms). */
static void
wait_past(int64_t bound)
{
	int64_t	 left;

	while ((left = bound + SEEN_MARGIN_MS - ut_now_ms()) > 0)
		ut_pause_ms(left);
}

/* GET the list of F's route with KEY: the number of items, -1 when not a 200. */
static long
list_count(const char *key)
{
	struct http_resp r;
	struct json_object *o;
	char path[300];
	long n = -1;

	snprintf(path, sizeof path, "/v1/executions/%s?limit=100", F.route);
	if (api("GET", path, key, NULL, &r, (const char *)NULL) == 200 &&
	    (o = json_body(&r)) != NULL) {
		n = jlen(o, "executions");
		json_object_put(o);
	}
	http_resp_free(&r);
	return n;
}

/* Poll status of S with KEY. */
static int
poll_status(const char *key, const struct sub *s)
{
	struct http_resp r;
	int st = fx_poll(&F, key, s->cid, s->token, NULL, &r);

	http_resp_free(&r);
	return st;
}

/* Exit status of asyncexec-admin with ARGS (stdout and stderr discarded). */
static int
admin_status(const char *args)
{
	char cmd[2048];
	int st;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s >/dev/null 2>&1",
	    test_env("ASYNCEXEC_ADMIN"), test_env("ASYNCEXEC_TEST_CONFIG"), args);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The db_socket of the test config into buf ("" when it has none). */
static void
db_socket(char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen(test_env("ASYNCEXEC_TEST_CONFIG"), "r");

	buf[0] = '\0';
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, " db_socket = %255s", line) == 1) {
			snprintf(buf, len, "%.255s", line);	/* %255s above */
			break;
		}
	if (f != NULL)
		fclose(f);
}

/* Runs SQL (no double quotes) as the test server's root over its socket; 0 or -1. */
static int
root_sql(const char *sql)
{
	char cmd[4096], sock[256];

	db_socket(sock, sizeof sock);
	if (sock[0] == '\0') {
		fprintf(stderr, "  the test config has no db_socket\n");
		return -1;
	}
	snprintf(cmd, sizeof cmd, "mariadb --no-defaults -uroot --socket='%s' -N -e \"%s\" "
	    ">/dev/null", sock, sql);
	return system(cmd) == 0 ? 0 : -1;
}

static void
test_grace(void)
{
	struct sub s1, s2, s3;
	struct http_resp r;
	char *k2, *k3, *other;
	long ttl = config_long("cache_ttl_seconds", 5);
	int64_t rotated;

	CHECK(fx_submit_ok(&F, NULL, "{\"before\":1}", &s1));
	CHECK(fx_submit_ok(&F, NULL, "{\"before\":2}", &s3));
	rotated = ut_now_ms();
	k2 = admin("key rotate %s --grace-hours 24", F.ckey);
	CHECK(k2 != NULL && strncmp(k2, "ak_", 3) == 0 && strcmp(k2, F.ckey) != 0);
	other = fx_consumer_key(F.tenant);		/* a third key of the tenant */
	/* the new key sees the old key's executions; the old one keeps working */
	CHECK_EQ_INT(poll_status(k2, &s1), 200);
	CHECK_EQ_INT(poll_status(F.ckey, &s1), 200);
	CHECK_EQ_INT(list_count(k2), 2);
	CHECK_EQ_INT(list_count(F.ckey), 2);
	/* the third key: the same 404 as a stranger, nothing listed */
	fx_poll(&F, other, s1.cid, s1.token, NULL, &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	CHECK_EQ_INT(list_count(other), 0);
	fx_cancel(&F, other, s3.cid, s3.token, &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	/* cancel with the new key */
	fx_cancel(&F, k2, s3.cid, s3.token, &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	/* what the new key submits, the old one does not see (API.md: a key uses what a key
	 * it was rotated from submitted; the old one may have leaked): poll and cancel 404
	 * at once; not listed once the workers' cached copies of the old key (taken before
	 * the rotation, when it had no successor) are a TTL old; the new key sees it */
	{
		struct fx g = F;

		g.ckey = k2;
		CHECK(fx_submit_ok(&g, NULL, "{\"after\":1}", &s2));
	}
	fx_poll(&F, F.ckey, s2.cid, s2.token, NULL, &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	fx_cancel(&F, F.ckey, s2.cid, s2.token, &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	CHECK_EQ_INT(poll_status(k2, &s2), 200);
	wait_past(rotated + ttl * 1000);
	CHECK_EQ_INT(list_count(F.ckey), 2);
	CHECK_EQ_INT(list_count(k2), 3);
	CHECK_EQ_INT(list_count(other), 0);
	/* a rotation of the rotated key: still the same lineage, and the newest key sees
	 * what both before it submitted; k2, now in its grace, not what k3 submits */
	rotated = ut_now_ms();
	k3 = admin("key rotate %s", k2);
	CHECK(k3 != NULL && strncmp(k3, "ak_", 3) == 0);
	CHECK_EQ_INT(poll_status(k3, &s1), 200);
	CHECK_EQ_INT(poll_status(k3, &s2), 200);
	CHECK_EQ_INT(list_count(k3), 3);
	{
		struct fx g = F;
		struct sub s4;

		g.ckey = k3;
		CHECK(fx_submit_ok(&g, NULL, "{\"after\":2}", &s4));
		CHECK_EQ_INT(poll_status(k2, &s4), 404);
		CHECK_EQ_INT(poll_status(F.ckey, &s4), 404);
		CHECK_EQ_INT(poll_status(k3, &s4), 200);
		wait_past(rotated + ttl * 1000);
		CHECK_EQ_INT(list_count(k3), 4);
		CHECK_EQ_INT(list_count(k2), 3);
		CHECK_EQ_INT(list_count(F.ckey), 2);
		fx_cancel(&F, k3, s4.cid, s4.token, &r);
		CHECK(expect_json(&r, 200));
		http_resp_free(&r);
	}
	/* the third key rotated: its own lineage, still nothing of F's */
	{
		char *k4 = admin("key rotate %s --grace-hours 1", other);

		CHECK_EQ_INT(list_count(k4), 0);
		CHECK_EQ_INT(poll_status(k4, &s1), 404);
		free(k4);
	}
	free(k2);
	free(k3);
	free(other);
}

/*
 * One page of g's route with KEY, limit LIMIT, after page token TOKEN (NULL: the first):
 * its number of items (-1 when not a 200), its nextPageToken into next ("" for null).
 */
static long
list_page(const struct fx *g, const char *key, int limit, const char *token, char *next,
    size_t len)
{
	struct http_resp r;
	struct json_object *o, *t;
	char path[512];
	long n = -1;

	snprintf(path, sizeof path, "/v1/executions/%s?limit=%d%s%s", g->route, limit,
	    token != NULL ? "&pageToken=" : "", token != NULL ? token : "");
	next[0] = '\0';
	if (api("GET", path, key, NULL, &r, (const char *)NULL) == 200 &&
	    (o = json_body(&r)) != NULL) {
		n = jlen(o, "executions");
		if (json_object_object_get_ex(o, "nextPageToken", &t) &&
		    json_object_is_type(t, json_type_string))
			snprintf(next, len, "%s", json_object_get_string(t));
		json_object_put(o);
	}
	http_resp_free(&r);
	return n;
}

/*
 * A page of a rotation's old key reads at most LIST_SCAN_OF entries per item it may
 * hold (limit + 1), so its cost stays bounded however much its successor submits:
 * behind SCAN_NEWER entries of the successor, a page of limit 2 is empty and carries a
 * page token; the walk then reaches the old key's own two and ends. The successor lists
 * all of them.
 */
#define SCAN_NEWER	(LIST_SCAN_OF * 3 + 5)
static void
test_scan_bound(void)
{
	struct fx g, h;
	struct sub s;
	char next[256], tok[256];
	long ttl = config_long("cache_ttl_seconds", 5);
	int64_t rotated;
	int i;

	fx_setup(&g, "rotscan");
	CHECK(fx_submit_ok(&g, NULL, "{\"own\":1}", &s));
	CHECK(fx_submit_ok(&g, NULL, "{\"own\":2}", &s));
	rotated = ut_now_ms();
	h = g;
	h.ckey = admin("key rotate %s", g.ckey);
	CHECK(h.ckey != NULL);
	for (i = 0; i < SCAN_NEWER && h.ckey != NULL; i++)
		CHECK(fx_submit_ok(&h, NULL, "{\"newer\":1}", &s));
	wait_past(rotated + ttl * 1000);
	CHECK_EQ_INT(list_page(&g, g.ckey, 2, NULL, next, sizeof next), 0);
	CHECK(strlen(next) > 0);
	snprintf(tok, sizeof tok, "%s", next);
	CHECK_EQ_INT(list_page(&g, g.ckey, 2, tok, next, sizeof next), 2);
	CHECK_EQ_INT((long)strlen(next), 0);
	CHECK_EQ_INT(list_page(&g, h.ckey, 100, NULL, next, sizeof next), SCAN_NEWER + 2);
	CHECK_EQ_INT((long)strlen(next), 0);
	free(h.ckey);
	fx_free(&g);
}

static void
test_revoke_now(void)
{
	struct fx g;
	struct sub s;
	struct http_resp r;
	char *k2;
	long ttl = config_long("cache_ttl_seconds", 5);
	int i;

	fx_setup(&g, "rotnow");
	CHECK(fx_submit_ok(&g, NULL, "{\"x\":1}", &s));
	/* fill the workers' key caches with the old key first */
	for (i = 0; i < 8; i++) {
		fx_poll(&g, g.ckey, s.cid, s.token, NULL, &r);
		http_resp_free(&r);
	}
	k2 = admin("key rotate %s --grace-hours 0", g.ckey);
	/* every entry of the old key was stored before the rotation returned */
	CHECK(k2 != NULL);
	CHECK_EQ_INT(refused_after(&g, &s, ut_now_ms() + ttl * 1000), REFUSALS);
	fx_poll(&g, k2, s.cid, s.token, NULL, &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	/* a revoked key cannot be rotated; nor can a backend key or an unknown one */
	{
		char a[256];

		snprintf(a, sizeof a, "key rotate %s", g.ckey);
		CHECK(admin_status(a) != 0);
		snprintf(a, sizeof a, "key rotate %s", g.bkey);
		CHECK(admin_status(a) != 0);
		CHECK(admin_status("key rotate 999999999") != 0);
		CHECK(admin_status("key rotate 12 --grace-hours -1") != 0);
		CHECK(admin_status("key rotate") != 0);
	}
	free(k2);
	fx_free(&g);
}

/* A grace that ends: the old key's revoked_at moved to 2 s from now stops it on every
 * worker once that and the cache TTL have passed, whatever they cached (an entry stored
 * before the change expires with the TTL, one stored after has the new revoked_at); the
 * new key goes on. */
static void
test_grace_ends(void)
{
	struct fx g;
	struct sub s;
	struct http_resp r;
	char sql[512], *k2;
	long ttl = config_long("cache_ttl_seconds", 5);

	fx_setup(&g, "rotend");
	CHECK(fx_submit_ok(&g, NULL, "{\"x\":2}", &s));
	k2 = admin("key rotate %s --grace-hours 24", g.ckey);
	snprintf(sql, sizeof sql, "UPDATE asyncexec.s2r_api_key SET revoked_at = "
	    "UTC_TIMESTAMP(3) + INTERVAL 2 SECOND WHERE key_hash = UNHEX(SHA2('%s', 256))",
	    g.ckey);
	CHECK(root_sql(sql) == 0);
	CHECK_EQ_INT(refused_after(&g, &s, ut_now_ms() + (ttl > 2 ? ttl : 2) * 1000),
	    REFUSALS);
	fx_poll(&g, k2, s.cid, s.token, NULL, &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	free(k2);
	fx_free(&g);
}

/* A row of a schema-6 binary (no initiator_lineage): its key hash decides, as before. */
static void
test_legacy_row(void)
{
	struct fx g;
	struct sub s;
	char sql[512], *k2;

	fx_setup(&g, "rotlegacy");
	CHECK(fx_submit_ok(&g, NULL, "{\"legacy\":1}", &s));
	snprintf(sql, sizeof sql, "UPDATE asyncexec.s2r_async_execution SET "
	    "initiator_lineage = NULL WHERE environment = '%s' AND service_key = '%s' AND "
	    "correlation_id = '%s'", g.env, g.svc, s.cid);
	CHECK(root_sql(sql) == 0);
	k2 = admin("key rotate %s", g.ckey);
	{
		struct http_resp r;

		fx_poll(&g, g.ckey, s.cid, s.token, NULL, &r);
		CHECK(expect_json(&r, 200));
		http_resp_free(&r);
		fx_poll(&g, k2, s.cid, s.token, NULL, &r);
		CHECK(expect_problem(&r, 404, "not_found"));
		http_resp_free(&r);
	}
	free(k2);
	fx_free(&g);
}

/*
 * Rotates KEY (given on standard input) with ARGS: the exit status; the
 * new key's line and stderr land in buf (len bytes), and *end gets the
 * "revoked at" time it printed (-1: none).
 */
static int
rotate_said(const char *key, const char *args, char *buf, size_t len,
    int64_t *end)
{
	char cmd[2048], t[32];
	const char *p;
	FILE *f;
	size_t n;
	int st;

	snprintf(cmd, sizeof cmd, "printf '%%s\\n' '%s' | '%s' --config '%s' "
	    "key rotate - %s 2>&1", key, test_env("ASYNCEXEC_ADMIN"),
	    test_env("ASYNCEXEC_TEST_CONFIG"), args);
	buf[0] = '\0';
	*end = -1;
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	st = pclose(f);
	if ((p = strstr(buf, "revoked at ")) != NULL) {
		snprintf(t, sizeof t, "%.24s", p + 11);
		*end = rfc3339_ms(t);
	}
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The wall clock, UTC ms. */
static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A rotation during an earlier rotation's grace: the earlier end stays
 * (the statement never extends a grace), and the command prints that
 * end, not now + the new grace.
 */
static void
test_grace_kept(void)
{
	struct fx g;
	char out1[4096], out2[4096];
	int64_t t0, end1 = -1, end2 = -1;

	fx_setup(&g, "rotkeep");
	t0 = wall_ms();
	CHECK_EQ_INT(rotate_said(g.ckey, "--grace-hours 2", out1, sizeof out1,
	    &end1), 0);
	CHECK(end1 >= t0 + 2 * HOUR_MS - 60000 &&
	    end1 <= wall_ms() + 2 * HOUR_MS + 60000);
	CHECK(strstr(out1, "kept") == NULL);
	CHECK_EQ_INT(rotate_said(g.ckey, "--grace-hours 48", out2, sizeof out2,
	    &end2), 0);
	if (end2 != end1)
		fprintf(stderr, "  second rotation said: %s", out2);
	CHECK(end2 == end1);
	CHECK(strstr(out2, "was kept") != NULL);
	/* a shorter grace is taken: the end moves earlier */
	CHECK_EQ_INT(rotate_said(g.ckey, "--grace-hours 1", out2, sizeof out2,
	    &end2), 0);
	CHECK(end2 > 0 && end2 < end1 && end2 <= wall_ms() + HOUR_MS + 60000);
	CHECK(strstr(out2, "kept") == NULL);
	fx_free(&g);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "rotate");
	test_grace();
	test_scan_bound();
	test_revoke_now();
	test_grace_ends();
	test_legacy_row();
	test_grace_kept();
	fx_free(&F);
	return check_done("http_rotate");
}
