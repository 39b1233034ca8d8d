/*
 * test_fault_claim_pages.c - a claim's next pages while the queue moves. A
 * private asyncexec-fcgi (papp.h) reaches the shared database through
 * dbproxy, which runs a step of the test between two statements of a
 * claim.
 *
 * A claim reads claimable ids without locks (FIRST of them, asyncexec-api(7)
 * "4 x max + 16"), and locks the free ones by primary key. When others held
 * them all, it reads the queue again from its head, a page of NEXT ids at a
 * time ("4 times as many per read"), leaves out the ids of its first read,
 * and locks the free ones. Each read is a new snapshot (READ COMMITTED), so
 * when work lands ahead of the queue between two reads, a page starts at an
 * id that the page before it had already locked. SKIP LOCKED skips only
 * other transactions' locks, so a page must leave out the ids the claim
 * locked too: else the claim takes that id a second time, its lease UPDATE
 * matches fewer rows than it locked, and the claim is rolled back (503)
 * while its work waits.
 *
 * The route's queue, in claim order: HELD executions another transaction
 * holds (FOR UPDATE), then three free ones, A, B and C. A claim of 2 finds
 * nothing it can lock in its first read, locks A, the last id of its first
 * page, and wants one more. Before its second page is read (offset NEXT),
 * an execution of priority 9 lands at the head, so that page starts at A.
 * The claim hands out A and B, in that order, and both complete.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

#define MAX	2			/* the claim's max */
#define FIRST	(4 * MAX + 16)		/* ids of its first read */
#define NEXT	(4 * FIRST)		/* ids of a next page */
#define HELD	(NEXT - 1)		/* ahead of A: A ends the first page */
#define QUEUED	(HELD + 3)

static struct fx	 F;
static MYSQL		*m, *holder;
static long long	 ids[QUEUED];
static char		 cids[QUEUED][CID_MAX];
static int		 landed;

/* The route's waiting executions in claim order (repo_stmts.c
 * CLAIM_ORDER) into ids and cids; how many. */
static int
queue(void)
{
	char		 q[1024];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	int		 n = 0;

	snprintf(q, sizeof q, "SELECT id, correlation_id FROM "
	    "s2r_async_execution WHERE environment = '%s' AND service_key = "
	    "'%s' AND operation_key = '%s' AND status = 'waiting_callback' "
	    "ORDER BY priority DESC, due_at, id", F.env, F.svc, F.op);
	if (mysql_query(m, q) != 0 || (res = mysql_store_result(m)) == NULL)
		return -1;
	while ((w = mysql_fetch_row(res)) != NULL && n < QUEUED) {
		ids[n] = strtoll(w[0], NULL, 10);
		snprintf(cids[n], sizeof cids[n], "%s", w[1]);
		n++;
	}
	mysql_free_result(res);
	return n;
}

/* Whether client packet p of n bytes is the claim's read of its second
 * page: a statement execution whose last binds, the read's limit and
 * offset (repo_claim.c claim_ids), are NEXT and NEXT (4-byte integers). */
static int
page2(const unsigned char *p, size_t n)
{
	static const unsigned char tail[8] = { NEXT, 0, 0, 0, NEXT, 0, 0, 0 };

	return n > 5 + sizeof tail && p[4] == 0x17 &&	/* COM_STMT_EXECUTE */
	    memcmp(p + n - sizeof tail, tail, sizeof tail) == 0;
}

/* The proxy's hook: work of priority 9 lands at the head, committed. */
static void
land_ahead(void *arg)
{
	struct sub	 s;

	(void)arg;
	landed = fx_submit_hdr_ok(&F, NULL, "{\"lands\":\"ahead\"}",
	    "X-Priority: 9", &s);
}

/* Holds the first HELD of the queue in holder's open transaction; 0 or -1. */
static int
hold(void)
{
	char	 q[8192];
	size_t	 len;
	int	 i;

	/* by primary key: a scan would lock A, B and C as well */
	len = (size_t)snprintf(q, sizeof q, "SELECT id FROM s2r_async_execution "
	    "FORCE INDEX (PRIMARY) WHERE id IN (");
	for (i = 0; i < HELD && len < sizeof q - 32; i++)
		len += (size_t)snprintf(q + len, sizeof q - len, "%s%lld",
		    i > 0 ? "," : "", ids[i]);
	snprintf(q + len, sizeof q - len, ") FOR UPDATE");
	if (f_sql(holder, "SET SESSION TRANSACTION ISOLATION LEVEL READ "
	    "COMMITTED") != 0 || f_sql(holder, "BEGIN") != 0 ||
	    mysql_query(holder, q) != 0)
		return -1;
	mysql_free_result(mysql_store_result(holder));
	return 0;
}

static void
test_pages(void)
{
	struct fcgi_resp	 r;
	struct json_object	*o = NULL;
	struct claim		 c[MAX];
	char			 uri[300], body[32];
	int			 i, st;

	for (i = 0; i < QUEUED; i++) {
		struct sub s;

		CHECK(fx_submit_ok(&F, NULL, "{\"queued\":1}", &s));
	}
	CHECK_EQ_INT(queue(), QUEUED);
	CHECK_EQ_INT(hold(), 0);
	dbproxy_hook(F.svc, page2, land_ahead, NULL);
	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	snprintf(body, sizeof body, "{\"max\":%d}", MAX);
	st = papp_api("POST", uri, F.bkey, NULL, body, &r);
	printf("claim of %d, work landed ahead before its second page: "
	    "%d %.300s\n", MAX, st, r.body ? r.body : "");
	CHECK_EQ_INT(dbproxy_fired(), 1);
	CHECK(landed);
	CHECK_EQ_INT(st, 200);
	memset(c, 0, sizeof c);
	if (st == 200 && (o = json_tokener_parse(r.body ? r.body : "")) != NULL)
		for (i = 0; i < MAX; i++)
			CHECK(fx_claim_item(o, (size_t)i, &c[i]));
	json_object_put(o);
	fcgi_resp_free(&r);
	CHECK_EQ_STR(c[0].cid, cids[HELD]);		/* A */
	CHECK_EQ_STR(c[1].cid, cids[HELD + 1]);		/* B */
	CHECK_EQ_INT(f_sql(holder, "ROLLBACK"), 0);
	for (i = 0; i < MAX; i++)
		if (c[i].cid[0] != '\0')
			CHECK_EQ_INT(fx_complete(&F, &c[i], "\"done\""), 200);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-pages");
	if ((m = f_sql_open()) == NULL || (holder = f_sql_open()) == NULL ||
	    papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_pages();
	papp_stop();
	mysql_close(holder);
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_claim_pages");
}
