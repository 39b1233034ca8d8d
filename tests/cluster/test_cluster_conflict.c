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
 *      has the 1213.
 * The trigger only acts on this run's correlation ids and is dropped at
 * exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mysql.h>

#include "../../src/config.h"
#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "httpc.h"

#define WAIT_MS		15000

static struct config	 cfg;
static struct fx	 F;
static MYSQL		*n1, *n2, *gate;
static char		 tag[64];

/* A session on node n (db_hosts of host A's config); NULL on failure. */
static MYSQL *
sql_open(int n)
{
	MYSQL		*m = mysql_init(NULL);
	unsigned	 timeout = 30;

	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	if (mysql_real_connect(m, cfg.db_hosts[n - 1].host, cfg.db_user,
	    cfg.db_password, cfg.db_name, cfg.db_hosts[n - 1].port, NULL, 0) ==
	    NULL || mysql_query(m, "SET SESSION wsrep_sync_wait = 1") != 0) {
		fprintf(stderr, "node %d: %s\n", n, mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

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

/* The first column of q's first row as a number; -1 on failure. */
static long long
num(MYSQL *m, const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	if (mysql_query(m, q) != 0 || (res = mysql_store_result(m)) == NULL)
		return -1;
	if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = atoll(row[0]);
	mysql_free_result(res);
	return v;
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

static int	 root_sql(const char *);

/* Drops the trigger and its table (at exit too). */
static void
drop_gate(void)
{
	char	 q[256];

	snprintf(q, sizeof q, "USE %s; DROP TRIGGER IF EXISTS "
	    "cluster_gate_claim; DROP TABLE IF EXISTS cluster_gate", cfg.db_name);
	(void)root_sql(q);
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

/*
 * Runs sql as root on node 1 (clusterctl node-sql: with Galera's binary
 * log a trigger needs SUPER, which the application's user has not; the
 * trigger is defined for that user, so that its statement shows in the
 * user's process list). 0 or the exit status.
 */
static int
root_sql(const char *q)
{
	char	 path[] = "/tmp/cluster-conflict-sql.XXXXXX", cmd[1024];
	int	 fd, rc;

	if ((fd = mkstemp(path)) == -1)
		return -1;
	rc = write(fd, q, strlen(q)) == (ssize_t)strlen(q) ? 0 : -1;
	close(fd);
	snprintf(cmd, sizeof cmd, "'%s' node-sql 1 <'%s' >/dev/null",
	    test_env("ASYNCEXEC_TEST_CLUSTERCTL"), path);
	if (rc == 0)
		rc = system(cmd);
	unlink(path);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* Installs the trigger that holds a claim of "<tag>-hold" in its UPDATE. */
static int
make_gate(void)
{
	char	 q[1024];

	snprintf(q, sizeof q, "USE %s;\nCREATE TABLE cluster_gate (id INT "
	    "PRIMARY KEY, v INT) ENGINE=InnoDB;\nINSERT INTO cluster_gate VALUES "
	    "(1, 0);\nDELIMITER //\nCREATE DEFINER = '%s'@'127.0.0.1' TRIGGER "
	    "cluster_gate_claim BEFORE UPDATE ON "
	    "s2r_async_execution FOR EACH ROW BEGIN IF NEW.correlation_id = "
	    "'%s-hold' AND NOT (NEW.callback_token_hash <=> "
	    "OLD.callback_token_hash) THEN SELECT v INTO @cluster_gate FROM "
	    "cluster_gate WHERE id = 1 FOR UPDATE; END IF; END//\n"
	    "DELIMITER ;\n", cfg.db_name, cfg.db_user, tag);
	drop_gate();
	return root_sql(q) == 0 ? 0 : -1;
}

int
main(void)
{
	struct call		 k;
	struct sub		 s;
	struct json_object	*o;
	char			 q[512], cid[128], err[512];
	long long		 id, waiting = 0, n;
	long			 from;
	int64_t			 t0;

	http_test_init();
	cl_init();
	if (config_load(&cfg, test_env("ASYNCEXEC_TEST_CONFIG"), err,
	    sizeof err) == -1 || cfg.db_nhosts < 2) {
		fprintf(stderr, "FATAL: host A's config: %s\n", err);
		return 1;
	}
	CHECK(cl_writers_home());
	fx_setup(&F, "cluster-conflict");
	snprintf(tag, sizeof tag, "cc%s", unique_suffix());
	if ((n1 = sql_open(1)) == NULL || (n2 = sql_open(1 + 1)) == NULL ||
	    (gate = sql_open(1)) == NULL || make_gate() == -1) {
		fprintf(stderr, "FATAL: cannot set up the gate on node 1\n");
		return 1;
	}
	atexit(drop_gate);
	snprintf(cid, sizeof cid, "%s-hold", tag);
	CHECK(fx_submit_ok(&F, cid, "{\"conflict\":1}", &s));
	snprintf(q, sizeof q, "SELECT id FROM s2r_async_execution WHERE "
	    "correlation_id = '%s'", cid);
	CHECK((id = num(n1, q)) > 0);

	/* 1: the claim waits inside its UPDATE of X for the gate */
	from = log_size();
	CHECK_EQ_INT(sql(gate, "START TRANSACTION"), 0);
	CHECK_EQ_INT(sql(gate, "SELECT v FROM cluster_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
	memset(&k, 0, sizeof k);
	CHECK(pthread_create(&k.t, NULL, claim_run, &k) == 0);
	for (t0 = cl_now_ms(); cl_now_ms() - t0 < WAIT_MS && waiting < 1;
	    cl_pause_ms(20))
		waiting = num(n1, "SELECT COUNT(*) FROM information_schema."
		    "PROCESSLIST WHERE INFO LIKE 'SELECT v INTO @cluster_gate%'");
	CHECK_EQ_INT(waiting, 1);

	/* 2: node 2 writes X (a cancel request), committed at once */
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET cancel_requested "
	    "= 1 WHERE id = %lld", id);
	t0 = cl_now_ms();
	CHECK_EQ_INT(sql(n2, q), 0);
	CHECK_EQ_INT(mysql_affected_rows(n2), 1);

	/* 3: the claim is aborted and run again; let the gate go */
	pthread_join(k.t, NULL);
	printf("claim answered %d %lld ms after node 2's write\n", k.r.status,
	    (long long)(cl_now_ms() - t0));
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
	CHECK_EQ_INT(num(n1, q), 1);
	CHECK_EQ_INT(num(n2, q), 1);
	CHECK(log_has(from, "error 1213"));
	mysql_close(gate);
	drop_gate();
	mysql_close(n2);
	mysql_close(n1);
	n1 = NULL;
	fx_free(&F);
	return check_done("cluster_conflict");
}
