/*
 * expire.c - one run of asyncexec-expire: the batch loops, the runtime
 * bound, the run lock and the summary line. All SQL is in repo_expire.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "expire.h"
#include "log.h"
#include "repo_expire.h"
#include "repo_rollup.h"

#define DAY_MS	86400000LL

struct run {
	struct xdb			*db;
	const struct expire_opts	*o;
	struct expire_result		*r;
	int64_t				 start;	/* monotonic ms */
	int64_t				 cutoff;	/* purge: expires_at before */
	int64_t				 counted;	/* purge: ended by */
	enum exec_status		 purging;	/* purge: this status */
	int				 dead;	/* deliveries: dead, else delivered */
	uint64_t			*ids;	/* batch_size slots */
	unsigned			 seed;	/* retry jitter */
	unsigned long			 oversize;	/* rows skipped */
};

/* Candidate selection and compare-and-set apply of a two-step rule. */
struct rule {
	int	(*due)(struct run *, struct repo_pos *, size_t *n);
	int	(*apply)(struct run *, const uint64_t *ids, size_t n,
		    unsigned *changed);
};

static const char *const step_names[EXPIRE_STEP__MAX] = {
	[EXPIRE_STEP_EXPIRE] = "expired",
	[EXPIRE_STEP_CANCEL] = "cancelled",
	[EXPIRE_STEP_ABANDON] = "abandoned",
	[EXPIRE_STEP_PURGE] = "purged",
	[EXPIRE_STEP_DELIVERIES] = "purged_deliveries",
	[EXPIRE_STEP_REVOKED] = "revoked",
	[EXPIRE_STEP_ROLLUP] = "counted",
};

static const char *const step_ms_names[EXPIRE_STEP__MAX] = {
	[EXPIRE_STEP_EXPIRE] = "expire_ms",
	[EXPIRE_STEP_CANCEL] = "cancel_ms",
	[EXPIRE_STEP_ABANDON] = "abandon_ms",
	[EXPIRE_STEP_PURGE] = "purge_ms",
	[EXPIRE_STEP_DELIVERIES] = "deliveries_ms",
	[EXPIRE_STEP_REVOKED] = "revoked_ms",
	[EXPIRE_STEP_ROLLUP] = "rollup_ms",
};

/* Terminal statuses, purged in this order. */
static const enum exec_status terminal[] = {
	ST_EXPIRED, ST_CANCELLED, ST_FAILED, ST_COMPLETED
};

/* Fills opts with the defaults and the configuration's rule values. */
void
expire_opts_init(struct expire_opts *o, const struct config *cfg)
{
	memset(o, 0, sizeof(*o));
	o->cfg = cfg;
	o->batch_size = EXPIRE_BATCH_DEFAULT;
	o->max_runtime_ms = (int64_t)EXPIRE_RUNTIME_DEFAULT * 1000;
	o->max_attempts = cfg->max_attempts;
	o->purge_grace_days = cfg->purge_grace_days;
	o->steps = EXPIRE_STEPS_ALL;
}

/* True (and the run marked incomplete) once the runtime bound is spent. */
static int
out_of_time(struct run *run)
{
	if (clock_mono_ms() - run->start < run->o->max_runtime_ms)
		return 0;
	if (run->r->complete)
		log_warn("expire: max runtime reached; the next run goes on");
	run->r->complete = 0;
	return 1;
}

/* Records a statement that started at t0 (monotonic ms); returns now. */
static int64_t
tx_done(struct run *run, int64_t t0)
{
	int64_t	 now = clock_mono_ms();

	if (now - t0 > run->r->longest_tx_ms)
		run->r->longest_tx_ms = now - t0;
	return now;
}

static int
expire_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_expire_due(run->db, run->o->now, run->o->batch_size, pos,
	    run->ids, n);
}

static int
expire_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_expire_apply(run->db, ids, n, run->o->now, changed);
}

static int
cancel_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_cancel_due(run->db, run->o->now, run->o->batch_size, pos,
	    run->ids, n);
}

static int
cancel_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_cancel_apply(run->db, ids, n, run->o->now, changed);
}

