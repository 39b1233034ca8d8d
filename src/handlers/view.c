/*
 * view.c - what the execution handlers share: the status body, the JSON
 * body gate and the constant-time lookup behind poll and cancel.
 */
#include <string.h>

#include <json-c/json.h>

#include "auth.h"
#include "config.h"
#include "json.h"
#include "lookup.h"
#include "handlers.h"

/* Appends a timestamp member ,"name":"…" (or null when ms is 0). */
static void
put_time(struct buf *b, const char *name, int64_t ms)
{
	char	 t[RFC3339_LEN + 3];

	buf_puts(b, ",\"");
	buf_puts(b, name);
	if (ms == 0) {
		buf_puts(b, "\":null");
		return;
	}
	t[0] = '"';
	json_time(ms, t + 1);
	t[RFC3339_LEN + 1] = '"';
	t[RFC3339_LEN + 2] = '\0';
	buf_puts(b, "\":");
	buf_append(b, t, RFC3339_LEN + 2);
}

/*
 * Appends the status body of r: correlationId, status, timestamps,
 * cancelRequested, attempt, priority, notBefore, the replay links
 * (replayOf, replacedBy: read by poll only), result (completed) or
 * error (failed) as stored, progress once one was reported, and
 * lastError while a retry is pending (r->last_error is only read for a
 * waiting execution).
 */
void
view_status(struct buf *b, const struct exec_row *r)
{
	buf_puts(b, "{\"correlationId\":");
	json_put_string(b, r->cid);
	buf_puts(b, ",\"status\":\"");
	buf_puts(b, exec_status_name(r->status));
	buf_puts(b, "\"");
	put_time(b, "createdAt", r->created_at);
	put_time(b, "updatedAt", r->updated_at);
	put_time(b, "expiresAt", r->expires_at);
	put_time(b, "completedAt", r->completed_at);
	buf_puts(b, r->cancel_requested ? ",\"cancelRequested\":true" :
	    ",\"cancelRequested\":false");
	buf_printf(b, ",\"attempt\":%u,\"priority\":%u", r->attempts,
	    r->priority);
	put_time(b, "notBefore", r->not_before);
	if (r->replay_of[0] != '\0') {
		buf_puts(b, ",\"replayOf\":");
		json_put_string(b, r->replay_of);
	}
	if (r->replaced_by[0] != '\0') {
		buf_puts(b, ",\"replacedBy\":");
		json_put_string(b, r->replaced_by);
	}
	if (r->status == ST_COMPLETED && r->result != NULL) {
		buf_puts(b, ",\"result\":");
		buf_append(b, r->result, r->result_len);
	} else if (r->status == ST_FAILED && r->error != NULL) {
		buf_puts(b, ",\"error\":");
		buf_append(b, r->error, r->error_len);
	}
	if (r->progress != NULL) {
		buf_puts(b, ",\"progress\":");
		buf_append(b, r->progress, r->progress_len);
	}
	if (r->status == ST_WAITING && r->last_error != NULL) {
		buf_puts(b, ",\"lastError\":");
		buf_append(b, r->last_error, r->last_error_len);
	}
	buf_puts(b, "}");
}

/*
 * The JSON body gate: Content-Type (415), size (413), short read (400),
 * validity (400 invalid_json). An empty body is accepted as "{}". *obj
 * gets the parsed tree to put; with obj NULL no tree is built (the body
 * is only validated; empty stays empty).
 */
enum herr
view_json_body(struct app *app, struct req *req, struct resp *resp,
    size_t limit, struct json_object **obj)
{
	enum herr	 e;

	if (obj != NULL)
		*obj = NULL;
	if (req->content_length > 0 &&
	    !valid_json_content_type(req->content_type))
		return HERR_UNSUPPORTED_MEDIA_TYPE;
	if ((e = req_body(req, limit, resp)) != HERR_OK)
		return e;
	if (req->body_len == 0) {
		if (obj != NULL)
			*obj = json_object_new_object();	/* empty = {} */
		return HERR_OK;
	}
	if (json_validate(req->body, req->body_len, app->cfg->max_json_depth,
	    obj) == -1)
		return HERR_INVALID_JSON;
	return HERR_OK;
}

/*
 * Splits poll token tok (app's keys loaded): *id gets the execution id
 * it seals, or UINT64_MAX when it seals none (no row has that id). A
 * 65-character token is sealed with key version 0; a 66-character one
 * names its version in its first digit (one newer than any the worker
 * read makes it read the keys again: lookup_idkey_open). A key that is
 * unknown or retired opens nothing; nor does the bare 43-character
 * secret of tokens issued before schema version 3 (it would need a
 * lookup by correlation id, a timing oracle). Returns the secret part:
 * the last SECRET_B64_LEN characters, or all of tok when shorter.
 */
