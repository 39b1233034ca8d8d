/*
 * router.h - method and path to handler, one table indexed by enum route.
 *
 * handlers layer (it dispatches to them): the worker (serve) and main_fcgi.c.
 */
#ifndef ASYNCEXEC_ROUTER_H
#define ASYNCEXEC_ROUTER_H

#include "http.h"

enum route {
	ROUTE_SUBMIT,		/* ROUTE_SUBMIT */
	ROUTE_POLL,		/* ROUTE_POLL */
	ROUTE_CANCEL,		/* ROUTE_CANCEL */
	ROUTE_CLAIM,		/* ROUTE_CLAIM */
	ROUTE_HEARTBEAT,	/* ROUTE_HEARTBEAT */
	ROUTE_COMPLETE,		/* ROUTE_COMPLETE */
	ROUTE_FAIL,		/* ROUTE_FAIL */
	ROUTE_CANCELLED,	/* ROUTE_CANCELLED */
	ROUTE_HEALTHZ,		/* ROUTE_HEALTHZ */
	ROUTE_READYZ,		/* ROUTE_READYZ */
	ROUTE_METRICS,		/* ROUTE_METRICS */
	ROUTE_OPENAPI,		/* ROUTE_OPENAPI */
	ROUTE_LIST,		/* ROUTE_LIST */
	ROUTE_READYZ_DETAIL,	/* ROUTE_READYZ_DETAIL */
	ROUTE__MAX
};

#define ROUTE_NONE	ROUTE__MAX	/* no path matched (metrics label) */

struct route_match {
	enum route	 route;		/* ROUTE_NONE when nothing matched */
	enum herr	 err;		/* HERR_OK, or why the match failed */
	const char	*allow;		/* for HERR_METHOD_NOT_ALLOWED */
};

void		 router_match(struct req *, struct route_match *);
handler_fn	 router_handler(enum route);
const char	*router_name(enum route);
const char *const *router_names(int *n);

#endif
