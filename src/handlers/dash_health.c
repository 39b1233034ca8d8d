/*
 * dash_health.c - GET /dashboard/ and /dashboard/health: this host's
 * health. The facts are those of /readyz/detail (ops_unready: node,
 * Galera state, schema) and /metrics (metrics_snapshot: workers, writer,
 * database errors; repo_metrics_expiry: the last expiry run), read the
 * same way, rendered as tables.
 */
#include <string.h>

#include "clock.h"
#include "config.h"
#include "dash.h"
#include "metrics.h"

/* A table row "name | value" with the value's class (NULL: none). */
static void
row(struct buf *b, const char *name, const char *cls, const char *value)
{
	if (cls != NULL)
		dash_html(b, "<tr><th>%s</th><td class=\"%s\">%s</td></tr>\n",
		    name, cls, value);
	else
		dash_html(b, "<tr><th>%s</th><td>%s</td></tr>\n", name, value);
}

/* A table row "name | number". */
static void
row_n(struct buf *b, const char *name, unsigned long long v)
{
	dash_html(b, "<tr><th>%s</th><td class=\"n\">%llu</td></tr>\n", name, v);
}

/*
 * The node rows of the database table: what n holds when the database
 * answered, else whether it is a cluster from the configuration and
 * "unknown" for what could not be read.
 */
static void
node_rows(struct app *app, struct buf *b, const struct repo_node *n,
    int up)
{
	const char	*unknown = "unknown";

	row(b, "Reachable", up ? "ok" : "bad", up ? "yes" : "no");
	if (!up)
		row(b, "Node", NULL, app->cfg->db_nhosts > 0 ? unknown :
		    "db_host (no db_hosts)");
	else
		row(b, "Node", NULL, n->cluster ? n->addr :
		    "db_host (no db_hosts)");
	row(b, "Galera state", NULL, !up ? unknown : n->wsrep ? n->state :
	    "no Galera");
	row(b, "Galera cluster status", NULL, !up ? unknown : n->wsrep ?
	    n->status : "-");
}

/*
 * The service and database tables: readiness, workers, node, writer;
 * no read after the first the database failed. Returns whether every
 * read was answered.
 */
static int
service(struct app *app, struct buf *b)
{
	struct metrics_snap	 m;
	struct repo_node	 n;
	const char		*why;
	int			 v = 0, needs = 0, up;

	why = ops_unready(app, &n, &v, &up);
	(void)metrics_snapshot(&m);
	buf_puts(b, "<h2>Service</h2>\n<table>\n");
	row(b, "Version", NULL, ASYNCEXEC_VERSION);
	row(b, "Ready", why ? "bad" : "ok", why ? why : "ready");
	row_n(b, "Workers", m.workers);
	row_n(b, "Workers busy", m.busy);
	row_n(b, "Worker restarts", m.restarts);
	buf_puts(b, "</table>\n<h2>Database</h2>\n<table>\n");
	node_rows(app, b, &n, up);
	row_n(b, "Writer index (db_hosts, 0 the first)", m.writer_index);
	row_n(b, "Writer failovers", m.failovers);
	row_n(b, "Database errors", m.db_errors);
	row_n(b, "Reconnects", m.db_reconnects);
	buf_puts(b, "</table>\n<h2>Schema</h2>\n<table>\n");
	if (up && repo_schema_compat(app->db, SCHEMA_VERSION, &v, &needs) ==
	    REPO_OK) {
		row_n(b, "Database schema", (unsigned long long)v);
		row_n(b, "This build's schema", SCHEMA_VERSION);
		dash_html(b, "<tr><th>Newer migrations compatible from</th>"
		    "<td class=\"n\">%d</td></tr>\n", needs ? needs : v);
	} else {
		row(b, "Database schema", "bad", "unknown: no answer");
		up = 0;
	}
	buf_puts(b, "</table>\n");
	return up;
}

/*
 * The last asyncexec-expire run (s2r_job_run), as /metrics has it; not
 * read when the database failed before (up 0).
 */
static void
expiry(struct app *app, struct buf *b, int up, int64_t now)
{
	static const char *const steps[4] = { "Expired", "Cancelled",
	    "Abandoned", "Purged" };
	struct job_run	 j;
	enum repo_rc	 rc = REPO_ERR;
	int		 i;

	buf_puts(b, "<h2>Last expiry run</h2>\n");
	if (!up || (rc = repo_metrics_expiry(app->db, &j)) == REPO_ERR) {
		dash_unavailable(b, "The last expiry run");
		return;
	}
	if (rc == REPO_NOTFOUND) {
		buf_puts(b, "<p class=\"warn\">asyncexec-expire has not run "
		    "yet</p>\n");
		return;
	}
	buf_puts(b, "<table>\n<tr><th>Ran</th><td>");
	dash_time(b, j.last_run_ms);
	buf_puts(b, " (");
	dash_age(b, j.last_run_ms, now);
	buf_puts(b, " ago)</td></tr>\n");
	row(b, "Outcome", j.failed ? "bad" : "ok", j.result);
	buf_puts(b, "<tr><th>Last success</th><td>");
	dash_time(b, j.last_success_ms);
	buf_puts(b, "</td></tr>\n");
	row_n(b, "Duration (ms)", j.duration_ms);
	for (i = 0; i < 4; i++)
		row_n(b, steps[i], j.count[i]);
	buf_puts(b, "</table>\n");
}

/*
 * GET /dashboard/ and /dashboard/health: 200 even when the database does
 * not answer (the page shows the outage), HERR_INTERNAL (memory).
 */
enum herr
handle_dash_health(struct app *app, struct req *req, struct resp *resp)
{
	int	 up;

	(void)req;
	dash_begin(resp, DASH_HEALTH, "", "Health");
	up = service(app, &resp->body);
	expiry(app, &resp->body, up, clock_now_ms());
	return dash_end(resp);
}
