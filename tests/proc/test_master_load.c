/*
 * test_master_load.c - the master's proof bullets of issue 8, each on
 * its own asyncexec-fcgi master in this test's temp dir, under a load of
 * LOAD_THREADS raw FastCGI clients (GET /healthz and POST submits with
 * the stack's database, alternating; one request per connection).
 *
 *   1. worker SIGKILL under load: the worker serving a half-sent submit
 *      is SIGKILLed (twice, one per slot): replaced within 1 s; that
 *      request's connection is closed without an answer, no other
 *      request fails, and every acknowledged submit polls back
 *   2. SIGTERM under load: no accepted request is cut (no half answer),
 *      the half-sent submit in flight is answered in full, the idle
 *      worker gets SIGTERM at once, the master exits 0, and every
 *      acknowledged submit polls back (through a second master)
 *   3. another local user cannot connect to the socket (listen_mode
 *      0660, a group it is not in: EACCES); in the group it can
 *   4. a malformed FCGI_PARAMS record (name length 0x7ffffffe) costs
 *      that worker only: it dies, it is replaced, the load goes on
 *   5. SIGTERM on a TCP socket (listen = ADDRESS:PORT) with a request in
 *      flight: a new connection is refused at once, the one in flight
 *      is answered, exit 0
 *   6. holder() (load.c), which finds the worker holding a half-sent
 *      submit for 1, 2 and other tests, names the right one of two
 *      workers that both wait in read(2)
 *
 * Figures are printed as "figure: ..." lines.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fcgi_client.h"
#include "util/port.h"
#include "proc_util.h"

#include "load.h"

#define REPLACE_MS	1000	/* the bound of the proof */
#define FCGI_PARAMS_T	4

struct replace_wait {
	pid_t	 master, killed;
};

/* Whether master has WORKERS live workers, the killed one not among them. */
static int
replaced(void *arg)
{
	struct replace_wait	*r = arg;
	pid_t			 pids[MAX_PIDS];
	size_t			 n;

	n = workers_of(r->master, pids, MAX_PIDS);
	return n == WORKERS && !has_pid(pids, n, r->killed);
}

/* 1. SIGKILL of the worker holding a half-sent submit, under load. */
static void
scenario_sigkill(void)
{
	const char		*cfg = path_in_tmp("kill.conf");
	const char		*sock = path_in_tmp("kill.sock");
	const char		*log = path_in_tmp("kill.log");
	struct load		 ls[LOAD_THREADS], t;
	struct holder_wait	 h;
	struct replace_wait	 rw;
	struct fcgi_resp	 r;
	char			 cid[64];
	long long		 t0, took[2];
	long			 back;
	pid_t			 m;
	int			 k, fd;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	CHECK_EQ_INT(load_start(ls, sock, "load", LOAD_ACKS), 0);
	CHECK(load_more(ls, 300));
	for (k = 0; k < 2; k++) {
		snprintf(cid, sizeof(cid), "kill-%ld-%d", (long)getpid(), k);
		fd = inflight_start(sock, cid);
		CHECK(fd != -1);
		h.master = m, h.pid = 0, h.client = fd;
		CHECK(wait_for(holder, &h, START_MS));
		if (fd == -1 || h.pid == 0)
			break;
		t0 = ut_now_ms();
		CHECK_EQ_INT(kill(h.pid, SIGKILL), 0);
		rw.master = m, rw.killed = h.pid;
		took[k] = time_until(replaced, &rw, t0, 5000);
		CHECK(took[k] >= 0 && took[k] < REPLACE_MS);
		/* The request in flight: its connection closed, no answer. */
		CHECK_EQ_INT(fcgi_read(fd, &r, ut_now_ms() + REQ_MS), -1);
		CHECK(!r.ended && r.out_len == 0);
		fcgi_resp_free(&r);
		close(fd);
		printf("figure: worker SIGKILL %d: replaced in %lld ms; its "
		    "request in flight: connection closed, no answer\n", k + 1,
		    took[k]);
		/* The client may retry it: the whole submit is accepted. */
		fd = submit_start(sock, cid, HALF_BODY, strlen(HALF_BODY),
		    ut_now_ms() + REQ_MS);
		CHECK(fd != -1 && fcgi_read(fd, &r, ut_now_ms() + REQ_MS) == 0 &&
		    r.status == 202);
		fcgi_resp_free(&r);
		if (fd != -1)
			close(fd);
		CHECK(load_more(ls, 300));
	}
	load_join(ls, &t);
	load_report("worker SIGKILL under load", &t);
	CHECK(t.answered > 0 && t.nacks > 0);
	CHECK_EQ_INT(t.refused + t.closed + t.half + t.bad, 0);
	back = poll_back(ls, sock);
	printf("figure: worker SIGKILL under load: %ld of %ld acknowledged "
	    "submits poll back (lost %ld)\n", back, t.nacks, t.nacks - back);
	CHECK_EQ_INT(back, t.nacks);
	load_free(ls);
	down(m, log);
}

