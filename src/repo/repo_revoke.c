/*
 * repo_revoke.c - asyncexec-admin key revoke of a consumer key: the key
 * is revoked and, when no key of its lineage is live after that, the
 * lineage's unclaimed waiting executions (no callback token, or a lapsed
 * lease) fail with the error code initiator_revoked, in one transaction.
 * Claimed ones keep running: their callbacks still win. Those that
 * become unclaimed later (a lapsed lease, a retryable failure) and those
 * submitted inside the cache TTL after the revocation are failed by
 * asyncexec-expire's revoked step (repo_expire.c); claim never hands any
 * of them out (repo_stmts.c CLAIMABLE).
 *
 * The waiting executions are read without locks through ix_exec_lineage
 * (one range: the lineage, waiting, in id order) and failed by primary
 * key with a compare-and-set that repeats the rule, batch by batch, as
 * the expiry does (repo_expire.c explains why the rows are locked by
 * primary key only: callbacks lock the row first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_revoke.h"
#include "repo_sql.h"

#define REVOKE_BATCH	1000
#define REVOKE_TRIES	3	/* a transaction undone by a deadlock */

enum rstmt {
	RSTMT_KEY_LOCK,
	RSTMT_KEY_REVOKE,
	RSTMT_LIVE,
	RSTMT_WAITING,
	RSTMT_FAIL,
	RSTMT__MAX
};

static const struct db_stmt_def rstmts[RSTMT__MAX] = {
	/* the consumer key and its lineage, locked until the commit */
	[RSTMT_KEY_LOCK] = {
	    "SELECT COALESCE(lineage_id, id) FROM s2r_api_key WHERE id = ? "
	    "AND kind = 'consumer' FOR UPDATE", 0, "revoke_key_lock" },
	/* revoked now; a key in a rotation's grace is revoked now as well */
	[RSTMT_KEY_REVOKE] = {
	    "UPDATE s2r_api_key SET revoked_at = LEAST(COALESCE(revoked_at, "
	    "?), ?) WHERE id = ?", 0, "revoke_key" },
	/* whether a key of the lineage is still live (RSTMT_FAIL asks again
	 * of each row: a revoke of the lineage's other live key racing this
	 * one leaves the work to asyncexec-expire's revoked step) */
	[RSTMT_LIVE] = {
	    "SELECT " LINEAGE_LIVE("?"), 0, "revoke_live" },
	[RSTMT_WAITING] = {
	    "SELECT id FROM s2r_async_execution FORCE INDEX (ix_exec_lineage) "
	    "WHERE initiator_lineage_id = ? AND status = 'waiting_callback' "
	    "AND id > ? AND cancel_requested = 0 AND (callback_token_hash IS "
	    "NULL OR lease_expires_at <= ?) ORDER BY id LIMIT ?", 0,
	    "revoke_waiting" },
	[RSTMT_FAIL] = {
	    "UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH "
	    "'$')) j STRAIGHT_JOIN s2r_async_execution e FORCE INDEX (PRIMARY) "
	    "ON e.id = j.id SET e.status = 'failed', e.error_payload = "
	    REVOKED_ERROR ", e.completed_at = ?, e.updated_at = ?, "
	    SET_NOTIFY("e") " WHERE e.status = 'waiting_callback' AND "
	    "e.cancel_requested = 0 AND e.initiator_lineage_id = ? AND "
	    "(e.callback_token_hash IS NULL OR "
	    "e.lease_expires_at <= ?) AND NOT "
	    LINEAGE_LIVE("e.initiator_lineage_id"), 0, "revoke_fail" },
};

struct rvdb {
	struct db	*db;
};

/* Opens the handle (connects on first use); NULL out of memory. */
struct rvdb *
repo_revoke_open(const struct config *cfg)
{
	struct rvdb	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->db = db_new(cfg, rstmts, RSTMT__MAX, 0, 0)) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

void
repo_revoke_close(struct rvdb *r)
{
	if (r == NULL)
		return;
	db_free(r->db);
	free(r);
}

/* Runs a one-row, one-integer query into *v. REPO_OK/NOTFOUND/RETRY/ERR. */
static enum repo_rc
one_u64(struct db *db, enum rstmt id, MYSQL_BIND *p, uint64_t *v)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	*v = 0;
	if ((st = db_run(db, id, p)) == NULL)
		return repo_failed(db);
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, v, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}

/*
 * Reads up to REVOKE_BATCH waiting, unclaimed executions of lineage
 * after id *after into ids as a JSON array; *n gets how many, *after the
 * last. REPO_OK, REPO_RETRY or REPO_ERR.
 */
