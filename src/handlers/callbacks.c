/*
 * callbacks.c - POST /v1/callbacks/{id}/{heartbeat|complete|fail|cancelled}
 *
 * The backend key must serve the execution's route (else 404) and
 * X-Callback-Token must be the current claim's. Finalization is one
 * compare-and-set UPDATE: exactly one of any number of racing callbacks
 * wins (200 with the status body); every other gets 409 conflict with
 * currentStatus.
 */
#include <string.h>

#include <json-c/json.h>

#include "../auth.h"
#include "../config.h"
#include "../json.h"
#include "../lookup.h"
#include "handlers.h"

struct cb {
	struct exec_row		 row;
	unsigned char		 tokhash[SHA256_LEN];
	struct json_object	*body;
	int64_t			 now;
};

/*
 * Authenticates, reads the JSON body (at most limit bytes) and loads the
 * execution. On HERR_OK, c is filled: release it with cb_free.
 */
static enum herr
cb_begin(struct app *app, struct req *req, struct resp *resp, size_t limit,
    struct cb *c)
{
	unsigned char	 kh[SHA256_LEN];
	struct key_row	 key;
	const char	*tok = valid_secret(req->callback_token, "") ?
			    req->callback_token : "";
	enum herr	 e;
	int		 rc;

	memset(c, 0, sizeof(*c));
	c->now = json_now_ms();
	if ((e = auth_key(app, req, KEY_BACKEND, &key, kh)) != HERR_OK)
		return e;
	/* a missing or malformed token is simply not the current claim's */
	crypto_sha256(tok, strlen(tok), c->tokhash);
	if ((e = view_json_body(app, req, resp, limit, &c->body)) != HERR_OK)
		return e;
	rc = repo_exec_by_id(app->db, req->exec_id, c->now, &c->row);
	if (rc == REPO_OK)
		rc = lookup_serves(app, key.id, c->row.env,
		    c->row.svc, c->row.op);
	if (rc == REPO_OK && json_object_is_type(c->body, json_type_object))
		return HERR_OK;
	e = rc == REPO_ERR ? HERR_UNAVAILABLE : rc == REPO_NOTFOUND ?
	    HERR_NOT_FOUND : HERR_INVALID_REQUEST;
	if (e == HERR_INVALID_REQUEST)
		resp->detail = "the body must be a JSON object";
	exec_row_free(&c->row);
	json_object_put(c->body);
	return e;
}

static void
cb_free(struct cb *c)
{
	exec_row_free(&c->row);
	json_object_put(c->body);
}

/* The loser's answer: 409 conflict with the current status. */
static enum herr
lost(struct app *app, struct req *req, struct resp *resp, struct cb *c)
{
	struct exec_row	 r;

	if (repo_exec_by_id(app->db, req->exec_id, c->now, &r) != REPO_OK) {
		cb_free(c);
		return HERR_UNAVAILABLE;
	}
	resp->current_status = exec_status_name(r.status);
	resp->detail = r.status == ST_WAITING ?
	    "the callback token is not the current claim's" :
	    "the execution has already ended";
	exec_row_free(&r);
	cb_free(c);
	return HERR_CONFLICT;
}

/*
 * Finalizes to status to with payload p (n bytes) and answers: 200 with
 * the status body for the winner, 409 for a loser.
 */
static enum herr
finalize(struct app *app, struct req *req, struct resp *resp, struct cb *c,
    enum exec_status to, const char *p, size_t n)
{
	struct exec_row	 v;
	int		 rc;

	rc = repo_finalize(app->db, req->exec_id, c->tokhash, to, p, n, c->now);
	if (rc == REPO_ERR) {
		cb_free(c);
		return HERR_UNAVAILABLE;
	}
	if (rc != REPO_OK)
		return lost(app, req, resp, c);
	v = c->row;
	v.status = to;
	v.completed_at = v.updated_at = c->now;
	v.result = v.error = (char *)(uintptr_t)p;
	v.result_len = v.error_len = n;
	view_status(&resp->body, &v);
	resp_json(resp, 200);
	cb_free(c);
	return HERR_OK;
}

enum herr
handle_heartbeat(struct app *app, struct req *req, struct resp *resp)
{
	struct cb	 c;
	char		 t[RFC3339_LEN + 1];
	int		 lease = 60, rc;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_request_bytes, &c)))
		return e;
	if (view_int_member(c.body, "leaseSeconds", 5, 3600, &lease) == -1) {
		cb_free(&c);
		resp->detail = "leaseSeconds must be an integer 5..3600";
		return HERR_INVALID_REQUEST;
	}
	rc = repo_heartbeat(app->db, req->exec_id, c.tokhash,
	    c.now + (int64_t)lease * 1000);
	if (rc == REPO_ERR) {
		cb_free(&c);
		return HERR_UNAVAILABLE;
	}
	if (rc != REPO_OK)
		return lost(app, req, resp, &c);
	json_time(c.now + (int64_t)lease * 1000, t);
	buf_printf(&resp->body, "{\"cancelRequested\":%s,\"leaseExpiresAt\":"
	    "\"%s\"}", c.row.cancel_requested ? "true" : "false", t);
	resp_json(resp, 200);
	cb_free(&c);
	return HERR_OK;
}

enum herr
handle_complete(struct app *app, struct req *req, struct resp *resp)
{
	struct cb	 c;
	const char	*v;
	size_t		 n;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_result_bytes, &c)))
		return e;
	if (json_member(req->body, req->body_len, "result", &v, &n) != 1) {
		cb_free(&c);
		resp->detail = "the body must be {\"result\":<any JSON value>}";
		return HERR_INVALID_REQUEST;
	}
	return finalize(app, req, resp, &c, ST_COMPLETED, v, n);
}

enum herr
handle_fail(struct app *app, struct req *req, struct resp *resp)
{
	struct json_object	*err, *msg;
	struct cb		 c;
	const char		*v;
	size_t			 n;
	enum herr		 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_result_bytes, &c)))
		return e;
	if (!json_object_object_get_ex(c.body, "error", &err) ||
	    !json_object_object_get_ex(err, "message", &msg) ||
	    !json_object_is_type(msg, json_type_string) ||
	    json_member(req->body, req->body_len, "error", &v, &n) != 1) {
		cb_free(&c);
		resp->detail = "the body must be {\"error\":{\"message\":\"...\"}}";
		return HERR_INVALID_REQUEST;
	}
	return finalize(app, req, resp, &c, ST_FAILED, v, n);
}

enum herr
handle_cancelled(struct app *app, struct req *req, struct resp *resp)
{
	struct cb	 c;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_request_bytes, &c)))
		return e;
	return finalize(app, req, resp, &c, ST_CANCELLED, NULL, 0);
}
