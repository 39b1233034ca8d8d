/*
 * test_http_submit.c - POST /v1/executions/{env}/{svc}/{op} through nginx.
 */
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fx F;

/* Location, Retry-After and the 202 body; CID NULL means "server-generated". */
static void
check_accepted(const struct http_resp *r, const char *cid, const char *status)
{
	struct json_object *o = json_body(r);
	const char *got = jstr(o, "correlationId"), *url = jstr(o, "statusUrl");
	char path[512];
	int64_t created = rfc3339_ms(jstr(o, "createdAt"));
	int64_t now = (int64_t)time(NULL) * 1000;

	CHECK(expect_json(r, 202));
	CHECK(got != NULL && (cid ? strcmp(got, cid) == 0 : is_uuid(got)));
	fx_exec_path(path, sizeof path, &F, got, NULL);
	CHECK_EQ_STR(http_header(r, "location"), path);
	CHECK(is_digits(http_header(r, "retry-after")));
	CHECK(is_poll_token(jstr(o, "pollToken")));
	CHECK_EQ_STR(jstr(o, "status"), status);
	CHECK(url != NULL && strlen(url) >= strlen(path) &&
	    strcmp(url + strlen(url) - strlen(path), path) == 0);
	CHECK(is_rfc3339_ms(jstr(o, "createdAt")));
	CHECK(is_rfc3339_ms(jstr(o, "expiresAt")));
	CHECK(rfc3339_ms(jstr(o, "expiresAt")) > created);
	/* UTC, not local time: the server and the test share one clock. */
	CHECK(created > now - 60000 && created < now + 60000);
	json_object_put(o);
}

static void
test_generated_id(void)
{
	struct http_resp r;

	CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, "{\"x\":1}", &r), 202);
	check_accepted(&r, NULL, "waiting_callback");
	http_resp_free(&r);
}

static void
test_client_id(void)
{
	struct http_resp r;
	char cid[CID_MAX], longest[129];

	fx_cid(cid, sizeof cid, "Client.ID_x:1");
	CHECK_EQ_INT(fx_submit(&F, F.ckey, cid, "{\"x\":2}", &r), 202);
	check_accepted(&r, cid, "waiting_callback");
	http_resp_free(&r);

	memset(longest, 'L', 128);
	longest[128] = '\0';
	memcpy(longest, cid, strlen(cid));
	CHECK_EQ_INT(fx_submit(&F, F.ckey, longest, "{}", &r), 202);
	check_accepted(&r, longest, "waiting_callback");
	http_resp_free(&r);
}

/* expiresAt = createdAt + retention_days of the route. */
static void
test_retention(void)
{
	struct fx g = F;
	struct http_resp r;
	struct json_object *o;

	snprintf(g.op, sizeof g.op, "retention2");
	snprintf(g.route, sizeof g.route, "%s/%s/%s", g.env, g.svc, g.op);
	free(admin("route add %s --retention-days 2", g.route));
	CHECK_EQ_INT(fx_submit(&g, F.ckey, NULL, "{}", &r), 202);
	o = json_body(&r);
	CHECK_EQ_INT(rfc3339_ms(jstr(o, "expiresAt")) - rfc3339_ms(jstr(o, "createdAt")),
	    2LL * 86400 * 1000);
	json_object_put(o);
	http_resp_free(&r);
}

static void
submit_with(const char *const *hdrs, const char *body, size_t len, struct http_resp *r)
{
	char path[512];

	fx_exec_path(path, sizeof path, &F, NULL, NULL);
	http_do("POST", path, hdrs, body, len, r);
}

static void
check_unauthorized_with(const char *auth)
{
	const char *hdrs[] = { "Content-Type: application/json", auth, NULL };
	struct http_resp r;

	submit_with(hdrs, "{}", 2, &r);
	if (!expect_unauthorized(&r))
		fprintf(stderr, "  ... with \"%s\"\n", auth);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
}

