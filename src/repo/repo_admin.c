/*
 * repo_admin.c - the repository's operator statements: routes, keys,
 * executions (asyncexec-admin; the migrations are repo_migrate.c's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "db.h"
#include "log.h"
#include "migrations.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_sql.h"

/* What a failed insert's error answers: REPO_DUP, REPO_RETRY or REPO_ERR. */
static enum repo_rc
insert_failed(struct db *db)
{
	return db_errno(db) == ER_DUP_ENTRY ? REPO_DUP : repo_failed(db);
}

/* Runs an insert; REPO_OK, REPO_DUP, REPO_RETRY (deadlock) or REPO_ERR. */
static enum repo_rc
insert(struct db *db, enum stmt id, MYSQL_BIND *p)
{
	if (db_run(db, id, p) != NULL)
		return REPO_OK;
	return insert_failed(db);
}

/* Adds an enabled route. REPO_OK, REPO_DUP (exists), REPO_RETRY or REPO_ERR. */
enum repo_rc
repo_route_add(struct db *db, const char *env, const char *svc,
    const char *op, unsigned retention_days, int64_t now)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t;

	db_bind_str(&p[0], env);
	db_bind_str(&p[1], svc);
	db_bind_str(&p[2], op);
	db_bind_u32(&p[3], &retention_days);
	db_bind_time(&p[4], &t, now);
	return insert(db, STMT_ROUTE_ADD, p);
}

/*
 * Stores a key hash (tenant NULL for backend keys, label may be NULL);
 * *id gets the new key's id. REPO_OK, REPO_DUP, REPO_RETRY (a deadlock
 * undid the transaction) or REPO_ERR.
 */
enum repo_rc
repo_key_add(struct db *db, int backend, const char *tenant,
    const char *label, const unsigned char *hash, int64_t now, uint64_t *id)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;

	db_bind_str(&p[0], backend ? "backend" : "consumer");
	db_bind_blob(&p[1], hash, SHA256_LEN);
	db_bind_str(&p[2], tenant);
	db_bind_str(&p[3], label);
	db_bind_time(&p[4], &t, now);
	if ((st = db_run(db, STMT_KEY_ADD, p)) == NULL)
		return insert_failed(db);
	*id = mysql_stmt_insert_id(st);
	return REPO_OK;
}

/* Lets backend key key_id serve route route_id. REPO_OK/DUP/RETRY/ERR. */
enum repo_rc
repo_backend_route_add(struct db *db, uint64_t key_id, uint64_t route_id)
{
	MYSQL_BIND	 p[2];

	db_bind_u64(&p[0], &key_id);
	db_bind_u64(&p[1], &route_id);
	return insert(db, STMT_BACKEND_ROUTE_ADD, p);
}

/* Enables or disables a route. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_route_set_enabled(struct db *db, const char *env, const char *svc,
    const char *op, int enabled)
{
	MYSQL_BIND	 p[4];
	unsigned	 v = enabled ? 1 : 0;

	db_bind_u32(&p[0], &v);
	db_bind_str(&p[1], env);
	db_bind_str(&p[2], svc);
	db_bind_str(&p[3], op);
	if (db_run(db, STMT_ROUTE_SET_ENABLED, p) == NULL)
		return REPO_ERR;
	return db_affected(db, STMT_ROUTE_SET_ENABLED) > 0 ? REPO_OK :
	    REPO_NOTFOUND;
}

#define LIST_COLS	5
#define LIST_WIDTH	4096	/* over any one column of the listings */

/* Binds the ncols text columns of a listing to cell; cols points at them. */
static void
list_bind(struct db_cols *c, char (*cell)[LIST_WIDTH], const char **cols,
    int ncols)
{
	int	 i;

	for (i = 0; i < ncols; i++) {
		db_rcol(c, i, MYSQL_TYPE_STRING, cell[i], LIST_WIDTH);
		cols[i] = cell[i];
	}
}

/*
 * Runs listing statement id (params may be NULL) whose ncols columns
 * are all fetched as text, and calls fn for each row. A value longer
 * than its cell fails the listing (db_fetch_row), never cut. REPO_OK/ERR.
 */
