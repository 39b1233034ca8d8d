/*
 * test_fault_conn.c - a worker's connection killed or failed mid-statement,
 * over real HTTP through nginx. The window is hit deterministically: the
 * test's own root session holds a row lock the worker's statement must wait
 * for, finds that statement in information_schema.processlist, and then
 *
 *   1. KILL CONNECTION during a claim of two, while its lease UPDATE has
 *      changed the first row (a test trigger makes the second row's update
 *      wait on a lock, "gate", that the test holds): 503, nothing of the
 *      claim committed, the next claim (on a rebuilt connection) gets both
 *      with attempt 1;
 *   2. KILL CONNECTION during a finalization (the test holds the row): 503
 *      or 200 (retried whole); either way exactly one complete wins;
 *   3. 1205: the gate held past the session's innodb_lock_wait_timeout:
 *      503 with Retry-After, nothing committed, the claim works afterwards;
 *   4. 1213: a real deadlock between the claim and the test's session (the
 *      test's transaction is the heavier, so InnoDB rolls the claim back):
 *      the claim is run again whole (as on a Galera certification
 *      conflict): 200, and what it hands out is exactly what committed
 *      (nothing of the rolled-back attempt); the claim works afterwards;
 *   5. 1213 on a retryable fail's UPDATE (the same deadlock, the trigger
 *      holding that UPDATE), after which the test's transaction completes
 *      the execution under the same claim and commits: the fail lost, 409
 *      with currentStatus completed, as any callback that lost (it was 503).
 *
 * Locks the shared execution table's rows and kills connections: CTest runs
 * it with RUN_SERIAL. The trigger only acts on this run's correlation ids
 * and is dropped on exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fault.h"
#include "fixture.h"

#define FIND_MS		10000	/* the worker's statement shows as waiting */
#define ANSWER_MS	60000	/* a request held by a lock is answered */

static struct fx	 F;
static MYSQL		*m;	/* the test's root session */
static char		 tag[96];	/* this run's correlation id prefix */
static int		 trigger_made;
static long long	 global_wait;	/* @@GLOBAL.innodb_lock_wait_timeout */

struct call {
	pthread_t	 th;
	int		 claim;		/* else complete (or fail) */
	int		 fail;		/* a retryable fail */
	struct claim	 c;
	char		 result[128];
	struct http_resp r;
	int		 done;
	int64_t		 t0, t1;
};

static void
drop_trigger(void)
{
	MYSQL	*x;

	if (!trigger_made || (x = f_sql_open()) == NULL)
		return;
	(void)f_sql(x, "DROP TRIGGER IF EXISTS fault_gate_claim");
	(void)f_sql(x, "DROP TABLE IF EXISTS fault_gate");
	mysql_close(x);
	trigger_made = 0;
}

/* The gate table and the trigger that makes a claim's UPDATE of a row
 * whose correlation id ends in "-hold" wait for the gate row's lock. */
static int
make_trigger(void)
{
	trigger_made = 1;
	atexit(drop_trigger);
	if (f_sql(m, "CREATE TABLE IF NOT EXISTS fault_gate (id INT PRIMARY "
	    "KEY, v INT) ENGINE=InnoDB") || f_sql(m, "INSERT IGNORE INTO "
	    "fault_gate VALUES (1, 0)") ||
	    f_sql(m, "DROP TRIGGER IF EXISTS fault_gate_claim"))
		return -1;
	return f_sql(m, "CREATE TRIGGER fault_gate_claim BEFORE UPDATE ON "
	    "s2r_async_execution FOR EACH ROW BEGIN IF NEW.correlation_id "
	    "LIKE '%s-%%-hold' AND NOT (NEW.callback_token_hash <=> "
	    "OLD.callback_token_hash) THEN SELECT v INTO @fault_gate FROM "
	    "fault_gate WHERE id = 1 FOR UPDATE; END IF; END", tag) ? -1 : 0;
}

