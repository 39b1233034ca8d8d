/*
 * test_http_revoke.c - revoked initiators (contract v3, sql/012) through nginx.
 *
 * asyncexec-admin key revoke of a lineage's last live key, while 4 threads claim: no
 * claim sent after the command returned hands out one of the lineage's executions; the
 * unclaimed ones are failed by the revoke itself (initiator_revoked); those claimed before
 * keep their claim and complete; submits with the just-revoked key inside the cache TTL
 * may be accepted, are never handed out, and one asyncexec-expire run fails them; a claim
 * whose lease lapsed is failed by that run and its late callback gets 409 (currentStatus
 * failed); execution show prints the code. During a rotation's grace nothing fails, also
 * with the successor revoked; when the grace ends (revoked_at moved into the past in the
 * database) claim hands out nothing and one expiry run fails the rest; poll shows the
 * error. The expiry's and the revoke's statements read indexes (EXPLAIN).
 *
 * The database (fixtures, EXPLAIN) and the expiry binary: ASYNCEXEC_EXPIRE.
 */
#include "util/proc.h"
#include "check.h"
#include "config.h"
#include "fixture.h"
#include "sidedb.h"

#include <mysql.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N		120
#define WINDOW		5
#define THREADS		4
#define CLAIMED_MAX	N

static struct config cfg;
static MYSQL *m;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int revoked, stop, violations, nclaimed;
static struct claim claimed[CLAIMED_MAX];
static struct fx F;

/* One integer of query FMT (0 when NULL). */
static long long
q_int(const char *fmt, ...)
{
	char q[2048];
	va_list ap;
	MYSQL_RES *res;
	MYSQL_ROW row;
	long long v = -1;

	va_start(ap, fmt);
	vsnprintf(q, sizeof q, fmt, ap);
	va_end(ap);
	sidedb_exec(m, q);
	if ((res = mysql_store_result(m)) != NULL && (row = mysql_fetch_row(res)) != NULL)
		v = row[0] != NULL ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return v;
}

/* Runs statement FMT on the side connection. */
static void
q_exec(const char *fmt, ...)
{
	char q[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof q, fmt, ap);
	va_end(ap);
	sidedb_exec(m, q);
}

/* The id of key KEY. */
static long long
key_id(const char *key)
{
	return q_int("SELECT id FROM s2r_api_key WHERE key_hash = UNHEX(SHA2('%s', 256))",
	    key);
}

/* How many executions of F's route G have status ST (and, with CODE, that error code). */
static long long
count_of(const struct fx *g, const char *st, const char *code)
{
	return q_int("SELECT COUNT(*) FROM s2r_async_execution WHERE environment = '%s' AND "
	    "service_key = '%s' AND operation_key = '%s' AND status = '%s'%s%s%s", g->env,
	    g->svc, g->op, st, code ? " AND JSON_VALUE(error_payload, '$.code') = '" : "",
	    code ? code : "", code ? "'" : "");
}

/* One asyncexec-expire run; its exit status; *revoked_n the summary's revoked=. */
static int
expire_once(long *revoked_n)
{
	char cmd[1024], out[1024];
	const char *p;
	int rc;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s'", test_env("ASYNCEXEC_EXPIRE"),
	    test_env("ASYNCEXEC_TEST_CONFIG"));
	rc = ut_run(cmd, out, sizeof out);
	p = strstr(out, " revoked=");
	*revoked_n = p ? strtol(p + 9, NULL, 10) : -1;
	if (strstr(out, " revoked_ms=") == NULL)
		*revoked_n = -1;
	return rc;
}

/* All of asyncexec-admin's standard output for ARGS into out; its exit status. */
static int
admin_out(char *out, size_t sz, const char *args)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s", test_env("ASYNCEXEC_ADMIN"),
	    test_env("ASYNCEXEC_TEST_CONFIG"), args);
	return ut_run(cmd, out, sz);
}

/* A claimer: claims one at a time until stop; any claim sent after the revoke returned
 * that hands out something is a violation; what came before is kept in claimed[]. */
