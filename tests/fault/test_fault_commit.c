/*
 * test_fault_commit.c - lost answers: the write went through (or not), the
 * app never heard. A private asyncexec-fcgi (papp.h) reaches the shared
 * database through dbproxy; the route and keys come from the shared
 * stack's admin CLI.
 *
 *   1. claim, COMMIT forwarded and its answer lost: the claim re-reads its
 *      rows and hands out the execution (its token then completes it);
 *   2. claim, COMMIT never arrives: 503, nothing committed, the next claim
 *      gets it at attempt 1;
 *   3. complete, its UPDATE forwarded and the answer lost: 200 (the row
 *      shows this callback's outcome), and the same callback again: 409;
 *   4. complete, its UPDATE never arrives: retried whole, 200, stored once;
 *   5. complete, its UPDATE forwarded and the answer lost, and the row then
 *      shows the win of another complete with the same token in the same
 *      millisecond (another body: the test rewrites the result and the
 *      winner hash before the re-read): 409, not 200; the other one's
 *      repeat gets its 200.
 * On a Galera node (its cluster copy, cluster_fault_commit) the re-reads of
 * 1 and 3 run with wsrep_sync_wait = 1 (seen by the proxy); never elsewhere.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

static struct fx	 F;
static MYSQL		*m;

/* Claims one on F's route through the private instance into c; status. */
static int
claim(struct claim *c, int64_t *attempt)
{
	struct fcgi_resp	 r;
	struct json_object	*o;
	char			 uri[300];
	int			 st;

	memset(c, 0, sizeof *c);
	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	st = papp_api("POST", uri, F.bkey, NULL, "{\"max\":1}", &r);
	if (st == 200 && (o = json_tokener_parse(r.body ? r.body : "")) !=
	    NULL) {
		if (!fx_claim_item(o, 0, c))
			st = -1;	/* 200 without an execution */
		*attempt = 0;
		jint(o, "executions.0.attempt", attempt);
		json_object_put(o);
	} else if (st != 200)
		fprintf(stderr, "  claim: %d %.200s\n", st, r.body ? r.body : "");
	fcgi_resp_free(&r);
	return st;
}

/* complete with {"result":"<result>"} through the private instance. */
static int
complete(const struct claim *c, const char *result)
{
	struct fcgi_resp	 r;
	char			 uri[128], body[256];
	int			 st;

	snprintf(uri, sizeof uri, "/v1/callbacks/%lld/complete",
	    (long long)c->id);
	snprintf(body, sizeof body, "{\"result\":\"%s\"}", result);
	st = papp_api("POST", uri, F.bkey, c->token, body, &r);
	if (st != 200)
		fprintf(stderr, "  complete: %d %.200s\n", st,
		    r.body ? r.body : "");
	fcgi_resp_free(&r);
	return st;
}

/* What a session sends to make its reads wait for the cluster (Galera). */
#define SYNC_READ	"wsrep_sync_wait = 1"

static int	 wsrep;		/* the database is a Galera node */

/*
 * After a lost answer the row is read again; on a Galera node (the
 * cluster copy of this test) that read runs with wsrep_sync_wait = 1,
 * so it sees every write the cluster committed before it: the session
 * sent SET SESSION wsrep_sync_wait = 1 through the proxy. A server
 * without Galera never gets it.
 */
static void
check_sync_read(const char *what)
{
	int	 n = dbproxy_seen();

	printf("%s: %d sync-wait read(s) after the lost answer (%s)\n", what,
	    n, wsrep ? "Galera" : "no Galera");
	if (wsrep)
		CHECK(n >= 1);
	else
		CHECK_EQ_INT(n, 0);
}

/* How many rows of cid hold status and result "\"<result>\"". */
static long long
stored(const char *cid, const char *status, const char *result)
{
	return f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "correlation_id = '%s' AND status = '%s' AND result_payload = "
	    "'\"%s\"'", cid, status, result);
}

static void
test_claim_commit_lost(void)
{
	struct sub	 s;
	struct claim	 c;
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired();

	CHECK(fx_submit_ok(&F, NULL, "{\"commit\":\"lost\"}", &s));
	dbproxy_watch(SYNC_READ);
	dbproxy_arm(DBPROXY_LOSE_ANSWER, "COMMIT");
	CHECK_EQ_INT(claim(&c, &at), 200);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	check_sync_read("claim");
	printf("claim, COMMIT's answer lost: %s, attempt %lld\n",
	    c.cid[0] ? "handed out" : "nothing", (long long)at);
	CHECK_EQ_STR(c.cid, s.cid);
	CHECK_EQ_INT(at, 1);
	CHECK_EQ_INT(complete(&c, "after-lost-commit"), 200);
	CHECK_EQ_INT(stored(s.cid, "completed", "after-lost-commit"), 1);
}

static void
test_claim_commit_dropped(void)
{
	struct sub	 s;
	struct claim	 c;
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired(), st;

	CHECK(fx_submit_ok(&F, NULL, "{\"commit\":\"dropped\"}", &s));
	dbproxy_arm(DBPROXY_DROP, "COMMIT");
	st = claim(&c, &at);
	printf("claim, COMMIT never arrived: %d\n", st);
	CHECK_EQ_INT(st, 503);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id = '%s' AND attempts = 0 AND "
	    "callback_token_hash IS NULL", s.cid), 1);
	CHECK_EQ_INT(claim(&c, &at), 200);
	CHECK_EQ_STR(c.cid, s.cid);
	CHECK_EQ_INT(at, 1);
	CHECK_EQ_INT(complete(&c, "after-dropped-commit"), 200);
}

