/*
 * test_http_scale.c - exactly once and claim exclusivity at scale, through the real nginx
 * (labels http and long). ASYNCEXEC_TEST_SCALE (default 1) scales the counts; the full
 * counts are 2,000 executions x 8 racing callbacks, and 10,000 executions x 8 claimers.
 *
 * - cancel: claim skips an execution past its expiresAt and one whose attempts are used
 *   up; a cancel-requested execution whose lease lapsed becomes cancelled by one
 *   asyncexec-expire run, and the claim's late callback gets 409 (currentStatus cancelled).
 * - exactly once: 8 callbacks per execution (complete and fail mixed, all with the one
 *   current token) while asyncexec-expire runs in a loop, a quarter of the executions
 *   falling due meanwhile: one terminal state each, exactly one 200 (none where the expiry won), the
 *   stored outcome byte for byte the winner's, every other callback 409, and no expiry
 *   run exits non-zero.
 * - exclusivity: 8 claimers with 5 s leases complete what they claim; every tenth claim is
 *   left to lapse (its lease set into the past in the database, as time would). No
 *   execution is handed to a second claim while another's lease is live, the stale
 *   holder's complete gets 409, each execution is completed exactly once.
 *
 * Lapsed leases and overdue executions are made in the database (ASYNCEXEC_TEST_CONFIG),
 * never by sleeping. The expiry binary comes in ASYNCEXEC_EXPIRE.
 *
 * Two app hosts (cluster_http_scale): with ASYNCEXEC_TEST_HTTP_A and _B both set, the
 * requests alternate between them: submits and polls by index, the 8 callbacks of one
 * execution 4 on each host (complete and fail on both), each claimer's claims and its
 * completes on alternate hosts (a claim on one host completed on the other). Expiry
 * runs with ASYNCEXEC_TEST_EXPIRE_CONFIG when set (a third connection, on another node).
 */
#include "util/proc.h"
#include "util/clock.h"
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

#define CB		8	/* racing callbacks per execution */
#define CLAIMERS	8
#define SUBMITTERS	8

static struct config cfg;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *host_a, *host_b;	/* both set: requests alternate between them */

/* Sends this thread's next requests to host A (N even) or B (N odd), when both are set. */
static void
host_pick(long n)
{
	if (host_a != NULL && host_b != NULL)
		http_set_thread_target(n % 2 == 0 ? host_a : host_b);
}

static double
scale(void)
{
	const char *s = getenv("ASYNCEXEC_TEST_SCALE");

	return s != NULL && atof(s) > 0 ? atof(s) : 1.0;
}

/*
 * A lease that lapsed as time would lapse it: due_at, which the claim set to the
 * lease's end, goes with it (src/repo/repo_sql.h LEASE_DUE); "" for another column.
 */
static const char *
past_due(const char *col)
{
	return strcmp(col, "lease_expires_at") == 0 ? ", due_at = lease_expires_at" : "";
}

/* Sets execution ID's lease (or, with COL "expires_at", its expiry) one second ago. */
static void
db_past(MYSQL *m, const char *col, int64_t id)
{
	char q[192];

	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET %s = NOW(3) - INTERVAL 1 SECOND"
	    "%s WHERE id = %lld", col, past_due(col), (long long)id);
	sidedb_exec(m, q);
}

/* One run of the expiry binary; returns its exit status (-1: no status), OUT its stdout. */
static int
expire_once(char *out, size_t sz)
{
	char cmd[1024];
	const char *conf = getenv("ASYNCEXEC_TEST_EXPIRE_CONFIG");

	if (conf == NULL || *conf == '\0')
		conf = test_env("ASYNCEXEC_TEST_CONFIG");
	snprintf(cmd, sizeof cmd, "'%s' --config '%s' --batch-size 50",
	    test_env("ASYNCEXEC_EXPIRE"), conf);
	return ut_run(cmd, out, sz);
}

/* ---- submitting in parallel --------------------------------------------------------- */

struct subs {
	const struct fx *f;
	const char *tag;
	struct sub *s;
	int n, next, failed;
};

