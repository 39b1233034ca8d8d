/*
 * test_http_retry.c - retryable failures through nginx: fail with retryAfterSeconds
 * returns the execution to waiting while attempts are left (the claim ends: its token
 * stops working; lastError; claim waits for notBefore), and fails it for good at
 * attempt = max_attempts. Waits are bounded polls, never a fixed sleep.
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fx F;
static long max_attempts;

/* fail of C with BODY; returns the status (caller frees R). */
static int
fail(const struct claim *c, const char *body, struct http_resp *r)
{
	return fx_callback(F.bkey, c->id, "fail", c->token, body, r);
}

/* The parsed poll body of S, or NULL. */
static struct json_object *
poll_obj(const struct sub *s, char **raw)
{
	struct http_resp r;
	struct json_object *o = NULL;

	if (fx_poll(&F, F.ckey, s->cid, s->token, NULL, &r) == 200)
		o = json_body(&r);
	if (raw != NULL) {
		*raw = r.body;
		r.body = NULL;
	}
	http_resp_free(&r);
	return o;
}

/*
 * 1 when the 200 body A of a retryable fail and the poll body B right
 * after agree on every member the retry writes or the status body shows
 * (the answer carries the same body as a poll), notBefore set; else 0,
 * naming the member that differs.
 */
static int
same_as_poll(struct json_object *a, struct json_object *b)
{
	static const char *const m[] = {
		"status", "notBefore", "updatedAt", "attempt", "lastError",
		"completedAt", "expiresAt", "createdAt", "cancelRequested",
		"priority", "progress",
	};
	struct json_object *x, *y;
	size_t i;
	int ok = 1;

	if (a == NULL || b == NULL)
		return 0;
	for (i = 0; i < sizeof m / sizeof *m; i++) {
		x = jget(a, m[i]);
		y = jget(b, m[i]);
		if (!json_object_equal(x, y)) {
			fprintf(stderr, "  %s: fail answered %s, poll %s\n", m[i],
			    json_object_to_json_string(x), json_object_to_json_string(y));
			ok = 0;
		}
	}
	if (jstr(a, "notBefore") == NULL) {
		fprintf(stderr, "  notBefore of the fail's answer is not a time\n");
		ok = 0;
	}
	return ok;
}

/* Claims from F's route with a bound: 1 when one execution came back (into C). */
static int
claim_some(struct claim *c)
{
	struct http_resp r;
	struct json_object *o = NULL;
	int ok;

	ok = fx_claim(&F, F.bkey, "{\"max\":1}", &r) == 200 && (o = json_body(&r)) != NULL &&
	    jlen(o, "executions") == 1 && fx_claim_item(o, 0, c);
	json_object_put(o);
	http_resp_free(&r);
	return ok;
}

static void
test_validation(void)
{
	static const char *const bad[] = {
		"{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":-1}",
		"{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":86401}",
		"{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":\"5\"}",
		"{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":1.5}",
	};
	struct http_resp r;
	struct sub s;
	struct claim c;
	size_t i;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	for (i = 0; i < sizeof bad / sizeof *bad; i++) {
		fail(&c, bad[i], &r);
		CHECK(expect_problem(&r, 400, "invalid_request"));
		http_resp_free(&r);
	}
	/* nothing changed: the claim is still current */
	CHECK_EQ_INT(fx_complete(&F, &c, "1"), 200);
}

/*
 * attempt 1 .. max-1: back to waiting (200, lastError, the token dead); attempt = max:
 * failed with that error. retryAfterSeconds 0: claimable at once.
 */
