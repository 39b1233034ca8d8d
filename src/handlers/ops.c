/*
 * ops.c - GET /healthz (process up), /readyz (database reachable and
 * schema current), /metrics (Prometheus text).
 */
#include "../log.h"
#include "../metrics.h"
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
 * 200 when the database answers and its schema is the version this
 * build needs, else 503 (the detail says what to run). A schema change
 * is logged once per worker and state, not once per probe.
 */
enum herr
handle_readyz(struct app *app, struct req *req, struct resp *resp)
{
	static int	 logged_version = -1;
	int		 v;

	(void)req;
	if (repo_schema_version(app->db, &v) != REPO_OK)
		return HERR_UNAVAILABLE;
	if (v != SCHEMA_VERSION) {
		if (logged_version != v)
			log_warn("not ready: the database schema is version %d, "
			    "this build needs %d: run asyncexec-admin migrate",
			    v, SCHEMA_VERSION);
		logged_version = v;
		resp->detail = "the database schema is not at the version this "
		    "build needs; run asyncexec-admin migrate";
		return HERR_UNAVAILABLE;
	}
	logged_version = -1;
	buf_printf(&resp->body, "{\"status\":\"ready\",\"schemaVersion\":%d}",
	    v);
	resp_json(resp, 200);
	return HERR_OK;
}

enum herr
handle_metrics(struct app *app, struct req *req, struct resp *resp)
{
	(void)app;
	(void)req;
	if (metrics_render(&resp->body) == -1)
		return HERR_INTERNAL;
	resp->status = 200;
	resp->content_type = "text/plain; version=0.0.4";
	return HERR_OK;
}
