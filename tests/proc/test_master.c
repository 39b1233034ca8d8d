/*
 * test_master.c - process-level tests of asyncexec-fcgi: the real binary
 * (ASYNCEXEC_FCGI), forked and exec'd with configurations derived from
 * the test stack's (ASYNCEXEC_TEST_CONFIG), spoken to in raw FastCGI.
 *
 *   1. start: socket and its mode, /healthz, exactly `workers` children
 *   2. a SIGKILLed worker is replaced; the service keeps answering
 *   3. SIGTERM with a request in flight: the request is answered, then
 *      the master exits 0, leaves no process behind, removes its socket
 *   4. an inherited listening socket (fd 0) is used, not unlinked, and
 *      the configured path is never created
 *   5. --check-config on a good and on a bad file, and on one whose
 *      db_connect_timeout x nodes leaves no room before the stop deadline
 *   6. db_password_file a FIFO no one writes to: the start exits 2 at
 *      once, naming the file and what to do (it waited in the open for
 *      ever, its SIGTERM held), and so does --check-config of each of
 *      the four binaries (exit 1)
 *   7. SIGTERM while the start waits on its configuration file (a slow
 *      filesystem; here this test holds a write lease on it): the master
 *      ends at once, by the signal, creating nothing (it was held until
 *      the wait ended: systemd's SIGKILL after a hung read)
 *
 * Each master runs in its own process group; whatever this test started
 * is SIGKILLed and reaped on every exit path. Every wait is a poll of a
 * condition every 20 ms up to a deadline.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fcgi_client.h"
#include "proc_util.h"
#include "util/clock.h"

#define PROMPT_MS	5000	/* a configuration error is said within */

/* ---- the scenarios ---- */

struct stack {
	pid_t	 master;
	char	 cfg[512], sock[512], log[512];
};

/* 1. Start: the socket and its mode, /healthz, exactly WORKERS workers. */
static int
scenario_start(struct stack *s)
{
	struct up_wait		 u;
	struct n_workers	 nw;
	struct stat		 st;
	struct exit_wait	 w;
	pid_t			 pids[MAX_PIDS];
	const char		*v;
	char			*base;
	unsigned long		 mode = 0660;	/* the documented default */

	snprintf(s->cfg, sizeof(s->cfg), "%s", path_in_tmp("main.conf"));
	snprintf(s->sock, sizeof(s->sock), "%s", path_in_tmp("main.sock"));
	snprintf(s->log, sizeof(s->log), "%s", path_in_tmp("main.log"));
	if ((base = read_file(base_cfg)) == NULL) {
		CHECK(!"base configuration readable");
		return -1;
	}
	if ((v = config_value(base, "listen_mode")) != NULL)
		mode = strtoul(v, NULL, 8);
	free(base);
	if (derive_config(s->cfg, s->sock, WORKERS_STR, NULL) == -1) {
		CHECK(!"derived configuration written");
		return -1;
	}

	s->master = start_master(s->cfg, s->log, -1);
	CHECK(s->master > 0);
	if (s->master <= 0)
		return -1;
	u.pid = s->master;
	u.sock = s->sock;
	u.status = -1;
	w.pid = s->master;
	CHECK(wait_for(answers, &u, START_MS));
	if (has_exited(&w) || u.status == -1) {
		fprintf(stderr, "asyncexec-fcgi did not come up\n");
		CHECK(!"asyncexec-fcgi is up");
		dump_log(s->log);
		kill_master(s->master);
		s->master = 0;
		return -1;
	}
	CHECK(is_socket_file(s->sock));
	CHECK(lstat(s->sock, &st) == 0);
	CHECK_EQ_INT(st.st_mode & 07777, mode);
	CHECK_EQ_INT(u.status, 200);
	CHECK_EQ_INT(healthz(s->sock), 200);

	nw.master = s->master;
	nw.want = WORKERS;
	CHECK(wait_for(has_n_workers, &nw, START_MS));
	CHECK_EQ_INT(workers_of(s->master, pids, MAX_PIDS), WORKERS);
	return 0;
}

struct respawn_wait {
	pid_t	 master, killed;
	pid_t	 before[MAX_PIDS];
	size_t	 nbefore;
};

