/*
 * master.c - the listening socket, N forked workers, respawn, shutdown.
 *
 * Signals are blocked except inside sigsuspend, so the flags set by the
 * handlers are only read at one place. SIGTERM/SIGINT are forwarded to
 * every worker and every child is reaped before the master exits 0.
 */
#include <sys/socket.h>
#include <sys/stat.h>
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
#define STOP_KILL_SECONDS	60	/* then SIGKILL */

static volatile sig_atomic_t got_term, got_chld;

struct child {
	pid_t	 pid;
	time_t	 started;
};

static void
on_signal(int sig)
{
	if (sig == SIGCHLD)
		got_chld = 1;
	else
		got_term = 1;
}

/* Whether fd is a listening stream socket (inherited, spawn-fcgi style). */
static int
is_listening(int fd)
{
	int		 v = 0;
	socklen_t	 l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) == 0 && v;
}

/* Applies the configured group and mode to the socket file. 0 or -1. */
static int
socket_perms(const struct config *cfg)
{
	struct group	*g;

	if (cfg->listen_group[0] != '\0') {
		if ((g = getgrnam(cfg->listen_group)) == NULL) {
			log_error("listen_group %s: no such group",
			    cfg->listen_group);
			return -1;
		}
		if (chown(cfg->listen, (uid_t)-1, g->gr_gid) == -1) {
			log_error("chown %s: %s", cfg->listen, strerror(errno));
			return -1;
		}
	}
	if (chmod(cfg->listen, (mode_t)cfg->listen_mode) == -1) {
		log_error("chmod %s: %s", cfg->listen, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Returns the listening socket: an inherited one (fd 0, or fd 3 under
 * systemd socket activation), else a new unix socket at cfg->listen
 * (a stale socket file is replaced; *created is set). -1 on error.
 */
int
master_listen(const struct config *cfg, int *created)
{
	struct sockaddr_un	 sa;
	struct stat		 st;
	const char		*lp = getenv("LISTEN_PID");
	int			 fd;

	*created = 0;
	if (lp != NULL && atol(lp) == (long)getpid() && is_listening(3))
		return 3;
	if (is_listening(0))
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg->listen);
	if (lstat(cfg->listen, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(cfg->listen);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    socket_perms(cfg) == -1 ||
	    listen(fd, (int)cfg->listen_backlog) == -1) {
		log_error("listen on %s: %s", cfg->listen, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	*created = 1;
	return fd;
}

/* Forks one worker into slot c; -1 when fork failed. */
static int
spawn(const struct config *cfg, int fd, struct child *c)
{
	pid_t	 pid;

	if ((pid = fork()) == -1) {
		log_error("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		_exit(worker_run(cfg, fd));
	c->pid = pid;
	c->started = time(NULL);
	return 0;
}

/* Reaps exited children and, unless stopping, replaces them. */
static void
reap(const struct config *cfg, int fd, struct child *kids, unsigned n)
{
	pid_t		 pid;
	int		 status;
	unsigned	 i;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < n && kids[i].pid != pid; i++)
			;
		if (i == n)
			continue;
		kids[i].pid = 0;
		if (got_term)
			continue;
		if (WIFSIGNALED(status))
			log_error("worker %ld killed by signal %d; replacing it",
			    (long)pid, WTERMSIG(status));
		else
			log_warn("worker %ld exited with status %d; replacing it",
			    (long)pid, WEXITSTATUS(status));
		if (time(NULL) - kids[i].started < 1)
			sleep(1);	/* no fork storm from a crash loop */
		(void)spawn(cfg, fd, &kids[i]);
	}
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
 * Sends SIGTERM to every worker, once a second until all have exited
 * (a worker finishes its request in flight first), and reaps them all.
 * After STOP_KILL_SECONDS the stragglers get SIGKILL.
 */
static void
stop_all(struct child *kids, unsigned n)
{
	struct timespec	 tick = { 1, 0 };
	sigset_t	 chld;
	unsigned	 i, waited = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (reap_stopped(kids, n) > 0) {
		for (i = 0; i < n; i++)
			if (kids[i].pid > 0)
				kill(kids[i].pid, waited < STOP_KILL_SECONDS ?
				    SIGTERM : SIGKILL);
		if (waited++ == STOP_KILL_SECONDS)
			log_error("master: workers still running after %d s; "
			    "killing them", STOP_KILL_SECONDS);
		(void)sigtimedwait(&chld, NULL, &tick);
	}
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
	sigprocmask(SIG_BLOCK, &block, old);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Runs the master until SIGTERM/SIGINT; returns the exit status. */
int
master_run(const struct config *cfg, int fd)
{
	struct child	*kids;
	sigset_t	 old;
	unsigned	 i, n = config_workers(cfg);

	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	if (metrics_init() == -1 || (kids = calloc(n, sizeof(*kids))) == NULL) {
		log_error("master: out of memory");
		return 1;
	}
	master_signals(&old);
	for (i = 0; i < n; i++)
		if (spawn(cfg, fd, &kids[i]) == -1) {
			stop_all(kids, n);
			free(kids);
			return 1;
		}
	log_info("master: %u workers serving %s", n, cfg->listen);
	while (!got_term) {
		sigsuspend(&old);
		if (got_chld) {
			got_chld = 0;
			reap(cfg, fd, kids, n);
		}
	}
	log_info("master: stopping %u workers", n);
	stop_all(kids, n);
	free(kids);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}
