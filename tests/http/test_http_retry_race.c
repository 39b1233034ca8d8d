/*
 * test_http_retry_race.c - retryable failures racing asyncexec-expire, through nginx.
 *
 * N claimed executions, half at attempt max_attempts - 1 (a retryable fail puts them back
 * to waiting) and half at attempt max_attempts (a retryable fail fails them for good),
 * fall due while 4 threads send their retryable fails and asyncexec-expire runs in a
 * loop. Then the expiry runs until every one is terminal. Each must have exactly one
 * terminal state, agreeing with what its fail was told: 200 failed <-> failed with that
 * error; 200 waiting_callback -> expired later, with the retry's write kept (last_error
 * as sent, callback token cleared: no lost update); 409 <-> expired, nothing written.
 * Every expiry run exits 0. Attempts and due times are set in the database
 * (ASYNCEXEC_TEST_CONFIG), never by sleeping; the expiry binary comes in
 * ASYNCEXEC_EXPIRE.
 */
#include "util/proc.h"
#include "check.h"
#include "config.h"
#include "fixture.h"
#include "sidedb.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define N	64
#define THREADS	4

static struct config cfg;
static struct fx F;
static struct sub S[N];
static struct claim C[N];
static int status_of[N];		/* the fail's HTTP status */
static char told[N][32];		/* its status or currentStatus */
static long max_attempts;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int next_fail, fails_done, expire_runs, expire_bad;
static const struct timespec pace = { 0, 40 * 1000000L };	/* between fails */

/* Whether execution I is at attempt max - 1 (else at max). */
static int
retryable(int i)
{
	return i % 2 == 0;
}

/* The error object fail I sends. */
static void
error_of(int i, char *buf, size_t len)
{
	snprintf(buf, len, "{\"message\":\"race %d\",\"i\":%d}", i, i);
}

/* One run of the expiry binary; its exit status (-1: none). */
static int
expire_once(void)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' --batch-size 8",
	    test_env("ASYNCEXEC_EXPIRE"), test_env("ASYNCEXEC_TEST_CONFIG"));
	return ut_run(cmd, NULL, 0);
}

/* Whether the expiry loop finished its first run. */
static int
first_run(void)
{
	int n;

	pthread_mutex_lock(&mu);
	n = expire_runs;
	pthread_mutex_unlock(&mu);
	return n > 0;
}

static void *
expirer(void *arg)
{
	int done;

	(void)arg;
	do {
		pthread_mutex_lock(&mu);
		done = fails_done == THREADS;
		pthread_mutex_unlock(&mu);
		int rc = expire_once();
		pthread_mutex_lock(&mu);
		expire_runs++;
		expire_bad += rc != 0;
		pthread_mutex_unlock(&mu);
	} while (!done);
	return NULL;
}

static void *
failer(void *arg)
{
	struct http_resp r;
	struct json_object *o;
	char err[128], body[256];
	const char *st;
	int i;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		i = next_fail++;
		pthread_mutex_unlock(&mu);
		if (i >= N)
			break;
		error_of(i, err, sizeof err);
		snprintf(body, sizeof body, "{\"error\":%s,\"retryAfterSeconds\":0}", err);
		nanosleep(&pace, NULL);	/* spreads the fails over the due times */
		status_of[i] = fx_callback(F.bkey, C[i].id, "fail", C[i].token, body, &r);
		o = json_body(&r);
		st = jstr(o, status_of[i] == 409 ? "currentStatus" : "status");
		snprintf(told[i], sizeof told[i], "%s", st ? st : "?");
		json_object_put(o);
		http_resp_free(&r);
	}
	pthread_mutex_lock(&mu);
	fails_done++;
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* Claims all N (attempt 1), then sets attempts and due times in the database. */
static void
prepare(MYSQL *m)
{
	struct http_resp r;
	struct json_object *o;
	char q[256];
	int i, k, got = 0;

	for (i = 0; i < N; i++)
		CHECK(fx_submit_ok(&F, NULL, "{}", &S[i]));
	fx_claim(&F, F.bkey, "{\"max\":100,\"leaseSeconds\":300}", &r);
	o = json_body(&r);
	CHECK_EQ_INT(jlen(o, "executions"), N);
	for (i = 0; i < N && i < jlen(o, "executions"); i++) {
		struct claim c;

		if (!fx_claim_item(o, (size_t)i, &c))
			continue;
		for (k = 0; k < N; k++)
			if (strcmp(S[k].cid, c.cid) == 0) {
				C[k] = c;
				got++;
			}
	}
	CHECK_EQ_INT(got, N);
	json_object_put(o);
	http_resp_free(&r);
	/* a quarter due now (the first expiry run takes them), the rest due
	 * about when their fail is sent (10 ms apart, +-15 ms) */
	for (i = 0; i < N; i++) {
		snprintf(q, sizeof q, "UPDATE s2r_async_execution SET attempts = %ld, "
		    "expires_at = NOW(3) + INTERVAL %d MICROSECOND WHERE id = %lld",
		    retryable(i) ? max_attempts - 1 : max_attempts,
		    i >= 3 * N / 4 ? -1000 : 300000 + i * 10000 + (i % 3 - 1) * 15000,
		    (long long)C[i].id);
		sidedb_exec(m, q);
	}
}

