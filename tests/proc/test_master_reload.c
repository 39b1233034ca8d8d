/*
 * test_master_reload.c - graceful reload of asyncexec-fcgi on SIGHUP
 * (systemctl reload: ExecReload sends SIGHUP to the master), each
 * scenario on its own master in this test's temp dir, spoken to in raw
 * FastCGI (GET /healthz and POST submits with the stack's database).
 *
 *   1. reload under load: LOAD_THREADS clients (half of them pausing
 *      between connect and the request, as a busy web server may),
 *      RELOADS SIGHUPs with a changed `workers` value each time: no
 *      request fails (every one answered whole with its status), every
 *      worker pid changes, the count follows `workers`, the old workers
 *      exit 0 and are not replaced, the master stops with exit 0 and
 *      leaves no process
 *   2. an invalid file: one error line naming FILE:LINE: key, the same
 *      workers keep serving; so is a db_connect_timeout (9 s) that leaves
 *      a request's database wait (15 s + it) no room before the stop
 *      deadline (25 s), and a master does not start with it; fixed
 *      (listen_mode changed, log_level error): a new generation, a
 *      warning about listen_mode, the socket's mode unchanged, the
 *      master's info lines silenced
 *   3. a request in flight in an old worker (a half-sent submit) is
 *      answered whole after the reload; its worker then exits 0
 *   4. SIGTERM during a reload (an old worker still serving): both
 *      generations stop, the request in flight is answered, exit 0
 *   5. no new worker can be forked (RLIMIT_NPROC, as an unused uid):
 *      the reload fails with a line, the old workers keep serving, and
 *      the writer pin (db_hosts, db_pin_file: the master resumed node 2)
 *      is left alone: file and shared page still name node 2
 *   6. a master on a TCP socket (listen_allow = 127.0.0.2): a file that
 *      would leave the kept socket without listen_allow (listen back to
 *      a path, no listen_allow) is refused, the old workers stay and
 *      127.0.0.1 is still closed unanswered (it used to be served by the
 *      new generation); a file with a changed listen_allow is reloaded
 *   7. log_level info -> debug: every new worker logs at debug
 *   8. SIGHUP before the master has installed its handlers (it waits
 *      in the open of its configuration file, as on a slow filesystem:
 *      here this test holds a write lease on it): it used to kill the
 *      master (systemd takes death by SIGHUP for a clean exit,
 *      Restart=on-failure does nothing); the master now holds it until
 *      its workers are up, then reloads: it serves, and stops with 0
 *      (the wait was on a FIFO as db_password_file, which is refused at
 *      once now: proc_master)
 *
 * Figures are printed as "figure: ..." lines.
 */
#include <sys/stat.h>
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

#define RELOADS		8
#define BURST		5	/* SIGHUPs sent back to back */
#define REPLACE_MS	10000	/* a generation replaced, at most */

/* A generation of master's workers: none of before, want of them. */
struct gen_wait {
	pid_t		 master;
	const pid_t	*before;
	size_t		 nbefore, want;
	pid_t		 keep;		/* an old one allowed to run, or 0 */
	pid_t		 now[MAX_PIDS];
	size_t		 nnow;
};

/*
 * Whether master's workers are want new ones (not in before), with no
 * old one left but keep; their pids into now.
 */
static int
replaced(void *arg)
{
	struct gen_wait	*g = arg;
	pid_t		 pids[MAX_PIDS];
	size_t		 n, i;

	n = workers_of(g->master, pids, MAX_PIDS);
	g->nnow = 0;
	for (i = 0; i < n && i < MAX_PIDS; i++) {
		if (has_pid(g->before, g->nbefore, pids[i])) {
			if (pids[i] != g->keep)
				return 0;
			continue;
		}
		g->now[g->nnow++] = pids[i];
	}
	return g->nnow == g->want;
}

