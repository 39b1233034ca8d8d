/*
 * repo_rollup.c - the rollup of terminal outcomes per route (sql/013):
 * the executions that ended since the mark, read as one range of
 * ix_exec_completed, added per (route, 5-minute interval, status) to
 * s2r_route_outcome in the transaction that moves the mark, so that a
 * run that fails or is killed counts nothing twice and loses nothing.
 *
 * The mark stays ROLLUP_LAG_MS behind the clock: a terminal transition
 * commits moments after the completed_at it writes (one autocommit
 * statement), so a row below the mark is committed when it is counted.
 */
#include <stdlib.h>

#include "api.h"
#include "db.h"
#include "repo_rollup.h"
#include "repo_sql.h"

#define PRUNE_BATCH		10000
#define ROLLUP_WINDOW_ROWS	100000	/* one transaction's executions, about */
/* one range of ix_exec_completed per terminal status */
#define RANGE \
	"FROM s2r_async_execution FORCE INDEX (ix_exec_completed) " \
	"WHERE status IN ('completed', 'failed', 'expired', 'cancelled') " \
	"AND completed_at > ? AND completed_at <= ?"
/* the start of the 5-minute UTC interval completed_at falls in */
#define BUCKET \
	"DATE_FORMAT(completed_at, '%Y-%m-%d %H:00:00') + INTERVAL " \
	"(MINUTE(completed_at) DIV " API_STR(ROLLUP_BUCKET_MIN) " * " \
	API_STR(ROLLUP_BUCKET_MIN) ") MINUTE"

enum ostmt {
	O_MARK_INIT,
	O_MARK_GET,
	O_MARK_PEEK,
	O_COUNT,
	O_ADD,
	O_MARK_SET,
	O_PRUNE,
	O__MAX
};

static const struct db_stmt_def ostmts[O__MAX] = {
	[O_MARK_INIT] = {
	    "INSERT IGNORE INTO s2r_rollup_mark (id, counted_until) "
	    "VALUES (1, ?)", 0, "rollup_mark_init" },
	[O_MARK_GET] = {
	    "SELECT counted_until FROM s2r_rollup_mark WHERE id = 1 "
	    "FOR UPDATE", 0, "rollup_mark_get" },
	[O_MARK_PEEK] = {
	    "SELECT counted_until FROM s2r_rollup_mark WHERE id = 1", 0,
	    "rollup_mark_peek" },
	[O_COUNT] = {
	    "SELECT COUNT(*) " RANGE, 0, "rollup_count" },
	[O_ADD] = {
	    "INSERT INTO s2r_route_outcome (environment, service_key, "
	    "operation_key, bucket, status, ended) SELECT environment, "
	    "service_key, operation_key, " BUCKET ", status, COUNT(*) " RANGE
	    " GROUP BY environment, service_key, operation_key, 4, status "
	    "ON DUPLICATE KEY UPDATE ended = ended + VALUES(ended)",
	    0, "rollup_add" },
	[O_MARK_SET] = {
	    "UPDATE s2r_rollup_mark SET counted_until = ? WHERE id = 1",
	    0, "rollup_mark_set" },
	[O_PRUNE] = {
	    "DELETE FROM s2r_route_outcome WHERE bucket < ? LIMIT "
	    API_STR(PRUNE_BATCH), 0, "rollup_prune" },
};

struct odb {
	struct db	*db;
};

/* Opens the handle (connects on first use); NULL out of memory. */
struct odb *
repo_rollup_open(const struct config *cfg)
{
	struct odb	*o;

	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	if ((o->db = db_new(cfg, ostmts, O__MAX, 0, 0)) == NULL) {
		free(o);
		return NULL;
	}
	return o;
}

void
repo_rollup_close(struct odb *o)
{
	if (o == NULL)
		return;
	db_free(o->db);
	free(o);
}

/*
 * Statement id's one DATETIME column into *ms, or none (*ms unchanged:
 * REPO_NOTFOUND). REPO_OK, REPO_NOTFOUND, REPO_RETRY or REPO_ERR.
 */
static enum repo_rc
one_time(struct db *db, enum ostmt id, int64_t *ms)
{
	MYSQL_STMT	*st;
	MYSQL_TIME	 t;
	struct db_cols	 c;
	int		 rc;

	if ((st = db_run(db, id, NULL)) == NULL)
		return repo_failed(db);
	db_rcol(&c, 0, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc == DB_ROW)
		*ms = db_time_ms(&t);
	return rc == DB_ROW ? REPO_OK : rc == DB_ROW_NONE ? REPO_NOTFOUND :
	    REPO_ERR;
}

/* The executions that ended in (from, to], into *n (p: the two binds). */
static enum repo_rc
count_range(struct db *db, MYSQL_BIND *p, uint64_t *n)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	if ((st = db_run(db, O_COUNT, p)) == NULL)
		return repo_failed(db);
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, n, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK : REPO_ERR;
}