/* Row I's status, whether its token hash is NULL, its last_error ("" when NULL). */
static void
row(MYSQL *m, int i, char *status, size_t sl, int *tok_null, char *le, size_t ll)
{
	char q[256];
	MYSQL_RES *res;
	MYSQL_ROW w;

	snprintf(q, sizeof q, "SELECT status, callback_token_hash IS NULL, "
	    "COALESCE(last_error, '') FROM s2r_async_execution WHERE id = %lld",
	    (long long)C[i].id);
	sidedb_exec(m, q);
	res = mysql_store_result(m);
	w = res ? mysql_fetch_row(res) : NULL;
	snprintf(status, sl, "%s", w ? w[0] : "");
	*tok_null = w ? atoi(w[1]) : -1;
	snprintf(le, ll, "%s", w ? w[2] : "");
	mysql_free_result(res);
}

/* Expiry runs until no execution of the route waits (bounded). 1 when none does. */
static int
expire_rest(MYSQL *m)
{
	char st[32], le[256];
	int i, tn, run, waiting = N;

	for (run = 0; run < 50 && waiting > 0; run++) {
		CHECK_EQ_INT(expire_once(), 0);
		for (waiting = 0, i = 0; i < N; i++) {
			row(m, i, st, sizeof st, &tn, le, sizeof le);
			waiting += strcmp(st, "waiting_callback") == 0;
		}
	}
	return waiting == 0;
}

static void
check_one(MYSQL *m, int i, int *won)
{
	char st[32], le[256], err[128];
	int tn;

	error_of(i, err, sizeof err);
	row(m, i, st, sizeof st, &tn, le, sizeof le);
	CHECK_EQ_STR(fx_status(&F, &S[i]), st);
	if (status_of[i] == 409) {
		/* the expiry won: it is expired, the fail wrote nothing */
		CHECK_EQ_STR(told[i], "expired");
		CHECK_EQ_STR(st, "expired");
		CHECK_EQ_STR(le, "");
		return;
	}
	CHECK_EQ_INT(status_of[i], 200);
	(*won)++;
	if (retryable(i)) {
		/* back to waiting, then expired; the retry's write kept */
		CHECK_EQ_STR(told[i], "waiting_callback");
		CHECK_EQ_STR(st, "expired");
		CHECK_EQ_STR(le, err);
		CHECK_EQ_INT(tn, 1);
	} else {
		CHECK_EQ_STR(told[i], "failed");
		CHECK_EQ_STR(st, "failed");
	}
}

int
main(void)
{
	pthread_t ex, th[THREADS];
	MYSQL *m;
	int i, won_retry = 0, won_final = 0;
	struct http_resp r;
	struct json_object *o;
	struct timespec tick = { 0, 10 * 1000000L };

	http_test_init();
	test_env("ASYNCEXEC_EXPIRE");
	sidedb_init(&cfg);
	max_attempts = config_long("max_attempts", 5);
	fx_setup(&F, "retry-race");
	m = sidedb_open(&cfg);
	prepare(m);
	next_fail = 0;
	pthread_create(&ex, NULL, expirer, NULL);
	for (i = 0; i < 1000 && !first_run(); i++)	/* at most 10 s */
		nanosleep(&tick, NULL);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, failer, NULL);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_join(ex, NULL);
	CHECK_EQ_INT(expire_bad, 0);
	CHECK(expire_rest(m));
	for (i = 0; i < N; i++)
		check_one(m, i, retryable(i) ? &won_retry : &won_final);
	/* nothing of the route is claimable any more */
	fx_claim(&F, F.bkey, "{\"max\":100}", &r);
	o = json_body(&r);
	CHECK_EQ_INT(jlen(o, "executions"), 0);
	json_object_put(o);
	http_resp_free(&r);
	/* both sides won some (the due-now quarter is always the expiry's) */
	CHECK(won_retry + won_final > 0 && won_retry + won_final < N);
	printf("retryable fails that won: %d of %d at max-1, %d of %d at max; "
	    "%d expiry runs during the race\n", won_retry, N / 2, won_final, N / 2,
	    expire_runs);
	mysql_close(m);
	fx_free(&F);
	mysql_library_end();
	return check_done("http_retry_race");
}
