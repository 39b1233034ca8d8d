/*
 * master.c - N forked workers on the listening socket (listener.c),
 * respawn, reload, shutdown.
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
 * SIGHUP (systemctl reload): the master loads its configuration file
 * again into a new struct, whole, before anything changes; an invalid
 * file is refused with config_load's "FILE:LINE: key: reason" and the
 * running workers keep serving. A valid one becomes the master's
 * configuration (log level included), a new generation of workers is
 * forked with it (a fork copies it) on the same listening socket, and
 * only then is the writer pin sent back to the first node and does the
 * old generation get SIGTERM (when not one new worker can be forked,
 * the reload fails and nothing changes, the pin included): each old
 * worker answers the request it serves and exits; it is reaped, never
 * replaced. The socket is kept: changes of listen, listen_mode,
 * listen_group and listen_backlog are logged as needing a restart, and
 * a file without listen_allow is refused while the socket is a TCP one
 * (the new workers would serve every peer). Old
 * workers still running STOP_KILL_SECONDS after their SIGTERM get
 * SIGKILL; until then SIGTERM is repeated to them every RETIRE_KICK_MS
 * (a worker sees it only while it waits for a connection, so one is
 * enough; the repeats cost nothing and bound the SIGKILL's lateness).
 *
 * SIGTERM/SIGINT: the master unlinks the socket it created (new
 * connections are refused), sends SIGTERM to every worker of every
 * generation and repeats it until all have exited (each answers its
 * request in flight first), reaps them all and exits 0. Workers still
 * running STOP_KILL_SECONDS after the SIGTERM get SIGKILL and the
 * master exits 1; that deadline is below the unit's TimeoutStopSec
 * (30 s), so the master, not systemd, ends the stop and reaps every
 * child; and it is above the longest a request waits on the database
 * (src/db/db_io.h: DB_IO_TIMEOUT_SECONDS, then one connect), so that such
 * a request is answered 503, not cut by the SIGKILL.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
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

#include "api.h"
#include "clock.h"
#include "config.h"
#include "db_io.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "pin.h"
#include "listener.h"
#include "master.h"
#include "worker.h"

#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		30000
#define HEALTHY_MS		10000	/* a life this long: no delay */
#define CRASH_LOOP		3	/* quick exits in a row: a loop */
#define LOG_EVERY_MS		10000	/* one repeated line per */
#define RETIRE_KICK_MS		1000	/* SIGTERM again to old workers */

static volatile sig_atomic_t got_term, got_chld, got_alrm, got_hup;

struct child {
	pid_t		 pid;		/* 0: the slot is empty */
	long long	 started;	/* ms, when pid was forked */
	long long	 due;		/* ms, refill time if empty */
	unsigned	 backoff;	/* ms, the slot's current delay */
	unsigned	 quick;		/* quick exits in a row */
};

/*
 * The master's state: its configuration (the current generation's),
 * the file it came from, the socket, the current generation's slots,
 * and the old generations' workers still running (pid, and in started
 * the time of their first SIGTERM), never refilled. oldcap is kept at
 * least nold + n, so that the stop can always move the current
 * generation there.
 */
struct master {
	struct config	 cfg;
	const char	*path;
	int		 fd;
	struct child	*kids;
	unsigned	 n;
	struct child	*old;
	size_t		 nold, oldcap;
	long long	 kick;		/* ms, the next SIGTERM to old ones */
	unsigned	 generation;
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
	else if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
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
	long long	 now = clock_mono_ms();
	unsigned	 held;
	pid_t		 pid, master = getpid();

