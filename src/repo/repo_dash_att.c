/*
 * repo_dash_att.c - the dashboard's Attention lists (repo_dash.h), on
 * the statements of repo_dash.c.
 */
#include <string.h>

#include "db.h"
#include "repo.h"
#include "repo_dash.h"
#include "repo_dash_sql.h"

/*
 * Fetches the next Attention row of st into r: DB_ROW, DB_ROW_NONE,
 * DB_ROW_ERR.
 */
static enum db_row
att_fetch(MYSQL_STMT *st, struct dash_att_row *r)
{
	struct db_cols	 c;
	MYSQL_TIME	 t[2];
	enum db_row	 rc;

	memset(r, 0, sizeof(*r));
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &r->id, 0);
	db_rcol(&c, 1, MYSQL_TYPE_STRING, r->env, sizeof(r->env));
	db_rcol(&c, 2, MYSQL_TYPE_STRING, r->svc, sizeof(r->svc));
	db_rcol(&c, 3, MYSQL_TYPE_STRING, r->op, sizeof(r->op));
	db_rcol(&c, 4, MYSQL_TYPE_STRING, r->tenant, sizeof(r->tenant));
	db_rcol(&c, 5, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(&c, 6, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(&c, 7, MYSQL_TYPE_LONG, &r->attempts, 0);
	db_rcol(&c, 8, MYSQL_TYPE_STRING, r->code, sizeof(r->code));
	db_rcol(&c, 9, MYSQL_TYPE_STRING, r->message, sizeof(r->message));
	if ((rc = db_fetch_row(st, &c)) != DB_ROW)
		return rc;
	db_rstr(&c, 1, r->env, sizeof(r->env));
	db_rstr(&c, 2, r->svc, sizeof(r->svc));
	db_rstr(&c, 3, r->op, sizeof(r->op));
	db_rstr(&c, 4, r->tenant, sizeof(r->tenant));
	db_rstr(&c, 8, r->code, sizeof(r->code));
	db_rstr(&c, 9, r->message, sizeof(r->message));
	r->created_at = db_time_ms(&t[0]);
	r->at = c.null[6] ? 0 : db_time_ms(&t[1]);
	return DB_ROW;
}

/*
 * *capped 1 when the range attempts IN (before, last) of ix_exec_abandon
 * holds DASH_LAST_CAP entries or more (the LAST list read only those),
 * else 0. REPO_OK or REPO_ERR.
 */
static enum repo_rc
last_seen(struct ddb *d, unsigned before, unsigned last, int *capped)
{
	MYSQL_BIND		 p[2];
	MYSQL_STMT		*st;
	struct db_cols		 c;
	unsigned long long	 v = 0;
	int			 rc;

	db_bind_u32(&p[0], &before);
	db_bind_u32(&p[1], &last);
	if ((st = db_run(d->db, D_ATT_LAST_SEEN, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &v, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	*capped = v >= DASH_LAST_CAP;
	return rc == DB_ROW ? REPO_OK : REPO_ERR;
}

/* The parameters of an attention list's statement and what they point at. */
struct att_binds {
	MYSQL_BIND	 p[14];
	MYSQL_TIME	 t[2];
	const char	*env, *svc, *op;
	unsigned	 show, last, before, abandoned, offset, lim;
	int		 k;
};

/*
 * Binds the parameters that list which's statement has of its own (after
 * the two shows) and names the statement in *s; LAST reads whether it is
 * capped into *capped first. REPO_OK or REPO_ERR (that read failed, or
 * which is no list).
 */
static enum repo_rc
att_which(struct ddb *d, enum dash_att which, int only, int64_t now,
    struct att_binds *b, enum dstmt *s, int *capped)
{
	switch (which) {
	case DASH_ATT_WAITING:
	case DASH_ATT_LAPSED:
		*s = which == DASH_ATT_WAITING ? (only ? D_ATT_WAITING_R :
		    D_ATT_WAITING) : (only ? D_ATT_LAPSED_R : D_ATT_LAPSED);
		if (only) {
			db_bind_str(&b->p[b->k++], b->env);
			db_bind_str(&b->p[b->k++], b->svc);
			db_bind_str(&b->p[b->k++], b->op);
		}
		if (which == DASH_ATT_LAPSED)
			db_bind_time(&b->p[b->k++], &b->t[0], now);
		break;
	case DASH_ATT_LAST:
		*s = D_ATT_LAST;
		if (last_seen(d, b->before, b->last, capped) != REPO_OK)
			return REPO_ERR;
		db_bind_u32(&b->p[b->k++], &b->before);
		db_bind_u32(&b->p[b->k++], &b->last);
		db_bind_u32(&b->p[b->k++], &b->before);
		db_bind_time(&b->p[b->k++], &b->t[0], now);
		db_bind_u32(&b->p[b->k++], &b->last);
		db_bind_time(&b->p[b->k++], &b->t[1], now);
		break;
	case DASH_ATT_FAILED:
	case DASH_ATT_ABANDONED:
		*s = D_ATT_FAILED;
		db_bind_u32(&b->p[b->k++], &b->abandoned);
		break;
	case DASH_ATT_EXPIRED:
		*s = D_ATT_EXPIRED;
		break;
	case DASH_ATT__MAX:
		return REPO_ERR;
	}
	return REPO_OK;
}

/*
 * Binds the route filter of the LAST, FAILED and EXPIRED statements (""
 * for every route), then the page (offset, limit), after b's others.
 * No result.
 */
static void
att_page(enum dstmt s, struct att_binds *b)
{
	if (s == D_ATT_LAST || s == D_ATT_FAILED || s == D_ATT_EXPIRED) {
		db_bind_str(&b->p[b->k++], b->env);
		db_bind_str(&b->p[b->k++], b->env);
		db_bind_str(&b->p[b->k++], b->svc);
		db_bind_str(&b->p[b->k++], b->op);
	}
	db_bind_u32(&b->p[b->k++], &b->offset);
	db_bind_u32(&b->p[b->k++], &b->lim);
}

/*
 * Attention list which (repo_dash.h), of route only (NULL: every route),
 * at now: rows offset .. offset + max - 1 into r (*n of them), an error's
 * code and message only when show_errors; *capped 1 when the list was
 * read among its first entries only (LAST: DASH_LAST_CAP). REPO_OK or
 * REPO_ERR (no statement after the one that failed).
 */
enum repo_rc
repo_dash_attention(struct ddb *d, enum dash_att which,
    const struct dash_route *only, unsigned max_attempts, int show_errors,
    int64_t now, unsigned offset, struct dash_att_row *r, size_t max,
    size_t *n, int *capped)
{
	struct att_binds b = {
		.env = only ? only->env : "", .svc = only ? only->svc : "",
		.op = only ? only->op : "", .show = show_errors ? 1 : 0,
		.last = max_attempts,
		.before = max_attempts > 0 ? max_attempts - 1 : 0,
		.abandoned = which == DASH_ATT_ABANDONED, .offset = offset,
		.lim = (unsigned)max };
	MYSQL_STMT	*st;
	enum dstmt	 s = D_ATT_EXPIRED;
	enum db_row	 rc = DB_ROW;

	*n = 0;
	*capped = 0;
	db_bind_u32(&b.p[b.k++], &b.show);	/* the code */
	db_bind_u32(&b.p[b.k++], &b.show);	/* the message */
	if (att_which(d, which, only != NULL, now, &b, &s, capped) != REPO_OK)
		return REPO_ERR;
	att_page(s, &b);
	if ((st = db_run(d->db, s, b.p)) == NULL)
		return REPO_ERR;
	while (*n < max && (rc = att_fetch(st, &r[*n])) == DB_ROW)
		(*n)++;
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}
