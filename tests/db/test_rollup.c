/*
 * asyncexec-expire's rollup step against the real MariaDB (ASYNCEXEC_TEST_CONFIG; sql/013):
 * the executions that ended more than ROLLUP_LAG_MS before the run's now are added once
 * to s2r_route_outcome under their route, 5-minute interval and status; the ones inside
 * the lag wait for a later run; a second run at the same now adds nothing; a dry run
 * changes nothing; a waiting row is never counted; intervals older than ROLLUP_KEEP_MS go.
 *
 * The mark is the database's (other tests' runs move it too, with their clock's now): the
 * test sets it two minutes back first, its rows end after that, and the assertions are on
 * this test's own route, whichever run counts them. The runs here use now = the clock +
 * 20 s or 40 s, so the mark stays 20 s or more behind the clock: only rows that committed
 * long before are passed.
 *
 * grace_zero_counted: with purge_grace_days 0, an execution the run expires
 * is counted by a later run before any run purges it (the purge spares what
 * ended after the mark); it used to be purged by the run that expired it,
 * before the rollup could see it, and never counted.
 *
 * retries_past_eight: a window undone by 10 deadlocks is retried until it
 * commits; it used to fail the run at the ninth.
 *
 * retries_per_window: a run of several windows, each undone by
 * deadlocks, has its retries counted per window (8 each, the limit then,
 * as for a batch); it used to count them per run and give up at the
 * ninth, leaving the later windows for the next run.
 */
#include <mysql.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "expire.h"
#include "expire_fixture.h"
#include "repo.h"
#include "repo_expire.h"
#include "repo_rollup.h"

#define SEC	1000LL

static struct config	 cfg;
static struct xdb	*xdb;
static MYSQL		*side;
static char		 env[24];

