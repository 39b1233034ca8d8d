/*
 * repo_dash.h - the operator dashboard's reads (src/handlers/dash_*.c),
 * on a handle of its own (struct ddb: own statement table, own
 * connection made on first use), so the HTTP service's handle neither
 * prepares nor can run them. Every statement is a bounded index read:
 * a primary-key range with a LIMIT, or an index range capped by a LIMIT
 * in a derived table (tests/dash/test_dash_explain.py EXPLAINs each).
 * Nothing here reads a payload, a token or a hash: at most a payload's
 * length.
 *
 * Results as repo.h says: REPO_OK, REPO_NOTFOUND, REPO_ERR (logged).
 * Times are UTC milliseconds.
 *
 * repo layer: the handlers' dashboard pages, serve (worker.c closes the
 * handle), the tests.
 */
#ifndef ASYNCEXEC_REPO_DASH_H
#define ASYNCEXEC_REPO_DASH_H

#include <stddef.h>
#include <stdint.h>

#include "repo.h"
#include "repo_admin.h"

struct config;
struct ddb;

#define DASH_PAGE_MAX		50	/* rows of a list page */
#define DASH_OPEN_CAP		10000	/* waiting executions counted per route */
#define DASH_OPEN_CAP_STR	"10000"
#define DASH_LABEL_MAX		512	/* s2r_api_key.label: 128 utf8mb4 */
#define DASH_KEY_ROUTES		8	/* a backend key's routes shown */

/* A route (s2r_route). */
struct dash_route {
	uint64_t	 id;
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	unsigned	 retention_days;
	int		 enabled;
};

/* A route's waiting executions, the first DASH_OPEN_CAP of them. */
struct dash_open {
	unsigned	 waiting;	/* capped at DASH_OPEN_CAP */
	unsigned	 leased;	/* a lease that has not lapsed */
	unsigned	 retrying;	/* a retry whose not_before is ahead */
	unsigned	 claimable;	/* a claim would take it now */
	unsigned	 cancel_requested;
	int64_t		 oldest_ms;	/* created_at of the oldest one not
					 * cancel-requested; 0: none */
};

/* An API key as the operator sees it: never its hash. */
struct dash_key {
	uint64_t	 id, lineage;
	int		 backend;
	char		 tenant[TENANT_MAX_LEN + 1];	/* "": backend */
	char		 label[DASH_LABEL_MAX + 1];	/* "": none */
	int64_t		 created_at;
	int64_t		 revoked_at;	/* 0: never; ahead: in its grace */
	char		 routes[DASH_KEY_ROUTES][3 * (NAME_MAX_LEN + 1)];
	size_t		 nroutes;	/* of a backend key, at most
					 * DASH_KEY_ROUTES shown */
	int		 more_routes;	/* it serves more than those */
};

struct ddb	*repo_dash_open(const struct config *);
void		 repo_dash_close(struct ddb *);
enum repo_rc	 repo_dash_routes(struct ddb *, uint64_t after, struct dash_route *,
		    size_t max, size_t *n);
enum repo_rc	 repo_dash_route_open(struct ddb *, const struct dash_route *,
		    int64_t now, struct dash_open *);
enum repo_rc	 repo_dash_exec(struct ddb *, uint64_t id, struct exec_admin *);
enum repo_rc	 repo_dash_keys(struct ddb *, uint64_t before, struct dash_key *,
		    size_t max, size_t *n);
const char	*repo_dash_sql(unsigned i, const char **name, const char **params);

#endif