struct gone_wait {
	pid_t	 pid;
};

static int
gone(void *arg)
{
	return !alive(((struct gone_wait *)arg)->pid);
}

struct stopped_wait {
	struct load	*ls;
};

/* Whether every load client has stopped (refused at connect). */
static int
load_stopped(void *arg)
{
	struct load	*ls = ((struct stopped_wait *)arg)->ls;
	int		 i;

	for (i = 0; i < LOAD_THREADS; i++)
		if (ls[i].refused == 0)
			return 0;
	return 1;
}

/* Whether the socket file at path (arg) is gone. */
static int
unlinked(void *arg)
{
	return !exists(arg);
}

/* The other worker of master than pid, or 0. */
static pid_t
other_worker(pid_t master, pid_t pid)
{
	pid_t	 pids[MAX_PIDS];
	size_t	 n, i;

	n = workers_of(master, pids, MAX_PIDS);
	for (i = 0; i < n; i++)
		if (pids[i] != pid)
			return pids[i];
	return 0;
}

/* 2. SIGTERM under load: accepted requests answered, exit 0. */
static void
scenario_sigterm(void)
{
	const char		*cfg = path_in_tmp("term.conf");
	const char		*sock = path_in_tmp("term.sock");
	const char		*sock2 = path_in_tmp("term2.sock");
	const char		*log = path_in_tmp("term.log");
	struct load		 ls[LOAD_THREADS], t;
	struct holder_wait	 h = { 0, 0, -1 };
	struct gone_wait	 g;
	struct stopped_wait	 sw = { ls };
	struct exit_wait	 w;
	long long		 t0;
	long			 back;
	pid_t			 m;
	int			 fd, st;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	w.pid = m;
	CHECK_EQ_INT(load_start(ls, sock, "load", LOAD_STOP_ON_REFUSAL |
	    LOAD_ACKS), 0);
	CHECK(load_more(ls, 300));
	fd = inflight_start(sock, "term-inflight");
	CHECK(fd != -1);
	h.master = m, h.client = fd;
	CHECK(wait_for(holder, &h, START_MS));
	g.pid = other_worker(m, h.pid);
	CHECK(g.pid > 0);
	t0 = ut_now_ms();
	CHECK_EQ_INT(kill(m, SIGTERM), 0);
	CHECK(wait_for(gone, &g, STOP_MS));
	printf("figure: SIGTERM under load: the idle worker exited %lld ms "
	    "after the master's SIGTERM\n", ut_now_ms() - t0);
	CHECK(wait_for(unlinked, (void *)sock, STOP_MS));	/* refused */
	CHECK(!has_exited(&w));	/* held by the request in flight */
	CHECK(alive(h.pid));
	if (fd != -1)
		CHECK(finish_inflight(fd));
	st = wait_master_exit(m, STOP_MS);
	CHECK(wait_for(load_stopped, &sw, STOP_MS));
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("figure: SIGTERM under load: master exited %lld ms after "
	    "SIGTERM, status %d\n", ut_now_ms() - t0,
	    st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	load_join(ls, &t);
	load_report("SIGTERM under load", &t);
	CHECK_EQ_INT(t.half + t.bad, 0);	/* nothing accepted was cut */
	/* Only connections waiting in the backlog (never accepted), at
	 * most one per client, may close unanswered. */
	CHECK(t.closed <= LOAD_THREADS);

	CHECK_EQ_INT(derive_config(cfg, sock2, WORKERS_STR, NULL), 0);
	if ((m = up(cfg, sock2, log, WORKERS, NULL)) != -1) {
		back = poll_back(ls, sock2);
		printf("figure: SIGTERM under load: %ld of %ld acknowledged "
		    "submits poll back (lost %ld)\n", back, t.nacks,
		    t.nacks - back);
		CHECK_EQ_INT(back, t.nacks);
		CHECK_EQ_INT(term_and_wait(m, STOP_MS, NULL), 0);
	}
	load_free(ls);
	if (check_fail_ > 0)
		dump_log(log);
}

/* In a child: become uid with gid (no other groups), connect to sock.
 * Returns 0 when connected, else the errno. */
static int
connect_as(uid_t uid, gid_t gid, const char *sock)
{
	pid_t	 pid;
	int	 st, fd;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (setgroups(0, NULL) == -1 || setgid(gid) == -1 ||
		    setuid(uid) == -1)
			_exit(120);
		if ((fd = fcgi_connect(sock)) == -1)
			_exit(errno > 0 && errno < 120 ? errno : 119);
		close(fd);
		_exit(0);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* 3. Another local user cannot connect; a member of listen_group can. */
static void
scenario_other_user(void)
{
	const char	*dir = path_in_tmp("perm");
	const char	*cfg = path_in_tmp("perm.conf");
	const char	*log = path_in_tmp("perm.log");
	char		 sock[600];
	struct group	*g = getgrnam("daemon");
	struct stat	 st;
	uid_t		 uid = 62000 + (uid_t)(getpid() % 2000);
	pid_t		 m;

	CHECK(g != NULL);
	if (g == NULL)
		return;
	/* The directory lets everyone in: only the socket's mode decides. */
	CHECK(chmod(tmpdir, 0711) == 0 && mkdir(dir, 0755) == 0);
	snprintf(sock, sizeof(sock), "%s/app.sock", dir);
	CHECK_EQ_INT(derive_config_x(cfg, sock, "1", "listen_mode = 0660\n"
	    "listen_group = daemon\n", NULL), 0);
	if ((m = up(cfg, sock, log, 1, NULL)) == -1)
		return;
	CHECK(lstat(sock, &st) == 0 && (st.st_mode & 07777) == 0660 &&
	    st.st_gid == g->gr_gid);
	CHECK_EQ_INT(connect_as(uid, NOGROUP, sock), EACCES);
	CHECK_EQ_INT(connect_as(uid, g->gr_gid, sock), 0);
	printf("figure: socket 0660 group daemon: uid %ld not in it: EACCES; "
	    "in it: connected\n", (long)uid);
	down(m, log);
}

/* Sends BEGIN_REQUEST and a PARAMS record whose name length is 0x7ffffffe. */
static int
send_poison(const char *sock)
{
	static const unsigned char rec[] = { 0xff, 0xff, 0xff, 0xfe, 0x01,
	    'A', 'B', 'C', 'D', 'E', 'F', 'G' };
	long long	 dl = ut_now_ms() + REQ_MS;
	int		 fd;

	if ((fd = fcgi_connect(sock)) == -1)
		return -1;
	if (fcgi_begin(fd, dl) == -1 ||
	    fcgi_record(fd, FCGI_PARAMS_T, rec, sizeof(rec), dl) == -1 ||
	    fcgi_record(fd, FCGI_PARAMS_T, NULL, 0, dl) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

struct new_wait {
	pid_t		 master;
	const pid_t	*before;
	size_t		 nbefore;
};

/* Whether master has a worker that is not in before. */
static int
new_worker(void *arg)
{
	struct new_wait	*w = arg;
	pid_t		 pids[MAX_PIDS];
	size_t		 n, i;

	n = workers_of(w->master, pids, MAX_PIDS);
	for (i = 0; i < n; i++)
		if (!has_pid(w->before, w->nbefore, pids[i]))
			return 1;
	return 0;
}

/* The master's log line about a worker's death, into out. */
static const char *
death_line(const char *log, char *out, size_t sz)
{
	char		*s = read_file(log);
	const char	*p = NULL, *b;

	snprintf(out, sz, "no log line");
	if (s != NULL && ((p = strstr(s, "killed by signal")) != NULL ||
	    (p = strstr(s, "exited with status")) != NULL)) {
		for (b = p; b > s && b[-1] != '\n'; b--)
			;
		snprintf(out, sz, "%.*s", (int)strcspn(b, "\n"), b);
	}
	free(s);
	return out;
}

/* 4. A malformed FastCGI record costs at most the worker that read it. */
static void
scenario_malformed(void)
{
	const char	*cfg = path_in_tmp("poison.conf");
	const char	*sock = path_in_tmp("poison.sock");
	const char	*log = path_in_tmp("poison.log");
	struct load	 ls[LOAD_THREADS], t;
	struct replace_wait rw;
	struct new_wait	 nw;
	struct fcgi_resp r;
	pid_t		 m, before[MAX_PIDS];
	size_t		 nb;
	long long	 t0;
	char		 why[160];
	int		 fd;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	nb = workers_of(m, before, MAX_PIDS);
	CHECK_EQ_INT(load_start(ls, sock, "load", LOAD_ACKS), 0);
	CHECK(load_more(ls, 300));
	t0 = ut_now_ms();
	fd = send_poison(sock);
	CHECK(fd != -1);
	if (fd != -1) {
		CHECK_EQ_INT(fcgi_read(fd, &r, ut_now_ms() + REQ_MS), -1);
		fcgi_resp_free(&r);
		close(fd);
	}
	nw.master = m, nw.nbefore = nb, nw.before = before;
	CHECK(wait_for(new_worker, &nw, RESPAWN_MS));	/* so one died */
	rw.master = m, rw.killed = 0;
	CHECK(wait_for(replaced, &rw, RESPAWN_MS));
	printf("figure: malformed record: the worker that read it died "
	    "(%s) and was replaced %lld ms after it was sent\n",
	    death_line(log, why, sizeof(why)), ut_now_ms() - t0);
	CHECK(load_more(ls, 300));
	load_join(ls, &t);
	load_report("malformed record under load", &t);
	CHECK_EQ_INT(t.refused + t.closed + t.half + t.bad, 0);
	CHECK_EQ_INT(healthz(sock), 200);
	load_free(ls);
	down(m, log);
}

/*
 * 5. SIGTERM on a TCP socket the master made (listen = 127.0.0.1:PORT):
 * while a half-sent submit holds the stop, a new connection is refused
 * at once (nginx then turns to another app host) instead of waiting,
 * unaccepted, in the socket's queue until the master exits; the submit
 * in flight is answered whole; exit 0.
 */
static void
scenario_tcp_stop(void)
{
	const char		*cfg = path_in_tmp("tcpstop.conf");
	const char		*log = path_in_tmp("tcpstop.log");
	struct holder_wait	 h = { 0, 0, -1 };
	struct log_wait		 lw = { log, "master: stopping" };
	struct exit_wait	 w;
	char			 addr[64];
	pid_t			 m;
	int			 fd, c, st;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", test_free_port());
	CHECK_EQ_INT(derive_config_x(cfg, addr, WORKERS_STR,
	    "listen_allow = 127.0.0.1\n", NULL), 0);
	if ((m = up(cfg, addr, log, WORKERS, NULL)) == -1)
		return;
	w.pid = m;
	fd = inflight_start(addr, "tcp-stop-inflight");
	CHECK(fd != -1);
	h.master = m, h.client = fd;
	CHECK(wait_for(holder, &h, START_MS));
	CHECK_EQ_INT(kill(m, SIGTERM), 0);
	CHECK(wait_for(logged, &lw, STOP_MS));
	c = fcgi_connect(addr);
	printf("figure: SIGTERM on a TCP socket, a request in flight: a new "
	    "connection is %s\n", c == -1 ? "refused" : "accepted into the "
	    "queue (nobody serves it)");
	CHECK_EQ_INT(c, -1);
	if (c != -1)
		close(c);
	CHECK(!has_exited(&w));	/* held by the request in flight */
	if (fd != -1)
		CHECK(finish_inflight(fd));
	st = wait_master_exit(m, STOP_MS);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (check_fail_ > 0)
		dump_log(log);
}

/* Whether all WORKERS workers of master (arg) are blocked in read(2). */
static int
all_reading(void *arg)
{
	pid_t	 pids[MAX_PIDS];
	size_t	 n, i;

	n = workers_of(*(pid_t *)arg, pids, MAX_PIDS);
	for (i = 0; i < n; i++)
		if (blocked_in(pids[i]) != SYS_read)
			return 0;
	return n == WORKERS;
}

/*
 * 6. The helper the other scenarios find the held worker with: two
 * workers each blocked in read(2) on a half-sent submit (as a load
 * worker is whose client was descheduled between its records); told
 * each connection, holder() names each one's own worker, two different
 * ones (which worker merely sits in read(2) cannot tell them apart).
 */
static void
scenario_holder(void)
{
	const char		*cfg = path_in_tmp("holder.conf");
	const char		*sock = path_in_tmp("holder.sock");
	const char		*log = path_in_tmp("holder.log");
	struct holder_wait	 a = { 0, 0, -1 }, b = { 0, 0, -1 };
	pid_t			 m;
	int			 fa, fb;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	fa = inflight_start(sock, "holder-a");
	fb = inflight_start(sock, "holder-b");
	CHECK(fa != -1 && fb != -1);
	CHECK(wait_for(all_reading, &m, START_MS));
	/* both accepted: sock_diag names each one's other end */
	CHECK(fa != -1 && sock_peer(fa) != 0 && fb != -1 && sock_peer(fb) != 0);
	a.master = b.master = m, a.client = fa, b.client = fb;
	CHECK(wait_for(holder, &a, START_MS));
	CHECK(wait_for(holder, &b, START_MS));
	CHECK(a.pid > 0 && b.pid > 0 && a.pid != b.pid);
	printf("figure: two workers in read(2): holder() named %ld for the "
	    "first connection, %ld for the second\n", (long)a.pid,
	    (long)b.pid);
	CHECK(fa != -1 && finish_inflight(fa));
	CHECK(fb != -1 && finish_inflight(fb));
	down(m, log);
}

int
main(int argc, char *argv[])
{
	static const struct scenario sc[] = {
		{ "kill", scenario_sigkill },
		{ "term", scenario_sigterm },
		{ "user", scenario_other_user },
		{ "malformed", scenario_malformed },
		{ "tcpstop", scenario_tcp_stop },
		{ "holder", scenario_holder },
	};

	return scenarios_main("load", "proc_master_load", sc,
	    sizeof(sc) / sizeof(sc[0]), argc, argv);
}
