/*
 * test_webhook.c - Standard Webhooks secrets and signatures (src/lib/webhook.c)
 * against the specification's published test vector, which every verifier library
 * of the specification reproduces.
 */
#include <stdio.h>
#include <string.h>

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

int
main(void)
{
	vector();
	bad_secrets();
	new_secrets();
	return check_done("unit_webhook");
}
