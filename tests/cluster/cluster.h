/*
 * cluster.h - shared parts of the cluster tests (label cluster, run by
 * scripts/test-cluster.sh): the cluster control script, a load of client
 * threads that submit, claim and complete through nginx while the test
 * kills something, the classification of every answer, and the checks
 * that every acknowledged submit and every 200 callback is still there,
 * over HTTP and in the rows of one database node.
 *
 * Environment (scripts/test-cluster.sh): ASYNCEXEC_TEST_HTTP (nginx, round
 * robin over both app hosts), ASYNCEXEC_TEST_HTTP_A/_B (one host each),
 * ASYNCEXEC_TEST_CONFIG (host A's config: db_hosts, the database user),
 * ASYNCEXEC_TEST_CLUSTERCTL, ASYNCEXEC_TEST_METRICS/_METRICS_B.
 * Nothing here asserts: the tests' CHECKs do.
 */
#ifndef ASYNCEXEC_CLUSTER_H
#define ASYNCEXEC_CLUSTER_H

#include <stdint.h>

#include <mysql.h>

#include "util/clock.h"
#include "fixture.h"

struct config;

#define CL_MAX_ACKED	200000
#define CL_MAX_THREADS	16

/* One execution the load submitted: state and what the service acknowledged. */
struct cl_exec {
	int	 acked;		/* a 202 came back */
	int	 completed;	/* a complete came back 200 */
	char	 token[96];	/* the last poll token handed out */
	char	 result[64];	/* the result member sent, when completed */
};

/* Counters of the load; every answer is one of ok, r503 or bad. */
struct cl_stats {
	long long	 ok, r503, bad, s500, s502, s504, s0, retries;
	long long	 acked, completed;
	int64_t		 last_bad_ms;	/* monotonic time of the last bad answer */
};

/* Reads the environment and host A's config; installs the exit hook. */
void		 cl_init(void);
/* "$ASYNCEXEC_TEST_CLUSTERCTL ARGS"; its exit status (-1: none). Its stdout
 * (echoed with a prefix) is kept for cl_ctl_out(). */
int		 cl_ctl(const char *args);
const char	*cl_ctl_out(void);
/* Clusterctl ARGS (e.g. "node-start 1", under CL_RESTORE_MAX bytes) runs from the
 * exit hook if the test ends before cl_restore(SLOT 0..3, NULL) clears it again. */
#define CL_RESTORE_MAX	64
void		 cl_restore(int slot, const char *args);

/* Starts THREADS load threads on F through ASYNCEXEC_TEST_HTTP, plus with
 * PROBES one submitter per app host (A and B) for cl_probe_first_ok(). */
void		 cl_load_start(const struct fx *f, int threads, int probes);
void		 cl_load_stop(void);
void		 cl_stats(struct cl_stats *);
/* Waits (at most BOUND_MS) until N more acknowledged submits than
 * AFTER_ACKED and M more 200 completes than AFTER_DONE; 1 when reached. */
int		 cl_wait_progress(long long after_acked, long long n,
		    long long after_done, long long m, long bound_ms);
/* cl_load_start(F, THREADS, PROBES), then the warm-up: waits (at most 30 s) for
 * ACKED acknowledged submits and DONE 200 completes; 1 when reached. The stats at
 * its end into S0 either way. */
int		 cl_load_warm(const struct fx *f, int threads, int probes,
		    long long acked, long long done, struct cl_stats *s0);
/* From now on the probes note their first 202 to a request sent after this
 * moment; cl_probe_first_ok(H) gives it (ms on ut_now_ms()) or 0. */
void		 cl_probe_mark(void);
int64_t		 cl_probe_first_ok(int host);

/* Polls every acknowledged execution (alternately through A and B): the
 * number not found, or found with another status / result than answered. */
long		 cl_verify_http(const struct fx *f);
/* The same in the rows of node N (wsrep_sync_wait=1), -1 when unreachable. */
long		 cl_verify_node(const struct fx *f, int n);
/* Row count and checksum of the whole execution table on node N (at most
 * BOUND_MS for the connection); 0, or -1 when unreachable. */
int		 cl_node_checksum(int n, long long *rows, unsigned long long *sum);

/* Host A's configuration (db_hosts, the database user), read by cl_init. */
const struct config *cl_config(void);
/* A session on node N (1..3) as the application's user, wsrep_sync_wait=1; NULL
 * on failure (said on stderr). */
MYSQL		*cl_node_open(int n);
/* The integer the one-row query Q on M answers (its first column), or -1 (the
 * error said on stderr). */
long long	 cl_num(MYSQL *m, const char *q);
/* A file "SET GLOBAL VAR = WAS;" of its own that the exit hook runs on nodes 1..NODES
 * (cl_restore slots 0..NODES-1) if the test ends before cl_restore_global_done(NODES)
 * clears them and removes the file; 1 when set up. */
int		 cl_restore_global(const char *var, long long was, int nodes);
void		 cl_restore_global_done(int nodes);
/* Runs printf-style SQL on M; 1 when it succeeded (else said on stderr). */
int		 cl_sqlf(MYSQL *m, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
/* How many executions of environment ENV with correlation id prefix TAG- are in
 * status ST ("" any); -1 on error. */
long long	 cl_count(MYSQL *m, const char *env, const char *tag, const char *st);
/* Runs asyncexec-expire once with host A's configuration, its output echoed;
 * said[i] 1 when a line holds want[i] (want: NULL-terminated; NULL: none looked
 * for). Its exit status, -1 when it did not exit. */
int		 cl_run_expire(const char *const *want, int *said);
/* Runs SQL as root on node N (clusterctl node-sql, from a file): its exit status. */
int		 cl_node_sql(int n, const char *sql);

/* Value of metric NAME through metrics address ENV_NAME's value, -1 if none. */
long		 cl_metric(const char *env_name, const char *name);
/* Status of GET PATH through the nginx address in ENV_NAME's value. */
int		 cl_get_status(const char *env_name, const char *path);

/* "clusterctl master-kill HOST", run again (at most twice) when it exits 2: its
 * scan of /proc for the master's workers fails when a process exits meanwhile
 * (awk cannot open that /proc/PID/stat), before it sends SIGKILL. Its exit status. */
int		 cl_master_kill(const char *host);
/* Waits at most BOUND_MS until both hosts report asyncexec_db_writer_index WANT. */
int		 cl_writers_at(long want, long bound_ms);
/* Brings a host pinned to another node than node 1 back (its master reloaded, as
 * the operator would after a repair); 1 when both are on node 1. */
int		 cl_writers_home(void);

#endif
