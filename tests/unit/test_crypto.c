/*
 * Unit tests: SHA-256, base64url, constant-time compare, secrets, sealed ids,
 * HKDF-SHA256 (RFC 5869) and the keys of one purpose each, AES-256-GCM, and
 * the callback token's facts (cbtoken.h): round trips, the bound, tampering.
 * SHA-256 from several threads at once (the repository is used from threads:
 * db_repo's racing claims): each thread's digests equal OpenSSL's SHA256().
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

#include "cbtoken.h"
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

/*
 * Random UUIDs: the RFC 9562 layout of version 4 (8-4-4-4-12 lowercase
 * hex, version nibble 4, variant nibble 8 to b), each a valid
 * correlation id, and no repeat in 1,000.
 */
static void
uuids(void)
{
	static char	 seen[1000][UUID_TEXT_LEN + 1];
	size_t		 i, j, k, bad = 0, same = 0;

	for (i = 0; i < 1000; i++) {
		if (crypto_uuid(seen[i]) != 0) {
			bad++;
			continue;
		}
		for (k = 0; k < UUID_TEXT_LEN; k++) {
			char	 ch = seen[i][k];
			int	 dash = k == 8 || k == 13 || k == 18 || k == 23;

			if (dash ? ch != '-' : !((ch >= '0' && ch <= '9') ||
			    (ch >= 'a' && ch <= 'f')))
				bad++;
		}
		if (seen[i][UUID_TEXT_LEN] != '\0' || seen[i][14] != '4' ||
		    strchr("89ab", seen[i][19]) == NULL ||
		    !valid_correlation_id(seen[i]))
			bad++;
		for (j = 0; j < i; j++)
			same += strcmp(seen[i], seen[j]) == 0;
	}
	CHECK(bad == 0);
	CHECK(same == 0);
}

