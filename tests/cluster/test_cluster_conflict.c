/*
 * test_cluster_conflict.c - a claim that loses a cross-node conflict.
 *
 * Galera's row locks are local to a node: a write committed on node 2
 * to a row that a claim transaction on node 1 holds aborts that claim
 * (a brute-force abort, 1213), although its UPDATE already reported one
 * row affected. The rule: a claim's callback tokens go out only after a
 * COMMIT that succeeded, and a claim that got 1213 is run again whole.
 *
 *   1. the claim (through host A, pinned to node 1) takes execution X and
 *      is held inside its UPDATE by a trigger waiting on a lock the test
 *      holds on node 1;
 *   2. a cancel request for X is written on node 2 (autocommit);
 *   3. the claim is aborted on node 1 and run again: 200, and what it
 *      hands out is exactly what committed, X untouched (attempt 0, no
 *      token), on node 1 and on node 2 (wsrep_sync_wait = 1); host A's log
 *      has the 1213;
 *   4. a complete of execution Y (its autocommit compare-and-set held in
 *      the same way) loses to a write of Y's progress on node 2 (1213): it
 *      re-reads Y (still waiting under its token), runs the compare-and-set
 *      again and answers 200; Y is completed with this result and node 2's
 *      progress, on both nodes (before the rule: 503);
 *   5. the same with two writes, so that the second try loses too: 503 with
 *      Y still waiting under its token (nothing was written, and nothing is
 *      claimed to be: the old code answered 200 here), and the client's
 *      repeat of the same complete then wins.
 * The trigger only acts on this run's correlation ids and is dropped at
 * exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "config.h"
#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "httpc.h"

#define WAIT_MS		15000

static const struct config *cfg;
static struct fx	 F;
static MYSQL		*n1, *n2, *gate;
static char		 tag[64];

/* Runs q on m; 0, or its error number. */
static unsigned
sql(MYSQL *m, const char *q)
{
	MYSQL_RES	*res;

	if (mysql_query(m, q) != 0) {
		fprintf(stderr, "  %s: %s\n", q, mysql_error(m));
		return mysql_errno(m);
	}
	if ((res = mysql_store_result(m)) != NULL)
		mysql_free_result(res);
	return 0;
}

