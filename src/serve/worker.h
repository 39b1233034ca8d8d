/*
 * worker.h - one FastCGI worker process, forked by the master (worker.c).
 *
 * serve layer: master.c includes it. The accept loop goes through the
 * http layer's conn.h (libfcgi's accept and finish), the request and
 * the response through http.h: no file here includes <fcgiapp.h>.
 */
#ifndef ASYNCEXEC_WORKER_H
#define ASYNCEXEC_WORKER_H

#include <sys/types.h>

struct config;

/* A worker still running this long after its first SIGTERM gets SIGKILL
 * from the master (the unit's TimeoutStopSec: 30 s); a worker ends its
 * retire window early enough for a request started in it to end first. */
#define STOP_KILL_SECONDS	25

int	worker_run(const struct config *, int listen_fd, pid_t master);
int	worker_waits_fit(const struct config *, char *err, size_t size);

#endif
