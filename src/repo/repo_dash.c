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
#include "repo_dash_sql.h"
#include "repo_rollup.h"
#include "repo_sql.h"

#define PAGE_LIMIT	" LIMIT 51"	/* DASH_PAGE_MAX + 1: is there more */
#define HOUR_MS		3600000LL
#define DAY_MS		86400000LL

/*
 * An Attention row (struct dash_att_row) of execution e, at the time
 * column "at"; the error (a failure's, or the last retryable one's) gives
 * its code and its message only when the first two parameters are 1
 * (dashboard_show_errors: a payload's members, API.md). */
#define ERR_DOC \
	"CONVERT(COALESCE(e.error_payload, e.last_error) USING utf8mb4)"
#define ATT_COLS(at) \
	"SELECT e.id, e.environment, e.service_key, e.operation_key, " \
	"e.initiator_tenant_id, e.created_at, " at ", e.attempts, " \
	"IF(? = 1, LEFT(JSON_VALUE(" ERR_DOC ", '$.code'), 64), NULL), " \
	"IF(? = 1, LEFT(JSON_VALUE(" ERR_DOC ", '$.message'), 200), NULL) "
/*
 * The first cap waiting executions: all (nearest expiry first) or a
 * route's (in claim order); each of their rows is read when the
 * statement filters on a column outside the index (about 4 us a row).
 */
#define WAIT_ALL(cap) \
	"FROM (SELECT id FROM s2r_async_execution FORCE INDEX (ix_exec_expiry) " \
	"WHERE status = 'waiting_callback' ORDER BY expires_at, id LIMIT " \
	cap ") w STRAIGHT_JOIN s2r_async_execution e ON e.id = w.id "
#define WAIT_ROUTE(cap) \
	"FROM (SELECT id FROM s2r_async_execution FORCE INDEX (ix_exec_claim) " \
	ROUTE_WAITING "LIMIT " cap ") w " \
	"STRAIGHT_JOIN s2r_async_execution e ON e.id = w.id "
/* The DASH_RECENT_WINDOW of status st that ended last (ix_exec_completed
 * read backwards, sql/013), latest first. */
#define RECENT(st) \
	"FROM (SELECT id FROM s2r_async_execution FORCE INDEX " \
	"(ix_exec_completed) WHERE status = '" st "' ORDER BY completed_at " \
	"DESC, id DESC LIMIT " DASH_RECENT_WINDOW_STR ") w STRAIGHT_JOIN " \
	"s2r_async_execution e ON e.id = w.id "
/* All routes (the first parameter '') or this one. */
#define ONLY_ROUTE \
	"(? = '' OR (e.environment = ? AND e.service_key = ? AND " \
	"e.operation_key = ?)) "
#define RECENT_ORDER \
	"ORDER BY e.completed_at DESC, e.id DESC LIMIT ?, ?"