static const char *
token_split(struct app *app, const char *tok, uint64_t *id)
{
	size_t	 n = strlen(tok), off = 0;
	int	 v = -1;

	if (n == POLL_TOKEN_LEN)
		v = 0;
	else if (n == POLL_TOKEN_MAX && (v = b64url_value(tok[0])) > 0)
		off = 1;
	else
		v = -1;		/* also a version digit of 0: never issued */
	if (v < 0 || !lookup_idkey_open(app, (unsigned)v) ||
	    crypto_id_open(app->pkey[v].key, tok + off, id) == -1 || *id == 0)
		*id = UINT64_MAX;
	return n > SECRET_B64_LEN ? tok + n - SECRET_B64_LEN : tok;
}

/*
 * Whether key k may use what the key of hash sub, another key of its
 * lineage (the caller compared it), submitted: one k was rotated from,
 * which has a lower id (rotation adds the new key as a new row; revoked
 * keys are found too, through the key cache); never a later one (a
 * rotation's old key may have leaked). 1, 0, or -1 (the database is
 * unavailable).
 */
static int
view_lineage_ok(struct app *app, const struct key_row *k,
    const unsigned char sub[SHA256_LEN])
{
	struct key_row	 s;
	int		 rc;

	if ((rc = lookup_key(app, sub, &s)) == REPO_ERR)
		return -1;
	return rc == REPO_OK && s.id <= k->id;
}

/*
 * Finds the execution named by the path for the calling consumer: the
 * id sealed in the poll token must be that of (tenant, route, correlation
 * id), the key's lineage identity must be the initiator's (sql/007: a
 * key rotated from the initiator's matches, view_lineage_ok; a row
 * without one, written by a schema-6 binary, needs the initiator's key
 * hash), and the token secret's hash must match. Every mismatch gives
 * the same HERR_NOT_FOUND after the same comparisons (the submitter's
 * key is looked up only after the token matched).
 * On HERR_OK, r is filled, with an ended execution's small payload
 * when the statement matched the hashes as well (r->payloads; else
 * repo_exec_payload reads them; free r with exec_row_free).
 */
enum herr
view_find(struct app *app, struct req *req, struct exec_row *r)
{
	static const unsigned char dummy[SHA256_LEN];
	struct poll_proof pf;
	struct key_row	 key;
	const char	*tok = req->poll_token ? req->poll_token : "";
	uint64_t	 id;
	enum herr	 e;
	int		 rc, found, ok, bykey, bylin;

	if ((e = auth_key(app, req, KEY_CONSUMER, &key, pf.key)) != HERR_OK)
		return e;
	if (lookup_idkey(app) != REPO_OK)
		return HERR_UNAVAILABLE;
	auth_lineage(&key, pf.lineage);
	tok = token_split(app, tok, &id);
	crypto_sha256(tok, strlen(tok), pf.token);
	rc = repo_exec_poll(app->db, id, key.tenant, req->env, req->svc,
	    req->op, req->cid, &pf, r);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	found = rc == REPO_OK;
	bykey = crypto_equal(found && !r->key_hash_null ? r->key_hash : dummy,
	    pf.key, SHA256_LEN);
	bylin = crypto_equal(found && !r->lineage_null ? r->lineage : dummy,
	    pf.lineage, SHA256_LEN);
	ok = found && !r->lineage_null ? bylin : bykey;
	ok &= crypto_equal(found && !r->poll_hash_null ? r->poll_hash : dummy,
	    pf.token, SHA256_LEN);
	ok &= found && !r->key_hash_null && !r->poll_hash_null &&
	    !r->tenant_null && valid_secret(tok, "");
	if (ok && !bykey)	/* another key of the lineage submitted it */
		ok = view_lineage_ok(app, &key, r->key_hash);
	if (ok == -1) {
		exec_row_free(r);
		return HERR_UNAVAILABLE;
	}
	if (!ok) {
		if (found)
			exec_row_free(r);
		return HERR_NOT_FOUND;
	}
	return HERR_OK;
}

/*
 * Reads optional integer member name of o into *v, within [lo, hi].
 * 0, or -1 (not an integer or out of range).
 */
int
view_int_member(struct json_object *o, const char *name, int lo, int hi,
    int *v)
{
	struct json_object	*m;
	int64_t			 n;

	if (!json_object_object_get_ex(o, name, &m))
		return 0;
	if (!json_object_is_type(m, json_type_int))
		return -1;
	n = json_object_get_int64(m);
	if (n < lo || n > hi)
		return -1;
	*v = (int)n;
	return 0;
}
