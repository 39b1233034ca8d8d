/*
 * repo_notify.c - the webhook sender's statements (repo_notify.h): its
 * endpoints, the outbox, leases, outcomes and gauges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "log.h"
#include "repo_notify.h"
#include "repo_sql.h"

#define NOTIFY_CAP_STR		"100000"	/* NOTIFY_GAUGE_CAP */
#define TERMINAL_IN \
	"('completed', 'failed', 'expired', 'cancelled')"
/* a JSON array of ids joined to table t (alias a) by primary key */
#define IDS_JOIN(t, a) \
	"UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) " \
	"j STRAIGHT_JOIN " t " " a " FORCE INDEX (PRIMARY) ON " a ".id = j.id SET "
#define DELIVERY_COLS \
	"id, endpoint_id, webhook_id, body, attempts, created_at "
/* the endpoints a lease takes nothing of: "" or "3,17" (ids, no spaces) */
#define NOT_CAPPED	"AND FIND_IN_SET(endpoint_id, ?) = 0 "
/*
 * The outbox's statements wait at most 1 s for a row lock (the session
 * waits 10; the read of the marks skips locked rows): a batch that cannot
 * get one is rolled back, its marks stay for the next pass, and the
 * sender drives its transfers in between, long before a lease
 * (webhook_timeout + 5 s) lapses under them. So do the statements that
 * record a finished transfer (an outcome, a release, a 410's disable):
 * they run one after another in the loop, and a row an admin command
 * holds (an endpoint, a delivery it replays or removes) would stall the
 * recording of every other transfer for the session's 10 s; one that
 * times out is sent again when its lease lapses, or (a disable) tried
 * again the next pass (notify.c)
 */
#define OUTBOX_WAIT	"SET STATEMENT innodb_lock_wait_timeout = 1 FOR "

enum nstmt {
	NSTMT_ENDPOINTS,
	NSTMT_MARKED,
	NSTMT_FILTERS,
	NSTMT_DELIVERY_ADD,
	NSTMT_UNMARK,
	NSTMT_LAPSED,
	NSTMT_DUE,
	NSTMT_TAKE,
	NSTMT_DELIVERED,
	NSTMT_RETRY,
	NSTMT_DEAD,
	NSTMT_RELEASE,
	NSTMT_DISABLE,
	NSTMT_HOLD,
	NSTMT_GAUGES,
	NSTMT__MAX
};

