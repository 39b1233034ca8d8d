/*
 * listener.h - the listening socket of asyncexec-fcgi (listener.c).
 *
 * serve layer: main_fcgi.c and master.c include it.
 */
#ifndef ASYNCEXEC_LISTENER_H
#define ASYNCEXEC_LISTENER_H

#include <stddef.h>

struct config;

int	listener_open(const struct config *, int *created);
void	listener_unlink(void);
void	listener_shutdown(void);
const char *listener_name(int fd, char *buf, size_t size);

#endif
