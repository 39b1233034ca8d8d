/*
 * fake_repo.c - the repository calls the handlers make (src/repo.h),
 * over a small in-memory table, for fuzz_request only.
 *
 * It follows the compare-and-set rules of repo.c's SQL (status, callback
 * token, lease, cancel request), not its storage: no database, no SQL,
 * no <mysql.h>. The struct db pointer is ignored. A handler that starts
 * calling a new repo_* function makes fuzz_request fail to link: add the
 * function here with the same contract as in repo.c.
 *
 * fake_repo_fail_at(n) makes the n-th repository call of the input
 * answer REPO_ERR (the database is down), to reach the 503 paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fake_repo.h"
#include "repo.h"

#define NEXEC	8

struct fkey {
	const char	*secret;
	struct key_row	 row;
};

struct fexec {
	int		 used;
	struct exec_row	 row;		/* result/error owned here */
	unsigned char	 cb_hash[SHA256_LEN];
	int		 has_cb;
	int64_t		 lease_until;
	int64_t		 not_before;	/* a retry's time; 0: none */
	unsigned char	 win_hash[SHA256_LEN];
	int		 has_win;
	char		*request;
	size_t		 request_len;
};

static const struct fkey keys[] = {
	/* id, backend, revoked, tenant, revoke_at, lineage (its own id) */
	{ FAKE_KEY_A, { 1, 0, 0, "tenant-a", 0, 1 } },
	{ FAKE_KEY_B, { 2, 0, 0, "tenant-b", 0, 2 } },
	{ FAKE_KEY_REVOKED, { 3, 0, 1, "tenant-a", 0, 3 } },
	{ FAKE_KEY_BACKEND, { 4, 1, 0, "", 0, 4 } },
	{ FAKE_KEY_IDLE, { 5, 1, 0, "", 0, 5 } },
};

static struct fexec	 tab[NEXEC];
static uint64_t		 next_id;
static unsigned		 calls, fail_at;

static const char *const status_names[ST__MAX] = {
	"waiting_callback",	/* ST_WAITING */
	"completed",		/* ST_COMPLETED */
	"failed",		/* ST_FAILED */
	"expired",		/* ST_EXPIRED */
	"cancelled",		/* ST_CANCELLED */
};

const char *
exec_status_name(enum exec_status s)
{
	return s < ST__MAX ? status_names[s] : "unknown";
}

void
exec_row_free(struct exec_row *r)
{
	free(r->result);
	free(r->error);
	free(r->progress);
	free(r->last_error);
	r->result = r->error = r->progress = r->last_error = NULL;
}

void
claim_free(struct claim_item *it, size_t n)
{
	size_t	 i;

	for (i = 0; it != NULL && i < n; i++)
		free(it[i].request);
	free(it);
}

/* Whether this call is the one to fail (counts every call). */
static int
failing(void)
{
	return ++calls == fail_at;
}

