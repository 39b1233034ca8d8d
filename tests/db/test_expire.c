/*
 * asyncexec-expire against the real MariaDB (ASYNCEXEC_TEST_CONFIG; the
 * binary's path comes in ASYNCEXEC_EXPIRE).
 *
 * The rules are global (they touch every route), and other suites run
 * against the same database at the same time. So every run here uses
 * the real "now" (other suites' executions expire days in the future,
 * are claimed fewer than max_attempts times and are never that old), our
 * rows are placed relative to it, and each test deletes its rows at the
 * end so that nothing it leaves behind becomes due for a later test.
 * Lapsed leases are made by claiming "in the past", never by sleeping.
 */
#include <fcntl.h>
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "util/proc.h"
#include "check.h"
#include "config.h"
#include "crypto.h"
#include "expire.h"
#include "expire_fixture.h"
#include "json.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_check.h"
#include "repo_expire.h"

#define LOCK_NAME "CONCAT('asyncexec_expire:', " \
	"LEFT(COALESCE(DATABASE(), ''), 40))"

static struct config	 cfg;
static struct db	*db;
static struct xdb	*xdb;
static const char	*cfgpath, *expire_bin;
static char		 env[24], svc[] = "svc", tenant[40];

/* A side connection (fixtures only); exits on failure. */
static MYSQL *
side(void)
{
	return side_open(&cfg, NULL);
}

/* Takes (1) or releases (0) the run lock on side connection m. */
static void
hold_lock(MYSQL *m, int take)
{
	CHECK(mysql_query(m, take ? "SELECT GET_LOCK(" LOCK_NAME ", 0)" :
	    "SELECT RELEASE_LOCK(" LOCK_NAME ")") == 0);
	mysql_free_result(mysql_store_result(m));
	if (!take)	/* released before the close, so no later run skips */
		mysql_close(m);
}

/* Deletes every execution of this run's environment. */
static void
wipe(void)
{
	wipe_env(&cfg, env);
}

static void
setup(void)
{
	char		 err[512];

	cfgpath = getenv("ASYNCEXEC_TEST_CONFIG");
	expire_bin = getenv("ASYNCEXEC_EXPIRE");
	if (cfgpath == NULL || expire_bin == NULL) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG or ASYNCEXEC_EXPIRE is "
		    "not set: run scripts/test.sh\n");
		exit(1);
	}
	if (config_load(&cfg, cfgpath, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	snprintf(env, sizeof(env), "exp%ld%d", (long)getpid(), rand() % 1000);
	snprintf(tenant, sizeof(tenant), "t-%s", env);
	if ((db = repo_open(&cfg, 0)) == NULL || repo_ping(db) != REPO_OK ||
	    (xdb = repo_expire_open(&cfg)) == NULL) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
}

/* Inserts a waiting execution op/cid created a day before it expires. */
static uint64_t
add(const char *op, const char *cid, int64_t expires_at)
{
	struct exec_row	 r;
	uint64_t	 id = 0;

	(void)insert_waiting(db, env, svc, op, tenant, cid, expires_at);
	if (repo_exec_by_key(db, tenant, env, svc, op, cid, clock_now_ms(),
	    &r) == REPO_OK) {
		id = r.id;
		exec_row_free(&r);
	}
	CHECK(id != 0);
	return id;
}

/*
 * Claims every unleased execution of op k times, each claim's 60 s
 * lease lapsing before the next; the last lease ends at lease_end.
 * tokhash (may be NULL) gets each id's last callback-token hash.
 */
static void
claim_rounds(const char *op, int k, int64_t lease_end,
    void (*tokhash)(uint64_t, const unsigned char *))
{
	struct claim_item *it;
	unsigned char	 h[SHA256_LEN];
	size_t		 n, i;
	int		 round;
	int64_t		 t;

	for (round = 0; round < k; round++) {
		t = lease_end - MIN - (int64_t)(k - 1 - round) * 2 * MIN;
		do {
			n = 0;
			/* max_attempts 100: a6 models a lowered setting */
			CHECK(repo_claim(db, env, svc, op, 100, 60, 100, t,
			    &it, &n) == REPO_OK);
			for (i = 0; i < n && round == k - 1 && tokhash; i++) {
				crypto_sha256(it[i].token, strlen(it[i].token),
				    h);
				tokhash(it[i].id, h);
			}
			claim_free(it, n);
		} while (n == 100);
	}
}

/* Reads execution id; returns its status (ST__MAX when it is gone). */
static enum exec_status
status_of(uint64_t id, struct exec_row *out)
{
	struct exec_row	 r;
	int		 rc = repo_exec_by_id(db, id, clock_now_ms(), &r);

	CHECK(rc != REPO_ERR);
	if (rc != REPO_OK)
		return ST__MAX;
	if (out != NULL)
		*out = r;
	else
		exec_row_free(&r);
	return r.status;
}

/* Options for a run at now over the given steps. */
static struct expire_opts
opts(int64_t now, unsigned steps)
{
	struct expire_opts o;

	expire_opts_init(&o, &cfg);
	o.now = now;
	o.steps = steps;
	o.max_attempts = 5;
	o.purge_grace_days = 7;
	o.max_runtime_ms = 60000;
	return o;
}

#define S(x)	(1u << EXPIRE_STEP_##x)

/* Runs o on the shared handle; fails the check unless it completes. */
static struct expire_result
run(struct expire_opts o)
{
	struct expire_result r;

	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.complete && !r.skipped && !r.failed);
	return r;
}