static void *
submitter(void *arg)
{
	struct subs *b = arg;
	char cid[CID_MAX];
	int i;

	for (;;) {
		pthread_mutex_lock(&mu);
		i = b->next++;
		pthread_mutex_unlock(&mu);
		if (i >= b->n)
			return NULL;
		snprintf(cid, sizeof cid, "%s-%d", b->tag, i);
		host_pick(i);
		if (!fx_submit_ok(b->f, cid, "{}", &b->s[i])) {
			pthread_mutex_lock(&mu);
			b->failed++;
			pthread_mutex_unlock(&mu);
		}
	}
}

/* Submits N executions with correlation ids "<tag>-<i>" into S[0..N). 1 when all 202. */
static int
submit_all(const struct fx *f, const char *tag, struct sub *s, int n)
{
	struct subs b = { f, tag, s, n, 0, 0 };
	pthread_t th[SUBMITTERS];
	int i;

	for (i = 0; i < SUBMITTERS; i++)
		pthread_create(&th[i], NULL, submitter, &b);
	for (i = 0; i < SUBMITTERS; i++)
		pthread_join(th[i], NULL);
	return b.failed == 0;
}

/* The index of correlation id CID ("<tag>-<i>"), or -1. */
static int
cid_index(const char *cid, int n)
{
	const char *p = strrchr(cid, '-');
	int i = p != NULL ? atoi(p + 1) : -1;

	return i >= 0 && i < n ? i : -1;
}

/* The status member of a poll of S, or "" (static buffer); BODY gets the body when given. */
static const char *
poll_status(const struct fx *f, const struct sub *s, char **body)
{
	static _Thread_local char st[32];
	struct http_resp r;
	struct json_object *o;

	st[0] = '\0';
	if (fx_poll(f, f->ckey, s->cid, s->token, NULL, &r) == 200 &&
	    (o = json_body(&r)) != NULL) {
		snprintf(st, sizeof st, "%s", jstr(o, "status") ? jstr(o, "status") : "");
		json_object_put(o);
	}
	if (body != NULL) {
		*body = r.body;
		r.body = NULL;
	}
	http_resp_free(&r);
	return st;
}

/* Runs FN(ARG, i) for i in [0, N) on SUBMITTERS threads. */
struct par {
	void (*fn)(void *, int);
	void *arg;
	int n, next;
};

static void *
par_worker(void *arg)
{
	struct par *p = arg;
	int i;

	for (;;) {
		pthread_mutex_lock(&mu);
		i = p->next++;
		pthread_mutex_unlock(&mu);
		if (i >= p->n)
			return NULL;
		p->fn(p->arg, i);
	}
}

static void
par_for(int n, void (*fn)(void *, int), void *arg)
{
	struct par p = { fn, arg, n, 0 };
	pthread_t th[SUBMITTERS];
	int i;

	for (i = 0; i < SUBMITTERS; i++)
		pthread_create(&th[i], NULL, par_worker, &p);
	for (i = 0; i < SUBMITTERS; i++)
		pthread_join(th[i], NULL);
}

/* Sets column COL of F's execution CID one second into the past. */
static void
db_past_cid(MYSQL *m, const char *col, const struct fx *f, const char *cid)
{
	char q[512];

	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET %s = NOW(3) - INTERVAL 1 SECOND"
	    "%s WHERE environment = '%s' AND service_key = '%s' AND operation_key = '%s' AND "
	    "correlation_id = '%s'", col, past_due(col), f->env, f->svc, f->op, cid);
	sidedb_exec(m, q);
}

/* Claims at most one execution of F (lease 5 s); returns 1 and fills C when one came. */
static int
claim1(const struct fx *f, struct claim *c)
{
	struct http_resp r;
	struct json_object *o = NULL;
	int got;

	CHECK(fx_claim(f, f->bkey, "{\"max\":1,\"leaseSeconds\":5}", &r) == 200);
	got = (o = json_body(&r)) != NULL && jlen(o, "executions") == 1 &&
	    fx_claim_item(o, 0, c);
	json_object_put(o);
	http_resp_free(&r);
	return got;
}

