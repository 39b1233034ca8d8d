/*
 * repo_webhook.c - the statements of asyncexec-admin webhook
 * (repo_webhook.h), prepared from their own enum-indexed table on their
 * own connection: endpoints (add, list, get, enable and disable, remove,
 * rotate the secret) and their deliveries (list, replay).
 *
 * Remove deletes the endpoint row first, then its deliveries, in one
 * transaction: the endpoint's row lock keeps a sender that reads it with
 * a locking read from making deliveries for it meanwhile. Replay puts a
 * finished delivery (delivered or dead) back to pending, due now, with
 * no attempts: its webhook_id and body stay, so a receiver sees the same
 * event again with the same webhook-id.
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_sql.h"
#include "repo_webhook.h"

enum wstmt {
	W_ROUTE_EXISTS,
	W_ADD,
	W_LIST_ALL,
	W_LIST_TENANT,
	W_GET,
	W_SET_ENABLED,
	W_HOLD,
	W_UNHOLD,
	W_DEL_ENDPOINT,
	W_DEL_DELIVERIES,
	W_ROTATE,
	W_DELIVERIES,
	W_DELIVERIES_STATE,
	W_DELIVERY_GET,
	W_REPLAY,
	W_REPLAY_SINCE,
	W_STORED,
	W__MAX
};

/* what an operator sees of an endpoint: never secret_sealed or
 * secret_old_sealed */
#define EP_COLS \
	"id, tenant_id, environment, service_key, operation_key, url, " \
	"events, enabled, disabled_reason, secret_old_until, created_at, " \
	"updated_at FROM s2r_webhook_endpoint "
#define EP_NCOLS	12
/* a delivery, with its execution's correlation id (NULL once purged);
 * never the body */
#define DL_COLS \
	"d.id, d.endpoint_id, d.execution_id, e.correlation_id, " \
	"d.webhook_id, d.event, d.state, d.attempts, d.last_status, " \
	"d.last_error, d.due_at, d.created_at, d.delivered_at FROM " \
	"s2r_webhook_delivery d LEFT JOIN s2r_async_execution e ON " \
	"e.id = d.execution_id "
#define DL_NCOLS	13
#define DL_ORDER	"ORDER BY d.created_at DESC, d.id DESC LIMIT ?"
/* a finished delivery back to pending: due at ? (held, HOLD_DUE, while
 * its endpoint is disabled), no attempts, no lease */
#define REPLAY_SET \
	"UPDATE s2r_webhook_delivery SET state = 'pending', attempts = 0, " \
	"due_at = IF((SELECT w.enabled FROM s2r_webhook_endpoint w WHERE " \
	"w.id = s2r_webhook_delivery.endpoint_id) = 1, ?, " HOLD_DUE "), " \
	"lease_token = NULL, delivered_at = NULL, updated_at = ? WHERE "
#define REPLAYABLE	"AND state IN ('delivered', 'dead')"