static enum repo_rc
list(struct db *db, enum stmt id, MYSQL_BIND *p, int ncols, repo_row_fn fn,
    void *arg)
{
	static char	 cell[LIST_COLS][LIST_WIDTH];
	const char	*cols[LIST_COLS];
	struct db_cols	 c;
	MYSQL_STMT	*st;
	int		 i, rc;

	if ((st = db_run(db, id, p)) == NULL)
		return REPO_ERR;
	list_bind(&c, cell, cols, ncols);
	while ((rc = db_fetch_row(st, &c)) == DB_ROW) {
		for (i = 0; i < ncols; i++)
			db_rstr(&c, i, cell[i], LIST_WIDTH);
		fn(arg, cols, ncols);
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}

/* A key's routes joined with ',' as STMT_KEY_LIST's rows give them. */
struct routes {
	char		*s;
	size_t		 len, cap;
};

/* Appends route r to rs (a ',' before all but the first); 0, or -1 out
 * of memory. */
static int
routes_add(struct routes *rs, const char *r)
{
	size_t	 n = strlen(r), need = rs->len + n + 2, cap;
	char	*p;

	if (need > rs->cap) {
		for (cap = rs->cap ? rs->cap : 1024; cap < need; cap *= 2)
			;
		if ((p = realloc(rs->s, cap)) == NULL)
			return -1;
		rs->s = p;
		rs->cap = cap;
	}
	if (rs->len > 0)
		rs->s[rs->len++] = ',';
	memcpy(rs->s + rs->len, r, n + 1);
	rs->len += n;
	return 0;
}

/* Calls fn for key row key (its first four columns) with routes rs, and
 * empties rs. */
static void
routes_emit(char (*key)[LIST_WIDTH], struct routes *rs, repo_row_fn fn,
    void *arg)
{
	const char	*cols[LIST_COLS] = { key[0], key[1], key[2], key[3],
			    rs->len > 0 ? rs->s : "" };

	fn(arg, cols, LIST_COLS);
	rs->len = 0;
}

/*
 * Rows: id, tenant, label, revoked (yes/no), routes ("e/s/o,..."), every
 * route of the key however many (the statement's rows, one per route,
 * joined here). REPO_OK or REPO_ERR (a failed read, out of memory).
 */
enum repo_rc
repo_key_list(struct db *db, int backend, repo_row_fn fn, void *arg)
{
	static char	 cell[LIST_COLS][LIST_WIDTH];
	static char	 key[LIST_COLS][LIST_WIDTH];	/* the current key's */
	const char	*cols[LIST_COLS];
	struct routes	 rs = { NULL, 0, 0 };
	struct db_cols	 c;
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	int		 i, rc = DB_ROW_ERR, have = 0, oom = 0;

	db_bind_str(&p[0], backend ? "backend" : "consumer");
	if ((st = db_run(db, STMT_KEY_LIST, p)) == NULL)
		return REPO_ERR;
	list_bind(&c, cell, cols, LIST_COLS);
	while (!oom && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		for (i = 0; i < LIST_COLS; i++)
			db_rstr(&c, i, cell[i], LIST_WIDTH);
		if (!have || strcmp(cell[0], key[0]) != 0) {	/* next key */
			if (have)
				routes_emit(key, &rs, fn, arg);
			memcpy(key, cell, sizeof(key));
			have = 1;
		}
		if (!c.null[4] && routes_add(&rs, cell[4]) == -1) {
			log_error("key list: out of memory for the routes "
			    "of key %s", key[0]);
			oom = 1;
		}
	}
	mysql_stmt_free_result(st);
	if (!oom && rc == DB_ROW_NONE && have)
		routes_emit(key, &rs, fn, arg);
	free(rs.s);
	return !oom && rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}

/* Rows: route ("env/svc/op"), retention_days, enabled (yes/no). */
enum repo_rc
repo_route_list(struct db *db, repo_row_fn fn, void *arg)
{
	return list(db, STMT_ROUTE_LIST, NULL, 3, fn, arg);
}

/* Rows: route ("env/svc/op"), status, count. */
enum repo_rc
repo_stats(struct db *db, repo_row_fn fn, void *arg)
{
	return list(db, STMT_STATS, NULL, 3, fn, arg);
}

/* Revokes key id of the kind; idempotent. REPO_OK/NOTFOUND/ERR. */
enum repo_rc
repo_key_revoke(struct db *db, int backend, uint64_t id, int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t;

	/* a key in a rotation's grace is revoked now as well */
	db_bind_time(&p[0], &t, now);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &id);
	db_bind_str(&p[3], backend ? "backend" : "consumer");
	if (db_run(db, STMT_KEY_REVOKE, p) == NULL)
		return REPO_ERR;
	return db_affected(db, STMT_KEY_REVOKE) > 0 ? REPO_OK : REPO_NOTFOUND;
}

