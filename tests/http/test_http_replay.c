/*
 * test_http_replay.c - asyncexec-admin execution replay (contract v3), end to end: a
 * failed, expired or cancelled execution replayed as a new waiting_callback one (by id
 * and by --tenant ROUTE CORRELATION_ID) that a backend claims and completes; completed
 * and waiting refused (exit 1); the original's row unchanged byte for byte but for
 * replaced_by (request and error payloads included, read in SQL); poll of both with the
 * original's poll token (replacedBy / replayOf), a chain of two replays, cancel of a
 * replay with the original token, another token's 404; an identical resubmit's
 * fresh token (the earlier one 404) on the replay; 8 racing replays of one
 * execution create exactly one; the tenant's quota (tenant set --max-open); the bulk
 * form with --since and --dry-run (counts, --json), and its --json document when a
 * database error stops it partway (a trigger); executions failed
 * initiator_revoked (no live key in their lineage) refused by id (exit 1),
 * counted and left by the bulk form, which replays one of a live key beside
 * them; usage errors (exit 2).
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"
#include "sidedb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX	16384

static struct fx F;
static MYSQL *M;
static char out[OUT_MAX];

/* asyncexec-admin ARGS (stdout and stderr into out); its exit status. */
#define adm(...)	httpc_admin(test_env("ASYNCEXEC_TEST_CONFIG"), out, sizeof out, \
			    __VA_ARGS__)

/* The first column of the first row of query Q as a string ("" when none; static). */
static const char *
sql1(const char *fmt, ...) HTTPC_PRINTF(1, 2);
static const char *
sql1(const char *fmt, ...)
{
	static char v[8192];
	char q[4096];
	MYSQL_RES *res;
	MYSQL_ROW row;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof q, fmt, ap);
	va_end(ap);
	sidedb_exec(M, q);
	v[0] = '\0';
	if ((res = mysql_store_result(M)) != NULL) {
		if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
			snprintf(v, sizeof v, "%s", row[0]);
		mysql_free_result(res);
	}
	return v;
}

/* The id of f's execution CID. */
static long long
exec_id(const struct fx *f, const char *cid)
{
	return atoll(sql1("SELECT id FROM s2r_async_execution WHERE initiator_tenant_id = '%s' "
	    "AND correlation_id = '%s'", f->tenant, cid));
}

/* A digest of every column of execution ID but replaced_by (static). */
static const char *
row_digest(long long id)
{
	static char d[80];

	snprintf(d, sizeof d, "%s", sql1("SELECT SHA2(CONCAT_WS('|', id, correlation_id, "
	    "environment, service_key, operation_key, status, HEX(request_payload), "
	    "HEX(request_sha256), HEX(IFNULL(result_payload, '-')), "
	    "HEX(IFNULL(error_payload, '-')), IFNULL(initiator_tenant_id, '-'), "
	    "HEX(IFNULL(initiator_key_hash, '-')), HEX(IFNULL(poll_token_hash, '-')), "
	    "HEX(IFNULL(callback_token_hash, '-')), attempts, IFNULL(lease_expires_at, '-'), "
	    "cancel_requested, created_at, updated_at, IFNULL(completed_at, '-'), expires_at, "
	    "HEX(IFNULL(initiator_lineage, '-')), HEX(IFNULL(progress_payload, '-')), "
	    "IFNULL(not_before, '-'), HEX(IFNULL(last_error, '-')), priority, due_at, "
	    "IFNULL(replay_of, '-'), IFNULL(initiator_lineage_id, '-'), notify), 256) "
	    "FROM s2r_async_execution WHERE id = %lld", id));
	return d;
}

/* Parses "replayed as execution N (correlation id C)" of out; 1 when found. */
static int
parse_replay(long long *nid, char *cid, size_t n)
{
	const char *p = strstr(out, " as execution ");
	char c[200];

	if (p == NULL || sscanf(p, " as execution %lld (correlation id %199[^)])", nid, c) != 2)
		return 0;
	snprintf(cid, n, "%s", c);
	return 1;
}