static const struct db_stmt_def wstmts[W__MAX] = {
	[W_ROUTE_EXISTS] = {
	    "SELECT id FROM s2r_route WHERE environment = ? AND "
	    "service_key = ? AND operation_key = ?", 1, "webhook_route" },
	[W_ADD] = {
	    "INSERT INTO s2r_webhook_endpoint (tenant_id, environment, "
	    "service_key, operation_key, url, events, enabled, "
	    "secret_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, "
	    "?, 1, ?, ?, ?)", 0, "webhook_add" },
	[W_LIST_ALL] = {
	    "SELECT " EP_COLS "ORDER BY id", 1, "webhook_list" },
	[W_LIST_TENANT] = {
	    "SELECT " EP_COLS "WHERE tenant_id = ? ORDER BY id", 1,
	    "webhook_list_tenant" },
	[W_GET] = {
	    "SELECT " EP_COLS "WHERE id = ?", 1, "webhook_get" },
	[W_SET_ENABLED] = {
	    "UPDATE s2r_webhook_endpoint SET enabled = ?, disabled_reason = ?, "
	    "updated_at = ? WHERE id = ?", 0, "webhook_set_enabled" },
	/* a disabled endpoint's pending deliveries out of the due range, and
	 * back, due now, when it is enabled (repo_sql.h) */
	[W_HOLD] = { HOLD_SET, 0, "webhook_hold" },
	[W_UNHOLD] = { UNHOLD_SET, 0, "webhook_unhold" },
	[W_DEL_ENDPOINT] = {
	    "DELETE FROM s2r_webhook_endpoint WHERE id = ?", 0,
	    "webhook_del_endpoint" },
	[W_DEL_DELIVERIES] = {
	    "DELETE FROM s2r_webhook_delivery WHERE endpoint_id = ?", 0,
	    "webhook_del_deliveries" },
	/* the current secret becomes the old one, then the new one takes its
	 * place: assignments run left to right (and with
	 * SIMULTANEOUS_ASSIGNMENT each reads the row as it was), so the old
	 * column gets the secret that was current either way */
	[W_ROTATE] = {
	    "UPDATE s2r_webhook_endpoint SET secret_old_sealed = "
	    "secret_sealed, secret_old_until = ?, secret_sealed = ?, "
	    "updated_at = ? WHERE id = ? AND tenant_id = ?", 0,
	    "webhook_rotate" },
	/* newest first on ix_delivery_endpoint, bounded */
	[W_DELIVERIES] = {
	    "SELECT " DL_COLS "WHERE d.endpoint_id = ? " DL_ORDER, 1,
	    "webhook_deliveries" },
	[W_DELIVERIES_STATE] = {
	    "SELECT " DL_COLS "WHERE d.endpoint_id = ? AND d.state = ? "
	    DL_ORDER, 1, "webhook_deliveries_state" },
	[W_DELIVERY_GET] = {
	    "SELECT " DL_COLS "WHERE d.id = ?", 1, "webhook_delivery_get" },
	[W_REPLAY] = {
	    REPLAY_SET "id = ? " REPLAYABLE, 0, "webhook_replay" },
	[W_REPLAY_SINCE] = {
	    REPLAY_SET "endpoint_id = ? AND created_at >= ? " REPLAYABLE, 0,
	    "webhook_replay_since" },
	/* after a COMMIT that failed (repo_webhook_stored): a locking read,
	 * which waits for the write if it is still in flight */
	[W_STORED] = {
	    "SELECT secret_sealed FROM s2r_webhook_endpoint WHERE id = ? "
	    "LOCK IN SHARE MODE", 1, "webhook_stored" },
};

struct wdb {
	struct db	*db;
};

/* Opens a webhook handle (no connection yet); NULL out of memory. */
struct wdb *
repo_webhook_open(const struct config *cfg)
{
	struct wdb	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	if ((w->db = db_new(cfg, wstmts, W__MAX, 0, 0)) == NULL) {
		free(w);
		return NULL;
	}
	return w;
}

/* Closes w and its connection (NULL: nothing). */
void
repo_webhook_close(struct wdb *w)
{
	if (w == NULL)
		return;
	db_free(w->db);
	free(w);
}

/*
 * A transaction on w's connection, for add and rotate whose secret is
 * printed before their commit. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_webhook_begin(struct wdb *w)
{
	return db_begin(w->db) == 0 ? REPO_OK : REPO_ERR;
}

/* Commits w's transaction: REPO_OK or REPO_ERR (rolled back). */
enum repo_rc
repo_webhook_commit(struct wdb *w)
{
	if (db_commit(w->db) == 0)
		return REPO_OK;
	db_rollback(w->db);
	return REPO_ERR;
}

/*
 * After the COMMIT of add or rotate failed: whether endpoint id holds
 * sealed (n bytes) as its secret, read on w's connection (a fresh one
 * when the answer was lost; on a cluster after every write the cluster
 * committed). REPO_OK (the write took effect), REPO_NOTFOUND (nothing
 * changed) or REPO_ERR (unknown: the read failed).
 */
