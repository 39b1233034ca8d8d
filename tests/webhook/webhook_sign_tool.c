/*
 * webhook_sign_tool.c - prints the webhook-signature value that the project's
 * own code (src/lib/webhook.c) computes, so the tests can check it with a
 * verifier nobody here wrote (the npm package standardwebhooks, PHP's
 * hash_hmac).
 *
 *   webhook_sign_tool SECRET MSG_ID TIMESTAMP BODY_FILE
 *
 * SECRET is whsec_..., TIMESTAMP Unix seconds, BODY_FILE the body as sent
 * ("-" for standard input). Prints "v1,BASE64" and a newline. Exit status 0,
 * 1 on a bad argument or a failure, 2 on usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook.h"

#define BODY_MAX	(64u << 20)	/* 64 MiB: far above any notification */

static _Noreturn void
die(const char *msg)
{
	fprintf(stderr, "webhook_sign_tool: %s\n", msg);
	exit(1);
}

/*
 * The whole of file path ("-": stdin) into a new buffer, *n its length.
 * The buffer (free it), or NULL with errno set.
 */
static char *
slurp(const char *path, size_t *n)
{
	FILE	*f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char	*buf = NULL, *nb;
	size_t	 cap = 0, got;

	*n = 0;
	if (f == NULL)
		return NULL;
	for (;;) {
		if (*n == cap) {
			if (cap >= BODY_MAX ||
			    (nb = realloc(buf, cap ? cap * 2 : 4096)) == NULL) {
				free(buf);
				buf = NULL;
				errno = cap >= BODY_MAX ? EFBIG : ENOMEM;
				break;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		got = fread(buf + *n, 1, cap - *n, f);
		*n += got;
		if (got == 0) {
			if (ferror(f)) {
				free(buf);
				buf = NULL;
			}
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	return buf;
}

/*
 * Unix seconds from s (decimal digits only, as the header carries them).
 * 0 and *ts set, or -1.
 */
static int
parse_ts(const char *s, int64_t *ts)
{
	char		*end;
	intmax_t	 v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoimax(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > INT64_MAX)
		return -1;
	*ts = (int64_t)v;
	return 0;
}

int
main(int argc, char *argv[])
{
	unsigned char	 key[WEBHOOK_KEY_MAX];
	char		 sig[WEBHOOK_SIG_LEN + 1];
	size_t		 kl, n;
	int64_t		 ts;
	char		*body;

	if (argc != 5) {
		fprintf(stderr, "usage: webhook_sign_tool SECRET MSG_ID "
		    "TIMESTAMP BODY_FILE\n");
		return 2;
	}
	if (webhook_secret_parse(argv[1], key, &kl) != WEBHOOK_OK)
		die("not a secret (whsec_ and base64 of 24..64 bytes)");
	if (parse_ts(argv[3], &ts) == -1)
		die("the timestamp is not Unix seconds");
	if ((body = slurp(argv[4], &n)) == NULL)
		die(strerror(errno));
	if (webhook_sign(key, kl, argv[2], ts, body, n, sig) != WEBHOOK_OK)
		die("webhook_sign failed");
	free(body);
	memset(key, 0, sizeof(key));
	printf("%s\n", sig);
	return fflush(stdout) == 0 ? 0 : 1;
}
