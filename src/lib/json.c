/*
 * json.c - strict JSON validation and raw spans over validated text.
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "buf.h"
#include "clock.h"
#include "json.h"

/*
 * The scanner recurses once per nesting level: maxdepth bounds that
 * (containers nested deeper fail), so a body of a million '[' cannot
 * exhaust the stack.
 */
struct scan {
	const char	*p;
	const char	*end;
	unsigned	 depth;
	unsigned	 maxdepth;
};

/* json_member's bound: validated text is never nested deeper */
#define SCAN_DEPTH_LIMIT	1001

static int	scan_value(struct scan *);
static int	scan_members(struct scan *, char);

static void
skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	    *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The well-formed UTF-8 sequences of RFC 3629 (Unicode table 3-7), by
 * lead byte: how many continuation bytes follow and the range of the
 * first of them (the others are 80..BF). The narrowed first ranges
 * exclude overlong forms (E0, F0), encoded surrogates (ED) and code
 * points above U+10FFFF (F4); a lead byte not listed (80..C1, F5..FF)
 * is never well-formed.
 */
static const struct utf8_lead {
	unsigned char	 lo, hi;	/* lead byte range */
	unsigned char	 more;		/* continuation bytes */
	unsigned char	 first_lo, first_hi;
} utf8_leads[] = {
	{ 0xc2, 0xdf, 1, 0x80, 0xbf },
	{ 0xe0, 0xe0, 2, 0xa0, 0xbf },
	{ 0xe1, 0xec, 2, 0x80, 0xbf },
	{ 0xed, 0xed, 2, 0x80, 0x9f },
	{ 0xee, 0xef, 2, 0x80, 0xbf },
	{ 0xf0, 0xf0, 3, 0x90, 0xbf },
	{ 0xf1, 0xf3, 3, 0x80, 0xbf },
	{ 0xf4, 0xf4, 3, 0x80, 0x8f },
};

/*
 * Consumes the rest of the multi-byte sequence whose lead byte c was
 * just read; 0 when it is well-formed, -1 otherwise (also when the
 * text ends inside it).
 */
static int
scan_utf8(struct scan *s, unsigned char c)
{
	const struct utf8_lead *l = NULL;
	unsigned char	 b;
	size_t		 i;

	for (i = 0; i < sizeof(utf8_leads) / sizeof(utf8_leads[0]); i++)
		if (c >= utf8_leads[i].lo && c <= utf8_leads[i].hi)
			l = &utf8_leads[i];
	if (l == NULL || (size_t)(s->end - s->p) < l->more)
		return -1;
	b = (unsigned char)*s->p++;
	if (b < l->first_lo || b > l->first_hi)
		return -1;
	for (i = 1; i < l->more; i++)
		if (((unsigned char)*s->p++ & 0xc0) != 0x80)
			return -1;
	return 0;
}

/*
 * A string per RFC 8259 (raw control characters rejected), its raw
 * text well-formed UTF-8; 0 or -1.
 */
static int
scan_string(struct scan *s)
{
	int	 i;

	s->p++;				/* opening quote */
	while (s->p < s->end) {
		unsigned char c = (unsigned char)*s->p++;
		if (c == '"')
			return 0;
		if (c < 0x20)
			return -1;
		if (c >= 0x80) {
			if (scan_utf8(s, c) == -1)
				return -1;
			continue;
		}
		if (c != '\\')
			continue;
		if (s->p >= s->end)
			return -1;
		c = (unsigned char)*s->p++;
		if (c == 'u') {
			for (i = 0; i < 4; i++, s->p++)
				if (s->p >= s->end ||
				    strchr("0123456789abcdefABCDEF", *s->p) ==
				    NULL || *s->p == '\0')
					return -1;
		} else if (strchr("\"\\/bfnrt", c) == NULL || c == '\0')
			return -1;
	}
	return -1;
}

