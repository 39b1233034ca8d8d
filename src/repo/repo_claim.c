/*
 * repo_claim.c - claiming: a transaction that takes the oldest claimable
 * executions of a route (SKIP LOCKED), gives each a new callback token
 * and lease, and hands them out only after its COMMIT succeeded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cbtoken.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "repo.h"
#include "repo_sql.h"

#define CLAIM_TRIES	3	/* a claim run whole again after 1213 */
#define CLAIM_PATH_STMTS 8	/* statements of a claim's reads at most */
#define CLAIM_IDS_PER_MAX 4	/* ids it reads per execution wanted */
#define CLAIM_IDS_RACE	16	/* and for claims racing for the same */
#define CLAIM_IDS_GROW	4	/* a next page: times the first's ids */

/* Frees the n claimed items of it and their payloads. */
void
claim_free(struct claim_item *it, size_t n)
{
	size_t	 i;

	for (i = 0; it != NULL && i < n; i++)
		free(it[i].request);
	free(it);
}

/* Binds claim_read's columns into c, row and t: 0, or 1 (st's error). */
static int
claim_cols(MYSQL_STMT *st, struct db_cols *c, struct claim_item *row,
    MYSQL_TIME *t)
{
	db_rcol(c, 0, MYSQL_TYPE_LONGLONG, &row->id, 0);
	db_rcol(c, 1, MYSQL_TYPE_STRING, row->cid, sizeof(row->cid));
	db_rcol(c, 2, MYSQL_TYPE_STRING, row->tenant, sizeof(row->tenant));
	db_rcol(c, 3, MYSQL_TYPE_BLOB, NULL, 0);
	db_rcol(c, 4, MYSQL_TYPE_LONG, &row->attempt, 0);
	db_rcol(c, 5, MYSQL_TYPE_DATETIME, &t[0], sizeof(t[0]));
	db_rcol(c, 6, MYSQL_TYPE_DATETIME, &t[1], sizeof(t[1]));
	db_rcol(c, 7, MYSQL_TYPE_LONG, &row->priority, 0);
	db_rcol(c, 8, MYSQL_TYPE_DATETIME, &t[2], sizeof(t[2]));
	return mysql_stmt_bind_result(st, c->b) != 0 ? 1 : 0;
}

/*
 * Completes the row just fetched into c, row and t (claim_cols): its
 * strings, times and payload. 0, or -1 (the payload could not be read;
 * db_fetch_blob logged why).
 */
static int
claim_row(MYSQL_STMT *st, struct db_cols *c, struct claim_item *row,
    const MYSQL_TIME *t)
{
	db_rstr(c, 1, row->cid, sizeof(row->cid));
	db_rstr(c, 2, row->tenant, sizeof(row->tenant));
	row->tenant_null = c->null[2];
	row->created_at = db_time_ms(&t[0]);
	row->expires_at = db_time_ms(&t[1]);
	row->not_before = c->null[8] ? 0 : db_time_ms(&t[2]);
	return db_fetch_blob(st, &c->b[3], 3, c->len[3], &row->request,
	    &row->request_len);
}

/*
 * Reads the rows of an executed claim select into it[*n..max), the
 * payloads of it[0..*n) counted against the budget. *full: it stopped at
 * max or at the payload budget, not at the end of the rows. 0 or -1.
 */
static int
claim_read(struct db *db, MYSQL_STMT *st, struct claim_item *it,
    unsigned max, size_t budget, size_t *n, int *full)
{
	struct db_cols	 c;
	struct claim_item row;
	MYSQL_TIME	 t[3];
	size_t		 total = 0, i;
	int		 rc;

	for (i = 0; i < *n; i++)
		total += it[i].request_len;
	rc = claim_cols(st, &c, &row, t);  /* 1: the error is logged below */
	*full = 1;
	while (rc == 0 && *n < max) {
		memset(&row, 0, sizeof(row));
		if ((rc = mysql_stmt_fetch(st)) == MYSQL_NO_DATA) {
			rc = 0;
			*full = 0;
			break;
		}
		if (rc != 0 && rc != MYSQL_DATA_TRUNCATED)
			break;
		rc = 0;
		/* the payload budget: past it, the rest stays unclaimed (its
		 * row lock ends with the transaction); one always fits */
		if (*n > 0 && (c.len[3] > budget || total > budget - c.len[3]))
			break;
		total += c.len[3];
		if ((rc = claim_row(st, &c, &row, t)) == 0)
			it[(*n)++] = row;
	}
	/* rc 1: the fetch's error (db_fetch_blob logs its own); a deadlock
	 * while the rows streamed: repo_claim runs it again; a lost
	 * connection: st is closed with it */
	if (rc == 1)
		db_fetch_log(st);
	if (rc != 0)
		db_fetch_failed(db, st);
	else
		mysql_stmt_free_result(st);
	return rc == 0 ? 0 : -1;
}

