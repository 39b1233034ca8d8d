/*
 * listen.c - the sender's loopback /healthz, /readyz and /metrics.
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

#include "clock.h"
#include "config.h"
#include "listen.h"

/*
 * Listens on addrport ("127.0.0.1:9466", non-blocking). The socket, or
 * -1 with the reason in err.
 */
int
listen_open(const char *addrport, char *err, size_t errsz)
{
	struct sockaddr_in	 sa;
	char			 host[64];
	unsigned		 port;
	int			 fd, on = 1;

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
	return fd;
}

/*
 * Waits until client c can be read (events POLLIN) or written (POLLOUT),
 * at most until deadline (clock_mono_ms). 1 when it can, 0 or -1 when
 * the deadline passed or the wait failed.
 */
static int
wait_io(int c, short events, int64_t deadline)
{
	struct pollfd	 p = { c, events, 0 };
	int64_t		 left;
	int		 k;

	for (;;) {
		if ((left = deadline - clock_mono_ms()) <= 0)
			return 0;
		k = poll(&p, 1, (int)left);
		if (k == -1 && errno == EINTR)
			continue;
		return k;
	}
}

/*
 * Reads a request head into req (NUL-terminated) from non-blocking c,
 * all of it before deadline. Its length, or -1 (an error, the client
 * closed, the head too long, or the deadline passed).
 */
static ssize_t
read_head(int c, char *req, size_t sz, int64_t deadline)
{
	size_t	 n = 0;
	ssize_t	 k;

	while (n < sz - 1) {
		if ((k = read(c, req + n, sz - 1 - n)) == 0)
			return -1;
		if (k == -1) {
			if ((errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR) || wait_io(c, POLLIN, deadline) != 1)
				return -1;
			continue;
		}
		n += (size_t)k;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL || strstr(req, "\n\n"))
			return (ssize_t)n;
	}
	return -1;
}

/* Writes all of p to non-blocking c before deadline; 0 or -1. */
static int
write_all(int c, const char *p, size_t n, int64_t deadline)
{
	ssize_t	 k;

	while (n > 0) {
		if ((k = write(c, p, n)) == -1) {
			if ((errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR) || wait_io(c, POLLOUT, deadline) != 1)
				return -1;
			continue;
		}
		if (k == 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Answers one client (non-blocking c): GET or HEAD of a path, else 405;
 * the request read and the answer written within LISTEN_IO_TIMEOUT_MS,
 * else nothing more is done (the caller closes c).
 */
static void
serve_one(int c, listen_fn fn, void *arg)
{
	struct buf	 body;
	char		 req[LISTEN_REQUEST_MAX], path[256], head[256];
	unsigned	 status;
	int		 is_head;
	int64_t		 deadline = clock_mono_ms() + LISTEN_IO_TIMEOUT_MS;

	if (read_head(c, req, sizeof(req), deadline) == -1)
		return;
	buf_init(&body);
	is_head = strncmp(req, "HEAD ", 5) == 0;
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
	snprintf(head, sizeof(head), "HTTP/1.1 %u %s\r\nContent-Type: "
	    "text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu"
	    "\r\nConnection: close\r\n\r\n", status, status == 200 ? "OK" :
	    status == 404 ? "Not Found" : status == 405 ?
	    "Method Not Allowed" : "Service Unavailable", body.len);
	if (write_all(c, head, strlen(head), deadline) == 0 && !is_head)
		(void)write_all(c, body.data, body.len, deadline);
	buf_free(&body);
}

/*
 * Answers the clients waiting on listening socket fd, one by one, each
 * within LISTEN_IO_TIMEOUT_MS; accepts no more once that long has passed
 * since the call (the rest wait for the next call).
 */
void
listen_serve(int fd, listen_fn fn, void *arg)
{
	int64_t	 until = clock_mono_ms() + LISTEN_IO_TIMEOUT_MS;
	int	 c;

	while (clock_mono_ms() < until && (c = accept4(fd, NULL, NULL,
	    SOCK_CLOEXEC | SOCK_NONBLOCK)) != -1) {
		serve_one(c, fn, arg);
		close(c);
	}
}
