/*
 * repo_replay.c - the statements of replay (repo_replay.h): one
 * execution run again, and the bulk form's candidates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "db.h"
#include "log.h"
#include "repo.h"
#include "repo_replay.h"
#include "repo_sql.h"

#define REPLAYABLE	"('failed', 'expired', 'cancelled')"

enum rstmt {
	RSTMT_LOCK,
	RSTMT_LIVE,
	RSTMT_CID,
	RSTMT_QUOTA,
	RSTMT_OPEN,
	RSTMT_INSERT,
	RSTMT_LINK,
	RSTMT_HIGH,
	RSTMT_CANDIDATES,
	RSTMT__MAX
};

static const struct db_stmt_def rstmts[RSTMT__MAX] = {
	/* the original, locked until the commit: a racing replay waits
	 * here and then sees replaced_by set */
	[RSTMT_LOCK] = {
	    "SELECT status, replaced_by, initiator_tenant_id, "
	    "initiator_lineage_id FROM s2r_async_execution WHERE id = ? "
	    "FOR UPDATE", 0, "replay_lock" },
	/* whether a key of its lineage is live (read without locks, as the
	 * claim reads it: a revoke racing the replay leaves the replay to
	 * asyncexec-expire's revoked step, as a submit inside the TTL) */
	[RSTMT_LIVE] = {
	    "SELECT " LINEAGE_LIVE("?"), 0, "replay_live" },
	[RSTMT_CID] = {
	    "SELECT correlation_id FROM s2r_async_execution WHERE id = ?",
	    1, "replay_cid" },
	[RSTMT_QUOTA] = {
	    "SELECT max_open FROM s2r_tenant WHERE tenant_id = ? FOR UPDATE",
	    0, "replay_quota" },
	/* as STMT_TENANT_OPEN: bounded by the quota */
	[RSTMT_OPEN] = {
	    "SELECT COUNT(*) FROM (SELECT 1 FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_tenant_open) WHERE initiator_tenant_id = ? "
	    "AND status = 'waiting_callback' LIMIT ?) w", 0, "replay_open" },
	/* the copy: new id, new correlation id, now, the route's retention */
	[RSTMT_INSERT] = {
	    "INSERT INTO s2r_async_execution (correlation_id, environment, "
	    "service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, initiator_key_hash, "
	    "poll_token_hash, created_at, updated_at, expires_at, "
	    "initiator_lineage, priority, due_at, sched_hash, "
	    "initiator_lineage_id, replay_of) "
	    "SELECT ?, e.environment, e.service_key, e.operation_key, "
	    "'waiting_callback', e.request_payload, e.request_sha256, "
	    "e.initiator_tenant_id, e.initiator_key_hash, e.poll_token_hash, "
	    "?, ?, DATE_ADD(?, INTERVAL r.retention_days DAY), "
	    "e.initiator_lineage, e.priority, ?, e.sched_hash, "
	    "e.initiator_lineage_id, e.id FROM s2r_async_execution e "
	    "JOIN s2r_route r ON r.environment = e.environment AND "
	    "r.service_key = e.service_key AND r.operation_key = "
	    "e.operation_key WHERE e.id = ? AND e.status IN " REPLAYABLE
	    " AND e.replaced_by IS NULL", 0, "replay_insert" },
	/* the original's only change */
	[RSTMT_LINK] = {
	    "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "replaced_by = ? WHERE id = ? AND status IN " REPLAYABLE
	    " AND replaced_by IS NULL",
	    0, "replay_link" },
	/* the bulk form's bound, read first: its own replays are above it */
	[RSTMT_HIGH] = {
	    "SELECT COALESCE(MAX(id), 0) FROM s2r_async_execution", 1,
	    "replay_high" },
	[RSTMT_CANDIDATES] = {
	    "SELECT id, e.initiator_lineage_id IS NULL OR "
	    LINEAGE_LIVE("e.initiator_lineage_id") " FROM s2r_async_execution "
	    "e WHERE environment = ? AND service_key = ? AND operation_key = ? "
	    "AND status = ? AND replaced_by IS NULL AND completed_at >= ? AND "
	    "id > ? AND id <= ? ORDER BY id LIMIT " API_STR(REPLAY_BATCH), 1,
	    "replay_candidates" },
};

struct rdb {
	struct db	*db;
};

struct rdb *
repo_replay_open(const struct config *cfg)
{
	struct rdb	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->db = db_new(cfg, rstmts, RSTMT__MAX, 0, 0)) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

