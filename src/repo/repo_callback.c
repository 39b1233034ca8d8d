/*
 * repo_callback.c - the callback writes of contract v2 (migration 8):
 * a heartbeat that reports progress, a retryable failure, and the read
 * that recognises the winning callback repeating itself.
 *
 * Each write is one compare-and-set UPDATE on status and callback token
 * (the statements are in repo.c's table), decided on the rows it
 * matched (CLIENT_FOUND_ROWS).
 */
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_sql.h"

/*
 * Extends the lease of the current claim to lease_until and stores
 * progress (len bytes, the JSON value as sent; updated_at = now) in the
 * same UPDATE.
 * REPO_OK, REPO_NOTFOUND (stale token or final) or REPO_ERR.
 */
enum repo_rc
repo_heartbeat_progress(struct db *db, uint64_t id,
    const unsigned char *tokhash, int64_t lease_until, const char *progress,
    size_t len, int64_t now)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t[2];

	db_bind_time(&p[0], &t[0], lease_until);
	db_bind_blob(&p[1], progress, len);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u64(&p[3], &id);
	db_bind_blob(&p[4], tokhash, SHA256_LEN);
	return repo_cas(db, STMT_HEARTBEAT_PROGRESS, p);
}

/*
 * A retryable failure of the current claim of execution id: while it is
 * waiting under tokhash, has no cancel request and has used fewer than
 * max_attempts attempts, the claim ends (token hash and lease cleared:
 * the token stops working), not_before and last_error (the error object
 * as sent, len bytes) are set and the status stays waiting_callback.
 * REPO_OK, REPO_NOTFOUND (not the current claim's, no attempt left or
 * cancel requested: the caller fails it for good, or answers that it
 * lost) or REPO_ERR. After a lost answer to the UPDATE, or a conflict
 * (1213: it was rolled back), the row is read again: still waiting under
 * this token, the UPDATE is run once more. Otherwise, after a conflict,
 * another write holds the row: REPO_NOTFOUND, as for any callback that
 * lost (fin_cas); after a lost answer the outcome is unknown (this
 * UPDATE clears the token too) and REPO_ERR is returned (a repeat then
 * gets 409: the claim has ended).
 */
enum repo_rc
repo_retry(struct db *db, uint64_t id, const unsigned char *tokhash,
    const char *error, size_t len, unsigned max_attempts,
    int64_t not_before, int64_t now)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[2];
	int		 rc, tries, conflict;

	db_bind_time(&p[0], &t[0], not_before);
	db_bind_blob(&p[1], error, len);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u64(&p[3], &id);
	db_bind_blob(&p[4], tokhash, SHA256_LEN);
	db_bind_u32(&p[5], &max_attempts);
	for (tries = 0; tries < 2; tries++) {
		if ((rc = repo_cas(db, STMT_FIN_RETRY, p)) != REPO_ERR ||
		    (!db_lost(db) && !db_conflict(db)))
			return rc;
		conflict = db_conflict(db);
		switch (repo_fin_outcome(db, id, tokhash, NULL, ST_WAITING,
		    now)) {
		case FIN_WAITING:
			break;
		case FIN_LOST:
			return conflict ? REPO_NOTFOUND : REPO_ERR;
		case FIN_WON:	/* never for ST_WAITING */
		case FIN_ERR:
			return REPO_ERR;
		}
	}
	return REPO_ERR;
}

/* The finalizing statement of each terminal status a callback sets, by
 * enum repo_mark, and its sealed twin (repo_finalize_sealed). */
static const enum stmt fin_stmts[ST__MAX][MARK__MAX] = {
	[ST_COMPLETED] = { [MARK_ASK] = STMT_FIN_COMPLETE,
	    [MARK_NONE] = STMT_FIN_COMPLETE_NONE },
	[ST_FAILED] = { [MARK_ASK] = STMT_FIN_FAIL,
	    [MARK_NONE] = STMT_FIN_FAIL_NONE },
	[ST_CANCELLED] = { [MARK_ASK] = STMT_FIN_CANCELLED,
	    [MARK_NONE] = STMT_FIN_CANCELLED_NONE },
};
static const enum stmt sealed_stmts[ST__MAX][MARK__MAX] = {
	[ST_COMPLETED] = { [MARK_ASK] = STMT_FIN_COMPLETE_SEALED,
	    [MARK_NONE] = STMT_FIN_COMPLETE_SEALED_NONE },
	[ST_FAILED] = { [MARK_ASK] = STMT_FIN_FAIL_SEALED,
	    [MARK_NONE] = STMT_FIN_FAIL_SEALED_NONE },
	[ST_CANCELLED] = { [MARK_ASK] = STMT_FIN_CANCELLED_SEALED,
	    [MARK_NONE] = STMT_FIN_CANCELLED_SEALED_NONE },
};

/* Whether a callback sets status to: complete, fail and cancelled do. */
static int
callback_sets(enum exec_status to)
{
	return to == ST_COMPLETED || to == ST_FAILED || to == ST_CANCELLED;
}

/*
 * Runs finalizing statement sid (one of repo_stmts.c's STMT_FIN_*: to
 * says which) for execution id: REPO_OK for the one winner,
 * REPO_NOTFOUND when it matched no row, REPO_ERR. When the answer to the
 * UPDATE is lost, or it lost a conflict (1213, Galera: another node's
 * write certified first), the row is read again: this callback's outcome
 * there is a win; still waiting under this token, the UPDATE is run once
 * more (a compare-and-set, so at most one of them wins).
 */