/*
 * The operator's own statements (route set, grants, execution show,
 * requeue and fail, migrate --status), on a handle of their own
 * (repo_admin_open) so that these ids cannot be run on a service handle.
 */
enum astmt {
	ASTMT_ROUTE_RETENTION,
	ASTMT_ROUTE_ID,
	ASTMT_KEY_GET,
	ASTMT_GRANT,
	ASTMT_REVOKE_ROUTE,
	ASTMT_EXEC_ID,
	ASTMT_EXEC_KEY,
	ASTMT_REQUEUE,
	ASTMT_OPFAIL,
	ASTMT_MIGRATIONS,
	ASTMT_KEY_LOCK,
	ASTMT_KEY_SUCCESSOR,
	ASTMT_KEY_GRACE,
	ASTMT_KEY_END,
	ASTMT__MAX
};

/* what `execution show` reads: no payload, no secret, no token hash */

static const struct db_stmt_def astmts[ASTMT__MAX] = {
	[ASTMT_ROUTE_RETENTION] = {
	    "UPDATE s2r_route SET retention_days = ? WHERE environment = ? "
	    "AND service_key = ? AND operation_key = ?", 1, "admin_route_retention" },
	[ASTMT_ROUTE_ID] = {
	    "SELECT id FROM s2r_route WHERE environment = ? AND "
	    "service_key = ? AND operation_key = ?", 1, "admin_route_id" },
	[ASTMT_KEY_GET] = {
	    "SELECT id, kind = 'backend', revoked_at IS NOT NULL "
	    "FROM s2r_api_key WHERE id = ?", 1, "admin_key_get" },
	[ASTMT_GRANT] = {
	    "INSERT INTO s2r_backend_key_route (key_id, route_id) "
	    "VALUES (?, ?)", 0, "admin_grant" },
	[ASTMT_REVOKE_ROUTE] = {
	    "DELETE FROM s2r_backend_key_route WHERE key_id = ? AND "
	    "route_id = ?", 1, "admin_revoke_route" },
	[ASTMT_EXEC_ID] = {
	    "SELECT " REPO_SHOW_COLS "WHERE id = ?", 1, "admin_exec_id" },
	[ASTMT_EXEC_KEY] = {
	    "SELECT " REPO_SHOW_COLS "WHERE initiator_tenant_id = ? AND "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "correlation_id = ?", 1, "admin_exec_key" },
	/* the claim is dropped: claimable at once, in its place, the old
	 * token loses; never after max_attempts claims (no claim would take
	 * it, and without a lease the expiry's rescue would not either) */
	[ASTMT_REQUEUE] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "callback_token_hash = NULL, lease_expires_at = NULL, "
	    DUE_RESTORED ", updated_at = ? WHERE id = ? AND "
	    "status = 'waiting_callback' AND cancel_requested = 0 AND "
	    "attempts < ?", 0, "admin_requeue" },
	[ASTMT_OPFAIL] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "status = 'failed', error_payload = ?, completed_at = ?, "
	    "updated_at = ?, "
	    SET_NOTIFY("s2r_async_execution") " WHERE id = ? AND "
	    "status = 'waiting_callback'", 0, "admin_opfail" },
	[ASTMT_MIGRATIONS] = {
	    "SELECT version, applied_at FROM s2r_schema_version "
	    "ORDER BY version", 1, "admin_migrations" },
	/* key rotate: a live consumer key, locked until the commit */
	[ASTMT_KEY_LOCK] = {
	    "SELECT id FROM s2r_api_key WHERE id = ? AND kind = 'consumer' "
	    "AND (revoked_at IS NULL OR revoked_at > ?) FOR UPDATE",
	    0, "admin_key_lock" },
	/* the new key: same tenant, label and lineage as key ? */
	[ASTMT_KEY_SUCCESSOR] = {
	    "INSERT INTO s2r_api_key (kind, key_hash, tenant_id, label, "
	    "created_at, lineage_id) SELECT 'consumer', ?, tenant_id, label, "
	    "?, COALESCE(lineage_id, id) FROM s2r_api_key WHERE id = ?",
	    0, "admin_key_successor" },
	/* the old key ends at ? (never later than an earlier end) */
	[ASTMT_KEY_GRACE] = {
	    "UPDATE s2r_api_key SET revoked_at = LEAST(COALESCE(revoked_at, "
	    "?), ?) WHERE id = ?", 0, "admin_key_grace" },
	/* the end the old key got: the grace's, or an earlier one kept */
	[ASTMT_KEY_END] = { "SELECT revoked_at FROM s2r_api_key WHERE id = ?",
	    0, "admin_key_end" },
};