/* Runs q (printf-style) on the side connection. */
static void
sql(const char *fmt, ...)
{
	char	 q[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	side_sql(side, q);
}

/* The first column of the first row of q as a number (-1 when none or NULL). */
static long long
num(const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	side_sql(side, q);
	res = mysql_store_result(side);
	if (res != NULL && (row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

/* An execution of this test's route in status st that ended at ms (st waiting: none). */
static void
ended(const char *cid, const char *st, int64_t ms)
{
	char	 at[64];

	if (strcmp(st, "waiting_callback") == 0)
		snprintf(at, sizeof(at), "NULL");
	else
		snprintf(at, sizeof(at), "FROM_UNIXTIME(%lld.%03lld)", (long long)(ms / 1000),
		    (long long)(ms % 1000));
	sql("INSERT INTO s2r_async_execution (correlation_id, environment, service_key, "
	    "operation_key, status, request_payload, request_sha256, created_at, updated_at, "
	    "completed_at, expires_at) VALUES ('%s', '%s', 's', 'o', '%s', '{}', "
	    "UNHEX(REPEAT('00', 32)), UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, UTC_TIMESTAMP(3), "
	    "%s, UTC_TIMESTAMP(3) + INTERVAL 1 DAY)", cid, env, st, at);
}

/* The rollup's count of this route's executions that ended in st (all intervals). */
static long long
counted(const char *st)
{
	char	 q[300];

	snprintf(q, sizeof(q), "SELECT COALESCE(SUM(ended), 0) FROM s2r_route_outcome WHERE "
	    "environment = '%s' AND service_key = 's' AND operation_key = 'o' AND "
	    "status = '%s'", env, st);
	return num(q);
}

/* The rollup step alone at now (a dry run when dry). */
static struct expire_result
run(int64_t now, int dry)
{
	struct expire_opts	 o;
	struct expire_result	 r;

	expire_opts_init(&o, &cfg);
	o.now = now;
	o.steps = 1u << EXPIRE_STEP_ROLLUP;
	o.dry_run = dry;
	o.max_runtime_ms = 60000;
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.complete && !r.skipped && !r.failed);
	return r;
}

static void
setup(void)
{
	char	 err[512];

	if (getenv("ASYNCEXEC_TEST_CONFIG") == NULL || config_load(&cfg,
	    getenv("ASYNCEXEC_TEST_CONFIG"), err, sizeof(err)) == -1) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG: run scripts/test.sh\n");
		exit(1);
	}
	snprintf(env, sizeof(env), "rol%ld", (long)getpid());
	if ((xdb = repo_expire_open(&cfg)) == NULL) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
	side = side_open(&cfg, "SET time_zone = '+00:00'");
}

/* Counted once each, past the lag only, into the interval each ended in. */
static void
counts_once(void)
{
	int64_t		 base = clock_now_ms();
	int64_t		 bucket = (base - 50 * SEC) - (base - 50 * SEC) % ROLLUP_BUCKET_MS;
	struct expire_result r, d;
	char		 q[400];

	/* the mark two minutes back, so that this test's rows end after it whatever runs
	 * (this test's own, at a now ahead of the clock) moved it to; what other tests'
	 * executions ended since is counted again, which nothing here reads */
	sql("INSERT INTO s2r_rollup_mark (id, counted_until) VALUES (1, FROM_UNIXTIME(%lld)) "
	    "ON DUPLICATE KEY UPDATE counted_until = VALUES(counted_until)",
	    (long long)((base - 120 * SEC) / 1000));
	ended("c1", "completed", base - 50 * SEC);
	ended("c2", "completed", base - 50 * SEC);
	ended("c3", "completed", base - 45 * SEC);
	ended("f1", "failed", base - 48 * SEC);
	ended("x1", "expired", base - 46 * SEC);
	ended("k1", "cancelled", base - 42 * SEC);
	ended("late", "completed", base - 30 * SEC);	/* inside the first run's lag */
	ended("w1", "waiting_callback", 0);
	/* the dry run sees them and changes nothing */
	d = run(base + 20 * SEC, 1);
	CHECK(d.count[EXPIRE_STEP_ROLLUP] >= 6);
	CHECK_EQ_INT(counted("completed"), 0);
	r = run(base + 20 * SEC, 0);
	CHECK(r.count[EXPIRE_STEP_ROLLUP] >= 6);
	CHECK_EQ_INT(counted("completed"), 3);
	CHECK_EQ_INT(counted("failed"), 1);
	CHECK_EQ_INT(counted("expired"), 1);
	CHECK_EQ_INT(counted("cancelled"), 1);
	/* c1's interval: the 5-minute UTC interval it ended in */
	snprintf(q, sizeof(q), "SELECT COALESCE(SUM(ended), 0) FROM s2r_route_outcome WHERE "
	    "environment = '%s' AND status = 'completed' AND bucket = FROM_UNIXTIME(%lld)",
	    env, (long long)(bucket / 1000));
	CHECK(num(q) >= 1);
	/* the same now again: nothing more */
	r = run(base + 20 * SEC, 0);
	CHECK_EQ_INT(counted("completed"), 3);
	CHECK_EQ_INT(counted("cancelled"), 1);
	/* later: the late one, once */
	r = run(base + 40 * SEC, 0);
	CHECK_EQ_INT(counted("completed"), 4);
	r = run(base + 40 * SEC, 0);
	CHECK_EQ_INT(counted("completed"), 4);
	snprintf(q, sizeof(q), "SELECT COUNT(*) FROM s2r_route_outcome WHERE environment = "
	    "'%s' AND status NOT IN ('completed', 'failed', 'expired', 'cancelled')", env);
	CHECK_EQ_INT(num(q), 0);
}

/* Every step at now with purge_grace_days 0; the run's purge count. */
static uint64_t
run_all(int64_t now)
{
	struct expire_opts	 o;
	struct expire_result	 r;

	expire_opts_init(&o, &cfg);
	o.now = now;
	o.purge_grace_days = 0;
	o.max_runtime_ms = 60000;
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.complete && !r.skipped && !r.failed);
	return r.count[EXPIRE_STEP_PURGE];
}

/*
 * purge_grace_days 0: an overdue execution is expired, counted by the
 * rollup (once the lag has passed), and only then purged. The runs are a
 * year back (with the mark two minutes before), so that with no grace
 * they touch no row of the suites beside this one; the mark is restored.
 */
static void
grace_zero_counted(void)
{
	int64_t		 now = clock_now_ms() - 365 * 86400 * SEC;
	long long	 m0, x0 = counted("expired");

	m0 = mark_set(&cfg, now - 2 * MIN);
	ended("gz", "waiting_callback", 0);
	sql("UPDATE s2r_async_execution SET expires_at = FROM_UNIXTIME(%lld) "
	    "WHERE environment = '%s' AND correlation_id = 'gz'",
	    (long long)((now - SEC) / 1000), env);
	run_all(now);
	run_all(now + 2 * MIN);
	CHECK_EQ_INT(counted("expired") - x0, 1);
	/* counted: a later run purges it */
	run_all(now + 4 * MIN);
	CHECK_EQ_INT(side_numf(side, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id = 'gz' AND environment = '%s'", env), 0);
	mark_set(&cfg, m0);
}

/* Intervals older than ROLLUP_KEEP_MS are deleted; younger ones stay. */
static void
prunes(void)
{
	int64_t		 now = clock_now_ms();
	char		 q[300];

	sql("INSERT INTO s2r_route_outcome VALUES ('%s', 'old', 'o', FROM_UNIXTIME(%lld), "
	    "'failed', 7), ('%s', 'young', 'o', FROM_UNIXTIME(%lld), 'failed', 5)", env,
	    (long long)((now - ROLLUP_KEEP_MS - 10 * 60 * SEC) / 1000), env,
	    (long long)((now - ROLLUP_KEEP_MS + 30 * 60 * SEC) / 1000));
	run(now, 0);
	snprintf(q, sizeof(q), "SELECT COALESCE(SUM(ended), -1) FROM s2r_route_outcome WHERE "
	    "environment = '%s' AND service_key = 'old'", env);
	CHECK_EQ_INT(num(q), -1);
	snprintf(q, sizeof(q), "SELECT COALESCE(SUM(ended), -1) FROM s2r_route_outcome WHERE "
	    "environment = '%s' AND service_key = 'young'", env);
	CHECK_EQ_INT(num(q), 5);
}

/* The ranges the step reads are ix_exec_completed's. */
static void
explains(void)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	unsigned	 i, key = 0;

	side_sql(side, "EXPLAIN SELECT COUNT(*) FROM s2r_async_execution FORCE INDEX "
	    "(ix_exec_completed) WHERE status IN ('completed', 'failed', 'expired', "
	    "'cancelled') AND completed_at > UTC_TIMESTAMP() - INTERVAL 10 MINUTE AND "
	    "completed_at <= UTC_TIMESTAMP()");
	res = mysql_store_result(side);
	while (res != NULL && (row = mysql_fetch_row(res)) != NULL)
		for (i = 0; i < mysql_num_fields(res); i++)
			if (strcmp(mysql_fetch_fields(res)[i].name, "key") == 0 && row[i] &&
			    strcmp(row[i], "ix_exec_completed") == 0)
				key = 1;
	mysql_free_result(res);
	CHECK(key);
}

/* repo_rollup.c's ROLLUP_WINDOW_ROWS: more than this ended since the
 * mark and the run counts ten minutes (ROLLUP_WINDOW_MS) at a time */
#define WINDOW_ROWS	100000
#define HELD		2	/* windows undone by deadlocks */
#define DEADLOCKS	5	/* each: HELD x 5 > 8, the old limit */
/* a rollup add waiting 100 ms or more (for a row lock: it takes ms) */
#define ADD_WAITS	"SELECT COUNT(*) FROM information_schema.PROCESSLIST " \
	"WHERE ID <> CONNECTION_ID() AND INFO LIKE " \
	"'INSERT INTO s2r_route_outcome%' AND TIME_MS >= 100"

/*
 * Until the add undone by the last deadlock has left the process list
 * (its thread can still show it, waiting, for a moment after the
 * holder's statement returned): the next holder's deadlock must meet
 * the window's next attempt, not the end of this one. Bounded (30 s);
 * a retry waits 100 ms before it counts again (ADD_WAITS), so 10 ms
 * polls see the gap.
 */
static void
gone(void)
{
	int	 t;

	for (t = 0; t < 3000 && num(ADD_WAITS) != 0; t++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
}

struct bg {
	struct expire_result	 r;
	int			 rc;
	atomic_int		 done;
};

/* The rollup step alone at the clock's now, in a thread. */
static void *
bg_run(void *arg)
{
	struct bg		*b = arg;
	struct expire_opts	 o;

	expire_opts_init(&o, &cfg);
	o.now = clock_now_ms();
	o.steps = 1u << EXPIRE_STEP_ROLLUP;
	o.max_runtime_ms = 60000;
	b->rc = expire_run(xdb, &o, &b->r);
	atomic_store(&b->done, 1);
	return NULL;
}

/*
 * A transaction that holds a share lock on this route's completed row
 * of interval b and has written 200 rows of its own (rolled back): in a
 * deadlock with the rollup, the rollup is the victim.
 */
static MYSQL *
holder(int64_t b, int k)
{
	MYSQL	*m = side_open(&cfg, "SET time_zone = '+00:00'");

	side_sql(m, "BEGIN");
	side_sqlf(m, "INSERT INTO s2r_route_outcome SELECT '%s', 'w%d', 'o', "
	    "'2000-01-01' + INTERVAL seq MINUTE, 'failed', 0 FROM "
	    "seq_1_to_200", env, k);
	side_sqlf(m, "SELECT ended FROM s2r_route_outcome WHERE environment "
	    "= '%s' AND service_key = 's' AND operation_key = 'o' AND bucket "
	    "= FROM_UNIXTIME(%lld) AND status = 'completed' LOCK IN SHARE "
	    "MODE", env, (long long)(b / 1000));
	mysql_free_result(mysql_store_result(m));
	return m;
}

/*
 * Holder m takes the mark the waiting rollup window holds: a deadlock,
 * the window is undone (1213), m rolls back. 0, or -1 when m was the
 * victim.
 */
static int
deadlock(MYSQL *m)
{
	if (mysql_query(m, "SELECT counted_until FROM s2r_rollup_mark "
	    "WHERE id = 1 LOCK IN SHARE MODE") != 0) {
		fprintf(stderr, "holder: %s\n", mysql_error(m));
		return -1;
	}
	mysql_free_result(mysql_store_result(m));
	side_sql(m, "ROLLBACK");
	return 0;
}

/* Interval b's count of this route's completed executions (-1: none). */
static long long
in_bucket(int64_t b)
{
	return side_numf(side, "SELECT ended FROM s2r_route_outcome WHERE "
	    "environment = '%s' AND service_key = 's' AND operation_key = "
	    "'o' AND bucket = FROM_UNIXTIME(%lld) AND status = 'completed'",
	    env, (long long)(b / 1000));
}

/*
 * Runs the rollup in the background (bg) and, each time its window's
 * add waits, makes the next of the n holders h deadlock with it; checks
 * that all n did, then closes them and waits for the run's end.
 */
static void
drive(MYSQL **h, int n, struct bg *bg)
{
	pthread_t	 th;
	int		 i, t, failed = 0;

	memset(bg, 0, sizeof(*bg));
	pthread_create(&th, NULL, bg_run, bg);
	for (i = 0; i < n && !failed; i++) {
		/* bounded: until the window's add waits, or the run ended */
		for (t = 0; t < 3000 && !atomic_load(&bg->done) &&
		    num(ADD_WAITS) == 0; t++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		if (atomic_load(&bg->done) || t == 3000)
			break;
		failed = deadlock(h[i]);
		mysql_close(h[i]);
		h[i] = NULL;
		gone();
	}
	CHECK_EQ_INT(i, n);
	CHECK_EQ_INT(failed, 0);
	for (i = 0; i < n; i++)
		if (h[i] != NULL)
			mysql_close(h[i]);
	pthread_join(th, NULL);
}

/*
 * The mark an hour back, one execution in each of the first HELD
 * ten-minute windows and WINDOW_ROWS + 1 at 45 minutes (so that the run
 * goes window by window); each held window's add waits on DEADLOCKS
 * holders of its interval, and each holder in turn makes a deadlock.
 * The run must retry each window DEADLOCKS times and count them all.
 */
static void
retries_per_window(void)
{
	MYSQL		*h[HELD * DEADLOCKS];
	struct bg	 bg;
	int64_t		 m = clock_now_ms() - 60 * MIN, at, b[HELD], big;
	char		 cid[16];
	int		 i;

	m -= m % ROLLUP_BUCKET_MS;
	sql("INSERT INTO s2r_rollup_mark (id, counted_until) VALUES (1, "
	    "FROM_UNIXTIME(%lld)) ON DUPLICATE KEY UPDATE counted_until = "
	    "VALUES(counted_until)", (long long)(m / 1000));
	for (i = 0; i < HELD; i++) {
		at = m + (10 * i + 3) * MIN;
		b[i] = at - at % ROLLUP_BUCKET_MS;
		snprintf(cid, sizeof(cid), "held%d", i);
		ended(cid, "completed", at);
		sql("INSERT INTO s2r_route_outcome VALUES ('%s', 's', 'o', "
		    "FROM_UNIXTIME(%lld), 'completed', 0)", env,
		    (long long)(b[i] / 1000));
	}
	big = m + 45 * MIN;
	sql("INSERT INTO s2r_async_execution (correlation_id, environment, "
	    "service_key, operation_key, status, request_payload, "
	    "request_sha256, created_at, updated_at, completed_at, "
	    "expires_at) SELECT CONCAT('big', seq), '%s', 's', 'o', "
	    "'completed', '{}', REPEAT('x', 32), UTC_TIMESTAMP(3), "
	    "UTC_TIMESTAMP(3), FROM_UNIXTIME(%lld), UTC_TIMESTAMP(3) + "
	    "INTERVAL 1 DAY FROM seq_1_to_%d", env, (long long)(big / 1000),
	    WINDOW_ROWS + 1);
	for (i = 0; i < HELD * DEADLOCKS; i++)
		h[i] = holder(b[i / DEADLOCKS], i);
	drive(h, HELD * DEADLOCKS, &bg);
	printf("windows held: run %s, %lu retries\n", bg.rc == 0 ? "ok" :
	    "FAILED", bg.r.retries);
	CHECK_EQ_INT(bg.rc, 0);
	CHECK(bg.r.complete && !bg.r.failed);
	CHECK_EQ_INT(bg.r.retries, HELD * DEADLOCKS);
	for (i = 0; i < HELD; i++)
		CHECK_EQ_INT(in_bucket(b[i]), 1);
	CHECK_EQ_INT(in_bucket(big - big % ROLLUP_BUCKET_MS), WINDOW_ROWS + 1);
}

#define LONG_DEADLOCKS	10	/* one window's: more than the old 8 */

/*
 * The mark half an hour back and one execution after it: one window,
 * whose add waits on LONG_DEADLOCKS holders of its interval, each of
 * which in turn makes a deadlock. The window is retried as often as it
 * takes (the runtime bound is far) and counted; the run completes. It
 * used to give up at the ninth deadlock and fail.
 */
static void
retries_past_eight(void)
{
	MYSQL		*h[LONG_DEADLOCKS];
	struct bg	 bg;
	int64_t		 m = clock_now_ms() - 30 * MIN, at, b;
	int		 i;

	m -= m % ROLLUP_BUCKET_MS;
	mark_set(&cfg, m);
	at = m + 3 * MIN;
	b = at - at % ROLLUP_BUCKET_MS;
	ended("long0", "completed", at);
	sql("INSERT INTO s2r_route_outcome VALUES ('%s', 's', 'o', "
	    "FROM_UNIXTIME(%lld), 'completed', 0)", env, (long long)(b / 1000));
	for (i = 0; i < LONG_DEADLOCKS; i++)
		h[i] = holder(b, 100 + i);
	drive(h, LONG_DEADLOCKS, &bg);
	printf("one window held: run %s, %lu retries\n", bg.rc == 0 ? "ok" :
	    "FAILED", bg.r.retries);
	CHECK_EQ_INT(bg.rc, 0);
	CHECK(bg.r.complete && !bg.r.failed);
	CHECK_EQ_INT(bg.r.retries, LONG_DEADLOCKS);
	CHECK_EQ_INT(in_bucket(b), 1);
}

int
main(void)
{
	setup();
	counts_once();
	grace_zero_counted();
	prunes();
	explains();
	retries_past_eight();
	retries_per_window();
	sql("DELETE FROM s2r_async_execution WHERE environment = '%s'", env);
	sql("DELETE FROM s2r_route_outcome WHERE environment = '%s'", env);
	mysql_close(side);
	repo_expire_close(xdb);
	return check_done("db_rollup");
}