/* The mark (created at now - ROLLUP_START_MS when missing), locked. */
static enum repo_rc
mark_get(struct db *db, int64_t now, int64_t *from)
{
	MYSQL_BIND	 p[1];
	MYSQL_TIME	 t;
	enum repo_rc	 rc;

	db_bind_time(&p[0], &t, now - ROLLUP_START_MS);
	if (db_run(db, O_MARK_INIT, p) == NULL)
		return repo_failed(db);
	rc = one_time(db, O_MARK_GET, from);
	return rc == REPO_NOTFOUND ? REPO_ERR : rc;
}

/*
 * Counts (from, *to] into the rollup and moves the mark, in the open
 * transaction: the whole span when it holds at most ROLLUP_WINDOW_ROWS
 * executions (one transaction, however long the span: a first run, or
 * a quiet night), else its first ROLLUP_WINDOW_MS (*to moves back).
 */
static enum repo_rc
add_range(struct db *db, int64_t from, int64_t *to, uint64_t *counted)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t[2];
	enum repo_rc	 rc;

	db_bind_time(&p[0], &t[0], from);
	db_bind_time(&p[1], &t[1], *to);
	if ((rc = count_range(db, p, counted)) != REPO_OK)
		return rc;
	if (*counted > ROLLUP_WINDOW_ROWS && *to > from + ROLLUP_WINDOW_MS) {
		*to = from + ROLLUP_WINDOW_MS;
		db_bind_time(&p[1], &t[1], *to);
		if ((rc = count_range(db, p, counted)) != REPO_OK)
			return rc;
	}
	if (*counted > 0 && db_run(db, O_ADD, p) == NULL)
		return repo_failed(db);
	if (db_run(db, O_MARK_SET, &p[1]) == NULL)
		return repo_failed(db);
	return REPO_OK;
}

/*
 * Counts the executions that ended after the mark, no later than now -
 * ROLLUP_LAG_MS (only ROLLUP_WINDOW_MS of it when that span holds more
 * than ROLLUP_WINDOW_ROWS), into s2r_route_outcome,
 * moving the mark, in one transaction. *counted gets how many; *more 1
 * when the mark is still behind now - ROLLUP_LAG_MS. REPO_OK, REPO_RETRY
 * (nothing changed) or REPO_ERR.
 */
enum repo_rc
repo_rollup_window(struct odb *o, int64_t now, uint64_t *counted, int *more)
{
	int64_t		 from, to, until = now - ROLLUP_LAG_MS;
	enum repo_rc	 rc;

	*counted = 0;
	*more = 0;
	if (db_begin(o->db) == -1)
		return repo_failed(o->db);
	if ((rc = mark_get(o->db, now, &from)) != REPO_OK)
		goto fail;
	to = until;
	if (to > from && (rc = add_range(o->db, from, &to, counted)) != REPO_OK)
		goto fail;
	if (db_commit(o->db) == -1) {
		*counted = 0;
		return repo_failed(o->db);
	}
	*more = to > from && to < until;
	return REPO_OK;
fail:
	db_rollback(o->db);
	*counted = 0;
	return rc;
}

/*
 * What repo_rollup_window would count from the mark (or from now -
 * ROLLUP_START_MS before the first count) up to now - ROLLUP_LAG_MS,
 * into *n; changes nothing (a dry run). REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_rollup_pending(struct odb *o, int64_t now, uint64_t *n)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t[2];
	int64_t		 from = now - ROLLUP_START_MS;
	enum repo_rc	 rc;

	*n = 0;
	if ((rc = one_time(o->db, O_MARK_PEEK, &from)) != REPO_OK &&
	    rc != REPO_NOTFOUND)
		return REPO_ERR;
	if (from >= now - ROLLUP_LAG_MS)
		return REPO_OK;
	db_bind_time(&p[0], &t[0], from);
	db_bind_time(&p[1], &t[1], now - ROLLUP_LAG_MS);
	return count_range(o->db, p, n) == REPO_OK ? REPO_OK : REPO_ERR;
}

/*
 * The time up to which the rollup has counted, into *mark: the mark, or
 * before the first count now - ROLLUP_START_MS (where it will start).
 * The purge spares what ended after it. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_rollup_mark(struct odb *o, int64_t now, int64_t *mark)
{
	enum repo_rc	 rc;

	*mark = now - ROLLUP_START_MS;
	rc = one_time(o->db, O_MARK_PEEK, mark);
	return rc == REPO_OK || rc == REPO_NOTFOUND ? REPO_OK : REPO_ERR;
}

/*
 * Deletes the intervals older than ROLLUP_KEEP_MS, PRUNE_BATCH at a
 * time (the table holds routes x 576 intervals x 4 statuses); *deleted
 * gets how many. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_rollup_prune(struct odb *o, int64_t now, uint64_t *deleted)
{
	MYSQL_BIND	 p[1];
	MYSQL_TIME	 t;
	int		 n;

	*deleted = 0;
	db_bind_time(&p[0], &t, now - ROLLUP_KEEP_MS);
	do {
		if (db_run(o->db, O_PRUNE, p) == NULL)
			return REPO_ERR;
		n = db_affected(o->db, O_PRUNE);
		*deleted += n > 0 ? (uint64_t)n : 0;
	} while (n == PRUNE_BATCH);
	return REPO_OK;
}
