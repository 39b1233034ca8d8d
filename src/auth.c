/*
 * auth.c - resolve the bearer key of a request to a stored key row.
 *
 * Keys are looked up by their SHA-256 only. A missing, malformed,
 * unknown or revoked key, or one of the wrong kind, is HERR_UNAUTHORIZED.
 */
#include <string.h>

#include "auth.h"
#include "crypto.h"
#include "lookup.h"
#include "valid.h"

/*
 * Authenticates req with a key of kind want. On HERR_OK, k is the key
 * and hash its SHA-256. HERR_UNAUTHORIZED or HERR_UNAVAILABLE otherwise.
 */
enum herr
auth_key(struct app *app, const struct req *req, enum key_kind want,
    struct key_row *k, unsigned char hash[SHA256_LEN])
{
	const char	*tok = valid_bearer(req->authorization);
	const char	*prefix = want == KEY_BACKEND ? "bk_" : "ak_";
	int		 rc;

	if (tok == NULL || !valid_secret(tok, prefix))
		return HERR_UNAUTHORIZED;
	crypto_sha256(tok, strlen(tok), hash);
	rc = lookup_key(app, hash, k);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	if (rc != REPO_OK || k->revoked || k->backend != (want == KEY_BACKEND))
		return HERR_UNAUTHORIZED;
	if (want == KEY_CONSUMER && !valid_tenant(k->tenant))
		return HERR_UNAUTHORIZED;
	return HERR_OK;
}
