/*
 * listen.c - the sender's loopback /healthz, /readyz and /metrics
 * (listen.h).
 *
 * Nothing here waits: the sender's loop watches the fds listen_fds gives
 * (with its transfers') and calls listen_serve after each wait, which
 * accepts at most LISTEN_ACCEPT_MAX connections, reads what each client
 * sent (non-blocking), answers a complete request head, writes what the
 * socket takes and closes a client once answered, when it closed, sent
 * too much or LISTEN_IO_TIMEOUT_MS after its accept. With the table
 * full, a newer connection closes the oldest once that one has had
 * LISTEN_GRACE_MS (a flood of silent clients cannot hold every entry
 * for long, nor close a client's before its request could arrive); else
 * it waits in the backlog. So a client that sends nothing, or trickles,
 * costs the loop a few system calls, never a wait. After an accept that
 * failed for want of descriptors (or memory) the listening socket is
 * left out of the poll for LISTEN_ACCEPT_PAUSE_MS: it stays ready, and
 * the loop would spin on it.
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "accept.h"
#include "clock.h"
#include "config.h"
#include "listen.h"
#include "log.h"

/*
 * Listens on addrport ("127.0.0.1:9466", non-blocking) into l, with no
 * client. 0, or -1 with the reason in err (l closed).
 */