/* expires_at exactly now expires; a millisecond later does not. */
static void
expire_boundaries(void)
{
	int64_t		 now = clock_now_ms();
	uint64_t	 eq = add("ex", "eq", now), before = add("ex", "b", now - 1);
	uint64_t	 after = add("ex", "a", now + 1);
	struct expire_result r;
	struct exec_row	 x;
	unsigned char	 h[SHA256_LEN] = { 0 };

	r = run(opts(now, S(EXPIRE)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 2);
	CHECK(status_of(eq, &x) == ST_EXPIRED);
	CHECK(x.completed_at == now && x.updated_at == now);
	exec_row_free(&x);
	CHECK(status_of(before, NULL) == ST_EXPIRED);
	CHECK(status_of(after, NULL) == ST_WAITING);
	/* a second run finds nothing; a terminal state never changes */
	r = run(opts(now, S(EXPIRE)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 0);
	CHECK(repo_exec_cancel(db, eq, MARK_ASK, now) == REPO_NOTFOUND);
	CHECK(repo_finalize(db, eq, h, ST_COMPLETED, "1", 1, now) ==
	    REPO_NOTFOUND);
	wipe();
}

/* The last execution keep_token saw, and its callback-token hash. */
static uint64_t	 tok_id;
static unsigned char tok_hash[SHA256_LEN];

static void
keep_token(uint64_t id, const unsigned char *h)
{
	tok_id = id;
	memcpy(tok_hash, h, SHA256_LEN);
}

/* Checks that execution id failed with "abandoned after n claims". */
static void
check_abandoned(uint64_t id, int n)
{
	struct exec_row	 x;
	char		 want[64];

	snprintf(want, sizeof(want), "{\"message\":\"abandoned after %d "
	    "claims\"}", n);
	CHECK(status_of(id, &x) == ST_FAILED);
	CHECK_EQ_STR(x.error, want);
	exec_row_free(&x);
}

/* attempts max - 1 stays; max with the lease lapsed (<= now) fails. */
static void
abandon_boundaries(void)
{
	int64_t		 now = clock_now_ms(), later = now + DAY;
	uint64_t	 a4 = add("a4", "a4", later), a5 = add("a5", "a5", later);
	uint64_t	 live = add("a5l", "a5l", later), a6 = add("a6", "a6", later);
	uint64_t	 a0 = add("a0", "a0", later), both;
	struct expire_result r;

	claim_rounds("a4", 4, now - 1000, NULL);
	claim_rounds("a5", 5, now, keep_token);
	claim_rounds("a5l", 5, now + 1, NULL);
	claim_rounds("a6", 6, now - 1000, NULL);
	r = run(opts(now, S(ABANDON)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_ABANDON], 2);
	CHECK(status_of(a4, NULL) == ST_WAITING);
	CHECK(status_of(live, NULL) == ST_WAITING);
	CHECK(status_of(a0, NULL) == ST_WAITING);
	check_abandoned(a5, 5);
	check_abandoned(a6, 6);
	/* the last claim's callback now loses */
	CHECK(tok_id == a5);
	CHECK(repo_finalize(db, a5, tok_hash, ST_COMPLETED, "1", 1, now) ==
	    REPO_NOTFOUND);
	/* both rules apply: expiry comes first */
	both = add("ab", "ab", now - 1);
	claim_rounds("ab", 5, now - 1000, NULL);
	r = run(opts(now, S(EXPIRE) | S(ABANDON)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 1);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_ABANDON], 0);
	CHECK(status_of(both, NULL) == ST_EXPIRED);
	wipe();
}

/* Makes execution id terminal with status st (finalized at now). */
static void
finish(const char *op, uint64_t id, enum exec_status st, int64_t now)
{
	tok_id = 0;
	if (st == ST_CANCELLED) {
		CHECK(repo_exec_cancel(db, id, MARK_ASK, now) == REPO_OK);
		return;
	}
	/* claimed before it was due (claim skips overdue ones) */
	claim_rounds(op, 1, now - 10 * DAY + MIN, keep_token);
	CHECK(tok_id == id);
	CHECK(repo_finalize(db, id, tok_hash, st, "{\"message\":\"x\"}",
	    15, now) == REPO_OK);
}

/* Terminal and more than grace days past expires_at: deleted. */
static void
purge_boundaries(void)
{
	int64_t		 now = clock_now_ms(), cut = now - 7 * DAY;
	uint64_t	 exp = add("p", "p-exp", cut - 5), old, eq, comp, fail;
	uint64_t	 wait;
	long long	 m0;
	struct expire_result r;
	struct repo_pos	 pos = { 0, 0 };
	uint64_t	 ids[1];
	size_t		 n;
	unsigned	 deleted;

	r = run(opts(now, S(EXPIRE)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 1);
	old = add("p-o", "p-old", cut - 1);
	finish("p-o", old, ST_CANCELLED, now);
	eq = add("p-e", "p-eq", cut);
	finish("p-e", eq, ST_CANCELLED, now);
	comp = add("p-c", "p-comp", cut - DAY);
	finish("p-c", comp, ST_COMPLETED, now);
	fail = add("p-f", "p-fail", cut - DAY);
	finish("p-f", fail, ST_FAILED, now);
	wait = add("p-w", "p-wait", cut - 30 * DAY);
	CHECK(repo_purge_due(xdb, ST_WAITING, now, now, 1000, &pos, ids,
	    &n) == REPO_ERR);
	ids[0] = wait;
	CHECK(repo_purge_apply(xdb, ids, 1, now, now, &deleted) == REPO_OK);
	CHECK_EQ_INT(deleted, 0);
	/* they ended at now: not yet counted by the rollup, none goes */
	m0 = mark_set(&cfg, now - MIN);
	r = run(opts(now, S(PURGE)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_PURGE], 0);
	CHECK(status_of(old, NULL) == ST_CANCELLED);
	/* counted (the mark past now): they go */
	mark_set(&cfg, now + MIN);
	r = run(opts(now, S(PURGE)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_PURGE], 4);
	CHECK(status_of(exp, NULL) == ST__MAX);
	CHECK(status_of(old, NULL) == ST__MAX);
	CHECK(status_of(comp, NULL) == ST__MAX);
	CHECK(status_of(fail, NULL) == ST__MAX);
	CHECK(status_of(eq, NULL) == ST_CANCELLED);
	CHECK(status_of(wait, NULL) == ST_WAITING);	/* never while waiting */
	/* the whole run expires it first, then purges it */
	r = run(opts(now, EXPIRE_STEPS_ALL));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 1);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_PURGE], 1);
	CHECK(status_of(wait, NULL) == ST__MAX);
	CHECK(status_of(eq, NULL) == ST_CANCELLED);
	mark_set(&cfg, m0);
	wipe();
}

