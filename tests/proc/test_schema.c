/*
 * test_schema.c - asyncexec-fcgi against a database whose schema is not the build's:
 *  - behind (deployed before `asyncexec-admin migrate`): /healthz stays 200, /readyz says
 *    503 and what to run, requests get 503 (never 500), the log says what to run without a
 *    line per request, and after `migrate` the same processes become ready and serve,
 *    without a restart;
 *  - ahead (a rolling upgrade: another host migrated): ready while every newer migration
 *    is marked compatible with this build (s2r_schema_version.compatible_from), else 503.
 * And a migration that fails: migrate names it and the database's version;
 * the migrations the run applied before it keep their compatible-from (an
 * older build stays ready). And every migration interrupted part way (some or
 * all of its statements ran, it is not recorded): migrate runs it again and
 * reaches the schema a clean run makes.
 * And a migrate behind another's migration lock: it waits past the 30 s
 * read timeout of the other programs' connections, then proceeds; when its
 * wait is cut, it says busy.
 */
#include "check.h"
#include "fcgi_client.h"
#include "proc_util.h"
#include "scratch.h"

#include <sys/wait.h>

#include <glob.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repo.h"

#define LINEAGE_SCHEMA	7	/* s2r_api_key.lineage_id (sql/007) */
#define HOLD_PAST_IO	34	/* s: a lock held past a 30 s read timeout */
/* what the hints tell the operator to run (the migrate user's file) */
#define MIGRATE_CMD	"asyncexec-admin --config /etc/asyncexec/migrate.conf migrate"

static struct scratch S;
static char auth[128];	/* "Bearer ak_..." of the scratch database, once made */

/* Status of GET uri with the scratch key and a well-formed unknown poll token. */
static int
get(const char *uri, char *out, size_t size)
{
	return scratch_request(&S, "GET", uri, auth[0] ? auth : NULL,
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    NULL, out, size);
}

static int
is_ready(void *arg)
{
	(void)arg;
	return get("/readyz", NULL, 0) == 200;
}

/* The schema at version v (< SCHEMA_VERSION): not ready, 503s, bounded log. */
static void
check_behind(int v)
{
	char body[2048], vs[16];
	int i, lines, status;

	snprintf(vs, sizeof vs, "%d", v);
	CHECK_EQ_INT(scratch_admin(&S, body, sizeof body, "migrate", "--to", vs, NULL), 0);
	CHECK(strstr(body, "schema version") != NULL);
	CHECK_EQ_INT(get("/healthz", NULL, 0), 200);
	for (i = 0; i < 20; i++) {
		CHECK_EQ_INT(get("/readyz", body, sizeof body), 503);
		/* a poll needs the versioned poll-token keys (migration 5),
		 * the key lineage (migration 7: the key lookup reads it) and
		 * the progress columns (migration 8), the scheduling ones
		 * (migration 11) and payload_inline (migration 15): 503
		 * before them, a plain 404 for the unknown id after them */
		status = get("/v1/executions/e/s/o/x", NULL, 0);
		CHECK_EQ_INT(status, v < POLL_KEY_SCHEMA || v < LINEAGE_SCHEMA ||
		    v < PROGRESS_SCHEMA || v < SCHEDULE_SCHEMA ||
		    v < INLINE_SCHEMA ? 503 : 404);
	}
	/* the public /readyz says not ready, nothing more; the reason is in /readyz/detail */
	CHECK(strstr(body, "schema") == NULL);
	CHECK_EQ_INT(get("/readyz/detail", body, sizeof body), 503);
	CHECK(strstr(body, "schema") != NULL &&
	    strstr(body, MIGRATE_CMD) != NULL);
	if (strstr(body, MIGRATE_CMD) == NULL)
		fprintf(stderr, "  /readyz at schema %d said: %s\n", v, body);
	/* the log says what to run, once per worker and state, not once per request */
	lines = log_count(S.log, MIGRATE_CMD);
	CHECK(lines >= 1 && lines <= 4 * WORKERS);
	if (lines < 1 || lines > 4 * WORKERS) {
		fprintf(stderr, "  %d log lines name migrate at schema %d\n", lines, v);
		dump_log(S.log);
	}
}

