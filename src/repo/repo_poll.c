/*
 * repo_poll.c - the poll read (STMT_EXEC_POLL_ID, repo_stmts.c): what
 * poll and cancel compare and show, by the sealed id of the poll token,
 * following the replay links (sql/011) to the path's correlation id.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_sql.h"

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
	db_rcol(c, 13, MYSQL_TYPE_LONG, &r->priority, 0);
	db_rcol(c, 14, MYSQL_TYPE_DATETIME, &t[4], sizeof(t[4]));
}

/* Copies the fetched poll columns into r; 0, or -1 for an unknown status. */
static int
poll_finish(struct db_cols *c, struct exec_row *r, char *status, size_t ssz,
    MYSQL_TIME *t)
{
	db_rstr(c, 1, status, ssz);
	r->status = exec_status_parse(status);
	r->key_hash_null = c->null[2] || c->len[2] != SHA256_LEN;
	r->poll_hash_null = c->null[3] || c->len[3] != SHA256_LEN;
	r->lineage_null = c->null[9] || c->len[9] != SHA256_LEN;
	r->created_at = db_time_ms(&t[0]);
	r->updated_at = db_time_ms(&t[1]);
	r->completed_at = c->null[7] ? 0 : db_time_ms(&t[2]);
	r->expires_at = db_time_ms(&t[3]);
	r->not_before = c->null[14] ? 0 : db_time_ms(&t[4]);
	return r->status == ST__MAX ? -1 : 0;
}

/*
 * The correlation id of execution id into out (size n; "" when it is
 * gone). DB_ROW (also when gone) or DB_ROW_ERR.
 */
static int
exec_cid(struct db *db, uint64_t id, char *out, size_t n)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	out[0] = '\0';
	db_bind_u64(&p[0], &id);
	if ((st = db_run(db, STMT_EXEC_CID, p)) == NULL)
		return DB_ROW_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, out, n);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc == DB_ROW)
		db_rstr(&c, 0, out, n);
	else
		out[0] = '\0';
	return rc == DB_ROW_ERR ? DB_ROW_ERR : DB_ROW;
}

/*
 * The path of a poll: what each hop of it binds (poll_hop); sealed: the
 * poll-token hash of the sealed id's row once the first hop read it.
 */
struct poll_path {
	const char		*tenant, *env, *svc, *op, *cid;
	const struct poll_proof	*proof;
	const unsigned char	*sealed;
};

/*
 * Takes the fetched payload_inline (column col) of an ended execution
 * into r->result or r->error (r->payloads) when the statement gave it
 * and r needs no other payload (no progress). DB_ROW, or DB_ROW_ERR
 * (out of memory or the connection failed).
 */
static int
poll_inline(MYSQL_STMT *st, struct db_cols *c, unsigned col,
    struct exec_row *r)
{
	char	**out = r->status == ST_COMPLETED ? &r->result : &r->error;
	size_t	 *len = r->status == ST_COMPLETED ? &r->result_len :
		    &r->error_len;

	if (c->null[col] || r->has_progress ||
	    (r->status != ST_COMPLETED && r->status != ST_FAILED))
		return DB_ROW;
	if (db_fetch_blob(st, &c->b[col], col, c->len[col], out, len) == -1)
		return DB_ROW_ERR;
	r->payloads = 1;
	return DB_ROW;
}

/*
 * One hop of the poll read (STMT_EXEC_POLL_ID): the row of id on the
 * path's tenant and route into r, with its ended payload when the
 * statement matched the proof's hashes and had its copy (r->payloads:
 * only on the hop that matches, the others are dropped);
 * *match: it has the path's correlation id; *next: its replaced_by
 * (0: none); *orig: its replay_of (0: none). DB_ROW, DB_ROW_NONE or
 * DB_ROW_ERR.
 */
static int
poll_hop(struct db *db, uint64_t id, const struct poll_path *w,
    struct exec_row *r, int *match, uint64_t *next, uint64_t *orig)
{
	MYSQL_BIND	 p[9];
	MYSQL_TIME	 t[5];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	char		 status[24];
	int		 rc;

