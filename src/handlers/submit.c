/*
 * submit.c - POST /v1/executions/{env}/{svc}/{op}
 *
 * Stores the request exactly as received and answers 202 with a fresh
 * poll token once the row is committed. The same correlation id from
 * the same key with a byte-identical body is a retry: 202 again with the
 * current status and a new poll token (the old one stops working),
 * whenever it comes: the time rules of the scheduling headers (a deadline
 * in the future, a start before it) refuse a new execution only.
 *
 * A poll token is the execution's sealed id (crypto_id_seal, under the
 * key of migration 3) followed by a fresh secret; only the secret's
 * SHA-256 is stored. The sealed id lets poll find the row by primary key.
 *
 * A tenant with a quota (asyncexec-admin tenant set --max-open) whose
 * waiting executions reached it, as this worker knows them (quota.h: at
 * most cache_ttl_seconds old), gets 429 quota_exceeded for a new
 * execution; a retry of one it already has is still answered.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "auth.h"
#include "clock.h"
#include "config.h"
#include "json.h"
#include "lookup.h"
#include "quota.h"
#include "schedule.h"
#include "handlers.h"

#define DAY_MS	(24LL * 3600 * 1000)

/* Writes the 202 body and headers for execution r with poll token tok. */
static void
accepted(struct app *app, struct req *req, struct resp *resp,
    const struct exec_row *r, const char *tok)
{
	char	 t[RFC3339_LEN + 1];
	char	 url[512];

	snprintf(url, sizeof(url), "/v1/executions/%s/%s/%s/%s", req->env,
	    req->svc, req->op, r->cid);
	buf_puts(&resp->body, "{\"correlationId\":");
	json_put_string(&resp->body, r->cid);
	buf_printf(&resp->body, ",\"pollToken\":\"%s\",\"status\":\"%s\","
	    "\"statusUrl\":", tok, exec_status_name(r->status));
	json_put_string(&resp->body, url);
	json_time(r->created_at, t);
	buf_printf(&resp->body, ",\"createdAt\":\"%s\"", t);
	json_time(r->expires_at, t);
	buf_printf(&resp->body, ",\"expiresAt\":\"%s\"}", t);
	resp_header(resp, "Location", "%s", url);
	resp_header(resp, "Retry-After", "%u", app->cfg->retry_after_seconds);
	resp_json(resp, 202);
}

/*
 * Writes the poll token of execution id with secret (SECRET_B64_LEN
 * characters) into tok: the id sealed with the newest poll-token key,
 * preceded by the digit of its version when that is not 0 (version-0
 * tokens keep the form older builds open). 0, or -1 (logged by crypto).
 */
static int
poll_token(struct app *app, uint64_t id, const char *secret,
    char tok[POLL_TOKEN_MAX + 1])
{
	size_t	 off = app->idkey_version > 0;

	tok[0] = b64url_digit(app->idkey_version);
	if (crypto_id_seal(app->idkey, id, tok + off) == -1)
		return -1;
	memcpy(tok + off + SEALED_B64_LEN, secret, SECRET_B64_LEN + 1);
	return 0;
}

/*
 * A correlation id already taken: a retry when the same key sent the
 * same bytes and scheduling headers (rotate the poll token, 202), else a
 * conflict. absent: the answer when the caller has no such record.
 */
static enum herr
resubmit(struct app *app, struct req *req, struct resp *resp,
    const struct exec_new *n, const char *secret, const char *tenant,
    enum herr absent)
{
	struct exec_row	 r;
	char		 tok[POLL_TOKEN_MAX + 1];
	int		 rc, same;

	rc = repo_exec_by_key(app->db, tenant, req->env, req->svc, req->op,
	    n->cid, n->now, &r);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	if (rc != REPO_OK)
		return absent;
	same = !r.key_hash_null &&
	    crypto_equal(r.key_hash, n->key_hash, SHA256_LEN);
	same &= crypto_equal(r.request_sha, n->request_sha, SHA256_LEN);
	same &= r.sched_null == !n->sched_given && (!n->sched_given ||
	    crypto_equal(r.sched_hash, n->sched_hash, SHA256_LEN));
	if (!same) {
		exec_row_free(&r);
		return HERR_CORRELATION_CONFLICT;
	}
	if (poll_token(app, r.id, secret, tok) == -1) {
		exec_row_free(&r);
		return HERR_INTERNAL;
	}
	rc = repo_exec_rotate_poll(app->db, r.id, n->poll_hash);
	if (rc == REPO_OK)
		accepted(app, req, resp, &r, tok);
	exec_row_free(&r);
	return rc == REPO_OK ? HERR_OK : HERR_UNAVAILABLE;
}

