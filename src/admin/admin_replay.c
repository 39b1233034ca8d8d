/*
 * admin_replay.c - asyncexec-admin execution replay (contract v3): a
 * failed, expired or cancelled execution run again as a new
 * waiting_callback execution with a server-made correlation id, pollable
 * with the original's poll token (repo_replay.h says what is copied).
 *
 * execution replay ID | --tenant TENANT ROUTE CORRELATION_ID: one;
 * completed or waiting is refused (exit 1), one replayed before is
 * reported with its replay (exit 0: racing replays make one), the
 * tenant's quota (tenant set --max-open) refuses one above it (exit 1),
 * and so is one whose key lineage has no live key (exit 1: no claim
 * would hand its replay out).
 * execution replay --route ROUTE --status STATUS --since TIME
 * [--dry-run]: every execution of the route with that status that ended
 * at or after TIME, was not replayed and existed when the run started
 * (its id at most the highest id then: the run's own replays, failing
 * meanwhile, are not replayed again), in batches of REPLAY_BATCH ids,
 * each replay its own transaction; those of a lineage with no live key
 * are counted and left; a count and each new id (or one JSON document).
 * A run that an error stops keeps the replays before it: exit 1 saying
 * so, after their lines (or the document of them, "stopped" saying why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "crypto.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_replay.h"

/* the new correlation id had no random bytes (crypto_random logged it) */
#define NO_RANDOM	"no random bytes for the new correlation id"
/* why an execution of a revoked lineage is not replayed */
#define NO_LIVE_KEY	"the key lineage that submitted it has no live " \
	"key (revoked), and no claim hands out such work; resubmit the " \
	"request with a live key"

/* Whether s is a status replay accepts. */
static int
replayable(const char *s)
{
	return strcmp(s, "failed") == 0 || strcmp(s, "expired") == 0 ||
	    strcmp(s, "cancelled") == 0;
}

int
chk_exec_replay(struct opts *o)
{
	const char	*r = o->val[O_ROUTE], *s = o->val[O_STATE];
	const char	*t = o->val[O_SINCE];
	int		 rc;

	if (r == NULL && s == NULL && t == NULL) {
		if (o->val[O_DRYRUN] != NULL)
			return admin_usage_error(NULL, "--dry-run only with "
			    "--route, --status and --since");
		return chk_exec(o);
	}
	if (r == NULL || s == NULL || t == NULL || o->npos != 0 ||
	    o->val[O_TENANT] != NULL || o->nroutes != 1)
		return admin_usage_error(NULL, "execution replay takes ID, or "
		    "--tenant TENANT ROUTE CORRELATION_ID, or one --route, "
		    "--status and --since");
	if ((rc = admin_route_arg(o, r)) != 0)
		return rc;
	if (!replayable(s))
		return admin_usage_error(NULL, "--status must be failed, "
		    "expired or cancelled: %s", admin_shown(s));
	if (clock_parse_rfc3339(t, &o->since) == -1)
		return admin_usage_error(NULL, "--since must be an RFC 3339 "
		    "time (2026-12-01T08:00:00Z, or with an offset such as "
		    "+02:00): %s", admin_shown(t));
	return 0;
}

/* The execution the options name: its id into *id; 0 or 1. */
static int
exec_id(struct ctx *c, uint64_t *id)
{
	struct exec_admin	 e;
	struct opts		*o = c->o;
	int			 rc;

	if (o->val[O_TENANT] == NULL) {
		*id = o->id;
		return 0;
	}
	rc = repo_exec_show_key(c->adb, o->val[O_TENANT], o->env, o->svc,
	    o->op, o->pos[1], &e);
	if (rc == REPO_NOTFOUND)
		return admin_fail("no such execution");
	if (rc != REPO_OK)
		return 1;
	*id = e.id;
	return 0;
}