/*
 * Claim skips the overdue one and the one whose attempts are used up; a cancel-requested
 * execution whose lease lapsed is cancelled by one expiry run; its late callback gets 409.
 */
static void
cancel_part(void)
{
	struct fx F;
	struct sub due, used, cn;
	struct claim c;
	struct http_resp r;
	MYSQL *m = sidedb_open(&cfg);
	long max_attempts = config_long("max_attempts", 5);
	char out[1024];
	int i;

	fx_setup(&F, "scl-c");
	CHECK(fx_submit_ok(&F, "due", "{}", &due));
	CHECK(fx_submit_ok(&F, "used", "{}", &used));
	CHECK(fx_submit_ok(&F, "cn", "{}", &cn));
	db_past_cid(m, "expires_at", &F, "due");
	/* "due" is older, but overdue: every claim hands out "used" until it is used up */
	for (i = 0; i < max_attempts; i++) {
		CHECK(claim1(&F, &c) && strcmp(c.cid, "used") == 0);
		db_past_cid(m, "lease_expires_at", &F, "used");
	}
	CHECK(claim1(&F, &c) && strcmp(c.cid, "cn") == 0);
	CHECK(!claim1(&F, &(struct claim){ 0 }));		/* nothing else */
	CHECK(fx_cancel(&F, F.ckey, "cn", cn.token, &r) == 202);
	http_resp_free(&r);
	CHECK_EQ_STR(poll_status(&F, &cn, NULL), "waiting_callback");
	db_past_cid(m, "lease_expires_at", &F, "cn");		/* the backend went away */
	CHECK_EQ_INT(expire_once(out, sizeof out), 0);
	CHECK(strstr(out, " cancelled=") != NULL && strstr(out, " cancelled=0 ") == NULL);
	CHECK_EQ_STR(poll_status(&F, &cn, NULL), "cancelled");
	CHECK_EQ_STR(poll_status(&F, &due, NULL), "expired");
	CHECK_EQ_STR(poll_status(&F, &used, NULL), "failed");	/* abandoned */
	fx_callback(F.bkey, c.id, "complete", c.token, "{\"result\":1}", &r);
	CHECK(expect_conflict(&r, "cancelled"));
	http_resp_free(&r);
	fx_callback(F.bkey, c.id, "cancelled", c.token, "{}", &r);
	CHECK(expect_conflict(&r, "cancelled"));
	http_resp_free(&r);
	mysql_close(m);
	fx_free(&F);
}

/* ---- exactly once at scale ---------------------------------------------------------- */

struct once {
	struct fx F;
	int n;
	struct sub *s;
	struct claim *c;
	short (*st)[CB];		/* status of callback k on execution i */
	char (*cur)[CB][12];		/* its currentStatus when 409 */
	int cb_left, runs, failed, n_expired, spread;
	int64_t due_end;		/* every overdue one is due before this */
	long expired, retries;
	pthread_barrier_t bar;
};

/* The body callback K sends for execution I: even K completes, odd K fails. */
static void
once_body(int k, int i, char *buf, size_t sz, int value_only)
{
	if (k % 2 == 0)
		snprintf(buf, sz, value_only ? "{\"k\":%d,\"i\":%d}" :
		    "{\"result\":{\"k\":%d,\"i\":%d}}", k, i);
	else
		snprintf(buf, sz, value_only ? "{\"message\":\"cb %d i %d\"}" :
		    "{\"error\":{\"message\":\"cb %d i %d\"}}", k, i);
}

struct cbarg {
	struct once *o;
	int k;
};

