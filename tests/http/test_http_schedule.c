/*
 * test_http_schedule.c - the scheduling headers of submit (contract v3, issue 20) through
 * nginx: X-Not-Before or X-Delay-Seconds, X-Deadline, X-Priority.
 *
 *   bounds      every header at 0, its maximum, maximum + 1, malformed, empty; both starts
 *               given; a deadline in the past, now, malformed, before the start. Every
 *               400 is problem+json invalid_request whose detail names the header, and
 *               nothing was stored (no row of that correlation id; the route's list and
 *               claim empty at the end).
 *   poll        priority and notBefore as submitted; expiresAt the deadline.
 *   resubmit    same body and same headers: 202 again; another or a missing X-Priority,
 *               or an X-Priority 0 the first submit did not send: 409
 *               correlation_id_conflict; a delayed submit repeated later with the same
 *               X-Delay-Seconds: 202 (identical); the same instant in another offset: 202.
 *   not-before  in the past: claimed at once, behind work submitted before it; 2 s
 *               ahead (the database clock, NOW(3)): every claim that returned before
 *               then is empty, the first one sent 50 ms after it gets it (bounded
 *               polling, no sleep-and-hope).
 *   order       8 racing claimers (threads, max 1 each), three rounds: each round hands
 *               out exactly the next 8 by priority DESC, then oldest first; the priority 9
 *               submitted last is in the first.
 *   deadline    X-Deadline 2 s ahead: waiting after an expiry run before it, not
 *               claimable after it, expired after one asyncexec-expire run.
 *   skip        20,000 due-later executions (copies of one delayed submit, one multi-row
 *               INSERT ... SELECT through the side connection) ahead of a due one: the
 *               median claim time is at most 2 x the median of a route without them
 *               + 2 ms of absolute slack (loopback timings of 1-3 ms jitter by a few
 *               hundred microseconds on a shared 2-core machine); the same for a claim
 *               that finds nothing due. Then the copies at priority 9, ahead of a due
 *               one of priority 0: it is claimed. Printed; the copies are deleted.
 *
 * The database (ASYNCEXEC_TEST_CONFIG) for the clock and the fixture rows; the expiry
 * binary in ASYNCEXEC_EXPIRE (RESOURCE_LOCK asyncexec_expire).
 */
#include "util/proc.h"
#include "check.h"
#include "config.h"
#include "fixture.h"
#include "json.h"
#include "sidedb.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RACERS		8
#define ROUNDS		3
#define NORDER		(RACERS * ROUNDS)
#define NSKIP		20000
#define SAMPLES		21
#define SLACK_US	2000

static struct config cfg;
static MYSQL *db;

/* ---- helpers ------------------------------------------------------------------------- */

#define db_num(q)	sidedb_num(db, q)
#define db_now()	sidedb_now_ms(db)

/* MS as "2026-12-01T08:00:00.123Z" (the service's own json_time). */
static void
fmt_ms(char *buf, size_t len, int64_t ms)
{
	char t[RFC3339_LEN + 1];

	json_time(ms, t);
	snprintf(buf, len, "%s", t);
}

static int64_t
mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void
sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Submit of BODY with correlation id CID (NULL: none) and up to three header lines
 * (NULL: none). Returns the status. */
static int
submit_h(const struct fx *f, const char *cid, const char *body, const char *h1,
    const char *h2, const char *h3, struct http_resp *r)
{
	char path[512], c[200];

	fx_exec_path(path, sizeof path, f, NULL, NULL);
	if (cid != NULL)
		snprintf(c, sizeof c, "X-Correlation-Id: %s", cid);
	return api("POST", path, f->ckey, body, r, cid ? c : "", h1 ? h1 : "", h2 ? h2 : "",
	    h3 ? h3 : "", (const char *)NULL);
}

/* The same, expecting 202: S filled. 1 on success. */
static int
submit_ok(const struct fx *f, const char *cid, const char *body, const char *h1,
    const char *h2, const char *h3, struct sub *s)
{
	struct http_resp r;
	struct json_object *o = NULL;
	int ok;

	memset(s, 0, sizeof *s);
	ok = submit_h(f, cid, body, h1, h2, h3, &r) == 202 && (o = json_body(&r)) != NULL;
	if (ok) {
		snprintf(s->cid, sizeof s->cid, "%s", jstr(o, "correlationId") ?
		    jstr(o, "correlationId") : "");
		snprintf(s->token, sizeof s->token, "%s", jstr(o, "pollToken") ?
		    jstr(o, "pollToken") : "");
		snprintf(s->created, sizeof s->created, "%s", jstr(o, "createdAt") ?
		    jstr(o, "createdAt") : "");
		ok = s->cid[0] != '\0' && s->token[0] != '\0';
	}
	if (!ok)
		fprintf(stderr, "  submit (%s | %s | %s): %d %.300s\n", h1 ? h1 : "-",
		    h2 ? h2 : "-", h3 ? h3 : "-", r.status, r.body ? r.body : "");
	json_object_put(o);
	http_resp_free(&r);
	return ok;
}