/* Polls CID with TOKEN (f's key): the status, the body in *o (caller puts it). */
static int
poll_json(const struct fx *f, const char *cid, const char *token, struct json_object **o)
{
	struct http_resp r;
	int st = fx_poll(f, f->ckey, cid, token, NULL, &r);

	*o = st == 200 ? json_body(&r) : NULL;
	http_resp_free(&r);
	return st;
}

/* The "now + S seconds" as RFC 3339 into buf. */
static void
rfc_time(char *buf, size_t n, long s)
{
	time_t t = time(NULL) + s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * A failed execution replayed: the copy (SQL), the original unchanged, both polls,
 * claim and complete of the replay, the refusals of completed and waiting, a second
 * replay of the original reporting the first.
 */
static void
test_failed(void)
{
	const char *fail = "{\"error\":{\"message\":\"boom\",\"code\":7}}";
	struct sub s, w;
	struct claim c, c2;
	struct http_resp r;
	struct json_object *o;
	char before[80], ncid[200], pcid[200];
	long long id, nid = 0, nid2 = 0;

	CHECK(fx_submit_claim(&F, "{\"q\":\"f\",\"x\":[1,2,3]}", &s, &c));
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "fail", c.token, fail, &r), 200);
	http_resp_free(&r);
	id = exec_id(&F, s.cid);
	CHECK(id == c.id);
	snprintf(before, sizeof before, "%s", row_digest(id));
	CHECK_EQ_INT(adm("execution replay %lld", id), 0);
	CHECK(parse_replay(&nid, ncid, sizeof ncid));
	fprintf(stderr, "  %s", out);
	CHECK_EQ_STR(row_digest(id), before);
	CHECK(atoll(sql1("SELECT replaced_by FROM s2r_async_execution WHERE id = %lld", id)) ==
	    nid);
	/* the copy: same route, tenant, lineage, bytes, token hash; new id, cid, times */
	CHECK_EQ_STR(sql1("SELECT n.status = 'waiting_callback' AND n.replay_of = o.id AND "
	    "n.replaced_by IS NULL AND n.environment = o.environment AND n.service_key = "
	    "o.service_key AND n.operation_key = o.operation_key AND n.initiator_tenant_id = "
	    "o.initiator_tenant_id AND n.initiator_key_hash = o.initiator_key_hash AND "
	    "n.initiator_lineage = o.initiator_lineage AND n.initiator_lineage_id <=> "
	    "o.initiator_lineage_id AND n.request_payload = o.request_payload AND "
	    "n.request_sha256 = o.request_sha256 AND n.poll_token_hash = o.poll_token_hash AND "
	    "n.priority = o.priority AND n.attempts = 0 AND n.callback_token_hash IS NULL AND "
	    "n.result_payload IS NULL AND n.error_payload IS NULL AND n.completed_at IS NULL "
	    "AND n.created_at > o.created_at AND n.correlation_id <> o.correlation_id AND "
	    "n.expires_at > UTC_TIMESTAMP(3) + INTERVAL 6 DAY FROM s2r_async_execution n "
	    "JOIN s2r_async_execution o ON o.id = %lld WHERE n.id = %lld", id, nid), "1");
	CHECK_EQ_INT((int)strlen(ncid), 36);
	/* poll: the original shows replacedBy, its error unchanged; the replay replayOf */
	CHECK_EQ_INT(poll_json(&F, s.cid, s.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "failed");
	CHECK_EQ_STR(jstr(o, "replacedBy"), ncid);
	CHECK(jget(o, "replayOf") == NULL);
	CHECK_EQ_STR(jstr(o, "error.message"), "boom");
	json_object_put(o);
	CHECK_EQ_INT(poll_json(&F, ncid, s.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "waiting_callback");
	CHECK_EQ_STR(jstr(o, "correlationId"), ncid);
	CHECK_EQ_STR(jstr(o, "replayOf"), s.cid);
	CHECK(jget(o, "replacedBy") == NULL && jget(o, "error") == NULL);
	json_object_put(o);
	/* outsiders get the 404 of an unknown id, byte for byte, on the replay too */
	{
		struct outsiders os;
		struct http_resp u, x;

		fx_outsiders(&F, &os);
		fx_poll(&F, F.ckey, os.unknown_cid, s.token, NULL, &u);
		CHECK_EQ_INT(u.status, 404);
		fx_poll(&F, os.same_tenant_key, ncid, s.token, NULL, &x);
		CHECK(x.status == 404 && x.body_len == u.body_len &&
		    memcmp(x.body, u.body, u.body_len) == 0);
		http_resp_free(&x);
		fx_poll(&F, os.other_tenant_key, ncid, s.token, NULL, &x);
		CHECK(x.status == 404 && x.body_len == u.body_len &&
		    memcmp(x.body, u.body, u.body_len) == 0);
		http_resp_free(&x);
		http_resp_free(&u);
		fx_outsiders_free(&os);
	}
	/* another execution's token of the same key: 404 on the replay */
	CHECK(fx_submit_ok(&F, NULL, "{\"q\":\"other\"}", &w));
	CHECK_EQ_INT(fx_poll(&F, F.ckey, ncid, w.token, NULL, &r), 404);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, w.cid, w.token, &r), 200);
	http_resp_free(&r);
	/* the replay is claimable (with the original's request) and completable */
	CHECK(fx_claim_one(&F, &c2));
	CHECK_EQ_STR(c2.cid, ncid);
	CHECK(c2.id == nid);
	CHECK_EQ_INT(fx_complete(&F, &c2, "{\"ok\":true}"), 200);
	CHECK_EQ_INT(poll_json(&F, ncid, s.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	CHECK_EQ_STR(jstr(o, "replayOf"), s.cid);
	json_object_put(o);
	CHECK_EQ_STR(row_digest(id), before);
	/* completed and waiting: refused; the original again: its replay reported */
	CHECK_EQ_INT(adm("execution replay %lld", nid), 1);
	CHECK(strstr(out, "is completed") != NULL);
	CHECK(fx_submit_ok(&F, NULL, "{\"q\":\"w\"}", &w));
	CHECK_EQ_INT(adm("execution replay --tenant %s %s %s", F.tenant, F.route, w.cid), 1);
	CHECK(strstr(out, "is waiting_callback") != NULL);
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, w.cid, w.token, &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(adm("execution replay %lld", id), 0);
	CHECK(strstr(out, "already replayed") != NULL && parse_replay(&nid2, pcid, sizeof pcid));
	CHECK(nid2 == nid);
	CHECK_EQ_STR(pcid, ncid);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE replay_of = %lld",
	    id), "1");
	CHECK_EQ_INT(adm("--json execution replay %lld", id), 0);
	CHECK(strstr(out, "\"created\":false") != NULL);
	CHECK_EQ_INT(adm("execution replay 999999999999"), 1);
}

