/*
 * test_listen_tcp.c - listen = ADDRESS:PORT: an app host that nginx on
 * another machine reaches over TCP (scale-out), spoken to in raw FastCGI.
 *
 *   1. a TCP listen without listen_allow is refused by --check-config
 *      (exit 2; FastCGI has no authentication of its own);
 *   2. listen = 127.0.0.1:PORT, listen_allow = 127.0.0.1: /healthz and
 *      /readyz answer over TCP, and a kept connection (FCGI_KEEP_CONN)
 *      answers request after request;
 *      a stop while the one worker serves a kept connection, a new one
 *      waiting, logs no "accept failed" (EINVAL on the listening socket
 *      the master shut down) and exits 0;
 *   3. a second master on the same address refuses to start;
 *   4. listen_allow = 127.0.0.2: a connection from 127.0.0.1 is closed
 *      unanswered while the master runs;
 *   5. an inherited TCP socket (systemd's ListenStream=ADDRESS:PORT, here
 *      as fd 0) is refused without listen_allow, served with it;
 *   6. an inherited dual-stack socket (systemd's ListenStream=PORT or
 *      [::]:PORT: AF_INET6 on [::], IPV6_V6ONLY off, as fd 3 with
 *      LISTEN_PID/LISTEN_FDS), where IPv4 clients arrive v4-mapped:
 *      listen_allow = 127.0.0.2 closes 127.0.0.1's connections unanswered
 *      (libfcgi checks AF_INET peers only: they used to be served),
 *      listen_allow = 127.0.0.1 serves them; a native IPv6 peer (::1) is
 *      never on the IPv4 list: closed unanswered; with one worker, a
 *      refused peer's silent connection (it sends nothing) does not hold
 *      the worker: an allowed peer (127.0.0.2) is answered at once, and
 *      SIGTERM ends the master cleanly (libfcgi used to read the refused
 *      connection's first record before the check, for ever).
 *   7. one worker whose HELD_MAX slots all hold kept connections from an
 *      allowed peer (127.0.0.1): a connection from a refused peer
 *      (127.0.0.2) is closed unanswered and closes none of them (it used
 *      to close the least recently served one for its slot before the
 *      peer was checked: a refused peer could drop nginx's idle kept
 *      connections at will); every kept one answers again, and a new
 *      allowed connection is still answered.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util/port.h"
#include "fcgi_client.h"
#include "held.h"
#include "load.h"
#include "proc_util.h"

#define SILENT_MS	2000	/* an allowed peer is answered within */
#define PEER_IO_MS	5000	/* PEER_IO_TIMEOUT_SECONDS (src/serve/peer.h) */
#define LINGER_MS	2000	/* libfcgi's close waits for the peer's EOF */

/*
 * fd (a new stream socket, or -1) with SO_REUSEADDR, bound to sa (len
 * bytes) and listening; fd, or -1 (fd closed).
 */
static int
listening(int fd, const struct sockaddr *sa, socklen_t len)
{
	int	 on = 1;

	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof(on)) == -1 || bind(fd, sa, len) == -1 ||
	    listen(fd, 16) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/* A loopback TCP socket listening on port; the fd, or -1. */
static int
tcp_listener(unsigned port)
{
	struct sockaddr_in	 sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	return listening(socket(AF_INET, SOCK_STREAM, 0),
	    (struct sockaddr *)&sa, sizeof(sa));
}

/*
 * Whether the port of addr ("127.0.0.1:PORT") can be listened on again: the
 * workers of a SIGKILLed master may still hold the socket for a moment after
 * the master is reaped (kill_master waits for the master only), and a master
 * started meanwhile would exit with "address in use".
 */
static int
port_free(void *addr)
{
	const char	*colon = strrchr(addr, ':');
	int		 fd = colon ? tcp_listener((unsigned)atoi(colon + 1)) : -1;

	if (fd == -1)
		return 0;
	close(fd);
	return 1;
}

