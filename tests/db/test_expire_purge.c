/*
 * What asyncexec-expire's purge step leaves although it is past its
 * time (expiresAt + purge_grace_days), against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG).
 *
 * A replay's original (replaced_by names a row that still exists): poll
 * and cancel of the replay start at the original's id, sealed in the
 * poll token, and follow replaced_by. A chain a -> b -> c with a and b
 * past their time and c live keeps all three; then, c gone, it goes from
 * its tail, one row a run (a before b in the run's order: expired,
 * cancelled, failed, completed).
 *
 * A row with the webhook mark (notify = 1) that asyncexec-notify has
 * not turned into deliveries, while its tenant has an endpoint (here a
 * disabled one, so that no sender of a test beside this one takes the
 * marks): kept until the mark is cleared; with batches of 2, five kept
 * rows ahead of three others neither stop the step nor hold it up. A
 * marked row of a tenant without any endpoint (nothing can deliver it)
 * is purged. With purge_grace_days 0, a run's expiry marks an overdue
 * row of a tenant with an enabled endpoint and the same run's purge
 * leaves it; the dry run counts that too.
 *
 * Plans (EXPLAIN of the statements as sent, repo_expire_sql), with
 * PLAN_ROWS completed rows past the cutoff: the selection and the dry
 * run's count read ix_exec_expiry as a range (the
 * keyset goes on where the last batch stopped, not from the start of
 * the status), the delete reads by primary key behind the id list, the
 * replacement by primary key; no sort, no other table scanned.
 *
 * Rows are made terminal, marked and linked on a side connection. Runs
 * use the real "now" (the other suites' rows are never 7 days past their
 * time), but for the run without grace, which runs a year back. The
 * rollup's mark is set ten minutes ahead while it runs (every row here
 * counted, so that the purge may take them; put back at the end).
 */
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "expire.h"
#include "expire_fixture.h"
#include "repo.h"
#include "repo_expire.h"

#define S(x)	(1u << EXPIRE_STEP_##x)
#define PLAN_ROWS	2000	/* old terminal rows for the plans */

static struct config	 cfg;
static struct db	*db;
static struct xdb	*xdb;
static MYSQL		*side;
static char		 env[24], svc[] = "svc", tenant[40], other[40];

static void
setup(void)
{
	char	 err[512];

	if (getenv("ASYNCEXEC_TEST_CONFIG") == NULL || config_load(&cfg,
	    getenv("ASYNCEXEC_TEST_CONFIG"), err, sizeof(err)) == -1) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG: run scripts/test.sh\n");
		exit(1);
	}
	snprintf(env, sizeof(env), "prg%ld%d", (long)getpid(), rand() % 1000);
	snprintf(tenant, sizeof(tenant), "t-%s", env);
	snprintf(other, sizeof(other), "o-%s", env);
	if ((db = repo_open(&cfg, 0)) == NULL || repo_ping(db) != REPO_OK ||
	    (xdb = repo_expire_open(&cfg)) == NULL) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
	side = side_open(&cfg, NULL);
}

#define sql(...)	side_sqlf(side, __VA_ARGS__)
#define sql_num(...)	side_numf(side, __VA_ARGS__)

/* A waiting execution cid of tenant t that expires at expires_at. */
static uint64_t
add(const char *t, const char *cid, int64_t expires_at)
{
	uint64_t	 id = insert_waiting(db, env, svc, "op", t, cid,
			    expires_at);

	CHECK(id != 0);
	return id;
}

/* Ends execution id with status st; mark: its notify. */
static void
end(uint64_t id, const char *st, int mark)
{
	sql("UPDATE s2r_async_execution SET status = '%s', completed_at = "
	    "updated_at, notify = %d WHERE id = %llu", st, mark,
	    (unsigned long long)id);
}

/* Links execution b as the replay of a (as execution replay does). */
static void
link_replay(uint64_t a, uint64_t b)
{
	sql("UPDATE s2r_async_execution SET replaced_by = %llu WHERE id = "
	    "%llu", (unsigned long long)b, (unsigned long long)a);
	sql("UPDATE s2r_async_execution SET replay_of = %llu WHERE id = %llu",
	    (unsigned long long)a, (unsigned long long)b);
}

/* 1 when execution id exists. */
static int
alive(uint64_t id)
{
	return sql_num("SELECT COUNT(*) FROM s2r_async_execution WHERE id = "
	    "%llu", (unsigned long long)id) == 1;
}

/* An endpoint of tenant t, enabled or not (no sender runs beside). */
static void
endpoint(const char *t, int enabled)
{
	sql("INSERT INTO s2r_webhook_endpoint (tenant_id, url, events, "
	    "enabled, secret_sealed, created_at, updated_at) VALUES ('%s', "
	    "'https://purge.invalid/', 'completed,failed,expired,cancelled', "
	    "%d, 'x', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))", t, enabled);
}

/* Deletes this run's executions and endpoints. */
static void
wipe(void)
{
	wipe_env(&cfg, env);
	sql("DELETE FROM s2r_webhook_endpoint WHERE tenant_id IN ('%s', "
	    "'%s')", tenant, other);
}

