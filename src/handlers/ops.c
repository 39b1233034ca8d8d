/*
 * ops.c - GET /healthz (process up), /readyz (database reachable and
 * schema current: ready or not, nothing more), /readyz/detail (why, for
 * the loopback metrics server), /metrics (Prometheus text),
 * /v1/openapi.json (the API's OpenAPI document, embedded at build time).
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "openapi.h"
#include "handlers.h"

enum herr
handle_healthz(struct app *app, struct req *req, struct resp *resp)
{
	(void)app;
	(void)req;
	buf_puts(&resp->body, "{\"status\":\"ok\"}");
	resp_json(resp, 200);
	return HERR_OK;
}

/* Whether this host can serve, and if not, why. */
enum readiness {
	READY,			/* database, node and schema fit */
	NOT_DB,			/* the database did not answer */
	NOT_LOGIN,		/* it refused the connect (1045, 1044, 1049) */
	NOT_NODE,		/* the Galera node is not Synced and Primary */
	NOT_BEHIND,		/* the schema is older than this build's */
	NOT_AHEAD		/* newer, and not compatible with this build */
};

/*
 * The node's state (into n): READY when this worker's node is Synced in
 * the Primary component (or runs no Galera), NOT_NODE (logged once per
 * state change, not once per probe), NOT_LOGIN or NOT_DB.
 */
static enum readiness
node_ready(struct app *app, struct repo_node *n)
{
	static int	 logged;

	if (repo_node_state(app->db, n) != REPO_OK)
		return repo_cause(app->db) == CAUSE_LOGIN ? NOT_LOGIN : NOT_DB;
	if (n->ready) {
		logged = 0;
		return READY;
	}
	if (!logged)
		log_warn("not ready: the database node %s is %s in a %s "
		    "component, not Synced in the Primary one", n->addr[0] ?
		    n->addr : "(db_host)", n->state, n->status);
	logged = 1;
	return NOT_NODE;
}

/*
 * READY when the database answers and its schema is the version this
 * build needs, or a newer one whose every newer migration is marked
 * compatible with this build (a rolling upgrade: see sql/005), and on a
 * Galera cluster its node is Synced and Primary; else why not. n gets
 * the node, *v the schema version. A schema state is logged once per
 * worker, not once per probe.
 */
static enum readiness
readiness(struct app *app, struct repo_node *n, int *v)
{
	static int	 logged_version = -1;
	enum readiness	 r;
	int		 needs;

	if ((r = node_ready(app, n)) != READY)
		return r;
	if (repo_schema_compat(app->db, SCHEMA_VERSION, v, &needs) != REPO_OK)
		return NOT_DB;
	if (*v >= SCHEMA_VERSION && (*v == SCHEMA_VERSION ||
	    needs <= SCHEMA_VERSION)) {
		logged_version = -1;
		return READY;
	}
	if (logged_version != *v)
		log_warn("not ready: the database schema is version %d, this "
		    "build needs %d%s", *v, SCHEMA_VERSION,
		    *v < SCHEMA_VERSION ? ": " MIGRATE_HINT : " and the newer "
		    "schema is not compatible with it: upgrade this host");
	logged_version = *v;
	return *v < SCHEMA_VERSION ? NOT_BEHIND : NOT_AHEAD;
}

/*
 * GET /readyz, public: 200 {"status":"ready"} or 503 with the generic
 * detail, nothing more (no node, state or schema: issue 16); the log and
 * /readyz/detail say why.
 */
enum herr
handle_readyz(struct app *app, struct req *req, struct resp *resp)
{
	struct repo_node n;
	int		 v = 0;

	(void)req;
	if (readiness(app, &n, &v) != READY)
		return HERR_UNAVAILABLE;
	buf_puts(&resp->body, "{\"status\":\"ready\"}");
	resp_json(resp, 200);
	return HERR_OK;
}

/* The detail of a 503 from /readyz/detail for r (not READY). */
static const char *
unready_detail(enum readiness r)
{
	switch (r) {
	case READY:
	case NOT_DB:
		break;
	case NOT_LOGIN:
		return "this host's database refused its login; check db_name "
		    "(a database that exists and db_user has rights on), "
		    "db_user and db_password (or db_password_file) in the "
		    "configuration file, and the grants";
	case NOT_NODE:
		return "this host's database node is not Synced in the Primary "
		    "component of its Galera cluster; send requests to another "
		    "host";
	case NOT_BEHIND:
		return "the database schema is not at the version this build "
		    "needs; " MIGRATE_HINT;
	case NOT_AHEAD:
		return "the database schema is newer than this build and not "
		    "compatible with it; upgrade this host";
	}
	return "this host's database did not answer";
}

/*
 * For the dashboard's health page: what /readyz/detail decides. NULL
 * when this host can serve, else the detail of its 503; n gets the node,
 * *v the schema version (as readiness); *answered 0 when a read of the
 * database failed (n and *v then hold nothing read), else 1.
 */
const char *
ops_unready(struct app *app, struct repo_node *n, int *v, int *answered)
{
	enum readiness	 r = readiness(app, n, v);

	*answered = r != NOT_DB && r != NOT_LOGIN;
	return r == READY ? NULL : unready_detail(r);
}

/*
 * GET /readyz/detail, served only by the loopback metrics server of the
 * nginx config (the public one answers 404, as for /metrics): what
 * /readyz decides, and why. 200 with the schema versions, on a cluster
 * the node this host writes to and its Galera state; 503 with what is
 * wrong in the detail.
 */