/* A malloc'd copy of n bytes (NUL-terminated), or NULL for NULL. */
static char *
dup_bytes(const char *p, size_t n)
{
	char	*c;

	if (p == NULL || (c = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(c, p, n);
	c[n] = '\0';
	return c;
}

/* Frees every stored payload and empties the table. */
void
fake_repo_clear(void)
{
	size_t	 i;

	for (i = 0; i < NEXEC; i++) {
		exec_row_free(&tab[i].row);
		free(tab[i].request);
	}
	memset(tab, 0, sizeof(tab));
}

/* Stores a seeded execution of tenant-a on prod/billing/charge. */
static struct fexec *
seed(uint64_t id, const char *cid, enum exec_status st, int64_t now)
{
	static const char req[] = "{\"amount\":42}";
	struct fexec	*e = &tab[id - 1];
	struct exec_row	*r = &e->row;

	e->used = 1;
	r->id = id;
	snprintf(r->cid, sizeof(r->cid), "%s", cid);
	snprintf(r->env, sizeof(r->env), "prod");
	snprintf(r->svc, sizeof(r->svc), "billing");
	snprintf(r->op, sizeof(r->op), "charge");
	snprintf(r->tenant, sizeof(r->tenant), "tenant-a");
	r->status = st;
	crypto_sha256(FAKE_KEY_A, strlen(FAKE_KEY_A), r->key_hash);
	crypto_sha256(FAKE_POLL_SECRET, strlen(FAKE_POLL_SECRET), r->poll_hash);
	crypto_sha256("lineage:1", 9, r->lineage);	/* key A's (auth_lineage) */
	crypto_sha256(req, sizeof(req) - 1, r->request_sha);
	r->created_at = r->updated_at = now - 1000;
	r->expires_at = now + 86400000;
	e->request = dup_bytes(req, sizeof(req) - 1);
	e->request_len = sizeof(req) - 1;
	return e;
}

/*
 * Puts the table into its seeded state at time now: execution 1 waiting,
 * claimed (callback token FAKE_CB_TOKEN, attempt 1) and cancel-requested,
 * 2 completed, 3 waiting and unclaimed, without a lineage (matched by its
 * key hash, not listed). Clears the failure injection.
 */
void
fake_repo_reset(int64_t now)
{
	struct fexec	*e;

	fake_repo_clear();
	e = seed(1, "order-1", ST_WAITING, now);
	crypto_sha256(FAKE_CB_TOKEN, strlen(FAKE_CB_TOKEN), e->cb_hash);
	e->has_cb = 1;
	e->lease_until = now + 60000;
	e->row.attempts = 1;
	e->row.cancel_requested = 1;
	e = seed(2, "order-2", ST_COMPLETED, now);
	e->row.completed_at = now - 500;
	e->row.result = dup_bytes("{\"paid\":true}", 13);
	e->row.result_len = 13;
	e = seed(3, "order-3", ST_WAITING, now);
	e->row.lineage_null = 1;	/* as written by a schema-6 binary */
	next_id = 4;
	calls = fail_at = 0;
}

/* Makes the n-th repository call from now on fail (0: none). */
void
fake_repo_fail_at(unsigned n)
{
	calls = 0;
	fail_at = n;
}

/* The execution with this id, or NULL. */
static struct fexec *
by_id(uint64_t id)
{
	size_t	 i;

	for (i = 0; i < NEXEC; i++)
		if (tab[i].used && tab[i].row.id == id)
			return &tab[i];
	return NULL;
}

/* The execution with these names (the unique key), or NULL. */
static struct fexec *
by_names(const char *tenant, const char *env, const char *svc,
    const char *op, const char *cid)
{
	struct exec_row	*r;
	size_t		 i;

	for (i = 0; i < NEXEC; i++) {
		r = &tab[i].row;
		if (tab[i].used && strcmp(r->tenant, tenant) == 0 &&
		    strcmp(r->env, env) == 0 && strcmp(r->svc, svc) == 0 &&
		    strcmp(r->op, op) == 0 && strcmp(r->cid, cid) == 0)
			return &tab[i];
	}
	return NULL;
}

/* Fresh copies of e's payloads into r (last_error only while waiting). */
static int
payload_out(const struct fexec *e, struct exec_row *r)
{
	const struct exec_row *s = &e->row;
	int		 le = s->status == ST_WAITING && s->last_error != NULL;

	r->result = dup_bytes(s->result, s->result_len);
	r->error = dup_bytes(s->error, s->error_len);
	r->progress = dup_bytes(s->progress, s->progress_len);
	r->last_error = le ? dup_bytes(s->last_error, s->last_error_len) :
	    NULL;
	r->has_progress = s->progress != NULL;
	r->has_last_error = le;
	if ((s->result != NULL && r->result == NULL) ||
	    (s->error != NULL && r->error == NULL) ||
	    (s->progress != NULL && r->progress == NULL) ||
	    (le && r->last_error == NULL)) {
		exec_row_free(r);
		return REPO_ERR;
	}
	return REPO_OK;
}

/* Copies e into r with fresh payload copies and the claimed flag. */
static int
row_out(const struct fexec *e, int64_t now, struct exec_row *r)
{
	*r = e->row;
	r->claimed = e->has_cb && e->lease_until > now;
	return payload_out(e, r);
}

int
repo_key_by_hash(struct db *db, const unsigned char *hash, struct key_row *k)
{
	unsigned char	 h[SHA256_LEN];
	size_t		 i;

	(void)db;
	if (failing())
		return REPO_ERR;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		crypto_sha256(keys[i].secret, strlen(keys[i].secret), h);
		if (memcmp(h, hash, SHA256_LEN) == 0) {
			*k = keys[i].row;
			return REPO_OK;
		}
	}
	return REPO_NOTFOUND;
}

int
repo_backend_serves(struct db *db, uint64_t key_id, const char *env,
    const char *svc, const char *op)
{
	(void)db;
	if (failing())
		return REPO_ERR;
	return key_id == 4 && strcmp(env, "prod") == 0 &&
	    strcmp(svc, "billing") == 0 && strcmp(op, "charge") == 0 ?
	    REPO_OK : REPO_NOTFOUND;
}

/* Routes: prod/billing/charge (enabled, 7 days), prod/billing/off (disabled). */
int
repo_route_get(struct db *db, const char *env, const char *svc,
    const char *op, struct route_row *r)
{
	(void)db;
	if (failing())
		return REPO_ERR;
	if (strcmp(env, "prod") != 0 || strcmp(svc, "billing") != 0)
		return REPO_NOTFOUND;
	if (strcmp(op, "charge") == 0) {
		r->id = 1;
		r->retention_days = 7;
		r->enabled = 1;
		return REPO_OK;
	}
	if (strcmp(op, "off") == 0) {
		r->id = 2;
		r->retention_days = 7;
		r->enabled = 0;
		return REPO_OK;
	}
	return REPO_NOTFOUND;
}

int
repo_secret_get(struct db *db, const char *name, unsigned char *out,
    size_t outsz, size_t *len)
{
	(void)db;
	if (failing())
		return REPO_ERR;
	if (strcmp(name, "poll_token_id_key") != 0)
		return REPO_NOTFOUND;
	if (outsz < IDKEY_LEN)
		return REPO_ERR;
	memcpy(out, FAKE_IDKEY, IDKEY_LEN);
	*len = IDKEY_LEN;
	return REPO_OK;
}

/* The poll-token keys: version 0 alone (FAKE_IDKEY), never retired. */
int
repo_poll_keys(struct db *db, struct poll_key_row *k, size_t max, size_t *n)
{
	(void)db;
	*n = 0;
	if (failing())
		return REPO_ERR;
	if (max < 1)
		return REPO_ERR;
	k[0].version = 0;
	memcpy(k[0].key, FAKE_IDKEY, IDKEY_LEN);
	k[0].retire_at = 0;
	*n = 1;
	return REPO_OK;
}

/* A new waiting row; REPO_DUP when the unique key is taken, REPO_ERR when full. */
int
repo_exec_insert(struct db *db, const struct exec_new *n, uint64_t *id)
{
	struct fexec	*e = NULL;
	struct exec_row	*r;
	size_t		 i;

	(void)db;
	if (failing())
		return REPO_ERR;
	if (by_names(n->tenant, n->env, n->svc, n->op, n->cid) != NULL)
		return REPO_DUP;
	for (i = 0; i < NEXEC && e == NULL; i++)
		if (!tab[i].used)
			e = &tab[i];
	if (e == NULL || (e->request = dup_bytes(n->request,
	    n->request_len)) == NULL)
		return REPO_ERR;
	e->used = 1;
	e->request_len = n->request_len;
	r = &e->row;
	r->id = *id = next_id++;
	snprintf(r->cid, sizeof(r->cid), "%s", n->cid);
	snprintf(r->env, sizeof(r->env), "%s", n->env);
	snprintf(r->svc, sizeof(r->svc), "%s", n->svc);
	snprintf(r->op, sizeof(r->op), "%s", n->op);
	snprintf(r->tenant, sizeof(r->tenant), "%s", n->tenant);
	r->status = ST_WAITING;
	memcpy(r->key_hash, n->key_hash, SHA256_LEN);
	memcpy(r->poll_hash, n->poll_hash, SHA256_LEN);
	memcpy(r->lineage, n->lineage, SHA256_LEN);	/* seeded: NULL */
	r->lineage_null = 0;
	memcpy(r->request_sha, n->request_sha, SHA256_LEN);
	r->created_at = r->updated_at = n->now;
	r->expires_at = n->expires_at;
	return REPO_OK;
}

int
repo_exec_by_key(struct db *db, const char *tenant, const char *env,
    const char *svc, const char *op, const char *cid, int64_t now,
    struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_names(tenant, env, svc, op, cid)) == NULL)
		return REPO_NOTFOUND;
	return row_out(e, now, r);
}

