/*
 * test_fault_db.c - database outages under load, over real HTTP through nginx.
 *
 *   1. stop: the database is stopped (SIGTERM) for OUTAGE_MS while submits
 *      and polls run in LOAD_THREADS threads;
 *   2. kill: the same with SIGKILL.
 *
 * Each phase asserts: every answer is 202/200 or 503 service_unavailable
 * with Retry-After (never 500, 502 or anything else); the app log grows by
 * a bounded number of lines (no reconnect storm, defect 5); requests
 * succeed again within RECOVERY_BOUND_MS of the database's return without
 * restarting asyncexec; every acknowledged (202) execution polls back.
 * Prints the figures: acknowledged, lost, recovery time, log lines added.
 * Stops the shared database: CTest runs it with RUN_SERIAL.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fault.h"
#include "fixture.h"

#define LOAD_THREADS		4
#define PACE_MS			5	/* between two requests of one thread */
#define WARMUP_MS		1000
#define OUTAGE_MS		5000
#define OBSERVE_MS		4000	/* load kept running after the return */
#define RECOVERY_BOUND_MS	2000
#define MAX_ACKED		100000

struct acked {
	char	 cid[CID_MAX];
	char	 token[96];
};

static struct fx	 F;
static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;
static struct acked	*acked;
static size_t		 nacked;
static atomic_int	 running;
static atomic_llong	 last_503_start;	/* ut_now_ms of the request */
static atomic_llong	 n_ok, n_503, n_bad;

/* Classifies one answer; records 202 acknowledgements. */
static void
record(const struct http_resp *r, int64_t t0, int want)
{
	const char	*ra = http_header(r, "retry-after");

	if (r->status == want) {
		n_ok++;
		return;
	}
	if (r->status == 503 && ra != NULL && is_digits(ra) &&
	    strstr(r->body ? r->body : "", "\"service_unavailable\"")) {
		n_503++;
		if (t0 > last_503_start)
			last_503_start = t0;
		return;
	}
	n_bad++;
	fprintf(stderr, "  unexpected answer %d (want %d or 503): %.200s\n",
	    r->status, want, r->body ? r->body : "");
}

/* One submit; a 202 joins the acknowledged list. */
static void
one_submit(void)
{
	struct http_resp	 r;
	struct json_object	*o;
	int64_t			 t0 = ut_now_ms();

	fx_submit(&F, F.ckey, NULL, "{\"load\":true}", &r);
	record(&r, t0, 202);
	if (r.status == 202 && (o = json_body(&r)) != NULL) {
		pthread_mutex_lock(&mu);
		if (nacked < MAX_ACKED) {
			snprintf(acked[nacked].cid, CID_MAX, "%s",
			    jstr(o, "correlationId") ? jstr(o, "correlationId") : "");
			snprintf(acked[nacked].token, 96, "%s",
			    jstr(o, "pollToken") ? jstr(o, "pollToken") : "");
			nacked++;
		}
		pthread_mutex_unlock(&mu);
		json_object_put(o);
	}
	http_resp_free(&r);
}

/* One poll of a random acknowledged execution. */
static void
one_poll(unsigned *seed)
{
	struct http_resp	 r;
	struct acked		 a;
	int64_t			 t0;

	pthread_mutex_lock(&mu);
	if (nacked == 0) {
		pthread_mutex_unlock(&mu);
		return;
	}
	a = acked[(size_t)rand_r(seed) % nacked];
	pthread_mutex_unlock(&mu);
	t0 = ut_now_ms();
	fx_poll(&F, F.ckey, a.cid, a.token, NULL, &r);
	record(&r, t0, 200);
	http_resp_free(&r);
}

static void *
load(void *arg)
{
	unsigned	 seed = (unsigned)(uintptr_t)arg;

	while (running) {
		one_submit();
		one_poll(&seed);
		ut_pause_ms(PACE_MS);
	}
	return NULL;
}

/* Polls every acknowledged execution once; the number that did not come back. */
static size_t
count_lost(void)
{
	struct http_resp	 r;
	size_t			 i, lost = 0;

	for (i = 0; i < nacked; i++) {
		if (fx_poll(&F, F.ckey, acked[i].cid, acked[i].token, NULL,
		    &r) != 200) {
			if (lost++ < 5)
				fprintf(stderr, "  lost: %s (%d)\n",
				    acked[i].cid, r.status);
		}
		http_resp_free(&r);
	}
	return lost;
}

static void
outage(const char *name, int sigkill)
{
	pthread_t	 th[LOAD_THREADS];
	char		 log[1024];
	long		 lines0, lines, workers = config_long("workers", 4);
	long		 bound = workers * 6 + 8;
	int64_t		 t_back, recovery;
	size_t		 i, lost;
	long long	 ok_before;

	snprintf(log, sizeof log, "%s", f_state_path("asyncexec.log"));
	nacked = 0;
	n_ok = n_503 = n_bad = 0;
	last_503_start = 0;
	running = 1;
	for (i = 0; i < LOAD_THREADS; i++)
		pthread_create(&th[i], NULL, load, (void *)(i + 1));
	ut_pause_ms(WARMUP_MS);
	ok_before = n_ok;
	CHECK(ok_before > 0);
	lines0 = f_log_lines(log);
	CHECK_EQ_INT(f_db_stop(sigkill), 0);
	ut_pause_ms(OUTAGE_MS);
	CHECK_EQ_INT(f_db_start(), 0);
	t_back = ut_now_ms();
	ut_pause_ms(OBSERVE_MS);
	lines = f_log_lines(log) - lines0;
	running = 0;
	for (i = 0; i < LOAD_THREADS; i++)
		pthread_join(th[i], NULL);
	recovery = last_503_start > t_back ? last_503_start - t_back : 0;
	lost = count_lost();
	printf("%s: acknowledged %zu, lost %zu, recovery %lld ms, "
	    "log lines added %ld (bound %ld), answers: %lld ok, %lld 503, "
	    "%lld other\n", name, nacked, lost, (long long)recovery, lines,
	    bound, (long long)n_ok, (long long)n_503, (long long)n_bad);
	f_log_show(log, lines0, 40);
	CHECK_EQ_INT(n_bad, 0);
	CHECK(n_503 > 0);
	CHECK(n_ok > ok_before);
	CHECK(nacked > 0);
	CHECK_EQ_INT(lost, 0);
	CHECK(recovery <= RECOVERY_BOUND_MS);
	CHECK(lines <= bound);
}

int
main(void)
{
	http_test_init();
	f_init();
	if ((acked = calloc(MAX_ACKED, sizeof(*acked))) == NULL)
		return 1;
	fx_setup(&F, "fault-db");
	outage("stop", 0);
	outage("kill", 1);
	fx_free(&F);
	free(acked);
	return check_done("fault_db");
}