enum herr
handle_readyz_detail(struct app *app, struct req *req, struct resp *resp)
{
	struct repo_node n;
	enum readiness	 r;
	int		 v = 0;

	(void)req;
	if ((r = readiness(app, &n, &v)) != READY) {
		resp->detail = unready_detail(r);
		return HERR_UNAVAILABLE;
	}
	buf_printf(&resp->body, "{\"status\":\"ready\",\"schemaVersion\":%d,"
	    "\"buildSchemaVersion\":%d", v, SCHEMA_VERSION);
	if (n.cluster)
		buf_printf(&resp->body, ",\"dbNode\":\"%s\"", n.addr);
	if (n.wsrep)
		buf_printf(&resp->body, ",\"galera\":{\"state\":\"%s\","
		    "\"clusterStatus\":\"%s\"}", n.state, n.status);
	buf_puts(&resp->body, "}");
	resp_json(resp, 200);
	return HERR_OK;
}

/*
 * The last asyncexec-expire run (s2r_job_run): when it ran and last
 * succeeded (Unix seconds, 0: never), whether it failed, what it changed.
 */
static void
metrics_expiry(struct app *app, struct buf *b)
{
	static const char *const steps[4] = { "expired", "cancelled",
	    "abandoned", "purged" };
	struct job_run	 j;
	int		 i;

	if (repo_metrics_expiry(app->db, &j) == REPO_ERR)
		return;
	buf_printf(b, "# HELP asyncexec_expire_last_run_timestamp_seconds When "
	    "asyncexec-expire last ran (0: never).\n# TYPE "
	    "asyncexec_expire_last_run_timestamp_seconds gauge\n"
	    "asyncexec_expire_last_run_timestamp_seconds %.3f\n"
	    "# HELP asyncexec_expire_last_success_timestamp_seconds When a run "
	    "last ended without an error (0: never).\n# TYPE "
	    "asyncexec_expire_last_success_timestamp_seconds gauge\n"
	    "asyncexec_expire_last_success_timestamp_seconds %.3f\n"
	    "# HELP asyncexec_expire_last_run_failed Whether the last run ended "
	    "with an error or stopped on row locks.\n"
	    "# TYPE asyncexec_expire_last_run_failed gauge\n"
	    "asyncexec_expire_last_run_failed %d\n"
	    "# HELP asyncexec_expire_last_run_duration_seconds How long the "
	    "last run took.\n# TYPE asyncexec_expire_last_run_duration_seconds "
	    "gauge\nasyncexec_expire_last_run_duration_seconds %.3f\n"
	    "# HELP asyncexec_expire_last_run_rows Executions the last run "
	    "changed, by step.\n# TYPE asyncexec_expire_last_run_rows gauge\n",
	    (double)j.last_run_ms / 1000, (double)j.last_success_ms / 1000,
	    j.failed, (double)j.duration_ms / 1000);
	for (i = 0; i < 4; i++)
		buf_printf(b, "asyncexec_expire_last_run_rows{step=\"%s\"} %llu\n",
		    steps[i], (unsigned long long)j.count[i]);
}

/*
 * The database's part of /metrics: asyncexec_db_up, and per route the
 * waiting executions (capped) and the age of the oldest one, read at
 * scrape time with bounded index probes (repo_metrics_waiting).
 */
static void
metrics_db(struct app *app, struct buf *b)
{
	struct route_waiting	*w;
	size_t			 i, n = 0;
	int64_t			 now = clock_now_ms();
	int			 up;

	up = repo_ping(app->db) == REPO_OK;
	buf_printf(b, "# HELP asyncexec_db_up Whether this worker reached the "
	    "database for this scrape.\n# TYPE asyncexec_db_up gauge\n"
	    "asyncexec_db_up %d\n", up);
	if (!up || (w = calloc(REPO_METRICS_ROUTES, sizeof(*w))) == NULL)
		return;
	if (repo_metrics_waiting(app->db, w, REPO_METRICS_ROUTES, &n,
	    now) != REPO_OK)
		n = 0;
	buf_printf(b, "# HELP asyncexec_executions_waiting Executions in "
	    "waiting_callback per route (counted up to %d).\n"
	    "# TYPE asyncexec_executions_waiting gauge\n", REPO_WAITING_CAP);
	for (i = 0; i < n; i++)
		buf_printf(b, "asyncexec_executions_waiting{route=\"%s/%s/%s\"} "
		    "%u\n", w[i].env, w[i].svc, w[i].op, w[i].waiting);
	buf_puts(b, "# HELP asyncexec_oldest_waiting_seconds Age of the oldest "
	    "execution per route waiting for a claim: due, no live lease, "
	    "not cancel-requested (0: none).\n"
	    "# TYPE asyncexec_oldest_waiting_seconds gauge\n");
	for (i = 0; i < n; i++)
		buf_printf(b, "asyncexec_oldest_waiting_seconds{route=\"%s/%s/%s"
		    "\"} %.3f\n", w[i].env, w[i].svc, w[i].op,
		    w[i].oldest_ms && now > w[i].oldest_ms ?
		    (double)(now - w[i].oldest_ms) / 1000 : 0.0);
	free(w);
	metrics_expiry(app, b);
}

enum herr
handle_metrics(struct app *app, struct req *req, struct resp *resp)
{
	(void)req;
	if (metrics_render(&resp->body) == -1)
		return HERR_INTERNAL;
	metrics_db(app, &resp->body);
	resp->status = 200;
	resp->content_type = "text/plain; version=0.0.4";
	return HERR_OK;
}

/* The embedded OpenAPI document, as application/json; no key needed. */
enum herr
handle_openapi(struct app *app, struct req *req, struct resp *resp)
{
	(void)app;
	(void)req;
	buf_append(&resp->body, asyncexec_openapi, asyncexec_openapi_len);
	resp_json(resp, 200);
	return HERR_OK;
}