/*
 * Cancelled (by --tenant) and expired: replayed; a chain of two replays polled with the
 * original's token; a replay cancelled with the original's token.
 */
static void
test_cancelled_expired(void)
{
	struct sub s, e;
	struct http_resp r;
	struct json_object *o;
	char before[80], c1[200], c2[200], c3[200];
	long long id, n1 = 0, n2 = 0, n3 = 0;

	CHECK(fx_submit_ok(&F, NULL, "{\"q\":\"c\"}", &s));
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, s.cid, s.token, &r), 200);
	http_resp_free(&r);
	id = exec_id(&F, s.cid);
	snprintf(before, sizeof before, "%s", row_digest(id));
	CHECK_EQ_INT(adm("execution replay --tenant %s %s %s", F.tenant, F.route, s.cid), 0);
	CHECK(parse_replay(&n1, c1, sizeof c1));
	CHECK_EQ_STR(row_digest(id), before);
	/* the replay cancelled with the original's token, then replayed in turn */
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, c1, s.token, &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(adm("execution replay %lld", n1), 0);
	CHECK(parse_replay(&n2, c2, sizeof c2));
	CHECK_EQ_INT(poll_json(&F, c2, s.token, &o), 200);	/* two hops */
	CHECK_EQ_STR(jstr(o, "status"), "waiting_callback");
	CHECK_EQ_STR(jstr(o, "replayOf"), c1);
	json_object_put(o);
	CHECK_EQ_INT(poll_json(&F, c1, s.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "cancelled");
	CHECK_EQ_STR(jstr(o, "replayOf"), s.cid);
	CHECK_EQ_STR(jstr(o, "replacedBy"), c2);
	json_object_put(o);
	CHECK_EQ_INT(poll_json(&F, s.cid, s.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "replacedBy"), c1);
	json_object_put(o);
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, c2, s.token, &r), 200);
	http_resp_free(&r);
	/* expired (the status set in SQL, as asyncexec-expire sets it) */
	CHECK(fx_submit_ok(&F, NULL, "{\"q\":\"e\"}", &e));
	id = exec_id(&F, e.cid);
	sql1("UPDATE s2r_async_execution SET status = 'expired', completed_at = "
	    "UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3) WHERE id = %lld", id);
	snprintf(before, sizeof before, "%s", row_digest(id));
	CHECK_EQ_INT(adm("execution replay %lld", id), 0);
	CHECK(parse_replay(&n3, c3, sizeof c3));
	CHECK_EQ_STR(row_digest(id), before);
	CHECK_EQ_INT(poll_json(&F, c3, e.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "replayOf"), e.cid);
	json_object_put(o);
	CHECK_EQ_INT(poll_json(&F, e.cid, e.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "expired");
	CHECK_EQ_STR(jstr(o, "replacedBy"), c3);
	json_object_put(o);
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, c3, e.token, &r), 200);
	http_resp_free(&r);
}