/* Claims op once at now with max_attempts ma; returns how many came. */
static size_t
claim_now(const char *op, unsigned ma, int64_t now, uint64_t *id)
{
	struct claim_item *it;
	size_t		 n = 0;

	CHECK(repo_claim(db, env, svc, op, 100, 60, ma, now, &it, &n) ==
	    REPO_OK);
	if (n > 0 && id != NULL)
		*id = it[0].id;
	claim_free(it, n);
	return n;
}

/* Claim skips what cannot succeed: past expires_at, attempts used up. */
static void
claim_skips(void)
{
	int64_t		 now = clock_now_ms();
	uint64_t	 due = add("k", "k-due", now), live = add("k", "k-l",
			    now + 1), five = add("k5", "k5", now + DAY);
	uint64_t	 four = add("k4", "k4", now + DAY), got = 0;

	(void)due;
	CHECK_EQ_INT(claim_now("k", 5, now, &got), 1);	/* expires_at <= now */
	CHECK(got == live);
	claim_rounds("k5", 5, now - 1000, NULL);
	claim_rounds("k4", 4, now - 1000, NULL);
	CHECK_EQ_INT(claim_now("k5", 5, now, NULL), 0);	/* 5 of 5 used */
	CHECK_EQ_INT(claim_now("k5", 6, now, &got), 1);	/* the rule did it */
	CHECK(got == five);
	CHECK_EQ_INT(claim_now("k4", 5, now, &got), 1);	/* the 5th attempt */
	CHECK(got == four);
	wipe();
}