/* A newer schema than the build's: ready only while marked compatible with it. */
static void
check_ahead(void)
{
	char sql[256], body[2048];
	int next = SCHEMA_VERSION + 1;

	snprintf(sql, sizeof sql, "INSERT INTO %s.s2r_schema_version (version, applied_at, "
	    "compatible_from) VALUES (%d, UTC_TIMESTAMP(3), %d)", S.db, next, SCHEMA_VERSION);
	CHECK(scratch_sql(&S, sql) == 0);
	CHECK_EQ_INT(get("/readyz", body, sizeof body), 200);
	CHECK_EQ_STR(body, "{\"status\":\"ready\"}");
	CHECK_EQ_INT(get("/readyz/detail", body, sizeof body), 200);
	CHECK(strstr(body, "\"schemaVersion\":") != NULL);
	/* the newer migration serves only binaries of its own version */
	snprintf(sql, sizeof sql, "UPDATE %s.s2r_schema_version SET compatible_from = %d "
	    "WHERE version = %d", S.db, next, next);
	CHECK(scratch_sql(&S, sql) == 0);
	CHECK_EQ_INT(get("/readyz", body, sizeof body), 503);
	CHECK_EQ_INT(get("/readyz/detail", body, sizeof body), 503);
	CHECK(strstr(body, "newer than this build") != NULL);
	snprintf(sql, sizeof sql, "DELETE FROM %s.s2r_schema_version WHERE version = %d",
	    S.db, next);
	CHECK(scratch_sql(&S, sql) == 0);
	CHECK_EQ_INT(get("/readyz", body, sizeof body), 200);
}

/*
 * A version missing below the recorded one (migration numbers are handed out in parallel:
 * 9 can be committed, and applied somewhere, before 8): migrate applies it anyway, once.
 * Simulated by undoing migration 8 on the migrated scratch database.
 */
static void
check_gap(void)
{
	char sql[512], out[4096];

	snprintf(sql, sizeof sql, "DELETE FROM %s.s2r_schema_version WHERE version = 8; "
	    "ALTER TABLE %s.s2r_async_execution DROP COLUMN progress_payload, DROP COLUMN "
	    "not_before, DROP COLUMN last_error, DROP COLUMN winner_hash", S.db, S.db);
	CHECK(scratch_sql(&S, sql) == 0);
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", NULL), 0);
	CHECK(strstr(out, "applied 1 migration(s)") != NULL);
	if (strstr(out, "applied 1 migration(s)") == NULL)
		fprintf(stderr, "  migrate over a gap said: %s\n", out);
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", NULL), 0);
	CHECK(strstr(out, "applied 0 migration(s)") != NULL);
	/* the statements that read migration 8's columns work again */
	CHECK_EQ_INT(get("/v1/executions/e/s/o/x", out, sizeof out), 404);
}

/*
 * A trigger (refuse_record) on the scratch database's s2r_schema_version
 * that fails the insert of version v's record, after migrate has run the
 * migration's statements. 0 or -1.
 */
static int
refuse_record(int v)
{
	char sql[512], sockarg[300], out[4096], err[4096];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot",
	    sockarg, "--delimiter=//", "-e", sql, NULL };

	snprintf(sockarg, sizeof sockarg, "--socket=%s", S.dbsock);
	snprintf(sql, sizeof sql, "CREATE TRIGGER %s.refuse_record BEFORE "
	    "INSERT ON %s.s2r_schema_version FOR EACH ROW IF NEW.version = %d "
	    "THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the "
	    "test'; END IF", S.db, S.db, v);
	if (run(argv, out, err, sizeof out, 30000) != 0) {
		fprintf(stderr, "  the trigger refusing %d: %s\n", v, err);
		return -1;
	}
	return 0;
}

