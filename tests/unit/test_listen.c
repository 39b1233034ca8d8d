/*
 * Unit tests of the webhook sender's loopback listener (notify/listen.c)
 * on a real loopback socket: a client whose request comes in while the
 * sender's loop was away longer than LISTEN_IO_TIMEOUT_MS (a pass slow in
 * the database) is still answered once its bytes are there; one that
 * sent nothing by then is closed unanswered. An accept that fails for
 * want of descriptors (EMFILE) takes the listening socket out of the
 * loop's poll for LISTEN_ACCEPT_PAUSE_MS (else it is ready at once
 * again: the loop spins); the waiting client is answered after it.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
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

/*
 * With descriptors to spare again, a connection that waited while an
 * accept failed EMFILE is answered once the pause ends; during it no fd
 * of l is ready (the listening socket is not watched).
 */
static void
test_accept_pause(struct listener *l, unsigned port)
{
	struct pollfd	 pf[LISTEN_FDS_MAX];
	struct rlimit	 was, low;
	char		 got[512];
	int64_t		 wake, now;
	size_t		 n;
	int		 c = dial(port), next;

	CHECK(c != -1);
	CHECK_EQ_INT((int)write(c, REQ, strlen(REQ)), (int)strlen(REQ));
	CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &was), 0);
	next = dup(0);		/* the lowest free descriptor */
	close(next);
	low = was;
	low.rlim_cur = (rlim_t)next;	/* no descriptor is free below it */
	CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
	listen_serve(l, ok_fn, NULL);	/* accept fails EMFILE */
	CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &was), 0);
	now = clock_mono_ms();
	n = listen_fds(l, pf, &wake);
	CHECK_EQ_INT(poll(pf, n, 0), 0);	/* nothing to spin on */
	CHECK(wake > now && wake <= now + LISTEN_ACCEPT_PAUSE_MS);
	CHECK_EQ_INT(poll(pf, n, (int)(wake - now)), 0);
	listen_serve(l, ok_fn, NULL);	/* the pause is over: accepted */
	CHECK(drain(c, got, sizeof(got)) > 0);
	CHECK(strncmp(got, "HTTP/1.1 200 OK\r\n", 17) == 0);
	close(c);
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
	test_accept_pause(&l, port);
	listen_close(&l);
	return check_done("unit_listen");
}
