/*
 * test_master_faults.c - defect 7 of issue 8: the master under faults,
 * each scenario on its own asyncexec-fcgi master in this test's temp dir.
 *
 *   1. fork() fails (a real fault: the master runs as an unused uid with
 *      RLIMIT_NPROC at its own size, and a filler process of that uid
 *      takes the freed slot): the pool refills once the fault ends
 *   2. crash loop (every new worker SIGKILLed at once): the respawn
 *      delay backs off, the log stays short, and SIGTERM while the slot
 *      backs off stops the master at once, exit 0
 *   3. the backoff resets once a worker has lived long enough
 *   4. the socket is never wider than listen_mode: with umask 0 and a
 *      failure after bind (unknown listen_group) no socket file is left
 *      open to all; with 0600 the first mode ever seen is 0600
 *   5. a second master on a live socket refuses to start and the first
 *      keeps serving; a stale socket file is replaced
 *   6. the SIGKILL deadline of a stop is shorter than the unit's
 *      TimeoutStopSec
 *   7. a worker SIGKILLed inside a request leaves no busy worker behind
 *      in /metrics (asyncexec_workers_busy: the dead one's +1 stayed)
 *
 * Measured figures are printed as "figure: ..." lines.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
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
#include "proc_util.h"
#include "load.h"

#define BACKOFF_KILLS	6	/* quick deaths in a row, scenario 2 */
#define HEALTHY_MS	10500	/* above the master's healthy life */

static pid_t	 filler;

/* Forks a process that becomes uid and waits to be killed. */
static pid_t
start_filler(uid_t uid)
{
	pid_t	 pid;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		if (setgroups(0, NULL) == -1 || setgid(NOGROUP) == -1 ||
		    setuid(uid) == -1)
			_exit(126);
		for (;;)
			pause();
	}
	return pid;
}

static void
stop_filler(void)
{
	if (filler > 0) {
		(void)kill(filler, SIGKILL);
		(void)waitpid(filler, NULL, 0);
		filler = 0;
	}
}

struct uid_wait {
	uid_t	 uid;
	size_t	 want;
};

static int
uid_count(void *arg)
{
	struct uid_wait	*u = arg;

	return procs_of_uid(u->uid) == u->want;
}

/* 1. fork() fails while a slot is empty; the tick refills it later. */
static void
scenario_fork_failure(void)
{
	struct run_as		 as;
	struct uid_wait		 uw;
	struct n_workers	 nw;
	struct log_wait		 lw;
	char			 cfg[600], sock[600];
	const char		*log = path_in_tmp("fork.log");
	pid_t			 m, pids[MAX_PIDS];
	uid_t			 uid = unused_uid(61000);
	long long		 t0;

	if (user_config("fork", uid, cfg, sock, sizeof(cfg)) == -1) {
		CHECK(!"configuration for the unprivileged master");
		return;
	}
	/* master + 2 workers = the limit: no fork beyond them succeeds */
	as.uid = uid, as.gid = NOGROUP, as.nproc = 3;
	if ((m = up(cfg, sock, log, 2, &as)) == -1)
		return;
	uw.uid = uid, uw.want = 3;
	CHECK(wait_for(uid_count, &uw, START_MS));
	filler = start_filler(uid);	/* takes the slot a death frees */
	uw.want = 4;
	CHECK(wait_for(uid_count, &uw, START_MS));
	CHECK_EQ_INT(workers_of(m, pids, MAX_PIDS), 2);
	CHECK_EQ_INT(kill(pids[0], SIGKILL), 0);
	lw.path = log, lw.needle = "fork: ";
	CHECK(wait_for(logged, &lw, RESPAWN_MS));
	CHECK_EQ_INT(workers_of(m, pids, MAX_PIDS), 1);
	CHECK_EQ_INT(healthz(sock), 200);	/* the other one serves */

	stop_filler();				/* the fault ends */
	t0 = ut_now_ms();
	nw.master = m, nw.want = 2;
	CHECK(wait_for(has_n_workers, &nw, RESPAWN_MS));
	printf("figure: fork failure: slot refilled %lld ms after the fault "
	    "ended; %d fork error lines logged\n", ut_now_ms() - t0,
	    log_count(log, "fork: "));
	CHECK(log_count(log, "fork: ") <= 2);	/* rate-limited */
	CHECK_EQ_INT(healthz(sock), 200);
	down(m, log);
}