/* What a claim asks for; the binds of the claimable condition use it. */
struct claim_ask {
	const char	*env, *svc, *op;
	unsigned	 max, max_attempts;
	int64_t		 now;
	MYSQL_TIME	 t[5];
	unsigned char	 route[CB_ROUTE_LEN];	/* cb_route: tokens seal it */
};

/* The facts the callback token of claimed item it seals, into *f. */
static void
claim_facts(const struct claim_ask *a, const struct claim_item *it,
    struct cb_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->id = it->id;
	f->created_at = it->created_at;
	f->expires_at = it->expires_at;
	f->not_before = it->not_before;
	f->attempt = it->attempt;
	f->priority = it->priority;
	memcpy(f->route, a->route, CB_ROUTE_LEN);
	memcpy(f->cid, it->cid, sizeof(f->cid));
}

/*
 * Gives claimed items it[0..k) (1 <= k <= CLAIM_LEASE_ROWS) fresh
 * callback tokens (their hashes into hash[0..k)) and the lease, in one
 * UPDATE (STMT_CLAIM_LEASES, the last item repeated in the slots past
 * k; STMT_CLAIM_UPDATE for one item). The rows are this transaction's
 * (locked by the select), so it matches all k. 0 or -1.
 */
static int
claim_take(struct db *db, const struct claim_ask *a, struct claim_item *it,
    size_t k, int64_t lease_until, unsigned char (*hash)[SHA256_LEN])
{
	MYSQL_BIND	 p[3 * CLAIM_LEASE_ROWS + 1];
	MYSQL_TIME	 t;
	struct cb_facts	 f;
	size_t		 i, j;
	int		 n;

	for (i = 0; i < k; i++) {
		it[i].attempt++;
		it[i].lease_expires_at = lease_until;
		claim_facts(a, &it[i], &f);
		if (cbtoken_new(&f, it[i].token, hash[i]) == -1)
			return -1;
	}
	if (k == 1) {
		db_bind_blob(&p[0], hash[0], SHA256_LEN);
		db_bind_time(&p[1], &t, lease_until);
		db_bind_u64(&p[2], &it[0].id);
		return repo_cas(db, STMT_CLAIM_UPDATE, p) == REPO_OK ? 0 : -1;
	}
	for (i = 0; i < CLAIM_LEASE_ROWS; i++) {
		j = i < k ? i : k - 1;
		db_bind_u64(&p[2 * i], &it[j].id);
		db_bind_blob(&p[2 * i + 1], hash[j], SHA256_LEN);
		db_bind_u64(&p[2 * CLAIM_LEASE_ROWS + 1 + i], &it[j].id);
	}
	db_bind_time(&p[2 * CLAIM_LEASE_ROWS], &t, lease_until);
	if (db_run(db, STMT_CLAIM_LEASES, p) == NULL)
		return -1;
	if ((n = db_affected(db, STMT_CLAIM_LEASES)) == (int)k)
		return 0;
	log_error("claim: the lease UPDATE matched %d of the %zu executions "
	    "it had locked: the claim is rolled back", n, k);
	return -1;
}

/*
 * Binds the claimable condition (repo_stmts.c CLAIMABLE) for a into
 * p[0..]. The number of binds.
 */
static int
claimable_binds(struct claim_ask *a, MYSQL_BIND *p)
{
	int	 i = 0;

	db_bind_str(&p[i++], a->env);
	db_bind_str(&p[i++], a->svc);
	db_bind_str(&p[i++], a->op);
	/* due_at: work submitted without a start (not_before NULL) on a
	 * host whose clock runs ahead is due too; a start waits for
	 * not_before itself */
	db_bind_time(&p[i++], &a->t[0], a->now + CLAIM_CLOCK_SKEW_MS);
	db_bind_time(&p[i++], &a->t[1], a->now);	/* a lapsed lease */
	db_bind_time(&p[i++], &a->t[2], a->now);	/* expires_at */
	db_bind_time(&p[i++], &a->t[3], a->now);	/* not_before */
	db_bind_u32(&p[i++], &a->max_attempts);
	/* a live key of the lineage: its first key, or a rotated one */
	db_bind_time(&p[i++], &a->t[4], a->now);
	db_bind_time(&p[i++], &a->t[4], a->now);
	return i;
}

/* The ids the first read of claim_ids asks for: a few per execution
 * wanted, and room for some claims racing for the same ones; each next
 * page, read only when racing claims held too many, asks for more. */