static int
abandon_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_abandon_due(run->db, run->o->max_attempts, run->o->now,
	    run->o->batch_size, pos, run->ids, n);
}

static int
abandon_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_abandon_apply(run->db, ids, n, run->o->max_attempts,
	    run->o->now, changed);
}

static int
purge_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_purge_due(run->db, run->purging, run->cutoff,
	    run->counted, run->o->batch_size, pos, run->ids, n);
}

static int
purge_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_purge_apply(run->db, ids, n, run->cutoff,
	    run->counted, changed);
}

static int
dpurge_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_delivery_purge_due(run->db, run->dead, run->cutoff,
	    run->o->batch_size, pos, run->ids, n);
}

static int
dpurge_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_delivery_purge_apply(run->db, ids, n, run->cutoff,
	    changed);
}

static int
revoked_due(struct run *run, struct repo_pos *pos, size_t *n)
{
	return repo_revoked_due(run->db, run->o->now, run->o->batch_size, pos,
	    run->ids, n);
}

static int
revoked_apply(struct run *run, const uint64_t *ids, size_t n,
    unsigned *changed)
{
	return repo_revoked_apply(run->db, ids, n, run->o->now, changed);
}

static const struct rule rules[EXPIRE_STEP__MAX] = {
	[EXPIRE_STEP_EXPIRE] = { expire_due, expire_apply },
	[EXPIRE_STEP_CANCEL] = { cancel_due, cancel_apply },
	[EXPIRE_STEP_ABANDON] = { abandon_due, abandon_apply },
	[EXPIRE_STEP_PURGE] = { purge_due, purge_apply },
	[EXPIRE_STEP_DELIVERIES] = { dpurge_due, dpurge_apply },
	[EXPIRE_STEP_REVOKED] = { revoked_due, revoked_apply },
	/* EXPIRE_STEP_ROLLUP has a loop of its own: step_rollup */
};

/*
 * Counts a retry and waits before it: a jittered pause of 50-100 % of
 * *base, which then doubles up to EXPIRE_RETRY_CAP_MS.
 */
static void
retry_pause(struct run *run, int k, unsigned *base)
{
	unsigned	 wait;

	run->r->retries++;
	wait = *base / 2 + (unsigned)rand_r(&run->seed) % (*base / 2 + 1);
	log_warn("expire: batch undone by a deadlock or lock wait "
	    "timeout; retry %d in %u ms", k + 1, wait);
	clock_sleep_ms(wait);
	*base = *base * 2 > EXPIRE_RETRY_CAP_MS ? EXPIRE_RETRY_CAP_MS :
	    *base * 2;
}

/*
 * True (the run marked stopped and locked, at warn) when a batch or
 * window undone k + 1 times by deadlocks or lock wait timeouts is not
 * to run again: the runtime bound is spent; the next run goes on with
 * it.
 */
static int
retries_end(struct run *run, const char *what, int k)
{
	if (!out_of_time(run))
		return 0;
	run->r->locked = 1;
	log_warn("expire: a %s was undone %d times by deadlocks or lock wait "
	    "timeouts; max runtime reached, the next run retries it", what,
	    k + 1);
	return 1;
}

/*
 * Applies ids[0..n) with rule ru in one statement. An apply undone by a
 * deadlock or lock wait timeout (REPO_RETRY) runs again after a
 * jittered, doubling pause (EXPIRE_RETRY_BASE_MS up to
 * EXPIRE_RETRY_CAP_MS), as often as it takes until the runtime bound is
 * spent (retries_end: the run stops, *changed 0); each retry is counted
 * in r->retries. Each attempt counts as one statement for longest_tx_ms.
 * REPO_OK (also when stopped), REPO_SPLIT (over wsrep_max_ws_size,
 * nothing done), REPO_SPLIT_ROWS (over wsrep_max_ws_rows, nothing done)
 * or REPO_ERR.
 */
