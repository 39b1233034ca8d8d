/*
 * crypto.c - SHA-256, RAND_bytes, CRYPTO_memcmp, base64url, UUIDs,
 * sealed execution ids (AES-128 of one block), HKDF-SHA256 keys of one
 * purpose each, and authenticated encryption (AES-256-GCM).
 */
#include <string.h>
#include <threads.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <uuid/uuid.h>

#include "crypto.h"
#include "log.h"

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The base64url digit of v (0..63). */
char
b64url_digit(unsigned v)
{
	return b64[v & 63];
}

/* The value of base64url digit c, or -1 when c is none. */
int
b64url_value(char c)
{
	const char	*p = c != '\0' ? strchr(b64, c) : NULL;

	return p != NULL ? (int)(p - b64) : -1;
}

static once_flag	 sha_once = ONCE_FLAG_INIT;
static EVP_MD		*sha_md;	/* fetched once; shared, read-only */
static tss_t		 sha_ctx;	/* a digest context per thread */
static int		 sha_ctx_ok;

static void
sha_ctx_free(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void
sha_init(void)
{
	sha_md = EVP_MD_fetch(NULL, "SHA256", NULL);
	sha_ctx_ok = tss_create(&sha_ctx, sha_ctx_free) == thrd_success;
}

/*
 * SHA-256 of n bytes at p into out. The digest is fetched once per
 * process and each thread reuses its own context, freed when the thread
 * ends (SHA256() fetches both on every call: 0.40 against 0.10 us here,
 * and every request hashes four to six times; one context shared by
 * threads corrupted the heap: unit_crypto). Without them, SHA256().
 */
void
crypto_sha256(const void *p, size_t n, unsigned char out[SHA256_LEN])
{
	EVP_MD_CTX	*ctx = NULL;
	unsigned int	 len;

	call_once(&sha_once, sha_init);
	if (sha_md != NULL && sha_ctx_ok && (ctx = tss_get(sha_ctx)) == NULL &&
	    (ctx = EVP_MD_CTX_new()) != NULL &&
	    tss_set(sha_ctx, ctx) != thrd_success) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	if (ctx == NULL || EVP_DigestInit_ex2(ctx, sha_md, NULL) != 1 ||
	    EVP_DigestUpdate(ctx, p, n) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != SHA256_LEN)
		SHA256(p, n, out);
}

/* Fills p with n cryptographically random bytes; 0 or -1. */
int
crypto_random(void *p, size_t n)
{
	if (RAND_bytes(p, (int)n) != 1) {
		log_error("RAND_bytes failed");
		return -1;
	}
	return 0;
}

/* Constant-time comparison; 1 when equal, 0 otherwise. */
int
crypto_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

/*
 * Encodes n bytes as base64url without padding into out (NUL-terminated).
 * Returns the encoded length, or 0 when out is too small.
 */
size_t
b64url_encode(const unsigned char *in, size_t n, char *out, size_t outsz)
{
	size_t		 i, o = 0, need = (n * 4 + 2) / 3;
	unsigned	 v;

	if (outsz < need + 1)
		return 0;
	for (i = 0; i + 2 < n; i += 3) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = b64[v & 63];
	}
	if (n - i == 1) {
		v = (unsigned)in[i] << 16;
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
	} else if (n - i == 2) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
	}
	out[o] = '\0';
	return o;
}

static int
b64val(char c)
{
	const char	*p;

	if (c == '\0' || (p = strchr(b64, c)) == NULL)
		return -1;
	return (int)(p - b64);
}

/*
 * Decodes unpadded base64url; 0, or -1 on a bad character, a bad length,
 * non-zero trailing bits or too small an output.
 */
int
b64url_decode(const char *in, size_t n, unsigned char *out, size_t outsz,
    size_t *outlen)
{
	size_t		 i, o = 0;
	unsigned	 v = 0;
	int		 d, bits = 0;

	if (n % 4 == 1 || (n / 4) * 3 + (n % 4 ? n % 4 - 1 : 0) > outsz)
		return -1;
	for (i = 0; i < n; i++) {
		if ((d = b64val(in[i])) == -1)
			return -1;
		v = (v << 6 | (unsigned)d) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(v >> bits & 0xff);
		}
	}
	if (bits > 0 && (v & ((1u << bits) - 1)) != 0)
		return -1;
	*outlen = o;
	return 0;
}