static void *
once_callback(void *arg)
{
	struct cbarg *a = arg;
	struct once *o = a->o;
	unsigned seed = (unsigned)a->k * 7919u + 17u;
	int *order = calloc((size_t)o->n, sizeof(int)), i, j, t;
	struct http_resp r;
	struct json_object *js;
	char body[96];

	if (order == NULL)
		exit(1);
	for (i = 0; i < o->n; i++)
		order[i] = i;
	for (i = o->n - 1; i > 0; i--) {
		j = rand_r(&seed) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	pthread_barrier_wait(&o->bar);
	for (j = 0; j < o->n; j++) {
		i = order[j];
		host_pick(a->k + i);	/* 4 of execution i's callbacks on each host */
		once_body(a->k, i, body, sizeof body, 0);
		o->st[i][a->k] = (short)fx_callback(o->F.bkey, o->c[i].id,
		    a->k % 2 ? "fail" : "complete", o->c[i].token, body, &r);
		if (r.status == 409 && (js = json_body(&r)) != NULL) {
			snprintf(o->cur[i][a->k], sizeof o->cur[i][a->k], "%s",
			    jstr(js, "currentStatus") ? jstr(js, "currentStatus") : "");
			json_object_put(js);
		}
		http_resp_free(&r);
	}
	free(order);
	pthread_mutex_lock(&mu);
	o->cb_left--;
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* The N of " NAME=N" in a summary line, or 0. */
static long
field(const char *line, const char *name)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof key, " %s=", name);
	return (p = strstr(line, key)) != NULL ? strtol(p + strlen(key), NULL, 10) : 0;
}

/* The expiry in a loop while the callbacks run and until all are due, then once more. */
static void *
once_expiry(void *arg)
{
	struct once *o = arg;
	char out[1024];
	int left, rc, due;

	pthread_barrier_wait(&o->bar);
	do {
		pthread_mutex_lock(&mu);
		left = o->cb_left;
		pthread_mutex_unlock(&mu);
		due = ut_wall_ms() > o->due_end;
		rc = expire_once(out, sizeof out);
		o->runs++;
		if (rc != 0) {
			o->failed++;
			fprintf(stderr, "  expiry exited %d: %s", rc, out);
		}
		o->expired += field(out, "expired");
		o->retries += field(out, "retries");
	} while (left > 0 || !due);
	return NULL;
}

/* Claims all of O's executions (hour leases) into o->c by correlation id. */
static void
once_claim_all(struct once *o)
{
	struct http_resp r;
	struct json_object *js;
	struct claim c;
	size_t i, got;
	int idx, total = 0;
	long n = 0;

	do {
		host_pick(n++);
		CHECK(fx_claim(&o->F, o->F.bkey, "{\"max\":100,\"leaseSeconds\":3600}",
		    &r) == 200);
		js = json_body(&r);
		got = js != NULL && jlen(js, "executions") > 0 ?
		    (size_t)jlen(js, "executions") : 0;
		for (i = 0; i < got; i++)
			if (fx_claim_item(js, i, &c) && (idx = cid_index(c.cid, o->n)) >= 0) {
				o->c[idx] = c;
				total++;
			}
		json_object_put(js);
		http_resp_free(&r);
	} while (got > 0);
	CHECK_EQ_INT(total, o->n);
}

/* Checks execution I after the race; counts into WINS and EXPIRED. */
static void
once_check(void *arg, int i)
{
	struct once *o = arg;
	char *body = NULL, want[96];
	const char *st;
	int k, wins = 0, winner = -1, bad = 0;

	host_pick(i);
	st = poll_status(&o->F, &o->s[i], &body);

	for (k = 0; k < CB; k++) {
		if (o->st[i][k] == 200) {
			wins++;
			winner = k;
		} else if (o->st[i][k] != 409 || strcmp(o->cur[i][k], st) != 0)
			bad++;
	}
	pthread_mutex_lock(&mu);
	CHECK_EQ_INT(bad, 0);
	if (strcmp(st, "expired") == 0) {
		o->n_expired++;
		CHECK_EQ_INT(wins, 0);
		CHECK(i % 4 == 0);		/* only overdue ones expire */
	} else {
		CHECK_EQ_INT(wins, 1);
		if (wins == 1) {
			once_body(winner, i, want, sizeof want, 1);
			CHECK_EQ_STR(st, winner % 2 ? "failed" : "completed");
			CHECK(body != NULL && strstr(body, want) != NULL);
		}
	}
	pthread_mutex_unlock(&mu);
	free(body);
}