/* Prints one replay's outcome; the exit status. */
static int
one_result(struct ctx *c, uint64_t id, enum replay_rc rc,
    const struct replay_out *out)
{
	struct json_object	*j;

	switch (rc) {
	case REPLAY_NOTFOUND:
		return admin_fail("no such execution");
	case REPLAY_STATUS:
		return admin_fail("execution %llu is %s: only a failed, "
		    "expired or cancelled execution can be replayed",
		    (unsigned long long)id, out->status);
	case REPLAY_QUOTA:
		return admin_fail("execution %llu not replayed: its tenant "
		    "has %u waiting executions, its quota (tenant set "
		    "--max-open) is %u", (unsigned long long)id, out->open,
		    out->max_open);
	case REPLAY_REVOKED:
		return admin_fail("execution %llu not replayed: %s",
		    (unsigned long long)id, NO_LIVE_KEY);
	case REPLAY_DONE:
	case REPLAY_ALREADY:
		break;
	case REPLAY_ERR:
		return 1;
	}
	if (c->o->json) {
		if ((j = json_object_new_object()) == NULL)
			return 1;
		json_object_object_add(j, "id", json_object_new_int64(
		    (int64_t)id));
		json_object_object_add(j, "replay_id", json_object_new_int64(
		    (int64_t)out->new_id));
		json_object_object_add(j, "replay_correlation_id",
		    json_object_new_string(out->new_cid));
		json_object_object_add(j, "created",
		    json_object_new_boolean(rc == REPLAY_DONE));
		return admin_print_json(j);
	}
	if (rc == REPLAY_ALREADY)
		printf("execution %llu was already replayed as execution %llu "
		    "(correlation id %s)\n", (unsigned long long)id,
		    (unsigned long long)out->new_id, out->new_cid);
	else
		printf("execution %llu replayed as execution %llu (correlation "
		    "id %s), waiting_callback\n", (unsigned long long)id,
		    (unsigned long long)out->new_id, out->new_cid);
	return 0;
}

/* The bulk form's state. */
struct bulk {
	struct json_object	*arr;
	unsigned long long	 n, skipped, quota, revoked;
	const char		*why;	/* why, when not the database */
};

/*
 * Replays one batch of ids (live[i] 0: a lineage with no live key, left);
 * 0, or 1 (b->why, else a database error).
 */
static int
bulk_batch(struct ctx *c, struct rdb *r, const uint64_t *ids,
    const unsigned char *live, size_t n, struct bulk *b)
{
	struct replay_out	 out;
	struct json_object	*j;
	char			 cid[UUID_TEXT_LEN + 1];
	enum replay_rc		 rc;
	size_t			 i;

	for (i = 0; i < n; i++) {
		if (!live[i]) {
			b->revoked++;
			continue;
		}
		if (c->o->val[O_DRYRUN] != NULL) {
			b->n++;
			continue;
		}
		if (crypto_uuid(cid) == -1) {
			b->why = NO_RANDOM;
			return 1;
		}
		rc = repo_exec_replay(r, ids[i], cid, clock_now_ms(), &out);
		if (rc == REPLAY_ERR)
			return 1;
		if (rc == REPLAY_QUOTA) {
			b->quota++;
			continue;
		}
		if (rc == REPLAY_REVOKED) {	/* revoked meanwhile */
			b->revoked++;
			continue;
		}
		if (rc != REPLAY_DONE) {	/* replayed meanwhile, or gone */
			b->skipped++;
			continue;
		}
		b->n++;
		if (b->arr == NULL) {
			printf("%llu\t%llu\t%s\n", (unsigned long long)ids[i],
			    (unsigned long long)out.new_id, out.new_cid);
			continue;
		}
		if ((j = json_object_new_object()) == NULL)
			return 1;
		json_object_object_add(j, "id", json_object_new_int64(
		    (int64_t)ids[i]));
		json_object_object_add(j, "replay_id", json_object_new_int64(
		    (int64_t)out.new_id));
		json_object_object_add(j, "replay_correlation_id",
		    json_object_new_string(out.new_cid));
		json_object_array_add(b->arr, j);
	}
	return 0;
}

/*
 * Prints the bulk form's JSON document (stopped: why the run stopped
 * early, NULL: it ran to the end); 0, or 1 (not printed, or refusals
 * for quota).
 */
