/*
 * The expiry racing callbacks against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG; the binary's path in ASYNCEXEC_EXPIRE).
 *
 * Each round inserts RACE_N executions of a fresh environment: even ones
 * overdue with a live claim, odd ones not due with 5 lapsed claims (so
 * the abandon rule holds). 8 callbacks finalize every one of them, each
 * in its own random order, all with the current callback token, while
 * the expiry runs against them: in the library once (small batches), or
 * as the binary in a loop until the callbacks are done. Every execution
 * ends in exactly one terminal state, at most one callback wins it, the
 * winner's outcome is the stored one, the rest is exactly what the
 * expiry counted, and no run of the binary exits non-zero (a deadlock
 * with a callback, 1213, or a lock wait timeout, 1205, is retried).
 * forced_deadlock and lock_wait_timeout capture the run's stderr: a
 * retried deadlock or timeout is logged at warn, no line at level=error.
 *
 * ASYNCEXEC_TEST_SCALE (default 1) scales the executions per round.
 */
#include <fcntl.h>
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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
#include "repo_expire.h"

#define RACE_MAX	8000
#define RACE_CB		8
#define BIN_ROUNDS	2	/* rounds of each loop driver */
#define SPREAD		3000	/* ms: overdue ones fall due over this */

static struct config	 cfg;
static struct db	*db;
static const char	*expire_bin;
static char		 env[24], svc[] = "svc", tenant[40];
static int		 race_n = 2000;

static uint64_t		 race_id[RACE_MAX];	/* ascending */
static unsigned char	 race_tok[RACE_MAX][SHA256_LEN];
static int		 race_wins[RACE_MAX], race_winner[RACE_MAX];
static int		 race_errors, cb_left;
static int64_t		 race_now, race_base;	/* ms */
static int		 race_paced;
static pthread_mutex_t	 race_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;
static long		 all_wins, all_lost;	/* over all rounds */

/* What the expiry did in a round: counts, runs, failed runs, retries. */
struct xres {
	long	 expired, abandoned, runs, failed, retries;
};

/* A side connection (fixtures only, UTC); exits on failure. */
static MYSQL *
side(void)
{
	return side_open(&cfg, "SET time_zone = '+00:00'");
}

/* Deletes every execution of this round's environment. */
static void
wipe(void)
{
	wipe_env(&cfg, env);
}

static void
setup(void)
{
	const char	*path = getenv("ASYNCEXEC_TEST_CONFIG");
	const char	*scale = getenv("ASYNCEXEC_TEST_SCALE");
	char		 err[512];

	expire_bin = getenv("ASYNCEXEC_EXPIRE");
	if (path == NULL || expire_bin == NULL) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG or ASYNCEXEC_EXPIRE is "
		    "not set: run scripts/test.sh\n");
		exit(1);
	}
	if (config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	if (scale != NULL && atof(scale) > 0)
		race_n = (int)(race_n * atof(scale));
	race_n = race_n < 20 ? 20 : race_n > RACE_MAX ? RACE_MAX : race_n;
	race_n -= race_n % 2;
	snprintf(tenant, sizeof(tenant), "t-xr%ld", (long)getpid());
	if ((db = repo_open(&cfg, 0)) == NULL || repo_ping(db) != REPO_OK) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
}

