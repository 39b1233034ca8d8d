/*
 * worker.c - the FastCGI accept loop of one worker process:
 * request -> router -> handler -> response.
 *
 * The worker connects to the database after fork and prepares every
 * statement. It waits in one ppoll(2) on the listening socket and on
 * every connection nginx keeps open to it (held.c), and serves what is
 * readable, one request at a time. SIGTERM and SIGINT are blocked all
 * the time except in that wait, which lets them in atomically: the
 * handler sets stopping (and FCGX_ShutdownPending()), ppoll returns
 * EINTR, and the worker accepts no more but serves its kept connections
 * until the web server has closed them (retire), then exits. A signal
 * arriving anywhere else waits for the request to be answered,
 * including the worker's accept and libfcgi's read of the params inside
 * FCGX_Accept_r: a signal there would close that connection unanswered.
 * The listening socket is made non-blocking, so the workers that lose
 * the race for a connection get EAGAIN and wait again instead of
 * blocking in accept with the signals held.
 *
 * On every listener the worker accepts a new connection itself, and only
 * then takes a slot for it (held.h: at HELD_MAX, closing the least
 * recently served idle kept connection) and hands it to libfcgi
 * (conn_give), whose slots never accept: every worker's ppoll wakes for
 * a new connection and all but one find none (EAGAIN), and a worker
 * that closed a kept connection before its accept found nothing closed
 * it for nothing (nginx may be sending a request on it: 502 for a
 * POST). On a unix listener (peer_accept_unix) the socket file's mode
 * and group guard it; a new connection whose first bytes have not come
 * yet waits in its slot for the next ppoll instead of holding the worker
 * in read (libfcgi's accept waited 2 s for them, then closed it).
 *
 * On a TCP listener (AF_INET, or AF_INET6 such as a dual-stack socket
 * systemd passes) the worker accepts with peer_accept and checks the
 * peer against listen_allow (peer.c) before a byte is read from it: one
 * not on the list is closed at once without an answer and logged (one
 * line, then at most one per REFUSE_LOG_MS); only an allowed one then
 * takes a slot. libfcgi's own check (FCGI_WEB_SERVER_ADDRS) sees AF_INET
 * peers only, and it reads an AF_INET6 peer's first record inside its
 * accept, blocking with SIGTERM held: a silent connection from any peer
 * would hold the worker for ever. Reads and writes on an accepted TCP
 * connection give up after PEER_IO_TIMEOUT_SECONDS (peer.h).
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "accept.h"
#include "clock.h"
#include "config.h"
#include "conn.h"
#include "db_io.h"
#include "held.h"
#include "http.h"
#include "log.h"
#include "lookup.h"
#include "quota.h"
#include "metrics.h"
#include "peer.h"
#include "repo.h"
#include "repo_dash.h"
#include "router.h"
#include "worker.h"

#define REFUSE_LOG_MS	10000	/* one "refused a connection" line per */
#define RETIRE_MS	20000	/* after SIGTERM, at most (retire_window) */
#define RETIRE_SLACK_MS	1000	/* a request's work beside its db waits */
#define ACCEPT_FAILURES	100	/* in a row, and the worker exits 1 */

static volatile sig_atomic_t stopping;
static int64_t	 term_ms;	/* CLOCK_MONOTONIC: the stop began (or before) */
static int64_t	 woke_ms;	/* CLOCK_MONOTONIC: the last wait returned */

/* The refused connections of this worker, for the log's rate. */
struct refusals {
	struct timespec	 last;		/* of the last line logged */
	unsigned long	 held;		/* refused since, not logged */
	int		 logged;	/* a line was ever logged */
};

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
	conn_shutdown_pending();
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

/* Records that the stop began at (unless an earlier time was). */
static void
mark_term(int64_t at)
{
	stopping = 1;
	if (term_ms == 0)
		term_ms = at;
}