static void
once_part(void)
{
	static struct once o;
	struct cbarg a[CB];
	pthread_t th[CB + 1];
	MYSQL *m = sidedb_open(&cfg);
	char q[512];
	int64_t t0 = ut_wall_ms(), t1, t2;
	int i, expired = 0;

	o.n = (int)(2000 * scale());
	o.n = o.n < 8 ? 8 : o.n;
	o.s = calloc((size_t)o.n, sizeof *o.s);
	o.c = calloc((size_t)o.n, sizeof *o.c);
	o.st = calloc((size_t)o.n, sizeof *o.st);
	o.cur = calloc((size_t)o.n, sizeof *o.cur);
	if (o.s == NULL || o.c == NULL || o.st == NULL || o.cur == NULL)
		exit(1);
	fx_setup(&o.F, "scl-x");
	CHECK(submit_all(&o.F, "x", o.s, o.n));
	once_claim_all(&o);
	/* a quarter falls due while the callbacks run (spread over o.spread ms, the first
	 * quarter of them due already): the expiry in its loop races their callbacks */
	o.spread = (int)(3000 * scale()) < 400 ? 400 : (int)(3000 * scale());
	o.due_end = ut_wall_ms() + o.spread + 1000;
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET expires_at = NOW(3) + INTERVAL "
	    "(CAST(SUBSTRING(correlation_id, 3) AS SIGNED) * %d DIV %d - %d) * 1000 "
	    "MICROSECOND "
	    "WHERE environment = '%s' AND service_key = '%s' AND operation_key = '%s' "
	    "AND CAST(SUBSTRING(correlation_id, 3) AS UNSIGNED) %% 4 = 0", o.spread, o.n,
	    o.spread / 4, o.F.env, o.F.svc, o.F.op);
	sidedb_exec(m, q);
	mysql_close(m);
	t1 = ut_wall_ms();
	o.cb_left = CB;
	pthread_barrier_init(&o.bar, NULL, CB + 1);
	for (i = 0; i < CB; i++) {
		a[i] = (struct cbarg){ &o, i };
		pthread_create(&th[i], NULL, once_callback, &a[i]);
	}
	pthread_create(&th[CB], NULL, once_expiry, &o);
	for (i = 0; i <= CB; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&o.bar);
	t2 = ut_wall_ms();
	par_for(o.n, once_check, &o);
	expired = o.n_expired;
	CHECK_EQ_INT(o.failed, 0);
	CHECK_EQ_INT(o.expired, expired);
	CHECK(expired > 0 && expired < (o.n + 3) / 4 + 1);
	printf("exactly once: %d executions x %d callbacks in %.1f s (set-up %.1f s): "
	    "%d won by a callback, %d expired; %d expiry runs, %d exited non-zero, %ld "
	    "retries\n", o.n, CB, (double)(t2 - t1) / 1000, (double)(t1 - t0) / 1000,
	    o.n - expired, expired, o.runs, o.failed, o.retries);
	fx_free(&o.F);
}

/* ---- claim exclusivity -------------------------------------------------------------- */

struct excl {
	struct fx F;
	int n, done, double_holds, lapsed_left, natural, stale_wins;
	struct sub *s;
	struct held {
		int64_t id, lease_end;	/* the live claim's lease end (ms), 0: none */
		char token[CB_TOKEN_MAX + 1], stale[CB_TOKEN_MAX + 1];
		int claims, completes, winner;
	} *h;
	int64_t deadline;
};

