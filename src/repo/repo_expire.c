/*
 * repo_expire.c - the statements of asyncexec-expire, prepared from
 * their own enum-indexed table on their own connection.
 *
 * Why every rule takes two statements per batch: a single
 * "UPDATE ... WHERE status = 'waiting_callback' AND expires_at <= ?
 * ORDER BY expires_at LIMIT ?" walks ix_exec_expiry and locks the
 * secondary index entry before the row. A callback locks the row first
 * and then needs that same index entry (its status changes), so the two
 * deadlock. Here the candidates are read without locks and the UPDATE
 * joins them by primary key (JSON_TABLE over the bound id list), taking
 * row locks only, in id order; it repeats the rule, so it is a
 * compare-and-set like the callbacks. Purge works the same way (select,
 * then delete by primary key), and its delete repeats "not waiting": a
 * waiting row is never deleted; both leave a row a replay or the webhook
 * sender still needs (PURGE_FREE, repo_sql.h).
 *
 * The join order is pinned (STRAIGHT_JOIN, the id list first, and FORCE
 * INDEX (PRIMARY)): left to itself the optimizer estimates JSON_TABLE at
 * 40 rows and, when few rows are due (the steady state), drives the
 * UPDATE through ix_exec_expiry (or ix_exec_abandon) or a table scan,
 * because the apply repeats the rule; that locks the index entry before
 * the row again. A deadlock (1213) or lock wait timeout (1205) that still
 * hits an apply undoes only that statement: REPO_RETRY, and the caller
 * runs it again (it is a compare-and-set); one over Galera's limits
 * (db_fail_of) REPO_SPLIT or _ROWS, and the caller runs it in halves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "log.h"
#include "repo_expire.h"
#include "repo_sql.h"

#define IDS_TABLE \
	"JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) j " \
	"STRAIGHT_JOIN s2r_async_execution e FORCE INDEX (PRIMARY) " \
	"ON e.id = j.id "
#define IDS_JOIN	"UPDATE " IDS_TABLE "SET "
/* Cancel-requested waiting executions, route by route on ix_exec_claim. */
#define CANCEL_FROM \
	"FROM s2r_route r STRAIGHT_JOIN s2r_async_execution e FORCE INDEX " \
	"(ix_exec_claim) ON e.environment = r.environment AND " \
	"e.service_key = r.service_key AND e.operation_key = " \
	"r.operation_key AND e.status = 'waiting_callback' AND " \
	"e.cancel_requested = 1 WHERE (e.lease_expires_at IS NULL OR " \
	"e.lease_expires_at <= ?) "
#define LOCK_NAME \
	"CONCAT('asyncexec_expire:', LEFT(COALESCE(DATABASE(), ''), 40))"

enum xstmt {
	XSTMT_SESSION,
	XSTMT_LOCK,
	XSTMT_UNLOCK,
	XSTMT_EXPIRE_DUE,
	XSTMT_EXPIRE_APPLY,
	XSTMT_CANCEL_DUE,
	XSTMT_CANCEL_APPLY,
	XSTMT_ABANDON_DUE,
	XSTMT_ABANDON_APPLY,
	XSTMT_PURGE_DUE,
	XSTMT_PURGE_APPLY,
	XSTMT_COUNT_EXPIRE,
	XSTMT_COUNT_CANCEL,
	XSTMT_COUNT_ABANDON,
	XSTMT_COUNT_PURGE,
	XSTMT_DPURGE_DUE,
	XSTMT_DPURGE_APPLY,
	XSTMT_COUNT_DPURGE,
	XSTMT_REVOKED_LINEAGE,
	XSTMT_REVOKED_DUE,
	XSTMT_REVOKED_APPLY,
	XSTMT_COUNT_REVOKED,
	XSTMT_RECORD,
	XSTMT__MAX
};

/*
 * The *_DUE selections walk their index from the position after the
 * previous batch (keyset: "(key, id) > (?, ?)"), so no batch re-reads
 * the index entries the previous batches deleted or moved, which InnoDB
 * keeps (delete-marked) until its purge thread catches up.
 * Nothing is retried after a reconnect: the run lock lives on the
 * connection.
 */
