/*
 * cbtoken.c - the callback token's layout (cbtoken.h).
 *
 * The bytes behind the base64url text, big-endian, offsets in the table:
 * the secret, a layout version, the id, three times in ms (48 bits each;
 * not_before 0 for none), the attempt, the priority, the route's digest,
 * then the correlation id: a length byte and its CID_RAW_MAX bytes at
 * most, or CID_UUID and the 16 bytes of a lowercase UUID. A claim whose
 * facts do not fit gets a token of the secret alone.
 */
#include <stdio.h>
#include <string.h>

#include "cbtoken.h"
#include "valid.h"

#define CBT_VERSION	1
#define CID_UUID	0xff
#define TIME_BYTES	6

enum {
	OFF_VERSION = SECRET_LEN,
	OFF_ID = OFF_VERSION + 1,
	OFF_CREATED = OFF_ID + 8,
	OFF_EXPIRES = OFF_CREATED + TIME_BYTES,
	OFF_NOT_BEFORE = OFF_EXPIRES + TIME_BYTES,
	OFF_ATTEMPT = OFF_NOT_BEFORE + TIME_BYTES,
	OFF_PRIORITY = OFF_ATTEMPT + 2,
	OFF_ROUTE = OFF_PRIORITY + 1,
	OFF_CID_KIND = OFF_ROUTE + CB_ROUTE_LEN,
	OFF_CID = OFF_CID_KIND + 1,
	RAW_MAX = CBTOKEN_MAX / 4 * 3,
	CID_RAW_MAX = RAW_MAX - OFF_CID
};
_Static_assert(CID_RAW_MAX >= 16, "a packed UUID fits");
_Static_assert(CID_RAW_MAX < CID_UUID, "raw lengths and CID_UUID differ");

/* The digest of a route that a token carries (a prefix of a SHA-256). */
void
cb_route(const char *env, const char *svc, const char *op,
    unsigned char out[CB_ROUTE_LEN])
{
	unsigned char	 d[SHA256_LEN];
	char		 s[3 * (NAME_MAX_LEN + 1) + 1];
	int		 n;

	n = snprintf(s, sizeof(s), "%s/%s/%s", env, svc, op);
	crypto_sha256(s, n > 0 ? (size_t)n : 0, d);
	memcpy(out, d, CB_ROUTE_LEN);
}

/* Whether s has the shape of a callback token: 43..128 base64url. */
int
cbtoken_valid(const char *s)
{
	size_t	 n;

	if (s == NULL)
		return 0;
	n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-_");
	return s[n] == '\0' && n >= SECRET_B64_LEN && n <= CBTOKEN_MAX;
}

static void
put_be(unsigned char *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t
get_be(const unsigned char *p, int n)
{
	uint64_t	 v = 0;
	int		 i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Packs a lowercase UUID text into 16 bytes: 1, or 0 when cid is none. */
static int
uuid_pack(const char *cid, unsigned char *out)
{
	size_t	 i, o = 0;
	int	 h, l;

	if (strlen(cid) != UUID_TEXT_LEN)
		return 0;
	for (i = 0; i < UUID_TEXT_LEN; ) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (cid[i++] != '-')
				return 0;
			continue;
		}
		if ((h = hexval(cid[i])) == -1 || (l = hexval(cid[i + 1])) == -1)
			return 0;
		out[o++] = (unsigned char)(h << 4 | l);
		i += 2;
	}
	return 1;
}

static void
uuid_unpack(const unsigned char *p, char out[UUID_TEXT_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	size_t	 i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 15];
	}
	out[o] = '\0';
}

/*
 * The facts' bytes after the secret into raw: their end offset, or 0 when
 * they do not fit (the token then carries the secret alone).
 */
