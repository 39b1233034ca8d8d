/*
 * test_operator_pages.c - the operator pages (GET /readyz/detail and
 * every /dashboard/... page) are served only to a request that carries
 * the FastCGI parameter ASYNCEXEC_OPERATOR_PAGES = 1, which the shipped
 * nginx site sets on its loopback server alone. A site kept from 0.2.0
 * (a dpkg conffile an operator edited for TLS) passes every path but
 * /metrics from its public server to the application: the application
 * must not answer those pages there.
 *
 * A master with one worker, on the test stack's database, spoken to in
 * raw FastCGI (no nginx: the site's public server as 0.2.0 shipped it
 * adds nothing to a request). An execution of a route of its own gives
 * the execution page an id that exists. For each operator path:
 *
 *   - without the parameter (GET, HEAD, POST) and with another value:
 *     404 with the body of an unknown path, byte for byte (no page
 *     content, no 405 that would tell the route exists);
 *   - with ASYNCEXEC_OPERATOR_PAGES = 1: 200;
 *
 * GET /metrics without it: 200 (the 0.2.0 site refused it publicly
 * already; its scrapes through the loopback server go on). The worker
 * logged the warning that names the parameter, the .dpkg-dist and
 * asyncexec-ops(7) exactly once over all those requests.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fcgi_client.h"
#include "load.h"
#include "proc_util.h"

#define PARAM	FCGI_OPERATOR_PARAM	/* nginx/asyncexec.conf */
#define WARNING	"without the FastCGI parameter " PARAM

/*
 * One request on a new connection to sock; op: the parameter's value
 * (NULL: not sent), auth: the Authorization and X-Correlation-Id values
 * (or NULL), body: JSON (or NULL). Fills r (the caller frees it); its
 * status, 0 on failure.
 */
static int
request(const char *sock, const char *method, const char *uri,
    const char *op, const char *const auth[2], const char *body,
    struct fcgi_resp *r)
{
	const char	*kv[2 * (FCGI_BASE_PARAMS + 3)];
	char		 clen[32];
	size_t		 n, blen = body ? strlen(body) : 0;
	long long	 dl = ut_now_ms() + REQ_MS;
	int		 fd;

	memset(r, 0, sizeof(*r));
	snprintf(clen, sizeof(clen), "%zu", blen);
	n = fcgi_base_params(kv, method, uri,
	    body ? "application/json" : NULL, clen);
	if (op != NULL)
		kv[2 * n] = PARAM, kv[2 * n + 1] = op, n++;
	if (auth != NULL) {
		kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth[0], n++;
		kv[2 * n] = "HTTP_X_CORRELATION_ID", kv[2 * n + 1] = auth[1],
		    n++;
	}
	if ((fd = fcgi_connect(sock)) == -1)
		return 0;
	if (fcgi_begin(fd, dl) == 0 && fcgi_params(fd, kv, n, dl) == 0 &&
	    (blen == 0 || fcgi_stdin(fd, body, blen, dl) == 0) &&
	    fcgi_stdin(fd, NULL, 0, dl) == 0)
		(void)fcgi_read(fd, r, dl);
	close(fd);
	return r->status;
}

/*
 * Submits one execution of this process's route (proc_route_key) and
 * reads its id back with asyncexec-admin execution show. The id, or 0.
 */
static unsigned long long
seed_execution(const char *sock)
{
	static char	 out[4096], err[4096];
	char		 route[160], tenant[64];
	const char	*sub, *hdr[2] = { NULL, "opages-1" }, *p;
	struct fcgi_resp r;
	int		 st;

	if (proc_route_key(&sub, &hdr[0]) == -1)
		return 0;
	st = request(sock, "POST", sub, NULL, hdr, "{\"n\":1}", &r);
	fcgi_resp_free(&r);
	CHECK_EQ_INT(st, 202);
	snprintf(route, sizeof(route), "%s", sub + strlen("/v1/executions/"));
	snprintf(tenant, sizeof(tenant), "proc-%ld", (long)getpid());
	{
		char *argv[] = { (char *)admin_bin, "--config",
		    (char *)base_cfg, "--json", "execution", "show",
		    "--tenant", tenant, route, "opages-1", NULL };

		st = run(argv, out, err, sizeof(out), 30000);
	}
	if (st != 0 || (p = strstr(out, "\"id\":")) == NULL) {
		fprintf(stderr, "execution show: %d: %s%s\n", st, out, err);
		return 0;
	}
	return strtoull(p + 5, NULL, 10);
}

