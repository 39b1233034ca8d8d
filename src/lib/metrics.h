/*
 * metrics.h - process-shared counters and gauges for GET /metrics.
 *
 * metrics_init maps one shared anonymous region before the workers are
 * forked; every process adds to it with atomic operations and any worker
 * can render the Prometheus text. Endpoints are small integers named by
 * the caller (metrics knows nothing of the router). Without metrics_init
 * the calls are no-ops (the admin and expire tools).
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_METRICS_H
#define ASYNCEXEC_METRICS_H

#include <sys/types.h>

#include <stdint.h>

#define METRICS_MAX_ENDPOINTS	32
/*
 * Busy flags, one per live worker (asyncexec_workers_busy is their sum):
 * twice WORKERS_MAX, a generation and the old one still finishing its
 * requests after a reload. A worker forked when all are taken is not
 * counted.
 */
#define METRICS_WORKER_SLOTS	2048

struct buf;

/* Why a callback got 409 (asyncexec_callbacks_refused_total{reason}). */
enum refusal {
	REFUSED_STALE_TOKEN,
	REFUSED_TERMINAL,
	REFUSED_NO_CANCEL,
	REFUSED__MAX
};

int	metrics_init(const char *const *endpoint_names, int n);
void	metrics_request(int endpoint, int status, double seconds);
void	metrics_db_error(void);
void	metrics_db_reconnect(void);
void	metrics_workers(unsigned total);
void	metrics_worker_restart(void);
void	metrics_busy(int on);
void	metrics_worker_slot(void);
void	metrics_worker_forked(pid_t pid);
void	metrics_worker_reaped(pid_t pid);
void	metrics_refused(enum refusal);
int	metrics_render(struct buf *);
void	metrics_db_writer(uint64_t gen, unsigned node);
void	metrics_db_failover(void);

/* The host-wide figures of the dashboard's health page (metrics_snapshot). */
struct metrics_snap {
	uint64_t	 db_errors, db_reconnects;
	uint64_t	 workers, busy, restarts;
	uint64_t	 writer_index, failovers;
	uint64_t	 refused[REFUSED__MAX];
	uint64_t	 status_429;	/* answers 429, every endpoint */
};
int	metrics_snapshot(struct metrics_snap *);

#endif