	*match = 0;
	*next = *orig = 0;
	memset(r, 0, sizeof(*r));
	db_bind_str(&p[0], w->cid);
	if (w->sealed != NULL)
		db_bind_blob(&p[1], w->sealed, SHA256_LEN);
	else
		db_bind_str(&p[1], NULL);	/* the row's own */
	db_bind_blob(&p[2], w->proof->token, SHA256_LEN);
	db_bind_blob(&p[3], w->proof->lineage, SHA256_LEN);
	db_bind_u64(&p[4], &id);
	db_bind_str(&p[5], w->tenant);
	db_bind_str(&p[6], w->env);
	db_bind_str(&p[7], w->svc);
	db_bind_str(&p[8], w->op);
	if ((st = db_run(db, STMT_EXEC_POLL_ID, p)) == NULL)
		return DB_ROW_ERR;
	poll_cols(&c, r, status, sizeof(status), t);
	db_rcol(&c, 15, MYSQL_TYPE_LONG, match, 0);
	db_rcol(&c, 16, MYSQL_TYPE_LONGLONG, next, 0);
	db_rcol(&c, 17, MYSQL_TYPE_LONGLONG, orig, 0);
	db_rcol(&c, 18, MYSQL_TYPE_BLOB, NULL, 0);
	rc = db_fetch_row(st, &c);
	if (rc == DB_ROW && poll_finish(&c, r, status, sizeof(status), t) == -1)
		rc = DB_ROW_ERR;
	if (rc == DB_ROW)
		rc = poll_inline(st, &c, 18, r);
	if (rc == DB_ROW) {
		*match = !c.null[15] && *match;
		if (c.null[16])
			*next = 0;
		if (c.null[17])
			*orig = 0;
	}
	mysql_stmt_free_result(st);
	return rc;
}

/*
 * The poll read, by primary key: what poll and cancel compare and show
 * (id, status, the initiator's key and token hashes, cancel flag,
 * timestamps, the replay links), never the payload columns, so that a
 * row that exists costs what a missing one costs until the caller's
 * hashes have matched (then repo_exec_payload reads them); only an
 * ended execution's copy of a small payload (payload_inline, in the row
 * already read) comes with it, where proof's token and lineage hashes
 * match in the statement (r->payloads; the caller compares them again,
 * in constant time; a row without a lineage, from before sql/007, never
 * gives it). The row of the sealed id must have the path's tenant and
 * route; when it has another correlation id, its replaced_by is
 * followed (replay, sql/011), at most REPLAY_HOPS times, until the
 * path's correlation id. The token is the sealed row's: r's poll hash
 * is that row's current one (an identical resubmit rotates it there,
 * and the earlier token then opens none of its replays either), not
 * the copy a replay took when it was made. What is read depends on the
 * sealed id alone (the caller's own executions), never on whether the
 * path's correlation id exists. r's names are copied from the
 * arguments. REPO_OK (free r with exec_row_free), REPO_NOTFOUND or
 * REPO_ERR (nothing to free either way).
 */
enum repo_rc
repo_exec_poll(struct db *db, uint64_t id, const char *tenant,
    const char *env, const char *svc, const char *op, const char *cid,
    const struct poll_proof *proof, struct exec_row *r)
{
	struct poll_path w = { tenant, env, svc, op, cid, proof, NULL };
	unsigned char	 sealed[SHA256_LEN];
	uint64_t	 next = 0, orig = 0;
	int		 hop, match = 0, rc = DB_ROW_NONE, sealed_null = 1;

	for (hop = 0; hop <= REPLAY_HOPS; hop++) {
		rc = poll_hop(db, id, &w, r, &match, &next, &orig);
		if (rc == DB_ROW && hop > 0) {	/* the sealed row's token */
			memcpy(r->poll_hash, sealed, SHA256_LEN);
			r->poll_hash_null = sealed_null;
		}
		if (rc != DB_ROW || match)
			break;
		if (hop == 0) {
			memcpy(sealed, r->poll_hash, SHA256_LEN);
			sealed_null = r->poll_hash_null;
			w.sealed = sealed;
		}
		exec_row_free(r);
		rc = DB_ROW_NONE;
		if (next == 0)
			break;
		id = next;
	}
	if (rc == DB_ROW && !match)
		rc = DB_ROW_NONE;
	/* the replay links' correlation ids: a read each, only where one is */
	if (rc == DB_ROW && next != 0)
		rc = exec_cid(db, next, r->replaced_by, sizeof(r->replaced_by));
	if (rc == DB_ROW && orig != 0)
		rc = exec_cid(db, orig, r->replay_of, sizeof(r->replay_of));
	snprintf(r->cid, sizeof(r->cid), "%s", cid);
	snprintf(r->env, sizeof(r->env), "%s", env);
	snprintf(r->svc, sizeof(r->svc), "%s", svc);
	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	if (rc != DB_ROW)
		exec_row_free(r);
	return rc == DB_ROW ? REPO_OK :
	    rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
}
