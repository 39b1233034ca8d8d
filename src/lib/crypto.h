/*
 * crypto.h - hashing, randomness, encodings and secret comparison.
 *
 * The only module that includes OpenSSL. Secrets (keys, tokens) are
 * 32 random bytes, shown to clients as 43 base64url characters without
 * padding and stored only as their SHA-256.
 *
 * lib layer: any layer (the only file that sees OpenSSL is crypto.c).
 */
#ifndef ASYNCEXEC_CRYPTO_H
#define ASYNCEXEC_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32
#define SECRET_LEN	32
#define SECRET_B64_LEN	43	/* base64url of SECRET_LEN bytes, no padding */
#define UUID_TEXT_LEN	36
#define IDKEY_LEN	16	/* AES-128 key that seals execution ids */
#define SEALED_B64_LEN	22	/* base64url of one sealed 16-byte block */
/* poll token: the sealed execution id, then the secret (see sql/003);
 * sealed with key version N >= 1 (sql/005), one more digit naming N
 * comes first */
#define POLL_TOKEN_LEN	(SEALED_B64_LEN + SECRET_B64_LEN)
#define POLL_TOKEN_MAX	(POLL_TOKEN_LEN + 1)
#define POLL_KEY_VERSIONS	64	/* key versions 0..63: one digit */

/*
 * One key, one purpose. The poll-token key (IDKEY_LEN bytes, sql/005)
 * seals poll tokens as it is (outstanding tokens keep opening); every
 * other purpose takes a key of its own, HKDF-SHA256 with the purpose's
 * label as info. Page tokens: of the poll-token key (crypto_subkey).
 * Webhook secrets: of the bytes of webhook_key_file, never of the
 * poll-token key (webhook_keyfile_load, webhook.h): that key lives in
 * the database, and a dump alone must not reveal a webhook secret.
 */
enum key_purpose {
	KP_PAGE_TOKEN,		/* "asyncexec page-token v1": list page tokens */
	KP_WEBHOOK_SECRET,	/* "asyncexec webhook-secret v1": the key
				 * that seals webhook secrets, from
				 * webhook_key_file (not crypto_subkey's) */
	KP__MAX
};
#define SUBKEY_LEN	32

/* authenticated encryption: AES-256-GCM, a random 96-bit nonce first,
 * the 128-bit tag last */
#define AEAD_KEY_LEN	32
#define AEAD_NONCE_LEN	12
#define AEAD_TAG_LEN	16
#define AEAD_OVERHEAD	(AEAD_NONCE_LEN + AEAD_TAG_LEN)

/* what crypto_aead_open found */
enum aead_rc {
	AEAD_OK,		/* authentic: the plaintext is out */
	AEAD_FORGED,		/* not sealed under this key and data */
	AEAD_FAILED		/* the library failed (logged) */
};

/* one part of a message fed to crypto_hmac_sha256 */
struct crypto_part {
	const void	*p;
	size_t		 len;
};

void	crypto_sha256(const void *, size_t, unsigned char out[SHA256_LEN]);
int	crypto_hmac_sha256(const void *key, size_t keylen,
	    const struct crypto_part *, size_t n, unsigned char out[SHA256_LEN]);
int	crypto_random(void *, size_t);
int	crypto_equal(const void *, const void *, size_t);
void	crypto_cleanse(void *, size_t);
size_t	b64url_encode(const unsigned char *, size_t, char *out, size_t outsz);
int	b64url_decode(const char *, size_t, unsigned char *out, size_t outsz,
	    size_t *outlen);
void	hex_encode(const unsigned char *, size_t, char *out);
char	b64url_digit(unsigned);
int	b64url_value(char);
int	crypto_new_secret(const char *prefix, char *out, size_t outsz,
	    unsigned char hash[SHA256_LEN]);
int	crypto_uuid(char out[UUID_TEXT_LEN + 1]);
int	crypto_id_seal(const unsigned char key[IDKEY_LEN], uint64_t id,
	    char out[SEALED_B64_LEN + 1]);
int	crypto_id_open(const unsigned char key[IDKEY_LEN], const char *in,
	    uint64_t *id);
int	crypto_hkdf(const void *salt, size_t, const void *ikm, size_t,
	    const void *info, size_t, unsigned char *out, size_t);
const char *crypto_purpose_label(enum key_purpose);
int	crypto_subkey(const unsigned char key[IDKEY_LEN], enum key_purpose,
	    unsigned char out[SUBKEY_LEN]);
enum aead_rc crypto_aead_seal(const unsigned char key[AEAD_KEY_LEN],
	    const void *ad, size_t, const void *pt, size_t, unsigned char *out);
enum aead_rc crypto_aead_open(const unsigned char key[AEAD_KEY_LEN],
	    const void *ad, size_t, const unsigned char *in, size_t,
	    unsigned char *pt);

#endif