int
repo_exec_by_id(struct db *db, uint64_t id, int64_t now, struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL)
		return REPO_NOTFOUND;
	return row_out(e, now, r);
}

/* As repo.c: by id, which must have these names; without the payloads. */
int
repo_exec_poll(struct db *db, uint64_t id, const char *tenant,
    const char *env, const char *svc, const char *op, const char *cid,
    struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL ||
	    e != by_names(tenant, env, svc, op, cid))
		return REPO_NOTFOUND;
	*r = e->row;
	r->result = r->error = r->progress = r->last_error = NULL;
	r->has_progress = e->row.progress != NULL;
	r->has_last_error = e->row.status == ST_WAITING &&
	    e->row.last_error != NULL;
	return REPO_OK;
}

/* The payloads of r->id into r (after repo_exec_poll). */
int
repo_exec_payload(struct db *db, struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(r->id)) == NULL)
		return REPO_NOTFOUND;
	return payload_out(e, r);
}

int
repo_exec_rotate_poll(struct db *db, uint64_t id, const unsigned char *hash)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL)
		return REPO_NOTFOUND;
	memcpy(e->row.poll_hash, hash, SHA256_LEN);
	return REPO_OK;
}

/* Cancels a waiting execution that no live lease holds. */
int
repo_exec_cancel(struct db *db, uint64_t id, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL || e->row.status != ST_WAITING ||
	    (e->has_cb && e->lease_until > now))
		return REPO_NOTFOUND;
	e->row.status = ST_CANCELLED;
	e->row.completed_at = e->row.updated_at = now;
	return REPO_OK;
}