/*
 * A migration that fails (here: its record, refused by a trigger made by
 * hand; a table or column made by hand no longer fails one, as every
 * migration adds with IF NOT EXISTS): migrate exits 1 naming it, with the
 * schema version the database is at and where the procedure is.
 */
static void
check_failed(void)
{
	char sql[256], out[4096], err[4096];

	CHECK(refuse_record(3) == 0);
	CHECK_EQ_INT(scratch_admin_err(&S, out, err, sizeof out, "migrate", NULL),
	    1);
	CHECK(strstr(err, "003_poll_token_key.sql") != NULL);
	CHECK(strstr(err, "after 0 migration(s); schema version 2") != NULL);
	CHECK(strstr(err, "asyncexec-ops(7)") != NULL);
	if (strstr(err, "003_poll_token_key.sql") == NULL ||
	    strstr(err, "schema version 2") == NULL)
		fprintf(stderr, "  the failed migrate said: %s\n", err);
	/* what its statement made, as a kill before the record leaves it */
	snprintf(sql, sizeof sql, "DROP TRIGGER %s.refuse_record; "
	    "DROP TABLE %s.s2r_secret", S.db, S.db);
	CHECK(scratch_sql(&S, sql) == 0);
}

/* Runs sql as the server's root; the first line of its output into v
 * (size bytes, at most 64). 0 or -1. */
static int
sql_value(const char *sql, char *v, size_t size)
{
	char sockarg[300], out[4096], err[4096];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot",
	    sockarg, "-N", "-B", "-e", (char *)(uintptr_t)sql, NULL };

	snprintf(sockarg, sizeof sockarg, "--socket=%s", S.dbsock);
	if (run(argv, out, err, sizeof out, 30000) != 0)
		return -1;
	snprintf(v, size, "%.*s", (int)strcspn(out, "\n"), out);
	return 0;
}

/*
 * A run that fails part way (at migration 15, whose record a trigger
 * refuses) after applying 11 to 14: each of those is recorded with its
 * compatible-from (10) as it is applied, so a build of schema 10 stays
 * ready; it was recorded only after the whole run, which the failure
 * skipped, and the readiness statement read NULL as "own version only".
 */
static void
check_failed_compat(void)
{
	char sql[512], out[4096], err[4096], v[64];

	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", "--to", "10",
	    NULL), 0);
	CHECK(refuse_record(15) == 0);
	CHECK_EQ_INT(scratch_admin_err(&S, out, err, sizeof out, "migrate", NULL),
	    1);
	CHECK(strstr(err, "015_poll_inline.sql") != NULL);
	CHECK(strstr(err, "after 4 migration(s); schema version 14") != NULL);
	snprintf(sql, sizeof sql, "SELECT GROUP_CONCAT(version, ':', "
	    "IFNULL(compatible_from, 'NULL') ORDER BY version) FROM "
	    "%s.s2r_schema_version WHERE version >= 10", S.db);
	CHECK(sql_value(sql, v, sizeof v) == 0);
	CHECK_EQ_STR(v, "10:9,11:10,12:10,13:10,14:10");
	/* the readiness statement's answer (STMT_SCHEMA_COMPAT) for a build of
	 * schema 10: the oldest build every newer migration serves is 10 */
	snprintf(sql, sizeof sql, "SELECT COALESCE(MAX(IF(version > 10, "
	    "COALESCE(compatible_from, version), 0)), 0) FROM "
	    "%s.s2r_schema_version", S.db);
	CHECK(sql_value(sql, v, sizeof v) == 0);
	CHECK_EQ_STR(v, "10");
	snprintf(sql, sizeof sql, "DROP TRIGGER %s.refuse_record; ALTER TABLE "
	    "%s.s2r_async_execution DROP COLUMN payload_inline", S.db, S.db);
	CHECK(scratch_sql(&S, sql) == 0);
}