struct adb {
	struct db	*db;
};

/* Opens an operator handle (no connection yet); NULL out of memory. */
struct adb *
repo_admin_open(const struct config *cfg)
{
	struct adb	*a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if ((a->db = db_new(cfg, astmts, ASTMT__MAX, 0, 0)) == NULL) {
		free(a);
		return NULL;
	}
	return a;
}

void
repo_admin_close(struct adb *a)
{
	if (a == NULL)
		return;
	db_free(a->db);
	free(a);
}

/* Runs a compare-and-set or write; REPO_OK (matched), NOTFOUND, DUP, ERR. */
static enum repo_rc
awrite(struct adb *a, enum astmt id, MYSQL_BIND *p)
{
	if (db_run(a->db, id, p) == NULL)
		return db_errno(a->db) == ER_DUP_ENTRY ? REPO_DUP : REPO_ERR;
	return db_affected(a->db, id) > 0 ? REPO_OK : REPO_NOTFOUND;
}

/* Fetches the one row of an executed query; frees the result. */
static enum repo_rc
fetch_one(MYSQL_STMT *st, struct db_cols *c)
{
	int	 rc = db_fetch_row(st, c);

	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK :
	    rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
}

/* Binds the route triple into p[0..3). */
static void
bind_route(MYSQL_BIND *p, const char *env, const char *svc, const char *op)
{
	db_bind_str(&p[0], env);
	db_bind_str(&p[1], svc);
	db_bind_str(&p[2], op);
}

/* Sets a route's retention (new executions only). OK/NOTFOUND/ERR. */
enum repo_rc
repo_route_set_retention(struct adb *a, const char *env, const char *svc,
    const char *op, unsigned days)
{
	MYSQL_BIND	 p[4];

	db_bind_u32(&p[0], &days);
	bind_route(&p[1], env, svc, op);
	return awrite(a, ASTMT_ROUTE_RETENTION, p);
}

/* A route's id into *id. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_route_id(struct adb *a, const char *env, const char *svc,
    const char *op, uint64_t *id)
{
	MYSQL_BIND	 p[3];
	MYSQL_STMT	*st;
	struct db_cols	 c;

	bind_route(p, env, svc, op);
	if ((st = db_run(a->db, ASTMT_ROUTE_ID, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, id, 0);
	return fetch_one(st, &c);
}

/* Key id's kind and revocation. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_key_get(struct adb *a, uint64_t id, struct key_row *k)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 backend = 0, revoked = 0, rc;

	memset(k, 0, sizeof(*k));
	db_bind_u64(&p[0], &id);
	if ((st = db_run(a->db, ASTMT_KEY_GET, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &k->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONG, &backend, 0);
	db_rcol(&c, 2, MYSQL_TYPE_LONG, &revoked, 0);
	rc = fetch_one(st, &c);
	k->backend = backend;
	k->revoked = revoked;
	return rc;
}

/*
 * Lets backend key key_id serve route_id (grant) or stops it (revoke).
 * REPO_OK, REPO_DUP (grant: already), REPO_NOTFOUND (revoke: was not
 * granted) or REPO_ERR.
 */
enum repo_rc
repo_backend_grant(struct adb *a, uint64_t key_id, uint64_t route_id,
    int grant)
{
	MYSQL_BIND	 p[2];

	db_bind_u64(&p[0], &key_id);
	db_bind_u64(&p[1], &route_id);
	return awrite(a, grant ? ASTMT_GRANT : ASTMT_REVOKE_ROUTE, p);
}