int
repo_exec_request_cancel(struct db *db, uint64_t id, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL || e->row.status != ST_WAITING)
		return REPO_NOTFOUND;
	if (!e->row.cancel_requested)
		e->row.updated_at = now;
	e->row.cancel_requested = 1;
	return REPO_OK;
}

/* Fills claim item it from e with a fresh token and lease; 0 or -1. */
static int
claim_one(struct fexec *e, int64_t lease_until, struct claim_item *it)
{
	if (crypto_new_secret("", it->token, sizeof(it->token),
	    e->cb_hash) == -1 || (it->request = dup_bytes(e->request,
	    e->request_len)) == NULL)
		return -1;
	it->request_len = e->request_len;
	it->id = e->row.id;
	snprintf(it->cid, sizeof(it->cid), "%s", e->row.cid);
	snprintf(it->tenant, sizeof(it->tenant), "%s", e->row.tenant);
	it->attempt = ++e->row.attempts;
	it->lease_expires_at = e->lease_until = lease_until;
	it->created_at = e->row.created_at;
	e->has_cb = 1;
	return 0;
}

/*
 * As repo.c: waiting, unleased, not cancel-requested executions of the
 * route that are not past expires_at and have used fewer than
 * max_attempts attempts, oldest first.
 */
int
repo_claim(struct db *db, const char *env, const char *svc, const char *op,
    unsigned max, unsigned lease_seconds, unsigned max_attempts, int64_t now,
    struct claim_item **out, size_t *n)
{
	struct claim_item *it;
	struct fexec	*e;
	size_t		 i;

	(void)db;
	*out = NULL;
	*n = 0;
	if (failing() || (it = calloc(max, sizeof(*it))) == NULL)
		return REPO_ERR;
	for (i = 0; i < NEXEC && *n < max; i++) {
		e = &tab[i];
		if (!e->used || e->row.status != ST_WAITING ||
		    e->row.cancel_requested || strcmp(e->row.env, env) != 0 ||
		    strcmp(e->row.svc, svc) != 0 || strcmp(e->row.op, op) != 0 ||
		    (e->has_cb && e->lease_until > now) ||
		    e->row.expires_at <= now || e->row.attempts >= max_attempts ||
		    e->not_before > now)
			continue;
		if (claim_one(e, now + (int64_t)lease_seconds * 1000,
		    &it[*n]) == -1) {
			claim_free(it, *n + 1);
			*n = 0;
			return REPO_ERR;
		}
		(*n)++;
	}
	*out = it;
	return REPO_OK;
}

/* Whether e is waiting under the claim whose token hashes to tokhash. */
static int
holds(const struct fexec *e, const unsigned char *tokhash)
{
	return e != NULL && e->row.status == ST_WAITING && e->has_cb &&
	    memcmp(e->cb_hash, tokhash, SHA256_LEN) == 0;
}