/* Whether each of pids is gone and its exit 0 was logged by master. */
static int
exited_zero(const char *log, const pid_t *pids, size_t n)
{
	struct log_wait	 w = { log, NULL };
	char		 line[96];
	size_t		 i;
	int		 ok = 1;

	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "old worker %ld exited with "
		    "status 0", (long)pids[i]);
		w.needle = line;
		if (!wait_for(logged, &w, STOP_MS) || alive(pids[i])) {
			fprintf(stderr, "no \"%s\"\n", line);
			ok = 0;
		}
	}
	return ok;
}

/*
 * Whether master keeps exactly the workers of g->now at 10 samples
 * 20 ms apart: no old one replaced, no extra one forked.
 */
static int
steady(const struct gen_wait *g)
{
	pid_t	 pids[MAX_PIDS];
	size_t	 n, i;
	int	 k;

	for (k = 0; k < 10; k++) {
		n = workers_of(g->master, pids, MAX_PIDS);
		if (n != g->nnow)
			return 0;
		for (i = 0; i < n; i++)
			if (!has_pid(g->now, g->nnow, pids[i]))
				return 0;
		ut_pause_ms(TICK_MS);
	}
	return 1;
}

/* Whether replaced(arg) holds and then stays so (steady). */
static int
settled(void *arg)
{
	return replaced(arg) && steady(arg);
}

/* One SIGHUP of scenario 1 to `workers` w; 0 when it checked out. */
static int
reload_once(pid_t m, const char *cfg, const char *sock, const char *log,
    unsigned w, long long *took)
{
	struct gen_wait	 g;
	pid_t		 before[MAX_PIDS];
	char		 wv[16];
	size_t		 nb;
	long long	 t0;

	memset(&g, 0, sizeof(g));
	nb = workers_of(m, before, MAX_PIDS);
	snprintf(wv, sizeof(wv), "%u", w);
	CHECK_EQ_INT(derive_config(cfg, sock, wv, NULL), 0);
	g.master = m, g.before = before, g.nbefore = nb, g.want = w;
	t0 = ut_now_ms();
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	*took = time_until(replaced, &g, t0, REPLACE_MS);
	CHECK(*took >= 0);
	if (*took < 0)
		return -1;
	CHECK(exited_zero(log, before, nb));
	CHECK(steady(&g));
	return 0;
}

/*
 * BURST SIGHUPs back to back (they may merge into fewer reloads): in
 * the end WORKERS new workers, every old one gone and reaped.
 */
static void
reload_burst(pid_t m, const char *cfg, const char *sock, const char *log)
{
	struct gen_wait	 g;
	pid_t		 before[MAX_PIDS];
	long long	 t0;
	int		 k, gens = log_count(log, "master: reloaded");

	memset(&g, 0, sizeof(g));
	g.nbefore = workers_of(m, before, MAX_PIDS);
	g.master = m, g.before = before, g.want = WORKERS;
	CHECK_EQ_INT(derive_config(cfg, sock, WORKERS_STR, NULL), 0);
	t0 = ut_now_ms();
	for (k = 0; k < BURST; k++)
		CHECK_EQ_INT(kill(m, SIGHUP), 0);
	/* One generation may be replaced by the next: until it holds. */
	CHECK(wait_for(settled, &g, REPLACE_MS));
	CHECK_EQ_INT(zombies_of(m), 0);
	gens = log_count(log, "master: reloaded") - gens;
	CHECK(gens >= 1 && gens <= BURST);
	printf("figure: %d SIGHUPs back to back under load: %d reloads; %zu "
	    "new workers, no old one left, none unreaped, steady for 200 ms, "
	    "%lld ms after the first\n", BURST, gens, g.nnow, ut_now_ms() - t0);
}