static const struct db_stmt_def xstmts[XSTMT__MAX] = {
	[XSTMT_SESSION] = {
	  "SET SESSION innodb_lock_wait_timeout = "
	  REPO_EXPIRE_LOCK_WAIT_STR, 0, "session" },
	[XSTMT_LOCK] = {
	  "SELECT GET_LOCK(" LOCK_NAME ", 0)", 0, "lock" },
	[XSTMT_UNLOCK] = {
	  "SELECT RELEASE_LOCK(" LOCK_NAME ")", 0, "unlock" },
	[XSTMT_EXPIRE_DUE] = {
	  "SELECT id, expires_at FROM s2r_async_execution WHERE status = "
	  "'waiting_callback' AND expires_at <= ? AND (expires_at > ? OR "
	  "(expires_at = ? AND id > ?)) ORDER BY expires_at, id LIMIT ?",
	  0, "expire_due" },
	[XSTMT_EXPIRE_APPLY] = {
	  IDS_JOIN "e.status = 'expired', e.completed_at = ?, "
	  "e.updated_at = ?, " SET_NOTIFY("e") " WHERE e.status = 'waiting_callback' AND "
	  "e.expires_at <= ?", 0, "expire_apply" },
	[XSTMT_CANCEL_DUE] = {
	  "SELECT e.id, 0 " CANCEL_FROM "AND e.id > ? ORDER BY e.id LIMIT ?",
	  0, "cancel_due" },
	[XSTMT_CANCEL_APPLY] = {
	  IDS_JOIN "e.status = 'cancelled', e.completed_at = ?, "
	  "e.updated_at = ?, " SET_NOTIFY("e") " WHERE e.status = 'waiting_callback' AND "
	  "e.cancel_requested = 1 AND (e.lease_expires_at IS NULL OR "
	  "e.lease_expires_at <= ?)", 0, "cancel_apply" },
	[XSTMT_ABANDON_DUE] = {
	  "SELECT id, attempts FROM s2r_async_execution WHERE status = "
	  "'waiting_callback' AND attempts >= ? AND lease_expires_at <= ? "
	  "AND (attempts > ? OR (attempts = ? AND id > ?)) "
	  "ORDER BY attempts, id LIMIT ?", 0, "abandon_due" },
	[XSTMT_ABANDON_APPLY] = {
	  IDS_JOIN "e.status = 'failed', e.error_payload = "
	  "CONCAT('{\"message\":\"abandoned after ', e.attempts, "
	  "' claims\"}'), e.completed_at = ?, e.updated_at = ?, "
	  SET_NOTIFY("e") " WHERE "
	  "e.status = 'waiting_callback' AND e.attempts >= ? AND "
	  "e.lease_expires_at <= ?", 0, "abandon_apply" },
	/* FORCE INDEX: PURGE_FREE reads the rows, and left to itself the
	 * optimizer then reads ix_exec_expiry as ref (status) from its
	 * start, or the table (db_expire_purge checks the plan) */
	[XSTMT_PURGE_DUE] = {
	  "SELECT e.id, e.expires_at FROM s2r_async_execution e FORCE INDEX "
	  "(ix_exec_expiry) " PURGE_REPLACEMENT "WHERE e.status = ? AND "
	  "e.expires_at < ? AND " PURGE_COUNTED " AND (e.expires_at > ? OR "
	  "(e.expires_at = ? AND e.id > ?)) AND " PURGE_FREE " ORDER BY "
	  "e.expires_at, e.id LIMIT ?",
	  0, "purge_due" },
	[XSTMT_PURGE_APPLY] = {
	  "DELETE e FROM " IDS_TABLE PURGE_REPLACEMENT "WHERE e.status <> "
	  "'waiting_callback' AND e.expires_at < ? AND " PURGE_COUNTED " AND "
	  PURGE_FREE,
	  0, "purge_apply" },
	[XSTMT_COUNT_EXPIRE] = {
	  "SELECT COUNT(*) FROM s2r_async_execution WHERE status = "
	  "'waiting_callback' AND expires_at <= ?", 0, "count_expire" },
	[XSTMT_COUNT_CANCEL] = {
	  "SELECT COUNT(*) " CANCEL_FROM "AND e.expires_at > ?",
	  0, "count_cancel" },
	[XSTMT_COUNT_ABANDON] = {
	  "SELECT COUNT(*) FROM s2r_async_execution WHERE status = "
	  "'waiting_callback' AND attempts >= ? AND lease_expires_at <= ? "
	  "AND expires_at > ? AND cancel_requested = 0",
	  0, "count_abandon" },
	/* every status (an IN list for ix_exec_expiry): a waiting row this
	 * old is expired, and purged by the same run unless the rollup has
	 * not counted its now (? 1) or its expiry marks it */
	[XSTMT_COUNT_PURGE] = {
	  "SELECT COUNT(*) FROM s2r_async_execution e FORCE INDEX "
	  "(ix_exec_expiry) " PURGE_REPLACEMENT "WHERE e.status IN "
	  "('waiting_callback', 'completed', 'failed', 'expired', "
	  "'cancelled') AND e.expires_at < ? AND " PURGE_COUNTED " AND "
	  PURGE_FREE " AND NOT (e.status = 'waiting_callback' AND (? OR "
	  "(SELECT 1 FROM "
	  "s2r_webhook_endpoint w FORCE INDEX (ix_endpoint_tenant) WHERE "
	  "w.tenant_id = e.initiator_tenant_id AND w.enabled = 1 LIMIT 1) IS "
	  "NOT NULL))",
	  0, "count_purge" },
	/* ended webhook deliveries: due_at is when they ended (sql/010) */
	[XSTMT_DPURGE_DUE] = {
	  "SELECT id, due_at FROM s2r_webhook_delivery FORCE INDEX "
	  "(ix_delivery_due) WHERE state = ? AND due_at < ? AND (due_at > ? OR "
	  "(due_at = ? AND id > ?)) ORDER BY due_at, id LIMIT ?",
	  0, "dpurge_due" },
	[XSTMT_DPURGE_APPLY] = {
	  "DELETE d FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH "
	  "'$')) j STRAIGHT_JOIN s2r_webhook_delivery d FORCE INDEX (PRIMARY) "
	  "ON d.id = j.id WHERE d.state IN ('delivered', 'dead') AND "
	  "d.due_at < ?", 0, "dpurge_apply" },
	[XSTMT_COUNT_DPURGE] = {
	  "SELECT COUNT(*) FROM s2r_webhook_delivery WHERE state IN "
	  "('delivered', 'dead') AND due_at < ?", 0, "count_dpurge" },
	/*
	 * Revoked initiators (sql/012): the next dead lineage after ? (its
	 * first key, id = lineage, is revoked: ix_key_revoked) that has
	 * waiting executions (ix_exec_lineage), then its unclaimed ones
	 * in id order (one range of ix_exec_lineage).
	 */
	[XSTMT_REVOKED_LINEAGE] = {
	  "SELECT COALESCE(MIN(k.id), 0) FROM s2r_api_key k FORCE INDEX "
	  "(ix_key_revoked) WHERE "
	  "k.revoked_at <= ? AND k.id > ? AND k.kind = 'consumer' AND "
	  "(k.lineage_id IS NULL OR k.lineage_id = k.id) AND NOT "
	  LINEAGE_LIVE("k.id") " AND EXISTS (SELECT 1 FROM "
	  "s2r_async_execution x FORCE INDEX (ix_exec_lineage) WHERE "
	  "x.initiator_lineage_id = k.id AND x.status = 'waiting_callback')",
	  0, "revoked_lineage" },
	[XSTMT_REVOKED_DUE] = {
	  "SELECT id, initiator_lineage_id FROM s2r_async_execution FORCE "
	  "INDEX (ix_exec_lineage) WHERE initiator_lineage_id = ? AND "
	  "status = 'waiting_callback' AND id > ? AND cancel_requested = 0 "
	  "AND (callback_token_hash IS NULL OR lease_expires_at <= ?) "
	  "ORDER BY id LIMIT ?", 0, "revoked_due" },
	[XSTMT_REVOKED_APPLY] = {
	  IDS_JOIN "e.status = 'failed', e.error_payload = " REVOKED_ERROR
	  ", e.completed_at = ?, e.updated_at = ?, " SET_NOTIFY("e") " WHERE "
	  "e.status = 'waiting_callback' AND e.cancel_requested = 0 AND "
	  "e.initiator_lineage_id IS NOT NULL AND (e.callback_token_hash IS "
	  "NULL OR e.lease_expires_at <= ?) AND NOT "
	  LINEAGE_LIVE("e.initiator_lineage_id"), 0, "revoked_apply" },
	/* not those the earlier steps take: overdue, abandoned */
	[XSTMT_COUNT_REVOKED] = {
	  "SELECT COUNT(*) FROM s2r_api_key k FORCE INDEX (ix_key_revoked) "
	  "STRAIGHT_JOIN s2r_async_execution e FORCE INDEX (ix_exec_lineage) "
	  "ON e.initiator_lineage_id = k.id AND e.status = 'waiting_callback' "
	  "WHERE k.revoked_at <= ? AND k.kind = 'consumer' AND (k.lineage_id "
	  "IS NULL OR k.lineage_id = k.id) AND NOT " LINEAGE_LIVE("k.id")
	  " AND e.cancel_requested = 0 AND (e.callback_token_hash IS NULL OR "
	  "e.lease_expires_at <= ?) AND e.expires_at > ? AND e.attempts < ?",
	  0, "count_revoked" },
	[XSTMT_RECORD] = {
	  "INSERT INTO s2r_job_run (job, last_run_at, last_result, "
	  "last_success_at, expired, cancelled, abandoned, purged, retries, "
	  "duration_ms) VALUES ('expire', ?, ?, ?, ?, ?, ?, ?, ?, ?) "
	  "ON DUPLICATE KEY UPDATE last_run_at = VALUES(last_run_at), "
	  "last_result = VALUES(last_result), last_success_at = "
	  "COALESCE(VALUES(last_success_at), last_success_at), expired = "
	  "VALUES(expired), cancelled = VALUES(cancelled), abandoned = "
	  "VALUES(abandoned), purged = VALUES(purged), retries = "
	  "VALUES(retries), duration_ms = VALUES(duration_ms)", 0,
	  "record" },
};