/* Whether WORKERS live workers exist, one new, the killed one not among them. */
static int
replaced(void *arg)
{
	struct respawn_wait	*r = arg;
	pid_t			 now[MAX_PIDS];
	size_t			 n, i, fresh = 0;

	n = workers_of(r->master, now, MAX_PIDS);
	if (n != WORKERS || has_pid(now, n, r->killed))
		return 0;
	for (i = 0; i < n; i++)
		if (!has_pid(r->before, r->nbefore, now[i]))
			fresh++;
	return fresh == 1;
}

/* 2. A SIGKILLed worker is replaced by a new process. */
static void
scenario_respawn(struct stack *s)
{
	struct respawn_wait	 r;
	char			*log;
	int			 i, ok = 1;

	memset(&r, 0, sizeof(r));
	r.master = s->master;
	r.nbefore = workers_of(s->master, r.before, MAX_PIDS);
	CHECK_EQ_INT(r.nbefore, WORKERS);
	if (r.nbefore != WORKERS)
		return;
	r.killed = r.before[0];
	CHECK_EQ_INT(kill(r.killed, SIGKILL), 0);
	CHECK(wait_for(replaced, &r, RESPAWN_MS));
	CHECK(!alive(r.killed));
	for (i = 0; i < 4; i++)
		ok &= healthz(s->sock) == 200;
	CHECK(ok);
	log = read_file(s->log);
	CHECK(log != NULL && strstr(log, "killed by signal 9") != NULL);
	free(log);
}

struct busy_wait {
	pid_t	 workers[WORKERS];
	pid_t	 busy;
};

/* Whether every worker waits in accept(2): the pool is idle. */
static int
all_idle(void *arg)
{
	struct busy_wait	*b = arg;
	size_t			 i;

	for (i = 0; i < WORKERS; i++)
		if (!in_accept(blocked_in(b->workers[i])))
			return 0;
	return 1;
}

/* Whether exactly one worker is blocked in read(2) (the request body). */
static int
one_reading(void *arg)
{
	struct busy_wait	*b = arg;
	size_t			 i, n = 0;

	for (i = 0; i < WORKERS; i++)
		if (blocked_in(b->workers[i]) == SYS_read) {
			b->busy = b->workers[i];
			n++;
		}
	return n == 1;
}

struct gone_wait {
	pid_t	 master, pid;
};

/* Whether pid is no longer a live child of master. */
static int
worker_gone(void *arg)
{
	struct gone_wait	*g = arg;
	struct pstat		 ps;

	return proc_stat(g->pid, &ps) == -1 || ps.state == 'Z' ||
	    ps.ppid != g->master;
}

/* Whether SIGTERM is pending (blocked) at pid. */
static int
term_pending(void *arg)
{
	pid_t			 pid = *(pid_t *)arg;
	unsigned long long	 bit = 1ULL << (SIGTERM - 1);

	return ((signal_mask(pid, "SigPnd:") | signal_mask(pid, "ShdPnd:")) &
	    bit) != 0;
}

/* Checks a whole 202 answer of a submit of correlation id cid. */
static void
check_submit_answer(const struct fcgi_resp *r, const char *cid)
{
	char		 pattern[160];
	const char	*ct;

	CHECK(r->ended);
	CHECK_EQ_INT(r->proto_status, 0);	/* FCGI_REQUEST_COMPLETE */
	CHECK(r->out != NULL && strncmp(r->out, "Status: ", 8) == 0);
	CHECK_EQ_INT(r->status, 202);
	ct = fcgi_header(r, "Content-Type");
	CHECK(ct != NULL && strncmp(ct, "application/json", 16) == 0);
	CHECK(r->body != NULL && r->body_len > 0 && r->body[0] == '{' &&
	    r->body[r->body_len - 1] == '}');
	snprintf(pattern, sizeof(pattern), "\"correlationId\":\"%s\"", cid);
	CHECK(r->body != NULL && strstr(r->body, pattern) != NULL);
	CHECK(r->body != NULL && strstr(r->body, "\"pollToken\":\"") != NULL);
	CHECK(r->body != NULL &&
	    strstr(r->body, "\"status\":\"waiting_callback\"") != NULL);
	if (r->status != 202)
		fprintf(stderr, "in-flight response: %s\n",
		    r->out ? r->out : "(none)");
}

/*
 * 3. SIGTERM while a worker reads a request body: the master stops the
 * idle worker, waits for the busy one, whose request is answered in
 * full; then it exits 0, leaving no process and no socket behind.
 *
 * The request carries a valid consumer key for a route that exists,
 * because submit authenticates before it reads the body: without a key
 * the 401 goes out at once and no worker would be reading.
 */
