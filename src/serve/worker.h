/*
 * worker.h - one FastCGI worker process, forked by the master (worker.c).
 *
 * serve layer: master.c includes it.
 */
#ifndef ASYNCEXEC_WORKER_H
#define ASYNCEXEC_WORKER_H

#include <sys/types.h>

struct config;

int	worker_run(const struct config *, int listen_fd, pid_t master);

#endif