/* The text of migration v (sql/NNN_*.sql), malloc'ed; NULL if none. */
static char *
migration_text(int v)
{
	char pat[512], *t = NULL;
	glob_t g;

	snprintf(pat, sizeof pat, "%s/%03d_*.sql", ASYNCEXEC_SQL_DIR, v);
	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1)
		t = read_file(g.gl_pathv[0]);
	globfree(&g);
	return t;
}

/* Where statement k (from 1) of migration text t ends (past its ';'),
 * 0 when it has fewer; *n gets how many it has (a statement ends with a
 * line ending in ';' that is not a comment). */
static size_t
stmt_end(const char *t, int k, int *n)
{
	const char *p, *e;
	size_t end = 0;

	*n = 0;
	for (p = t; *p != '\0'; p = *e != '\0' ? e + 1 : e) {
		e = p + strcspn(p, "\n");
		if (strncmp(p, "--", 2) != 0 && e > p && e[-1] == ';' &&
		    ++*n == k)
			end = (size_t)(e - t);
	}
	return end;
}

/* A fingerprint of database db's columns and indexes into v (size). */
static int
schema_print(const char *db, char *v, size_t size)
{
	char sql[1024];

	snprintf(sql, sizeof sql, "SELECT MD5(GROUP_CONCAT(x ORDER BY x "
	    "SEPARATOR '|')) FROM (SELECT CONCAT_WS(',', TABLE_NAME, COLUMN_NAME, "
	    "COLUMN_TYPE, IS_NULLABLE, IFNULL(COLUMN_DEFAULT, '-')) x FROM "
	    "information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' UNION ALL "
	    "SELECT CONCAT_WS(',', TABLE_NAME, INDEX_NAME, NON_UNIQUE, "
	    "SEQ_IN_INDEX, COLUMN_NAME, IFNULL(COLLATION, '-')) FROM "
	    "information_schema.STATISTICS WHERE TABLE_SCHEMA = '%s') t", db, db);
	return sql_value(sql, v, size);
}

/*
 * Migration v interrupted after its first k statements: R is migrated to
 * v - 1, they are run by hand (not recorded), then migrate --to v must
 * run it again and record it. 0 or -1.
 */
static int
rerun_one(struct scratch *R, int v, const char *text, int k)
{
	char vs[16], out[4096], *sql;
	size_t len;
	int n, ok;

	len = stmt_end(text, k, &n);
	if ((sql = malloc(len + 128)) == NULL)
		return -1;
	snprintf(sql, len + 128, "USE %s;\n%.*s", R->db, (int)len, text);
	snprintf(vs, sizeof vs, "%d", v - 1);
	out[0] = '\0';
	ok = (v == 1 || scratch_admin(R, out, sizeof out, "migrate", "--to", vs,
	    NULL) == 0) && scratch_sql(R, sql) == 0;
	snprintf(vs, sizeof vs, "%d", v);
	ok = ok &&
	    scratch_admin(R, out, sizeof out, "migrate", "--to", vs, NULL) == 0 &&
	    strstr(out, "applied 1 migration(s)") != NULL;
	if (!ok)
		fprintf(stderr, "  migration %d after %d of its %d statements by "
		    "hand: not run again (%s)\n", v, k, n, out);
	free(sql);
	return ok ? 0 : -1;
}

/*
 * Migration v of one statement, run by hand on a fresh database (C)
 * brought to v - 1, as a migrate killed between it and its record leaves
 * it: migrate runs it again (a no-op, IF NOT EXISTS) and goes on to the
 * schema of a clean run (ps). 0 or -1.
 */