#define CLAIM_IDS(max)	(CLAIM_IDS_PER_MAX * (max) + CLAIM_IDS_RACE)
#define CLAIM_IDS_NEXT(max) (CLAIM_IDS_GROW * CLAIM_IDS(max))

/*
 * Claimable ids for a in claim order from position offset, read without
 * locks (STMT_CLAIM_IDS): up to lim into ids[0..*k) (room for lim).
 * 0 or -1.
 */
static int
claim_ids(struct db *db, struct claim_ask *a, unsigned offset, unsigned lim,
    uint64_t *ids, size_t *k)
{
	MYSQL_BIND	 p[12];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	uint64_t	 id;
	int		 i, rc;

	i = claimable_binds(a, p);
	db_bind_u32(&p[i++], &lim);
	db_bind_u32(&p[i], &offset);
	if ((st = db_run(db, STMT_CLAIM_IDS, p)) == NULL)
		return -1;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &id, 0);
	*k = 0;
	while ((rc = db_fetch_row(st, &c)) == DB_ROW && *k < lim)
		ids[(*k)++] = id;
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? -1 : 0;
}

/*
 * Locks the first executions of ids[0..k) (a read of claim_ids) that are
 * still claimable and that no other claim holds, by primary key
 * (STMT_CLAIM_LOCK), up to the a->max - *n still wanted, appended to
 * it[*n..a->max) in the order of ids. *full as claim_read. 0 or -1.
 */
static int
claim_lock_ids(struct db *db, struct claim_ask *a, const uint64_t *ids,
    size_t k, struct claim_item *it, size_t *n, int *full)
{
	MYSQL_BIND	 p[12];
	MYSQL_STMT	*st;
	char		*json;
	size_t		 i, len = 0, size = k * 21 + 3;
	unsigned	 want = a->max - (unsigned)*n;
	int		 rc;

	if ((json = malloc(size)) == NULL)
		return -1;
	json[len++] = '[';
	for (i = 0; i < k; i++)
		len += (size_t)snprintf(json + len, size - len, "%s%llu",
		    i > 0 ? "," : "", (unsigned long long)ids[i]);
	json[len++] = ']';
	json[len] = '\0';
	db_bind_str(&p[0], json);
	db_bind_u32(&p[1 + claimable_binds(a, p + 1)], &want);
	rc = (st = db_run(db, STMT_CLAIM_LOCK, p)) == NULL ? -1 :
	    claim_read(db, st, it, a->max, db_config(db)->max_result_bytes, n,
	    full);
	free(json);
	return rc;
}

/* Orders ids for qsort and bsearch: -1, 0 or 1. */
static int
id_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/*
 * Locks the claimable executions for a in a transaction into it[0..*n).
 * The first CLAIM_IDS(max) claimable ids in claim order, read without
 * locks outside a transaction (nothing claimable costs that one
 * statement), are locked by primary key (claim_lock_ids) in a new one,
 * as many as are wanted. When other claims held some and the read was
 * full, the queue is read again from its head, CLAIM_IDS_NEXT(max)
 * ids a page, without the first read's ids and those locked. Until
 * a->max are locked, the payload budget is reached, the ids end, or
 * CLAIM_PATH_STMTS statements ran. So fewer than max means that no
 * more was claimable, or the payload budget, or other claims held the
 * rest. No locking read of a claim reads ix_exec_claim (repo_stmts.c,
 * above STMT_CLAIM_IDS, says why). REPO_OK with the transaction open and
 * *n > 0, REPO_NOTFOUND (nothing taken) with none open, or REPO_ERR.
 */