/* Opens the expiry repository (connects on first use). NULL: no memory. */
struct xdb {
	struct db	*db;
};

struct xdb *
repo_expire_open(const struct config *cfg)
{
	struct xdb	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	if ((x->db = db_new(cfg, xstmts, XSTMT__MAX, 0, 0)) == NULL) {
		free(x);
		return NULL;
	}
	return x;
}

void
repo_expire_close(struct xdb *x)
{
	if (x == NULL)
		return;
	db_free(x->db);
	free(x);
}

/*
 * The text of the statement whose log name is name (tests/db EXPLAIN
 * it as it is sent); NULL when there is none.
 */
const char *
repo_expire_sql(const char *name)
{
	int	 i;

	for (i = 0; i < XSTMT__MAX; i++)
		if (strcmp(xstmts[i].name, name) == 0)
			return xstmts[i].sql;
	return NULL;
}

/* Runs a one-row, one-column integer query into *v (*isnull: NULL). */
static enum repo_rc
query_u64(struct db *db, enum xstmt id, MYSQL_BIND *p, uint64_t *v,
    int *isnull)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	*v = 0;
	if ((st = db_run(db, id, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, v, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return REPO_ERR;
	if (isnull != NULL)
		*isnull = c.null[0];
	return REPO_OK;
}

/*
 * Sets the session's lock wait timeout (REPO_EXPIRE_LOCK_WAIT_STR s),
 * then takes the run lock without waiting: *got 1 when this run holds it.
 */
enum repo_rc
repo_expire_lock(struct xdb *x, int *got)
{
	uint64_t	 v;
	int		 isnull;

	*got = 0;
	if (db_run(x->db, XSTMT_SESSION, NULL) == NULL)
		return REPO_ERR;
	if (query_u64(x->db, XSTMT_LOCK, NULL, &v, &isnull) != REPO_OK)
		return REPO_ERR;
	if (isnull) {
		log_error("expire: GET_LOCK failed");
		return REPO_ERR;
	}
	*got = v == 1;
	return REPO_OK;
}

/* Releases the run lock (closing the connection releases it too). */
enum repo_rc
repo_expire_unlock(struct xdb *x)
{
	uint64_t	 v;

	return query_u64(x->db, XSTMT_UNLOCK, NULL, &v, NULL);
}

static int
cmp_id(const void *a, const void *b)
{
	uint64_t	 x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Reads (id, key) rows of an executed *_DUE query into ids[0..limit),
 * moves *pos to the last row read (key a DATETIME when is_time, else an
 * integer), then sorts ids so the apply locks rows in id order.
 */
static enum repo_rc
fetch_ids(MYSQL_STMT *st, unsigned limit, uint64_t *ids, size_t *n,
    struct repo_pos *pos, int is_time)
{
	struct db_cols	 c;
	MYSQL_TIME	 t;
	uint64_t	 id;
	unsigned	 k = 0;
	int		 rc = 0;

	*n = 0;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	if (is_time)
		db_rcol(&c, 1, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	else
		db_rcol(&c, 1, MYSQL_TYPE_LONG, &k, 0);
	while (*n < limit && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		ids[(*n)++] = id;
		pos->id = id;
		pos->key = is_time ? db_time_ms(&t) : (int64_t)k;
	}
	mysql_stmt_free_result(st);
	if (rc == DB_ROW_ERR)
		return REPO_ERR;
	qsort(ids, *n, sizeof(*ids), cmp_id);
	return REPO_OK;
}

/* Renders ids as a JSON array "[1,2,3]" into a new buffer (caller frees). */
static char *
ids_json(const uint64_t *ids, size_t n)
{
	char	*s, *p;
	size_t	 i, cap = 3 + n * 21;

	if ((s = malloc(cap)) == NULL)
		return NULL;
	p = s;
	*p++ = '[';
	for (i = 0; i < n; i++)
		p += snprintf(p, cap - (size_t)(p - s), "%s%llu", i ? "," : "",
		    (unsigned long long)ids[i]);
	*p++ = ']';
	*p = '\0';
	return s;
}

/*
 * Runs *_DUE statement id with the binds p and reads its (id, key) rows
 * into ids[0..limit) and *pos (fetch_ids; is_time: the key is a
 * DATETIME). REPO_OK or REPO_ERR.
 */
static enum repo_rc
due_ids(struct db *db, enum xstmt id, MYSQL_BIND *p, unsigned limit,
    struct repo_pos *pos, uint64_t *ids, size_t *n, int is_time)
{
	MYSQL_STMT	*st;

	*n = 0;
	if ((st = db_run(db, id, p)) == NULL)
		return REPO_ERR;
	return fetch_ids(st, limit, ids, n, pos, is_time);
}

/*
 * Binds the keyset after *pos of a DATETIME-keyed *_DUE statement and
 * its batch size into p[0..4): "key > ? OR (key = ? AND id > ?)",
 * "LIMIT ?"; t[0..2) hold the times.
 */
static void
bind_time_keyset(MYSQL_BIND *p, MYSQL_TIME *t, struct repo_pos *pos,
    unsigned *limit)
{
	db_bind_time(&p[0], &t[0], pos->key);
	db_bind_time(&p[1], &t[1], pos->key);
	db_bind_u64(&p[2], &pos->id);
	db_bind_u32(&p[3], limit);
}

/*
 * Runs apply statement id over ids[0..n) in one autocommit statement:
 * the ids as a JSON array into p[0], the caller bound the rest of p.
 * *changed gets its matched rows. REPO_OK (n 0: nothing to run),
 * REPO_RETRY (a deadlock or lock wait timeout undid it: run it again),
 * REPO_SPLIT (over wsrep_max_ws_size: nothing done; run it again in
 * smaller pieces), REPO_SPLIT_ROWS (over wsrep_max_ws_rows) or REPO_ERR.
 */
static enum repo_rc
apply_ids(struct db *db, enum xstmt id, const uint64_t *ids, size_t n,
    MYSQL_BIND *p, unsigned *changed)
{
	char		*json;
	MYSQL_STMT	*st;
	enum db_fail	 f;

	*changed = 0;
	if (n == 0)
		return REPO_OK;
	if ((json = ids_json(ids, n)) == NULL)
		return REPO_ERR;
	db_bind_str(&p[0], json);
	st = db_run(db, id, p);
	free(json);
	if (st == NULL)		/* REPO_RETRY: 1213, 1205 */
		return (f = db_failure(db)) == DB_FAIL_WRITESET ? REPO_SPLIT :
		    f == DB_FAIL_WS_ROWS ? REPO_SPLIT_ROWS : repo_failed(db);
	*changed = (unsigned)db_affected(db, id);
	return REPO_OK;
}

/* apply_ids of id whose three other binds are all now. */
static enum repo_rc
apply_at(struct db *db, enum xstmt id, const uint64_t *ids, size_t n,
    int64_t now, unsigned *changed)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t[3];

	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	db_bind_time(&p[3], &t[2], now);
	return apply_ids(db, id, ids, n, p, changed);
}

/* Candidates for expiry after *pos: waiting, expires_at <= now. */
enum repo_rc
repo_expire_due(struct xdb *x, int64_t now, unsigned limit,
    struct repo_pos *pos, uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t[3];

	db_bind_time(&p[0], &t[0], now);
	bind_time_keyset(&p[1], &t[1], pos, &limit);
	return due_ids(x->db, XSTMT_EXPIRE_DUE, p, limit, pos, ids, n, 1);
}

/*
 * Expires those of ids[0..n) that still wait and are still due, in one
 * autocommit UPDATE; *changed gets how many did. REPO_OK, REPO_RETRY
 * (a deadlock or lock wait timeout undid it: run it again) or REPO_ERR.
 */
enum repo_rc
repo_expire_apply(struct xdb *x, const uint64_t *ids, size_t n, int64_t now,
    unsigned *changed)
{
	return apply_at(x->db, XSTMT_EXPIRE_APPLY, ids, n, now, changed);
}

/*
 * Candidates for cancel after *pos (by id): waiting, cancel requested,
 * no live lease. Read route by route on ix_exec_claim, so the cost is
 * the routes plus the cancel-requested waiting rows, never the table.
 */
enum repo_rc
repo_cancel_due(struct xdb *x, int64_t now, unsigned limit,
    struct repo_pos *pos, uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	db_bind_u64(&p[1], &pos->id);
	db_bind_u32(&p[2], &limit);
	return due_ids(x->db, XSTMT_CANCEL_DUE, p, limit, pos, ids, n, 0);
}

/*
 * Cancels those of ids[0..n) that still wait with a cancel request and
 * no live lease, in one autocommit UPDATE; *changed gets how many.
 * REPO_OK, REPO_RETRY or REPO_ERR.
 */
enum repo_rc
repo_cancel_apply(struct xdb *x, const uint64_t *ids, size_t n, int64_t now,
    unsigned *changed)
{
	return apply_at(x->db, XSTMT_CANCEL_APPLY, ids, n, now, changed);
}

/* Candidates for abandon after *pos: waiting, attempts >= max, lapsed. */
enum repo_rc
repo_abandon_due(struct xdb *x, unsigned max_attempts, int64_t now,
    unsigned limit, struct repo_pos *pos, uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t;
	unsigned	 k = pos->key < 0 ? 0 : (unsigned)pos->key;

	db_bind_u32(&p[0], &max_attempts);
	db_bind_time(&p[1], &t, now);
	db_bind_u32(&p[2], &k);
	db_bind_u32(&p[3], &k);
	db_bind_u64(&p[4], &pos->id);
	db_bind_u32(&p[5], &limit);
	return due_ids(x->db, XSTMT_ABANDON_DUE, p, limit, pos, ids, n, 0);
}

/*
 * Fails those of ids[0..n) that still meet the abandon rule, with the
 * error {"message":"abandoned after N claims"} (N: their attempts), in
 * one autocommit UPDATE; *changed gets how many. REPO_OK, REPO_RETRY
 * or REPO_ERR.
 */
enum repo_rc
repo_abandon_apply(struct xdb *x, const uint64_t *ids, size_t n,
    unsigned max_attempts, int64_t now, unsigned *changed)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t[3];

	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u32(&p[3], &max_attempts);
	db_bind_time(&p[4], &t[2], now);
	return apply_ids(x->db, XSTMT_ABANDON_APPLY, ids, n, p, changed);
}

/*
 * Candidates for purge after *pos: status st (terminal), expired before
 * cutoff, PURGE_COUNTED, PURGE_FREE; the rows it leaves are read past in
 * the statement, so a batch comes back short only at the end.
 */
enum repo_rc
repo_purge_due(struct xdb *x, enum exec_status st, int64_t cutoff,
    int64_t counted, unsigned limit, struct repo_pos *pos, uint64_t *ids,
    size_t *n)
{
	MYSQL_BIND	 p[7];
	MYSQL_TIME	 t[4];

	*n = 0;
	if (st == ST_WAITING || st >= ST__MAX)
		return REPO_ERR;
	db_bind_str(&p[0], exec_status_name(st));
	db_bind_time(&p[1], &t[0], cutoff);
	db_bind_time(&p[2], &t[1], counted);
	bind_time_keyset(&p[3], &t[2], pos, &limit);
	return due_ids(x->db, XSTMT_PURGE_DUE, p, limit, pos, ids, n, 1);
}

/*
 * Deletes those of ids[0..n) that are terminal with expires_at before
 * cutoff (never a waiting one), still PURGE_COUNTED and PURGE_FREE, in
 * one autocommit DELETE by primary key; *deleted gets how many.
 * REPO_OK, REPO_RETRY or REPO_ERR.
 */
enum repo_rc
repo_purge_apply(struct xdb *x, const uint64_t *ids, size_t n,
    int64_t cutoff, int64_t counted, unsigned *deleted)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t[2];

	db_bind_time(&p[1], &t[0], cutoff);
	db_bind_time(&p[2], &t[1], counted);
	return apply_ids(x->db, XSTMT_PURGE_APPLY, ids, n, p, deleted);
}

/*
 * Ended webhook deliveries in state delivered (dead: dead) that ended
 * before cutoff, oldest first, from *pos on. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_delivery_purge_due(struct xdb *x, int dead, int64_t cutoff,
    unsigned limit, struct repo_pos *pos, uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[3];

	*n = 0;
	db_bind_str(&p[0], dead ? "dead" : "delivered");
	db_bind_time(&p[1], &t[0], cutoff);
	bind_time_keyset(&p[2], &t[1], pos, &limit);
	return due_ids(x->db, XSTMT_DPURGE_DUE, p, limit, pos, ids, n, 1);
}

/* Deletes those of ids[0..n) still ended before cutoff. As purge_apply. */
enum repo_rc
repo_delivery_purge_apply(struct xdb *x, const uint64_t *ids, size_t n,
    int64_t cutoff, unsigned *deleted)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t;

	db_bind_time(&p[1], &t, cutoff);
	return apply_ids(x->db, XSTMT_DPURGE_APPLY, ids, n, p, deleted);
}