/*
 * An identical resubmit of a replayed original rotates its poll token (API.md: the
 * earlier token stops working): the replay answers the original's current token, on
 * poll and cancel, waiting and completed (its result read with the row), never the
 * earlier one.
 */
static void
test_resubmit_token(void)
{
	const char *body = "{\"q\":\"rot\"}";
	struct fx T;
	struct sub s, s2;
	struct claim c, c2;
	struct http_resp r;
	struct json_object *o;
	char cid[CID_MAX], ncid[200];
	long long nid = 0;

	fx_setup(&T, "replayt");
	fx_cid(cid, sizeof cid, "rot");
	CHECK(fx_submit_ok(&T, cid, body, &s));
	CHECK(fx_claim_one(&T, &c));
	CHECK_EQ_INT(fx_callback(T.bkey, c.id, "fail", c.token,
	    "{\"error\":{\"message\":\"x\"}}", &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(adm("execution replay %lld", (long long)c.id), 0);
	CHECK(parse_replay(&nid, ncid, sizeof ncid));
	CHECK(fx_submit_ok(&T, cid, body, &s2));	/* the identical resubmit */
	CHECK(strcmp(s.token, s2.token) != 0);
	CHECK_EQ_INT(poll_json(&T, ncid, s2.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "waiting_callback");
	CHECK_EQ_STR(jstr(o, "replayOf"), cid);
	json_object_put(o);
	CHECK_EQ_INT(fx_poll(&T, T.ckey, ncid, s.token, NULL, &r), 404);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_cancel(&T, T.ckey, ncid, s.token, &r), 404);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_poll(&T, T.ckey, cid, s.token, NULL, &r), 404);
	http_resp_free(&r);
	/* completed: the result with the current token, 404 with the earlier one */
	CHECK(fx_claim_one(&T, &c2));
	CHECK(c2.id == nid);
	CHECK_EQ_INT(fx_complete(&T, &c2, "{\"ok\":\"yes\"}"), 200);
	CHECK_EQ_INT(poll_json(&T, ncid, s2.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	CHECK_EQ_STR(jstr(o, "result.ok"), "yes");
	json_object_put(o);
	CHECK_EQ_INT(fx_poll(&T, T.ckey, ncid, s.token, NULL, &r), 404);
	http_resp_free(&r);
	CHECK_EQ_INT(poll_json(&T, cid, s2.token, &o), 200);
	CHECK_EQ_STR(jstr(o, "replacedBy"), ncid);
	json_object_put(o);
	fx_free(&T);
}

/* 8 racing replays of one execution: exactly one created, all name it. */
static void
test_race(void)
{
	enum { N = 8 };
	char path[600], cmd[1200], buf[512], cid[200];
	struct sub s;
	struct http_resp r;
	FILE *p[N];
	long long id, nid[N];
	int i, ok = 0, created = 0;

	CHECK(fx_submit_ok(&F, NULL, "{\"q\":\"race\"}", &s));
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, s.cid, s.token, &r), 200);
	http_resp_free(&r);
	id = exec_id(&F, s.cid);
	snprintf(path, sizeof path, "%s", test_env("ASYNCEXEC_ADMIN"));
	for (i = 0; i < N; i++) {
		snprintf(cmd, sizeof cmd, "'%s' --config '%s' execution replay %lld 2>&1", path,
		    test_env("ASYNCEXEC_TEST_CONFIG"), id);
		p[i] = popen(cmd, "r");
	}
	for (i = 0; i < N; i++) {
		size_t n = p[i] ? fread(buf, 1, sizeof buf - 1, p[i]) : 0;
		int st = p[i] ? pclose(p[i]) : -1;

		buf[n] = '\0';
		snprintf(out, sizeof out, "%s", buf);
		nid[i] = 0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && parse_replay(&nid[i], cid, sizeof cid))
			ok++;
		else
			fprintf(stderr, "  racing replay %d: %s", i, buf);
		created += strstr(buf, "already") == NULL;
	}
	CHECK_EQ_INT(ok, N);
	CHECK_EQ_INT(created, 1);
	for (i = 1; i < N; i++)
		CHECK(nid[i] == nid[0]);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE replay_of = %lld",
	    id), "1");
	CHECK(atoll(sql1("SELECT replaced_by FROM s2r_async_execution WHERE id = %lld", id)) ==
	    nid[0]);
	sql1("UPDATE s2r_async_execution SET status = 'cancelled', completed_at = "
	    "UTC_TIMESTAMP(3) WHERE id = %lld", nid[0]);
}

