/*
 * test_http_schedule_retry.c - an identical retry of a submit with
 * scheduling headers, sent after their time rules stopped holding,
 * through nginx.
 *
 * The time rules (X-Deadline in the future, a start before it) judge a
 * new execution against the submit's time; a retry is the record that was
 * accepted then. A submit with X-Deadline 4 s ahead and one with
 * X-Delay-Seconds 2 and that deadline are retried byte for byte once the
 * delayed start would fall after the deadline (2 s on) and once the
 * deadline has passed (4 s on): 202 with a fresh poll token that opens
 * the execution, createdAt the first one's; another body or other headers
 * 409 correlation_id_conflict; a malformed header 400 at once; a new
 * correlation id (or none) with those headers 400, nothing stored. After
 * an asyncexec-expire run the retry answers expired.
 *
 * The waits are on the database clock (NOW(3), the host's clock the
 * service reads too): until a known instant plus 50 ms, bounded.
 * The database (ASYNCEXEC_TEST_CONFIG) for the clock and the rows; the
 * expiry binary in ASYNCEXEC_EXPIRE (RESOURCE_LOCK asyncexec_expire).
 */
#include "util/proc.h"
#include "check.h"
#include "config.h"
#include "fixture.h"
#include "json.h"
#include "sidedb.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct config cfg;
static MYSQL *db;
static struct fx F;

/* What a submit answered. */
struct ans {
	int	 status;
	char	 code[48];	/* the problem's code, or "" */
	char	 detail[240];	/* the problem's detail, or "" */
	char	 token[96];	/* a 202's poll token */
	char	 state[32];	/* a 202's status */
	char	 created[40];	/* a 202's createdAt */
};

#define db_num(q)	sidedb_num(db, q)
#define db_now()	sidedb_now_ms(db)

/* Waits until the database clock is at least MS, in 50 ms steps, at most
 * ~10 s. 1 when it is. */
static int
wait_until(int64_t ms)
{
	struct timespec t = { 0, 50 * 1000000L };
	int i;

	for (i = 0; i < 200 && db_now() < ms; i++)
		nanosleep(&t, NULL);
	return db_now() >= ms;
}

/* Rows of F's tenant: of correlation id CID, or all of them (CID NULL). */
static long long
rows_of(const char *cid)
{
	char q[512];

	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE initiator_tenant_id = '%s'%s%s%s", F.tenant,
	    cid ? " AND correlation_id = '" : "", cid ? cid : "",
	    cid ? "'" : "");
	return db_num(q);
}

static void
copy(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s != NULL ? s : "");
}

/* Submits BODY to F with correlation id CID (NULL: none) and the header
 * lines H1, H2 (NULL: none); the answer into A. */
static void
submit(const char *cid, const char *body, const char *h1, const char *h2,
    struct ans *a)
{
	struct http_resp r;
	struct json_object *o;
	char path[512], c[200];

	fx_exec_path(path, sizeof path, &F, NULL, NULL);
	snprintf(c, sizeof c, "X-Correlation-Id: %s", cid ? cid : "");
	memset(a, 0, sizeof *a);
	a->status = api("POST", path, F.ckey, body, &r, cid ? c : "",
	    h1 ? h1 : "", h2 ? h2 : "", (const char *)NULL);
	o = json_body(&r);
	copy(a->code, sizeof a->code, jstr(o, "code"));
	copy(a->detail, sizeof a->detail, jstr(o, "detail"));
	copy(a->token, sizeof a->token, jstr(o, "pollToken"));
	copy(a->state, sizeof a->state, jstr(o, "status"));
	copy(a->created, sizeof a->created, jstr(o, "createdAt"));
	if (a->status != 202 && a->status != 409)
		fprintf(stderr, "  submit %s (%s | %s): %d %.300s\n",
		    cid ? cid : "-", h1 ? h1 : "-", h2 ? h2 : "-", a->status,
		    r.body ? r.body : "");
	json_object_put(o);
	http_resp_free(&r);
}

/*
 * A resubmit of CID that must be 202 with status STATE, createdAt FIRST's
 * and a poll token other than FIRST's that opens the execution; FIRST
 * becomes this answer.
 */
