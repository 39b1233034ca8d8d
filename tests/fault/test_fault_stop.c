/*
 * test_fault_stop.c - a graceful stop while a request waits on a
 * database that stopped answering. A private asyncexec-fcgi (papp.h)
 * reaches the shared database through dbproxy, which goes silent
 * (dbproxy_silence: no answer, no refusal, every connection open); a
 * claim then waits on its first statement, and the master gets SIGTERM.
 *
 * The worker must answer the claim 503 with Retry-After before the
 * master's stop deadline (STOP_KILL_SECONDS, src/serve/master.c), and
 * the master exit 0: every database wait of a request (the socket's
 * read timeout, then one reconnect, db_connect_timeout) ends inside
 * the deadline. When the read timeout was above it, the worker was
 * SIGKILLed with the request unanswered (nginx: 502) and the master
 * exited 1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

#define SEEN_MS		5000	/* for the claim's first packet */
#define EXIT_MS		40000	/* for the master, after SIGTERM */

static struct fx	 F;

struct req {
	struct fcgi_resp r;
	int		 st;
	long long	 took;	/* ms, request to answer */
};

/* One claim of one on F's route, into the struct req arg. */
static void *
claim(void *arg)
{
	struct req	*q = arg;
	char		 uri[300];
	long long	 t0 = ut_now_ms();

	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	q->st = papp_api("POST", uri, F.bkey, NULL, "{\"max\":1}", &q->r);
	q->took = ut_now_ms() - t0;
	return NULL;
}

static void
test_stop_silent_db(void)
{
	struct req	 q;
	pthread_t	 th;
	long long	 until, t0;
	int		 f0 = dbproxy_fired(), rc;
	const char	*ra;

	memset(&q, 0, sizeof q);
	dbproxy_silence(1);
	pthread_create(&th, NULL, claim, &q);
	/* bounded: until the claim's first statement was thrown away */
	until = ut_now_ms() + SEEN_MS;
	while (dbproxy_fired() == f0 && ut_now_ms() < until)
		ut_pause_ms(10);
	CHECK(dbproxy_fired() > f0);
	t0 = ut_now_ms();
	CHECK_EQ_INT(papp_signal(SIGTERM), 0);
	pthread_join(th, NULL);
	rc = papp_wait(EXIT_MS);
	dbproxy_silence(0);
	ra = fcgi_header(&q.r, "Retry-After");
	printf("claim on a silent database, SIGTERM: %d after %lld ms, "
	    "Retry-After %s; master exit %d after %lld ms\n", q.st, q.took,
	    ra ? ra : "(none)", rc, ut_now_ms() - t0);
	CHECK_EQ_INT(q.st, 503);
	CHECK(ra != NULL);
	CHECK_EQ_INT(rc, 0);
	CHECK(papp_log_contains("killing them") == 0);
	fcgi_resp_free(&q.r);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-stop");
	if (papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_stop_silent_db();
	papp_stop();
	fx_free(&F);
	return check_done("fault_stop");
}
