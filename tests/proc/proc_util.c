/*
 * proc_util.c - shared helpers of the process-level tests (see
 * proc_util.h); what /proc says of a process is in proc_scan.c. Every wait is a poll of a condition every TICK_MS up to
 * a deadline; every master started here is SIGKILLed and reaped on every
 * exit path of the test program.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fcgi_client.h"
#include "proc_util.h"

const char	*fcgi_bin, *admin_bin, *base_cfg;
char		 tmpdir[256];
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
void
kill_master(pid_t pid)
{
	if (pid <= 0)
		return;
	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	forget(pid);
}

void
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

/* Polls cond(arg) every TICK_MS until it holds (1) or ms pass (0). */
int
wait_for(int (*cond)(void *), void *arg, int ms)
{
	long long	 deadline = ut_now_ms() + ms;

	for (;;) {
		if (cond(arg))
			return 1;
		if (ut_now_ms() >= deadline)
			return 0;
		ut_pause_ms(TICK_MS);
	}
}

char *
path_in_tmp(const char *name)
{
	static char	 bufs[8][512];
	static int	 next;
	char		*b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

/* The whole file, NUL-terminated (free it), or NULL. */
char *
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

int
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

/* How many times the file at path holds needle (0 when unreadable). */
int
log_count(const char *path, const char *needle)
{
	char		*s = read_file(path);
	const char	*p;
	int		 n = 0;

	for (p = s; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(s);
	return n;
}

int
exists(const char *path)
{
	struct stat	 st;

	return lstat(path, &st) == 0;
}

int
is_socket_file(const char *path)
{
	struct stat	 st;

	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Prints the log file of a master, for a failing scenario. */
void
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
const char *
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
 * Writes dst: the base configuration without its `listen`, `listen_group`
 * (the stack's socket is for nginx's workers; a derived one is the test's
 * own, and its master may run as a user outside that group) and `workers`
 * lines (nor those of the keys of extra), then "listen = LISTEN",
 * "workers = WORKERS_VALUE" and extra. Sets
 * *workers_line to the line number of the latter. 0 or -1.
 */
int
derive_config_x(const char *dst, const char *listen, const char *workers_value,
    const char *extra, unsigned *workers_line)
{
	char		*base, *out, key[64];
	const char	*p, *nl;
	size_t		 len, n = 0;
	unsigned	 lines = 0;
	int		 rc;

	if (extra == NULL)
		extra = "";
	if ((base = read_file(base_cfg)) == NULL)
		return -1;
	if ((out = malloc(strlen(base) + strlen(listen) + strlen(extra) +
	    256)) == NULL) {
		free(base);
		return -1;
	}
	for (p = base; *p != '\0'; p = nl ? nl + 1 : p + len) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (line_key(p, len, key, sizeof(key)) &&
		    (strcmp(key, "listen") == 0 || strcmp(key, "listen_group") == 0 ||
		    strcmp(key, "workers") == 0 ||
		    config_value(extra, key) != NULL))
			continue;
		memcpy(out + n, p, len);
		n += len;
		out[n++] = '\n';
		lines++;
	}
	n += (size_t)sprintf(out + n, "listen = %s\nworkers = %s\n%s", listen,
	    workers_value, extra);
	if (workers_line != NULL)
		*workers_line = lines + 2;
	rc = write_file(dst, out);
	free(base);
	free(out);
	return rc;
}

int
derive_config(const char *dst, const char *listen, const char *workers_value,
    unsigned *workers_line)
{
	return derive_config_x(dst, listen, workers_value, NULL, workers_line);
}

/* ---- starting and stopping ---- */

/*
 * Starts FCGI_BIN --config cfg in a new process group, stdin from
 * stdin_fd (or /dev/null when -1), listen_fd (unless -1) as fd 3 with
 * LISTEN_PID and LISTEN_FDS=1 (systemd's socket activation), stdout
 * and stderr appended to log, as *as (NULL: as this process) with its
 * RLIMIT_NPROC. The pid, or -1.
 */
static pid_t
start_master_fds(const char *cfg, const char *log, int stdin_fd,
    int listen_fd, const struct run_as *as)
{
	struct rlimit	 rl;
	char		 pidv[24];
	pid_t		 pid;
	int		 fd;

	fflush(NULL);
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		(void)setpgid(0, 0);
		if (stdin_fd == -1)
			stdin_fd = open("/dev/null", O_RDONLY);
		if (stdin_fd == -1 || dup2(stdin_fd, 0) == -1)
			_exit(126);
		if (listen_fd != -1 && dup2(listen_fd, 3) == -1)
			_exit(126);
		if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)) == -1 ||
		    dup2(fd, 1) == -1 || dup2(fd, 2) == -1)
			_exit(126);
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		snprintf(pidv, sizeof(pidv), "%ld", (long)getpid());
		if (listen_fd != -1 && (setenv("LISTEN_PID", pidv, 1) == -1 ||
		    setenv("LISTEN_FDS", "1", 1) == -1))
			_exit(126);
		if (as != NULL && as->nproc > 0) {
			rl.rlim_cur = rl.rlim_max = as->nproc;
			if (setrlimit(RLIMIT_NPROC, &rl) == -1)
				_exit(126);
		}
		if (as != NULL && as->gid >= 0 && (setgroups(0, NULL) == -1 ||
		    setgid((gid_t)as->gid) == -1))
			_exit(126);
		if (as != NULL && as->uid >= 0 && setuid((uid_t)as->uid) == -1)
			_exit(126);
		execl(fcgi_bin, fcgi_bin, "--config", cfg, (char *)NULL);
		_exit(127);
	}
	(void)setpgid(pid, pid);	/* either side may win the race */
	started[nstarted++] = pid;
	return pid;
}

