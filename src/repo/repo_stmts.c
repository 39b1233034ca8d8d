/*
 * repo_stmts.c - the SQL of the service handle (repo_open), one entry
 * per enum stmt (repo_sql.h); db.c prepares them after fork.
 */
#include "api.h"
#include "db.h"
#include "repo.h"
#include "repo_sql.h"

_Static_assert(PRIORITY_MAX == 9, "STMT_CLAIM_SELECT lists the priorities");

#define EXEC_COLS \
	"id, correlation_id, environment, service_key, operation_key, " \
	"status, initiator_tenant_id, initiator_key_hash, poll_token_hash, " \
	"request_sha256, attempts, cancel_requested, " \
	"(callback_token_hash IS NOT NULL AND lease_expires_at > ?), " \
	"created_at, updated_at, completed_at, expires_at, result_payload, " \
	"error_payload, progress_payload, last_error, priority, not_before, " \
	"sched_hash"
#define EXEC_NCOLS	24
/* what poll and cancel read first: no payloads (see repo_exec_poll) */
#define POLL_COLS \
	"id, status, initiator_key_hash, poll_token_hash, cancel_requested, " \
	"created_at, updated_at, completed_at, expires_at, initiator_lineage, " \
	"attempts, progress_payload IS NOT NULL, " \
	"(status = 'waiting_callback' AND last_error IS NOT NULL), priority, " \
	"not_before"

/*
 * Whether the listing key (the bound id) may see an entry: its
 * submitting key, by uq_api_key_hash (revoked ones included), is that
 * key or one with a lower id of the lineage (one it was rotated from:
 * rotation adds the new key as a new row). NULL (no key hash, or a key
 * removed) is not 1: read past, as a successor's entry.
 */
#define LIST_SEEN \
	", (SELECT k.id FROM s2r_api_key k WHERE k.key_hash = " \
	"e.initiator_key_hash) <= ?"

/*
 * The terminal transitions of the request paths, each with the outbox
 * mark m: SET_NOTIFY, or NOTIFY_NONE in the _NONE twin (repo_sql.h).
 * FIN_COMPLETE is complete's compare-and-set (STMT_FIN_COMPLETE, and
 * _SEALED's start). Every UPDATE of src/repo that names its execution
 * by id and tests its status is pinned to the primary key: left alone,
 * the range optimizer also estimated the range of that status in
 * ix_exec_expiry and ix_exec_completed, two index dives each, on every
 * execution. So is poll's SELECT by id, tenant and route
 * (STMT_EXEC_POLL_ID), whose other columns begin uq_exec_correlation,
 * ix_exec_claim and ix_exec_tenant_open: MariaDB CPU per run 65.8-74.5
 * us unpinned, 60.0-65.5 pinned (4 pairs of 100,000 runs, binary
 * protocol). tests/layers/check_layers.py checks the pin.
 */
#define EXEC_T	"s2r_async_execution"
#define FIN_COMPLETE(m) \
	"UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET " \
	"status = 'completed', result_payload = ?, payload_inline = ?, " \
	"winner_hash = ?, completed_at = ?, updated_at = ?, " m \
	" WHERE id = ? " \
	"AND status = 'waiting_callback' AND callback_token_hash = ?"
#define FIN_FAIL(m) \
	"UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET " \
	"status = 'failed', error_payload = ?, payload_inline = ?, " \
	"winner_hash = ?, completed_at = ?, updated_at = ?, " m \
	" WHERE id = ? " \
	"AND status = 'waiting_callback' AND callback_token_hash = ?"
#define FIN_CANCELLED(m) \
	"UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET " \
	"status = 'cancelled', winner_hash = ?, completed_at = ?, " \
	"updated_at = ?, " m " WHERE id = ? " \
	"AND status = 'waiting_callback' AND callback_token_hash = ? AND " \
	"cancel_requested = 1"
/*
 * The sealed twins, for a callback that answers from its token's facts
 * (cbtoken.h) without reading the row: each matches only while the row's
 * status body is what those facts and the UPDATE give (no progress, and
 * no cancel request but for cancelled, which needs one); else the
 * caller reads the row and runs the plain statement.
 */
