/* Unit tests: SHA-256, base64url, constant-time compare, secrets. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "crypto.h"
#include "valid.h"

static void
sha(void)
{
	unsigned char	 h[SHA256_LEN];
	char		 hex[2 * SHA256_LEN + 1];

	crypto_sha256("abc", 3, h);
	hex_encode(h, sizeof(h), hex);
	CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	crypto_sha256("", 0, h);
	hex_encode(h, sizeof(h), hex);
	CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
}

static void
b64(void)
{
	/* RFC 4648 test vectors, base64url without padding */
	static const char *const in[] = { "", "f", "fo", "foo", "foob",
	    "fooba", "foobar" };
	static const char *const out[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg",
	    "Zm9vYmE", "Zm9vYmFy" };
	unsigned char	 raw[64], bin[3] = { 0xfb, 0xff, 0xfe };
	char		 enc[64];
	size_t		 i, n;

	for (i = 0; i < 7; i++) {
		b64url_encode((const unsigned char *)in[i], strlen(in[i]), enc,
		    sizeof(enc));
		CHECK_EQ_STR(enc, out[i]);
		CHECK(b64url_decode(out[i], strlen(out[i]), raw, sizeof(raw),
		    &n) == 0 && n == strlen(in[i]) &&
		    memcmp(raw, in[i], n) == 0);
	}
	b64url_encode(bin, 3, enc, sizeof(enc));
	CHECK_EQ_STR(enc, "-__-");
	CHECK(b64url_decode("Zg=", 3, raw, sizeof(raw), &n) == -1);
	CHECK(b64url_decode("Z", 1, raw, sizeof(raw), &n) == -1);
	CHECK(b64url_decode("Zh", 2, raw, sizeof(raw), &n) == -1);
	CHECK(b64url_decode("Zm+v", 4, raw, sizeof(raw), &n) == -1);
	CHECK(b64url_encode(bin, 3, enc, 4) == 0);
}

static void
secrets(void)
{
	unsigned char	 a[SHA256_LEN], b[SHA256_LEN], h[SHA256_LEN];
	char		 k1[64], k2[64], u[UUID_TEXT_LEN + 1];

	CHECK(crypto_new_secret("ak_", k1, sizeof(k1), a) == 0);
	CHECK(crypto_new_secret("ak_", k2, sizeof(k2), b) == 0);
	CHECK(strlen(k1) == 3 + SECRET_B64_LEN);
	CHECK(valid_secret(k1, "ak_"));
	CHECK(strcmp(k1, k2) != 0);
	crypto_sha256(k1, strlen(k1), h);
	CHECK(memcmp(h, a, SHA256_LEN) == 0);
	CHECK(crypto_equal(a, h, SHA256_LEN));
	CHECK(!crypto_equal(a, b, SHA256_LEN));
	h[SHA256_LEN - 1] ^= 1;
	CHECK(!crypto_equal(a, h, SHA256_LEN));
	CHECK(crypto_new_secret("ak_", k1, 10, a) == -1);
	crypto_uuid(u);
	CHECK(strlen(u) == 36 && u[14] == '4' && valid_correlation_id(u));
}

/* Sealed ids: round trip, no visible order, forgeries and other keys fail. */
static void
sealed(void)
{
	static const uint64_t ids[] = { 1, 2, 255, 256, 9007199254740993ULL,
	    UINT64_MAX };
	unsigned char	 k1[IDKEY_LEN], k2[IDKEY_LEN];
	char		 a[SEALED_B64_LEN + 1], b[SEALED_B64_LEN + 1];
	char		 tok[POLL_TOKEN_LEN + 8];
	uint64_t	 id;
	size_t		 i;

	CHECK(crypto_random(k1, sizeof(k1)) == 0);
	memcpy(k2, k1, sizeof(k2));
	k2[0] ^= 1;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		CHECK(crypto_id_seal(k1, ids[i], a) == 0);
		CHECK(strlen(a) == SEALED_B64_LEN);
		id = 0;
		CHECK(crypto_id_open(k1, a, &id) == 0 && id == ids[i]);
		CHECK(crypto_id_open(k2, a, &id) == -1);
		/* the text after the sealed id (the secret) is ignored */
		snprintf(tok, sizeof(tok), "%sSECRET", a);
		CHECK(crypto_id_open(k1, tok, &id) == 0 && id == ids[i]);
		/* every single-character change is refused */
		memcpy(b, a, sizeof(b));
		b[i] = b[i] == 'A' ? 'B' : 'A';
		CHECK(crypto_id_open(k1, b, &id) == -1);
	}
	/* neighbouring ids share no prefix worth mentioning */
	CHECK(crypto_id_seal(k1, 1, a) == 0 && crypto_id_seal(k1, 2, b) == 0);
	CHECK(strncmp(a, b, 4) != 0);
	/* short, long-but-invalid and non-base64url texts */
	CHECK(crypto_id_open(k1, "", &id) == -1);
	CHECK(crypto_id_open(k1, "AAAAAAAAAAAAAAAAAAAAA", &id) == -1);
	CHECK(crypto_id_open(k1, "AAAAAAAAAAAAAAAAAAAAAA", &id) == -1);
	CHECK(crypto_id_open(k1, "!!!!!!!!!!!!!!!!!!!!!!", &id) == -1);
	/* the last character carries 2 unused bits that must be zero */
	CHECK(crypto_id_seal(k1, 7, a) == 0);
	a[SEALED_B64_LEN - 1] = '_';
	CHECK(crypto_id_open(k1, a, &id) == -1);
}

int
main(void)
{
	sha();
	b64();
	secrets();
	sealed();
	return check_done("unit_crypto");
}