/* Finalization whose UPDATE is lost (mode) after being sent. */
static void
test_complete(enum dbproxy_mode mode, const char *what)
{
	struct sub	 s;
	struct claim	 c;
	char		 marker[96];
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired(), st;

	CHECK(fx_submit_ok(&F, NULL, "{\"complete\":1}", &s));
	CHECK_EQ_INT(claim(&c, &at), 200);
	snprintf(marker, sizeof marker, "%s-%s", what, unique_suffix());
	dbproxy_watch(SYNC_READ);
	dbproxy_arm(mode, marker);
	st = complete(&c, marker);
	printf("complete, %s: %d\n", what, st);
	CHECK_EQ_INT(st, 200);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	check_sync_read(what);
	CHECK_EQ_INT(stored(s.cid, "completed", marker), 1);
	/* it won once: the same callback again is a conflict */
	CHECK_EQ_INT(complete(&c, "again"), 409);
	CHECK_EQ_INT(stored(s.cid, "completed", marker), 1);
}

static long long	 forge_id;	/* the execution to rewrite, or 0 */
static char		 forge_res[96];	/* the other winner's result */
static int		 forged;	/* rows the rewrite changed */

/*
 * The proxy's predicate, which never drops: at the PREPARE of the re-read
 * (STMT_EXEC_OUTCOME, on the connection after the lost answer; the
 * UPDATE had committed), rewrites forge_id's row into the win of the
 * complete {"result":"<forge_res>"} (its result, its winner hash: that
 * of handlers/callbacks.c win_hash) at the completed_at of the UPDATE.
 */
static int
forge_win(const unsigned char *p, size_t n)
{
	if (forge_id == 0 || n < 5 || p[4] != 0x16 ||	/* COM_STMT_PREPARE */
	    memmem(p + 5, n - 5, "LOCK IN SHARE MODE", 18) == NULL)
		return 0;
	if (f_sql(m, "UPDATE s2r_async_execution SET result_payload = "
	    "'\"%s\"', payload_inline = '\"%s\"', winner_hash = UNHEX(SHA2("
	    "CONCAT('complete:', UNHEX(SHA2('{\"result\":\"%s\"}', 256))), "
	    "256)) WHERE id = %lld AND status = 'completed'", forge_res,
	    forge_res, forge_res, forge_id) == 0)
		forged = (int)mysql_affected_rows(m);
	forge_id = 0;
	return 0;
}

/* Another complete (same token, same millisecond) won: this one lost. */
static void
test_complete_other_won(void)
{
	struct fcgi_resp r;
	struct sub	 s;
	struct claim	 c;
	char		 marker[96], uri[128], body[256];
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired(), st;

	CHECK(fx_submit_ok(&F, NULL, "{\"complete\":2}", &s));
	CHECK_EQ_INT(claim(&c, &at), 200);
	/* on Galera the rewrite waits until its node has the UPDATE */
	if (wsrep)
		CHECK_EQ_INT(f_sql(m, "SET SESSION wsrep_sync_wait = 3"), 0);
	snprintf(marker, sizeof marker, "lost-to-other-%s", unique_suffix());
	snprintf(forge_res, sizeof forge_res, "other-%s", unique_suffix());
	forged = 0;
	forge_id = c.id;
	dbproxy_drop_when(forge_win);
	dbproxy_arm(DBPROXY_LOSE_ANSWER, marker);
	snprintf(uri, sizeof uri, "/v1/callbacks/%lld/complete",
	    (long long)c.id);
	snprintf(body, sizeof body, "{\"result\":\"%s\"}", marker);
	st = papp_api("POST", uri, F.bkey, c.token, body, &r);
	dbproxy_drop_when(NULL);
	printf("complete, answer lost, another won in its millisecond: %d "
	    "%.200s\n", st, r.body ? r.body : "");
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	CHECK_EQ_INT(forged, 1);
	CHECK_EQ_INT(st, 409);
	CHECK(r.body != NULL &&
	    strstr(r.body, "\"currentStatus\":\"completed\"") != NULL);
	fcgi_resp_free(&r);
	CHECK_EQ_INT(stored(s.cid, "completed", forge_res), 1);
	/* the other one's repeat is the winner's */
	CHECK_EQ_INT(complete(&c, forge_res), 200);
	CHECK_EQ_INT(stored(s.cid, "completed", forge_res), 1);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-commit");
	if ((m = f_sql_open()) == NULL ||
	    (wsrep = (int)f_sql_num(m, "SELECT @@wsrep_on")) < 0 ||
	    papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_claim_commit_lost();
	test_claim_commit_dropped();
	test_complete(DBPROXY_LOSE_ANSWER, "answer-lost");
	test_complete(DBPROXY_DROP, "update-dropped");
	test_complete_other_won();
	/* a statement that lost its connection is logged with a cause */
	CHECK_EQ_INT(papp_log_contains("failed: error 2013 \"\n"), 0);
	papp_stop();
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_commit");
}