static const struct db_stmt_def nstmts[NSTMT__MAX] = {
	/* events + 0: the SET's bits, completed 1 ... cancelled 8 */
	[NSTMT_ENDPOINTS] = {
	  "SELECT id, tenant_id, environment, service_key, operation_key, url, "
	  "events + 0, enabled, secret_sealed, secret_old_sealed, "
	  "secret_old_until FROM s2r_webhook_endpoint ORDER BY id",
	  1, "notify_endpoints" },
	/* a tenant's marked terminal rows: point ranges of ix_exec_tenant_open */
	[NSTMT_MARKED] = {
	  "SELECT id, environment, service_key, operation_key, correlation_id, "
	  "status, completed_at FROM s2r_async_execution FORCE INDEX "
	  "(ix_exec_tenant_open) WHERE initiator_tenant_id = ? AND status IN "
	  TERMINAL_IN " AND notify = 1 LIMIT ? FOR UPDATE SKIP LOCKED",
	  0, "notify_marked" },
	/* a tenant's enabled endpoints, read after its marks in the outbox's
	 * transaction; the share locks make a remove or disable that runs
	 * meanwhile wait for the commit (it then deletes or holds what was
	 * made), and a locking read sees what committed before it started */
	[NSTMT_FILTERS] = {
	  OUTBOX_WAIT "SELECT id, environment, service_key, operation_key, "
	  "events + 0 FROM s2r_webhook_endpoint FORCE INDEX "
	  "(ix_endpoint_tenant) WHERE tenant_id = ? AND enabled = 1 ORDER BY "
	  "id LOCK IN SHARE MODE", 0, "notify_filters" },
	/* a repeat (uq_delivery) changes nothing */
	[NSTMT_DELIVERY_ADD] = {
	  OUTBOX_WAIT "INSERT INTO s2r_webhook_delivery (endpoint_id, "
	  "execution_id, webhook_id, event, body, state, attempts, due_at, "
	  "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, "
	  "?) ON DUPLICATE KEY UPDATE id = id", 0, "notify_delivery_add" },
	[NSTMT_UNMARK] = {
	  OUTBOX_WAIT IDS_JOIN("s2r_async_execution", "e") "e.notify = 0 WHERE "
	  "e.notify = 1", 0, "notify_unmark" },
	/* the lease's two reads leave out the endpoints at their cap (a
	 * comma list, NOT_CAPPED): a filter on the rows the due_at range of
	 * ix_delivery_due reads, the plan unchanged */
	[NSTMT_LAPSED] = {
	  "SELECT " DELIVERY_COLS "FROM s2r_webhook_delivery FORCE INDEX "
	  "(ix_delivery_due) WHERE state = 'leased' AND due_at <= ? "
	  NOT_CAPPED "ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED",
	  0, "notify_lapsed" },
	/* a disabled endpoint's deliveries are held out of the due range
	 * (HOLD_SET, repo_sql.h), sent once it is enabled; the check of its
	 * enabled guards those that slip through (made or replayed as it is
	 * disabled): its row read by primary key per entry of the due range,
	 * in a subquery, which the FOR UPDATE does not lock */
	[NSTMT_DUE] = {
	  "SELECT " DELIVERY_COLS "FROM s2r_webhook_delivery d FORCE INDEX "
	  "(ix_delivery_due) WHERE d.state = 'pending' AND d.due_at <= ? AND "
	  "(SELECT w.enabled FROM s2r_webhook_endpoint w FORCE INDEX "
	  "(PRIMARY) WHERE w.id = d.endpoint_id) = 1 "
	  NOT_CAPPED "ORDER BY d.due_at LIMIT ? FOR UPDATE SKIP LOCKED",
	  0, "notify_due" },
	/* a compare-and-set that repeats the selection's rule (due: pending,
	 * or a lease that lapsed): a row that changed since the selection is
	 * not taken (affected rows fall short: nothing is leased), whatever
	 * the selection saw; on a Galera cluster its row locks are the
	 * node's own */
	[NSTMT_TAKE] = {
	  IDS_JOIN("s2r_webhook_delivery", "d") "d.state = 'leased', "
	  "d.due_at = ?, d.lease_token = ?, d.attempts = d.attempts + 1, "
	  "d.updated_at = ? WHERE d.state IN ('pending', 'leased') AND "
	  "d.due_at <= ?", 0, "notify_take" },
	[NSTMT_DELIVERED] = {
	  OUTBOX_WAIT "UPDATE s2r_webhook_delivery SET state = 'delivered', "
	  "lease_token = NULL, last_status = ?, last_error = ?, "
	  "delivered_at = ?, due_at = delivered_at, updated_at = ? "
	  "WHERE id = ? AND "
	  "state = 'leased' AND lease_token = ?", 0, "notify_delivered" },
	[NSTMT_RETRY] = {
	  OUTBOX_WAIT "UPDATE s2r_webhook_delivery SET state = 'pending', "
	  "lease_token = NULL, last_status = ?, last_error = ?, due_at = ?, "
	  "updated_at = ? WHERE id = ? AND state = 'leased' AND "
	  "lease_token = ?", 0, "notify_retry" },
	[NSTMT_DEAD] = {
	  OUTBOX_WAIT "UPDATE s2r_webhook_delivery SET state = 'dead', "
	  "lease_token = NULL, last_status = ?, last_error = ?, "
	  "updated_at = ?, due_at = updated_at WHERE id = ? AND "
	  "state = 'leased' AND "
	  "lease_token = ?", 0, "notify_dead" },
	[NSTMT_RELEASE] = {
	  OUTBOX_WAIT "UPDATE s2r_webhook_delivery SET state = 'pending', "
	  "lease_token = NULL, attempts = attempts - 1, last_error = ?, "
	  "due_at = ?, updated_at = ? WHERE id = ? AND state = 'leased' AND "
	  "lease_token = ?", 0, "notify_release" },
	[NSTMT_DISABLE] = {
	  OUTBOX_WAIT "UPDATE s2r_webhook_endpoint SET enabled = 0, "
	  "disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1",
	  0, "notify_disable" },
	[NSTMT_HOLD] = { OUTBOX_WAIT HOLD_SET, 0, "notify_hold" },
	/* each count stops at NOTIFY_GAUGE_CAP index entries */
	[NSTMT_GAUGES] = {
	  "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM s2r_webhook_delivery "
	  "FORCE INDEX (ix_delivery_due) WHERE state IN ('pending', 'leased') "
	  "LIMIT " NOTIFY_CAP_STR ") p), (SELECT MIN(created_at) FROM "
	  "(SELECT created_at FROM s2r_webhook_delivery FORCE INDEX "
	  "(ix_delivery_due) WHERE state IN ('pending', 'leased') LIMIT "
	  NOTIFY_CAP_STR ") o), (SELECT COUNT(*) FROM (SELECT 1 FROM "
	  "s2r_webhook_delivery FORCE INDEX (ix_delivery_due) WHERE state = "
	  "'dead' LIMIT " NOTIFY_CAP_STR ") d), (SELECT COUNT(*) FROM "
	  "s2r_webhook_endpoint WHERE enabled = 0), (SELECT COUNT(*) FROM "
	  "(SELECT 1 FROM (SELECT DISTINCT tenant_id FROM "
	  "s2r_webhook_endpoint) w STRAIGHT_JOIN s2r_async_execution e FORCE "
	  "INDEX (ix_exec_tenant_open) ON e.initiator_tenant_id = w.tenant_id "
	  "AND e.status IN " TERMINAL_IN " AND e.notify = 1 LIMIT "
	  NOTIFY_CAP_STR ") m)", 1, "notify_gauges" },
};