/* A dual-stack socket listening on [::]:port (IPV6_V6ONLY off); fd or -1. */
static int
dual_listener(unsigned port)
{
	struct sockaddr_in6	 sa;
	int			 fd = socket(AF_INET6, SOCK_STREAM, 0), off = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_addr = in6addr_any;
	sa.sin6_port = htons((uint16_t)port);
	if (fd != -1 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
	    sizeof(off)) == -1) {
		close(fd);
		return -1;
	}
	return listening(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/*
 * What a FastCGI GET /healthz from src (NULL: any address) to dst does,
 * waiting ms for the answer: 1 when an answer came back, 0 when the
 * connection was closed (or silent) without one, -1 when no connection
 * could be made.
 */
static int
answered_from(const struct sockaddr *src, const struct sockaddr *dst,
    socklen_t len, int ms)
{
	static const unsigned char req[] = {
		1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,	/* BEGIN */
		1, 4, 0, 1, 0, 40, 0, 0,				/* PARAMS */
		14, 3, 'R', 'E', 'Q', 'U', 'E', 'S', 'T', '_', 'M', 'E', 'T',
		'H', 'O', 'D', 'G', 'E', 'T',
		11, 8, 'R', 'E', 'Q', 'U', 'E', 'S', 'T', '_', 'U', 'R', 'I',
		'/', 'h', 'e', 'a', 'l', 't', 'h', 'z',
		1, 4, 0, 1, 0, 0, 0, 0,					/* end */
		1, 5, 0, 1, 0, 0, 0, 0,					/* STDIN */
	};
	struct timeval		 tv = { ms / 1000, (ms % 1000) * 1000 };
	unsigned char		 b[512];
	int			 fd = socket(dst->sa_family, SOCK_STREAM, 0);
	ssize_t			 r;

	if (fd == -1 || (src != NULL && bind(fd, src, len) == -1) ||
	    connect(fd, dst, len) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, req, sizeof(req)) != (ssize_t)sizeof(req)) {
		close(fd);
		return 0;
	}
	r = read(fd, b, sizeof(b));
	close(fd);
	return r > 0;
}

/* What [::1]:port does with a FastCGI GET /healthz (answered_from). */
static int
v6_answered(unsigned port)
{
	struct sockaddr_in6	 sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_addr = in6addr_loopback;
	sa.sin6_port = htons((uint16_t)port);
	return answered_from(NULL, (struct sockaddr *)&sa, sizeof(sa), 10000);
}

/* The IPv4 address a (host order) at port, in *sa. */
static void
v4(struct sockaddr_in *sa, uint32_t a, unsigned port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(a);
	sa->sin_port = htons((uint16_t)port);
}

