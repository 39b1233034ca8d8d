/*
 * claim.c - POST /v1/backend/{env}/{svc}/{op}/claim
 *
 * Body {"max":1..100,"leaseSeconds":5..3600} (both optional). Hands out
 * the oldest claimable executions of a route the backend key serves,
 * each with a fresh callback token.
 */
#include <json-c/json.h>

#include "api.h"
#include "auth.h"
#include "clock.h"
#include "config.h"
#include "json.h"
#include "lookup.h"
#include "handlers.h"

/* Appends one claimed item. */
static void
put_item(struct buf *b, const struct req *req, const struct claim_item *it)
{
	char	 t[RFC3339_LEN + 1];

	buf_printf(b, "{\"id\":%llu,\"correlationId\":",
	    (unsigned long long)it->id);
	json_put_string(b, it->cid);
	buf_puts(b, ",\"tenantId\":");
	if (it->tenant_null)
		buf_puts(b, "null");
	else
		json_put_string(b, it->tenant);
	buf_printf(b, ",\"environment\":\"%s\",\"service\":\"%s\","
	    "\"operation\":\"%s\",\"request\":", req->env, req->svc, req->op);
	buf_append(b, it->request, it->request_len);
	buf_printf(b, ",\"callbackToken\":\"%s\",\"attempt\":%u", it->token,
	    it->attempt);
	json_time(it->lease_expires_at, t);
	buf_printf(b, ",\"leaseExpiresAt\":\"%s\"", t);
	json_time(it->created_at, t);
	buf_printf(b, ",\"createdAt\":\"%s\"}", t);
}

enum herr
handle_claim(struct app *app, struct req *req, struct resp *resp)
{
	unsigned char		 kh[SHA256_LEN];
	struct key_row		 key;
	struct json_object	*o = NULL;
	struct claim_item	*it = NULL;
	size_t			 n = 0, i;
	int			 max = 1, lease = 60, rc;
	enum herr		 e;

	if ((e = auth_key(app, req, KEY_BACKEND, &key, kh)) != HERR_OK)
		return e;
	if ((e = view_json_body(app, req, resp, app->cfg->max_request_bytes,
	    &o)) != HERR_OK)
		return e;
	if (!json_object_is_type(o, json_type_object) ||
	    view_int_member(o, "max", 1, CLAIM_MAX, &max) == -1 ||
	    view_int_member(o, "leaseSeconds", LEASE_MIN_SECONDS,
	    LEASE_MAX_SECONDS, &lease) == -1) {
		json_object_put(o);
		resp->detail = "body must be {\"max\":1.." API_STR(CLAIM_MAX)
		    ",\"leaseSeconds\":" API_STR(LEASE_MIN_SECONDS) ".."
		    API_STR(LEASE_MAX_SECONDS) "}";
		return HERR_INVALID_REQUEST;
	}
	json_object_put(o);
	rc = lookup_serves(app, key.id, req->env, req->svc, req->op);
	if (rc != REPO_OK)
		return rc == REPO_ERR ? HERR_UNAVAILABLE : HERR_UNKNOWN_ROUTE;
	if (repo_claim(app->db, req->env, req->svc, req->op, (unsigned)max,
	    (unsigned)lease, app->cfg->max_attempts, clock_now_ms(), &it,
	    &n) != REPO_OK)
		return HERR_UNAVAILABLE;
	buf_puts(&resp->body, "{\"executions\":[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			buf_puts(&resp->body, ",");
		put_item(&resp->body, req, &it[i]);
	}
	buf_puts(&resp->body, "]}");
	claim_free(it, n);
	resp_json(resp, 200);
	return HERR_OK;
}