#define NO_PROGRESS	" AND progress_payload IS NULL"
#define FIN_SEALED(m) \
	FIN_COMPLETE(m) " AND cancel_requested = 0" NO_PROGRESS
#define FIN_FAIL_SEALED(m) \
	FIN_FAIL(m) " AND cancel_requested = 0" NO_PROGRESS
#define FIN_CANCELLED_SEALED(m)	FIN_CANCELLED(m) NO_PROGRESS
#define EXEC_CANCEL(m) \
	"UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET " \
	"status = 'cancelled', completed_at = ?, updated_at = ?, " m \
	" WHERE id = ? AND " \
	"status = 'waiting_callback' AND (callback_token_hash IS NULL OR " \
	"lease_expires_at IS NULL OR lease_expires_at <= ?)"

const struct db_stmt_def repo_stmts[STMT__MAX] = {
	[STMT_KEY_BY_HASH] = {
	    "SELECT k.id, k.kind = 'backend', k.tenant_id, k.revoked_at IS "
	    "NOT NULL, k.revoked_at, COALESCE(k.lineage_id, k.id), EXISTS "
	    "(SELECT 1 FROM s2r_api_key m WHERE m.lineage_id = "
	    "COALESCE(k.lineage_id, k.id) AND m.id > k.id) "
	    "FROM s2r_api_key k WHERE k.key_hash = ?", 1, "key_by_hash" },
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
	    "initiator_lineage, priority, not_before, due_at, sched_hash, "
	    "initiator_lineage_id) VALUES (?, ?, ?, ?, 'waiting_callback', ?, "
	    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
	[STMT_EXEC_CANCEL] = { EXEC_CANCEL(SET_NOTIFY(EXEC_T)), 0,
	    "exec_cancel" },
	[STMT_EXEC_CANCEL_NONE] = { EXEC_CANCEL(NOTIFY_NONE), 0,
	    "exec_cancel_none" },
	[STMT_EXEC_REQUEST_CANCEL] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "updated_at = CASE WHEN cancel_requested = 0 THEN ? ELSE "
	    "updated_at END, "
	    "cancel_requested = 1 WHERE id = ? AND status = 'waiting_callback'",
	    0, "exec_request_cancel" },
	/*
	 * The claimable condition of the claim statements (the route first),
	 * prio empty or " AND " a condition on priority; a lineage without a
	 * live key (revoked, also inside the cache TTL) is never handed out;
	 * the key rows are read without locks. CLAIM_ORDER is claim order.
	 */
#define CLAIMABLE(prio) \
	"WHERE environment = ? AND service_key = ? AND operation_key = ? " \
	"AND status = 'waiting_callback' AND cancel_requested = 0" prio \
	" AND due_at <= ? AND " \
	"(lease_expires_at IS NULL OR lease_expires_at <= ?) " \
	"AND expires_at > ? AND (not_before IS NULL OR not_before <= ?) " \
	"AND attempts < ? AND (e.initiator_lineage_id IS NULL OR " \
	LINEAGE_LIVE("e.initiator_lineage_id") ") "