/* SIGTERM to master m: its exit status within STOP_MS, else -1. */
static int
term_and_exit(pid_t m)
{
	int	 st;

	(void)kill(m, SIGTERM);
	st = wait_master_exit(m, STOP_MS);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The exit status of `asyncexec-fcgi --config cfg --check-config`; err. */
static int
check_config(const char *cfg, char *err, size_t sz)
{
	char	 out[4096];
	char	*argv[] = { (char *)fcgi_bin, "--config", (char *)cfg,
		    "--check-config", NULL };
	int	 st = run(argv, out, err, sz, 30000);

	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The status of GET uri over addr, -1 without an answer. */
static int
get(const char *addr, const char *uri)
{
	struct fcgi_resp	 r;
	int			 st;

	st = fcgi_request(addr, "GET", uri, NULL, NULL, 0, REQ_MS, &r) == 0 ?
	    r.status : -1;
	fcgi_resp_free(&r);
	return st;
}

/*
 * The status of GET /healthz with FCGI_KEEP_CONN on the open connection
 * fd, or -1.
 */
static int
kept_healthz(int fd)
{
	const char		*kv[2 * FCGI_BASE_PARAMS];
	struct fcgi_resp	 r;
	long long		 dl = ut_now_ms() + REQ_MS;
	size_t			 n = fcgi_base_params(kv, "GET", "/healthz",
				    NULL, NULL);
	int			 st = -1;

	memset(&r, 0, sizeof(r));
	if (fcgi_begin_keep(fd, dl) == 0 && fcgi_params(fd, kv, n, dl) == 0 &&
	    fcgi_stdin(fd, NULL, 0, dl) == 0 && fcgi_read(fd, &r, dl) == 0)
		st = r.status;
	fcgi_resp_free(&r);
	return st;
}

/*
 * 2: a submit whose body stops arriving (10 of its bytes sent, the peer
 * silent) is answered 400 after PEER_IO_MS, not held for ever.
 */
static void
half_sent(const char *addr)
{
	static const char	 body[] = "{\"n\":\"0123456789ab\"}";
	struct fcgi_resp	 r;
	long long		 t0 = ut_now_ms(), took;
	int			 fd;

	memset(&r, 0, sizeof(r));
	CHECK((fd = submit_start(addr, "tcp-half", body, 10, t0 + REQ_MS)) !=
	    -1);
	if (fd == -1)
		return;
	(void)fcgi_read(fd, &r, t0 + PEER_IO_MS + LINGER_MS + SILENT_MS);
	took = ut_now_ms() - t0;
	printf("figure: a submit whose body stops after 10 bytes -> %d after "
	    "%lld ms\n", r.status, took);
	CHECK_EQ_INT(r.status, 400);
	CHECK(r.body != NULL && strstr(r.body, "shorter than Content-Length")
	    != NULL);
	CHECK(took >= PEER_IO_MS - 100);
	fcgi_resp_free(&r);
	close(fd);
}

/* Starts a master on cfg and waits until GET /healthz answers on addr. */
static pid_t
up_tcp(const char *cfg, const char *log, const char *addr)
{
	struct up_wait	 u;
	pid_t		 pid = start_master(cfg, log, -1);

	u.pid = pid;
	u.sock = addr;
	u.status = -1;
	if (pid <= 0 || !wait_for(answers, &u, START_MS) || u.status == -1) {
		dump_log(log);
		return -1;
	}
	return pid;
}

/*
 * Sends on the kept connection fd a submit (FCGI_KEEP_CONN, correlation
 * id cid) of body, only its first sent bytes. 0 or -1.
 */
static int
keep_submit(int fd, const char *cid, const char *body, size_t sent)
{
	const char	*uri, *auth, *kv[2 * (FCGI_BASE_PARAMS + 2)];
	char		 clen[32];
	long long	 dl = ut_now_ms() + REQ_MS;
	size_t		 n;

	if (fd == -1 || proc_route_key(&uri, &auth) == -1)
		return -1;
	snprintf(clen, sizeof(clen), "%zu", strlen(body));
	n = fcgi_base_params(kv, "POST", uri, "application/json", clen);
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	kv[2 * n] = "HTTP_X_CORRELATION_ID", kv[2 * n + 1] = cid, n++;
	return fcgi_begin_keep(fd, dl) == 0 && fcgi_params(fd, kv, n, dl) ==
	    0 && fcgi_stdin(fd, body, sent, dl) == 0 ? 0 : -1;
}

/* Sends the rest of keep_submit's body on fd: the answer's status, or -1. */
static int
keep_finish(int fd, const char *body, size_t sent)
{
	struct fcgi_resp	 r;
	long long		 dl = ut_now_ms() + REQ_MS;
	int			 st = -1;

	memset(&r, 0, sizeof(r));
	if (fd != -1 && fcgi_stdin(fd, body + sent, strlen(body) - sent, dl) ==
	    0 && fcgi_stdin(fd, NULL, 0, dl) == 0 && fcgi_read(fd, &r, dl) == 0)
		st = r.status;
	fcgi_resp_free(&r);
	return st;
}

/*
 * 2, a stop while busy (one worker): its round holds a kept connection
 * k1 (a submit whose body is half sent) and, behind it, a new connection
 * waiting. SIGTERM comes while k1 is served; the master shuts the
 * listening socket down; then k1 is answered and the round's accept
 * fails (EINVAL). The stop must log no "accept failed" and end with 0.
 */
static void
stop_busy(const char *cfg, const char *log, const char *addr)
{
	static const char	 body[] = "{\"n\":\"0123456789ab\"}";
	struct log_wait		 lw = { log, "master: stopping" };
	int			 k0 = -1, k1 = -1, n = -1, st;
	pid_t			 m;

	CHECK(wait_for(port_free, (void *)addr, STOP_MS));
	CHECK_EQ_INT(derive_config_x(cfg, addr, "1",
	    "listen_allow = 127.0.0.1\n", NULL), 0);
	CHECK((m = up_tcp(cfg, log, addr)) > 0);
	CHECK((k0 = fcgi_connect(addr)) != -1 &&
	    (k1 = fcgi_connect(addr)) != -1);
	CHECK_EQ_INT(kept_healthz(k0), 200);
	CHECK_EQ_INT(kept_healthz(k1), 200);
	/* a round of k0 alone, held in its body */
	CHECK_EQ_INT(keep_submit(k0, "busy-0", body, 10), 0);
	CHECK(wait_for(holder, &(struct holder_wait){ m, 0, k0 }, START_MS));
	/* meanwhile k1's submit and a new connection arrive */
	CHECK_EQ_INT(keep_submit(k1, "busy-1", body, 10), 0);
	CHECK((n = fcgi_connect(addr)) != -1);
	CHECK_EQ_INT(keep_finish(k0, body, 10), 202);
	/* the next round: k1, held in its body, then an accept */
	CHECK(wait_for(holder, &(struct holder_wait){ m, 0, k1 }, START_MS));
	(void)kill(m, SIGTERM);
	CHECK(wait_for(logged, &lw, STOP_MS));	/* the socket is shut down */
	CHECK_EQ_INT(keep_finish(k1, body, 10), 202);
	close(k0);
	close(k1);
	if (n != -1)
		close(n);
	st = wait_master_exit(m, STOP_MS);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("figure: a stop while a worker serves a kept connection: %d "
	    "\"accept failed\" lines\n", log_count(log, "accept failed"));
	CHECK_EQ_INT(log_count(log, "accept failed"), 0);
	if (check_fail_ > 0)
		dump_log(log);
}

/*
 * 7, one worker (cfg, addr at port): HELD_MAX kept connections from
 * 127.0.0.1 (listen_allow) fill its slots; one from 127.0.0.2 is closed
 * unanswered; then each kept one must answer again, and a new allowed
 * connection is answered (a kept one closed for it). Stops the master.
 */
static void
full_refused(const char *cfg, const char *log, const char *addr,
    unsigned port)
{
	struct sockaddr_in	 src, dst;
	int			*fd, i, lost = 0;
	pid_t			 m;

	if ((fd = calloc(HELD_MAX, sizeof(*fd))) == NULL) {
		CHECK(!"memory");
		return;
	}
	CHECK(wait_for(port_free, (void *)addr, STOP_MS));
	CHECK_EQ_INT(derive_config_x(cfg, addr, "1",
	    "listen_allow = 127.0.0.1\n", NULL), 0);
	CHECK((m = up_tcp(cfg, log, addr)) > 0);
	for (i = 0; i < HELD_MAX; i++) {
		CHECK((fd[i] = fcgi_connect(addr)) != -1);
		CHECK_EQ_INT(kept_healthz(fd[i]), 200);
	}
	v4(&src, 0x7f000002, 0);
	v4(&dst, 0x7f000001, port);
	CHECK_EQ_INT(answered_from((struct sockaddr *)&src,
	    (struct sockaddr *)&dst, sizeof(dst), REQ_MS), 0);
	for (i = 0; i < HELD_MAX; i++)
		lost += kept_healthz(fd[i]) != 200;
	printf("figure: one worker, %d kept connections: a refused peer's "
	    "connection closed %d of them\n", HELD_MAX, lost);
	CHECK_EQ_INT(lost, 0);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);
	for (i = 0; i < HELD_MAX; i++)
		if (fd[i] != -1)
			close(fd[i]);
	free(fd);
	CHECK_EQ_INT(term_and_exit(m), 0);
	if (check_fail_ > 0)
		dump_log(log);
}

/* 5: an inherited TCP socket needs listen_allow. */
static void
inherited(void)
{
	const char	*cfg = path_in_tmp("inh.conf"), *log = path_in_tmp("inh.log");
	const char	*sock = path_in_tmp("never.sock");
	char		 addr[64], want[96], *text;
	unsigned	 port = test_free_port();
	int		 fd = tcp_listener(port);
	pid_t		 m;
	struct exit_wait w;
	struct up_wait	 u;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK(fd != -1);
	CHECK_EQ_INT(derive_config(cfg, sock, WORKERS_STR, NULL), 0);
	m = start_master(cfg, log, fd);
	w.pid = m;
	CHECK(m > 0 && wait_for(has_exited, &w, START_MS));
	CHECK(wait_master_exit(m, STOP_MS) != 0);
	text = read_file(log);
	CHECK(text != NULL && strstr(text, "is a TCP one: set listen_allow"));
	free(text);
	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR,
	    "listen_allow = 127.0.0.1\n", NULL), 0);
	m = start_master(cfg, log, fd);
	u.pid = m;
	u.sock = addr;
	u.status = -1;
	CHECK(m > 0 && wait_for(answers, &u, START_MS) && u.status == 200);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);
	CHECK(!exists(sock));
	/* the start line names the socket served, not the config's listen */
	snprintf(want, sizeof(want), "workers serving %s\"", addr);
	text = read_file(log);
	CHECK(text != NULL && strstr(text, want) != NULL);
	free(text);
	kill_master(m);
	close(fd);
}

