/*
 * test_master_keep.c - kept FastCGI connections (nginx's
 * fastcgi_keep_conn with an upstream keepalive cache): the real
 * asyncexec-fcgi with WORKERS workers, spoken to in raw FastCGI with
 * FCGI_KEEP_CONN.
 *
 *   kept     one connection carries a GET, two submits and a GET, each
 *            answered in turn, and stays open
 *   pinned   KEPT idle kept connections (more than the workers) keep no
 *            new connection from being answered, and each of them
 *            answers its next request
 *   full     one worker at HELD_MAX idle kept connections answers a new
 *            one and closes the connection it served least recently
 *   turns    one worker with requests waiting on kept connections and on
 *            new ones at once answers new ones between the kept ones
 *   crowded  one worker at HELD_MAX with two kept requests and a new kept
 *            connection at once: one idle connection closed, not two
 *   raced    two workers at HELD_MAX each, both woken by each new
 *            connection: one idle connection closed per new one, by the
 *            worker that accepted it, none by the other
 *   late     a new connection that sends nothing yet holds no worker (it
 *            waits in ppoll with it open), and its request, sent later,
 *            is answered
 *   unread   a request answered before its body was read (a 404 with a
 *            body larger than libfcgi's buffer): the rest of the body is
 *            read past and the connection kept, its next request answered
 *            (closing it would cross the request nginx sends next on it:
 *            nginx takes a connection back once the answer has come, and
 *            answers that request 502); a body past DRAIN_MAX (conn.h)
 *            closes it
 *   stop     SIGTERM with idle kept connections: the workers stop
 *            accepting but still answer on them (closing one could cross
 *            a request nginx is sending); once the client closes them,
 *            the master exits 0 within STOP_MS
 *   orphan   the master SIGKILLed with kept connections: the socket
 *            refuses new connections at once, the kept ones still answer,
 *            and once they are closed no process is left
 *
 * Every wait is bounded by a deadline (REQ_MS, STOP_MS).
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "fcgi_client.h"
#include "held.h"
#include "load.h"
#include "util/clock.h"

#define KEPT		(2 * WORKERS + 1)	/* idle kept connections */
#define BIG_BODY	65536	/* over libfcgi's 8 KiB read buffer */
#define TURNS		16	/* kept and new connections (turns) */
#define RACED		4	/* new connections the raced scenario opens */

/*
 * Sends one request on the open connection fd, FCGI_KEEP_CONN when keep:
 * auth, cid and body may be NULL. The body (len bytes, CONTENT_LENGTH)
 * and its end only when with_body. 0, or -1.
 */
static int
send_request(int fd, int keep, const char *method, const char *uri,
    const char *auth, const char *cid, const char *body, size_t len,
    int with_body)
{
	const char	*kv[2 * (FCGI_BASE_PARAMS + 2)];
	char		 clen[24];
	size_t		 n;
	long long	 dl = ut_now_ms() + REQ_MS;

	snprintf(clen, sizeof(clen), "%zu", len);
	n = fcgi_base_params(kv, method, uri,
	    body != NULL ? "application/json" : NULL, clen);
	if (auth != NULL)
		kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	if (cid != NULL)
		kv[2 * n] = "HTTP_X_CORRELATION_ID", kv[2 * n + 1] = cid, n++;
	if ((keep ? fcgi_begin_keep(fd, dl) : fcgi_begin(fd, dl)) == -1 ||
	    fcgi_params(fd, kv, n, dl) == -1)
		return -1;
	if (with_body && ((len > 0 && fcgi_stdin(fd, body, len, dl) == -1) ||
	    fcgi_stdin(fd, NULL, 0, dl) == -1))
		return -1;
	return 0;
}

/*
 * One request with FCGI_KEEP_CONN on the open connection fd (as
 * send_request). Reads the answer into r (free it). 0 when it ended
 * (FCGI_END_REQUEST), else -1.
 */
static int
kept_request(int fd, const char *method, const char *uri, const char *auth,
    const char *cid, const char *body, size_t len, struct fcgi_resp *r)
{
	memset(r, 0, sizeof(*r));
	if (send_request(fd, 1, method, uri, auth, cid, body, len, 1) == -1)
		return -1;
	return fcgi_read(fd, r, ut_now_ms() + REQ_MS);
}