static void *
claimer(void *arg)
{
	struct http_resp r;
	struct json_object *o;
	struct claim c;
	int after, done = 0;
	size_t i;

	(void)arg;
	while (!done) {
		pthread_mutex_lock(&mu);
		after = revoked;
		done = stop;
		pthread_mutex_unlock(&mu);
		/* paced (5 ms a claim), so that a revoke lands among the claims */
		nanosleep(&(struct timespec){ 0, 5000000L }, NULL);
		if (fx_claim(&F, F.bkey, "{\"max\":1,\"leaseSeconds\":600}", &r) == 200 &&
		    (o = json_body(&r)) != NULL) {
			for (i = 0; i < (size_t)jlen(o, "executions"); i++) {
				if (!fx_claim_item(o, i, &c))
					continue;
				pthread_mutex_lock(&mu);
				if (after) {
					violations++;
					fprintf(stderr, "  handed out after the revoke: %lld\n",
					    (long long)c.id);
				} else if (nclaimed < CLAIMED_MAX)
					claimed[nclaimed++] = c;
				pthread_mutex_unlock(&mu);
			}
			json_object_put(o);
		}
		http_resp_free(&r);
		nanosleep(&(struct timespec){ 0, 15 * 1000000L }, NULL);
	}
	return NULL;
}

static void
set_flag(int *flag)
{
	pthread_mutex_lock(&mu);
	*flag = 1;
	pthread_mutex_unlock(&mu);
}

/* The status of execution ID. */
static const char *
status_by_id(long long id, char *buf, size_t len)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	char q[256];

	snprintf(q, sizeof q, "SELECT status FROM s2r_async_execution WHERE id = %lld", id);
	sidedb_exec(m, q);
	buf[0] = '\0';
	if ((res = mysql_store_result(m)) != NULL && (row = mysql_fetch_row(res)) != NULL)
		snprintf(buf, len, "%s", row[0]);
	mysql_free_result(res);
	return buf;
}

