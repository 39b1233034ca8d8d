/*
 * metrics.h - process-shared counters for GET /metrics.
 *
 * metrics_init maps one shared anonymous region before the workers are
 * forked; every worker adds to it with atomic operations and any worker
 * can render the Prometheus text. Without metrics_init the calls are
 * no-ops (the admin and expire tools).
 */
#ifndef ASYNCEXEC_METRICS_H
#define ASYNCEXEC_METRICS_H

struct buf;

int	metrics_init(void);
void	metrics_request(int route, int status, double seconds);
void	metrics_db_error(void);
void	metrics_db_reconnect(void);
int	metrics_render(struct buf *);

#endif
