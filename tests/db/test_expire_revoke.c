/*
 * asyncexec-expire's revoked step and the consumer key revoke of repo_revoke.c against
 * the real MariaDB (ASYNCEXEC_TEST_CONFIG; contract v3, sql/012).
 *
 * Lineages made of keys of this run (a rotated key has its first key's lineage), their
 * revocation times set on a side connection: a lineage without a live key loses its
 * unclaimed waiting executions (never claimed, or the lease lapsed) to failed with
 * initiator_revoked, and nothing else (a live lease, a cancel request, a lineage with a
 * key in its grace, a row without a lineage id); batches of 2 go on across lineages;
 * the dry run counts what the run then does; the revoke of the last live key fails them
 * in its own transaction, a revoke during a grace fails nothing.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "crypto.h"
#include "expire.h"
#include "expire_fixture.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_expire.h"
#include "repo_revoke.h"

static struct config	 cfg;
static struct db	*db;
static struct xdb	*xdb;
static MYSQL		*side;
static char		 env[24], svc[] = "svc", tenant[40];

static void
setup(void)
{
	char	 err[512];

	if (getenv("ASYNCEXEC_TEST_CONFIG") == NULL || config_load(&cfg,
	    getenv("ASYNCEXEC_TEST_CONFIG"), err, sizeof(err)) == -1) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG: run scripts/test.sh\n");
		exit(1);
	}
	snprintf(env, sizeof(env), "rvk%ld%d", (long)getpid(), rand() % 1000);
	snprintf(tenant, sizeof(tenant), "t-%s", env);
	if ((db = repo_open(&cfg, 0)) == NULL || repo_ping(db) != REPO_OK ||
	    (xdb = repo_expire_open(&cfg)) == NULL) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
	side = side_open(&cfg, "SET time_zone = '+00:00'");
}

/* A new consumer key of tenant (lineage: lineage's when not 0; else its own, with
 * lineage_id NULL as key create leaves it). */
static uint64_t
key(uint64_t lineage)
{
	unsigned char	 h[SHA256_LEN];
	char		 s[SECRET_B64_LEN + 1], q[160];
	uint64_t	 id = 0;

	CHECK(crypto_new_secret("", s, sizeof(s), h) == 0);
	CHECK(repo_key_add(db, 0, tenant, "rv", h, clock_now_ms(), &id) == REPO_OK);
	snprintf(q, sizeof(q), "UPDATE s2r_api_key SET lineage_id = %llu WHERE id = %llu",
	    (unsigned long long)lineage, (unsigned long long)id);
	if (lineage != 0)
		side_sql(side, q);
	return id;
}

/* Sets key id's revoked_at to now + ms (ms 0: NULL). */
static void
revoke_at(uint64_t id, long long ms)
{
	char	 q[200];

	if (ms == 0)
		snprintf(q, sizeof(q), "UPDATE s2r_api_key SET revoked_at = NULL WHERE id = "
		    "%llu", (unsigned long long)id);
	else
		snprintf(q, sizeof(q), "UPDATE s2r_api_key SET revoked_at = UTC_TIMESTAMP(3) "
		    "+ INTERVAL %lld MICROSECOND WHERE id = %llu", ms * 1000,
		    (unsigned long long)id);
	side_sql(side, q);
}

/* A waiting execution of op submitted by lineage (0: none recorded). */
static uint64_t
add(const char *op, const char *cid, uint64_t lineage)
{
	struct exec_new	 n;
	char		 tok[SECRET_B64_LEN + 1];
	int64_t		 now = clock_now_ms();
	uint64_t	 id = 0;

	exec_new_init(&n, env, svc, op, tenant, cid, "{}");
	CHECK(crypto_new_secret("", tok, sizeof(tok), n.key_hash) == 0);
	CHECK(crypto_new_secret("", tok, sizeof(tok), n.poll_hash) == 0);
	n.now = now - MIN;
	n.expires_at = now + DAY;
	n.lineage_id = lineage;
	CHECK(repo_exec_insert(db, &n, &id) == REPO_OK);
	CHECK(id != 0);
	return id;
}

