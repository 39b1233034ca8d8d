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

/* How items_read reads a statement's rows. */
struct list_read {
	unsigned	 max;	/* items to find at most */
	int		 of;	/* a _OF statement: column 7 is LIST_SEEN */
	unsigned	 rows;	/* rows read */
	uint64_t	 last;	/* the id of the last row read */
};

/*
 * Reads rows of executed statement st into it until r->max items are
 * found (an _OF statement's row whose LIST_SEEN is not 1 is read past,
 * no item); 0 or -1.
 */
static int
items_read(MYSQL_STMT *st, struct list_item *it, struct list_read *r,
    size_t *n)
{
	struct db_cols	 c;
	struct list_item row;
	MYSQL_TIME	 t[4];
	unsigned	 status = 0;
	int		 rc = DB_ROW, seen = 1;

	memset(&row, 0, sizeof(row));
	item_cols(&c, &row, &status, t);
	db_rcol(&c, 7, MYSQL_TYPE_LONG, &seen, 0);	/* _OF only */
	while (*n < r->max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		r->rows++;
		r->last = row.id;
		if (r->of && (c.null[7] || seen != 1))
			continue;	/* a successor's (or no key's) */
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
 * at most max (<= LIST_MAX + 1) into it; *n gets how many. With key_id
 * (not 0: the caller's key has a later key in its lineage) only those
 * that key or a lower key id of the lineage submitted (LIST_SEEN): at
 * most LIST_SCAN_OF * max entries are read, and when that bound ended
 * the read before max items were found, *past gets the id of the last
 * entry read (the next page starts below it); else *past is 0.
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_exec_list(struct db *db, const unsigned char *lineage, uint64_t key_id,
    const struct list_at *at, unsigned max, struct list_item *it,
    size_t *n, uint64_t *past)
{
	MYSQL_BIND	 p[8];
	MYSQL_STMT	*st;
	struct list_read r = { max, key_id != 0, 0, 0 };
	unsigned	 lim = key_id != 0 ? LIST_SCAN_OF * max : max;
	int		 i = 0;
	enum stmt	 id = at->status == ST__MAX ?
			    (r.of ? STMT_EXEC_LIST_OF : STMT_EXEC_LIST) :
			    (r.of ? STMT_EXEC_LIST_STATUS_OF :
			    STMT_EXEC_LIST_STATUS);

	*n = 0;
	*past = 0;
	if (r.of)
		db_bind_u64(&p[i++], &key_id);	/* LIST_SEEN comes first */
	db_bind_blob(&p[i++], lineage, SHA256_LEN);
	db_bind_str(&p[i++], at->env);
	db_bind_str(&p[i++], at->svc);
	db_bind_str(&p[i++], at->op);
	if (at->status != ST__MAX)
		db_bind_str(&p[i++], exec_status_name(at->status));
	db_bind_u64(&p[i++], &at->before);
	db_bind_u32(&p[i++], &lim);
	if ((st = db_run(db, id, p)) == NULL ||
	    items_read(st, it, &r, n) == -1)
		return REPO_ERR;
	if (r.of && *n < max && r.rows == lim)
		*past = r.last;
	return REPO_OK;
}
