/*
 * worker.h - one FastCGI worker process and the master that forks them.
 */
#ifndef ASYNCEXEC_WORKER_H
#define ASYNCEXEC_WORKER_H

#include <sys/types.h>

struct config;

int	worker_run(const struct config *, int listen_fd, pid_t master);
int	master_listen(const struct config *, int *created);
int	master_run(const struct config *, const char *path, int listen_fd);

#endif