/* Dry run: how many ended deliveries the purge would delete. */
enum repo_rc
repo_delivery_purge_count(struct xdb *x, int64_t cutoff, uint64_t *n)
{
	MYSQL_BIND	 p[1];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, cutoff);
	return query_u64(x->db, XSTMT_COUNT_DPURGE, p, n, NULL);
}

/*
 * Candidates of the revoked step from *pos (key: the lineage, id: the
 * last execution of it taken): the unclaimed waiting executions of the
 * lineages without a live key, lineage by lineage, in id order.
 */
enum repo_rc
repo_revoked_due(struct xdb *x, int64_t now, unsigned limit,
    struct repo_pos *pos, uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t[2];
	uint64_t	 lineage, next = 0;
	unsigned	 lim;
	size_t		 got;

	*n = 0;
	while (*n < limit) {
		if (pos->key > 0) {	/* its rows: (id, lineage) */
			lineage = (uint64_t)pos->key;
			lim = limit - (unsigned)*n;
			db_bind_u64(&p[0], &lineage);
			db_bind_u64(&p[1], &pos->id);
			db_bind_time(&p[2], &t[0], now);
			db_bind_u32(&p[3], &lim);
			if (due_ids(x->db, XSTMT_REVOKED_DUE, p, lim, pos,
			    ids + *n, &got, 0) != REPO_OK)
				return REPO_ERR;
			if ((*n += got) == limit)
				break;		/* the next batch goes on here */
		}
		lineage = (uint64_t)pos->key;	/* the next dead one after */
		db_bind_time(&p[0], &t[0], now);
		db_bind_u64(&p[1], &lineage);
		db_bind_time(&p[2], &t[1], now);
		db_bind_time(&p[3], &t[1], now);
		if (query_u64(x->db, XSTMT_REVOKED_LINEAGE, p, &next,
		    NULL) != REPO_OK)
			return REPO_ERR;
		if (next <= lineage)
			break;
		pos->key = (int64_t)next;
		pos->id = 0;
	}
	qsort(ids, *n, sizeof(*ids), cmp_id);
	return REPO_OK;
}