/* 1. SIGHUP RELOADS times under load, `workers` changing each time. */
static void
scenario_under_load(void)
{
	static const unsigned	 counts[RELOADS] = { 3, 1, 4, 2, 3, 1, 4, 2 };
	const char		*cfg = path_in_tmp("load.conf");
	const char		*sock = path_in_tmp("load.sock");
	const char		*log = path_in_tmp("load.log");
	struct load		 ls[LOAD_THREADS], t;
	long long		 took[RELOADS], worst = 0;
	pid_t			 m;
	int			 k;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	CHECK_EQ_INT(load_start(ls, sock, "reload", LOAD_SLOW), 0);
	CHECK(load_more(ls, 200));
	for (k = 0; k < RELOADS; k++) {
		if (reload_once(m, cfg, sock, log, counts[k], &took[k]) == -1)
			break;
		if (took[k] > worst)
			worst = took[k];
		printf("figure: reload %d under load: %u new workers, every "
		    "old one gone %lld ms after SIGHUP\n", k + 1, counts[k],
		    took[k]);
		CHECK(load_more(ls, 200));
	}
	if (k == RELOADS) {
		reload_burst(m, cfg, sock, log);
		CHECK(load_more(ls, 200));
	}
	load_join(ls, &t);
	printf("figure: %d reloads and a burst under load (%d clients): %ld "
	    "requests answered, %ld failed%s%s; slowest replacement %lld ms\n",
	    k, LOAD_THREADS, t.answered, t.failed, t.failed ? ": " : "",
	    t.why, worst);
	CHECK_EQ_INT(k, RELOADS);
	CHECK(t.answered > 0);
	CHECK_EQ_INT(t.failed, 0);
	CHECK(log_count(log, "generation 8") > 0);
	down(m, log);
}

/* Whether master has exactly the n workers of pids. */
static int
same_workers(pid_t m, const pid_t *pids, size_t n)
{
	pid_t	 now[MAX_PIDS];
	size_t	 k, i;

	if ((k = workers_of(m, now, MAX_PIDS)) != n)
		return 0;
	for (i = 0; i < k; i++)
		if (!has_pid(pids, n, now[i]))
			return 0;
	return 1;
}

/*
 * After a refused reload of m: 20 /healthz on sock (how many answered
 * 200 into *ok; all must), by the nb workers of before (whether so).
 */
static int
still_serving(pid_t m, const char *sock, const pid_t *before, size_t nb,
    int *ok)
{
	int	 i, same;

	for (*ok = 0, i = 0; i < 20; i++)
		*ok += healthz(sock) == 200;
	CHECK_EQ_INT(*ok, 20);
	same = same_workers(m, before, nb);
	CHECK(same);
	return same;
}

/* Whether the log of arg (a log_wait) holds its needle twice. */
static int
logged_twice(void *arg)
{
	struct log_wait	*l = arg;

	return log_count(l->path, l->needle) >= 2;
}

/*
 * 8. A db_connect_timeout that leaves a request on a silent database no
 * room before the stop deadline (15 s + 9 s + 1 s): the master starts
 * and serves with a warning naming the key, a reload of it applies with
 * the warning again, and the stop is clean. Not refused: a service that
 * would not start after an upgrade on a cluster of many nodes is down.
 */
static void
scenario_waits(void)
{
	const char	*cfg = path_in_tmp("waits.conf");
	const char	*sock = path_in_tmp("waits.sock");
	const char	*log = path_in_tmp("waits.log");
	struct log_wait	 lw = { log, "db_connect_timeout (9 s)" };
	pid_t		 m;

	CHECK_EQ_INT(derive_config_x(cfg, sock, "2",
	    "db_connect_timeout = 9\n", NULL), 0);
	if ((m = up(cfg, sock, log, 2, NULL)) == -1)
		return;
	CHECK(wait_for(logged, &lw, STOP_MS));
	CHECK_EQ_INT(log_count(log, "may then be cut by the stop's SIGKILL"),
	    1);
	CHECK_EQ_INT(healthz(sock), 200);
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(logged_twice, &lw, STOP_MS));
	CHECK_EQ_INT(log_count(log, "reload refused"), 0);
	CHECK_EQ_INT(healthz(sock), 200);
	down(m, log);
}