static int
rerun_single(int v, const char *text, const char *ps)
{
	struct scratch C;
	char out[4096], pc[64] = "";
	int ok;

	if (scratch_init(&C, "rerun_c") != 0)
		return -1;
	ok = rerun_one(&C, v, text, 1) == 0 &&
	    scratch_admin(&C, out, sizeof out, "migrate", NULL) == 0 &&
	    schema_print(C.db, pc, sizeof pc) == 0 && strcmp(pc, ps) == 0;
	if (!ok)
		fprintf(stderr, "  migration %d run by hand: schema %s, a clean "
		    "run's %s\n", v, pc, ps);
	snprintf(out, sizeof out, "DROP DATABASE %s", C.db);
	return scratch_sql(&S, out) == 0 && ok ? 0 : -1;
}

/*
 * Every migration interrupted before its record: one of several
 * statements after all but its last (database A) and after all of them
 * (B), one of a single statement after it (a database of its own).
 * migrate runs it again, each statement a no-op where it had run (IF NOT
 * EXISTS; a key redefined is dropped and added in one ALTER, which works
 * on either definition), and each reaches the schema of a clean run (S).
 */
static void
check_rerun(void)
{
	struct scratch A, B;
	char out[4096], pa[64], pb[64], ps[64], *text;
	int v, n, ok = 1;

	CHECK(scratch_init(&A, "rerun_a") == 0 && scratch_init(&B, "rerun_b") == 0);
	CHECK(schema_print(S.db, ps, sizeof ps) == 0 && strlen(ps) == 32);
	for (v = 1; v <= SCHEMA_VERSION; v++) {
		CHECK((text = migration_text(v)) != NULL);
		if (text == NULL)
			break;
		(void)stmt_end(text, 0, &n);
		if (n > 1)
			ok = ok && rerun_one(&A, v, text, n - 1) == 0 &&
			    rerun_one(&B, v, text, n) == 0;
		else
			CHECK(rerun_single(v, text, ps) == 0);
		free(text);
	}
	CHECK(ok);
	CHECK_EQ_INT(scratch_admin(&A, out, sizeof out, "migrate", NULL), 0);
	CHECK_EQ_INT(scratch_admin(&B, out, sizeof out, "migrate", NULL), 0);
	CHECK(schema_print(A.db, pa, sizeof pa) == 0);
	CHECK(schema_print(B.db, pb, sizeof pb) == 0);
	CHECK_EQ_STR(pa, ps);
	CHECK_EQ_STR(pb, ps);
	snprintf(out, sizeof out, "DROP DATABASE %s; DROP DATABASE %s", A.db,
	    B.db);
	CHECK(scratch_sql(&S, out) == 0);
}

/* The session holding the scratch database's migration lock; 0: none. */
static long
lock_holder(void)
{
	char sql[256], v[64];

	snprintf(sql, sizeof sql, "SELECT IFNULL(IS_USED_LOCK("
	    "'asyncexec_migrate:%s'), 0)", S.db);
	return sql_value(sql, v, sizeof v) == 0 ? atol(v) : 0;
}

static int
lock_held(void *arg)
{
	(void)arg;
	return lock_holder() != 0;
}

/* The session of a migrate waiting for the lock ("User lock"); 0: none. */
static long
lock_waiter(void)
{
	char sql[256], v[64];

	snprintf(sql, sizeof sql, "SELECT IFNULL(MAX(ID), 0) FROM "
	    "information_schema.PROCESSLIST WHERE DB = '%s' AND "
	    "STATE = 'User lock'", S.db);
	return sql_value(sql, v, sizeof v) == 0 ? atol(v) : 0;
}

static int
lock_waited(void *arg)
{
	(void)arg;
	return lock_waiter() != 0;
}

/* A root session that takes the migration lock and ends secs later (the
 * lock goes with it): its client's pid once the lock is held, or -1. */
static pid_t
hold_lock(int secs)
{
	char sql[256], sockarg[300];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot",
	    sockarg, "-e", sql, NULL };
	pid_t pid;

	snprintf(sockarg, sizeof sockarg, "--socket=%s", S.dbsock);
	snprintf(sql, sizeof sql, "SELECT GET_LOCK('asyncexec_migrate:%s', 0), "
	    "SLEEP(%d)", S.db, secs);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (freopen("/dev/null", "w", stdout) == NULL ||
		    freopen("/dev/null", "w", stderr) == NULL)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid == -1 || !wait_for(lock_held, NULL, 10000))
		return -1;
	return pid;
}

