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
 *  - json_put_string of the text (made a C string) is valid JSON.
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
	/* json-c validates UTF-8: only check the escaping of ASCII text */
	for (n = 0; s[n] != '\0' && (unsigned char)s[n] < 0x80; n++)
		;
	if (!buf_failed(&b) && s[n] == '\0' &&
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
	if (b == 0) {
		check_members(copy, size, depth, o);
		json_object_put(o);
	}
	check_put_string(copy, size);
	free(copy);
	return 0;
}