pid_t
start_master_as(const char *cfg, const char *log, int stdin_fd,
    const struct run_as *as)
{
	return start_master_fds(cfg, log, stdin_fd, -1, as);
}

pid_t
start_master_systemd(const char *cfg, const char *log, int listen_fd)
{
	return start_master_fds(cfg, log, -1, listen_fd, NULL);
}

pid_t
start_master(const char *cfg, const char *log, int stdin_fd)
{
	return start_master_as(cfg, log, stdin_fd, NULL);
}

/* Whether pid has exited (not reaped: WNOWAIT keeps its pid and group). */
int
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
 * did not exit (it is then SIGKILLed) or left a process of its group.
 */
int
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
	if (nleft > 0) {	/* no worker may outlive the master */
		fprintf(stderr, "master %ld left %zu processes behind\n",
		    (long)pid, nleft);
		(void)kill(-pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) != pid || nleft > 0)
		status = -1;
	forget(pid);
	return status;
}

/* GET /healthz on socket path; the status, or -1 without a response. */
int
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


/* Whether GET /healthz answers on sock; stops early if the master died. */
int
answers(void *arg)
{
	struct up_wait	*u = arg;
	struct exit_wait w = { u->pid };

	if (has_exited(&w))
		return 1;
	if (u->sock[0] == '/' && !is_socket_file(u->sock))
		return 0;	/* a TCP address has no file */
	return (u->status = healthz(u->sock)) != -1;
}


