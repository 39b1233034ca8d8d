/*
 * test_http_payload.c - large payloads round-trip byte-exact through nginx and MariaDB.
 *
 * A fail callback may carry an error as large as max_result_bytes allows (the whole body),
 * and a complete callback a body of exactly max_result_bytes. Both must be stored as sent
 * and served back unchanged by poll (no "Data too long", no silent truncation).
 */
#include "check.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>

static struct fx F;

/*
 * A JSON document of exactly LEN bytes: PREFIX, then a string of 'x' (with one escaped
 * quote and a UTF-8 character, to catch re-encoding), then SUFFIX. Caller frees.
 */
static char *
make_body(size_t len, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), i;
	char *b = malloc(len + 1);

	if (b == NULL || len < pl + sl + 16) {
		free(b);
		return NULL;
	}
	memcpy(b, prefix, pl);
	b[pl] = '"';
	for (i = pl + 1; i < len - sl - 1; i++)
		b[i] = 'x';
	memcpy(b + pl + 1, "\\\"\xc3\xa9", 4);		/* \" and U+00E9 */
	b[len - sl - 1] = '"';
	memcpy(b + len - sl, suffix, sl);
	b[len] = '\0';
	return b;
}

/* Submits and claims one execution; 1 on success. */
static int
claimed(struct sub *s, struct claim *c)
{
	return fx_submit_claim(&F, "{\"big\":true}", s, c);
}

/* Polls S and checks that the body holds NEEDLE (LEN bytes) as a member value. */
static void
check_polled(const struct sub *s, const char *status, const char *needle, size_t len)
{
	struct http_resp r;
	struct json_object *o;

	CHECK_EQ_INT(fx_poll(&F, F.ckey, s->cid, s->token, NULL, &r), 200);
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), status);
	CHECK(r.body_len > len && memmem(r.body, r.body_len, needle, len) != NULL);
	json_object_put(o);
	http_resp_free(&r);
}

/* A 1 MiB error object (more than a BLOB's 65,535 bytes) round-trips byte-exact. */
static void
test_large_error(void)
{
	const size_t elen = 1024 * 1024;
	struct sub s;
	struct claim c;
	struct http_resp r;
	char *error, *body;
	size_t blen;

	CHECK(claimed(&s, &c));
	error = make_body(elen, "{\"message\":\"too big\",\"detail\":", "}");
	CHECK(error != NULL);
	if (error == NULL)
		return;
	blen = strlen("{\"error\":") + elen + 1;
	body = malloc(blen + 1);
	snprintf(body, blen + 1, "{\"error\":%s}", error);
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "fail", c.token, body, &r), 200);
	http_resp_free(&r);
	check_polled(&s, "failed", error, elen);
	free(body);
	free(error);
}

/* A complete body of exactly max_result_bytes is accepted and served back; one more is 413. */
static void
test_result_at_limit(void)
{
	size_t limit = (size_t)config_long("max_result_bytes", 4194304);
	const char *pre = "{\"result\":";
	struct sub s;
	struct claim c;
	struct http_resp r;
	char *body;

	CHECK(claimed(&s, &c));
	body = make_body(limit + 1, pre, "}");
	CHECK(body != NULL);
	if (body == NULL)
		return;
	/* one byte over: refused, nothing stored */
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "complete", c.token, body, &r), 413);
	CHECK(expect_problem(&r, 413, "payload_too_large"));
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "waiting_callback");
	free(body);
	/* exactly at the limit: stored and served as sent */
	body = make_body(limit, pre, "}");
	CHECK_EQ_INT(strlen(body), limit);
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "complete", c.token, body, &r), 200);
	http_resp_free(&r);
	check_polled(&s, "completed", body + strlen(pre), limit - strlen(pre) - 1);
	free(body);
}

/*
 * A claim's payloads are bounded: 10 submits of ~1 MiB each and a claim of max=100 hand
 * out only what fits in max_result_bytes (4 per claim at the default 4 MiB), never all 10
 * in one response; the rest come with the next claims, each execution exactly once.
 */
static void
test_claim_budget(void)
{
	size_t limit = (size_t)config_long("max_request_bytes", 1048576) - 64;
	size_t budget = (size_t)config_long("max_result_bytes", 4194304);
	struct fx G;
	struct sub s;
	struct http_resp r;
	struct json_object *o;
	char *body;
	long got, total = 0, most = 0;
	int i, rounds = 0;

	fx_setup(&G, "claimbudget");
	body = make_body(limit, "{\"blob\":", "}");
	for (i = 0; i < 10; i++)
		CHECK(fx_submit_ok(&G, NULL, body, &s));
	free(body);
	do {
		CHECK_EQ_INT(fx_claim(&G, G.bkey, "{\"max\":100}", &r), 200);
		o = json_body(&r);
		got = jlen(o, "executions");
		json_object_put(o);
		CHECK(r.body_len < budget + 64 * 1024);	/* the payloads plus their envelope */
		http_resp_free(&r);
		total += got > 0 ? got : 0;
		most = got > most ? got : most;
	} while (got > 0 && ++rounds < 20);
	CHECK_EQ_INT(total, 10);
	CHECK(most >= 1 && (size_t)most <= budget / limit);
	fx_free(&G);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "payload");
	test_large_error();
	test_result_at_limit();
	test_claim_budget();
	fx_free(&F);
	return check_done("http_payload");
}
