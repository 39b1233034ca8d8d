/*
 * callbacks.c - POST /v1/callbacks/{id}/{heartbeat|complete|fail|cancelled}
 *
 * The backend key must serve the execution's route (else 404) and
 * X-Callback-Token must be the current claim's. Finalization is one
 * compare-and-set UPDATE: exactly one of any number of racing callbacks
 * wins (200 with the status body); every other gets 409 conflict with
 * currentStatus, except the winner repeating itself (same verb, token
 * and body: its winner hash is stored beside the token hash), which gets
 * its 200 again. A fail with retryAfterSeconds while attempts are left
 * ends the claim and puts the execution back to waiting (not before the
 * delay); a heartbeat may store a progress value.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api.h"
#include "auth.h"
#include "cbtoken.h"
#include "clock.h"
#include "config.h"
#include "json.h"
#include "lookup.h"
#include "metrics.h"
#include "handlers.h"

struct cb {
	unsigned char		 tokhash[SHA256_LEN];
	uint64_t		 key_id;
	struct json_object	*body;
	int64_t			 now;
};

/*
 * Whether the validated JSON text p[0..n) is an object (an empty body
 * counts as "{}").
 */
static int
is_object(const char *p, size_t n)
{
	while (n > 0 && strchr(" \t\r\n", *p) != NULL) {
		p++;
		n--;
	}
	return n == 0 || *p == '{';
}

/*
 * Authenticates the backend key, hashes X-Callback-Token and reads the
 * JSON object body (at most limit bytes), into c->body as a tree when
 * tree (heartbeat and fail read members from it), else only validated
 * (complete takes its one member as a span of the text). On HERR_OK, c
 * is filled: release it with cb_free.
 */
static enum herr
cb_begin(struct app *app, struct req *req, struct resp *resp, size_t limit,
    int tree, struct cb *c)
{
	unsigned char	 kh[SHA256_LEN];
	struct key_row	 key;
	const char	*tok = cbtoken_valid(req->callback_token) ?
			    req->callback_token : "";
	enum herr	 e;

	memset(c, 0, sizeof(*c));
	c->now = clock_now_ms();
	if ((e = auth_key(app, req, KEY_BACKEND, &key, kh)) != HERR_OK)
		return e;
	c->key_id = key.id;
	/* a missing or malformed token is simply not the current claim's */
	crypto_sha256(tok, strlen(tok), c->tokhash);
	if ((e = view_json_body(app, req, resp, limit, tree ? &c->body :
	    NULL)) != HERR_OK)
		return e;
	if (tree ? json_object_is_type(c->body, json_type_object) :
	    is_object(req->body, req->body_len))
		return HERR_OK;
	json_object_put(c->body);
	c->body = NULL;
	resp->detail = "the body must be a JSON object";
	return HERR_INVALID_REQUEST;
}

static void
cb_free(struct cb *c)
{
	json_object_put(c->body);
}

/* The 409 for a callback that lost: conflict with the current status. */
static enum herr
conflict(struct resp *resp, enum exec_status st)
{
	metrics_refused(st == ST_WAITING ? REFUSED_STALE_TOKEN :
	    REFUSED_TERMINAL);
	resp->current_status = exec_status_name(st);
	resp->detail = st == ST_WAITING ?
	    "the callback token is not the current claim's" :
	    "the execution has already ended";
	return HERR_CONFLICT;
}

/*
 * The 409 for a cancelled callback on a waiting execution whose cancel
 * nobody requested (whatever its token: the UPDATE requires both).
 */
static enum herr
no_cancel(struct resp *resp)
{
	metrics_refused(REFUSED_NO_CANCEL);
	resp->current_status = exec_status_name(ST_WAITING);
	resp->detail = "no cancel was requested: send cancelled only after a "
	    "heartbeat answered cancelRequested true";
	return HERR_CONFLICT;
}

/* Loads execution id for heartbeat: HERR_OK when the key serves it. */
static enum herr
hb_load(struct app *app, struct req *req, struct cb *c, struct exec_row *r)
{
	int	 rc;

	rc = repo_exec_by_id(app->db, req->exec_id, c->now, r);
	if (rc == REPO_OK) {
		rc = lookup_serves(app, c->key_id, r->env, r->svc, r->op);
		if (rc != REPO_OK)
			exec_row_free(r);
	}
	if (rc == REPO_OK)
		return HERR_OK;
	return rc == REPO_ERR ? HERR_UNAVAILABLE : HERR_NOT_FOUND;
}