static void *
call_run(void *arg)
{
	struct call	*k = arg;
	char		 body[160];

	k->t0 = ut_now_ms();
	if (k->claim)
		fx_claim(&F, F.bkey, "{\"max\":2}", &k->r);
	else if (k->fail)
		fx_callback(F.bkey, k->c.id, "fail", k->c.token, "{\"error\":"
		    "{\"message\":\"again\"},\"retryAfterSeconds\":0}", &k->r);
	else {
		snprintf(body, sizeof body, "{\"result\":%s}", k->result);
		fx_callback(F.bkey, k->c.id, "complete", k->c.token, body,
		    &k->r);
	}
	k->t1 = ut_now_ms();
	__atomic_store_n(&k->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void
call_start(struct call *k)
{
	k->done = 0;
	pthread_create(&k->th, NULL, call_run, k);
}

/* Waits (bounded) for the call's answer. */
static void
call_join(struct call *k)
{
	int64_t	 deadline = ut_now_ms() + ANSWER_MS;

	while (!__atomic_load_n(&k->done, __ATOMIC_SEQ_CST) &&
	    ut_now_ms() < deadline)
		ut_pause_ms(20);
	if (!k->done) {
		fprintf(stderr, "  the request was not answered in %d ms\n",
		    ANSWER_MS);
		exit(1);
	}
	pthread_join(k->th, NULL);
}

/* Prints the app's connections (when a statement was not found). */
static void
show_conns(void)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;

	if (mysql_query(m, "SELECT id, command, state, LEFT(info, 70) FROM "
	    "information_schema.processlist WHERE id <> CONNECTION_ID()") != 0 ||
	    (res = mysql_store_result(m)) == NULL)
		return;
	while ((row = mysql_fetch_row(res)) != NULL)
		fprintf(stderr, "  | %s %s [%s] %s\n", row[0], row[1],
		    row[2] ? row[2] : "", row[3] ? row[3] : "");
	mysql_free_result(res);
}

/* The processlist id of the (app's) connection running a statement that
 * starts with prefix, waited for (bounded); -1 when none shows. */
static long long
find_conn(const char *prefix)
{
	int64_t		 deadline = ut_now_ms() + FIND_MS;
	long long	 id;

	do {
		/* a trigger runs as its definer: match by statement only */
		id = f_sql_num(m, "SELECT id FROM information_schema.processlist "
		    "WHERE id <> CONNECTION_ID() AND info LIKE '%s%%' ORDER BY "
		    "time DESC LIMIT 1", prefix);
		if (id > 0)
			return id;
		ut_pause_ms(20);
	} while (ut_now_ms() < deadline);
	fprintf(stderr, "  no app connection runs \"%s...\"\n", prefix);
	show_conns();
	return -1;
}

/* Submits the pair "<tag>-<n>a" and "<tag>-<n>b-hold" (in that order). */
static void
submit_pair(int n, struct sub *a, struct sub *b)
{
	char	 cid[CID_MAX];

	snprintf(cid, sizeof cid, "%s-%da", tag, n);
	CHECK(fx_submit_ok(&F, cid, "{\"pair\":1}", a));
	snprintf(cid, sizeof cid, "%s-%db-hold", tag, n);
	CHECK(fx_submit_ok(&F, cid, "{\"pair\":2}", b));
}

/* Neither execution of the pair carries anything of a claim. */
static void
check_unclaimed(const struct sub *a, const struct sub *b)
{
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id IN ('%s', '%s') AND attempts = 0 AND "
	    "callback_token_hash IS NULL AND lease_expires_at IS NULL",
	    a->cid, b->cid), 2);
}

/* A 503 service_unavailable problem with Retry-After. */
static void
check_503(const struct http_resp *r)
{
	CHECK(expect_problem(r, 503, "service_unavailable"));
	CHECK(is_digits(http_header(r, "retry-after")));
}

/* The next claim gets exactly the pair, each at attempt 1. */
static void
check_reclaim(const struct sub *a, const struct sub *b)
{
	struct http_resp	 r;
	struct json_object	*o = NULL;
	int64_t			 at0 = 0, at1 = 0;

	CHECK_EQ_INT(fx_claim(&F, F.bkey, "{\"max\":2}", &r), 200);
	CHECK((o = json_body(&r)) != NULL && jlen(o, "executions") == 2);
	CHECK_EQ_STR(jstr(o, "executions.0.correlationId"), a->cid);
	CHECK_EQ_STR(jstr(o, "executions.1.correlationId"), b->cid);
	CHECK(jint(o, "executions.0.attempt", &at0) && at0 == 1);
	CHECK(jint(o, "executions.1.attempt", &at1) && at1 == 1);
	json_object_put(o);
	http_resp_free(&r);
}