/*
 * Fails those of ids[0..n) that still wait unclaimed, without a cancel
 * request, of a lineage without a live key, with initiator_revoked, in
 * one autocommit UPDATE; *changed gets how many. REPO_OK, REPO_RETRY or
 * REPO_ERR.
 */
enum repo_rc
repo_revoked_apply(struct xdb *x, const uint64_t *ids, size_t n, int64_t now,
    unsigned *changed)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[5];
	int		 i;

	for (i = 0; i < 5; i++)
		db_bind_time(&p[1 + i], &t[i], now);
	return apply_ids(x->db, XSTMT_REVOKED_APPLY, ids, n, p, changed);
}

/* Dry run: how many the revoked step would fail (not taken before). */
enum repo_rc
repo_revoked_count(struct xdb *x, unsigned max_attempts, int64_t now,
    uint64_t *n)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[5];
	int		 i;

	for (i = 0; i < 5; i++)
		db_bind_time(&p[i], &t[i], now);
	db_bind_u32(&p[5], &max_attempts);
	return query_u64(x->db, XSTMT_COUNT_REVOKED, p, n, NULL);
}

/* Dry run: how many the expiry would expire at now. */
enum repo_rc
repo_expire_count(struct xdb *x, int64_t now, uint64_t *n)
{
	MYSQL_BIND	 p[1];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	return query_u64(x->db, XSTMT_COUNT_EXPIRE, p, n, NULL);
}

