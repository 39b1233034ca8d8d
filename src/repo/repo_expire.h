/*
 * repo_expire.h - the statements of asyncexec-expire: expiry of overdue
 * executions, rescue (abandon) of executions whose lease lapsed
 * max_attempts times, purge of old terminal rows, and the named lock
 * that keeps two runs apart.
 *
 * The handle is its own kind, struct xdb (own statement table, own
 * connection), so that the service's handle cannot be passed by mistake:
 * open it with repo_expire_open, close it with repo_expire_close.
 * Functions return enum repo_rc (REPO_OK or REPO_ERR; REPO_ERR is
 * already logged), the *_apply ones also REPO_RETRY (a deadlock, 1213,
 * or a lock wait timeout, 1205, undid the statement: running it again
 * is safe), REPO_SPLIT (its writeset was over Galera's
 * wsrep_max_ws_size, nothing done: run it again over fewer ids) and
 * REPO_SPLIT_ROWS (the same for more rows than wsrep_max_ws_rows). All
 * times are UTC milliseconds passed in by the caller, so tests can run
 * the rules at any "now".
 *
 * Every rule runs in two steps per batch: *_due selects up to limit
 * candidate ids with a plain (lock-free) read, continuing from a
 * position, and *_apply changes them in one autocommit statement by
 * primary key that repeats the rule as a compare-and-set, so a callback
 * that finalized a candidate in between wins and the row is not
 * counted. Locking only primary keys is what keeps the expiry from
 * deadlocking with callbacks.
 *
 * repo layer: expire.c, main_expire.c and repo_expire.c.
 */
#ifndef ASYNCEXEC_REPO_EXPIRE_H
#define ASYNCEXEC_REPO_EXPIRE_H

#include <stddef.h>
#include <stdint.h>

#include "repo.h"

struct config;
struct xdb;

/* The expiry session's innodb_lock_wait_timeout, seconds. */
#define REPO_EXPIRE_LOCK_WAIT_STR	"5"

struct xdb	*repo_expire_open(const struct config *);
void		 repo_expire_close(struct xdb *);

/* The run lock (per database, never waits): *got 1 taken, 0 held elsewhere. */
enum repo_rc	repo_expire_lock(struct xdb *, int *got);
enum repo_rc	repo_expire_unlock(struct xdb *);

/*
 * Where a batch selection goes on from: the (key, id) of the last row
 * the previous batch selected; start with { 0, 0 }. The key is
 * expires_at (ms) for expiry and purge, attempts for abandon.
 */
struct repo_pos {
	int64_t		 key;
	uint64_t	 id;
};

/* Waiting executions with expires_at <= now, oldest expiry first. */
enum repo_rc	repo_expire_due(struct xdb *, int64_t now, unsigned limit,
	    struct repo_pos *, uint64_t *ids, size_t *n);
enum repo_rc	repo_expire_apply(struct xdb *, const uint64_t *ids, size_t n,
	    int64_t now, unsigned *changed);

/* Waiting, cancel-requested executions without a live lease, by id. */
enum repo_rc	repo_cancel_due(struct xdb *, int64_t now, unsigned limit,
	    struct repo_pos *, uint64_t *ids, size_t *n);
enum repo_rc	repo_cancel_apply(struct xdb *, const uint64_t *ids, size_t n,
	    int64_t now, unsigned *changed);

/* Waiting executions with attempts >= max_attempts whose lease lapsed. */
enum repo_rc	repo_abandon_due(struct xdb *, unsigned max_attempts, int64_t now,
	    unsigned limit, struct repo_pos *, uint64_t *ids, size_t *n);
enum repo_rc	repo_abandon_apply(struct xdb *, const uint64_t *ids, size_t n,
	    unsigned max_attempts, int64_t now, unsigned *changed);

/*
 * Rows in terminal status st with expires_at < cutoff that ended no later
 * than counted (the rollup's mark; a row without completed_at too);
 * waiting refused.
 */
enum repo_rc	repo_purge_due(struct xdb *, enum exec_status st, int64_t cutoff,
	    int64_t counted, unsigned limit, struct repo_pos *, uint64_t *ids,
	    size_t *n);
enum repo_rc	repo_purge_apply(struct xdb *, const uint64_t *ids, size_t n,
	    int64_t cutoff, int64_t counted, unsigned *deleted);

/* Webhook deliveries that ended (delivered; dead: dead) before cutoff. */
enum repo_rc	repo_delivery_purge_due(struct xdb *, int dead, int64_t cutoff,
	    unsigned limit, struct repo_pos *, uint64_t *ids, size_t *n);
enum repo_rc	repo_delivery_purge_apply(struct xdb *, const uint64_t *ids,
	    size_t n, int64_t cutoff, unsigned *deleted);
enum repo_rc	repo_delivery_purge_count(struct xdb *, int64_t cutoff,
	    uint64_t *n);

/*
 * Unclaimed waiting executions (no cancel request) of lineages without
 * a live key (revoked initiators, sql/012); pos: the lineage and the
 * last id of it.
 */
enum repo_rc	repo_revoked_due(struct xdb *, int64_t now, unsigned limit,
	    struct repo_pos *, uint64_t *ids, size_t *n);
enum repo_rc	repo_revoked_apply(struct xdb *, const uint64_t *ids, size_t n,
	    int64_t now, unsigned *changed);
enum repo_rc	repo_revoked_count(struct xdb *, unsigned max_attempts,
	    int64_t now, uint64_t *n);

/* Dry-run counts: what the three rules would touch right now. */
enum repo_rc	repo_expire_count(struct xdb *, int64_t now, uint64_t *n);
enum repo_rc	repo_expire_record(struct xdb *, const char *result, int success,
	    const uint64_t counts[4], uint64_t retries, uint64_t duration_ms,
	    int64_t now);
enum repo_rc	repo_cancel_count(struct xdb *, int64_t now, uint64_t *n);
enum repo_rc	repo_abandon_count(struct xdb *, unsigned max_attempts, int64_t now,
	    uint64_t *n);
enum repo_rc	repo_purge_count(struct xdb *, int64_t now, int64_t cutoff,
	    int64_t counted, uint64_t *n);

/* The text of the statement logged as name ("purge_due"), for EXPLAIN. */
const char	*repo_expire_sql(const char *name);

#endif