/* Starts a master on cfg with fd as its systemd socket, workers up. */
static pid_t
up_systemd(const char *cfg, const char *log, int fd)
{
	pid_t	 m = start_master_systemd(cfg, log, fd);

	if (m <= 0 || !wait_for(has_n_workers, &(struct n_workers){ m,
	    WORKERS }, START_MS)) {
		dump_log(log);
		return -1;
	}
	ut_pause_ms(200);		/* the workers reach their accept loop */
	return m;
}

/*
 * 6, one worker (cfg as silent_refused wrote it): an allowed peer
 * (127.0.0.2) that connects and goes silent holds the worker for
 * PEER_IO_MS (and LINGER_MS as libfcgi closes it) at most: its
 * connection is then closed unanswered, and the next request is
 * answered.
 */
static void
silent_allowed(const char *cfg, const char *log, int fd, unsigned port)
{
	struct sockaddr_in	 src, dst;
	struct timeval		 tv = { 3 * PEER_IO_MS / 1000, 0 };
	long long		 t0, took;
	char			 b;
	int			 silent, ok;
	ssize_t			 r = -1;
	pid_t			 m;

	m = start_master_systemd(cfg, log, fd);
	CHECK(m > 0 && wait_for(has_n_workers, &(struct n_workers){ m, 1 },
	    START_MS));
	v4(&src, 0x7f000002, 0);
	v4(&dst, 0x7f000001, port);
	silent = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(silent != -1 && bind(silent, (struct sockaddr *)&src,
	    sizeof(src)) == 0 && connect(silent, (struct sockaddr *)&dst,
	    sizeof(dst)) == 0);
	t0 = ut_now_ms();
	ok = answered_from((struct sockaddr *)&src, (struct sockaddr *)&dst,
	    sizeof(dst), 3 * PEER_IO_MS);
	took = ut_now_ms() - t0;
	if (silent != -1) {
		(void)setsockopt(silent, SOL_SOCKET, SO_RCVTIMEO, &tv,
		    sizeof(tv));
		r = read(silent, &b, 1);
		close(silent);
	}
	printf("figure: one worker, a silent connection from an allowed "
	    "peer: the next GET /healthz -> %s after %lld ms; the silent one "
	    "%s\n", ok == 1 ? "answered" : "no answer", took, r == 0 ?
	    "closed unanswered" : "not closed");
	CHECK_EQ_INT(ok, 1);
	CHECK(took < PEER_IO_MS + LINGER_MS + SILENT_MS);
	CHECK(r == 0);
	CHECK_EQ_INT(term_and_exit(m), 0);
}

