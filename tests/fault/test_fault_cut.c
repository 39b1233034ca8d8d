/*
 * test_fault_cut.c - the connection lost while a claim reads its locked
 * rows. A private asyncexec-fcgi (papp.h) reaches the shared database
 * through dbproxy, which passes the first half of the answer of the
 * claim's lock (the statement whose JSON array of ids starts with the
 * execution's id) on and closes the connection: the worker reads the
 * columns and loses the connection within the row (its request is
 * REQ_BYTES long: most of the answer).
 *
 * The claim answers 503 with Retry-After and its worker keeps running (no
 * worker exit in the app's log: the statement the lost connection closed
 * is not used again); the server rolled the claim back, so the next claim
 * hands the execution out at attempt 1 and it completes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

#define REQ_BYTES	65536

static struct fx	 F;
static char		 body[REQ_BYTES + 32];
static MYSQL		*m;

/* A claim of one on F's route into c (when 200) and r; the status. */
static int
claim(struct claim *c, int64_t *attempt, struct fcgi_resp *r)
{
	struct json_object	*o;
	char			 uri[300];
	int			 st;

	memset(c, 0, sizeof *c);
	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	st = papp_api("POST", uri, F.bkey, NULL, "{\"max\":1}", r);
	if (st == 200 && (o = json_tokener_parse(r->body ? r->body : "")) !=
	    NULL) {
		if (!fx_claim_item(o, 0, c))
			st = -1;	/* 200 without an execution */
		*attempt = 0;
		jint(o, "executions.0.attempt", attempt);
		json_object_put(o);
	}
	return st;
}

static void
test_lock_answer_cut(void)
{
	struct fcgi_resp	 r;
	struct sub		 s;
	struct claim		 c;
	char			 pat[32], uri[128];
	int64_t			 at = 0;
	long long		 id;
	int			 f0 = dbproxy_fired(), st;

	memset(body, 'x', sizeof(body));
	memcpy(body, "{\"cut\":\"", 8);
	memcpy(body + 8 + REQ_BYTES, "\"}", 3);
	CHECK(fx_submit_ok(&F, NULL, body, &s));
	id = f_sql_num(m, "SELECT id FROM s2r_async_execution WHERE "
	    "correlation_id = '%s'", s.cid);
	CHECK(id > 0);
	snprintf(pat, sizeof pat, "[%lld", id);
	dbproxy_arm(DBPROXY_CUT_ANSWER, pat);
	st = claim(&c, &at, &r);
	printf("claim with its lock's answer cut: %d\n", st);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	CHECK_EQ_INT(st, 503);
	CHECK(r.out != NULL && strstr(r.out, "Retry-After: ") != NULL);
	fcgi_resp_free(&r);

	st = claim(&c, &at, &r);
	fcgi_resp_free(&r);
	CHECK_EQ_INT(st, 200);
	CHECK_EQ_INT(c.id, id);
	CHECK_EQ_INT(at, 1);
	snprintf(uri, sizeof uri, "/v1/callbacks/%lld/complete", id);
	CHECK_EQ_INT(papp_api("POST", uri, F.bkey, c.token,
	    "{\"result\":\"after the cut\"}", &r), 200);
	fcgi_resp_free(&r);
	CHECK(papp_log_contains("killed by signal") == 0);
	CHECK(papp_log_contains("exited with status") == 0);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-cut");
	/* glibc fills freed memory with this byte: a use of a freed handle
	 * inside Connector/C (not instrumented by ASan) then crashes */
	setenv("MALLOC_PERTURB_", "165", 1);
	if ((m = f_sql_open()) == NULL || papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_lock_answer_cut();
	papp_stop();
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_cut");
}
