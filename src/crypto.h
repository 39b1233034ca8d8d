/*
 * crypto.h - hashing, randomness, encodings and secret comparison.
 *
 * The only module that includes OpenSSL. Secrets (keys, tokens) are
 * 32 random bytes, shown to clients as 43 base64url characters without
 * padding and stored only as their SHA-256.
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

void	crypto_sha256(const void *, size_t, unsigned char out[SHA256_LEN]);
int	crypto_random(void *, size_t);
int	crypto_equal(const void *, const void *, size_t);
size_t	b64url_encode(const unsigned char *, size_t, char *out, size_t outsz);
int	b64url_decode(const char *, size_t, unsigned char *out, size_t outsz,
	    size_t *outlen);
void	hex_encode(const unsigned char *, size_t, char *out);
char	b64url_digit(unsigned);
int	b64url_value(char);
int	crypto_new_secret(const char *prefix, char *out, size_t outsz,
	    unsigned char hash[SHA256_LEN]);
void	crypto_uuid(char out[UUID_TEXT_LEN + 1]);
int	crypto_id_seal(const unsigned char key[IDKEY_LEN], uint64_t id,
	    char out[SEALED_B64_LEN + 1]);
int	crypto_id_open(const unsigned char key[IDKEY_LEN], const char *in,
	    uint64_t *id);
int	crypto_mac(const unsigned char *key, size_t klen, const void *,
	    size_t, unsigned char out[SHA256_LEN]);

#endif
