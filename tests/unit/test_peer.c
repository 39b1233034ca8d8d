/*
 * test_peer.c - listen_allow on the accepted connection (src/peer.c):
 * AF_INET peers as they are, v4-mapped peers of a dual-stack [::] socket
 * as their IPv4 address, native IPv6 peers never on the (IPv4) list,
 * unix peers always allowed; the listener kinds the master accepts.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"
#include "check.h"

/* A listener of family fam on loopback or any (dual: v6only off). */
static int
listener(int fam, int any, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in	*s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)ss;
	int			 fd = socket(fam, SOCK_STREAM, 0), off = 0;

	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)fam;
	if (fam == AF_INET)
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		s6->sin6_addr = any ? in6addr_any : in6addr_loopback;
	*len = fam == AF_INET ? sizeof(*s4) : sizeof(*s6);
	if (fd == -1 || (fam == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &off, sizeof(off)) == -1) ||
	    bind(fd, (struct sockaddr *)ss, *len) == -1 || listen(fd, 4) == -1 ||
	    getsockname(fd, (struct sockaddr *)ss, len) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Connects from family fam's loopback to the port of l (at ss) and
 * judges the accepted connection against allow; addr gets the text.
 */
static enum peer_verdict
judge(int l, const struct sockaddr_storage *ss, int fam, const char *allow,
    char *addr)
{
	struct sockaddr_storage	 to;
	socklen_t		 len;
	enum peer_verdict	 v = PEER_UNKNOWN;
	int			 c = socket(fam, SOCK_STREAM, 0), a = -1;
	in_port_t		 port = ss->ss_family == AF_INET ?
	    ((const struct sockaddr_in *)ss)->sin_port :
	    ((const struct sockaddr_in6 *)ss)->sin6_port;

	memset(&to, 0, sizeof(to));
	to.ss_family = (sa_family_t)fam;
	if (fam == AF_INET) {
		((struct sockaddr_in *)&to)->sin_addr.s_addr =
		    htonl(INADDR_LOOPBACK);
		((struct sockaddr_in *)&to)->sin_port = port;
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&to)->sin6_addr = in6addr_loopback;
		((struct sockaddr_in6 *)&to)->sin6_port = port;
		len = sizeof(struct sockaddr_in6);
	}
	if (c != -1 && connect(c, (struct sockaddr *)&to, len) == 0 &&
	    (a = accept(l, NULL, NULL)) != -1)
		v = peer_check(a, allow, addr, PEER_ADDR_MAX);
	if (a != -1)
		close(a);
	if (c != -1)
		close(c);
	return v;
}

int
main(void)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len;
	char			 addr[PEER_ADDR_MAX];
	int			 sp[2], l, pf[2];

	/* unix peers: not the list's business */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	CHECK(peer_check(sp[0], "", addr, sizeof(addr)) == PEER_ALLOWED);
	CHECK_EQ_STR(addr, "unix");
	CHECK(peer_listen_kind(sp[0]) == LISTEN_UNIX);
	close(sp[0]);
	close(sp[1]);

	/* AF_INET */
	CHECK((l = listener(AF_INET, 0, &ss, &len)) != -1);
	CHECK(peer_listen_kind(l) == LISTEN_IP);
	CHECK(judge(l, &ss, AF_INET, "127.0.0.1", addr) == PEER_ALLOWED);
	CHECK_EQ_STR(addr, "127.0.0.1");
	CHECK(judge(l, &ss, AF_INET, "10.0.0.1,127.0.0.1", addr) ==
	    PEER_ALLOWED);
	CHECK(judge(l, &ss, AF_INET, "127.0.0.2", addr) == PEER_REFUSED);
	CHECK(judge(l, &ss, AF_INET, "127.0.0.10", addr) == PEER_REFUSED);
	CHECK(judge(l, &ss, AF_INET, "", addr) == PEER_REFUSED);
	close(l);

	/* dual-stack [::]: IPv4 clients arrive v4-mapped */
	if ((l = listener(AF_INET6, 1, &ss, &len)) == -1) {
		printf("no IPv6 on this host: dual-stack cases skipped\n");
		return check_done("unit_peer");
	}
	CHECK(peer_listen_kind(l) == LISTEN_IP);
	CHECK(judge(l, &ss, AF_INET, "127.0.0.1", addr) == PEER_ALLOWED);
	CHECK_EQ_STR(addr, "127.0.0.1");
	CHECK(judge(l, &ss, AF_INET, "127.0.0.2", addr) == PEER_REFUSED);
	CHECK_EQ_STR(addr, "127.0.0.1");
	CHECK(judge(l, &ss, AF_INET6, "127.0.0.1", addr) == PEER_REFUSED);
	CHECK_EQ_STR(addr, "::1");
	close(l);

	/* what no peer can be read of, and what is no socket */
	CHECK(peer_check(l, "127.0.0.1", addr, sizeof(addr)) == PEER_UNKNOWN);
	CHECK(pipe(pf) == 0);
	CHECK(peer_listen_kind(pf[0]) == LISTEN_OTHER);
	close(pf[0]);
	close(pf[1]);
	return check_done("unit_peer");
}