/* Consumes one or more digits; 0 or -1 when none. */
static int
digits(struct scan *s)
{
	if (s->p >= s->end || !is_digit(*s->p))
		return -1;
	while (s->p < s->end && is_digit(*s->p))
		s->p++;
	return 0;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; 0 or -1. */
static int
scan_number(struct scan *s)
{
	if (*s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (digits(s) == -1)
		return -1;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (digits(s) == -1)
			return -1;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (digits(s) == -1)
			return -1;
	}
	return 0;
}

static int
scan_literal(struct scan *s, const char *lit)
{
	size_t	 n = strlen(lit);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return -1;
	s->p += n;
	return 0;
}

/* An array or object (close is ']' or '}'); 0 or -1. */
static int
scan_container(struct scan *s, char close)
{
	int	 rc;

	if (s->depth >= s->maxdepth)
		return -1;
	s->depth++;
	rc = scan_members(s, close);
	s->depth--;
	return rc;
}

/* The members of a container after its opening character; 0 or -1. */
static int
scan_members(struct scan *s, char close)
{
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			if (s->p >= s->end || *s->p != '"' || scan_string(s))
				return -1;
			skip_ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return -1;
		}
		if (scan_value(s) == -1)
			return -1;
		if (s->p >= s->end)
			return -1;
		if (*s->p == close) {
			s->p++;
			return 0;
		}
		if (*s->p++ != ',')
			return -1;
		skip_ws(s);
	}
}

/* One value with the blanks around it; 0 or -1. */
static int
scan_value(struct scan *s)
{
	int	 rc;

	skip_ws(s);
	if (s->p >= s->end)
		return -1;
	switch (*s->p) {
	case '{': rc = scan_container(s, '}'); break;
	case '[': rc = scan_container(s, ']'); break;
	case '"': rc = scan_string(s); break;
	case 't': rc = scan_literal(s, "true"); break;
	case 'f': rc = scan_literal(s, "false"); break;
	case 'n': rc = scan_literal(s, "null"); break;
	default:
		if (*s->p != '-' && !is_digit(*s->p))
			return -1;
		rc = scan_number(s);
		break;
	}
	skip_ws(s);
	return rc;
}

/*
 * Validates p[0..n) as one JSON text, containers nested at most depth
 * deep. Returns 0 when valid, -1 otherwise. When out is not NULL it
 * receives the parsed tree (the caller puts it; NULL for the JSON null
 * value); without out no tree is built.
 */
int
json_validate(const char *p, size_t n, unsigned depth, struct json_object **out)
{
	struct json_tokener	*tok;
	struct json_object	*o;
	struct scan		 s = { p, p + n, 0, depth };
	enum json_tokener_error	 e;

	if (out != NULL)
		*out = NULL;
	if (n == 0 || n > 0x7fffffff || scan_value(&s) == -1 || s.p != s.end)
		return -1;
	if (out == NULL)
		return 0;
	/*
	 * The scan above is the strictness (grammar, UTF-8, depth): json-c's
	 * own differs between releases (0.18's JSON_TOKENER_STRICT refuses
	 * all non-ASCII text, 0.16's UTF-8 check passes overlongs and
	 * surrogates), so json-c only builds the tree. Its depth counts the
	 * top-level value too: depth containers need depth + 1.
	 */
	if ((tok = json_tokener_new_ex((int)depth + 1)) == NULL)
		return -1;
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, p, (int)n);
	e = json_tokener_get_error(tok);
	if (e == json_tokener_continue) {
		o = json_tokener_parse_ex(tok, "", 1);	/* end a bare number */
		e = json_tokener_get_error(tok);
	}
	json_tokener_free(tok);
	if (e != json_tokener_success) {
		json_object_put(o);
		return -1;
	}
	*out = o;
	return 0;
}

/*
 * Reads the 4 hex digits at p (exactly 4 bytes, no terminator needed:
 * sscanf would look for one past the span) into *v; 0 or -1.
 */