/* Fills e from a fetched REPO_SHOW_COLS row's binds. */
static void
show_finish(struct db_cols *c, struct exec_admin *e, MYSQL_TIME *t,
    long long *len, int *ints)
{
	db_rstr(c, 1, e->cid, sizeof(e->cid));
	db_rstr(c, 2, e->env, sizeof(e->env));
	db_rstr(c, 3, e->svc, sizeof(e->svc));
	db_rstr(c, 4, e->op, sizeof(e->op));
	db_rstr(c, 5, e->status, sizeof(e->status));
	db_rstr(c, 6, e->tenant, sizeof(e->tenant));
	e->tenant_null = c->null[6];
	e->attempts = (unsigned)ints[0];
	e->cancel_requested = ints[1];
	e->has_claim_token = ints[2];
	e->created_at = db_time_ms(&t[0]);
	e->updated_at = db_time_ms(&t[1]);
	e->completed_at = c->null[12] ? 0 : db_time_ms(&t[2]);
	e->expires_at = db_time_ms(&t[3]);
	e->lease_expires_at = c->null[14] ? 0 : db_time_ms(&t[4]);
	e->request_bytes = c->null[15] ? -1 : len[0];
	e->result_bytes = c->null[16] ? -1 : len[1];
	e->error_bytes = c->null[17] ? -1 : len[2];
	db_rstr(c, 18, e->error_code, sizeof(e->error_code));
}

/*
 * Reads the one REPO_SHOW_COLS row of an executed statement st into e:
 * REPO_OK, REPO_NOTFOUND or REPO_ERR. Also the dashboard's (repo_dash.c).
 */
enum repo_rc
repo_show_fetch(MYSQL_STMT *st, struct exec_admin *e)
{
	struct db_cols	 c;
	MYSQL_TIME	 t[5];
	long long	 len[3] = { 0, 0, 0 };
	int		 ints[3] = { 0, 0, 0 }, i, rc;

	memset(e, 0, sizeof(*e));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &e->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_STRING, e->cid, sizeof(e->cid));
	db_rcol(&c, 2, MYSQL_TYPE_STRING, e->env, sizeof(e->env));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, e->svc, sizeof(e->svc));
	db_rcol(&c, 4, MYSQL_TYPE_STRING, e->op, sizeof(e->op));
	db_rcol(&c, 5, MYSQL_TYPE_STRING, e->status, sizeof(e->status));
	db_rcol(&c, 6, MYSQL_TYPE_STRING, e->tenant, sizeof(e->tenant));
	for (i = 0; i < 3; i++)
		db_rcol(&c, 7 + i, MYSQL_TYPE_LONG, &ints[i], 0);
	for (i = 0; i < 5; i++)
		db_rcol(&c, 10 + i, MYSQL_TYPE_DATETIME, &t[i], sizeof(t[i]));
	for (i = 0; i < 3; i++)
		db_rcol(&c, 15 + i, MYSQL_TYPE_LONGLONG, &len[i], 0);
	db_rcol(&c, 18, MYSQL_TYPE_STRING, e->error_code,
	    sizeof(e->error_code));
	if ((rc = fetch_one(st, &c)) == REPO_OK)
		show_finish(&c, e, t, len, ints);
	return rc;
}

/* The operator's view of execution id. REPO_OK, NOTFOUND or ERR. */
enum repo_rc
repo_exec_show(struct adb *a, uint64_t id, struct exec_admin *e)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(a->db, ASTMT_EXEC_ID, p)) == NULL)
		return REPO_ERR;
	return repo_show_fetch(st, e);
}

/* As repo_exec_show, by tenant, route and correlation id. */
enum repo_rc
repo_exec_show_key(struct adb *a, const char *tenant, const char *env,
    const char *svc, const char *op, const char *cid, struct exec_admin *e)
{
	MYSQL_BIND	 p[5];
	MYSQL_STMT	*st;

	db_bind_str(&p[0], tenant);
	bind_route(&p[1], env, svc, op);
	db_bind_str(&p[4], cid);
	if ((st = db_run(a->db, ASTMT_EXEC_KEY, p)) == NULL)
		return REPO_ERR;
	return repo_show_fetch(st, e);
}

/*
 * Requeues waiting execution id: drops its claim (callback token and
 * lease), so it is claimable at once and the holder's token loses.
 * REPO_OK, REPO_NOTFOUND (not waiting, cancel requested, or max_attempts
 * claims used) or REPO_ERR.
 */
enum repo_rc
repo_exec_requeue(struct adb *a, uint64_t id, int64_t now,
    unsigned max_attempts)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	db_bind_u64(&p[1], &id);
	db_bind_u32(&p[2], &max_attempts);
	return awrite(a, ASTMT_REQUEUE, p);
}

/*
 * Operator finalization: waiting execution id becomes failed with error
 * (a JSON object). REPO_OK, REPO_NOTFOUND (already terminal) or ERR.
 */
