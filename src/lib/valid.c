/*
 * valid.c - strict validation of names, ids, tokens and headers.
 */
#include <string.h>
#include <strings.h>

#include "crypto.h"
#include "valid.h"

static int
is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int
is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9][a-z0-9._-]{0,63} */
int
valid_name(const char *s)
{
	size_t	 i;

	if (s == NULL || !is_lower_alnum(s[0]))
		return 0;
	for (i = 1; s[i] != '\0'; i++)
		if (i >= NAME_MAX_LEN ||
		    !(is_lower_alnum(s[i]) || strchr("._-", s[i]) != NULL))
			return 0;
	return 1;
}

/* Every character in extra or alphanumeric, length 1..max. */
static int
charset_len(const char *s, const char *extra, size_t max)
{
	size_t	 i;

	if (s == NULL || s[0] == '\0')
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= max || !(is_alnum(s[i]) || strchr(extra, s[i]) != NULL))
			return 0;
	return 1;
}

/* [A-Za-z0-9._-]{1,64} */
int
valid_tenant(const char *s)
{
	return charset_len(s, "._-", TENANT_MAX_LEN);
}

/* [A-Za-z0-9._:-]{1,128} */
int
valid_correlation_id(const char *s)
{
	return charset_len(s, "._:-", CID_MAX_LEN);
}

/*
 * A correlation id a submit may take: valid_correlation_id, and neither
 * "." nor "..", which clients that normalise URLs drop from the poll and
 * cancel paths (only an existing one is still looked up as sent).
 */
int
valid_new_correlation_id(const char *s)
{
	return valid_correlation_id(s) && strcmp(s, ".") != 0 &&
	    strcmp(s, "..") != 0;
}

/* prefix followed by exactly 43 base64url characters. */
int
valid_secret(const char *s, const char *prefix)
{
	size_t	 pl = strlen(prefix);

	if (s == NULL || strncmp(s, prefix, pl) != 0)
		return 0;
	s += pl;
	return strlen(s) == SECRET_B64_LEN && charset_len(s, "-_",
	    SECRET_B64_LEN);
}

/* 1..19 decimal digits without a leading zero, value > 0. */
int
valid_exec_id(const char *s, uint64_t *out)
{
	uint64_t	 v = 0;
	size_t		 i;

	if (s == NULL || s[0] < '1' || s[0] > '9')
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		if (i >= 19 || s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 1;
}

/*
 * "application/json", any case, optionally followed by parameters
 * (";charset=utf-8"); blanks around the type are allowed.
 */
int
valid_json_content_type(const char *s)
{
	static const char t[] = "application/json";

	if (s == NULL)
		return 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (strncasecmp(s, t, sizeof(t) - 1) != 0)
		return 0;
	s += sizeof(t) - 1;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\0' || *s == ';';
}

/* Splits "ENV/SERVICE/OPERATION" into valid names; 1 or 0. */
int
valid_route_triple(const char *s, char env[NAME_MAX_LEN + 1],
    char svc[NAME_MAX_LEN + 1], char op[NAME_MAX_LEN + 1])
{
	char		*parts[3] = { env, svc, op };
	const char	*slash;
	size_t		 n;
	int		 i;

	for (i = 0; i < 3; i++) {
		slash = strchr(s, '/');
		if ((i < 2) != (slash != NULL))
			return 0;
		n = slash ? (size_t)(slash - s) : strlen(s);
		if (n == 0 || n > NAME_MAX_LEN)
			return 0;
		memcpy(parts[i], s, n);
		parts[i][n] = '\0';
		if (!valid_name(parts[i]))
			return 0;
		s += n + 1;
	}
	return 1;
}

/*
 * Returns the token of an "Authorization: Bearer TOKEN" value (scheme
 * case-insensitive, one or more blanks), or NULL when absent or malformed.
 */
const char *
valid_bearer(const char *h)
{
	if (h == NULL || strncasecmp(h, "Bearer", 6) != 0 ||
	    (h[6] != ' ' && h[6] != '\t'))
		return NULL;
	h += 6;
	while (*h == ' ' || *h == '\t')
		h++;
	return *h != '\0' ? h : NULL;
}

/*
 * Decodes the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF) into *cp; its length in
 * bytes, or 0 when it is not one.
 */
static size_t
utf8_char(const unsigned char *s, uint32_t *cp)
{
	static const uint32_t	 least[4] = { 0, 0x80, 0x800, 0x10000 };
	size_t			 n, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	if (n == 0 || s[0] >= 0xf8)
		return 0;
	*cp = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < least[n - 1] || *cp > 0x10ffff ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * Text that ends up in a JSON string (an operator's failure message):
 * well-formed UTF-8 throughout; control characters are escaped there.
 */
int
valid_utf8(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n;
	uint32_t		 cp;

	for (; *p != '\0'; p += n)
		if ((n = utf8_char(p, &cp)) == 0)
			return 0;
	return 1;
}

/*
 * A key's label: 1 to LABEL_MAX_LEN bytes of well-formed UTF-8 without
 * a control character (C0, DEL, C1), so that it fits its column and
 * keeps key list's tab-separated lines whole.
 */
int
valid_label(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 len = strlen(s), n;
	uint32_t		 cp;

	if (len == 0 || len > LABEL_MAX_LEN)
		return 0;
	for (; *p != '\0'; p += n)
		if ((n = utf8_char(p, &cp)) == 0 || cp < 0x20 ||
		    (cp >= 0x7f && cp <= 0x9f))
			return 0;
	return 1;
}