/* Writes 2n lowercase hex digits and a NUL into out. */
void
hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";
	size_t		 i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hx[in[i] >> 4];
		out[2 * i + 1] = hx[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/*
 * Makes a new secret: prefix followed by base64url of 32 random bytes,
 * written to out; its SHA-256 (of the whole string) into hash. 0 or -1.
 */
int
crypto_new_secret(const char *prefix, char *out, size_t outsz,
    unsigned char hash[SHA256_LEN])
{
	unsigned char	 raw[SECRET_LEN];
	size_t		 pl = strlen(prefix);

	if (outsz < pl + SECRET_B64_LEN + 1 || crypto_random(raw, sizeof(raw)))
		return -1;
	memcpy(out, prefix, pl);
	b64url_encode(raw, sizeof(raw), out + pl, outsz - pl);
	OPENSSL_cleanse(raw, sizeof(raw));
	crypto_sha256(out, strlen(out), hash);
	return 0;
}

/* Overwrites n bytes of p with zeros (not optimised away). */
void
crypto_cleanse(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}

/*
 * Writes a random (version 4) UUID in lowercase into out; 0, or -1 when
 * RAND_bytes failed. The bytes come from RAND_bytes, as every secret's
 * do: libuuid's generator makes six system calls per UUID.
 */
int
crypto_uuid(char out[UUID_TEXT_LEN + 1])
{
	uuid_t	 u;

	if (crypto_random(u, sizeof(u)) == -1)
		return -1;
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);	/* version 4 */
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);	/* RFC 9562 variant */
	uuid_unparse_lower(u, out);
	return 0;
}

/*
 * The AES-128-ECB contexts of the last key used, kept per process so that
 * sealing or opening an id costs one block operation and no key schedule.
 */
static struct {
	unsigned char	 key[IDKEY_LEN];
	EVP_CIPHER_CTX	*enc, *dec;
} idc;

/* Makes idc ready for key; 0 or -1 (logged). */
static int
idc_ready(const unsigned char key[IDKEY_LEN])
{
	if (idc.enc != NULL && CRYPTO_memcmp(idc.key, key, IDKEY_LEN) == 0)
		return 0;
	if (idc.enc == NULL && ((idc.enc = EVP_CIPHER_CTX_new()) == NULL ||
	    (idc.dec = EVP_CIPHER_CTX_new()) == NULL))
		goto fail;
	if (EVP_EncryptInit_ex(idc.enc, EVP_aes_128_ecb(), NULL, key,
	    NULL) != 1 || EVP_DecryptInit_ex(idc.dec, EVP_aes_128_ecb(),
	    NULL, key, NULL) != 1)
		goto fail;
	EVP_CIPHER_CTX_set_padding(idc.enc, 0);
	EVP_CIPHER_CTX_set_padding(idc.dec, 0);
	memcpy(idc.key, key, IDKEY_LEN);
	return 0;
fail:
	log_error("cannot set up AES-128 for sealed ids");
	EVP_CIPHER_CTX_free(idc.enc);
	EVP_CIPHER_CTX_free(idc.dec);
	idc.enc = idc.dec = NULL;
	return -1;
}

/*
 * Seals id under key: base64url (22 characters and a NUL into out) of
 * AES-128(id as 8 big-endian bytes || 8 zero bytes). Without the key the
 * text reveals nothing about id. 0 or -1.
 */
int
crypto_id_seal(const unsigned char key[IDKEY_LEN], uint64_t id,
    char out[SEALED_B64_LEN + 1])
{
	unsigned char	 in[16] = { 0 }, ct[16];
	int		 i, n = 0;

	for (i = 0; i < 8; i++)
		in[i] = (unsigned char)(id >> (56 - 8 * i));
	if (idc_ready(key) == -1 ||
	    EVP_EncryptUpdate(idc.enc, ct, &n, in, sizeof(in)) != 1 ||
	    n != (int)sizeof(ct))
		return -1;
	b64url_encode(ct, sizeof(ct), out, SEALED_B64_LEN + 1);
	return 0;
}