static const struct db_stmt_def dstmts[D__MAX] = {
	[D_ROUTES] = {
	    "SELECT id, environment, service_key, operation_key, "
	    "retention_days, enabled FROM s2r_route WHERE id > ? "
	    "ORDER BY id" PAGE_LIMIT, 1, "dash_routes" },
	/*
	 * The route's waiting range of ix_exec_claim: its first DASH_OPEN_CAP
	 * entries counted from the index alone (about 1 us an entry), the
	 * oldest one's created_at by primary key (repo_sql.h OPEN_HEAD: the
	 * lowest id among them due, with no live lease and not
	 * cancel-requested, as GET /metrics), and the rows of its first
	 * DASH_DETAIL_CAP in the index's order read for the rest (about 4 us
	 * a row; ordered by cancel_requested, id it was a filesort of every
	 * waiting execution of the route, sql/011)
	 */
	[D_ROUTE_OPEN] = {
	    "SELECT a.n, d.leased, d.retrying, d.claimable, a.cancel, "
	    OPEN_OLDEST ", d.scheduled FROM " OPEN_HEAD(DASH_OPEN_CAP_STR)
	    "JOIN (SELECT "
	    "COALESCE(SUM(lease_expires_at > ?), 0) AS leased, "
	    "COALESCE(SUM(not_before > ? AND attempts > 0), 0) AS retrying, "
	    "COALESCE(SUM(cancel_requested "
	    "= 0 AND (lease_expires_at IS NULL OR lease_expires_at <= ?) AND "
	    "(not_before IS NULL OR not_before <= ?)), 0) AS claimable, "
	    "COALESCE(SUM(not_before > ? AND attempts = 0), 0) AS scheduled "
	    "FROM (SELECT lease_expires_at, not_before, cancel_requested, "
	    "attempts FROM s2r_async_execution FORCE INDEX (ix_exec_claim) "
	    ROUTE_WAITING "ORDER BY cancel_requested, priority DESC, due_at, id "
	    "LIMIT " DASH_DETAIL_CAP_STR ") y) d",
	    1, "dash_route_open" },
	/* the rollup's last day of the route (sql/013), by primary key; the
	 * second sum: the intervals that started at or after the first ? */
	[D_ROUTE_ENDED] = {
	    "SELECT status, CAST(SUM(ended) AS UNSIGNED), CAST(SUM(IF(bucket "
	    ">= ?, ended, 0)) AS UNSIGNED) FROM s2r_route_outcome WHERE "
	    "environment = ? AND service_key = ? AND operation_key = ? AND "
	    "bucket >= ? GROUP BY status", 1, "dash_route_ended" },
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
	[D_ATT_WAITING] = {
	    ATT_COLS("e.expires_at") "FROM s2r_async_execution e FORCE INDEX "
	    "(ix_exec_expiry) WHERE e.status = 'waiting_callback' ORDER BY "
	    "e.expires_at, e.id LIMIT ?, ?", 1, "dash_att_waiting" },
	[D_ATT_WAITING_R] = {
	    ATT_COLS("e.expires_at") WAIT_ROUTE(DASH_OPEN_CAP_STR)
	    "ORDER BY w.id LIMIT ?, ?",
	    1, "dash_att_waiting_route" },
	/* the first DASH_LAST_CAP entries of the range attempts IN (max - 1,
	 * max) of ix_exec_abandon, in its order (the range holds the
	 * finished executions too: max_attempts = 1, every one) */
	[D_ATT_LAST] = {
	    ATT_COLS("e.lease_expires_at") "FROM (SELECT id, attempts FROM "
	    "s2r_async_execution FORCE INDEX (ix_exec_abandon) WHERE attempts "
	    "IN (?, ?) ORDER BY attempts, id LIMIT " DASH_LAST_CAP_STR ") w "
	    "STRAIGHT_JOIN s2r_async_execution e ON e.id = w.id WHERE "
	    "e.status = 'waiting_callback' AND ((e.attempts = ? AND "
	    "(e.lease_expires_at IS NULL OR e.lease_expires_at <= ?)) OR "
	    "(e.attempts = ? AND e.lease_expires_at > ?)) AND " ONLY_ROUTE
	    "ORDER BY w.attempts, w.id LIMIT ?, ?", 1, "dash_att_last" },
	/* whether that range reached DASH_LAST_CAP: from the index alone */
	[D_ATT_LAST_SEEN] = {
	    "SELECT COUNT(*) FROM (SELECT 1 FROM s2r_async_execution FORCE "
	    "INDEX (ix_exec_abandon) WHERE attempts IN (?, ?) LIMIT "
	    DASH_LAST_CAP_STR ") w", 1, "dash_att_last_seen" },
	/* every row of the window read: DASH_DETAIL_CAP, not DASH_OPEN_CAP
	 * (10000 rows: 30 ms of database time, the page's p99 over 100 ms
	 * in scripts/bench.sh with 5,000,000 rows) */
	[D_ATT_LAPSED] = {
	    ATT_COLS("e.lease_expires_at") WAIT_ALL(DASH_DETAIL_CAP_STR)
	    "WHERE e.lease_expires_at <= ? ORDER BY e.lease_expires_at, e.id LIMIT ?, ?",
	    1, "dash_att_lapsed" },
	[D_ATT_LAPSED_R] = {
	    ATT_COLS("e.lease_expires_at") WAIT_ROUTE(DASH_DETAIL_CAP_STR)
	    "WHERE e.lease_expires_at <= ? ORDER BY e.lease_expires_at, e.id LIMIT ?, ?",
	    1, "dash_att_lapsed_route" },
	/* abandoned (the second parameter 1): the error asyncexec-expire writes */
	[D_ATT_FAILED] = {
	    ATT_COLS("e.completed_at") RECENT("failed") "WHERE (? = 0 OR "
	    "e.error_payload LIKE '{\"message\":\"abandoned after %') AND "
	    ONLY_ROUTE RECENT_ORDER, 1, "dash_att_failed" },
	[D_ATT_EXPIRED] = {
	    ATT_COLS("e.completed_at") RECENT("expired") "WHERE " ONLY_ROUTE
	    RECENT_ORDER, 1, "dash_att_expired" },
	[D_TENANTS] = {
	    "SELECT tenant_id, max_open FROM s2r_tenant WHERE tenant_id > ? "
	    "ORDER BY tenant_id" PAGE_LIMIT, 1, "dash_tenants" },
	/* the quota's count (repo_tenant.c): a capped range of ix_exec_tenant_open */
	[D_TENANT_OPEN] = {
	    "SELECT COUNT(*) FROM (SELECT 1 FROM s2r_async_execution "
	    "FORCE INDEX (ix_exec_tenant_open) WHERE initiator_tenant_id = ? "
	    "AND status = 'waiting_callback' LIMIT ?) w", 1, "dash_tenant_open" },
	/* disabled first; only the URL up to its third slash is read */
	[D_WH_ENDPOINTS] = {
	    "SELECT id, tenant_id, COALESCE(CONCAT(environment, '/', "
	    "service_key, '/', operation_key), ''), LEFT(SUBSTRING_INDEX(url, "
	    "'/', 3), " "255), enabled, disabled_reason FROM s2r_webhook_endpoint "
	    "WHERE enabled > ? OR (enabled = ? AND id > ?) ORDER BY enabled, id"
	    PAGE_LIMIT, 1, "dash_webhooks" },
	/* the backlog's first DASH_DELIVERY_CAP entries of ix_delivery_due */
	[D_WH_PENDING] = {
	    "SELECT endpoint_id, COUNT(*), MIN(created_at) FROM (SELECT "
	    "endpoint_id, created_at FROM s2r_webhook_delivery FORCE INDEX "
	    "(ix_delivery_due) WHERE state IN ('pending', 'leased') ORDER BY "
	    "state, due_at LIMIT " DASH_DELIVERY_CAP_STR ") w GROUP BY "
	    "endpoint_id", 1, "dash_wh_pending" },
	/* the latest DASH_DELIVERY_CAP dead ones (due_at: when they died) */
	[D_WH_DEAD] = {
	    "SELECT endpoint_id, COUNT(*), NULL FROM (SELECT endpoint_id FROM "
	    "s2r_webhook_delivery FORCE INDEX (ix_delivery_due) WHERE state = "
	    "'dead' ORDER BY due_at DESC LIMIT " DASH_DELIVERY_CAP_STR ") w "
	    "GROUP BY endpoint_id", 1, "dash_wh_dead" },
};

