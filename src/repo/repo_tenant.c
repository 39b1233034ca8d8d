/*
 * repo_tenant.c - per-tenant quotas (migration 9): the limit of a
 * tenant's open executions in s2r_tenant, and the bounded count of its
 * waiting ones on ix_exec_tenant_open (see sql/009_tenant_quota.sql).
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_sql.h"

/*
 * The tenant's max_open into *max_open: REPO_OK, REPO_NOTFOUND (no row:
 * unlimited, *max_open 0) or REPO_ERR.
 */
enum repo_rc
repo_tenant_quota(struct db *db, const char *tenant, unsigned *max_open)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	unsigned	 v = 0;
	int		 rc;

	*max_open = 0;
	db_bind_str(&p[0], tenant);
	if ((st = db_run(db, STMT_TENANT_QUOTA, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &v, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return rc == DB_ROW_NONE ? REPO_NOTFOUND : REPO_ERR;
	*max_open = v;
	return REPO_OK;
}

/*
 * The tenant's waiting executions, counted up to cap at most (an index
 * range of at most cap entries), into *open. REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_tenant_open(struct db *db, const char *tenant, unsigned cap,
    unsigned *open)
{
	MYSQL_BIND		 p[2];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned long long	 n = 0;
	int			 rc;

	*open = 0;
	db_bind_str(&p[0], tenant);
	db_bind_u32(&p[1], &cap);
	if ((st = db_run(db, STMT_TENANT_OPEN, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &n, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return REPO_ERR;
	*open = (unsigned)n;
	return REPO_OK;
}

/* Sets the tenant's max_open (0: unlimited); REPO_OK or REPO_ERR. */
enum repo_rc
repo_tenant_set(struct db *db, const char *tenant, unsigned max_open,
    int64_t now)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_str(&p[0], tenant);
	db_bind_u32(&p[1], &max_open);
	db_bind_time(&p[2], &t, now);
	return db_run(db, STMT_TENANT_SET, p) == NULL ? REPO_ERR : REPO_OK;
}

/*
 * Rows: tenant, max_open, waiting (uncapped: an operator's listing; a
 * limited tenant's backlog is bounded by its quota). REPO_OK/REPO_ERR.
 */
enum repo_rc
repo_tenant_list(struct db *db, repo_row_fn fn, void *arg)
{
	char			 tenant[TENANT_MAX_LEN + 1], smax[16], sopen[24];
	const char		*cols[3] = { tenant, smax, sopen };
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned		 max = 0;
	unsigned long long	 open = 0;
	int			 rc;

	if ((st = db_run(db, STMT_TENANT_LIST, NULL)) == NULL)
		return REPO_ERR;
	for (;;) {
		db_rcol(&c, 0, MYSQL_TYPE_STRING, tenant, sizeof(tenant));
		db_rcol(&c, 1, MYSQL_TYPE_LONG, &max, 0);
		db_rcol(&c, 2, MYSQL_TYPE_LONGLONG, &open, 0);
		if ((rc = db_fetch_row(st, &c)) != DB_ROW)
			break;
		db_rstr(&c, 0, tenant, sizeof(tenant));
		snprintf(smax, sizeof(smax), "%u", max);
		snprintf(sopen, sizeof(sopen), "%llu", open);
		fn(arg, cols, 3);
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}