/* Whether SIGTERM or SIGINT is pending (blocked, not delivered). */
static int
term_pending(void)
{
	sigset_t	 pend;

	return sigpending(&pend) == 0 && (sigismember(&pend, SIGTERM) == 1 ||
	    sigismember(&pend, SIGINT) == 1);
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
serve(struct app *app, struct conn *c)
{
	struct req	 req;
	struct resp	 resp;
	struct timespec	 t0;
	enum route	 route;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	metrics_busy(1);
	resp_init(&resp);
	route = router_serve(app, conn_io(c), &req, &resp);
	if (resp_write(&resp, conn_io(c), strcmp(req.method, "HEAD") == 0) == -1)
		log_debug("client went away before the response was written");
	metrics_request((int)route, resp.status, elapsed(&t0));
	metrics_busy(0);
	log_context(NULL, NULL);
	req_free(&req);
	resp_free(&resp);
}

/*
 * Waits until the listening socket or a kept connection of h is
 * readable, with the signal mask waitmask (SIGTERM let in) for that wait
 * only; fills r. 0, else -1 (errno EINTR after SIGTERM or SIGINT,
 * stopping set, and term_ms: the handler runs only here, so a signal
 * that came while a request was served is dated from when that round
 * began, woke_ms, never later than it came).
 */
static int
wait_conn(struct held *h, const sigset_t *waitmask, struct held_ready *r)
{
	int	 held = term_pending();

	if (held_wait(h, 1, -1, waitmask, r) == -1) {
		if (stopping)
			mark_term(held ? woke_ms : clock_mono_ms());
		return -1;
	}
	/* A ppoll that finds a socket ready restores the mask without
	 * delivering a pending signal: under load it always is. */
	if (term_pending()) {
		mark_term(held ? woke_ms : clock_mono_ms());
		errno = EINTR;
		return -1;
	}
	woke_ms = clock_mono_ms();
	return 0;
}

/*
 * Asks for SIGTERM when the master dies (Linux), so that the worker
 * stops as on a graceful stop: the socket then refuses connections and
 * nginx sends to another app host instead of to orphans nobody
 * replaces. A master already gone (the worker's parent is no longer
 * it) stops the worker at once.
 */
static void
follow_master(pid_t master)
{
#ifdef __linux__
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1)
		log_warn("worker: PR_SET_PDEATHSIG: %s", strerror(errno));
#endif
	if (getppid() != master)
		mark_term(clock_mono_ms());
}

/* What one accept of the worker's own did. */
enum take {
	TAKE_ALLOWED,		/* a unix or allowed peer's connection */
	TAKE_REFUSED,		/* not on listen_allow (or gone): closed */
	TAKE_NONE,		/* none waiting, interrupted, or one aborted */
	TAKE_FAILED		/* accept failed (errno) */
};

/* Logs a refused connection from addr, rate limited by r. */
static void
refused(struct refusals *r, const char *addr)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (r->logged && (now.tv_sec - r->last.tv_sec) * 1000 +
	    (now.tv_nsec - r->last.tv_nsec) / 1000000 < REFUSE_LOG_MS) {
		r->held++;
		return;
	}
	log_warn("worker: refused a connection from %s: not in listen_allow; "
	    "closed unanswered (%lu more since the last such line)", addr,
	    r->held);
	r->last = now;
	r->held = 0;
	r->logged = 1;
}

