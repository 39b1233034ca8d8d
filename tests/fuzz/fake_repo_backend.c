/*
 * fake_repo_backend.c - the backend's repository calls (claim,
 * heartbeat, the callbacks' writes: src/repo/repo_claim.c, repo.c's
 * heartbeat, repo_callback.c) over fake_repo.c's in-memory table, for
 * fuzz_request only.
 *
 * The writes after a claim follow the compare-and-set of the real
 * statements: the execution must be waiting under the claim whose token
 * hashes to tokhash (holds), or the call answers REPO_NOTFOUND. Every
 * call counts towards fake_repo_fail_at's failure injection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fake_repo_int.h"
#include "repo.h"

/* Frees the n claimed items of it and their payloads; no result. */
void
claim_free(struct claim_item *it, size_t n)
{
	size_t	 i;

	for (i = 0; it != NULL && i < n; i++)
		free(it[i].request);
	free(it);
}

/* Fills claim item it from e with a fresh token and lease; 0 or -1. */
static int
claim_one(struct fexec *e, int64_t lease_until, struct claim_item *it)
{
	if (crypto_new_secret("", it->token, sizeof(it->token),
	    e->cb_hash) == -1 || (it->request = fake_dup(e->request,
	    e->request_len)) == NULL)
		return -1;
	it->request_len = e->request_len;
	it->id = e->row.id;
	snprintf(it->cid, sizeof(it->cid), "%s", e->row.cid);
	snprintf(it->tenant, sizeof(it->tenant), "%s", e->row.tenant);
	it->attempt = ++e->row.attempts;
	it->lease_expires_at = e->lease_until = lease_until;
	it->created_at = e->row.created_at;
	e->has_cb = 1;
	return 0;
}

/*
 * As repo.c: waiting, unleased, not cancel-requested executions of the
 * route that are not past expires_at and have used fewer than
 * max_attempts attempts, oldest first.
 * REPO_OK (*out: the *n items, to claim_free) or REPO_ERR.
 */
int
repo_claim(struct db *db, const char *env, const char *svc, const char *op,
    unsigned max, unsigned lease_seconds, unsigned max_attempts, int64_t now,
    struct claim_item **out, size_t *n)
{
	struct claim_item *it;
	struct fexec	*e;
	size_t		 i;

	(void)db;
	*out = NULL;
	*n = 0;
	if (fake_failing() || (it = calloc(max, sizeof(*it))) == NULL)
		return REPO_ERR;
	for (i = 0; i < NEXEC && *n < max; i++) {
		e = &fake_tab[i];
		if (!e->used || e->row.status != ST_WAITING ||
		    e->row.cancel_requested || strcmp(e->row.env, env) != 0 ||
		    strcmp(e->row.svc, svc) != 0 || strcmp(e->row.op, op) != 0 ||
		    (e->has_cb && e->lease_until > now) ||
		    e->row.expires_at <= now || e->row.attempts >= max_attempts ||
		    e->not_before > now)
			continue;
		if (claim_one(e, now + (int64_t)lease_seconds * 1000,
		    &it[*n]) == -1) {
			claim_free(it, *n + 1);
			*n = 0;
			return REPO_ERR;
		}
		(*n)++;
	}
	*out = it;
	return REPO_OK;
}

/* Whether e is waiting under the claim whose token hashes to tokhash. */
static int
holds(const struct fexec *e, const unsigned char *tokhash)
{
	return e != NULL && e->row.status == ST_WAITING && e->has_cb &&
	    memcmp(e->cb_hash, tokhash, SHA256_LEN) == 0;
}

/*
 * Extends the lease of the current claim to lease_until.
 * REPO_OK, REPO_NOTFOUND (stale token or final) or REPO_ERR.
 */
int
repo_heartbeat(struct db *db, uint64_t id, const unsigned char *tokhash,
    int64_t lease_until)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if (!holds(e = fake_by_id(id), tokhash))
		return REPO_NOTFOUND;
	e->lease_until = lease_until;
	return REPO_OK;
}

/*
 * Makes the claimed execution final (to: completed with the result,
 * failed with the error, or cancelled when a cancel was requested) and
 * stores winhash. REPO_OK, REPO_NOTFOUND (stale token, final, or a
 * cancel nobody requested) or REPO_ERR.
 */
