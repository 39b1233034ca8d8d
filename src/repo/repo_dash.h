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
#define DASH_OPEN_CAP_STR	API_STR(DASH_OPEN_CAP)
#define DASH_DETAIL_CAP		1000	/* of them read for the rest */
#define DASH_DETAIL_CAP_STR	API_STR(DASH_DETAIL_CAP)
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

/*
 * A route's waiting executions: waiting, cancel_requested and oldest_ms
 * of the first DASH_OPEN_CAP in claim order (ix_exec_claim), the others
 * of the first DASH_DETAIL_CAP.
 */
struct dash_open {
	unsigned	 waiting;	/* capped at DASH_OPEN_CAP */
	unsigned	 leased;	/* a lease that has not lapsed */
	unsigned	 retrying;	/* a retry whose not_before is ahead */
	unsigned	 scheduled;	/* a start (X-Not-Before) ahead */
	unsigned	 claimable;	/* a claim would take it now */
	unsigned	 cancel_requested;
	int64_t		 oldest_ms;	/* created_at of the oldest one
					 * waiting for a claim (due, no
					 * live lease, not cancel-requested:
					 * repo_sql.h OPEN_HEAD); 0: none */
};

/* A route's executions that ended in the last day and hour, by status. */
struct dash_ended {
	unsigned long long day[ST__MAX], hour[ST__MAX];
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

/*
 * The Attention page's lists (repo_dash_attention), each a bounded read:
 *   WAITING   waiting, nearest their expiry first (ix_exec_expiry: expires_at
 *             is created_at + the route's retention, or an earlier
 *             deadline); of a route: its first DASH_OPEN_CAP waiting
 *             entries of ix_exec_claim, oldest (lowest id) first
 *   LAST      on their last attempt: claimable with attempts =
 *             max_attempts - 1 (the next claim is the last) or leased with
 *             attempts = max_attempts (the last one runs), among the first
 *             DASH_LAST_CAP entries of that range of ix_exec_abandon (it
 *             holds the finished executions too; *capped says it was
 *             reached)
 *   LAPSED    waiting with a lease that has lapsed, among the first
 *             DASH_OPEN_CAP waiting (of ix_exec_expiry, or the route's)
 *   FAILED, EXPIRED, ABANDONED
 *             the latest by completion (ix_exec_completed read backwards,
 *             sql/013); of a route, those among the DASH_RECENT_WINDOW of
 *             that status that ended last; abandoned are the failed whose
 *             error asyncexec-expire wrote, among the window too
 */
enum dash_att {
	DASH_ATT_WAITING,
	DASH_ATT_LAST,
	DASH_ATT_LAPSED,
	DASH_ATT_FAILED,
	DASH_ATT_EXPIRED,
	DASH_ATT_ABANDONED,
	DASH_ATT__MAX
};

#define DASH_ATT_ROWS		20	/* rows of one list (a page) */
#define DASH_ATT_PAGES		100	/* ?page=0..DASH_ATT_PAGES-1 */
#define DASH_RECENT_WINDOW	2000
#define DASH_RECENT_WINDOW_STR	API_STR(DASH_RECENT_WINDOW)
#define DASH_ERR_CHARS		200	/* an error message shown, at most */
#define DASH_LAST_CAP		5000	/* entries of the LAST range read */
#define DASH_LAST_CAP_STR	API_STR(DASH_LAST_CAP)

/* One execution of an Attention list. */
struct dash_att_row {
	uint64_t	 id;
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	char		 tenant[TENANT_MAX_LEN + 1];	/* "": none */
	int64_t		 created_at;
	int64_t		 at;		/* WAITING: expires; LAST, LAPSED: the
					 * lease's end (0: none); else completed */
	unsigned	 attempts;
	char		 code[4 * 64 + 1];	/* the error's code, "": none */
	char		 message[4 * DASH_ERR_CHARS + 1];	/* "": none or
					 * not shown */
};

/* A tenant with a quota (s2r_tenant) and its waiting executions. */
struct dash_tenant {
	char		 tenant[TENANT_MAX_LEN + 1];
	unsigned	 max_open;	/* 0: unlimited */
	unsigned	 open;		/* counted up to max_open + 1 (the
					 * quota's own count) or DASH_OPEN_CAP */
	int		 capped;	/* open stopped at DASH_OPEN_CAP */
};

#define DASH_WH_HOST_MAX	255	/* scheme://host[:port] shown */
#define DASH_WH_REASON_MAX	1020	/* disabled_reason: 255 utf8mb4 */
#define DASH_DELIVERY_CAP	10000	/* deliveries counted per state */
#define DASH_DELIVERY_CAP_STR	API_STR(DASH_DELIVERY_CAP)

/*
 * A webhook endpoint as the operator sees it: its URL's scheme, host and
 * port only (never its path, query or secret), and its deliveries: the
 * pending or leased ones among the first DASH_DELIVERY_CAP by due time,
 * the dead ones among the latest DASH_DELIVERY_CAP.
 */
struct dash_webhook {
	uint64_t	 id;
	char		 tenant[TENANT_MAX_LEN + 1];
	char		 route[3 * (NAME_MAX_LEN + 1)];	/* "": every route */
	char		 origin[DASH_WH_HOST_MAX + 1];
	int		 enabled;
	char		 reason[DASH_WH_REASON_MAX + 1];	/* "": none */
	unsigned	 pending, dead;
	int64_t		 oldest_pending;	/* created_at; 0: none */
};

/* Whether the delivery counts of repo_dash_webhooks reached their cap. */
struct dash_wh_caps {
	int		 pending, dead;
};

struct ddb	*repo_dash_open(const struct config *);
void		 repo_dash_close(struct ddb *);
enum repo_rc	 repo_dash_routes(struct ddb *, uint64_t after, struct dash_route *,
		    size_t max, size_t *n);
enum repo_rc	 repo_dash_route_open(struct ddb *, const struct dash_route *,
		    int64_t now, struct dash_open *);
enum repo_rc	 repo_dash_route_ended(struct ddb *, const struct dash_route *,
		    int64_t now, struct dash_ended *);
enum repo_rc	 repo_dash_exec(struct ddb *, uint64_t id, struct exec_admin *);
enum repo_rc	 repo_dash_keys(struct ddb *, uint64_t before, struct dash_key *,
		    size_t max, size_t *n);
enum repo_rc	 repo_dash_attention(struct ddb *, enum dash_att,
		    const struct dash_route *only, unsigned max_attempts,
		    int show_errors, int64_t now, unsigned offset,
		    struct dash_att_row *, size_t max, size_t *n, int *capped);
enum repo_rc	 repo_dash_tenants(struct ddb *, const char *after,
		    struct dash_tenant *, size_t max, size_t *n);
enum repo_rc	 repo_dash_webhooks(struct ddb *, int after_enabled,
		    uint64_t after_id, struct dash_webhook *, size_t max,
		    size_t *n, struct dash_wh_caps *);
const char	*repo_dash_sql(unsigned i, const char **name, const char **params);

#endif