static void
test_unauthorized(void)
{
	char bk[256];

	check_unauthorized_with("");
	check_unauthorized_with("Authorization: Basic dXNlcjpwYXNz");
	check_unauthorized_with("Authorization: Bearer");
	check_unauthorized_with("Authorization: Bearer ak_short");
	check_unauthorized_with("Authorization: Bearer "
	    "ak_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
	snprintf(bk, sizeof bk, "Authorization: Bearer %s", F.bkey);
	check_unauthorized_with(bk);
}

/*
 * A revoked key stops working within cache_ttl_seconds (workers cache
 * keys for that long): retry until 401, bounded by the TTL plus 2 s.
 */
static void
test_revoked_key(void)
{
	char *key = fx_consumer_key(F.tenant), auth[256];
	const char *hdrs[] = { "Content-Type: application/json", auth, NULL };
	long ttl_ms = config_long("cache_ttl_seconds", 5) * 1000;
	struct http_resp r;
	struct timespec t0, t;
	long waited = 0;
	int status = 0;

	CHECK_EQ_INT(fx_submit(&F, key, NULL, "{}", &r), 202);
	http_resp_free(&r);
	free(admin("key revoke %s", key));
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (waited <= ttl_ms + 2000) {
		submit_with(hdrs, "{}", 2, &r);
		status = r.status;
		http_resp_free(&r);
		if (status == 401)
			break;
		CHECK_EQ_INT(status, 202);	/* a cached, still valid key */
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000;
	}
	CHECK_EQ_INT(status, 401);
	/*
	 * One worker saying 401 does not mean all do: another may have cached the key just
	 * before the revocation. Once the TTL (plus scheduling slack) has passed since the
	 * revocation, every worker must refuse it.
	 */
	while (waited <= ttl_ms + 250) {
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
	}
	for (int i = 0; i < 8; i++)
		check_unauthorized_with(auth);
	free(key);
}

static int
submit_typed(const char *ctype, const char *body, struct http_resp *r)
{
	char auth[256];
	const char *hdrs[] = { auth, ctype, NULL };

	snprintf(auth, sizeof auth, "Authorization: Bearer %s", F.ckey);
	submit_with(hdrs, body, strlen(body), r);
	return r->status;
}

static void
test_media_type(void)
{
	struct http_resp r;

	submit_typed("Content-Type: text/plain", "{}", &r);
	CHECK(expect_problem(&r, 415, "unsupported_media_type"));
	http_resp_free(&r);
	submit_typed("", "{}", &r);
	CHECK(expect_problem(&r, 415, "unsupported_media_type"));
	http_resp_free(&r);
	CHECK_EQ_INT(submit_typed("Content-Type: application/json; charset=utf-8", "{}", &r),
	    202);
	http_resp_free(&r);
}

/*
 * 1,000,000 nested '[' (under max_request_bytes): 400 invalid_json from
 * the worker that read it; the validator used to recurse once per level
 * until the stack ran out (nginx then answered 502).
 */
static void
test_deep_nesting(void)
{
	const size_t n = 1000000;
	struct http_resp r;
	char *body = malloc(n + 1);

	if (body == NULL)
		exit(1);
	memset(body, '[', n);
	body[n] = '\0';
	fx_submit(&F, F.ckey, NULL, body, &r);
	CHECK(expect_problem(&r, 400, "invalid_json"));
	http_resp_free(&r);
	free(body);
	CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, "[[[1]]]", &r), 202);
	http_resp_free(&r);
}

static void
test_json_values(void)
{
	static const char *bad[] = { "garbage", "{\"a\":1} x", "", "{\"a\":", "[1,]" };
	static const char *good[] = { "[1,\"two\",null]", "\"just a string\"", " 7 " };
	struct http_resp r;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++) {
		fx_submit(&F, F.ckey, NULL, bad[i], &r);
		if (!expect_problem(&r, 400, "invalid_json"))
			fprintf(stderr, "  ... for body \"%s\"\n", bad[i]);
		CHECK(expect_problem(&r, 400, "invalid_json"));
		http_resp_free(&r);
	}
	for (i = 0; i < sizeof good / sizeof *good; i++) {
		CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, good[i], &r), 202);
		http_resp_free(&r);
	}
	test_deep_nesting();
}