static const char *const event_names[NEV__MAX] = {
	[NEV_COMPLETED] = "completed",
	[NEV_FAILED] = "failed",
	[NEV_EXPIRED] = "expired",
	[NEV_CANCELLED] = "cancelled",
};

struct ndb {
	struct db	*db;
};

/* Opens the sender's repository (connects on first use). NULL: no memory. */
struct ndb *
repo_notify_open(const struct config *cfg)
{
	struct ndb	*n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	if ((n->db = db_new(cfg, nstmts, NSTMT__MAX, 0, 0)) == NULL) {
		free(n);
		return NULL;
	}
	return n;
}

void
repo_notify_close(struct ndb *n)
{
	if (n == NULL)
		return;
	db_free(n->db);
	free(n);
}

/* 1 when the database answers (connecting if need be), else 0. */
int
repo_notify_ready(struct ndb *n)
{
	return db_ready(n->db) == 0;
}

const char *
repo_notify_event_name(enum notify_event ev)
{
	return event_names[ev];
}

/*
 * The result of a failed statement or COMMIT: REPO_RETRY when a
 * conflict (1213: a deadlock or a Galera certification failure) or a
 * lock wait timeout undid it, else REPO_ERR.
 */
static enum repo_rc
failed(struct ndb *n)
{
	enum repo_rc	 rc = repo_failed(n->db);

	db_rollback(n->db);
	return rc;
}

/* Begins a transaction (connecting if need be). 0 or -1. */
static int
begin(struct ndb *n)
{
	return db_begin(n->db);
}

/* Renders ids as a JSON array into s (n * 21 + 3 bytes). */
static void
ids_json(const uint64_t *ids, size_t n, char *s, size_t cap)
{
	size_t	 i, k = 0;

	k += (size_t)snprintf(s + k, cap - k, "[");
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(s + k, cap - k, "%s%llu", i ? "," : "",
		    (unsigned long long)ids[i]);
	snprintf(s + k, cap - k, "]");
}

/* The enum of a status or event name; NEV__MAX when none. */
static enum notify_event
event_of(const char *s)
{
	int	 i;

	for (i = 0; i < NEV__MAX; i++)
		if (strcmp(s, event_names[i]) == 0)
			return (enum notify_event)i;
	return NEV__MAX;
}

