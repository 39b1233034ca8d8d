/*
 * util/port.h - a loopback TCP port where nothing listens, for the tests that
 * need a dead database node or a fresh address to listen on (header
 * only: each test program is one file).
 */
#ifndef ASYNCEXEC_TEST_PORT_H
#define ASYNCEXEC_TEST_PORT_H

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A port of 127.0.0.1 bound, then closed (0 on failure). */
static inline unsigned
test_free_port(void)
{
	struct sockaddr_in	 sa;
	socklen_t		 len = sizeof(sa);
	int			 fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned		 port = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd != -1 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd != -1)
		close(fd);
	return port;
}

#endif