/*
 * The cancel step: a waiting execution with a cancel request and no
 * live lease (lease_expires_at <= now) becomes cancelled, before the
 * abandon rule; the claim's late callback then loses.
 */
static void
cancel_step(void)
{
	const char	*ops[] = { "cn", "cn-eq", "cn-live", "cn-norq", "cn5" };
	int64_t		 now = clock_now_ms();
	uint64_t	 id[5];
	unsigned char	 h[SHA256_LEN];
	struct expire_opts o = opts(now, S(CANCEL) | S(ABANDON));
	struct expire_result r;
	struct exec_row	 x;
	int		 i;

	for (i = 0; i < 5; i++) {
		CHECK(repo_route_add(db, env, svc, ops[i], 1, now) == REPO_OK);
		id[i] = add(ops[i], ops[i], now + DAY);
	}
	claim_rounds("cn", 1, now - MIN, keep_token);
	memcpy(h, tok_hash, SHA256_LEN);
	claim_rounds("cn-eq", 1, now, NULL);
	claim_rounds("cn-live", 1, now + 1, NULL);
	claim_rounds("cn-norq", 1, now - MIN, NULL);
	claim_rounds("cn5", 5, now - MIN, NULL);
	for (i = 0; i < 5; i++)
		if (i != 3)
			CHECK(repo_exec_request_cancel(db, id[i],
			    now - 2 * MIN) == REPO_OK);
	o.dry_run = 1;
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_CANCEL], 3);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_ABANDON], 0);
	r = run(opts(now, S(CANCEL) | S(ABANDON)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_CANCEL], 3);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_ABANDON], 0);
	CHECK(status_of(id[0], &x) == ST_CANCELLED);
	CHECK(x.completed_at == now && x.updated_at == now);
	exec_row_free(&x);
	CHECK(status_of(id[1], NULL) == ST_CANCELLED);	/* lease ends at now */
	CHECK(status_of(id[2], NULL) == ST_WAITING);	/* live lease */
	CHECK(status_of(id[3], NULL) == ST_WAITING);	/* no request */
	CHECK(status_of(id[4], NULL) == ST_CANCELLED);	/* not abandoned */
	CHECK(repo_finalize(db, id[0], h, ST_COMPLETED, "1", 1, now) ==
	    REPO_NOTFOUND);
	CHECK(repo_finalize(db, id[0], h, ST_CANCELLED, NULL, 0, now) ==
	    REPO_NOTFOUND);
	r = run(opts(now, S(CANCEL)));
	CHECK_EQ_INT(r.count[EXPIRE_STEP_CANCEL], 0);
	wipe();
}

#define DRY_ROWS	7