/* Rows of correlation id CID of F's tenant (all routes). */
static long long
rows_of(const struct fx *f, const char *cid)
{
	char q[512];

	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "initiator_tenant_id = '%s' AND correlation_id = '%s'", f->tenant, cid);
	return db_num(q);
}

/*
 * A submit with the header lines H1, H2 (NULL: none) that must be 400 invalid_request
 * whose detail names NAME (and NAME2, when not NULL); no row stored.
 */
static void
bad(const struct fx *f, const char *h1, const char *h2, const char *name,
    const char *name2)
{
	struct http_resp r;
	struct json_object *o;
	char cid[CID_MAX];
	const char *detail;
	int ok;

	fx_cid(cid, sizeof cid, "bad");
	submit_h(f, cid, "{\"bad\":1}", h1, h2, NULL, &r);
	o = json_body(&r);
	detail = jstr(o, "detail");
	ok = expect_problem(&r, 400, "invalid_request") && detail != NULL &&
	    strstr(detail, name) != NULL && (name2 == NULL || strstr(detail, name2) != NULL);
	if (!ok)
		fprintf(stderr, "  ... with \"%s\" \"%s\": detail \"%s\"\n", h1 ? h1 : "",
		    h2 ? h2 : "", detail ? detail : "(none)");
	CHECK(ok);
	CHECK_EQ_INT(rows_of(f, cid), 0);
	json_object_put(o);
	http_resp_free(&r);
}

/* The poll body of S (json_object_put it), or NULL. */
static struct json_object *
poll_json(const struct fx *f, const struct sub *s)
{
	struct http_resp r;
	struct json_object *o = NULL;

	if (fx_poll(f, f->ckey, s->cid, s->token, NULL, &r) == 200)
		o = json_body(&r);
	else
		fprintf(stderr, "  poll %s: %d %.200s\n", s->cid, r.status, r.body ? r.body : "");
	http_resp_free(&r);
	return o;
}

/* Claims with max MAX: the number handed out, their correlation ids into CIDS (may be
 * NULL). -1 when the claim failed. */
static int
claim_cids(const struct fx *f, int max, char (*cids)[CID_MAX])
{
	struct http_resp r;
	struct json_object *o;
	struct claim c;
	char body[64];
	long n, i;

	snprintf(body, sizeof body, "{\"max\":%d,\"leaseSeconds\":300}", max);
	if (fx_claim(f, f->bkey, body, &r) != 200 || (o = json_body(&r)) == NULL) {
		fprintf(stderr, "  claim: %d %.200s\n", r.status, r.body ? r.body : "");
		http_resp_free(&r);
		return -1;
	}
	n = jlen(o, "executions");
	for (i = 0; cids != NULL && i < n; i++)
		if (fx_claim_item(o, (size_t)i, &c))
			snprintf(cids[i], CID_MAX, "%s", c.cid);
	json_object_put(o);
	http_resp_free(&r);
	return (int)n;
}

/* ---- every header and boundary ------------------------------------------------------ */