/* The status of GET /healthz on the kept connection fd, or -1. */
static int
kept_healthz(int fd)
{
	struct fcgi_resp r;
	int		 st;

	st = kept_request(fd, "GET", "/healthz", NULL, NULL, NULL, 0, &r) ==
	    0 ? r.status : -1;
	fcgi_resp_free(&r);
	return st;
}

/* Whether fd is open at the other end: nothing (no EOF) to read now. */
static int
still_open(int fd)
{
	struct pollfd	 p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 0;
}

/* Whether the other end closes fd (EOF; data before it dropped) within ms. */
static int
closed_within(int fd, int ms)
{
	struct pollfd	 p = { fd, POLLIN, 0 };
	long long	 end = ut_now_ms() + ms;
	char		 sink[4096];
	ssize_t		 n;

	for (;;) {
		long long left = end - ut_now_ms();

		if (left < 0 || poll(&p, 1, (int)left) != 1)
			return 0;
		if ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) == 0)
			return 1;
		if (n < 0)
			return 0;
	}
}

/* KEPT kept connections to sock, each answered one GET /healthz, into fd. */
static void
open_kept(const char *sock, int *fd)
{
	int	 i;

	for (i = 0; i < KEPT; i++) {
		CHECK((fd[i] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
	}
}

/* A master of workers workers on a fresh socket named name; pid or -1. */
static pid_t
keep_master_n(const char *name, size_t workers, char *sock, char *log,
    size_t sz)
{
	char	 cfg[512], n[64];

	snprintf(n, sizeof(n), "%s.conf", name);
	snprintf(cfg, sizeof(cfg), "%s", path_in_tmp(n));
	snprintf(n, sizeof(n), "%s.sock", name);
	snprintf(sock, sz, "%s", path_in_tmp(n));
	snprintf(n, sizeof(n), "%s.log", name);
	snprintf(log, sz, "%s", path_in_tmp(n));
	return up_derived(cfg, sock, log, workers);
}

/* keep_master_n with WORKERS workers. */
static pid_t
keep_master(const char *name, char *sock, char *log, size_t sz)
{
	return keep_master_n(name, WORKERS, sock, log, sz);
}

/* kept: four requests, GET and POST, on one connection. */
static void
scenario_kept(void)
{
	char			 sock[512], log[512], cid[64];
	const char		*uri, *auth;
	struct fcgi_resp	 r;
	pid_t			 m;
	int			 fd, i;

	if ((m = keep_master("kept", sock, log, sizeof(sock))) == -1)
		return;
	CHECK_EQ_INT(proc_route_key(&uri, &auth), 0);
	CHECK((fd = fcgi_connect(sock)) != -1);
	CHECK_EQ_INT(kept_healthz(fd), 200);
	for (i = 0; i < 2; i++) {
		snprintf(cid, sizeof(cid), "keep-%ld-%d", (long)getpid(), i);
		CHECK_EQ_INT(kept_request(fd, "POST", uri, auth, cid,
		    "{\"n\":1}", 7, &r), 0);
		CHECK_EQ_INT(r.status, 202);
		fcgi_resp_free(&r);
	}
	CHECK_EQ_INT(kept_healthz(fd), 200);
	CHECK(still_open(fd));
	close(fd);
	down(m, log);
}

/* pinned: KEPT idle kept connections, then a new one, then each again. */
static void
scenario_pinned(void)
{
	char		 sock[512], log[512];
	pid_t		 m;
	int		 fd[KEPT], i;

	if ((m = keep_master("pinned", sock, log, sizeof(sock))) == -1)
		return;
	open_kept(sock, fd);
	CHECK_EQ_INT(healthz(sock), 200);	/* a new connection */
	for (i = KEPT - 1; i >= 0; i--) {
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
		CHECK(still_open(fd[i]));
	}
	for (i = 0; i < KEPT; i++)
		close(fd[i]);
	down(m, log);
}

/*
 * A 404 over an unread body longer than DRAIN_MAX (conn.h) closes its
 * connection; a new one is answered.
 */
static void
unread_past(const char *sock)
{
	struct fcgi_resp	 r;
	char			*body;
	size_t			 max = DRAIN_MAX;
	int			 fd;

	if ((body = malloc(max + 1)) == NULL) {
		CHECK(!"memory");
		return;
	}
	memset(body, ' ', max + 1);
	CHECK((fd = fcgi_connect(sock)) != -1);
	CHECK_EQ_INT(kept_request(fd, "POST", "/no/such/path", NULL, NULL,
	    body, max + 1, &r), 0);
	CHECK_EQ_INT(r.status, 404);
	fcgi_resp_free(&r);
	CHECK(closed_within(fd, REQ_MS));
	close(fd);
	CHECK((fd = fcgi_connect(sock)) != -1);
	CHECK_EQ_INT(kept_healthz(fd), 200);
	close(fd);
	free(body);
}

/* unread: a 404 answered over an unread body keeps its connection. */
static void
scenario_unread(void)
{
	char			 sock[512], log[512], *body;
	struct fcgi_resp	 r;
	pid_t			 m;
	int			 fd;

	if ((m = keep_master("unread", sock, log, sizeof(sock))) == -1)
		return;
	if ((body = malloc(BIG_BODY)) == NULL) {
		CHECK(!"memory");
		down(m, log);
		return;
	}
	memset(body, ' ', BIG_BODY);
	CHECK((fd = fcgi_connect(sock)) != -1);
	CHECK_EQ_INT(kept_request(fd, "POST", "/no/such/path", NULL, NULL,
	    body, BIG_BODY, &r), 0);
	CHECK_EQ_INT(r.status, 404);
	fcgi_resp_free(&r);
	/* the rest of the body is not read as the next request */
	CHECK_EQ_INT(kept_healthz(fd), 200);
	CHECK(still_open(fd));
	close(fd);
	free(body);
	unread_past(sock);
	down(m, log);
}

/* Whether every worker of the master at arg retires: in ppoll, SIGTERM held. */
static int
retiring(void *arg)
{
	pid_t		 m = *(pid_t *)arg, pids[MAX_PIDS];
	size_t		 n, i;

	if ((n = workers_of(m, pids, MAX_PIDS)) == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!in_accept(blocked_in(pids[i])) ||
		    (signal_mask(pids[i], "SigBlk:") &
		    (1ULL << (SIGTERM - 1))) == 0)
			return 0;
	return 1;
}

/*
 * stop: SIGTERM with idle kept connections. Each still answers a request
 * after every worker took the SIGTERM; once the client closes them, the
 * master exits 0.
 */
static void
scenario_stop(void)
{
	char		 sock[512], log[512];
	pid_t		 m;
	int		 fd[KEPT], i, st;

	if ((m = keep_master("stop", sock, log, sizeof(sock))) == -1)
		return;
	open_kept(sock, fd);
	CHECK_EQ_INT(kill(m, SIGTERM), 0);
	CHECK(wait_for(retiring, &m, STOP_MS));
	for (i = 0; i < KEPT; i++) {
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
		close(fd[i]);
	}
	st = wait_master_exit(m, STOP_MS);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (check_fail_ > 0)
		dump_log(log);
}

/*
 * full: one worker holding HELD_MAX idle kept connections still answers a
 * new connection, and closes the one it served least recently for it.
 */
static void
scenario_full(void)
{
	char		 sock[512], log[512];
	pid_t		 m;
	int		*fd, i;

	if ((fd = calloc(HELD_MAX, sizeof(*fd))) == NULL ||
	    (m = keep_master_n("full", 1, sock, log, sizeof(sock))) == -1) {
		free(fd);
		return;
	}
	for (i = 0; i < HELD_MAX; i++) {
		CHECK((fd[i] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
	}
	CHECK_EQ_INT(healthz(sock), 200);	/* one more connection */
	CHECK(closed_within(fd[0], REQ_MS));
	for (i = 1; i < HELD_MAX; i++)
		CHECK(still_open(fd[i]));
	CHECK_EQ_INT(kept_healthz(fd[HELD_MAX - 1]), 200);
	for (i = 0; i < HELD_MAX; i++)
		close(fd[i]);
	free(fd);
	down(m, log);
}

/* Whether the worker at arg waits in read(2) (for a request's body). */
static int
reading(void *arg)
{
	return blocked_in(*(pid_t *)arg) == SYS_read;
}

/*
 * Reads the answers of the turns scenario as they come: fd[0..TURNS-1]
 * kept, fd[TURNS+1..2*TURNS] new; the kept ones first when several are
 * readable at once, so a new one read while a kept one is still due was
 * answered before that one. How many new ones were; -1 if one did not
 * come within REQ_MS or was not a 202.
 */
static int
read_turns(int *fd)
{
	struct pollfd	 p[2 * TURNS + 1];
	struct fcgi_resp r;
	int		 left = 2 * TURNS, kept_due = TURNS, early = 0, i, ok;
	long long	 dl = ut_now_ms() + REQ_MS;

	while (left > 0) {
		for (i = 0; i <= 2 * TURNS; i++) {
			p[i].fd = i == TURNS ? -1 : fd[i];
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		if (poll(p, 2 * TURNS + 1, (int)(dl - ut_now_ms())) <= 0)
			return -1;
		for (i = 0; i <= 2 * TURNS; i++) {
			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			ok = fcgi_read(fd[i], &r, dl) == 0 && r.status == 202;
			fcgi_resp_free(&r);
			if (!ok)
				return -1;
			if (i > TURNS && kept_due > 0)
				early++;
			kept_due -= i < TURNS;
			close(fd[i]);
			fd[i] = -1;
			left--;
		}
	}
	return early;
}

/*
 * turns: one worker finds TURNS submits on kept connections and TURNS on
 * new ones at once (all sent while it waits for the body of a submit on
 * another kept connection): it answers new connections before the last
 * kept one, not one a round behind all of them (nginx opens a new one
 * whenever its idle kept connections are all busy).
 */
static void
scenario_turns(void)
{
	char		 sock[512], log[512], cid[64];
	const char	*uri, *auth, *body = "{\"n\":1}";
	struct fcgi_resp r;
	pid_t		 m, w = 0;
	long long	 dl;
	int		 fd[2 * TURNS + 1], i;

	if ((m = keep_master_n("turns", 1, sock, log, sizeof(sock))) == -1)
		return;
	CHECK_EQ_INT(proc_route_key(&uri, &auth), 0);
	CHECK_EQ_INT((int)workers_of(m, &w, 1), 1);
	for (i = 0; i <= TURNS; i++) {		/* fd[TURNS]: the stall */
		CHECK((fd[i] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
	}
	snprintf(cid, sizeof(cid), "turns-%ld-stall", (long)getpid());
	CHECK_EQ_INT(send_request(fd[TURNS], 1, "POST", uri, auth, cid, body,
	    strlen(body), 0), 0);
	CHECK(wait_for(reading, &w, REQ_MS));
	for (i = 0; i <= 2 * TURNS; i++) {
		if (i == TURNS)
			continue;
		if (i > TURNS)
			CHECK((fd[i] = fcgi_connect(sock)) != -1);
		snprintf(cid, sizeof(cid), "turns-%ld-%d", (long)getpid(), i);
		CHECK_EQ_INT(send_request(fd[i], i < TURNS, "POST", uri, auth,
		    cid, body, strlen(body), 1), 0);
	}
	dl = ut_now_ms() + REQ_MS;
	CHECK(fcgi_stdin(fd[TURNS], body, strlen(body), dl) == 0 &&
	    fcgi_stdin(fd[TURNS], NULL, 0, dl) == 0);
	CHECK(fcgi_read(fd[TURNS], &r, dl) == 0 && r.status == 202);
	fcgi_resp_free(&r);
	i = read_turns(fd);
	printf("figure: turns: %d of %d new connections answered before the "
	    "last kept one\n", i, TURNS);
	CHECK(i >= TURNS / 2);
	for (i = 0; i <= 2 * TURNS; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	down(m, log);
}

/*
 * crowded: one worker at HELD_MAX kept connections finds two requests on
 * them and a new kept connection at once (sent while it waits for the
 * body of a third): the new one closes the least recently served idle
 * connection, and the accept that then finds nothing closes no other.
 */
static void
scenario_crowded(void)
{
	char		 sock[512], log[512], cid[64];
	const char	*uri, *auth, *body = "{\"n\":1}";
	struct fcgi_resp r;
	pid_t		 m, w = 0;
	long long	 dl;
	int		*fd, nfd, i;

	if ((fd = calloc(HELD_MAX, sizeof(*fd))) == NULL ||
	    (m = keep_master_n("crowded", 1, sock, log, sizeof(sock))) == -1) {
		free(fd);
		return;
	}
	CHECK_EQ_INT(proc_route_key(&uri, &auth), 0);
	CHECK_EQ_INT((int)workers_of(m, &w, 1), 1);
	for (i = 0; i < HELD_MAX; i++) {
		CHECK((fd[i] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
	}
	snprintf(cid, sizeof(cid), "crowded-%ld", (long)getpid());
	CHECK_EQ_INT(send_request(fd[HELD_MAX - 1], 1, "POST", uri, auth, cid,
	    body, strlen(body), 0), 0);
	CHECK(wait_for(reading, &w, REQ_MS));
	for (i = HELD_MAX - 3; i < HELD_MAX - 1; i++)
		CHECK_EQ_INT(send_request(fd[i], 1, "GET", "/healthz", NULL,
		    NULL, NULL, 0, 1), 0);
	CHECK((nfd = fcgi_connect(sock)) != -1);
	CHECK_EQ_INT(send_request(nfd, 1, "GET", "/healthz", NULL, NULL, NULL,
	    0, 1), 0);
	dl = ut_now_ms() + REQ_MS;
	CHECK(fcgi_stdin(fd[HELD_MAX - 1], body, strlen(body), dl) == 0 &&
	    fcgi_stdin(fd[HELD_MAX - 1], NULL, 0, dl) == 0);
	for (i = HELD_MAX - 3; i < HELD_MAX; i++) {
		CHECK(fcgi_read(fd[i], &r, dl) == 0);
		fcgi_resp_free(&r);
	}
	CHECK(fcgi_read(nfd, &r, dl) == 0 && r.status == 200);
	fcgi_resp_free(&r);
	CHECK(closed_within(fd[0], REQ_MS));
	/* served after the round ended: open unless that round closed it */
	CHECK_EQ_INT(kept_healthz(fd[1]), 200);
	CHECK_EQ_INT(kept_healthz(nfd), 200);
	close(nfd);
	for (i = 0; i < HELD_MAX; i++)
		close(fd[i]);
	free(fd);
	down(m, log);
}

/* The raced scenario's workers and client ends. */
struct raced {
	pid_t	 w[2];
	int	 fd[2 * HELD_MAX + RACED];
	int	 n;		/* fd[0..n) opened */
	int	 closed;	/* of them closed by the server (EOF) */
};

/* Closes the client end of each of x's connections the server closed. */
static void
sweep(struct raced *x)
{
	char	 b;
	int	 i;

	for (i = 0; i < x->n; i++)
		if (x->fd[i] >= 0 &&
		    recv(x->fd[i], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
			close(x->fd[i]);
			x->fd[i] = -1;
			x->closed++;
		}
}

/*
 * Whether both workers of x wait in ppoll (sweep first: a worker that
 * closes a connection waits for the client's close).
 */
static int
settled(void *arg)
{
	struct raced	*x = arg;

	sweep(x);
	return blocked_in(x->w[0]) == SYS_ppoll &&
	    blocked_in(x->w[1]) == SYS_ppoll;
}

/* Whether the worker at arg is stopped (SIGSTOP). */
static int
stopped(void *arg)
{
	struct pstat	 ps;

	return proc_stat(*(pid_t *)arg, &ps) == 0 && ps.state == 'T';
}

/*
 * HELD_MAX kept connections to sock, each answered one GET /healthz, all
 * on worker k of x (the other stopped meanwhile), appended to x->fd.
 */
static void
fill_one(struct raced *x, const char *sock, int k)
{
	int	 i;

	CHECK_EQ_INT(kill(x->w[!k], SIGSTOP), 0);
	CHECK(wait_for(stopped, &x->w[!k], REQ_MS));
	for (i = 0; i < HELD_MAX; i++, x->n++) {
		CHECK((x->fd[x->n] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(x->fd[x->n]), 200);
	}
	CHECK_EQ_INT(kill(x->w[!k], SIGCONT), 0);
	CHECK(wait_for(settled, x, REQ_MS));
}

/*
 * raced: two workers at HELD_MAX idle kept connections each; then RACED
 * new kept connections, one at a time, each once both workers wait in
 * ppoll, so that both wake for it and one accepts it. Each closes
 * exactly one idle kept connection (the accepting worker's least
 * recently served); the other worker, whose accept finds nothing,
 * closes none (it used to close one before libfcgi's accept on a unix
 * listener found nothing: nginx may be sending on it, a 502 for a POST).
 */
static void
scenario_raced(void)
{
	char		 sock[512], log[512];
	struct raced	*x;
	pid_t		 m;
	int		 i, nfd;

	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (m = keep_master_n("raced", 2, sock, log, sizeof(sock))) == -1) {
		free(x);
		return;
	}
	CHECK_EQ_INT((int)workers_of(m, x->w, 2), 2);
	fill_one(x, sock, 0);
	fill_one(x, sock, 1);
	CHECK_EQ_INT(x->closed, 0);
	for (i = 0; i < RACED; i++) {
		CHECK((nfd = x->fd[x->n++] = fcgi_connect(sock)) != -1);
		CHECK_EQ_INT(kept_healthz(nfd), 200);
		CHECK(wait_for(settled, x, REQ_MS));
		sweep(x);
		printf("figure: raced: %d idle kept connections closed after "
		    "%d new ones\n", x->closed, i + 1);
		CHECK_EQ_INT(x->closed, i + 1);
	}
	for (i = 0; i < x->n; i++)
		if (x->fd[i] >= 0)
			close(x->fd[i]);
	free(x);
	down(m, log);
}

/* The late scenario's worker and its silent connection. */
struct late {
	pid_t	 w;
	int	 fd;
};

/* Whether the worker waits in ppoll while the silent connection is open. */
static int
idle_beside(void *arg)
{
	struct late	*x = arg;

	return blocked_in(x->w) == SYS_ppoll && still_open(x->fd);
}

/*
 * late: one worker; a new connection sends nothing yet. The worker
 * accepts it and waits again (libfcgi's accept waited 2 s in select for
 * its first bytes, then closed it; a read would wait for ever), answers
 * another connection meanwhile, and then the request sent on it.
 */
static void
scenario_late(void)
{
	char		 sock[512], log[512];
	struct late	 x;
	pid_t		 m;

	if ((m = keep_master_n("late", 1, sock, log, sizeof(sock))) == -1)
		return;
	CHECK_EQ_INT((int)workers_of(m, &x.w, 1), 1);
	CHECK((x.fd = fcgi_connect(sock)) != -1);
	CHECK(wait_for(idle_beside, &x, REQ_MS));
	CHECK_EQ_INT(healthz(sock), 200);
	CHECK_EQ_INT(kept_healthz(x.fd), 200);
	CHECK(still_open(x.fd));
	close(x.fd);
	down(m, log);
}

/*
 * Whether a new connection to the unix socket at path arg is refused.
 * Non-blocking: a socket still listening with its backlog full answers
 * EAGAIN (not refused) instead of blocking the wait.
 */
static int
refused(void *arg)
{
	struct sockaddr_un	 sa;
	int			 fd, rc;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", (const char *)arg);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		return 0;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
	    errno == ECONNREFUSED;
	close(fd);
	return rc;
}

/* Whether no process of the group led by the pid at arg is left. */
static int
group_gone(void *arg)
{
	pid_t	 pids[MAX_PIDS];

	return scan(*(pid_t *)arg, 1, pids, MAX_PIDS) == 0;
}

/*
 * orphan: the master SIGKILLed with kept connections open. Its workers
 * retire: the socket refuses new connections at once (nginx turns to
 * another app host), the kept ones still answer, and once the client
 * closes them no process is left.
 */
static void
scenario_orphan(void)
{
	char		 sock[512], log[512];
	pid_t		 m;
	int		 fd[KEPT], i;

	if ((m = keep_master("orphan", sock, log, sizeof(sock))) == -1)
		return;
	open_kept(sock, fd);
	CHECK_EQ_INT(kill(m, SIGKILL), 0);
	CHECK(waitpid(m, NULL, 0) == m);
	CHECK(wait_for(refused, sock, STOP_MS));
	for (i = 0; i < KEPT; i++) {
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
		close(fd[i]);
	}
	CHECK(wait_for(group_gone, &m, STOP_MS));
	kill_master(m);		/* forgets it; the group is gone */
	if (check_fail_ > 0)
		dump_log(log);
}

int
main(int argc, char *argv[])
{
	static const struct scenario sc[] = {
		{ "kept", scenario_kept },
		{ "pinned", scenario_pinned },
		{ "unread", scenario_unread },
		{ "full", scenario_full },
		{ "turns", scenario_turns },
		{ "crowded", scenario_crowded },
		{ "raced", scenario_raced },
		{ "late", scenario_late },
		{ "stop", scenario_stop },
		{ "orphan", scenario_orphan },
	};

	return scenarios_main("keep", "proc_master_keep", sc,
	    sizeof(sc) / sizeof(sc[0]), argc, argv);
}