/* The status and body of r as "STATUS BODY" into out (size bytes). */
static void
answer(const struct fcgi_resp *r, char *out, size_t size)
{
	snprintf(out, size, "%d %.*s", r->status,
	    r->body ? (int)r->body_len : 0, r->body ? r->body : "");
}

/* uri, requested as method with parameter value op (NULL: none), is
 * answered exactly as the unknown path (want: its answer). */
static void
hidden(const char *sock, const char *method, const char *uri,
    const char *op, const char *want)
{
	struct fcgi_resp r;
	char		 got[4096];

	(void)request(sock, method, uri, op, NULL, NULL, &r);
	answer(&r, got, sizeof(got));
	if (strcmp(method, "HEAD") == 0)	/* no body: the status */
		got[3] = '\0';
	if (strcmp(got, strcmp(method, "HEAD") == 0 ? "404" : want) != 0)
		fprintf(stderr, "%s %s (%s=%s): %.200s\n", method, uri, PARAM,
		    op ? op : "absent", got);
	CHECK_EQ_STR(got, strcmp(method, "HEAD") == 0 ? "404" : want);
	CHECK(fcgi_header(&r, "Allow") == NULL);
	fcgi_resp_free(&r);
}

/* Each operator path (execution id's page among them) hidden without
 * the parameter and served with it; /metrics served without. */
static void
pages(const char *sock, unsigned long long id)
{
	static const char *const paths[] = { "/readyz/detail", "/dashboard/",
	    "/dashboard/health", "/dashboard/routes", "/dashboard/attention",
	    "/dashboard/tenants", "/dashboard/webhooks", "/dashboard/keys",
	    "/dashboard/style.css", NULL /* the execution's page */ };
	struct fcgi_resp r;
	char		 want[4096], exec[64];
	const char	*uri;
	size_t		 i;

	(void)request(sock, "GET", "/no-such-page", NULL, NULL, NULL, &r);
	answer(&r, want, sizeof(want));
	fcgi_resp_free(&r);
	CHECK(strncmp(want, "404 {", 5) == 0);
	snprintf(exec, sizeof(exec), "/dashboard/execution/%llu", id);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		uri = paths[i] != NULL ? paths[i] : exec;
		hidden(sock, "GET", uri, NULL, want);
		hidden(sock, "HEAD", uri, NULL, want);
		hidden(sock, "POST", uri, NULL, want);
		hidden(sock, "GET", uri, "0", want);
		hidden(sock, "GET", uri, "", want);
		if (request(sock, "GET", uri, "1", NULL, NULL, &r) != 200)
			fprintf(stderr, "GET %s (%s=1): %d\n", uri, PARAM,
			    r.status);
		CHECK_EQ_INT(r.status, 200);
		fcgi_resp_free(&r);
	}
	CHECK_EQ_INT(request(sock, "GET", "/metrics", NULL, NULL, NULL, &r),
	    200);
	fcgi_resp_free(&r);
}

int
main(void)
{
	const char		*cfg, *sock, *log;
	unsigned long long	 id;
	pid_t			 m;

	if (proc_init("operator_pages") == -1)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	cfg = path_in_tmp("op.conf");
	sock = path_in_tmp("op.sock");
	log = path_in_tmp("op.log");
	if ((m = up_derived(cfg, sock, log, 1)) == -1)
		return check_done("proc_operator_pages");
	id = seed_execution(sock);
	CHECK(id > 0);
	pages(sock, id);
	/* once for the worker, not once per request */
	CHECK_EQ_INT(log_count(log, WARNING), 1);
	CHECK(log_count(log, ".dpkg-dist") == 1 &&
	    log_count(log, "asyncexec-ops(7)") == 1);
	down(m, log);
	kill_all();
	remove_tmpdir();
	return check_done("proc_operator_pages");
}
