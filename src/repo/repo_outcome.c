/*
 * repo_outcome.c - what a write whose answer was lost did.
 *
 * When the connection dies after COMMIT (claim) or after the finalizing
 * compare-and-set UPDATE (autocommit) was sent, the write may or may not
 * have happened (client error 2013: outcome unknown), and when a
 * compare-and-set lost a conflict (1213) on a Galera cluster. Nothing is
 * answered from a guess: the row is read again on a fresh connection,
 * with a locking read, which waits for a write that is still in flight;
 * on a Galera node (maybe another one than the write went to, after a
 * failover) with wsrep_sync_wait = 1, so that the read sees every write
 * the cluster committed before it.
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_sql.h"

struct outcome {
	char		 status[24];
	unsigned char	 tokhash[SHA256_LEN];
	unsigned char	 winhash[SHA256_LEN];
	int		 has_token;
	int		 has_winner;
	int64_t		 completed_at;	/* 0 when NULL */
};

/* Reads execution id's outcome columns. REPO_OK, REPO_NOTFOUND, REPO_ERR. */
static enum repo_rc
outcome_read(struct db *db, uint64_t id, struct outcome *o)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	MYSQL_TIME	 t;
	struct db_cols	 c;
	int		 rc;

	memset(o, 0, sizeof(*o));
	db_bind_u64(&p[0], &id);
	if (db_sync_reads(db, 1) == -1 ||
	    (st = db_run(db, STMT_EXEC_OUTCOME, p)) == NULL) {
		(void)db_sync_reads(db, 0);
		return REPO_ERR;
	}
	db_rcol(&c, 0, MYSQL_TYPE_STRING, o->status, sizeof(o->status));
	db_rcol(&c, 1, MYSQL_TYPE_BLOB, o->tokhash, SHA256_LEN);
	db_rcol(&c, 2, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	db_rcol(&c, 3, MYSQL_TYPE_BLOB, o->winhash, SHA256_LEN);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (db_sync_reads(db, 0) == -1)
		rc = DB_ROW_ERR;
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
	db_rstr(&c, 0, o->status, sizeof(o->status));
	o->has_token = !c.null[1] && c.len[1] == SHA256_LEN;
	o->completed_at = c.null[2] ? 0 : db_time_ms(&t);
	o->has_winner = !c.null[3] && c.len[3] == SHA256_LEN;
	return REPO_OK;
}

/*
 * After a lost answer to a claim's COMMIT: keeps those of it[0..*n)
 * whose stored callback token hash is hashes[i] (the claim committed;
 * the others are freed). REPO_OK when at least one (or none was
 * claimed) is left, REPO_ERR when the claim did not commit or a read
 * failed (then nothing is handed out and the caller frees it).
 * On every return it[0..*n) owns each request left exactly once: a
 * failed read keeps the rows not read yet too (behind the kept ones),
 * and no slot below *n holds a pointer freed here or moved down
 * (fault_claim_outcome: the caller's claim_free freed one twice).
 */
enum repo_rc
repo_claim_outcome(struct db *db, struct claim_item *it,
    const unsigned char (*hashes)[SHA256_LEN], size_t *n)
{
	struct outcome	 o;
	size_t		 i, kept = 0, had = *n;
	int		 err = 0;

	for (i = 0; i < had; i++) {
		if (!err && outcome_read(db, it[i].id, &o) == REPO_ERR)
			err = 1;
		if (err || (o.has_token && crypto_equal(o.tokhash, hashes[i],
		    SHA256_LEN))) {
			if (kept != i) {
				it[kept] = it[i];
				it[i].request = NULL;
			}
			kept++;
		} else {
			free(it[i].request);
			it[i].request = NULL;
		}
	}
	*n = kept;
	if (err)
		return REPO_ERR;
	return kept > 0 || had == 0 ? REPO_OK : REPO_ERR;
}

/*
 * After a lost answer to the finalizing UPDATE of execution id to
 * status to under token hash tokhash at now, or after it lost a
 * conflict: FIN_WON when the row holds this callback's outcome (that
 * status, that token, completed at now, and winhash, the hash of its
 * verb and body, as the winner hash: another callback with the same
 * token may have won in the same millisecond), FIN_WAITING when it is
 * still waiting under that token (the UPDATE did not run; it may be run
 * again), FIN_LOST when another outcome or claim holds it, FIN_ERR when
 * the read failed. winhash is not read for to ST_WAITING (a retryable
 * failure never ends the execution: it may be NULL).
 */
enum fin_outcome
repo_fin_outcome(struct db *db, uint64_t id, const unsigned char *tokhash,
    const unsigned char *winhash, enum exec_status to, int64_t now)
{
	struct outcome	 o;
	int		 rc, ours;

	if ((rc = outcome_read(db, id, &o)) != REPO_OK)
		return rc == REPO_NOTFOUND ? FIN_LOST : FIN_ERR;
	ours = o.has_token && crypto_equal(o.tokhash, tokhash, SHA256_LEN);
	if (!ours)
		return FIN_LOST;
	if (strcmp(o.status, exec_status_name(ST_WAITING)) == 0)
		return FIN_WAITING;
	if (to == ST_WAITING || strcmp(o.status, exec_status_name(to)) != 0 ||
	    o.completed_at != now || !o.has_winner)
		return FIN_LOST;
	return crypto_equal(o.winhash, winhash, SHA256_LEN) ? FIN_WON :
	    FIN_LOST;
}

/*
 * After the COMMIT of a key's write (key create, key rotate) failed:
 * whether the key of hash is stored, read on db's connection (a fresh
 * one when the answer was lost, and on a cluster after every write the
 * cluster committed). REPO_OK (the write took effect), REPO_NOTFOUND
 * (nothing changed) or REPO_ERR (unknown: the read failed).
 */
enum repo_rc
repo_key_stored(struct db *db, const unsigned char *hash)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id = 0;
	int		 rc;

	db_bind_blob(&p[0], hash, SHA256_LEN);
	if (db_sync_reads(db, 1) == -1 ||
	    (st = db_run(db, STMT_KEY_STORED, p)) == NULL) {
		(void)db_sync_reads(db, 0);
		return REPO_ERR;
	}
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (db_sync_reads(db, 0) == -1)
		rc = DB_ROW_ERR;
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}