/* Makes the listening socket fd non-blocking; 0 or -1 (logged). */
static int
nonblocking(int fd)
{
	int	 fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_error("worker: listening socket: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* What the serving loop of one worker carries from request to request. */
struct loop {
	struct app		 app;	/* idkey_ok 0: the key loads on first use */
	const struct config	*cfg;
	struct refusals		 refused;
	int			 listen_fd;
	int			 check_peers;	/* a TCP listener */
	int			 failures;	/* accepts failed in a row */
};

/* What serve_next did. */
enum served {
	SERVED,		/* a request answered, or a connection closed */
	SERVED_NONE,	/* nothing to accept there (EAGAIN, EINTR) */
	SERVED_FATAL	/* accept failed more than ACCEPT_FAILURES times */
};

/*
 * Accepts a connection on the listener (before it has a slot); on a TCP
 * listener it checks the peer against listen_allow before a byte is
 * read from it. An allowed one's fd (any on a unix listener) goes to
 * *fd; one not on the list (or gone) is closed at once, unanswered, and
 * logged. TAKE_ALLOWED, TAKE_REFUSED, TAKE_NONE, or TAKE_FAILED (errno).
 */
static enum take
take(struct loop *l, int *fd)
{
	char	 addr[PEER_ADDR_MAX];

	*fd = l->check_peers ? peer_accept(l->listen_fd) :
	    peer_accept_unix(l->listen_fd);
	if (*fd == -1)
		return accept_transient(errno) ? TAKE_NONE : TAKE_FAILED;
	l->failures = 0;
	if (!l->check_peers)
		return TAKE_ALLOWED;
	switch (peer_check(*fd, l->cfg->listen_allow, addr, sizeof(addr))) {
	case PEER_ALLOWED:
		return TAKE_ALLOWED;
	case PEER_REFUSED:
	case PEER_UNKNOWN:
		break;
	}
	(void)close(*fd);
	refused(&l->refused, addr);
	return TAKE_REFUSED;
}

/*
 * An accept failed (errno): logged, unless the stop began, SIGTERM held
 * included (the master shuts a TCP listening socket down right after
 * it: accept then fails EINVAL); SERVED_NONE, or SERVED_FATAL.
 */
static enum served
failed(struct loop *l)
{
	if (stopping || term_pending())
		return SERVED_NONE;
	log_error("worker: accept failed: %s", strerror(errno));
	return ++l->failures > ACCEPT_FAILURES ? SERVED_FATAL : SERVED_NONE;
}

/*
 * Accepts the next request on c (read from its kept connection, or from
 * the one serve_new gave it) and serves it. SERVED, SERVED_NONE, or
 * SERVED_FATAL.
 */
static enum served
serve_next(struct loop *l, struct conn *c)
{
	switch (conn_accept(c)) {
	case CONN_AGAIN:
		return SERVED_NONE;
	case CONN_CLOSED:
		return SERVED;	/* a connection closed */
	case CONN_FAILED:
		return failed(l);
	case CONN_ACCEPTED:
		break;
	}
	l->failures = 0;
	serve(&l->app, c);
	conn_finish(c);
	return SERVED;
}

/* Whether fd has bytes (or its end) to read now: 1 or 0. */
static int
readable(int fd)
{
	struct pollfd	 p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

/*
 * Serves a new connection in the slot held_take gives for slot
 * (HELD_LISTEN or HELD_FREE; held_room said there is one). It is
 * accepted first (on a TCP listener its peer checked): only an allowed
 * one takes the slot, so neither a refused peer nor an accept that finds
 * none waiting (another worker took it) closes an idle kept connection.
 * A unix connection with nothing to read yet stays in its slot for the
 * next wait. SERVED, SERVED_NONE, or SERVED_FATAL.
 */
static enum served
serve_new(struct loop *l, struct held *h, int slot)
{
	struct conn	*c;
	int		 fd;

	switch (take(l, &fd)) {
	case TAKE_ALLOWED:
		break;
	case TAKE_REFUSED:
		return SERVED;
	case TAKE_NONE:
		return SERVED_NONE;
	case TAKE_FAILED:
		return failed(l);
	}
	c = held_take(h, slot);
	conn_give(c, fd);
	if (!l->check_peers && !readable(fd))
		return SERVED;
	return serve_next(l, c);
}

/*
 * Serves what one wait found ready: each ready kept connection, and,
 * when the listening socket was ready, a new connection after each of
 * them and one more, until accept finds none. So the requests nginx
 * sent on new connections (its idle kept ones all busy) take turns with
 * the kept ones instead of one a round behind all of them. Only the
 * first accept of a round may close an idle kept connection for its
 * slot (held_take, once the accept found a connection, on a TCP
 * listener an allowed peer's: serve_new); the others take free slots.
 * 0, or -1 after SERVED_FATAL.
 */
static int
serve_round(struct loop *l, struct held *h, const struct held_ready *r)
{
	struct conn	*c;
	enum served	 done;
	int		 accepting = r->n > 0 && r->slot[r->n - 1] == HELD_LISTEN;
	int		 kept = r->n - accepting, k, slot = HELD_LISTEN;

	for (k = 0; k <= kept; k++) {
		if (k < kept && (c = held_take(h, r->slot[k])) != NULL &&
		    serve_next(l, c) == SERVED_FATAL)
			return -1;
		if (!accepting || !held_room(h, slot))
			continue;
		done = serve_new(l, h, slot);
		slot = HELD_FREE;
		switch (done) {
		case SERVED:
			break;
		case SERVED_NONE:
			accepting = 0;
			break;
		case SERVED_FATAL:
			return -1;
		}
	}
	return 0;
}

/*
 * How long after the stop began the worker serves its kept connections,
 * in ms: a request started then must end before the master's SIGKILL
 * (STOP_KILL_SECONDS after the SIGTERM) even when it waits the longest
 * on the database (the read timeout, then a reconnect that tries each
 * db_hosts node for db_connect_timeout), with RETIRE_SLACK_MS for its
 * own work. RETIRE_MS at most; 0 when no such request fits. The read
 * timeout is a worker's (DB_IO_TIMEOUT_SECONDS, db_serving) whichever
 * process asks: --check-config's serves nothing.
 */
static int64_t
retire_window(const struct config *cfg)
{
	int64_t	 nodes = cfg->db_nhosts > 0 ? (int64_t)cfg->db_nhosts : 1;
	int64_t	 w = STOP_KILL_SECONDS * 1000LL - RETIRE_SLACK_MS -
		    ((int64_t)DB_IO_TIMEOUT_SECONDS +
		    nodes * cfg->db_connect_timeout) * 1000;

	return w < 0 ? 0 : w > RETIRE_MS ? RETIRE_MS : w;
}

/*
 * Whether cfg leaves a request's longest database wait (retire_window)
 * room before the master's SIGKILL. 0, or -1 with why, naming the keys,
 * in err (size bytes).
 */
int
worker_waits_fit(const struct config *cfg, char *err, size_t size)
{
	unsigned	 nodes = cfg->db_nhosts > 0 ? cfg->db_nhosts : 1;
	long		 room = (STOP_KILL_SECONDS * 1000L - RETIRE_SLACK_MS -
			    1) / 1000 - (long)DB_IO_TIMEOUT_SECONDS;

	if (retire_window(cfg) > 0)
		return 0;
	snprintf(err, size, "db_connect_timeout (%u s) x %u database "
	    "node(s) (db_hosts) after the %u s read timeout leaves a request "
	    "on a silent database no time before the stop deadline (%d s): "
	    "keep db_connect_timeout x nodes at %ld s or less",
	    cfg->db_connect_timeout, nodes, (unsigned)DB_IO_TIMEOUT_SECONDS,
	    STOP_KILL_SECONDS, room);
	return -1;
}

/*
 * After SIGTERM: accepts no new connection (its copy of the listening
 * socket is closed first: with the master gone too, the socket then
 * refuses connections and nginx turns to another app host), but serves
 * the requests the web server still sends on its kept connections until
 * it has closed every one, or the retire window (from the SIGTERM) has
 * passed (then held_free closes the rest). The worker never closes a
 * kept connection itself before that: nginx may be sending a request on
 * it at that moment, and answers that request 502 (a POST is not
 * retried). nginx closes an idle kept connection after its upstream
 * keepalive_timeout and a busy one after keepalive_requests. 0, or -1
 * after SERVED_FATAL.
 */
static int
retire(struct loop *l, struct held *h, int listen_fd)
{
	struct held_ready r;
	struct conn	*c;
	int64_t		 end, left;
	int		 k, rc = 0;

	end = (term_ms != 0 ? term_ms : clock_mono_ms()) +
	    retire_window(l->cfg);

	(void)close(listen_fd);
	while (rc == 0 && (left = end - clock_mono_ms()) > 0 &&
	    held_wait(h, 0, (int)left, NULL, &r) == 0 && r.n > 0)
		for (k = 0; k < r.n && rc == 0; k++) {
			if ((c = held_take(h, r.slot[k])) == NULL)
				continue;
			if (conn_closed(c))
				conn_drop(c);	/* its end: nothing to serve */
			else if (serve_next(l, c) == SERVED_FATAL)
				rc = -1;
		}
	return rc;
}

/*
 * Runs the serving loop on listen_fd until SIGTERM (or its master's
 * death). Returns the process exit status: 0 after a clean stop, 1 when
 * the worker cannot start or accept keeps failing.
 */
int
worker_run(const struct config *cfg, int listen_fd, pid_t master)
{
	struct loop		 l = { .cfg = cfg };
	struct held		*h = NULL;
	struct held_ready	 r;
	sigset_t		 term, waitmask;
	int			 rc = 0;

	/* the master sets its own level after forking a new generation
	 * (it logs the socket changes at the old one) */
	log_set_level((enum log_level)cfg->log_level);
	worker_signals();
	follow_master(master);
	l.app.cfg = cfg;
	l.listen_fd = listen_fd;
	/* the worker accepts (take), libfcgi never does; TCP: checked */
	l.check_peers = peer_listen_kind(listen_fd) != LISTEN_UNIX;
	if ((l.app.db = repo_open(cfg, 1)) == NULL ||
	    (l.app.lookup = lookup_new(cfg->cache_ttl_seconds)) == NULL ||
	    (l.app.quota = quota_new(cfg->cache_ttl_seconds)) == NULL ||
	    (h = held_new(listen_fd, 0)) == NULL) {
		log_error("worker: cannot initialise");
		return 1;
	}
	(void)repo_ping(l.app.db);	/* connect and prepare now */
	log_debug("worker %ld: ready", (long)getpid());
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_BLOCK, &term, &waitmask);
	woke_ms = clock_mono_ms();
	if (nonblocking(listen_fd) == -1)
		return 1;
	/* SIGTERM only while waiting in ppoll: an accepted request never
	 * sees EINTR and always runs to its end. */
	while (!stopping && rc == 0) {
		if (wait_conn(h, &waitmask, &r) == 0)
			rc = serve_round(&l, h, &r);
	}
	if (rc == 0)
		rc = retire(&l, h, listen_fd);
	held_free(h);
	lookup_free(l.app.lookup);
	quota_free(l.app.quota);
	repo_dash_close(l.app.dash);
	repo_close(l.app.db);
	return rc == 0 ? 0 : 1;
}
