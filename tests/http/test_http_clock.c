/*
 * test_http_clock.c - work submitted without a start is claimable at once even when the
 * claiming host's clock is behind the submitting host's (a clock stepped back, or two app
 * hosts whose clocks differ): up to CLAIM_CLOCK_SKEW_MS. A submit on a host whose clock
 * runs ahead is made here by moving a row's times forward in SQL; a scheduled start
 * (X-Delay-Seconds) still waits for its time, and a row further ahead than the bound
 * waits too. (.ci/run once got an empty claim right after a submit on this VM, whose
 * wall clock jumps.)
 */
#include "api.h"
#include "check.h"
#include "fixture.h"
#include "sidedb.h"

#include <mysql.h>
#include <stdio.h>
#include <string.h>

static struct config cfg;
static MYSQL *db;
static struct fx F;

/* Moves the times of F's execution CID MS milliseconds ahead, as its host's clock was. */
static void
ahead(const char *cid, long ms)
{
	char q[1024];

	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET created_at = created_at + "
	    "INTERVAL %ld000 MICROSECOND, updated_at = created_at, due_at = created_at "
	    "WHERE initiator_tenant_id = '%s' AND correlation_id = '%s'", ms, F.tenant, cid);
	sidedb_exec(db, q);
	CHECK_EQ_INT((int)mysql_affected_rows(db), 1);
}

/* Claims up to 10 of F's route; how many were handed out (-1: not a 200), cid of the first. */
static int
claim(char *cid, size_t len)
{
	struct http_resp r;
	struct json_object *o;
	int n = -1;

	cid[0] = '\0';
	if (fx_claim(&F, F.bkey, "{\"max\":10}", &r) == 200 && (o = json_body(&r)) != NULL) {
		n = (int)jlen(o, "executions");
		if (n > 0)
			snprintf(cid, len, "%s", jstr(o, "executions.0.correlationId"));
		json_object_put(o);
	}
	http_resp_free(&r);
	return n;
}

int
main(void)
{
	struct sub near, far, later;
	char cid[CID_MAX_LEN + 1], q[512];

	http_test_init();
	sidedb_init(&cfg);
	db = sidedb_open(&cfg);
	fx_setup(&F, "clock");

	/* a submit from a host a second ahead, and one far ahead: only the first is claimed */
	CHECK(fx_submit_ok(&F, NULL, "{\"near\":1}", &near));
	ahead(near.cid, 1000);
	CHECK(fx_submit_ok(&F, NULL, "{\"far\":1}", &far));
	ahead(far.cid, 10L * CLAIM_CLOCK_SKEW_MS);
	CHECK_EQ_INT(claim(cid, sizeof cid), 1);
	CHECK_EQ_STR(cid, near.cid);

	/* a scheduled start a second ahead is not handed out before its time */
	CHECK(fx_submit_hdr_ok(&F, NULL, "{\"later\":1}", "X-Delay-Seconds: 2", &later));
	CHECK_EQ_INT(claim(cid, sizeof cid), 0);
	CHECK_EQ_STR(fx_status(&F, &later), "waiting_callback");
	CHECK_EQ_STR(fx_status(&F, &far), "waiting_callback");

	/* the rows with times ahead go: what the other tests read stays real */
	snprintf(q, sizeof q, "DELETE FROM s2r_async_execution WHERE initiator_tenant_id = '%s'",
	    F.tenant);
	sidedb_exec(db, q);
	fx_free(&F);
	mysql_close(db);
	mysql_library_end();
	return check_done("http_clock");
}