/*
 * Opens the first SEALED_B64_LEN characters of in: 0 with *id when they
 * are an id sealed under key, -1 otherwise (a forged or foreign text
 * passes with probability 2^-64).
 */
int
crypto_id_open(const unsigned char key[IDKEY_LEN], const char *in,
    uint64_t *id)
{
	unsigned char	 ct[16], pt[16];
	size_t		 len;
	int		 i, n = 0;
	unsigned	 z = 0;

	if (strnlen(in, SEALED_B64_LEN) != SEALED_B64_LEN ||
	    b64url_decode(in, SEALED_B64_LEN, ct, sizeof(ct), &len) == -1 ||
	    len != sizeof(ct) || idc_ready(key) == -1 ||
	    EVP_DecryptUpdate(idc.dec, pt, &n, ct, sizeof(ct)) != 1 ||
	    n != (int)sizeof(pt))
		return -1;
	for (i = 8; i < 16; i++)
		z |= pt[i];
	if (z != 0)
		return -1;
	for (*id = 0, i = 0; i < 8; i++)
		*id = *id << 8 | pt[i];
	return 0;
}

/*
 * HKDF-SHA256 (RFC 5869: extract, then expand) of the ikm with salt
 * (none when saltlen is 0: HashLen zero bytes) and info, n bytes into
 * out (n <= 255 * 32). 0, or -1 (logged).
 */
int
crypto_hkdf(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
    const void *info, size_t infolen, unsigned char *out, size_t n)
{
	static EVP_KDF	*kdf;
	EVP_KDF_CTX	*kctx = NULL;
	OSSL_PARAM	 p[5], *q = p;
	int		 rc = -1;

	*q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	    (void *)ikm, ikmlen);
	if (saltlen > 0)
		*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
		    (void *)salt, saltlen);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
	    (void *)info, infolen);
	*q = OSSL_PARAM_construct_end();
	if (kdf == NULL)
		kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (kdf != NULL && (kctx = EVP_KDF_CTX_new(kdf)) != NULL &&
	    EVP_KDF_derive(kctx, out, n, p) == 1)
		rc = 0;
	EVP_KDF_CTX_free(kctx);
	if (rc == -1)
		log_error("HKDF-SHA256 failed");
	return rc;
}

/*
 * HMAC-SHA256 under key (keylen bytes) of the concatenation of the n
 * parts, each parts[i].len bytes at parts[i].p, into out: the parts are
 * fed in turn, never copied together (a part may be a 4 MiB body). 0, or
 * -1 (logged).
 */
int
crypto_hmac_sha256(const void *key, size_t keylen,
    const struct crypto_part *parts, size_t n, unsigned char out[SHA256_LEN])
{
	static EVP_MAC	*mac;
	EVP_MAC_CTX	*mctx = NULL;
	OSSL_PARAM	 p[2];
	size_t		 i, outl = 0;
	int		 rc = -1;

	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	p[1] = OSSL_PARAM_construct_end();
	if (mac == NULL)
		mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (mac != NULL && (mctx = EVP_MAC_CTX_new(mac)) != NULL &&
	    EVP_MAC_init(mctx, key, keylen, p) == 1) {
		for (i = 0; i < n; i++)
			if (EVP_MAC_update(mctx, parts[i].p, parts[i].len) != 1)
				break;
		if (i == n && EVP_MAC_final(mctx, out, &outl, SHA256_LEN) == 1 &&
		    outl == SHA256_LEN)
			rc = 0;
	}
	EVP_MAC_CTX_free(mctx);
	if (rc == -1)
		log_error("HMAC-SHA256 failed");
	return rc;
}

/* The HKDF info label of purpose kp (distinct, versioned). */
const char *
crypto_purpose_label(enum key_purpose kp)
{
	switch (kp) {
	case KP_PAGE_TOKEN:
		return "asyncexec page-token v1";
	case KP_WEBHOOK_SECRET:
		return "asyncexec webhook-secret v1";
	case KP__MAX:
		break;
	}
	return "asyncexec invalid purpose";
}