/* Binds endpoint row columns into c over e, its URL into url. */
static void
endpoint_cols(struct db_cols *c, struct notify_endpoint *e,
    char url[NOTIFY_URL_MAX + 1], MYSQL_TIME *t)
{
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &e->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, e->tenant, sizeof(e->tenant));
	db_rcol(c, 2, MYSQL_TYPE_STRING, e->env, sizeof(e->env));
	db_rcol(c, 3, MYSQL_TYPE_STRING, e->svc, sizeof(e->svc));
	db_rcol(c, 4, MYSQL_TYPE_STRING, e->op, sizeof(e->op));
	db_rcol(c, 5, MYSQL_TYPE_STRING, url, NOTIFY_URL_MAX + 1);
	db_rcol(c, 6, MYSQL_TYPE_LONG, &e->events, 0);
	db_rcol(c, 7, MYSQL_TYPE_LONG, &e->enabled, 0);
	db_rcol(c, 8, MYSQL_TYPE_BLOB, e->sealed, sizeof(e->sealed));
	db_rcol(c, 9, MYSQL_TYPE_BLOB, e->old_sealed, sizeof(e->old_sealed));
	db_rcol(c, 10, MYSQL_TYPE_DATETIME, t, sizeof(*t));
}

/*
 * v (cap elements of sz bytes) with room for element n: v itself, or v
 * grown (cap doubled), or NULL (no memory, logged: v as it was).
 */
static void *
room(void *v, size_t *cap, size_t n, size_t sz)
{
	size_t	 c = *cap > 0 ? *cap * 2 : 64;

	if (n < *cap)
		return v;
	if (c > SIZE_MAX / sz || (v = realloc(v, c * sz)) == NULL) {
		log_error("notify: out of memory reading %zu endpoints", n);
		return NULL;
	}
	*cap = c;
	return v;
}

