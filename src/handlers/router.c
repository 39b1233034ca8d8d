/*
 * router.c - method and path to handler.
 *
 * Patterns are matched segment by segment; "*" takes any one non-empty
 * segment. A path that matches with another method gives 405 with Allow.
 * Route parameters are validated here: a bad route name is
 * unknown_route, a bad correlation id or execution id is not_found.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "handlers.h"
#include "log.h"
#include "quota.h"
#include "router.h"
#include "valid.h"

enum params { P_NONE, P_ROUTE, P_EXEC, P_CALLBACK };

/* Who may reach a route: anyone, or nginx's loopback server only. */
enum access { A_PUBLIC, A_OPERATOR };

struct route_def {
	const char	*method;
	const char	*pattern;
	enum params	 params;
	enum access	 access;
	handler_fn	 fn;
	const char	*name;
};

static const struct route_def routes[ROUTE__MAX] = {
#define ROUTE_DEF(name, method, pattern, params, access, fn, label)	\
	[ROUTE_##name] = { method, pattern, params, access, fn, label },
	ROUTES(ROUTE_DEF)
#undef ROUTE_DEF
};

/* Whether req may reach route def: 1, or 0 (an operator page asked
 * for without REQ_OPERATOR_PARAM = 1). */
static int
reachable(const struct req *req, const struct route_def *def)
{
	switch (def->access) {
	case A_PUBLIC:
		return 1;
	case A_OPERATOR:
		return req->operator_pages;
	}
	return 0;
}

/* Whether req's segments match pattern; fills vars with the "*" ones. */
static int
match(const struct req *req, const char *pattern, const char **vars)
{
	const char	*p = pattern;
	size_t		 i, n, nv = 0;

	for (i = 0; *p != '\0'; i++) {
		n = strcspn(p, "/");
		if (i >= req->nseg || req->seg[i][0] == '\0')
			return 0;
		if (n == 1 && *p == '*')
			vars[nv++] = req->seg[i];
		else if (strncmp(p, req->seg[i], n) != 0 ||
		    req->seg[i][n] != '\0')
			return 0;
		p += n;
		if (*p == '/')
			p++;
	}
	/* A pattern that ends in "/" ("dashboard/") matches only the path
	 * with the slash (segments "dashboard", ""), never "/dashboard":
	 * nginx's public server refuses the dashboard by that prefix. */
	if (p > pattern && p[-1] == '/')
		return i + 1 == req->nseg && req->seg[i][0] == '\0';
	return i == req->nseg;
}

/* Validates and stores the parameters of route def; HERR_OK or why not. */
static enum herr
bind_params(struct req *req, const struct route_def *def, const char **v)
{
	switch (def->params) {
	case P_NONE:
		return HERR_OK;
	case P_CALLBACK:
		return valid_exec_id(v[0], &req->exec_id) ? HERR_OK :
		    HERR_NOT_FOUND;
	case P_EXEC:
		req->cid = v[3];
		/* FALLTHROUGH */
	case P_ROUTE:
		req->env = v[0];
		req->svc = v[1];
		req->op = v[2];
		if (!valid_name(v[0]) || !valid_name(v[1]) || !valid_name(v[2]))
			return HERR_UNKNOWN_ROUTE;
		if (req->cid != NULL && !valid_correlation_id(req->cid))
			return HERR_NOT_FOUND;
		return HERR_OK;
	}
	return HERR_NOT_FOUND;
}

/*
 * The Allow value of a path served with methods a and then b ("GET,
 * HEAD" and "POST" for a route's collection: list and submit), or b
 * when a is NULL. In a static buffer: one request at a time per worker.
 */
static const char *
allow_add(const char *a, const char *b)
{
	static char	 both[64];

	if (a == NULL)
		return b;
	snprintf(both, sizeof(both), "%s, %s", strcmp(a, b) < 0 ? a : b,
	    strcmp(a, b) < 0 ? b : a);
	return both;
}

/*
 * Finds the route for req's method and path. HEAD is served as GET.
 * On success m->route is set and m->err is HERR_OK; otherwise m->err
 * says why (not_found, method_not_allowed with m->allow, or a parameter
 * error) and m->route is the matched route or ROUTE_NONE. A route req
 * may not reach is passed over as if its path were unknown (no 405
 * either); m->refused names it, else it is ROUTE_NONE.
 */
void
router_match(struct req *req, struct route_match *m)
{
	const char	*vars[8];
	const char	*method = req->method;
	int		 i;

	if (strcmp(method, "HEAD") == 0)
		method = "GET";
	m->route = ROUTE_NONE;
	m->err = HERR_NOT_FOUND;
	m->allow = NULL;
	m->refused = ROUTE_NONE;
	for (i = 0; i < ROUTE__MAX; i++) {
		if (!match(req, routes[i].pattern, vars))
			continue;
		if (!reachable(req, &routes[i])) {
			m->refused = (enum route)i;
			continue;
		}
		if (strcmp(routes[i].method, method) != 0) {
			m->err = HERR_METHOD_NOT_ALLOWED;
			m->allow = allow_add(m->allow,
			    strcmp(routes[i].method, "GET") == 0 ?
			    "GET, HEAD" : routes[i].method);
			m->route = (enum route)i;
			continue;
		}
		m->route = (enum route)i;
		m->allow = NULL;
		m->err = bind_params(req, &routes[i], vars);
		return;
	}
}

handler_fn
router_handler(enum route r)
{
	return r < ROUTE__MAX ? routes[r].fn : NULL;
}

const char *
router_name(enum route r)
{
	return r < ROUTE__MAX ? routes[r].name : "none";
}

/*
 * The names of every endpoint, indexed by enum route, ROUTE_NONE
 * ("none", no path matched) last: what metrics_init takes. *n gets
 * ROUTE__MAX + 1.
 */
const char *const *
router_names(int *n)
{
	static const char	*all[ROUTE__MAX + 1];
	int			 i;

	for (i = 0; i <= ROUTE__MAX; i++)
		all[i] = router_name((enum route)i);
	*n = ROUTE__MAX + 1;
	return all;
}

/*
 * The warning for an operator page asked for without the parameter of
 * nginx's loopback server, once per worker (a process that serves):
 * the site is older than the application (a dpkg conffile kept).
 */
static void
warn_refused(enum route r)
{
	static int	 warned;

	if (warned)
		return;
	warned = 1;
	log_warn("router: %s refused as an unknown path (404): the request "
	    "came without the FastCGI parameter " REQ_OPERATOR_PARAM " = 1 "
	    "that the nginx site's loopback server sets for the operator "
	    "pages (/readyz/detail, /dashboard/); the site lacks it (kept "
	    "from an older version): merge the packaged site (diff "
	    "/etc/nginx/sites-available/asyncexec with its .dpkg-dist) and "
	    "reload nginx, see asyncexec-ops(7), UPGRADES (logged once per "
	    "worker)", router_name(r));
}

/*
 * One request, from the FastCGI request io into resp (initialised by the
 * caller, who writes and frees it, and frees req): the params copied,
 * the route matched and its handler run; an error becomes its problem,
 * with Retry-After on a 503 and on quota_exceeded; X-Request-Id echoes
 * nginx's id. The log context names the request while it runs. Returns
 * the route (ROUTE_NONE when none matched), for the metrics.
 */
enum route
router_serve(struct app *app, void *io, struct req *req, struct resp *resp)
{
	struct route_match	 m = { ROUTE_NONE, HERR_INTERNAL, NULL,
				    ROUTE_NONE };
	enum herr		 err = HERR_INTERNAL;

	if (req_from_params(req, io) == 0) {
		router_match(req, &m);
		log_context(req->request_id, router_name(m.route));
		err = m.err;
		resp->allow = m.allow;
		if (m.refused != ROUTE_NONE)
			warn_refused(m.refused);
		if (err == HERR_OK)
			err = router_handler(m.route)(app, req, resp);
	}
	if (err != HERR_OK) {
		buf_reset(&resp->headers);
		resp_problem(resp, err);
		if (resp->status == 503)
			resp_header(resp, "Retry-After", "%u",
			    app->cfg->retry_after_seconds);
		else if (err == HERR_QUOTA_EXCEEDED)
			resp_header(resp, "Retry-After", "%u",
			    quota_retry_after(app->cfg));
	}
	if (req->request_id != NULL)
		resp_header(resp, "X-Request-Id", "%s", req->request_id);
	return m.route;
}
