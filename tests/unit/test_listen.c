/*
 * Unit tests of the webhook sender's loopback listener (notify/listen.c)
 * on a real loopback socket: a client whose request comes in while the
 * sender's loop was away longer than LISTEN_IO_TIMEOUT_MS (a pass slow in
 * the database) is still answered once its bytes are there; one that
 * sent nothing by then is closed unanswered.
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "listen.h"
#include "util/clock.h"
#include "util/port.h"

#define REQ	"GET /healthz HTTP/1.0\r\n\r\n"

/* Answers every path 200 "ok". */
static unsigned
ok_fn(void *arg, const char *path, struct buf *body)
{
	(void)arg;
	(void)path;
	buf_puts(body, "ok\n");
	return 200;
}

/* A connection to 127.0.0.1:port, or -1. */
static int
dial(unsigned port)
{
	struct sockaddr_in	 sa;
	int			 fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd != -1 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What fd holds within 2 s into buf (until its end): bytes read, -1 none. */
static ssize_t
drain(int fd, char *buf, size_t size)
{
	struct pollfd	 p = { fd, POLLIN, 0 };
	ssize_t		 n = 0, k;

	while (n < (ssize_t)size - 1 && poll(&p, 1, 2000) == 1 &&
	    (k = read(fd, buf + n, size - 1 - (size_t)n)) > 0)
		n += k;
	buf[n < 0 ? 0 : n] = '\0';
	return n;
}

int
main(void)
{
	struct listener	 l;
	char		 addr[32], err[128], got[512];
	unsigned	 port = test_free_port();
	int		 late, silent;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK(port != 0);
	CHECK_EQ_INT(listen_open(&l, addr, err, sizeof(err)), 0);
	late = dial(port);
	silent = dial(port);
	CHECK(late != -1 && silent != -1);
	listen_serve(&l, ok_fn, NULL);	/* both accepted, nothing to read */
	ut_pause_ms(LISTEN_IO_TIMEOUT_MS + 200);	/* the loop away */
	CHECK_EQ_INT((int)write(late, REQ, strlen(REQ)), (int)strlen(REQ));
	listen_serve(&l, ok_fn, NULL);
	CHECK(drain(late, got, sizeof(got)) > 0);
	CHECK(strncmp(got, "HTTP/1.1 200 OK\r\n", 17) == 0);
	CHECK(strstr(got, "\r\n\r\nok\n") != NULL);
	CHECK_EQ_INT((int)drain(silent, got, sizeof(got)), 0);	/* closed */
	close(late);
	close(silent);
	listen_close(&l);
	return check_done("unit_listen");
}