static enum repo_rc
waiting_batch(struct db *db, uint64_t lineage, int64_t now, uint64_t *after,
    char *ids, size_t sz, unsigned *n)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id = 0;
	unsigned	 lim = REVOKE_BATCH;
	size_t		 len = 1;
	int		 rc;

	*n = 0;
	db_bind_u64(&p[0], &lineage);
	db_bind_u64(&p[1], after);
	db_bind_time(&p[2], &t, now);
	db_bind_u32(&p[3], &lim);
	if ((st = db_run(db, RSTMT_WAITING, p)) == NULL)
		return repo_failed(db);
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	ids[0] = '[';
	while ((rc = db_fetch_row(st, &c)) == DB_ROW && len + 22 < sz) {
		len += (size_t)snprintf(ids + len, sz - len, "%s%llu",
		    *n ? "," : "", (unsigned long long)id);
		*after = id;
		(*n)++;
	}
	mysql_stmt_free_result(st);
	snprintf(ids + len, sz - len, "]");
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/* Fails the batch ids (a JSON array) of lineage; *changed gets how many. */
static enum repo_rc
fail_batch(struct db *db, const char *ids, uint64_t lineage, int64_t now,
    unsigned long *changed)
{
	MYSQL_BIND	 p[7];
	MYSQL_TIME	 t[5];

	db_bind_str(&p[0], ids);
	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u64(&p[3], &lineage);
	db_bind_time(&p[4], &t[2], now);
	db_bind_time(&p[5], &t[3], now);
	db_bind_time(&p[6], &t[4], now);
	if (db_run(db, RSTMT_FAIL, p) == NULL)
		return repo_failed(db);
	*changed += (unsigned long)db_affected(db, RSTMT_FAIL);
	return REPO_OK;
}

/* The statements of repo_consumer_revoke inside the open transaction. */
static enum repo_rc
revoke_tx(struct db *db, uint64_t id, int64_t now, struct revoke_outcome *out)
{
	static char	 ids[2 + REVOKE_BATCH * 21 + 2];
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t, t2;
	uint64_t	 live = 0, after = 0;
	unsigned	 n;
	int		 rc;

	db_bind_u64(&p[0], &id);
	if ((rc = one_u64(db, RSTMT_KEY_LOCK, p, &out->lineage)) != REPO_OK)
		return rc;
	db_bind_time(&p[0], &t, now);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &id);
	if (db_run(db, RSTMT_KEY_REVOKE, p) == NULL)
		return repo_failed(db);
	db_bind_u64(&p[0], &out->lineage);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &out->lineage);
	db_bind_time(&p[3], &t2, now);
	if ((rc = one_u64(db, RSTMT_LIVE, p, &live)) != REPO_OK)
		return rc == REPO_NOTFOUND ? REPO_ERR : rc;
	out->live = (unsigned long)live;
	if (live > 0)
		return REPO_OK;		/* the lineage lives on: nothing fails */
	do {
		if ((rc = waiting_batch(db, out->lineage, now, &after, ids,
		    sizeof(ids), &n)) != REPO_OK)
			return rc;
		if (n > 0 && (rc = fail_batch(db, ids, out->lineage, now,
		    &out->failed)) != REPO_OK)
			return rc;
	} while (n == REVOKE_BATCH);
	return REPO_OK;
}

/*
 * Revokes consumer key id at now (idempotent; a grace ends now) and,
 * when no key of its lineage is live after that, fails the lineage's
 * unclaimed waiting executions with initiator_revoked (REVOKED_ERROR),
 * all in one transaction (run again when a deadlock undid it). out gets
 * the lineage, its live keys and how many failed. REPO_OK, REPO_NOTFOUND
 * (no consumer key id) or REPO_ERR.
 */
enum repo_rc
repo_consumer_revoke(struct rvdb *r, uint64_t id, int64_t now,
    struct revoke_outcome *out)
{
	int	 k, rc = REPO_ERR;

	for (k = 0; k < REVOKE_TRIES; k++) {
		memset(out, 0, sizeof(*out));
		if (db_begin(r->db) == -1)
			return REPO_ERR;
		rc = revoke_tx(r->db, id, now, out);
		if (rc == REPO_OK && db_commit(r->db) == 0)
			return REPO_OK;
		db_rollback(r->db);
		if (rc != REPO_RETRY)
			return rc == REPO_OK ? REPO_ERR : rc;
	}
	return REPO_ERR;
}
