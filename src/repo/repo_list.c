/*
 * repo_list.c - the listing of a key lineage's executions on a route
 * (GET /v1/executions/{env}/{svc}/{op}; migration 7).
 *
 * One range of ix_exec_list (or ix_exec_list_status with a status), all
 * of whose columns but id are bound, read from the top (id descending)
 * below the page token's id: a page reads max entries and the rows they
 * name, whatever the size of the table.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "log.h"
#include "repo.h"
#include "repo_sql.h"

/* Binds one item's columns into c (status: the ENUM's 1-based index). */
static void
item_cols(struct db_cols *c, struct list_item *it, unsigned *st,
    MYSQL_TIME *t)
{
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &it->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, it->cid, sizeof(it->cid));
	db_rcol(c, 2, MYSQL_TYPE_LONG, st, 0);
	db_rcol(c, 3, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(c, 4, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(c, 5, MYSQL_TYPE_DATETIME, &t[2], sizeof(t[2]));
	db_rcol(c, 6, MYSQL_TYPE_DATETIME, &t[3], sizeof(t[3]));
}

/* Reads up to max rows of executed statement st into it; 0 or -1. */
static int
items_read(MYSQL_STMT *st, struct list_item *it, unsigned max, size_t *n)
{
	struct db_cols	 c;
	struct list_item row;
	MYSQL_TIME	 t[4];
	unsigned	 status = 0;
	int		 rc = DB_ROW;

	memset(&row, 0, sizeof(row));
	item_cols(&c, &row, &status, t);
	while (*n < max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 1, row.cid, sizeof(row.cid));
		if (status < 1 || status > ST__MAX) {
			log_error("db: execution %llu has status %u",
			    (unsigned long long)row.id, status);
			rc = DB_ROW_ERR;
			break;
		}
		row.status = (enum exec_status)(status - 1);
		row.created_at = db_time_ms(&t[0]);
		row.updated_at = db_time_ms(&t[1]);
		row.completed_at = c.null[5] ? 0 : db_time_ms(&t[2]);
		row.expires_at = db_time_ms(&t[3]);
		it[(*n)++] = row;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? -1 : 0;
}

/*
 * Reads the executions of lineage identity lineage on route (env, svc,
 * op) whose id is below before, newest first, of status (ST__MAX: any),
 * at most max (<= LIST_MAX + 1) into it; *n gets how many. REPO_OK or
 * REPO_ERR.
 */
enum repo_rc
repo_exec_list(struct db *db, const unsigned char *lineage, const char *env,
    const char *svc, const char *op, enum exec_status status,
    uint64_t before, unsigned max, struct list_item *it, size_t *n)
{
	MYSQL_BIND	 p[7];
	MYSQL_STMT	*st;
	int		 i = 0;
	enum stmt	 id = status == ST__MAX ? STMT_EXEC_LIST :
			    STMT_EXEC_LIST_STATUS;

	*n = 0;
	db_bind_blob(&p[i++], lineage, SHA256_LEN);
	db_bind_str(&p[i++], env);
	db_bind_str(&p[i++], svc);
	db_bind_str(&p[i++], op);
	if (status != ST__MAX)
		db_bind_str(&p[i++], exec_status_name(status));
	db_bind_u64(&p[i++], &before);
	db_bind_u32(&p[i++], &max);
	if ((st = db_run(db, id, p)) == NULL)
		return REPO_ERR;
	return items_read(st, it, max, n) == 0 ? REPO_OK : REPO_ERR;
}
