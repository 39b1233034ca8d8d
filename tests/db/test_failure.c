/*
 * test_failure.c - db_failure (src/db/db.c) answers for the last
 * failure, whatever call failed, against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG). A transaction of the handle loses a deadlock
 * (1213: DB_FAIL_RETRY) to a side connection that wrote more rows (so
 * the handle is the victim) and is rolled back:
 *  - the ROLLBACK keeps the failure (repo_claim asks db_conflict after
 *    it); the next START TRANSACTION, which succeeds, resets it (it
 *    stayed RETRY);
 *  - after a second deadlock, the side kills the handle's session and
 *    the configuration points at a socket nobody listens on: the failed
 *    read of the replication state (db_node_state) and then db_begin,
 *    whose reconnect fails (and then fails at once, in the backoff), are
 *    DB_FAIL_OTHER, repo_failed's REPO_ERR. They said RETRY, the class
 *    of the deadlock, and callers paused and retried a connect failure.
 * And db_fail_of's classes by number and text: Galera's writeset limits
 * (1105 "Maximum writeset size exceeded", 1180 "wsrep_max_ws_rows
 * exceeded", the texts of MariaDB 10.11, cluster_expire_writeset and
 * cluster_expire_ws_rows) are split; the same numbers with another text
 * (1180 also ends a commit cut off when the node left the primary
 * component), or the texts with another number, are not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "db.h"
#include "db_fixture.h"
#include "repo_sql.h"

enum { S_LOCK, S_CONN };

static struct config	 cfg;
static char		 tbl[64], q_lock[160];
static const struct db_stmt_def defs[] = {
	[S_LOCK] = { q_lock, 0, "lock" },
	[S_CONN] = { "SELECT CONNECTION_ID()", 1, "conn" }
};

/* Locks row id of the table on d (FOR UPDATE); 0 or -1 (failed). */
static int
lock_row(struct db *d, uint64_t id)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(d, S_LOCK, p)) == NULL)
		return -1;
	mysql_stmt_store_result(st);
	mysql_stmt_free_result(st);
	return 0;
}

/*
 * A transaction of d that loses a deadlock to side: side writes 200
 * rows and locks row 2, d locks row 1, side asks for row 1 (sent, not
 * waited for), d asks for row 2. Results: db_failure of d after it.
 */
static enum db_fail
deadlock(struct db *d, MYSQL *side)
{
	enum db_fail	 f;
	char		 q[128];

	side_sql(side, "START TRANSACTION");
	side_sqlf(side, "INSERT INTO %s SELECT seq FROM seq_100_to_299", tbl);
	side_sqlf(side, "SELECT id FROM %s WHERE id = 2 FOR UPDATE", tbl);
	mysql_free_result(mysql_store_result(side));
	CHECK_EQ_INT(db_begin(d), 0);
	CHECK_EQ_INT(lock_row(d, 1), 0);
	snprintf(q, sizeof(q), "SELECT id FROM %s WHERE id = 1 FOR UPDATE",
	    tbl);
	CHECK_EQ_INT(mysql_send_query(side, q, strlen(q)), 0);
	CHECK_EQ_INT(lock_row(d, 2), -1);
	f = db_failure(d);
	printf("deadlock: error %u, class %d\n", db_errno(d), (int)f);
	CHECK_EQ_INT(mysql_read_query_result(side), 0);
	mysql_free_result(mysql_store_result(side));
	side_sql(side, "ROLLBACK");
	db_rollback(d);
	return f;
}

/* The session id of d's connection; 0 when it fails. */
static unsigned long long
conn_id(struct db *d)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id = 0;

	if ((st = db_run(d, S_CONN, NULL)) == NULL)
		return 0;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	if (db_fetch_row(st, &c) != DB_ROW)
		id = 0;
	mysql_stmt_free_result(st);
	return id;
}