/*
 * The key of purpose kp under poll-token key key: HKDF-SHA256 of it (no
 * salt) with the purpose's label as info, SUBKEY_LEN bytes into out. A
 * key of one purpose tells nothing about the others' nor about key.
 * KP_WEBHOOK_SECRET is refused: its key comes from webhook_key_file
 * (webhook_keyfile_load), never from the key in the database.
 * 0, or -1 (logged).
 */
int
crypto_subkey(const unsigned char key[IDKEY_LEN], enum key_purpose kp,
    unsigned char out[SUBKEY_LEN])
{
	const char	*label = crypto_purpose_label(kp);

	if (kp >= KP__MAX || kp == KP_WEBHOOK_SECRET) {
		log_error("crypto_subkey: no subkey of the poll-token key for "
		    "%s", label);
		return -1;
	}
	return crypto_hkdf(NULL, 0, key, IDKEY_LEN, label, strlen(label), out,
	    SUBKEY_LEN);
}

/* The AES-256-GCM context, made once per process; NULL (logged) if not. */
static EVP_CIPHER_CTX *
gcm_ctx(void)
{
	static EVP_CIPHER_CTX	*ctx;

	if (ctx == NULL && (ctx = EVP_CIPHER_CTX_new()) == NULL)
		log_error("cannot set up AES-256-GCM");
	return ctx;
}

/*
 * Seals the n bytes at pt with the ad (authenticated, not carried) under
 * key into out: a fresh random nonce (AEAD_NONCE_LEN), the ciphertext (n
 * bytes), the tag (AEAD_TAG_LEN), n + AEAD_OVERHEAD bytes in all. The
 * nonce comes from RAND_bytes: two seals of the same text differ.
 * AEAD_OK or AEAD_FAILED (logged).
 */
enum aead_rc
crypto_aead_seal(const unsigned char key[AEAD_KEY_LEN], const void *ad,
    size_t adlen, const void *pt, size_t n, unsigned char *out)
{
	EVP_CIPHER_CTX	*c = gcm_ctx();
	int		 len = 0, fin = 0;

	if (c == NULL || crypto_random(out, AEAD_NONCE_LEN) == -1)
		return AEAD_FAILED;
	if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, out) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &len, ad, (int)adlen) != 1 ||
	    EVP_EncryptUpdate(c, out + AEAD_NONCE_LEN, &len, pt, (int)n) != 1 ||
	    EVP_EncryptFinal_ex(c, out + AEAD_NONCE_LEN + len, &fin) != 1 ||
	    (size_t)(len + fin) != n ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, AEAD_TAG_LEN,
	    out + AEAD_NONCE_LEN + n) != 1) {
		log_error("AES-256-GCM seal failed");
		return AEAD_FAILED;
	}
	return AEAD_OK;
}

/*
 * Opens inlen bytes (as crypto_aead_seal wrote them) with the ad under
 * key: AEAD_OK with inlen - AEAD_OVERHEAD bytes of plaintext at pt;
 * AEAD_FORGED when they were not sealed under that key and ad, or are
 * too short (pt then holds nothing to use); AEAD_FAILED (logged).
 */
enum aead_rc
crypto_aead_open(const unsigned char key[AEAD_KEY_LEN], const void *ad,
    size_t adlen, const unsigned char *in, size_t inlen, unsigned char *pt)
{
	EVP_CIPHER_CTX	*c = gcm_ctx();
	unsigned char	 tag[AEAD_TAG_LEN];
	size_t		 n = inlen - AEAD_OVERHEAD;
	int		 len = 0, fin = 0;

	if (inlen < AEAD_OVERHEAD)
		return AEAD_FORGED;
	if (c == NULL)
		return AEAD_FAILED;
	memcpy(tag, in + AEAD_NONCE_LEN + n, sizeof(tag));
	if (EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, in) != 1 ||
	    EVP_DecryptUpdate(c, NULL, &len, ad, (int)adlen) != 1 ||
	    EVP_DecryptUpdate(c, pt, &len, in + AEAD_NONCE_LEN, (int)n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, AEAD_TAG_LEN,
	    tag) != 1) {
		log_error("AES-256-GCM open failed");
		return AEAD_FAILED;
	}
	if (EVP_DecryptFinal_ex(c, pt + len, &fin) != 1) {
		OPENSSL_cleanse(pt, n);
		return AEAD_FORGED;
	}
	return AEAD_OK;
}