static void
test_boundaries(void)
{
	struct http_resp r;
	struct json_object *o, *p;
	struct sub s;
	struct claim c, old;
	char body[256], err[128], *raw = NULL;
	int64_t v;
	long k;

	CHECK(fx_submit_claim(&F, "{\"job\":1}", &s, &c));
	for (k = 1; k < max_attempts; k++) {
		snprintf(err, sizeof err, "{\"message\":\"try %ld\", \"code\":  7}", k);
		snprintf(body, sizeof body, "{\"error\":%s,\"retryAfterSeconds\":0}", err);
		fail(&c, body, &r);
		CHECK(expect_json(&r, 200));
		o = json_body(&r);
		CHECK_EQ_STR(jstr(o, "status"), "waiting_callback");
		CHECK(jint(o, "attempt", &v) && v == k);
		CHECK(jnull(o, "completedAt"));
		CHECK(jget(o, "error") == NULL);
		snprintf(body, sizeof body, "\"lastError\":%s", err);
		CHECK(body_contains(&r, body));
		http_resp_free(&r);
		/* poll shows the same, notBefore (now + 0) included */
		p = poll_obj(&s, &raw);
		CHECK(p != NULL && jint(p, "attempt", &v) && v == k);
		CHECK_EQ_STR(jstr(p, "status"), "waiting_callback");
		CHECK(raw != NULL && strstr(raw, body) != NULL);
		CHECK(same_as_poll(o, p));
		json_object_put(o);
		json_object_put(p);
		free(raw);
		/* the claim ended: its token stops working, the repeat too */
		fx_callback(F.bkey, c.id, "heartbeat", c.token, "{}", &r);
		CHECK(expect_conflict(&r, "waiting_callback"));
		http_resp_free(&r);
		fail(&c, "{\"error\":{\"message\":\"again\"},\"retryAfterSeconds\":0}", &r);
		CHECK(expect_conflict(&r, "waiting_callback"));
		http_resp_free(&r);
		/* retryAfterSeconds 0: the next claim gets it at once */
		old = c;
		CHECK(claim_some(&c));
		CHECK_EQ_INT(c.id, old.id);
		CHECK(strcmp(c.token, old.token) != 0);
		CHECK(fx_complete(&F, &old, "1") == 409);
	}
	/* attempt = max: the retryable failure is final */
	o = poll_obj(&s, NULL);
	CHECK(o != NULL && jint(o, "attempt", &v) && v == max_attempts);
	json_object_put(o);
	fail(&c, "{\"error\":{\"message\":\"last\",\"n\":[1]},\"retryAfterSeconds\":0}", &r);
	CHECK(expect_json(&r, 200));
	CHECK(body_contains(&r, "\"status\":\"failed\""));
	CHECK(body_contains(&r, "\"error\":{\"message\":\"last\",\"n\":[1]}"));
	CHECK(!body_contains(&r, "lastError"));
	http_resp_free(&r);
	o = poll_obj(&s, &raw);
	CHECK_EQ_STR(jstr(o, "status"), "failed");
	CHECK(o != NULL && jint(o, "attempt", &v) && v == max_attempts);
	CHECK(raw != NULL && strstr(raw, "lastError") == NULL);
	CHECK(raw != NULL && strstr(raw, "\"error\":{\"message\":\"last\",\"n\":[1]}") != NULL);
	json_object_put(o);
	free(raw);
	CHECK(!claim_some(&old));
}

/* retryAfterSeconds 2: no claim hands it out before notBefore, one does after. */
static void
test_not_before(void)
{
	struct http_resp r;
	struct sub s;
	struct claim c, d;
	struct timespec ts = { 0, 50 * 1000000L };
	struct json_object *o, *p;
	int64_t t_fail, t_claim = 0, deadline, nb;
	int early = 0, got = 0;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	t_fail = ut_wall_ms();
	fail(&c, "{\"error\":{\"message\":\"busy\"},\"retryAfterSeconds\":2}", &r);
	CHECK(expect_json(&r, 200));
	/* the answer's notBefore (now + 2 s) is the one a poll shows */
	o = json_body(&r);
	p = poll_obj(&s, NULL);
	CHECK(same_as_poll(o, p));
	nb = o != NULL && jstr(o, "notBefore") != NULL ?
	    rfc3339_ms(jstr(o, "notBefore")) : -1;
	CHECK(nb >= t_fail + 2000);
	json_object_put(o);
	json_object_put(p);
	http_resp_free(&r);
	deadline = t_fail + 10000;
	while (ut_wall_ms() < deadline) {
		if (claim_some(&d)) {
			t_claim = ut_wall_ms();
			got = 1;
			break;
		}
		if (ut_wall_ms() < t_fail + 1900)
			early++;	/* a claim that came back empty before the time */
		nanosleep(&ts, NULL);
	}
	CHECK(got);
	CHECK_EQ_INT(d.id, c.id);
	/* the server set notBefore after t_fail: 2 s later at the earliest */
	CHECK(t_claim >= t_fail + 2000);
	CHECK(early > 0);
	if (!got || t_claim < t_fail + 2000)
		fprintf(stderr, "  claimed %lld ms after the fail\n",
		    (long long)(t_claim - t_fail));
	CHECK_EQ_INT(fx_complete(&F, &d, "{\"ok\":1}"), 200);
	CHECK_EQ_STR(fx_status(&F, &s), "completed");
}

/* A cancel request before a retryable failure: no retry, failed for good. */
static void
test_cancel_requested(void)
{
	struct http_resp r;
	struct sub s;
	struct claim c;

	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	fx_cancel(&F, F.ckey, s.cid, s.token, &r);
	CHECK(expect_json(&r, 202));
	http_resp_free(&r);
	fail(&c, "{\"error\":{\"message\":\"m\"},\"retryAfterSeconds\":0}", &r);
	CHECK(expect_json(&r, 200));
	CHECK(body_contains(&r, "\"status\":\"failed\""));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "failed");
}

int
main(void)
{
	http_test_init();
	max_attempts = config_long("max_attempts", 5);
	fx_setup(&F, "retry");
	test_validation();
	test_boundaries();
	test_not_before();
	test_cancel_requested();
	fx_free(&F);
	return check_done("http_retry");
}
