/*
 * conn.h - the FastCGI connection a worker accepts on its listening
 * socket: libfcgi's request behind an opaque handle, so that the accept
 * loop (serve/worker.c) needs no <fcgiapp.h>.
 *
 * conn_new prepares one request slot on a listening socket; each
 * conn_accept that answers CONN_ACCEPTED is followed by one conn_finish
 * (which answers the web server and, when it asked for keep-alive and
 * the request was read to its end, keeps the connection: conn_fd is then
 * its socket, and the next conn_accept reads the next request from it
 * instead of accepting). conn_closed tells whether the web server has
 * closed a kept connection, conn_drop closes one. conn_io is what
 * req_from_params and resp_write take.
 *
 * conn_new(-1) makes a slot that never accepts itself, as the worker's
 * are on every listener: the worker accepts (on TCP checks the peer)
 * first, then conn_give hands the connection over (libfcgi reads nothing
 * from a peer not checked, and a worker that finds no connection takes
 * no slot).
 *
 * http layer: serve/worker.c includes it.
 */
#ifndef ASYNCEXEC_CONN_H
#define ASYNCEXEC_CONN_H

/*
 * Bytes of a request's unread body that conn_finish reads past to keep
 * its connection: over nginx/asyncexec.conf's largest
 * client_max_body_size (4m). Past them it closes the connection.
 */
#define DRAIN_MAX	(8 * 1024 * 1024)

struct conn;

/* What one accept did. */
enum conn_accept {
	CONN_ACCEPTED,		/* a request is there: serve, then finish */
	CONN_AGAIN,		/* interrupted or nothing there: try again */
	CONN_CLOSED,		/* conn_new(-1): the connection ended (or went
				 * silent) before a request; it is closed */
	CONN_FAILED		/* accept failed (errno) */
};

struct conn	*conn_new(int listen_fd);
enum conn_accept conn_accept(struct conn *);
int		 conn_fd(const struct conn *);
void		 conn_give(struct conn *, int fd);
void		*conn_io(struct conn *);
void		 conn_finish(struct conn *);
int		 conn_closed(const struct conn *);
void		 conn_drop(struct conn *);
void		 conn_free(struct conn *);
void		 conn_shutdown_pending(void);

#endif