enum repo_rc
repo_webhook_stored(struct wdb *w, uint64_t id, const unsigned char *sealed,
    size_t n)
{
	unsigned char	 got[WEBHOOK_SEALED_MAX];
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	db_bind_u64(&p[0], &id);
	if (db_sync_reads(w->db, 1) == -1 ||
	    (st = db_run(w->db, W_STORED, p)) == NULL) {
		(void)db_sync_reads(w->db, 0);
		return REPO_ERR;
	}
	db_rcol(&c, 0, MYSQL_TYPE_BLOB, got, sizeof(got));
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (db_sync_reads(w->db, 0) == -1)
		rc = DB_ROW_ERR;
	if (rc == DB_ROW)
		return !c.null[0] && c.len[0] == n &&
		    memcmp(got, sealed, n) == 0 ? REPO_OK : REPO_NOTFOUND;
	return rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
}

/* Rolls w's transaction back. */
void
repo_webhook_rollback(struct wdb *w)
{
	db_rollback(w->db);
}

/* Runs a write; REPO_OK (a row matched), REPO_NOTFOUND or REPO_ERR. */
static enum repo_rc
wwrite(struct wdb *w, enum wstmt id, MYSQL_BIND *p)
{
	if (db_run(w->db, id, p) == NULL)
		return REPO_ERR;
	return db_affected(w->db, id) > 0 ? REPO_OK : REPO_NOTFOUND;
}

/* Whether route env/svc/op exists: REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_webhook_route_exists(struct wdb *w, const char *env, const char *svc,
    const char *op)
{
	MYSQL_BIND	 p[3];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id = 0;
	int		 rc;

	db_bind_str(&p[0], env);
	db_bind_str(&p[1], svc);
	db_bind_str(&p[2], op);
	if ((st = db_run(w->db, W_ROUTE_EXISTS, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}

/*
 * Adds an enabled endpoint with n's sealed secret; *id gets its id.
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_webhook_add(struct wdb *w, const struct webhook_new *n, int64_t now,
    uint64_t *id)
{
	MYSQL_BIND	 p[9];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;

	*id = 0;
	db_bind_str(&p[0], n->tenant);
	db_bind_str(&p[1], n->env);
	db_bind_str(&p[2], n->svc);
	db_bind_str(&p[3], n->op);
	db_bind_str(&p[4], n->url);
	db_bind_str(&p[5], n->events);
	db_bind_blob(&p[6], n->sealed, n->sealed_len);
	db_bind_time(&p[7], &t, now);
	db_bind_time(&p[8], &t, now);
	if ((st = db_run(w->db, W_ADD, p)) == NULL)
		return REPO_ERR;
	*id = mysql_stmt_insert_id(st);
	return REPO_OK;
}

/* An endpoint row's result binds: e's fields, t[3] the times, en enabled. */
struct ep_row {
	struct db_cols		 c;
	MYSQL_TIME		 t[3];
	int			 en;
	struct webhook_endpoint	*e;
};

/* Binds the EP_COLS result columns into r, to land in e (ep_finish). */
static void
ep_bind(struct ep_row *r, struct webhook_endpoint *e)
{
	struct db_cols	*c = &r->c;
	int		 i;

	memset(e, 0, sizeof(*e));
	r->e = e;
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &e->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, e->tenant, sizeof(e->tenant));
	db_rcol(c, 2, MYSQL_TYPE_STRING, e->env, sizeof(e->env));
	db_rcol(c, 3, MYSQL_TYPE_STRING, e->svc, sizeof(e->svc));
	db_rcol(c, 4, MYSQL_TYPE_STRING, e->op, sizeof(e->op));
	db_rcol(c, 5, MYSQL_TYPE_STRING, e->url, sizeof(e->url));
	db_rcol(c, 6, MYSQL_TYPE_STRING, e->events, sizeof(e->events));
	db_rcol(c, 7, MYSQL_TYPE_LONG, &r->en, 0);
	db_rcol(c, 8, MYSQL_TYPE_STRING, e->reason, sizeof(e->reason));
	for (i = 0; i < 3; i++)
		db_rcol(c, 9 + i, MYSQL_TYPE_DATETIME, &r->t[i],
		    sizeof(r->t[i]));
}

