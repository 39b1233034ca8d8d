/*
 * test_http_winner.c - the idempotent winner through nginx: the winning callback
 * repeated (same verb, same token, byte-identical body: a backend that lost the 200)
 * gets the same 200 again; any other late callback gets 409 as before.
 */
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>

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

int
main(void)
{
	http_test_init();
	fx_setup(&F, "winner");
	test_complete();
	test_fail_and_cancelled();
	test_stale_claim();
	fx_free(&F);
	return check_done("http_winner");
}