struct fresh_wait {
	pid_t	 master, old;
	pid_t	 now;
};

/* Whether the master has a live worker other than old (into now). */
static int
fresh_worker(void *arg)
{
	struct fresh_wait	*f = arg;
	pid_t			 pids[MAX_PIDS];

	if (workers_of(f->master, pids, MAX_PIDS) != 1 || pids[0] == f->old)
		return 0;
	f->now = pids[0];
	return 1;
}

/* Whether pid has been reaped (its /proc entry is gone). */
static int
reaped(void *arg)
{
	struct pstat	 ps;

	return proc_stat(*(pid_t *)arg, &ps) == -1;
}

/*
 * SIGKILLs the one worker of m n times, each time as soon as its
 * replacement is up; gaps[i]: from the kill to the replacement, ms.
 * Returns the last worker, or -1.
 */
static pid_t
kill_loop(pid_t m, int n, long long *gaps)
{
	struct fresh_wait	 f = { m, 0, 0 };
	pid_t			 pids[MAX_PIDS];
	long long		 t0;
	int			 i;

	if (workers_of(m, pids, MAX_PIDS) != 1)
		return -1;
	f.now = pids[0];
	for (i = 0; i < n; i++) {
		f.old = f.now;
		t0 = ut_now_ms();
		(void)kill(f.old, SIGKILL);
		if (!wait_for(fresh_worker, &f, 35000))
			return -1;
		gaps[i] = ut_now_ms() - t0;
	}
	return f.now;
}

/* 2. Crash loop: backoff, a short log, SIGTERM at once during backoff. */
static void
scenario_crash_loop(void)
{
	const char	*cfg = path_in_tmp("crash.conf");
	const char	*sock = path_in_tmp("crash.sock");
	const char	*log = path_in_tmp("crash.log");
	long long	 gaps[BACKOFF_KILLS], took;
	pid_t		 m, w;
	int		 i, lines;

	if ((m = up_derived(cfg, sock, log, 1)) == -1)
		return;
	w = kill_loop(m, BACKOFF_KILLS, gaps);
	CHECK(w > 0);
	if (w <= 0) {
		kill_master(m);
		return;
	}
	printf("figure: crash loop: respawn delays (ms):");
	for (i = 0; i < BACKOFF_KILLS; i++)
		printf(" %lld", gaps[i]);
	printf("\n");
	CHECK(gaps[0] < 600);			/* the first death: fast */
	CHECK(gaps[BACKOFF_KILLS - 1] >= 4 * gaps[0]);	/* backs off */
	CHECK(gaps[BACKOFF_KILLS - 1] >= 1500);
	lines = log_count(log, "signal 9");
	printf("figure: crash loop: %d log lines for %d deaths\n", lines,
	    BACKOFF_KILLS);
	CHECK(lines <= 3);

	/* The slot now backs off for seconds: SIGTERM must not wait. */
	(void)kill(w, SIGKILL);
	CHECK(wait_for(reaped, &w, RESPAWN_MS));
	CHECK_EQ_INT(term_and_wait(m, STOP_MS, &took), 0);
	printf("figure: crash loop: SIGTERM during backoff: exit after %lld "
	    "ms\n", took);
	CHECK(took < 500);
	if (check_fail_ > 0)
		dump_log(log);
}

struct lived_wait {
	long long	 since;
	int		 ms;
};

static int
lived(void *arg)
{
	struct lived_wait	*l = arg;

	return ut_now_ms() - l->since >= l->ms;
}

/* 3. After a worker lived long enough, a death is replaced at once. */
static void
scenario_backoff_reset(void)
{
	const char		*cfg = path_in_tmp("reset.conf");
	const char		*sock = path_in_tmp("reset.sock");
	const char		*log = path_in_tmp("reset.log");
	struct lived_wait	 l;
	long long		 gaps[4];
	pid_t			 m, w;

	if ((m = up_derived(cfg, sock, log, 1)) == -1)
		return;
	w = kill_loop(m, 4, gaps);		/* backoff now 800 ms */
	CHECK(w > 0 && gaps[3] >= 700);
	l.since = ut_now_ms(), l.ms = HEALTHY_MS;	/* w lives that long */
	(void)wait_for(lived, &l, HEALTHY_MS + 1000);
	CHECK(w > 0 && alive(w));
	CHECK(kill_loop(m, 1, gaps) > 0);
	printf("figure: backoff reset: respawn %lld ms after the death of a "
	    "worker that lived %d ms\n", gaps[0], HEALTHY_MS);
	CHECK(gaps[0] < 300);
	down(m, log);
}

