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
 *   5. --check-config on a good and on a bad file
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fcgi_client.h"

#define WORKERS		2
#define WORKERS_STR	"2"	/* the `workers` value written to the configs */
#define TICK_MS		20
#define START_MS	15000	/* socket up, workers forked */
#define RESPAWN_MS	10000	/* the master waits >= 1 s per slot */
#define STOP_MS		10000	/* SIGTERM to exit */
#define REQ_MS		10000	/* one FastCGI request */
#define MAX_PIDS	64

static const char	*fcgi_bin, *admin_bin, *base_cfg;
static char		 tmpdir[256];

/* ---- processes we started: SIGKILLed and reaped on every exit path ---- */

static pid_t	 started[16];
static size_t	 nstarted;

static void
forget(pid_t pid)
{
	size_t	 i;

	for (i = 0; i < nstarted; i++)
		if (started[i] == pid)
			started[i] = started[--nstarted];
}

/* SIGKILLs the process group of master pid (it leads it) and reaps pid. */
static void
kill_master(pid_t pid)
{
	if (pid <= 0)
		return;
	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	forget(pid);
}

static void
kill_all(void)
{
	while (nstarted > 0)
		kill_master(started[nstarted - 1]);
}

static void
on_fatal_signal(int sig)
{
	kill_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- small helpers ---- */

static long long
now_ms(void)
{
	return fcgi_now_ms();
}

static void
sleep_ms(int ms)
{
	struct timespec	 ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Polls cond(arg) every TICK_MS until it holds (1) or ms pass (0). */
static int
wait_for(int (*cond)(void *), void *arg, int ms)
{
	long long	 deadline = now_ms() + ms;

	for (;;) {
		if (cond(arg))
			return 1;
		if (now_ms() >= deadline)
			return 0;
		sleep_ms(TICK_MS);
	}
}

static char *
path_in_tmp(const char *name)
{
	static char	 bufs[8][512];
	static int	 next;
	char		*b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

/* The whole file, NUL-terminated (free it), or NULL. */
static char *
read_file(const char *path)
{
	FILE	*f;
	char	*s = NULL;
	size_t	 n = 0, cap = 0, r;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	do {
		if (cap - n < 4096) {
			char	*t = realloc(s, cap += 8192);

			if (t == NULL) {
				free(s);
				fclose(f);
				return NULL;
			}
			s = t;
		}
		r = fread(s + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	fclose(f);
	s[n] = '\0';
	return s;
}

static int
write_file(const char *path, const char *text)
{
	FILE	*f;
	int	 rc;

	if ((f = fopen(path, "w")) == NULL)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int
exists(const char *path)
{
	struct stat	 st;

	return lstat(path, &st) == 0;
}

static int
is_socket_file(const char *path)
{
	struct stat	 st;

	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Prints the log file of a master, for a failing scenario. */
static void
dump_log(const char *path)
{
	char	*s = read_file(path);

	fprintf(stderr, "---- %s ----\n%s---- end ----\n", path,
	    s ? s : "(unreadable)\n");
	free(s);
}

/* ---- configuration files ---- */

/* The key of a "key = value" line (trimmed) into key; 0 if none. */
static int
line_key(const char *line, size_t len, char *key, size_t keysz)
{
	size_t	 i = 0, k = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len || line[i] == '#')
		return 0;
	while (i < len && line[i] != '=' && line[i] != ' ' &&
	    line[i] != '\t' && k + 1 < keysz)
		key[k++] = line[i++];
	key[k] = '\0';
	return k > 0;
}

/* The value of key in config text (static buffer), or NULL. */
static const char *
config_value(const char *text, const char *want)
{
	static char	 val[512];
	char		 key[64];
	const char	*p, *nl, *eq;
	size_t		 len;

	for (p = text; *p != '\0'; p = nl ? nl + 1 : p + strlen(p)) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (!line_key(p, len, key, sizeof(key)) ||
		    strcmp(key, want) != 0 ||
		    (eq = memchr(p, '=', len)) == NULL)
			continue;
		for (eq++; *eq == ' ' || *eq == '\t'; eq++)
			;
		len = (size_t)(p + len - eq);
		while (len > 0 && (eq[len - 1] == ' ' || eq[len - 1] == '\t' ||
		    eq[len - 1] == '\r'))
			len--;
		if (len >= sizeof(val))
			len = sizeof(val) - 1;
		memcpy(val, eq, len);
		val[len] = '\0';
		return val;
	}
	return NULL;
}

/*
 * Writes dst: the base configuration without its `listen` and `workers`
 * lines, then "listen = LISTEN" and "workers = WORKERS_VALUE". Sets
 * *workers_line to the line number of the latter. 0 or -1.
 */
static int
derive_config(const char *dst, const char *listen, const char *workers_value,
    unsigned *workers_line)
{
	char		*base, *out, key[64];
	const char	*p, *nl;
	size_t		 len, n = 0;
	unsigned	 lines = 0;
	int		 rc;

	if ((base = read_file(base_cfg)) == NULL)
		return -1;
	if ((out = malloc(strlen(base) + strlen(listen) + 256)) == NULL) {
		free(base);
		return -1;
	}
	for (p = base; *p != '\0'; p = nl ? nl + 1 : p + len) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (line_key(p, len, key, sizeof(key)) &&
		    (strcmp(key, "listen") == 0 || strcmp(key, "workers") == 0))
			continue;
		memcpy(out + n, p, len);
		n += len;
		out[n++] = '\n';
		lines++;
	}
	n += (size_t)sprintf(out + n, "listen = %s\nworkers = %s\n", listen,
	    workers_value);
	if (workers_line != NULL)
		*workers_line = lines + 2;
	rc = write_file(dst, out);
	free(base);
	free(out);
	return rc;
}

/* ---- /proc ---- */

struct pstat {
	char	 state;
	pid_t	 ppid, pgrp;
};

static int
proc_stat(pid_t pid, struct pstat *ps)
{
	char	 path[64], buf[1024], *p;
	ssize_t	 n;
	int	 fd, ppid, pgrp;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ppid pgrp ..."; comm may hold anything, even ")" */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d %d", &ps->state, &ppid, &pgrp) != 3)
		return -1;
	ps->ppid = (pid_t)ppid;
	ps->pgrp = (pid_t)pgrp;
	return 0;
}

/* Whether pid exists and is not a zombie. */
static int
alive(pid_t pid)
{
	struct pstat	 ps;

	return proc_stat(pid, &ps) == 0 && ps.state != 'Z' && ps.state != 'X';
}

/*
 * Live (non-zombie) processes whose parent (by_group 0) or process
 * group (by_group 1) is id, except id itself, into pids (sorted by
 * /proc order). Returns the count.
 */
static size_t
scan(pid_t id, int by_group, pid_t *pids, size_t max)
{
	DIR		*d;
	struct dirent	*e;
	struct pstat	 ps;
	char		*end;
	long		 pid;
	size_t		 n = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || (pid_t)pid == id ||
		    proc_stat((pid_t)pid, &ps) == -1 ||
		    ps.state == 'Z' || ps.state == 'X')
			continue;
		if ((by_group ? ps.pgrp : ps.ppid) != id)
			continue;
		if (n < max)
			pids[n] = (pid_t)pid;
		n++;
	}
	closedir(d);
	return n;
}

