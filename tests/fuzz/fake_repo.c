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
 *
 * This file owns the table (fake_repo_int.h) and holds the consumer's,
 * the service's and the operator's calls; fake_repo_backend.c holds the
 * backend's (claim, heartbeat, the callbacks' writes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fake_repo.h"
#include "fake_repo_int.h"
#include "repo.h"

struct fkey {
	const char	*secret;
	struct key_row	 row;
};

static const struct fkey keys[] = {
	/* id, backend, revoked, tenant, revoke_at, lineage (its own id),
	 * succeeded (none has a later key) */
	{ FAKE_KEY_A, { 1, 0, 0, "tenant-a", 0, 1, 0 } },
	{ FAKE_KEY_B, { 2, 0, 0, "tenant-b", 0, 2, 0 } },
	{ FAKE_KEY_REVOKED, { 3, 0, 1, "tenant-a", 0, 3, 0 } },
	{ FAKE_KEY_BACKEND, { 4, 1, 0, "", 0, 4, 0 } },
	{ FAKE_KEY_IDLE, { 5, 1, 0, "", 0, 5, 0 } },
};

struct fexec		 fake_tab[NEXEC];
static uint64_t		 next_id;
static unsigned		 calls, fail_at;

static const char *const status_names[ST__MAX] = {
	"waiting_callback",	/* ST_WAITING */
	"completed",		/* ST_COMPLETED */
	"failed",		/* ST_FAILED */
	"expired",		/* ST_EXPIRED */
	"cancelled",		/* ST_CANCELLED */
};

/* The status's name as the API spells it, or "unknown". */
const char *
exec_status_name(enum exec_status s)
{
	return s < ST__MAX ? status_names[s] : "unknown";
}

/* Frees r's payloads and clears their pointers; no result. */
void
exec_row_free(struct exec_row *r)
{
	free(r->result);
	free(r->error);
	free(r->progress);
	free(r->last_error);
	r->result = r->error = r->progress = r->last_error = NULL;
}

/* Whether this call is the one to fail (counts every call): 1 or 0. */
int
fake_failing(void)
{
	return ++calls == fail_at;
}

/* A malloc'd copy of n bytes (NUL-terminated), or NULL for NULL. */
char *
fake_dup(const char *p, size_t n)
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
		exec_row_free(&fake_tab[i].row);
		free(fake_tab[i].request);
	}
	memset(fake_tab, 0, sizeof(fake_tab));
}

/* Stores a seeded execution of tenant-a on prod/billing/charge. */
static struct fexec *
seed(uint64_t id, const char *cid, enum exec_status st, int64_t now)
{
	static const char req[] = "{\"amount\":42}";
	struct fexec	*e = &fake_tab[id - 1];
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
	e->request = fake_dup(req, sizeof(req) - 1);
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
	e->row.result = fake_dup("{\"paid\":true}", 13);
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
struct fexec *
fake_by_id(uint64_t id)
{
	size_t	 i;

	for (i = 0; i < NEXEC; i++)
		if (fake_tab[i].used && fake_tab[i].row.id == id)
			return &fake_tab[i];
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
		r = &fake_tab[i].row;
		if (fake_tab[i].used && strcmp(r->tenant, tenant) == 0 &&
		    strcmp(r->env, env) == 0 && strcmp(r->svc, svc) == 0 &&
		    strcmp(r->op, op) == 0 && strcmp(r->cid, cid) == 0)
			return &fake_tab[i];
	}
	return NULL;
}

