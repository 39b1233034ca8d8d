/*
 * peer.h - the FastCGI listener's family and the peer of an accepted
 * connection against listen_allow, for every family (libfcgi's own
 * FCGI_WEB_SERVER_ADDRS check sees AF_INET peers only).
 *
 * serve layer: listener.c, master.c and worker.c.
 */
#ifndef ASYNCEXEC_PEER_H
#define ASYNCEXEC_PEER_H

#include <stddef.h>

/* What kind of socket a listener is: whether peer_check can judge it. */
enum listen_kind {
	LISTEN_UNIX,		/* AF_UNIX: the file's mode and group guard it */
	LISTEN_IP,		/* AF_INET or AF_INET6: listen_allow guards it */
	LISTEN_OTHER		/* anything else, or not a socket: refused */
};

/* Whether an accepted connection's peer may be served. */
enum peer_verdict {
	PEER_ALLOWED,		/* a unix peer, or an address of the list */
	PEER_REFUSED,		/* an address not on the list, another family */
	PEER_UNKNOWN		/* getpeername failed: the peer is gone */
};

#define PEER_ADDR_MAX	64	/* an IPv6 address in text, with room */

/*
 * How long a read or a write on an accepted TCP connection may wait for
 * the peer (SO_RCVTIMEO, SO_SNDTIMEO): a request whose peer went silent
 * (nginx on another host gone, a partition) does not hold its worker
 * for ever, and below the stop deadline's room (worker.h).
 */
#define PEER_IO_TIMEOUT_SECONDS	5
/* TCP keepalive on accepted connections: idle, then probes, seconds */
#define PEER_KEEPIDLE_SECONDS	60
#define PEER_KEEPINTVL_SECONDS	10
#define PEER_KEEPCNT		3

enum listen_kind	 peer_listen_kind(int fd);
int			 peer_accept(int listen_fd);
int			 peer_accept_unix(int listen_fd);
enum peer_verdict	 peer_check(int fd, const char *allow, char *addr,
			    size_t addrsz);

#endif
