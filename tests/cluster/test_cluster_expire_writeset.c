/*
 * test_cluster_expire_writeset.c - asyncexec-expire's batches against
 * Galera's writeset limit (label cluster; scripts/test-cluster.sh).
 *
 * A batch is sized in rows (--batch-size), and one statement's writeset
 * holds the full images of its rows (binlog_row_image FULL): a DELETE
 * the row before, an UPDATE the row before and after. Rows with big
 * payloads make a batch's writeset exceed wsrep_max_ws_size; the node
 * then refuses the statement with error 1105 (ER_UNKNOWN_ERROR)
 * "Maximum writeset size exceeded" (its log: "WSREP: transaction size
 * limit (N) exceeded: M"; MariaDB 10.11.19, Galera 4), the same on every
 * run, so nothing was purged again. wsrep_max_ws_size is lowered to
 * WS_LIMIT on node 1 (host A's writer, which expire writes to; restored
 * at the end, and by the exit hook). Asserts:
 *   - PURGED completed rows with RES_BYTES results, past
 *     purge_grace_days, whose one DELETE is over the limit: one run
 *     exits 0 and deletes them all, the batch run again in halves (the
 *     split is logged);
 *   - a single completed row over the limit on its own (HUGE_BYTES),
 *     with SMALL due rows of the same status after it: the run logs the
 *     row as skipped with what to do (wsrep_max_ws_size,
 *     max_result_bytes), goes on and exits 1 (result=error), its
 *     closing error "1 row skipped, alone over ..." (it said "1 rows
 *     skipped, each alone": unit_expire_text checks the words); the row
 *     stays, the small rows are purged and the later rollup step runs
 *     (the mark moves). The run stopped at that row, every run, and
 *     neither the rows after it nor the later steps were done. With the
 *     limit restored the next run purges it and exits 0.
 * Not here: the expiry's UPDATE (joined to JSON_TABLE) gets error 4165
 * "Galera replication not supported" at any wsrep_max_ws_size other
 * than the default 2147483647 on MariaDB 10.11.19, whatever its size
 * (measured: two rows of 5 bytes), so no split can help it.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cluster.h"

#define WS_LIMIT	1048576		/* bytes: wsrep_max_ws_size on node 1 */
#define PURGED		6
#define RES_BYTES	256000
#define HUGE_BYTES	1500000
#define SMALL		3

static char	 env[40];

/*
 * Inserts N executions of env in status ST (cid prefix TAG) with a
 * request of REQ and a result of RES bytes, ended and expired DAYS_AGO
 * days ago (a waiting one: only expired). 1 when all went in.
 */
static int
insert_rows(MYSQL *m, const char *tag, const char *st, int n, long req,
    long res, int days_ago)
{
	int	 i, ok = 1;

	for (i = 0; i < n && ok; i++)
		ok = cl_sqlf(m, "INSERT INTO s2r_async_execution (correlation_id, "
		    "environment, service_key, operation_key, status, "
		    "request_payload, request_sha256, result_payload, created_at, "
		    "updated_at, completed_at, expires_at) VALUES ('%s-%d', '%s', "
		    "'svc', 'op', '%s', REPEAT('q', %ld), UNHEX(SHA2('%s-%d', "
		    "256)), IF(%ld > 0, REPEAT('r', %ld), NULL), UTC_TIMESTAMP(3) - "
		    "INTERVAL %d DAY, UTC_TIMESTAMP(3) - INTERVAL %d DAY, IF('%s' = "
		    "'waiting_callback', NULL, UTC_TIMESTAMP(3) - INTERVAL %d DAY), "
		    "UTC_TIMESTAMP(3) - INTERVAL %d DAY)", tag, i, env, st, req,
		    tag, i, res, res, days_ago + 1, days_ago, st, days_ago,
		    days_ago);
	return ok;
}

/* Sets node 1's wsrep_max_ws_size to V; 1 when done. */
static int
ws_limit(long long v)
{
	char	 q[128];

	snprintf(q, sizeof q, "SET GLOBAL wsrep_max_ws_size = %lld;\n", v);
	return cl_node_sql(1, q) == 0;
}

