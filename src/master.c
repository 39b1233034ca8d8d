/*
 * master.c - the listening socket, N forked workers, respawn, shutdown.
 *
 * Signals are blocked except inside sigsuspend, so the flags set by the
 * handlers are only read at one place, and nothing in the master sleeps
 * outside it: SIGTERM/SIGINT is acted upon as soon as it arrives.
 *
 * Each worker has a slot. A slot emptied by a worker's death or by a
 * failed fork() is refilled at its due time by a tick: a one-shot
 * ITIMER_REAL (SIGALRM) armed for the earliest due slot whenever one is
 * empty. The delay backs off per slot: 0 after a worker that lived
 * HEALTHY_MS, else BACKOFF_MIN_MS doubling up to BACKOFF_MAX_MS, so a
 * crash loop or a fork that keeps failing costs little and logs little
 * (the first exits, then one line per LOG_EVERY_MS).
 *
 * SIGTERM/SIGINT: the master unlinks the socket it created (new
 * connections are refused), sends SIGTERM to every worker and repeats
 * it until all have exited (each answers its request in flight first),
 * reaps them all and exits 0. Workers still running STOP_KILL_SECONDS
 * after the SIGTERM get SIGKILL and the master exits 1; that deadline
 * is below the unit's TimeoutStopSec (30 s), so the master, not
 * systemd, ends the stop and reaps every child.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "worker.h"

#define MAX_WORKERS		1024
#define STOP_KILL_SECONDS	25	/* then SIGKILL (the unit: 30 s) */
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		30000
#define HEALTHY_MS		10000	/* a life this long: no delay */
#define CRASH_LOOP		3	/* quick exits in a row: a loop */
#define LOG_EVERY_MS		10000	/* one repeated line per */

static volatile sig_atomic_t got_term, got_chld, got_alrm;

/* The socket file master_listen created, unlinked when the stop begins. */
static char	 owned_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

struct child {
	pid_t		 pid;		/* 0: the slot is empty */
	long long	 started;	/* ms, when pid was forked */
	long long	 due;		/* ms, refill time if empty */
	unsigned	 backoff;	/* ms, the slot's current delay */
	unsigned	 quick;		/* quick exits in a row */
};

/* One kind of repeated line: when it was last logged, how many held. */
struct ratelog {
	long long	 last;
	unsigned	 held;
};

static struct ratelog	 crash_log = { -LOG_EVERY_MS, 0 };
static struct ratelog	 fork_log = { -LOG_EVERY_MS, 0 };

static void
on_signal(int sig)
{
	if (sig == SIGCHLD)
		got_chld = 1;
	else if (sig == SIGALRM)
		got_alrm = 1;
	else
		got_term = 1;
}

/* Milliseconds on the monotonic clock. */
static long long
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether a repeated line may be logged now (at most one per
 * LOG_EVERY_MS); *held is set to the lines held back since the last one.
 */
static int
ratelog_ok(struct ratelog *r, long long now, unsigned *held)
{
	if (now - r->last < LOG_EVERY_MS) {
		r->held++;
		return 0;
	}
	*held = r->held;
	r->held = 0;
	r->last = now;
	return 1;
}

/* Whether fd is a listening stream socket (inherited, spawn-fcgi style). */
static int
is_listening(int fd)
{
	int		 v = 0;
	socklen_t	 l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) == 0 && v;
}

/* The gid of cfg->listen_group into *gid ((gid_t)-1: none). 0 or -1. */
static int
listen_gid(const struct config *cfg, gid_t *gid)
{
	struct group	*g;

	*gid = (gid_t)-1;
	if (cfg->listen_group[0] == '\0')
		return 0;
	if ((g = getgrnam(cfg->listen_group)) == NULL) {
		log_error("listen_group %s: no such group", cfg->listen_group);
		return -1;
	}
	*gid = g->gr_gid;
	return 0;
}

/*
 * Makes sure no one listens on the socket file at sa: a file nobody
 * accepts on (ECONNREFUSED) is stale and removed; a live one (connect
 * succeeds, or its backlog is full) means another instance serves it.
 * 0 when the path is free, -1 (logged) to refuse to start.
 */
static int
claim_path(const struct sockaddr_un *sa)
{
	struct stat	 st;
	int		 fd, rc, err;

	if (lstat(sa->sun_path, &st) == -1 || !S_ISSOCK(st.st_mode))
		return 0;	/* absent; anything else fails in bind */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	err = errno;
	close(fd);
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS) {
		log_error("listen on %s: another instance is listening on "
		    "it; refusing to start", sa->sun_path);
		return -1;
	}
	if (err != ECONNREFUSED) {
		log_error("listen on %s: cannot tell whether another instance "
		    "listens on it: %s", sa->sun_path, strerror(err));
		return -1;
	}
	if (unlink(sa->sun_path) == -1 && errno != ENOENT) {
		log_error("unlink %s: %s", sa->sun_path, strerror(errno));
		return -1;
	}
	log_info("master: removed the stale socket %s", sa->sun_path);
	return 0;
}