/* As hb_load, for a callback that holds c: c is released unless HERR_OK. */
static enum herr
cb_load(struct app *app, struct req *req, struct cb *c, struct exec_row *r)
{
	enum herr	 e;

	if ((e = hb_load(app, req, c, r)) != HERR_OK)
		cb_free(c);
	return e;
}

/*
 * The winner hash of this callback: SHA-256 of the verb, ':' and the
 * SHA-256 of the body as received.
 */
static void
win_hash(const char *verb, const struct req *req, unsigned char *out)
{
	unsigned char	 buf[16 + SHA256_LEN];
	size_t		 vn = strlen(verb);

	memcpy(buf, verb, vn);
	buf[vn] = ':';
	crypto_sha256(req->body ? req->body : "", req->body ? req->body_len :
	    0, buf + vn + 1);
	crypto_sha256(buf, vn + 1 + SHA256_LEN, out);
}

/*
 * The answer to a callback whose compare-and-set matched nothing: the
 * winner repeating itself (the stored token hash and winner hash both
 * equal this callback's, compared in constant time) gets the 200 with
 * the status body again; any other gets 409 with the current status
 * (to: the status it asked for; cancelled with no cancel requested:
 * no_cancel's).
 */
static enum herr
lost(struct app *app, struct req *req, struct resp *resp, enum exec_status to,
    const unsigned char *tokhash, const unsigned char *wh, int64_t now)
{
	unsigned char	 tok[SHA256_LEN], win[SHA256_LEN];
	struct exec_row	 r;
	enum exec_status st;
	int		 rc, same;

	if ((rc = repo_exec_by_id(app->db, req->exec_id, now, &r)) != REPO_OK)
		return rc == REPO_NOTFOUND ? HERR_NOT_FOUND : HERR_UNAVAILABLE;
	st = r.status;
	if (st == ST_WAITING && to == ST_CANCELLED && !r.cancel_requested) {
		exec_row_free(&r);
		return no_cancel(resp);
	}
	if (st == ST_COMPLETED || st == ST_FAILED || st == ST_CANCELLED) {
		if ((rc = repo_exec_winner(app->db, req->exec_id, tok, win)) ==
		    REPO_ERR) {
			exec_row_free(&r);
			return HERR_UNAVAILABLE;
		}
		same = crypto_equal(tok, tokhash, SHA256_LEN);
		same &= crypto_equal(win, wh, SHA256_LEN);
		if (rc == REPO_OK && same) {
			view_status(&resp->body, &r);
			exec_row_free(&r);
			resp_json(resp, 200);
			return HERR_OK;
		}
	}
	exec_row_free(&r);
	return conflict(resp, st);
}

/*
 * The 200 of the callback that won execution req->exec_id: the status
 * body of the row read again after its UPDATE, the body the winner's
 * repeat gets (lost). The row read before the UPDATE will not do: a
 * cancel request or progress may have landed in between. HERR_OK,
 * HERR_NOT_FOUND (purged since) or HERR_UNAVAILABLE.
 */
static enum herr
won(struct app *app, struct req *req, struct resp *resp, int64_t now)
{
	struct exec_row	 r;
	int		 rc;

	if ((rc = repo_exec_by_id(app->db, req->exec_id, now, &r)) != REPO_OK)
		return rc == REPO_NOTFOUND ? HERR_NOT_FOUND : HERR_UNAVAILABLE;
	view_status(&resp->body, &r);
	exec_row_free(&r);
	resp_json(resp, 200);
	return HERR_OK;
}

/*
 * A callback verb that ends the execution with status to (payload p, n
 * bytes) after reading its row (the key must serve it): one
 * compare-and-set UPDATE, then won or lost answers. Releases c.
 */
static enum herr
finalize(struct app *app, struct req *req, struct resp *resp, struct cb *c,
    enum exec_status to, const char *verb, const char *p, size_t n)
{
	unsigned char	 wh[SHA256_LEN];
	struct exec_row	 r;
	enum herr	 e;
	int		 rc;

	if ((e = cb_load(app, req, c, &r)) != HERR_OK)
		return e;
	exec_row_free(&r);
	win_hash(verb, req, wh);
	rc = repo_finalize_win(app->db, req->exec_id, c->tokhash, to, p, n,
	    wh, lookup_mark(app), c->now);
	cb_free(c);
	if (rc == REPO_OK)
		return won(app, req, resp, c->now);
	return rc == REPO_NOTFOUND ? lost(app, req, resp, to, c->tokhash, wh,
	    c->now) : HERR_UNAVAILABLE;
}