static void
test_bounds(void)
{
	struct fx f, g;
	struct sub s;
	struct http_resp r;
	struct json_object *o;
	char h[128], h2[128], t[40], t2[40], path[512];
	int64_t now, created;

	fx_setup(&f, "sched-ok");
	fx_setup(&g, "sched-bad");
	/* room for the longest delay: a start must come before the expiry */
	free(admin("route set %s --retention-days 31", f.route));

	/* X-Delay-Seconds 0: due at once, notBefore = createdAt */
	CHECK(submit_ok(&f, NULL, "{}", "X-Delay-Seconds: 0", NULL, NULL, &s));
	o = poll_json(&f, &s);
	CHECK_EQ_STR(jstr(o, "notBefore"), s.created);
	CHECK_EQ_STR(jstr(o, "createdAt"), s.created);
	json_object_put(o);
	CHECK_EQ_INT(claim_cids(&f, 10, NULL), 1);
	/* X-Delay-Seconds 2592000 (30 days, the maximum): notBefore 30 days on, not claimed */
	CHECK(submit_ok(&f, NULL, "{}", "X-Delay-Seconds: 2592000", NULL, NULL, &s));
	o = poll_json(&f, &s);
	created = rfc3339_ms(s.created);
	CHECK_EQ_INT(rfc3339_ms(jstr(o, "notBefore")) - created, 2592000LL * 1000);
	json_object_put(o);
	CHECK_EQ_INT(claim_cids(&f, 10, NULL), 0);
	/* X-Priority 0 and 9; absent: 0, notBefore null */
	CHECK(submit_ok(&f, NULL, "{}", "X-Priority: 9", NULL, NULL, &s));
	o = poll_json(&f, &s);
	{
		int64_t p = -1;

		CHECK(jint(o, "priority", &p) && p == 9);
		CHECK(jnull(o, "notBefore"));
	}
	json_object_put(o);
	CHECK(submit_ok(&f, NULL, "{}", "X-Priority: 0", NULL, NULL, &s));
	o = poll_json(&f, &s);
	{
		int64_t p = -1;

		CHECK(jint(o, "priority", &p) && p == 0);
	}
	json_object_put(o);
	CHECK(submit_ok(&f, NULL, "{}", NULL, NULL, NULL, &s));
	o = poll_json(&f, &s);
	{
		int64_t p = -1;

		CHECK(jint(o, "priority", &p) && p == 0);
		CHECK(jnull(o, "notBefore"));
	}
	json_object_put(o);
	/* X-Deadline an hour ahead: expiresAt is the deadline; with a start before it */
	now = db_now();
	fmt_ms(t, sizeof t, now + 3600 * 1000);
	snprintf(h, sizeof h, "X-Deadline: %s", t);
	fmt_ms(t2, sizeof t2, now + 1800 * 1000);
	snprintf(h2, sizeof h2, "X-Not-Before: %s", t2);
	CHECK(submit_ok(&f, NULL, "{}", h, h2, "X-Priority: 3", &s));
	o = poll_json(&f, &s);
	CHECK_EQ_STR(jstr(o, "expiresAt"), t);
	CHECK_EQ_STR(jstr(o, "notBefore"), t2);
	json_object_put(o);
	CHECK(submit_ok(&f, NULL, "{}", h, "X-Delay-Seconds: 60", NULL, &s));

	/* the 400s, each naming its header, on g: nothing stored */
	bad(&g, "X-Delay-Seconds: 2592001", NULL, "X-Delay-Seconds", NULL);
	/* g's route keeps 7 days: a start 8 days on would expire unstarted */
	bad(&g, "X-Delay-Seconds: 691200", NULL, "X-Delay-Seconds", "retention");
	bad(&g, "X-Delay-Seconds: -1", NULL, "X-Delay-Seconds", NULL);
	bad(&g, "X-Delay-Seconds: 1.5", NULL, "X-Delay-Seconds", NULL);
	bad(&g, "X-Delay-Seconds:", NULL, "X-Delay-Seconds", NULL);
	bad(&g, "X-Delay-Seconds: 1e3", NULL, "X-Delay-Seconds", NULL);
	bad(&g, "X-Delay-Seconds: 99999999999", NULL, "X-Delay-Seconds", NULL);
	bad(&g, "X-Not-Before: tomorrow", NULL, "X-Not-Before", NULL);
	bad(&g, "X-Not-Before: 2026-13-01T00:00:00Z", NULL, "X-Not-Before", NULL);
	bad(&g, "X-Not-Before: 2027-02-30T00:00:00Z", NULL, "X-Not-Before", NULL);
	bad(&g, "X-Not-Before: 2027-01-01T00:00:00", NULL, "X-Not-Before", NULL);
	bad(&g, "X-Not-Before: 2027-01-01 00:00:00Z", NULL, "X-Not-Before", NULL);
	bad(&g, "X-Not-Before:", NULL, "X-Not-Before", NULL);
	fmt_ms(t, sizeof t, db_now() + 60000);
	snprintf(h, sizeof h, "X-Not-Before: %s", t);
	bad(&g, h, "X-Delay-Seconds: 5", "X-Not-Before", "X-Delay-Seconds");
	bad(&g, h, "X-Delay-Seconds: 0", "X-Not-Before", "X-Delay-Seconds");
	/* deadlines: malformed, past, now, before or at the start */
	bad(&g, "X-Deadline: soon", NULL, "X-Deadline", NULL);
	bad(&g, "X-Deadline:", NULL, "X-Deadline", NULL);
	bad(&g, "X-Deadline: 2020-01-01T00:00:00Z", NULL, "X-Deadline", NULL);
	fmt_ms(t, sizeof t, db_now() - 1000);
	snprintf(h, sizeof h, "X-Deadline: %s", t);
	bad(&g, h, NULL, "X-Deadline", NULL);
	fmt_ms(t, sizeof t, db_now());
	snprintf(h, sizeof h, "X-Deadline: %s", t);		/* now: not in the future */
	bad(&g, h, NULL, "X-Deadline", NULL);
	now = db_now();
	fmt_ms(t, sizeof t, now + 30000);
	snprintf(h, sizeof h, "X-Deadline: %s", t);
	fmt_ms(t2, sizeof t2, now + 60000);
	snprintf(h2, sizeof h2, "X-Not-Before: %s", t2);
	bad(&g, h, h2, "X-Deadline", "X-Not-Before");
	bad(&g, h, "X-Delay-Seconds: 60", "X-Deadline", "X-Delay-Seconds");
	snprintf(h2, sizeof h2, "X-Not-Before: %s", t);		/* at the deadline */
	bad(&g, h, h2, "X-Deadline", "X-Not-Before");
	/* priorities */
	bad(&g, "X-Priority: 10", NULL, "X-Priority", NULL);
	bad(&g, "X-Priority: a", NULL, "X-Priority", NULL);
	bad(&g, "X-Priority: -1", NULL, "X-Priority", NULL);
	bad(&g, "X-Priority: 1.0", NULL, "X-Priority", NULL);
	bad(&g, "X-Priority:", NULL, "X-Priority", NULL);
	/* a good header beside a bad one: still nothing stored */
	bad(&g, "X-Priority: 5", "X-Delay-Seconds: x", "X-Delay-Seconds", NULL);
	/* nothing of g was stored: its list and its claim are empty */
	fx_exec_path(path, sizeof path, &g, NULL, NULL);
	CHECK_EQ_INT(api("GET", path, g.ckey, NULL, &r, (const char *)NULL), 200);
	o = json_body(&r);
	CHECK_EQ_INT(jlen(o, "executions"), 0);
	json_object_put(o);
	http_resp_free(&r);
	CHECK_EQ_INT(claim_cids(&g, 100, NULL), 0);
	{
		char q[256];

		snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
		    "initiator_tenant_id = '%s'", g.tenant);
		CHECK_EQ_INT(db_num(q), 0);
	}
	fx_free(&f);
	fx_free(&g);
}