/* Dry run: how many the cancel step would cancel (not expired first). */
enum repo_rc
repo_cancel_count(struct xdb *x, int64_t now, uint64_t *n)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t[2];

	db_bind_time(&p[0], &t[0], now);
	db_bind_time(&p[1], &t[1], now);
	return query_u64(x->db, XSTMT_COUNT_CANCEL, p, n, NULL);
}

/* Dry run: how many the rescue would fail (not expired or cancelled first). */
enum repo_rc
repo_abandon_count(struct xdb *x, unsigned max_attempts, int64_t now,
    uint64_t *n)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t[2];

	db_bind_u32(&p[0], &max_attempts);
	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	return query_u64(x->db, XSTMT_COUNT_ABANDON, p, n, NULL);
}

/* Dry run: how many the purge of a run at now would delete. */
enum repo_rc
repo_purge_count(struct xdb *x, int64_t now, int64_t cutoff,
    int64_t counted, uint64_t *n)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t[2];
	uint32_t	 spare = now > counted;	/* expired now: not counted */

	db_bind_time(&p[0], &t[0], cutoff);
	db_bind_time(&p[1], &t[1], counted);
	db_bind_u32(&p[2], &spare);
	return query_u64(x->db, XSTMT_COUNT_PURGE, p, n, NULL);
}

/*
 * Records the end of a run (result "complete", "stopped", "locked" or
 * "error"; a run that succeeded also sets last_success_at) in
 * s2r_job_run for GET /metrics: counts[] by enum expire_step order
 * (expired, cancelled, abandoned, purged). REPO_OK or REPO_ERR (a
 * database before migration 6 has no such table: the caller only warns).
 */
enum repo_rc
repo_expire_record(struct xdb *x, const char *result, int success,
    const uint64_t counts[4], uint64_t retries, uint64_t duration_ms,
    int64_t now)
{
	MYSQL_BIND	 p[9];
	MYSQL_TIME	 t[2];
	int		 i;

	db_bind_time(&p[0], &t[0], now);
	db_bind_str(&p[1], result);
	if (success)
		db_bind_time(&p[2], &t[1], now);
	else
		db_bind_str(&p[2], NULL);	/* keeps the last success */
	for (i = 0; i < 4; i++)
		db_bind_u64(&p[3 + i], &counts[i]);
	db_bind_u64(&p[7], &retries);
	db_bind_u64(&p[8], &duration_ms);
	return db_run(x->db, XSTMT_RECORD, p) != NULL ? REPO_OK : REPO_ERR;
}
