/*
 * test_webhook.c - Standard Webhooks secrets and signatures (src/lib/webhook.c)
 * against the specification's published test vector, which every verifier library
 * of the specification reproduces; the key file (webhook_keyfile_load: a fixed
 * derivation, every bad file refused with what to do), sealed secrets (round trip;
 * another tenant, another key, a changed byte or length refused) and endpoint URLs.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "webhook.h"

#define VEC_SECRET	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define VEC_ID		"msg_p5jXN8AQM9LWM0D4loKWxJek"
#define VEC_TS		1614265330
#define VEC_BODY	"{\"test\": 2432232314}"
#define VEC_SIG		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

/* The published vector; one byte of body, id or time changed, another signature. */
static void
vector(void)
{
	unsigned char	 key[WEBHOOK_KEY_MAX];
	size_t		 kl;
	char		 sig[WEBHOOK_SIG_LEN + 1];

	CHECK(webhook_secret_parse(VEC_SECRET, key, &kl) == WEBHOOK_OK);
	CHECK_EQ_INT(kl, 24);
	CHECK(webhook_sign(key, kl, VEC_ID, VEC_TS, VEC_BODY, strlen(VEC_BODY),
	    sig) == WEBHOOK_OK);
	CHECK_EQ_STR(sig, VEC_SIG);
	CHECK_EQ_INT(strlen(sig), WEBHOOK_SIG_LEN);
	CHECK(webhook_sign(key, kl, VEC_ID, VEC_TS + 1, VEC_BODY,
	    strlen(VEC_BODY), sig) == WEBHOOK_OK);
	CHECK(strcmp(sig, VEC_SIG) != 0);
	CHECK(webhook_sign(key, kl, "msg_p5jXN8AQM9LWM0D4loKWxJeK", VEC_TS,
	    VEC_BODY, strlen(VEC_BODY), sig) == WEBHOOK_OK);
	CHECK(strcmp(sig, VEC_SIG) != 0);
	CHECK(webhook_sign(key, kl, VEC_ID, VEC_TS, "{\"test\": 2432232315}",
	    strlen(VEC_BODY), sig) == WEBHOOK_OK);
	CHECK(strcmp(sig, VEC_SIG) != 0);
}

/* Secrets that are not one: no prefix, not base64, bad padding, too short or long. */
static void
bad_secrets(void)
{
	static const char *const bad[] = {
	    "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",		/* no prefix */
	    "whsec_", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",	/* length % 4 */
	    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS_",	/* base64url */
	    "whsec_MfKQ9r8G=YqrTwjUPD8ILPZIo2LaLaSw",	/* '=' inside */
	    "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",	/* 22 bytes */
	    "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "AAAAAAAAAAAAAAAAAAAAAAAA",			/* 66 bytes */
	    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ",
	};
	unsigned char	 key[WEBHOOK_KEY_MAX];
	size_t		 i, kl;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (webhook_secret_parse(bad[i], key, &kl) != WEBHOOK_BAD_SECRET)
			fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
		CHECK(webhook_secret_parse(bad[i], key, &kl) ==
		    WEBHOOK_BAD_SECRET);
		CHECK_EQ_INT(kl, 0);
	}
	CHECK(webhook_secret_parse("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", key,
	    &kl) == WEBHOOK_OK && kl == 24);
	CHECK(webhook_secret_parse("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	    key, &kl) == WEBHOOK_OK && kl == 26);
	CHECK(webhook_secret_parse("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
	    key, &kl) == WEBHOOK_OK && kl == 25);
}

/* New secrets: the prefix, WEBHOOK_KEY_LEN bytes back, never twice the same. */
static void
new_secrets(void)
{
	char		 a[WEBHOOK_SECRET_MAX + 1], b[WEBHOOK_SECRET_MAX + 1];
	unsigned char	 key[WEBHOOK_KEY_MAX];
	size_t		 kl;

	CHECK(webhook_secret_new(a) == WEBHOOK_OK);
	CHECK(webhook_secret_new(b) == WEBHOOK_OK);
	CHECK(strncmp(a, WEBHOOK_SECRET_PREFIX, 6) == 0);
	CHECK_EQ_INT(strlen(a), 6 + WEBHOOK_B64_LEN(WEBHOOK_KEY_LEN));
	CHECK(strcmp(a, b) != 0);
	CHECK(webhook_secret_parse(a, key, &kl) == WEBHOOK_OK);
	CHECK_EQ_INT(kl, WEBHOOK_KEY_LEN);
}

static char	 dir[64], path[128];

/* Writes text (n bytes) as the key file, mode mode. */
static void
keyfile(const char *text, size_t n, mode_t mode)
{
	FILE	*f;

	unlink(path);
	if ((f = fopen(path, "w")) == NULL || fwrite(text, 1, n, f) != n) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
	fclose(f);
	chmod(path, mode);
}

/* The key of bytes 00..1f: HKDF-SHA256 (no salt, info "asyncexec webhook-secret v1"),
 * computed with Python's hmac; with and without the newline, and CRLF. */
static void
keyfile_derive(void)
{
	static const char *const ok[] = {
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\r\n",
	};
	unsigned char	 key[AEAD_KEY_LEN], raw[32];
	char		 hex[2 * AEAD_KEY_LEN + 1], err[512];
	size_t		 i;

	for (i = 0; i < 32; i++)
		raw[i] = (unsigned char)i;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		keyfile(ok[i], strlen(ok[i]), 0640);
		memset(key, 0, sizeof(key));
		CHECK(webhook_keyfile_load(path, key, err, sizeof(err)) ==
		    WEBHOOK_OK);
		hex_encode(key, sizeof(key), hex);
		CHECK_EQ_STR(hex, "55e10e026e2dfc6b61027637d5763b75f83117b106993ec6"
		    "2606a6be6e27fc89");
		CHECK(memcmp(key, raw, sizeof(raw)) != 0);
	}
	keyfile(ok[0], strlen(ok[0]), 0600);
	CHECK(webhook_keyfile_load(path, key, err, sizeof(err)) == WEBHOOK_OK);
}