#define CLAIM_ORDER	"ORDER BY priority DESC, due_at, id "
	/*
	 * A claim reads claimable ids in claim order without locks, a page
	 * at a time (repo_claim.c claim_by_ids): one range of ix_exec_claim
	 * per priority, each up to due_at <= now + CLAIM_CLOCK_SKEW_MS
	 * (sql/011), so no entry due later than that is read (one due within
	 * it is claimable when it has no start, not_before NULL: its
	 * submitting host's clock ran ahead), and live leases are tested on
	 * the entries (sql/014). No locking read of a claim reads this
	 * index: InnoDB locks the first entry past a locking range until
	 * COMMIT, and past a route's claimable entries that is the next
	 * route's head, which that route's claims then skipped (SKIP
	 * LOCKED), coming back empty while it waited (tests/db/
	 * test_claim_plan.c, neighbours); and a locking read checks every
	 * entry it passes for another transaction's lock, at the head of a
	 * route's queue where each claim and callback moves entries
	 * (the CHANGELOG has the figures).
	 *
	 * A claim and a heartbeat set due_at to the lease's end (LEASE_DUE):
	 * a held execution's entry leaves the due range, so a claim reads no
	 * entry of the work in flight, however much there is, and a lapsed
	 * lease is due again when it lapses, queued by that time (a retryable
	 * failure sets due_at to the retry's time, a requeue back to
	 * COALESCE(not_before, created_at), the due time it was submitted
	 * or retried with). The lease is still tested on the entries: one
	 * due within CLAIM_CLOCK_SKEW_MS, or held by a claim of 0.2 or an
	 * earlier 0.3 (which left due_at), is skipped while its lease lives.
	 */
	[STMT_CLAIM_IDS] = {
	    "SELECT id FROM s2r_async_execution e FORCE INDEX (ix_exec_claim) "
	    CLAIMABLE(" AND priority IN (9, 8, 7, 6, 5, 4, 3, 2, 1, 0)")
	    CLAIM_ORDER "LIMIT ? OFFSET ?", 1, "claim_ids" },
	/*
	 * And the first LIMIT of those ids (a JSON array, read first: the
	 * nested loop keeps its order, db_claim_plan) locked by primary key:
	 * record locks only, no range, no sort. The claimable condition is
	 * tested again on the rows as committed, and rows another claim
	 * holds are skipped; the ids past the limit are not read.
	 */
	[STMT_CLAIM_LOCK] = {
	    "SELECT e.id, correlation_id, initiator_tenant_id, "
	    "request_payload, attempts, created_at, expires_at, priority, "
	    "not_before FROM JSON_TABLE(?, '$[*]' "
	    "COLUMNS (jid BIGINT UNSIGNED PATH '$')) j STRAIGHT_JOIN "
	    "s2r_async_execution e FORCE INDEX (PRIMARY) ON e.id = j.jid "
	    CLAIMABLE("") "LIMIT ? FOR UPDATE SKIP LOCKED", 0, "claim_lock" },
	[STMT_CLAIM_UPDATE] = {
	    "UPDATE s2r_async_execution SET callback_token_hash = ?, "
	    "lease_expires_at = ?, " LEASE_DUE ", attempts = attempts + 1 "
	    "WHERE id = ?",
	    0, "claim_update" },
	/* the items of one claim, up to CLAIM_LEASE_ROWS (the last repeated) */
	[STMT_CLAIM_LEASES] = {
	    "UPDATE s2r_async_execution SET callback_token_hash = CASE id"
	    LEASE_WHEN " END, lease_expires_at = ?, " LEASE_DUE ", "
	    "attempts = attempts + 1 "
	    "WHERE id IN (" LEASE_ROWS ")", 0, "claim_leases" },
	[STMT_HEARTBEAT] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "lease_expires_at = ?, " LEASE_DUE " WHERE id = ? AND "
	    "status = 'waiting_callback' "
	    "AND callback_token_hash = ?",
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
	/* before migration 5 (no compatible_from column yet) */
	[STMT_MIGRATION_RECORD] = {
	    "INSERT INTO s2r_schema_version (version, applied_at) "
	    "VALUES (?, ?)", 0, "migration_record" },
	/* from migration 5 on: the version and its compatible-from (0: NULL)
	 * in one row, so no reader ever sees one without the other */
	[STMT_MIGRATION_RECORD_COMPAT] = {
	    "INSERT INTO s2r_schema_version (version, applied_at, "
	    "compatible_from) VALUES (?, ?, NULLIF(?, 0))", 0,
	    "migration_record_compat" },
	[STMT_ROUTE_LIST] = {
	    "SELECT CONCAT(environment, '/', service_key, '/', operation_key), "
	    "retention_days, IF(enabled, 'yes', 'no') FROM s2r_route "
	    "ORDER BY environment, service_key, operation_key",
	    1, "route_list" },
	[STMT_ROUTE_SET_ENABLED] = {
	    "UPDATE s2r_route SET enabled = ? WHERE environment = ? AND "
	    "service_key = ? AND operation_key = ?", 1, "route_set_enabled" },
	/* a row per key and route (NULL: none), joined by repo_key_list: a
	 * GROUP_CONCAT was cut at group_concat_max_len (1 KiB on MySQL) */
	[STMT_KEY_LIST] = {
	    "SELECT k.id, COALESCE(k.tenant_id, ''), COALESCE(k.label, ''), "
	    "IF(k.revoked_at IS NULL OR k.revoked_at > UTC_TIMESTAMP(3), 'no', "
	    "'yes'), CONCAT(r.environment, '/', r.service_key, '/', "
	    "r.operation_key) FROM s2r_api_key k "
	    "LEFT JOIN s2r_backend_key_route kr ON kr.key_id = k.id "
	    "LEFT JOIN s2r_route r ON r.id = kr.route_id WHERE k.kind = ? "
	    "ORDER BY k.id, r.id", 1, "key_list" },
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
	/* payload_inline: the payload again when at most REPO_INLINE_MAX
	 * bytes, else NULL (repo_finalize_win; sql/015) */
	[STMT_FIN_COMPLETE] = { FIN_COMPLETE(SET_NOTIFY(EXEC_T)), 0,
	    "fin_complete" },
	[STMT_FIN_COMPLETE_NONE] = { FIN_COMPLETE(NOTIFY_NONE), 0,
	    "fin_complete_none" },
	[STMT_FIN_COMPLETE_SEALED] = { FIN_SEALED(SET_NOTIFY(EXEC_T)), 0,
	    "fin_complete_sealed" },
	[STMT_FIN_COMPLETE_SEALED_NONE] = { FIN_SEALED(NOTIFY_NONE), 0,
	    "fin_complete_sealed_none" },
	[STMT_FIN_FAIL] = { FIN_FAIL(SET_NOTIFY(EXEC_T)), 0, "fin_fail" },
	[STMT_FIN_FAIL_NONE] = { FIN_FAIL(NOTIFY_NONE), 0, "fin_fail_none" },
	[STMT_FIN_CANCELLED] = { FIN_CANCELLED(SET_NOTIFY(EXEC_T)), 0,
	    "fin_cancelled" },
	[STMT_FIN_CANCELLED_NONE] = { FIN_CANCELLED(NOTIFY_NONE), 0,
	    "fin_cancelled_none" },
	[STMT_FIN_FAIL_SEALED] = { FIN_FAIL_SEALED(SET_NOTIFY(EXEC_T)), 0,
	    "fin_fail_sealed" },
	[STMT_FIN_FAIL_SEALED_NONE] = { FIN_FAIL_SEALED(NOTIFY_NONE), 0,
	    "fin_fail_sealed_none" },
	[STMT_FIN_CANCELLED_SEALED] = { FIN_CANCELLED_SEALED(SET_NOTIFY(EXEC_T)),
	    0, "fin_cancelled_sealed" },
	[STMT_FIN_CANCELLED_SEALED_NONE] = { FIN_CANCELLED_SEALED(NOTIFY_NONE),
	    0, "fin_cancelled_sealed_none" },
	/* is any webhook endpoint enabled (enum repo_mark) */
	[STMT_HOOKS_ANY] = {
	    "SELECT 1 FROM s2r_webhook_endpoint WHERE enabled = 1 LIMIT 1", 1,
	    "hooks_any" },
	/* a retryable failure: the claim ends, the retry waits (migration 8) */
	[STMT_FIN_RETRY] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "callback_token_hash = NULL, lease_expires_at = NULL, "
	    "not_before = ?, due_at = not_before, "
	    "last_error = ?, "
	    "updated_at = ? WHERE id = ? AND status = 'waiting_callback' AND "
	    "callback_token_hash = ? AND cancel_requested = 0 AND attempts < ?",
	    0, "fin_retry" },
	[STMT_HEARTBEAT_PROGRESS] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "lease_expires_at = ?, " LEASE_DUE ", progress_payload = ?, "
	    "updated_at = ? "
	    "WHERE id = ? AND "
	    "status = 'waiting_callback' AND callback_token_hash = ?",
	    0, "heartbeat_progress" },
	[STMT_EXEC_WINNER] = {
	    "SELECT callback_token_hash, winner_hash FROM s2r_async_execution "
	    "WHERE id = ?", 1, "exec_winner" },
	/*
	 * One hop of poll (repo_exec_poll): the row of the sealed id (or of
	 * the replaced_by of the previous hop) on the path's tenant and
	 * route; whether it has the path's correlation id, the ids of its
	 * replay and original (sql/011). Their correlation ids are read by
	 * STMT_EXEC_CID only where a link exists: as scalar subqueries here
	 * they ran on every poll (the waiting poll fell from 0.80 to 0.56 of
	 * its probe). An ended execution's payload_inline (sql/015) comes
	 * only where the poll token hash and the key's lineage match in the
	 * statement (the token hash of the sealed row, bound on the hops
	 * after it, else the row's own: repo_exec_poll): the column lies in
	 * the row already read, so an outsider's poll costs what it cost
	 * without it. The caller still compares the hashes itself, in
	 * constant time (view_find). As an
	 * IF of the three, not a CASE that also tests the status and the
	 * correlation id: 20,000 runs on a waiting row, MariaDB CPU per run
	 * 70 us without the column, +9 us with that CASE, +4 with the IF.
	 */
	[STMT_EXEC_POLL_ID] = {
	    "SELECT " POLL_COLS ", correlation_id = ?, replaced_by, replay_of, "
	    "IF(payload_inline IS NOT NULL AND COALESCE(?, poll_token_hash) = "
	    "? AND initiator_lineage = ?, payload_inline, NULL) "
	    "FROM s2r_async_execution e FORCE INDEX (PRIMARY) "
	    "WHERE e.id = ? AND e.initiator_tenant_id = ? AND "
	    "e.environment = ? AND e.service_key = ? AND e.operation_key = ?",
	    1, "exec_poll_id" },
	[STMT_EXEC_CID] = {
	    "SELECT correlation_id FROM s2r_async_execution WHERE id = ?",
	    1, "exec_cid" },
	[STMT_MIGRATE_LOCK] = {
	    "SELECT GET_LOCK(CONCAT('asyncexec_migrate:', DATABASE()), ?)",
	    0, "migrate_lock" },
	[STMT_MIGRATE_UNLOCK] = {
	    "SELECT RELEASE_LOCK(CONCAT('asyncexec_migrate:', DATABASE()))",
	    0, "migrate_unlock" },
	[STMT_METRICS_ROUTES] = {
	    "SELECT environment, service_key, operation_key FROM s2r_route "
	    "ORDER BY id LIMIT " REPO_METRICS_ROUTES_STR, 1, "metrics_routes" },
	/* a route's waiting ones and its oldest (repo_sql.h OPEN_HEAD) */
	[STMT_METRICS_WAITING] = {
	    "SELECT a.n, " OPEN_OLDEST " FROM " OPEN_HEAD(REPO_WAITING_CAP_STR),
	    1, "metrics_waiting" },
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
	/* the same for a key that has a successor in its lineage (a
	 * rotation's old key): one more column, LIST_SEEN, read past when
	 * not 1 (repo_list.c) */
	[STMT_EXEC_LIST_OF] = {
	    "SELECT id, correlation_id, status + 0, created_at, updated_at, "
	    "completed_at, expires_at" LIST_SEEN " FROM s2r_async_execution e "
	    "FORCE INDEX (ix_exec_list) WHERE initiator_lineage = ? AND "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "id < ? ORDER BY id DESC LIMIT ?", 1, "exec_list_of" },
	[STMT_EXEC_LIST_STATUS_OF] = {
	    "SELECT id, correlation_id, status + 0, created_at, updated_at, "
	    "completed_at, expires_at" LIST_SEEN " FROM s2r_async_execution e "
	    "FORCE INDEX (ix_exec_list_status) WHERE initiator_lineage = ? AND "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "status = ? AND id < ? ORDER BY id DESC LIMIT ?", 1,
	    "exec_list_status_of" },
	[STMT_SECRET_GET] = {
	    "SELECT secret FROM s2r_secret WHERE name = ?",
	    1, "secret_get" },
	/* locking read: waits for a write of a lost connection in flight */
	[STMT_EXEC_OUTCOME] = {
	    "SELECT status, callback_token_hash, completed_at, winner_hash "
	    "FROM s2r_async_execution WHERE id = ? LOCK IN SHARE MODE",
	    1, "exec_outcome" },
	/* after a COMMIT that failed (repo_key_stored): a locking read, which
	 * waits for the write if it is still in flight */
	[STMT_KEY_STORED] = {
	    "SELECT id FROM s2r_api_key WHERE key_hash = ? LOCK IN SHARE MODE",
	    1, "key_stored" },
};