/* Status and error code of execution id into st / code. */
static void
state(uint64_t id, char *st, char *code)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	char		 q[200];

	snprintf(q, sizeof(q), "SELECT status, COALESCE(JSON_VALUE(error_payload, "
	    "'$.code'), '-') FROM s2r_async_execution WHERE id = %llu",
	    (unsigned long long)id);
	side_sql(side, q);
	st[0] = code[0] = '\0';
	if ((res = mysql_store_result(side)) != NULL &&
	    (row = mysql_fetch_row(res)) != NULL) {
		snprintf(st, 32, "%s", row[0]);
		snprintf(code, 32, "%s", row[1]);
	}
	mysql_free_result(res);
}

static void
expect(uint64_t id, const char *st, const char *code)
{
	char	 s[32], c[32];

	state(id, s, c);
	CHECK_EQ_STR(s, st);
	CHECK_EQ_STR(c, code);
}

static void
sql(const char *fmt, unsigned long long id)
{
	char	 q[300];

	snprintf(q, sizeof(q), fmt, id);
	side_sql(side, q);
}

/* One integer of query fmt (with id); -1 when none. */
static long long
q_one(const char *fmt, unsigned long long id)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	sql(fmt, id);
	if ((res = mysql_store_result(side)) != NULL &&
	    (row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

/* The revoked step alone, at now, in batches of batch. */
static struct expire_result
run(unsigned batch, int dry)
{
	struct expire_opts	 o;
	struct expire_result	 r;

	expire_opts_init(&o, &cfg);
	o.now = clock_now_ms();
	o.steps = 1u << EXPIRE_STEP_REVOKED;
	o.batch_size = batch;
	o.dry_run = dry;
	o.max_runtime_ms = 60000;
	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.complete && !r.skipped && !r.failed);
	return r;
}

static void
expire_step(void)
{
	uint64_t	 dead1 = key(0), dead2 = key(0), grace = key(0), succ;
	char		 q[160];
	uint64_t	 a[4], b[3], lapsed, live, cancel, g, none;
	struct expire_result r, d;
	int		 i;
	char		 cid[16];

	succ = key(dead1);			/* dead1 was rotated to succ */
	/* dead2's lineage_id as migration 7 backfilled it (its own id) */
	snprintf(q, sizeof(q), "UPDATE s2r_api_key SET lineage_id = id WHERE id = %llu",
	    (unsigned long long)dead2);
	side_sql(side, q);
	for (i = 0; i < 4; i++) {
		snprintf(cid, sizeof(cid), "a%d", i);
		a[i] = add("o", cid, dead1);
	}
	for (i = 0; i < 3; i++) {
		snprintf(cid, sizeof(cid), "b%d", i);
		b[i] = add("o", cid, dead2);
	}
	lapsed = add("o", "lapsed", dead1);
	live = add("o", "live", dead1);
	cancel = add("o", "cancel", dead1);
	g = add("o", "grace", grace);
	none = add("o", "none", 0);
	sql("UPDATE s2r_async_execution SET callback_token_hash = UNHEX(REPEAT('ab', 32)), "
	    "attempts = 1, lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE "
	    "id = %llu", lapsed);
	sql("UPDATE s2r_async_execution SET callback_token_hash = UNHEX(REPEAT('ab', 32)), "
	    "attempts = 1, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 1 HOUR WHERE "
	    "id = %llu", live);
	sql("UPDATE s2r_async_execution SET cancel_requested = 1 WHERE id = %llu", cancel);
	/* all live at first: nothing */
	r = run(2, 0);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_REVOKED], 0);
	/* dead1's first key revoked, its successor in its grace: still nothing */
	revoke_at(dead1, -1000);
	revoke_at(succ, 3600000);
	revoke_at(dead2, -1);
	revoke_at(grace, 3600000);	/* a grace, and nothing else */
	d = run(2, 1);
	r = run(2, 0);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_REVOKED], 3);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_REVOKED], 3);	/* dead2's three */
	for (i = 0; i < 3; i++)
		expect(b[i], "failed", "initiator_revoked");
	expect(a[0], "waiting_callback", "-");
	/* the successor's grace ends: dead1's unclaimed ones, across batches of 2 */
	revoke_at(succ, -1);
	d = run(2, 1);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_REVOKED], 5);
	r = run(2, 0);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_REVOKED], 5);	/* a0..a3, lapsed */
	CHECK(r.batches >= 3);
	for (i = 0; i < 4; i++)
		expect(a[i], "failed", "initiator_revoked");
	expect(lapsed, "failed", "initiator_revoked");
	expect(live, "waiting_callback", "-");		/* a live lease */
	expect(cancel, "waiting_callback", "-");	/* the cancel step's */
	expect(g, "waiting_callback", "-");		/* in its grace */
	expect(none, "waiting_callback", "-");		/* no lineage recorded */
	CHECK(q_one("SELECT COUNT(*) FROM s2r_async_execution WHERE id = %llu AND "
	    "completed_at IS NOT NULL AND updated_at = completed_at AND notify = 0",
	    a[0]) == 1);
	r = run(1000, 0);
	CHECK_EQ_INT(r.count[EXPIRE_STEP_REVOKED], 0);
	/* the apply repeats the rule: a lineage live again loses nothing */
	revoke_at(grace, 0);
	{
		uint64_t	 ids[1] = { g };
		unsigned	 changed = 9;

		CHECK(repo_revoked_apply(xdb, ids, 1, clock_now_ms(), &changed) ==
		    REPO_OK);
		CHECK_EQ_INT(changed, 0);
	}
	wipe_env(&cfg, env);
}

