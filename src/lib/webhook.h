/*
 * webhook.h - the Standard Webhooks wire format of completion
 * notifications (issue 19): endpoint secrets as text, and the
 * webhook-signature header value.
 *
 * A secret is "whsec_" and the standard base64 (with padding) of
 * WEBHOOK_KEY_MIN..WEBHOOK_KEY_MAX key bytes; new ones have
 * WEBHOOK_KEY_LEN. A signature is "v1," and the standard base64 of
 * HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}"), the body
 * as sent; a header carries one per live secret, separated by a space.
 *
 * Stored secrets: a secret signs, so it cannot be a hash; the database
 * holds it sealed (AES-256-GCM, crypto_aead_seal) under a key derived
 * from webhook_key_file (webhook_keyfile_load), a file outside the
 * database, so that a dump alone reveals no secret. The endpoint's
 * tenant is the associated data: a sealed secret copied into another
 * tenant's row does not open.
 *
 * Endpoint URLs: webhook_url_check, the one rule for what
 * asyncexec-admin webhook add stores.
 *
 * lib layer: any layer (the HMAC, HKDF and AEAD are crypto.c's).
 */
#ifndef ASYNCEXEC_WEBHOOK_H
#define ASYNCEXEC_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define WEBHOOK_SECRET_PREFIX	"whsec_"
#define WEBHOOK_KEY_MIN		24
#define WEBHOOK_KEY_MAX		64
#define WEBHOOK_KEY_LEN		32
/* base64 text of n bytes, with padding */
#define WEBHOOK_B64_LEN(n)	((((n) + 2) / 3) * 4)
#define WEBHOOK_SECRET_MAX	(sizeof(WEBHOOK_SECRET_PREFIX) - 1 + \
				    WEBHOOK_B64_LEN(WEBHOOK_KEY_MAX))
#define WEBHOOK_SIG_LEN		(3 + WEBHOOK_B64_LEN(32))	/* "v1,..." */
/*
 * How long a worker trusts its reading that no endpoint is enabled
 * anywhere (handlers/lookup.c lookup_mark): meanwhile its requests end
 * executions without the outbox mark's subquery. asyncexec-admin webhook
 * add and enable return WEBHOOK_SEEN_MS + WEBHOOK_SEEN_SLACK_MS after
 * their commit (the slack: a Galera node applying it late), so that an
 * execution ended by a request that starts after they return is marked.
 */
#define WEBHOOK_SEEN_MS		1000
#define WEBHOOK_SEEN_SLACK_MS	250
/* a sealed secret: nonce, ciphertext, tag (secret_sealed VARBINARY(128)) */
#define WEBHOOK_SEALED_MAX	(WEBHOOK_KEY_MAX + AEAD_OVERHEAD)
#define WEBHOOK_KEYFILE_BYTES	32	/* random bytes in webhook_key_file */
#define WEBHOOK_URL_MAX		2048	/* bytes of an endpoint URL */

/* What a secret's text, a signature, the key file or a URL came to. */
enum webhook_rc {
	WEBHOOK_OK,
	WEBHOOK_BAD_SECRET,	/* no prefix, not base64, or a key too short
				 * or too long */
	WEBHOOK_FAILED,		/* randomness, the HMAC, HKDF or the AEAD
				 * failed (logged) */
	WEBHOOK_BAD_KEYFILE,	/* webhook_keyfile_load: missing, unreadable,
				 * open to others or not one line of base64
				 * of 32 bytes (the message says what to do) */
	WEBHOOK_FORGED,		/* webhook_secret_open: not sealed under this
				 * key for this tenant, or altered */
	WEBHOOK_BAD_URL		/* webhook_url_check: not a URL we send to */
};

enum webhook_rc	webhook_secret_new(char out[WEBHOOK_SECRET_MAX + 1]);
enum webhook_rc	webhook_secret_parse(const char *text,
		    unsigned char key[WEBHOOK_KEY_MAX], size_t *keylen);
enum webhook_rc	webhook_sign(const unsigned char *key, size_t keylen,
		    const char *msg_id, int64_t timestamp, const void *body,
		    size_t n, char out[WEBHOOK_SIG_LEN + 1]);
enum webhook_rc	webhook_keyfile_load(const char *path,
		    unsigned char key[AEAD_KEY_LEN], char *err, size_t errsz);
enum webhook_rc	webhook_secret_seal(const unsigned char key[AEAD_KEY_LEN],
		    const char *tenant, const unsigned char *secret, size_t len,
		    unsigned char *out, size_t outsz, size_t *outlen);
enum webhook_rc	webhook_secret_open(const unsigned char key[AEAD_KEY_LEN],
		    const char *tenant, const unsigned char *sealed, size_t n,
		    unsigned char out[WEBHOOK_KEY_MAX], size_t *len);
enum webhook_rc	webhook_url_check(const char *url, int *plain_http,
		    const char **why);

#endif