/*
 * The heartbeat body: leaseSeconds (5..3600, default 60) into *lease and
 * the optional progress member (the value as received) into *pv, *pn
 * (*pv NULL when absent). HERR_OK, HERR_INVALID_REQUEST or
 * HERR_PAYLOAD_TOO_LARGE (progress over PROGRESS_MAX_BYTES).
 */
static enum herr
hb_body(struct req *req, struct resp *resp, struct json_object *o,
    int *lease, const char **pv, size_t *pn)
{
	*pv = NULL;
	*pn = 0;
	if (view_int_member(o, "leaseSeconds", LEASE_MIN_SECONDS,
	    LEASE_MAX_SECONDS, lease) == -1) {
		resp->detail = "leaseSeconds must be an integer "
		    API_STR(LEASE_MIN_SECONDS) ".." API_STR(LEASE_MAX_SECONDS);
		return HERR_INVALID_REQUEST;
	}
	if (json_object_object_get_ex(o, "progress", NULL) &&
	    json_member(req->body, req->body_len, "progress", pv, pn) != 1) {
		resp->detail = "progress must be a JSON value";
		return HERR_INVALID_REQUEST;
	}
	if (*pv != NULL && *pn > PROGRESS_MAX_BYTES) {
		resp->detail = "progress must be at most "
		    API_STR(PROGRESS_MAX_BYTES) " bytes";
		return HERR_PAYLOAD_TOO_LARGE;
	}
	return HERR_OK;
}

enum herr
handle_heartbeat(struct app *app, struct req *req, struct resp *resp)
{
	struct exec_row	 r;
	struct cb	 c;
	char		 t[RFC3339_LEN + 1];
	const char	*pv;
	size_t		 pn;
	int		 lease = 60, rc;
	int64_t		 until;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_request_bytes, 1,
	    &c)))
		return e;
	e = hb_body(req, resp, c.body, &lease, &pv, &pn);
	cb_free(&c);
	if (e != HERR_OK)
		return e;
	if ((e = hb_load(app, req, &c, &r)) != HERR_OK)
		return e;
	until = c.now + (int64_t)lease * 1000;
	rc = pv != NULL ? repo_heartbeat_progress(app->db, req->exec_id,
	    c.tokhash, until, pv, pn, c.now) :
	    repo_heartbeat(app->db, req->exec_id, c.tokhash, until);
	exec_row_free(&r);
	if (rc == REPO_NOTFOUND) {	/* lost: report the current status */
		if ((rc = repo_exec_by_id(app->db, req->exec_id, c.now,
		    &r)) != REPO_OK)
			return rc == REPO_NOTFOUND ? HERR_NOT_FOUND :
			    HERR_UNAVAILABLE;
		exec_row_free(&r);
		return conflict(resp, r.status);
	}
	if (rc != REPO_OK)
		return HERR_UNAVAILABLE;
	json_time(until, t);
	buf_printf(&resp->body, "{\"cancelRequested\":%s,\"leaseExpiresAt\":"
	    "\"%s\"}", r.cancel_requested ? "true" : "false", t);
	resp_json(resp, 200);
	return HERR_OK;
}

/*
 * A callback verb that ends the execution with status to (payload v, n
 * bytes: the result, the error, or none) and answers from its token's
 * facts (cbtoken.h) after one UPDATE, the sealed twin of its statement:
 * *done = 1 when it won (200, c released) or the database failed (503).
 * *done = 0, c untouched, when it was not taken: a token without facts
 * or of another id, a grant not in the worker's cache, or no match (a
 * loser, or progress or a cancel request the facts do not give):
 * finalize then reads the row and decides as for any callback.
 */
static enum herr
end_sealed(struct app *app, struct req *req, struct resp *resp,
    struct cb *c, enum exec_status to, const char *verb, const char *v,
    size_t n, int *done)
{
	unsigned char	 wh[SHA256_LEN];
	struct cb_facts	 f;
	struct exec_row	 r;
	int		 rc;

	*done = 0;
	if (cbtoken_open(req->callback_token, &f) != CBT_SEALED ||
	    f.id != req->exec_id ||
	    !lookup_serves_cached(app, c->key_id, f.route))
		return HERR_OK;
	win_hash(verb, req, wh);
	if ((rc = repo_finalize_sealed(app->db, req->exec_id, c->tokhash, to,
	    v, n, wh, lookup_mark(app), c->now)) == REPO_NOTFOUND)
		return HERR_OK;
	*done = 1;
	cb_free(c);
	if (rc != REPO_OK)
		return HERR_UNAVAILABLE;
	memset(&r, 0, sizeof(r));
	r.id = f.id;
	memcpy(r.cid, f.cid, sizeof(r.cid));
	r.status = to;
	r.created_at = f.created_at;
	r.expires_at = f.expires_at;
	r.updated_at = r.completed_at = c->now;
	r.attempts = f.attempt;
	r.priority = f.priority;
	r.not_before = f.not_before;
	r.cancel_requested = to == ST_CANCELLED;
	r.result = r.error = (char *)(uintptr_t)v;
	r.result_len = r.error_len = n;
	view_status(&resp->body, &r);
	resp_json(resp, 200);
	return HERR_OK;
}

