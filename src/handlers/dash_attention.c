/*
 * dash_attention.c - GET /dashboard/attention[?route=ENV/SVC/OP][&page=N]:
 * what needs an operator's eye, as lists of DASH_ATT_ROWS executions each
 * (repo_dash_attention says how each is read and bounded): waiting,
 * nearest their expiry (a route's: oldest first), on their last attempt,
 * with a lapsed lease, and the recent failures, expiries and
 * abandonments. Columns: id (a link to the execution's page), route (a
 * link to this page for that route), tenant, times, attempt; the error's
 * code and message (at most DASH_ERR_CHARS characters, escaped like every
 * text) only with dashboard_show_errors = 1: they are a payload's
 * members, and API.md shows no payload unless the operator enables that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "dash.h"
#include "repo_dash.h"
#include "valid.h"

/* Each list's heading, time column, and text when empty: on the first
 * page, and on a later one (the rows were on the pages before). */
static const struct {
	const char	*title, *at, *empty, *no_more;
} lists[DASH_ATT__MAX] = {
	[DASH_ATT_WAITING] = { "Oldest waiting", "Expires",
	    "Nothing is waiting.", "No more waiting." },
	[DASH_ATT_LAST] = { "On their last attempt", "Lease expires",
	    "None is on its last attempt.", "No more on their last attempt." },
	[DASH_ATT_LAPSED] = { "Lapsed leases", "Lease lapsed",
	    "No lease has lapsed.", "No more lapsed leases." },
	[DASH_ATT_FAILED] = { "Recent failures", "Failed",
	    "No recent failure.", "No more recent failures." },
	[DASH_ATT_EXPIRED] = { "Recent expiries", "Expired",
	    "No recent expiry.", "No more recent expiries." },
	[DASH_ATT_ABANDONED] = { "Recent abandonments", "Abandoned",
	    "No recent abandonment.", "No more recent abandonments." },
};

/* How each list is chosen, under its heading. */
static const char *
list_note(enum dash_att which, int only, unsigned max_attempts)
{
	static char	 b[200];

	switch (which) {
	case DASH_ATT_WAITING:
		return only ? "The route's first " DASH_OPEN_CAP_STR " waiting, "
		    "oldest first." : "Nearest their expiry first (created + "
		    "retention, or an earlier deadline).";
	case DASH_ATT_LAST:
		snprintf(b, sizeof(b), "max_attempts = %u: claimable after %u "
		    "claims, or leased for claim %u.", max_attempts,
		    max_attempts > 0 ? max_attempts - 1 : 0, max_attempts);
		return b;
	case DASH_ATT_LAPSED:
		return "Among the first " DASH_DETAIL_CAP_STR " waiting (nearest "
		    "their expiry, or of the route in claim order); claimable "
		    "again, or abandoned at max_attempts.";
	case DASH_ATT_FAILED:
	case DASH_ATT_EXPIRED:
	case DASH_ATT_ABANDONED:
	case DASH_ATT__MAX:
		break;
	}
	return "The latest by completion among the " DASH_RECENT_WINDOW_STR
	    " of this status that ended last.";
}

/* One execution's row of list which. */
static void
att_row(struct buf *b, const struct dash_att_row *r, const char *base,
    int show_errors, int64_t now)
{
	dash_html(b, "<tr><td class=\"n\"><a href=\"%sexecution/%llu\">%llu"
	    "</a></td><td><a href=\"%sattention?route=%s/%s/%s\">%s/%s/%s</a>"
	    "</td><td>%s</td><td>", base, (unsigned long long)r->id,
	    (unsigned long long)r->id, base, r->env, r->svc, r->op, r->env,
	    r->svc, r->op, r->tenant[0] ? r->tenant : "-");
	dash_time(b, r->created_at);
	buf_puts(b, " (");
	dash_age(b, r->created_at, now);
	buf_puts(b, " ago)</td><td>");
	dash_time(b, r->at);
	dash_html(b, "</td><td class=\"n\">%u</td>", r->attempts);
	if (show_errors)
		dash_html(b, "<td>%s</td><td>%s</td>", r->code[0] ? r->code :
		    "-", r->message[0] ? r->message : "-");
	buf_puts(b, "</tr>\n");
}

/*
 * List which; *more 1 when it has rows past this page. HERR_OK,
 * HERR_UNAVAILABLE (the database failed) or HERR_INTERNAL (memory).
 */
