/*
 * ops.c - GET /healthz (process up), /readyz (database reachable and
 * schema current), /metrics (Prometheus text), /v1/openapi.json (the
 * API's OpenAPI document, embedded at build time).
 */
#include <stdlib.h>
#include <string.h>

#include "../json.h"
#include "../log.h"
#include "../metrics.h"
#include "../openapi.h"
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

/*
 * On a Galera cluster: 0 when this worker's node is Synced in the
 * Primary component (or runs no Galera), else -1 with the detail set
 * (logged once per state change, not once per probe). n gets the node.
 */
static int
node_ready(struct app *app, struct resp *resp, struct repo_node *n)
{
	static int	 logged;

	if (repo_node_state(app->db, n) != REPO_OK)
		return -1;
	if (n->ready) {
		logged = 0;
		return 0;
	}
	if (!logged)
		log_warn("not ready: the database node %s is %s in a %s "
		    "component, not Synced in the Primary one", n->addr[0] ?
		    n->addr : "(db_host)", n->state, n->status);
	logged = 1;
	resp->detail = "this host's database node is not Synced in the "
	    "Primary component of its Galera cluster; send requests to "
	    "another host";
	return -1;
}

/*
 * 200 when the database answers and its schema is the version this
 * build needs, or a newer one whose every newer migration is marked
 * compatible with this build (a rolling upgrade: see sql/005), and on a
 * Galera cluster its node is Synced and Primary, else 503 (the detail
 * says what to do). A schema state is logged once per worker, not once
 * per probe.
 */
enum herr
handle_readyz(struct app *app, struct req *req, struct resp *resp)
{
	static int	 logged_version = -1;
	struct repo_node n;
	int		 v, needs;

	(void)req;
	if (node_ready(app, resp, &n) == -1)
		return HERR_UNAVAILABLE;
	if (repo_schema_compat(app->db, SCHEMA_VERSION, &v, &needs) != REPO_OK)
		return HERR_UNAVAILABLE;
	if (v < SCHEMA_VERSION || (v > SCHEMA_VERSION && needs > SCHEMA_VERSION)) {
		if (logged_version != v)
			log_warn("not ready: the database schema is version %d, "
			    "this build needs %d%s", v, SCHEMA_VERSION,
			    v < SCHEMA_VERSION ? ": run asyncexec-admin migrate" :
			    " and the newer schema is not compatible with it: "
			    "upgrade this host");
		logged_version = v;
		resp->detail = v < SCHEMA_VERSION ? "the database schema is not "
		    "at the version this build needs; run asyncexec-admin "
		    "migrate" : "the database schema is newer than this build "
		    "and not compatible with it; upgrade this host";
		return HERR_UNAVAILABLE;
	}
	logged_version = -1;
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
	    "with an error.\n# TYPE asyncexec_expire_last_run_failed gauge\n"
	    "asyncexec_expire_last_run_failed %d\n"
	    "# HELP asyncexec_expire_last_run_duration_seconds How long the "
	    "last run took.\n# TYPE asyncexec_expire_last_run_duration_seconds "
	    "gauge\nasyncexec_expire_last_run_duration_seconds %.3f\n"
	    "# HELP asyncexec_expire_last_run_rows Executions the last run "
	    "changed, by step.\n# TYPE asyncexec_expire_last_run_rows gauge\n",
	    (double)j.last_run_ms / 1000, (double)j.last_success_ms / 1000,
	    strcmp(j.result, "error") == 0, (double)j.duration_ms / 1000);
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
	int64_t			 now = json_now_ms();
	int			 up;

	up = repo_ping(app->db) == REPO_OK;
	buf_printf(b, "# HELP asyncexec_db_up Whether this worker reached the "
	    "database for this scrape.\n# TYPE asyncexec_db_up gauge\n"
	    "asyncexec_db_up %d\n", up);
	if (!up || (w = calloc(REPO_METRICS_ROUTES, sizeof(*w))) == NULL)
		return;
	if (repo_metrics_waiting(app->db, w, REPO_METRICS_ROUTES, &n) != REPO_OK)
		n = 0;
	buf_printf(b, "# HELP asyncexec_executions_waiting Executions in "
	    "waiting_callback per route (counted up to %d).\n"
	    "# TYPE asyncexec_executions_waiting gauge\n", REPO_WAITING_CAP);
	for (i = 0; i < n; i++)
		buf_printf(b, "asyncexec_executions_waiting{route=\"%s/%s/%s\"} "
		    "%u\n", w[i].env, w[i].svc, w[i].op, w[i].waiting);
	buf_puts(b, "# HELP asyncexec_oldest_waiting_seconds Age of the oldest "
	    "waiting, not cancel-requested execution per route (0: none).\n"
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