/* 2. An invalid file is refused, the old workers serve; fixed: reload. */
static void
scenario_invalid(void)
{
	const char	*cfg = path_in_tmp("bad.conf");
	const char	*sock = path_in_tmp("bad.sock");
	const char	*log = path_in_tmp("bad.log");
	struct gen_wait	 g;
	struct log_wait	 lw = { log, NULL };
	struct stat	 st0, st1;
	pid_t		 m, before[MAX_PIDS];
	char		 want[600];
	unsigned	 line = 0;
	size_t		 nb;
	int		 ok, same, refused;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	nb = workers_of(m, before, MAX_PIDS);
	CHECK(lstat(sock, &st0) == 0);
	CHECK_EQ_INT(derive_config(cfg, sock, "lots", &line), 0);
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	snprintf(want, sizeof(want), "reload refused, the running "
	    "configuration and workers stay: %s:%u: workers: ", cfg, line);
	lw.needle = want;
	refused = wait_for(logged, &lw, STOP_MS);
	CHECK(refused);
	same = still_serving(m, sock, before, nb, &ok);
	printf("figure: invalid configuration: %s \"%s...\"; %d of 20 "
	    "requests answered 200 by the %s workers\n", refused ?
	    "refused with" : "NO line", want, ok, same ? "same" : "CHANGED");

	CHECK_EQ_INT(derive_config_x(cfg, sock, "3", "listen_mode = 0600\n"
	    "log_level = error\n", NULL), 0);
	memset(&g, 0, sizeof(g));
	g.master = m, g.before = before, g.nbefore = nb, g.want = 3;
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(replaced, &g, REPLACE_MS));
	lw.needle = "listen_mode (or another listen setting) changed";
	CHECK(wait_for(logged, &lw, STOP_MS));
	CHECK(lstat(sock, &st1) == 0 && st1.st_mode == st0.st_mode &&
	    st1.st_ino == st0.st_ino);
	CHECK_EQ_INT(healthz(sock), 200);
	CHECK_EQ_INT(term_and_wait(m, STOP_MS, NULL), 0);
	CHECK_EQ_INT(log_count(log, "stopping"), 0);	/* log_level = error */
	if (check_fail_ > 0)
		dump_log(log);
}

/*
 * A master with WORKERS workers, one of them holding a half-sent
 * submit (*fd, *h), reloaded: the new generation is up, the holder
 * still runs, the idle old worker is gone. Files NAME.conf, .sock and
 * .log (its path into log). The master's pid or -1.
 */
static pid_t
reload_with_inflight(const char *name, char *log, size_t logsz, int *fd,
    struct holder_wait *h)
{
	char		 cfg[520], sock[520];
	struct gen_wait	 g;
	pid_t		 m, before[MAX_PIDS];
	size_t		 nb;

	snprintf(cfg, sizeof(cfg), "%s.conf", path_in_tmp(name));
	snprintf(sock, sizeof(sock), "%s.sock", path_in_tmp(name));
	snprintf(log, logsz, "%s.log", path_in_tmp(name));
	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return -1;
	nb = workers_of(m, before, MAX_PIDS);
	*fd = inflight_start(sock, name);
	CHECK(*fd != -1);
	h->master = m, h->pid = 0, h->client = *fd;
	CHECK(wait_for(holder, h, START_MS));
	memset(&g, 0, sizeof(g));
	g.master = m, g.before = before, g.nbefore = nb, g.want = WORKERS;
	g.keep = h->pid;
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(replaced, &g, REPLACE_MS));
	CHECK(h->pid > 0 && alive(h->pid));	/* it serves its request */
	CHECK_EQ_INT(healthz(sock), 200);	/* the new ones serve */
	if (*fd == -1 || h->pid == 0) {
		kill_master(m);
		return -1;
	}
	return m;
}

/* 3. A request in flight in an old worker is answered whole. */
static void
scenario_inflight(void)
{
	struct holder_wait	 h;
	char			 log[520];
	pid_t			 m;
	int			 fd, whole, gone;

	if ((m = reload_with_inflight("inflight", log, sizeof(log), &fd,
	    &h)) == -1)
		return;
	whole = finish_inflight(fd);
	CHECK(whole);
	gone = exited_zero(log, &h.pid, 1);
	CHECK(gone);
	printf("figure: request in flight in an old worker during a reload: "
	    "%s; the worker then %s\n", whole ? "answered 202 in full" :
	    "NOT ANSWERED", gone ? "exited 0" : "did NOT exit 0");
	down(m, log);
}

