/* Unit tests: problem+json documents and the execution status body. */
#include <json-c/json.h>
#include <string.h>

#include "check.h"
#include "handlers.h"
#include "http.h"

/* Renders problem e and checks status, code and that it parses. */
static void
problem(enum herr e, int status, const char *code)
{
	struct resp		 r;
	struct json_object	*o, *v;

	resp_init(&r);
	resp_problem(&r, e);
	CHECK_EQ_INT(r.status, status);
	CHECK_EQ_STR(r.content_type, "application/problem+json");
	o = json_tokener_parse(buf_cstr(&r.body));
	CHECK(o != NULL);
	CHECK(json_object_object_get_ex(o, "code", &v) &&
	    strcmp(json_object_get_string(v), code) == 0);
	CHECK(json_object_object_get_ex(o, "status", &v) &&
	    json_object_get_int(v) == status);
	CHECK(json_object_object_get_ex(o, "type", &v) &&
	    strcmp(json_object_get_string(v), "about:blank") == 0);
	CHECK(json_object_object_get_ex(o, "title", &v));
	CHECK(json_object_object_get_ex(o, "detail", &v));
	json_object_put(o);
	resp_free(&r);
}

static void
problems(void)
{
	struct resp	 r;

	problem(HERR_UNAUTHORIZED, 401, "unauthorized");
	problem(HERR_NOT_FOUND, 404, "not_found");
	problem(HERR_UNKNOWN_ROUTE, 404, "unknown_route");
	problem(HERR_INVALID_REQUEST, 400, "invalid_request");
	problem(HERR_INVALID_JSON, 400, "invalid_json");
	problem(HERR_PAYLOAD_TOO_LARGE, 413, "payload_too_large");
	problem(HERR_UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type");
	problem(HERR_CORRELATION_CONFLICT, 409, "correlation_id_conflict");
	problem(HERR_CONFLICT, 409, "conflict");
	problem(HERR_METHOD_NOT_ALLOWED, 405, "method_not_allowed");
	problem(HERR_UNAVAILABLE, 503, "service_unavailable");
	resp_init(&r);
	resp_problem(&r, HERR_UNAUTHORIZED);
	CHECK(strstr(buf_cstr(&r.headers), "WWW-Authenticate: Bearer\r\n"));
	resp_free(&r);
	resp_init(&r);
	r.current_status = "completed";
	r.detail = "quote \" and \\ kept safe";
	resp_problem(&r, HERR_CONFLICT);
	CHECK(strstr(buf_cstr(&r.body), "\"currentStatus\":\"completed\""));
	CHECK(strstr(buf_cstr(&r.body), "quote \\\" and \\\\ kept safe"));
	resp_free(&r);
	resp_init(&r);
	r.allow = "POST";
	resp_problem(&r, HERR_METHOD_NOT_ALLOWED);
	CHECK(strstr(buf_cstr(&r.headers), "Allow: POST\r\n"));
	resp_free(&r);
}

static void
status_body(void)
{
	struct exec_row	 r;
	struct buf	 b;
	const char	*raw = "{\"z\":1,\"a\":[1.10,9007199254740993]}";

	memset(&r, 0, sizeof(r));
	strcpy(r.cid, "c-1");
	r.status = ST_COMPLETED;
	r.created_at = 1795918837123LL;
	r.updated_at = r.completed_at = 1795918838000LL;
	r.expires_at = 1796523637123LL;
	r.result = (char *)raw;
	r.result_len = strlen(raw);
	buf_init(&b);
	view_status(&b, &r);
	CHECK_EQ_STR(buf_cstr(&b), "{\"correlationId\":\"c-1\","
	    "\"status\":\"completed\",\"createdAt\":\"2026-11-29T02:20:37.123Z\","
	    "\"updatedAt\":\"2026-11-29T02:20:38.000Z\","
	    "\"expiresAt\":\"2026-12-06T02:20:37.123Z\","
	    "\"completedAt\":\"2026-11-29T02:20:38.000Z\","
	    "\"cancelRequested\":false,\"attempt\":0,\"priority\":0,"
	    "\"notBefore\":null,"
	    "\"result\":{\"z\":1,\"a\":[1.10,9007199254740993]}}");
	buf_reset(&b);
	r.status = ST_WAITING;
	r.completed_at = 0;
	r.cancel_requested = 1;
	view_status(&b, &r);
	CHECK(strstr(buf_cstr(&b), "\"completedAt\":null") != NULL);
	CHECK(strstr(buf_cstr(&b), "\"cancelRequested\":true") != NULL);
	CHECK(strstr(buf_cstr(&b), "result") == NULL);
	/* progress as stored; lastError only while waiting */
	buf_reset(&b);
	r.attempts = 2;
	r.progress = (char *)"{\"pct\" : 5}";
	r.progress_len = strlen(r.progress);
	r.last_error = (char *)"{\"message\":\"m\"}";
	r.last_error_len = strlen(r.last_error);
	view_status(&b, &r);
	CHECK(strstr(buf_cstr(&b), ",\"attempt\":2,\"priority\":0,"
	    "\"notBefore\":null,\"progress\":{\"pct\" : 5},"
	    "\"lastError\":{\"message\":\"m\"}}") != NULL);
	/* the scheduling of contract v3: priority, and the start once set */
	buf_reset(&b);
	r.priority = 7;
	r.not_before = 1795918900000LL;
	view_status(&b, &r);
	CHECK(strstr(buf_cstr(&b), ",\"priority\":7,\"notBefore\":"
	    "\"2026-11-29T02:21:40.000Z\"") != NULL);
	buf_reset(&b);
	r.status = ST_COMPLETED;
	view_status(&b, &r);
	CHECK(strstr(buf_cstr(&b), "lastError") == NULL);
	CHECK(strstr(buf_cstr(&b), "\"progress\":{\"pct\" : 5}") != NULL);
	buf_free(&b);
}

int
main(void)
{
	problems();
	status_body();
	return check_done("unit_response");
}