static size_t
workers_of(pid_t master, pid_t *pids, size_t max)
{
	return scan(master, 0, pids, max);
}

static int
has_pid(const pid_t *pids, size_t n, pid_t pid)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/*
 * The number of the system call pid is blocked in (first field of
 * /proc/PID/syscall), or -1 when it runs, is not in one, or is gone.
 */
static long
blocked_in(pid_t pid)
{
	char	 path[64], buf[256], *end;
	ssize_t	 n;
	long	 nr;
	int	 fd;

	snprintf(path, sizeof(path), "/proc/%ld/syscall", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	nr = strtol(buf, &end, 10);
	if (end == buf || nr < 0)
		return -1;
	return nr;
}

static int
in_accept(long nr)
{
#ifdef SYS_accept
	if (nr == SYS_accept)
		return 1;
#endif
	return nr == SYS_accept4;
}

/* The mask of signals of a "SigPnd:"/"ShdPnd:"/"SigBlk:" line of pid. */
static unsigned long long
signal_mask(pid_t pid, const char *field)
{
	char			 path[64], *s, *p;
	unsigned long long	 m = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((s = read_file(path)) == NULL)
		return 0;
	if ((p = strstr(s, field)) != NULL)
		m = strtoull(p + strlen(field), NULL, 16);
	free(s);
	return m;
}

/* ---- starting and stopping ---- */

/*
 * Starts FCGI_BIN --config cfg in a new process group, stdin from
 * stdin_fd (or /dev/null when -1), stdout and stderr appended to log.
 */
static pid_t
start_master(const char *cfg, const char *log, int stdin_fd)
{
	pid_t	 pid;
	int	 fd;

	fflush(NULL);
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		(void)setpgid(0, 0);
		if (stdin_fd == -1)
			stdin_fd = open("/dev/null", O_RDONLY);
		if (stdin_fd == -1 || dup2(stdin_fd, 0) == -1)
			_exit(126);
		if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)) == -1 ||
		    dup2(fd, 1) == -1 || dup2(fd, 2) == -1)
			_exit(126);
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		execl(fcgi_bin, fcgi_bin, "--config", cfg, (char *)NULL);
		_exit(127);
	}
	(void)setpgid(pid, pid);	/* either side may win the race */
	started[nstarted++] = pid;
	return pid;
}