/* Ends the holder's session (the lock is released) and reaps its client. */
static void
release_lock(pid_t holder)
{
	struct exit_wait w = { holder };
	char sql[64];
	long id;

	if ((id = lock_holder()) != 0) {
		snprintf(sql, sizeof sql, "KILL CONNECTION %ld", id);
		CHECK(scratch_sql(&S, sql) == 0);
	}
	if (!wait_for(has_exited, &w, 10000))
		kill(holder, SIGKILL);
	(void)waitpid(holder, NULL, 0);
}

/*
 * Another migrate holds the migration lock: a migrate waits for it (up to
 * 60 s) on a connection whose reads wait longer than that, and proceeds
 * when it is released, even past 30 s (the read timeout of the other
 * programs' connections: the client used to drop there, 2013, and report
 * a failed migration). When its wait ends in an error (here its session
 * is killed), it reports the lock as busy, not a failed migration.
 */
static void
check_lock_wait(void)
{
	char out[4096], err[4096], *text, *path = path_in_tmp("migrate.err");
	struct exit_wait w;
	pid_t holder;
	long id;
	int busy, status = -1;

	CHECK((holder = hold_lock(60)) > 0);
	fflush(NULL);
	if ((w.pid = fork()) == 0) {
		int rc = scratch_admin_err(&S, out, err, sizeof out, "migrate", NULL);

		_exit(write_file(path, err) == 0 ? rc & 0xff : 125);
	}
	CHECK(w.pid > 0 && wait_for(lock_waited, NULL, 10000));
	if ((id = lock_waiter()) != 0) {
		snprintf(out, sizeof out, "KILL CONNECTION %ld", id);
		CHECK(scratch_sql(&S, out) == 0);
	}
	CHECK(wait_for(has_exited, &w, 10000));
	CHECK(waitpid(w.pid, &status, 0) == w.pid && WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 1);
	text = read_file(path);
	busy = text != NULL && strstr(text, "another migrate holds") != NULL;
	CHECK(busy);
	if (!busy)
		fprintf(stderr, "  the cut lock wait said: %s\n",
		    text ? text : "(nothing)");
	free(text);
	release_lock(holder);

	CHECK((holder = hold_lock(HOLD_PAST_IO)) > 0);
	CHECK_EQ_INT(scratch_admin_err(&S, out, err, sizeof out, "migrate", NULL), 0);
	CHECK(strstr(out, "applied 0 migration(s)") != NULL);
	if (strstr(out, "applied 0 migration(s)") == NULL)
		fprintf(stderr, "  migrate behind the lock said: %s%s\n", out, err);
	release_lock(holder);
}

int
main(void)
{
	char out[4096];

	if (proc_init("schema") == -1 || scratch_init(&S, "schema") == -1)
		return 1;
	/* deployed before migrate: schema 2 lacks s2r_secret (migration 3) */
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", "--to", "2", NULL), 0);
	check_failed();
	CHECK_EQ_INT(scratch_route_key(&S, auth, sizeof auth), 0);
	CHECK(scratch_start(&S) == 0);
	check_behind(2);
	check_failed_compat();
	check_behind(SCHEMA_VERSION - 1);
	/* migrate while it runs: ready without a restart, and it serves */
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", NULL), 0);
	CHECK(wait_for(is_ready, NULL, 5000));
	/* the poll's statements prepare now: the (unknown) execution is a 404 */
	CHECK_EQ_INT(get("/v1/executions/e/s/o/x", out, sizeof out), 404);
	check_ahead();
	check_gap();
	check_lock_wait();
	check_rerun();
	CHECK_EQ_INT(scratch_stop(&S), 0);
	scratch_drop(&S);
	return check_done("proc_schema");
}