/* Completes a fetched endpoint row (strings ended, NULLs as "" or 0). */
static void
ep_finish(struct ep_row *r)
{
	struct webhook_endpoint	*e = r->e;
	struct db_cols		*c = &r->c;

	db_rstr(c, 1, e->tenant, sizeof(e->tenant));
	db_rstr(c, 2, e->env, sizeof(e->env));
	db_rstr(c, 3, e->svc, sizeof(e->svc));
	db_rstr(c, 4, e->op, sizeof(e->op));
	db_rstr(c, 5, e->url, sizeof(e->url));
	db_rstr(c, 6, e->events, sizeof(e->events));
	db_rstr(c, 8, e->reason, sizeof(e->reason));
	e->enabled = r->en != 0;
	e->old_until = c->null[9] ? 0 : db_time_ms(&r->t[0]);
	e->created_at = db_time_ms(&r->t[1]);
	e->updated_at = db_time_ms(&r->t[2]);
}

/*
 * Calls fn for every endpoint (tenant NULL) or every endpoint of tenant,
 * by id. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_webhook_list(struct wdb *w, const char *tenant, repo_endpoint_fn fn,
    void *arg)
{
	struct webhook_endpoint	 e;
	struct ep_row		 r;
	MYSQL_BIND		 p[1];
	MYSQL_STMT		*st;
	int			 rc;

	db_bind_str(&p[0], tenant);
	if ((st = db_run(w->db, tenant ? W_LIST_TENANT : W_LIST_ALL,
	    tenant ? p : NULL)) == NULL)
		return REPO_ERR;
	ep_bind(&r, &e);
	while ((rc = db_fetch_row(st, &r.c)) == DB_ROW) {
		ep_finish(&r);
		fn(arg, &e);
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}

/* Endpoint id into *e. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_webhook_get(struct wdb *w, uint64_t id, struct webhook_endpoint *e)
{
	struct ep_row	 r;
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	int		 rc;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(w->db, W_GET, p)) == NULL)
		return REPO_ERR;
	ep_bind(&r, e);
	rc = db_fetch_row(st, &r.c);
	mysql_stmt_free_result(st);
	if (rc == DB_ROW)
		ep_finish(&r);
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}

/*
 * Enables endpoint id (reason ignored, cleared) or disables it with
 * reason (may be NULL). REPO_OK, REPO_NOTFOUND or REPO_ERR.
 */
enum repo_rc
repo_webhook_set_enabled(struct wdb *w, uint64_t id, int enabled,
    const char *reason, int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t;
	unsigned	 v = enabled ? 1 : 0;

	db_bind_u32(&p[0], &v);
	db_bind_str(&p[1], enabled ? NULL : reason);
	db_bind_time(&p[2], &t, now);
	db_bind_u64(&p[3], &id);
	return wwrite(w, W_SET_ENABLED, p);
}

/*
 * Holds endpoint id's pending deliveries out of the due range (hold 1,
 * after a disable) or makes its held ones due now (hold 0, after an
 * enable), HOLD_ROWS a statement, each committed on its own; *n gets
 * how many moved. REPO_OK or REPO_ERR (those moved so far stay moved).
 */