/* 4. SIGTERM while an old worker still serves: all stop, exit 0. */
static void
scenario_term_during_reload(void)
{
	struct holder_wait	 h;
	struct exit_wait	 w;
	char			 log[520];
	pid_t			 m, pids[MAX_PIDS];
	size_t			 n;
	int			 fd, st, whole;

	if ((m = reload_with_inflight("termreload", log, sizeof(log), &fd,
	    &h)) == -1)
		return;
	w.pid = m;
	n = workers_of(m, pids, MAX_PIDS);	/* both generations */
	CHECK_EQ_INT(n, WORKERS + 1);
	CHECK_EQ_INT(kill(m, SIGTERM), 0);
	CHECK(!has_exited(&w));		/* held by the request in flight */
	whole = finish_inflight(fd);
	CHECK(whole);
	st = wait_master_exit(m, STOP_MS);	/* no process left behind */
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("figure: SIGTERM during a reload (%zu workers of two "
	    "generations): the request in flight %s, master exit %d\n", n,
	    whole ? "answered in full" : "NOT ANSWERED",
	    st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (check_fail_ > 0)
		dump_log(log);
}

/*
 * Appends db_hosts (node 1: a port where nothing listens, node 2: the
 * stack's database) and db_pin_file (in cfg's directory, owned by uid,
 * naming node 2: the master resumes it) to cfg. node2 gets its
 * host:port. 0 or -1.
 */
static int
pin_config(const char *cfg, uid_t uid, char *pin, size_t sz, char *node2,
    size_t n2sz)
{
	char		*base, *text, *slash, extra[1600];
	const char	*port;
	int		 rc = -1;

	if ((base = read_file(base_cfg)) == NULL)
		return -1;
	port = config_value(base, "db_port");
	snprintf(node2, n2sz, "127.0.0.1:%s", port ? port : "3306");
	free(base);
	snprintf(pin, sz, "%s", cfg);
	if ((slash = strrchr(pin, '/')) == NULL)
		return -1;
	snprintf(slash + 1, sz - (size_t)(slash + 1 - pin), "writer");
	if ((text = read_file(cfg)) == NULL)
		return -1;
	snprintf(extra, sizeof(extra), "%sdb_hosts = 127.0.0.1:%u, %s\n"
	    "db_pin_file = %s\n", text, test_free_port(), node2, pin);
	free(text);
	if (write_file(cfg, extra) == 0 && (text = malloc(strlen(node2) +
	    2)) != NULL) {
		snprintf(text, strlen(node2) + 2, "%s\n", node2);
		rc = write_file(pin, text) == 0 && chown(pin, uid, NOGROUP) ==
		    0 ? 0 : -1;
		free(text);
	}
	return rc;
}

/* asyncexec_db_writer_index of sock's /metrics, -1 without it. */
static int
writer_index(const char *sock)
{
	struct fcgi_resp	 r;
	const char		*p;
	int			 v = -1;

	if (fcgi_request(sock, "GET", "/metrics", NULL, NULL, 0, REQ_MS,
	    &r) == 0 && r.out != NULL && (p = strstr(r.out,
	    "\nasyncexec_db_writer_index ")) != NULL)
		v = atoi(p + 27);
	fcgi_resp_free(&r);
	return v;
}

/* 5. Not one new worker can be forked: the reload fails, nothing changes. */
static void
scenario_fork_fails(void)
{
	const char	*log = path_in_tmp("nproc.log");
	struct run_as	 as;
	struct log_wait	 lw = { log, "master: reload failed: no worker of "
	    "the new generation could be forked" };
	char		 cfg[600], sock[600], pin[700], node2[64], *text;
	pid_t		 m, before[MAX_PIDS];
	uid_t		 uid = unused_uid(63000);
	size_t		 nb;
	int		 ok, same, failed, wi;

	if (user_config("nproc", uid, cfg, sock, sizeof(cfg)) == -1 ||
	    pin_config(cfg, uid, pin, sizeof(pin), node2,
	    sizeof(node2)) == -1) {
		CHECK(!"configuration for the unprivileged master");
		return;
	}
	/* master + WORKERS workers = the limit: no fork beyond them */
	as.uid = uid, as.gid = NOGROUP, as.nproc = WORKERS + 1;
	if ((m = up(cfg, sock, log, WORKERS, &as)) == -1)
		return;
	CHECK_EQ_INT(writer_index(sock), 1);	/* resumed from the file */
	nb = workers_of(m, before, MAX_PIDS);
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	failed = wait_for(logged, &lw, STOP_MS);
	CHECK(failed);
	same = still_serving(m, sock, before, nb, &ok);
	printf("figure: reload with every fork failing (RLIMIT_NPROC): %s; "
	    "%d of 20 requests answered 200 by the %s workers\n", failed ?
	    "refused with a line" : "NO line", ok, same ? "same" : "CHANGED");
	if ((text = read_file(pin)) != NULL)
		text[strcspn(text, "\n")] = '\0';
	wi = writer_index(sock);
	printf("figure: after the failed reload the pin file holds \"%.40s\" "
	    "(node 2 is %s), asyncexec_db_writer_index %d\n", text ? text :
	    "(none)", node2, wi);
	CHECK(text != NULL && strcmp(text, node2) == 0);
	free(text);
	CHECK_EQ_INT(wi, 1);
	down(m, log);
}

/* Whether the log (arg: struct log_wait) holds a reload's outcome line. */
static int
reload_done(void *arg)
{
	const struct log_wait	*w = arg;

	return log_count(w->path, "master: reload") > 0;
}

/* 6. A reload never leaves a TCP socket without listen_allow. */
static void
scenario_drop_allow(void)
{
	const char	*cfg = path_in_tmp("allow.conf");
	const char	*sock = path_in_tmp("allow.sock");
	const char	*log = path_in_tmp("allow.log");
	struct log_wait	 lw = { log, NULL };
	struct gen_wait	 g;
	pid_t		 m, before[MAX_PIDS];
	char		 addr[64], want[700];
	size_t		 nb;
	int		 st, same;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", test_free_port());
	CHECK_EQ_INT(derive_config_x(cfg, addr, WORKERS_STR,
	    "listen_allow = 127.0.0.2\n", NULL), 0);
	m = start_master(cfg, log, -1);
	CHECK(m > 0 && wait_for(has_n_workers, &(struct n_workers){ m,
	    WORKERS }, START_MS));
	ut_pause_ms(200);
	CHECK_EQ_INT(healthz(addr), -1);	/* 127.0.0.1 is not allowed */
	nb = workers_of(m, before, MAX_PIDS);
	CHECK_EQ_INT(derive_config(cfg, sock, WORKERS_STR, NULL), 0);
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(reload_done, &lw, STOP_MS));
	snprintf(want, sizeof(want), "master: reload refused, the running "
	    "configuration and workers stay: %s: listen_allow", cfg);
	CHECK_EQ_INT(log_count(log, want), 1);
	ut_pause_ms(300);			/* a new generation would be up */
	st = healthz(addr);
	same = same_workers(m, before, nb);
	printf("figure: reload to a file without listen_allow on a kept TCP "
	    "socket: %s; GET /healthz from 127.0.0.1 -> %d; the %s workers\n",
	    log_count(log, want) ? "refused" : "NOT refused", st, same ?
	    "same" : "NEW");
	CHECK_EQ_INT(st, -1);
	CHECK(same);
	CHECK(!exists(sock));

	/* the allow list itself may change on a reload */
	CHECK_EQ_INT(derive_config_x(cfg, addr, WORKERS_STR,
	    "listen_allow = 127.0.0.2,127.0.0.1\n", NULL), 0);
	memset(&g, 0, sizeof(g));
	nb = workers_of(m, before, MAX_PIDS);
	g.master = m, g.before = before, g.nbefore = nb, g.want = WORKERS;
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(replaced, &g, REPLACE_MS));
	CHECK_EQ_INT(healthz(addr), 200);
	down(m, log);
}

