/*
 * repo_replay.h - replay (contract v3, asyncexec-admin execution replay):
 * a failed, expired or cancelled execution run again as a new
 * waiting_callback execution, on a handle of its own (struct rdb).
 *
 * The new execution has the original's route, tenant, key lineage
 * (initiator_lineage, initiator_lineage_id, initiator_key_hash), request
 * bytes and hash, priority, scheduling hash and poll-token hash (so the
 * original's poll token polls it), the given correlation id, created
 * now, expires now + the route's retention, replay_of = the original;
 * the original gets replaced_by = the new one, nothing else. Both in one
 * transaction: the original is locked first (so that racing replays of
 * one execution wait for each other and the later ones see it
 * replaced), the tenant's quota is counted, the INSERT ... SELECT copies
 * the row and the link is a compare-and-set; uq_exec_replay_of makes a
 * second replay of one execution impossible whatever happens. An
 * execution whose key lineage (initiator_lineage_id) has no live key is
 * not replayed (REPLAY_REVOKED): no claim hands out the work of such a
 * lineage (repo_stmts.c CLAIMABLE), and asyncexec-expire fails it again.
 *
 * repo layer: admin only, and the tests.
 */
#ifndef ASYNCEXEC_REPO_REPLAY_H
#define ASYNCEXEC_REPO_REPLAY_H

#include "repo.h"

struct rdb;

enum replay_rc {
	REPLAY_ERR = -1,	/* the database failed (logged) */
	REPLAY_DONE = 0,	/* replayed: out->new_id */
	REPLAY_NOTFOUND,	/* no execution of that id */
	REPLAY_STATUS,		/* completed or waiting: out->status */
	REPLAY_ALREADY,		/* replayed before: out->new_id, new_cid */
	REPLAY_QUOTA,		/* the tenant is at its max_open: out->open,
				 * out->max_open */
	REPLAY_REVOKED		/* its key lineage has no live key */
};

struct replay_out {
	uint64_t	 new_id;
	char		 new_cid[CID_MAX_LEN + 1];
	char		 status[20];
	unsigned	 open, max_open;
};

/* the bulk form's batch: ids read per statement */
#define REPLAY_BATCH	100

struct rdb	*repo_replay_open(const struct config *);
void		 repo_replay_close(struct rdb *);
enum replay_rc	 repo_exec_replay(struct rdb *, uint64_t id, const char *new_cid,
		    int64_t now, struct replay_out *);
/* The bulk form's selection: the route, the status, the times (ms). */
struct replay_sel {
	const char	*env, *svc, *op, *status;
	int64_t		 since;	/* ended at or after it */
	int64_t		 now;	/* a key revoked after it is live */
	uint64_t	 upto;	/* the highest id (repo_replay_high) */
};

/* The highest execution id into *id (0: none); REPO_OK or REPO_ERR. */
enum repo_rc	 repo_replay_high(struct rdb *, uint64_t *id);
/*
 * The ids (ascending, after `after`, at most max) of the route's
 * executions of s->status (failed, expired or cancelled) that ended at or
 * after s->since, were not replayed and have ids up to s->upto: the
 * replays a run makes (higher ids) are never its candidates, also when
 * they fail meanwhile. live[i] is 0 when ids[i]'s key lineage has no live
 * key (REPLAY_REVOKED), else 1. REPO_OK (*n may be 0) or REPO_ERR.
 */
enum repo_rc	 repo_replay_candidates(struct rdb *,
		    const struct replay_sel *s, uint64_t after, uint64_t *ids,
		    unsigned char *live, size_t max, size_t *n);

#endif