int
listen_open(struct listener *l, const char *addrport, char *err,
    size_t errsz)
{
	struct sockaddr_in	 sa;
	char			 host[64];
	unsigned		 port;
	int			 fd, on = 1;
	size_t			 i;

	l->fd = -1;
	l->accept_after = 0;
	for (i = 0; i < LISTEN_CLIENTS_MAX; i++) {
		l->c[i].fd = -1;
		buf_init(&l->c[i].out);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	if (config_listen_tcp(addrport, host, sizeof(host), &port) == -1 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errsz, "notify_listen: expected IPV4ADDRESS:PORT, "
		    "such as 127.0.0.1:9466");
		return -1;
	}
	sa.sin_port = htons((unsigned short)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, 16) == -1) {
		snprintf(err, errsz, "notify_listen %s: %s", addrport,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	l->fd = fd;
	return 0;
}


/* Closes client c: its entry is free. */
static void
client_close(struct listen_client *c)
{
	close(c->fd);
	c->fd = -1;
	buf_free(&c->out);
}

/* Closes l's connections and l. */
void
listen_close(struct listener *l)
{
	size_t	 i;

	if (l->fd == -1)
		return;
	for (i = 0; i < LISTEN_CLIENTS_MAX; i++)
		if (l->c[i].fd != -1)
			client_close(&l->c[i]);
	close(l->fd);
	l->fd = -1;
}

/*
 * Puts the answer to request head req into out: GET or HEAD of a path
 * (fn's answer), else 405; the head, and for GET the body. 0, or -1 when
 * out could not hold it.
 */
static int
answer(const char *req, listen_fn fn, void *arg, struct buf *out)
{
	struct buf	 body;
	char		 path[256];
	unsigned	 status;
	int		 is_head = strncmp(req, "HEAD ", 5) == 0;

	buf_init(&body);
	if ((strncmp(req, "GET ", 4) != 0 && !is_head) ||
	    sscanf(req + (is_head ? 5 : 4), "%255s", path) != 1) {
		status = 405;
		buf_puts(&body, "only GET and HEAD\n");
	} else
		status = fn(arg, path, &body);
	if (buf_failed(&body)) {
		buf_reset(&body);
		status = 503;
	}
	buf_printf(out, "HTTP/1.1 %u %s\r\nContent-Type: "
	    "text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu"
	    "\r\nConnection: close\r\n\r\n", status, status == 200 ? "OK" :
	    status == 404 ? "Not Found" : status == 405 ?
	    "Method Not Allowed" : "Service Unavailable", body.len);
	if (!is_head)
		buf_append(out, body.data, body.len);
	buf_free(&body);
	return buf_failed(out) ? -1 : 0;
}

/* Whether errno says only that the socket is not ready. */
static int
not_ready(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/*
 * Moves client c on without waiting: reads what arrived (one read),
 * answers once the head is complete, writes what the socket takes. 0
 * while it goes on, -1 when it is done with (answered, closed by the
 * client, failed or too long): the caller closes it.
 */
static int
client_move(struct listen_client *c, listen_fn fn, void *arg)
{
	ssize_t	 k;

	if (!c->answering) {
		k = read(c->fd, c->req + c->n, sizeof(c->req) - 1 - c->n);
		if (k == 0 || (k == -1 && !not_ready()))
			return -1;
		if (k == -1)
			return 0;
		c->n += (size_t)k;
		c->req[c->n] = '\0';
		if (strstr(c->req, "\r\n\r\n") == NULL &&
		    strstr(c->req, "\n\n") == NULL)
			return c->n < sizeof(c->req) - 1 ? 0 : -1;
		if (answer(c->req, fn, arg, &c->out) == -1)
			return -1;
		c->answering = 1;
		c->n = 0;
	}
	if ((k = write(c->fd, c->out.data + c->n, c->out.len - c->n)) == -1)
		return not_ready() ? 0 : -1;
	c->n += (size_t)k;
	return k > 0 && c->n < c->out.len ? 0 : -1;
}

/*
 * client_move, then the deadline: a client still going on at
 * LISTEN_IO_TIMEOUT_MS after its accept is done with. What arrived is
 * read (and answered) first, so a pass that kept the loop away longer
 * than that (the database slow) never drops a request that is there.
 * 0 or -1 as client_move.
 */
static int
client_step(struct listen_client *c, listen_fn fn, void *arg, int64_t now)
{
	int	 rc = client_move(c, fn, arg);

	return rc == 0 && now - c->since >= LISTEN_IO_TIMEOUT_MS ? -1 : rc;
}

/*
 * The entry of l a new connection takes at now: a free one, else the
 * oldest client's once it has had LISTEN_GRACE_MS (the caller closes
 * it). NULL when there is none (the connection waits in the backlog).
 */
static struct listen_client *
entry_for_new(struct listener *l, int64_t now)
{
	struct listen_client	*old = NULL;
	size_t			 i;

	for (i = 0; i < LISTEN_CLIENTS_MAX; i++) {
		if (l->c[i].fd == -1)
			return &l->c[i];
		if (old == NULL || l->c[i].since < old->since)
			old = &l->c[i];
	}
	return now - old->since >= LISTEN_GRACE_MS ? old : NULL;
}

/*
 * An accept on l failed (errno): unless accept_transient, logged, and
 * none tried for LISTEN_ACCEPT_PAUSE_MS.
 */
static void
accept_failed(struct listener *l, int64_t now)
{
	if (accept_transient(errno))
		return;
	log_warn("notify: notify_listen: accept failed: %s; none tried for "
	    "%d ms", strerror(errno), LISTEN_ACCEPT_PAUSE_MS);
	l->accept_after = now + LISTEN_ACCEPT_PAUSE_MS;
}

/*
 * Moves every client of l on (client_step), then accepts up to
 * LISTEN_ACCEPT_MAX waiting connections, each read at once. Never waits.
 */
void
listen_serve(struct listener *l, listen_fn fn, void *arg)
{
	struct listen_client	*c;
	int64_t			 now = clock_mono_ms();
	size_t			 i;
	int			 fd;

	for (i = 0; i < LISTEN_CLIENTS_MAX; i++)
		if (l->c[i].fd != -1 && client_step(&l->c[i], fn, arg,
		    now) == -1)
			client_close(&l->c[i]);
	for (i = 0; i < LISTEN_ACCEPT_MAX && l->fd != -1 &&
	    now >= l->accept_after; i++) {
		if ((c = entry_for_new(l, now)) == NULL)
			return;
		if ((fd = accept4(l->fd, NULL, NULL,
		    SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1) {
			accept_failed(l, now);
			return;
		}
		if (c->fd != -1)
			client_close(c);
		c->fd = fd;
		c->answering = 0;
		c->since = now;
		c->n = 0;
		buf_init(&c->out);
		if (client_step(c, fn, arg, now) == -1)
			client_close(c);
	}
}

/*
 * Fills pf (LISTEN_FDS_MAX entries) with the fds whose readiness
 * listen_serve waits for: every client's (to read, or to write its
 * answer), the listening socket's unless accepts pause (accept_failed)
 * or the table is full of clients younger than LISTEN_GRACE_MS. *wake: the time (clock_mono_ms) after
 * which listen_serve has work even with no fd ready (a deadline, or an
 * entry that may be taken), INT64_MAX if none. The number of fds.
 */
size_t
listen_fds(const struct listener *l, struct pollfd *pf, int64_t *wake)
{
	const struct listen_client	*c;
	int64_t				 now = clock_mono_ms();
	int64_t				 oldest = INT64_MAX;
	size_t				 i, n = 0;
	int				 full = 1;

	*wake = INT64_MAX;
	for (i = 0; i < LISTEN_CLIENTS_MAX && l->fd != -1; i++) {
		if ((c = &l->c[i])->fd == -1) {
			full = 0;
			continue;
		}
		pf[n].fd = c->fd;
		pf[n].events = c->answering ? POLLOUT : POLLIN;
		pf[n++].revents = 0;
		if (c->since + LISTEN_IO_TIMEOUT_MS < *wake)
			*wake = c->since + LISTEN_IO_TIMEOUT_MS;
		if (c->since < oldest)
			oldest = c->since;
	}
	if (l->fd == -1)
		return 0;
	if (now < l->accept_after) {
		if (l->accept_after < *wake)
			*wake = l->accept_after;
		return n;
	}
	if (full && now - oldest < LISTEN_GRACE_MS) {
		if (oldest + LISTEN_GRACE_MS < *wake)
			*wake = oldest + LISTEN_GRACE_MS;
		return n;
	}
	pf[n].fd = l->fd;
	pf[n].events = POLLIN;
	pf[n++].revents = 0;
	return n;
}
