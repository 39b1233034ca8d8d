/*
 * httpc_check.c - JSON helpers and contract predicates of the HTTP integration tests
 * (declared in httpc.h with the client).
 */
#include "httpc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- JSON ----------------------------------------------------------------------------- */

struct json_object *
json_body(const struct http_resp *r)
{
	struct json_object *o;

	if (r->body == NULL || r->body_len == 0) {
		fprintf(stderr, "json_body: empty body (status %d)\n", r->status);
		return NULL;
	}
	o = json_tokener_parse(r->body);
	if (o == NULL)
		fprintf(stderr, "json_body: not JSON: %.300s\n", r->body);
	return o;
}

static struct json_object *
jstep(struct json_object *o, const char *name, size_t len)
{
	char key[128];
	struct json_object *v = NULL;

	if (o == NULL || len >= sizeof key)
		return NULL;
	memcpy(key, name, len);
	key[len] = '\0';
	if (json_object_is_type(o, json_type_array)) {
		char *end;
		unsigned long i = strtoul(key, &end, 10);

		if (*end != '\0' || i >= json_object_array_length(o))
			return NULL;
		return json_object_array_get_idx(o, i);
	}
	if (!json_object_is_type(o, json_type_object))
		return NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Distinguishes "member is null" from "member missing": returns 1 when found. */
static int
jfind(struct json_object *o, const char *path, struct json_object **out)
{
	for (;;) {
		size_t len = strcspn(path, ".");
		struct json_object *parent = o;

		if (parent == NULL)
			return 0;
		o = jstep(parent, path, len);
		if (path[len] == '\0') {
			*out = o;
			if (o != NULL)
				return 1;
			return json_object_is_type(parent, json_type_object) &&
			    json_object_object_get_ex(parent, path, NULL);
		}
		path += len + 1;
	}
}

struct json_object *
jget(struct json_object *o, const char *path)
{
	struct json_object *v = NULL;

	return jfind(o, path, &v) ? v : NULL;
}

const char *
jstr(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int
jint(struct json_object *o, const char *path, int64_t *out)
{
	struct json_object *v = jget(o, path);

	if (v == NULL || !json_object_is_type(v, json_type_int))
		return 0;
	*out = json_object_get_int64(v);
	return 1;
}

int
jbool(struct json_object *o, const char *path, int *out)
{
	struct json_object *v = jget(o, path);

	if (v == NULL || !json_object_is_type(v, json_type_boolean))
		return 0;
	*out = json_object_get_boolean(v);
	return 1;
}

int
jnull(struct json_object *o, const char *path)
{
	struct json_object *v = NULL;

	return jfind(o, path, &v) && v == NULL;
}

long
jlen(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	if (v == NULL || !json_object_is_type(v, json_type_array))
		return -1;
	return (long)json_object_array_length(v);
}

/* ---- contract predicates -------------------------------------------------------------- */

static int
say_no(const char *what, const char *s)
{
	fprintf(stderr, "  not %s: \"%s\"\n", what, s ? s : "(null)");
	return 0;
}

static int
match_pattern(const char *s, const char *pat)
{
	/* 'd' = digit, 'x' = hex digit, anything else literal. */
	for (; *pat; s++, pat++) {
		if (*s == '\0')
			return 0;
		if (*pat == 'd' && !isdigit((unsigned char)*s))
			return 0;
		if (*pat == 'x' && !isxdigit((unsigned char)*s))
			return 0;
		if (*pat != 'd' && *pat != 'x' && *pat != *s)
			return 0;
	}
	return *s == '\0';
}

int64_t
rfc3339_ms(const char *s)
{
	struct tm tm;
	int ms;

	if (s == NULL || !match_pattern(s, "dddd-dd-ddTdd:dd:dd.dddZ"))
		return -1;
	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
		return -1;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int
is_rfc3339_ms(const char *s)
{
	return rfc3339_ms(s) >= 0 ? 1 : say_no("RFC 3339 UTC with milliseconds", s);
}

static int
is_b64url(const char *s, size_t n)
{
	return s != NULL && strlen(s) == n && strspn(s,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

int
is_callback_token(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n >= 43 && n <= 128 && is_b64url(s, n) ? 1 :
	    say_no("a base64url callback token of 43 to 128 characters", s);
}

int
is_poll_token(const char *s)
{
	/* 65: sealed with key version 0; 66: a version digit first (rotated key) */
	return is_b64url(s, 65) || is_b64url(s, 66) ? 1 :
	    say_no("a 65- or 66-char base64url poll token", s);
}

int
is_uuid(const char *s)
{
	if (s == NULL || !match_pattern(s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"))
		return say_no("a UUID", s);
	return 1;
}

int
is_digits(const char *s)
{
	if (s == NULL || *s == '\0' || strspn(s, "0123456789") != strlen(s))
		return say_no("a decimal number", s);
	return 1;
}

int
expect_status(const struct http_resp *r, int status)
{
	if (r->status == status)
		return 1;
	fprintf(stderr, "  expected status %d, got %d; body: %.400s\n", status, r->status,
	    r->body ? r->body : "");
	return 0;
}

static int
expect_header_prefix(const struct http_resp *r, const char *name, const char *prefix)
{
	const char *v = http_header(r, name);

	if (v != NULL && strncasecmp(v, prefix, strlen(prefix)) == 0)
		return 1;
	fprintf(stderr, "  status %d: header %s is \"%s\", expected \"%s...\"\n", r->status,
	    name, v ? v : "(missing)", prefix);
	return 0;
}

static int
no_store(const struct http_resp *r)
{
	const char *v = http_header(r, "cache-control");

	if (v != NULL && strcasestr(v, "no-store") != NULL)
		return 1;
	fprintf(stderr, "  status %d: Cache-Control is \"%s\", expected no-store\n", r->status,
	    v ? v : "(missing)");
	return 0;
}

int
expect_json(const struct http_resp *r, int status)
{
	struct json_object *o;
	int ok = expect_status(r, status);

	ok &= expect_header_prefix(r, "content-type", "application/json");
	ok &= no_store(r);
	o = json_body(r);
	ok &= o != NULL;
	json_object_put(o);
	return ok;
}

static int
problem_members(struct json_object *o, int status, const char *code)
{
	int64_t st = 0;
	const char *type = jstr(o, "type"), *c = jstr(o, "code");
	int ok = 1;

	if (type == NULL || strcmp(type, "about:blank") != 0)
		ok = say_no("type about:blank", type);
	if (jstr(o, "title") == NULL || jstr(o, "detail") == NULL)
		ok = say_no("a problem with string title and detail", "");
	if (!jint(o, "status", &st) || st != status) {
		fprintf(stderr, "  problem status member %lld, expected %d\n", (long long)st,
		    status);
		ok = 0;
	}
	if (c == NULL || strcmp(c, code) != 0) {
		fprintf(stderr, "  problem code \"%s\", expected \"%s\"\n", c ? c : "(null)", code);
		ok = 0;
	}
	return ok;
}

int
expect_problem(const struct http_resp *r, int status, const char *code)
{
	struct json_object *o;
	int ok = expect_status(r, status);

	ok &= expect_header_prefix(r, "content-type", "application/problem+json");
	ok &= no_store(r);
	o = json_body(r);
	ok &= o != NULL && problem_members(o, status, code);
	json_object_put(o);
	return ok;
}

int
expect_unauthorized(const struct http_resp *r)
{
	int ok = expect_problem(r, 401, "unauthorized");

	return expect_header_prefix(r, "www-authenticate", "Bearer") && ok;
}

int
expect_conflict(const struct http_resp *r, const char *current)
{
	struct json_object *o;
	const char *cur;
	int ok = expect_problem(r, 409, "conflict");

	o = json_body(r);
	cur = jstr(o, "currentStatus");
	if (cur == NULL || strcmp(cur, current) != 0) {
		fprintf(stderr, "  currentStatus \"%s\", expected \"%s\"\n",
		    cur ? cur : "(null)", current);
		ok = 0;
	}
	json_object_put(o);
	return ok;
}

int
same_response(const struct http_resp *a, const struct http_resp *b)
{
	if (a->status == b->status && a->body_len == b->body_len &&
	    memcmp(a->body, b->body, a->body_len) == 0)
		return 1;
	fprintf(stderr, "  responses differ:\n    %d %.300s\n    %d %.300s\n", a->status,
	    a->body ? a->body : "", b->status, b->body ? b->body : "");
	return 0;
}

int
body_contains(const struct http_resp *r, const char *needle)
{
	if (r->body != NULL && memmem(r->body, r->body_len, needle, strlen(needle)) != NULL)
		return 1;
	fprintf(stderr, "  body does not contain %s: %.400s\n", needle, r->body ? r->body : "");
	return 0;
}
