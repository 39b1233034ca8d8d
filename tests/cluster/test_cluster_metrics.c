/*
 * test_cluster_metrics.c - each app host's metrics on their own (issue 16, label
 * cluster; scripts/test-cluster.sh).
 *
 * The loopback metrics server of nginx/asyncexec.conf, rendered with one metrics port per
 * app host as the shipped file's template says (scripts/lib/cluster.sh:
 * ASYNCEXEC_TEST_METRICS for host A, _METRICS_B for host B). Asserts:
 *   - SCRAPES successive scrapes of one host's metrics address come from that host: its
 *     own count of answered scrapes (asyncexec_requests_total{endpoint="metrics",
 *     status="200"}) grows by exactly one from each scrape to the next, never backwards,
 *     as it would when nginx balanced the scrapes over both hosts;
 *   - the address is the host's: requests sent to host A only (its own nginx port) show
 *     in host A's metrics address, not in host B's, and the other way round.
 * Nothing else scrapes meanwhile (the cluster tests run one at a time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cluster.h"

#define SCRAPES		20
#define NUDGES		7	/* requests sent to one host only */

static const char scrapes_metric[] =
    "asyncexec_requests_total{endpoint=\"metrics\",status=\"200\"}";
static const char healthz_metric[] =
    "asyncexec_requests_total{endpoint=\"healthz\",status=\"200\"}";

/* SCRAPES scrapes of metrics address ENV_NAME: 1 when each counts one more. */
static int
scrapes_own(const char *env_name)
{
	long	 v[SCRAPES];
	int	 i, ok = 1;

	for (i = 0; i < SCRAPES; i++)
		v[i] = cl_metric(env_name, scrapes_metric);
	for (i = 1; i < SCRAPES; i++)
		if (v[i - 1] < 0 || v[i] != v[i - 1] + 1)
			ok = 0;
	if (!ok) {
		fprintf(stderr, "  %s: successive counts of answered scrapes:", env_name);
		for (i = 0; i < SCRAPES; i++)
			fprintf(stderr, " %ld", v[i]);
		fprintf(stderr, "\n");
	}
	printf("%s: %d scrapes, answered-scrape count %ld .. %ld\n", env_name, SCRAPES,
	    v[0], v[SCRAPES - 1]);
	return ok;
}

/* NUDGES GET /healthz through HTTP_ENV (one host's nginx port): 1 when the host's
 * metrics address MINE counts all of them and OTHER none. */
static int
nudge(const char *http_env, const char *mine, const char *other)
{
	long	 m0 = cl_metric(mine, healthz_metric), o0 = cl_metric(other, healthz_metric);
	long	 m1, o1;
	int	 i;

	for (i = 0; i < NUDGES; i++)
		CHECK_EQ_INT(cl_get_status(http_env, "/healthz"), 200);
	m1 = cl_metric(mine, healthz_metric);
	o1 = cl_metric(other, healthz_metric);
	printf("%d GET /healthz through %s: %s counts %ld more, %s %ld more\n", NUDGES,
	    http_env, mine, m1 - m0, other, o1 - o0);
	return m0 >= 0 && o0 >= 0 && m1 - m0 == NUDGES && o1 == o0;
}

int
main(void)
{
	http_test_init();
	cl_init();
	CHECK(scrapes_own("ASYNCEXEC_TEST_METRICS"));
	CHECK(scrapes_own("ASYNCEXEC_TEST_METRICS_B"));
	CHECK(nudge("ASYNCEXEC_TEST_HTTP_A", "ASYNCEXEC_TEST_METRICS",
	    "ASYNCEXEC_TEST_METRICS_B"));
	CHECK(nudge("ASYNCEXEC_TEST_HTTP_B", "ASYNCEXEC_TEST_METRICS_B",
	    "ASYNCEXEC_TEST_METRICS"));
	return check_done("cluster_metrics");
}
