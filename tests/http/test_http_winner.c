/*
 * test_http_winner.c - the idempotent winner through nginx: the winning callback
 * repeated (same verb, same token, byte-identical body: a backend that lost the 200)
 * gets the same 200 again; any other late callback gets 409 as before. The
 * winner's 200 is the row its UPDATE left, also when a consumer's cancel
 * request committed between the callback's read of the row and its UPDATE (a
 * side connection holds the cancel request's row lock until the UPDATE waits).
 */
#include "check.h"
#include "fixture.h"
#include "sidedb.h"
#include "util/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FIND_MS		10000	/* complete's UPDATE shows as waiting */
#define ANSWER_MS	30000	/* and is answered once the lock is gone */

static struct fx F;

/* Callback VERB of C with BODY; returns the status (caller frees R). */
static int
cb(const struct claim *c, const char *verb, const char *body, struct http_resp *r)
{
	return fx_callback(F.bkey, c->id, verb, c->token, body, r);
}

/* Whether A and B are 200s with byte-identical bodies. */
static int
same_200(const struct http_resp *a, const struct http_resp *b)
{
	int ok = a->status == 200 && b->status == 200 && a->body != NULL &&
	    b->body != NULL && strcmp(a->body, b->body) == 0;

	if (!ok)
		fprintf(stderr, "  first %d %.300s\n  again %d %.300s\n", a->status,
		    a->body ? a->body : "", b->status, b->body ? b->body : "");
	return ok;
}