/* Inserts waiting execution op/cid, created a day before it expires. */
static uint64_t
add(const char *op, const char *cid, int64_t expires_at)
{
	uint64_t	 id;

	id = insert_waiting(db, env, svc, op, tenant, cid, expires_at);
	CHECK(id != 0);
	return id;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	 x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Claims every claimable execution of op k times at t, t + 2 min, ...
 * with leases of lease_s seconds; keeps each id's last token hash.
 */
static void
claim_rounds(const char *op, int k, int64_t t, unsigned lease_s)
{
	struct claim_item *it;
	unsigned char	 h[SHA256_LEN];
	uint64_t	*p;
	size_t		 n, i;
	int		 round;

	for (round = 0; round < k; round++, t += 2 * MIN) {
		do {
			n = 0;
			CHECK(repo_claim(db, env, svc, op, 100, lease_s, 5, t,
			    &it, &n) == REPO_OK);
			for (i = 0; i < n; i++) {
				crypto_sha256(it[i].token,
				    strlen(it[i].token), h);
				p = bsearch(&it[i].id, race_id, (size_t)race_n,
				    sizeof(uint64_t), cmp_u64);
				if (p != NULL)
					memcpy(race_tok[p - race_id], h,
					    SHA256_LEN);
			}
			claim_free(it, n);
		} while (n == 100);
	}
}

/* The payload callback k sends: even k completes, odd k fails. */
static size_t
race_payload(int k, char *buf, size_t sz)
{
	return (size_t)snprintf(buf, sz, k % 2 ? "{\"message\":\"cb %d\"}" :
	    "{\"cb\":%d}", k);
}

/* When overdue execution i (even) falls due. */
static int64_t
race_due(int i)
{
	return race_base + (int64_t)(i / 2) * SPREAD / (race_n / 2);
}

/*
 * The order callback k goes through the executions: when paced, the
 * odd ones (abandon) in random order, then the overdue ones in the
 * order they fall due; else all in random order.
 */
static int *
race_order(unsigned *seed)
{
	int	*order, i, j, t, lo = 0, n = race_n;

	if ((order = calloc((size_t)race_n, sizeof(*order))) == NULL)
		exit(1);
	for (i = 0; i < race_n; i++)
		order[i] = race_paced ? (i < race_n / 2 ? 2 * i + 1 :
		    2 * (i - race_n / 2)) : i;
	if (race_paced)
		n = race_n / 2;
	for (i = n - 1; i > lo; i--) {
		j = lo + rand_r(seed) % (i - lo + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

/* Waits until overdue execution i's due time plus up to +-3 ms. */
static void
race_pace(int i, unsigned *seed)
{
	struct timespec	 ts = { 0, 200000 };
	int64_t		 at = race_due(i) + rand_r(seed) % 7 - 3;

	while (clock_now_ms() < at)
		nanosleep(&ts, NULL);
}

/* Callback k: one finalize per execution, in the order above. */
static void *
race_callback(void *arg)
{
	int		 k = (int)(intptr_t)arg, *order, i, j, rc;
	unsigned	 seed = (unsigned)k * 7919u + (unsigned)race_now;
	struct db	*mine = repo_open(&cfg, 1);
	char		 payload[48];
	size_t		 len = race_payload(k, payload, sizeof(payload));

	order = race_order(&seed);
	pthread_barrier_wait(&bar);
	for (j = 0; j < race_n; j++) {
		i = order[j];
		if (race_paced && i % 2 == 0)
			race_pace(i, &seed);
		rc = repo_finalize(mine, race_id[i], race_tok[i],
		    k % 2 ? ST_FAILED : ST_COMPLETED, payload, len,
		    clock_now_ms());
		pthread_mutex_lock(&race_mu);
		if (rc == REPO_OK) {
			race_wins[i]++;
			race_winner[i] = k;
		} else if (rc == REPO_ERR)
			race_errors++;
		pthread_mutex_unlock(&race_mu);
	}
	pthread_mutex_lock(&race_mu);
	cb_left--;
	pthread_mutex_unlock(&race_mu);
	free(order);
	repo_close(mine);
	return NULL;
}

/* One run of the binary; adds its counts into x, prints a failed one. */
static void
bin_once(struct xres *x)
{
	char	 cmd[1024], out[4096];
	int	 st;

	snprintf(cmd, sizeof(cmd), "'%s' --config \"$ASYNCEXEC_TEST_CONFIG\" "
	    "--batch-size 50 2>&1", expire_bin);
	st = ut_run(cmd, out, sizeof(out));
	x->runs++;
	if (st != 0) {
		x->failed++;
		fprintf(stderr, "expiry run exited %d: %s", st, out);
	}
	if (strstr(out, "result=skipped") != NULL)
		return;
	x->expired += field(out, "expired") > 0 ? field(out, "expired") : 0;
	x->abandoned += field(out, "abandoned") > 0 ?
	    field(out, "abandoned") : 0;
	x->retries += field(out, "retries") > 0 ? field(out, "retries") : 0;
}

/*
 * Whether a looping driver goes on after its next run: callbacks are
 * left or race_now is not yet due (both sampled before that run, so one
 * run always follows the last callback).
 */
static int
race_on(void)
{
	int	 left;

	pthread_mutex_lock(&race_mu);
	left = cb_left;
	pthread_mutex_unlock(&race_mu);
	return left > 0 || clock_now_ms() <= race_now;
}

/* The expiry driver: the binary in a loop while callbacks run, then once. */
static void *
race_bin(void *arg)
{
	struct xres	*x = arg;
	int		 on;

	pthread_barrier_wait(&bar);
	do {
		on = race_on();
		bin_once(x);
	} while (on);
	return NULL;
}

/* The options of the race's library runs, in batches of batch. */
static void
race_opts(struct expire_opts *o, unsigned batch)
{
	expire_opts_init(o, &cfg);
	o->max_attempts = 5;
	o->purge_grace_days = 7;
	o->max_runtime_ms = 60000;
	o->batch_size = batch;
}

/* One library run of o on mine, added to x's counts (x->runs too); 0 or -1. */
static int
lib_run(struct xdb *mine, const struct expire_opts *o, struct xres *x)
{
	struct expire_result r;
	int		 failed;

	x->runs++;
	failed = expire_run(mine, o, &r) != 0 || !r.complete;
	x->expired += (long)r.count[EXPIRE_STEP_EXPIRE];
	x->abandoned += (long)r.count[EXPIRE_STEP_ABANDON];
	x->retries += (long)r.retries;
	return failed ? -1 : 0;
}

/* The expiry driver: library runs at the clock's now, in a loop. */
static void *
race_loop(void *arg)
{
	struct xres	*x = arg;
	struct xdb	*mine = repo_expire_open(&cfg);
	struct expire_opts o;
	int		 on;

	race_opts(&o, 50);
	pthread_barrier_wait(&bar);
	do {
		on = race_on();
		o.now = clock_now_ms();
		if (lib_run(mine, &o, x) == -1) {
			x->failed++;
			fprintf(stderr, "library run %ld failed\n", x->runs);
		}
	} while (on);
	repo_expire_close(mine);
	return NULL;
}

/* The expiry driver: one library run in batches of 5. */
static void *
race_lib(void *arg)
{
	struct xres	*x = arg;
	struct xdb	*mine = repo_expire_open(&cfg);
	struct expire_opts o;

	race_opts(&o, 5);
	o.now = race_now;
	pthread_barrier_wait(&bar);
	x->failed = lib_run(mine, &o, x) == -1;
	repo_expire_close(mine);
	return NULL;
}

/* Checks execution i after the race; counts into expired/abandoned. */
static void
race_check(int i, long *expired, long *abandoned)
{
	struct exec_row	 x;
	char		 want[48];
	size_t		 len;
	int		 rc;

	rc = repo_exec_by_id(db, race_id[i], clock_now_ms(), &x);
	CHECK(rc == REPO_OK);
	if (rc != REPO_OK)
		return;
	CHECK(x.status != ST_WAITING);
	CHECK(race_wins[i] <= 1);
	if (race_wins[i] == 1) {
		len = race_payload(race_winner[i], want, sizeof(want));
		if (race_winner[i] % 2)
			CHECK(x.status == ST_FAILED && x.error_len == len &&
			    memcmp(x.error, want, len) == 0);
		else
			CHECK(x.status == ST_COMPLETED && x.result_len == len &&
			    memcmp(x.result, want, len) == 0);
	} else if (i % 2 == 0) {
		CHECK(x.status == ST_EXPIRED);
		(*expired)++;
	} else {
		CHECK(x.status == ST_FAILED && x.error != NULL &&
		    strcmp(x.error, "{\"message\":\"abandoned after 5 "
		    "claims\"}") == 0);
		(*abandoned)++;
	}
	exec_row_free(&x);
}

/*
 * Inserts and claims the round's executions (see the top comment), then
 * sets the overdue ones' expires_at: spread over SPREAD ms from a moment
 * just ahead when paced, else all of them in the past.
 */
static void
race_fill(int round, int paced)
{
	MYSQL	*m;
	char	 cid[24], q[160];
	int64_t	 due;
	int	 i;

	snprintf(env, sizeof(env), "xr%ld-%d", (long)getpid(), round);
	race_now = clock_now_ms();
	for (i = 0; i < race_n; i++) {
		snprintf(cid, sizeof(cid), "r-%d", i);
		race_id[i] = add(i % 2 ? "ra" : "rx", cid, race_now + DAY);
		race_wins[i] = 0;
	}
	/* overdue ones: claimed before they were due, a live hour's lease */
	claim_rounds("rx", 1, race_now - 10 * MIN, 3600);
	/* the others: 5 claims of 60 s, the last one lapsed 3 min ago */
	claim_rounds("ra", 5, race_now - 12 * MIN, 60);
	m = side();
	race_base = paced ? clock_now_ms() + 300 : clock_now_ms() - SPREAD - 1000;
	for (i = 0; i < race_n; i += 2) {
		due = race_due(i);
		snprintf(q, sizeof(q), "UPDATE s2r_async_execution SET "
		    "expires_at = FROM_UNIXTIME(%lld.%03lld) WHERE id = %llu",
		    (long long)(due / 1000), (long long)(due % 1000),
		    (unsigned long long)race_id[i]);
		side_sql(m, q);
	}
	mysql_close(m);
	race_now = race_base + SPREAD;
}

/*
 * One round against driver (race_bin or race_lib): the checks above;
 * prints the round's figures; returns the binary runs that failed.
 */
static long
race_round(int round, void *(*driver)(void *))
{
	pthread_t	 th[RACE_CB + 1];
	struct xres	 x;
	long		 expired = 0, abandoned = 0, wins = 0;
	int		 i;

	memset(&x, 0, sizeof(x));
	race_paced = driver != race_lib;
	race_fill(round, race_paced);
	race_errors = 0;
	cb_left = RACE_CB;
	pthread_barrier_init(&bar, NULL, RACE_CB + 1);
	for (i = 0; i < RACE_CB; i++)
		pthread_create(&th[i], NULL, race_callback,
		    (void *)(intptr_t)i);
	pthread_create(&th[RACE_CB], NULL, driver, &x);
	for (i = 0; i <= RACE_CB; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	CHECK_EQ_INT(x.failed, 0);
	CHECK_EQ_INT(race_errors, 0);
	for (i = 0; i < race_n; i++) {
		race_check(i, &expired, &abandoned);
		wins += race_wins[i];
	}
	CHECK_EQ_INT(x.expired, expired);
	CHECK_EQ_INT(x.abandoned, abandoned);
	CHECK_EQ_INT(wins + expired + abandoned, race_n);
	all_wins += wins;		/* checked over all rounds: they did race */
	all_lost += expired + abandoned;
	printf("race %d (%s): %d executions, %ld won by a callback, %ld "
	    "expired, %ld abandoned; %ld expiry runs, %ld failed, %ld "
	    "retries\n", round, driver == race_lib ? "library" :
	    driver == race_bin ? "binary" : "library loop",
	    race_n, wins, expired, abandoned, x.runs, x.failed, x.retries);
	wipe();
	return x.failed;
}

/* The N of a one-value query on m, or -1. */
static long
side_long(MYSQL *m, const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long		 v = -1;

	side_sql(m, q);
	if ((res = mysql_store_result(m)) != NULL &&
	    (row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = strtol(row[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

/* An expiry UPDATE (its own user's, so visible) running 300 ms or more. */
#define WAITING	"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE " \
	"ID <> CONNECTION_ID() AND INFO LIKE 'UPDATE %JSON_TABLE%' AND " \
	"TIME_MS >= 300"

struct held {
	int			 rc;
	struct expire_result	 r;
	int			 errors;	/* its level=error lines */
};

static char	 logf[] = "/tmp/expirerace.XXXXXX";	/* stderr, held */

/*
 * Sends stderr into logf (emptied) until capture_end; results: the
 * descriptor of the real stderr. Exits when it cannot.
 */
static int
capture_begin(void)
{
	int	 keep = dup(STDERR_FILENO);
	int	 fd = open(logf, O_WRONLY | O_TRUNC);

	if (keep == -1 || fd == -1 || dup2(fd, STDERR_FILENO) == -1) {
		fprintf(stderr, "cannot capture stderr into %s\n", logf);
		exit(1);
	}
	close(fd);
	return keep;
}

/*
 * Puts back stderr (keep: capture_begin's), copies what was captured to
 * it; results: how many of those lines are at level=error.
 */
static int
capture_end(int keep)
{
	char	 line[2048];
	FILE	*f;
	int	 n = 0;

	dup2(keep, STDERR_FILENO);
	close(keep);
	if ((f = fopen(logf, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		fputs(line, stderr);
		n += strstr(line, "level=error") != NULL;
	}
	fclose(f);
	return n;
}

/* An expiry run at the clock's now, expire step only. */
static void *
held_run(void *arg)
{
	struct held	*h = arg;
	struct xdb	*mine = repo_expire_open(&cfg);
	struct expire_opts o;

	expire_opts_init(&o, &cfg);
	o.now = clock_now_ms();
	o.steps = 1u << EXPIRE_STEP_EXPIRE;
	o.max_runtime_ms = 60000;
	h->rc = expire_run(mine, &o, &h->r);
	repo_expire_close(mine);
	return NULL;
}

/*
 * The callbacks' lock order, forced: a transaction (as a callback does)
 * locks an overdue row by primary key first, and holds it until an
 * expiry run waits for that row; then it changes the row's status,
 * which moves its ix_exec_expiry entry. An expiry that reached the row
 * through that index holds the entry and waits for the row: a deadlock,
 * and the transaction's 200 other changes make the expiry its victim.
 * With the apply driven by primary key the expiry only waits, then
 * finds the row final and changes nothing. The run must not fail.
 */
static void
forced_deadlock(void)
{
	MYSQL		*a;
	pthread_t	 th;
	struct held	 h;
	char		 q[256];
	uint64_t	 x;
	long		 waits = 0;
	int		 i, skipped = 1, tries, keep;

	snprintf(env, sizeof(env), "xd%ld", (long)getpid());
	for (tries = 0; skipped && tries < 20; tries++) {
		x = add("dl", "dl-x", clock_now_ms() - 1000);
		for (i = 0; i < 200; i++) {
			snprintf(q, sizeof(q), "dl-f%d", i);
			add("dlf", q, clock_now_ms() + DAY);
		}
		a = side();
		side_sql(a, "BEGIN");
		snprintf(q, sizeof(q), "UPDATE s2r_async_execution SET "
		    "updated_at = NOW(3) WHERE environment = '%s' AND "
		    "operation_key = 'dlf'", env);
		side_sql(a, q);
		snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution "
		    "WHERE id = %llu FOR UPDATE", (unsigned long long)x);
		mysql_free_result((side_sql(a, q), mysql_store_result(a)));
		memset(&h, 0, sizeof(h));
		keep = capture_begin();
		pthread_create(&th, NULL, held_run, &h);
		/* bounded: until the run's UPDATE has waited for 300 ms */
		for (i = 0; i < 1000 && (waits = side_long(a, WAITING)) == 0;
		    i++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		snprintf(q, sizeof(q), "UPDATE s2r_async_execution SET status = "
		    "'completed', completed_at = NOW(3) WHERE id = %llu",
		    (unsigned long long)x);
		side_sql(a, q);
		side_sql(a, "COMMIT");
		pthread_join(th, NULL);
		h.errors = capture_end(keep);
		mysql_close(a);
		skipped = h.r.skipped;	/* another run held the run lock */
		snprintf(q, sizeof(q), "SELECT status = 'completed' FROM "
		    "s2r_async_execution WHERE id = %llu",
		    (unsigned long long)x);
		a = side();
		CHECK_EQ_INT(side_long(a, q), 1);	/* the CAS held */
		mysql_close(a);
		wipe();
	}
	CHECK(!skipped);
	CHECK_EQ_INT(waits, 1);
	CHECK_EQ_INT(h.rc, 0);
	CHECK(h.r.complete && !h.r.failed);
	CHECK_EQ_INT(h.r.count[EXPIRE_STEP_EXPIRE], 0);
	CHECK_EQ_INT(h.errors, 0);	/* a retried deadlock: a warning */
	printf("forced deadlock: run %s, %lu retries\n", h.rc == 0 ? "ok" :
	    "FAILED", h.r.retries);
}

/*
 * A row lock held longer than the expiry session's lock wait timeout
 * (5 s): the apply times out (1205) and is retried; once the lock is
 * gone the row expires. The run does not fail.
 */
static void
lock_wait_timeout(void)
{
	MYSQL		*a;
	pthread_t	 th;
	struct held	 h;
	char		 q[160];
	uint64_t	 x;
	int64_t		 until;
	long		 waits = 0;
	int		 i, keep;

	snprintf(env, sizeof(env), "xw%ld", (long)getpid());
	x = add("lw", "lw-x", clock_now_ms() - 1000);
	a = side();
	side_sql(a, "BEGIN");
	snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE "
	    "id = %llu FOR UPDATE", (unsigned long long)x);
	mysql_free_result((side_sql(a, q), mysql_store_result(a)));
	memset(&h, 0, sizeof(h));
	keep = capture_begin();
	pthread_create(&th, NULL, held_run, &h);
	/* bounded: until the run's apply waits for the row, then hold the
	 * row 1.5 s past the session's lock wait timeout */
	for (i = 0; i < 1000 && (waits = side_long(a, WAITING)) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	until = clock_now_ms() + atoi(REPO_EXPIRE_LOCK_WAIT_STR) * 1000 + 1500;
	while (clock_now_ms() < until)
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	side_sql(a, "COMMIT");
	pthread_join(th, NULL);
	h.errors = capture_end(keep);
	mysql_close(a);
	CHECK(!h.r.skipped);
	CHECK_EQ_INT(waits, 1);
	CHECK_EQ_INT(h.rc, 0);
	CHECK(h.r.retries >= 1);
	CHECK_EQ_INT(h.r.count[EXPIRE_STEP_EXPIRE], 1);
	CHECK_EQ_INT(h.errors, 0);	/* a retried timeout: a warning */
	printf("lock wait timeout: run %s, %lu retries\n", h.rc == 0 ? "ok" :
	    "FAILED", h.r.retries);
	wipe();
}

struct held_bin {
	char	 out[8192];
	int	 st;
};

/* The binary with --max-runtime 1 (stderr with stdout into out). */
static void *
held_bin_run(void *arg)
{
	struct held_bin	*b = arg;
	char		 cmd[1024];

	snprintf(cmd, sizeof(cmd), "'%s' --config \"$ASYNCEXEC_TEST_CONFIG\" "
	    "--max-runtime 1 2>&1", expire_bin);
	b->st = ut_run(cmd, b->out, sizeof(b->out));
	return NULL;
}

/*
 * A row lock held for as long as the run lasts: the apply times out
 * (1205, after the session's 5 s) again and again, each time retried,
 * until the runtime bound (1 s) is spent; then the run ends as a run
 * stopped by it: result=stopped, exit 0, at warn, no level=error line;
 * s2r_job_run says locked and keeps the last success (/metrics: failed).
 * (It used to give up after 8 retries, 45 s on, and exit 1.)
 */
#define OLD	"'2000-01-01 00:00:00.000'"	/* a last success */

static void
held_past_runtime(void)
{
	MYSQL		*a;
	pthread_t	 th;
	struct held_bin	 b;
	uint64_t	 x;
	long		 waits = 0;
	int		 i;

	snprintf(env, sizeof(env), "xh%ld", (long)getpid());
	x = add("hr", "hr-x", clock_now_ms() - 1000);
	a = side();
	side_sql(a, "REPLACE INTO s2r_job_run (job, last_run_at, last_result, "
	    "last_success_at) VALUES ('expire', NOW(3), 'complete', " OLD ")");
	side_sql(a, "BEGIN");
	side_sqlf(a, "SELECT id FROM s2r_async_execution WHERE id = %llu "
	    "FOR UPDATE", (unsigned long long)x);
	mysql_free_result(mysql_store_result(a));
	memset(&b, 0, sizeof(b));
	pthread_create(&th, NULL, held_bin_run, &b);
	/* bounded: until the run's apply waits for the row; the lock is
	 * then held until the run has ended */
	for (i = 0; i < 1000 && (waits = side_long(a, WAITING)) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	pthread_join(th, NULL);
	side_sql(a, "COMMIT");
	CHECK_EQ_INT(waits, 1);
	CHECK_EQ_INT(side_long(a, "SELECT last_success_at = " OLD " AND "
	    "last_result = 'locked' FROM s2r_job_run WHERE job = 'expire'"), 1);
	mysql_close(a);
	printf("held past the runtime: exit %d: %s", b.st, b.out);
	CHECK_EQ_INT(b.st, 0);
	CHECK(strstr(b.out, "result=stopped") != NULL);
	CHECK(strstr(b.out, "level=error") == NULL);
	CHECK(strstr(b.out, "level=warn") != NULL);
	CHECK_EQ_INT(field(b.out, "expired"), 0);
	wipe();
}

int
main(void)
{
	long	 runs_failed = 0;
	int	 round, fd;

	mysql_library_init(0, NULL, NULL);
	setup();
	if ((fd = mkstemp(logf)) == -1) {
		fprintf(stderr, "no log file\n");
		return 1;
	}
	close(fd);
	forced_deadlock();
	lock_wait_timeout();
	held_past_runtime();
	race_round(0, race_lib);
	for (round = 1; round <= BIN_ROUNDS; round++)
		runs_failed += race_round(round, race_bin);
	for (round = 1; round <= BIN_ROUNDS; round++)
		runs_failed += race_round(BIN_ROUNDS + round, race_loop);
	CHECK_EQ_INT(runs_failed, 0);
	CHECK(all_wins > 0 && all_lost > 0);	/* both sides won some */
	printf("loops: %ld failed runs in %d rounds\n", runs_failed,
	    2 * BIN_ROUNDS);
	repo_close(db);
	mysql_library_end();
	unlink(logf);
	return check_done("db_expire_race");
}
