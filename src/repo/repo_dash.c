/*
 * repo_dash.c - the dashboard's statements (repo_dash.h) on their own
 * handle. Each entry of dstmts has its parameters' kinds in dparams
 * (s string, n number, t time), for the EXPLAIN test (repo_dash_sql).
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_dash.h"
#include "repo_sql.h"

#define PAGE_LIMIT	" LIMIT 51"	/* DASH_PAGE_MAX + 1: is there more */

enum dstmt {
	D_ROUTES,
	D_ROUTE_OPEN,
	D_EXEC,
	D_KEYS,
	D_KEY_ROUTES,
	D__MAX
};

static const struct db_stmt_def dstmts[D__MAX] = {
	[D_ROUTES] = {
	    "SELECT id, environment, service_key, operation_key, "
	    "retention_days, enabled FROM s2r_route WHERE id > ? "
	    "ORDER BY id" PAGE_LIMIT, 1, "dash_routes" },
	/* the route's waiting range of ix_exec_claim, in its order, capped */
	[D_ROUTE_OPEN] = {
	    "SELECT COUNT(*), COALESCE(SUM(lease_expires_at > ?), 0), "
	    "COALESCE(SUM(not_before > ?), 0), COALESCE(SUM(cancel_requested "
	    "= 0 AND (lease_expires_at IS NULL OR lease_expires_at <= ?) AND "
	    "(not_before IS NULL OR not_before <= ?)), 0), "
	    "COALESCE(SUM(cancel_requested), 0), "
	    "MIN(IF(cancel_requested = 0, created_at, NULL)) FROM (SELECT "
	    "lease_expires_at, not_before, cancel_requested, created_at FROM "
	    "s2r_async_execution WHERE environment = ? AND service_key = ? AND "
	    "operation_key = ? AND status = 'waiting_callback' ORDER BY "
	    "cancel_requested, id LIMIT " DASH_OPEN_CAP_STR ") w",
	    1, "dash_route_open" },
	[D_EXEC] = {
	    "SELECT " REPO_SHOW_COLS "WHERE id = ?", 1, "dash_exec" },
	[D_KEYS] = {
	    "SELECT id, kind = 'backend', tenant_id, label, created_at, "
	    "revoked_at, COALESCE(lineage_id, id) FROM s2r_api_key "
	    "WHERE id < ? ORDER BY id DESC" PAGE_LIMIT, 1, "dash_keys" },
	[D_KEY_ROUTES] = {
	    "SELECT CONCAT(r.environment, '/', r.service_key, '/', "
	    "r.operation_key) FROM s2r_backend_key_route kr JOIN s2r_route r "
	    "ON r.id = kr.route_id WHERE kr.key_id = ? ORDER BY kr.route_id "
	    "LIMIT 9", 1, "dash_key_routes" },
};

static const char *const dparams[D__MAX] = {
	[D_ROUTES] = "n",
	[D_ROUTE_OPEN] = "ttttsss",
	[D_EXEC] = "n",
	[D_KEYS] = "n",
	[D_KEY_ROUTES] = "n",
};

struct ddb {
	struct db	*db;
};

/* A handle whose connection is made on first use; NULL (memory). */
struct ddb *
repo_dash_open(const struct config *cfg)
{
	struct ddb	*d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	if ((d->db = db_new(cfg, dstmts, D__MAX, 0, 0)) == NULL) {
		free(d);
		return NULL;
	}
	return d;
}

/* Closes d and its connection (NULL: nothing). */
void
repo_dash_close(struct ddb *d)
{
	if (d == NULL)
		return;
	db_free(d->db);
	free(d);
}

/*
 * Statement i's text, name and parameter kinds (for the EXPLAIN test);
 * NULL past the last one.
 */
const char *
repo_dash_sql(unsigned i, const char **name, const char **params)
{
	if (i >= D__MAX)
		return NULL;
	*name = dstmts[i].name;
	*params = dparams[i];
	return dstmts[i].sql;
}

