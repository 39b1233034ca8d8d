/*
 * test_http_utf8.c - raw UTF-8 through nginx and MariaDB, in every body kind.
 *
 * Valid UTF-8 (not \u escapes: the bytes themselves) is accepted in a submit, a claim, a
 * heartbeat's progress, a complete and a fail, and served back byte for byte by claim and
 * poll. Each class of ill-formed UTF-8 (RFC 3629: stray continuation, overlong forms,
 * encoded surrogates, above U+10FFFF, bytes F5..FF, truncation) is 400 invalid_json in
 * each body kind and stores nothing: no execution, no claim, no progress, no outcome.
 * The same on every json-c (0.16 on Debian 12 let overlongs and surrogates through; 0.18
 * on Debian 13 refused all non-ASCII text in strict mode).
 */
#include "check.h"
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Latin-1 letters, CJK, an emoji (4 bytes), U+FFFD, U+10FFFF: 1- to 4-byte sequences */
#define TEXT "M\xc3\xbcller Z\xc3\xbcrich \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e " \
	"\xf0\x9f\x98\x80 \xef\xbf\xbd \xf4\x8f\xbf\xbf"

static const struct bad {
	const char *bytes;
	const char *what;
} bad[] = {
	{ "\x80", "a stray continuation byte" },
	{ "\xc0\xaf", "an overlong '/' (2 bytes)" },
	{ "\xe0\x80\xaf", "an overlong '/' (3 bytes)" },
	{ "\xf0\x80\x80\xaf", "an overlong '/' (4 bytes)" },
	{ "\xed\xa0\x80", "an encoded surrogate U+D800" },
	{ "\xf4\x90\x80\x80", "U+110000" },
	{ "\xf5\x80\x80\x80", "lead byte F5" },
	{ "\xff", "byte FF" },
	{ "\xe6\x97", "a truncated 3-byte sequence" },
};
#define NBAD (sizeof(bad) / sizeof(bad[0]))

static struct fx F;

/* Whether the poll body of S holds NEEDLE byte for byte. */
static int
polled_has(const struct sub *s, const char *needle)
{
	char *b = fx_poll_body(&F, s);
	int ok = b != NULL && strstr(b, needle) != NULL;

	if (!ok)
		fprintf(stderr, "  poll lacks %s: %.300s\n", needle, b ? b : "(none)");
	free(b);
	return ok;
}

/* How many executions F's route lists for F.ckey (at most 100), -1 on error. */
static long
listed(void)
{
	char path[300];
	struct http_resp r;
	struct json_object *o;
	long n = -1;

	snprintf(path, sizeof(path), "/v1/executions/%s?limit=100", F.route);
	if (api("GET", path, F.ckey, NULL, &r, NULL) == 200 && (o = json_body(&r)) != NULL) {
		n = jlen(o, "executions");
		json_object_put(o);
	}
	http_resp_free(&r);
	return n;
}

/* Sends BODY as VERB of C; 1 when it is 400 invalid_json. */
static int
refused(const struct claim *c, const char *verb, const char *body, const char *what)
{
	struct http_resp r;
	int ok = fx_callback(F.bkey, c->id, verb, c->token, body, &r) == 400 &&
	    expect_problem(&r, 400, "invalid_json");

	if (!ok)
		fprintf(stderr, "  %s with %s: %d %.200s\n", verb, what, r.status,
		    r.body ? r.body : "");
	http_resp_free(&r);
	return ok;
}

/*
 * Valid text in every body kind: the submit's request comes back in the claim, the
 * heartbeat's progress, the complete's result and the fail's error in poll.
 */
static void
test_valid_everywhere(void)
{
	const char *req = "{\"name\":\"" TEXT "\",\"" TEXT "\":[\"" TEXT "\"]}";
	struct sub s, s2;
	struct claim c, c2;
	struct http_resp r;

	CHECK(fx_submit_ok(&F, NULL, req, &s));
	CHECK_EQ_INT(fx_claim(&F, F.bkey, "{\"max\":1,\"note\":\"" TEXT "\"}", &r), 200);
	CHECK(body_contains(&r, "\"request\":{\"name\":\"" TEXT "\",\"" TEXT "\":[\""
	    TEXT "\"]}"));
	{
		struct json_object *o = json_body(&r);
		CHECK(o != NULL && fx_claim_item(o, 0, &c));
		json_object_put(o);
	}
	http_resp_free(&r);
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "heartbeat", c.token,
	    "{\"leaseSeconds\":60,\"progress\":{\"step\":\"" TEXT "\"}}", &r), 200);
	http_resp_free(&r);
	CHECK(polled_has(&s, "\"progress\":{\"step\":\"" TEXT "\"}"));
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "complete", c.token,
	    "{\"result\":{\"" TEXT "\":\"" TEXT "\"}}", &r), 200);
	http_resp_free(&r);
	CHECK(polled_has(&s, "\"result\":{\"" TEXT "\":\"" TEXT "\"}"));

	CHECK(fx_submit_claim(&F, "{\"n\":2}", &s2, &c2));
	CHECK_EQ_INT(fx_callback(F.bkey, c2.id, "fail", c2.token,
	    "{\"error\":{\"message\":\"" TEXT "\",\"code\":\"\xc3\xa9\"}}", &r), 200);
	http_resp_free(&r);
	CHECK(polled_has(&s2, "\"error\":{\"message\":\"" TEXT "\",\"code\":\"\xc3\xa9\"}"));
}