static enum repo_rc
fin_cas(struct db *db, enum stmt sid, uint64_t id,
    const unsigned char *tokhash, enum exec_status to, const char *payload,
    size_t len, const unsigned char *winhash, int64_t now)
{
	MYSQL_BIND	 p[7], *q = to == ST_CANCELLED ? p + 2 : p;
	MYSQL_TIME	 t[2];
	int		 rc, tries;

	db_bind_blob(&p[0], payload ? payload : "", payload ? len : 0);
	if (payload != NULL && len <= REPO_INLINE_MAX)
		db_bind_blob(&p[1], payload, len);	/* payload_inline */
	else
		db_bind_str(&p[1], NULL);
	db_bind_blob(&p[2], winhash, SHA256_LEN);
	db_bind_time(&p[3], &t[0], now);
	db_bind_time(&p[4], &t[1], now);
	db_bind_u64(&p[5], &id);
	db_bind_blob(&p[6], tokhash, SHA256_LEN);
	for (tries = 0; tries < 2; tries++) {
		if ((rc = repo_cas(db, sid, q)) != REPO_ERR ||
		    (!db_lost(db) && !db_conflict(db)))
			break;
		switch (repo_fin_outcome(db, id, tokhash, winhash, to, now)) {
		case FIN_WON:
			return REPO_OK;
		case FIN_LOST:
			return REPO_NOTFOUND;
		case FIN_ERR:
			return REPO_ERR;
		case FIN_WAITING:
			break;
		}
		rc = REPO_ERR;	/* still waiting: run again, or give up (503) */
	}
	/* a late win of a lost first attempt makes the retry lose */
	if (rc == REPO_NOTFOUND && tries > 0 &&
	    repo_fin_outcome(db, id, tokhash, winhash, to, now) == FIN_WON)
		rc = REPO_OK;
	return rc;
}

/*
 * repo_finalize_win without a winner hash (an all-zero one, which no
 * callback's hash equals): for callers that never answer a repeat.
 */
enum repo_rc
repo_finalize(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len, int64_t now)
{
	static const unsigned char none[SHA256_LEN];

	return repo_finalize_win(db, id, tokhash, to, payload, len, none,
	    MARK_ASK, now);
}

/*
 * Reads the callback token hash and the winner hash of execution id
 * into tokhash and winhash (SHA256_LEN bytes each; zeroed when NULL).
 * REPO_OK when both are set, REPO_NOTFOUND (no row, or no winner
 * recorded) or REPO_ERR. The caller compares them in constant time.
 */
enum repo_rc
repo_exec_winner(struct db *db, uint64_t id, unsigned char *tokhash,
    unsigned char *winhash)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	memset(tokhash, 0, SHA256_LEN);
	memset(winhash, 0, SHA256_LEN);
	db_bind_u64(&p[0], &id);
	if ((st = db_run(db, STMT_EXEC_WINNER, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_BLOB, tokhash, SHA256_LEN);
	db_rcol(&c, 1, MYSQL_TYPE_BLOB, winhash, SHA256_LEN);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
	if (c.null[0] || c.len[0] != SHA256_LEN || c.null[1] ||
	    c.len[1] != SHA256_LEN) {
		memset(tokhash, 0, SHA256_LEN);
		memset(winhash, 0, SHA256_LEN);
		return REPO_NOTFOUND;
	}
	return REPO_OK;
}

/*
 * Finalizes execution id to status to (completed, failed or cancelled)
 * with payload (the result value or the error object as sent; unused for
 * cancelled, which also needs a pending cancel request) in one
 * compare-and-set UPDATE on status and callback token (a payload of at
 * most REPO_INLINE_MAX bytes goes to payload_inline too, for the poll's
 * one statement); winhash (the SHA-256 of the callback's verb and body)
 * is stored beside the token hash, so that the winner repeating itself
 * can be recognised; mark says how the outbox mark is set. REPO_OK for
 * the one winner, REPO_NOTFOUND for every loser, REPO_ERR (also for any
 * other status to).
 */
enum repo_rc
repo_finalize_win(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len,
    const unsigned char *winhash, enum repo_mark mark, int64_t now)
{
	if (!callback_sets(to))
		return REPO_ERR;
	return fin_cas(db, fin_stmts[to][mark], id, tokhash, to, payload, len,
	    winhash, now);
}

/*
 * repo_finalize_win with the sealed twin of its statement: it matches
 * only while the execution has no progress, and no cancel request (but
 * for cancelled, which needs one), so that its status body is what the
 * callback token's facts give. REPO_OK for the winner, REPO_NOTFOUND
 * when it did not match (a loser, or one of those: the caller reads the
 * row and decides), REPO_ERR (also for any other status to).
 */
enum repo_rc
repo_finalize_sealed(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len,
    const unsigned char *winhash, enum repo_mark mark, int64_t now)
{
	if (!callback_sets(to))
		return REPO_ERR;
	return fin_cas(db, sealed_stmts[to][mark], id, tokhash, to, payload,
	    len, winhash, now);
}