/*
 * 6, one worker: a silent connection from a refused peer (127.0.0.1,
 * v4-mapped) does not hold the worker: 127.0.0.2 is answered within
 * SILENT_MS, and SIGTERM ends the master with 0 within STOP_MS.
 */
static void
silent_refused(const char *cfg, const char *log, const char *sock, int fd,
    unsigned port)
{
	struct sockaddr_in	 src, dst;
	char			 addr[64];
	long long		 t0, took;
	int			 silent, ok, st;
	pid_t			 m;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ_INT(derive_config_x(cfg, sock, "1",
	    "listen_allow = 127.0.0.2\n", NULL), 0);
	m = start_master_systemd(cfg, log, fd);
	CHECK(m > 0 && wait_for(has_n_workers, &(struct n_workers){ m, 1 },
	    START_MS));
	CHECK((silent = fcgi_connect(addr)) != -1);	/* and sends nothing */
	v4(&src, 0x7f000002, 0);
	v4(&dst, 0x7f000001, port);
	t0 = ut_now_ms();
	ok = answered_from((struct sockaddr *)&src, (struct sockaddr *)&dst,
	    sizeof(dst), 2 * SILENT_MS);
	took = ut_now_ms() - t0;
	t0 = ut_now_ms();
	(void)kill(m, SIGTERM);
	st = wait_master_exit(m, STOP_MS);
	printf("figure: one worker, a silent connection from a refused peer: "
	    "GET /healthz from 127.0.0.2 -> %s after %lld ms; SIGTERM -> "
	    "exit %d after %lld ms\n", ok == 1 ? "answered" : "no answer",
	    took, st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	    ut_now_ms() - t0);
	CHECK_EQ_INT(ok, 1);
	CHECK(took < SILENT_MS);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (silent != -1)
		close(silent);
	silent_allowed(cfg, log, fd, port);
}

