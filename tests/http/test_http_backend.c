/*
 * test_http_backend.c - claim and callbacks (/v1/backend/..., /v1/callbacks/...) via nginx.
 */
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_EXEC 3

static struct fx F;     /* the route under test */
static struct fx G;     /* another route, with its own backend key */
static struct sub S[N_EXEC];
static struct claim C[N_EXEC];
static const char *const BODIES[N_EXEC] = {
	"{\"n\":0,\"big\":12345678901234567890}", "{\"n\":1}", "[\"n\",2]",
};

static void
check_claim_rejected(const char *body, int status, const char *code)
{
	struct http_resp r;

	fx_claim(&F, F.bkey, body, &r);
	if (!expect_problem(&r, status, code))
		fprintf(stderr, "  ... claim body %s\n", body);
	CHECK(expect_problem(&r, status, code));
	http_resp_free(&r);
}

static void
test_claim_validation(void)
{
	check_claim_rejected("{\"max\":0}", 400, "invalid_request");
	check_claim_rejected("{\"max\":101}", 400, "invalid_request");
	check_claim_rejected("{\"leaseSeconds\":4}", 400, "invalid_request");
	check_claim_rejected("{\"leaseSeconds\":3601}", 400, "invalid_request");
	check_claim_rejected("{\"max\":\"1\"}", 400, "invalid_request");
	check_claim_rejected("not json", 400, "invalid_json");
}

