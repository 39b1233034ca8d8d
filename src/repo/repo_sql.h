/*
 * repo_sql.h - statement ids, private to the repository (repo*.c).
 *
 * repo layer: the repo folder only (and tests/db/test_claim_plan.c, which
 * EXPLAINs the claim statements of repo_stmts).
 */
#ifndef ASYNCEXEC_REPO_SQL_H
#define ASYNCEXEC_REPO_SQL_H

#include "db.h"
#include "repo.h"

/*
 * Executions that one UPDATE of a claim leases (STMT_CLAIM_LEASES: as
 * many WHEN pairs and IN items, LEASE_ROWS below; db_claim_plan counts
 * its placeholders against this).
 */
#define CLAIM_LEASE_ROWS	10
#define LEASE_WHEN2	" WHEN ? THEN ? WHEN ? THEN ?"
#define LEASE_WHEN	LEASE_WHEN2 LEASE_WHEN2 LEASE_WHEN2 LEASE_WHEN2 \
			LEASE_WHEN2
#define LEASE_ROWS	"?, ?, ?, ?, ?, ?, ?, ?, ?, ?"

/*
 * The claim order of a held execution (repo_stmts.c, the claim): due
 * when its lease ends, in the SET after lease_expires_at; and, once the
 * claim is dropped (an operator's requeue), due again when it was
 * submitted or its retry set (not_before: what the submit or the
 * retry gave due_at).
 */
#define LEASE_DUE	"due_at = lease_expires_at"
#define DUE_RESTORED	"due_at = COALESCE(not_before, created_at)"

/* Route ?/?/?'s waiting executions (the equality prefix of ix_exec_claim). */
#define ROUTE_WAITING \
	"WHERE environment = ? AND service_key = ? AND operation_key = ? AND " \
	"status = 'waiting_callback' "
/*
 * The first cap entries of route ?/?/?'s waiting range of ix_exec_claim,
 * read from the index alone (about 1 us an entry) as derived table a:
 * n of them, cancel of them cancel-requested, and oldest, the lowest id
 * among them that waits for a claim at the time of the first two ?:
 * not cancel-requested, due (due_at: not a scheduled start or a retry's
 * backoff still ahead) and no live lease (a claim's, a heartbeat's);
 * OPEN_OLDEST: its created_at, by primary key. The dashboard's Routes
 * page (repo_dash.c) and GET /metrics (repo_metrics.c) both read a
 * route's oldest waiting execution so: one definition (ORDER BY id was
 * a filesort of all the route's waiting executions after sql/011, or a
 * walk of the primary key; and a submit scheduled a day ahead made the
 * age climb for a day).
 */
#define OPEN_HEAD(cap) \
	"(SELECT COUNT(*) AS n, COALESCE(SUM(cancel_requested), 0) AS " \
	"cancel, MIN(IF(cancel_requested = 0 AND due_at <= ? AND " \
	"(lease_expires_at IS NULL OR lease_expires_at <= ?), id, NULL)) " \
	"AS oldest FROM (SELECT cancel_requested, due_at, lease_expires_at, " \
	"id FROM s2r_async_execution FORCE INDEX (ix_exec_claim) " \
	ROUTE_WAITING "LIMIT " cap ") x) a "
#define OPEN_OLDEST \
	"(SELECT created_at FROM s2r_async_execution WHERE id = a.oldest)"

/*
 * What asyncexec-expire's purge (repo_expire.c) leaves although it is
 * past its time: a row whose replay (replaced_by, sql/011) still exists,
 * since poll and cancel of the replay start at the original's id (sealed
 * in the poll token) and follow replaced_by, so a chain goes from its
 * tail; and a row with the webhook mark (notify, sql/010) that
 * asyncexec-notify has not yet turned into deliveries, while its tenant
 * has an endpoint (a disabled one holds its events too; with none,
 * nothing would ever deliver it). e is the execution, r its replacement,
 * a LEFT JOIN by primary key: a subquery on the table a DELETE deletes
 * from is refused (1093). w by its index, in a scalar subquery (LIMIT 1
 * ... IS NULL, as LINEAGE_LIVE): MariaDB 11.8 turned NOT EXISTS into
 * IN (exists_to_in) and, with the statistics other writers had just
 * left, materialized it from a scan of the whole table, FORCE INDEX or
 * not (db_expire_purge: MATERIALIZED w, type ALL).
 */
#define PURGE_REPLACEMENT \
	"LEFT JOIN s2r_async_execution r FORCE INDEX (PRIMARY) ON r.id = " \
	"e.replaced_by "
#define PURGE_FREE \
	"r.id IS NULL AND (e.notify = 0 OR (SELECT 1 FROM " \
	"s2r_webhook_endpoint w FORCE INDEX (ix_endpoint_tenant) WHERE " \
	"w.tenant_id = e.initiator_tenant_id LIMIT 1) IS NULL)"
