/*
 * webhook.c - Standard Webhooks secrets and signatures, the sealing of
 * stored secrets under webhook_key_file, endpoint URLs (webhook.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "webhook.h"

/* how to make a key file, for the messages of webhook_keyfile_load */
#define KEYFILE_HOWTO(f) \
	"head -c 32 /dev/urandom | base64 > " f "; chown root:asyncexec " f \
	"; chmod 0640 " f

static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 of in[0..n) with padding into out (NUL-terminated). */
static void
b64std_encode(const unsigned char *in, size_t n, char *out)
{
	uint32_t	 v;
	size_t		 i, o = 0;

	for (i = 0; i + 3 <= n; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64std[v >> 18 & 63];
		out[o++] = b64std[v >> 12 & 63];
		out[o++] = b64std[v >> 6 & 63];
		out[o++] = b64std[v & 63];
	}
	if (n - i > 0) {
		v = (uint32_t)in[i] << 16 |
		    (n - i == 2 ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = b64std[v >> 18 & 63];
		out[o++] = b64std[v >> 12 & 63];
		out[o++] = n - i == 2 ? b64std[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
}

/*
 * Decodes standard base64 s (padding required: '=' only as the last one
 * or two characters) into out, at most outsz bytes; *n gets the length.
 * 0, or -1 (not base64, or longer than outsz).
 */
static int
b64std_decode(const char *s, unsigned char *out, size_t outsz, size_t *n)
{
	size_t		 len = strlen(s), i, k, bytes, o = 0;
	const char	*c;
	uint32_t	 v;
	int		 d[4];

	if (len == 0 || len % 4 != 0)
		return -1;
	for (i = 0; i < len; i += 4) {
		for (k = 0; k < 4; k++) {
			d[k] = -1;	/* '=' */
			if (s[i + k] == '=' && i + 4 == len && (k == 3 ||
			    (k == 2 && s[i + 3] == '=')))
				continue;
			if ((c = strchr(b64std, s[i + k])) == NULL)
				return -1;
			d[k] = (int)(c - b64std);
		}
		if (d[0] < 0 || d[1] < 0)
			return -1;
		bytes = d[2] < 0 ? 1 : d[3] < 0 ? 2 : 3;
		if (o + bytes > outsz)
			return -1;
		v = (uint32_t)d[0] << 18 | (uint32_t)d[1] << 12 |
		    (uint32_t)(d[2] < 0 ? 0 : d[2]) << 6 |
		    (uint32_t)(d[3] < 0 ? 0 : d[3]);
		out[o++] = (unsigned char)(v >> 16);
		if (bytes > 1)
			out[o++] = (unsigned char)(v >> 8);
		if (bytes > 2)
			out[o++] = (unsigned char)v;
	}
	*n = o;
	return 0;
}

/*
 * A new secret: WEBHOOK_KEY_LEN random bytes as "whsec_" text into out.
 * WEBHOOK_OK or WEBHOOK_FAILED.
 */
enum webhook_rc
webhook_secret_new(char out[WEBHOOK_SECRET_MAX + 1])
{
	unsigned char	 key[WEBHOOK_KEY_LEN];
	size_t		 pl = sizeof(WEBHOOK_SECRET_PREFIX) - 1;

	if (crypto_random(key, sizeof(key)) == -1)
		return WEBHOOK_FAILED;
	memcpy(out, WEBHOOK_SECRET_PREFIX, pl);
	b64std_encode(key, sizeof(key), out + pl);
	memset(key, 0, sizeof(key));
	return WEBHOOK_OK;
}

/*
 * The key of secret text (with its "whsec_" prefix) into key, *keylen
 * its length. WEBHOOK_OK or WEBHOOK_BAD_SECRET.
 */
enum webhook_rc
webhook_secret_parse(const char *text, unsigned char key[WEBHOOK_KEY_MAX],
    size_t *keylen)
{
	size_t	 pl = sizeof(WEBHOOK_SECRET_PREFIX) - 1;

	*keylen = 0;
	if (strncmp(text, WEBHOOK_SECRET_PREFIX, pl) != 0 ||
	    b64std_decode(text + pl, key, WEBHOOK_KEY_MAX, keylen) == -1 ||
	    *keylen < WEBHOOK_KEY_MIN) {
		*keylen = 0;
		return WEBHOOK_BAD_SECRET;
	}
	return WEBHOOK_OK;
}

/*
 * The signature of body (n bytes, as sent) with webhook-id msg_id and
 * webhook-timestamp timestamp (Unix seconds) under key: "v1,BASE64"
 * into out. WEBHOOK_OK or WEBHOOK_FAILED.
 */
enum webhook_rc
webhook_sign(const unsigned char *key, size_t keylen, const char *msg_id,
    int64_t timestamp, const void *body, size_t n,
    char out[WEBHOOK_SIG_LEN + 1])
{
	unsigned char		 mac[SHA256_LEN];
	char			 ts[24];
	struct crypto_part	 parts[5];

	snprintf(ts, sizeof(ts), "%" PRId64, timestamp);
	parts[0] = (struct crypto_part){ msg_id, strlen(msg_id) };
	parts[1] = (struct crypto_part){ ".", 1 };
	parts[2] = (struct crypto_part){ ts, strlen(ts) };
	parts[3] = (struct crypto_part){ ".", 1 };
	parts[4] = (struct crypto_part){ body, n };
	if (crypto_hmac_sha256(key, keylen, parts, 5, mac) == -1)
		return WEBHOOK_FAILED;
	memcpy(out, "v1,", 3);
	b64std_encode(mac, sizeof(mac), out + 3);
	return WEBHOOK_OK;
}

/*
 * Opens key file path and reads it into text (at most size - 1 bytes,
 * NUL-terminated; *n the length): a regular file, no permission for
 * others (mode & 007). 0, or -1 with what to do in err.
 */
static int
keyfile_read(const char *path, char *text, size_t size, size_t *n, char *err,
    size_t errsz)
{
	struct stat	 sb;
	ssize_t		 r = 1;
	int		 fd;

	*n = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		if (errno == ENOENT)
			snprintf(err, errsz, "webhook_key_file %s does not "
			    "exist; create it: " KEYFILE_HOWTO("%s"), path,
			    path, path, path);
		else
			snprintf(err, errsz, "cannot read webhook_key_file %s: "
			    "%s; it must be readable by the user this runs as "
			    "(chown root:asyncexec %s; chmod 0640 %s)", path,
			    strerror(errno), path, path);
		return -1;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		snprintf(err, errsz, "webhook_key_file %s is not a regular "
		    "file; create it: " KEYFILE_HOWTO("%s"), path, path, path,
		    path);
	} else if (sb.st_mode & 007) {
		snprintf(err, errsz, "webhook_key_file %s is open to others "
		    "(mode %04o); chown root:asyncexec %s; chmod 0640 %s", path,
		    (unsigned)(sb.st_mode & 07777), path, path);
	} else {
		while (*n < size - 1 && (r = read(fd, text + *n,
		    size - 1 - *n)) > 0)
			*n += (size_t)r;
		if (r == -1)
			snprintf(err, errsz, "cannot read webhook_key_file %s: "
			    "%s", path, strerror(errno));
	}
	text[*n] = '\0';
	close(fd);
	return err[0] == '\0' ? 0 : -1;
}

/*
 * The key that seals webhook secrets: key file path holds one line, the
 * standard base64 of WEBHOOK_KEYFILE_BYTES random bytes (its newline
 * optional); key gets HKDF-SHA256 of those bytes (no salt) with the
 * label of KP_WEBHOOK_SECRET as info. Not the poll-token key's subkey:
 * that key lives in the database, and a dump alone must not open a
 * secret. WEBHOOK_OK; WEBHOOK_BAD_KEYFILE with what to do in err (never
 * the file's content); WEBHOOK_FAILED (logged).
 */
enum webhook_rc
webhook_keyfile_load(const char *path, unsigned char key[AEAD_KEY_LEN],
    char *err, size_t errsz)
{
	const char	*label = crypto_purpose_label(KP_WEBHOOK_SECRET);
	unsigned char	 raw[WEBHOOK_KEYFILE_BYTES];
	char		 text[128];
	size_t		 n, len = 0;
	enum webhook_rc	 rc = WEBHOOK_BAD_KEYFILE;

	err[0] = '\0';
	if (keyfile_read(path, text, sizeof(text), &n, err, errsz) == -1)
		goto done;
	if (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	if (n > 0 && text[n - 1] == '\r')
		text[--n] = '\0';
	if (strlen(text) != n || b64std_decode(text, raw, sizeof(raw),
	    &len) == -1 || len != sizeof(raw)) {
		snprintf(err, errsz, "webhook_key_file %s must hold one line, "
		    "the standard base64 of %d random bytes (a new file makes "
		    "the stored secrets unusable: rotate each endpoint's "
		    "secret after); create it: " KEYFILE_HOWTO("%s"), path,
		    WEBHOOK_KEYFILE_BYTES, path, path, path);
		goto done;
	}
	rc = crypto_hkdf(NULL, 0, raw, sizeof(raw), label, strlen(label), key,
	    AEAD_KEY_LEN) == 0 ? WEBHOOK_OK : WEBHOOK_FAILED;
	if (rc == WEBHOOK_FAILED)
		snprintf(err, errsz, "cannot derive the webhook secret key");
done:
	explicit_bzero(text, sizeof(text));
	explicit_bzero(raw, sizeof(raw));
	return rc;
}

/*
 * Seals secret (len key bytes, WEBHOOK_KEY_MIN..WEBHOOK_KEY_MAX) of an
 * endpoint of tenant under key into out (outsz bytes, at least len +
 * AEAD_OVERHEAD; *outlen the sealed length): the tenant id is the
 * associated data. WEBHOOK_OK, WEBHOOK_BAD_SECRET (a length out of
 * range, or out too small) or WEBHOOK_FAILED (logged).
 */
enum webhook_rc
webhook_secret_seal(const unsigned char key[AEAD_KEY_LEN], const char *tenant,
    const unsigned char *secret, size_t len, unsigned char *out, size_t outsz,
    size_t *outlen)
{
	*outlen = 0;
	if (len < WEBHOOK_KEY_MIN || len > WEBHOOK_KEY_MAX ||
	    outsz < len + AEAD_OVERHEAD)
		return WEBHOOK_BAD_SECRET;
	if (crypto_aead_seal(key, tenant, strlen(tenant), secret, len, out) !=
	    AEAD_OK)
		return WEBHOOK_FAILED;
	*outlen = len + AEAD_OVERHEAD;
	return WEBHOOK_OK;
}

/*
 * Opens n sealed bytes (webhook_secret_seal's) of an endpoint of tenant
 * under key: the secret's key bytes into out, *len their number.
 * WEBHOOK_OK; WEBHOOK_FORGED (another key or tenant, altered, or a
 * length no secret has: out holds nothing); WEBHOOK_FAILED (logged).
 */
enum webhook_rc
webhook_secret_open(const unsigned char key[AEAD_KEY_LEN], const char *tenant,
    const unsigned char *sealed, size_t n, unsigned char out[WEBHOOK_KEY_MAX],
    size_t *len)
{
	*len = 0;
	if (n < WEBHOOK_KEY_MIN + AEAD_OVERHEAD || n > WEBHOOK_SEALED_MAX)
		return WEBHOOK_FORGED;
	switch (crypto_aead_open(key, tenant, strlen(tenant), sealed, n, out)) {
	case AEAD_OK:
		*len = n - AEAD_OVERHEAD;
		return WEBHOOK_OK;
	case AEAD_FORGED:
		return WEBHOOK_FORGED;
	case AEAD_FAILED:
		break;
	}
	return WEBHOOK_FAILED;
}

/* Whether the n bytes at h are a DNS name, an IPv4 address, or an IPv6
 * address in brackets (no zone). */
static int
url_host(const char *h, size_t n)
{
	size_t	 i, label = 0;

	if (n > 2 && h[0] == '[' && h[n - 1] == ']') {
		for (i = 1; i < n - 1; i++)
			if (strchr("0123456789abcdefABCDEF:.", h[i]) == NULL)
				return 0;
		return memchr(h, ':', n) != NULL;
	}
	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i == n || h[i] == '.') {
			if (label == 0 || label > 63 || h[i - 1] == '-')
				return 0;
			label = 0;
		} else if ((h[i] >= 'a' && h[i] <= 'z') ||
		    (h[i] >= 'A' && h[i] <= 'Z') ||
		    (h[i] >= '0' && h[i] <= '9') || (h[i] == '-' && label > 0))
			label++;
		else
			return 0;
	}
	return 1;
}

/* Whether the n bytes at p are a port, 1..65535, without leading zeros. */
static int
url_port(const char *p, size_t n)
{
	unsigned long	 v = 0;
	size_t		 i;

	if (n == 0 || n > 5 || p[0] == '0')
		return 0;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	return v <= 65535;
}

/* Whether s (after the authority) is a path and query of RFC 3986
 * characters, every '%' starting an escape of two hex digits. */
static int
url_rest(const char *s)
{
	static const char	 hex[] = "0123456789abcdefABCDEF";

	for (; *s != '\0'; s++) {
		if (*s == '%') {
			if (s[1] == '\0' || strchr(hex, s[1]) == NULL ||
			    s[2] == '\0' || strchr(hex, s[2]) == NULL)
				return 0;
			s += 2;
		} else if (!((*s >= 'a' && *s <= 'z') ||
		    (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		    strchr("-._~!$&'()*+,;=:@/?", *s) != NULL))
			return 0;
	}
	return 1;
}

/*
 * Whether url is one an endpoint may have: "https://" or "http://" (in
 * lower case), a host (a DNS name of letters, digits, '-' and '.', an
 * IPv4 address, or an IPv6 address in brackets), an optional ":PORT"
 * (1..65535), then an optional path and query of RFC 3986 characters;
 * at most WEBHOOK_URL_MAX bytes of printable ASCII, no userinfo, no
 * fragment. *plain_http is 1 for http://. WEBHOOK_OK, or
 * WEBHOOK_BAD_URL with *why (a static message).
 */
enum webhook_rc
webhook_url_check(const char *url, int *plain_http, const char **why)
{
	const char	*a, *colon;
	size_t		 n = strlen(url), i, alen, hlen;

	*why = NULL;
	*plain_http = strncmp(url, "http://", 7) == 0;
	for (i = 0; i < n && i <= WEBHOOK_URL_MAX; i++)
		if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
			*why = "the URL must be printable ASCII without spaces";
	if (n > WEBHOOK_URL_MAX)
		*why = "the URL is longer than 2048 bytes";
	else if (!*plain_http && strncmp(url, "https://", 8) != 0)
		*why = "the URL must start with https:// (or http://)";
	if (*why != NULL)
		return WEBHOOK_BAD_URL;
	a = url + (*plain_http ? 7 : 8);
	alen = strcspn(a, "/?#");
	colon = a[0] == '[' ? memchr(a, ']', alen) : a;
	colon = colon != NULL ? memchr(colon, ':', alen - (size_t)(colon - a)) :
	    NULL;
	hlen = colon != NULL ? (size_t)(colon - a) : alen;
	if (memchr(a, '@', alen) != NULL)
		*why = "the URL must not carry a user or password (user@host)";
	else if (strchr(url, '#') != NULL)
		*why = "the URL must not have a fragment (#...): it is never sent";
	else if (!url_host(a, hlen))
		*why = "the URL needs a host: a DNS name, an IPv4 address or "
		    "[an IPv6 address]";
	else if (colon != NULL && !url_port(colon + 1, alen - hlen - 1))
		*why = "the URL's port must be 1..65535";
	else if (!url_rest(a + alen))
		*why = "the URL's path and query must be RFC 3986 characters "
		    "(escape others as %XX)";
	return *why == NULL ? WEBHOOK_OK : WEBHOOK_BAD_URL;
}