/* Loads the key file expecting WEBHOOK_BAD_KEYFILE and a message holding want. */
static void
keyfile_bad(const char *what, const char *want)
{
	unsigned char	 key[AEAD_KEY_LEN];
	char		 err[512];
	int		 rc;

	rc = webhook_keyfile_load(path, key, err, sizeof(err));
	if (rc != WEBHOOK_BAD_KEYFILE || strstr(err, want) == NULL ||
	    strstr(err, path) == NULL)
		fprintf(stderr, "%s: rc %d, \"%s\"\n", what, rc, err);
	CHECK(rc == WEBHOOK_BAD_KEYFILE);
	CHECK(strstr(err, want) != NULL && strstr(err, path) != NULL);
	CHECK(strstr(err, "AAEC") == NULL);	/* never the content */
}

/* Missing, open to others, a directory, the wrong length, two lines, not base64. */
static void
keyfile_refused(void)
{
	static const char	 good[] =
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
	static const char *const bad[] = {
	    "", "\n", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\n",	/* 31 */
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==\n",	/* 34 */
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\n",
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\nAAAA\n",
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8_\n",	/* base64url */
	    " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\0\n",
	};
	size_t	 i;

	unlink(path);
	keyfile_bad("missing", "create it: head -c 32 /dev/urandom | base64 > ");
	keyfile_bad("missing", "chmod 0640");
	keyfile(good, strlen(good), 0644);
	keyfile_bad("0644", "open to others (mode 0644)");
	keyfile(good, strlen(good), 0641);
	keyfile_bad("0641", "chmod 0640");
	keyfile(good, strlen(good), 0602);
	keyfile_bad("0602", "open to others");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		keyfile(bad[i], strlen(bad[i]) + (i == 8), 0640);
		keyfile_bad("content", "must hold one line, the standard base64 "
		    "of 32 random bytes");
	}
	unlink(path);
	mkdir(path, 0750);
	keyfile_bad("directory", "not a regular file");
	rmdir(path);
	if (geteuid() != 0) {	/* root reads anything */
		keyfile(good, strlen(good), 0200);
		keyfile_bad("unreadable", "cannot read");
	}
	unlink(path);
}

/* Sealed secrets: they open for their tenant under their key, and only so. */
static void
sealing(void)
{
	unsigned char	 k1[AEAD_KEY_LEN], k2[AEAD_KEY_LEN];
	unsigned char	 sec[WEBHOOK_KEY_MAX], a[WEBHOOK_SEALED_MAX + 8];
	unsigned char	 b[WEBHOOK_SEALED_MAX], out[WEBHOOK_KEY_MAX];
	size_t		 i, na, nb, n;

	memset(k1, 0x11, sizeof(k1));
	memset(k2, 0x11, sizeof(k2));
	k2[31] ^= 1;
	for (i = 0; i < sizeof(sec); i++)
		sec[i] = (unsigned char)(0xa0 + i);
	CHECK(webhook_secret_seal(k1, "tenant-a", sec, 32, a, sizeof(a), &na) ==
	    WEBHOOK_OK);
	CHECK_EQ_INT(na, 32 + AEAD_OVERHEAD);
	CHECK(memmem(a, na, sec, 8) == NULL);	/* no plaintext inside */
	CHECK(webhook_secret_seal(k1, "tenant-a", sec, 32, b, sizeof(b), &nb) ==
	    WEBHOOK_OK);
	CHECK(nb == na && memcmp(a, b, na) != 0);	/* fresh nonces */
	CHECK(webhook_secret_open(k1, "tenant-a", a, na, out, &n) == WEBHOOK_OK);
	CHECK(n == 32 && memcmp(out, sec, 32) == 0);
	CHECK(webhook_secret_open(k1, "tenant-b", a, na, out, &n) ==
	    WEBHOOK_FORGED && n == 0);
	CHECK(webhook_secret_open(k1, "tenant-", a, na, out, &n) ==
	    WEBHOOK_FORGED);
	CHECK(webhook_secret_open(k2, "tenant-a", a, na, out, &n) ==
	    WEBHOOK_FORGED);
	for (i = 0; i < na; i++) {
		a[i] ^= 0x04;
		CHECK(webhook_secret_open(k1, "tenant-a", a, na, out, &n) ==
		    WEBHOOK_FORGED);
		a[i] ^= 0x04;
	}
	CHECK(webhook_secret_open(k1, "tenant-a", a, na - 1, out, &n) ==
	    WEBHOOK_FORGED);
	CHECK(webhook_secret_open(k1, "tenant-a", a, 0, out, &n) ==
	    WEBHOOK_FORGED);
	CHECK(webhook_secret_open(k1, "tenant-a", a, WEBHOOK_SEALED_MAX + 1, out,
	    &n) == WEBHOOK_FORGED);
	/* the extremes of a secret's length; out of range and a short buffer */
	CHECK(webhook_secret_seal(k1, "t", sec, 24, b, sizeof(b), &nb) ==
	    WEBHOOK_OK && webhook_secret_open(k1, "t", b, nb, out, &n) ==
	    WEBHOOK_OK && n == 24);
	CHECK(webhook_secret_seal(k1, "t", sec, 64, b, sizeof(b), &nb) ==
	    WEBHOOK_OK && nb == WEBHOOK_SEALED_MAX && webhook_secret_open(k1,
	    "t", b, nb, out, &n) == WEBHOOK_OK && n == 64 &&
	    memcmp(out, sec, 64) == 0);
	CHECK(webhook_secret_seal(k1, "t", sec, 23, b, sizeof(b), &nb) ==
	    WEBHOOK_BAD_SECRET && nb == 0);
	CHECK(webhook_secret_seal(k1, "t", sec, 65, a, sizeof(a), &nb) ==
	    WEBHOOK_BAD_SECRET);
	CHECK(webhook_secret_seal(k1, "t", sec, 32, b, 32 + AEAD_OVERHEAD - 1,
	    &nb) == WEBHOOK_BAD_SECRET);
}

