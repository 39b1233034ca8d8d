/*
 * test_cluster_expire_ws_rows.c - asyncexec-expire's batches against
 * Galera's row limit, wsrep_max_ws_rows (label cluster;
 * scripts/test-cluster.sh).
 *
 * With wsrep_max_ws_rows set (default 0: no limit), a statement that
 * writes more rows than it fails with error 1180 (ER_ERROR_DURING_COMMIT)
 * "wsrep_max_ws_rows exceeded" (MariaDB 10.11.19, Galera 4; measured for
 * the purge's DELETE joined to JSON_TABLE, a multi-row INSERT, INSERT ...
 * SELECT ... ON DUPLICATE KEY UPDATE and a plain UPDATE), the same on
 * every run, so nothing was purged again and the run exited 1.
 * wsrep_max_ws_rows is set to WS_ROWS on the three nodes (restored at the
 * end, and by the exit hook). Asserts:
 *   - PURGED completed rows past purge_grace_days, more than a batch
 *     (1000, the default --batch-size): one run exits 0 and deletes them
 *     all, the batch of 1000 run again in halves until they pass (the
 *     split is logged naming wsrep_max_ws_rows);
 *   - on MariaDB 10.11 the expiry's UPDATE (joined to JSON_TABLE) of one
 *     overdue waiting row gets error 4165 "Galera replication not
 *     supported" at any wsrep_max_ws_rows but 0, as at a lowered
 *     wsrep_max_ws_size, whatever its size: the run exits 1 and the row
 *     still waits (no split can help it: asyncexec-expire(8) says so);
 *     with the limit back at 0 the next run expires it. On MariaDB 11.8
 *     the run expires it under the limit.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cluster.h"

#define WS_ROWS		300	/* wsrep_max_ws_rows on the nodes */
#define PURGED		1200	/* a batch of 1000 and one of 200 */

static char	 env[40];

/*
 * Inserts N executions of env in status ST (cid prefix TAG) in one
 * statement, ended and expired DAYS_AGO days ago (a waiting one: only
 * expired). 1 when they went in.
 */
static int
insert_rows(MYSQL *m, const char *tag, const char *st, int n, int days_ago)
{
	return cl_sqlf(m, "INSERT INTO s2r_async_execution (correlation_id, "
	    "environment, service_key, operation_key, status, "
	    "request_payload, request_sha256, result_payload, created_at, "
	    "updated_at, completed_at, expires_at) SELECT CONCAT('%s-', seq), "
	    "'%s', 'svc', 'op', '%s', 'q', UNHEX(SHA2(CONCAT('%s-', seq), "
	    "256)), IF('%s' = 'completed', 'r', NULL), UTC_TIMESTAMP(3) - "
	    "INTERVAL %d DAY, UTC_TIMESTAMP(3) - INTERVAL %d DAY, IF('%s' = "
	    "'waiting_callback', NULL, UTC_TIMESTAMP(3) - INTERVAL %d DAY), "
	    "UTC_TIMESTAMP(3) - INTERVAL %d DAY FROM seq_1_to_%d", tag, env,
	    st, tag, st, days_ago + 1, days_ago, st, days_ago, days_ago, n);
}

/* Sets wsrep_max_ws_rows to V on the three nodes; 1 when done. */
static int
ws_rows(long long v)
{
	char	 q[128];
	int	 n, ok = 1;

	snprintf(q, sizeof q, "SET GLOBAL wsrep_max_ws_rows = %lld;\n", v);
	for (n = 1; n <= 3; n++)
		ok = cl_node_sql(n, q) == 0 && ok;
	return ok;
}

/* A batch over the row limit: split, all purged, exit 0. */
static void
split_purge(MYSQL *m)
{
	static const char *const want[] = {
		"wsrep_max_ws_rows; running it as 500 and 500", NULL
	};
	int	 said;

	CHECK(insert_rows(m, "pur", "completed", PURGED, 30));
	CHECK_EQ_INT(cl_count(m, env, "pur", "completed"), PURGED);
	CHECK(ws_rows(WS_ROWS));
	CHECK_EQ_INT(cl_run_expire(want, &said), 0);
	CHECK(said);
	CHECK_EQ_INT(cl_count(m, env, "pur", ""), 0);
}

/*
 * The expiry's UPDATE of one overdue row under a row limit: on MariaDB
 * 10 (10.11, Debian 12's) 4165, the row waits, exit 1, and with the limit
 * back at 0 the next run expires it; on 11 (11.8, Debian 13's) the run
 * expires it under the limit, exit 0.
 */
static void
update_refused(MYSQL *m, long long was)
{
	static const char *const want[] = {
		"error 4165 Galera replication not supported", NULL
	};
	long long	 major = cl_num(m, "SELECT CAST(SUBSTRING_INDEX("
			    "VERSION(), '.', 1) AS UNSIGNED)");
	int		 said, rc;

	CHECK(ws_rows(0));		/* the row must go in first */
	CHECK(insert_rows(m, "due", "waiting_callback", 1, 1));
	CHECK(ws_rows(WS_ROWS));
	rc = cl_run_expire(want, &said);
	printf("  MariaDB %lld: the expiry's UPDATE under wsrep_max_ws_rows "
	    "%d: exit %d, %s\n", major, WS_ROWS, rc, said ? "4165" :
	    "no 4165");
	CHECK(major == 10 || major == 11);
	CHECK_EQ_INT(rc, major == 10 ? 1 : 0);
	CHECK_EQ_INT(said, major == 10);
	CHECK_EQ_INT(cl_count(m, env, "due", "waiting_callback"),
	    major == 10 ? 1 : 0);
	CHECK(ws_rows(was));
	CHECK_EQ_INT(cl_run_expire(NULL, NULL), 0);
	CHECK_EQ_INT(cl_count(m, env, "due", "expired"), 1);
}

int
main(void)
{
	MYSQL		*m;
	long long	 was;

	cl_init();
	snprintf(env, sizeof env, "wsrows%ld", (long)getpid());
	if ((m = cl_node_open(1)) == NULL)
		return check_done("cluster_expire_ws_rows");
	was = cl_num(m, "SELECT @@GLOBAL.wsrep_max_ws_rows");
	printf("  node 1: wsrep_max_ws_rows %lld\n", was);
	CHECK_EQ_INT(was, 0);
	if (!cl_restore_global("wsrep_max_ws_rows", was, 3)) {
		CHECK(!"a file for the exit hook's restore");
		return check_done("cluster_expire_ws_rows");
	}
	/* what other tests left due is done without the limit: the
	 * expiry's UPDATEs get 4165 under one (update_refused) */
	CHECK_EQ_INT(cl_run_expire(NULL, NULL), 0);
	split_purge(m);
	update_refused(m, was);
	CHECK(ws_rows(was));
	cl_restore_global_done(3);
	cl_sqlf(m, "DELETE FROM s2r_async_execution WHERE environment = '%s'", env);
	mysql_close(m);
	return check_done("cluster_expire_ws_rows");
}