int
repo_heartbeat(struct db *db, uint64_t id, const unsigned char *tokhash,
    int64_t lease_until)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if (!holds(e = by_id(id), tokhash))
		return REPO_NOTFOUND;
	e->lease_until = lease_until;
	return REPO_OK;
}

int
repo_finalize_win(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len,
    const unsigned char *winhash, int64_t now)
{
	struct fexec	*e;
	char		*copy = NULL;

	(void)db;
	if (failing())
		return REPO_ERR;
	if (!holds(e = by_id(id), tokhash) ||
	    (to == ST_CANCELLED && !e->row.cancel_requested))
		return REPO_NOTFOUND;
	if (to != ST_CANCELLED && (copy = dup_bytes(payload ? payload : "",
	    payload ? len : 0)) == NULL)
		return REPO_ERR;
	e->row.status = to;
	e->row.completed_at = e->row.updated_at = now;
	memcpy(e->win_hash, winhash, SHA256_LEN);
	e->has_win = 1;
	if (to == ST_COMPLETED) {
		e->row.result = copy;
		e->row.result_len = len;
	} else if (to == ST_FAILED) {
		e->row.error = copy;
		e->row.error_len = len;
	}
	return REPO_OK;
}

/* Replaces *p (n bytes) with a copy of v; REPO_OK or REPO_ERR. */
static int
store(char **p, size_t *n, const char *v, size_t vn)
{
	char	*c;

	if ((c = dup_bytes(v, vn)) == NULL)
		return REPO_ERR;
	free(*p);
	*p = c;
	*n = vn;
	return REPO_OK;
}

int
repo_heartbeat_progress(struct db *db, uint64_t id,
    const unsigned char *tokhash, int64_t lease_until, const char *progress,
    size_t len, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if (!holds(e = by_id(id), tokhash))
		return REPO_NOTFOUND;
	if (store(&e->row.progress, &e->row.progress_len, progress,
	    len) != REPO_OK)
		return REPO_ERR;
	e->lease_until = lease_until;
	e->row.updated_at = now;
	return REPO_OK;
}

/* As repo_callback.c: the claim ends, the retry waits until not_before. */
int
repo_retry(struct db *db, uint64_t id, const unsigned char *tokhash,
    const char *error, size_t len, unsigned max_attempts,
    int64_t not_before, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (failing())
		return REPO_ERR;
	if (!holds(e = by_id(id), tokhash) || e->row.cancel_requested ||
	    e->row.attempts >= max_attempts)
		return REPO_NOTFOUND;
	if (store(&e->row.last_error, &e->row.last_error_len, error,
	    len) != REPO_OK)
		return REPO_ERR;
	e->has_cb = 0;
	e->lease_until = 0;
	e->not_before = not_before;
	e->row.updated_at = now;
	return REPO_OK;
}

int
repo_exec_winner(struct db *db, uint64_t id, unsigned char *tokhash,
    unsigned char *winhash)
{
	struct fexec	*e;

	(void)db;
	memset(tokhash, 0, SHA256_LEN);
	memset(winhash, 0, SHA256_LEN);
	if (failing())
		return REPO_ERR;
	if ((e = by_id(id)) == NULL || !e->has_cb || !e->has_win)
		return REPO_NOTFOUND;
	memcpy(tokhash, e->cb_hash, SHA256_LEN);
	memcpy(winhash, e->win_hash, SHA256_LEN);
	return REPO_OK;
}

int
repo_schema_version(struct db *db, int *version)
{
	(void)db;
	if (failing())
		return REPO_ERR;
	*version = SCHEMA_VERSION;
	return REPO_OK;
}

/* As repo_keys.c: the fake's schema is the build's, with nothing newer. */
int
repo_schema_compat(struct db *db, int built_for, int *version, int *needs)
{
	(void)built_for;
	*needs = 0;
	return repo_schema_version(db, version);
}

/* As repo_node.c on one server without Galera: always ready. */
int
repo_node_state(struct db *db, struct repo_node *n)
{
	(void)db;
	memset(n, 0, sizeof(*n));
	n->ready = 1;
	return REPO_OK;
}

/* As repo_metrics.c: no expiry run recorded yet. */
int
repo_metrics_expiry(struct db *db, struct job_run *j)
{
	(void)db;
	memset(j, 0, sizeof(*j));
	return failing() ? REPO_ERR : REPO_NOTFOUND;
}