static void
test_size_limit(void)
{
	size_t max = (size_t)config_long("max_request_bytes", 1048576);
	/* JSON string documents "aaa...a" of max and of max + 1 bytes */
	char *at = fx_padded(max, 'a', "\"", "\"");
	char *over = fx_padded(max + 1, 'a', "\"", "\"");
	struct http_resp r;

	CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, at, &r), 202);
	http_resp_free(&r);
	fx_submit(&F, F.ckey, NULL, over, &r);
	CHECK(expect_problem(&r, 413, "payload_too_large"));
	http_resp_free(&r);
	free(at);
	free(over);
}

static void
check_unknown_route(const char *route)
{
	char path[512];
	struct http_resp r;

	snprintf(path, sizeof path, "/v1/executions/%s", route);
	api("POST", path, F.ckey, "{}", &r, (const char *)NULL);
	if (!expect_problem(&r, 404, "unknown_route"))
		fprintf(stderr, "  ... for route %s\n", route);
	CHECK(expect_problem(&r, 404, "unknown_route"));
	http_resp_free(&r);
}

static void
test_unknown_route(void)
{
	char route[512];

	snprintf(route, sizeof route, "%s/%s/not-registered", F.env, F.svc);
	check_unknown_route(route);
	snprintf(route, sizeof route, "%s/%s/UPPER", F.env, F.svc);
	check_unknown_route(route);
	snprintf(route, sizeof route, "%s/%s/-dash-first", F.env, F.svc);
	check_unknown_route(route);
	snprintf(route, sizeof route, "%s/%s/%s", F.env, F.svc,
	    "o123456789o123456789o123456789o123456789o123456789o123456789abcde");
	check_unknown_route(route);
	snprintf(route, sizeof route, "%s/%s/disabled", F.env, F.svc);
	free(admin("route add %s", route));
	free(admin("route disable %s", route));
	check_unknown_route(route);
}

/*
 * Only enabled routes are cached: after `route enable` every worker accepts submits at
 * once (a cached "disabled" answer used to last up to cache_ttl_seconds). 16 submits
 * while disabled reach every worker (4 in the test stack) and would cache the state.
 */
static void
test_reenabled_route(void)
{
	char route[512], path[600];
	struct http_resp r;
	int i, refused = 0, accepted = 0;

	snprintf(route, sizeof route, "%s/%s/reenabled", F.env, F.svc);
	free(admin("route add %s", route));
	free(admin("route disable %s", route));
	for (i = 0; i < 16; i++)
		check_unknown_route(route);
	free(admin("route enable %s", route));
	snprintf(path, sizeof path, "/v1/executions/%s", route);
	for (i = 0; i < 16; i++) {
		api("POST", path, F.ckey, "{}", &r, (const char *)NULL);
		accepted += r.status == 202;
		refused += r.status == 404;
		http_resp_free(&r);
	}
	CHECK_EQ_INT(refused, 0);
	CHECK_EQ_INT(accepted, 16);
}

static void
check_bad_cid(const char *cid)
{
	struct http_resp r;

	fx_submit(&F, F.ckey, cid, "{}", &r);
	if (!expect_problem(&r, 400, "invalid_request"))
		fprintf(stderr, "  ... for X-Correlation-Id \"%s\"\n", cid);
	CHECK(expect_problem(&r, 400, "invalid_request"));
	http_resp_free(&r);
}

static void
test_bad_correlation_id(void)
{
	char long129[130];

	memset(long129, 'x', 129);
	long129[129] = '\0';
	check_bad_cid("");
	check_bad_cid("a b");
	check_bad_cid("a/b");
	check_bad_cid("caf\xc3\xa9");
	check_bad_cid(long129);
	/* dot segments: clients that normalise URLs could never poll them */
	check_bad_cid(".");
	check_bad_cid("..");
}

static int
poll_status(const char *key, const char *cid, const char *token)
{
	struct http_resp r;
	int st = fx_poll(&F, key, cid, token, NULL, &r);

	http_resp_free(&r);
	return st;
}