static const char *const dparams[D__MAX] = {
	[D_ROUTES] = "n",
	[D_ROUTE_OPEN] = "ttssstttttsss",
	[D_ROUTE_ENDED] = "tssst",
	[D_EXEC] = "n",
	[D_KEYS] = "n",
	[D_KEY_ROUTES] = "n",
	[D_ATT_WAITING] = "nnnn",
	[D_ATT_WAITING_R] = "nnsssnn",
	[D_ATT_LAST] = "nnnnntntssssnn",
	[D_ATT_LAST_SEEN] = "nn",
	[D_ATT_LAPSED] = "nntnn",
	[D_ATT_LAPSED_R] = "nnssstnn",
	[D_ATT_FAILED] = "nnnssssnn",
	[D_ATT_EXPIRED] = "nnssssnn",
	[D_TENANTS] = "s",
	[D_TENANT_OPEN] = "sn",
	[D_WH_ENDPOINTS] = "nnn",
	[D_WH_PENDING] = "",
	[D_WH_DEAD] = "",
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
 * Route r's waiting executions at time now into o (struct dash_open:
 * which ones each figure counts). REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_route_open(struct ddb *d, const struct dash_route *r, int64_t now,
    struct dash_open *o)
{
	MYSQL_BIND		 p[13];
	MYSQL_TIME		 t[8];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned long long	 v[6] = { 0, 0, 0, 0, 0, 0 };
	int			 i, rc;

