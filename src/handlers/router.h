/*
 * router.h - method and path to handler, one table indexed by enum route.
 *
 * handlers layer (it dispatches to them): the worker (serve), main_fcgi.c and
 * the fuzz harness (router_serve: what a worker does with one request).
 */
#ifndef ASYNCEXEC_ROUTER_H
#define ASYNCEXEC_ROUTER_H

#include "http.h"

/*
 * The routes, in the order they are matched: X(name, method, pattern,
 * parameters, access, handler, metrics label). "*" in a pattern takes
 * one non-empty segment, and a pattern ending in "/" the path with that
 * slash; the parameters (P_*; P_CALLBACK: an execution id), the access
 * (A_*) and the handlers are seen by router.c only, where the table is
 * made from this list. A_OPERATOR marks the operator pages
 * (readyz/detail, dashboard/...): served only to a request with the
 * FastCGI parameter REQ_OPERATOR_PARAM = 1, which the nginx site sets on
 * its loopback server alone; any other request gets the unknown path's
 * 404 (a public server kept from 0.2.0 passes them on). /metrics stays
 * A_PUBLIC: every site refuses it publicly, 0.2.0's too.
 */
#define ROUTES(X)							\
	X(SUBMIT, "POST", "v1/executions/*/*/*", P_ROUTE, A_PUBLIC,	\
	    handle_submit, "submit")					\
	X(POLL, "GET", "v1/executions/*/*/*/*", P_EXEC, A_PUBLIC,	\
	    handle_poll, "poll")					\
	X(CANCEL, "POST", "v1/executions/*/*/*/*/cancel", P_EXEC,	\
	    A_PUBLIC, handle_cancel, "cancel")				\
	X(CLAIM, "POST", "v1/backend/*/*/*/claim", P_ROUTE, A_PUBLIC,	\
	    handle_claim, "claim")					\
	X(HEARTBEAT, "POST", "v1/callbacks/*/heartbeat", P_CALLBACK,	\
	    A_PUBLIC, handle_heartbeat, "heartbeat")			\
	X(COMPLETE, "POST", "v1/callbacks/*/complete", P_CALLBACK,	\
	    A_PUBLIC, handle_complete, "complete")			\
	X(FAIL, "POST", "v1/callbacks/*/fail", P_CALLBACK, A_PUBLIC,	\
	    handle_fail, "fail")					\
	X(CANCELLED, "POST", "v1/callbacks/*/cancelled", P_CALLBACK,	\
	    A_PUBLIC, handle_cancelled, "cancelled")			\
	X(HEALTHZ, "GET", "healthz", P_NONE, A_PUBLIC, handle_healthz,	\
	    "healthz")							\
	X(READYZ, "GET", "readyz", P_NONE, A_PUBLIC, handle_readyz,	\
	    "readyz")							\
	X(METRICS, "GET", "metrics", P_NONE, A_PUBLIC, handle_metrics,	\
	    "metrics")							\
	X(OPENAPI, "GET", "v1/openapi.json", P_NONE, A_PUBLIC,		\
	    handle_openapi, "openapi")					\
	X(LIST, "GET", "v1/executions/*/*/*", P_ROUTE, A_PUBLIC,	\
	    handle_list, "list")					\
	X(READYZ_DETAIL, "GET", "readyz/detail", P_NONE, A_OPERATOR,	\
	    handle_readyz_detail, "readyz_detail")			\
	X(DASH_INDEX, "GET", "dashboard/", P_NONE, A_OPERATOR,		\
	    handle_dash_health, "dash_index")				\
	X(DASH_HEALTH, "GET", "dashboard/health", P_NONE, A_OPERATOR,	\
	    handle_dash_health, "dash_health")				\
	X(DASH_ROUTES, "GET", "dashboard/routes", P_NONE, A_OPERATOR,	\
	    handle_dash_routes, "dash_routes")				\
	X(DASH_ATTENTION, "GET", "dashboard/attention", P_NONE,		\
	    A_OPERATOR, handle_dash_attention, "dash_attention")	\
	X(DASH_TENANTS, "GET", "dashboard/tenants", P_NONE, A_OPERATOR,	\
	    handle_dash_tenants, "dash_tenants")			\
	X(DASH_WEBHOOKS, "GET", "dashboard/webhooks", P_NONE,		\
	    A_OPERATOR, handle_dash_webhooks, "dash_webhooks")		\
	X(DASH_EXEC, "GET", "dashboard/execution/*", P_CALLBACK,	\
	    A_OPERATOR, handle_dash_exec, "dash_execution")		\
	X(DASH_KEYS, "GET", "dashboard/keys", P_NONE, A_OPERATOR,	\
	    handle_dash_keys, "dash_keys")				\
	X(DASH_CSS, "GET", "dashboard/style.css", P_NONE, A_OPERATOR,	\
	    handle_dash_css, "dash_css")

enum route {
#define ROUTE_ENUM(name, method, pattern, params, access, fn, label)	\
	ROUTE_##name,
	ROUTES(ROUTE_ENUM)
#undef ROUTE_ENUM
	ROUTE__MAX
};

#define ROUTE_NONE	ROUTE__MAX	/* no path matched (metrics label) */

struct route_match {
	enum route	 route;		/* ROUTE_NONE when nothing matched */
	enum herr	 err;		/* HERR_OK, or why the match failed */
	const char	*allow;		/* for HERR_METHOD_NOT_ALLOWED */
	enum route	 refused;	/* an A_OPERATOR route the path would
					 * match, refused (no parameter),
					 * else ROUTE_NONE */
};

void		 router_match(struct req *, struct route_match *);
enum route	 router_serve(struct app *, void *io, struct req *,
		    struct resp *);
handler_fn	 router_handler(enum route);
const char	*router_name(enum route);
const char *const *router_names(int *n);

#endif