/* REPO_OK when the database answers (the fake: unless failing). */
int
repo_ping(struct db *db)
{
	int	 v;

	return repo_schema_version(db, &v);
}

/*
 * As repo_metrics.c: per route (both of the fake's), the waiting
 * executions and the created_at of the oldest waiting one that is not
 * cancel-requested (0 when none).
 */
int
repo_metrics_waiting(struct db *db, struct route_waiting *w, size_t max,
    size_t *n)
{
	static const char *const ops[] = { "charge", "off" };
	struct exec_row	*r;
	size_t		 i, j;

	(void)db;
	*n = 0;
	if (failing())
		return REPO_ERR;
	for (j = 0; j < sizeof(ops) / sizeof(ops[0]) && *n < max; j++) {
		memset(&w[*n], 0, sizeof(w[*n]));
		snprintf(w[*n].env, sizeof(w[*n].env), "prod");
		snprintf(w[*n].svc, sizeof(w[*n].svc), "billing");
		snprintf(w[*n].op, sizeof(w[*n].op), "%s", ops[j]);
		for (i = 0; i < NEXEC; i++) {
			r = &tab[i].row;
			if (!tab[i].used || r->status != ST_WAITING ||
			    strcmp(r->op, ops[j]) != 0 ||
			    strcmp(r->env, "prod") != 0 ||
			    strcmp(r->svc, "billing") != 0)
				continue;
			w[*n].waiting++;
			if (!r->cancel_requested && (w[*n].oldest_ms == 0 ||
			    r->created_at < w[*n].oldest_ms))
				w[*n].oldest_ms = r->created_at;
		}
		(*n)++;
	}
	return REPO_OK;
}

/* As repo_list.c: the lineage's executions on the route, newest first. */
int
repo_exec_list(struct db *db, const unsigned char *lineage, const char *env,
    const char *svc, const char *op, enum exec_status status,
    uint64_t before, unsigned max, struct list_item *it, size_t *n)
{
	const struct exec_row *r, *best;
	uint64_t	 below = before;
	size_t		 i;

	(void)db;
	*n = 0;
	if (failing())
		return REPO_ERR;
	while (*n < max) {
		best = NULL;
		for (i = 0; i < NEXEC; i++) {
			r = &tab[i].row;
			if (tab[i].used && !r->lineage_null &&
			    memcmp(r->lineage, lineage, SHA256_LEN) == 0 &&
			    strcmp(r->env, env) == 0 &&
			    strcmp(r->svc, svc) == 0 &&
			    strcmp(r->op, op) == 0 && r->id < below &&
			    (status == ST__MAX || r->status == status) &&
			    (best == NULL || r->id > best->id))
				best = r;
		}
		if (best == NULL)
			break;
		memset(&it[*n], 0, sizeof(it[*n]));
		it[*n].id = best->id;
		snprintf(it[*n].cid, sizeof(it[*n].cid), "%s", best->cid);
		it[*n].status = best->status;
		it[*n].created_at = best->created_at;
		it[*n].updated_at = best->updated_at;
		it[*n].expires_at = best->expires_at;
		it[*n].completed_at = best->completed_at;
		below = best->id;
		(*n)++;
	}
	return REPO_OK;
}

/*
 * As repo_tenant.c: tenant-b has a quota of 2 open executions (so the
 * fuzzer reaches 429 and the retry at the quota), every other tenant
 * none (REPO_NOTFOUND).
 */
int
repo_tenant_quota(struct db *db, const char *tenant, unsigned *max_open)
{
	(void)db;
	*max_open = 0;
	if (failing())
		return REPO_ERR;
	if (strcmp(tenant, "tenant-b") != 0)
		return REPO_NOTFOUND;
	*max_open = 2;
	return REPO_OK;
}

/* As repo_tenant.c: the tenant's waiting executions, at most cap. */
int
repo_tenant_open(struct db *db, const char *tenant, unsigned cap,
    unsigned *open)
{
	size_t	 i;

	(void)db;
	*open = 0;
	if (failing())
		return REPO_ERR;
	for (i = 0; i < NEXEC && *open < cap; i++)
		if (tab[i].used && tab[i].row.status == ST_WAITING &&
		    !tab[i].row.tenant_null &&
		    strcmp(tab[i].row.tenant, tenant) == 0)
			(*open)++;
	return REPO_OK;
}