/*
 * The routes with an id above after, by id, into r (max entries, at
 * most DASH_PAGE_MAX + 1: one more than a page says there is more).
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_routes(struct ddb *d, uint64_t after, struct dash_route *r,
    size_t max, size_t *n)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc = DB_ROW;

	*n = 0;
	db_bind_u64(&p[0], &after);
	if ((st = db_run(d->db, D_ROUTES, p)) == NULL)
		return REPO_ERR;
	while (*n < max) {
		memset(&r[*n], 0, sizeof(r[*n]));
		db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &r[*n].id, 0);
		db_rcol(&c, 1, MYSQL_TYPE_STRING, r[*n].env, sizeof(r[*n].env));
		db_rcol(&c, 2, MYSQL_TYPE_STRING, r[*n].svc, sizeof(r[*n].svc));
		db_rcol(&c, 3, MYSQL_TYPE_STRING, r[*n].op, sizeof(r[*n].op));
		db_rcol(&c, 4, MYSQL_TYPE_LONG, &r[*n].retention_days, 0);
		db_rcol(&c, 5, MYSQL_TYPE_LONG, &r[*n].enabled, 0);
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		db_rstr(&c, 1, r[*n].env, sizeof(r[*n].env));
		db_rstr(&c, 2, r[*n].svc, sizeof(r[*n].svc));
		db_rstr(&c, 3, r[*n].op, sizeof(r[*n].op));
		(*n)++;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/*
 * Route r's waiting executions (the first DASH_OPEN_CAP of its range)
 * at time now into o. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_route_open(struct ddb *d, const struct dash_route *r, int64_t now,
    struct dash_open *o)
{
	MYSQL_BIND		 p[7];
	MYSQL_TIME		 t[5];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned long long	 v[5] = { 0, 0, 0, 0, 0 };
	int			 i, rc;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < 4; i++)
		db_bind_time(&p[i], &t[i], now);
	db_bind_str(&p[4], r->env);
	db_bind_str(&p[5], r->svc);
	db_bind_str(&p[6], r->op);
	if ((st = db_run(d->db, D_ROUTE_OPEN, p)) == NULL)
		return REPO_ERR;
	for (i = 0; i < 5; i++)
		db_rcol(&c, i, MYSQL_TYPE_LONGLONG, &v[i], 0);
	db_rcol(&c, 5, MYSQL_TYPE_DATETIME, &t[4], sizeof(t[4]));
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
	o->waiting = (unsigned)v[0];
	o->leased = (unsigned)v[1];
	o->retrying = (unsigned)v[2];
	o->claimable = (unsigned)v[3];
	o->cancel_requested = (unsigned)v[4];
	o->oldest_ms = c.null[5] ? 0 : db_time_ms(&t[4]);
	return REPO_OK;
}

/* The operator's view of execution id (no payload, token or hash). */
enum repo_rc
repo_dash_exec(struct ddb *d, uint64_t id, struct exec_admin *e)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;

	db_bind_u64(&p[0], &id);
	if ((st = db_run(d->db, D_EXEC, p)) == NULL)
		return REPO_ERR;
	return repo_show_fetch(st, e);
}

/* Key k's routes (a backend key's), at most DASH_KEY_ROUTES. */
static enum repo_rc
key_routes(struct ddb *d, struct dash_key *k)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	char		 r[sizeof(k->routes[0])], *out;
	int		 rc;

	db_bind_u64(&p[0], &k->id);
	if ((st = db_run(d->db, D_KEY_ROUTES, p)) == NULL)
		return REPO_ERR;
	for (;;) {
		/* past DASH_KEY_ROUTES, into r: only that there are more */
		out = k->nroutes < DASH_KEY_ROUTES ? k->routes[k->nroutes] : r;
		db_rcol(&c, 0, MYSQL_TYPE_STRING, out, sizeof(r));
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		db_rstr(&c, 0, out, sizeof(r));
		if (out == r)
			k->more_routes = 1;
		else
			k->nroutes++;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/* Fetches the next D_KEYS row of st into k: DB_ROW, DB_ROW_NONE, DB_ROW_ERR. */
static enum db_row
key_fetch(MYSQL_STMT *st, struct dash_key *k)
{
	struct db_cols	 c;
	MYSQL_TIME	 t[2];
	enum db_row	 rc;

	memset(k, 0, sizeof(*k));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &k->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONG, &k->backend, 0);
	db_rcol(&c, 2, MYSQL_TYPE_STRING, k->tenant, sizeof(k->tenant));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, k->label, sizeof(k->label));
	db_rcol(&c, 4, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(&c, 5, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(&c, 6, MYSQL_TYPE_LONGLONG, &k->lineage, 0);
	if ((rc = db_fetch_row(st, &c)) != DB_ROW)
		return rc;
	db_rstr(&c, 2, k->tenant, sizeof(k->tenant));
	db_rstr(&c, 3, k->label, sizeof(k->label));
	if (c.null[2])
		k->tenant[0] = '\0';
	if (c.null[3])
		k->label[0] = '\0';
	k->created_at = db_time_ms(&t[0]);
	k->revoked_at = c.null[5] ? 0 : db_time_ms(&t[1]);
	return DB_ROW;
}

/*
 * The keys with an id below before, newest first, into k (max entries,
 * at most DASH_PAGE_MAX + 1), each backend key with its routes.
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_keys(struct ddb *d, uint64_t before, struct dash_key *k,
    size_t max, size_t *n)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	enum db_row	 rc = DB_ROW;
	size_t		 i;

	*n = 0;
	db_bind_u64(&p[0], &before);
	if ((st = db_run(d->db, D_KEYS, p)) == NULL)
		return REPO_ERR;
	while (*n < max && (rc = key_fetch(st, &k[*n])) == DB_ROW)
		(*n)++;
	mysql_stmt_free_result(st);
	if (rc == DB_ROW_ERR)
		return REPO_ERR;
	for (i = 0; i < *n; i++)
		if (k[i].backend && key_routes(d, &k[i]) != REPO_OK)
			return REPO_ERR;
	return REPO_OK;
}