struct mode_wait {
	const char	*path;
	unsigned	 first;		/* the first mode seen, or ~0 */
};

static int
socket_seen(void *arg)
{
	struct mode_wait	*m = arg;
	struct stat		 st;

	if (lstat(m->path, &st) == -1)
		return 0;
	m->first = st.st_mode & 07777;
	return 1;
}

/* 4. The socket file is never wider than listen_mode. */
static void
scenario_umask(void)
{
	const char		*cfg = path_in_tmp("umask.conf");
	const char		*sock = path_in_tmp("umask.sock");
	const char		*log = path_in_tmp("umask.log");
	struct mode_wait	 mw = { sock, ~0u };
	struct stat		 st;
	mode_t			 old;
	pid_t			 m;
	int			 st_exit;

	/* A failure after bind: the file left (if any) must be 0600. */
	CHECK_EQ_INT(derive_config_x(cfg, sock, "1", "listen_mode = 0600\n"
	    "listen_group = asyncexec-no-such-group\n", NULL), 0);
	old = umask(0);			/* the master inherits 0 */
	m = start_master(cfg, log, -1);
	umask(old);
	st_exit = wait_master_exit(m, START_MS);
	CHECK(st_exit != -1 && WIFEXITED(st_exit) && WEXITSTATUS(st_exit) != 0);
	CHECK(log_count(log, "asyncexec-no-such-group") > 0);
	if (lstat(sock, &st) == 0)
		fprintf(stderr, "left behind: %s mode %04o\n", sock,
		    (unsigned)st.st_mode & 07777);
	CHECK(!exists(sock));

	/* A good start with umask 0: the first mode ever seen is 0600. */
	(void)unlink(sock);		/* what the old code left behind */
	CHECK_EQ_INT(derive_config_x(cfg, sock, "1", "listen_mode = 0600\n",
	    NULL), 0);
	old = umask(0);
	m = start_master(cfg, log, -1);
	umask(old);
	CHECK(wait_for(socket_seen, &mw, START_MS));
	CHECK_EQ_INT(mw.first, 0600);
	CHECK(lstat(sock, &st) == 0 && (st.st_mode & 07777) == 0600);
	down(m, log);
}

/* 5. A second master on a live socket refuses; a stale file is replaced. */
static void
scenario_second_instance(void)
{
	const char		*cfg = path_in_tmp("twice.conf");
	const char		*sock = path_in_tmp("twice.sock");
	const char		*log1 = path_in_tmp("twice-1.log");
	const char		*log2 = path_in_tmp("twice-2.log");
	struct sockaddr_un	 sa;
	struct stat		 st1, st2;
	pid_t			 m1, m2;
	int			 st, fd;

	if ((m1 = up_derived(cfg, sock, log1, 1)) == -1)
		return;
	CHECK_EQ_INT(lstat(sock, &st1), 0);
	m2 = start_master(cfg, log2, -1);
	st = wait_master_exit(m2, START_MS);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CHECK(log_count(log2, "another instance") > 0);
	CHECK_EQ_INT(lstat(sock, &st2), 0);
	CHECK(st1.st_ino == st2.st_ino);	/* not replaced */
	CHECK_EQ_INT(healthz(sock), 200);	/* the first still serves */
	CHECK_EQ_INT(term_and_wait(m1, STOP_MS, NULL), 0);
	CHECK(!exists(sock));
	if (check_fail_ > 0) {
		dump_log(log1);
		dump_log(log2);
	}

	/* A stale socket file (nobody listens): replaced, and served. */
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd != -1 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	if (fd != -1)
		close(fd);
	CHECK(is_socket_file(sock));
	if ((m1 = up(cfg, sock, log1, 1, NULL)) == -1)
		return;
	CHECK_EQ_INT(healthz(sock), 200);
	CHECK_EQ_INT(term_and_wait(m1, STOP_MS, NULL), 0);
}

/* TimeoutStopSec of the unit file (ASYNCEXEC_UNIT_FILE), or -1. */
static int
unit_stop_timeout(void)
{
	const char	*path = getenv("ASYNCEXEC_UNIT_FILE");
	char		*s, *p;
	int		 v = -1;

	if (path == NULL || (s = read_file(path)) == NULL)
		return -1;
	if ((p = strstr(s, "\nTimeoutStopSec=")) != NULL)
		v = atoi(p + 16);
	free(s);
	return v;
}

