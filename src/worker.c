/*
 * worker.c - the FastCGI accept loop of one worker process:
 * request -> router -> handler -> response.
 *
 * The worker connects to the database after fork and prepares every
 * statement. SIGTERM (installed without SA_RESTART) calls
 * FCGX_ShutdownPending(), so a blocked accept returns and the worker
 * exits. SIGTERM is blocked while a request is served, so the request
 * in flight is answered first; the master repeats SIGTERM until every
 * worker is gone, which also covers libfcgi's window between its
 * shutdown check and accept().
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <fcgiapp.h>

#include "config.h"
#include "http.h"
#include "log.h"
#include "lookup.h"
#include "metrics.h"
#include "repo.h"
#include "router.h"
#include "worker.h"

static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
	FCGX_ShutdownPending();
}

/* Installs the worker's signal dispositions and unblocks signals. */
static void
worker_signals(void)
{
	struct sigaction sa;
	sigset_t	 all;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;		/* no SA_RESTART */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

static double
elapsed(const struct timespec *t0)
{
	struct timespec	 t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Serves one accepted request end to end. */
static void
serve(struct app *app, FCGX_Request *fr)
{
	struct req		 req;
	struct resp		 resp;
	struct route_match	 m = { ROUTE_NONE, HERR_INTERNAL, NULL };
	struct timespec		 t0;
	enum herr		 err = HERR_INTERNAL;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	metrics_busy(1);
	resp_init(&resp);
	if (req_from_params(&req, fr) == 0) {
		router_match(&req, &m);
		log_context(req.request_id, router_name(m.route));
		err = m.err;
		resp.allow = m.allow;
		if (err == HERR_OK)
			err = router_handler(m.route)(app, &req, &resp);
	}
	if (err != HERR_OK) {
		buf_reset(&resp.headers);
		resp_problem(&resp, err);
		if (resp.status == 503)
			resp_header(&resp, "Retry-After", "%u",
			    app->cfg->retry_after_seconds);
	}
	if (req.request_id != NULL)
		resp_header(&resp, "X-Request-Id", "%s", req.request_id);
	if (resp_write(&resp, fr, strcmp(req.method, "HEAD") == 0) == -1)
		log_debug("client went away before the response was written");
	metrics_request((int)m.route, resp.status, elapsed(&t0));
	metrics_busy(-1);
	log_context(NULL, NULL);
	req_free(&req);
	resp_free(&resp);
}

/*
 * Runs the accept loop on listen_fd until SIGTERM. Returns the process
 * exit status: 0 after a clean stop, 1 when accept keeps failing.
 */
int
worker_run(const struct config *cfg, int listen_fd)
{
	struct app	 app = { 0 };	/* idkey_ok 0: the key loads on first use */
	FCGX_Request	 fr;
	sigset_t	 term;
	int		 failures = 0, rc;

	worker_signals();
	app.cfg = cfg;
	if ((app.db = repo_open(cfg, 1)) == NULL ||
	    (app.lookup = lookup_new(cfg->cache_ttl_seconds)) == NULL ||
	    FCGX_Init() != 0 ||
	    FCGX_InitRequest(&fr, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_error("worker: cannot initialise");
		return 1;
	}
	(void)repo_ping(app.db);	/* connect and prepare now */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	while (!stopping) {
		/* SIGTERM only while waiting in accept: a request in flight
		 * never sees EINTR and always runs to its end. */
		sigprocmask(SIG_UNBLOCK, &term, NULL);
		rc = FCGX_Accept_r(&fr);
		sigprocmask(SIG_BLOCK, &term, NULL);
		if (rc < 0) {
			if (stopping || errno == EINTR)
				continue;
			log_error("worker: accept failed: %s", strerror(errno));
			if (++failures > 100)
				return 1;
			continue;
		}
		failures = 0;
		serve(&app, &fr);
		FCGX_Finish_r(&fr);
	}
	FCGX_Free(&fr, 1);
	lookup_free(app.lookup);
	repo_close(app.db);
	return 0;
}
