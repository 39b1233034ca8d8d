/*
 * dash_keys.c - GET /dashboard/keys: the API keys, newest first (a page
 * of DASH_PAGE_MAX, ?before=ID for the next): id, kind, tenant, label,
 * a backend key's routes, created, and whether it is live, in its
 * rotation grace or revoked. Never key material: the hash is not read.
 */
#include <stdlib.h>

#include "clock.h"
#include "dash.h"
#include "repo_dash.h"

/* The state cell of k at now: live, grace until T, revoked at T. */
static void
key_state(struct buf *b, const struct dash_key *k, int64_t now)
{
	if (k->revoked_at == 0) {
		buf_puts(b, "<td class=\"ok\">live</td>");
		return;
	}
	buf_puts(b, k->revoked_at > now ? "<td class=\"warn\">grace until " :
	    "<td class=\"muted\">revoked ");
	dash_time(b, k->revoked_at);
	buf_puts(b, "</td>");
}

/* One key's row. */
static void
key_row(struct buf *b, const struct dash_key *k, int64_t now)
{
	size_t	 i;

	dash_html(b, "<tr><td class=\"n\">%llu</td><td>%s</td><td>%s</td>"
	    "<td>%s</td><td>", (unsigned long long)k->id,
	    k->backend ? "backend" : "consumer", k->backend ? "-" : k->tenant,
	    k->label);
	for (i = 0; i < k->nroutes; i++)
		dash_html(b, "%s%s", i ? ", " : "", k->routes[i]);
	buf_puts(b, k->more_routes ? ", &hellip;" : k->backend ? "" : "-");
	buf_puts(b, "</td><td>");
	dash_time(b, k->created_at);
	buf_puts(b, "</td>");
	key_state(b, k, now);
	dash_html(b, "<td class=\"n\">%llu</td></tr>\n",
	    (unsigned long long)k->lineage);
}

/*
 * GET /dashboard/keys[?before=ID]: HERR_OK, HERR_INVALID_REQUEST,
 * HERR_UNAVAILABLE (the database failed) or HERR_INTERNAL (memory).
 */
enum herr
handle_dash_keys(struct app *app, struct req *req, struct resp *resp)
{
	struct dash_key	*k;
	struct ddb	*d;
	uint64_t	 before = UINT64_MAX;
	size_t		 i, n = 0;
	int64_t		 now = clock_now_ms();
	enum herr	 e;
	int		 given;

	if ((e = dash_query_u64(req, "before", &before, &given)) != HERR_OK)
		return e;
	if ((d = dash_db(app)) == NULL ||
	    (k = calloc(DASH_PAGE_MAX + 1, sizeof(*k))) == NULL)
		return HERR_INTERNAL;
	if (repo_dash_keys(d, before, k, DASH_PAGE_MAX + 1, &n) != REPO_OK) {
		free(k);
		return HERR_UNAVAILABLE;
	}
	dash_begin(resp, DASH_KEYS, "", "Keys");
	buf_puts(&resp->body, "<table>\n<tr><th>Id</th><th>Kind</th>"
	    "<th>Tenant</th><th>Label</th><th>Routes</th><th>Created</th>"
	    "<th>State</th><th>Lineage</th></tr>\n");
	for (i = 0; i < n && i < DASH_PAGE_MAX; i++)
		key_row(&resp->body, &k[i], now);
	buf_puts(&resp->body, "</table>\n");
	if (n > DASH_PAGE_MAX)
		dash_html(&resp->body, "<p class=\"more\"><a href=\"keys?"
		    "before=%llu\">Older keys</a></p>\n",
		    (unsigned long long)k[DASH_PAGE_MAX - 1].id);
	free(k);
	return dash_end(resp);
}