/* --dry-run counts exactly what a run then does, and changes nothing. */
static void
dry_run_changes_nothing(void)
{
	int64_t		 now = clock_now_ms(), cut = now - 7 * DAY;
	struct expire_opts o = opts(now, EXPIRE_STEPS_ALL);
	struct expire_result d, r;
	struct exec_row	 before[DRY_ROWS], x;
	uint64_t	 id[DRY_ROWS];
	MYSQL		*hold = side();
	long long	 m0 = mark_set(&cfg, now + MIN);	/* counted */
	int		 i;

	id[0] = add("d", "d-0", now - 1);		/* expire */
	id[1] = add("d", "d-1", now - MIN);		/* expire */
	id[2] = add("d", "d-2", cut - DAY);		/* expire, then purge */
	id[3] = add("d-a", "d-3", now + DAY);		/* abandon */
	id[4] = add("d-a", "d-4", now + DAY);		/* abandon */
	claim_rounds("d-a", 5, now - 1000, NULL);
	id[5] = add("d-c", "d-5", cut - 1);		/* purge */
	finish("d-c", id[5], ST_CANCELLED, now);
	id[6] = add("d-c", "d-6", cut - DAY);		/* purge */
	finish("d-c", id[6], ST_CANCELLED, now);
	for (i = 0; i < DRY_ROWS; i++)
		status_of(id[i], &before[i]);
	/* a dry run takes no lock: it counts even while a run holds it */
	hold_lock(hold, 1);
	o.dry_run = 1;
	CHECK(expire_run(xdb, &o, &d) == 0 && d.complete && !d.skipped);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_EXPIRE], 3);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_ABANDON], 2);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_PURGE], 3);
	for (i = 0; i < DRY_ROWS; i++) {
		CHECK(status_of(id[i], &x) == before[i].status);
		CHECK(x.updated_at == before[i].updated_at &&
		    x.completed_at == before[i].completed_at);
		exec_row_free(&x);
		exec_row_free(&before[i]);
	}
	hold_lock(hold, 0);
	r = run(opts(now, EXPIRE_STEPS_ALL));
	for (i = 0; i < EXPIRE_STEP__MAX; i++)
		CHECK_EQ_INT(r.count[i], d.count[i]);
	mark_set(&cfg, m0);
	wipe();
}

/* Batches of batch_size; a spent runtime stops before the next batch. */
static void
batches_and_runtime(void)
{
	int64_t		 now = clock_now_ms();
	struct expire_opts o = opts(now, S(EXPIRE));
	struct expire_result r;
	char		 cid[16];
	uint64_t	 id[10];
	int		 i;

	for (i = 0; i < 10; i++) {
		snprintf(cid, sizeof(cid), "b-%d", i);
		id[i] = add("b", cid, now - 1000 + i);
	}
	o.max_runtime_ms = 0;
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(!r.complete && !r.skipped && r.batches == 0);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 0);
	CHECK(status_of(id[0], NULL) == ST_WAITING);
	o.max_runtime_ms = 60000;
	o.batch_size = 3;
	r = run(o);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_EXPIRE], 10);
	CHECK_EQ_INT(r.batches, 4);		/* 3 + 3 + 3 + 1 */
	for (i = 0; i < 10; i++)
		CHECK(status_of(id[i], NULL) == ST_EXPIRED);
	wipe();
}

/* Inserts n overdue executions of op. */
static void
add_overdue(const char *op, int n, int64_t now)
{
	char	 cid[32];
	int	 i;

	for (i = 0; i < n; i++) {
		snprintf(cid, sizeof(cid), "%s-%d", op, i);
		add(op, cid, now - 1000 - i);
	}
}

/* Writes s into a new file at path, mode 0600. 0 or -1. */
static int
write_text_file(const char *path, const char *s)
{
	FILE	*f;
	int	 fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd == -1 || (f = fdopen(fd, "w")) == NULL)
		return -1;
	fputs(s, f);
	return fclose(f) == 0 ? 0 : -1;
}

/* Runs the binary with args (stdout into out); returns its exit status. */
static int
run_bin(const char *args, char *out, size_t sz)
{
	char	 cmd[1024];

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>/dev/null", expire_bin, args);
	return ut_run(cmd, out, sz);
}

static pthread_barrier_t bar;

struct twin {
	struct expire_result	 r;
	int			 rc;
};

/* One of two library runs started at the same moment. */
static void *
twin_run(void *arg)
{
	struct twin	*t = arg;
	struct xdb	*mine = repo_expire_open(&cfg);
	struct expire_opts o = opts(clock_now_ms(), EXPIRE_STEPS_ALL);

	o.batch_size = 10;
	pthread_barrier_wait(&bar);
	t->rc = expire_run(mine, &o, &t->r);
	repo_expire_close(mine);
	return NULL;
}

