/*
 * test_http_nginx.c - what nginx answers itself is in the contract's format too: methods
 * nginx refuses (TRACE), and the collection paths without a trailing slash, which nginx
 * used to answer with an HTML 301 to an absolute http:// URL. Never a redirect, never HTML.
 * The per-client rate limit covers the API, the collection paths without a
 * trailing slash, /healthz, /readyz and the catch-all location: every
 * location of the public server that passes to the application.
 */
#include "check.h"
#include "fixture.h"

#include <pthread.h>
#include <string.h>

/* A problem+json answer with no-store, no Location header and no HTML. */
static void
check_problem(const char *method, const char *path, int status, const char *code)
{
	struct http_resp r;

	http_do(method, path, NULL, NULL, 0, &r);
	if (!expect_problem(&r, status, code))
		fprintf(stderr, "  ... for %s %s\n", method, path);
	CHECK(expect_problem(&r, status, code));
	CHECK(http_header(&r, "location") == NULL);
	CHECK(r.body == NULL || strstr(r.body, "<html") == NULL);
	http_resp_free(&r);
}

/*
 * nginx's request id reaches the application, which echoes it (X-Request-Id) and logs it;
 * nginx's access log carries it too, never the Authorization header or the poll token.
 */
static void
test_request_id(void)
{
	struct http_resp r;
	const char *id;

	api("GET", "/healthz", NULL, NULL, &r, (const char *)NULL);
	id = http_header(&r, "x-request-id");
	CHECK(id != NULL && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32);
	http_resp_free(&r);
}

/* Shared by the rate-limit clients: the path, the first 429 seen, anything unexpected. */
static struct {
	pthread_mutex_t	 mu;
	const char	*path;
	int		 want;		/* the status when not limited */
	int		 limited, other, problem_ok, retry_after, last_other;
} rl = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0 };

/* One client of the burst: requests rl.path until someone saw 429, 600 at most. */
static void *
rl_client(void *arg)
{
	struct http_resp r;
	int i, done = 0;

	(void)arg;
	for (i = 0; i < 600 && !done; i++) {
		api("GET", rl.path, NULL, NULL, &r, (const char *)NULL);
		pthread_mutex_lock(&rl.mu);
		if (r.status == 429 && rl.limited++ == 0) {
			rl.problem_ok = expect_problem(&r, 429, "quota_exceeded");
			rl.retry_after = http_header(&r, "retry-after") != NULL;
		} else if (r.status != 429 && r.status != rl.want) {
			rl.other++;
			rl.last_other = r.status;
		}
		done = rl.limited > 0;
		pthread_mutex_unlock(&rl.mu);
		http_resp_free(&r);
	}
	return NULL;
}

/*
 * Per-client rate limit on PATH (answered WANT when not limited): a client that is not on
 * loopback (SOURCE, one of 127.0.0.2..: the limit exempts only 127.0.0.1 and ::1, and
 * each source has a budget of its own) sending far more than the burst (400) gets 429 in
 * the contract's format with Retry-After; loopback keeps being served meanwhile. Eight
 * concurrent connections, so that a loaded machine still outruns 200 requests/s.
 */
static void
rate_limit(const char *source, const char *path, int want)
{
	enum { NCLIENTS = 8 };
	pthread_t t[NCLIENTS];
	struct http_resp r;
	int i;

	rl.path = path;
	rl.want = want;
	rl.limited = rl.other = rl.problem_ok = rl.retry_after = rl.last_other = 0;
	http_set_source(source);
	for (i = 0; i < NCLIENTS; i++)
		pthread_create(&t[i], NULL, rl_client, NULL);
	for (i = 0; i < NCLIENTS; i++)
		pthread_join(t[i], NULL);
	http_set_source(NULL);
	if (rl.limited == 0 || rl.other != 0)
		fprintf(stderr, "  %s from %s: %d answers 429, %d others (last %d)\n", path,
		    source, rl.limited, rl.other, rl.last_other);
	CHECK(rl.limited >= 1);
	CHECK(rl.problem_ok && rl.retry_after);
	CHECK_EQ_INT(rl.other, 0);
	api("GET", path, NULL, NULL, &r, (const char *)NULL);
	CHECK_EQ_INT(r.status, want);
	http_resp_free(&r);
}

/*
 * The API, and (issue 16) the probes and the catch-all location too; and the
 * exact locations of the collection paths without a trailing slash, which
 * pass to the application (404) and went unlimited.
 */
static void
test_rate_limit(void)
{
	rate_limit("127.0.0.3", "/v1/executions/a/b/c/d", 401);
	rate_limit("127.0.0.4", "/healthz", 200);
	rate_limit("127.0.0.5", "/readyz", 200);
	rate_limit("127.0.0.6", "/no/such/path", 404);
	rate_limit("127.0.0.7", "/v1/executions", 404);
	rate_limit("127.0.0.8", "/v1/backend", 404);
	rate_limit("127.0.0.9", "/v1/callbacks", 404);
}

int
main(void)
{
	static const char *const collections[] = { "/v1/executions", "/v1/backend",
	    "/v1/callbacks", "/v1", NULL };
	size_t i;

	http_test_init();
	check_problem("TRACE", "/", 405, "method_not_allowed");
	check_problem("TRACE", "/v1/executions/a/b/c", 405, "method_not_allowed");
	for (i = 0; collections[i] != NULL; i++) {
		check_problem("GET", collections[i], 404, "not_found");
		check_problem("POST", collections[i], 404, "not_found");
	}
	test_request_id();
	test_rate_limit();
	return check_done("http_nginx");
}
