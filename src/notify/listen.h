/*
 * listen.h - the sender's own loopback HTTP endpoint: GET /healthz,
 * /readyz and /metrics, one short request per connection, answered from
 * the sender's loop (so an answer is a snapshot between two transfers'
 * steps) without ever waiting for a client: up to LISTEN_CLIENTS_MAX
 * connections are kept at once, each read as its bytes arrive, answered
 * once its request head is complete and closed LISTEN_IO_TIMEOUT_MS
 * after its accept whatever it sent. An accept that fails other than
 * for want of a connection (EMFILE: descriptors used up) is logged and
 * none is tried for LISTEN_ACCEPT_PAUSE_MS.
 *
 * notify layer: the notify folder only.
 */
#ifndef ASYNCEXEC_NOTIFY_LISTEN_H
#define ASYNCEXEC_NOTIFY_LISTEN_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define LISTEN_REQUEST_MAX	2048	/* bytes of a request head read */
#define LISTEN_IO_TIMEOUT_MS	1000	/* a client's request and answer, all */
#define LISTEN_CLIENTS_MAX	32	/* connections kept at once; a newer
					 * one closes the oldest ... */
#define LISTEN_GRACE_MS		100	/* ... once that had this long */
#define LISTEN_ACCEPT_MAX	8	/* connections accepted per call */
#define LISTEN_ACCEPT_PAUSE_MS	1000	/* no accept after one failed (EMFILE) */
#define LISTEN_FDS_MAX		(LISTEN_CLIENTS_MAX + 1)

/* One connection (the fields are listen.c's). */
struct listen_client {
	int		 fd;		/* -1: a free entry */
	int		 answering;	/* 1: out is being written */
	int64_t		 since;		/* accepted (clock_mono_ms) */
	size_t		 n;		/* bytes of req read, of out written */
	struct buf	 out;		/* the answer */
	char		 req[LISTEN_REQUEST_MAX];
};

/* The listening socket and its connections (the fields are listen.c's). */
struct listener {
	int			 fd;	/* -1: not open */
	int64_t			 accept_after;	/* clock_mono_ms */
	struct listen_client	 c[LISTEN_CLIENTS_MAX];
};

/* Answers path: the status, and the text into body. */
typedef unsigned (*listen_fn)(void *arg, const char *path, struct buf *body);

int	listen_open(struct listener *, const char *addrport, char *err,
	    size_t errsz);
void	listen_close(struct listener *);
size_t	listen_fds(const struct listener *, struct pollfd *, int64_t *wake);
void	listen_serve(struct listener *, listen_fn, void *arg);

#endif