/*
 * Binds fd to sa with the umask at ~listen_mode, so that the file is
 * never wider than listen_mode, then applies the group and the mode.
 * 0, or -1 (logged; a file bind created is removed).
 */
static int
bind_socket(const struct config *cfg, int fd, const struct sockaddr_un *sa,
    gid_t gid)
{
	mode_t	 old;
	int	 rc;

	old = umask((mode_t)(~cfg->listen_mode & 0777));
	rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	umask(old);
	if (rc == -1) {
		log_error("bind %s: %s", cfg->listen, strerror(errno));
		return -1;
	}
	if (gid != (gid_t)-1 && chown(cfg->listen, (uid_t)-1, gid) == -1) {
		log_error("chown %s: %s", cfg->listen, strerror(errno));
		goto fail;
	}
	if (chmod(cfg->listen, (mode_t)cfg->listen_mode) == -1) {
		log_error("chmod %s: %s", cfg->listen, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	(void)unlink(cfg->listen);
	return -1;
}

/*
 * Returns the listening socket: an inherited one (fd 0, or fd 3 under
 * systemd socket activation), else a new unix socket at cfg->listen
 * (*created is set). A stale socket file is replaced; a socket another
 * instance still listens on is an error. -1 on error (logged).
 */
int
master_listen(const struct config *cfg, int *created)
{
	struct sockaddr_un	 sa;
	const char		*lp = getenv("LISTEN_PID");
	gid_t			 gid;
	int			 fd;

	*created = 0;
	if (lp != NULL && atol(lp) == (long)getpid() && is_listening(3))
		return 3;
	if (is_listening(0))
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg->listen);
	if (listen_gid(cfg, &gid) == -1 || claim_path(&sa) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	if (bind_socket(cfg, fd, &sa, gid) == -1) {
		close(fd);
		return -1;
	}
	if (listen(fd, (int)cfg->listen_backlog) == -1) {
		log_error("listen on %s: %s", cfg->listen, strerror(errno));
		(void)unlink(cfg->listen);
		close(fd);
		return -1;
	}
	snprintf(owned_path, sizeof(owned_path), "%s", cfg->listen);
	*created = 1;
	return fd;
}

/* The next delay of slot c after a quick exit or a failed fork. */
static void
back_off(struct child *c, long long now)
{
	if (c->backoff == 0)
		c->backoff = BACKOFF_MIN_MS;
	else if ((c->backoff *= 2) > BACKOFF_MAX_MS)
		c->backoff = BACKOFF_MAX_MS;
	c->quick++;
	c->due = now + c->backoff;
}

/*
 * Forks one worker into the empty slot c (number i). A failed fork
 * leaves the slot empty, due again after its backoff, and is logged at
 * most once per LOG_EVERY_MS. 0 or -1.
 */
static int
spawn(const struct config *cfg, int fd, struct child *c, unsigned i)
{
	long long	 now = now_ms();
	unsigned	 held;
	pid_t		 pid;

	if ((pid = fork()) == -1) {
		back_off(c, now);
		if (ratelog_ok(&fork_log, now, &held))
			log_error("fork: %s; worker slot %u retried in %u ms "
			    "(%u fork failures not logged)", strerror(errno),
			    i, c->backoff, held);
		return -1;
	}
	if (pid == 0)
		_exit(worker_run(cfg, fd));
	c->pid = pid;
	c->started = now;
	return 0;
}

/* "killed by signal N" or "exited with status N" for status, into buf. */
static const char *
exit_text(int status, char *buf, size_t sz)
{
	if (WIFSIGNALED(status))
		snprintf(buf, sz, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, sz, "exited with status %d", WEXITSTATUS(status));
	return buf;
}

/*
 * Records the exit of slot c's worker pid (slot i): the slot is empty,
 * due at once after a healthy life, else after its backoff. Logs the
 * first quick exits, the start of a crash loop, then one line per
 * LOG_EVERY_MS.
 */
static void
slot_exited(struct child *c, unsigned i, pid_t pid, int status)
{
	long long	 now = now_ms();
	char		 why[64];
	unsigned	 held;

	c->pid = 0;
	if (now - c->started >= HEALTHY_MS) {
		c->backoff = 0;
		c->quick = 0;
		c->due = now;
	} else
		back_off(c, now);
	exit_text(status, why, sizeof(why));
	if (c->quick < CRASH_LOOP) {
		if (WIFSIGNALED(status))
			log_error("worker %ld %s; replacing it in %u ms",
			    (long)pid, why, c->backoff);
		else
			log_warn("worker %ld %s; replacing it in %u ms",
			    (long)pid, why, c->backoff);
		return;
	}
	if (c->quick == CRASH_LOOP) {	/* its start: always logged */
		crash_log.last = now;
		held = crash_log.held = 0;
	} else if (!ratelog_ok(&crash_log, now, &held))
		return;
	log_error("master: worker slot %u is crash-looping: %u quick exits "
	    "in a row, the last %s; next respawn in %u ms (backoff up to %d s; "
	    "%u such lines held back)", i, c->quick, why, c->backoff,
	    BACKOFF_MAX_MS / 1000, held);
}

/* Reaps every exited worker and marks its slot empty. */
static void
reap(struct child *kids, unsigned n)
{
	pid_t		 pid;
	int		 status;
	unsigned	 i;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < n && kids[i].pid != pid; i++)
			;
		if (i < n)
			slot_exited(&kids[i], i, pid, status);
	}
}