	memset(o, 0, sizeof(*o));
	for (i = 2; i <= 10; i += 8) {	/* the two ranges' route */
		db_bind_str(&p[i], r->env);
		db_bind_str(&p[i + 1], r->svc);
		db_bind_str(&p[i + 2], r->op);
	}
	db_bind_time(&p[0], &t[6], now);	/* the oldest: due, no lease */
	db_bind_time(&p[1], &t[7], now);
	for (i = 0; i < 5; i++)
		db_bind_time(&p[5 + i], &t[i], now);
	if ((st = db_run(d->db, D_ROUTE_OPEN, p)) == NULL)
		return REPO_ERR;
	for (i = 0; i < 5; i++)
		db_rcol(&c, i, MYSQL_TYPE_LONGLONG, &v[i], 0);
	db_rcol(&c, 5, MYSQL_TYPE_DATETIME, &t[5], sizeof(t[5]));
	db_rcol(&c, 6, MYSQL_TYPE_LONGLONG, &v[5], 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
	o->waiting = (unsigned)v[0];
	o->leased = (unsigned)v[1];
	o->retrying = (unsigned)v[2];
	o->claimable = (unsigned)v[3];
	o->cancel_requested = (unsigned)v[4];
	o->oldest_ms = c.null[5] ? 0 : db_time_ms(&t[5]);
	o->scheduled = (unsigned)v[5];
	return REPO_OK;
}

/*
 * Route r's executions that ended in the last day and hour at now, by
 * status, from the rollup (sql/013) into e: the 5-minute interval of now
 * and those before it that make up a day (288) and an hour (12).
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_route_ended(struct ddb *d, const struct dash_route *r, int64_t now,
    struct dash_ended *e)
{
	int64_t			 cur = now - now % ROLLUP_BUCKET_MS;
	int64_t			 day_from = cur - DAY_MS + ROLLUP_BUCKET_MS;
	int64_t			 hour_from = cur - HOUR_MS + ROLLUP_BUCKET_MS;
	MYSQL_BIND		 p[5];
	MYSQL_TIME		 t[2];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	char			 status[16];
	unsigned long long	 day, hour;
	enum exec_status	 s;
	int			 rc;

	memset(e, 0, sizeof(*e));
	db_bind_time(&p[0], &t[0], hour_from);
	db_bind_str(&p[1], r->env);
	db_bind_str(&p[2], r->svc);
	db_bind_str(&p[3], r->op);
	db_bind_time(&p[4], &t[1], day_from);
	if ((st = db_run(d->db, D_ROUTE_ENDED, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, status, sizeof(status));
	db_rcol(&c, 1, MYSQL_TYPE_LONGLONG, &day, 0);
	db_rcol(&c, 2, MYSQL_TYPE_LONGLONG, &hour, 0);
	while ((rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 0, status, sizeof(status));
		if ((s = exec_status_parse(status)) < ST__MAX) {
			e->day[s] = day;
			e->hour[s] = hour;
		}
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
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

/* Tenant t's waiting executions, counted as its quota counts them. */
static enum repo_rc
tenant_open(struct ddb *d, struct dash_tenant *t)
{
	MYSQL_BIND		 p[2];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned long long	 v = 0;
	unsigned		 cap;
	int			 rc;

	cap = t->max_open > 0 && t->max_open < DASH_OPEN_CAP ?
	    t->max_open + 1 : DASH_OPEN_CAP;
	db_bind_str(&p[0], t->tenant);
	db_bind_u32(&p[1], &cap);
	if ((st = db_run(d->db, D_TENANT_OPEN, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &v, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return REPO_ERR;
	t->open = (unsigned)v;
	t->capped = cap == DASH_OPEN_CAP && v >= DASH_OPEN_CAP;
	return REPO_OK;
}

/*
 * The tenants with a quota whose id sorts after after ("": from the
 * first), by id, into t (max entries, at most DASH_PAGE_MAX + 1), each
 * with its waiting executions. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_tenants(struct ddb *d, const char *after, struct dash_tenant *t,
    size_t max, size_t *n)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc = DB_ROW;
	size_t		 i;

	*n = 0;
	db_bind_str(&p[0], after);
	if ((st = db_run(d->db, D_TENANTS, p)) == NULL)
		return REPO_ERR;
	while (*n < max) {
		memset(&t[*n], 0, sizeof(t[*n]));
		db_rcol(&c, 0, MYSQL_TYPE_STRING, t[*n].tenant,
		    sizeof(t[*n].tenant));
		db_rcol(&c, 1, MYSQL_TYPE_LONG, &t[*n].max_open, 0);
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		db_rstr(&c, 0, t[*n].tenant, sizeof(t[*n].tenant));
		(*n)++;
	}
	mysql_stmt_free_result(st);
	if (rc == DB_ROW_ERR)
		return REPO_ERR;
	for (i = 0; i < *n && i < DASH_PAGE_MAX; i++)
		if (tenant_open(d, &t[i]) != REPO_OK)
			return REPO_ERR;
	return REPO_OK;
}

/* Fetches the next D_WH_ENDPOINTS row of st into w. */
static enum db_row
webhook_fetch(MYSQL_STMT *st, struct dash_webhook *w)
{
	struct db_cols	 c;
	enum db_row	 rc;
	char		*q;

	memset(w, 0, sizeof(*w));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &w->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_STRING, w->tenant, sizeof(w->tenant));
	db_rcol(&c, 2, MYSQL_TYPE_STRING, w->route, sizeof(w->route));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, w->origin, sizeof(w->origin));
	db_rcol(&c, 4, MYSQL_TYPE_LONG, &w->enabled, 0);
	db_rcol(&c, 5, MYSQL_TYPE_STRING, w->reason, sizeof(w->reason));
	if ((rc = db_fetch_row(st, &c)) != DB_ROW)
		return rc;
	db_rstr(&c, 1, w->tenant, sizeof(w->tenant));
	db_rstr(&c, 2, w->route, sizeof(w->route));
	db_rstr(&c, 3, w->origin, sizeof(w->origin));
	db_rstr(&c, 5, w->reason, sizeof(w->reason));
	/* a URL without a path: its query or fragment is not shown either */
	if ((q = strpbrk(w->origin, "?#")) != NULL)
		*q = '\0';
	return DB_ROW;
}

/*
 * Adds statement s's counts (endpoint, count, oldest) to the endpoints
 * w[0..n-1]; *capped 1 when the read stopped at DASH_DELIVERY_CAP.
 */
static enum repo_rc
webhook_counts(struct ddb *d, enum dstmt s, struct dash_webhook *w, size_t n,
    int *capped)
{
	MYSQL_STMT		*st;
	MYSQL_TIME		 t;
	struct db_cols		 c;
	unsigned long long	 cnt, total = 0;
	uint64_t		 ep;
	size_t			 i;
	int			 rc;

	if ((st = db_run(d->db, s, NULL)) == NULL)
		return REPO_ERR;
	for (;;) {
		cnt = 0;
		db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &ep, 0);
		db_rcol(&c, 1, MYSQL_TYPE_LONGLONG, &cnt, 0);
		db_rcol(&c, 2, MYSQL_TYPE_DATETIME, &t, sizeof(t));
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		total += cnt;
		for (i = 0; i < n; i++) {
			if (w[i].id != ep)
				continue;
			if (s == D_WH_PENDING) {
				w[i].pending = (unsigned)cnt;
				w[i].oldest_pending = c.null[2] ? 0 :
				    db_time_ms(&t);
			} else
				w[i].dead = (unsigned)cnt;
		}
	}
	mysql_stmt_free_result(st);
	*capped = total >= DASH_DELIVERY_CAP;
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/*
 * The webhook endpoints after (after_enabled, after_id) in the order
 * disabled first, then by id, into w (max entries, at most DASH_PAGE_MAX
 * + 1), each with its delivery counts (*caps: which reached their cap).
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_dash_webhooks(struct ddb *d, int after_enabled, uint64_t after_id,
    struct dash_webhook *w, size_t max, size_t *n, struct dash_wh_caps *caps)
{
	MYSQL_BIND	 p[3];
	MYSQL_STMT	*st;
	unsigned	 en = after_enabled ? 1 : 0;
	enum db_row	 rc = DB_ROW;

	*n = 0;
	memset(caps, 0, sizeof(*caps));
	db_bind_u32(&p[0], &en);
	db_bind_u32(&p[1], &en);
	db_bind_u64(&p[2], &after_id);
	if ((st = db_run(d->db, D_WH_ENDPOINTS, p)) == NULL)
		return REPO_ERR;
	while (*n < max && (rc = webhook_fetch(st, &w[*n])) == DB_ROW)
		(*n)++;
	mysql_stmt_free_result(st);
	if (rc == DB_ROW_ERR)
		return REPO_ERR;
	if (*n == 0)
		return REPO_OK;
	if (webhook_counts(d, D_WH_PENDING, w, *n, &caps->pending) != REPO_OK ||
	    webhook_counts(d, D_WH_DEAD, w, *n, &caps->dead) != REPO_OK)
		return REPO_ERR;
	return REPO_OK;
}
