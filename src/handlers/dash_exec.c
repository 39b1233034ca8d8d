/*
 * dash_exec.c - GET /dashboard/execution/ID: one execution's metadata,
 * what asyncexec-admin execution show prints (struct exec_admin, the
 * same columns): never a payload (only its length), a token or a hash;
 * the error's code (a payload's member) only with dashboard_show_errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "dash.h"
#include "repo_dash.h"

/* A row "name | time (age ago)"; 0: never. */
static void
time_row(struct buf *b, const char *name, int64_t ms, int64_t now)
{
	dash_html(b, "<tr><th>%s</th><td>", name);
	dash_time(b, ms);
	if (ms > 0 && ms <= now) {
		buf_puts(b, " (");
		dash_age(b, ms, now);
		buf_puts(b, " ago)");
	}
	buf_puts(b, "</td></tr>\n");
}

/* A row "name | bytes"; -1: none. */
static void
len_row(struct buf *b, const char *name, long long n)
{
	if (n < 0)
		dash_html(b, "<tr><th>%s</th><td class=\"muted\">none</td></tr>\n",
		    name);
	else
		dash_html(b, "<tr><th>%s</th><td class=\"n\">%lld</td></tr>\n",
		    name, n);
}

/* The metadata table of e; its error code when show_errors. */
static void
exec_table(struct buf *b, const struct exec_admin *e, int show_errors,
    int64_t now)
{
	dash_html(b, "<table>\n<tr><th>Id</th><td class=\"n\">%llu</td></tr>\n"
	    "<tr><th>Route</th><td>%s/%s/%s</td></tr>\n"
	    "<tr><th>Correlation id</th><td>%s</td></tr>\n"
	    "<tr><th>Tenant</th><td>%s</td></tr>\n"
	    "<tr><th>Status</th><td class=\"%s\">%s</td></tr>\n"
	    "<tr><th>Attempts</th><td class=\"n\">%u</td></tr>\n"
	    "<tr><th>Cancel requested</th><td>%s</td></tr>\n"
	    "<tr><th>Claimed</th><td>%s</td></tr>\n",
	    (unsigned long long)e->id, e->env, e->svc, e->op, e->cid,
	    e->tenant_null ? "-" : e->tenant,
	    strcmp(e->status, "completed") == 0 ? "ok" :
	    strcmp(e->status, "waiting_callback") == 0 ? "warn" : "bad",
	    e->status, e->attempts, e->cancel_requested ? "yes" : "no",
	    e->has_claim_token ? "yes" : "no");
	time_row(b, "Lease expires", e->lease_expires_at, now);
	time_row(b, "Created", e->created_at, now);
	time_row(b, "Updated", e->updated_at, now);
	time_row(b, "Completed", e->completed_at, now);
	time_row(b, "Expires", e->expires_at, now);
	len_row(b, "Request (bytes)", e->request_bytes);
	len_row(b, "Result (bytes)", e->result_bytes);
	len_row(b, "Error (bytes)", e->error_bytes);
	if (!show_errors)
		buf_puts(b, "<tr><th>Error code</th><td class=\"muted\">"
		    "hidden (dashboard_show_errors = 0)</td></tr>\n");
	else if (e->error_code[0] == '\0')
		buf_puts(b, "<tr><th>Error code</th>"
		    "<td class=\"muted\">none</td></tr>\n");
	else
		dash_html(b, "<tr><th>Error code</th><td>%s</td></tr>\n",
		    e->error_code);
	buf_puts(b, "</table>\n");
}

/* GET /dashboard/execution/ID: 404 for an id that is not a number or row. */
enum herr
handle_dash_exec(struct app *app, struct req *req, struct resp *resp)
{
	struct exec_admin	 e;
	struct ddb		*d;
	char			 title[40];
	enum repo_rc		 rc;

	if ((d = dash_db(app)) == NULL)
		return HERR_INTERNAL;
	if ((rc = repo_dash_exec(d, req->exec_id, &e)) == REPO_ERR)
		return HERR_UNAVAILABLE;
	if (rc != REPO_OK)
		return HERR_NOT_FOUND;
	snprintf(title, sizeof(title), "Execution %" PRIu64, e.id);
	dash_begin(resp, DASH_NONE, "../", title);
	exec_table(&resp->body, &e, app->cfg->dashboard_show_errors != 0,
	    clock_now_ms());
	dash_html(&resp->body, "<p><a href=\"../routes\">Routes</a> &middot; "
	    "<a href=\"../attention?route=%s/%s/%s\">Attention: this route</a>"
	    "</p>\n", e.env, e.svc, e.op);
	return dash_end(resp);
}