static void
test_revoke_while_claiming(void)
{
	struct sub s[N], w[WINDOW];
	int win_ok[WINDOW] = { 0 }, nwin = 0, i, k;
	pthread_t th[THREADS];
	struct http_resp r;
	char buf[4096], args[256], st[32];
	long ttl = config_long("cache_ttl_seconds", 5), rv = -1;
	long long lineage, before_fail, lapsed_id;
	struct timespec pause = { 0, 300 * 1000000L };

	fx_setup(&F, "rvk");
	for (i = 0; i < N; i++)
		CHECK(fx_submit_ok(&F, NULL, "{\"n\":1}", &s[i]));
	lineage = key_id(F.ckey);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, claimer, NULL);
	/* revoke once a quarter is claimed (bounded), not after a fixed pause: on
	 * a fast machine the claimers took all N before a 300 ms pause ended */
	for (k = 0; k < 30000; k++) {
		struct timespec ms = { 0, 1000000L };
		int got;

		pthread_mutex_lock(&mu);
		got = nclaimed;
		pthread_mutex_unlock(&mu);
		if (got >= N / 4)
			break;
		nanosleep(&ms, NULL);
	}
	free(admin("key revoke %s", F.ckey));
	set_flag(&revoked);
	/* inside the cache TTL the revoked key may still be accepted on some worker */
	for (i = 0; i < WINDOW; i++) {
		fx_submit(&F, F.ckey, NULL, "{\"late\":1}", &r);
		if (r.status == 202) {
			struct json_object *o = json_body(&r);
			const char *cid = o ? jstr(o, "correlationId") : NULL;

			snprintf(w[nwin].cid, sizeof w[nwin].cid, "%s", cid ? cid : "");
			win_ok[nwin++] = 1;
			json_object_put(o);
		} else
			CHECK(expect_unauthorized(&r));
		http_resp_free(&r);
	}
	/* the claimers go on past the TTL */
	for (k = 0; k < (int)(ttl * 1000 / 300) + 3; k++)
		nanosleep(&pause, NULL);
	set_flag(&stop);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ_INT(violations, 0);
	fprintf(stderr, "  %d claimed before the revoke, %d submitted in the TTL window\n",
	    nclaimed, nwin);
	CHECK(nclaimed > 0 && nclaimed < N);
	/* the revoke failed every unclaimed one, in its transaction */
	before_fail = count_of(&F, "failed", "initiator_revoked");
	CHECK_EQ_INT(before_fail, N - nclaimed);
	CHECK(q_int("SELECT COUNT(*) FROM s2r_async_execution WHERE initiator_lineage_id = %lld "
	    "AND status = 'waiting_callback' AND callback_token_hash IS NULL", lineage) == nwin);
	CHECK(q_int("SELECT COUNT(*) FROM s2r_async_execution WHERE initiator_lineage_id = %lld "
	    "AND status = 'failed' AND (notify IS NULL OR completed_at IS NULL)", lineage) == 0);
	/* claimed before: the claim holds, the callback wins */
	CHECK_EQ_INT(fx_complete(&F, &claimed[0], "{\"ok\":true}"), 200);
	CHECK_EQ_STR(status_by_id(claimed[0].id, st, sizeof st), "completed");
	for (i = 2; i < nclaimed; i++)
		CHECK_EQ_STR(status_by_id(claimed[i].id, st, sizeof st), "waiting_callback");
	/* a claim that lapses afterwards: failed by the expiry step, its callback 409 */
	lapsed_id = nclaimed > 1 ? claimed[1].id : 0;
	q_exec("UPDATE s2r_async_execution SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 "
	    "SECOND WHERE id = %lld", lapsed_id);
	/* nothing handed out now either (claim asks the database, not a cache) */
	CHECK_EQ_INT(fx_claim(&F, F.bkey, "{\"max\":100}", &r), 200);
	CHECK(body_contains(&r, "\"executions\":[]"));
	http_resp_free(&r);
	CHECK_EQ_INT(expire_once(&rv), 0);
	CHECK(rv >= nwin + 1);
	CHECK_EQ_STR(status_by_id(lapsed_id, st, sizeof st), "failed");
	CHECK(q_int("SELECT COUNT(*) FROM s2r_async_execution WHERE initiator_lineage_id = %lld "
	    "AND status = 'waiting_callback' AND (callback_token_hash IS NULL OR "
	    "lease_expires_at <= UTC_TIMESTAMP(3))", lineage) == 0);
	for (i = 0; i < nwin; i++)
		CHECK(win_ok[i] && q_int("SELECT COUNT(*) FROM s2r_async_execution WHERE "
		    "correlation_id = '%s' AND initiator_lineage_id = %lld AND status = 'failed' "
		    "AND JSON_VALUE(error_payload, '$.code') = 'initiator_revoked'", w[i].cid,
		    lineage) == 1);
	CHECK_EQ_INT(fx_callback(F.bkey, claimed[1].id, "complete", claimed[1].token,
	    "{\"result\":1}", &r), 409);
	CHECK(expect_conflict(&r, "failed"));
	http_resp_free(&r);
	/* the claims still held keep going: heartbeat and complete */
	if (nclaimed > 2) {
		CHECK_EQ_INT(fx_callback(F.bkey, claimed[2].id, "heartbeat", claimed[2].token,
		    "{\"leaseSeconds\":60}", &r), 200);
		http_resp_free(&r);
		CHECK_EQ_INT(fx_complete(&F, &claimed[2], "{\"late\":true}"), 200);
	}
	/* the operator sees the code */
	snprintf(args, sizeof args, "execution show %lld", lapsed_id);
	CHECK_EQ_INT(admin_out(buf, sizeof buf, args), 0);
	CHECK(strstr(buf, "status\tfailed\n") != NULL);
	CHECK(strstr(buf, "error_code\tinitiator_revoked\n") != NULL);
	snprintf(args, sizeof args, "--json execution show %lld", (long long)claimed[0].id);
	CHECK_EQ_INT(admin_out(buf, sizeof buf, args), 0);
	CHECK(strstr(buf, "\"error_code\": null") != NULL ||
	    strstr(buf, "\"error_code\":null") != NULL);
	/* a second run finds nothing more of the lineage */
	before_fail = count_of(&F, "failed", "initiator_revoked");
	CHECK_EQ_INT(expire_once(&rv), 0);
	CHECK(count_of(&F, "failed", "initiator_revoked") == before_fail);
	/* the revoke is idempotent; a backend key still revokes as before */
	CHECK_EQ_INT(admin_out(buf, sizeof buf, "key revoke 999999999"), 1);
	fx_free(&F);
}

