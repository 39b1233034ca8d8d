/*
 * worker.h - one FastCGI worker process, forked by the master (worker.c).
 *
 * serve layer: master.c includes it. worker.c is the one file outside
 * the http layer that includes <fcgiapp.h>: the accept loop
 * (FCGX_Accept_r, the peer check on the accepted socket) lives there;
 * the request and the response go through http.h.
 */
#ifndef ASYNCEXEC_WORKER_H
#define ASYNCEXEC_WORKER_H

#include <sys/types.h>

struct config;

int	worker_run(const struct config *, int listen_fd, pid_t master);

#endif
