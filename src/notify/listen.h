/*
 * listen.h - the sender's own loopback HTTP endpoint: GET /healthz,
 * /readyz and /metrics, one short request at a time, answered from the
 * sender's loop (so an answer is a snapshot between two transfers' steps).
 *
 * notify layer: the notify folder only.
 */
#ifndef ASYNCEXEC_NOTIFY_LISTEN_H
#define ASYNCEXEC_NOTIFY_LISTEN_H

#include <stddef.h>

#include "buf.h"

#define LISTEN_REQUEST_MAX	2048	/* bytes of a request head read */
#define LISTEN_IO_TIMEOUT_MS	1000	/* a client's request and answer, all */

/* Answers path: the status, and the text into body. */
typedef unsigned (*listen_fn)(void *arg, const char *path, struct buf *body);

int	listen_open(const char *addrport, char *err, size_t errsz);
void	listen_serve(int fd, listen_fn, void *arg);

#endif
