/*
 * poll.c - GET /v1/executions/{env}/{svc}/{op}/{correlationId}
 *
 * 200 with the status body, an ETag over that body (If-None-Match that
 * matches gives 304) and Retry-After while waiting. Any mismatch of
 * tenant, key or poll token is the same 404 (see view_find).
 */
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "handlers.h"

/* Whether the If-None-Match list h names etag (weak or strong) or "*". */
static int
etag_matches(const char *h, const char *etag)
{
	size_t	 n, el = strlen(etag);

	while (h != NULL && *h != '\0') {
		while (*h == ' ' || *h == '\t' || *h == ',')
			h++;
		if (strncmp(h, "W/", 2) == 0)
			h += 2;
		n = strcspn(h, ",");
		while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
			n--;
		if ((n == 1 && *h == '*') || (n == el && memcmp(h, etag, n) == 0))
			return 1;
		h += strcspn(h, ",");
	}
	return 0;
}

enum herr
handle_poll(struct app *app, struct req *req, struct resp *resp)
{
	struct exec_row	 r;
	unsigned char	 h[SHA256_LEN];
	char		 etag[2 * 16 + 3];
	enum herr	 e;
	int		 rc;

	if ((e = view_find(app, req, &r)) != HERR_OK)
		return e;
	/* the payloads only now that the caller proved to be the initiator,
	 * unless a small one came with the row (matched there too) */
	if (!r.payloads && (r.status == ST_COMPLETED || r.status ==
	    ST_FAILED || r.has_progress || r.has_last_error) &&
	    (rc = repo_exec_payload(app->db, &r)) != REPO_OK)
		return rc == REPO_ERR ? HERR_UNAVAILABLE : HERR_NOT_FOUND;
	view_status(&resp->body, &r);
	crypto_sha256(resp->body.data, resp->body.len, h);
	etag[0] = '"';
	hex_encode(h, 16, etag + 1);
	etag[33] = '"';
	etag[34] = '\0';
	resp_header(resp, "ETag", "%s", etag);
	if (r.status == ST_WAITING)
		resp_header(resp, "Retry-After", "%u",
		    app->cfg->retry_after_seconds);
	resp_json(resp, 200);
	if (etag_matches(req->if_none_match, etag)) {
		resp->status = 304;
		buf_reset(&resp->body);
	}
	exec_row_free(&r);
	return HERR_OK;
}