/* Options for a run at now over steps, grace 7 days, batches of 1000. */
static struct expire_opts
opts(int64_t now, unsigned steps)
{
	struct expire_opts o;

	expire_opts_init(&o, &cfg);
	o.now = now;
	o.steps = steps;
	o.purge_grace_days = 7;
	o.max_runtime_ms = 60000;
	return o;
}

/* Runs o; fails the check unless it completes. Its purge count. */
static uint64_t
purged(struct expire_opts o)
{
	struct expire_result r;

	CHECK(expire_run(xdb, &o, &r) == 0);
	CHECK(r.complete && !r.skipped && !r.failed);
	return r.count[EXPIRE_STEP_PURGE];
}

/* a -> b -> c: kept while c lives; then c, b, a, one a run. */
static void
replay_chain(void)
{
	int64_t		 now = clock_now_ms(), cut = now - 7 * DAY;
	uint64_t	 a = add(tenant, "ch-a", cut - 2 * DAY);
	uint64_t	 b = add(tenant, "ch-b", cut - DAY);
	uint64_t	 c = add(tenant, "ch-c", now + DAY);
	uint64_t	 solo = add(tenant, "ch-solo", cut - DAY);
	struct expire_opts o = opts(now, S(PURGE));

	end(a, "expired", 0);
	end(b, "failed", 0);
	end(solo, "failed", 0);
	link_replay(a, b);
	link_replay(b, c);
	CHECK_EQ_INT(purged(o), 1);		/* solo */
	CHECK(alive(a) && alive(b) && alive(c) && !alive(solo));
	/* c ends and passes its time: the tail goes first */
	end(c, "completed", 0);
	sql("UPDATE s2r_async_execution SET expires_at = expires_at - "
	    "INTERVAL 20 DAY WHERE id = %llu", (unsigned long long)c);
	CHECK_EQ_INT(purged(o), 1);
	CHECK(alive(a) && alive(b) && !alive(c));
	CHECK_EQ_INT(purged(o), 1);
	CHECK(alive(a) && !alive(b));
	CHECK_EQ_INT(purged(o), 1);
	CHECK(!alive(a));
	wipe();
}

/* Marked rows wait for the sender; batches go past them. */
static void
marked_rows(void)
{
	int64_t		 now = clock_now_ms(), cut = now - 7 * DAY;
	struct expire_opts o = opts(now, S(PURGE));
	uint64_t	 held[5], gone[3], stray;
	char		 cid[16];
	int		 i;

	endpoint(tenant, 0);
	for (i = 0; i < 5; i++) {
		snprintf(cid, sizeof(cid), "mk-h%d", i);
		held[i] = add(tenant, cid, cut - DAY - 10 + i);
		end(held[i], "completed", 1);
	}
	for (i = 0; i < 3; i++) {
		snprintf(cid, sizeof(cid), "mk-g%d", i);
		gone[i] = add(tenant, cid, cut - DAY + i);
		end(gone[i], "completed", 0);
	}
	stray = add(other, "mk-o", cut - DAY);
	end(stray, "cancelled", 1);
	o.batch_size = 2;
	CHECK_EQ_INT(purged(o), 4);
	for (i = 0; i < 5; i++)
		CHECK(alive(held[i]));
	for (i = 0; i < 3; i++)
		CHECK(!alive(gone[i]));
	CHECK(!alive(stray));		/* no endpoint: nothing delivers it */
	/* the sender cleared the marks: now they go */
	sql("UPDATE s2r_async_execution SET notify = 0 WHERE environment = "
	    "'%s'", env);
	CHECK_EQ_INT(purged(o), 5);
	for (i = 0; i < 5; i++)
		CHECK(!alive(held[i]));
	wipe();
}

/*
 * purge_grace_days 0: the run that expires and marks a row keeps it. The
 * run's "now" is a year back, so that with no grace it touches no row of
 * the suites beside this one (theirs expire within seconds).
 */
static void
grace_zero(void)
{
	int64_t		 now = clock_now_ms() - 365 * DAY;
	struct expire_opts o = opts(now, S(EXPIRE) | S(PURGE));
	struct expire_result d;
	uint64_t	 w;

	endpoint(tenant, 1);
	w = add(tenant, "g0", now - MIN);
	o.purge_grace_days = 0;
	o.dry_run = 1;
	CHECK(expire_run(xdb, &o, &d) == 0 && d.complete);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_EXPIRE], 1);
	CHECK_EQ_INT(d.count[EXPIRE_STEP_PURGE], 0);
	o.dry_run = 0;
	CHECK_EQ_INT(purged(o), 0);
	CHECK(alive(w));
	CHECK_EQ_INT(sql_num("SELECT notify FROM s2r_async_execution WHERE "
	    "id = %llu AND status = 'expired'", (unsigned long long)w), 1);
	sql("UPDATE s2r_async_execution SET notify = 0 WHERE id = %llu",
	    (unsigned long long)w);
	CHECK_EQ_INT(purged(o), 1);
	CHECK(!alive(w));
	wipe();
}

