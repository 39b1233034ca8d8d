/*
 * conn.c - libfcgi's accept, finish and shutdown behind struct conn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <fcgiapp.h>

#include "conn.h"

struct conn {
	FCGX_Request	 fr;
};

/*
 * Prepares the request slot on listen_fd (accept interrupted by a
 * signal returns instead of restarting; -1: the slot never accepts, it
 * reads only what conn_give hands it). The conn, or NULL (libfcgi or
 * memory failed).
 */
struct conn *
conn_new(int listen_fd)
{
	struct conn	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if (FCGX_Init() != 0 ||
	    FCGX_InitRequest(&c->fr, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

/*
 * Accepts the next request (on the kept or given connection, or a new
 * one). CONN_ACCEPTED; CONN_CLOSED for a slot without a listener (conn_new
 * -1) when that connection ended, failed or timed out before a whole
 * request (libfcgi closed it, then its accept on -1 failed); CONN_AGAIN
 * after EINTR, EAGAIN or EWOULDBLOCK (a signal, or another worker took
 * the connection); CONN_FAILED (errno).
 */
enum conn_accept
conn_accept(struct conn *c)
{
	if (FCGX_Accept_r(&c->fr) >= 0)
		return CONN_ACCEPTED;
	if (c->fr.listen_sock < 0)
		return CONN_CLOSED;
	if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
		return CONN_AGAIN;
	return CONN_FAILED;
}

/* The socket of the open connection (accepted or kept), or -1. */
int
conn_fd(const struct conn *c)
{
	return c->fr.ipcFd;
}

/*
 * Hands the connected socket fd (checked by the caller) to c, which has
 * none: the next conn_accept reads its request from it, as from a kept
 * connection (keepConnection set, or the FCGX_Finish_r that
 * FCGX_Accept_r begins with would close it).
 */
void
conn_give(struct conn *c, int fd)
{
	c->fr.ipcFd = fd;
	c->fr.keepConnection = 1;
}

/* The libfcgi request, for req_from_params and resp_write. */
void *
conn_io(struct conn *c)
{
	return &c->fr;
}

/*
 * Reads the rest of the request's input in to its end, DRAIN_MAX bytes
 * at most. Whether its end was reached (without a read error).
 */
static int
drained(FCGX_Stream *in)
{
	char	 b[4096];
	size_t	 n = 0;
	int	 k;

	while (n <= DRAIN_MAX && (k = FCGX_GetStr(b, (int)sizeof(b), in)) > 0)
		n += (size_t)k;
	return n <= DRAIN_MAX && FCGX_HasSeenEOF(in) == EOF &&
	    FCGX_GetError(in) == 0;
}

/*
 * Ends the accepted request (its streams flushed to the web server). The
 * connection stays open only when the web server asked for that and the
 * request's input is read to its end: an answer given before the body
 * was read (a 401, 404 or 413, a 503 without the database) reads past
 * the rest first, up to DRAIN_MAX, since records left unread would be
 * taken for the next request's (libfcgi discards none). Closing instead
 * would cross the request nginx sends next on the connection, which it
 * takes back as soon as the answer has come: nginx answers that one 502.
 */
void
conn_finish(struct conn *c)
{
	if (c->fr.keepConnection && c->fr.in != NULL && !drained(c->fr.in))
		c->fr.keepConnection = 0;
	FCGX_Finish_r(&c->fr);
}

/*
 * Whether the web server has closed the kept connection (EOF waiting on
 * it; no byte is consumed).
 */
int
conn_closed(const struct conn *c)
{
	char	 b;

	return c->fr.ipcFd >= 0 &&
	    recv(c->fr.ipcFd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/*
 * Closes the kept connection, if any: libfcgi shuts its sending side down
 * and reads until the web server has closed its end (2 s at most).
 */
void
conn_drop(struct conn *c)
{
	if (c->fr.ipcFd >= 0)
		FCGX_Free(&c->fr, 1);
}

void
conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	FCGX_Free(&c->fr, 1);
	free(c);
}

/*
 * Tells libfcgi to accept no more (async-signal-safe: it sets a flag);
 * the SIGTERM handler calls it.
 */
void
conn_shutdown_pending(void)
{
	FCGX_ShutdownPending();
}