/*
 * The rollup (repo_rollup.c) has counted e: it ended no later than the
 * mark (bound by the caller, read before the purge), so that the purge
 * never deletes an execution before the rollup has seen it. A row
 * without completed_at is never counted and never waits for it.
 */
#define PURGE_COUNTED \
	"(e.completed_at IS NULL OR e.completed_at <= ?)"

/*
 * The outbox mark (sql/010_webhooks.sql): every statement that ends an
 * execution sets it, in that statement, to whether the tenant has an
 * enabled webhook endpoint; t names the execution table as the statement
 * does. tests/layers/check_layers.py finds a terminal status set without it.
 */
#define SET_NOTIFY(t) \
	"notify = EXISTS (SELECT 1 FROM s2r_webhook_endpoint w WHERE " \
	"w.tenant_id = " t ".initiator_tenant_id AND w.enabled = 1)"
/*
 * The mark of a request that knows no endpoint is enabled anywhere
 * (enum repo_mark MARK_NONE): the same value without the subquery, which
 * costs the UPDATE even where it is not evaluated (scripts/bench-schema.sh
 * BENCH_SCHEMA_MARK). Each statement that sets it has a twin with
 * SET_NOTIFY, run otherwise.
 */
#define NOTIFY_NONE	"notify = 0"

/*
 * Revoked initiators (sql/012): the error of a waiting execution failed
 * because no key of its submitter's lineage is live any more (key
 * revoke, or the end of a rotation's grace), and the test whether
 * lineage l (an SQL expression) has a live key at times ? and ? (the
 * same): its first key (id = l, whatever its lineage_id: NULL, or l
 * after migration 7) by primary key, and only when that one is revoked
 * a rotated one (lineage_id = l) on ix_key_lineage. One probe each,
 * never a scan of the keys (tests/db/test_claim_plan.c): the claim asks
 * it of every entry it examines. Scalar subqueries, not EXISTS: the
 * server may turn an EXISTS into an IN and answer it by materializing
 * every live key's lineage, a scan of the keys per statement (seen as
 * MATERIALIZED ... ALL in the claim's plan).
 */
#define REVOKED_ERROR \
	"'{\"code\":\"initiator_revoked\",\"message\":\"not run: the key " \
	"that submitted it was revoked before a backend claimed it and no " \
	"key of its lineage is live; submit the work again, under a new " \
	"correlation id, with a live key\"}'"
#define LINEAGE_LIVE(l) \
	"((SELECT 1 FROM s2r_api_key lk0 FORCE INDEX (PRIMARY) WHERE " \
	"lk0.id = " l " AND (lk0.revoked_at IS NULL OR lk0.revoked_at > ?) " \
	"LIMIT 1) IS NOT NULL OR (SELECT 1 FROM s2r_api_key lk FORCE INDEX " \
	"(ix_key_lineage) WHERE lk.lineage_id = " l " AND (lk.revoked_at IS " \
	"NULL OR lk.revoked_at > ?) LIMIT 1) IS NOT NULL)"

enum stmt {
	STMT_KEY_BY_HASH,
	STMT_BACKEND_SERVES,
	STMT_ROUTE_GET,
	STMT_EXEC_INSERT,
	STMT_EXEC_BY_KEY,
	STMT_EXEC_BY_ID,
	STMT_EXEC_ROTATE_POLL,
	STMT_EXEC_CANCEL,
	STMT_EXEC_REQUEST_CANCEL,
	STMT_CLAIM_IDS,
	STMT_CLAIM_LOCK,
	STMT_CLAIM_UPDATE,
	STMT_CLAIM_LEASES,
	STMT_HEARTBEAT,
	STMT_SCHEMA_VERSION,
	STMT_ROUTE_ADD,
	STMT_KEY_ADD,
	STMT_BACKEND_ROUTE_ADD,
	STMT_MIGRATION_RECORD,
	STMT_ROUTE_LIST,
	STMT_ROUTE_SET_ENABLED,
	STMT_KEY_LIST,
	STMT_KEY_REVOKE,
	STMT_STATS,
	STMT_TENANT_QUOTA,
	STMT_TENANT_OPEN,
	STMT_TENANT_SET,
	STMT_TENANT_LIST,
	STMT_EXEC_PAYLOAD,
	STMT_FIN_COMPLETE,
	STMT_FIN_COMPLETE_SEALED,
	STMT_FIN_FAIL,
	STMT_FIN_FAIL_SEALED,
	STMT_FIN_CANCELLED,
	STMT_FIN_CANCELLED_SEALED,
	STMT_FIN_COMPLETE_NONE,		/* the six above with NOTIFY_NONE */
	STMT_FIN_COMPLETE_SEALED_NONE,
	STMT_FIN_FAIL_NONE,
	STMT_FIN_FAIL_SEALED_NONE,
	STMT_FIN_CANCELLED_NONE,
	STMT_FIN_CANCELLED_SEALED_NONE,
	STMT_EXEC_CANCEL_NONE,		/* STMT_EXEC_CANCEL's */
	STMT_HOOKS_ANY,
	STMT_FIN_RETRY,
	STMT_HEARTBEAT_PROGRESS,
	STMT_EXEC_WINNER,
	STMT_EXEC_POLL_ID,
	STMT_EXEC_CID,
	STMT_SECRET_GET,
	STMT_MIGRATE_LOCK,
	STMT_MIGRATE_UNLOCK,
	STMT_EXEC_OUTCOME,
	STMT_KEY_STORED,
	STMT_METRICS_ROUTES,
	STMT_METRICS_WAITING,
	STMT_POLL_KEYS,
	STMT_POLL_KEY_INSERT,
	STMT_POLL_KEY_RETIRE,
	STMT_SCHEMA_COMPAT,
	STMT_SCHEMA_SET_COMPAT,
	STMT_METRICS_EXPIRY,
	STMT_EXEC_LIST,
	STMT_EXEC_LIST_STATUS,
	STMT_EXEC_LIST_OF,
	STMT_EXEC_LIST_STATUS_OF,
	STMT_MIGRATION_APPLIED,
	STMT_MIGRATION_RECORD_COMPAT,
	STMT__MAX
};