static enum repo_rc
apply_once(struct run *run, const struct rule *ru, const uint64_t *ids,
    size_t n, unsigned *changed)
{
	unsigned	 base = EXPIRE_RETRY_BASE_MS;
	int		 k, rc;
	int64_t		 t0;

	for (k = 0;; k++) {
		t0 = clock_mono_ms();
		rc = ru->apply(run, ids, n, changed);
		tx_done(run, t0);
		if (rc != REPO_RETRY)
			return rc == REPO_OK || rc == REPO_SPLIT ||
			    rc == REPO_SPLIT_ROWS ? rc : REPO_ERR;
		if (retries_end(run, "batch", k)) {
			*changed = 0;
			return REPO_OK;
		}
		retry_pause(run, k, &base);
	}
}

/*
 * Logs row id of step, alone over the node's limit (REPO_SPLIT:
 * wsrep_max_ws_size, else wsrep_max_ws_rows), with what to do, and
 * counts it as skipped (run->oversize). No result.
 */
static void
oversize_row(struct run *run, const char *step, uint64_t id,
    enum repo_rc rc)
{
	if (rc == REPO_SPLIT)
		log_error("expire: step %s: row %llu alone is over the node's "
		    "wsrep_max_ws_size (its payloads are in the writeset): "
		    "skipped; raise wsrep_max_ws_size on the node, or lower "
		    "max_result_bytes (and max_request_bytes) for the rows to "
		    "come; the run goes on and exits 1", step,
		    (unsigned long long)id);
	else
		log_error("expire: step %s: row %llu alone is over the node's "
		    "wsrep_max_ws_rows: skipped; raise wsrep_max_ws_rows on "
		    "the node (0: no limit); the run goes on and exits 1",
		    step, (unsigned long long)id);
	run->oversize++;
}

/*
 * Applies a batch, ids[0..n), with rule ru (apply_once), counting into
 * *changed. A statement whose writeset is over the node's
 * wsrep_max_ws_size (REPO_SPLIT: big payloads in the rows' images) or
 * that changes more rows than its wsrep_max_ws_rows (REPO_SPLIT_ROWS)
 * runs again as two halves, each split again while it is over, down to
 * one row; the halves that passed stay done. The second half is not run
 * when the runtime bound is spent after the first (the next run takes
 * it). A single row over the limit is logged with what to do and
 * skipped (oversize_row: the run goes on, then fails). 0 (also when
 * stopped or a row was skipped), or -1 on a database error.
 */
static int
apply_batch(struct run *run, const struct rule *ru, const uint64_t *ids,
    size_t n, unsigned *changed)
{
	enum repo_rc	 rc;
	unsigned	 more = 0;
	size_t		 h = n / 2;

	*changed = 0;
	rc = apply_once(run, ru, ids, n, changed);
	if (rc != REPO_SPLIT && rc != REPO_SPLIT_ROWS)
		return rc == REPO_OK ? 0 : -1;
	if (n == 1) {
		oversize_row(run, step_names[ru - rules], ids[0], rc);
		return 0;
	}
	log_info("expire: a batch of %zu rows is over the node's %s; "
	    "running it as %zu and %zu", n, rc == REPO_SPLIT ?
	    "wsrep_max_ws_size" : "wsrep_max_ws_rows", h, n - h);
	if (apply_batch(run, ru, ids, h, changed) == -1)
		return -1;
	if (!run->r->complete || out_of_time(run))
		return 0;
	if (apply_batch(run, ru, ids + h, n - h, &more) == -1)
		return -1;
	*changed += more;
	return 0;
}

/*
 * Runs a two-step rule batch by batch, each selection going on after
 * the previous one, until a selection comes back short or the runtime
 * is spent; counts into r->count[step]. 0 or -1.
 */
static int
step_rule(struct run *run, enum expire_step step)
{
	const struct rule *ru = &rules[step];
	struct repo_pos	 pos = { 0, 0 };
	size_t		 n;
	unsigned	 changed;
	int64_t		 t0, t1, t2;

	do {
		if (out_of_time(run))
			return 0;
		t0 = clock_mono_ms();
		if (ru->due(run, &pos, &n) != REPO_OK)
			return -1;
		t1 = tx_done(run, t0);
		if (apply_batch(run, ru, run->ids, n, &changed) == -1)
			return -1;
		t2 = clock_mono_ms();
		log_debug("expire: %s: %zu selected in %lld ms, %u changed in "
		    "%lld ms", step_names[step], n, (long long)(t1 - t0),
		    changed, (long long)(t2 - t1));
		run->r->count[step] += changed;
		run->r->batches++;
	} while (n == run->o->batch_size);
	return 0;
}

