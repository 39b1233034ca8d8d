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
 * signal returns instead of restarting). The conn, or NULL (libfcgi or
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
 * Accepts the next request (on the kept connection, or a new one).
 * CONN_ACCEPTED; CONN_AGAIN after EINTR, EAGAIN or EWOULDBLOCK (a
 * signal, or another worker took the connection); CONN_FAILED (errno).
 */
enum conn_accept
conn_accept(struct conn *c)
{
	if (FCGX_Accept_r(&c->fr) >= 0)
		return CONN_ACCEPTED;
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
 * Shuts the accepted connection down unanswered: conn_finish then sends
 * the peer nothing and does not keep the connection.
 */
void
conn_close_unanswered(struct conn *c)
{
	(void)shutdown(c->fr.ipcFd, SHUT_RDWR);
	c->fr.keepConnection = 0;
}

/* The libfcgi request, for req_from_params and resp_write. */
void *
conn_io(struct conn *c)
{
	return &c->fr;
}

/*
 * Ends the accepted request (its streams flushed to the web server). The
 * connection stays open only when the web server asked for that and the
 * request's input was read to its end: records left unread would be
 * taken for the next request's (libfcgi discards none).
 */
void
conn_finish(struct conn *c)
{
	if (c->fr.keepConnection && c->fr.in != NULL &&
	    FCGX_GetChar(c->fr.in) != EOF)
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
