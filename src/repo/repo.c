/*
 * repo.c - the execution repository: every SQL statement, prepared.
 *
 * One table (repo_stmts.c, enum-indexed) holds the SQL text; db.c
 * prepares it after fork. Values go only through binds. Every result bind has is_null and
 * length. Compare-and-set updates are decided on the rows they matched
 * (the connection uses CLIENT_FOUND_ROWS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysqld_error.h>

#include "config.h"
#include "db.h"
#include "log.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_sql.h"

static const char *const status_names[ST__MAX] = {
	[ST_WAITING] = "waiting_callback",
	[ST_COMPLETED] = "completed",
	[ST_FAILED] = "failed",
	[ST_EXPIRED] = "expired",
	[ST_CANCELLED] = "cancelled",
};

const char *
exec_status_name(enum exec_status s)
{
	return s < ST__MAX ? status_names[s] : "unknown";
}

/* The status named s; ST__MAX for none. */
enum exec_status
exec_status_parse(const char *s)
{
	int	 i;

	for (i = 0; i < ST__MAX; i++)
		if (strcmp(s, status_names[i]) == 0)
			return (enum exec_status)i;
	return ST__MAX;
}

/*
 * Marks this process as a one-shot program (asyncexec-admin,
 * asyncexec-expire, a --check-config): a failed connect of any of its
 * handles is reported with the settings to check, not as the workers'
 * retry behind a 503.
 */
void
repo_oneshot(void)
{
	db_oneshot();
}

/*
 * Opens a repository handle (no connection yet); its connection runs
 * one statement per query. NULL when out of memory.
 */
struct db *
repo_open(const struct config *cfg, int eager)
{
	return db_new(cfg, repo_stmts, STMT__MAX, eager, 0);
}

/*
 * Opens the handle of `migrate`: its connection alone accepts
 * multi-statement scripts (CLIENT_MULTI_STATEMENTS), for the migrations'
 * SQL files. NULL when out of memory.
 */
struct db *
repo_open_migrate(const struct config *cfg)
{
	return db_new(cfg, repo_stmts, STMT__MAX, 0, 1);
}

void
repo_close(struct db *db)
{
	db_free(db);
}

/*
 * What the error of a failed statement or COMMIT answers (db_failure):
 * REPO_RETRY when a deadlock (1213, also a Galera certification failure)
 * or a lock wait timeout undid the transaction, so that running it again
 * whole may succeed; else REPO_ERR (a writeset over wsrep_max_ws_size
 * or wsrep_max_ws_rows too: only asyncexec-expire's batches can be
 * split, repo_expire.c).
 */
enum repo_rc
repo_failed(struct db *db)
{
	return db_failure(db) == DB_FAIL_RETRY ? REPO_RETRY : REPO_ERR;
}

/* Maps a failed write to REPO_DUP or REPO_ERR. */
static enum repo_rc
write_failed(struct db *db)
{
	return db_errno(db) == ER_DUP_ENTRY ? REPO_DUP : REPO_ERR;
}

/*
 * Runs a statement without results (a compare-and-set); REPO_OK when it
 * matched a row, REPO_NOTFOUND, REPO_DUP or REPO_ERR.
 */
enum repo_rc
repo_cas(struct db *db, enum stmt id, MYSQL_BIND *p)
{
	if (db_run(db, id, p) == NULL)
		return write_failed(db);
	return db_affected(db, id) > 0 ? REPO_OK : REPO_NOTFOUND;
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

/* Looks up an API key by its hash. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_key_by_hash(struct db *db, const unsigned char *hash, struct key_row *k)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	MYSQL_TIME	 t;
	int		 backend = 0, revoked = 0, succeeded = 0, rc;

	db_bind_blob(&p[0], hash, SHA256_LEN);
	if ((st = db_run(db, STMT_KEY_BY_HASH, p)) == NULL)
		return REPO_ERR;
	memset(k, 0, sizeof(*k));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &k->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONG, &backend, 0);
	db_rcol(&c, 2, MYSQL_TYPE_STRING, k->tenant, sizeof(k->tenant));
	db_rcol(&c, 3, MYSQL_TYPE_LONG, &revoked, 0);
	db_rcol(&c, 4, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	db_rcol(&c, 5, MYSQL_TYPE_LONGLONG, &k->lineage, 0);
	db_rcol(&c, 6, MYSQL_TYPE_LONG, &succeeded, 0);
	rc = fetch_one(st, &c);
	if (rc == REPO_OK) {	/* no row: c's lengths were never set */
		db_rstr(&c, 2, k->tenant, sizeof(k->tenant));
		k->revoke_at = revoked && !c.null[4] ? db_time_ms(&t) : 0;
	}
	k->backend = backend;
	k->revoked = revoked;
	k->succeeded = succeeded;
	return rc;
}