static int
hex4(const char *p, unsigned *v)
{
	int	 i, d;

	*v = 0;
	for (i = 0; i < 4; i++) {
		d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' :
		    p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 :
		    p[i] >= 'A' && p[i] <= 'F' ? p[i] - 'A' + 10 : -1;
		if (d == -1)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

/*
 * Compares a raw (still escaped) key token with key; 1 when equal. As
 * in json-c, whose names are C strings, a \u0000 ends the name.
 */
static int
key_equal(const char *raw, size_t n, const char *key)
{
	size_t	 i, k = 0, kl = strlen(key);
	unsigned v;

	for (i = 0; i < n; i++, k++) {
		char c = raw[i];
		if (c == '\\') {
			if (i + 1 >= n)
				return 0;
			c = raw[++i];
			if (c == 'u') {
				if (i + 4 >= n || hex4(raw + i + 1, &v) == -1 ||
				    v > 0x7f)
					return 0;
				if (v == 0)
					return k == kl;
				c = (char)v;
				i += 4;
			} else if (c != '"' && c != '\\' && c != '/')
				return 0;
		}
		if (k >= kl || key[k] != c)
			return 0;
	}
	return k == kl;
}

/*
 * In validated JSON text, finds the top-level object member named key
 * (the last one when repeated, as json-c does) and returns its raw value
 * span, blanks trimmed. Returns 1 found, 0 absent, -1 not an object.
 */
int
json_member(const char *p, size_t n, const char *key, const char **vp,
    size_t *vn)
{
	struct scan	 s = { p, p + n, 1, SCAN_DEPTH_LIMIT };
	const char	*k, *v, *e;
	size_t		 kn;
	int		 found = 0;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return -1;
	s.p++;
	for (;;) {
		skip_ws(&s);
		if (s.p >= s.end || *s.p != '"')
			return found;
		k = s.p + 1;
		if (scan_string(&s) == -1)
			return -1;
		kn = (size_t)(s.p - 1 - k);
		skip_ws(&s);
		s.p++;			/* ':' */
		skip_ws(&s);
		v = s.p;
		if (scan_value(&s) == -1)
			return -1;
		if (key_equal(k, kn, key)) {
			for (e = s.p; e > v && strchr(" \t\r\n", e[-1]); e--)
				;
			*vp = v;
			*vn = (size_t)(e - v);
			found = 1;
		}
		if (s.p < s.end && *s.p == ',')
			s.p++;
	}
}

/* Appends s as a quoted, escaped JSON string; 0 or -1. */
int
json_put_string(struct buf *b, const char *s)
{
	static const char hx[] = "0123456789abcdef";
	const char	*run = s;

	buf_append(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_append(b, run, (size_t)(s - run));
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			buf_append(b, e, 2);
		} else {
			char e[6] = { '\\', 'u', '0', '0', hx[c >> 4], hx[c & 15] };
			buf_append(b, e, 6);
		}
		run = s + 1;
	}
	buf_append(b, run, (size_t)(s - run));
	return buf_append(b, "\"", 1);
}

/* Writes n decimal digits of v at p. */
static void
digits_at(char *p, unsigned v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* Formats milliseconds since the epoch as RFC 3339 UTC with millis. */
void
json_time(int64_t ms, char out[RFC3339_LEN + 1])
{
	struct clock_civil	 c;

	clock_civil(ms, &c);
	memcpy(out, "0000-00-00T00:00:00.000Z", RFC3339_LEN + 1);
	digits_at(out, c.year >= 0 && c.year <= 9999 ? (unsigned)c.year : 0, 4);
	digits_at(out + 5, c.month, 2);
	digits_at(out + 8, c.day, 2);
	digits_at(out + 11, c.hour, 2);
	digits_at(out + 14, c.minute, 2);
	digits_at(out + 17, c.second, 2);
	digits_at(out + 20, c.millis, 3);
}