enum herr
handle_complete(struct app *app, struct req *req, struct resp *resp)
{
	struct cb	 c;
	const char	*v;
	size_t		 n;
	int		 done;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_result_bytes, 0,
	    &c)))
		return e;
	if (json_member(req->body, req->body_len, "result", &v, &n) != 1) {
		cb_free(&c);
		resp->detail = "the body must be {\"result\":<any JSON value>}";
		return HERR_INVALID_REQUEST;
	}
	e = end_sealed(app, req, resp, &c, ST_COMPLETED, "complete", v, n,
	    &done);
	if (done)
		return e;
	return finalize(app, req, resp, &c, ST_COMPLETED, "complete", v, n);
}

/*
 * A retryable failure (retryAfterSeconds delay) with error v (n bytes):
 * while the claim is current, attempts are left and no cancel was
 * requested, the execution goes back to waiting: 200 with the status
 * body, *done = 1. Otherwise *done = 0 and c is still the caller's (it
 * fails the execution for good, or loses). *done = 1 also on an error.
 */
static enum herr
fail_retry(struct app *app, struct req *req, struct resp *resp, struct cb *c,
    const char *v, size_t n, int delay, int *done)
{
	struct exec_row	 r;
	int64_t		 nb = c->now + (int64_t)delay * 1000;
	enum herr	 e;
	int		 rc;

	*done = 1;
	if ((e = cb_load(app, req, c, &r)) != HERR_OK)
		return e;
	rc = repo_retry(app->db, req->exec_id, c->tokhash, v, n,
	    app->cfg->max_attempts, nb, c->now);
	if (rc != REPO_OK) {
		exec_row_free(&r);
		if (rc == REPO_NOTFOUND) {
			*done = 0;
			return HERR_OK;
		}
		cb_free(c);
		return HERR_UNAVAILABLE;
	}
	/* the body is the row as STMT_FIN_RETRY left it, as a poll reads it */
	free(r.last_error);
	r.last_error = (char *)(uintptr_t)v;
	r.last_error_len = n;
	r.updated_at = c->now;
	r.not_before = nb;
	r.claimed = 0;
	view_status(&resp->body, &r);
	r.last_error = NULL;
	exec_row_free(&r);
	cb_free(c);
	resp_json(resp, 200);
	return HERR_OK;
}

enum herr
handle_fail(struct app *app, struct req *req, struct resp *resp)
{
	struct json_object	*err, *msg;
	struct cb		 c;
	const char		*v;
	size_t			 n;
	int			 delay = -1, done;
	enum herr		 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_result_bytes, 1,
	    &c)))
		return e;
	if (!json_object_object_get_ex(c.body, "error", &err) ||
	    !json_object_object_get_ex(err, "message", &msg) ||
	    !json_object_is_type(msg, json_type_string) ||
	    json_member(req->body, req->body_len, "error", &v, &n) != 1) {
		cb_free(&c);
		resp->detail = "the body must be {\"error\":{\"message\":\"...\"}}";
		return HERR_INVALID_REQUEST;
	}
	if (view_int_member(c.body, "retryAfterSeconds", 0, RETRY_AFTER_MAX,
	    &delay) == -1) {
		cb_free(&c);
		resp->detail = "retryAfterSeconds must be an integer 0..86400";
		return HERR_INVALID_REQUEST;
	}
	e = delay >= 0 ? fail_retry(app, req, resp, &c, v, n, delay, &done) :
	    end_sealed(app, req, resp, &c, ST_FAILED, "fail", v, n, &done);
	if (done)
		return e;
	return finalize(app, req, resp, &c, ST_FAILED, "fail", v, n);
}

enum herr
handle_cancelled(struct app *app, struct req *req, struct resp *resp)
{
	struct cb	 c;
	int		 done;
	enum herr	 e;

	if ((e = cb_begin(app, req, resp, app->cfg->max_request_bytes, 0,
	    &c)))
		return e;
	e = end_sealed(app, req, resp, &c, ST_CANCELLED, "cancelled", NULL, 0,
	    &done);
	if (done)
		return e;
	return finalize(app, req, resp, &c, ST_CANCELLED, "cancelled", NULL,
	    0);
}