static enum repo_rc
claim_by_ids(struct db *db, struct claim_ask *a, struct claim_item *it,
    size_t *n)
{
	uint64_t	*tried, *ids;
	size_t		 nt, k, i, m, held;
	unsigned	 offset = 0, lim = CLAIM_IDS(a->max);
	int		 full = 0, stmts = 2;
	enum repo_rc	 rc = REPO_ERR;

	/* room for the first read, the ids locked after it, a next read */
	tried = malloc((CLAIM_IDS(a->max) + a->max + CLAIM_IDS_NEXT(a->max)) *
	    sizeof(*tried));
	if (tried == NULL)
		return REPO_ERR;
	ids = tried + CLAIM_IDS(a->max) + a->max;
	if (claim_ids(db, a, 0, lim, tried, &nt) == -1 || (nt > 0 &&
	    (db_begin(db) == -1 || claim_lock_ids(db, a, tried, nt, it, n,
	    &full) == -1)))
		goto out;
	for (k = nt, held = *n; !full && *n < a->max && k == lim &&
	    stmts + 2 <= CLAIM_PATH_STMTS; offset += (unsigned)k) {
		/* tried, sorted for bsearch: the first read's ids, and those
		 * locked since, which a page reads again when work landed
		 * ahead of them after the read before it (each read its own
		 * snapshot; SKIP LOCKED skips other transactions' locks) */
		if (offset == 0 || held < *n) {
			for (; held < *n; held++)
				tried[nt++] = it[held].id;
			qsort(tried, nt, sizeof(*tried), id_cmp);
		}
		lim = CLAIM_IDS_NEXT(a->max);
		if (claim_ids(db, a, offset, lim, ids, &k) == -1)
			goto out;
		for (i = m = 0; i < k; i++)
			if (bsearch(&ids[i], tried, nt, sizeof(*tried),
			    id_cmp) == NULL)
				ids[m++] = ids[i];
		if (m > 0 && claim_lock_ids(db, a, ids, m, it, n, &full) == -1)
			goto out;
		stmts += m > 0 ? 2 : 1;
	}
	rc = *n > 0 ? REPO_OK : REPO_NOTFOUND;
	if (rc == REPO_NOTFOUND && nt > 0)
		db_rollback(db);
out:
	free(tried);
	return rc;
}

/*
 * Claims up to max waiting, unleased, not cancel-requested executions of
 * a route that are not past expires_at (at now), whose retry time
 * (not_before) has come and have used fewer than max_attempts attempts,
 * highest priority first, then the earliest due (claim_by_ids), in one
 * transaction whose row locks skip rows that another claim holds. Rows
 * ix_exec_claim yields that fail these filters are read and skipped;
 * asyncexec-expire sweeps the overdue and used-up ones every run, so
 * they do not pile up ahead; a retry waiting out its delay is skipped as
 * a live lease is (at most the route's executions in progress or backing
 * off).
 * The request payloads handed out total at most max_result_bytes (one
 * execution always), so a claim's memory is bounded whatever max is.
 * *out (caller frees with claim_free) gets the claimed items with their
 * new callback tokens. REPO_OK or REPO_ERR.
 */
static enum repo_rc
claim_once(struct db *db, struct claim_ask *a, unsigned lease_seconds,
    struct claim_item **out, size_t *n)
{
	struct claim_item *it;
	unsigned char	(*hash)[SHA256_LEN];
	size_t		 i, k;
	enum repo_rc	 rc;

	*out = NULL;
	*n = 0;
	if ((it = calloc(a->max, sizeof(*it))) == NULL)
		return REPO_ERR;
	if ((hash = calloc(a->max, sizeof(*hash))) == NULL) {
		free(it);
		return REPO_ERR;
	}
	if ((rc = claim_by_ids(db, a, it, n)) == REPO_NOTFOUND) {
		free(it);
		free(hash);
		return REPO_OK;
	}
	if (rc != REPO_OK)
		goto fail;
	for (i = 0; i < *n; i += k) {
		k = *n - i < CLAIM_LEASE_ROWS ? *n - i : CLAIM_LEASE_ROWS;
		if (claim_take(db, a, &it[i], k, a->now + (int64_t)lease_seconds *
		    1000, &hash[i]) == -1)
			goto fail;
	}
	/* COMMIT's answer lost: hand out only what the row shows committed */
	if (db_commit(db) == -1 && (!db_lost(db) ||
	    repo_claim_outcome(db, it, (const unsigned char (*)[SHA256_LEN])
	    hash, n) != REPO_OK))
		goto fail;
	free(hash);
	*out = it;
	return REPO_OK;
fail:
	db_rollback(db);
	claim_free(it, *n);
	free(hash);
	*n = 0;
	return REPO_ERR;
}

/*
 * claim_once, run again whole (at most CLAIM_TRIES times in all) when a
 * statement or the COMMIT lost a conflict (1213: a deadlock, or on a
 * Galera cluster another node's write to the same rows certified
 * first). A claim whose COMMIT failed hands nothing out, whatever the
 * affected rows said before: its callback tokens go out only after a
 * COMMIT that succeeded.
 */
enum repo_rc
repo_claim(struct db *db, const char *env, const char *svc, const char *op,
    unsigned max, unsigned lease_seconds, unsigned max_attempts, int64_t now,
    struct claim_item **out, size_t *n)
{
	struct claim_ask a = { env, svc, op, max, max_attempts, now, { { 0 } },
	    { 0 } };
	int	 rc, tries;

	cb_route(env, svc, op, a.route);

	for (tries = 1;; tries++) {
		rc = claim_once(db, &a, lease_seconds, out, n);
		if (rc != REPO_ERR || !db_conflict(db) || tries == CLAIM_TRIES)
			return rc;
	}
}
