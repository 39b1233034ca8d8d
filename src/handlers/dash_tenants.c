/*
 * dash_tenants.c - GET /dashboard/tenants[?after=TENANT]: each tenant
 * with a quota (s2r_tenant, asyncexec-admin tenant set), a page of
 * DASH_PAGE_MAX by id, with its waiting executions counted as the quota
 * counts them (repo_dash_tenants: the tenant's range of
 * ix_exec_tenant_open, up to the quota + 1), and this host's 429
 * answers since its start.
 */
#include <stdlib.h>
#include <string.h>

#include "dash.h"
#include "metrics.h"
#include "repo_dash.h"
#include "valid.h"

/*
 * One tenant's row. A count stopped at DASH_OPEN_CAP below a larger
 * quota says nothing of whether the quota is reached: its state is
 * unknown, not "accepting".
 */
static void
tenant_row(struct buf *b, const struct dash_tenant *t)
{
	int	 over = t->max_open > 0 && t->open >= t->max_open;
	int	 unknown = !over && t->capped && t->max_open > t->open;

	dash_html(b, "<tr><td>%s</td>", t->tenant);
	if (t->max_open == 0)
		buf_puts(b, "<td class=\"muted\">unlimited</td>");
	else
		dash_html(b, "<td class=\"n\">%u</td>", t->max_open);
	dash_html(b, "<td class=\"n\">%u%s</td><td class=\"%s\">%s</td></tr>\n",
	    t->open,
	    t->capped || (t->max_open > 0 && t->open > t->max_open) ? "+" : "",
	    over ? "bad" : unknown ? "warn" : "ok",
	    over ? "at its quota: submits get 429" : unknown ? "unknown: the "
	    "count stops at " DASH_OPEN_CAP_STR : "accepting");
}

/*
 * GET /dashboard/tenants[?after=TENANT]: HERR_OK, HERR_INVALID_REQUEST,
 * HERR_UNAVAILABLE (the database failed) or HERR_INTERNAL (memory).
 */
enum herr
handle_dash_tenants(struct app *app, struct req *req, struct resp *resp)
{
	struct metrics_snap	 m;
	struct dash_tenant	*t;
	struct ddb		*d;
	char			 after[TENANT_MAX_LEN + 1] = "";
	size_t			 i, n = 0;
	enum herr		 e;
	int			 given;

	if ((e = dash_query_str(req, "after", after, sizeof(after),
	    &given)) != HERR_OK)
		return e;
	if (given && !valid_tenant(after))
		return HERR_INVALID_REQUEST;
	if ((d = dash_db(app)) == NULL ||
	    (t = calloc(DASH_PAGE_MAX + 1, sizeof(*t))) == NULL)
		return HERR_INTERNAL;
	if (repo_dash_tenants(d, after, t, DASH_PAGE_MAX + 1, &n) != REPO_OK) {
		free(t);
		return HERR_UNAVAILABLE;
	}
	dash_begin(resp, DASH_TENANTS, "", "Tenants");
	buf_puts(&resp->body, "<table>\n<tr><th>Tenant</th>"
	    "<th>Quota (open executions)</th><th>Open now</th>"
	    "<th>State</th></tr>\n");
	for (i = 0; i < n && i < DASH_PAGE_MAX; i++)
		tenant_row(&resp->body, &t[i]);
	buf_puts(&resp->body, "</table>\n");
	if (n == 0)
		buf_puts(&resp->body, "<p class=\"muted\">No tenant has a "
		    "quota (asyncexec-admin tenant set TENANT --max-open "
		    "N).</p>\n");
	dash_html(&resp->body, "<p class=\"muted\">Open executions are "
	    "counted as the quota counts them: up to the quota + 1, at most "
	    "%d (shown with +; a quota above that, reached or not, is then "
	    "unknown). Tenants without a quota are not listed.</p>\n",
	    DASH_OPEN_CAP);
	if (n > DASH_PAGE_MAX)
		dash_html(&resp->body, "<p class=\"more\"><a href=\""
		    "tenants?after=%s\">Next tenants</a></p>\n",
		    t[DASH_PAGE_MAX - 1].tenant);
	(void)metrics_snapshot(&m);
	dash_html(&resp->body, "<h2>Refusals (this host, since start)</h2>\n"
	    "<table>\n<tr><th>Answers 429 (quota, every endpoint)</th>"
	    "<td class=\"n\">%llu</td></tr>\n</table>\n",
	    (unsigned long long)m.status_429);
	free(t);
	return dash_end(resp);
}