/*
 * EXPLAIN of statement name with its ?s replaced by vals in order:
 * e is read as etype on ekey, the replacement r by primary key, no
 * other table but the id list (j) is scanned, nothing is sorted.
 */
static void
check_plan(const char *name, const char *const *vals, const char *etype,
    const char *ekey)
{
	const char	*sqlt = repo_expire_sql(name), *p;
	char		 q[4096];
	size_t		 n = (size_t)snprintf(q, sizeof(q), "EXPLAIN ");
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	int		 e = 0, r = 0;

	CHECK(sqlt != NULL);
	for (p = sqlt; p != NULL && *p != '\0' && n + 64 < sizeof(q); p++) {
		if (*p == '?')
			n += (size_t)snprintf(q + n, sizeof(q) - n, "%s",
			    *vals++);
		else
			q[n++] = *p;
	}
	q[n] = '\0';
	CHECK(p != NULL && *p == '\0');
	side_sql(side, q);
	CHECK((res = mysql_store_result(side)) != NULL);
	/* id select_type table type possible_keys key key_len ref rows Extra */
	while (res != NULL && (w = mysql_fetch_row(res)) != NULL) {
		const char *tb = w[2] ? w[2] : "", *ty = w[3] ? w[3] : "";
		const char *k = w[5] ? w[5] : "", *x = w[9] ? w[9] : "";

		printf("%s plan: %s %s, type %s, key %s, extra %s\n", name,
		    w[1] ? w[1] : "", tb, ty, k, x);
		CHECK(strcmp(ty, "ALL") != 0 || strcmp(tb, "j") == 0);
		CHECK(strstr(x, "filesort") == NULL);
		CHECK(strstr(x, "temporary") == NULL);
		if (strcmp(tb, "e") == 0) {
			e++;
			CHECK_EQ_STR(ty, etype);
			CHECK_EQ_STR(k, ekey);
		}
		if (strcmp(tb, "r") == 0) {
			r++;
			CHECK_EQ_STR(ty, "eq_ref");
			CHECK_EQ_STR(k, "PRIMARY");
		}
	}
	mysql_free_result(res);
	CHECK(e == 1 && r == 1);
}

/* The plans of the purge's statements (see check_plan). */
static void
plans(void)
{
	static const char *const due[] = { "'completed'",
	    "UTC_TIMESTAMP(3) - INTERVAL 7 DAY", "UTC_TIMESTAMP(3)",
	    "'2000-01-01'", "'2000-01-01'", "0", "1000" };
	static const char *const apply[] = { "'[1,2,3]'",
	    "UTC_TIMESTAMP(3)", "UTC_TIMESTAMP(3)" };
	static const char *const count[] = {
	    "UTC_TIMESTAMP(3) - INTERVAL 7 DAY", "UTC_TIMESTAMP(3)", "1" };
	static const int sizes[] = { 0, 3, 12, 200 };
	int		 n, k;

	/* most of a status past the cutoff: then a filter on the rows made
	 * the optimizer read ix_exec_expiry as ref (status) */
	sql("INSERT INTO s2r_async_execution (correlation_id, environment, "
	    "service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, created_at, updated_at, "
	    "expires_at) SELECT CONCAT('pl-', seq), '%s', '%s', 'op', "
	    "'completed', '{}', REPEAT('x', 32), '%s', UTC_TIMESTAMP(3), "
	    "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) - INTERVAL 30 DAY + INTERVAL "
	    "seq SECOND FROM seq_1_to_%d", env, svc, tenant, PLAN_ROWS);
	mysql_free_result(mysql_store_result(side));
	sql("ANALYZE TABLE s2r_async_execution");
	mysql_free_result(mysql_store_result(side));
	/* with as many endpoints of another tenant as the notify suites
	 * running beside leave, and more: MariaDB 11.8 once read the
	 * enabled ones with a table scan */
	for (n = 0, k = 0; k < 4; k++) {
		for (; n < sizes[k]; n++)
			endpoint(other, n % 3 != 0);
		sql("ANALYZE TABLE s2r_webhook_endpoint");
		mysql_free_result(mysql_store_result(side));
		check_plan("purge_due", due, "range", "ix_exec_expiry");
		check_plan("purge_apply", apply, "eq_ref", "PRIMARY");
		check_plan("count_purge", count, "range", "ix_exec_expiry");
	}
	wipe();
}

int
main(void)
{
	long long	 m0;

	mysql_library_init(0, NULL, NULL);
	srand((unsigned)getpid());
	setup();
	m0 = mark_set(&cfg, clock_now_ms() + 10 * MIN);
	replay_chain();
	marked_rows();
	grace_zero();
	plans();
	mark_set(&cfg, m0);
	mysql_close(side);
	repo_expire_close(xdb);
	repo_close(db);
	mysql_library_end();
	return check_done("db_expire_purge");
}