/* Endpoint URLs: what webhook add accepts and what it refuses. */
static void
urls(void)
{
	static const char *const good[] = {
	    "https://example.org", "https://example.org/", "http://10.0.0.1:8080/h",
	    "https://a.b-c.example:443/x/y?z=1&w=%2F", "https://[::1]:8443/hook",
	    "https://[2001:db8::1]/", "https://EXAMPLE.org/p~a_t.h-(1)!*'$,;=:@",
	    "https://x/?", "http://localhost:1/",
	};
	static const char *const bad[] = {
	    "", "example.org", "ftp://example.org/", "HTTPS://example.org/",
	    "https://", "https:///path", "https://user@example.org/",
	    "https://user:pw@example.org/", "https://example.org/a b",
	    "https://example.org/\t", "https://example.org/#frag",
	    "https://example.org:0/", "https://example.org:65536/",
	    "https://example.org:/", "https://example.org:08/",
	    "https://example.org:8a/", "https://-a.example/", "https://a-.example/",
	    "https://a..example/", "https://example.org./", "https://ex_ample.org/",
	    "https://[::1/", "https://[]/", "https://[fe80::1%25eth0]/",
	    "https://example.org/%", "https://example.org/%2", "https://example.org/%zz",
	    "https://example.org/a\\b", "https://example.org/<x>",
	    "https://example.org/\"", "https://example.org/{}", "https://example.org/|",
	    "https://exa\xc3\xa9mple.org/", "https://example.org/\x7f",
	    "https://example.org/[x]",
	};
	char		 big[WEBHOOK_URL_MAX + 2];
	const char	*why;
	int		 plain;
	size_t		 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (webhook_url_check(good[i], &plain, &why) != WEBHOOK_OK)
			fprintf(stderr, "refused %s: %s\n", good[i], why);
		CHECK(webhook_url_check(good[i], &plain, &why) == WEBHOOK_OK &&
		    why == NULL);
		CHECK_EQ_INT(plain, strncmp(good[i], "http:", 5) == 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (webhook_url_check(bad[i], &plain, &why) != WEBHOOK_BAD_URL)
			fprintf(stderr, "accepted %s\n", bad[i]);
		CHECK(webhook_url_check(bad[i], &plain, &why) == WEBHOOK_BAD_URL &&
		    why != NULL);
	}
	/* 2048 bytes pass, 2049 do not */
	memcpy(big, "https://example.org/", 20);
	memset(big + 20, 'a', WEBHOOK_URL_MAX - 20);
	big[WEBHOOK_URL_MAX] = '\0';
	CHECK(webhook_url_check(big, &plain, &why) == WEBHOOK_OK);
	big[WEBHOOK_URL_MAX] = 'a';
	big[WEBHOOK_URL_MAX + 1] = '\0';
	CHECK(webhook_url_check(big, &plain, &why) == WEBHOOK_BAD_URL &&
	    strstr(why, "2048") != NULL);
	CHECK(webhook_url_check("https://u@h/", &plain, &why) == WEBHOOK_BAD_URL &&
	    strstr(why, "user") != NULL);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_webhook.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/webhook.key", dir);
	vector();
	bad_secrets();
	new_secrets();
	keyfile_derive();
	keyfile_refused();
	sealing();
	urls();
	rmdir(dir);
	return check_done("unit_webhook");
}