static void
test_revoked_backend_key(void)
{
	char *key = fx_backend_key(F.route);
	struct http_resp r;

	free(admin("backend-key revoke %s", key));
	fx_claim(&F, key, "{}", &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
	free(key);
}

static void
test_claim_auth(void)
{
	struct http_resp r;
	struct fx unknown = F;

	fx_claim(&F, F.ckey, "{}", &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
	fx_claim(&F, NULL, "{}", &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
	fx_claim(&F, G.bkey, "{}", &r);
	CHECK(expect_problem(&r, 404, "unknown_route"));
	http_resp_free(&r);
	snprintf(unknown.route, sizeof unknown.route, "%s/%s/not-registered", F.env, F.svc);
	fx_claim(&unknown, F.bkey, "{}", &r);
	CHECK(expect_problem(&r, 404, "unknown_route"));
	http_resp_free(&r);
}

/* leaseExpiresAt lies LEASE seconds after the request (T0..T1, whole seconds). */
static int
lease_ok(const char *at, time_t t0, time_t t1, int lease)
{
	int64_t ms = rfc3339_ms(at);

	if (ms >= ((int64_t)t0 + lease - 2) * 1000 && ms <= ((int64_t)t1 + lease + 2) * 1000)
		return 1;
	fprintf(stderr, "  leaseExpiresAt %s is not %d s after the request\n", at ? at : "",
	    lease);
	return 0;
}

static void
check_item(struct json_object *o, size_t i, int k, time_t t0, time_t t1, int lease)
{
	char p[64];
	int64_t v = 0;

#define MEMBER(name) (snprintf(p, sizeof p, "executions.%zu.%s", i, name), p)
	CHECK(jint(o, MEMBER("id"), &v) && v > 0);
	CHECK_EQ_STR(jstr(o, MEMBER("correlationId")), S[k].cid);
	CHECK_EQ_STR(jstr(o, MEMBER("tenantId")), F.tenant);
	CHECK_EQ_STR(jstr(o, MEMBER("environment")), F.env);
	CHECK_EQ_STR(jstr(o, MEMBER("service")), F.svc);
	CHECK_EQ_STR(jstr(o, MEMBER("operation")), F.op);
	CHECK(jget(o, MEMBER("request")) != NULL);
	CHECK(is_callback_token(jstr(o, MEMBER("callbackToken"))));
	CHECK(jint(o, MEMBER("attempt"), &v) && v == 1);
	CHECK(lease_ok(jstr(o, MEMBER("leaseExpiresAt")), t0, t1, lease));
	CHECK_EQ_STR(jstr(o, MEMBER("createdAt")), S[k].created);
#undef MEMBER
	CHECK(fx_claim_item(o, i, &C[k]));
}

/* Claims with BODY; expects executions FIRST..FIRST+N-1 in this order. */
static void
claim_expect(const char *body, int first, int n, int lease)
{
	struct http_resp r;
	struct json_object *o;
	time_t t0 = time(NULL), t1;
	int i;

	fx_claim(&F, F.bkey, body, &r);
	t1 = time(NULL);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK_EQ_INT(jlen(o, "executions"), n);
	for (i = 0; i < n && jlen(o, "executions") == n; i++) {
		check_item(o, (size_t)i, first + i, t0, t1, lease);
		CHECK(body_contains(&r, BODIES[first + i]));
	}
	json_object_put(o);
	http_resp_free(&r);
}

static void
test_claim_order(void)
{
	char cid[CID_MAX];
	int i;

	for (i = 0; i < N_EXEC; i++) {
		fx_cid(cid, sizeof cid, "order");
		CHECK(fx_submit_ok(&F, cid, BODIES[i], &S[i]));
	}
	claim_expect("{}", 0, 1, 60);
	claim_expect("{\"max\":100,\"leaseSeconds\":300}", 1, N_EXEC - 1, 300);
	claim_expect("{\"max\":100}", 0, 0, 60);
}

static void
test_heartbeat(void)
{
	struct http_resp r;
	struct json_object *o;
	time_t t0 = time(NULL), t1;
	int b = -1;

	fx_callback(F.bkey, C[0].id, "heartbeat", C[0].token, "{\"leaseSeconds\":600}", &r);
	t1 = time(NULL);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK(jbool(o, "cancelRequested", &b) && b == 0);
	CHECK(lease_ok(jstr(o, "leaseExpiresAt"), t0, t1, 600));
	json_object_put(o);
	http_resp_free(&r);
	fx_callback(F.bkey, C[0].id, "heartbeat", C[0].token, "{\"leaseSeconds\":4}", &r);
	CHECK(expect_problem(&r, 400, "invalid_request"));
	http_resp_free(&r);
	fx_callback(F.bkey, C[0].id, "heartbeat", C[0].token, "{\"leaseSeconds\":3601}", &r);
	CHECK(expect_problem(&r, 400, "invalid_request"));
	http_resp_free(&r);
	fx_callback(F.bkey, C[0].id, "heartbeat", C[1].token, "{\"leaseSeconds\":60}", &r);
	CHECK(expect_conflict(&r, "waiting_callback"));
	http_resp_free(&r);
}

/* A callback on C[0] that must be refused without changing anything. */
static void
check_refused(const char *key, const char *verb, const char *token, const char *body,
    int status, const char *code)
{
	struct http_resp r;

	fx_callback(key, C[0].id, verb, token, body, &r);
	if (strcmp(code, "conflict") == 0)
		CHECK(expect_conflict(&r, "waiting_callback"));
	else if (status == 401)
		CHECK(expect_unauthorized(&r));
	else
		CHECK(expect_problem(&r, status, code));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &S[0]), "waiting_callback");
}

static void
test_complete_refusals(void)
{
	const char *ok = "{\"result\":1}";
	const char *wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

	check_refused(F.bkey, "complete", wrong, ok, 409, "conflict");
	check_refused(F.bkey, "complete", C[1].token, ok, 409, "conflict");
	check_refused(F.bkey, "complete", NULL, ok, 409, "conflict");
	check_refused(G.bkey, "complete", C[0].token, ok, 404, "not_found");
	check_refused(F.ckey, "complete", C[0].token, ok, 401, "unauthorized");
	check_refused(F.bkey, "complete", C[0].token, "{\"value\":1}", 400, "invalid_request");
	check_refused(F.bkey, "complete", C[0].token, "{\"result\":", 400, "invalid_json");
	/* complete and cancelled only validate the body (no tree): still an object */
	check_refused(F.bkey, "complete", C[0].token, "[{\"result\":1}]", 400,
	    "invalid_request");
	check_refused(F.bkey, "complete", C[0].token, " \"result\" ", 400,
	    "invalid_request");
	check_refused(F.bkey, "complete", C[0].token, "", 400, "invalid_request");
	check_refused(F.bkey, "cancelled", C[0].token, "[]", 400, "invalid_request");
	check_refused(F.bkey, "cancelled", C[0].token, "{\"a\":", 400, "invalid_json");
	check_refused(F.bkey, "fail", C[0].token, "{\"error\":{\"code\":1}}", 400,
	    "invalid_request");
	check_refused(F.bkey, "fail", C[0].token, "{\"error\":{\"message\":5}}", 400,
	    "invalid_request");
}

static void
check_after_terminal(const char *verb, const char *body)
{
	struct http_resp r;

	fx_callback(F.bkey, C[0].id, verb, C[0].token, body, &r);
	if (!expect_conflict(&r, "completed"))
		fprintf(stderr, "  ... %s after complete\n", verb);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
}

static void
test_complete(void)
{
	struct http_resp r;
	struct json_object *o;

	fx_callback(F.bkey, C[0].id, "complete", C[0].token, "{\"result\":{\"ok\":[1]}}", &r);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "correlationId"), S[0].cid);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	CHECK(body_contains(&r, "{\"ok\":[1]}"));
	json_object_put(o);
	http_resp_free(&r);
	check_after_terminal("complete", "{\"result\":2}");
	check_after_terminal("fail", "{\"error\":{\"message\":\"late\"}}");
	check_after_terminal("cancelled", "{}");
	check_after_terminal("heartbeat", "{\"leaseSeconds\":60}");
	CHECK_EQ_STR(fx_status(&F, &S[0]), "completed");
}