/* Fresh copies of e's payloads into r (last_error only while waiting). */
static int
payload_out(const struct fexec *e, struct exec_row *r)
{
	const struct exec_row *s = &e->row;
	int		 le = s->status == ST_WAITING && s->last_error != NULL;

	r->result = fake_dup(s->result, s->result_len);
	r->error = fake_dup(s->error, s->error_len);
	r->progress = fake_dup(s->progress, s->progress_len);
	r->last_error = le ? fake_dup(s->last_error, s->last_error_len) :
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

/* The key whose secret hashes to hash: REPO_OK, REPO_NOTFOUND or REPO_ERR. */
int
repo_key_by_hash(struct db *db, const unsigned char *hash, struct key_row *k)
{
	unsigned char	 h[SHA256_LEN];
	size_t		 i;

	(void)db;
	if (fake_failing())
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

/*
 * Whether the backend key serves the route (key 4: prod/billing/charge).
 * REPO_OK, REPO_NOTFOUND or REPO_ERR.
 */
int
repo_backend_serves(struct db *db, uint64_t key_id, const char *env,
    const char *svc, const char *op)
{
	(void)db;
	if (fake_failing())
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
	if (fake_failing())
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

/*
 * The named secret (poll_token_id_key alone: FAKE_IDKEY) into out.
 * REPO_OK, REPO_NOTFOUND or REPO_ERR (also when out is too small).
 */
int
repo_secret_get(struct db *db, const char *name, unsigned char *out,
    size_t outsz, size_t *len)
{
	(void)db;
	if (fake_failing())
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
	if (fake_failing())
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
	if (fake_failing())
		return REPO_ERR;
	if (by_names(n->tenant, n->env, n->svc, n->op, n->cid) != NULL)
		return REPO_DUP;
	for (i = 0; i < NEXEC && e == NULL; i++)
		if (!fake_tab[i].used)
			e = &fake_tab[i];
	if (e == NULL || (e->request = fake_dup(n->request,
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

/* The execution with these names: REPO_OK, REPO_NOTFOUND or REPO_ERR. */
int
repo_exec_by_key(struct db *db, const char *tenant, const char *env,
    const char *svc, const char *op, const char *cid, int64_t now,
    struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if ((e = by_names(tenant, env, svc, op, cid)) == NULL)
		return REPO_NOTFOUND;
	return row_out(e, now, r);
}

/* The execution with this id: REPO_OK, REPO_NOTFOUND or REPO_ERR. */
int
repo_exec_by_id(struct db *db, uint64_t id, int64_t now, struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL)
		return REPO_NOTFOUND;
	return row_out(e, now, r);
}

/* As repo.c: by id, which must have these names; without the payloads
 * (r->payloads 0: the handler's repo_exec_payload path). */
int
repo_exec_poll(struct db *db, uint64_t id, const char *tenant,
    const char *env, const char *svc, const char *op, const char *cid,
    const struct poll_proof *proof, struct exec_row *r)
{
	struct fexec	*e;

	(void)db;
	(void)proof;
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL ||
	    e != by_names(tenant, env, svc, op, cid))
		return REPO_NOTFOUND;
	*r = e->row;
	r->result = r->error = r->progress = r->last_error = NULL;
	r->payloads = 0;
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
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(r->id)) == NULL)
		return REPO_NOTFOUND;
	return payload_out(e, r);
}

/* Replaces the poll-token hash: REPO_OK, REPO_NOTFOUND or REPO_ERR. */
int
repo_exec_rotate_poll(struct db *db, uint64_t id, const unsigned char *hash)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL)
		return REPO_NOTFOUND;
	memcpy(e->row.poll_hash, hash, SHA256_LEN);
	return REPO_OK;
}

/* Cancels a waiting execution that no live lease holds. */
int
repo_exec_cancel(struct db *db, uint64_t id, enum repo_mark mark, int64_t now)
{
	struct fexec	*e;

	(void)db;
	(void)mark;
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL || e->row.status != ST_WAITING ||
	    (e->has_cb && e->lease_until > now))
		return REPO_NOTFOUND;
	e->row.status = ST_CANCELLED;
	e->row.completed_at = e->row.updated_at = now;
	return REPO_OK;
}

/*
 * Marks a waiting execution cancel-requested (updated_at = now the
 * first time). REPO_OK, REPO_NOTFOUND (unknown or final) or REPO_ERR.
 */