/* ---- identical resubmits --------------------------------------------------------------- */

static void
conflict(const struct fx *f, const char *cid, const char *h1, const char *h2,
    const char *h3)
{
	struct http_resp r;

	submit_h(f, cid, "{\"same\":1}", h1, h2, h3, &r);
	if (!expect_problem(&r, 409, "correlation_id_conflict"))
		fprintf(stderr, "  ... resubmit with \"%s\" \"%s\" \"%s\"\n", h1 ? h1 : "",
		    h2 ? h2 : "", h3 ? h3 : "");
	CHECK(expect_problem(&r, 409, "correlation_id_conflict"));
	http_resp_free(&r);
}

static void
test_resubmit(void)
{
	struct fx f;
	struct sub s, s2;
	struct json_object *o;
	char cid[CID_MAX], cid2[CID_MAX], cid3[CID_MAX], dl[140], nb[140], nb_off[140];
	char t[40];
	int64_t now, first, nb1;
	time_t sec;
	struct tm tm;
	int i;

	fx_setup(&f, "sched-resubmit");
	now = db_now();
	fmt_ms(t, sizeof t, now + 7200 * 1000);
	snprintf(dl, sizeof dl, "X-Deadline: %s", t);
	/* the start a whole second, once in Z and once in +01:00 */
	sec = (time_t)(now / 1000 + 3600);
	gmtime_r(&sec, &tm);
	strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(nb, sizeof nb, "X-Not-Before: %s", t);
	sec += 3600;
	gmtime_r(&sec, &tm);
	strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S+01:00", &tm);
	snprintf(nb_off, sizeof nb_off, "X-Not-Before: %s", t);

	fx_cid(cid, sizeof cid, "resub");
	CHECK(submit_ok(&f, cid, "{\"same\":1}", "X-Priority: 5", dl, nb, &s));
	/* same body and headers (in another order): 202 again, a fresh token */
	CHECK(submit_ok(&f, cid, "{\"same\":1}", nb, dl, "X-Priority: 5", &s2));
	CHECK(strcmp(s.token, s2.token) != 0);
	CHECK_EQ_STR(s2.created, s.created);
	/* the same instant in another offset is the same header */
	CHECK(submit_ok(&f, cid, "{\"same\":1}", "X-Priority: 5", dl, nb_off, &s2));
	o = poll_json(&f, &s2);
	{
		int64_t p = -1;

		CHECK(jint(o, "priority", &p) && p == 5);
		CHECK_EQ_INT(rfc3339_ms(jstr(o, "notBefore")), (now / 1000 + 3600) * 1000);
	}
	json_object_put(o);
	conflict(&f, cid, "X-Priority: 6", dl, nb);
	conflict(&f, cid, NULL, dl, nb);			/* X-Priority missing */
	conflict(&f, cid, "X-Priority: 5", NULL, nb);		/* X-Deadline missing */
	conflict(&f, cid, "X-Priority: 5", dl, NULL);		/* X-Not-Before missing */
	conflict(&f, cid, "X-Priority: 5", dl, "X-Delay-Seconds: 3600");
	conflict(&f, cid, NULL, NULL, NULL);

	/* without headers first: any header later is another request, X-Priority 0 too */
	fx_cid(cid2, sizeof cid2, "resub-plain");
	CHECK(submit_ok(&f, cid2, "{\"same\":1}", NULL, NULL, NULL, &s));
	CHECK(submit_ok(&f, cid2, "{\"same\":1}", NULL, NULL, NULL, &s2));
	conflict(&f, cid2, "X-Priority: 0", NULL, NULL);
	conflict(&f, cid2, "X-Priority: 1", NULL, NULL);
	conflict(&f, cid2, "X-Delay-Seconds: 0", NULL, NULL);

	/* a delayed submit repeated later (the database clock a second on) with the same
	 * X-Delay-Seconds: identical, its notBefore the first one's */
	fx_cid(cid3, sizeof cid3, "resub-delay");
	CHECK(submit_ok(&f, cid3, "{\"same\":1}", "X-Delay-Seconds: 600", NULL, NULL, &s));
	o = poll_json(&f, &s);
	nb1 = rfc3339_ms(jstr(o, "notBefore"));
	json_object_put(o);
	first = db_now();
	for (i = 0; i < 100 && db_now() < first + 1100; i++)	/* at most 5 s */
		sleep_ms(50);
	CHECK(db_now() >= first + 1100);
	CHECK(submit_ok(&f, cid3, "{\"same\":1}", "X-Delay-Seconds: 600", NULL, NULL, &s2));
	o = poll_json(&f, &s2);
	CHECK_EQ_INT(rfc3339_ms(jstr(o, "notBefore")), nb1);
	json_object_put(o);
	conflict(&f, cid3, "X-Delay-Seconds: 601", NULL, NULL);
	conflict(&f, cid3, NULL, NULL, NULL);
	fx_free(&f);
}