/* Records claim C of execution I by claimer ME; returns 1 to complete it, 0 to let it lapse. */
static int
excl_claimed(struct excl *e, int i, const struct claim *c, int64_t lease_end)
{
	struct held *h = &e->h[i];
	int keep;

	pthread_mutex_lock(&mu);
	if (h->lease_end != 0 && ut_wall_ms() < h->lease_end - 100) {
		e->double_holds++;
		fprintf(stderr, "  double hold: execution %d handed out while a lease lives "
		    "for %lld ms more\n", i, (long long)(h->lease_end - ut_wall_ms()));
	} else if (h->lease_end != 0)
		e->natural++;		/* a lease that lapsed by itself */
	h->id = c->id;
	h->claims++;
	keep = !(h->claims == 1 && i % 10 == 0);
	if (keep) {
		h->lease_end = lease_end;
		snprintf(h->token, sizeof h->token, "%s", c->token);
	} else {		/* left to lapse: no longer held once its lease is past */
		h->lease_end = 0;
		snprintf(h->stale, sizeof h->stale, "%s", c->token);
	}
	pthread_mutex_unlock(&mu);
	return keep;
}

/* Completes claim C of execution I as claimer ME. */
static void
excl_complete(struct excl *e, int me, int i, const struct claim *c)
{
	struct http_resp r;
	char body[64];
	int st;

	snprintf(body, sizeof body, "{\"result\":{\"c\":%d,\"i\":%d}}", me, i);
	st = fx_callback(e->F.bkey, c->id, "complete", c->token, body, &r);
	pthread_mutex_lock(&mu);
	if (st == 200) {
		e->h[i].completes++;
		e->h[i].winner = me;
		e->done++;
		if (strcmp(e->h[i].token, c->token) == 0)
			e->h[i].lease_end = 0;
	} else if (st != 409) {
		CHECK_EQ_INT(st, 409);
		fprintf(stderr, "  complete: %d %.200s\n", st, r.body ? r.body : "");
	}
	pthread_mutex_unlock(&mu);
	http_resp_free(&r);
}

struct clarg {
	struct excl *e;
	int me;
};

static void *
excl_claimer(void *arg)
{
	struct clarg *a = arg;
	struct excl *e = a->e;
	MYSQL *m = sidedb_open(&cfg);
	struct http_resp r;
	struct json_object *js;
	struct claim c;
	char p[64];
	size_t k, got;
	int i, done;
	long n = a->me;

	for (;;) {
		pthread_mutex_lock(&mu);
		done = e->done >= e->n;
		pthread_mutex_unlock(&mu);
		if (done || ut_wall_ms() > e->deadline)
			break;
		host_pick(n++);		/* its completes go to the other host */
		if (fx_claim(&e->F, e->F.bkey, "{\"max\":10,\"leaseSeconds\":5}", &r) != 200) {
			/* a 503 (a claim that lost its conflicts three times, with
			 * Retry-After) is the contract's answer under this load: the
			 * claimer tries again; anything else fails */
			if (r.status == 503)
				fprintf(stderr, "  claim: 503, again\n");
			else
				CHECK_EQ_INT(r.status, 200);
			http_resp_free(&r);
			continue;
		}
		js = json_body(&r);
		got = js != NULL && jlen(js, "executions") > 0 ?
		    (size_t)jlen(js, "executions") : 0;
		for (k = 0; k < got; k++) {
			if (!fx_claim_item(js, k, &c) || (i = cid_index(c.cid, e->n)) < 0)
				continue;
			snprintf(p, sizeof p, "executions.%zu.leaseExpiresAt", k);
			host_pick(n);
			if (excl_claimed(e, i, &c, rfc3339_ms(jstr(js, p))))
				excl_complete(e, a->me, i, &c);
			else
				db_past(m, "lease_expires_at", c.id);
		}
		json_object_put(js);
		http_resp_free(&r);
		if (got == 0)	/* the rest is held by others: ask again shortly */
			nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	}
	mysql_close(m);
	return NULL;
}

