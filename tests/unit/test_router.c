/* Unit tests: routing and path parameter validation. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "http.h"
#include "router.h"

/* Routes method + path (op: REQ_OPERATOR_PARAM = 1 was sent, as by
 * nginx's loopback server); returns the match. */
static struct route_match
route_as(const char *method, const char *path, int op, struct req *req)
{
	struct route_match	 m;
	char			*p, *s;

	memset(req, 0, sizeof(*req));
	req->operator_pages = op;
	snprintf(req->method, sizeof(req->method), "%s", method);
	req->path = strdup(path);
	req->segbuf = strdup(path + 1);
	for (p = req->segbuf; p != NULL && req->nseg < 8; p = s) {
		if ((s = strchr(p, '/')) != NULL)
			*s++ = '\0';
		req->seg[req->nseg++] = p;
	}
	router_match(req, &m);
	return m;
}

/* route_as from the loopback server: every route reachable. */
static struct route_match
route(const char *method, const char *path, struct req *req)
{
	return route_as(method, path, 1, req);
}

static void
done(struct req *req)
{
	free(req->path);
	free(req->segbuf);
}

/* Expects method+path to route to r with error e. */
static void
expect(const char *method, const char *path, enum route r, enum herr e)
{
	struct req		 req;
	struct route_match	 m = route(method, path, &req);

	if (m.route != r || m.err != e)
		fprintf(stderr, "%s %s: route %d err %d\n", method, path,
		    m.route, m.err);
	CHECK(m.route == r && m.err == e);
	done(&req);
}

/*
 * Without the operator parameter (a public server kept from 0.2.0):
 * method+path is routed as an unknown path, no Allow, and m.refused
 * names operator route r (ROUTE_NONE: a public route, routed as with
 * the parameter).
 */
static void
expect_public(const char *method, const char *path, enum route r)
{
	struct req		 req, req1;
	struct route_match	 m = route_as(method, path, 0, &req);
	struct route_match	 m1 = route(method, path, &req1);

	if (r != ROUTE_NONE) {
		CHECK(m.route == ROUTE_NONE && m.err == HERR_NOT_FOUND);
		CHECK(m.allow == NULL && m.refused == r);
	} else {
		CHECK(m.route == m1.route && m.err == m1.err);
		CHECK(m.refused == ROUTE_NONE);
	}
	if (m.refused != r)
		fprintf(stderr, "%s %s without the parameter: route %d "
		    "refused %d\n", method, path, m.route, m.refused);
	done(&req);
	done(&req1);
}