/* repo_stmts.c: the statements of the service handle */
extern const struct db_stmt_def repo_stmts[STMT__MAX];

struct claim_item;

/* repo_outcome.c: what a write whose answer was lost did */
enum repo_rc	repo_claim_outcome(struct db *, struct claim_item *,
	    const unsigned char (*hashes)[SHA256_LEN], size_t *n);

/* What a finalization whose answer was lost did (repo_fin_outcome). */
enum fin_outcome {
	FIN_WON,	/* the row holds this callback's outcome */
	FIN_WAITING,	/* still waiting under its token: run it again */
	FIN_LOST,	/* another outcome or claim holds the row */
	FIN_ERR		/* the read failed (logged) */
};

enum fin_outcome	repo_fin_outcome(struct db *, uint64_t id,
			    const unsigned char *tokhash,
			    const unsigned char *winhash, enum exec_status to,
			    int64_t now);

/*
 * The operator's view of an execution (struct exec_admin, repo_admin.h):
 * what asyncexec-admin execution show and the dashboard's execution page
 * read, no payload (their lengths; the error's code member), no token,
 * no hash; "SELECT"
 * REPO_SHOW_COLS "WHERE ...", fetched by repo_show_fetch (repo_admin.c).
 */
#define REPO_SHOW_COLS \
	"id, correlation_id, environment, service_key, operation_key, " \
	"status, initiator_tenant_id, attempts, cancel_requested, " \
	"callback_token_hash IS NOT NULL, created_at, updated_at, " \
	"completed_at, expires_at, lease_expires_at, " \
	"LENGTH(request_payload), LENGTH(result_payload), " \
	"LENGTH(error_payload), LEFT(JSON_VALUE(error_payload, '$.code'), " \
	"64) FROM s2r_async_execution "
struct exec_admin;
enum repo_rc	repo_show_fetch(MYSQL_STMT *, struct exec_admin *);

/* A statement without results, decided on the rows it matched. */
enum repo_rc	repo_cas(struct db *, enum stmt, MYSQL_BIND *);
/* A failed statement or COMMIT: REPO_RETRY (run the transaction again)
 * or REPO_ERR. */
enum repo_rc	repo_failed(struct db *);

/*
 * A disabled endpoint's pending deliveries are held out of the due range
 * of ix_delivery_due (due at HOLD_DUE, a sentinel no delivery is due at
 * otherwise), so a lease pass does not read through them; enabling the
 * endpoint makes them due now. Both by endpoint_id (ix_delivery_endpoint)
 * in statements of at most HOLD_ROWS rows, each its own transaction: a
 * short row lock and a bounded Galera writeset (the rows carry their
 * bodies), repeated while a statement changed HOLD_ROWS. attempts and
 * updated_at stay: no attempt was made.
 */
#define HOLD_DUE	"'9999-12-31 23:59:59'"
#define HOLD_ROWS	5000
#define HOLD_ROWS_STR	"5000"
#define HOLD_SET \
	"UPDATE s2r_webhook_delivery SET due_at = " HOLD_DUE " WHERE " \
	"endpoint_id = ? AND state = 'pending' AND due_at < " HOLD_DUE \
	" LIMIT " HOLD_ROWS_STR
#define UNHOLD_SET \
	"UPDATE s2r_webhook_delivery SET due_at = ? WHERE endpoint_id = ? " \
	"AND state = 'pending' AND due_at = " HOLD_DUE " LIMIT " HOLD_ROWS_STR

#endif
