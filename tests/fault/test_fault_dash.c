/*
 * test_fault_dash.c - the operator dashboard on a database that stopped
 * answering. A private asyncexec-fcgi (papp.h) reaches the shared
 * database through dbproxy, which goes silent (dbproxy_silence: no
 * answer, no refusal); each page is then requested once.
 *
 * A page that reads the database answers 503 with Retry-After at its
 * first read that fails, and runs no statement after it, so that it
 * waits no longer than any request: 15 s (DB_IO_TIMEOUT_SECONDS) plus
 * db_connect_timeout for the one reconnect (asyncexec-fcgi(8), SIGNALS:
 * the stop deadline rests on it). Health answers 200, shows the outage,
 * and stops reading at its first failure too. Before, Attention went on
 * with its six lists and Health with a ping, the schema and the last
 * expiry run, each waiting on the silent database; Routes, Keys,
 * Tenants and Webhooks answered 200 with "the database did not answer".
 *
 * The app runs with dashboard_show_errors = 1: first, on the database
 * still answering, a failure's error code and message are shown (the
 * stack's dash_pages, with 0, sees neither).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"
#include "papp.h"

#define IO_TIMEOUT_MS	15000	/* DB_IO_TIMEOUT_SECONDS, src/db/db_io.h */
#define SLACK_MS	3000	/* the request's own work, a loaded host */

static struct fx	 F;

/* The longest a request may wait on the silent database (one node). */
static long long
bound_ms(void)
{
	return IO_TIMEOUT_MS + config_long("db_connect_timeout", 2) * 1000 +
	    SLACK_MS;
}

/* GET /dashboard/PAGE into r; its status, *took the ms it took. */
static int
page(const char *name, struct fcgi_resp *r, long long *took)
{
	char		 uri[64];
	long long	 t0 = ut_now_ms();
	int		 st;

	snprintf(uri, sizeof uri, "/dashboard/%s", name);
	st = papp_api("GET", uri, F.bkey, NULL, NULL, r);
	*took = ut_now_ms() - t0;
	printf("GET %s on a silent database: %d after %lld ms (bound %lld)\n",
	    uri, st, *took, bound_ms());
	return st;
}

/*
 * With dashboard_show_errors = 1 (this app's config) a failure's code
 * and message are on the Attention page of its route and its code on
 * its execution's page (dash_pages: none of them with the stack's 0).
 */
static void
test_shown(void)
{
	const char *fail = "{\"error\":{\"code\":\"E_SHOWN\","
	    "\"message\":\"shown <b>\"}}";
	struct sub s;
	struct claim c;
	struct http_resp h;
	struct fcgi_resp r;
	char uri[300];

	CHECK(fx_submit_claim(&F, "{\"x\":1}", &s, &c));
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "fail", c.token, fail, &h), 200);
	http_resp_free(&h);
	snprintf(uri, sizeof uri, "/dashboard/attention?route=%s", F.route);
	CHECK_EQ_INT(papp_api("GET", uri, F.bkey, NULL, NULL, &r), 200);
	CHECK(r.out != NULL && strstr(r.out, "<th>Error code</th>") != NULL &&
	    strstr(r.out, "<td>E_SHOWN</td><td>shown &lt;b&gt;</td>") != NULL);
	fcgi_resp_free(&r);
	snprintf(uri, sizeof uri, "/dashboard/execution/%lld", (long long)c.id);
	CHECK_EQ_INT(papp_api("GET", uri, F.bkey, NULL, NULL, &r), 200);
	CHECK(r.out != NULL && strstr(r.out,
	    "<tr><th>Error code</th><td>E_SHOWN</td></tr>") != NULL);
	fcgi_resp_free(&r);
}

static void
test_silent(void)
{
	static const char *const pages[] = { "attention", "routes", "keys",
	    "tenants", "webhooks" };
	struct fcgi_resp r;
	long long	 took;
	size_t		 i;

	/* the dashboard's own connection made, every statement prepared */
	for (i = 0; i < sizeof pages / sizeof pages[0]; i++) {
		CHECK_EQ_INT(page(pages[i], &r, &took), 200);
		fcgi_resp_free(&r);
	}
	dbproxy_silence(1);
	for (i = 0; i < sizeof pages / sizeof pages[0]; i++) {
		CHECK_EQ_INT(page(pages[i], &r, &took), 503);
		CHECK(fcgi_header(&r, "Retry-After") != NULL);
		CHECK(took <= bound_ms());
		fcgi_resp_free(&r);
	}
	CHECK_EQ_INT(page("health", &r, &took), 200);
	CHECK(took <= bound_ms());
	CHECK(r.out != NULL && strstr(r.out, "<tr><th>Galera state</th>"
	    "<td>unknown</td></tr>") != NULL);
	fcgi_resp_free(&r);
	dbproxy_silence(0);
}

int
main(void)
{
	http_test_init();
	f_init();
	fx_setup(&F, "fault-dash");
	papp_extra("dashboard_show_errors = 1\n");
	if (papp_start(F.bkey) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	test_shown();
	test_silent();
	papp_stop();
	fx_free(&F);
	return check_done("fault_dash");
}