/* A held lock makes a run skip; two runs at once count nothing twice. */
static void
concurrent_runs(void)
{
	int64_t		 now = clock_now_ms();
	struct expire_opts o = opts(now, EXPIRE_STEPS_ALL);
	MYSQL		*hold = side();
	struct expire_result r;
	struct twin	 tw[2];
	uint64_t	 id = add("c", "c-first", now - 1);
	pthread_t	 th[2];
	char		 out[2][512];
	FILE		*f[2];
	int		 i, n;

	add_overdue("c", 50, now);
	hold_lock(hold, 1);
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.skipped && !r.complete && r.count[EXPIRE_STEP_EXPIRE] == 0);
	CHECK(status_of(id, NULL) == ST_WAITING);
	CHECK_EQ_INT(run_bin("--config \"$ASYNCEXEC_TEST_CONFIG\"", out[0],
	    sizeof(out[0])), 0);
	CHECK(strstr(out[0], "result=skipped") != NULL);
	hold_lock(hold, 0);
	/* two library runs released together */
	pthread_barrier_init(&bar, NULL, 2);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, twin_run, &tw[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	CHECK(tw[0].rc == 0 && tw[1].rc == 0);
	CHECK(tw[0].r.skipped || tw[1].r.skipped ||
	    (tw[0].r.complete && tw[1].r.complete));
	CHECK_EQ_INT(tw[0].r.count[0] + tw[1].r.count[0], 51);
	/* two binaries at once */
	add_overdue("c2", 200, clock_now_ms());
	for (i = 0; i < 2; i++)
		f[i] = popen("\"$ASYNCEXEC_EXPIRE\" --config "
		    "\"$ASYNCEXEC_TEST_CONFIG\" --batch-size 5", "r");
	for (i = 0; i < 2; i++) {
		n = f[i] ? (int)fread(out[i], 1, sizeof(out[i]) - 1, f[i]) : 0;
		out[i][n] = '\0';
		CHECK(f[i] != NULL && pclose(f[i]) == 0);
		CHECK(strstr(out[i], "result=complete") != NULL ||
		    strstr(out[i], "result=skipped") != NULL);
	}
	CHECK_EQ_INT(field(out[0], "expired") + field(out[1], "expired"), 200);
	wipe();
}

/* Exit codes and the summary line of the binary. */
static void
binary(void)
{
	char	 out[512], bad[] = "/tmp/asyncexec-expire-test.XXXXXX";
	char	 args[256];
	FILE	*f;
	int	 fd;

	CHECK_EQ_INT(run_bin("--bogus", NULL, 0), 2);
	CHECK_EQ_INT(run_bin("--batch-size 0", NULL, 0), 2);
	CHECK_EQ_INT(run_bin("--batch-size 10001", NULL, 0), 2);
	CHECK_EQ_INT(run_bin("--max-runtime x", NULL, 0), 2);
	CHECK_EQ_INT(run_bin("--config", NULL, 0), 2);
	CHECK_EQ_INT(run_bin("--config /nonexistent/asyncexec.conf", NULL, 0),
	    2);
	CHECK_EQ_INT(run_bin("--help", NULL, 0), 0);
	CHECK_EQ_INT(run_bin("--config \"$ASYNCEXEC_TEST_CONFIG\" --dry-run",
	    out, sizeof(out)), 0);
	CHECK(strncmp(out, "asyncexec-expire: result=complete dry_run=yes "
	    "expired=", 46) == 0);
	CHECK(field(out, "abandoned") >= 0 && field(out, "purged") >= 0 &&
	    field(out, "duration_ms") >= 0 && field(out, "longest_tx_ms") >= 0);
	/* an unreachable database: exit 1 */
	CHECK((fd = mkstemp(bad)) != -1 && (f = fdopen(fd, "w")) != NULL);
	fprintf(f, "db_socket = /nonexistent/mysqld.sock\n"
	    "db_connect_timeout = 1\n");
	fclose(f);
	snprintf(args, sizeof(args), "--config %s", bad);
	CHECK_EQ_INT(run_bin(args, out, sizeof(out)), 1);
	CHECK(strstr(out, "result=error") != NULL);
	unlink(bad);
}

/*
 * The test configuration with db_user u and db_password_file pwf, into
 * path. 0 or -1.
 */
static int
user_conf(const char *path, const char *u, const char *pwf)
{
	FILE	*in = fopen(getenv("ASYNCEXEC_TEST_CONFIG"), "r");
	FILE	*o = fopen(path, "w");
	char	 line[1024];
	int	 rc = in != NULL && o != NULL ? 0 : -1;

	while (rc == 0 && fgets(line, sizeof(line), in) != NULL)
		if (strncmp(line, "db_user", 7) != 0 &&
		    strncmp(line, "db_password", 11) != 0)
			fputs(line, o);
	if (o != NULL)
		fprintf(o, "db_user = %s\ndb_password_file = %s\n", u, pwf);
	if (in != NULL)
		fclose(in);
	if (o != NULL && fclose(o) != 0)
		rc = -1;
	return rc;
}