/* The tenant's quota: a replay above max_open refused, accepted once below. */
static void
test_quota(void)
{
	struct fx Q;
	struct sub a, b;
	struct http_resp r;
	long long id;

	fx_setup(&Q, "replayq");
	free(admin("tenant set %s --max-open 1", Q.tenant));
	CHECK(fx_submit_ok(&Q, NULL, "{\"q\":\"a\"}", &a));
	CHECK_EQ_INT(fx_cancel(&Q, Q.ckey, a.cid, a.token, &r), 200);
	http_resp_free(&r);
	/* the workers' quota counts may lag the cancel by cache_ttl_seconds: the
	 * freed slot is taken within it (a 429 meanwhile is the documented lag) */
	{
		int64_t until = ut_now_ms() + (config_long("cache_ttl_seconds", 5) + 3) *
		    1000;
		int ok;

		while (!(ok = fx_submit_ok(&Q, NULL, "{\"q\":\"b\"}", &b)) &&
		    ut_now_ms() < until)
			usleep(100000);
		CHECK(ok);	/* 1 of 1 open */
	}
	id = exec_id(&Q, a.cid);
	CHECK_EQ_INT(adm("execution replay %lld", id), 1);
	CHECK(strstr(out, "quota") != NULL);
	fprintf(stderr, "  %s", out);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE replay_of = %lld "
	    "OR (id = %lld AND replaced_by IS NOT NULL)", id, id), "0");
	CHECK_EQ_INT(fx_cancel(&Q, Q.ckey, b.cid, b.token, &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(adm("execution replay %lld", id), 0);
	free(admin("tenant set %s --max-open 0", Q.tenant));
	fx_free(&Q);
}

/* Counts the lines of out that start with a digit (the bulk form's id lines). */
static int
id_lines(void)
{
	const char *p = out;
	int n = 0;

	while (*p != '\0') {
		n += *p >= '0' && *p <= '9' && strchr(p, '\t') != NULL &&
		    strchr(p, '\t') < strchr(p, '\n');
		p = strchr(p, '\n') != NULL ? strchr(p, '\n') + 1 : p + strlen(p);
	}
	return n;
}

/* The bulk form: --since, --dry-run, counts, a second run finds none, --json. */
static void
test_bulk(void)
{
	struct fx B;
	struct sub s[5];
	char since[40], later[40];
	int i;

	fx_setup(&B, "replayb");
	rfc_time(since, sizeof since, -120);
	rfc_time(later, sizeof later, 3600);
	for (i = 0; i < 5; i++) {
		CHECK(fx_submit_ok(&B, NULL, "{\"q\":\"bulk\"}", &s[i]));
		if (i < 4)
			CHECK_EQ_INT(adm("execution fail %lld --message bulk%d",
			    exec_id(&B, s[i].cid), i), 0);
	}
	/* 4 failed, 1 waiting */
	CHECK_EQ_INT(adm("execution replay --route %s --status failed --since %s --dry-run",
	    B.route, since), 0);
	CHECK(strstr(out, "4 execution(s) would be replayed") != NULL);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE environment = '%s' "
	    "AND service_key = '%s'", B.env, B.svc), "5");
	CHECK_EQ_INT(adm("execution replay --route %s --status failed --since %s", B.route,
	    later), 0);
	CHECK(strstr(out, "0 execution(s) replayed") != NULL);
	CHECK_EQ_INT(adm("execution replay --route %s --status cancelled --since %s", B.route,
	    since), 0);
	CHECK(strstr(out, "0 execution(s) replayed") != NULL);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed --since %s", B.route,
	    since), 0);
	CHECK(strstr(out, "4 execution(s) replayed") != NULL);
	CHECK_EQ_INT(id_lines(), 4);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE environment = '%s' "
	    "AND service_key = '%s' AND replay_of IS NOT NULL AND status = 'waiting_callback'",
	    B.env, B.svc), "4");
	CHECK_EQ_INT(adm("--json execution replay --route %s --status failed --since %s",
	    B.route, since), 0);
	CHECK(strstr(out, "\"replayed\":0") != NULL);
	CHECK_EQ_INT(adm("--json execution replay --route %s --status failed --since %s "
	    "--dry-run", B.route, since), 0);
	CHECK(strstr(out, "\"would_replay\":0") != NULL);
	fx_free(&B);
}