static void
scenario_graceful_stop(struct stack *s)
{
	static const char	 body[] = "{\"n\":\"0123456789ab\"}";
	struct busy_wait	 b;
	struct gone_wait	 g;
	struct exit_wait	 w = { s->master };
	struct fcgi_resp	 r;
	struct pollfd		 p;
	char			 cid[64];
	pid_t			 pids[MAX_PIDS];
	size_t			 n, i;
	long long		 deadline;
	int			 fd, status;

	CHECK_EQ_INT(strlen(body), 20);
	snprintf(cid, sizeof(cid), "inflight-%ld", (long)getpid());
	n = workers_of(s->master, pids, MAX_PIDS);
	CHECK_EQ_INT(n, WORKERS);
	if (n != WORKERS)
		return;
	memset(&b, 0, sizeof(b));
	for (i = 0; i < WORKERS; i++)
		b.workers[i] = pids[i];
	/* Precondition: both workers idle in accept, none in read. */
	CHECK(wait_for(all_idle, &b, START_MS));
	/* Half the body of a submit with a valid key for a route that
	 * exists (see above). */
	if ((fd = submit_start(s->sock, cid, body, 10, ut_now_ms() + REQ_MS)) ==
	    -1) {
		CHECK(!"a submit started on the master's socket");
		return;
	}

	/* The request is in flight once one worker blocks reading its body. */
	CHECK(wait_for(one_reading, &b, START_MS));
	if (b.busy == 0) {
		close(fd);
		return;
	}
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	CHECK_EQ_INT(poll(&p, 1, 0), 0);	/* nothing answered yet */

	CHECK_EQ_INT(kill(s->master, SIGTERM), 0);
	g.master = s->master;
	g.pid = b.workers[0] == b.busy ? b.workers[1] : b.workers[0];
	/* The master forwarded SIGTERM: the idle worker goes, ... */
	CHECK(wait_for(worker_gone, &g, STOP_MS));
	/* ... the busy one got it too, but holds it while it serves. */
	CHECK(wait_for(term_pending, &b.busy, STOP_MS));
	CHECK(!has_exited(&w));
	CHECK(alive(b.busy));
	n = workers_of(s->master, pids, MAX_PIDS);
	CHECK_EQ_INT(n, 1);			/* no replacement while stopping */
	CHECK(n == 1 && pids[0] == b.busy);
	/*
	 * Keep the request open past the master's 1 s SIGTERM repeat: the
	 * repeated signal must not cut it short either.
	 */
	ut_pause_ms(1500);
	CHECK(!has_exited(&w));
	CHECK(alive(b.busy));
	CHECK_EQ_INT(blocked_in(b.busy), SYS_read);
	CHECK_EQ_INT(poll(&p, 1, 0), 0);

	deadline = ut_now_ms() + REQ_MS;
	CHECK_EQ_INT(fcgi_stdin(fd, body + 10, 10, deadline), 0);
	CHECK_EQ_INT(fcgi_stdin(fd, NULL, 0, deadline), 0);
	CHECK_EQ_INT(fcgi_read(fd, &r, deadline), 0);
	close(fd);
	check_submit_answer(&r, cid);
	fcgi_resp_free(&r);

	status = wait_master_exit(s->master, STOP_MS);
	CHECK(status != -1);
	CHECK(status != -1 && WIFEXITED(status));
	CHECK_EQ_INT(status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) :
	    -1, 0);
	CHECK(!alive(b.busy));
	CHECK(!exists(s->sock));
	s->master = 0;
}

/*
 * 4. An inherited listening socket on fd 0 is served; on SIGTERM it is
 * left in place, and the configured `listen` path is never created.
 */
