/*
 * dash_webhooks.c - GET /dashboard/webhooks[?enabled=0|1&after=ID]: the
 * webhook endpoints, disabled ones first (a page of DASH_PAGE_MAX):
 * id, tenant, route, the URL's scheme, host and port only (never its
 * path or query, which may carry a credential, nor the secret, which is
 * not read), enabled or why not, and its deliveries (repo_dash_webhooks:
 * pending or leased, the oldest pending's age, dead).
 */
#include <stdlib.h>

#include "clock.h"
#include "dash.h"
#include "repo_dash.h"

/* One endpoint's row. */
static void
webhook_row(struct buf *b, const struct dash_webhook *w,
    const struct dash_wh_caps *caps, int64_t now)
{
	dash_html(b, "<tr><td class=\"n\">%llu</td><td>%s</td><td>%s</td>"
	    "<td>%s</td><td class=\"%s\">%s</td><td>%s</td>"
	    "<td class=\"n\">%u%s</td><td>", (unsigned long long)w->id,
	    w->tenant, w->route[0] ? w->route : "every route", w->origin,
	    w->enabled ? "ok" : "bad", w->enabled ? "yes" : "no",
	    w->reason[0] ? w->reason : "-", w->pending,
	    caps->pending && w->pending > 0 ? "+" : "");
	dash_age(b, w->oldest_pending, now);
	dash_html(b, "</td><td class=\"n%s\">%u%s</td></tr>\n",
	    w->dead > 0 ? " warn" : "", w->dead,
	    caps->dead && w->dead > 0 ? "+" : "");
}

/*
 * GET /dashboard/webhooks[?enabled=0|1&after=ID]: HERR_OK,
 * HERR_INVALID_REQUEST, HERR_UNAVAILABLE (the database failed) or
 * HERR_INTERNAL (memory).
 */
enum herr
handle_dash_webhooks(struct app *app, struct req *req, struct resp *resp)
{
	struct dash_webhook	*w;
	struct dash_wh_caps	 caps;
	struct ddb		*d;
	uint64_t		 after = 0, en = 0;
	size_t			 i, n = 0;
	int64_t			 now = clock_now_ms();
	enum herr		 e;
	int			 given;

	if ((e = dash_query_u64(req, "after", &after, &given)) != HERR_OK ||
	    (e = dash_query_u64(req, "enabled", &en, &given)) != HERR_OK)
		return e;
	if (en > 1)
		return HERR_INVALID_REQUEST;
	if ((d = dash_db(app)) == NULL ||
	    (w = calloc(DASH_PAGE_MAX + 1, sizeof(*w))) == NULL)
		return HERR_INTERNAL;
	if (repo_dash_webhooks(d, (int)en, after, w, DASH_PAGE_MAX + 1, &n,
	    &caps) != REPO_OK) {
		free(w);
		return HERR_UNAVAILABLE;
	}
	dash_begin(resp, DASH_WEBHOOKS, "", "Webhooks");
	buf_puts(&resp->body, "<table>\n<tr><th>Id</th><th>Tenant</th>"
	    "<th>Route</th><th>Receiver</th><th>Enabled</th>"
	    "<th>Disabled because</th><th>Pending</th>"
	    "<th>Oldest pending</th><th>Dead</th></tr>\n");
	for (i = 0; i < n && i < DASH_PAGE_MAX; i++)
		webhook_row(&resp->body, &w[i], &caps, now);
	buf_puts(&resp->body, "</table>\n");
	if (n == 0)
		buf_puts(&resp->body, "<p class=\"muted\">No webhook "
		    "endpoints (asyncexec-admin webhook add).</p>\n");
	dash_html(&resp->body, "<p class=\"muted\">Disabled endpoints "
	    "first. The receiver is the URL's scheme, host and port. "
	    "Pending (or being sent) counts the first %d deliveries by "
	    "due time, dead the latest %d (shown with + at the cap). "
	    "asyncexec-admin webhook deliveries ID lists them.</p>\n",
	    DASH_DELIVERY_CAP, DASH_DELIVERY_CAP);
	if (n > DASH_PAGE_MAX)
		dash_html(&resp->body, "<p class=\"more\"><a href=\""
		    "webhooks?enabled=%d&amp;after=%llu\">Next endpoints</a>"
		    "</p>\n", w[DASH_PAGE_MAX - 1].enabled,
		    (unsigned long long)w[DASH_PAGE_MAX - 1].id);
	free(w);
	return dash_end(resp);
}
