/*
 * dash_routes.c - GET /dashboard/routes: every route (a page of
 * DASH_PAGE_MAX by id, ?after=ID for the next) with its waiting
 * executions (repo_dash_route_open: the first DASH_OPEN_CAP and
 * DASH_DETAIL_CAP of the route's range of ix_exec_claim), what ended in the last hour and day
 * (the rollup, repo_dash_route_ended), and this host's callback refusals.
 * A route's name links to the Attention page of that route.
 */
#include <stdlib.h>

#include "clock.h"
#include "dash.h"
#include "metrics.h"
#include "repo_dash.h"

/*
 * One route's row: REPO_OK, or REPO_ERR (the database failed: the page
 * answers 503, nothing more is read).
 */
static enum repo_rc
route_row(struct ddb *d, struct buf *b, const struct dash_route *r,
    int64_t now)
{
	struct dash_open	 o;

	if (repo_dash_route_open(d, r, now, &o) != REPO_OK)
		return REPO_ERR;
	dash_html(b, "<tr><td><a href=\"attention?route=%s/%s/%s\">%s/%s/%s"
	    "</a></td><td class=\"%s\">%s</td><td class=\"n\">%u</td>",
	    r->env, r->svc, r->op, r->env, r->svc, r->op,
	    r->enabled ? "ok" : "warn", r->enabled ? "yes" : "no",
	    r->retention_days);
	dash_html(b, "<td class=\"n\">%u%s</td><td class=\"n\">%u</td>"
	    "<td class=\"n\">%u</td><td class=\"n\">%u</td>"
	    "<td class=\"n\">%u</td><td class=\"n\">%u</td><td>", o.waiting,
	    o.waiting >= DASH_OPEN_CAP ? "+" : "", o.leased, o.retrying,
	    o.scheduled, o.claimable, o.cancel_requested);
	dash_age(b, o.oldest_ms, now);
	buf_puts(b, "</td></tr>\n");
	return REPO_OK;
}

/*
 * The executions of routes r[0..n) that ended in the last hour and day,
 * by status, from the rollup asyncexec-expire writes (sql/013). REPO_OK,
 * or REPO_ERR at the first read that failed (none after it).
 */
static enum repo_rc
ended(struct ddb *d, struct buf *b, const struct dash_route *r, size_t n,
    int64_t now)
{
	static const enum exec_status st[] = {
		ST_COMPLETED, ST_FAILED, ST_EXPIRED, ST_CANCELLED
	};
	struct dash_ended	 e;
	size_t			 i, k;

	buf_puts(b, "<h2>Ended (last hour / last day)</h2>\n<table>\n<tr>"
	    "<th>Route</th>");
	for (k = 0; k < sizeof(st) / sizeof(st[0]); k++)
		dash_html(b, "<th>%s</th>", exec_status_name(st[k]));
	buf_puts(b, "</tr>\n");
	for (i = 0; i < n; i++) {
		if (repo_dash_route_ended(d, &r[i], now, &e) != REPO_OK)
			return REPO_ERR;
		dash_html(b, "<tr><td>%s/%s/%s</td>", r[i].env, r[i].svc,
		    r[i].op);
		for (k = 0; k < sizeof(st) / sizeof(st[0]); k++)
			dash_html(b, "<td class=\"n\">%llu / %llu</td>",
			    e.hour[st[k]], e.day[st[k]]);
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>\n<p class=\"muted\">Counted by each "
	    "asyncexec-expire run, in 5-minute intervals, up to a minute "
	    "behind: the last hour is the current interval and the 11 "
	    "before it.</p>\n");
	return REPO_OK;
}

/*
 * The table of routes r[0..n) (one past a page: there are more) of the
 * first page or a later one; the next page's link. REPO_OK, or REPO_ERR
 * at the first read that failed.
 */
static enum repo_rc
routes(struct ddb *d, struct buf *b, const struct dash_route *r, size_t n,
    int later, int64_t now)
{
	size_t			 i;

	buf_puts(b, "<table>\n<tr><th>Route</th><th>Enabled</th>"
	    "<th>Retention (days)</th><th>Waiting</th><th>Leased now</th>"
	    "<th>Retrying (not yet due)</th><th>Scheduled (not yet due)</th>"
	    "<th>Claimable now</th>"
	    "<th>Cancel requested</th><th>Oldest waiting</th></tr>\n");
	for (i = 0; i < n && i < DASH_PAGE_MAX; i++)
		if (route_row(d, b, &r[i], now) != REPO_OK)
			return REPO_ERR;
	buf_puts(b, "</table>\n");
	if (n == 0)
		buf_puts(b, later ? "<p class=\"muted\">No more routes.</p>\n" :
		    "<p class=\"muted\">No routes (asyncexec-admin route add)."
		    "</p>\n");
	dash_html(b, "<p class=\"muted\">Waiting and cancel requested are "
	    "counted among a route's first %d waiting executions in claim order "
	    "(shown with + past that), leased, retrying, scheduled and "
	    "claimable among its first %d, the oldest among the %d (the "
	    "oldest due one that no lease holds, as asyncexec_oldest_waiting_"
	    "seconds).</p>\n",
	    DASH_OPEN_CAP, DASH_DETAIL_CAP, DASH_OPEN_CAP);
	if (n > DASH_PAGE_MAX)
		dash_html(b, "<p class=\"more\"><a href=\"routes?after=%llu\">"
		    "Next routes</a></p>\n",
		    (unsigned long long)r[DASH_PAGE_MAX - 1].id);
	return ended(d, b, r, n < DASH_PAGE_MAX ? n : DASH_PAGE_MAX, now);
}

/* This host's callbacks answered 409 since its start (metrics). */
static void
refusals(struct buf *b)
{
	struct metrics_snap	 m;

	(void)metrics_snapshot(&m);
	dash_html(b, "<h2>Callback refusals (this host, since start)</h2>\n"
	    "<table>\n<tr><th>Stale callback token</th><td class=\"n\">%llu"
	    "</td></tr>\n<tr><th>Already terminal</th><td class=\"n\">%llu"
	    "</td></tr>\n</table>\n",
	    (unsigned long long)m.refused[REFUSED_STALE_TOKEN],
	    (unsigned long long)m.refused[REFUSED_TERMINAL]);
}

/*
 * GET /dashboard/routes[?after=ID]: HERR_OK, HERR_INVALID_REQUEST,
 * HERR_UNAVAILABLE at the first read the database failed (no statement
 * after it), or HERR_INTERNAL (memory).
 */
enum herr
handle_dash_routes(struct app *app, struct req *req, struct resp *resp)
{
	struct dash_route	*r;
	struct ddb		*d;
	uint64_t		 after = 0;
	size_t			 n = 0;
	enum herr		 e;
	int			 given;

	if ((e = dash_query_u64(req, "after", &after, &given)) != HERR_OK)
		return e;
	if ((d = dash_db(app)) == NULL ||
	    (r = calloc(DASH_PAGE_MAX + 1, sizeof(*r))) == NULL)
		return HERR_INTERNAL;
	e = HERR_UNAVAILABLE;
	if (repo_dash_routes(d, after, r, DASH_PAGE_MAX + 1, &n) == REPO_OK) {
		dash_begin(resp, DASH_ROUTES, "", "Routes");
		if (routes(d, &resp->body, r, n, after > 0, clock_now_ms()) ==
		    REPO_OK) {
			refusals(&resp->body);
			e = dash_end(resp);
		}
	}
	free(r);
	return e;
}