/* ---- not-before against the database clock ------------------------------------------- */

static void
test_not_before(void)
{
	struct fx f;
	struct sub a, b, c;
	char h[128], t[40], cids[4][CID_MAX];
	int64_t nb, before, after, first_late = -1, first_before = -1;
	int i, n = 0, early = 0, got = 0;

	fx_setup(&f, "sched-nb");
	/* in the past: due at once, but behind the work submitted before it */
	CHECK(submit_ok(&f, NULL, "{\"i\":\"older\"}", NULL, NULL, NULL, &a));
	fmt_ms(t, sizeof t, db_now() - 3600 * 1000);
	snprintf(h, sizeof h, "X-Not-Before: %s", t);
	CHECK(submit_ok(&f, NULL, "{\"i\":\"past\"}", h, NULL, NULL, &b));
	{
		struct json_object *o = poll_json(&f, &b);	/* notBefore: its submit */

		CHECK_EQ_STR(jstr(o, "notBefore"), b.created);
		json_object_put(o);
	}
	CHECK_EQ_INT(claim_cids(&f, 1, cids), 1);
	if (strcmp(cids[0], a.cid) != 0)
		fprintf(stderr, "  a past X-Not-Before jumped the queue: %s claimed before "
		    "%s, submitted earlier\n", cids[0], a.cid);
	CHECK_EQ_STR(cids[0], a.cid);
	CHECK_EQ_INT(claim_cids(&f, 1, cids), 1);
	CHECK_EQ_STR(cids[0], b.cid);

	/* 2 s ahead by the database clock */
	nb = db_now() + 2000;
	fmt_ms(t, sizeof t, nb);
	snprintf(h, sizeof h, "X-Not-Before: %s", t);
	CHECK(submit_ok(&f, NULL, "{\"i\":\"future\"}", h, NULL, NULL, &c));
	for (i = 0; i < 200 && !got; i++) {		/* 50 ms apart: at most ~10 s */
		before = db_now();
		if (first_before < 0)
			first_before = before;
		n = claim_cids(&f, 10, cids);
		after = db_now();
		if (n > 0) {
			got = 1;
			CHECK_EQ_INT(n, 1);
			CHECK_EQ_STR(cids[0], c.cid);
			/* never handed out before its time */
			CHECK(after >= nb);
			if (after < nb)
				fprintf(stderr, "  claimed by %lld, not before %lld\n",
				    (long long)after, (long long)nb);
			printf("not-before: claimed %lld..%lld ms after its time\n",
			    (long long)(before - nb), (long long)(after - nb));
			break;
		}
		early += after < nb;
		/* a claim sent 50 ms after the time must have had it */
		if (before >= nb + 50 && first_late < 0)
			first_late = before - nb;
		sleep_ms(50);
	}
	CHECK(got);
	/* claims before the time ran and found nothing (unless the first came too late) */
	CHECK(early > 0 || first_before >= nb);
	CHECK_EQ_INT(first_late, -1);
	if (first_late >= 0)
		fprintf(stderr, "  a claim %lld ms after the not-before found nothing\n",
		    (long long)first_late);
	fx_free(&f);
}