	metrics_worker_slot();		/* the child's busy flag */
	if ((pid = fork()) == -1) {
		metrics_worker_forked(-1);
		back_off(c, now);
		if (ratelog_ok(&fork_log, now, &held))
			log_error("fork: %s; worker slot %u retried in %u ms "
			    "(%u fork failures not logged)", strerror(errno),
			    i, c->backoff, held);
		return -1;
	}
	if (pid == 0)
		_exit(worker_run(cfg, fd, master));
	metrics_worker_forked(pid);
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
	long long	 now = clock_mono_ms();
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

/* Removes old worker i of m after its exit with status (logged). */
static void
old_exited(struct master *m, size_t i, int status)
{
	char	 why[64];

	exit_text(status, why, sizeof(why));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		log_info("master: old worker %ld %s", (long)m->old[i].pid, why);
	else
		log_warn("master: old worker %ld %s", (long)m->old[i].pid, why);
	m->old[i] = m->old[--m->nold];
}

/*
 * Reaps every exited worker: its busy flag is cleared (one killed inside
 * a request left it set), a current one's slot becomes empty (to be
 * refilled), an old one is forgotten.
 */
static void
reap(struct master *m)
{
	pid_t		 pid;
	int		 status;
	unsigned	 i;
	size_t		 j;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		metrics_worker_reaped(pid);	/* busy or not, it is gone */
		for (i = 0; i < m->n && m->kids[i].pid != pid; i++)
			;
		if (i < m->n) {
			slot_exited(&m->kids[i], i, pid, status);
			continue;
		}
		for (j = 0; j < m->nold && m->old[j].pid != pid; j++)
			;
		if (j < m->nold)
			old_exited(m, j, status);
	}
}

/*
 * Forks a worker into every empty slot that is due, then arms the tick
 * (one-shot ITIMER_REAL) for the earliest slot still empty or, while
 * old workers run, their next SIGTERM; it is disarmed when every slot
 * is full and no old worker is left.
 */
