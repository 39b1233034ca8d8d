/*
 * listener.h - the listening socket of asyncexec-fcgi (listener.c).
 *
 * serve layer: main_fcgi.c and master.c include it.
 */
#ifndef ASYNCEXEC_LISTENER_H
#define ASYNCEXEC_LISTENER_H

struct config;

int	listener_open(const struct config *, int *created);
void	listener_unlink(void);
void	listener_shutdown(void);

#endif
