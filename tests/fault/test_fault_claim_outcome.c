/*
 * test_fault_claim_outcome.c - a claim of two whose COMMIT answer is lost,
 * and one of its re-reads fails. A private asyncexec-fcgi (papp.h) reaches
 * the shared database through dbproxy, which drops the packets a predicate
 * of this test picks.
 *
 * The claim locks A and B (max 2), and its COMMIT is dropped: never
 * forwarded, the connection closed, so the server rolls the claim back and
 * the app hears error 2013 (outcome unknown). The claim reads each row
 * again on a fresh connection (repo_outcome.c): A's read goes through and
 * shows that A is not this claim's (no token: nothing committed); B's read
 * is dropped, and so is the one retry the app makes on a new connection.
 * The claim must answer 503 with Retry-After, hand nothing out and keep
 * its worker alive: the read that failed used to leave the count of the
 * claim's items at 2 while A's payload was freed already, and the caller
 * freed it again (a double free: the worker aborted). The next claim gets
 * A and B at attempt 1, and both complete.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

#define MAX	2		/* the claim's max */
#define DROPS	2		/* B's re-read and its one retry */
#define PAYLOAD	(300 * 1024)	/* a request past malloc's mmap threshold */

static struct fx	 F;
static MYSQL		*m;
static long long	 ids[MAX];	/* A, B */
static int		 state, reads, drops;

/* Whether client packet p of n bytes is a statement execution whose last
 * bind (an 8-byte integer at the packet's end) is A's or B's id. */
static int
reads_ab(const unsigned char *p, size_t n)
{
	unsigned long long	 v = 0;
	int			 i;

	if (n < 5 + 8 || p[4] != 0x17)		/* COM_STMT_EXECUTE */
		return 0;
	for (i = 7; i >= 0; i--)
		v = v << 8 | p[n - 8 + (size_t)i];
	return v == (unsigned long long)ids[0] ||
	    v == (unsigned long long)ids[1];
}

/*
 * The proxy's predicate (under its lock): drops the claim's COMMIT, lets
 * the first re-read of A or B through, then drops the next DROPS.
 */
static int
pick(const unsigned char *p, size_t n)
{
	switch (state) {
	case 0:
		if (n == 4 + 7 && p[4] == 0x03 &&	/* COM_QUERY */
		    memcmp(p + 5, "COMMIT", 6) == 0) {
			state = 1;
			return 1;
		}
		return 0;
	case 1:
		if (!reads_ab(p, n) || reads++ == 0)
			return 0;
		if (++drops == DROPS)
			state = 2;
		return 1;
	default:
		return 0;
	}
}

/* Claims MAX on F's route through the private instance into c; status.
 * *retry_after: the answer had a Retry-After header. */
static int
claim(struct claim *c, int *retry_after)
{
	struct fcgi_resp	 r;
	struct json_object	*o;
	char			 uri[300], body[32];
	size_t			 i;
	int			 st;

	memset(c, 0, MAX * sizeof *c);
	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	snprintf(body, sizeof body, "{\"max\":%d}", MAX);
	st = papp_api("POST", uri, F.bkey, NULL, body, &r);
	printf("claim of %d: %d %.200s\n", MAX, st, r.body ? r.body : "");
	*retry_after = r.out != NULL && r.body != NULL &&
	    strstr(r.out, "Retry-After:") != NULL &&
	    strstr(r.out, "Retry-After:") < r.body;
	if (st == 200 && (o = json_tokener_parse(r.body ? r.body : "")) !=
	    NULL) {
		for (i = 0; i < MAX; i++)
			if (!fx_claim_item(o, i, &c[i]))
				st = -1;	/* fewer than MAX */
		json_object_put(o);
	}
	fcgi_resp_free(&r);
	return st;
}

static void
test_reread_fails(void)
{
	struct sub	 s[MAX];
	struct claim	 c[MAX];
	static char	 pad[PAYLOAD], req[PAYLOAD + 32];
	int		 i, st, ra = 0, f0 = dbproxy_fired();

	memset(pad, 'x', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	snprintf(req, sizeof req, "{\"reread\":\"%s\"}", pad);
	for (i = 0; i < MAX; i++) {
		CHECK(fx_submit_ok(&F, NULL, req, &s[i]));
		ids[i] = f_sql_num(m, "SELECT id FROM s2r_async_execution "
		    "WHERE correlation_id = '%s'", s[i].cid);
		CHECK(ids[i] > 0);
	}
	dbproxy_drop_when(pick);
	st = claim(c, &ra);
	dbproxy_drop_when(NULL);
	CHECK_EQ_INT(state, 2);
	CHECK_EQ_INT(reads, 1 + DROPS);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1 + DROPS);
	CHECK_EQ_INT(st, 503);
	CHECK(ra);
	/* nothing committed: both wait, unclaimed, at attempt 0 */
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE id IN (%lld, %lld) AND attempts = 0 AND "
	    "callback_token_hash IS NULL", ids[0], ids[1]), MAX);
	/* the worker lives on: the next claim hands out A and B */
	CHECK_EQ_INT(claim(c, &ra), 200);
	CHECK_EQ_STR(c[0].cid, s[0].cid);
	CHECK_EQ_STR(c[1].cid, s[1].cid);
	for (i = 0; i < MAX; i++)
		if (c[i].cid[0] != '\0')
			CHECK_EQ_INT(fx_complete(&F, &c[i], "\"done\""), 200);
	CHECK_EQ_INT(papp_log_contains("killed by signal"), 0);
	CHECK_EQ_INT(papp_log_contains("exited with status"), 0);
	CHECK_EQ_INT(papp_log_contains("double free"), 0);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-outcome");
	if ((m = f_sql_open()) == NULL || papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_reread_fails();
	papp_stop();
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_claim_outcome");
}
