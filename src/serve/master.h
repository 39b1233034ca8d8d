/*
 * master.h - the master of asyncexec-fcgi: forks the workers, respawns,
 * reloads and stops them (master.c).
 *
 * serve layer: main_fcgi.c includes it.
 */
#ifndef ASYNCEXEC_MASTER_H
#define ASYNCEXEC_MASTER_H

#include <stddef.h>

struct config;

int	master_run(const struct config *, const char *path, int listen_fd);
/* Blocks the signals master_run handles (main, before anything else). */
void	master_block_signals(void);
/* Whether cfg's database waits leave a request room before the stop
 * deadline: 0 (fits) or -1 (the warning start and reload log), the text
 * in msg (size bytes); --check-config prints it (check_run's extra). */
int	master_waits_check(const struct config *, char *msg, size_t size);

#endif