/*
 * The rollup's mark (repo_rollup_mark) into *mark: the purge spares the
 * executions that ended after it, which the rollup has yet to count.
 * REPO_OK or REPO_ERR.
 */
static enum repo_rc
rollup_mark(struct run *run, int64_t *mark)
{
	struct odb	*o;
	enum repo_rc	 rc;

	if ((o = repo_rollup_open(run->o->cfg)) == NULL)
		return REPO_ERR;
	rc = repo_rollup_mark(o, run->o->now, mark);
	repo_rollup_close(o);
	return rc;
}

/*
 * Deletes old terminal rows that the rollup has counted, status by
 * status, batch by batch. 0 or -1.
 */
static int
step_purge(struct run *run)
{
	size_t	 i;

	run->cutoff = run->o->now - (int64_t)run->o->purge_grace_days * DAY_MS;
	if (rollup_mark(run, &run->counted) != REPO_OK)
		return -1;
	for (i = 0; i < sizeof(terminal) / sizeof(terminal[0]); i++) {
		run->purging = terminal[i];
		if (step_rule(run, EXPIRE_STEP_PURGE) == -1)
			return -1;
		if (!run->r->complete)		/* out of time */
			return 0;
	}
	return 0;
}

/* Deletes ended webhook deliveries, delivered then dead. 0 or -1. */
static int
step_deliveries(struct run *run)
{
	run->cutoff = run->o->now - (int64_t)run->o->purge_grace_days * DAY_MS;
	for (run->dead = 0; run->dead <= 1; run->dead++) {
		if (step_rule(run, EXPIRE_STEP_DELIVERIES) == -1)
			return -1;
		if (!run->r->complete)		/* out of time */
			return 0;
	}
	return 0;
}

/*
 * Counts one rollup window (repo_rollup_window). A window undone by a
 * deadlock or lock wait timeout runs again as apply_batch's batch does,
 * its pause starting at EXPIRE_RETRY_BASE_MS, until the runtime bound is
 * spent (then nothing counted, *more 0, the run stopped). REPO_OK (also
 * when stopped) or REPO_ERR.
 */
static enum repo_rc
rollup_window(struct run *run, struct odb *o, uint64_t *counted,
    int *more)
{
	unsigned	 base = EXPIRE_RETRY_BASE_MS;
	int		 k;
	enum repo_rc	 rc;
	int64_t		 t0;

	for (k = 0;; k++) {
		t0 = clock_mono_ms();
		rc = repo_rollup_window(o, run->o->now, counted, more);
		tx_done(run, t0);
		if (rc != REPO_RETRY)
			return rc;
		if (retries_end(run, "rollup window", k))
			return REPO_OK;		/* *counted, *more: 0 */
		retry_pause(run, k, &base);
	}
}

/*
 * Adds what ended since the last count to the per-route rollup, one
 * window per transaction (rollup_window), until it is a minute behind
 * now or the runtime is spent; then deletes the intervals past keeping.
 * Counts into r->count[EXPIRE_STEP_ROLLUP]. 0 or -1.
 */
static int
step_rollup(struct run *run)
{
	struct odb	*o;
	uint64_t	 counted, pruned;
	int		 more = 1;
	enum repo_rc	 rc = REPO_OK;

	if ((o = repo_rollup_open(run->o->cfg)) == NULL)
		return -1;
	while (more && !out_of_time(run)) {
		if ((rc = rollup_window(run, o, &counted, &more)) != REPO_OK)
			break;
		run->r->count[EXPIRE_STEP_ROLLUP] += counted;
		run->r->batches++;
	}
	if (rc == REPO_OK && repo_rollup_prune(o, run->o->now, &pruned) !=
	    REPO_OK)
		rc = REPO_ERR;
	repo_rollup_close(o);
	return rc == REPO_OK ? 0 : -1;
}