enum repo_rc
repo_webhook_hold(struct wdb *w, uint64_t id, int hold, int64_t now,
    uint64_t *n)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t;
	enum wstmt	 k = hold ? W_HOLD : W_UNHOLD;
	int		 got, i = 0;

	*n = 0;
	if (!hold)
		db_bind_time(&p[i++], &t, now);
	db_bind_u64(&p[i], &id);
	do {
		if (db_run(w->db, k, p) == NULL)
			return REPO_ERR;
		got = db_affected(w->db, k);
		*n += got > 0 ? (uint64_t)got : 0;
	} while (got == HOLD_ROWS);
	return REPO_OK;
}

/* Remove's two deletes inside the open transaction. */
static enum repo_rc
remove_tx(struct wdb *w, uint64_t id, uint64_t *deliveries)
{
	MYSQL_BIND	 p[1];
	enum repo_rc	 rc;

	db_bind_u64(&p[0], &id);
	if ((rc = wwrite(w, W_DEL_ENDPOINT, p)) != REPO_OK)
		return rc;
	if (db_run(w->db, W_DEL_DELIVERIES, p) == NULL)
		return REPO_ERR;
	*deliveries = (uint64_t)db_affected(w->db, W_DEL_DELIVERIES);
	return REPO_OK;
}

/*
 * Removes endpoint id and all its deliveries, in one transaction;
 * *deliveries gets how many went. REPO_OK, REPO_NOTFOUND (nothing
 * removed) or REPO_ERR (nothing removed).
 */
enum repo_rc
repo_webhook_remove(struct wdb *w, uint64_t id, uint64_t *deliveries)
{
	enum repo_rc	 rc;

	*deliveries = 0;
	if (db_begin(w->db) == -1)
		return REPO_ERR;
	rc = remove_tx(w, id, deliveries);
	if (rc == REPO_OK && db_commit(w->db) == 0)
		return REPO_OK;
	db_rollback(w->db);
	*deliveries = 0;
	return rc == REPO_OK ? REPO_ERR : rc;
}

/*
 * Rotates endpoint id's secret in one statement: the current sealed
 * secret becomes the old one, signing until old_until; sealed (n bytes,
 * sealed for tenant, the endpoint's) is the new one. REPO_OK,
 * REPO_NOTFOUND (no endpoint id of tenant) or REPO_ERR.
 */
enum repo_rc
repo_webhook_rotate(struct wdb *w, uint64_t id, const char *tenant,
    const unsigned char *sealed, size_t n, int64_t old_until, int64_t now)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 tu, tn;

	db_bind_time(&p[0], &tu, old_until);
	db_bind_blob(&p[1], sealed, n);
	db_bind_time(&p[2], &tn, now);
	db_bind_u64(&p[3], &id);
	db_bind_str(&p[4], tenant);
	return wwrite(w, W_ROTATE, p);
}

/* A delivery row's result binds. */
struct dl_row {
	struct db_cols		 c;
	MYSQL_TIME		 t[3];
	int			 status;
	struct webhook_delivery	*d;
};

/* Binds the DL_COLS result columns into r, to land in d (dl_finish). */
static void
dl_bind(struct dl_row *r, struct webhook_delivery *d)
{
	struct db_cols	*c = &r->c;
	int		 i;

	memset(d, 0, sizeof(*d));
	r->d = d;
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &d->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_LONGLONG, &d->endpoint_id, 0);
	db_rcol(c, 2, MYSQL_TYPE_LONGLONG, &d->execution_id, 0);
	db_rcol(c, 3, MYSQL_TYPE_STRING, d->cid, sizeof(d->cid));
	db_rcol(c, 4, MYSQL_TYPE_STRING, d->webhook_id, sizeof(d->webhook_id));
	db_rcol(c, 5, MYSQL_TYPE_STRING, d->event, sizeof(d->event));
	db_rcol(c, 6, MYSQL_TYPE_STRING, d->state, sizeof(d->state));
	db_rcol(c, 7, MYSQL_TYPE_LONG, &d->attempts, 0);
	db_rcol(c, 8, MYSQL_TYPE_LONG, &r->status, 0);
	db_rcol(c, 9, MYSQL_TYPE_STRING, d->last_error, sizeof(d->last_error));
	for (i = 0; i < 3; i++)
		db_rcol(c, 10 + i, MYSQL_TYPE_DATETIME, &r->t[i],
		    sizeof(r->t[i]));
}