static void
test_rotation_grace(void)
{
	struct fx g, b;
	struct sub s[6], s2;
	struct claim c;
	struct http_resp r;
	struct json_object *o;
	char *k2;
	long rv = -1;
	long long a_id, b_id;
	int i;

	fx_setup(&g, "rvg");
	for (i = 0; i < 5; i++)
		CHECK(fx_submit_ok(&g, NULL, "{\"g\":1}", &s[i]));
	k2 = admin("key rotate %s --grace-hours 24", g.ckey);
	CHECK(k2 != NULL);
	b = g;
	b.ckey = k2;
	CHECK(fx_submit_ok(&b, NULL, "{\"g\":2}", &s[5]));
	a_id = key_id(g.ckey);
	b_id = key_id(k2);
	/* the successor revoked while the old key is in its grace: nothing fails */
	free(admin("key revoke %s", k2));
	CHECK(count_of(&g, "failed", NULL) == 0);
	CHECK(count_of(&g, "waiting_callback", NULL) == 6);
	CHECK_EQ_INT(expire_once(&rv), 0);
	CHECK(count_of(&g, "failed", NULL) == 0);
	/* and claim still hands its work out */
	CHECK(fx_claim_one(&g, &c));
	CHECK_EQ_INT(fx_complete(&g, &c, "1"), 200);
	CHECK(fx_submit_ok(&g, NULL, "{\"g\":3}", &s2));
	/* the grace ends: nothing is handed out, one expiry run fails the rest */
	q_exec("UPDATE s2r_api_key SET revoked_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND "
	    "WHERE id = %lld", a_id);
	CHECK_EQ_INT(fx_claim(&g, g.bkey, "{\"max\":100}", &r), 200);
	CHECK(body_contains(&r, "\"executions\":[]"));
	http_resp_free(&r);
	CHECK(count_of(&g, "waiting_callback", NULL) == 6);
	CHECK_EQ_INT(expire_once(&rv), 0);
	CHECK(rv >= 6);
	CHECK(count_of(&g, "waiting_callback", NULL) == 0);
	CHECK(count_of(&g, "failed", "initiator_revoked") == 6);
	CHECK(count_of(&g, "completed", NULL) == 1);
	/* poll shows it: no key of the lineage is live, so one is made live again by hand
	 * (what a consumer polling within the cache TTL, or a webhook, sees) */
	q_exec("UPDATE s2r_api_key SET revoked_at = NULL WHERE id = %lld", b_id);
	CHECK_EQ_INT(fx_poll(&b, k2, s2.cid, s2.token, NULL, &r), 200);
	CHECK((o = json_body(&r)) != NULL);
	CHECK_EQ_STR(jstr(o, "status"), "failed");
	CHECK_EQ_STR(jstr(o, "error.code"), "initiator_revoked");
	CHECK(jstr(o, "error.message") != NULL && strstr(jstr(o, "error.message"),
	    "revoked") != NULL);
	json_object_put(o);
	http_resp_free(&r);
	free(k2);
	fx_free(&g);
}

/* One EXPLAIN row per table: each execution access reads ix_exec_lineage, never ALL
 * (a scan of the small keys table is allowed). */