/*
 * Forks a worker into every empty slot that is due, then arms the tick
 * (one-shot ITIMER_REAL) for the earliest slot still empty, or disarms
 * it when every slot is full.
 */
static void
refill(const struct config *cfg, int fd, struct child *kids, unsigned n)
{
	struct itimerval it;
	long long	 now = now_ms(), next = -1, left;
	unsigned	 i;

	for (i = 0; i < n; i++) {
		if (kids[i].pid == 0 && kids[i].due <= now &&
		    spawn(cfg, fd, &kids[i], i) == 0)
			metrics_worker_restart();
		if (kids[i].pid == 0 && (next == -1 || kids[i].due < next))
			next = kids[i].due;
	}
	memset(&it, 0, sizeof(it));
	if (next != -1) {
		if ((left = next - now) < 1)
			left = 1;
		it.it_value.tv_sec = (time_t)(left / 1000);
		it.it_value.tv_usec = (suseconds_t)(left % 1000) * 1000;
	}
	(void)setitimer(ITIMER_REAL, &it, NULL);
}

/* Reaps every exited worker without blocking; returns how many live. */
static unsigned
reap_stopped(struct child *kids, unsigned n)
{
	unsigned	 i, live = 0;

	for (i = 0; i < n; i++) {
		if (kids[i].pid > 0 && waitpid(kids[i].pid, NULL, WNOHANG) ==
		    kids[i].pid)
			kids[i].pid = 0;
		if (kids[i].pid > 0)
			live++;
	}
	return live;
}

/*
 * Sends SIGTERM to every worker at once, then again at least once a
 * second until all have exited (a worker finishes its request in
 * flight first), and reaps them all. STOP_KILL_SECONDS after the first
 * SIGTERM the stragglers get SIGKILL. 0, or -1 when some were killed.
 */
static int
stop_all(struct child *kids, unsigned n)
{
	struct itimerval off;
	struct timespec	 tick;
	sigset_t	 chld;
	long long	 deadline, left;
	unsigned	 i;
	int		 sig = SIGTERM;

	deadline = now_ms() + STOP_KILL_SECONDS * 1000LL;
	memset(&off, 0, sizeof(off));
	(void)setitimer(ITIMER_REAL, &off, NULL);	/* no more refills */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (reap_stopped(kids, n) > 0) {
		if (sig == SIGTERM && deadline - now_ms() <= 0) {
			log_error("master: workers still running after %d s; "
			    "killing them", STOP_KILL_SECONDS);
			sig = SIGKILL;
		}
		for (i = 0; i < n; i++)
			if (kids[i].pid > 0)
				kill(kids[i].pid, sig);
		left = deadline - now_ms();
		if (sig == SIGKILL || left > 1000)
			left = 1000;
		else if (left < 1)
			left = 1;
		tick.tv_sec = (time_t)(left / 1000);
		tick.tv_nsec = (long)(left % 1000) * 1000000L;
		(void)sigtimedwait(&chld, NULL, &tick);
	}
	return sig == SIGKILL ? -1 : 0;
}

/* Installs the handlers with every handled signal blocked in *old. */
static void
master_signals(sigset_t *old)
{
	struct sigaction sa;
	sigset_t	 block;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, old);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/*
 * Runs the master until SIGTERM/SIGINT; returns the exit status: 0
 * after a clean stop, 1 when it could not start its workers or had to
 * SIGKILL some at the stop deadline.
 */
int
master_run(const struct config *cfg, int fd)
{
	struct child	*kids;
	sigset_t	 old;
	unsigned	 i, n = config_workers(cfg);
	int		 rc = 0;

	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	if ((kids = calloc(n, sizeof(*kids))) == NULL) {
		log_error("master: out of memory");
		if (owned_path[0] != '\0')
			(void)unlink(owned_path);
		return 1;
	}
	master_signals(&old);
	metrics_workers(n);
	for (i = 0; i < n && rc == 0; i++)
		rc = spawn(cfg, fd, &kids[i], i);
	if (rc == 0)
		log_info("master: %u workers serving %s", n, cfg->listen);
	while (rc == 0 && !got_term) {
		sigsuspend(&old);
		if (got_term)
			break;
		got_chld = got_alrm = 0;
		reap(kids, n);
		refill(cfg, fd, kids, n);
	}
	if (owned_path[0] != '\0')
		(void)unlink(owned_path);	/* refuse new connections */
	log_info("master: stopping %u workers", n);
	if (stop_all(kids, n) == -1)
		rc = -1;
	free(kids);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc == 0 ? 0 : 1;
}
