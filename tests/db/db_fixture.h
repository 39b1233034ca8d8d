/*
 * db_fixture.h - the fixtures that the database tests (db_repo,
 * db_expire, db_expire_race) share: a side connection to the test
 * stack's database (fixtures only, outside the repository) and an
 * execution to insert with its identity and request filled in. Included
 * by each of them (expire_fixture.h includes it): the functions are
 * static inline, a test program being one file.
 */
#ifndef ASYNCEXEC_DB_FIXTURE_H
#define ASYNCEXEC_DB_FIXTURE_H

#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "repo.h"
#include "util/side.h"

/* Runs fixture statement q on m; exits on failure. */
static inline void
side_sql(MYSQL *m, const char *q)
{
	if (mysql_query(m, q) != 0) {
		fprintf(stderr, "%s: %s\n", q, mysql_error(m));
		exit(1);
	}
}

/* side_sql of the statement fmt makes (at most 1023 bytes). */
static inline void
side_sqlf(MYSQL *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void
side_sqlf(MYSQL *m, const char *fmt, ...)
{
	char	 q[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	side_sql(m, q);
}

/* The one number the statement fmt makes reads on m (-1: none, NULL). */
static inline long long
side_numf(MYSQL *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline long long
side_numf(MYSQL *m, const char *fmt, ...)
{
	char		 q[1024];
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	side_sql(m, q);
	if ((res = mysql_store_result(m)) != NULL &&
	    (row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

/*
 * A side connection to cfg's database (READ COMMITTED: util/side.h),
 * then statement init (NULL: none) run on it; exits on failure.
 */
static inline MYSQL *
side_open(const struct config *cfg, const char *init)
{
	MYSQL	*m = mysql_init(NULL);

	side_isolation(m);
	if (mysql_real_connect(m, cfg->db_socket[0] ? NULL : cfg->db_host,
	    cfg->db_user, cfg->db_password, cfg->db_name, cfg->db_port,
	    cfg->db_socket[0] ? cfg->db_socket : NULL, 0) == NULL ||
	    (init != NULL && mysql_query(m, init) != 0)) {
		fprintf(stderr, "side connection%s%s: %s\n", init ? ": " : "",
		    init ? init : "", mysql_error(m));
		exit(1);
	}
	return m;
}

/*
 * *n zeroed, then execution env/svc/op/cid of tenant with request (its
 * length and SHA-256 too); the keys, lineage and times are the caller's.
 */
static inline void
exec_new_init(struct exec_new *n, const char *env, const char *svc,
    const char *op, const char *tenant, const char *cid, const char *request)
{
	memset(n, 0, sizeof(*n));
	n->cid = cid;
	n->env = env;
	n->svc = svc;
	n->op = op;
	n->tenant = tenant;
	n->request = request;
	n->request_len = strlen(request);
	crypto_sha256(n->request, n->request_len, n->request_sha);
}

#endif
