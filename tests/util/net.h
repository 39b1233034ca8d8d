/*
 * net.h - the tests' TCP transport (header only): an IPv4 "HOST:PORT"
 * parsed, a socket with I/O timeouts, a connect that a signal cannot
 * break, a send of everything. The HTTP client of the tests
 * (tests/http/httpc.c), the benchmark's keep-alive client
 * (tests/bench/bench_http.c) and the FastCGI client (tests/proc) build on it.
 */
#ifndef ASYNCEXEC_TEST_NET_H
#define ASYNCEXEC_TEST_NET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* "A.B.C.D:PORT" into *sa; 0, or -1 (errno EINVAL). */
static inline int
ut_parse_hostport(const char *hp, struct sockaddr_in *sa)
{
	const char	*colon = strrchr(hp, ':');
	char		 host[64];

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - hp) >= sizeof(host)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(host, hp, (size_t)(colon - hp));
	host[colon - hp] = '\0';
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* A TCP socket whose receive and send time out after timeout_s; or -1. */
static inline int
ut_tcp_socket(int timeout_s)
{
	struct timeval	 tv = { .tv_sec = timeout_s };
	int		 fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * connect(2) that a signal cannot break: an interrupted connect goes on in
 * the kernel (calling connect again would say EALREADY), so wait up to
 * timeout_s for the socket to become writable and take the connect's own
 * result from SO_ERROR. 0 when connected, -1 with errno otherwise.
 */
static inline int
ut_connect_fd(int fd, const struct sockaddr *sa, socklen_t len, int timeout_s)
{
	struct pollfd	 p = { .fd = fd, .events = POLLOUT };
	socklen_t	 el = sizeof(int);
	int		 r, err = 0;

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINTR)
		return -1;
	while ((r = poll(&p, 1, timeout_s * 1000)) < 0 && errno == EINTR)
		;
	if (r == 0)
		errno = ETIMEDOUT;
	if (r <= 0)
		return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
		return -1;
	errno = err;
	return err == 0 ? 0 : -1;
}

/* Sends all n bytes (signals resumed, no SIGPIPE); 0, or -1 when the
 * peer stopped taking them. */
static inline int
ut_send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t	 w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

#endif
