/* Unit tests: JSON validation, raw member spans, rendering, time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include <json-c/json.h>

#include "clock.h"
#include "buf.h"
#include "check.h"
#include "json.h"

static void	huge_nesting(void);
static void	depth_bound(void);

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
	huge_nesting();
	depth_bound();
}

/*
 * n containers nested (arrays, or objects {"a":...} when obj), a 1 in the
 * innermost, validated with depth bound d, with and without the tree:
 * both answers must agree; 1 accepted, 0 refused, -1 they differ.
 */
static int
nested(unsigned n, int obj, unsigned d)
{
	struct buf		 b;
	struct json_object	*o = NULL;
	unsigned		 i;
	int			 bare, tree;

	buf_init(&b);
	for (i = 0; i < n; i++)
		buf_puts(&b, obj ? "{\"a\":" : "[");
	buf_puts(&b, "1");
	for (i = 0; i < n; i++)
		buf_puts(&b, obj ? "}" : "]");
	bare = json_validate(b.data, b.len, d, NULL) == 0;
	tree = json_validate(b.data, b.len, d, &o) == 0;
	json_object_put(o);
	buf_free(&b);
	return bare == tree ? bare : -1;
}

/*
 * max_json_depth d is the deepest nesting accepted (asyncexec.conf(5)):
 * d containers pass, d + 1 fail, with or without the tree, arrays and
 * objects alike.
 */