void
repo_replay_close(struct rdb *r)
{
	if (r == NULL)
		return;
	db_free(r->db);
	free(r);
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

/* The correlation id of execution id into cid. */
static enum repo_rc
cid_of(struct rdb *r, uint64_t id, char *cid, size_t n)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	enum repo_rc	 rc;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(r->db, RSTMT_CID, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, cid, n);
	if ((rc = fetch_one(st, &c)) == REPO_OK)
		db_rstr(&c, 0, cid, n);
	return rc;
}

/*
 * The original, locked: its status, replaced_by (0: none), tenant, key
 * lineage (0: none). REPO_OK, REPO_NOTFOUND or REPO_ERR.
 */
static enum repo_rc
lock_original(struct rdb *r, uint64_t id, struct replay_out *o,
    uint64_t *replaced_by, char *tenant, int *tenant_null, uint64_t *lineage)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	enum repo_rc	 rc;

	*replaced_by = *lineage = 0;
	db_bind_u64(&p[0], &id);
	if ((st = db_run(r->db, RSTMT_LOCK, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, o->status, sizeof(o->status));
	db_rcol(&c, 1, MYSQL_TYPE_LONGLONG, replaced_by, 0);
	db_rcol(&c, 2, MYSQL_TYPE_STRING, tenant, TENANT_MAX_LEN + 1);
	db_rcol(&c, 3, MYSQL_TYPE_LONGLONG, lineage, 0);
	if ((rc = fetch_one(st, &c)) != REPO_OK)
		return rc;
	db_rstr(&c, 0, o->status, sizeof(o->status));
	db_rstr(&c, 2, tenant, TENANT_MAX_LEN + 1);
	if (c.null[1])
		*replaced_by = 0;
	if (c.null[3])
		*lineage = 0;
	*tenant_null = c.null[2];
	return REPO_OK;
}

/* Whether a key of lineage is live at now: 1, 0, or -1 (an error). */
static int
lineage_live(struct rdb *r, uint64_t lineage, int64_t now)
{
	MYSQL_BIND	 p[4];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;
	struct db_cols	 c;
	long long	 live = 0;

	db_bind_u64(&p[0], &lineage);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &lineage);
	db_bind_time(&p[3], &t, now);
	if ((st = db_run(r->db, RSTMT_LIVE, p)) == NULL)
		return -1;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &live, 0);
	if (fetch_one(st, &c) != REPO_OK)
		return -1;
	return live != 0;
}

/* Whether the tenant may have one more waiting execution: 1, 0 or -1. */
static int
quota_ok(struct rdb *r, const char *tenant, struct replay_out *o)
{
	MYSQL_BIND	 p[2];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	unsigned	 cap;
	long long	 n = 0;
	enum repo_rc	 rc;

	o->max_open = 0;
	db_bind_str(&p[0], tenant);
	if ((st = db_run(r->db, RSTMT_QUOTA, p)) == NULL)
		return -1;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &o->max_open, 0);
	if ((rc = fetch_one(st, &c)) == REPO_ERR)
		return -1;
	if (rc == REPO_NOTFOUND || o->max_open == 0)
		return 1;
	cap = o->max_open + 1;
	db_bind_str(&p[0], tenant);
	db_bind_u32(&p[1], &cap);
	if ((st = db_run(r->db, RSTMT_OPEN, p)) == NULL)
		return -1;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &n, 0);
	if (fetch_one(st, &c) != REPO_OK)
		return -1;
	o->open = (unsigned)n;
	return o->open < o->max_open;
}

/* The copy and the link, in the open transaction. */
static enum replay_rc
copy_link(struct rdb *r, uint64_t id, const char *new_cid, int64_t now,
    struct replay_out *o)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[4];
	MYSQL_STMT	*st;

	db_bind_str(&p[0], new_cid);
	db_bind_time(&p[1], &t[0], now);
	db_bind_time(&p[2], &t[1], now);
	db_bind_time(&p[3], &t[2], now);
	db_bind_time(&p[4], &t[3], now);
	db_bind_u64(&p[5], &id);
	if ((st = db_run(r->db, RSTMT_INSERT, p)) == NULL)
		return REPLAY_ERR;
	if (db_affected(r->db, RSTMT_INSERT) != 1)
		return REPLAY_ERR;	/* the locked row changed: cannot */
	o->new_id = mysql_stmt_insert_id(st);
	snprintf(o->new_cid, sizeof(o->new_cid), "%s", new_cid);
	db_bind_u64(&p[0], &o->new_id);
	db_bind_u64(&p[1], &id);
	if (db_run(r->db, RSTMT_LINK, p) == NULL ||
	    db_affected(r->db, RSTMT_LINK) != 1)
		return REPLAY_ERR;
	return REPLAY_DONE;
}