/* ---- priority order under racing claimers ------------------------------------------- */

static struct fx FO;
static pthread_barrier_t bar;
static char got_cid[RACERS][CID_MAX];
static int got_n[RACERS];

static void *
racer(void *arg)
{
	int k = (int)(intptr_t)arg;
	char cids[1][CID_MAX];

	pthread_barrier_wait(&bar);
	got_n[k] = claim_cids(&FO, 1, cids);
	snprintf(got_cid[k], CID_MAX, "%s", got_n[k] == 1 ? cids[0] : "");
	return NULL;
}

/* Priority of submit I: odd 5, even 0 (every third of them sent as X-Priority: 0),
 * the last 9. */
static int
prio_of(int i)
{
	return i == NORDER - 1 ? 9 : i % 2 == 1 ? 5 : 0;
}

static void
test_order(void)
{
	struct sub s[NORDER];
	char h[64], cid[CID_MAX];
	int expect[NORDER], i, k, n = 0, p, round;
	pthread_t th[RACERS];

	fx_setup(&FO, "sched-order");
	for (i = 0; i < NORDER; i++) {
		snprintf(h, sizeof h, "X-Priority: %d", prio_of(i));
		snprintf(cid, sizeof cid, "order-%02d", i);
		CHECK(submit_ok(&FO, cid, "{}", prio_of(i) == 0 && i % 3 != 0 ? NULL : h,
		    NULL, NULL, &s[i]));
	}
	/* expected: priority DESC, then submit order (oldest first) */
	for (p = 9; p >= 0; p--)
		for (i = 0; i < NORDER; i++)
			if (prio_of(i) == p)
				expect[n++] = i;
	CHECK_EQ_INT(n, NORDER);
	CHECK_EQ_INT(expect[0], NORDER - 1);	/* the priority 9 submitted last */
	for (round = 0; round < ROUNDS; round++) {
		int seen[NORDER] = { 0 }, ok = 1;

		pthread_barrier_init(&bar, NULL, RACERS);
		for (k = 0; k < RACERS; k++)
			pthread_create(&th[k], NULL, racer, (void *)(intptr_t)k);
		for (k = 0; k < RACERS; k++)
			pthread_join(th[k], NULL);
		pthread_barrier_destroy(&bar);
		for (k = 0; k < RACERS; k++) {
			CHECK_EQ_INT(got_n[k], 1);
			for (i = 0; i < NORDER; i++)
				if (strcmp(got_cid[k], s[i].cid) == 0)
					seen[i]++;
		}
		/* this round handed out exactly the next 8 of the order, each once */
		for (i = round * RACERS; i < (round + 1) * RACERS; i++)
			ok &= seen[expect[i]] == 1;
		for (i = 0; i < NORDER; i++)
			ok &= seen[i] <= 1;
		if (!ok) {
			fprintf(stderr, "  round %d claimed:", round);
			for (k = 0; k < RACERS; k++)
				fprintf(stderr, " %s", got_cid[k]);
			fprintf(stderr, "\n  expected:");
			for (i = round * RACERS; i < (round + 1) * RACERS; i++)
				fprintf(stderr, " %s", s[expect[i]].cid);
			fprintf(stderr, "\n");
		}
		CHECK(ok);
	}
	CHECK_EQ_INT(claim_cids(&FO, 100, NULL), 0);
	fx_free(&FO);
}

