/*
 * claim_race.h - RACE_THREADS claimers, each on its own connection,
 * racing for the RACE_POOL executions of one route (db_repo's
 * concurrent_claims): race_run and the counts it leaves in race.
 *
 * Half the pool is held at first by a side transaction, locked as a
 * claim in flight holds its executions, until every claimer met an
 * empty claim; then it is let go. An empty claim while work remains is
 * SKIP LOCKED's answer while other transactions hold the rest, no reason
 * to stop: a claimer stops once the whole pool is handed out, or when a
 * claim fails, or after RACE_IDLE_TRIES empty claims in a row with no
 * progress meanwhile (work lost). It stopped at its first empty claim,
 * and under load the test failed with 80 or 159 of the 200 handed out.
 * Header only (static functions), as db_fixture.h.
 */
#ifndef ASYNCEXEC_CLAIM_RACE_H
#define ASYNCEXEC_CLAIM_RACE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "db.h"
#include "db_fixture.h"
#include "repo.h"

#define RACE_POOL	200
#define RACE_THREADS	8
#define RACE_IDLE_TRIES	100	/* empty claims in a row, no progress */

/* The race's route, pool and counts; under mu, cv broadcast on each
 * change of a count. */
static struct {
	const struct config *cfg;
	const char	*env, *svc, *op;
	uint64_t	 ids[RACE_POOL];	/* the pool's, sorted */
	int		 claimed[RACE_POOL];	/* times handed out */
	int		 distinct;	/* pool executions handed out */
	int		 dups;		/* handed out twice, or alien */
	unsigned	 progress;	/* claims that handed some out, and
					 * the hold's end */
	int		 inside;	/* claimers inside repo_claim */
	int		 parked;	/* claimers that met an empty claim,
					 * or left */
	int		 held;		/* the side transaction holds rows */
	int		 errs;		/* claims that failed */
	int		 empty;		/* empty claims while work remained */
} race;
static pthread_mutex_t race_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t race_cv = PTHREAD_COND_INITIALIZER;

static int
race_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Counts the n items of a claim into race (race_mu held). */
static void
race_record(const struct claim_item *it, size_t n)
{
	const uint64_t	*p;
	size_t		 i;

	for (i = 0; i < n; i++) {
		p = bsearch(&it[i].id, race.ids, RACE_POOL,
		    sizeof(race.ids[0]), race_cmp);
		if (p == NULL || race.claimed[p - race.ids]++ > 0)
			race.dups++;
		else
			race.distinct++;
	}
	race.progress++;
}

/*
 * After an empty claim that began when race.progress was seen
 * (race_mu held): 1 to stop, 0 to claim again, when another claimer's
 * claim or the hold ended (waits for that while one is in progress).
 * *idle counts the empty claims in a row that saw no progress.
 */
static int
race_stop(unsigned seen, int *idle)
{
	if (race.distinct == RACE_POOL)
		return 1;
	race.empty++;
	if (race.progress != seen) {
		*idle = 0;
		return 0;
	}
	if (++*idle > RACE_IDLE_TRIES)
		return 1;
	while ((race.inside > 0 || race.held) && race.progress == seen)
		pthread_cond_wait(&race_cv, &race_mu);
	return 0;
}

/* One claimer on its own connection, until race_stop or a claim fails.
 * NULL. */
static void *
race_claimer(void *arg)
{
	struct db		*mine = repo_open(race.cfg, 1);
	struct claim_item	*it;
	size_t			 n;
	unsigned		 seen;
	int			 rc, idle = 0, parked = 0, stop = 0;

	(void)arg;
	while (!stop) {
		pthread_mutex_lock(&race_mu);
		race.inside++;
		seen = race.progress;
		pthread_mutex_unlock(&race_mu);
		rc = repo_claim(mine, race.env, race.svc, race.op, 5, 60, 5,
		    clock_now_ms(), &it, &n);
		pthread_mutex_lock(&race_mu);
		race.inside--;
		if (rc != REPO_OK) {
			fprintf(stderr, "race: a claim failed (error %u)\n",
			    db_errno(mine));
			race.errs++;
		} else if (n > 0) {
			race_record(it, n);
			idle = 0;
		}
		if ((rc != REPO_OK || n == 0) && !parked) {
			parked = 1;
			race.parked++;
		}
		pthread_cond_broadcast(&race_cv);
		stop = rc != REPO_OK || (n == 0 && race_stop(seen, &idle));
		pthread_mutex_unlock(&race_mu);
		claim_free(it, n);
	}
	repo_close(mine);
	return NULL;
}

/*
 * Holds race.ids[from..RACE_POOL) on a side connection as a claim in
 * flight holds its executions (FOR UPDATE, by primary key) until its
 * ROLLBACK. The connection. Without FORCE INDEX the plan on the young
 * table's statistics was a scan of ix_exec_abandon, which locked every
 * row read, the whole pool: a claim beside it came back empty.
 */
static MYSQL *
race_hold(int from)
{
	MYSQL	*m = side_open(race.cfg, "START TRANSACTION");
	char	 q[64 + 21 * RACE_POOL];
	size_t	 len;
	int	 i;

	len = (size_t)snprintf(q, sizeof(q), "SELECT id FROM "
	    "s2r_async_execution FORCE INDEX (PRIMARY) WHERE id IN (");
	for (i = from; i < RACE_POOL; i++)
		len += (size_t)snprintf(q + len, sizeof(q) - len, "%s%llu",
		    i > from ? "," : "", (unsigned long long)race.ids[i]);
	snprintf(q + len, sizeof(q) - len, ") FOR UPDATE");
	side_sql(m, q);
	mysql_free_result(mysql_store_result(m));
	return m;
}

/*
 * Runs the race for route env/svc/op of cfg's database whose claimable
 * executions are ids[0..RACE_POOL): the counts in race.
 */
static void
race_run(const struct config *cfg, const char *env, const char *svc,
    const char *op, const uint64_t *ids)
{
	pthread_t	 th[RACE_THREADS];
	MYSQL		*side;
	int		 i;

	race.cfg = cfg;
	race.env = env;
	race.svc = svc;
	race.op = op;
	memcpy(race.ids, ids, sizeof(race.ids));
	qsort(race.ids, RACE_POOL, sizeof(race.ids[0]), race_cmp);
	side = race_hold(RACE_POOL / 2);
	race.held = 1;
	for (i = 0; i < RACE_THREADS; i++)
		pthread_create(&th[i], NULL, race_claimer, NULL);
	pthread_mutex_lock(&race_mu);
	while (race.parked < RACE_THREADS)
		pthread_cond_wait(&race_cv, &race_mu);
	pthread_mutex_unlock(&race_mu);
	side_sql(side, "ROLLBACK");
	mysql_close(side);
	pthread_mutex_lock(&race_mu);
	race.held = 0;
	race.progress++;
	pthread_cond_broadcast(&race_cv);
	pthread_mutex_unlock(&race_mu);
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
}

#endif
