/*
 * load.h - what the master tests (proc_master_faults, _load, _reload)
 * share beyond proc_util.h: a load of LOAD_THREADS raw FastCGI clients
 * (GET /healthz and POST submits, alternating; one request per
 * connection), starting a master and waiting for its workers, a
 * half-sent submit and the worker holding it, the master's log, and a
 * master running as an unused uid. Nothing in load.c asserts: the
 * tests' CHECKs do (up() and the helpers after it below are compiled
 * into each test, so that their CHECKs count there).
 */
#ifndef ASYNCEXEC_LOAD_H
#define ASYNCEXEC_LOAD_H

#include <sys/types.h>

#include <pthread.h>
#include <stddef.h>

#include "check.h"
#include "proc_util.h"

#define LOAD_THREADS	4
#define MAX_ACKS	20000	/* acknowledged submits kept per client */
#define SLOW_MS		3	/* a slow client's pause after connect */
#define NOGROUP		65534
#define HALF_SENT	10	/* bytes of HALF_BODY a half-sent submit sends */
#define HALF_BODY	"{\"n\":\"0123456789ab\"}"

/* load_start flags */
#define LOAD_STOP_ON_REFUSAL	0x1	/* a client stops when refused */
#define LOAD_SLOW		0x2	/* odd clients pause SLOW_MS (healthz) */
#define LOAD_ACKS		0x4	/* keep acknowledged submits (poll_back) */

/* What one load client saw; load_join sums them into a total. */
struct load {
	pthread_t	 tid;
	const char	*sock, *prefix;
	int		 no, flags;
	long		 answered;	/* whole answers (good or bad) */
	long		 refused, closed, half, bad;
	long		 failed;	/* in a total: the four above */
	int		 last_errno, bad_status;
	char		 why[160];	/* the last failure */
	char		(*acks)[2][96];	/* correlation id, token */
	long		 nacks;
};

struct holder_wait {
	pid_t	 master, pid;
	int	 client;	/* the held connection's fd (unix or TCP) */
};

struct log_wait {
	const char	*path, *needle;
};

/*
 * Starts the LOAD_THREADS clients of ls on sock; correlation ids
 * "PREFIX-PID-CLIENT-N"; flags LOAD_*. 0 or -1.
 */
int		 load_start(struct load *ls, const char *sock,
		    const char *prefix, int flags);
/* Stops and joins the clients; sums their outcomes into *t. */
void		 load_join(struct load *ls, struct load *t);
/* Waits (START_MS at most) for n more whole answers of the load. */
int		 load_more(const struct load *ls, long n);
/* Prints the "figure:" line of the total t. */
void		 load_report(const char *what, const struct load *t);
/* Polls every acknowledged submit of ls on sock; how many came back. */
long		 poll_back(const struct load *ls, const char *sock);
/* Frees the clients' ack lists. */
void		 load_free(struct load *ls);

/*
 * Starts a master for cfg as *as (NULL: as this process) and waits for
 * it to answer /healthz with n workers. Its pid; else -1, the log
 * dumped and the master killed.
 */
pid_t		 master_up(const char *cfg, const char *sock, const char *log,
		    size_t n, const struct run_as *as);
/* SIGTERM, then the exit status within ms (-1: none, or not clean). */
int		 term_and_wait(pid_t m, int ms, long long *took);
/*
 * Polls cond(arg) every 2 ms (the time is the figure) until it holds:
 * the ms since t0, or -1 after ms.
 */
long long	 time_until(int (*cond)(void *), void *arg, long long t0,
		    int ms);

/* A submit of HALF_BODY (correlation id cid), HALF_SENT bytes sent: fd or -1. */
int		 inflight_start(const char *sock, const char *cid);
/*
 * Sends the rest of the half-sent submit on fd and closes it: whether
 * the answer was a whole 202 with a poll token.
 */
int		 finish_inflight(int fd);
/*
 * Whether a worker of master (arg: struct holder_wait) holds the
 * half-sent submit on client; into pid: the worker blocked in read(2) on
 * the other end of that connection (sock_peer; none before a worker
 * accepted it), exact under any load.
 */
int		 holder(void *arg);

/* Whether the log (arg: struct log_wait) holds its needle. */
int		 logged(void *arg);

/* Live processes whose real uid is uid. */
size_t		 procs_of_uid(uid_t uid);
/* The first uid from base up that no process uses (no passwd entry). */
uid_t		 unused_uid(uid_t base);
/*
 * cfg (WORKERS workers) for a master running as uid: in tmpdir/NAME
 * (owned by uid, tmpdir made traversable), with the socket there and a
 * copy of the base's password file readable by uid. 0 or -1.
 */
int		 user_config(const char *name, uid_t uid, char *cfg, char *sock,
		    size_t sz);

/* A scenario of a test program, by the name its command line may give. */
struct scenario {
	const char	*name;
	void		(*run)(void);
};

/*
 * The test program: proc_init(name), SIGPIPE ignored, then the n
 * scenarios of sc in order (only the one named argv[1], if given),
 * then every master killed and tmpdir removed. 0, or -1 when
 * proc_init failed (nothing ran).
 */
int		 run_scenarios(const char *name, const struct scenario *sc,
		    size_t n, int argc, char *argv[]);

/* master_up in the calling test: a master that did not come up fails a CHECK. */
static inline pid_t
up(const char *cfg, const char *sock, const char *log, size_t n,
    const struct run_as *as)
{
	pid_t	 m;

	if ((m = master_up(cfg, sock, log, n, as)) == -1)
		CHECK(!"asyncexec-fcgi came up");
	return m;
}

/*
 * cfg derived from the base (n workers, listen sock), then up() as this
 * process: the master's pid, or -1. Either failing fails a CHECK.
 */
static inline pid_t
up_derived(const char *cfg, const char *sock, const char *log, size_t n)
{
	char	 wv[24];

	snprintf(wv, sizeof(wv), "%zu", n);
	CHECK_EQ_INT(derive_config(cfg, sock, wv, NULL), 0);
	return up(cfg, sock, log, n, NULL);
}

/*
 * The end of a scenario: SIGTERM to m, whose clean exit within STOP_MS
 * is CHECKed; the log at log dumped when any CHECK of this test failed.
 */
static inline void
down(pid_t m, const char *log)
{
	CHECK_EQ_INT(term_and_wait(m, STOP_MS, NULL), 0);
	if (check_fail_ > 0)
		dump_log(log);
}

/*
 * The main of a test program: run_scenarios(name, ...), then the
 * check_done(summary) line. The program's exit status.
 */
static inline int
scenarios_main(const char *name, const char *summary,
    const struct scenario *sc, size_t n, int argc, char *argv[])
{
	if (run_scenarios(name, sc, n, argc, argv) == -1)
		return 1;
	return check_done(summary);
}

#endif