int
repo_exec_request_cancel(struct db *db, uint64_t id, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL || e->row.status != ST_WAITING)
		return REPO_NOTFOUND;
	if (!e->row.cancel_requested)
		e->row.updated_at = now;
	e->row.cancel_requested = 1;
	return REPO_OK;
}

/* The build's SCHEMA_VERSION into *version: REPO_OK or REPO_ERR. */
int
repo_schema_version(struct db *db, int *version)
{
	(void)db;
	if (fake_failing())
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

/* As repo_node.c: the fake's failures are outages, no cause to name. */
enum repo_cause
repo_cause(const struct db *db)
{
	(void)db;
	return CAUSE_OTHER;
}

/* As repo_metrics.c: no expiry run recorded yet. */
int
repo_metrics_expiry(struct db *db, struct job_run *j)
{
	(void)db;
	memset(j, 0, sizeof(*j));
	return fake_failing() ? REPO_ERR : REPO_NOTFOUND;
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
 * executions and the created_at of the oldest one waiting for a claim at
 * now: due, no live lease, not cancel-requested (0 when none).
 */
int
repo_metrics_waiting(struct db *db, struct route_waiting *w, size_t max,
    size_t *n, int64_t now)
{
	static const char *const ops[] = { "charge", "off" };
	struct exec_row	*r;
	size_t		 i, j;

	(void)db;
	*n = 0;
	if (fake_failing())
		return REPO_ERR;
	for (j = 0; j < sizeof(ops) / sizeof(ops[0]) && *n < max; j++) {
		memset(&w[*n], 0, sizeof(w[*n]));
		snprintf(w[*n].env, sizeof(w[*n].env), "prod");
		snprintf(w[*n].svc, sizeof(w[*n].svc), "billing");
		snprintf(w[*n].op, sizeof(w[*n].op), "%s", ops[j]);
		for (i = 0; i < NEXEC; i++) {
			r = &fake_tab[i].row;
			if (!fake_tab[i].used || r->status != ST_WAITING ||
			    strcmp(r->op, ops[j]) != 0 ||
			    strcmp(r->env, "prod") != 0 ||
			    strcmp(r->svc, "billing") != 0)
				continue;
			w[*n].waiting++;
			if (!r->cancel_requested && r->not_before <= now &&
			    fake_tab[i].not_before <= now &&
			    fake_tab[i].lease_until <= now &&
			    (w[*n].oldest_ms == 0 ||
			    r->created_at < w[*n].oldest_ms))
				w[*n].oldest_ms = r->created_at;
		}
		(*n)++;
	}
	return REPO_OK;
}

/*
 * As repo_list.c: the lineage's executions on the route, newest first.
 * No fake key has a later key in its lineage: key_id is always 0.
 */
int
repo_exec_list(struct db *db, const unsigned char *lineage, uint64_t key_id,
    const struct list_at *at, unsigned max, struct list_item *it,
    size_t *n, uint64_t *past)
{
	const char	*env = at->env, *svc = at->svc, *op = at->op;
	enum exec_status status = at->status;
	const struct exec_row *r, *best;
	uint64_t	 below = at->before;
	size_t		 i;

	(void)db;
	(void)key_id;
	*n = 0;
	*past = 0;
	if (fake_failing())
		return REPO_ERR;
	while (*n < max) {
		best = NULL;
		for (i = 0; i < NEXEC; i++) {
			r = &fake_tab[i].row;
			if (fake_tab[i].used && !r->lineage_null &&
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
	if (fake_failing())
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
	if (fake_failing())
		return REPO_ERR;
	for (i = 0; i < NEXEC && *open < cap; i++)
		if (fake_tab[i].used && fake_tab[i].row.status == ST_WAITING &&
		    !fake_tab[i].row.tenant_null &&
		    strcmp(fake_tab[i].row.tenant, tenant) == 0)
			(*open)++;
	return REPO_OK;
}