/* Host A's log from byte from on: whether it holds needle. */
static int
log_has(long from, const char *needle)
{
	char	 path[512], line[2048];
	FILE	*f;
	int	 found = 0;

	snprintf(path, sizeof path, "%s/app-a.log",
	    test_env("ASYNCEXEC_TEST_LOGDIR"));
	if ((f = fopen(path, "r")) == NULL || fseek(f, from, SEEK_SET) != 0) {
		if (f != NULL)
			fclose(f);
		return 0;
	}
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* The size of host A's log now. */
static long
log_size(void)
{
	char	 path[512];
	FILE	*f;
	long	 n = 0;

	snprintf(path, sizeof path, "%s/app-a.log",
	    test_env("ASYNCEXEC_TEST_LOGDIR"));
	if ((f = fopen(path, "r")) != NULL) {
		if (fseek(f, 0, SEEK_END) == 0)
			n = ftell(f);
		fclose(f);
	}
	return n;
}

/* Drops the trigger and its table (at exit too). */
static void
drop_gate(void)
{
	char	 q[256];

	snprintf(q, sizeof q, "USE %s; DROP TRIGGER IF EXISTS "
	    "cluster_gate_claim; DROP TABLE IF EXISTS cluster_gate", cfg->db_name);
	(void)cl_node_sql(1, q);
}

struct call {
	pthread_t		 t;
	struct http_resp	 r;
};

static void *
claim_run(void *arg)
{
	struct call	*k = arg;

	http_set_thread_target(test_env("ASYNCEXEC_TEST_HTTP_A"));
	(void)fx_claim(&F, F.bkey, "{\"max\":1}", &k->r);
	return NULL;
}

static struct claim	 held;		/* Y, claimed */
static int		 complete_status;

static void *
complete_run(void *arg)
{
	(void)arg;
	http_set_thread_target(test_env("ASYNCEXEC_TEST_HTTP_A"));
	complete_status = fx_complete(&F, &held, "{\"y\":\"won\"}");
	return NULL;
}

/* Waits (at most WAIT_MS) until node 1 has n sessions waiting on the gate. */
static int
gate_waiters(long long n)
{
	int64_t		 t0;
	long long	 w = -1;

	for (t0 = ut_now_ms(); ut_now_ms() - t0 < WAIT_MS; ut_pause_ms(20))
		if ((w = cl_num(n1, "SELECT COUNT(*) FROM information_schema."
		    "PROCESSLIST WHERE INFO LIKE 'SELECT v INTO @cluster_gate%'"))
		    == n)
			return 1;
	fprintf(stderr, "  %lld sessions wait on the gate, not %lld\n", w, n);
	return 0;
}

/* Waits (at most WAIT_MS) until node 1 counts n brute-force aborts. */
static int
bf_aborts(long long n)
{
	static const char q[] = "SELECT VARIABLE_VALUE FROM information_schema."
	    "GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_BF_ABORTS'";
	int64_t		 t0;

	for (t0 = ut_now_ms(); ut_now_ms() - t0 < WAIT_MS; ut_pause_ms(20))
		if (cl_num(n1, q) >= n)
			return 1;
	return 0;
}

/*
 * 4 and 5: a complete of a fresh execution, held in its UPDATE, loses to
 * aborts writes of its progress on node 2; it must answer want, and the
 * row must then be completed (200) or still waiting (503).
 */
static void
complete_conflict(int aborts, int want)
{
	static const char bfq[] = "SELECT VARIABLE_VALUE FROM information_schema."
	    "GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_BF_ABORTS'";
	struct sub	 s;
	pthread_t	 t;
	char		 cid[128], q[512], w[600];
	long long	 bf0, i;
	long		 from;

	snprintf(cid, sizeof cid, "%s-hold-c%d", tag, aborts);
	CHECK(fx_submit_ok(&F, cid, "{\"conflict\":2}", &s));
	CHECK(fx_claim_one(&F, &held));		/* the gate is open: no wait */
	CHECK_EQ_STR(held.cid, cid);
	from = log_size();
	bf0 = cl_num(n1, bfq);
	CHECK(bf0 >= 0);
	CHECK_EQ_INT(sql(gate, "START TRANSACTION"), 0);
	CHECK_EQ_INT(sql(gate, "SELECT v FROM cluster_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
	CHECK(pthread_create(&t, NULL, complete_run, NULL) == 0);
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET progress_payload "
	    "= '{\"n2\":%%lld}' WHERE id = %lld", (long long)held.id);
	for (i = 1; i <= aborts; i++) {
		CHECK(gate_waiters(1));		/* the compare-and-set waits */
		snprintf(w, sizeof w, q, i);
		CHECK_EQ_INT(sql(n2, w), 0);
		CHECK(bf_aborts(bf0 + i));	/* node 1 aborted it */
	}
	if (want == 200)
		CHECK(gate_waiters(1));		/* run again after the re-read */
	else
		pthread_join(t, NULL);		/* given up: answered */
	CHECK(log_has(from, "error 1213"));
	(void)sql(gate, "ROLLBACK");
	if (want == 200)
		pthread_join(t, NULL);
	printf("complete against %d abort(s) on node 1: %d\n", aborts,
	    complete_status);
	CHECK_EQ_INT(complete_status, want);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "id = %lld AND progress_payload = '{\"n2\":%d}' AND %s",
	    (long long)held.id, aborts, want == 200 ? "status = 'completed' AND "
	    "result_payload = '{\"y\":\"won\"}'" : "status = "
	    "'waiting_callback' AND result_payload IS NULL AND "
	    "callback_token_hash IS NOT NULL");
	CHECK_EQ_INT(cl_num(n1, q), 1);
	CHECK_EQ_INT(cl_num(n2, q), 1);
	if (want != 200)	/* the client repeats it: the token still works */
		CHECK_EQ_INT(fx_complete(&F, &held, "{\"y\":\"won\"}"), 200);
}

/*
 * The trigger is created as root (with Galera's binary log it needs
 * SUPER, which the application's user has not), defined for that user,
 * so that its statement shows in the user's process list. It holds a
 * claim (the token changes) or a finalization (the status changes) of
 * "<tag>-hold..." on the gate row while the test holds that.
 */
static int
make_gate(void)
{
	char	 q[1024];

	snprintf(q, sizeof q, "USE %s;\nCREATE TABLE cluster_gate (id INT "
	    "PRIMARY KEY, v INT) ENGINE=InnoDB;\nINSERT INTO cluster_gate VALUES "
	    "(1, 0);\nDELIMITER //\nCREATE DEFINER = '%s'@'127.0.0.1' TRIGGER "
	    "cluster_gate_claim BEFORE UPDATE ON "
	    "s2r_async_execution FOR EACH ROW BEGIN IF NEW.correlation_id LIKE "
	    "'%s-hold%%' AND (NOT (NEW.callback_token_hash <=> "
	    "OLD.callback_token_hash) OR NOT (NEW.status <=> OLD.status)) THEN "
	    "SELECT v INTO @cluster_gate FROM "
	    "cluster_gate WHERE id = 1 FOR UPDATE; END IF; END//\n"
	    "DELIMITER ;\n", cfg->db_name, cfg->db_user, tag);
	drop_gate();
	return cl_node_sql(1, q) == 0 ? 0 : -1;
}

int
main(void)
{
	struct call		 k;
	struct sub		 s;
	struct json_object	*o;
	char			 q[512], cid[128];
	long long		 id, waiting = 0, n;
	long			 from;
	int64_t			 t0;

	http_test_init();
	cl_init();
	cfg = cl_config();
	if (cfg->db_nhosts < 2) {
		fprintf(stderr, "FATAL: host A's config has no db_hosts\n");
		return 1;
	}
	CHECK(cl_writers_home());
	fx_setup(&F, "cluster-conflict");
	snprintf(tag, sizeof tag, "cc%s", unique_suffix());
	if ((n1 = cl_node_open(1)) == NULL || (n2 = cl_node_open(2)) == NULL ||
	    (gate = cl_node_open(1)) == NULL || make_gate() == -1) {
		fprintf(stderr, "FATAL: cannot set up the gate on node 1\n");
		return 1;
	}
	atexit(drop_gate);
	snprintf(cid, sizeof cid, "%s-hold", tag);
	CHECK(fx_submit_ok(&F, cid, "{\"conflict\":1}", &s));
	snprintf(q, sizeof q, "SELECT id FROM s2r_async_execution WHERE "
	    "correlation_id = '%s'", cid);
	CHECK((id = cl_num(n1, q)) > 0);

	/* 1: the claim waits inside its UPDATE of X for the gate */
	from = log_size();
	CHECK_EQ_INT(sql(gate, "START TRANSACTION"), 0);
	CHECK_EQ_INT(sql(gate, "SELECT v FROM cluster_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
	memset(&k, 0, sizeof k);
	CHECK(pthread_create(&k.t, NULL, claim_run, &k) == 0);
	for (t0 = ut_now_ms(); ut_now_ms() - t0 < WAIT_MS && waiting < 1;
	    ut_pause_ms(20))
		waiting = cl_num(n1, "SELECT COUNT(*) FROM information_schema."
		    "PROCESSLIST WHERE INFO LIKE 'SELECT v INTO @cluster_gate%'");
	CHECK_EQ_INT(waiting, 1);

	/* 2: node 2 writes X (a cancel request), committed at once */
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET cancel_requested "
	    "= 1 WHERE id = %lld", id);
	t0 = ut_now_ms();
	CHECK_EQ_INT(sql(n2, q), 0);
	CHECK_EQ_INT(mysql_affected_rows(n2), 1);

	/* 3: the claim is aborted and run again; let the gate go */
	pthread_join(k.t, NULL);
	printf("claim answered %d %lld ms after node 2's write\n", k.r.status,
	    (long long)(ut_now_ms() - t0));
	(void)sql(gate, "ROLLBACK");
	CHECK_EQ_INT(k.r.status, 200);
	CHECK((o = json_body(&k.r)) != NULL);
	n = o ? jlen(o, "executions") : -1;
	CHECK_EQ_INT(n, 0);		/* X was the only one, cancel requested */
	json_object_put(o);
	http_resp_free(&k.r);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "id = %lld AND attempts = 0 AND callback_token_hash IS NULL AND "
	    "lease_expires_at IS NULL AND cancel_requested = 1", id);
	CHECK_EQ_INT(cl_num(n1, q), 1);
	CHECK_EQ_INT(cl_num(n2, q), 1);
	CHECK(log_has(from, "error 1213"));
	complete_conflict(1, 200);
	complete_conflict(2, 503);
	mysql_close(gate);
	drop_gate();
	mysql_close(n2);
	mysql_close(n1);
	n1 = NULL;
	fx_free(&F);
	return check_done("cluster_conflict");
}
