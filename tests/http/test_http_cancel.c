/*
 * test_http_cancel.c - POST /v1/executions/{env}/{svc}/{op}/{cid}/cancel through nginx.
 */
#include "check.h"
#include "fixture.h"

#include <string.h>

static struct fx F;

/* Cancels S expecting STATUS and a status body with the given status and flag. */
static void
check_cancel(const struct sub *s, int status, const char *exec_status, int requested)
{
	struct http_resp r;
	struct json_object *o;
	int b = -1;

	fx_cancel(&F, F.ckey, s->cid, s->token, &r);
	CHECK(expect_json(&r, status));
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "correlationId"), s->cid);
	CHECK_EQ_STR(jstr(o, "status"), exec_status);
	CHECK(jbool(o, "cancelRequested", &b) && b == requested);
	json_object_put(o);
	http_resp_free(&r);
}

static int
claim_count(void)
{
	struct http_resp r;
	struct json_object *o;
	long n;

	fx_claim(&F, F.bkey, "{\"max\":100}", &r);
	o = json_body(&r);
	n = jlen(o, "executions");
	json_object_put(o);
	http_resp_free(&r);
	return (int)n;
}

static void
test_unclaimed(void)
{
	struct sub s;

	CHECK(fx_submit_ok(&F, NULL, "{\"c\":1}", &s));
	check_cancel(&s, 200, "cancelled", 0);
	CHECK_EQ_STR(fx_status(&F, &s), "cancelled");
	/* A cancelled execution is never handed out. */
	CHECK_EQ_INT(claim_count(), 0);
}

static void
check_heartbeat_sees_cancel(const struct claim *c)
{
	struct http_resp r;
	struct json_object *o;
	int b = -1;

	fx_callback(F.bkey, c->id, "heartbeat", c->token, "{\"leaseSeconds\":60}", &r);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK(jbool(o, "cancelRequested", &b) && b == 1);
	CHECK(is_rfc3339_ms(jstr(o, "leaseExpiresAt")));
	json_object_put(o);
	http_resp_free(&r);
}

static void
test_claimed(void)
{
	struct sub s;
	struct claim c;
	struct http_resp r;
	struct json_object *o;

	CHECK(fx_submit_claim(&F, "{\"c\":2}", &s, &c));
	check_cancel(&s, 202, "waiting_callback", 1);
	check_cancel(&s, 202, "waiting_callback", 1);
	CHECK_EQ_STR(fx_status(&F, &s), "waiting_callback");
	check_heartbeat_sees_cancel(&c);
	fx_callback(F.bkey, c.id, "cancelled", c.token, "{}", &r);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "cancelled");
	json_object_put(o);
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "cancelled");
}

/*
 * cancelled with the current claim's token but no cancel request: 409
 * that says so (not that the token is stale); the claim stays valid.
 */
static void
test_no_cancel_request(void)
{
	struct sub s;
	struct claim c;
	struct http_resp r;
	struct json_object *o;
	const char *d;

	CHECK(fx_submit_claim(&F, "{\"c\":3}", &s, &c));
	fx_callback(F.bkey, c.id, "cancelled", c.token, "{}", &r);
	CHECK(expect_conflict(&r, "waiting_callback"));
	o = json_body(&r);
	d = jstr(o, "detail");
	CHECK(d != NULL && strstr(d, "no cancel was requested") != NULL);
	json_object_put(o);
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "waiting_callback");
	fx_callback(F.bkey, c.id, "complete", c.token, "{\"result\":1}", &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
}

static void
check_cancel_conflict(const struct sub *s, const char *current)
{
	struct http_resp r;

	fx_cancel(&F, F.ckey, s->cid, s->token, &r);
	CHECK(expect_conflict(&r, current));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, s), current);
}

static void
test_terminal(void)
{
	struct sub s;
	struct claim c;
	struct http_resp r;

	CHECK(fx_submit_claim(&F, "{\"c\":3}", &s, &c));
	CHECK_EQ_INT(fx_complete(&F, &c, "{\"done\":true}"), 200);
	check_cancel_conflict(&s, "completed");

	CHECK(fx_submit_claim(&F, "{\"c\":4}", &s, &c));
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "fail", c.token,
	    "{\"error\":{\"message\":\"no\"}}", &r), 200);
	http_resp_free(&r);
	check_cancel_conflict(&s, "failed");

	CHECK(fx_submit_ok(&F, NULL, "{\"c\":5}", &s));
	check_cancel(&s, 200, "cancelled", 0);
	check_cancel_conflict(&s, "cancelled");
}

/* Same 404 as poll, for every way of not being the initiator; nothing is cancelled. */
static void
test_same_404(void)
{
	struct http_resp r;
	struct sub s;

	CHECK(fx_same_404(&F, FX_CANCEL, "{\"c\":6}", &s));
	fx_cancel(&F, F.bkey, s.cid, s.token, &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "waiting_callback");
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "cancel");
	/* Order matters: each claim must find no older unclaimed execution. */
	test_unclaimed();
	test_claimed();
	test_no_cancel_request();
	test_terminal();
	test_same_404();
	fx_free(&F);
	return check_done("http_cancel");
}
