/*
 * auth.c - resolve the bearer key of a request to a stored key row.
 *
 * Keys are looked up by their SHA-256 only. A missing, malformed,
 * unknown or revoked key, or one of the wrong kind, is HERR_UNAUTHORIZED.
 */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
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
	/* a revocation ahead (a rotation's grace) takes effect on time,
	 * cached or not; a new one within the cache TTL */
	if (rc != REPO_OK || (k->revoked && k->revoke_at <= clock_now_ms()) ||
	    k->backend != (want == KEY_BACKEND))
		return HERR_UNAUTHORIZED;
	if (want == KEY_CONSUMER && !valid_tenant(k->tenant))
		return HERR_UNAUTHORIZED;
	return HERR_OK;
}

/*
 * The lineage identity of consumer key k into out: SHA-256 of
 * "lineage:<id of the lineage's first key>", what executions store as
 * initiator_lineage (sql/007) and poll, cancel and list compare.
 */
void
auth_lineage(const struct key_row *k, unsigned char out[SHA256_LEN])
{
	char	 s[32];
	int	 n;

	n = snprintf(s, sizeof(s), "lineage:%llu",
	    (unsigned long long)k->lineage);
	crypto_sha256(s, (size_t)n, out);
}
