/*
 * repo_dash_sql.h - the dashboard's statement ids and handle, private to
 * repo_dash.c (the statements) and repo_dash_att.c (the Attention lists).
 */
#ifndef ASYNCEXEC_REPO_DASH_SQL_H
#define ASYNCEXEC_REPO_DASH_SQL_H

#include "db.h"

/* The statements of dstmts (repo_dash.c), by index. */
enum dstmt {
	D_ROUTES,
	D_ROUTE_OPEN,
	D_ROUTE_ENDED,
	D_EXEC,
	D_KEYS,
	D_KEY_ROUTES,
	D_ATT_WAITING,
	D_ATT_WAITING_R,
	D_ATT_LAST,
	D_ATT_LAST_SEEN,
	D_ATT_LAPSED,
	D_ATT_LAPSED_R,
	D_ATT_FAILED,
	D_ATT_EXPIRED,
	D_TENANTS,
	D_TENANT_OPEN,
	D_WH_ENDPOINTS,
	D_WH_PENDING,
	D_WH_DEAD,
	D__MAX
};

/* A dashboard handle: its own connection (repo_dash_open). */
struct ddb {
	struct db	*db;
};

#endif
