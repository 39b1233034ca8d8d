/*
 * fuzz_polltoken.c - opening poll tokens: crypto_id_open of the sealed
 * part under a fixed key, and the base64url decoder under it.
 *
 * Properties checked besides the sanitizers:
 *  - an opened token re-seals to exactly its first SEALED_B64_LEN
 *    characters (the decoding is canonical: no two texts open to one id);
 *  - b64url_decode output re-encodes to its input;
 *  - the first 8 input bytes as an id seal and open back to that id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "valid.h"

static const unsigned char key[IDKEY_LEN] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f
};

/* A token as view.c gets it: a NUL-terminated header value. */
static void
check_open(const char *tok)
{
	char		 sealed[SEALED_B64_LEN + 1];
	uint64_t	 id;

	if (crypto_id_open(key, tok, &id) == -1)
		return;
	if (crypto_id_seal(key, id, sealed) == -1 ||
	    strncmp(sealed, tok, SEALED_B64_LEN) != 0) {
		fprintf(stderr, "fuzz_polltoken: opened %.22s to %llu, re-sealed %s\n", tok,
		    (unsigned long long)id, sealed);
		abort();
	}
	/* the secret part is what view.c hashes; it must be checkable */
	if (strlen(tok) == POLL_TOKEN_LEN)
		(void)valid_secret(tok + SEALED_B64_LEN, "");
}

static void
check_b64(const char *p, size_t n)
{
	unsigned char	 out[96];
	char		 again[130];
	size_t		 len;

	if (n > 128 || b64url_decode(p, n, out, sizeof(out), &len) == -1)
		return;
	if (b64url_encode(out, len, again, sizeof(again)) != n ||
	    memcmp(again, p, n) != 0) {
		fprintf(stderr, "fuzz_polltoken: b64url: %.*s decodes and re-encodes to %s\n",
		    (int)n, p, again);
		abort();
	}
}

static void
check_seal(const uint8_t *d, size_t n)
{
	char		 sealed[SEALED_B64_LEN + 1];
	uint64_t	 id = 0, back;
	size_t		 i;

	for (i = 0; i < 8 && i < n; i++)
		id = id << 8 | d[i];
	if (crypto_id_seal(key, id, sealed) == -1 ||
	    crypto_id_open(key, sealed, &back) == -1 || back != id)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*tok;

	if ((tok = malloc(size + 1)) == NULL)
		return 0;
	memcpy(tok, data, size);
	tok[size] = '\0';
	check_open(tok);
	check_b64(tok, strlen(tok));
	check_seal(data, size);
	free(tok);
	return 0;
}