static void
secrets(void)
{
	unsigned char	 a[SHA256_LEN], b[SHA256_LEN], h[SHA256_LEN];
	char		 k1[64], k2[64];

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

/* The bytes of hex text h into out; their count. */
static size_t
unhex(const char *h, unsigned char *out)
{
	size_t	 n = 0;
	unsigned v;

	for (; h[0] != '\0' && h[1] != '\0'; h += 2) {
		sscanf(h, "%2x", &v);
		out[n++] = (unsigned char)v;
	}
	return n;
}

/* HKDF-SHA256: RFC 5869 test cases 1 (salt, info) and 3 (neither). */
static void
hkdf(void)
{
	unsigned char	 ikm[22], salt[13], info[10], okm[42];
	char		 hex[2 * sizeof(okm) + 1];
	size_t		 i;

	memset(ikm, 0x0b, sizeof(ikm));
	for (i = 0; i < sizeof(salt); i++)
		salt[i] = (unsigned char)i;
	for (i = 0; i < sizeof(info); i++)
		info[i] = (unsigned char)(0xf0 + i);
	CHECK(crypto_hkdf(salt, sizeof(salt), ikm, sizeof(ikm), info,
	    sizeof(info), okm, sizeof(okm)) == 0);
	hex_encode(okm, sizeof(okm), hex);
	CHECK_EQ_STR(hex, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db0"
	    "2d56ecc4c5bf34007208d5b887185865");
	CHECK(crypto_hkdf(NULL, 0, ikm, sizeof(ikm), "", 0, okm,
	    sizeof(okm)) == 0);
	hex_encode(okm, sizeof(okm), hex);
	CHECK_EQ_STR(hex, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec345"
	    "4e5f3c738d2d9d201395faa4b61a96c8");
}

/*
 * The keys of one purpose each: the page-token key's fixed vector (key
 * 00..0f, computed with Python's hmac), the labels, a key that differs
 * from the poll-token key, another poll-token key giving another; no
 * webhook-secret key of the poll-token key (it comes from its own file).
 */
static void
subkeys(void)
{
	unsigned char	 k[IDKEY_LEN], k2[IDKEY_LEN];
	unsigned char	 page[SUBKEY_LEN], hook[SUBKEY_LEN], other[SUBKEY_LEN];
	char		 hex[2 * SUBKEY_LEN + 1];
	size_t		 i;

	for (i = 0; i < sizeof(k); i++)
		k[i] = (unsigned char)i;
	CHECK_EQ_STR(crypto_purpose_label(KP_PAGE_TOKEN),
	    "asyncexec page-token v1");
	CHECK_EQ_STR(crypto_purpose_label(KP_WEBHOOK_SECRET),
	    "asyncexec webhook-secret v1");
	CHECK(crypto_subkey(k, KP_PAGE_TOKEN, page) == 0);
	hex_encode(page, sizeof(page), hex);
	CHECK_EQ_STR(hex, "ddf4df1d92090f3159289cf8c66d092880bae0053424abe3a890"
	    "91b5128fb030");
	/* the webhook-secret key comes from webhook_key_file, never from the
	 * poll-token key (test_webhook.c: keyfile_derive) */
	CHECK(crypto_subkey(k, KP_WEBHOOK_SECRET, hook) == -1);
	CHECK(memcmp(page, k, IDKEY_LEN) != 0);
	CHECK(crypto_subkey(k, KP__MAX, other) == -1);
	memcpy(k2, k, sizeof(k2));
	k2[IDKEY_LEN - 1] ^= 1;
	CHECK(crypto_subkey(k2, KP_PAGE_TOKEN, other) == 0);
	CHECK(memcmp(page, other, SUBKEY_LEN) != 0);
}

/* AES-256-GCM: round trip, fresh nonces, every change and other data refused. */
static void
aead(void)
{
	unsigned char	 key[AEAD_KEY_LEN], pt[8] = { 0, 0, 0, 0, 0, 0, 0, 62 };
	unsigned char	 a[8 + AEAD_OVERHEAD], b[8 + AEAD_OVERHEAD], out[8];
	size_t		 i;
	int		 refused = 0;

	CHECK(unhex("000102030405060708090a0b0c0d0e0f"
	    "101112131415161718191a1b1c1d1e1f", key) == sizeof(key));
	CHECK(crypto_aead_seal(key, "ad", 2, pt, sizeof(pt), a) == AEAD_OK);
	CHECK(crypto_aead_seal(key, "ad", 2, pt, sizeof(pt), b) == AEAD_OK);
	CHECK(memcmp(a, b, sizeof(a)) != 0);	/* random nonces */
	CHECK(memcmp(a + AEAD_NONCE_LEN, pt, sizeof(pt)) != 0);
	CHECK(crypto_aead_open(key, "ad", 2, a, sizeof(a), out) == AEAD_OK &&
	    memcmp(out, pt, sizeof(pt)) == 0);
	CHECK(crypto_aead_open(key, "ad", 2, b, sizeof(b), out) == AEAD_OK &&
	    memcmp(out, pt, sizeof(pt)) == 0);
	for (i = 0; i < sizeof(a); i++) {
		memcpy(b, a, sizeof(b));
		b[i] ^= 0x01;
		refused += crypto_aead_open(key, "ad", 2, b, sizeof(b), out) ==
		    AEAD_FORGED;
	}
	CHECK_EQ_INT(refused, (int)sizeof(a));
	CHECK(crypto_aead_open(key, "aD", 2, a, sizeof(a), out) == AEAD_FORGED);
	CHECK(crypto_aead_open(key, "ad", 1, a, sizeof(a), out) == AEAD_FORGED);
	CHECK(crypto_aead_open(key, "ad", 2, a, sizeof(a) - 1, out) ==
	    AEAD_FORGED);
	CHECK(crypto_aead_open(key, "ad", 2, a, AEAD_OVERHEAD - 1, out) ==
	    AEAD_FORGED);
	key[0] ^= 1;
	CHECK(crypto_aead_open(key, "ad", 2, a, sizeof(a), out) == AEAD_FORGED);
}

#define SHA_THREADS	8
#define SHA_ROUNDS	20000

/* SHA_ROUNDS digests of inputs of thread *arg; the number that differed. */
static int
sha_thread(void *arg)
{
	unsigned char	 h[SHA256_LEN], want[SHA256_LEN];
	char		 in[64];
	int		 i, bad = 0, n;

	for (i = 0; i < SHA_ROUNDS; i++) {
		n = snprintf(in, sizeof(in), "thread %d input %d", *(int *)arg, i);
		crypto_sha256(in, (size_t)n, h);
		SHA256((const unsigned char *)in, (size_t)n, want);
		bad += memcmp(h, want, SHA256_LEN) != 0;
	}
	return bad;
}

static void
sha_threads(void)
{
	thrd_t		 t[SHA_THREADS];
	int		 id[SHA_THREADS], i, res, bad = 0;

	for (i = 0; i < SHA_THREADS; i++) {
		id[i] = i;
		CHECK(thrd_create(&t[i], sha_thread, &id[i]) == thrd_success);
	}
	for (i = 0; i < SHA_THREADS; i++) {
		CHECK(thrd_join(t[i], &res) == thrd_success);
		bad += res;
	}
	printf("sha256 in %d threads: %d of %d digests differed\n", SHA_THREADS, bad,
	    SHA_THREADS * SHA_ROUNDS);
	CHECK_EQ_INT(bad, 0);
}

/* A token of f: sealed, it opens to f again; its hash is its text's. */
static void
cb_roundtrip(const struct cb_facts *f, size_t want_len)
{
	struct cb_facts	 g;
	unsigned char	 h[SHA256_LEN], h2[SHA256_LEN];
	char		 tok[CBTOKEN_MAX + 1];

	CHECK(cbtoken_new(f, tok, h) == 0);
	CHECK_EQ_INT((long)strlen(tok), (long)want_len);
	CHECK(cbtoken_valid(tok));
	crypto_sha256(tok, strlen(tok), h2);
	CHECK(memcmp(h, h2, SHA256_LEN) == 0);
	if (want_len == SECRET_B64_LEN) {
		CHECK(cbtoken_open(tok, &g) == CBT_PLAIN);
		return;
	}
	CHECK(cbtoken_open(tok, &g) == CBT_SEALED);
	CHECK(g.id == f->id && g.created_at == f->created_at &&
	    g.expires_at == f->expires_at && g.not_before == f->not_before &&
	    g.attempt == f->attempt && g.priority == f->priority &&
	    memcmp(g.route, f->route, CB_ROUTE_LEN) == 0);
	CHECK_EQ_STR(g.cid, f->cid);
}

static void
cbtokens(void)
{
	struct cb_facts	 f, g;
	unsigned char	 h[SHA256_LEN], h2[SHA256_LEN];
	char		 tok[CBTOKEN_MAX + 1], tok2[CBTOKEN_MAX + 1];
	char		 big[CBTOKEN_MAX + 2];

	memset(&f, 0, sizeof(f));
	f.id = 0x0102030405060708ULL;
	f.created_at = 1796256000123LL;	/* 2026-12-03 */
	f.expires_at = f.created_at + 86400000;
	f.attempt = 3;
	f.priority = 9;
	cb_route("prod", "billing", "invoice.render", f.route);
	/* a UUID packs into 16 bytes: 95 bytes, 127 characters */
	strcpy(f.cid, "0f8fad5b-d9cb-469f-a165-70867728950e");
	cb_roundtrip(&f, 127);
	f.not_before = f.created_at + 5000;
	cb_roundtrip(&f, 127);
	/* up to 17 bytes as they are; 96 bytes are the 128 characters */
	strcpy(f.cid, "order-17:abcdefgh");
	cb_roundtrip(&f, CBTOKEN_MAX);
	strcpy(f.cid, "o");
	cb_roundtrip(&f, 107);
	/* what does not fit: the secret alone */
	strcpy(f.cid, "order-18:abcdefghi");
	cb_roundtrip(&f, SECRET_B64_LEN);
	strcpy(f.cid, "0F8FAD5B-D9CB-469F-A165-70867728950E");
	cb_roundtrip(&f, SECRET_B64_LEN);
	strcpy(f.cid, "o");
	f.attempt = 70000;
	cb_roundtrip(&f, SECRET_B64_LEN);
	f.attempt = 3;
	CHECK(cbtoken_new(NULL, tok, h) == 0 && strlen(tok) == SECRET_B64_LEN);
	/* fresh secrets: the same facts never give the same token */
	CHECK(cbtoken_new(&f, tok, h) == 0 && cbtoken_new(&f, tok2, h2) == 0);
	CHECK(strcmp(tok, tok2) != 0 && memcmp(h, h2, SHA256_LEN) != 0);
	CHECK(strcmp(tok + SECRET_B64_LEN, tok2 + SECRET_B64_LEN) != 0 ||
	    memcmp(tok, tok2, SECRET_B64_LEN) != 0);
	/* altered facts change the hash (the claim's no longer matches) */
	strcpy(tok2, tok);
	tok2[60] = tok2[60] == 'A' ? 'B' : 'A';
	crypto_sha256(tok2, strlen(tok2), h2);
	CHECK(memcmp(h, h2, SHA256_LEN) != 0);
	CHECK(cbtoken_open(tok2, &g) == CBT_SEALED);
	CHECK(g.created_at != f.created_at || g.expires_at != f.expires_at);
	/* the shape: 43..128 base64url characters */
	memset(big, 'A', sizeof(big));
	big[CBTOKEN_MAX + 1] = '\0';
	CHECK(!cbtoken_valid(big));
	big[CBTOKEN_MAX] = '\0';
	CHECK(cbtoken_valid(big));
	big[SECRET_B64_LEN - 1] = '\0';
	CHECK(!cbtoken_valid(big));
	CHECK(!cbtoken_valid(NULL));
	strcpy(tok2, tok);
	tok2[50] = '+';
	CHECK(!cbtoken_valid(tok2) && cbtoken_open(tok2, &g) == CBT_PLAIN);
	/* another layout version, or a cut token: no facts */
	memset(big, 'A', sizeof(big));
	big[CBTOKEN_MAX] = '\0';
	CHECK(cbtoken_open(big, &g) == CBT_PLAIN);
	tok[100] = '\0';
	CHECK(cbtoken_open(tok, &g) == CBT_PLAIN);
}

int
main(void)
{
	sha();
	sha_threads();
	b64();
	secrets();
	uuids();
	sealed();
	hkdf();
	subkeys();
	aead();
	cbtokens();
	return check_done("unit_crypto");
}