/* ---- deadline expiry ---------------------------------------------------------------------- */

static int
expire_once(void)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "'%s' --config '%s'", test_env("ASYNCEXEC_EXPIRE"),
	    test_env("ASYNCEXEC_TEST_CONFIG"));
	return ut_run(cmd, NULL, 0);
}

static void
test_deadline(void)
{
	struct fx f;
	struct sub s;
	char h[128], t[40];
	int64_t dl;
	int i;

	fx_setup(&f, "sched-deadline");
	dl = db_now() + 2000;
	fmt_ms(t, sizeof t, dl);
	snprintf(h, sizeof h, "X-Deadline: %s", t);
	/* due at once, but claimed by nobody before the deadline */
	CHECK(submit_ok(&f, NULL, "{}", h, NULL, NULL, &s));
	CHECK_EQ_INT(expire_once(), 0);
	if (db_now() < dl)
		CHECK_EQ_STR(fx_status(&f, &s), "waiting_callback");
	for (i = 0; i < 200 && db_now() <= dl; i++)	/* at most ~10 s */
		sleep_ms(50);
	CHECK(db_now() > dl);
	/* past its deadline: not claimable, and expired by one expiry run */
	CHECK_EQ_INT(claim_cids(&f, 10, NULL), 0);
	CHECK_EQ_INT(expire_once(), 0);
	CHECK_EQ_STR(fx_status(&f, &s), "expired");
	fx_free(&f);
}

/* ---- 20,000 due-later executions ahead of a due one --------------------------------- */

static int
cmp64(const void *a, const void *b)
{
	return *(const int64_t *)a < *(const int64_t *)b ? -1 :
	    *(const int64_t *)a > *(const int64_t *)b;
}

static int64_t
median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp64);
	return v[n / 2];
}

/* The time of one claim of max 1 on F in us; its count into *n. */
static int64_t
timed_claim(const struct fx *f, int *n)
{
	int64_t t0 = mono_us();

	*n = claim_cids(f, 1, NULL);
	return mono_us() - t0;
}

