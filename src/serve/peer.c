/*
 * peer.c - the worker's accept on its listener (peer_accept on TCP,
 * peer_accept_unix), and listen_allow, enforced on the accepted
 * connection itself.
 *
 * listen_allow lists IPv4 addresses. A peer is read with getpeername(2)
 * on the accepted descriptor: an AF_INET peer is looked up as it is, an
 * AF_INET6 one that is v4-mapped (::ffff:a.b.c.d, how IPv4 clients
 * reach a dual-stack [::] socket such as systemd's ListenStream=PORT)
 * as its IPv4 address, any other IPv6 peer is never on the list, and a
 * unix peer is not the list's business (the socket file's mode is).
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

/* setsockopt of an int value on fd; 0 or -1 (errno). */
static int
opt(int fd, int level, int name, int value)
{
	return setsockopt(fd, level, name, &value, sizeof(value));
}

/*
 * Accepts the next connection on the TCP listener listen_fd (which is
 * non-blocking; the connection is not, and is close-on-exec) and sets
 * it up: TCP_NODELAY (libfcgi did that for AF_INET peers only),
 * keepalive, and reads and writes that fail after
 * PEER_IO_TIMEOUT_SECONDS. The connection's fd, or -1 (errno: EAGAIN
 * when none is waiting; ECONNABORTED when an option failed, the
 * connection closed: the peer is likely gone).
 */
int
peer_accept(int listen_fd)
{
	struct timeval	 tv = { PEER_IO_TIMEOUT_SECONDS, 0 };
	int		 fd;

	if ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return -1;
	if (opt(fd, IPPROTO_TCP, TCP_NODELAY, 1) == -1 ||
	    opt(fd, SOL_SOCKET, SO_KEEPALIVE, 1) == -1 ||
#ifdef TCP_KEEPIDLE
	    opt(fd, IPPROTO_TCP, TCP_KEEPIDLE, PEER_KEEPIDLE_SECONDS) == -1 ||
	    opt(fd, IPPROTO_TCP, TCP_KEEPINTVL, PEER_KEEPINTVL_SECONDS) ==
	    -1 || opt(fd, IPPROTO_TCP, TCP_KEEPCNT, PEER_KEEPCNT) == -1 ||
#endif
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1) {
		(void)close(fd);
		errno = ECONNABORTED;
		return -1;
	}
	return fd;
}

/*
 * Accepts the next connection on the unix listener listen_fd (which is
 * non-blocking; the connection is not, and is close-on-exec): no option
 * to set and no peer to check (the socket file's mode and group guard
 * it). The connection's fd, or -1 (errno: EAGAIN when none is waiting).
 */
int
peer_accept_unix(int listen_fd)
{
	return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/* The kind of the listening socket fd (getsockname's family). */
enum listen_kind
peer_listen_kind(int fd)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return LISTEN_OTHER;
	if (ss.ss_family == AF_UNIX)
		return LISTEN_UNIX;
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
		return LISTEN_IP;
	return LISTEN_OTHER;
}

/*
 * Whether in is one of the comma-separated IPv4 addresses of allow (an
 * entry that does not parse matches nothing; the configuration checked
 * them). 1 or 0.
 */
static int
on_list(const char *allow, const struct in_addr *in)
{
	const char	*p = allow;
	char		 one[INET_ADDRSTRLEN];
	struct in_addr	 a;
	size_t		 n;

	while (*p != '\0') {
		n = strcspn(p, ",");
		if (n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = '\0';
			if (inet_pton(AF_INET, one, &a) == 1 &&
			    a.s_addr == in->s_addr)
				return 1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

/*
 * Judges the peer of the accepted connection fd against allow (empty:
 * no IP peer is allowed). addr gets the peer's address as text ("unix"
 * for a unix peer, the IPv4 address for a v4-mapped one) for the log.
 */
enum peer_verdict
peer_check(int fd, const char *allow, char *addr, size_t addrsz)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&ss;
	struct in_addr		 in;
	socklen_t		 len = sizeof(ss);

	snprintf(addr, addrsz, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == -1)
		return PEER_UNKNOWN;
	if (ss.ss_family == AF_UNIX) {
		snprintf(addr, addrsz, "unix");
		return PEER_ALLOWED;
	}
	if (ss.ss_family == AF_INET)
		in = ((struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		memcpy(&in, &s6->sin6_addr.s6_addr[12], sizeof(in));
	else {
		if (ss.ss_family == AF_INET6)
			(void)inet_ntop(AF_INET6, &s6->sin6_addr, addr,
			    (socklen_t)addrsz);
		return PEER_REFUSED;
	}
	(void)inet_ntop(AF_INET, &in, addr, (socklen_t)addrsz);
	return on_list(allow, &in) ? PEER_ALLOWED : PEER_REFUSED;
}