static void
scenario_inherited(void)
{
	struct sockaddr_un	 sa;
	struct n_workers	 nw;
	const char		*cfg = path_in_tmp("inherit.conf");
	const char		*log = path_in_tmp("inherit.log");
	const char		*mine = path_in_tmp("inherited.sock");
	const char		*other = path_in_tmp("never.sock");
	pid_t			 master;
	int			 fd, status, i, ok = 1;

	if (derive_config(cfg, other, WORKERS_STR, NULL) == -1) {
		CHECK(!"derived configuration written");
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", mine);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, 16) == -1) {
		CHECK(!"listening socket created");
		if (fd != -1)
			close(fd);
		return;
	}
	master = start_master(cfg, log, fd);	/* dup2'd to fd 0 */
	close(fd);
	CHECK(master > 0);
	if (master <= 0)
		return;

	/* The socket listens already: the request waits for a worker. */
	CHECK_EQ_INT(healthz(mine), 200);
	nw.master = master;
	nw.want = WORKERS;
	CHECK(wait_for(has_n_workers, &nw, START_MS));
	for (i = 0; i < 3; i++)
		ok &= healthz(mine) == 200;
	CHECK(ok);
	CHECK(!exists(other));

	CHECK_EQ_INT(kill(master, SIGTERM), 0);
	status = wait_master_exit(master, STOP_MS);
	CHECK(status != -1 && WIFEXITED(status));
	CHECK_EQ_INT(status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) :
	    -1, 0);
	CHECK(is_socket_file(mine));	/* not ours to unlink */
	CHECK(!exists(other));
	if (check_fail_ > 0)
		dump_log(log);
}

/* 5. --check-config: an "ok" line per check and 0; "FILE:N: workers:" and 2. */
static void
scenario_check_config(void)
{
	const char	*good = path_in_tmp("check-good.conf");
	const char	*bad = path_in_tmp("check-bad.conf");
	const char	*sock = path_in_tmp("check.sock");
	char		 out[4096], err[4096], want[768];
	char		*argv[] = { (char *)fcgi_bin, "--config", NULL,
			    "--check-config", NULL };
	unsigned	 line = 0;
	int		 st;

	CHECK_EQ_INT(derive_config(good, sock, WORKERS_STR, NULL), 0);
	argv[2] = (char *)good;
	st = run(argv, out, err, sizeof(out), 30000);
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ_INT(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	snprintf(want, sizeof(want), "ok    config: %s parses\n", good);
	CHECK(strncmp(out, want, strlen(want)) == 0);
	CHECK(strstr(out, "ok    schema: ") != NULL);
	CHECK(strstr(out, "\nerror") == NULL && strstr(out, "\nwarn") == NULL);
	if (strncmp(out, want, strlen(want)) != 0 || strstr(out, "\nerror"))
		fprintf(stderr, "--check-config said: %s\n", out);
	CHECK(!exists(sock));		/* checking does not listen */

	CHECK_EQ_INT(derive_config(bad, sock, "lots", &line), 0);
	CHECK(line > 2);
	argv[2] = (char *)bad;
	st = run(argv, out, err, sizeof(out), 30000);
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ_INT(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2);
	snprintf(want, sizeof(want), "%s:%u: workers:", bad, line);
	CHECK(strstr(err, want) != NULL);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "expected \"%s\" in stderr: %s\n", want, err);
	CHECK_EQ_STR(out, "");
	CHECK(!exists(sock));
}

/*
 * 5. --check-config of a file whose database waits leave a request no
 * room before the stop deadline (15 s + 9 s + 1 s > 25 s): the warning
 * that start and reload log (proc_master_reload), and exit 0.
 */
static void
scenario_check_waits(void)
{
	const char	*cfg = path_in_tmp("check-waits.conf");
	const char	*sock = path_in_tmp("check-waits.sock");
	char		 out[4096], err[4096];
	char		*argv[] = { (char *)fcgi_bin, "--config", (char *)cfg,
			    "--check-config", NULL };
	int		 st;

	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR,
	    "db_connect_timeout = 9\n", NULL), 0);
	st = run(argv, out, err, sizeof(out), 30000);
	CHECK_EQ_INT(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	CHECK(strstr(out, "\nwarn  stop deadline: db_connect_timeout (9 s) x ")
	    != NULL);
	CHECK(strstr(out, " s or less; a request on a database that stops "
	    "answering may then be cut by the stop's SIGKILL (nginx: 502)\n")
	    != NULL);
	CHECK(strstr(out, "\nerror") == NULL);
	if (strstr(out, "\nwarn  stop deadline: ") == NULL)
		fprintf(stderr, "--check-config said: %s\n", out);
	CHECK(!exists(sock));
}

/*
 * Runs bin (a binary beside asyncexec-fcgi) --config cfg, with
 * --check-config when check, for PROMPT_MS at most: its exit status (-1
 * when killed) and the ms it took into *took; out and err (size bytes).
 */
