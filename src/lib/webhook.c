/*
 * webhook.c - Standard Webhooks secrets and signatures (webhook.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "webhook.h"

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