/*
 * 7. log_level reaches the new generation: reloaded from info to debug,
 * each new worker logs its debug line "worker PID: ready".
 */
static void
scenario_level(void)
{
	const char	*cfg = path_in_tmp("level.conf");
	const char	*sock = path_in_tmp("level.sock");
	const char	*log = path_in_tmp("level.log");
	struct gen_wait	 g;
	struct log_wait	 lw = { log, NULL };
	pid_t		 m, before[MAX_PIDS];
	char		 want[64];
	size_t		 nb, i;
	int		 n = 0;

	if ((m = up_derived(cfg, sock, log, WORKERS)) == -1)
		return;
	nb = workers_of(m, before, MAX_PIDS);
	CHECK_EQ_INT(log_count(log, ": ready"), 0);	/* log_level = info */
	CHECK_EQ_INT(derive_config_x(cfg, sock, WORKERS_STR,
	    "log_level = debug\n", NULL), 0);
	memset(&g, 0, sizeof(g));
	g.master = m, g.before = before, g.nbefore = nb, g.want = WORKERS;
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	CHECK(wait_for(replaced, &g, REPLACE_MS));
	for (i = 0; i < g.nnow; i++) {
		snprintf(want, sizeof(want), "worker %ld: ready",
		    (long)g.now[i]);
		lw.needle = want;
		n += wait_for(logged, &lw, STOP_MS);
	}
	printf("figure: log_level info -> debug: %d of %zu new workers "
	    "logged their debug line\n", n, g.nnow);
	CHECK_EQ_INT(n, (int)g.nnow);
	CHECK(g.nnow > 0);
	down(m, log);
}