static enum herr
att_list(struct app *app, struct ddb *d, struct buf *b, enum dash_att which,
    const struct dash_route *only, unsigned page, int64_t now, int *more)
{
	struct dash_att_row	*r;
	size_t			 i, n = 0;
	int			 show = app->cfg->dashboard_show_errors != 0;
	int			 capped;

	if ((r = calloc(DASH_ATT_ROWS + 1, sizeof(*r))) == NULL)
		return HERR_INTERNAL;
	if (repo_dash_attention(d, which, only, app->cfg->max_attempts, show,
	    now, page * DASH_ATT_ROWS, r, DASH_ATT_ROWS + 1, &n, &capped) !=
	    REPO_OK) {
		free(r);
		return HERR_UNAVAILABLE;
	}
	dash_html(b, "<h2>%s</h2>\n<p class=\"muted\">%s</p>\n",
	    lists[which].title, list_note(which, only != NULL,
	    app->cfg->max_attempts));
	if (capped)
		buf_puts(b, "<p class=\"warn\">Among the first "
		    DASH_LAST_CAP_STR " entries examined only: the list may be "
		    "incomplete.</p>\n");
	if (n == 0) {
		dash_html(b, "<p class=\"muted\">%s</p>\n", page > 0 ?
		    lists[which].no_more : lists[which].empty);
		free(r);
		return HERR_OK;
	}
	dash_html(b, "<table>\n<tr><th>Id</th><th>Route</th><th>Tenant</th>"
	    "<th>Created</th><th>%s</th><th>Attempts</th>", lists[which].at);
	buf_puts(b, show ? "<th>Error code</th><th>Error message</th></tr>\n" :
	    "</tr>\n");
	for (i = 0; i < n && i < DASH_ATT_ROWS; i++)
		att_row(b, &r[i], "", show, now);
	buf_puts(b, "</table>\n");
	if (n > DASH_ATT_ROWS)
		*more = 1;
	free(r);
	return HERR_OK;
}

/*
 * GET /dashboard/attention[?route=ENV/SVC/OP][&page=N]: HERR_OK,
 * HERR_INVALID_REQUEST, HERR_UNAVAILABLE at the first list the database
 * failed (no list read after it), or HERR_INTERNAL.
 */
enum herr
handle_dash_attention(struct app *app, struct req *req, struct resp *resp)
{
	struct dash_route	 only;
	struct ddb		*d;
	char			 route[3 * (NAME_MAX_LEN + 1)];
	uint64_t		 page = 0;
	int64_t			 now = clock_now_ms();
	enum herr		 e;
	int			 given, by_route, more = 0;
	unsigned		 i;

	memset(&only, 0, sizeof(only));
	if ((e = dash_query_u64(req, "page", &page, &given)) != HERR_OK)
		return e;
	if (page >= DASH_ATT_PAGES)
		return HERR_INVALID_REQUEST;
	if ((e = dash_query_str(req, "route", route, sizeof(route),
	    &by_route)) != HERR_OK)
		return e;
	if (by_route && !valid_route_triple(route, only.env, only.svc,
	    only.op))
		return HERR_INVALID_REQUEST;
	if ((d = dash_db(app)) == NULL)
		return HERR_INTERNAL;
	dash_begin(resp, DASH_ATTENTION, "", "Attention");
	if (by_route)
		dash_html(&resp->body, "<p>Route <b>%s/%s/%s</b> only: <a href="
		    "\"attention\">every route</a> &middot; <a href=\"routes\">"
		    "Routes</a></p>\n", only.env, only.svc, only.op);
	for (i = 0; i < DASH_ATT__MAX; i++)
		if ((e = att_list(app, d, &resp->body, (enum dash_att)i,
		    by_route ? &only : NULL, (unsigned)page, now, &more)) !=
		    HERR_OK)
			return e;
	if (page > 0 || more) {
		buf_puts(&resp->body, "<p class=\"more\">");
		if (page > 0)
			dash_html(&resp->body, "<a href=\"attention?%s%s%s"
			    "page=%llu\">Previous page</a> ", by_route ?
			    "route=" : "", by_route ? route : "", by_route ?
			    "&" : "", (unsigned long long)page - 1);
		if (more && page + 1 < DASH_ATT_PAGES)
			dash_html(&resp->body, "<a href=\"attention?%s%s%s"
			    "page=%llu\">Next page</a>", by_route ? "route=" :
			    "", by_route ? route : "", by_route ? "&" : "",
			    (unsigned long long)page + 1);
		buf_puts(&resp->body, "</p>\n");
	}
	return dash_end(resp);
}