static void
depth_bound(void)
{
	static const unsigned ds[] = { 1, 2, 64, 1000 };
	size_t	 i;
	int	 obj;

	for (i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		for (obj = 0; obj < 2; obj++) {
			if (nested(ds[i], obj, ds[i]) != 1 ||
			    nested(ds[i] + 1, obj, ds[i]) != 0)
				fprintf(stderr, "depth %u (%s): %u nested -> %d, "
				    "%u nested -> %d\n", ds[i], obj ? "objects" :
				    "arrays", ds[i], nested(ds[i], obj, ds[i]),
				    ds[i] + 1, nested(ds[i] + 1, obj, ds[i]));
			CHECK_EQ_INT(nested(ds[i], obj, ds[i]), 1);
			CHECK_EQ_INT(nested(ds[i] + 1, obj, ds[i]), 0);
		}
}

/*
 * A megabyte of nesting (a body nginx and max_request_bytes let through)
 * is refused without recursing a million levels deep.
 */
static void
huge_nesting(void)
{
	const size_t	 n = 1024 * 1024;
	struct json_object *o = NULL;
	const char	*v;
	size_t		 vn;
	char		*b;

	if ((b = malloc(n + 8)) == NULL)
		exit(1);
	memset(b, '[', n);
	CHECK(json_validate(b, n, 64, NULL) == -1);
	CHECK(json_validate(b, n, 1000, &o) == -1 && o == NULL);
	memset(b + n / 2, ']', n / 2);
	CHECK(json_validate(b, n, 1000, NULL) == -1);
	memcpy(b, "{\"a\":", 5);
	CHECK(json_member(b, n, "a", &v, &vn) == -1);
	free(b);
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

/*
 * A member name with \u0000: json-c keeps the name up to the NUL, so
 * json_member must see the same name, or a fail body checked through
 * json-c ("error" is an object with a message) could store another
 * "error" member's value (found by fuzz_json).
 */
static void
nul_keys(void)
{
	struct json_object *o = NULL, *m;
	const char	*body = "{\"error\":5,\"error\\u0000x\":"
	    "{\"message\":\"m\"}}";
	const char	*v;
	size_t		 n;

	CHECK(json_validate(body, strlen(body), 64, &o) == 0);
	CHECK(json_object_object_get_ex(o, "error", &m) &&
	    json_object_is_type(m, json_type_object));
	json_object_put(o);
	CHECK(json_member(body, strlen(body), "error", &v, &n) == 1);
	CHECK(n == 15 && strncmp(v, "{\"message\":\"m\"}", n) == 0);
	body = "{\"\\u0000abc\":1}";
	CHECK(json_member(body, strlen(body), "", &v, &n) == 1 && n == 1);
}

/*
 * A \u escape in a member name is read within the span json_member was
 * given: the span is not a C string (no NUL after it; found by fuzz_json,
 * where sscanf looked for a terminator past the buffer: ASan in
 * scripts/test.sh --sanitize reports such a read).
 */
static void
escape_in_span(void)
{
	static const char text[] = "{\"\\u0072x\":1,\"\\u0041\":2}";
	size_t		 n = sizeof(text) - 1, pg = (size_t)sysconf(_SC_PAGESIZE);
	char		*map, *p;
	const char	*v;
	size_t		 vn;

	/* the span ends where an inaccessible page begins: a read past it faults */
	map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	CHECK(map != MAP_FAILED && mprotect(map + pg, pg, PROT_NONE) == 0);
	if (map == MAP_FAILED)
		return;
	memset(map, 'A', pg);			/* no NUL before the span either */
	p = map + pg - n;
	memcpy(p, text, n);
	CHECK(json_member(p, n, "rx", &v, &vn) == 1 && vn == 1 && *v == '1');
	CHECK(json_member(p, n, "A", &v, &vn) == 1 && vn == 1 && *v == '2');
	CHECK(json_member(p, n, "B", &v, &vn) == 0);
	munmap(map, 2 * pg);
}

/*
 * RFC 3629 well-formedness (Unicode 15, table 3-7) of raw UTF-8 in a
 * string, the same on every json-c: json-c 0.18 with JSON_TOKENER_STRICT
 * refuses every byte above 0x7F, json-c 0.16's own check lets overlongs,
 * encoded surrogates and code points above U+10FFFF through.
 */
static const struct utf8_case {
	const char	*bytes;
	int		 valid;
	const char	*what;
} utf8_cases[] = {
	{ "\xc3\xa9", 1, "U+00E9, 2 bytes" },
	{ "M\xc3\xbcller Z\xc3\xbcrich", 1, "Latin-1 letters" },
	{ "\xc2\x80", 1, "U+0080, the first 2-byte" },
	{ "\xdf\xbf", 1, "U+07FF, the last 2-byte" },
	{ "\xe0\xa0\x80", 1, "U+0800, the first 3-byte" },
	{ "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 1, "CJK, 3 bytes" },
	{ "\xed\x9f\xbf", 1, "U+D7FF, before the surrogates" },
	{ "\xee\x80\x80", 1, "U+E000, after the surrogates" },
	{ "\xef\xbf\xbd", 1, "U+FFFD" },
	{ "\xef\xbb\xbf", 1, "U+FEFF inside a string" },
	{ "\xf0\x90\x80\x80", 1, "U+10000, the first 4-byte" },
	{ "\xf0\x9f\x98\x80", 1, "an emoji, 4 bytes" },
	{ "\xf4\x8f\xbf\xbf", 1, "U+10FFFF, the last code point" },
	{ "\x80", 0, "a stray continuation byte" },
	{ "a\xbf", 0, "a stray continuation after ASCII" },
	{ "\xc3\xa9\x80", 0, "a continuation after a whole sequence" },
	{ "\xc0\xaf", 0, "overlong '/', 2 bytes" },
	{ "\xc1\xbf", 0, "overlong U+007F, 2 bytes" },
	{ "\xe0\x80\xaf", 0, "overlong '/', 3 bytes" },
	{ "\xe0\x9f\xbf", 0, "overlong U+07FF, 3 bytes" },
	{ "\xf0\x80\x80\xaf", 0, "overlong '/', 4 bytes" },
	{ "\xf0\x8f\xbf\xbf", 0, "overlong U+FFFF, 4 bytes" },
	{ "\xed\xa0\x80", 0, "an encoded high surrogate U+D800" },
	{ "\xed\xbf\xbf", 0, "an encoded low surrogate U+DFFF" },
	{ "\xed\xa0\xbd\xed\xb8\x80", 0, "an encoded surrogate pair (CESU-8)" },
	{ "\xf4\x90\x80\x80", 0, "U+110000, above U+10FFFF" },
	{ "\xf5\x80\x80\x80", 0, "lead byte F5" },
	{ "\xf8\x88\x80\x80\x80", 0, "a 5-byte form" },
	{ "\xfc\x84\x80\x80\x80\x80", 0, "a 6-byte form" },
	{ "\xfe", 0, "byte FE" },
	{ "\xff", 0, "byte FF" },
	{ "\xc3", 0, "a 2-byte sequence cut after 1" },
	{ "\xe6\x97", 0, "a 3-byte sequence cut after 2" },
	{ "\xf0\x9f\x98", 0, "a 4-byte sequence cut after 3" },
	{ "\xc3" "a", 0, "a lead byte before ASCII" },
	{ "\xe6\x97" "a", 0, "a 3-byte sequence broken by ASCII" },
};

/*
 * Every case as a whole string, as an object's member name and value,
 * and inside an array; a truncated case also at the very end of the
 * text (no closing quote to stop at).
 */
static void
utf8(void)
{
	static const char *const shapes[] = { "\"%s\"", "{\"%s\":1}",
	    "{\"k\":\"x%sy\"}", "[1,\"%s\",2]" };
	char		 text[128];
	size_t		 i, j;
	int		 got;

	for (i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		const struct utf8_case *c = &utf8_cases[i];
		for (j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
			snprintf(text, sizeof(text), shapes[j], c->bytes);
			got = ok(text);
			if (got != c->valid)
				fprintf(stderr, "utf8: %s in %s: %s, should be %s\n",
				    c->what, shapes[j], got ? "valid" : "invalid",
				    c->valid ? "valid" : "invalid");
			CHECK(got == c->valid);
		}
		snprintf(text, sizeof(text), "\"%s", c->bytes);
		CHECK(!ok(text));
	}
	/* outside a string, non-ASCII is never JSON */
	CHECK(!ok("\xc3\xa9"));
	CHECK(!ok("[\xc3\xa9]"));
	CHECK(!ok("\xef\xbb\xbf{}"));	/* a byte order mark (RFC 8259 8.1) */
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
	CHECK(clock_now_ms() > 1700000000000LL);
}

/* json_time and the civil conversions against gmtime_r over many dates. */
static void
civil(void)
{
	struct clock_civil c;
	struct tm	 tm;
	char		 got[RFC3339_LEN + 1], want[64];
	int64_t		 ms;
	time_t		 s;
	unsigned	 seed = 12345, i, bad = 0;

	for (i = 0; i < 20000; i++) {
		/* 1970 .. ~2200, plus every 29 Feb/1 Mar around 2000 and 2100 */
		ms = (int64_t)(rand_r(&seed) % 2000000) * 3600000LL +
		    rand_r(&seed) % 3600000;
		if (i < 8)
			ms = (int64_t)(i % 2 ? 4107542400LL : 951782400LL) *
			    1000 + (int64_t)(i / 2) * 86400000;
		s = (time_t)(ms / 1000);
		gmtime_r(&s, &tm);
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
		json_time(ms, got);
		clock_civil(ms, &c);
		if (strcmp(got, want) != 0 || clock_civil_ms(&c) != ms) {
			if (bad++ < 5)
				fprintf(stderr, "%lld: %s != %s\n",
				    (long long)ms, got, want);
		}
	}
	CHECK_EQ_INT(bad, 0);
}

int
main(void)
{
	civil();
	validate();
	utf8();
	members();
	nul_keys();
	escape_in_span();
	render();
	return check_done("unit_json");
}