/* Whether backend key key_id serves the route: REPO_OK or REPO_NOTFOUND. */
enum repo_rc
repo_backend_serves(struct db *db, uint64_t key_id, const char *env,
    const char *svc, const char *op)
{
	MYSQL_BIND	 p[4];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 one;

	db_bind_u64(&p[0], &key_id);
	db_bind_str(&p[1], env);
	db_bind_str(&p[2], svc);
	db_bind_str(&p[3], op);
	if ((st = db_run(db, STMT_BACKEND_SERVES, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &one, 0);
	return fetch_one(st, &c);
}

/*
 * Reads the secret called name (s2r_secret) into out (outsz bytes at
 * most); *len gets its length. REPO_OK, REPO_NOTFOUND (also when it is
 * NULL) or REPO_ERR (also when it is longer than outsz: logged).
 */
enum repo_rc
repo_secret_get(struct db *db, const char *name, unsigned char *out,
    size_t outsz, size_t *len)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	db_bind_str(&p[0], name);
	if ((st = db_run(db, STMT_SECRET_GET, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_BLOB, out, outsz);
	if ((rc = fetch_one(st, &c)) != REPO_OK)
		return rc;
	if (c.null[0] || c.len[0] > outsz)
		return REPO_NOTFOUND;
	*len = c.len[0];
	return REPO_OK;
}

/* Looks up a route. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
enum repo_rc
repo_route_get(struct db *db, const char *env, const char *svc,
    const char *op, struct route_row *r)
{
	MYSQL_BIND	 p[3];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 enabled = 0, rc;

	db_bind_str(&p[0], env);
	db_bind_str(&p[1], svc);
	db_bind_str(&p[2], op);
	if ((st = db_run(db, STMT_ROUTE_GET, p)) == NULL)
		return REPO_ERR;
	memset(r, 0, sizeof(*r));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &r->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONG, &r->retention_days, 0);
	db_rcol(&c, 2, MYSQL_TYPE_LONG, &enabled, 0);
	rc = fetch_one(st, &c);
	r->enabled = enabled;
	return rc;
}

/*
 * Inserts a new execution; *id gets its primary key. REPO_OK, REPO_DUP
 * (correlation id taken) or REPO_ERR.
 */
enum repo_rc
repo_exec_insert(struct db *db, const struct exec_new *n, uint64_t *id)
{
	MYSQL_BIND	 p[18];
	MYSQL_TIME	 t[5];
	MYSQL_STMT	*st;

	db_bind_str(&p[0], n->cid);
	db_bind_str(&p[1], n->env);
	db_bind_str(&p[2], n->svc);
	db_bind_str(&p[3], n->op);
	db_bind_blob(&p[4], n->request, n->request_len);
	db_bind_blob(&p[5], n->request_sha, SHA256_LEN);
	db_bind_str(&p[6], n->tenant);
	db_bind_blob(&p[7], n->key_hash, SHA256_LEN);
	db_bind_blob(&p[8], n->poll_hash, SHA256_LEN);
	db_bind_time(&p[9], &t[0], n->now);
	db_bind_time(&p[10], &t[1], n->now);
	db_bind_time(&p[11], &t[2], n->expires_at);
	db_bind_blob(&p[12], n->lineage, SHA256_LEN);
	db_bind_u32(&p[13], &n->priority);
	if (n->not_before != 0)
		db_bind_time(&p[14], &t[3], n->not_before);
	else
		db_bind_str(&p[14], NULL);
	db_bind_time(&p[15], &t[4], n->not_before != 0 ? n->not_before :
	    n->now);
	if (n->sched_given)
		db_bind_blob(&p[16], n->sched_hash, SHA256_LEN);
	else
		db_bind_str(&p[16], NULL);
	if (n->lineage_id != 0)
		db_bind_u64(&p[17], &n->lineage_id);
	else
		db_bind_str(&p[17], NULL);
	if ((st = db_run(db, STMT_EXEC_INSERT, p)) == NULL)
		return write_failed(db);
	*id = mysql_stmt_insert_id(st);
	return REPO_OK;
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

/* Binds the EXEC_COLS result columns into r and the scratch slots. */
static void
exec_cols(struct db_cols *c, struct exec_row *r, char *status, size_t ssz,
    MYSQL_TIME *t, int *flags)
{
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &r->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, r->cid, sizeof(r->cid));
	db_rcol(c, 2, MYSQL_TYPE_STRING, r->env, sizeof(r->env));
	db_rcol(c, 3, MYSQL_TYPE_STRING, r->svc, sizeof(r->svc));
	db_rcol(c, 4, MYSQL_TYPE_STRING, r->op, sizeof(r->op));
	db_rcol(c, 5, MYSQL_TYPE_STRING, status, ssz);
	db_rcol(c, 6, MYSQL_TYPE_STRING, r->tenant, sizeof(r->tenant));
	db_rcol(c, 7, MYSQL_TYPE_BLOB, r->key_hash, SHA256_LEN);
	db_rcol(c, 8, MYSQL_TYPE_BLOB, r->poll_hash, SHA256_LEN);
	db_rcol(c, 9, MYSQL_TYPE_BLOB, r->request_sha, SHA256_LEN);
	db_rcol(c, 10, MYSQL_TYPE_LONG, &r->attempts, 0);
	db_rcol(c, 11, MYSQL_TYPE_LONG, &flags[0], 0);
	db_rcol(c, 12, MYSQL_TYPE_LONG, &flags[1], 0);
	db_rcol(c, 13, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(c, 14, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(c, 15, MYSQL_TYPE_DATETIME, &t[2], sizeof(t[2]));
	db_rcol(c, 16, MYSQL_TYPE_DATETIME, &t[3], sizeof(t[3]));
	db_rcol(c, 17, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(c, 18, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(c, 19, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(c, 20, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(c, 21, MYSQL_TYPE_LONG, &r->priority, 0);
	db_rcol(c, 22, MYSQL_TYPE_DATETIME, &t[4], sizeof(t[4]));
	db_rcol(c, 23, MYSQL_TYPE_BLOB, r->sched_hash, SHA256_LEN);
}

/* Fetches the migration-8 payloads: progress, and last_error while waiting. */
static int
exec_finish_v2(MYSQL_STMT *st, struct db_cols *c, struct exec_row *r)
{
	r->has_progress = !c->null[19];
	r->has_last_error = !c->null[20] && r->status == ST_WAITING;
	if (r->has_progress && db_fetch_blob(st, &c->b[19], 19, c->len[19],
	    &r->progress, &r->progress_len) == -1)
		return -1;
	if (r->has_last_error && db_fetch_blob(st, &c->b[20], 20, c->len[20],
	    &r->last_error, &r->last_error_len) == -1)
		return -1;
	return 0;
}

/* Copies the scratch slots into r and fetches the payload columns. */
static int
exec_finish(MYSQL_STMT *st, struct db_cols *c, struct exec_row *r,
    char *status, size_t ssz, MYSQL_TIME *t, int *flags)
{
	db_rstr(c, 1, r->cid, sizeof(r->cid));
	db_rstr(c, 2, r->env, sizeof(r->env));
	db_rstr(c, 3, r->svc, sizeof(r->svc));
	db_rstr(c, 4, r->op, sizeof(r->op));
	db_rstr(c, 5, status, ssz);
	db_rstr(c, 6, r->tenant, sizeof(r->tenant));
	r->status = exec_status_parse(status);
	r->tenant_null = c->null[6];
	r->key_hash_null = c->null[7] || c->len[7] != SHA256_LEN;
	r->poll_hash_null = c->null[8] || c->len[8] != SHA256_LEN;
	r->cancel_requested = flags[0];
	r->claimed = !c->null[12] && flags[1];
	r->created_at = db_time_ms(&t[0]);
	r->updated_at = db_time_ms(&t[1]);
	r->completed_at = c->null[15] ? 0 : db_time_ms(&t[2]);
	r->expires_at = db_time_ms(&t[3]);
	r->not_before = c->null[22] ? 0 : db_time_ms(&t[4]);
	r->sched_null = c->null[23] || c->len[23] != SHA256_LEN;
	if (!c->null[17] && db_fetch_blob(st, &c->b[17], 17, c->len[17],
	    &r->result, &r->result_len) == -1)
		return -1;
	if (!c->null[18] && db_fetch_blob(st, &c->b[18], 18, c->len[18],
	    &r->error, &r->error_len) == -1)
		return -1;
	if (exec_finish_v2(st, c, r) == -1)
		return -1;
	return r->status == ST__MAX ? -1 : 0;
}

/* Fetches one execution row from an executed EXEC_COLS query. */
static enum repo_rc
exec_fetch(struct db *db, MYSQL_STMT *st, struct exec_row *r)
{
	struct db_cols	 c;
	MYSQL_TIME	 t[5];
	char		 status[24];
	int		 flags[2] = { 0, 0 }, rc;

	(void)db;
	memset(r, 0, sizeof(*r));
	exec_cols(&c, r, status, sizeof(status), t, flags);
	rc = db_fetch_row(st, &c);
	if (rc == DB_ROW && exec_finish(st, &c, r, status, sizeof(status), t,
	    flags) == -1) {
		exec_row_free(r);
		rc = DB_ROW_ERR;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK :
	    rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
}

/*
 * Reads the execution of (tenant, route, correlation id). now decides
 * whether a lease is still live. REPO_OK (r filled; free it with
 * exec_row_free), REPO_NOTFOUND or REPO_ERR.
 */
enum repo_rc
repo_exec_by_key(struct db *db, const char *tenant, const char *env,
    const char *svc, const char *op, const char *cid, int64_t now,
    struct exec_row *r)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;

	db_bind_time(&p[0], &t, now);
	db_bind_str(&p[1], tenant);
	db_bind_str(&p[2], env);
	db_bind_str(&p[3], svc);
	db_bind_str(&p[4], op);
	db_bind_str(&p[5], cid);
	if ((st = db_run(db, STMT_EXEC_BY_KEY, p)) == NULL)
		return REPO_ERR;
	return exec_fetch(db, st, r);
}

/*
 * Reads the result, error and progress payloads of execution r->id
 * into r (after repo_exec_poll matched), and last_error when r->status
 * is waiting. REPO_OK (free r with exec_row_free), REPO_NOTFOUND
 * (purged meanwhile) or REPO_ERR.
 */
enum repo_rc
repo_exec_payload(struct db *db, struct exec_row *r)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	db_bind_u64(&p[0], &r->id);
	if ((st = db_run(db, STMT_EXEC_PAYLOAD, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(&c, 1, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(&c, 2, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(&c, 3, MYSQL_TYPE_BLOB, NULL, 0);
	rc = db_fetch_row(st, &c);
	if (rc == DB_ROW && !c.null[0] && db_fetch_blob(st, &c.b[0], 0, c.len[0],
	    &r->result, &r->result_len) == -1)
		rc = DB_ROW_ERR;
	if (rc == DB_ROW && !c.null[1] && db_fetch_blob(st, &c.b[1], 1, c.len[1],
	    &r->error, &r->error_len) == -1)
		rc = DB_ROW_ERR;
	if (rc == DB_ROW && (r->has_progress = !c.null[2]) && db_fetch_blob(st,
	    &c.b[2], 2, c.len[2], &r->progress, &r->progress_len) == -1)
		rc = DB_ROW_ERR;
	if (rc == DB_ROW && (r->has_last_error = !c.null[3] &&
	    r->status == ST_WAITING) && db_fetch_blob(st, &c.b[3], 3,
	    c.len[3], &r->last_error, &r->last_error_len) == -1)
		rc = DB_ROW_ERR;
	mysql_stmt_free_result(st);
	if (rc == DB_ROW_ERR)
		exec_row_free(r);
	return rc == DB_ROW ? REPO_OK :
	    rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
}

/* As repo_exec_by_key, by primary key. */
enum repo_rc
repo_exec_by_id(struct db *db, uint64_t id, int64_t now, struct exec_row *r)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;

	db_bind_time(&p[0], &t, now);
	db_bind_u64(&p[1], &id);
	if ((st = db_run(db, STMT_EXEC_BY_ID, p)) == NULL)
		return REPO_ERR;
	return exec_fetch(db, st, r);
}

/* Replaces the poll token hash (resubmit). REPO_OK or REPO_ERR. */
enum repo_rc
repo_exec_rotate_poll(struct db *db, uint64_t id, const unsigned char *hash)
{
	MYSQL_BIND	 p[2];
	int		 rc;

	db_bind_blob(&p[0], hash, SHA256_LEN);
	db_bind_u64(&p[1], &id);
	rc = repo_cas(db, STMT_EXEC_ROTATE_POLL, p);
	return rc == REPO_NOTFOUND ? REPO_ERR : rc;
}

/*
 * Cancels a waiting execution that no live lease holds, the outbox mark
 * set as mark says. REPO_OK when it became cancelled, REPO_NOTFOUND when
 * it is claimed or terminal, REPO_ERR.
 */
enum repo_rc
repo_exec_cancel(struct db *db, uint64_t id, enum repo_mark mark,
    int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t[3];

	db_bind_time(&p[0], &t[0], now);
	db_bind_time(&p[1], &t[1], now);
	db_bind_u64(&p[2], &id);
	db_bind_time(&p[3], &t[2], now);
	return repo_cas(db, mark == MARK_NONE ? STMT_EXEC_CANCEL_NONE :
	    STMT_EXEC_CANCEL, p);
}

/*
 * Whether any webhook endpoint is enabled: *any 1 or 0. REPO_OK or
 * REPO_ERR.
 */
enum repo_rc
repo_hooks_any(struct db *db, int *any)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	enum repo_rc	 rc;
	int		 one;

	if ((st = db_run(db, STMT_HOOKS_ANY, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &one, 0);
	if ((rc = fetch_one(st, &c)) == REPO_ERR)
		return REPO_ERR;
	*any = rc == REPO_OK;
	return REPO_OK;
}

/* Sets cancel_requested on a waiting execution. REPO_NOTFOUND: terminal. */
enum repo_rc
repo_exec_request_cancel(struct db *db, uint64_t id, int64_t now)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	db_bind_u64(&p[1], &id);
	return repo_cas(db, STMT_EXEC_REQUEST_CANCEL, p);
}

/* Extends the lease of the current claim. REPO_NOTFOUND: stale or final. */
enum repo_rc
repo_heartbeat(struct db *db, uint64_t id, const unsigned char *tokhash,
    int64_t lease_until)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, lease_until);
	db_bind_u64(&p[1], &id);
	db_bind_blob(&p[2], tokhash, SHA256_LEN);
	return repo_cas(db, STMT_HEARTBEAT, p);
}

/* The applied schema version (0 when none); REPO_OK or REPO_ERR. */
enum repo_rc
repo_schema_version(struct db *db, int *version)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;

	*version = 0;
	if ((st = db_run(db, STMT_SCHEMA_VERSION, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, version, 0);
	return fetch_one(st, &c) == REPO_OK ? REPO_OK : REPO_ERR;
}

enum repo_rc
repo_tx_begin(struct db *db)
{
	return db_begin(db) == 0 ? REPO_OK : REPO_ERR;
}

enum repo_rc
repo_tx_commit(struct db *db)
{
	return db_commit(db) == 0 ? REPO_OK : REPO_ERR;
}

void
repo_tx_rollback(struct db *db)
{
	db_rollback(db);
}

/* REPO_OK when the database answers, else REPO_ERR. */
enum repo_rc
repo_ping(struct db *db)
{
	int	 v;

	return repo_schema_version(db, &v);
}