/* After the run: execution I completed once, by its winner; its stale token loses. */
static void
excl_check(void *arg, int i)
{
	struct excl *e = arg;
	struct held *h = &e->h[i];
	struct http_resp r;
	char *body = NULL, want[64];
	const char *st;
	int stale_ok = 1;

	host_pick(i);
	st = poll_status(&e->F, &e->s[i], &body);

	if (h->stale[0] != '\0') {
		fx_callback(e->F.bkey, h->id, "complete", h->stale, "{\"result\":0}", &r);
		stale_ok = expect_conflict(&r, "completed");
		http_resp_free(&r);
	}
	snprintf(want, sizeof want, "\"result\":{\"c\":%d,\"i\":%d}", h->winner, i);
	pthread_mutex_lock(&mu);
	CHECK_EQ_INT(h->completes, 1);
	CHECK_EQ_STR(st, "completed");
	CHECK(body != NULL && strstr(body, want) != NULL);
	CHECK(stale_ok);
	e->stale_wins += !stale_ok;
	pthread_mutex_unlock(&mu);
	free(body);
}

static void
excl_part(void)
{
	static struct excl e;
	struct clarg a[CLAIMERS];
	pthread_t th[CLAIMERS];
	int64_t t0 = ut_wall_ms(), t1, t2;
	int i, lapsed = 0;

	e.n = (int)(10000 * scale());
	e.n = e.n < 20 ? 20 : e.n;
	e.s = calloc((size_t)e.n, sizeof *e.s);
	e.h = calloc((size_t)e.n, sizeof *e.h);
	if (e.s == NULL || e.h == NULL)
		exit(1);
	fx_setup(&e.F, "scl-e");
	CHECK(submit_all(&e.F, "e", e.s, e.n));
	t1 = ut_wall_ms();
	e.deadline = t1 + 600000;
	for (i = 0; i < CLAIMERS; i++) {
		a[i] = (struct clarg){ &e, i };
		pthread_create(&th[i], NULL, excl_claimer, &a[i]);
	}
	for (i = 0; i < CLAIMERS; i++)
		pthread_join(th[i], NULL);
	t2 = ut_wall_ms();
	CHECK_EQ_INT(e.done, e.n);
	CHECK_EQ_INT(e.double_holds, 0);
	par_for(e.n, excl_check, &e);
	for (i = 0; i < e.n; i++)
		lapsed += e.h[i].stale[0] != '\0';
	CHECK(lapsed >= e.n / 10);
	printf("claim exclusivity: %d executions, %d claimers in %.1f s (submits %.1f s): "
	    "%d left to lapse and claimed again, %d lapsed by themselves, %d double holds, "
	    "%d stale wins\n", e.n, CLAIMERS, (double)(t2 - t1) / 1000,
	    (double)(t1 - t0) / 1000, lapsed, e.natural, e.double_holds, e.stale_wins);
	fx_free(&e.F);
}

int
main(void)
{
	const char *xconf;
	int64_t t0;

	http_test_init();
	test_env("ASYNCEXEC_EXPIRE");
	sidedb_init(&cfg);
	host_a = getenv("ASYNCEXEC_TEST_HTTP_A");
	host_b = getenv("ASYNCEXEC_TEST_HTTP_B");
	if (host_a == NULL || *host_a == '\0' || host_b == NULL || *host_b == '\0')
		host_a = host_b = NULL;
	if ((xconf = getenv("ASYNCEXEC_TEST_EXPIRE_CONFIG")) == NULL || *xconf == '\0')
		xconf = getenv("ASYNCEXEC_TEST_CONFIG");
	printf("targets: %s%s%s; expiry config %s\n",
	    host_a ? host_a : getenv("ASYNCEXEC_TEST_HTTP"), host_a ? " and " : "",
	    host_a ? host_b : "", xconf);
	t0 = ut_wall_ms();
	cancel_part();
	printf("cancel and claim skips: %.1f s\n", (double)(ut_wall_ms() - t0) / 1000);
	t0 = ut_wall_ms();
	once_part();
	printf("exactly once: %.1f s in all\n", (double)(ut_wall_ms() - t0) / 1000);
	t0 = ut_wall_ms();
	excl_part();
	printf("claim exclusivity: %.1f s in all\n", (double)(ut_wall_ms() - t0) / 1000);
	mysql_library_end();
	return check_done("http_scale");
}