/* Frees l (read by repo_notify_endpoints): zeroed. */
void
repo_notify_endpoints_free(struct notify_endpoints *l)
{
	while (l->n > 0)
		free(l->v[--l->n].url);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/*
 * Every endpoint, by id, into l (l->n rows; l->v grown to hold them,
 * each URL copied to fit). REPO_OK or REPO_ERR (l->n rows read before
 * it failed).
 */
enum repo_rc
repo_notify_endpoints(struct ndb *n, struct notify_endpoints *l)
{
	struct notify_endpoint e, *v;
	struct db_cols	 c;
	MYSQL_STMT	*st;
	MYSQL_TIME	 t;
	char		 url[NOTIFY_URL_MAX + 1];
	int		 rc;

	while (l->n > 0)	/* the URLs of the last read */
		free(l->v[--l->n].url);
	if ((st = db_run(n->db, NSTMT_ENDPOINTS, NULL)) == NULL)
		return REPO_ERR;
	memset(&e, 0, sizeof(e));
	endpoint_cols(&c, &e, url, &t);
	while ((rc = db_fetch_row(st, &c)) == DB_ROW) {
		if ((v = room(l->v, &l->cap, l->n, sizeof(*v))) == NULL)
			break;
		l->v = v;
		db_rstr(&c, 1, e.tenant, sizeof(e.tenant));
		db_rstr(&c, 2, e.env, sizeof(e.env));
		db_rstr(&c, 3, e.svc, sizeof(e.svc));
		db_rstr(&c, 4, e.op, sizeof(e.op));
		db_rstr(&c, 5, url, sizeof(url));
		if ((e.url = strdup(url)) == NULL) {
			log_error("notify: out of memory reading %zu endpoints",
			    l->n);
			break;
		}
		e.sealed_len = c.null[8] ? 0 : c.len[8];
		e.old_len = c.null[9] ? 0 : c.len[9];
		e.old_until = c.null[10] ? 0 : db_time_ms(&t);
		l->v[l->n++] = e;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_NONE ? REPO_OK : REPO_ERR;
}

/* Reads the rows of an executed NSTMT_MARKED into out[0..max). */
static enum repo_rc
marked_read(MYSQL_STMT *st, struct notify_exec *out, size_t max, size_t *n)
{
	struct notify_exec x;
	struct db_cols	 c;
	MYSQL_TIME	 t;
	char		 status[20];
	int		 rc = DB_ROW_NONE;

	memset(&x, 0, sizeof(x));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &x.id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_STRING, x.env, sizeof(x.env));
	db_rcol(&c, 2, MYSQL_TYPE_STRING, x.svc, sizeof(x.svc));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, x.op, sizeof(x.op));
	db_rcol(&c, 4, MYSQL_TYPE_STRING, x.cid, sizeof(x.cid));
	db_rcol(&c, 5, MYSQL_TYPE_STRING, status, sizeof(status));
	db_rcol(&c, 6, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	while (*n < max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 1, x.env, sizeof(x.env));
		db_rstr(&c, 2, x.svc, sizeof(x.svc));
		db_rstr(&c, 3, x.op, sizeof(x.op));
		db_rstr(&c, 4, x.cid, sizeof(x.cid));
		db_rstr(&c, 5, status, sizeof(status));
		x.completed_at = c.null[6] ? 0 : db_time_ms(&t);
		if ((x.ev = event_of(status)) == NEV__MAX)
			continue;	/* the query asks for terminal ones only */
		out[(*n)++] = x;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/*
 * Begins an outbox batch: up to limit marked terminal executions of
 * tenant, locked until the commit, into out (*n). REPO_OK (the
 * transaction stays open, also with *n = 0), REPO_RETRY or REPO_ERR
 * (rolled back).
 */
enum repo_rc
repo_notify_outbox_begin(struct ndb *n, const char *tenant, unsigned limit,
    struct notify_exec *out, size_t *cnt)
{
	MYSQL_BIND	 p[2];
	MYSQL_STMT	*st;

	*cnt = 0;
	if (begin(n) == -1)
		return failed(n);
	db_bind_str(&p[0], tenant);
	db_bind_u32(&p[1], &limit);
	if ((st = db_run(n->db, NSTMT_MARKED, p)) == NULL ||
	    marked_read(st, out, limit, cnt) != REPO_OK)
		return failed(n);
	return REPO_OK;
}

/*
 * Within an outbox batch: tenant's enabled endpoints, by id, into l
 * (l->n; l->v grown to hold them). REPO_OK (the transaction stays open),
 * REPO_RETRY (a row lock not had within 1 s, OUTBOX_WAIT) or REPO_ERR
 * (also no memory; rolled back).
 */
enum repo_rc
repo_notify_outbox_filters(struct ndb *n, const char *tenant,
    struct notify_filters *l)
{
	struct notify_filter f, *v = NULL;
	struct db_cols	 c;
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	int		 rc = DB_ROW_NONE;

	l->n = 0;
	db_bind_str(&p[0], tenant);
	if ((st = db_run(n->db, NSTMT_FILTERS, p)) == NULL)
		return failed(n);
	memset(&f, 0, sizeof(f));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &f.id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_STRING, f.env, sizeof(f.env));
	db_rcol(&c, 2, MYSQL_TYPE_STRING, f.svc, sizeof(f.svc));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, f.op, sizeof(f.op));
	db_rcol(&c, 4, MYSQL_TYPE_LONG, &f.events, 0);
	while ((rc = db_fetch_row(st, &c)) == DB_ROW &&
	    (v = room(l->v, &l->cap, l->n, sizeof(*v))) != NULL) {
		l->v = v;
		db_rstr(&c, 1, f.env, sizeof(f.env));
		db_rstr(&c, 2, f.svc, sizeof(f.svc));
		db_rstr(&c, 3, f.op, sizeof(f.op));
		l->v[l->n++] = f;
	}
	if (rc != DB_ROW_ERR) {
		mysql_stmt_free_result(st);
		return rc == DB_ROW_NONE ? REPO_OK : failed(n);
	}
	/* a lock wait that timed out comes while the rows stream */
	db_fetch_failed(n->db, st);
	return failed(n);
}