/* Inside the transaction: everything up to the commit. */
static enum replay_rc
replay_tx(struct rdb *r, uint64_t id, const char *new_cid, int64_t now,
    struct replay_out *o)
{
	char		 tenant[TENANT_MAX_LEN + 1];
	uint64_t	 by, lineage;
	int		 tnull = 0, q;
	enum repo_rc	 rc;

	rc = lock_original(r, id, o, &by, tenant, &tnull, &lineage);
	if (rc != REPO_OK)
		return rc == REPO_NOTFOUND ? REPLAY_NOTFOUND : REPLAY_ERR;
	if (by != 0) {
		o->new_id = by;
		return cid_of(r, by, o->new_cid, sizeof(o->new_cid)) ==
		    REPO_ERR ? REPLAY_ERR : REPLAY_ALREADY;
	}
	if (strcmp(o->status, "failed") != 0 &&
	    strcmp(o->status, "expired") != 0 &&
	    strcmp(o->status, "cancelled") != 0)
		return REPLAY_STATUS;
	if (lineage != 0 && (q = lineage_live(r, lineage, now)) != 1)
		return q == 0 ? REPLAY_REVOKED : REPLAY_ERR;
	if (!tnull && (q = quota_ok(r, tenant, o)) != 1)
		return q == 0 ? REPLAY_QUOTA : REPLAY_ERR;
	return copy_link(r, id, new_cid, now, o);
}

/*
 * Replays execution id as new_cid (see repo_replay.h). REPLAY_DONE,
 * REPLAY_ALREADY (another replay, racing or earlier, made it),
 * REPLAY_STATUS, REPLAY_QUOTA, REPLAY_NOTFOUND or REPLAY_ERR. A replay
 * that lost a race on uq_exec_replay_of or a deadlock re-reads the
 * original and reports its replay.
 */
enum replay_rc
repo_exec_replay(struct rdb *r, uint64_t id, const char *new_cid,
    int64_t now, struct replay_out *o)
{
	char		 tenant[TENANT_MAX_LEN + 1];
	uint64_t	 by, lineage;
	int		 tnull, tries;
	enum replay_rc	 rc = REPLAY_ERR;

	memset(o, 0, sizeof(*o));
	for (tries = 0; tries < 3; tries++) {
		if (db_begin(r->db) == -1)
			return REPLAY_ERR;
		rc = replay_tx(r, id, new_cid, now, o);
		if (rc == REPLAY_DONE && db_commit(r->db) == 0)
			return REPLAY_DONE;
		if (rc != REPLAY_DONE && rc != REPLAY_ERR) {
			db_rollback(r->db);
			return rc;
		}
		if (db_errno(r->db) != ER_DUP_ENTRY && !db_conflict(r->db)) {
			db_rollback(r->db);
			return REPLAY_ERR;
		}
		db_rollback(r->db);	/* lost a race: look again */
	}
	/* still racing: report what the original says */
	if (db_begin(r->db) == -1)
		return REPLAY_ERR;
	if (lock_original(r, id, o, &by, tenant, &tnull, &lineage) ==
	    REPO_OK &&
	    by != 0 && cid_of(r, by, o->new_cid, sizeof(o->new_cid)) ==
	    REPO_OK) {
		o->new_id = by;
		rc = REPLAY_ALREADY;
	} else
		rc = REPLAY_ERR;
	db_rollback(r->db);
	return rc;
}

enum repo_rc
repo_replay_high(struct rdb *r, uint64_t *id)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;

	*id = 0;
	if ((st = db_run(r->db, RSTMT_HIGH, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, id, 0);
	return fetch_one(st, &c) == REPO_OK ? REPO_OK : REPO_ERR;
}

enum repo_rc
repo_replay_candidates(struct rdb *r, const struct replay_sel *s,
    uint64_t after, uint64_t *ids, unsigned char *live, size_t max,
    size_t *n)
{
	MYSQL_BIND	 p[9];
	MYSQL_TIME	 t, tn;
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id = 0;
	long long	 lv = 0;
	int		 rc;

	*n = 0;
	db_bind_time(&p[0], &tn, s->now);
	db_bind_time(&p[1], &tn, s->now);
	db_bind_str(&p[2], s->env);
	db_bind_str(&p[3], s->svc);
	db_bind_str(&p[4], s->op);
	db_bind_str(&p[5], s->status);
	db_bind_time(&p[6], &t, s->since);
	db_bind_u64(&p[7], &after);
	db_bind_u64(&p[8], &s->upto);
	if ((st = db_run(r->db, RSTMT_CANDIDATES, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONGLONG, &lv, 0);
	while ((rc = db_fetch_row(st, &c)) == DB_ROW)
		if (*n < max) {
			live[*n] = lv != 0;
			ids[(*n)++] = id;
		}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}