/*
 * The tenant's quota before storing n: HERR_OK when it may be stored.
 * At the quota, a correlation id the tenant already used on the route is
 * decided by resubmit (a retry is never refused for quota; *done: resp
 * is filled or its error returned), anything else is quota_exceeded.
 */
static enum herr
quota_gate(struct app *app, struct req *req, struct resp *resp,
    const struct exec_new *n, const char *secret, const char *tenant,
    int *done)
{
	struct exec_row	 r;
	enum herr	 e;
	int		 rc;

	*done = 0;
	if ((e = quota_admit(app, tenant)) != HERR_QUOTA_EXCEEDED)
		return e;
	if (req->correlation_id == NULL)	/* a fresh id: never a retry */
		return HERR_QUOTA_EXCEEDED;
	rc = repo_exec_by_key(app->db, tenant, req->env, req->svc, req->op,
	    n->cid, n->now, &r);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	if (rc != REPO_OK)
		return HERR_QUOTA_EXCEEDED;
	exec_row_free(&r);
	*done = 1;
	return resubmit(app, req, resp, n, secret, tenant, HERR_UNAVAILABLE);
}

/*
 * The scheduling headers (contract v3) into n, whose now and route
 * expiry are set: the headers' hash for an identical resubmit, the
 * priority, the start, an expiry no later than the deadline. HERR_OK, or
 * HERR_INVALID_REQUEST with a detail naming a malformed header. *late:
 * NULL, or the detail of a time rule the headers break at n->now (a
 * deadline not in the future; a start at or after it or after the
 * expiry: it could never be claimed), which refuses a new execution but
 * not a retry of one accepted before (late_submit).
 */
static enum herr
schedule(struct req *req, struct resp *resp, struct exec_new *n,
    const char **late)
{
	struct sched	 s;
	enum sched_rc	 rc;
	char		 canon[SCHED_CANON_MAX];
	size_t		 len;

	*late = NULL;
	rc = sched_parse(req->not_before, req->delay_seconds, req->deadline,
	    req->priority, n->now, &s);
	if (rc != SCHED_OK) {
		resp->detail = sched_detail(rc);
		return HERR_INVALID_REQUEST;
	}
	len = sched_canon(&s, canon);
	n->sched_given = len > 0;
	if (len > 0)
		crypto_sha256(canon, len, n->sched_hash);
	if ((rc = sched_check(&s, n->now)) != SCHED_OK) {
		*late = sched_detail(rc);
		return HERR_OK;
	}
	n->priority = s.priority;
	/*
	 * A start in the past is due at once, in its place as submitted
	 * now: due_at (and notBefore) the submit's time, so that it never
	 * queues ahead of work of its priority that was due before it.
	 */
	n->not_before = s.not_before != 0 && s.not_before < n->now ? n->now :
	    s.not_before;
	if (s.has_deadline && s.deadline < n->expires_at)
		n->expires_at = s.deadline;
	if (n->not_before >= n->expires_at)	/* it would expire unstarted */
		*late = "the start (X-Not-Before or X-Delay-Seconds) must "
		    "come before the execution expires: createdAt + the route's "
		    "retention, or X-Deadline";
	return HERR_OK;
}

/*
 * A submit n whose scheduling headers break a time rule (late, the
 * detail): 400 for a new execution, nothing stored. A correlation id
 * the caller already used on the route is decided by resubmit: the time
 * rules judged the first submit, so an identical retry is 202 with the
 * current status whenever it comes, anything else a conflict. No
 * statement for a server-made id; else the read by correlation id (and
 * the poll token's UPDATE for a retry).
 */
static enum herr
late_submit(struct app *app, struct req *req, struct resp *resp,
    const struct exec_new *n, const char *secret, const char *tenant,
    const char *late)
{
	enum herr	 e = HERR_INVALID_REQUEST;

	if (req->correlation_id != NULL)	/* a fresh id: never a retry */
		e = resubmit(app, req, resp, n, secret, tenant,
		    HERR_INVALID_REQUEST);
	if (e == HERR_INVALID_REQUEST)
		resp->detail = late;
	return e;
}