/* Holds the gate row in an open transaction of the test's session. */
static void
hold_gate(void)
{
	CHECK_EQ_INT(f_sql(m, "START TRANSACTION"), 0);
	CHECK_EQ_INT(f_sql(m, "SELECT v FROM fault_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
}

static void
test_kill_claim(void)
{
	struct sub	 a, b;
	struct call	 k = { .claim = 1 };
	long long	 id;

	submit_pair(1, &a, &b);
	hold_gate();
	call_start(&k);
	id = find_conn("SELECT v INTO @fault_gate");
	CHECK(id > 0);
	if (id > 0)
		CHECK_EQ_INT(f_sql(m, "KILL CONNECTION %lld", id), 0);
	call_join(&k);
	CHECK_EQ_INT(f_sql(m, "ROLLBACK"), 0);
	printf("kill during claim: %d after %lld ms\n", k.r.status,
	    (long long)(k.t1 - k.t0));
	check_503(&k.r);
	http_resp_free(&k.r);
	check_unclaimed(&a, &b);
	check_reclaim(&a, &b);
}

static void
test_kill_finalize(void)
{
	struct sub	 s;
	struct call	 k = { .claim = 0 };
	struct http_resp r;
	long long	 id;
	int		 st;

	CHECK(fx_submit_claim(&F, "{\"fin\":1}", &s, &k.c));
	snprintf(k.result, sizeof k.result, "\"killed-%s\"", unique_suffix());
	CHECK_EQ_INT(f_sql(m, "START TRANSACTION"), 0);
	CHECK_EQ_INT(f_sql(m, "SELECT id FROM s2r_async_execution WHERE id = "
	    "%lld FOR UPDATE", (long long)k.c.id), 0);
	call_start(&k);
	id = find_conn("UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET status");
	CHECK(id > 0);
	if (id > 0)
		CHECK_EQ_INT(f_sql(m, "KILL CONNECTION %lld", id), 0);
	ut_pause_ms(50);	/* let the retry, if any, queue on the lock */
	CHECK_EQ_INT(f_sql(m, "ROLLBACK"), 0);
	call_join(&k);
	st = k.r.status;
	printf("kill during complete: %d after %lld ms\n", st,
	    (long long)(k.t1 - k.t0));
	CHECK(st == 200 || st == 503);
	if (st == 503)
		check_503(&k.r);
	http_resp_free(&k.r);
	if (st == 503)	/* not retried: the client's retry wins */
		CHECK_EQ_INT(fx_complete(&F, &k.c, k.result), 200);
	/* exactly one winner: the same callback again loses */
	fx_callback(F.bkey, k.c.id, "complete", k.c.token, "{\"result\":1}",
	    &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "completed");
}

/* The app log has gained a line with needle since line from. */
static int
log_has_since(long from, const char *needle)
{
	char	 path[1024], line[2048];
	FILE	*f;
	long	 n = 0;
	int	 found = 0;

	snprintf(path, sizeof path, "%s", f_state_path("asyncexec.log"));
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (n++ >= from && strstr(line, needle) != NULL)
			found = 1;
	fclose(f);
	return found;
}

static void
test_lock_timeout(void)
{
	struct sub	 a, b;
	struct call	 k = { .claim = 1 };
	long		 from = f_log_lines(f_state_path("asyncexec.log"));

	submit_pair(3, &a, &b);
	hold_gate();
	call_start(&k);
	CHECK(find_conn("SELECT v INTO @fault_gate")
	    > 0);
	call_join(&k);	/* the gate is held until the answer is there */
	CHECK_EQ_INT(f_sql(m, "ROLLBACK"), 0);
	/* the app's session timeout, shorter than the server's default */
	printf("lock wait timeout during claim: %d after %lld ms (server "
	    "default %lld s)\n", k.r.status, (long long)(k.t1 - k.t0),
	    global_wait);
	CHECK(k.t1 - k.t0 < global_wait * 1000);
	check_503(&k.r);
	http_resp_free(&k.r);
	CHECK(log_has_since(from, "error 1205"));
	check_unclaimed(&a, &b);
	check_reclaim(&a, &b);
}

static void
test_deadlock(void)
{
	struct sub	 a, b;
	struct call	 k = { .claim = 1 };
	long		 from = f_log_lines(f_state_path("asyncexec.log"));
	struct json_object *o;
	unsigned	 e;
	int		 n;

	submit_pair(4, &a, &b);
	/* the heavier transaction (more rows changed) is not the victim */
	CHECK_EQ_INT(f_sql(m, "START TRANSACTION"), 0);
	CHECK_EQ_INT(f_sql(m, "INSERT INTO fault_gate (id, v) WITH RECURSIVE "
	    "s(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM s WHERE n < 500) "
	    "SELECT n, 0 FROM s"), 0);
	CHECK_EQ_INT(f_sql(m, "SELECT v FROM fault_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
	call_start(&k);
	CHECK(find_conn("SELECT v INTO @fault_gate")
	    > 0);
	/* the claim holds b and waits for the gate; now wait for b */
	e = f_sql(m, "SELECT id FROM s2r_async_execution WHERE "
	    "correlation_id = '%s' FOR UPDATE", b.cid);
	CHECK_EQ_INT(e, 0);
	call_join(&k);
	CHECK_EQ_INT(f_sql(m, "ROLLBACK"), 0);
	printf("deadlock during claim: %d after %lld ms (test session: %u)\n",
	    k.r.status, (long long)(k.t1 - k.t0), e);
	CHECK_EQ_INT(k.r.status, 200);
	CHECK((o = json_body(&k.r)) != NULL);
	n = o ? jlen(o, "executions") : -1;
	printf("deadlock during claim: the retry handed out %d\n", n);
	CHECK(n >= 0 && n <= 2);
	/* handed out = committed: attempt 1 with a token; the rest untouched */
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id IN ('%s', '%s') AND attempts = 1 AND "
	    "callback_token_hash IS NOT NULL", a.cid, b.cid), n);
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id IN ('%s', '%s') AND attempts = 0 AND "
	    "callback_token_hash IS NULL", a.cid, b.cid), 2 - n);
	json_object_put(o);
	http_resp_free(&k.r);
	CHECK(log_has_since(from, "error 1213"));
	if (n == 0)
		check_reclaim(&a, &b);
}

