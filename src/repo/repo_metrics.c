/*
 * repo_metrics.c - the database figures of GET /metrics: per route, how
 * many executions wait (counted on ix_exec_claim's range, capped, so a
 * scrape never scans a backlog) and when the oldest of them was
 * submitted (the lowest id in that capped range that is due and not
 * leased, as the dashboard's).
 */
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_sql.h"

/* The statements of a scrape, with their parameters' kinds (s string,
 * t time; repo_dash.c's dparams). */
static const struct {
	enum stmt	 id;
	const char	*params;
} mstmts[] = {
	{ STMT_METRICS_ROUTES, "" },
	{ STMT_METRICS_WAITING, "ttsss" },
};

/*
 * Statement i's text, name and parameter kinds (for the EXPLAIN test,
 * tests/dash); NULL past the last one.
 */
const char *
repo_metrics_sql(unsigned i, const char **name, const char **params)
{
	if (i >= sizeof(mstmts) / sizeof(mstmts[0]))
		return NULL;
	*name = repo_stmts[mstmts[i].id].name;
	*params = mstmts[i].params;
	return repo_stmts[mstmts[i].id].sql;
}

/* Reads up to max route names into w; REPO_OK or REPO_ERR. */
static enum repo_rc
routes(struct db *db, struct route_waiting *w, size_t max, size_t *n)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	enum db_row	 rc = DB_ROW;

	*n = 0;
	if ((st = db_run(db, STMT_METRICS_ROUTES, NULL)) == NULL)
		return REPO_ERR;
	while (*n < max) {
		memset(&w[*n], 0, sizeof(w[*n]));
		db_rcol(&c, 0, MYSQL_TYPE_STRING, w[*n].env, sizeof(w[*n].env));
		db_rcol(&c, 1, MYSQL_TYPE_STRING, w[*n].svc, sizeof(w[*n].svc));
		db_rcol(&c, 2, MYSQL_TYPE_STRING, w[*n].op, sizeof(w[*n].op));
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		db_rstr(&c, 0, w[*n].env, sizeof(w[*n].env));
		db_rstr(&c, 1, w[*n].svc, sizeof(w[*n].svc));
		db_rstr(&c, 2, w[*n].op, sizeof(w[*n].op));
		(*n)++;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/*
 * Reads route w's waiting executions (at most REPO_WAITING_CAP) and the
 * creation time of the oldest that waits for a claim at now (repo_sql.h
 * OPEN_HEAD) into w. REPO_OK or REPO_ERR.
 */
static enum repo_rc
route_open(struct db *db, struct route_waiting *w, int64_t now)
{
	MYSQL_BIND		 b[5];
	MYSQL_STMT		*st;
	MYSQL_TIME		 t, at[2];
	struct db_cols		 c;
	unsigned long long	 count = 0;
	int			 rc;

	db_bind_time(&b[0], &at[0], now);
	db_bind_time(&b[1], &at[1], now);
	db_bind_str(&b[2], w->env);
	db_bind_str(&b[3], w->svc);
	db_bind_str(&b[4], w->op);
	if ((st = db_run(db, STMT_METRICS_WAITING, b)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &count, 0);
	db_rcol(&c, 1, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
	w->waiting = (unsigned)count;
	w->oldest_ms = c.null[1] ? 0 : db_time_ms(&t);
	return REPO_OK;
}

/*
 * Fills w[0..*n-1] (max entries) with every route (by id, at most
 * REPO_METRICS_ROUTES), its waiting executions (at most
 * REPO_WAITING_CAP) and the creation time of the oldest one that waits
 * for a claim at now: due, no live lease, not cancel-requested. REPO_OK
 * or REPO_ERR.
 */
enum repo_rc
repo_metrics_waiting(struct db *db, struct route_waiting *w, size_t max,
    size_t *n, int64_t now)
{
	size_t	 i;

	if (routes(db, w, max, n) != REPO_OK)
		return REPO_ERR;
	for (i = 0; i < *n; i++)
		if (route_open(db, &w[i], now) != REPO_OK)
			return REPO_ERR;
	return REPO_OK;
}

/*
 * Reads the record of the last asyncexec-expire run into j (failed: it
 * ended in an error or stopped on row locks). REPO_OK,
 * REPO_NOTFOUND (no run recorded yet) or REPO_ERR.
 */
enum repo_rc
repo_metrics_expiry(struct db *db, struct job_run *j)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	MYSQL_TIME	 t[2];
	int		 i, rc;

	memset(j, 0, sizeof(*j));
	if ((st = db_run(db, STMT_METRICS_EXPIRY, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(&c, 1, MYSQL_TYPE_STRING, j->result, sizeof(j->result));
	db_rcol(&c, 2, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	for (i = 0; i < 4; i++)
		db_rcol(&c, 3 + i, MYSQL_TYPE_LONGLONG, &j->count[i], 0);
	db_rcol(&c, 7, MYSQL_TYPE_LONGLONG, &j->duration_ms, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
	db_rstr(&c, 1, j->result, sizeof(j->result));
	j->last_run_ms = db_time_ms(&t[0]);
	j->last_success_ms = c.null[2] ? 0 : db_time_ms(&t[1]);
	j->failed = strcmp(j->result, "error") == 0 ||
	    strcmp(j->result, "locked") == 0;
	return REPO_OK;
}