/* 6: a dual-stack inherited socket: the allow list holds for IPv4 too. */
static void
dual_stack(void)
{
	const char	*cfg = path_in_tmp("dual.conf");
	const char	*log = path_in_tmp("dual.log");
	const char	*sock = path_in_tmp("never6.sock");
	char		 addr[64], *text;
	unsigned	 port = test_free_port();
	int		 fd = dual_listener(port), st, v6;
	pid_t		 m;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK(fd != -1);
	if (fd == -1)
		return;
	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR,
	    "listen_allow = 127.0.0.2\n", NULL), 0);
	CHECK((m = up_systemd(cfg, log, fd)) > 0);
	st = get(addr, "/healthz");
	v6 = v6_answered(port);
	printf("figure: dual-stack inherited socket, listen_allow = "
	    "127.0.0.2: GET /healthz from 127.0.0.1 (v4-mapped) -> %d, from "
	    "::1 -> %s\n", st, v6 == 1 ? "answered" : v6 == 0 ?
	    "closed unanswered" : "no IPv6");
	CHECK_EQ_INT(st, -1);
	CHECK(v6 != 1);
	text = read_file(log);
	CHECK(text != NULL && strstr(text, "not in listen_allow") != NULL &&
	    strstr(text, "127.0.0.1") != NULL);
	free(text);
	if (m > 0)
		kill_master(m);
	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR,
	    "listen_allow = 127.0.0.2,127.0.0.1\n", NULL), 0);
	CHECK((m = up_systemd(cfg, log, fd)) > 0);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);
	CHECK(!exists(sock));
	if (m > 0)
		kill_master(m);
	silent_refused(cfg, log, sock, fd, port);
	if (check_fail_ > 0)
		dump_log(log);
	close(fd);
}

int
main(void)
{
	const char	*cfg, *cfg2, *log, *log2;
	char		 addr[64], err[4096];
	unsigned	 port = test_free_port();
	pid_t		 m, m2;
	struct exit_wait w;
	int		 kfd;

	if (proc_init("listen_tcp") == -1)
		return 1;
	cfg = path_in_tmp("tcp.conf");
	cfg2 = path_in_tmp("tcp-other.conf");
	log = path_in_tmp("tcp.log");
	log2 = path_in_tmp("tcp2.log");
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	signal(SIGPIPE, SIG_IGN);	/* a kept connection closed (7) */

	/* 1 */
	CHECK_EQ_INT(derive_config(cfg, addr, WORKERS_STR, NULL), 0);
	CHECK_EQ_INT(check_config(cfg, err, sizeof(err)), 2);
	CHECK(strstr(err, "listen on TCP needs listen_allow") != NULL);

	/* 2 */
	CHECK_EQ_INT(derive_config_x(cfg, addr, WORKERS_STR,
	    "listen_allow = 127.0.0.1\n", NULL), 0);
	CHECK_EQ_INT(check_config(cfg, err, sizeof(err)), 0);
	CHECK((m = up_tcp(cfg, log, addr)) > 0);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);
	CHECK_EQ_INT(get(addr, "/readyz"), 200);
	/* a kept TCP connection answers request after request */
	CHECK((kfd = fcgi_connect(addr)) != -1);
	CHECK_EQ_INT(kept_healthz(kfd), 200);
	CHECK_EQ_INT(kept_healthz(kfd), 200);
	if (kfd != -1)
		close(kfd);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);
	half_sent(addr);

	/* 3 */
	m2 = start_master(cfg, log2, -1);
	w.pid = m2;
	CHECK(m2 > 0 && wait_for(has_exited, &w, START_MS));
	CHECK(wait_master_exit(m2, STOP_MS) != 0);
	CHECK_EQ_INT(get(addr, "/healthz"), 200);	/* the first one serves */
	kill_master(m);
	stop_busy(cfg, path_in_tmp("stop.log"), addr);

	/* 4 */
	CHECK_EQ_INT(derive_config_x(cfg2, addr, WORKERS_STR,
	    "listen_allow = 127.0.0.2\n", NULL), 0);
	CHECK(wait_for(port_free, addr, STOP_MS));
	m = start_master(cfg2, log, -1);
	CHECK(m > 0);
	CHECK(wait_for(has_n_workers, &(struct n_workers){ m, WORKERS },
	    START_MS));
	CHECK_EQ_INT(get(addr, "/healthz"), -1);
	w.pid = m;
	CHECK(!has_exited(&w));
	kill_master(m);
	full_refused(cfg, path_in_tmp("full.log"), addr, port);

	inherited();
	dual_stack();
	kill_all();
	remove_tmpdir();
	return check_done("proc_listen_tcp");
}