/* Each ill-formed class in a submit: 400 invalid_json, no execution listed. */
static void
test_bad_submit(void)
{
	char body[128], cid[CID_MAX];
	struct http_resp r;
	long before = listed();
	size_t i;

	CHECK(before >= 0);
	for (i = 0; i < NBAD; i++) {
		snprintf(body, sizeof(body), "{\"name\":\"a%sb\"}", bad[i].bytes);
		fx_cid(cid, sizeof(cid), "bad");
		if (fx_submit(&F, F.ckey, cid, body, &r) != 400 ||
		    !expect_problem(&r, 400, "invalid_json")) {
			fprintf(stderr, "  submit with %s: %d\n", bad[i].what, r.status);
			CHECK(0);
		}
		http_resp_free(&r);
		/* the same correlation id is still free: nothing was stored under it */
		CHECK_EQ_INT(fx_submit(&F, F.ckey, cid, "{\"name\":\"ok\"}", &r), 202);
		http_resp_free(&r);
		/* and in a member name, cut at the very end of the text */
		snprintf(body, sizeof(body), "{\"%s\":1}", bad[i].bytes);
		CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, body, &r), 400);
		http_resp_free(&r);
		snprintf(body, sizeof(body), "\"%s", bad[i].bytes);
		CHECK_EQ_INT(fx_submit(&F, F.ckey, NULL, body, &r), 400);
		http_resp_free(&r);
	}
	CHECK_EQ_INT(listed(), before + (long)NBAD);
}

/*
 * Each class in a claim body: 400, nothing handed out (the next claim gets the execution
 * at attempt 1); then in a heartbeat, a complete and a fail of that claim: 400 each, and
 * the execution still waits with no progress, until a valid complete wins.
 */
static void
test_bad_backend_bodies(void)
{
	char body[128];
	struct sub s;
	struct claim c;
	struct http_resp r;
	struct json_object *o;
	int64_t attempt = 0;
	size_t i;

	CHECK(fx_submit_ok(&F, NULL, "{\"n\":3}", &s));
	for (i = 0; i < NBAD; i++) {
		snprintf(body, sizeof(body), "{\"max\":1,\"note\":\"%s\"}", bad[i].bytes);
		CHECK_EQ_INT(fx_claim(&F, F.bkey, body, &r), 400);
		CHECK(expect_problem(&r, 400, "invalid_json"));
		http_resp_free(&r);
	}
	CHECK(fx_claim_one(&F, &c));
	for (i = 0; i < NBAD; i++) {
		snprintf(body, sizeof(body), "{\"leaseSeconds\":60,\"progress\":\"%s\"}",
		    bad[i].bytes);
		CHECK(refused(&c, "heartbeat", body, bad[i].what));
		snprintf(body, sizeof(body), "{\"result\":\"x%sy\"}", bad[i].bytes);
		CHECK(refused(&c, "complete", body, bad[i].what));
		snprintf(body, sizeof(body), "{\"error\":{\"message\":\"%s\"}}", bad[i].bytes);
		CHECK(refused(&c, "fail", body, bad[i].what));
	}
	{
		char *b = fx_poll_body(&F, &s);
		o = b ? json_tokener_parse(b) : NULL;
		CHECK_EQ_STR(jstr(o, "status"), "waiting_callback");
		CHECK(jget(o, "progress") == NULL || jnull(o, "progress"));
		CHECK(jint(o, "attempt", &attempt) && attempt == 1);
		json_object_put(o);
		free(b);
	}
	CHECK_EQ_INT(fx_complete(&F, &c, "\"" TEXT "\""), 200);
	CHECK(polled_has(&s, "\"result\":\"" TEXT "\""));
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "utf8");
	test_valid_everywhere();
	test_bad_backend_bodies();	/* needs a queue holding its execution alone */
	test_bad_submit();
	fx_free(&F);
	return check_done("http_utf8");
}