static void
refill(struct master *m)
{
	struct itimerval it;
	long long	 now = clock_mono_ms(), next = -1, left;
	unsigned	 i;

	for (i = 0; i < m->n; i++) {
		if (m->kids[i].pid == 0 && m->kids[i].due <= now &&
		    spawn(&m->cfg, m->fd, &m->kids[i], i) == 0)
			metrics_worker_restart();
		if (m->kids[i].pid == 0 &&
		    (next == -1 || m->kids[i].due < next))
			next = m->kids[i].due;
	}
	if (m->nold > 0 && (next == -1 || m->kick < next))
		next = m->kick;
	memset(&it, 0, sizeof(it));
	if (next != -1) {
		if ((left = next - now) < 1)
			left = 1;
		it.it_value.tv_sec = (time_t)(left / 1000);
		it.it_value.tv_usec = (suseconds_t)(left % 1000) * 1000;
	}
	(void)setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Sends SIGTERM to every old worker when due (every RETIRE_KICK_MS),
 * SIGKILL to those running STOP_KILL_SECONDS after their first one.
 */
static void
kick_old(struct master *m)
{
	long long	 now = clock_mono_ms();
	size_t		 i;

	if (m->nold == 0 || now < m->kick)
		return;
	for (i = 0; i < m->nold; i++) {
		if (now - m->old[i].started < STOP_KILL_SECONDS * 1000LL) {
			kill(m->old[i].pid, SIGTERM);
			continue;
		}
		if (m->old[i].quick++ == 0)	/* "killed" mark: log once */
			log_error("master: old worker %ld still running %d s "
			    "after the reload; killing it",
			    (long)m->old[i].pid, STOP_KILL_SECONDS);
		kill(m->old[i].pid, SIGKILL);
	}
	m->kick = now + RETIRE_KICK_MS;
}

/*
 * Moves the live workers of the current generation to the old ones
 * (room is there: oldcap >= nold + n), with now as the time of their
 * SIGTERM, and sends it. Their slots are left empty.
 */
static void
retire_current(struct master *m)
{
	long long	 now = clock_mono_ms();
	unsigned	 i;

	for (i = 0; i < m->n; i++) {
		if (m->kids[i].pid == 0)
			continue;
		kill(m->kids[i].pid, SIGTERM);
		m->old[m->nold].pid = m->kids[i].pid;
		m->old[m->nold].started = now;
		m->old[m->nold].quick = 0;
		m->nold++;
		m->kids[i].pid = 0;
	}
	m->kick = now + RETIRE_KICK_MS;
}

/* Warns about each setting of the socket that differs in next. */
static void
socket_changes(const struct config *cur, const struct config *next)
{
	const char	*what = NULL;

	if (strcmp(cur->listen, next->listen) != 0)
		what = "listen";
	else if (cur->listen_mode != next->listen_mode)
		what = "listen_mode";
	else if (strcmp(cur->listen_group, next->listen_group) != 0)
		what = "listen_group";
	else if (cur->listen_backlog != next->listen_backlog)
		what = "listen_backlog";
	if (what != NULL)
		log_warn("master: reload: %s (or another listen setting) "
		    "changed; the listening socket is kept as it is: restart "
		    "the service to apply it", what);
}

/*
 * Forks the n workers of a new generation into kids with next, which
 * becomes m's configuration (log level included: each worker sets its
 * own from the configuration it is forked with). When not one fork
 * succeeds, m keeps its configuration and -1 is returned (logged); else
 * the number forked (the rest are refilled by the tick).
 */
static int
fork_generation(struct master *m, const struct config *next,
    struct child *kids, unsigned n)
{
	struct config	 prev = m->cfg;
	unsigned	 i;
	int		 up = 0;

	m->cfg = *next;		/* what a fork copies */
	for (i = 0; i < n; i++)
		if (spawn(&m->cfg, m->fd, &kids[i], i) == 0)
			up++;
	if (up == 0) {
		m->cfg = prev;
		log_error("master: reload failed: no worker of the new "
		    "generation could be forked; the running configuration "
		    "and workers stay");
		return -1;
	}
	socket_changes(&prev, &m->cfg);	/* at the old level */
	log_set_level((enum log_level)m->cfg.log_level);
	return up;
}

/* Whether a reload would leave the kept socket without listen_allow. */
enum allow_kept {
	ALLOW_KEPT,		/* a unix socket, or next has listen_allow */
	ALLOW_DROPPED		/* a TCP socket and next has none: refuse */
};

/*
 * The socket is kept across a reload, whatever next's listen says: a
 * TCP one (the master's ADDRESS:PORT, or inherited) needs next to have
 * listen_allow too, else the new workers would serve every peer. On
 * ALLOW_DROPPED err says why.
 */
static enum allow_kept
keeps_allow(const struct master *m, const struct config *next, char *err,
    size_t errsz)
{
	if (next->listen_allow[0] != '\0' ||
	    peer_listen_kind(m->fd) == LISTEN_UNIX)
		return ALLOW_KEPT;
	snprintf(err, errsz, "%s: listen_allow: the listening socket is a "
	    "TCP one and is kept across a reload: the file must name the web "
	    "servers that may connect", m->path);
	return ALLOW_DROPPED;
}

/*
 * Whether cfg leaves a request's database waits room before the stop
 * deadline (worker_waits_fit), in msg (size bytes): the warning that
 * start, reload and --check-config give, or that it fits. -1 (warn) or
 * 0. Only a warning: a service that refused to start after an upgrade,
 * on a cluster of many nodes, would be down, where this costs at most a
 * 502 at a stop while the database is silent.
 */
int
master_waits_check(const struct config *cfg, char *msg, size_t size)
{
	char	 err[512];

	if (worker_waits_fit(cfg, err, sizeof(err)) == 0) {
		snprintf(msg, size, "a request on a silent database is "
		    "answered within it (%d s)", STOP_KILL_SECONDS);
		return 0;
	}
	snprintf(msg, size, "%s; a request on a database that stops "
	    "answering may then be cut by the stop's SIGKILL (nginx: 502)",
	    err);
	return -1;
}

/* Logs master_waits_check's warning for cfg, if any. */
static void
waits_warn(const struct config *cfg)
{
	char	 msg[768];

	if (master_waits_check(cfg, msg, sizeof(msg)) == -1)
		log_warn("master: %s", msg);
}

/*
 * SIGHUP: loads m->path into a new struct and checks it whole; an
 * invalid file, or one that would leave the kept TCP socket without
 * listen_allow, is refused (one error line; the running configuration
 * and workers stay). Else a new generation of workers is forked with
 * it on the same socket (fork_generation), the writer pin goes back to
 * the first node, and the old generation is told to stop
 * (retire_current). 0, or -1 when refused or no worker could be forked
 * (then nothing changed).
 */
static int
reload(struct master *m)
{
	struct config	 next;
	struct child	*kids, *old;
	char		 err[512];
	unsigned	 n;
	size_t		 need;
	int		 up;

	if (config_load(&next, m->path, err, sizeof(err)) == -1 ||
	    keeps_allow(m, &next, err, sizeof(err)) == ALLOW_DROPPED) {
		log_error("master: reload refused, the running configuration "
		    "and workers stay: %s", err);
		return -1;
	}
	waits_warn(&next);
	if ((n = config_workers(&next)) > WORKERS_MAX)
		n = WORKERS_MAX;
	need = m->nold + m->n + n;
	if (need > m->oldcap) {
		if ((old = reallocarray(m->old, need, sizeof(*old))) == NULL)
			goto fail;
		m->old = old;
		m->oldcap = need;
	}
	if ((kids = calloc(n, sizeof(*kids))) == NULL)
		goto fail;
	if ((up = fork_generation(m, &next, kids, n)) == -1) {
		free(kids);
		return -1;	/* nothing changed, the pin neither */
	}
	/* an operator's reload sends the writer back to the first node:
	 * once the new generation exists (its workers follow the pin) */
	pin_set(0);
	if (next.db_nhosts > 0)
		(void)pin_save(&next, 0);
	retire_current(m);
	free(m->kids);
	m->kids = kids;
	m->n = n;
	metrics_workers(n);
	log_info("master: reloaded %s: generation %u, %d of %u workers "
	    "forked; %zu old workers finish their requests and exit",
	    m->path, ++m->generation, up, n, m->nold);
	return 0;
fail:
	log_error("master: reload refused: out of memory");
	return -1;
}

/* Reaps every exited worker without blocking; returns how many live. */
static unsigned
reap_stopped(struct child *kids, size_t n)
{
	size_t		 i;
	unsigned	 live = 0;

	for (i = 0; i < n; i++) {
		if (kids[i].pid > 0 && waitpid(kids[i].pid, NULL, WNOHANG) ==
		    kids[i].pid) {
			metrics_worker_reaped(kids[i].pid);
			kids[i].pid = 0;
		}
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
stop_all(struct child *kids, size_t n)
{
	struct itimerval off;
	struct timespec	 tick;
	sigset_t	 chld;
	long long	 deadline, left;
	size_t		 i;
	int		 sig = SIGTERM;

	deadline = clock_mono_ms() + STOP_KILL_SECONDS * 1000LL;
	memset(&off, 0, sizeof(off));
	(void)setitimer(ITIMER_REAL, &off, NULL);	/* no more refills */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (reap_stopped(kids, n) > 0) {
		if (sig == SIGTERM && deadline - clock_mono_ms() <= 0) {
			log_error("master: workers still running after %d s; "
			    "killing them", STOP_KILL_SECONDS);
			sig = SIGKILL;
		}
		for (i = 0; i < n; i++)
			if (kids[i].pid > 0)
				kill(kids[i].pid, sig);
		left = deadline - clock_mono_ms();
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

/* The signals the master handles (on_signal). */
static const int master_sigs[] = { SIGTERM, SIGINT, SIGCHLD, SIGALRM, SIGHUP };
#define NSIGS	(sizeof(master_sigs) / sizeof(master_sigs[0]))

/*
 * Blocks the signals the master handles; main calls it first, so that
 * one sent before master_run installs the handlers (a reload's SIGHUP
 * just after the start) waits for them instead of ending the process
 * by its default action.
 */
void
master_block_signals(void)
{
	sigset_t	 block;
	size_t		 i;

	sigemptyset(&block);
	for (i = 0; i < NSIGS; i++)
		sigaddset(&block, master_sigs[i]);
	sigprocmask(SIG_BLOCK, &block, NULL);
}

/*
 * Installs the handlers with every handled signal blocked; *old is the
 * mask to wait with (sigsuspend) and to restore: the one before, the
 * handled signals let in (those master_block_signals held are then
 * delivered).
 */
static void
master_signals(sigset_t *old)
{
	struct sigaction sa;
	size_t		 i;

	master_block_signals();
	sigprocmask(SIG_BLOCK, NULL, old);
	for (i = 0; i < NSIGS; i++)
		sigdelset(old, master_sigs[i]);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	for (i = 0; i < NSIGS; i++)
		sigaction(master_sigs[i], &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* Sets up m for cfg (read from path) and socket fd. 0, or -1 (logged). */
static int
master_init(struct master *m, const struct config *cfg, const char *path,
    int fd)
{
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->path = path;
	m->fd = fd;
	if ((m->n = config_workers(cfg)) > WORKERS_MAX)
		m->n = WORKERS_MAX;
	m->oldcap = m->n;
	if (pin_init() == -1 ||
	    (m->kids = calloc(m->n, sizeof(*m->kids))) == NULL ||
	    (m->old = calloc(m->oldcap, sizeof(*m->old))) == NULL) {
		log_error("master: out of memory");
		free(m->kids);
		return -1;
	}
	return 0;
}

/*
 * With db_hosts and db_pin_file: the workers start on the node the last
 * master's workers had moved to (a restart is not the operator's say to
 * go back to the first node; a reload is).
 */
static void
resume_pin(const struct config *cfg)
{
	unsigned	 node;

	if (cfg->db_nhosts == 0 || pin_load(cfg, &node) == -1)
		return;
	pin_set(node);
	if (node > 0)
		log_info("master: writing to node %u (%s:%u) as before the "
		    "restart (%s); a reload goes back to the first", node + 1,
		    cfg->db_hosts[node].host, cfg->db_hosts[node].port,
		    cfg->db_pin_file);
}

/*
 * Runs the master until SIGTERM/SIGINT, reloading path on SIGHUP;
 * returns the exit status: 0 after a clean stop, 1 when it could not
 * start its workers or had to SIGKILL some at the stop deadline.
 */
int
master_run(const struct config *cfg, const char *path, int fd)
{
	struct master	 m;
	sigset_t	 old;
	char		 name[128];
	unsigned	 i;
	int		 rc = 0;

	db_serving();	/* the requests' database waits fit STOP_KILL */
	waits_warn(cfg);
	if (master_init(&m, cfg, path, fd) == -1) {
		listener_unlink();
		return 1;
	}
	master_signals(&old);
	metrics_workers(m.n);
	resume_pin(&m.cfg);
	for (i = 0; i < m.n && rc == 0; i++)
		rc = spawn(&m.cfg, fd, &m.kids[i], i);
	if (rc == 0)
		log_info("master: %u workers serving %s", m.n,
		    listener_name(fd, name, sizeof(name)));
	while (rc == 0 && !got_term) {
		sigsuspend(&old);
		if (got_term)
			break;
		got_chld = got_alrm = 0;
		reap(&m);
		if (got_hup) {
			got_hup = 0;
			(void)reload(&m);
		}
		kick_old(&m);
		refill(&m);
	}
	listener_unlink();	/* refuse new connections */
	retire_current(&m);	/* every generation stops together */
	listener_shutdown();	/* after the SIGTERMs: see listener.c */
	log_info("master: stopping %zu workers", m.nold);
	if (stop_all(m.old, m.nold) == -1)
		rc = -1;
	free(m.kids);
	free(m.old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc == 0 ? 0 : 1;
}