int
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
int
run(char *const argv[], char *out, char *err, size_t size, int ms)
{
	int		 po[2], pe[2], status = -1;
	size_t		 no = 0, ne = 0;
	long long	 deadline = ut_now_ms() + ms;
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
	while ((p[0].fd != -1 || p[1].fd != -1) && ut_now_ms() < deadline) {
		int	 i;

		p[0].events = p[1].events = POLLIN;
		if (poll(p, 2, (int)(deadline - ut_now_ms())) <= 0)
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

/*
 * Whether master *arg has exec'd, blocked SIGHUP (main's first step: not
 * the loader's opens) and waits in an open(2) (its leased file).
 */
int
in_open(void *arg)
{
	pid_t	 pid = *(pid_t *)arg;
	char	 path[64], *comm;
	int	 ok;

	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	comm = read_file(path);
	ok = comm != NULL && strncmp(comm, "asyncexec-fcgi", 14) == 0 &&
	    (signal_mask(pid, "SigBlk:") & (1ULL << (SIGHUP - 1))) != 0 &&
	    blocked_in(pid) == SYS_openat;
	free(comm);
	return ok;
}

/*
 * A write lease on path (which nobody has open): whoever opens it then
 * waits in open(2) until lease_end (or the kernel's lease-break-time,
 * 45 s by default), as on a slow network filesystem. The fd, or -1.
 * The lease's break is told with SIGIO, ignored here.
 */
int
lease(const char *path)
{
	int	 fd = open(path, O_RDONLY | O_CLOEXEC);

	(void)signal(SIGIO, SIG_IGN);
	if (fd != -1 && fcntl(fd, F_SETLEASE, F_WRLCK) == -1) {
		perror("F_SETLEASE");
		close(fd);
		return -1;
	}
	return fd;
}

/* Ends lease's fd (-1: none): the open waiting on it goes on. */
void
lease_end(int fd)
{
	if (fd == -1)
		return;
	(void)fcntl(fd, F_SETLEASE, F_UNLCK);
	close(fd);
}

/* asyncexec-admin --config BASE args...; its first stdout line, or NULL. */
const char *
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

/* Removes dir, its files and (depth > 0) its subdirectories. */
static void
remove_dir(const char *dir, int depth)
{
	DIR		*d;
	struct dirent	*e;
	char		 p[768];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p) == -1 && depth > 0)
			remove_dir(p, depth - 1);
	}
	closedir(d);
	(void)rmdir(dir);
}

/* Removes tmpdir, its files and those of its subdirectories. */
void
remove_tmpdir(void)
{
	if (tmpdir[0] != '\0')
		remove_dir(tmpdir, 1);
}

int
proc_init(const char *name)
{
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
		return -1;
	}
	t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/ae-%s.XXXXXX",
	    t != NULL && *t != '\0' && strlen(t) < 40 ? t : "/tmp", name);
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return -1;
	}
	atexit(kill_all);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_fatal_signal);
	return 0;
}

int
proc_route_key(const char **uri, const char **auth)
{
	static char	 u[160], a[160];
	char		 tenant[64], route[64];
	const char	*key;

	if (a[0] == '\0') {
		snprintf(tenant, sizeof(tenant), "proc-%ld", (long)getpid());
		snprintf(route, sizeof(route), "proc/k%ld/sub", (long)getpid());
		if (admin("route", "add", route, NULL) == NULL ||
		    (key = admin("key", "create", "--tenant", tenant)) == NULL ||
		    strncmp(key, "ak_", 3) != 0)
			return -1;
		snprintf(a, sizeof(a), "Bearer %s", key);
		snprintf(u, sizeof(u), "/v1/executions/%s", route);
	}
	*uri = u;
	*auth = a;
	return 0;
}

int
submit_start(const char *sock, const char *cid, const char *body, size_t sent,
    long long deadline)
{
	const char	*uri, *auth, *kv[2 * (FCGI_BASE_PARAMS + 2)];
	char		 clen[32];
	size_t		 n, len = strlen(body);
	int		 fd;

	if (proc_route_key(&uri, &auth) == -1 ||
	    (fd = fcgi_connect(sock)) == -1)
		return -1;
	snprintf(clen, sizeof(clen), "%zu", len);
	n = fcgi_base_params(kv, "POST", uri, "application/json", clen);
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	kv[2 * n] = "HTTP_X_CORRELATION_ID", kv[2 * n + 1] = cid, n++;
	if (fcgi_begin(fd, deadline) == -1 ||
	    fcgi_params(fd, kv, n, deadline) == -1 ||
	    (sent > 0 && fcgi_stdin(fd, body, sent, deadline) == -1) ||
	    (sent == len && fcgi_stdin(fd, NULL, 0, deadline) == -1)) {
		close(fd);
		return -1;
	}
	return fd;
}
