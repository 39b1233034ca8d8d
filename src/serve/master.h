/*
 * master.h - the master of asyncexec-fcgi: forks the workers, respawns,
 * reloads and stops them (master.c).
 *
 * serve layer: main_fcgi.c includes it.
 */
#ifndef ASYNCEXEC_MASTER_H
#define ASYNCEXEC_MASTER_H

struct config;

int	master_run(const struct config *, const char *path, int listen_fd);

#endif
