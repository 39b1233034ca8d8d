/*
 * proc_util.h - shared helpers of the process-level tests: starting
 * asyncexec-fcgi masters (each in its own process group, SIGKILLed and
 * reaped on every exit path), reading /proc, derived configurations and
 * bounded waits. Nothing here asserts: the tests' CHECKs do.
 */
#ifndef ASYNCEXEC_PROC_UTIL_H
#define ASYNCEXEC_PROC_UTIL_H

#include "util/clock.h"
#include <sys/types.h>

#include <stddef.h>

#define WORKERS		2
#define WORKERS_STR	"2"	/* the `workers` value written to the configs */
#define TICK_MS		20
#define START_MS	15000	/* socket up, workers forked */
#define RESPAWN_MS	10000	/* a replaced worker is up again */
#define STOP_MS		10000	/* SIGTERM to exit */
#define REQ_MS		10000	/* one FastCGI request */
#define MAX_PIDS	64

extern const char	*fcgi_bin, *admin_bin, *base_cfg;
extern char		 tmpdir[256];

struct pstat {
	char	 state;
	pid_t	 ppid, pgrp;
};

struct exit_wait {
	pid_t	 pid;
};

struct up_wait {
	pid_t		 pid;
	const char	*sock;
	int		 status;
};

struct n_workers {
	pid_t	 master;
	size_t	 want;
};

/* Who a started master runs as: uid/gid (-1: unchanged), RLIMIT_NPROC (0: as is). */
struct run_as {
	long	 uid, gid;
	unsigned long nproc;
};

/*
 * Reads ASYNCEXEC_FCGI, ASYNCEXEC_ADMIN, ASYNCEXEC_TEST_CONFIG, makes
 * tmpdir and installs the clean-up (atexit, fatal signals). 0 or -1.
 */
int		 proc_init(const char *name);

void		 kill_master(pid_t pid);
void		 kill_all(void);
/* Polls cond(arg) every TICK_MS until it holds (1) or ms pass (0). */
int		 wait_for(int (*cond)(void *), void *arg, int ms);
char		*path_in_tmp(const char *name);
char		*read_file(const char *path);
int		 write_file(const char *path, const char *text);
/* How many times the file at path holds needle (0 when unreadable). */
int		 log_count(const char *path, const char *needle);
int		 exists(const char *path);
int		 is_socket_file(const char *path);
void		 dump_log(const char *path);
const char	*config_value(const char *text, const char *want);
int		 derive_config(const char *dst, const char *listen,
		    const char *workers_value, unsigned *workers_line);
/* As derive_config; extra ("key = value\n" lines) replaces the base's keys. */
int		 derive_config_x(const char *dst, const char *listen,
		    const char *workers_value, const char *extra,
		    unsigned *workers_line);
int		 proc_stat(pid_t pid, struct pstat *ps);
int		 alive(pid_t pid);
/*
 * Calls match(pid, arg) for every process in /proc; the pids it matched
 * (1) into pids (up to max, in /proc order). Returns how many matched.
 */
size_t		 proc_walk(int (*match)(pid_t, void *), void *arg,
		    pid_t *pids, size_t max);
/*
 * Live (non-zombie) processes whose parent (by_group 0) or process
 * group (by_group 1) is id, except id itself, into pids (sorted by
 * /proc order). Returns the count.
 */
size_t		 scan(pid_t id, int by_group, pid_t *pids, size_t max);
/* Children of master that have exited and were not reaped (zombies). */
size_t		 zombies_of(pid_t master);
size_t		 workers_of(pid_t master, pid_t *pids, size_t max);
int		 has_pid(const pid_t *pids, size_t n, pid_t pid);
long		 blocked_in(pid_t pid);
/* Whether pid is blocked in read(2) on the socket of inode ino. */
int		 reading_socket(pid_t pid, unsigned long ino);
/*
 * The inode of the other end of connected socket fd (unix or TCP), or 0
 * when it cannot tell and while the server has not accepted it.
 */
unsigned long	 sock_peer(int fd);
int		 in_accept(long nr);
unsigned long long signal_mask(pid_t pid, const char *field);
pid_t		 start_master(const char *cfg, const char *log, int stdin_fd);
pid_t		 start_master_as(const char *cfg, const char *log, int stdin_fd,
		    const struct run_as *as);
/* As start_master, listen_fd passed as fd 3 the way systemd does (LISTEN_PID, LISTEN_FDS). */
pid_t		 start_master_systemd(const char *cfg, const char *log,
		    int listen_fd);
int		 has_exited(void *arg);
int		 wait_master_exit(pid_t pid, int ms);
int		 healthz(const char *sock);
int		 answers(void *arg);
int		 has_n_workers(void *arg);
/* Whether master *(pid_t *)arg waits in an open(2) after main's first step. */
int		 in_open(void *arg);
/* A write lease on path: its opens wait until lease_end(fd). fd or -1. */
int		 lease(const char *path);
void		 lease_end(int fd);
int		 run(char *const argv[], char *out, char *err, size_t size,
		    int ms);
const char	*admin(const char *a1, const char *a2, const char *a3,
		    const char *a4);
void		 remove_tmpdir(void);

/*
 * A route and a consumer key for this test process, made once with
 * asyncexec-admin: *uri is the route's submit URI, *auth the
 * "Bearer ak_..." header value. 0 or -1.
 */
int		 proc_route_key(const char **uri, const char **auth);
/*
 * Starts a submit of body (correlation id cid) on a new connection to
 * sock, sending only its first `sent` bytes (all of it: the request is
 * complete). The fd, or -1.
 */
int		 submit_start(const char *sock, const char *cid,
		    const char *body, size_t sent, long long deadline);

#endif