/*
 * A bulk replay that a database error stops partway (a trigger refuses the
 * replay of the third of four): the two replays before it stay, and --json
 * still prints their document, "stopped" saying why (exit 1, the error on
 * stderr); the next run replays the other two.
 */
static void
test_bulk_stopped(void)
{
	struct fx S;
	struct sub s[4];
	char since[40];
	long long ids[4];
	const char *p;
	int i, n = 0;

	fx_setup(&S, "replayst");
	rfc_time(since, sizeof since, -120);
	for (i = 0; i < 4; i++) {
		CHECK(fx_submit_ok(&S, NULL, "{\"q\":\"stop\"}", &s[i]));
		ids[i] = exec_id(&S, s[i].cid);
		CHECK_EQ_INT(adm("execution fail %lld --message stop%d", ids[i], i), 0);
	}
	sql1("CREATE TRIGGER replay_stop_%lld BEFORE INSERT ON s2r_async_execution FOR "
	    "EACH ROW BEGIN IF NEW.replay_of = %lld THEN SIGNAL SQLSTATE '45000' SET "
	    "MESSAGE_TEXT = 'refused by http_replay'; END IF; END", ids[2], ids[2]);
	CHECK_EQ_INT(adm("--json execution replay --route %s --status failed --since %s",
	    S.route, since), 1);
	sql1("DROP TRIGGER replay_stop_%lld", ids[2]);
	fprintf(stderr, "  %s", out);
	CHECK(strstr(out, "replay stopped after 2 execution(s)") != NULL);
	CHECK(strstr(out, "{\"replayed\":2,") != NULL);
	CHECK(strstr(out, "\"stopped\":\"database error\"") != NULL);
	for (p = out; (p = strstr(p, "\"replay_id\":")) != NULL; p++)
		n++;
	CHECK_EQ_INT(n, 2);
	for (i = 0; i < 4; i++)
		CHECK_EQ_STR(sql1("SELECT replaced_by IS NOT NULL FROM s2r_async_execution "
		    "WHERE id = %lld", ids[i]), i < 2 ? "1" : "0");
	CHECK_EQ_INT(adm("--json execution replay --route %s --status failed --since %s",
	    S.route, since), 0);
	CHECK(strstr(out, "{\"replayed\":2,") != NULL);
	CHECK(strstr(out, "\"stopped\":null") != NULL);
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE environment = "
	    "'%s' AND service_key = '%s' AND replay_of IS NOT NULL", S.env, S.svc), "4");
	fx_free(&S);
}

