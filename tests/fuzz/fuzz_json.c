/*
 * fuzz_json.c - JSON validation (json_validate, with its depth bound)
 * and raw member extraction (json_member) as the handlers use them.
 *
 * The first input byte picks the depth bound (1..64); the rest is the
 * text. Properties checked besides the sanitizers:
 *  - json_validate's answer does not depend on asking for the tree;
 *  - on a valid object, every member json_member finds ("result",
 *    "error", "max", "leaseSeconds", "") is a span inside the text that
 *    is itself valid JSON, as json-c's own member is present;
 *  - json_member on a non-object answers -1 or 0, never a span;
 *  - json_put_string of the text (made a C string) is valid JSON when the
 *    text is well-formed UTF-8;
 *  - UTF-8, against an independent oracle (utf8_ok, which decodes code
 *    points rather than matching byte ranges): text json_validate accepts
 *    is well-formed UTF-8, and well-formed text gets the same answer as
 *    the text with every multi-byte sequence replaced by 'x'
 *    (so no valid UTF-8 is refused for its encoding, on any json-c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "buf.h"
#include "json.h"

static const char *const keys[] = { "result", "error", "max",
    "leaseSeconds", "" };

/*
 * The oracle: whether p[0..n) is well-formed UTF-8 (RFC 3629) by decoding
 * each sequence and checking the code point (shortest form, not a
 * surrogate, at most U+10FFFF). When ascii is not NULL it receives the
 * text with each multi-byte sequence replaced by 'x' (no hex digit, no
 * escape letter, never valid outside a string); *an its length.
 */
static int
utf8_ok(const unsigned char *p, size_t n, char *ascii, size_t *an)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t		 i = 0, k, len, o = 0;
	uint32_t	 cp;

	while (i < n) {
		if (p[i] < 0x80) {
			if (ascii != NULL)
				ascii[o++] = (char)p[i];
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0) {
			len = 2;
			cp = p[i] & 0x1f;
		} else if ((p[i] & 0xf0) == 0xe0) {
			len = 3;
			cp = p[i] & 0x0f;
		} else if ((p[i] & 0xf8) == 0xf0) {
			len = 4;
			cp = p[i] & 0x07;
		} else
			return 0;
		if (n - i < len)
			return 0;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		if (ascii != NULL)
			ascii[o++] = 'x';
		i += len;
	}
	if (an != NULL)
		*an = o;
	return 1;
}

/* The UTF-8 properties of json_validate's answer rc on p[0..n). */
static void
check_utf8(const char *p, size_t n, unsigned depth, int rc)
{
	char	*ascii;
	size_t	 an;
	int	 well;

	if ((ascii = malloc(n ? n : 1)) == NULL)
		return;
	well = utf8_ok((const unsigned char *)p, n, ascii, &an);
	if (rc == 0 && !well) {
		fprintf(stderr, "fuzz_json: accepted ill-formed UTF-8\n");
		abort();
	}
	if (well && an != n && json_validate(ascii, an, depth, NULL) != rc) {
		fprintf(stderr, "fuzz_json: answer %d depends on the UTF-8 text\n", rc);
		abort();
	}
	free(ascii);
}

/* Checks the members of validated text p[0..n) against tree o. */
static void
check_members(const char *p, size_t n, unsigned depth, struct json_object *o)
{
	struct json_object	*m;
	const char		*v;
	size_t			 vn, i;
	int			 rc, has;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		rc = json_member(p, n, keys[i], &v, &vn);
		if (!json_object_is_type(o, json_type_object)) {
			if (rc == 1)
				abort();	/* a span of a non-object */
			continue;
		}
		has = json_object_object_get_ex(o, keys[i], &m);
		if (rc != (has ? 1 : 0)) {
			fprintf(stderr, "fuzz_json: json_member(%s) = %d, json-c %d\n",
			    keys[i], rc, has);
			abort();
		}
		if (rc == 1 && (v < p || v + vn > p + n ||
		    json_validate(v, vn, depth, NULL) == -1)) {
			fprintf(stderr, "fuzz_json: json_member(%s): bad span %.*s\n",
			    keys[i], (int)vn, v);
			abort();
		}
	}
}

/* json_put_string of p (up to its first NUL) must be a valid string. */
static void
check_put_string(const char *p, size_t n)
{
	struct buf	 b;
	char		*s;

	if ((s = strndup(p, n)) == NULL)
		return;
	buf_init(&b);
	json_put_string(&b, s);
	/* json_put_string copies bytes above 0x7F: only well-formed text */
	if (!buf_failed(&b) && utf8_ok((unsigned char *)s, strlen(s), NULL, NULL) &&
	    json_validate(b.data, b.len, 1, NULL) == -1) {
		fprintf(stderr, "fuzz_json: json_put_string: invalid %.*s\n",
		    (int)b.len, b.data);
		abort();
	}
	buf_free(&b);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object	*o = NULL;
	const char		*p = (const char *)data + 1;
	unsigned		 depth;
	int			 a, b;
	char			*copy;

	if (size < 1)
		return 0;
	depth = 1 + data[0] % 64;
	size--;
	/* the text in its own allocation, exactly sized: no NUL after it */
	if ((copy = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(copy, p, size);
	a = json_validate(copy, size, depth, NULL);
	b = json_validate(copy, size, depth, &o);
	if (a != b)
		abort();
	check_utf8(copy, size, depth, b);
	if (b == 0) {
		check_members(copy, size, depth, o);
		json_object_put(o);
	}
	check_put_string(copy, size);
	free(copy);
	return 0;
}
