/*
 * test_cluster_ready.c - /readyz follows the Galera state of the node the
 * app hosts write to (both pinned to node 1):
 *
 *   1. Synced in the Primary component: 200 through host A and host B, the
 *      public /readyz saying ready and nothing more (issue 16), each host's
 *      /readyz/detail on its loopback metrics address naming the node
 *      (dbNode) and its state (galera);
 *   2. node 1 desynced (SET GLOBAL wsrep_desync = ON: the node stays up
 *      and Primary, but is no longer Synced): 503 problem+json with
 *      Retry-After on both hosts, within a bound, so that a load balancer
 *      stops sending to them; the public detail generic, the loopback
 *      detail describing the node's state;
 *   3. synced again: 200 again.
 * `asyncexec-admin check` says the same, one line per node of db_hosts.
 * Every wait polls with a bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/proc.h"
#include "config.h"
#include "check.h"
#include "cluster.h"
#include "httpc.h"

#define STATE_MS	20000	/* a state change reaches /readyz */

/*
 * `asyncexec-admin check` with host A's configuration: 1 when its
 * output holds "LEVEL node 1 (host:port): TEXT..." for node 1 and an ok
 * line "Synced, Primary" for nodes 2 and 3.
 */
static int
admin_check(const char *level, const char *text)
{
	const struct config *c = cl_config();
	char	 cmd[1024], out[16384], want[3][400];
	int	 i, ok = 1;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' check 2>&1",
	    test_env("ASYNCEXEC_ADMIN"), test_env("ASYNCEXEC_TEST_CONFIG"));
	(void)ut_run(cmd, out, sizeof out);	/* its status: the levels below */
	for (i = 0; i < 3 && (unsigned)i < c->db_nhosts; i++) {
		snprintf(want[i], sizeof want[i], "%-5s node %d (%s:%u): %s",
		    i == 0 ? level : "ok", i + 1, c->db_hosts[i].host,
		    c->db_hosts[i].port, i == 0 ? text : "Synced, Primary");
		if (strstr(out, want[i]) == NULL) {
			fprintf(stderr, "  check lacks \"%s\":\n%s", want[i], out);
			ok = 0;
		}
	}
	return ok;
}

/* At exit: node 1 back in sync (a no-op when it is). */
static void
resync(void)
{
	(void)cl_node_sql(1, "SET GLOBAL wsrep_desync = OFF");
}

/* GET path through the nginx address in env_name into r; its status. */
static int
readyz(const char *env_name, const char *path, struct http_resp *r)
{
	http_set_target(test_env(env_name));
	if (http_do("GET", path, NULL, NULL, 0, r) == -1)
		return 0;
	return r->status;
}

/* Polls until path through env_name answers want (at most STATE_MS). */
static int
wait_readyz(const char *env_name, const char *path, int want,
    struct http_resp *last)
{
	int64_t	 t0 = ut_now_ms();
	int	 st;

	for (;;) {
		memset(last, 0, sizeof(*last));
		if ((st = readyz(env_name, path, last)) == want)
			return 1;
		if (ut_now_ms() - t0 > STATE_MS)
			return 0;
		http_resp_free(last);
		ut_pause_ms(100);
	}
}

/*
 * 1 and 3: ready through env_name; the detail through the host's metrics
 * address metrics_env: on node 1, Synced and Primary.
 */
static void
check_ready(const char *env_name, const char *metrics_env)
{
	struct http_resp	 r;
	struct json_object	*o = NULL;
	char			 want[64];

	CHECK(wait_readyz(env_name, "/readyz", 200, &r));
	CHECK_EQ_STR(r.body, "{\"status\":\"ready\"}");
	http_resp_free(&r);
	CHECK(wait_readyz(metrics_env, "/readyz/detail", 200, &r));
	CHECK((o = json_body(&r)) != NULL);
	snprintf(want, sizeof want, "127.0.0.1:%ld", config_long("db_port", 0));
	CHECK_EQ_STR(jstr(o, "dbNode"), want);
	CHECK_EQ_STR(jstr(o, "galera.state"), "Synced");
	CHECK_EQ_STR(jstr(o, "galera.clusterStatus"), "Primary");
	json_object_put(o);
	http_resp_free(&r);
}

/*
 * 2: not ready while node 1 is desynced: a generic detail through env_name,
 * the node's state through the host's metrics address metrics_env.
 */
static void
check_not_ready(const char *env_name, const char *metrics_env)
{
	struct http_resp	 r;
	int64_t			 t0 = ut_now_ms();

	CHECK(wait_readyz(env_name, "/readyz", 503, &r));
	printf("%s: /readyz 503 %lld ms after the desync\n", env_name,
	    (long long)(ut_now_ms() - t0));
	CHECK(expect_problem(&r, 503, "service_unavailable"));
	CHECK(is_digits(http_header(&r, "retry-after")));
	CHECK(r.body != NULL && strstr(r.body, "Synced") == NULL &&
	    strstr(r.body, "Primary") == NULL && strstr(r.body, "node") == NULL);
	http_resp_free(&r);
	CHECK(wait_readyz(metrics_env, "/readyz/detail", 503, &r));
	CHECK(expect_problem(&r, 503, "service_unavailable"));
	CHECK(r.body != NULL && strstr(r.body, "not Synced in the Primary "
	    "component") != NULL);
	http_resp_free(&r);
}

int
main(void)
{
	http_test_init();
	cl_init();
	CHECK(cl_writers_home());	/* both hosts on node 1 */
	check_ready("ASYNCEXEC_TEST_HTTP_A", "ASYNCEXEC_TEST_METRICS");
	check_ready("ASYNCEXEC_TEST_HTTP_B", "ASYNCEXEC_TEST_METRICS_B");
	CHECK(admin_check("ok", "Synced, Primary"));

	atexit(resync);		/* node 1 is synced again however this ends */
	CHECK_EQ_INT(cl_node_sql(1, "SET GLOBAL wsrep_desync = ON"), 0);
	check_not_ready("ASYNCEXEC_TEST_HTTP_A", "ASYNCEXEC_TEST_METRICS");
	check_not_ready("ASYNCEXEC_TEST_HTTP_B", "ASYNCEXEC_TEST_METRICS_B");
	CHECK(admin_check("warn", "Donor/Desynced in a Primary component"));
	CHECK_EQ_INT(cl_node_sql(1, "SET GLOBAL wsrep_desync = OFF"), 0);
	check_ready("ASYNCEXEC_TEST_HTTP_A", "ASYNCEXEC_TEST_METRICS");
	check_ready("ASYNCEXEC_TEST_HTTP_B", "ASYNCEXEC_TEST_METRICS_B");
	return check_done("cluster_ready");
}
