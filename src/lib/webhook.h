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
 * lib layer: any layer (the HMAC is crypto.c's).
 */
#ifndef ASYNCEXEC_WEBHOOK_H
#define ASYNCEXEC_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_SECRET_PREFIX	"whsec_"
#define WEBHOOK_KEY_MIN		24
#define WEBHOOK_KEY_MAX		64
#define WEBHOOK_KEY_LEN		32
/* base64 text of n bytes, with padding */
#define WEBHOOK_B64_LEN(n)	((((n) + 2) / 3) * 4)
#define WEBHOOK_SECRET_MAX	(sizeof(WEBHOOK_SECRET_PREFIX) - 1 + \
				    WEBHOOK_B64_LEN(WEBHOOK_KEY_MAX))
#define WEBHOOK_SIG_LEN		(3 + WEBHOOK_B64_LEN(32))	/* "v1,..." */

/* What a secret's text or a signature came to. */
enum webhook_rc {
	WEBHOOK_OK,
	WEBHOOK_BAD_SECRET,	/* no prefix, not base64, or a key too short
				 * or too long */
	WEBHOOK_FAILED		/* randomness or the HMAC failed (logged) */
};

enum webhook_rc	webhook_secret_new(char out[WEBHOOK_SECRET_MAX + 1]);
enum webhook_rc	webhook_secret_parse(const char *text,
		    unsigned char key[WEBHOOK_KEY_MAX], size_t *keylen);
enum webhook_rc	webhook_sign(const unsigned char *key, size_t keylen,
		    const char *msg_id, int64_t timestamp, const void *body,
		    size_t n, char out[WEBHOOK_SIG_LEN + 1]);

#endif