/* Adds the delivery of x to endpoint_id (a repeat is no change). */
enum repo_rc
repo_notify_delivery_add(struct ndb *n, uint64_t endpoint_id,
    const struct notify_exec *x, const char *webhook_id, const char *body,
    size_t len, int64_t now)
{
	MYSQL_BIND	 p[8];
	MYSQL_TIME	 t[3];

	db_bind_u64(&p[0], &endpoint_id);
	db_bind_u64(&p[1], &x->id);
	db_bind_str(&p[2], webhook_id);
	db_bind_str(&p[3], event_names[x->ev]);
	db_bind_blob(&p[4], body, len);
	db_bind_time(&p[5], &t[0], now);
	db_bind_time(&p[6], &t[1], now);
	db_bind_time(&p[7], &t[2], now);
	if (db_run(n->db, NSTMT_DELIVERY_ADD, p) == NULL)
		return failed(n);
	return REPO_OK;
}

/* Clears the marks of the batch's rows and commits. As outbox_begin. */
enum repo_rc
repo_notify_outbox_commit(struct ndb *n, const struct notify_exec *x,
    size_t cnt)
{
	MYSQL_BIND	 p[1];
	uint64_t	*ids;
	char		*json;
	size_t		 i, cap = cnt * 21 + 3;
	int		 bad;

	if (cnt == 0) {
		db_rollback(n->db);
		return REPO_OK;
	}
	ids = calloc(cnt, sizeof(*ids));
	json = malloc(cap);
	if (ids == NULL || json == NULL) {
		free(ids);
		free(json);
		db_rollback(n->db);
		return REPO_ERR;
	}
	for (i = 0; i < cnt; i++)
		ids[i] = x[i].id;
	ids_json(ids, cnt, json, cap);
	db_bind_str(&p[0], json);
	bad = db_run(n->db, NSTMT_UNMARK, p) == NULL || db_commit(n->db) == -1;
	free(ids);
	free(json);
	return bad ? failed(n) : REPO_OK;
}

void
repo_notify_outbox_abort(struct ndb *n)
{
	db_rollback(n->db);
}

/* Reads delivery rows of an executed lease query into out[*n..max). */
static enum repo_rc
delivery_read(MYSQL_STMT *st, struct notify_delivery *out, size_t max,
    size_t *n)
{
	struct notify_delivery d;
	struct db_cols	 c;
	MYSQL_TIME	 t;
	int		 rc = DB_ROW_NONE;

	memset(&d, 0, sizeof(d));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &d.id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONGLONG, &d.endpoint_id, 0);
	db_rcol(&c, 2, MYSQL_TYPE_STRING, d.webhook_id, sizeof(d.webhook_id));
	db_rcol(&c, 3, MYSQL_TYPE_BLOB, d.body, sizeof(d.body) - 1);
	db_rcol(&c, 4, MYSQL_TYPE_LONG, &d.attempts, 0);
	db_rcol(&c, 5, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	while (*n < max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 2, d.webhook_id, sizeof(d.webhook_id));
		d.body_len = c.len[3];
		d.body[d.body_len] = '\0';
		d.attempts++;	/* this attempt */
		d.created_at = db_time_ms(&t);
		out[(*n)++] = d;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}

/* How many of endpoint e's transfers busy and taken[0..n) count. */
static size_t
cap_count(const struct notify_cap *cap, const struct notify_delivery *taken,
    size_t n, uint64_t e)
{
	size_t	 i, k = 0;

	for (i = 0; i < cap->nbusy; i++)
		k += cap->busy[i] == e;
	for (i = 0; i < n; i++)
		k += taken[i].endpoint_id == e;
	return k;
}

/*
 * The endpoints at cap->max in cap->busy as NOT_CAPPED's list into s
 * (cap->nbusy * 21 + 1 bytes): each once.
 */
static void
capped_list(const struct notify_cap *cap, char *s, size_t sz)
{
	size_t	 i, j, k = 0;

	s[0] = '\0';
	for (i = 0; i < cap->nbusy; i++) {
		for (j = 0; j < i && cap->busy[j] != cap->busy[i]; j++)
			;
		if (j < i || cap_count(cap, NULL, 0, cap->busy[i]) < cap->max)
			continue;	/* listed already, or under the cap */
		k += (size_t)snprintf(s + k, sz - k, "%s%llu", k ? "," : "",
		    (unsigned long long)cap->busy[i]);
	}
}