/* db_fail_of by number and text (no server needed). */
static void
classes(void)
{
	CHECK_EQ_INT(db_fail_of(0, NULL), DB_FAIL_NONE);
	CHECK_EQ_INT(db_fail_of(1213, NULL), DB_FAIL_RETRY);
	CHECK_EQ_INT(db_fail_of(1205, ""), DB_FAIL_RETRY);
	CHECK_EQ_INT(db_fail_of(1105, "Maximum writeset size exceeded"),
	    DB_FAIL_WRITESET);
	CHECK_EQ_INT(db_fail_of(1180, "wsrep_max_ws_rows exceeded"),
	    DB_FAIL_WS_ROWS);
	CHECK_EQ_INT(db_fail_of(1180, "Got error 6 \"No such device or "
	    "address\" during COMMIT"), DB_FAIL_OTHER);
	CHECK_EQ_INT(db_fail_of(1180, NULL), DB_FAIL_OTHER);
	CHECK_EQ_INT(db_fail_of(1180, ""), DB_FAIL_OTHER);
	CHECK_EQ_INT(db_fail_of(1105, "wsrep_max_ws_rows exceeded"),
	    DB_FAIL_OTHER);
	CHECK_EQ_INT(db_fail_of(1180, "Maximum writeset size exceeded"),
	    DB_FAIL_OTHER);
	CHECK_EQ_INT(db_fail_of(1105, "Unknown error"), DB_FAIL_OTHER);
}

int
main(void)
{
	const char	*path = getenv("ASYNCEXEC_TEST_CONFIG");
	char		 err[512];
	struct db	*d;
	struct db_node	 ns;
	MYSQL		*side;
	unsigned long long id;

	mysql_library_init(0, NULL, NULL);
	if (path == NULL || config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", path ? err : "ASYNCEXEC_TEST_CONFIG "
		    "is not set: run scripts/test.sh");
		return 1;
	}
	snprintf(tbl, sizeof(tbl), "dbfail_%ld", (long)getpid());
	snprintf(q_lock, sizeof(q_lock), "SELECT id FROM %s WHERE id = ? "
	    "FOR UPDATE", tbl);
	side = side_open(&cfg, NULL);
	side_sqlf(side, "CREATE TABLE %s (id INT PRIMARY KEY) ENGINE=InnoDB",
	    tbl);
	side_sqlf(side, "INSERT INTO %s VALUES (1), (2)", tbl);
	if ((d = db_new(&cfg, defs, 2, 0, 0)) == NULL)
		return 1;
	db_oneshot();
	classes();

	/* ROLLBACK keeps the deadlock; a START TRANSACTION that works
	 * resets it */
	CHECK_EQ_INT(deadlock(d, side), DB_FAIL_RETRY);
	CHECK_EQ_INT(db_failure(d), DB_FAIL_RETRY);
	CHECK_EQ_INT(db_conflict(d), 1);
	CHECK_EQ_INT(db_begin(d), 0);
	CHECK_EQ_INT(db_failure(d), DB_FAIL_NONE);
	CHECK_EQ_INT(db_errno(d), 0);
	db_rollback(d);

	/* a deadlock, then the session is killed and no server answers */
	id = conn_id(d);
	CHECK_EQ_INT(deadlock(d, side), DB_FAIL_RETRY);
	side_sqlf(side, "KILL %llu", id);
	snprintf(cfg.db_socket, sizeof(cfg.db_socket), "/nonexistent/%s.sock",
	    tbl);
	CHECK_EQ_INT(db_node_state(d, &ns), -1);
	printf("replication state: error %u, class %d\n", db_errno(d),
	    (int)db_failure(d));
	CHECK_EQ_INT(db_failure(d), DB_FAIL_OTHER);
	CHECK_EQ_INT(db_begin(d), -1);
	printf("begin (connect): error %u, class %d\n", db_errno(d),
	    (int)db_failure(d));
	CHECK(db_errno(d) != 0 && db_errno(d) != 1213);
	CHECK_EQ_INT(db_failure(d), DB_FAIL_OTHER);
	CHECK_EQ_INT(repo_failed(d), REPO_ERR);
	CHECK_EQ_INT(db_begin(d), -1);		/* in the backoff */
	CHECK_EQ_INT(db_failure(d), DB_FAIL_OTHER);
	CHECK_EQ_INT(repo_failed(d), REPO_ERR);

	db_free(d);
	side_sqlf(side, "DROP TABLE %s", tbl);
	mysql_close(side);
	mysql_library_end();
	return check_done("db_failure");
}
