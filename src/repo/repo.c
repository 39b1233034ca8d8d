/*
 * repo.c - the execution repository: every SQL statement, prepared.
 *
 * One table (enum-indexed) holds the SQL text; db.c prepares it after
 * fork. Values go only through binds. Every result bind has is_null and
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
#include "repo_sql.h"

#define EXEC_COLS \
	"id, correlation_id, environment, service_key, operation_key, " \
	"status, initiator_tenant_id, initiator_key_hash, poll_token_hash, " \
	"request_sha256, attempts, cancel_requested, " \
	"(callback_token_hash IS NOT NULL AND lease_expires_at > ?), " \
	"created_at, updated_at, completed_at, expires_at, result_payload, " \
	"error_payload, progress_payload, last_error"
#define EXEC_NCOLS	21
/* what poll and cancel read first: no payloads (see repo_exec_poll) */
#define POLL_COLS \
	"id, status, initiator_key_hash, poll_token_hash, cancel_requested, " \
	"created_at, updated_at, completed_at, expires_at, initiator_lineage, " \
	"attempts, progress_payload IS NOT NULL, " \
	"(status = 'waiting_callback' AND last_error IS NOT NULL)"

static const struct db_stmt_def stmts[STMT__MAX] = {
	[STMT_KEY_BY_HASH] = {
	    "SELECT id, kind = 'backend', tenant_id, revoked_at IS NOT NULL, "
	    "revoked_at, COALESCE(lineage_id, id) "
	    "FROM s2r_api_key WHERE key_hash = ?", 1, "key_by_hash" },
	[STMT_BACKEND_SERVES] = {
	    "SELECT 1 FROM s2r_backend_key_route kr JOIN s2r_route r "
	    "ON r.id = kr.route_id WHERE kr.key_id = ? AND r.environment = ? "
	    "AND r.service_key = ? AND r.operation_key = ?",
	    1, "backend_serves" },
	[STMT_ROUTE_GET] = {
	    "SELECT id, retention_days, enabled FROM s2r_route "
	    "WHERE environment = ? AND service_key = ? AND operation_key = ?",
	    1, "route_get" },
	[STMT_EXEC_INSERT] = {
	    "INSERT INTO s2r_async_execution (correlation_id, environment, "
	    "service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, initiator_key_hash, "
	    "poll_token_hash, created_at, updated_at, expires_at, "
	    "initiator_lineage) VALUES "
	    "(?, ?, ?, ?, 'waiting_callback', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	    1, "exec_insert" },
	[STMT_EXEC_BY_KEY] = {
	    "SELECT " EXEC_COLS " FROM s2r_async_execution "
	    "WHERE initiator_tenant_id = ? AND environment = ? AND "
	    "service_key = ? AND operation_key = ? AND correlation_id = ?",
	    1, "exec_by_key" },
	[STMT_EXEC_BY_ID] = {
	    "SELECT " EXEC_COLS " FROM s2r_async_execution WHERE id = ?",
	    1, "exec_by_id" },
	[STMT_EXEC_ROTATE_POLL] = {
	    "UPDATE s2r_async_execution SET poll_token_hash = ? WHERE id = ?",
	    1, "exec_rotate_poll" },
	[STMT_EXEC_CANCEL] = {
	    "UPDATE s2r_async_execution SET status = 'cancelled', "
	    "completed_at = ?, updated_at = ? WHERE id = ? AND "
	    "status = 'waiting_callback' AND (callback_token_hash IS NULL OR "
	    "lease_expires_at IS NULL OR lease_expires_at <= ?)",
	    0, "exec_cancel" },
	[STMT_EXEC_REQUEST_CANCEL] = {
	    "UPDATE s2r_async_execution SET updated_at = CASE WHEN "
	    "cancel_requested = 0 THEN ? ELSE updated_at END, "
	    "cancel_requested = 1 WHERE id = ? AND status = 'waiting_callback'",
	    0, "exec_request_cancel" },
	[STMT_CLAIM_SELECT] = {
	    "SELECT id, correlation_id, initiator_tenant_id, request_payload, "
	    "attempts, created_at FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_claim) "
	    "WHERE environment = ? AND service_key = ? AND operation_key = ? "
	    "AND status = 'waiting_callback' AND cancel_requested = 0 AND "
	    "(lease_expires_at IS NULL OR lease_expires_at <= ?) "
	    "AND expires_at > ? AND (not_before IS NULL OR not_before <= ?) "
	    "AND attempts < ? "
	    "ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED", 0, "claim_select" },
	[STMT_CLAIM_UPDATE] = {
	    "UPDATE s2r_async_execution SET callback_token_hash = ?, "
	    "lease_expires_at = ?, attempts = attempts + 1 WHERE id = ?",
	    0, "claim_update" },
	[STMT_HEARTBEAT] = {
	    "UPDATE s2r_async_execution SET lease_expires_at = ? WHERE id = ? "
	    "AND status = 'waiting_callback' AND callback_token_hash = ?",
	    0, "heartbeat" },
	[STMT_SCHEMA_VERSION] = {
	    "SELECT COALESCE(MAX(version), 0) FROM s2r_schema_version",
	    1, "schema_version" },
	[STMT_MIGRATION_APPLIED] = {
	    "SELECT COUNT(*) FROM s2r_schema_version WHERE version = ?",
	    1, "migration_applied" },
	[STMT_ROUTE_ADD] = {
	    "INSERT INTO s2r_route (environment, service_key, operation_key, "
	    "retention_days, enabled, created_at) VALUES (?, ?, ?, ?, 1, ?)",
	    0, "route_add" },
	[STMT_KEY_ADD] = {
	    "INSERT INTO s2r_api_key (kind, key_hash, tenant_id, label, "
	    "created_at) VALUES (?, ?, ?, ?, ?)", 0, "key_add" },
	[STMT_BACKEND_ROUTE_ADD] = {
	    "INSERT INTO s2r_backend_key_route (key_id, route_id) "
	    "VALUES (?, ?)", 0, "backend_route_add" },
	[STMT_MIGRATION_RECORD] = {
	    "INSERT INTO s2r_schema_version (version, applied_at) "
	    "VALUES (?, ?)", 0, "migration_record" },
	[STMT_ROUTE_LIST] = {
	    "SELECT CONCAT(environment, '/', service_key, '/', operation_key), "
	    "retention_days, IF(enabled, 'yes', 'no') FROM s2r_route "
	    "ORDER BY environment, service_key, operation_key",
	    1, "route_list" },
	[STMT_ROUTE_SET_ENABLED] = {
	    "UPDATE s2r_route SET enabled = ? WHERE environment = ? AND "
	    "service_key = ? AND operation_key = ?", 1, "route_set_enabled" },
	[STMT_KEY_LIST] = {
	    "SELECT k.id, COALESCE(k.tenant_id, ''), COALESCE(k.label, ''), "
	    "IF(k.revoked_at IS NULL OR k.revoked_at > UTC_TIMESTAMP(3), 'no', "
	    "'yes'), COALESCE(GROUP_CONCAT(CONCAT("
	    "r.environment, '/', r.service_key, '/', r.operation_key) "
	    "ORDER BY r.id SEPARATOR ','), '') FROM s2r_api_key k "
	    "LEFT JOIN s2r_backend_key_route kr ON kr.key_id = k.id "
	    "LEFT JOIN s2r_route r ON r.id = kr.route_id WHERE k.kind = ? "
	    "GROUP BY k.id ORDER BY k.id", 1, "key_list" },
	[STMT_KEY_REVOKE] = {
	    "UPDATE s2r_api_key SET revoked_at = LEAST(COALESCE(revoked_at, "
	    "?), ?) WHERE id = ? AND kind = ?", 1, "key_revoke" },
	[STMT_STATS] = {
	    "SELECT CONCAT(environment, '/', service_key, '/', operation_key), "
	    "status, COUNT(*) FROM s2r_async_execution GROUP BY environment, "
	    "service_key, operation_key, status", 1, "stats" },
	/* per-tenant quota (repo_tenant.c, migration 9) */
	[STMT_TENANT_QUOTA] = {
	    "SELECT max_open FROM s2r_tenant WHERE tenant_id = ?",
	    1, "tenant_quota" },
	/* ix_exec_tenant_open's range of the tenant's waiting executions,
	 * at most ? entries (the limit + 1): bounded by the quota */
	[STMT_TENANT_OPEN] = {
	    "SELECT COUNT(*) FROM (SELECT 1 FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_tenant_open) WHERE initiator_tenant_id = ? "
	    "AND status = 'waiting_callback' LIMIT ?) w", 1, "tenant_open" },
	[STMT_TENANT_SET] = {
	    "INSERT INTO s2r_tenant (tenant_id, max_open, updated_at) VALUES "
	    "(?, ?, ?) ON DUPLICATE KEY UPDATE max_open = VALUES(max_open), "
	    "updated_at = VALUES(updated_at)", 1, "tenant_set" },
	[STMT_TENANT_LIST] = {
	    "SELECT t.tenant_id, t.max_open, (SELECT COUNT(*) FROM "
	    "s2r_async_execution e FORCE INDEX (ix_exec_tenant_open) WHERE "
	    "e.initiator_tenant_id = t.tenant_id AND "
	    "e.status = 'waiting_callback') FROM s2r_tenant t "
	    "ORDER BY t.tenant_id", 1, "tenant_list" },
	[STMT_EXEC_PAYLOAD] = {
	    "SELECT result_payload, error_payload, progress_payload, "
	    "last_error FROM s2r_async_execution "
	    "WHERE id = ?", 1, "exec_payload" },
	[STMT_FIN_COMPLETE] = {
	    "UPDATE s2r_async_execution SET status = 'completed', "
	    "result_payload = ?, winner_hash = ?, completed_at = ?, "
	    "updated_at = ? WHERE id = ? "
	    "AND status = 'waiting_callback' AND callback_token_hash = ?",
	    0, "fin_complete" },
	[STMT_FIN_FAIL] = {
	    "UPDATE s2r_async_execution SET status = 'failed', "
	    "error_payload = ?, winner_hash = ?, completed_at = ?, "
	    "updated_at = ? WHERE id = ? "
	    "AND status = 'waiting_callback' AND callback_token_hash = ?",
	    0, "fin_fail" },
	[STMT_FIN_CANCELLED] = {
	    "UPDATE s2r_async_execution SET status = 'cancelled', "
	    "winner_hash = ?, completed_at = ?, updated_at = ? WHERE id = ? "
	    "AND status = 'waiting_callback' AND callback_token_hash = ? AND "
	    "cancel_requested = 1", 0, "fin_cancelled" },
	/* a retryable failure: the claim ends, the retry waits (migration 8) */
	[STMT_FIN_RETRY] = {
	    "UPDATE s2r_async_execution SET callback_token_hash = NULL, "
	    "lease_expires_at = NULL, not_before = ?, last_error = ?, "
	    "updated_at = ? WHERE id = ? AND status = 'waiting_callback' AND "
	    "callback_token_hash = ? AND cancel_requested = 0 AND attempts < ?",
	    0, "fin_retry" },
	[STMT_HEARTBEAT_PROGRESS] = {
	    "UPDATE s2r_async_execution SET lease_expires_at = ?, "
	    "progress_payload = ?, updated_at = ? WHERE id = ? AND "
	    "status = 'waiting_callback' AND callback_token_hash = ?",
	    0, "heartbeat_progress" },
	[STMT_EXEC_WINNER] = {
	    "SELECT callback_token_hash, winner_hash FROM s2r_async_execution "
	    "WHERE id = ?", 1, "exec_winner" },
	[STMT_EXEC_POLL_ID] = {
	    "SELECT " POLL_COLS " FROM s2r_async_execution WHERE id = ? AND "
	    "initiator_tenant_id = ? AND environment = ? AND service_key = ? "
	    "AND operation_key = ? AND correlation_id = ?",
	    1, "exec_poll_id" },
	[STMT_MIGRATE_LOCK] = {
	    "SELECT GET_LOCK(CONCAT('asyncexec_migrate:', DATABASE()), ?)",
	    0, "migrate_lock" },
	[STMT_MIGRATE_UNLOCK] = {
	    "SELECT RELEASE_LOCK(CONCAT('asyncexec_migrate:', DATABASE()))",
	    0, "migrate_unlock" },
	[STMT_METRICS_ROUTES] = {
	    "SELECT environment, service_key, operation_key FROM s2r_route "
	    "ORDER BY id LIMIT " REPO_METRICS_ROUTES_STR, 1, "metrics_routes" },
	/* index range of ix_exec_claim, at most REPO_WAITING_CAP entries */
	[STMT_METRICS_WAITING] = {
	    "SELECT COUNT(*) FROM (SELECT 1 FROM s2r_async_execution "
	    "WHERE environment = ? AND service_key = ? AND operation_key = ? "
	    "AND status = 'waiting_callback' LIMIT " REPO_WAITING_CAP_STR ") w",
	    1, "metrics_waiting" },
	/* the first entry of ix_exec_claim's waiting range: one probe */
	[STMT_METRICS_OLDEST] = {
	    "SELECT created_at FROM s2r_async_execution WHERE environment = ? "
	    "AND service_key = ? AND operation_key = ? AND "
	    "status = 'waiting_callback' AND cancel_requested = 0 "
	    "ORDER BY id LIMIT 1", 1, "metrics_oldest" },
	/* poll-token keys (repo_keys.c): every version, LIKE escaped */
	[STMT_POLL_KEYS] = {
	    "SELECT name, secret, retire_at FROM s2r_secret WHERE "
	    "name = 'poll_token_id_key' OR name LIKE 'poll\\_token\\_id\\_key.%' "
	    "ORDER BY name", 1, "poll_keys" },
	[STMT_POLL_KEY_INSERT] = {
	    "INSERT IGNORE INTO s2r_secret (name, secret, created_at) "
	    "VALUES (?, ?, ?)", 0, "poll_key_insert" },
	[STMT_POLL_KEY_RETIRE] = {
	    "UPDATE s2r_secret SET retire_at = ? WHERE (name = "
	    "'poll_token_id_key' OR name LIKE 'poll\\_token\\_id\\_key.%') AND "
	    "name <> ? AND (retire_at IS NULL OR retire_at > ?)",
	    0, "poll_key_retire" },
	/* the newest version, and the oldest binary schema every migration
	 * after B (the bind) still serves (NULL compatible_from: its own) */
	[STMT_SCHEMA_COMPAT] = {
	    "SELECT COALESCE(MAX(version), 0), COALESCE(MAX(IF(version > ?, "
	    "COALESCE(compatible_from, version), 0)), 0) "
	    "FROM s2r_schema_version", 1, "schema_compat" },
	[STMT_SCHEMA_SET_COMPAT] = {
	    "UPDATE s2r_schema_version SET compatible_from = ? "
	    "WHERE version = ? AND compatible_from IS NULL",
	    0, "schema_set_compat" },
	[STMT_METRICS_EXPIRY] = {
	    "SELECT last_run_at, last_result, last_success_at, expired, "
	    "cancelled, abandoned, purged, duration_ms FROM s2r_job_run "
	    "WHERE job = 'expire'", 1, "metrics_expiry" },
	/* list (repo_list.c): ix_exec_list / ix_exec_list_status, newest
	 * first from below the page token's id; status + 0 is the ENUM's
	 * index, 1-based in enum exec_status order */
	[STMT_EXEC_LIST] = {
	    "SELECT id, correlation_id, status + 0, created_at, updated_at, "
	    "completed_at, expires_at FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_list) WHERE initiator_lineage = ? AND "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "id < ? ORDER BY id DESC LIMIT ?", 1, "exec_list" },
	[STMT_EXEC_LIST_STATUS] = {
	    "SELECT id, correlation_id, status + 0, created_at, updated_at, "
	    "completed_at, expires_at FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_list_status) WHERE initiator_lineage = ? AND "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "status = ? AND id < ? ORDER BY id DESC LIMIT ?", 1,
	    "exec_list_status" },
	[STMT_SECRET_GET] = {
	    "SELECT secret FROM s2r_secret WHERE name = ?",
	    1, "secret_get" },
	/* locking read: waits for a write of a lost connection in flight */
	[STMT_EXEC_OUTCOME] = {
	    "SELECT status, callback_token_hash, completed_at FROM "
	    "s2r_async_execution WHERE id = ? LOCK IN SHARE MODE",
	    1, "exec_outcome" },
};

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

static enum exec_status
status_parse(const char *s)
{
	int	 i;

	for (i = 0; i < ST__MAX; i++)
		if (strcmp(s, status_names[i]) == 0)
			return (enum exec_status)i;
	return ST__MAX;
}

/*
 * Opens a repository handle (no connection yet); its connection runs
 * one statement per query. NULL when out of memory.
 */
struct db *
repo_open(const struct config *cfg, int eager)
{
	return db_new(cfg, stmts, STMT__MAX, eager, 0);
}

/*
 * Opens the handle of `migrate`: its connection alone accepts
 * multi-statement scripts (CLIENT_MULTI_STATEMENTS), for the migrations'
 * SQL files. NULL when out of memory.
 */
struct db *
repo_open_migrate(const struct config *cfg)
{
	return db_new(cfg, stmts, STMT__MAX, 0, 1);
}

void
repo_close(struct db *db)
{
	db_free(db);
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
	int		 backend = 0, revoked = 0, rc;

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
	rc = fetch_one(st, &c);
	if (rc == REPO_OK) {	/* no row: c's lengths were never set */
		db_rstr(&c, 2, k->tenant, sizeof(k->tenant));
		k->revoke_at = revoked && !c.null[4] ? db_time_ms(&t) : 0;
	}
	k->backend = backend;
	k->revoked = revoked;
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
	MYSQL_BIND	 p[13];
	MYSQL_TIME	 t[3];
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
	r->status = status_parse(status);
	r->tenant_null = c->null[6];
	r->key_hash_null = c->null[7] || c->len[7] != SHA256_LEN;
	r->poll_hash_null = c->null[8] || c->len[8] != SHA256_LEN;
	r->cancel_requested = flags[0];
	r->claimed = !c->null[12] && flags[1];
	r->created_at = db_time_ms(&t[0]);
	r->updated_at = db_time_ms(&t[1]);
	r->completed_at = c->null[15] ? 0 : db_time_ms(&t[2]);
	r->expires_at = db_time_ms(&t[3]);
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
	MYSQL_TIME	 t[4];
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

/* Binds the STMT_EXEC_POLL_ID result columns into r and the scratch slots. */
static void
poll_cols(struct db_cols *c, struct exec_row *r, char *status, size_t ssz,
    MYSQL_TIME *t)
{
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &r->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, status, ssz);
	db_rcol(c, 2, MYSQL_TYPE_BLOB, r->key_hash, SHA256_LEN);
	db_rcol(c, 3, MYSQL_TYPE_BLOB, r->poll_hash, SHA256_LEN);
	db_rcol(c, 4, MYSQL_TYPE_LONG, &r->cancel_requested, 0);
	db_rcol(c, 5, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(c, 6, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(c, 7, MYSQL_TYPE_DATETIME, &t[2], sizeof(t[2]));
	db_rcol(c, 8, MYSQL_TYPE_DATETIME, &t[3], sizeof(t[3]));
	db_rcol(c, 9, MYSQL_TYPE_BLOB, r->lineage, SHA256_LEN);
	db_rcol(c, 10, MYSQL_TYPE_LONG, &r->attempts, 0);
	db_rcol(c, 11, MYSQL_TYPE_LONG, &r->has_progress, 0);
	db_rcol(c, 12, MYSQL_TYPE_LONG, &r->has_last_error, 0);
}

/* Copies the fetched poll columns into r; 0, or -1 for an unknown status. */
static int
poll_finish(struct db_cols *c, struct exec_row *r, char *status, size_t ssz,
    MYSQL_TIME *t)
{
	db_rstr(c, 1, status, ssz);
	r->status = status_parse(status);
	r->key_hash_null = c->null[2] || c->len[2] != SHA256_LEN;
	r->poll_hash_null = c->null[3] || c->len[3] != SHA256_LEN;
	r->lineage_null = c->null[9] || c->len[9] != SHA256_LEN;
	r->created_at = db_time_ms(&t[0]);
	r->updated_at = db_time_ms(&t[1]);
	r->completed_at = c->null[7] ? 0 : db_time_ms(&t[2]);
	r->expires_at = db_time_ms(&t[3]);
	return r->status == ST__MAX ? -1 : 0;
}

/*
 * The poll read, by primary key: only what poll and cancel compare and
 * show (id, status, the initiator's key and token hashes, cancel flag,
 * timestamps), never the payloads, so that a row that exists costs what
 * a missing one costs until the caller's hashes have matched (then
 * repo_exec_payload reads them). The row must also have the path's
 * tenant, route and correlation id. r's names are copied from the
 * arguments; r->result and r->error stay NULL. REPO_OK, REPO_NOTFOUND
 * or REPO_ERR.
 */
enum repo_rc
repo_exec_poll(struct db *db, uint64_t id, const char *tenant,
    const char *env, const char *svc, const char *op, const char *cid,
    struct exec_row *r)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[4];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	char		 status[24];
	int		 rc;

	db_bind_u64(&p[0], &id);
	db_bind_str(&p[1], tenant);
	db_bind_str(&p[2], env);
	db_bind_str(&p[3], svc);
	db_bind_str(&p[4], op);
	db_bind_str(&p[5], cid);
	if ((st = db_run(db, STMT_EXEC_POLL_ID, p)) == NULL)
		return REPO_ERR;
	memset(r, 0, sizeof(*r));
	poll_cols(&c, r, status, sizeof(status), t);
	rc = db_fetch_row(st, &c);
	if (rc == DB_ROW && poll_finish(&c, r, status, sizeof(status), t) == -1)
		rc = DB_ROW_ERR;
	mysql_stmt_free_result(st);
	snprintf(r->cid, sizeof(r->cid), "%s", cid);
	snprintf(r->env, sizeof(r->env), "%s", env);
	snprintf(r->svc, sizeof(r->svc), "%s", svc);
	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	return rc == DB_ROW ? REPO_OK :
	    rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
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
 * Cancels a waiting execution that no live lease holds. REPO_OK when it
 * became cancelled, REPO_NOTFOUND when it is claimed or terminal.
 */
enum repo_rc
repo_exec_cancel(struct db *db, uint64_t id, int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t[3];

	db_bind_time(&p[0], &t[0], now);
	db_bind_time(&p[1], &t[1], now);
	db_bind_u64(&p[2], &id);
	db_bind_time(&p[3], &t[2], now);
	return repo_cas(db, STMT_EXEC_CANCEL, p);
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