/*
 * Runs lease query id for rows due at now, not of the endpoints in
 * capped, adding to out[*cnt..max) those whose endpoint is under
 * cap->max with them (cap->skipped counts the others).
 */
static enum repo_rc
lease_select(struct ndb *n, enum nstmt id, int64_t now, const char *capped,
    struct notify_cap *cap, size_t max, struct notify_delivery *out,
    size_t *cnt)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;
	unsigned	 lim = (unsigned)(max - *cnt);
	size_t		 i, k = *cnt;

	if (lim == 0)
		return REPO_OK;
	db_bind_time(&p[0], &t, now);
	db_bind_str(&p[1], capped);
	db_bind_u32(&p[2], &lim);
	if ((st = db_run(n->db, id, p)) == NULL ||
	    delivery_read(st, out, max, cnt) != REPO_OK)
		return REPO_ERR;
	for (i = k; i < *cnt; i++)	/* read, locked: taken or left */
		if (cap_count(cap, out, k, out[i].endpoint_id) < cap->max)
			out[k++] = out[i];
		else
			cap->skipped++;
	*cnt = k;
	return REPO_OK;
}

/* Takes the cnt deliveries read into out under token: 0 or -1. */
static int
lease_take(struct ndb *n, int64_t now, int64_t lease_ms,
    const unsigned char token[NOTIFY_TOKEN_LEN],
    const struct notify_delivery *out, size_t cnt)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t[3];
	uint64_t	*ids;
	char		*json;
	size_t		 i, cap = cnt * 21 + 3;
	int		 bad;

	ids = calloc(cnt, sizeof(*ids));
	json = malloc(cap);
	bad = ids == NULL || json == NULL;
	if (!bad) {
		for (i = 0; i < cnt; i++)
			ids[i] = out[i].id;
		ids_json(ids, cnt, json, cap);
		db_bind_str(&p[0], json);
		db_bind_time(&p[1], &t[0], now + lease_ms);
		db_bind_blob(&p[2], token, NOTIFY_TOKEN_LEN);
		db_bind_time(&p[3], &t[1], now);
		db_bind_time(&p[4], &t[2], now);
		bad = db_run(n->db, NSTMT_TAKE, p) == NULL ||
		    db_affected(n->db, NSTMT_TAKE) != (int)cnt;
	}
	free(ids);
	free(json);
	return bad ? -1 : 0;
}

/*
 * Leases up to limit due deliveries (repo_notify.h): they are handed out
 * only after the COMMIT succeeded. REPO_OK, REPO_RETRY or REPO_ERR
 * (nothing leased).
 */
enum repo_rc
repo_notify_lease(struct ndb *n, int64_t now, int64_t lease_ms,
    unsigned limit, struct notify_cap *cap,
    const unsigned char token[NOTIFY_TOKEN_LEN],
    struct notify_delivery *out, size_t *cnt)
{
	char		*capped;
	size_t		 i;

	*cnt = 0;
	cap->skipped = 0;
	if ((capped = malloc(cap->nbusy * 21 + 1)) == NULL)
		return REPO_ERR;
	capped_list(cap, capped, cap->nbusy * 21 + 1);
	if (begin(n) == -1 || lease_select(n, NSTMT_LAPSED, now, capped, cap,
	    limit, out, cnt) != REPO_OK || lease_select(n, NSTMT_DUE, now,
	    capped, cap, limit, out, cnt) != REPO_OK)
		goto fail;
	free(capped);
	if (*cnt == 0) {
		db_rollback(n->db);
		return REPO_OK;
	}
	if (lease_take(n, now, lease_ms, token, out, *cnt) == -1 ||
	    db_commit(n->db) == -1) {
		*cnt = 0;
		return failed(n);
	}
	for (i = 0; i < *cnt; i++) {
		out[i].leased_at = now;
		out[i].lease_until = now + lease_ms;
	}
	return REPO_OK;
fail:
	free(capped);
	*cnt = 0;
	return failed(n);
}