/*
 * Executions of a lineage with no live key (failed initiator_revoked by key
 * revoke) are not replayed: no claim would hand the replay out. By id: exit
 * 1, saying why; the bulk form (and its --dry-run) counts and leaves them,
 * and replays one of the tenant's live key.
 */
static void
test_revoked(void)
{
	struct fx G, L;
	struct sub s[3], l;
	char since[40];
	long long id;
	int i;

	fx_setup(&G, "replayv");
	rfc_time(since, sizeof since, -120);
	for (i = 0; i < 3; i++)
		CHECK(fx_submit_ok(&G, NULL, "{\"q\":\"rv\"}", &s[i]));
	free(admin("key revoke %s", G.ckey));
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "environment = '%s' AND service_key = '%s' AND status = 'failed' "
	    "AND JSON_VALUE(error_payload, '$.code') = 'initiator_revoked'",
	    G.env, G.svc), "3");
	/* a live lineage of the same tenant */
	L = G;
	L.ckey = fx_consumer_key(G.tenant);
	CHECK(fx_submit_ok(&L, NULL, "{\"q\":\"live\"}", &l));
	CHECK_EQ_INT(adm("execution fail %lld --message live",
	    exec_id(&L, l.cid)), 0);
	id = exec_id(&G, s[0].cid);
	CHECK_EQ_INT(adm("execution replay %lld", id), 1);
	fprintf(stderr, "  %s", out);
	CHECK(strstr(out, "no live key") != NULL &&
	    strstr(out, "resubmit") != NULL);
	CHECK_EQ_INT(adm("execution replay --tenant %s %s %s", G.tenant,
	    G.route, s[1].cid), 1);
	CHECK(strstr(out, "no live key") != NULL);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed "
	    "--since %s --dry-run", G.route, since), 0);
	CHECK(strstr(out, "1 execution(s) would be replayed") != NULL);
	CHECK(strstr(out, "3 execution(s) would not be replayed: ") != NULL);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed "
	    "--since %s", G.route, since), 0);
	fprintf(stderr, "  %s", out);
	CHECK(strstr(out, "1 execution(s) replayed") != NULL);
	CHECK_EQ_INT(id_lines(), 1);
	CHECK(strstr(out, "3 execution(s) not replayed: ") != NULL);
	CHECK_EQ_INT(adm("--json execution replay --route %s --status failed "
	    "--since %s", G.route, since), 0);
	CHECK(strstr(out, "\"replayed\":0") != NULL);
	CHECK(strstr(out, "\"skipped_revoked\":3") != NULL);
	/* one replay, of the live key's execution; the revoked ones as were */
	CHECK_EQ_STR(sql1("SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "environment = '%s' AND service_key = '%s' AND (replay_of IS NOT "
	    "NULL OR replaced_by IS NOT NULL)", G.env, G.svc), "2");
	CHECK_EQ_STR(sql1("SELECT replaced_by IS NOT NULL FROM "
	    "s2r_async_execution WHERE id = %lld", exec_id(&L, l.cid)), "1");
	free(L.ckey);
	fx_free(&G);
}

static void
test_usage(void)
{
	CHECK_EQ_INT(adm("execution replay"), 2);
	CHECK_EQ_INT(adm("execution replay 5 --dry-run"), 2);
	CHECK_EQ_INT(adm("execution replay --route %s --status completed --since "
	    "2026-01-01T00:00:00Z", F.route), 2);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed --since yesterday",
	    F.route), 2);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed", F.route), 2);
	CHECK_EQ_INT(adm("execution replay 5 --route %s --status failed --since "
	    "2026-01-01T00:00:00Z", F.route), 2);
}

int
main(void)
{
	struct config cfg;

	http_test_init();
	sidedb_init(&cfg);
	M = sidedb_open(&cfg);
	fx_setup(&F, "replay");
	/* claiming tests first: F's queue holds no other unclaimed execution */
	test_failed();
	test_cancelled_expired();
	test_resubmit_token();
	test_race();
	test_quota();
	test_bulk();
	test_bulk_stopped();
	test_revoked();
	test_usage();
	fx_free(&F);
	mysql_close(M);
	return check_done("http_replay");
}