/* A batch over the limit: split, all done, exit 0. */
static void
split_batch(MYSQL *m)
{
	static const char *const want[] = {
		"wsrep_max_ws_size; running it as 3 and 3", NULL
	};
	int	 said[1];

	CHECK(insert_rows(m, "pur", "completed", PURGED, 1000, RES_BYTES, 30));
	CHECK(ws_limit(WS_LIMIT));
	CHECK_EQ_INT(cl_run_expire(want, said), 0);
	CHECK(said[0]);
	CHECK_EQ_INT(cl_count(m, env, "pur", ""), 0);
}

/* The rollup's mark (s2r_rollup_mark) in ms since the epoch, or -1. */
static long long
rollup_mark(MYSQL *m)
{
	return cl_num(m, "SELECT CAST(UNIX_TIMESTAMP(counted_until) * 1000 AS "
	    "SIGNED) FROM s2r_rollup_mark WHERE id = 1");
}

/*
 * One row over the limit on its own: logged with what to do and
 * skipped; the rows after it and the later steps are done; exit 1.
 */
static void
single_row(MYSQL *m, long long was)
{
	static const char *const want[] = {
		"skipped; raise wsrep_max_ws_size on the node, or lower "
		    "max_result_bytes",
		"expire: 1 row skipped, alone over the node's "
		    "wsrep_max_ws_size or wsrep_max_ws_rows (logged above)", NULL
	};
	int		 said[2], rc;
	long long	 mark;

	CHECK(ws_limit(was));		/* the row must go in first */
	CHECK(insert_rows(m, "huge", "completed", 1, 1000, HUGE_BYTES, 30));
	CHECK(insert_rows(m, "small", "completed", SMALL, 1000, 1000, 29));
	CHECK(ws_limit(WS_LIMIT));
	mark = rollup_mark(m);
	rc = cl_run_expire(want, said);
	CHECK_EQ_INT(rc, 1);
	CHECK(said[0]);
	CHECK(said[1]);		/* the closing error, "1 row" (it said "1 rows") */
	CHECK_EQ_INT(cl_count(m, env, "huge", ""), 1);
	CHECK_EQ_INT(cl_count(m, env, "small", ""), 0);
	printf("  rollup mark: %lld before the run, %lld after\n", mark,
	    rollup_mark(m));
	CHECK(mark > 0 && rollup_mark(m) > mark);
	CHECK(ws_limit(was));
	CHECK_EQ_INT(cl_run_expire(NULL, NULL), 0);
	CHECK_EQ_INT(cl_count(m, env, "huge", ""), 0);
}

int
main(void)
{
	MYSQL		*m;
	long long	 was;

	cl_init();
	snprintf(env, sizeof env, "wsbig%ld", (long)getpid());
	if ((m = cl_node_open(1)) == NULL)
		return check_done("cluster_expire_writeset");
	was = cl_num(m, "SELECT @@GLOBAL.wsrep_max_ws_size");
	printf("  node 1: wsrep_max_ws_size %lld, binlog_row_image %s\n", was,
	    cl_num(m, "SELECT @@GLOBAL.binlog_row_image = 'FULL'") == 1 ?
	    "FULL" : "other");
	CHECK(was > WS_LIMIT);
	if (!cl_restore_global("wsrep_max_ws_size", was, 1)) {
		CHECK(!"a file for the exit hook's restore");
		return check_done("cluster_expire_writeset");
	}
	/* what other tests left due (a cancel request, say) is done at the
	 * default limit: the expiry's UPDATEs get 4165 under a lowered one */
	CHECK_EQ_INT(cl_run_expire(NULL, NULL), 0);
	split_batch(m);
	single_row(m, was);
	CHECK(ws_limit(was));
	cl_restore_global_done(1);
	cl_sqlf(m, "DELETE FROM s2r_async_execution WHERE environment = '%s'", env);
	mysql_close(m);
	return check_done("cluster_expire_writeset");
}