static void
retry(const char *cid, const char *body, const char *h1, const char *h2,
    const char *state, struct ans *first)
{
	struct http_resp r;
	struct ans a;

	submit(cid, body, h1, h2, &a);
	CHECK_EQ_INT(a.status, 202);
	CHECK_EQ_STR(a.state, state);
	CHECK_EQ_STR(a.created, first->created);
	CHECK(a.token[0] != '\0' && strcmp(a.token, first->token) != 0);
	if (a.status == 202) {
		CHECK_EQ_INT(fx_poll(&F, F.ckey, cid, a.token, NULL, &r), 200);
		http_resp_free(&r);
		*first = a;
	}
}

/* A submit that must be answered STATUS with problem code CODE whose
 * detail names NAME. */
static void
refused(const char *cid, const char *body, const char *h1, const char *h2,
    int status, const char *code, const char *name)
{
	struct ans a;

	submit(cid, body, h1, h2, &a);
	CHECK_EQ_INT(a.status, status);
	CHECK_EQ_STR(a.code, code);
	CHECK(strstr(a.detail, name) != NULL);
}

static int
expire_once(void)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "'%s' --config '%s'",
	    test_env("ASYNCEXEC_EXPIRE"), test_env("ASYNCEXEC_TEST_CONFIG"));
	return ut_run(cmd, NULL, 0);
}

int
main(void)
{
	const char *body = "{\"same\":1}", *other = "{\"other\":1}";
	const char *delay = "X-Delay-Seconds: 2", *p4 = "X-Priority: 4";
	const char *bad = "invalid_request", *taken = "correlation_id_conflict";
	struct ans a, b;
	char cid[CID_MAX], cid2[CID_MAX], fresh[CID_MAX], dl[80], t[40];
	int64_t now;

	http_test_init();
	test_env("ASYNCEXEC_EXPIRE");
	sidedb_init(&cfg);
	db = sidedb_open(&cfg);
	fx_setup(&F, "sched-retry");
	fx_cid(cid, sizeof cid, "late-dl");
	fx_cid(cid2, sizeof cid2, "late-delay");
	fx_cid(fresh, sizeof fresh, "late-new");
	now = db_now();
	json_time(now + 4000, t);
	snprintf(dl, sizeof dl, "X-Deadline: %s", t);
	submit(cid, body, dl, p4, &a);
	CHECK_EQ_INT(a.status, 202);
	submit(cid2, body, delay, dl, &b);
	CHECK_EQ_INT(b.status, 202);
	CHECK(db_now() < now + 2000);	/* else b's start was late already */

	/* 2 s on: a start 2 s after now is at or after the deadline */
	CHECK(wait_until(now + 2050));
	CHECK(db_now() < now + 4000);
	retry(cid2, body, delay, dl, "waiting_callback", &b);
	refused(cid2, body, delay, "X-Priority: 1", 409, taken, "");
	refused(cid2, other, delay, dl, 409, taken, "");
	refused(fresh, body, delay, dl, 400, bad, "X-Deadline");
	CHECK_EQ_INT(rows_of(fresh), 0);

	/* past the deadline */
	CHECK(wait_until(now + 4050));
	retry(cid, body, dl, p4, "waiting_callback", &a);
	retry(cid2, body, delay, dl, "waiting_callback", &b);
	refused(cid, body, dl, "X-Priority: 5", 409, taken, "");
	refused(cid, body, dl, NULL, 409, taken, "");
	refused(cid, other, dl, p4, 409, taken, "");
	/* a malformed header: 400 at once, also for a taken id */
	refused(cid, body, dl, "X-Priority: x", 400, bad, "X-Priority");
	refused(fresh, body, dl, p4, 400, bad, "X-Deadline must be in the");
	refused(NULL, body, dl, p4, 400, bad, "X-Deadline must be in the");
	CHECK_EQ_INT(rows_of(fresh), 0);
	CHECK_EQ_INT(rows_of(NULL), 2);

	/* expired by an expiry run: the retry's current status says so */
	CHECK_EQ_INT(expire_once(), 0);
	retry(cid, body, dl, p4, "expired", &a);
	CHECK_EQ_INT(rows_of(NULL), 2);
	fx_free(&F);
	mysql_close(db);
	mysql_library_end();
	return check_done("http_schedule_retry");
}