static void
check_callback_path(const char *method, const char *path, int status, const char *code)
{
	struct http_resp r;

	api(method, path, F.bkey, "{\"result\":1}", &r, (const char *)NULL);
	if (!expect_problem(&r, status, code))
		fprintf(stderr, "  ... %s %s\n", method, path);
	CHECK(expect_problem(&r, status, code));
	http_resp_free(&r);
}

static void
test_unknown_id(void)
{
	char path[256];

	fx_callback_path(path, sizeof path, 999999999999LL, "complete");
	check_callback_path("POST", path, 404, "not_found");
	check_callback_path("POST", "/v1/callbacks/abc/complete", 404, "not_found");
	fx_callback_path(path, sizeof path, C[1].id, "explode");
	check_callback_path("POST", path, 404, "not_found");
	fx_callback_path(path, sizeof path, C[1].id, "complete");
	check_callback_path("GET", path, 405, "method_not_allowed");
}

/* "Any JSON" includes null: the result member is present. */
static void
test_null_result(void)
{
	struct sub s;
	struct claim c;
	struct http_resp r;
	struct json_object *o;

	CHECK(fx_submit_claim(&F, "{\"null\":1}", &s, &c));
	CHECK_EQ_INT(fx_complete(&F, &c, "null"), 200);
	fx_poll(&F, F.ckey, s.cid, s.token, NULL, &r);
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	CHECK(jnull(o, "result"));
	json_object_put(o);
	http_resp_free(&r);
}

static void
test_fail(void)
{
	struct http_resp r;
	struct json_object *o;
	int64_t code = 0;

	fx_callback(F.bkey, C[1].id, "fail", C[1].token,
	    "{\"error\":{\"message\":\"boom\",\"code\":7}}", &r);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "failed");
	json_object_put(o);
	http_resp_free(&r);
	fx_poll(&F, F.ckey, S[1].cid, S[1].token, NULL, &r);
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "failed");
	CHECK_EQ_STR(jstr(o, "error.message"), "boom");
	CHECK(jint(o, "error.code", &code) && code == 7);
	json_object_put(o);
	http_resp_free(&r);
}

static void
test_result_limit(void)
{
	size_t max = (size_t)config_long("max_result_bytes", 4194304);
	/* {"result":"aaa..."} of max + 64 and of max bytes */
	char *over = fx_padded(max + 64, 'a', "{\"result\":\"", "\"}");
	char *at = fx_padded(max, 'a', "{\"result\":\"", "\"}");
	struct http_resp r;

	fx_callback(F.bkey, C[2].id, "complete", C[2].token, over, &r);
	CHECK(expect_problem(&r, 413, "payload_too_large"));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &S[2]), "waiting_callback");
	fx_callback(F.bkey, C[2].id, "complete", C[2].token, at, &r);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &S[2]), "completed");
	free(over);
	free(at);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "backend");
	fx_setup(&G, "backend-other");
	test_claim_validation();
	test_claim_auth();
	test_revoked_backend_key();
	test_claim_order();
	test_heartbeat();
	test_complete_refusals();
	test_complete();
	test_unknown_id();
	test_fail();
	test_result_limit();
	test_null_result();
	fx_free(&F);
	fx_free(&G);
	return check_done("http_backend");
}
