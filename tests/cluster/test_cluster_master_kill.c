/*
 * test_cluster_master_kill.c - one app host's master SIGKILLed under load (issue 11,
 * label cluster; scripts/test-cluster.sh).
 *
 * LOAD_THREADS clients submit, claim and complete through nginx's round robin over
 * both app hosts while host A's asyncexec-fcgi master is SIGKILLed (clusterctl
 * master-kill A). Its workers stop (PR_SET_PDEATHSIG) and its socket refuses
 * connections, so nginx passes every request to host B (fastcgi_next_upstream error:
 * a refused connection sent nothing, so even a submit or callback is safe to pass).
 * Asserts:
 *   - host A stops answering within GONE_BOUND_MS (its own nginx port gives 502),
 *     host B stays ready;
 *   - requests keep succeeding: AFTER_ACKED submits and AFTER_DONE completes are
 *     acknowledged after A is gone; at most the requests in flight at A when it died
 *     fail (one per client thread at most: LOAD_THREADS), counted and printed; the
 *     clients send a failed submit or complete again (the same execution, the winner's
 *     repeat), as a real client would;
 *   - every acknowledged submit and every 200 complete is there afterwards, over HTTP
 *     and in the rows of the hosts' writer node;
 * then host A is started again (master-start A), is ready within START_BOUND_MS and
 * writes to the same node as host B. Both start on node 1 (cl_writers_home): a host
 * restarted while the other is still pinned to node 2 after a failover would write
 * to node 1, and the two hosts' writes would conflict at certification (1213).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cluster.h"

#define LOAD_THREADS	4
#define GONE_BOUND_MS	5000
#define START_BOUND_MS	30000
#define WARMUP_ACKED	40
#define WARMUP_DONE	10
#define AFTER_ACKED	100
#define AFTER_DONE	30

static struct fx F;

/* Waits at most BOUND_MS until GET PATH through ENV_NAME answers STATUS; the time it
 * took (ms), or -1. */
static int64_t
wait_status(const char *env_name, const char *path, int status, long bound_ms)
{
	int64_t t0 = ut_now_ms();

	for (;;) {
		if (cl_get_status(env_name, path) == status)
			return ut_now_ms() - t0;
		if (ut_now_ms() - t0 > bound_ms)
			return -1;
		ut_pause_ms(20);
	}
}

int
main(void)
{
	struct cl_stats s0, s1, s2, s;
	int64_t t_kill, gone_ms, back_ms;
	long writer, lost_http, lost_node;

	cl_init();
	fx_setup(&F, "cl-master");
	CHECK(cl_writers_home());		/* both hosts write to node 1 */
	CHECK_EQ_INT(cl_get_status("ASYNCEXEC_TEST_HTTP_A", "/readyz"), 200);
	CHECK_EQ_INT(cl_get_status("ASYNCEXEC_TEST_HTTP_B", "/readyz"), 200);
	CHECK(cl_load_warm(&F, LOAD_THREADS, 0, WARMUP_ACKED, WARMUP_DONE, &s0));

	cl_restore(1, "master-start A");
	t_kill = ut_now_ms();
	CHECK_EQ_INT(cl_master_kill("A"), 0);
	gone_ms = wait_status("ASYNCEXEC_TEST_HTTP_A", "/healthz", 502, GONE_BOUND_MS);
	CHECK(gone_ms >= 0);
	if (gone_ms >= 0)
		gone_ms = ut_now_ms() - t_kill;
	CHECK_EQ_INT(cl_get_status("ASYNCEXEC_TEST_HTTP_B", "/readyz"), 200);
	cl_stats(&s1);
	CHECK(cl_wait_progress(s1.acked, AFTER_ACKED, s1.completed, AFTER_DONE, 30000));
	cl_stats(&s2);

	CHECK_EQ_INT(cl_ctl("master-start A"), 0);
	cl_restore(1, NULL);
	back_ms = wait_status("ASYNCEXEC_TEST_HTTP_A", "/readyz", 200, START_BOUND_MS);
	CHECK(back_ms >= 0);
	cl_load_stop();
	cl_stats(&s);

	printf("  answers: %lld ok, %lld 503 (Retry-After), %lld other (500 %lld, 502 %lld, "
	    "504 %lld, none %lld), %lld retries\n", s.ok, s.r503, s.bad, s.s500, s.s502,
	    s.s504, s.s0, s.retries);
	CHECK_EQ_INT(s0.bad, 0);			/* nothing failed before the kill */
	CHECK(s.bad - s0.bad <= LOAD_THREADS);		/* only what was in flight at A */
	CHECK_EQ_INT(s.s500, 0);
	CHECK_EQ_INT(s.bad - s2.bad, 0);		/* nothing while A came back */
	CHECK(s2.acked > s1.acked && s2.completed > s1.completed);

	/* the restarted host writes where the other one does: writes on one node only */
	writer = cl_metric("ASYNCEXEC_TEST_METRICS_B", "asyncexec_db_writer_index");
	CHECK(writer >= 0);
	CHECK_EQ_INT(cl_metric("ASYNCEXEC_TEST_METRICS", "asyncexec_db_writer_index"), writer);
	lost_http = cl_verify_http(&F);
	lost_node = cl_verify_node(&F, (int)writer + 1);
	CHECK_EQ_INT(lost_http, 0);
	CHECK_EQ_INT(lost_node, 0);
	printf("cluster_master_kill: acknowledged %lld submits, %lld 200 completes, lost %ld "
	    "(http %ld, node %ld %ld); failed in flight %lld (bound %d: 502 %lld, none %lld), "
	    "host A unreachable %lld ms after the kill, %lld acknowledged and %lld completed "
	    "through B meanwhile, A ready again %lld ms after its start\n", s.acked,
	    s.completed, lost_http + lost_node, lost_http, writer + 1, lost_node,
	    s.bad - s0.bad, LOAD_THREADS, s.s502, s.s0, (long long)gone_ms,
	    s2.acked - s1.acked, s2.completed - s1.completed, (long long)back_ms);
	fx_free(&F);
	return check_done("cluster_master_kill");
}