static void
test_deadlock_retry(void)
{
	struct sub	 s;
	struct call	 k = { .fail = 1 };
	char		 cid[CID_MAX];
	long		 from = f_log_lines(f_state_path("asyncexec.log"));
	unsigned	 e;

	snprintf(cid, sizeof cid, "%s-5-hold", tag);
	CHECK(fx_submit_ok(&F, cid, "{\"retry\":1}", &s));
	CHECK(fx_claim_one(&F, &k.c) && strcmp(k.c.cid, cid) == 0);
	/* the heavier transaction (more rows changed) is not the victim */
	CHECK_EQ_INT(f_sql(m, "START TRANSACTION"), 0);
	CHECK_EQ_INT(f_sql(m, "INSERT INTO fault_gate (id, v) WITH RECURSIVE "
	    "s(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM s WHERE n < 500) "
	    "SELECT n, 0 FROM s"), 0);
	CHECK_EQ_INT(f_sql(m, "SELECT v FROM fault_gate WHERE id = 1 FOR "
	    "UPDATE"), 0);
	call_start(&k);
	/* the fail's UPDATE holds the row and waits for the gate */
	CHECK(find_conn("SELECT v INTO @fault_gate") > 0);
	e = f_sql(m, "SELECT id FROM s2r_async_execution WHERE id = %lld "
	    "FOR UPDATE", (long long)k.c.id);
	CHECK_EQ_INT(e, 0);
	/* the claim's complete won: the fail's re-read waits for this */
	CHECK_EQ_INT(f_sql(m, "UPDATE s2r_async_execution SET status = "
	    "'completed', result_payload = '\"other\"', completed_at = NOW(3), "
	    "updated_at = NOW(3) WHERE id = %lld", (long long)k.c.id), 0);
	CHECK_EQ_INT(f_sql(m, "DELETE FROM fault_gate WHERE id > 1"), 0);
	CHECK_EQ_INT(f_sql(m, "COMMIT"), 0);
	call_join(&k);
	printf("deadlock during a retryable fail, then completed: %d %.200s\n",
	    k.r.status, k.r.body ? k.r.body : "");
	CHECK(expect_conflict(&k.r, "completed"));
	http_resp_free(&k.r);
	CHECK(log_has_since(from, "error 1213"));
	CHECK_EQ_STR(fx_status(&F, &s), "completed");
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-conn");
	snprintf(tag, sizeof tag, "gate-%s", unique_suffix());
	if ((m = f_sql_open()) == NULL || make_trigger() == -1 ||
	    (global_wait = f_sql_num(m, "SELECT "
	    "@@GLOBAL.innodb_lock_wait_timeout")) <= 0) {
		fprintf(stderr, "FATAL: cannot set up the test session\n");
		return 1;
	}
	test_kill_claim();
	test_kill_finalize();
	test_lock_timeout();
	test_deadlock_retry();
	test_deadlock();
	drop_trigger();
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_conn");
}