static void
admin_revoke(void)
{
	struct rvdb		*rv = repo_revoke_open(&cfg);
	struct revoke_outcome	 o;
	uint64_t		 k1 = key(0), k2 = key(k1), e1, e2, e3, lv;

	e1 = add("p", "e1", k1);
	e2 = add("p", "e2", k1);
	lv = add("p", "lv", k1);
	sql("UPDATE s2r_async_execution SET callback_token_hash = UNHEX(REPEAT('ab', 32)), "
	    "attempts = 1, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 1 HOUR WHERE "
	    "id = %llu", lv);
	/* k2 still live: nothing fails */
	CHECK(repo_consumer_revoke(rv, k1, clock_now_ms(), &o) == REPO_OK);
	CHECK(o.lineage == k1 && o.live == 1 && o.failed == 0);
	expect(e1, "waiting_callback", "-");
	/* the last one: both unclaimed ones fail in the revoke */
	CHECK(repo_consumer_revoke(rv, k2, clock_now_ms(), &o) == REPO_OK);
	CHECK(o.lineage == k1 && o.live == 0 && o.failed == 2);
	expect(e1, "failed", "initiator_revoked");
	expect(e2, "failed", "initiator_revoked");
	expect(lv, "waiting_callback", "-");
	/* again: idempotent, nothing more */
	e3 = add("p", "e3", k1);
	CHECK(repo_consumer_revoke(rv, k2, clock_now_ms(), &o) == REPO_OK);
	CHECK(o.failed == 1);
	expect(e3, "failed", "initiator_revoked");
	CHECK(repo_consumer_revoke(rv, 999999999, clock_now_ms(), &o) ==
	    REPO_NOTFOUND);
	repo_revoke_close(rv);
	wipe_env(&cfg, env);
}

int
main(void)
{
	mysql_library_init(0, NULL, NULL);
	srand((unsigned)getpid());
	setup();
	expire_step();
	admin_revoke();
	mysql_close(side);
	repo_expire_close(xdb);
	repo_close(db);
	mysql_library_end();
	return check_done("db_expire_revoke");
}