/* The rollup step's dry-run count: what it would add now. */
static enum repo_rc
rollup_count(struct run *run, uint64_t *n)
{
	struct odb	*o;
	enum repo_rc	 rc;

	if ((o = repo_rollup_open(run->o->cfg)) == NULL)
		return REPO_ERR;
	rc = repo_rollup_pending(o, run->o->now, n);
	repo_rollup_close(o);
	return rc;
}

/* The purge step's dry-run count: what it would delete now. */
static enum repo_rc
purge_count(struct run *run, int64_t cutoff, uint64_t *n)
{
	int64_t		 mark;

	if (rollup_mark(run, &mark) != REPO_OK)
		return REPO_ERR;
	return repo_purge_count(run->db, run->o->now, cutoff, mark, n);
}

/* Counts what each selected step would touch; changes nothing. 0 or -1. */
static int
dry_run(struct run *run)
{
	const struct expire_opts *o = run->o;
	uint64_t	*c = run->r->count;
	int64_t		 cutoff = o->now - (int64_t)o->purge_grace_days * DAY_MS;
	int		 step, rc = REPO_OK;
	int64_t		 t0;

	for (step = 0; step < EXPIRE_STEP__MAX && rc == REPO_OK; step++) {
		if (!(o->steps & (1u << step)))
			continue;
		t0 = clock_mono_ms();
		if (step == EXPIRE_STEP_EXPIRE)
			rc = repo_expire_count(run->db, o->now, &c[step]);
		else if (step == EXPIRE_STEP_CANCEL)
			rc = repo_cancel_count(run->db, o->now, &c[step]);
		else if (step == EXPIRE_STEP_ABANDON)
			rc = repo_abandon_count(run->db, o->max_attempts,
			    o->now, &c[step]);
		else if (step == EXPIRE_STEP_PURGE)
			rc = purge_count(run, cutoff, &c[step]);
		else if (step == EXPIRE_STEP_DELIVERIES)
			rc = repo_delivery_purge_count(run->db, cutoff, &c[step]);
		else if (step == EXPIRE_STEP_REVOKED)
			rc = repo_revoked_count(run->db, o->max_attempts, o->now,
			    &c[step]);
		else
			rc = rollup_count(run, &c[step]);
		tx_done(run, t0);
		run->r->step_ms[step] = clock_mono_ms() - t0;
	}
	return rc == REPO_OK ? 0 : -1;
}

/*
 * Records how the run ended (rc of its steps) for GET /metrics: a run
 * stopped while retrying a lock is "locked", not a success; a failure
 * to record (no s2r_job_run before migration 6, or the database gone)
 * is logged and does not change the run's outcome.
 */
static void
record(struct run *run, int rc)
{
	const struct expire_result *r = run->r;
	const char	*result = rc != 0 ? "error" : r->locked ? "locked" :
			    r->complete ? "complete" : "stopped";

	if (repo_expire_record(run->db, result, rc == 0 && !r->locked,
	    r->count, r->retries, (uint64_t)(clock_mono_ms() - run->start),
	    clock_now_ms()) != REPO_OK)
		log_warn("expire: the run was not recorded for /metrics (is "
		    "the schema current? " MIGRATE_HINT ")");
}

/*
 * The run's closing error for n (>= 1) rows skipped as each alone over
 * wsrep_max_ws_size or wsrep_max_ws_rows, into buf (size bytes).
 * Results: buf.
 */
const char *
expire_oversize_text(char *buf, size_t size, unsigned long n)
{
	snprintf(buf, size, "%lu %s over the node's wsrep_max_ws_size or "
	    "wsrep_max_ws_rows (logged above); the other rows and steps are "
	    "done", n, n == 1 ?
	    "row skipped, alone" : "rows skipped, each alone");
	return buf;
}

/*
 * Runs the selected steps in order under the run lock: a database error
 * ends the run; rows skipped as over wsrep_max_ws_size or
 * wsrep_max_ws_rows (apply_batch)
 * fail it after every step ran. 0 or -1.
 */