static int
finalize(uint64_t id, const unsigned char *tokhash, enum exec_status to,
    const char *payload, size_t len, const unsigned char *winhash, int64_t now)
{
	struct fexec	*e;
	char		*copy = NULL;

	if (!holds(e = fake_by_id(id), tokhash) ||
	    (to == ST_CANCELLED && !e->row.cancel_requested))
		return REPO_NOTFOUND;
	if (to != ST_CANCELLED && (copy = fake_dup(payload ? payload : "",
	    payload ? len : 0)) == NULL)
		return REPO_ERR;
	e->row.status = to;
	e->row.completed_at = e->row.updated_at = now;
	memcpy(e->win_hash, winhash, SHA256_LEN);
	e->has_win = 1;
	if (to == ST_COMPLETED) {
		e->row.result = copy;
		e->row.result_len = len;
	} else if (to == ST_FAILED) {
		e->row.error = copy;
		e->row.error_len = len;
	}
	return REPO_OK;
}

int
repo_finalize_win(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len,
    const unsigned char *winhash, enum repo_mark mark, int64_t now)
{
	(void)db;
	(void)mark;
	if (fake_failing())
		return REPO_ERR;
	return finalize(id, tokhash, to, payload, len, winhash, now);
}

/*
 * repo_finalize_win with the sealed twin of its statement: it matches
 * only without progress, and without a cancel request but for cancelled
 * (which needs one, as finalize checks).
 */
int
repo_finalize_sealed(struct db *db, uint64_t id, const unsigned char *tokhash,
    enum exec_status to, const char *payload, size_t len,
    const unsigned char *winhash, enum repo_mark mark, int64_t now)
{
	struct fexec	*e;

	(void)db;
	(void)mark;
	if (fake_failing())
		return REPO_ERR;
	if (holds(e = fake_by_id(id), tokhash) && (e->row.progress != NULL ||
	    (to != ST_CANCELLED && e->row.cancel_requested)))
		return REPO_NOTFOUND;
	return finalize(id, tokhash, to, payload, len, winhash, now);
}

/* Replaces *p (n bytes) with a copy of v; REPO_OK or REPO_ERR. */
static int
store(char **p, size_t *n, const char *v, size_t vn)
{
	char	*c;

	if ((c = fake_dup(v, vn)) == NULL)
		return REPO_ERR;
	free(*p);
	*p = c;
	*n = vn;
	return REPO_OK;
}

/*
 * Extends the lease of the current claim and stores progress.
 * REPO_OK, REPO_NOTFOUND (stale token or final) or REPO_ERR.
 */
int
repo_heartbeat_progress(struct db *db, uint64_t id,
    const unsigned char *tokhash, int64_t lease_until, const char *progress,
    size_t len, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if (!holds(e = fake_by_id(id), tokhash))
		return REPO_NOTFOUND;
	if (store(&e->row.progress, &e->row.progress_len, progress,
	    len) != REPO_OK)
		return REPO_ERR;
	e->lease_until = lease_until;
	e->row.updated_at = now;
	return REPO_OK;
}

/*
 * As repo_callback.c: the claim ends, the retry waits until not_before.
 * REPO_OK, REPO_NOTFOUND (stale token, final, cancel requested or no
 * attempt left) or REPO_ERR.
 */
int
repo_retry(struct db *db, uint64_t id, const unsigned char *tokhash,
    const char *error, size_t len, unsigned max_attempts,
    int64_t not_before, int64_t now)
{
	struct fexec	*e;

	(void)db;
	if (fake_failing())
		return REPO_ERR;
	if (!holds(e = fake_by_id(id), tokhash) || e->row.cancel_requested ||
	    e->row.attempts >= max_attempts)
		return REPO_NOTFOUND;
	if (store(&e->row.last_error, &e->row.last_error_len, error,
	    len) != REPO_OK)
		return REPO_ERR;
	e->has_cb = 0;
	e->lease_until = 0;
	e->not_before = not_before;
	e->row.updated_at = now;
	return REPO_OK;
}

/*
 * The callback token hash and the winner hash of a finalized execution
 * (both zeroed otherwise).
 * REPO_OK, REPO_NOTFOUND (no claim or no winner) or REPO_ERR.
 */
int
repo_exec_winner(struct db *db, uint64_t id, unsigned char *tokhash,
    unsigned char *winhash)
{
	struct fexec	*e;

	(void)db;
	memset(tokhash, 0, SHA256_LEN);
	memset(winhash, 0, SHA256_LEN);
	if (fake_failing())
		return REPO_ERR;
	if ((e = fake_by_id(id)) == NULL || !e->has_cb || !e->has_win)
		return REPO_NOTFOUND;
	memcpy(tokhash, e->cb_hash, SHA256_LEN);
	memcpy(winhash, e->win_hash, SHA256_LEN);
	return REPO_OK;
}

/* No endpoint in the fake: every transition may leave the mark out. */
int
repo_hooks_any(struct db *db, int *any)
{
	(void)db;
	if (fake_failing())
		return REPO_ERR;
	*any = 0;
	return REPO_OK;
}