enum repo_rc
repo_exec_opfail(struct adb *a, uint64_t id, const char *error, size_t len,
    int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t[2];

	db_bind_blob(&p[0], error, len);
	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u64(&p[3], &id);
	return awrite(a, ASTMT_OPFAIL, p);
}

/*
 * Calls fn(arg, version, applied_at ms) for each recorded migration, in
 * order. REPO_OK, REPO_NOTFOUND (no version table: never migrated) or
 * REPO_ERR.
 */
enum repo_rc
repo_migrations_applied(struct adb *a, repo_applied_fn fn, void *arg)
{
	MYSQL_STMT	*st;
	MYSQL_TIME	 t;
	struct db_cols	 c;
	unsigned	 v = 0;
	int		 rc;

	if ((st = db_run(a->db, ASTMT_MIGRATIONS, NULL)) == NULL)
		return db_errno(a->db) == ER_NO_SUCH_TABLE ? REPO_NOTFOUND :
		    REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &v, 0);
	db_rcol(&c, 1, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	if (mysql_stmt_bind_result(st, c.b) != 0) {
		mysql_stmt_free_result(st);
		return REPO_ERR;
	}
	while ((rc = mysql_stmt_fetch(st)) == 0)
		fn(arg, (int)v, db_time_ms(&t));
	mysql_stmt_free_result(st);
	return rc == MYSQL_NO_DATA ? REPO_OK : REPO_ERR;
}

/* Reads key id's revoked_at (in the open transaction) into *end. */
static enum repo_rc
key_end(struct adb *a, uint64_t id, int64_t *end)
{
	MYSQL_BIND	 p[1];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;
	struct db_cols	 c;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(a->db, ASTMT_KEY_END, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	if (fetch_one(st, &c) != REPO_OK)
		return REPO_ERR;
	*end = db_time_ms(&t);
	return REPO_OK;
}

/* Runs rotate's statements inside the open transaction: lock, new key,
 * the old key's end, and that end read back into r->revoked_at. */
static enum repo_rc
rotate_tx(struct adb *a, uint64_t id, const unsigned char *hash,
    int64_t now, struct key_rotation *r)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 tn, tu;
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 got = 0;
	int		 rc;

	db_bind_u64(&p[0], &id);
	db_bind_time(&p[1], &tn, now);
	if ((st = db_run(a->db, ASTMT_KEY_LOCK, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &got, 0);
	if ((rc = fetch_one(st, &c)) != REPO_OK)
		return rc;
	db_bind_blob(&p[0], hash, SHA256_LEN);
	db_bind_time(&p[1], &tn, now);
	db_bind_u64(&p[2], &id);
	if ((st = db_run(a->db, ASTMT_KEY_SUCCESSOR, p)) == NULL)
		return db_errno(a->db) == ER_DUP_ENTRY ? REPO_DUP : REPO_ERR;
	r->new_id = mysql_stmt_insert_id(st);
	db_bind_time(&p[0], &tu, r->asked);
	db_bind_time(&p[1], &tu, r->asked);
	db_bind_u64(&p[2], &id);
	if (awrite(a, ASTMT_KEY_GRACE, p) != REPO_OK)
		return REPO_ERR;
	return key_end(a, id, &r->revoked_at);
}

/*
 * Rotates consumer key id (asyncexec-admin key rotate): in one
 * transaction, a new key of hash (same tenant, label and lineage) is
 * added and the old key is revoked at now + grace_seconds (0: now; an
 * earlier revocation time stays). r gets the new key's id, the end
 * asked and the end stored. Before the commit publish(arg, r) runs
 * (the key is printed there): unless it returns 0 nothing is kept.
 * REPO_OK, REPO_NOTFOUND (no live consumer key id), REPO_DUP or
 * REPO_ERR (also when publish failed, or the commit).
 */
enum repo_rc
repo_key_rotate(struct adb *a, uint64_t id, const unsigned char *hash,
    unsigned grace_seconds, int64_t now, repo_publish_fn publish,
    void *arg, struct key_rotation *r)
{
	int	 rc;

	memset(r, 0, sizeof(*r));
	r->asked = now + (int64_t)grace_seconds * 1000;
	if (db_begin(a->db) == -1)
		return REPO_ERR;
	rc = rotate_tx(a, id, hash, now, r);
	if (rc == REPO_OK && publish(arg, r) == 0 && db_commit(a->db) == 0)
		return REPO_OK;
	db_rollback(a->db);
	return rc == REPO_OK ? REPO_ERR : rc;
}