/* Runs q as the test server's root (its unix socket); 0 or -1. */
static int
root_q(MYSQL *root, const char *q)
{
	if (mysql_query(root, q) == 0)
		return 0;
	fprintf(stderr, "root: %s: %s\n", q, mysql_error(root));
	return -1;
}

/*
 * A user granted exactly the privileges asyncexec-expire --check-config
 * probes (repo_check_probe_def, CHECK_EXPIRE): its check passes, and a
 * run of every step completes and is recorded in s2r_job_run (no
 * warning, no error line). Without UPDATE on s2r_job_run, its check has
 * that error line. (The cancel step's s2r_route, the revoked step's
 * s2r_api_key and s2r_job_run were not probed: such a run exited 1.)
 */
static void
probed_grants(void)
{
	MYSQL		*root = mysql_init(NULL);
	const struct repo_probe *p;
	char		 u[32], q[512], conf[64], pwf[64], out[4096], args[160];
	size_t		 i;
	int		 ok = 1;

	snprintf(u, sizeof(u), "xg%ld", (long)getpid());
	snprintf(conf, sizeof(conf), "/tmp/%s.conf", u);
	snprintf(pwf, sizeof(pwf), "/tmp/%s.pw", u);
	CHECK(root != NULL && mysql_real_connect(root, NULL, "root", NULL,
	    NULL, 0, cfg.db_socket, 0) != NULL);
	snprintf(q, sizeof(q), "CREATE USER '%s'@'localhost' IDENTIFIED BY "
	    "'pw1', '%s'@'127.0.0.1' IDENTIFIED BY 'pw1'", u, u);
	CHECK(root_q(root, q) == 0);
	for (i = 0; (p = repo_check_probe_def(i)) != NULL; i++) {
		if (!(p->who & CHECK_EXPIRE))
			continue;
		snprintf(q, sizeof(q), "GRANT %s ON `%s`.`%s` TO '%s'@"
		    "'localhost', '%s'@'127.0.0.1'", p->priv, cfg.db_name,
		    p->table, u, u);
		ok &= root_q(root, q) == 0;
	}
	CHECK(ok);
	CHECK(write_text_file(pwf, "pw1\n") == 0);
	CHECK(user_conf(conf, u, pwf) == 0);
	add("pg", "pg-x", clock_now_ms() - 1);
	snprintf(args, sizeof(args), "--config %s --check-config", conf);
	CHECK_EQ_INT(run_bin(args, out, sizeof(out)), 0);
	snprintf(q, sizeof(q), "'%s' --config %s --max-runtime 20 2>&1",
	    expire_bin, conf);
	CHECK_EQ_INT(ut_run(q, out, sizeof(out)), 0);
	printf("expire as %s: %s", u, out);
	CHECK(strstr(out, "result=complete") != NULL);
	CHECK(field(out, "expired") >= 1);
	CHECK(strstr(out, "level=error") == NULL);
	CHECK(strstr(out, "not recorded") == NULL);
	snprintf(q, sizeof(q), "REVOKE UPDATE ON `%s`.`s2r_job_run` FROM "
	    "'%s'@'localhost', '%s'@'127.0.0.1'", cfg.db_name, u, u);
	CHECK(root_q(root, q) == 0);
	CHECK_EQ_INT(run_bin(args, out, sizeof(out)), 1);
	CHECK(strstr(out, "lacks UPDATE on s2r_job_run") != NULL);
	snprintf(q, sizeof(q), "DROP USER '%s'@'localhost', '%s'@'127.0.0.1'",
	    u, u);
	CHECK(root_q(root, q) == 0);
	mysql_close(root);
	unlink(conf);
	unlink(pwf);
	wipe();
}

int
main(void)
{
	mysql_library_init(0, NULL, NULL);
	srand((unsigned)getpid());
	setup();
	expire_boundaries();
	abandon_boundaries();
	claim_skips();
	cancel_step();
	purge_boundaries();
	dry_run_changes_nothing();
	batches_and_runtime();
	concurrent_runs();
	binary();
	probed_grants();
	repo_expire_close(xdb);
	repo_close(db);
	mysql_library_end();
	return check_done("db_expire");
}