/* Answers 202 for n, stored as execution id: HERR_OK or HERR_INTERNAL. */
static enum herr
created(struct app *app, struct req *req, struct resp *resp,
    const struct exec_new *n, uint64_t id, const char *secret)
{
	struct exec_row	 r;
	char		 tok[POLL_TOKEN_MAX + 1];

	if (poll_token(app, id, secret, tok) == -1)
		return HERR_INTERNAL;
	memset(&r, 0, sizeof(r));
	snprintf(r.cid, sizeof(r.cid), "%s", n->cid);
	r.status = ST_WAITING;
	r.created_at = n->now;
	r.expires_at = n->expires_at;
	accepted(app, req, resp, &r, tok);
	return HERR_OK;
}

/* Checks the route: HERR_OK with its retention, or unknown_route. */
static enum herr
route_check(struct app *app, struct req *req, unsigned *retention)
{
	struct route_row rt;
	int		 rc;

	rc = lookup_route(app, req->env, req->svc, req->op, &rt);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	if (rc != REPO_OK || !rt.enabled)
		return HERR_UNKNOWN_ROUTE;
	*retention = rt.retention_days;
	return HERR_OK;
}

enum herr
handle_submit(struct app *app, struct req *req, struct resp *resp)
{
	struct exec_new	 n;
	struct key_row	 key;
	char		 uuid[UUID_TEXT_LEN + 1], secret[SECRET_B64_LEN + 1];
	const char	*late;
	uint64_t	 id = 0;
	unsigned	 retention = 0;
	enum herr	 e;
	int		 rc, done;

	memset(&n, 0, sizeof(n));
	if ((e = auth_key(app, req, KEY_CONSUMER, &key, n.key_hash)) != HERR_OK)
		return e;
	if (!valid_json_content_type(req->content_type))
		return HERR_UNSUPPORTED_MEDIA_TYPE;
	if (req->correlation_id != NULL &&
	    !valid_new_correlation_id(req->correlation_id)) {
		resp->detail = "X-Correlation-Id must match "
		    "[A-Za-z0-9._:-]{1," API_STR(CID_MAX_LEN) "} and not be . "
		    "or ..";
		return HERR_INVALID_REQUEST;
	}
	if ((e = req_body(req, app->cfg->max_request_bytes, resp)) != HERR_OK ||
	    (e = route_check(app, req, &retention)) != HERR_OK)
		return e;
	if (json_validate(req->body, req->body_len, app->cfg->max_json_depth,
	    NULL) == -1)
		return HERR_INVALID_JSON;
	if (lookup_idkey(app) != REPO_OK)
		return HERR_UNAVAILABLE;
	if (req->correlation_id == NULL && crypto_uuid(uuid) == -1)
		return HERR_INTERNAL;
	n.cid = req->correlation_id ? req->correlation_id : uuid;
	n.env = req->env;
	n.svc = req->svc;
	n.op = req->op;
	n.tenant = key.tenant;
	auth_lineage(&key, n.lineage);
	n.lineage_id = key.lineage;
	n.request = req->body;
	n.request_len = req->body_len;
	crypto_sha256(req->body, req->body_len, n.request_sha);
	if (crypto_new_secret("", secret, sizeof(secret), n.poll_hash) == -1)
		return HERR_INTERNAL;
	n.now = clock_now_ms();
	n.expires_at = n.now + (int64_t)retention * DAY_MS;
	if ((e = schedule(req, resp, &n, &late)) != HERR_OK)
		return e;
	if (late != NULL)
		return late_submit(app, req, resp, &n, secret, key.tenant, late);
	if ((e = quota_gate(app, req, resp, &n, secret, key.tenant, &done)) !=
	    HERR_OK || done)
		return e;
	/* taken, yet gone by the read (purged): 503, retry */
	if ((rc = repo_exec_insert(app->db, &n, &id)) == REPO_DUP)
		return resubmit(app, req, resp, &n, secret, key.tenant,
		    HERR_UNAVAILABLE);
	if (rc != REPO_OK)
		return HERR_UNAVAILABLE;
	quota_note(app, key.tenant);
	return created(app, req, resp, &n, id, secret);
}