static size_t
facts_put(const struct cb_facts *f, unsigned char raw[RAW_MAX])
{
	const uint64_t	 tmax = (uint64_t)1 << (8 * TIME_BYTES);
	size_t		 cn = strlen(f->cid);

	if (f->created_at < 0 || (uint64_t)f->created_at >= tmax ||
	    f->expires_at < 0 || (uint64_t)f->expires_at >= tmax ||
	    f->not_before < 0 || (uint64_t)f->not_before >= tmax ||
	    f->attempt > 0xffff || f->priority > 0xff ||
	    !valid_correlation_id(f->cid))
		return 0;
	raw[OFF_VERSION] = CBT_VERSION;
	put_be(raw + OFF_ID, f->id, 8);
	put_be(raw + OFF_CREATED, (uint64_t)f->created_at, TIME_BYTES);
	put_be(raw + OFF_EXPIRES, (uint64_t)f->expires_at, TIME_BYTES);
	put_be(raw + OFF_NOT_BEFORE, (uint64_t)f->not_before, TIME_BYTES);
	put_be(raw + OFF_ATTEMPT, f->attempt, 2);
	raw[OFF_PRIORITY] = (unsigned char)f->priority;
	memcpy(raw + OFF_ROUTE, f->route, CB_ROUTE_LEN);
	if (uuid_pack(f->cid, raw + OFF_CID)) {
		raw[OFF_CID_KIND] = CID_UUID;
		return OFF_CID + 16;
	}
	if (cn > CID_RAW_MAX)
		return 0;
	raw[OFF_CID_KIND] = (unsigned char)cn;
	memcpy(raw + OFF_CID, f->cid, cn);
	return OFF_CID + cn;
}

/*
 * A fresh token for the claim of f (f NULL: the secret alone) into out,
 * the SHA-256 of its text into hash. 0, or -1 when no random bytes came.
 */
int
cbtoken_new(const struct cb_facts *f, char out[CBTOKEN_MAX + 1],
    unsigned char hash[SHA256_LEN])
{
	unsigned char	 raw[RAW_MAX];
	size_t		 n = 0;
	int		 rc = -1;

	if (crypto_random(raw, SECRET_LEN) == 0) {
		if (f != NULL)
			n = facts_put(f, raw);
		b64url_encode(raw, n > 0 ? n : SECRET_LEN, out,
		    CBTOKEN_MAX + 1);
		crypto_sha256(out, strlen(out), hash);
		rc = 0;
	}
	crypto_cleanse(raw, sizeof(raw));
	return rc;
}

/*
 * Reads the facts of token s into *f. CBT_SEALED when s is well formed
 * and carries them (authentic only if its hash matches a claim's),
 * else CBT_PLAIN.
 */
enum cbtoken_rc
cbtoken_open(const char *s, struct cb_facts *f)
{
	unsigned char	 raw[RAW_MAX];
	size_t		 n, kind;

	memset(f, 0, sizeof(*f));
	if (!cbtoken_valid(s) || strlen(s) == SECRET_B64_LEN ||
	    b64url_decode(s, strlen(s), raw, sizeof(raw), &n) == -1 ||
	    n <= OFF_CID || raw[OFF_VERSION] != CBT_VERSION)
		return CBT_PLAIN;
	kind = raw[OFF_CID_KIND];
	if (kind == CID_UUID && n == OFF_CID + 16)
		uuid_unpack(raw + OFF_CID, f->cid);
	else if (kind <= CID_RAW_MAX && n == OFF_CID + kind) {
		memcpy(f->cid, raw + OFF_CID, kind);
		f->cid[kind] = '\0';
		if (!valid_correlation_id(f->cid))
			return CBT_PLAIN;
	} else
		return CBT_PLAIN;
	f->id = get_be(raw + OFF_ID, 8);
	f->created_at = (int64_t)get_be(raw + OFF_CREATED, TIME_BYTES);
	f->expires_at = (int64_t)get_be(raw + OFF_EXPIRES, TIME_BYTES);
	f->not_before = (int64_t)get_be(raw + OFF_NOT_BEFORE, TIME_BYTES);
	f->attempt = (unsigned)get_be(raw + OFF_ATTEMPT, 2);
	f->priority = raw[OFF_PRIORITY];
	memcpy(f->route, raw + OFF_ROUTE, CB_ROUTE_LEN);
	return CBT_SEALED;
}