/*
 * 8. SIGHUP before the handlers: the master started while this test
 * holds a lease on its configuration file gets it while it waits in
 * that open; the lease then ends.
 */
static void
scenario_hup_at_start(void)
{
	const char	*cfg = path_in_tmp("hup.conf");
	const char	*sock = path_in_tmp("hup.sock");
	const char	*log = path_in_tmp("hup.log");
	struct log_wait	 lw = { log, "master: reloaded" };
	struct up_wait	 u;
	struct exit_wait w;
	int		 fd, up;
	pid_t		 m;

	CHECK_EQ_INT(derive_config(cfg, sock, WORKERS_STR, NULL), 0);
	CHECK((fd = lease(cfg)) != -1);
	CHECK((m = start_master(cfg, log, -1)) > 0);
	CHECK(m > 0 && wait_for(in_open, &m, START_MS));
	CHECK_EQ_INT(kill(m, SIGHUP), 0);
	lease_end(fd);
	u.pid = w.pid = m, u.sock = sock, u.status = -1;
	up = wait_for(answers, &u, START_MS) && !has_exited(&w);
	printf("figure: SIGHUP before the handlers: the master %s\n", up ?
	    "serves" : "is gone");
	CHECK(up && u.status == 200);
	CHECK(wait_for(logged, &lw, STOP_MS));	/* the SIGHUP: a reload */
	CHECK_EQ_INT(term_and_wait(m, STOP_MS, NULL), 0);
	if (check_fail_ > 0)
		dump_log(log);
}

int
main(int argc, char *argv[])
{
	static const struct scenario sc[] = {
		{ "load", scenario_under_load },
		{ "invalid", scenario_invalid },
		{ "inflight", scenario_inflight },
		{ "term", scenario_term_during_reload },
		{ "nproc", scenario_fork_fails },
		{ "allow", scenario_drop_allow },
		{ "level", scenario_level },
		{ "waits", scenario_waits },
		{ "hupstart", scenario_hup_at_start },
	};

	return scenarios_main("reload", "proc_master_reload", sc,
	    sizeof(sc) / sizeof(sc[0]), argc, argv);
}