/* Resubmits BODY under CID expecting 202; returns the new token (static buffer). */
static const char *
resubmit(const struct fx *f, const char *key, const char *cid, const char *body,
    const char *status)
{
	static char token[96];
	struct http_resp r;
	struct json_object *o;

	CHECK_EQ_INT(fx_submit(f, key, cid, body, &r), 202);
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "correlationId"), cid);
	CHECK_EQ_STR(jstr(o, "status"), status);
	CHECK(is_poll_token(jstr(o, "pollToken")));
	snprintf(token, sizeof token, "%s", jstr(o, "pollToken") ? jstr(o, "pollToken") : "");
	json_object_put(o);
	http_resp_free(&r);
	return token;
}

static void
check_conflict(const char *key, const char *cid, const char *body)
{
	struct http_resp r;

	fx_submit(&F, key, cid, body, &r);
	CHECK(expect_problem(&r, 409, "correlation_id_conflict"));
	http_resp_free(&r);
}

static void
test_resubmit(void)
{
	const char *body = "{\"order\":42,\"items\":[1,2]}";
	char cid[CID_MAX], token2[96], *key2 = fx_consumer_key(F.tenant);
	struct sub s;

	fx_cid(cid, sizeof cid, "resubmit");
	CHECK(fx_submit_ok(&F, cid, body, &s));
	snprintf(token2, sizeof token2, "%s",
	    resubmit(&F, F.ckey, cid, body, "waiting_callback"));
	CHECK(strcmp(token2, s.token) != 0);
	CHECK_EQ_INT(poll_status(F.ckey, cid, s.token), 404);
	CHECK_EQ_INT(poll_status(F.ckey, cid, token2), 200);

	check_conflict(F.ckey, cid, "{\"order\":43,\"items\":[1,2]}");
	check_conflict(F.ckey, cid, "{\"order\":42, \"items\":[1,2]}");
	check_conflict(key2, cid, body);
	CHECK_EQ_INT(poll_status(F.ckey, cid, token2), 200);
	free(key2);
}

static void
test_other_tenant(void)
{
	const char *body = "{\"same\":true}";
	char cid[CID_MAX], tenant[128], *okey;
	struct fx other = F;
	struct sub s;
	const char *otoken;

	snprintf(tenant, sizeof tenant, "%s-other", F.tenant);
	okey = fx_consumer_key(tenant);
	other.ckey = okey;
	fx_cid(cid, sizeof cid, "shared");
	CHECK(fx_submit_ok(&F, cid, body, &s));
	otoken = resubmit(&other, okey, cid, body, "waiting_callback");
	CHECK(strcmp(otoken, s.token) != 0);
	CHECK_EQ_INT(poll_status(okey, cid, otoken), 200);
	CHECK_EQ_INT(poll_status(F.ckey, cid, s.token), 200);
	CHECK_EQ_INT(poll_status(okey, cid, s.token), 404);
	free(okey);
}

/* The request bytes reach the backend unchanged; a retry after completion reports it. */
static void
test_fidelity_and_terminal_retry(void)
{
	const char *body = "{\"b\":1,\"a\":9007199254740993,\"c\":1.10}";
	struct fx g;
	struct sub s;
	struct claim c;
	struct http_resp r;
	struct json_object *o;
	const char *token;

	fx_setup(&g, "fidelity");
	CHECK(fx_submit_ok(&g, NULL, body, &s));
	CHECK_EQ_INT(fx_claim(&g, g.bkey, "{\"max\":10}", &r), 200);
	CHECK(body_contains(&r, body));
	o = json_body(&r);
	CHECK_EQ_INT(jlen(o, "executions"), 1);
	CHECK(fx_claim_item(o, 0, &c));
	json_object_put(o);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_complete(&g, &c, "true"), 200);
	token = resubmit(&g, g.ckey, s.cid, body, "completed");
	CHECK(strcmp(token, s.token) != 0);
	CHECK_EQ_INT(fx_poll(&g, g.ckey, s.cid, token, NULL, &r), 200);
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	json_object_put(o);
	http_resp_free(&r);
	fx_free(&g);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "submit");
	test_generated_id();
	test_client_id();
	test_retention();
	test_unauthorized();
	test_revoked_key();
	test_media_type();
	test_json_values();
	test_size_limit();
	test_unknown_route();
	test_reenabled_route();
	test_bad_correlation_id();
	test_resubmit();
	test_other_tenant();
	test_fidelity_and_terminal_retry();
	fx_free(&F);
	return check_done("http_submit");
}