/*
 * Records an attempt's outcome (repo_notify.h). REPO_OK (*held says
 * whether the lease was still ours) or REPO_ERR.
 */
enum repo_rc
repo_notify_record(struct ndb *n, uint64_t id,
    const unsigned char token[NOTIFY_TOKEN_LEN], enum notify_state s,
    unsigned http_status, const char *error, int64_t due, int64_t now,
    int *held)
{
	MYSQL_BIND	 p[6];
	MYSQL_TIME	 t[2];
	enum nstmt	 k = NSTMT_DEAD;
	int		 i = 0;

	*held = 0;
	db_bind_u32(&p[i++], &http_status);
	db_bind_str(&p[i++], error);
	switch (s) {
	case NST_DELIVERED:
		k = NSTMT_DELIVERED;
		db_bind_time(&p[i++], &t[0], now);
		break;
	case NST_RETRY:
		k = NSTMT_RETRY;
		db_bind_time(&p[i++], &t[0], due);
		break;
	case NST_DEAD:
		break;
	}
	db_bind_time(&p[i++], &t[1], now);
	db_bind_u64(&p[i++], &id);
	db_bind_blob(&p[i++], token, NOTIFY_TOKEN_LEN);
	if (db_ready(n->db) == -1 || db_run(n->db, k, p) == NULL)
		return REPO_ERR;
	*held = db_affected(n->db, k) == 1;
	return REPO_OK;
}

/* Puts a leased delivery back, the attempt not counted. */
enum repo_rc
repo_notify_release(struct ndb *n, uint64_t id,
    const unsigned char token[NOTIFY_TOKEN_LEN], int64_t due, const char *why,
    int64_t now)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t[2];

	db_bind_str(&p[0], why);
	db_bind_time(&p[1], &t[0], due);
	db_bind_time(&p[2], &t[1], now);
	db_bind_u64(&p[3], &id);
	db_bind_blob(&p[4], token, NOTIFY_TOKEN_LEN);
	if (db_ready(n->db) == -1 || db_run(n->db, NSTMT_RELEASE, p) == NULL)
		return REPO_ERR;
	return REPO_OK;
}

/*
 * Disables an endpoint and holds its pending deliveries out of the due
 * range (HOLD_ROWS a statement). REPO_OK (also when it was disabled
 * already), REPO_RETRY (a row not had within 1 s) or REPO_ERR.
 */
enum repo_rc
repo_notify_disable(struct ndb *n, uint64_t endpoint_id, const char *reason,
    int64_t now)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_str(&p[0], reason);
	db_bind_time(&p[1], &t, now);
	db_bind_u64(&p[2], &endpoint_id);
	if (db_ready(n->db) == -1)
		return REPO_ERR;
	if (db_run(n->db, NSTMT_DISABLE, p) == NULL)
		return repo_failed(n->db);
	do {
		if (db_run(n->db, NSTMT_HOLD, &p[2]) == NULL)
			return repo_failed(n->db);
	} while (db_affected(n->db, NSTMT_HOLD) == HOLD_ROWS);
	return REPO_OK;
}

/* The gauges of /metrics, each count capped. REPO_OK or REPO_ERR. */
enum repo_rc
repo_notify_gauges(struct ndb *n, struct notify_gauges *g)
{
	struct db_cols	 c;
	MYSQL_STMT	*st;
	MYSQL_TIME	 t;
	int		 rc;

	memset(g, 0, sizeof(*g));
	if (db_ready(n->db) == -1 ||
	    (st = db_run(n->db, NSTMT_GAUGES, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &g->pending, 0);
	db_rcol(&c, 1, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	db_rcol(&c, 2, MYSQL_TYPE_LONGLONG, &g->dead, 0);
	db_rcol(&c, 3, MYSQL_TYPE_LONGLONG, &g->disabled, 0);
	db_rcol(&c, 4, MYSQL_TYPE_LONGLONG, &g->marked, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return REPO_ERR;
	g->oldest_ms = c.null[1] ? 0 : db_time_ms(&t);
	return REPO_OK;
}