/* Whether the one worker of master *arg is blocked in read(2). */
static int
worker_reading(void *arg)
{
	pid_t	 pids[MAX_PIDS];

	return workers_of(*(pid_t *)arg, pids, MAX_PIDS) == 1 &&
	    blocked_in(pids[0]) == SYS_read;
}

/*
 * 6. A request that never finishes holds a worker through SIGTERM: the
 * master SIGKILLs it, and exits, before systemd's TimeoutStopSec.
 */
static void
scenario_stop_deadline(void)
{
	const char		*cfg = path_in_tmp("deadline.conf");
	const char		*sock = path_in_tmp("deadline.sock");
	const char		*log = path_in_tmp("deadline.log");
	struct fcgi_resp	 r;
	long long		 took;
	int			 unit = unit_stop_timeout(), fd, rc;
	pid_t			 m;

	CHECK(unit >= 10);
	if (unit < 10)
		return;
	if ((m = up_derived(cfg, sock, log, 1)) == -1)
		return;
	fd = inflight_start(sock, "stuck");
	CHECK(fd != -1);
	CHECK(wait_for(worker_reading, &m, START_MS));
	rc = term_and_wait(m, unit * 1000 + 5000, &took);
	printf("figure: stop deadline: a stuck request held the stop %lld ms; "
	    "unit TimeoutStopSec=%d\n", took, unit);
	CHECK(took >= 20000);		/* graceful: not cut short */
	CHECK(took < (unit - 2) * 1000LL);	/* before systemd's */
	CHECK(rc != -1);		/* every child reaped, then exit */
	CHECK(log_count(log, "killing them") > 0);
	if (fd != -1) {
		CHECK_EQ_INT(fcgi_read(fd, &r, ut_now_ms() + 1000), -1);
		CHECK(!r.ended);	/* closed, no half answer */
		fcgi_resp_free(&r);
		close(fd);
	}
	if (check_fail_ > 0)
		dump_log(log);
}

/* asyncexec_workers_busy of sock's /metrics, -1 without it. */
static int
busy_gauge(const char *sock)
{
	struct fcgi_resp	 r;
	const char		*p;
	int			 v = -1;

	if (fcgi_request(sock, "GET", "/metrics", NULL, NULL, 0, REQ_MS,
	    &r) == 0 && r.out != NULL && (p = strstr(r.out,
	    "\nasyncexec_workers_busy ")) != NULL)
		v = atoi(p + 24);
	fcgi_resp_free(&r);
	return v;
}

/*
 * 7. The one worker SIGKILLed while it holds a half-sent submit (busy):
 * once its replacement is up, /metrics counts one busy worker, the one
 * serving that scrape.
 */
static void
scenario_busy_killed(void)
{
	const char		*cfg = path_in_tmp("busy.conf");
	const char		*sock = path_in_tmp("busy.sock");
	const char		*log = path_in_tmp("busy.log");
	struct holder_wait	 hw;
	struct fresh_wait	 f;
	pid_t			 m;
	int			 fd;

	if ((m = up_derived(cfg, sock, log, 1)) == -1)
		return;
	CHECK_EQ_INT(busy_gauge(sock), 1);	/* the scrape itself */
	fd = inflight_start(sock, "busy");
	CHECK(fd != -1);
	hw.master = m, hw.pid = 0, hw.client = fd;
	CHECK(wait_for(holder, &hw, START_MS));
	CHECK(hw.pid > 0 && kill(hw.pid, SIGKILL) == 0);
	f.master = m, f.old = hw.pid, f.now = 0;
	CHECK(wait_for(fresh_worker, &f, RESPAWN_MS));
	if (fd != -1)
		close(fd);
	CHECK_EQ_INT(busy_gauge(sock), 1);	/* not 2: the dead one's */
	down(m, log);
}

int
main(int argc, char *argv[])
{
	static const struct scenario sc[] = {
		{ "fork", scenario_fork_failure },
		{ "crash", scenario_crash_loop },
		{ "reset", scenario_backoff_reset },
		{ "umask", scenario_umask },
		{ "twice", scenario_second_instance },
		{ "deadline", scenario_stop_deadline },
		{ "busy", scenario_busy_killed },
	};

	atexit(stop_filler);
	return scenarios_main("faults", "proc_master_faults", sc,
	    sizeof(sc) / sizeof(sc[0]), argc, argv);
}