static int
locked_run(struct run *run)
{
	char	 why[160];
	int	 step, got, rc = 0;
	int64_t	 t0;

	if (repo_expire_lock(run->db, &got) != REPO_OK)
		return -1;
	if (!got) {
		log_info("expire: another run holds the lock; skipping");
		run->r->skipped = 1;
		run->r->complete = 0;
		return 0;
	}
	for (step = 0; step < EXPIRE_STEP__MAX && rc == 0; step++) {
		if (!(run->o->steps & (1u << step)))
			continue;
		t0 = clock_mono_ms();
		rc = step == EXPIRE_STEP_PURGE ? step_purge(run) :
		    step == EXPIRE_STEP_DELIVERIES ? step_deliveries(run) :
		    step == EXPIRE_STEP_ROLLUP ? step_rollup(run) :
		    step_rule(run, (enum expire_step)step);
		run->r->step_ms[step] = clock_mono_ms() - t0;
	}
	if (rc == 0 && run->oversize > 0) {
		log_error("expire: %s", expire_oversize_text(why, sizeof(why),
		    run->oversize));
		rc = -1;
	}
	record(run, rc);
	if (repo_expire_unlock(run->db) != REPO_OK)
		rc = -1;
	return rc;
}

/*
 * One run with options o on handle db (from repo_expire_open); r gets
 * the counts and timings. Returns 0 (also when skipped or stopped by
 * the runtime bound; see r) or -1 on a database error (logged).
 */
int
expire_run(struct xdb *db, const struct expire_opts *o,
    struct expire_result *r)
{
	struct run	 run;
	int		 rc = -1;

	memset(r, 0, sizeof(*r));
	memset(&run, 0, sizeof(run));
	r->complete = 1;
	run.db = db;
	run.o = o;
	run.r = r;
	run.start = clock_mono_ms();
	run.seed = (unsigned)run.start ^ (unsigned)getpid();
	if (o->batch_size == 0 || o->batch_size > EXPIRE_BATCH_MAX ||
	    (run.ids = calloc(o->batch_size, sizeof(*run.ids))) == NULL)
		goto fail;
	rc = o->dry_run ? dry_run(&run) : locked_run(&run);
	free(run.ids);
fail:
	r->duration_ms = clock_mono_ms() - run.start;
	if (rc == -1) {
		r->failed = 1;
		r->complete = 0;
	}
	return rc;
}

/*
 * Writes the one-line summary into out: "result=complete|stopped|
 * skipped|error dry_run=yes|no expired=N cancelled=N abandoned=N
 * purged=N purged_deliveries=N revoked=N counted=N expire_ms=N cancel_ms=N
 * abandon_ms=N purge_ms=N deliveries_ms=N revoked_ms=N rollup_ms=N duration_ms=N
 * longest_tx_ms=N batches=N retries=N". Returns 0, or -1 when out is too small.
 */
int
expire_summary(const struct expire_result *r, int dry_run, char *out,
    size_t sz)
{
	size_t	 len;
	int	 i, n;

	n = snprintf(out, sz, "result=%s dry_run=%s",
	    r->failed ? "error" : r->skipped ? "skipped" :
	    r->complete ? "complete" : "stopped",
	    dry_run ? "yes" : "no");
	for (i = 0; n >= 0 && (size_t)n < sz && i < EXPIRE_STEP__MAX; i++) {
		len = (size_t)n;
		n += snprintf(out + len, sz - len, " %s=%llu", step_names[i],
		    (unsigned long long)r->count[i]);
	}
	for (i = 0; n >= 0 && (size_t)n < sz && i < EXPIRE_STEP__MAX; i++) {
		len = (size_t)n;
		n += snprintf(out + len, sz - len, " %s=%lld", step_ms_names[i],
		    (long long)r->step_ms[i]);
	}
	if (n >= 0 && (size_t)n < sz) {
		len = (size_t)n;
		n += snprintf(out + len, sz - len, " duration_ms=%lld "
		    "longest_tx_ms=%lld batches=%lu retries=%lu",
		    (long long)r->duration_ms, (long long)r->longest_tx_ms,
		    r->batches, r->retries);
	}
	return n >= 0 && (size_t)n < sz ? 0 : -1;
}