static int
bulk_json(struct ctx *c, struct bulk *b, const char *stopped)
{
	struct json_object	*j;
	int			 dry = c->o->val[O_DRYRUN] != NULL;

	if ((j = json_object_new_object()) == NULL) {
		json_object_put(b->arr);
		return 1;
	}
	json_object_object_add(j, dry ? "would_replay" : "replayed",
	    json_object_new_int64((int64_t)b->n));
	json_object_object_add(j, "dry_run", json_object_new_boolean(dry));
	json_object_object_add(j, "refused_quota",
	    json_object_new_int64((int64_t)b->quota));
	json_object_object_add(j, "skipped",
	    json_object_new_int64((int64_t)b->skipped));
	json_object_object_add(j, "skipped_revoked",
	    json_object_new_int64((int64_t)b->revoked));
	json_object_object_add(j, "stopped", stopped != NULL ?
	    json_object_new_string(stopped) : NULL);
	json_object_object_add(j, "replays", b->arr != NULL ? b->arr :
	    json_object_new_array());
	return admin_print_json(j) != 0 || b->quota > 0;
}

/*
 * Prints the bulk form's count (or document); stopped: why the run
 * stopped early (NULL: it ran to the end), also said on stderr then,
 * after the document of what it did. The exit status.
 */
static int
bulk_end(struct ctx *c, struct bulk *b, const char *stopped)
{
	int	 dry = c->o->val[O_DRYRUN] != NULL, rc = 0;

	if (c->o->json)
		rc = bulk_json(c, b, stopped);
	else if (stopped == NULL) {
		if (dry)
			printf("%llu execution(s) would be replayed (dry "
			    "run)\n", b->n);
		else
			printf("%llu execution(s) replayed\n", b->n);
		if (b->revoked > 0)
			printf("%llu execution(s) %s: their key lineages have "
			    "no live key (revoked); resubmit them with a live "
			    "key\n", b->revoked, dry ? "would not be replayed" :
			    "not replayed");
	}
	if (stopped != NULL) {
		(void)fflush(stdout);
		return admin_fail("replay stopped after %llu execution(s): %s",
		    b->n, stopped);
	}
	if (!c->o->json && b->quota > 0)
		return admin_fail("%llu not replayed: the tenant's quota "
		    "(tenant set --max-open)", b->quota);
	return rc;
}

/* The bulk form; the exit status. */
static int
replay_bulk(struct ctx *c, struct rdb *r)
{
	uint64_t		 ids[REPLAY_BATCH], after = 0;
	unsigned char		 live[REPLAY_BATCH];
	struct replay_sel	 s;
	struct bulk		 b;
	size_t			 n;
	int			 dry = c->o->val[O_DRYRUN] != NULL;

	memset(&b, 0, sizeof(b));
	s.env = c->o->env;
	s.svc = c->o->svc;
	s.op = c->o->op;
	s.status = c->o->val[O_STATE];
	s.since = c->o->since;
	s.now = clock_now_ms();
	if (repo_replay_high(r, &s.upto) != REPO_OK)
		return admin_fail("replay stopped: database error");
	if (c->o->json && !dry && (b.arr = json_object_new_array()) == NULL)
		return 1;
	do {
		if (repo_replay_candidates(r, &s, after, ids, live,
		    REPLAY_BATCH, &n) != REPO_OK ||
		    bulk_batch(c, r, ids, live, n, &b) != 0)
			return bulk_end(c, &b, b.why != NULL ? b.why :
			    "database error");
		if (n > 0)
			after = ids[n - 1];
	} while (n == REPLAY_BATCH);
	return bulk_end(c, &b, NULL);
}

int
cmd_exec_replay(struct ctx *c)
{
	struct replay_out	 out;
	struct rdb		*r;
	char			 cid[UUID_TEXT_LEN + 1];
	uint64_t		 id = 0;
	enum replay_rc		 rc;
	int			 st;

	if ((r = repo_replay_open(&c->cfg)) == NULL)
		return admin_fail("out of memory");
	if (c->o->val[O_ROUTE] != NULL)
		st = replay_bulk(c, r);
	else if ((st = exec_id(c, &id)) == 0) {
		if (crypto_uuid(cid) == -1)
			st = admin_fail("%s", NO_RANDOM);
		else {
			rc = repo_exec_replay(r, id, cid, clock_now_ms(),
			    &out);
			st = one_result(c, id, rc, &out);
		}
	}
	repo_replay_close(r);
	return st;
}