int
main(void)
{
	struct req		 req;
	struct route_match	 m;

	expect("POST", "/v1/executions/prod/billing/charge", ROUTE_SUBMIT, HERR_OK);
	expect("GET", "/v1/executions/prod/billing/charge/abc:1", ROUTE_POLL, HERR_OK);
	expect("HEAD", "/v1/executions/prod/billing/charge/abc", ROUTE_POLL, HERR_OK);
	expect("POST", "/v1/executions/p/b/c/x/cancel", ROUTE_CANCEL, HERR_OK);
	expect("POST", "/v1/backend/p/b/c/claim", ROUTE_CLAIM, HERR_OK);
	expect("POST", "/v1/callbacks/42/heartbeat", ROUTE_HEARTBEAT, HERR_OK);
	expect("POST", "/v1/callbacks/42/complete", ROUTE_COMPLETE, HERR_OK);
	expect("POST", "/v1/callbacks/42/fail", ROUTE_FAIL, HERR_OK);
	expect("POST", "/v1/callbacks/42/cancelled", ROUTE_CANCELLED, HERR_OK);
	expect("GET", "/healthz", ROUTE_HEALTHZ, HERR_OK);
	expect("GET", "/readyz", ROUTE_READYZ, HERR_OK);
	expect("GET", "/readyz/detail", ROUTE_READYZ_DETAIL, HERR_OK);
	expect("HEAD", "/readyz/detail", ROUTE_READYZ_DETAIL, HERR_OK);
	expect("POST", "/readyz/detail", ROUTE_READYZ_DETAIL,
	    HERR_METHOD_NOT_ALLOWED);
	expect("GET", "/readyz/other", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/metrics", ROUTE_METRICS, HERR_OK);
	expect("GET", "/metrics/", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/dashboard/", ROUTE_DASH_INDEX, HERR_OK);
	expect("GET", "/dashboard/health", ROUTE_DASH_HEALTH, HERR_OK);
	/* Without the slash it is not the dashboard: nginx's public server
	 * refuses "/dashboard/..." only, and passes "/dashboard" on. */
	expect("GET", "/dashboard", ROUTE_NONE, HERR_NOT_FOUND);
	expect("HEAD", "/dashboard", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/dashboard/health/", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/v1/openapi.json", ROUTE_OPENAPI, HERR_OK);
	expect("HEAD", "/v1/openapi.json", ROUTE_OPENAPI, HERR_OK);
	expect("POST", "/v1/openapi.json", ROUTE_OPENAPI, HERR_METHOD_NOT_ALLOWED);
	expect("GET", "/v1/openapi.json/x", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/nope", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/v1/executions/p/b", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/v1/executions/p/b/c/x/", ROUTE_NONE, HERR_NOT_FOUND);
	expect("GET", "/v1/executions/p//c/x", ROUTE_NONE, HERR_NOT_FOUND);
	expect("DELETE", "/v1/executions/p/b/c/x", ROUTE_POLL,
	    HERR_METHOD_NOT_ALLOWED);
	expect("GET", "/v1/executions/p/b/c", ROUTE_LIST, HERR_OK);
	expect("HEAD", "/v1/executions/p/b/c", ROUTE_LIST, HERR_OK);
	expect("GET", "/v1/executions/Prod/b/c", ROUTE_LIST, HERR_UNKNOWN_ROUTE);
	expect("PUT", "/v1/executions/p/b/c", ROUTE_LIST,
	    HERR_METHOD_NOT_ALLOWED);
	expect("POST", "/v1/executions/Prod/b/c", ROUTE_SUBMIT,
	    HERR_UNKNOWN_ROUTE);
	expect("GET", "/v1/executions/p/b/c/a%20b", ROUTE_POLL, HERR_NOT_FOUND);
	expect("POST", "/v1/callbacks/0/complete", ROUTE_COMPLETE, HERR_NOT_FOUND);
	expect("POST", "/v1/callbacks/x/complete", ROUTE_COMPLETE, HERR_NOT_FOUND);
	expect("POST", "/v1/callbacks/1/explode", ROUTE_NONE, HERR_NOT_FOUND);

	/* the operator pages only with the loopback server's parameter */
	expect_public("GET", "/readyz/detail", ROUTE_READYZ_DETAIL);
	expect_public("HEAD", "/readyz/detail", ROUTE_READYZ_DETAIL);
	expect_public("POST", "/readyz/detail", ROUTE_READYZ_DETAIL);
	expect_public("GET", "/dashboard/", ROUTE_DASH_INDEX);
	expect_public("GET", "/dashboard/health", ROUTE_DASH_HEALTH);
	expect_public("GET", "/dashboard/routes", ROUTE_DASH_ROUTES);
	expect_public("GET", "/dashboard/attention", ROUTE_DASH_ATTENTION);
	expect_public("GET", "/dashboard/tenants", ROUTE_DASH_TENANTS);
	expect_public("GET", "/dashboard/webhooks", ROUTE_DASH_WEBHOOKS);
	expect_public("GET", "/dashboard/execution/7", ROUTE_DASH_EXEC);
	expect_public("GET", "/dashboard/execution/x", ROUTE_DASH_EXEC);
	expect_public("DELETE", "/dashboard/keys", ROUTE_DASH_KEYS);
	expect_public("GET", "/dashboard/keys", ROUTE_DASH_KEYS);
	expect_public("GET", "/dashboard/style.css", ROUTE_DASH_CSS);
	expect_public("GET", "/metrics", ROUTE_NONE);
	expect_public("GET", "/readyz", ROUTE_NONE);
	expect_public("POST", "/v1/executions/p/b/c", ROUTE_NONE);
	expect_public("GET", "/nope", ROUTE_NONE);
	m = route("GET", "/dashboard/keys", &req);
	CHECK(m.route == ROUTE_DASH_KEYS && m.refused == ROUTE_NONE);
	done(&req);

	m = route("GET", "/v1/executions/prod/billing/charge/ord-7", &req);
	CHECK_EQ_STR(req.env, "prod");
	CHECK_EQ_STR(req.svc, "billing");
	CHECK_EQ_STR(req.op, "charge");
	CHECK_EQ_STR(req.cid, "ord-7");
	done(&req);
	m = route("POST", "/v1/callbacks/123/fail", &req);
	CHECK(req.exec_id == 123);
	done(&req);
	m = route("PUT", "/healthz", &req);
	CHECK_EQ_STR(m.allow, "GET, HEAD");
	done(&req);
	CHECK_EQ_STR(router_name(ROUTE_SUBMIT), "submit");
	return check_done("unit_router");
}