/* Completes a fetched delivery row. */
static void
dl_finish(struct dl_row *r)
{
	struct webhook_delivery	*d = r->d;
	struct db_cols		*c = &r->c;

	db_rstr(c, 3, d->cid, sizeof(d->cid));
	db_rstr(c, 4, d->webhook_id, sizeof(d->webhook_id));
	db_rstr(c, 5, d->event, sizeof(d->event));
	db_rstr(c, 6, d->state, sizeof(d->state));
	db_rstr(c, 9, d->last_error, sizeof(d->last_error));
	d->last_status = c->null[8] ? -1 : r->status;
	d->due_at = db_time_ms(&r->t[0]);
	d->created_at = db_time_ms(&r->t[1]);
	d->delivered_at = c->null[12] ? 0 : db_time_ms(&r->t[2]);
}

/*
 * Calls fn for the newest limit (1..WEBHOOK_DELIVERIES_MAX) deliveries
 * of endpoint, newest first; only those in state (NULL: any). REPO_OK
 * or REPO_ERR.
 */
enum repo_rc
repo_webhook_deliveries(struct wdb *w, uint64_t endpoint, const char *state,
    unsigned limit, repo_delivery_fn fn, void *arg)
{
	struct webhook_delivery	 d;
	struct dl_row		 r;
	MYSQL_BIND		 p[3];
	MYSQL_STMT		*st;
	int			 rc;

	if (limit == 0 || limit > WEBHOOK_DELIVERIES_MAX)
		limit = WEBHOOK_DELIVERIES_MAX;
	db_bind_u64(&p[0], &endpoint);
	db_bind_str(&p[1], state);
	db_bind_u32(&p[state ? 2 : 1], &limit);
	if ((st = db_run(w->db, state ? W_DELIVERIES_STATE : W_DELIVERIES,
	    p)) == NULL)
		return REPO_ERR;
	dl_bind(&r, &d);
	while ((rc = db_fetch_row(st, &r.c)) == DB_ROW) {
		dl_finish(&r);
		fn(arg, &d);
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}

/* Delivery id into *d. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_webhook_delivery_get(struct wdb *w, uint64_t id,
    struct webhook_delivery *d)
{
	struct dl_row	 r;
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	int		 rc;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(w->db, W_DELIVERY_GET, p)) == NULL)
		return REPO_ERR;
	dl_bind(&r, d);
	rc = db_fetch_row(st, &r.c);
	mysql_stmt_free_result(st);
	if (rc == DB_ROW)
		dl_finish(&r);
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}

/*
 * Replays delivery id: delivered or dead back to pending, attempts 0,
 * due now, the same webhook_id and body. REPO_OK, REPO_NOTFOUND (no such
 * delivery, or it is pending or leased) or REPO_ERR.
 */
enum repo_rc
repo_webhook_replay(struct wdb *w, uint64_t id, int64_t now)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &id);
	return wwrite(w, W_REPLAY, p);
}

/*
 * Replays every delivered or dead delivery of endpoint created at or
 * after since, as repo_webhook_replay; *n gets how many. REPO_OK (also
 * for none) or REPO_ERR.
 */
enum repo_rc
repo_webhook_replay_since(struct wdb *w, uint64_t endpoint, int64_t since,
    int64_t now, uint64_t *n)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t, ts;

	*n = 0;
	db_bind_time(&p[0], &t, now);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &endpoint);
	db_bind_time(&p[3], &ts, since);
	if (db_run(w->db, W_REPLAY_SINCE, p) == NULL)
		return REPO_ERR;
	*n = (uint64_t)db_affected(w->db, W_REPLAY_SINCE);
	return REPO_OK;
}
