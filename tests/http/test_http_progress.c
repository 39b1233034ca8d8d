/*
 * test_http_progress.c - heartbeat progress through nginx: stored as the bytes received,
 * returned by poll unchanged as `progress`, kept after the execution ends; over 16 KiB a
 * 413 that stores nothing; poll's `attempt` counts the claims.
 */
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>

#define PROGRESS_MAX 16384

static struct fx F;

/* Heartbeat of C with BODY; returns the status (R freed). */
static int
heartbeat(const struct claim *c, const char *body, struct http_resp *r)
{
	return fx_callback(F.bkey, c->id, "heartbeat", c->token, body, r);
}

/* Whether poll of S shows attempt N. */
static int
poll_attempt(const struct sub *s, int64_t n)
{
	char *b = fx_poll_body(&F, s);
	struct json_object *o = b ? json_tokener_parse(b) : NULL;
	int64_t v = -1;
	int ok = o != NULL && jint(o, "attempt", &v) && v == n;

	if (!ok)
		fprintf(stderr, "  attempt %lld, want %lld: %.200s\n", (long long)v,
		    (long long)n, b ? b : "");
	json_object_put(o);
	free(b);
	return ok;
}

static void
test_progress(void)
{
	static const char *const raw = "{\"pct\" : 10,\n \"steps\":[1, 2.50, \"\\u00e9\"]}";
	struct http_resp r;
	struct sub s;
	struct claim c;
	char body[512], *b, *v, *big;

	CHECK(fx_submit_ok(&F, NULL, "{}", &s));
	CHECK(poll_attempt(&s, 0));
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, "\"progress\"") == NULL);
	free(b);
	CHECK(fx_claim_one(&F, &c));
	CHECK(poll_attempt(&s, 1));
	/* stored and returned as sent, whitespace and number spelling included */
	snprintf(body, sizeof body, "{\"leaseSeconds\":30, \"progress\": %s }", raw);
	CHECK_EQ_INT(heartbeat(&c, body, &r), 200);
	CHECK(expect_json(&r, 200));
	http_resp_free(&r);
	b = fx_poll_body(&F, &s);
	snprintf(body, sizeof body, "\"progress\":%s", raw);
	CHECK(b != NULL && strstr(b, body) != NULL);
	if (b == NULL || strstr(b, body) == NULL)
		fprintf(stderr, "  poll: %s\n", b ? b : "");
	free(b);
	/* a heartbeat without progress keeps it */
	CHECK_EQ_INT(heartbeat(&c, "{}", &r), 200);
	http_resp_free(&r);
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, body) != NULL);
	free(b);
	/* exactly the limit is stored; one byte more is 413 and stores nothing */
	v = fx_padded(PROGRESS_MAX, 'x', "\"", "\"");	/* "xxx...x" */
	big = malloc(PROGRESS_MAX + 64);
	snprintf(big, PROGRESS_MAX + 64, "{\"progress\":%s}", v);
	CHECK_EQ_INT(heartbeat(&c, big, &r), 200);
	http_resp_free(&r);
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, v) != NULL);
	free(b);
	free(v);
	CHECK_EQ_INT(heartbeat(&c, "{\"progress\":[\"step-2\"]}", &r), 200);
	http_resp_free(&r);
	v = fx_padded(PROGRESS_MAX + 1, 'x', "\"", "\"");
	snprintf(big, PROGRESS_MAX + 64, "{\"progress\":%s}", v);
	heartbeat(&c, big, &r);
	CHECK(expect_problem(&r, 413, "payload_too_large"));
	http_resp_free(&r);
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, "\"progress\":[\"step-2\"]") != NULL);
	CHECK(b != NULL && strstr(b, "xxxxxxxx") == NULL);
	free(b);
	free(v);
	free(big);
	/* null is a JSON value too; invalid JSON is 400 and stores nothing */
	heartbeat(&c, "{\"progress\":[1,}", &r);
	CHECK(expect_problem(&r, 400, "invalid_json"));
	http_resp_free(&r);
	/* kept after the execution is terminal */
	CHECK_EQ_INT(fx_complete(&F, &c, "{\"done\":true}"), 200);
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, "\"progress\":[\"step-2\"]") != NULL);
	CHECK(b != NULL && strstr(b, "\"result\":{\"done\":true}") != NULL);
	CHECK(b != NULL && strstr(b, "\"status\":\"completed\"") != NULL);
	free(b);
	CHECK(poll_attempt(&s, 1));
	/* a stale heartbeat (after the end) stores nothing: 409 */
	heartbeat(&c, "{\"progress\":\"late\"}", &r);
	CHECK(expect_conflict(&r, "completed"));
	http_resp_free(&r);
	b = fx_poll_body(&F, &s);
	CHECK(b != NULL && strstr(b, "late") == NULL);
	free(b);
}

/* A heartbeat's progress on a cancelled execution's cancel body too. */
static void
test_progress_on_cancel(void)
{
	struct http_resp r;
	struct sub s;
	struct claim c;

	CHECK(fx_submit_ok(&F, NULL, "{}", &s));
	CHECK(fx_claim_one(&F, &c));
	CHECK_EQ_INT(heartbeat(&c, "{\"progress\":{\"p\":1}}", &r), 200);
	http_resp_free(&r);
	fx_cancel(&F, F.ckey, s.cid, s.token, &r);
	CHECK(expect_json(&r, 202));
	CHECK(body_contains(&r, "\"progress\":{\"p\":1}"));
	CHECK(body_contains(&r, "\"attempt\":1"));
	http_resp_free(&r);
	CHECK_EQ_INT(heartbeat(&c, "{}", &r), 200);
	CHECK(body_contains(&r, "\"cancelRequested\":true"));
	http_resp_free(&r);
	fx_callback(F.bkey, c.id, "cancelled", c.token, "{}", &r);
	CHECK(expect_json(&r, 200));
	CHECK(body_contains(&r, "\"progress\":{\"p\":1}"));
	CHECK(body_contains(&r, "\"status\":\"cancelled\""));
	http_resp_free(&r);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "progress");
	test_progress();
	test_progress_on_cancel();
	fx_free(&F);
	return check_done("http_progress");
}
