/*
 * expire.h - one run of asyncexec-expire: expiry, rescue and purge.
 *
 * expire_run does, in this order, each in batches of at most batch_size
 * rows with one short transaction per batch:
 *   EXPIRE   waiting executions with expires_at <= now become expired;
 *   CANCEL   waiting, cancel-requested executions whose lease lapsed (or
 *            that are unclaimed) become cancelled;
 *   ABANDON  waiting executions with attempts >= max_attempts whose
 *            lease lapsed (lease_expires_at <= now) become failed with
 *            {"message":"abandoned after N claims"};
 *   PURGE    terminal executions with expires_at < now - grace days
 *            are deleted (waiting ones never are);
 *   DELIVERIES webhook deliveries that ended (delivered or dead) more
 *            than grace days ago are deleted;
 *   REVOKED  unclaimed waiting executions (no live lease, no cancel
 *            request) of a lineage without a live key (its last key
 *            revoked, or a rotation's grace over) become failed with
 *            {"code":"initiator_revoked",...} (sql/012);
 *   ROLLUP   the executions that ended since the last count (up to a
 *            minute ago) are added to the per-route rollup of terminal
 *            outcomes the dashboard shows, window by window (sql/013),
 *            and intervals older than two days are deleted.
 * A step ends when a batch comes back short. A batch undone by a
 * deadlock or lock wait timeout is run again (bounded, with backoff).
 * The run holds a named lock (per database) and skips when another run
 * holds it. A dry run takes no lock and only counts.
 *
 * expire layer: expire.c and main_expire.c.
 */
#ifndef ASYNCEXEC_EXPIRE_H
#define ASYNCEXEC_EXPIRE_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct xdb;

enum expire_step {
	EXPIRE_STEP_EXPIRE,
	EXPIRE_STEP_CANCEL,
	EXPIRE_STEP_ABANDON,
	EXPIRE_STEP_PURGE,
	EXPIRE_STEP_DELIVERIES,
	EXPIRE_STEP_REVOKED,
	EXPIRE_STEP_ROLLUP,
	EXPIRE_STEP__MAX
};

#define EXPIRE_STEPS_ALL	((1u << EXPIRE_STEP__MAX) - 1)
#define EXPIRE_BATCH_DEFAULT	1000
#define EXPIRE_BATCH_MAX	10000
#define EXPIRE_RUNTIME_DEFAULT	50	/* seconds; below the timer's minute */
#define EXPIRE_RUNTIME_MAX	86400
/* A batch or rollup window undone by a deadlock or lock wait timeout is
 * retried until the runtime bound is spent; then the run stops. */
#define EXPIRE_RETRY_BASE_MS	20	/* first pause (jittered 50-100 %) */
#define EXPIRE_RETRY_CAP_MS	2000	/* longest pause */

struct expire_opts {
	const struct config *cfg;	/* for the rollup's handle */
	int64_t		 now;		/* UTC ms the rules are evaluated at */
	unsigned	 batch_size;	/* 1..EXPIRE_BATCH_MAX */
	int64_t		 max_runtime_ms;	/* no new batch after this */
	unsigned	 max_attempts;
	unsigned	 purge_grace_days;
	int		 dry_run;
	unsigned	 steps;		/* 1 << enum expire_step; tests only */
};

struct expire_result {
	uint64_t	 count[EXPIRE_STEP__MAX];
	int64_t		 step_ms[EXPIRE_STEP__MAX];
	int64_t		 duration_ms;
	int64_t		 longest_tx_ms;	/* longest single statement */
	unsigned long	 batches;
	unsigned long	 retries;	/* batches run again (1213, 1205) */
	int		 skipped;	/* another run holds the lock */
	int		 complete;	/* 0: stopped by max_runtime_ms */
	int		 locked;	/* stopped while retrying a lock */
	int		 failed;	/* a database error ended the run */
};

void	expire_opts_init(struct expire_opts *, const struct config *);
int	expire_run(struct xdb *, const struct expire_opts *,
	    struct expire_result *);
int	expire_summary(const struct expire_result *, int dry_run, char *,
	    size_t);
const char *expire_oversize_text(char *, size_t, unsigned long n);

#endif