static void
test_complete(void)
{
	static const char *const body = "{\"result\": {\"n\":1, \"x\":[1.50]} }";
	struct http_resp first, again, r;
	struct sub s;
	struct claim c, other;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	CHECK_EQ_INT(cb(&c, "heartbeat", "{\"progress\":{\"p\":50}}", &r), 200);
	http_resp_free(&r);
	cb(&c, "complete", body, &first);
	CHECK(expect_json(&first, 200));
	cb(&c, "complete", body, &again);
	CHECK(same_200(&first, &again));
	http_resp_free(&again);
	cb(&c, "complete", body, &again);	/* and again */
	CHECK(same_200(&first, &again));
	http_resp_free(&again);
	/* a different body (one space more), another verb, a heartbeat: 409 */
	cb(&c, "complete", "{\"result\": {\"n\":1, \"x\":[1.50]}  }", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	cb(&c, "complete", "{\"result\":2}", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	cb(&c, "fail", "{\"error\":{\"message\":\"late\"}}", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	cb(&c, "heartbeat", "{}", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	/* the same body with another token: 409 */
	other = c;
	snprintf(other.token, sizeof other.token, "%s",
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
	cb(&other, "complete", body, &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	/* poll agrees with what the winner got */
	CHECK_EQ_STR(fx_status(&F, &s), "completed");
	http_resp_free(&first);
}

static void
test_fail_and_cancelled(void)
{
	static const char *const fbody = "{\"error\":{\"message\":\"no\",\"k\":1}}";
	struct http_resp first, again, r;
	struct sub s;
	struct claim c;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	cb(&c, "fail", fbody, &first);
	CHECK(expect_json(&first, 200));
	cb(&c, "fail", fbody, &again);
	CHECK(same_200(&first, &again));
	http_resp_free(&again);
	cb(&c, "complete", "{\"result\":1}", &r);
	CHECK(expect_conflict(&r, "failed"));
	http_resp_free(&r);
	http_resp_free(&first);
	/* cancelled, repeated */
	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	fx_cancel(&F, F.ckey, s.cid, s.token, &r);
	CHECK(expect_json(&r, 202));
	http_resp_free(&r);
	cb(&c, "cancelled", "{}", &first);
	CHECK(expect_json(&first, 200));
	cb(&c, "cancelled", "{}", &again);
	CHECK(same_200(&first, &again));
	http_resp_free(&again);
	cb(&c, "cancelled", "{ }", &r);
	CHECK(expect_conflict(&r, "cancelled"));
	http_resp_free(&r);
	http_resp_free(&first);
}

/* A stale claim's complete (the execution was re-claimed) stays 409. */
static void
test_stale_claim(void)
{
	struct http_resp r;
	struct sub s;
	struct claim c, d;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	cb(&c, "fail", "{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":0}", &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	CHECK(fx_claim_one(&F, &d));
	CHECK_EQ_INT(fx_complete(&F, &d, "7"), 200);
	cb(&c, "complete", "{\"result\":7}", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	/* the winner (d) repeating: 200 */
	cb(&d, "complete", "{\"result\":7}", &r);
	CHECK(expect_json(&r, 200));
	CHECK(body_contains(&r, "\"attempt\":2"));
	http_resp_free(&r);
}

/* A complete sent from a thread of its own. */
struct call {
	pthread_t	 th;
	struct claim	 c;
	const char	*body;
	struct http_resp r;
	int		 done;
};

static void *
call_run(void *arg)
{
	struct call *k = arg;

	cb(&k->c, "complete", k->body, &k->r);
	__atomic_store_n(&k->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Whether k was answered. */
static int
call_done(struct call *k)
{
	return __atomic_load_n(&k->done, __ATOMIC_SEQ_CST);
}

/*
 * Whether an app connection other than m's runs complete's UPDATE, waited
 * for (bounded) while k is not answered: that UPDATE waits for m's lock.
 */
static int
update_waits(MYSQL *m, struct call *k)
{
	int64_t deadline = ut_now_ms() + FIND_MS;

	do {
		if (sidedb_num(m, "SELECT COUNT(*) FROM "
		    "information_schema.processlist WHERE id <> "
		    "CONNECTION_ID() AND info LIKE 'UPDATE "
		    "s2r_async_execution FORCE INDEX (PRIMARY) SET "
		    "status = ''completed''%'") > 0)
			return 1;
		ut_pause_ms(10);
	} while (!call_done(k) && ut_now_ms() < deadline);
	fprintf(stderr, "  the complete's UPDATE was not seen waiting\n");
	return 0;
}

/* Waits (bounded) for k's answer; exits when none comes. */
static void
call_join(struct call *k)
{
	int64_t deadline = ut_now_ms() + ANSWER_MS;

	while (!call_done(k) && ut_now_ms() < deadline)
		ut_pause_ms(10);
	if (!call_done(k)) {
		fprintf(stderr, "FATAL: no answer in %d ms\n", ANSWER_MS);
		exit(1);
	}
	pthread_join(k->th, NULL);
}

/*
 * A token without facts (the correlation id is too long to seal):
 * complete reads the row, then runs its compare-and-set. A consumer's
 * cancel request (its UPDATE, held open on a side connection) lands
 * between the two: the UPDATE waits for its lock, and wins once it
 * commits. The 200 shows cancelRequested true, byte for byte what the
 * repeat and a poll show (it showed the row read before: false).
 */
static void
test_cancel_between(void)
{
	static const char *const body = "{\"result\":\"raced\"}";
	struct config cfg;
	struct http_resp again;
	struct call k;
	struct sub s;
	char cid[CID_MAX], q[256], *poll;
	MYSQL *m;

	memset(&k, 0, sizeof k);
	k.body = body;
	fx_cid(cid, sizeof cid, "winner-long-correlation-id");
	CHECK(fx_submit_ok(&F, cid, "{}", &s));
	CHECK(fx_claim_one(&F, &k.c) && strcmp(k.c.cid, cid) == 0);
	CHECK_EQ_INT((long)strlen(k.c.token), 43);
	sidedb_init(&cfg);
	m = sidedb_open(&cfg);
	sidedb_exec(m, "START TRANSACTION");
	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET updated_at = "
	    "NOW(3), cancel_requested = 1 WHERE id = %lld AND status = "
	    "'waiting_callback'", (long long)k.c.id);
	sidedb_exec(m, q);
	CHECK_EQ_INT((long)mysql_affected_rows(m), 1);
	pthread_create(&k.th, NULL, call_run, &k);
	CHECK(update_waits(m, &k));
	sidedb_exec(m, "COMMIT");
	call_join(&k);
	mysql_close(m);
	CHECK(expect_json(&k.r, 200));
	CHECK(body_contains(&k.r, "\"cancelRequested\":true"));
	cb(&k.c, "complete", body, &again);
	CHECK(same_200(&k.r, &again));
	poll = fx_poll_body(&F, &s);
	CHECK(poll != NULL && k.r.body != NULL && strcmp(poll, k.r.body) == 0);
	free(poll);
	http_resp_free(&again);
	http_resp_free(&k.r);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "winner");
	test_complete();
	test_fail_and_cancelled();
	test_stale_claim();
	test_cancel_between();
	fx_free(&F);
	return check_done("http_winner");
}