struct exit_wait {
	pid_t	 pid;
};

/* Whether pid has exited (not reaped: WNOWAIT keeps its pid and group). */
static int
has_exited(void *arg)
{
	struct exit_wait	*w = arg;
	siginfo_t		 si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT)
	    == 0 && si.si_pid == w->pid;
}

/*
 * Waits up to ms for master pid to exit; then checks that no process of
 * its group is left and reaps it. Returns its wait status, or -1 when it
 * did not exit (it is then SIGKILLed).
 */
static int
wait_master_exit(pid_t pid, int ms)
{
	struct exit_wait	 w = { pid };
	pid_t			 left[MAX_PIDS];
	size_t			 nleft;
	int			 status;

	if (!wait_for(has_exited, &w, ms)) {
		kill_master(pid);
		return -1;
	}
	/* The group still holds pid (unreaped), so this names our processes. */
	nleft = scan(pid, 1, left, MAX_PIDS);
	CHECK_EQ_INT(nleft, 0);		/* no worker outlives the master */
	if (nleft > 0)
		(void)kill(-pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	forget(pid);
	return status;
}

/* GET /healthz on socket path; the status, or -1 without a response. */
static int
healthz(const char *sock)
{
	struct fcgi_resp	 r;
	int			 status;

	if (fcgi_request(sock, "GET", "/healthz", NULL, NULL, 0, REQ_MS, &r)
	    == -1) {
		fcgi_resp_free(&r);
		return -1;
	}
	status = r.status;
	fcgi_resp_free(&r);
	return status;
}

struct up_wait {
	pid_t		 pid;
	const char	*sock;
	int		 status;
};

/* Whether GET /healthz answers on sock; stops early if the master died. */
static int
answers(void *arg)
{
	struct up_wait	*u = arg;
	struct exit_wait w = { u->pid };

	if (has_exited(&w))
		return 1;
	if (!is_socket_file(u->sock))
		return 0;
	return (u->status = healthz(u->sock)) != -1;
}

struct n_workers {
	pid_t	 master;
	size_t	 want;
};

static int
has_n_workers(void *arg)
{
	struct n_workers	*n = arg;
	pid_t			 pids[MAX_PIDS];

	return workers_of(n->master, pids, MAX_PIDS) == n->want;
}

/*
 * Runs argv with stdout and stderr captured (NUL-terminated, truncated
 * to size), killing it after ms. Returns its wait status, or -1.
 */
static int
run(char *const argv[], char *out, char *err, size_t size, int ms)
{
	int		 po[2], pe[2], status = -1;
	size_t		 no = 0, ne = 0;
	long long	 deadline = now_ms() + ms;
	struct pollfd	 p[2];
	pid_t		 pid;
	ssize_t		 r;
	char		 junk[512];

	out[0] = err[0] = '\0';
	if (pipe2(po, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(pe, O_CLOEXEC) == -1) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		int	 null = open("/dev/null", O_RDONLY);

		if (null == -1 || dup2(null, 0) == -1 || dup2(po[1], 1) == -1 ||
		    dup2(pe[1], 2) == -1)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	if (pid == -1) {
		close(po[0]);
		close(pe[0]);
		return -1;
	}
	p[0].fd = po[0];
	p[1].fd = pe[0];
	while ((p[0].fd != -1 || p[1].fd != -1) && now_ms() < deadline) {
		int	 i;

		p[0].events = p[1].events = POLLIN;
		if (poll(p, 2, (int)(deadline - now_ms())) <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			char	*b = i == 0 ? out : err;
			size_t	*n = i == 0 ? &no : &ne;

			if (p[i].fd == -1 || p[i].revents == 0)
				continue;
			if (*n + 1 < size)
				r = read(p[i].fd, b + *n, size - 1 - *n);
			else
				r = read(p[i].fd, junk, sizeof(junk));
			if (r <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
			} else if (*n + 1 < size) {
				*n += (size_t)r;
				b[*n] = '\0';
			}
		}
	}
	if (p[0].fd != -1 || p[1].fd != -1) {
		fprintf(stderr, "%s did not finish within %d ms\n", argv[0], ms);
		(void)kill(pid, SIGKILL);
	}
	if (p[0].fd != -1)
		close(p[0].fd);
	if (p[1].fd != -1)
		close(p[1].fd);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* asyncexec-admin --config BASE args...; its first stdout line, or NULL. */
static const char *
admin(const char *a1, const char *a2, const char *a3, const char *a4)
{
	static char	 out[4096];
	char		 err[4096];
	char		*argv[] = { (char *)admin_bin, "--config", (char *)base_cfg,
			    (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL };
	int		 st;

	st = run(argv, out, err, sizeof(out), 30000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "asyncexec-admin %s %s %s %s failed: %s\n",
		    a1, a2, a3 ? a3 : "", a4 ? a4 : "", err);
		return NULL;
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

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
	char			 tenant[64], route[64], uri[160], cid[64];
	char			 auth[160], pattern[160];
	const char		*key, *ct, *kv[16];
	pid_t			 pids[MAX_PIDS];
	size_t			 n, i;
	long long		 deadline;
	int			 fd, status;

	CHECK_EQ_INT(strlen(body), 20);
	snprintf(tenant, sizeof(tenant), "proc-%ld", (long)getpid());
	snprintf(route, sizeof(route), "proc/m%ld/stop", (long)getpid());
	snprintf(uri, sizeof(uri), "/v1/executions/%s", route);
	snprintf(cid, sizeof(cid), "inflight-%ld", (long)getpid());
	if (admin("route", "add", route, NULL) == NULL ||
	    (key = admin("key", "create", "--tenant", tenant)) == NULL ||
	    strncmp(key, "ak_", 3) != 0) {
		CHECK(!"asyncexec-admin provided a route and a consumer key");
		return;
	}
	snprintf(auth, sizeof(auth), "Bearer %s", key);

	n = workers_of(s->master, pids, MAX_PIDS);
	CHECK_EQ_INT(n, WORKERS);
	if (n != WORKERS)
		return;
	memset(&b, 0, sizeof(b));
	for (i = 0; i < WORKERS; i++)
		b.workers[i] = pids[i];
	/* Precondition: both workers idle in accept, none in read. */
	CHECK(wait_for(all_idle, &b, START_MS));

	if ((fd = fcgi_connect(s->sock)) == -1) {
		CHECK(!"connect to the master's socket");
		return;
	}
	deadline = now_ms() + REQ_MS;
	n = 0;
	kv[2 * n] = "REQUEST_METHOD", kv[2 * n + 1] = "POST", n++;
	kv[2 * n] = "REQUEST_URI", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SCRIPT_NAME", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "CONTENT_LENGTH", kv[2 * n + 1] = "20", n++;
	kv[2 * n] = "CONTENT_TYPE", kv[2 * n + 1] = "application/json", n++;
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	kv[2 * n] = "HTTP_X_CORRELATION_ID", kv[2 * n + 1] = cid, n++;
	CHECK_EQ_INT(fcgi_begin(fd, deadline), 0);
	CHECK_EQ_INT(fcgi_params(fd, kv, n, deadline), 0);
	CHECK_EQ_INT(fcgi_stdin(fd, body, 10, deadline), 0);

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
	sleep_ms(1500);
	CHECK(!has_exited(&w));
	CHECK(alive(b.busy));
	CHECK_EQ_INT(blocked_in(b.busy), SYS_read);
	CHECK_EQ_INT(poll(&p, 1, 0), 0);

	deadline = now_ms() + REQ_MS;
	CHECK_EQ_INT(fcgi_stdin(fd, body + 10, 10, deadline), 0);
	CHECK_EQ_INT(fcgi_stdin(fd, NULL, 0, deadline), 0);
	CHECK_EQ_INT(fcgi_read(fd, &r, deadline), 0);
	close(fd);
	CHECK(r.ended);
	CHECK_EQ_INT(r.proto_status, 0);	/* FCGI_REQUEST_COMPLETE */
	CHECK(r.out != NULL && strncmp(r.out, "Status: ", 8) == 0);
	CHECK_EQ_INT(r.status, 202);
	ct = fcgi_header(&r, "Content-Type");
	CHECK(ct != NULL && strncmp(ct, "application/json", 16) == 0);
	CHECK(r.body != NULL && r.body_len > 0 && r.body[0] == '{' &&
	    r.body[r.body_len - 1] == '}');
	snprintf(pattern, sizeof(pattern), "\"correlationId\":\"%s\"", cid);
	CHECK(r.body != NULL && strstr(r.body, pattern) != NULL);
	CHECK(r.body != NULL && strstr(r.body, "\"pollToken\":\"") != NULL);
	CHECK(r.body != NULL &&
	    strstr(r.body, "\"status\":\"waiting_callback\"") != NULL);
	if (r.status != 202)
		fprintf(stderr, "in-flight response: %s\n",
		    r.out ? r.out : "(none)");
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

/* 5. --check-config: "config ok: FILE" and 0; "FILE:N: workers:" and 2. */
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
	snprintf(want, sizeof(want), "config ok: %s\n", good);
	CHECK_EQ_STR(out, want);
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

/* Removes the files of tmpdir and tmpdir itself. */
static void
remove_tmpdir(void)
{
	DIR		*d;
	struct dirent	*e;

	if (tmpdir[0] == '\0' || (d = opendir(tmpdir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			(void)unlink(path_in_tmp(e->d_name));
	closedir(d);
	(void)rmdir(tmpdir);
}

int
main(void)
{
	struct stack	 s;
	const char	*t;
	int		 sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGQUIT };
	size_t		 i;

	fcgi_bin = getenv("ASYNCEXEC_FCGI");
	admin_bin = getenv("ASYNCEXEC_ADMIN");
	base_cfg = getenv("ASYNCEXEC_TEST_CONFIG");
	if (fcgi_bin == NULL || *fcgi_bin == '\0' || admin_bin == NULL ||
	    *admin_bin == '\0' || base_cfg == NULL || *base_cfg == '\0') {
		fprintf(stderr, "FATAL: ASYNCEXEC_FCGI, ASYNCEXEC_ADMIN and "
		    "ASYNCEXEC_TEST_CONFIG must be set (run through "
		    "scripts/test.sh)\n");
		return 1;
	}
	t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/asyncexec-proc.XXXXXX",
	    t != NULL && *t != '\0' && strlen(t) < 40 ? t : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	atexit(kill_all);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_fatal_signal);

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

	kill_all();
	remove_tmpdir();
	return check_done("proc_master");
}