static void
explain(const char *what, const char *sql, const char *key_table_index)
{
	char q[4096];
	MYSQL_RES *res;
	MYSQL_ROW row;
	int rows = 0, lineage = 0, bad = 0, keys_ok = key_table_index == NULL;

	snprintf(q, sizeof q, "EXPLAIN %s", sql);
	sidedb_exec(m, q);
	res = mysql_store_result(m);
	while (res != NULL && (row = mysql_fetch_row(res)) != NULL) {
		/* id select_type table type possible_keys key key_len ref rows Extra */
		rows++;
		fprintf(stderr, "  %s: %s %s %s %s %s\n", what, row[2] ? row[2] : "-",
		    row[3] ? row[3] : "-", row[5] ? row[5] : "-", row[8] ? row[8] : "-",
		    row[9] ? row[9] : "");
		/* the executions table is never scanned; the keys table (one
		 * row per key, a lineage's few) may be, where the optimizer
		 * finds a scan of it cheaper (61 keys in the full suite) */
		if (row[3] != NULL && strcmp(row[3], "ALL") == 0 && row[2] != NULL &&
		    (strcmp(row[2], "x") == 0 || strcmp(row[2], "e") == 0 ||
		    strcmp(row[2], "s2r_async_execution") == 0))
			bad++;
		if (row[5] != NULL && strcmp(row[5], "ix_exec_lineage") == 0)
			lineage++;
		if (key_table_index && row[5] != NULL && strcmp(row[5], key_table_index) == 0)
			keys_ok = 1;
	}
	mysql_free_result(res);
	CHECK(rows > 0);
	CHECK_EQ_INT(bad, 0);
	CHECK(lineage > 0);
	CHECK(keys_ok);
}

/* The statements of repo_expire.c's revoked step and of repo_revoke.c, as they are. */
static void
test_explain(void)
{
	explain("revoked_lineage", "SELECT COALESCE(MIN(k.id), 0) FROM s2r_api_key k FORCE "
	    "INDEX (ix_key_revoked) WHERE k.revoked_at <= UTC_TIMESTAMP(3) AND k.id > 0 AND "
	    "k.kind = 'consumer' AND (k.lineage_id IS NULL OR k.lineage_id = k.id) AND NOT "
	    "(EXISTS (SELECT 1 FROM s2r_api_key lk FORCE INDEX (ix_key_lineage) WHERE "
	    "lk.lineage_id = k.id AND (lk.revoked_at IS NULL OR lk.revoked_at > "
	    "UTC_TIMESTAMP(3))) OR EXISTS (SELECT 1 FROM s2r_api_key lk0 FORCE INDEX (PRIMARY) "
	    "WHERE lk0.id = k.id "
	    "AND lk0.lineage_id IS NULL AND (lk0.revoked_at IS NULL OR lk0.revoked_at > "
	    "UTC_TIMESTAMP(3)))) AND EXISTS "
	    "(SELECT 1 FROM s2r_async_execution x FORCE INDEX (ix_exec_lineage) WHERE "
	    "x.initiator_lineage_id = k.id AND x.status = 'waiting_callback')", "ix_key_revoked");
	explain("revoked_due", "SELECT id, initiator_lineage_id FROM s2r_async_execution FORCE "
	    "INDEX (ix_exec_lineage) WHERE initiator_lineage_id = 1 AND status = "
	    "'waiting_callback' AND id > 0 AND cancel_requested = 0 AND (callback_token_hash IS "
	    "NULL OR lease_expires_at <= UTC_TIMESTAMP(3)) ORDER BY id LIMIT 1000", NULL);
	explain("revoke_waiting", "SELECT id FROM s2r_async_execution FORCE INDEX "
	    "(ix_exec_lineage) WHERE initiator_lineage_id = 1 AND status = 'waiting_callback' "
	    "AND id > 0 AND cancel_requested = 0 AND (callback_token_hash IS NULL OR "
	    "lease_expires_at <= UTC_TIMESTAMP(3)) ORDER BY id LIMIT 1000", NULL);
}

int
main(void)
{
	http_test_init();
	sidedb_init(&cfg);
	m = sidedb_open(&cfg);
	test_explain();
	test_revoke_while_claiming();
	test_rotation_grace();
	mysql_close(m);
	return check_done("http_revoke");
}