static int
run_prompt(const char *bin, const char *cfg, int check, char *out,
    char *err, size_t size, long long *took)
{
	const char	*slash = strrchr(fcgi_bin, '/');
	char		 path[600];
	char		*argv[] = { path, "--config", (char *)cfg,
			    check ? "--check-config" : NULL, NULL };
	long long	 t0 = ut_now_ms();
	int		 st;

	snprintf(path, sizeof(path), "%.*s/%s", slash != NULL ?
	    (int)(slash - fcgi_bin) : 1, slash != NULL ? fcgi_bin : ".", bin);
	st = run(argv, out, err, size, PROMPT_MS);
	*took = ut_now_ms() - t0;
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 6. A FIFO as db_password_file: a clear error at once, never a wait. */
static void
scenario_pw_fifo(void)
{
	static const char *const bins[] = { "asyncexec-fcgi",
	    "asyncexec-admin", "asyncexec-expire", "asyncexec-notify" };
	const char	*cfg = path_in_tmp("fifo.conf");
	const char	*sock = path_in_tmp("fifo.sock");
	const char	*fifo = path_in_tmp("fifo.pw");
	char		 out[4096], err[4096], extra[600];
	long long	 took;
	size_t		 i;
	int		 st;

	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	snprintf(extra, sizeof(extra), "db_password_file = %s\n", fifo);
	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR, extra, NULL), 0);
	st = run_prompt("asyncexec-fcgi", cfg, 0, out, err, sizeof(out),
	    &took);
	printf("figure: asyncexec-fcgi with a FIFO as db_password_file: exit "
	    "%d after %lld ms\n", st, took);
	CHECK_EQ_INT(st, 2);
	CHECK(strstr(err, fifo) != NULL && strstr(err, "db_password_file") !=
	    NULL && strstr(err, "a FIFO, not a regular file") != NULL &&
	    strstr(err, "LoadCredential=") != NULL);
	if (st != 2)
		fprintf(stderr, "asyncexec-fcgi said: %s\n", err);
	CHECK(!exists(sock));
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		st = run_prompt(bins[i], cfg, 1, out, err, sizeof(out), &took);
		printf("figure: %s --check-config, a FIFO as db_password_file: "
		    "exit %d after %lld ms\n", bins[i], st, took);
		CHECK_EQ_INT(st, 1);
		CHECK(strstr(out, "\nerror password file: ") != NULL &&
		    strstr(out, "a FIFO, not a regular file") != NULL);
		if (strstr(out, "a FIFO, not a regular file") == NULL)
			fprintf(stderr, "%s said: %s%s\n", bins[i], out, err);
	}
	CHECK(!exists(sock));
}

/* 7. SIGTERM in the configuration's read: the start ends at once. */
static void
scenario_term_in_load(void)
{
	const char	*cfg = path_in_tmp("slow.conf");
	const char	*sock = path_in_tmp("slow.sock");
	int		 fd, st;
	long long	 t0;
	pid_t		 m;

	CHECK_EQ_INT(derive_config(cfg, sock, WORKERS_STR, NULL), 0);
	CHECK((fd = lease(cfg)) != -1);
	CHECK((m = start_master(cfg, path_in_tmp("slow.log"), -1)) > 0);
	CHECK(m > 0 && wait_for(in_open, &m, START_MS));
	t0 = ut_now_ms();
	CHECK_EQ_INT(kill(m, SIGTERM), 0);
	st = wait_master_exit(m, PROMPT_MS);	/* SIGKILLed after */
	printf("figure: SIGTERM while the start waits on its configuration "
	    "file: %s after %lld ms\n", st == -1 ? "still running" :
	    WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited",
	    ut_now_ms() - t0);
	lease_end(fd);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CHECK(!exists(sock));
}

int
main(void)
{
	struct stack	 s;

	if (proc_init("master") == -1)
		return 1;
	memset(&s, 0, sizeof(s));
	if (scenario_start(&s) == 0) {
		scenario_respawn(&s);
		scenario_graceful_stop(&s);
		if (check_fail_ > 0)
			dump_log(s.log);
		kill_master(s.master);	/* only if a scenario left it */
	}
	scenario_inherited();
	scenario_check_config();
	scenario_check_waits();
	scenario_pw_fifo();
	scenario_term_in_load();

	kill_all();
	remove_tmpdir();
	return check_done("proc_master");
}