static void
test_skip(void)
{
	struct fx empty, full;
	struct sub tpl, s;
	char q[4096], cid[1][CID_MAX] = { "" };
	int64_t te[SAMPLES], tf[SAMPLES], ne[SAMPLES], nf[SAMPLES], t0, me, mf, mne, mnf;
	int i, n, ok;

	fx_setup(&empty, "sched-skip-empty");
	fx_setup(&full, "sched-skip-full");
	/* one delayed submit (a day) and NSKIP - 1 copies of it in one INSERT ... SELECT */
	CHECK(submit_ok(&full, "tpl", "{}", "X-Delay-Seconds: 86400", NULL, NULL, &tpl));
	t0 = mono_us();
	snprintf(q, sizeof q,
	    "INSERT INTO s2r_async_execution (correlation_id, environment, service_key, "
	    "operation_key, status, request_payload, request_sha256, initiator_tenant_id, "
	    "initiator_key_hash, poll_token_hash, created_at, updated_at, expires_at, "
	    "initiator_lineage, priority, not_before, due_at, sched_hash, "
	    "initiator_lineage_id) "
	    "SELECT CONCAT('later-', d.n), e.environment, e.service_key, e.operation_key, "
	    "e.status, e.request_payload, e.request_sha256, e.initiator_tenant_id, "
	    "e.initiator_key_hash, e.poll_token_hash, e.created_at, e.updated_at, "
	    "e.expires_at, e.initiator_lineage, e.priority, e.not_before, e.due_at, "
	    "e.sched_hash, e.initiator_lineage_id FROM s2r_async_execution e JOIN "
	    "(SELECT a.i + 10 * b.i + 100 * c.i + 1000 * d.i + 10000 * x.i AS n FROM "
	    "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
	    "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL "
	    "SELECT 8 UNION ALL SELECT 9) a, "
	    "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
	    "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL "
	    "SELECT 8 UNION ALL SELECT 9) b, "
	    "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
	    "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL "
	    "SELECT 8 UNION ALL SELECT 9) c, "
	    "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
	    "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL "
	    "SELECT 8 UNION ALL SELECT 9) d, "
	    "(SELECT 0 i UNION ALL SELECT 1) x) d ON d.n BETWEEN 1 AND %d "
	    "WHERE e.initiator_tenant_id = '%s' AND e.correlation_id = 'tpl'",
	    NSKIP - 1, full.tenant);
	sidedb_exec(db, q);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "initiator_tenant_id = '%s' AND status = 'waiting_callback' AND due_at > NOW(3)",
	    full.tenant);
	CHECK_EQ_INT(db_num(q), NSKIP);
	printf("skip: %d due-later rows in %lld ms\n", NSKIP, (long long)(mono_us() - t0) / 1000);
	/* warm both routes' paths */
	for (i = 0; i < 3; i++) {
		timed_claim(&empty, &n);
		timed_claim(&full, &n);
	}
	/* a due one on each route, claimed: interleaved samples */
	for (i = 0, ok = 1; i < SAMPLES; i++) {
		ok &= submit_ok(&empty, NULL, "{}", NULL, NULL, NULL, &s);
		ok &= submit_ok(&full, NULL, "{}", NULL, NULL, NULL, &s);
		te[i] = timed_claim(&empty, &n);
		ok &= n == 1;
		tf[i] = timed_claim(&full, &n);
		ok &= n == 1;
		/* nothing due: the same on both */
		ne[i] = timed_claim(&empty, &n);
		ok &= n == 0;
		nf[i] = timed_claim(&full, &n);
		ok &= n == 0;
	}
	CHECK(ok);
	me = median(te, SAMPLES);
	mf = median(tf, SAMPLES);
	mne = median(ne, SAMPLES);
	mnf = median(nf, SAMPLES);
	printf("skip: claim of the due one, median of %d: %lld us without, %lld us with "
	    "%d due-later ahead (%.2fx)\n", SAMPLES, (long long)me, (long long)mf, NSKIP,
	    me > 0 ? (double)mf / (double)me : 0.0);
	printf("skip: claim finding nothing due, median of %d: %lld us without, %lld us "
	    "with (%.2fx)\n", SAMPLES, (long long)mne, (long long)mnf,
	    mne > 0 ? (double)mnf / (double)mne : 0.0);
	CHECK(mf <= 2 * me + SLACK_US);
	CHECK(mnf <= 2 * mne + SLACK_US);
	/* the copies at priority 9, ahead in claim order of a due one of priority 0: the
	 * claim's read of ids ends the range of priority 9 at now and finds it */
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET priority = 9 WHERE "
	    "initiator_tenant_id = '%s' AND due_at > NOW(3)", full.tenant);
	sidedb_exec(db, q);
	CHECK(submit_ok(&full, "behind", "{}", NULL, NULL, NULL, &s));
	t0 = mono_us();
	CHECK_EQ_INT(claim_cids(&full, 1, cid), 1);
	CHECK_EQ_STR(cid[0], "behind");
	printf("skip: a due one behind %d due-later ones of priority 9: claimed in %lld us\n",
	    NSKIP, (long long)(mono_us() - t0));
	snprintf(q, sizeof q, "DELETE FROM s2r_async_execution WHERE initiator_tenant_id = "
	    "'%s' AND environment = '%s' AND service_key = '%s' AND operation_key = '%s'",
	    full.tenant, full.env, full.svc, full.op);
	sidedb_exec(db, q);
	fx_free(&empty);
	fx_free(&full);
}

int
main(void)
{
	http_test_init();
	test_env("ASYNCEXEC_EXPIRE");
	sidedb_init(&cfg);
	db = sidedb_open(&cfg);
	test_bounds();
	test_resubmit();
	test_not_before();
	test_order();
	test_deadline();
	test_skip();
	mysql_close(db);
	mysql_library_end();
	return check_done("http_schedule");
}
