/* Unit tests: JSON validation, raw member spans, rendering, time. */
#include <string.h>

#include "buf.h"
#include "check.h"
#include "json.h"

static int
ok(const char *s)
{
	return json_validate(s, strlen(s), 64, NULL) == 0;
}

static void
validate(void)
{
	static const char *const good[] = { "0", "-1.5e+3", "1.10",
	    "9007199254740993", "\"x\"", "true", "false", "null", "[]", "{}",
	    " {\"a\":[1,{\"b\":null}]} ", "\"\\u00e9\\n\"", "\"\xc3\xa9\"",
	    "[1e5,2E-3,0.0]" };
	static const char *const badv[] = { "", " ", "NaN", "[NaN]",
	    "Infinity", "-Infinity", "'a'", "[1,]", "{\"a\":1,}", "01",
	    "1.", ".5", "+1", "{\"a\":1} x", "{}{}", "tru", "{\"a\"}",
	    "\"\x01\"", "[\"\xff\"]", "{a:1}", "\"\\x\"", "\"\\u12\"",
	    "[1 2]" };
	char	 deep[200];
	size_t	 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (!ok(good[i]))
			fprintf(stderr, "should be valid: %s\n", good[i]);
		CHECK(ok(good[i]));
	}
	for (i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		if (ok(badv[i]))
			fprintf(stderr, "should be invalid: %s\n", badv[i]);
		CHECK(!ok(badv[i]));
	}
	CHECK(json_validate("[1]\0", 4, 64, NULL) == -1);
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	CHECK(json_validate(deep, 200, 64, NULL) == -1);
	CHECK(json_validate(deep + 40, 120, 64, NULL) == 0);
}

static void
members(void)
{
	const char	*body = "{ \"x\":1, \"result\" : {\"b\":1,\"a\":"
	    "9007199254740993,\"c\":1.10} , \"y\":[] }";
	const char	*v;
	size_t		 n;

	CHECK(json_member(body, strlen(body), "result", &v, &n) == 1);
	CHECK(n == strlen("{\"b\":1,\"a\":9007199254740993,\"c\":1.10}"));
	CHECK(strncmp(v, "{\"b\":1,\"a\":9007199254740993,\"c\":1.10}", n) == 0);
	CHECK(json_member(body, strlen(body), "y", &v, &n) == 1 && n == 2);
	CHECK(json_member(body, strlen(body), "z", &v, &n) == 0);
	CHECK(json_member("[1]", 3, "result", &v, &n) == -1);
	body = "{\"r\\u0065sult\":1.10,\"result\":\"last\"}";
	CHECK(json_member(body, strlen(body), "result", &v, &n) == 1);
	CHECK(n == 6 && strncmp(v, "\"last\"", 6) == 0);
	body = "{\"r\\u0065sult\":1.10}";
	CHECK(json_member(body, strlen(body), "result", &v, &n) == 1);
	CHECK(n == 4 && strncmp(v, "1.10", 4) == 0);
	body = "{\"inner\":{\"result\":1}}";
	CHECK(json_member(body, strlen(body), "result", &v, &n) == 0);
}

static void
render(void)
{
	struct buf	 b;
	char		 t[RFC3339_LEN + 1];

	buf_init(&b);
	json_put_string(&b, "a\"b\\c\n\x01" "d\xc3\xa9");
	CHECK_EQ_STR(buf_cstr(&b), "\"a\\\"b\\\\c\\u000a\\u0001d\xc3\xa9\"");
	CHECK(ok(buf_cstr(&b)));
	buf_free(&b);
	json_time(1795918837123LL, t);
	CHECK_EQ_STR(t, "2026-11-29T02:20:37.123Z");
	json_time(0, t);
	CHECK_EQ_STR(t, "1970-01-01T00:00:00.000Z");
	json_time(1795918837005LL, t);
	CHECK_EQ_STR(t, "2026-11-29T02:20:37.005Z");
	CHECK(json_now_ms() > 1700000000000LL);
}

int
main(void)
{
	validate();
	members();
	render();
	return check_done("unit_json");
}
