/*
 * dbproxy.c - TCP proxy with one-shot faults on a client packet pattern.
 */
#include "dbproxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ANSWER_WAIT_MS	10000	/* the server's answer to a fired packet */
#define ANSWER_QUIET_MS	500	/* and no more of it: the answer is whole */

static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;
static enum dbproxy_mode mode;
static char		 pattern[256], watched[256];
static int		 fired, seen, upstream, lfd;
static int		(*hook_when)(const unsigned char *, size_t);
static void		(*hook_fn)(void *);
static void		*hook_arg;
static int		(*drop_when)(const unsigned char *, size_t);
static int		 silent;

struct pipe2 {
	int		 c, s;		/* client, server */
	unsigned char	*buf;		/* client bytes not yet forwarded */
	size_t		 len, cap;
};

void
dbproxy_arm(enum dbproxy_mode m, const char *p)
{
	pthread_mutex_lock(&mu);
	mode = m;
	snprintf(pattern, sizeof pattern, "%s", p);
	pthread_mutex_unlock(&mu);
}

void
dbproxy_hook(const char *p, int (*when)(const unsigned char *, size_t),
    void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&mu);
	hook_when = when;
	hook_fn = fn;
	hook_arg = arg;
	mode = DBPROXY_HOOK;
	snprintf(pattern, sizeof pattern, "%s", p);
	pthread_mutex_unlock(&mu);
}

void
dbproxy_drop_when(int (*when)(const unsigned char *, size_t))
{
	pthread_mutex_lock(&mu);
	drop_when = when;
	pthread_mutex_unlock(&mu);
}

void
dbproxy_silence(int on)
{
	pthread_mutex_lock(&mu);
	silent = on;
	pthread_mutex_unlock(&mu);
}

/* Whether the proxy is silent (dbproxy_silence). */
static int
is_silent(void)
{
	int	 on;

	pthread_mutex_lock(&mu);
	on = silent;
	pthread_mutex_unlock(&mu);
	return on;
}

void
dbproxy_watch(const char *p)
{
	pthread_mutex_lock(&mu);
	snprintf(watched, sizeof watched, "%s", p);
	seen = 0;
	pthread_mutex_unlock(&mu);
}

int
dbproxy_seen(void)
{
	int	 n;

	pthread_mutex_lock(&mu);
	n = seen;
	pthread_mutex_unlock(&mu);
	return n;
}

int
dbproxy_fired(void)
{
	int	 n;

	pthread_mutex_lock(&mu);
	n = fired;
	pthread_mutex_unlock(&mu);
	return n;
}

static int
write_all(int fd, const void *p, size_t n)
{
	const unsigned char	*b = p;
	ssize_t			 w;

	while (n > 0) {
		if ((w = send(fd, b, n, MSG_NOSIGNAL)) <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The fault to fire for packet p of n bytes (disarms an armed one), or
 * DBPROXY_OFF. */
static enum dbproxy_mode
match(const unsigned char *p, size_t n)
{
	enum dbproxy_mode	 m = DBPROXY_OFF;

	pthread_mutex_lock(&mu);
	if (watched[0] != '\0' && memmem(p, n, watched, strlen(watched)))
		seen++;
	if (silent) {
		m = DBPROXY_SILENT;
		fired++;
	} else if (mode != DBPROXY_OFF &&
	    memmem(p, n, pattern, strlen(pattern)) &&
	    (mode != DBPROXY_HOOK || hook_when(p, n))) {
		m = mode;
		mode = DBPROXY_OFF;
		fired++;
	} else if (drop_when != NULL && drop_when(p, n)) {
		m = DBPROXY_DROP;
		fired++;
	}
	pthread_mutex_unlock(&mu);
	return m;
}

/* Waits for (and discards) the start of the server's answer. */
static void
swallow_answer(int s)
{
	struct pollfd	 pf = { s, POLLIN, 0 };
	unsigned char	 b[4096];

	if (poll(&pf, 1, ANSWER_WAIT_MS) == 1)
		(void)recv(s, b, sizeof b, 0);
}

/*
 * Passes the first half of the server's answer on to the client: of all
 * that arrives until ANSWER_QUIET_MS pass without more (ANSWER_WAIT_MS for
 * its start).
 */
static void
cut_answer(struct pipe2 *x)
{
	struct pollfd	 pf = { x->s, POLLIN, 0 };
	unsigned char	*b = NULL, *nb;
	size_t		 n = 0, cap = 0;
	ssize_t		 r;

	while (poll(&pf, 1, n == 0 ? ANSWER_WAIT_MS : ANSWER_QUIET_MS) == 1) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 1 << 17;
			if ((nb = realloc(b, cap)) == NULL)
				break;
			b = nb;
		}
		if ((r = recv(x->s, b + n, cap - n, 0)) <= 0)
			break;
		n += (size_t)r;
	}
	if (n > 1)
		(void)write_all(x->c, b, n / 2);
	free(b);
}

/* Forwards the complete client packets in x->buf; -1 when a fault fired. */
static int
forward_packets(struct pipe2 *x)
{
	size_t	 n;

	while (x->len >= 4) {
		n = 4 + (x->buf[0] | x->buf[1] << 8 | (size_t)x->buf[2] << 16);
		if (x->len < n)
			break;
		switch (match(x->buf, n)) {
		case DBPROXY_LOSE_ANSWER:
			if (write_all(x->s, x->buf, n) == 0)
				swallow_answer(x->s);
			return -1;
		case DBPROXY_DROP:
			return -1;
		case DBPROXY_CUT_ANSWER:
			if (write_all(x->s, x->buf, n) == 0)
				cut_answer(x);
			return -1;
		case DBPROXY_HOOK:
			hook_fn(hook_arg);	/* disarmed: nobody changes it */
			break;
		case DBPROXY_SILENT:
			memmove(x->buf, x->buf + n, x->len - n);
			x->len -= n;
			continue;
		case DBPROXY_OFF:
			break;
		}
		if (write_all(x->s, x->buf, n) == -1)
			return -1;
		memmove(x->buf, x->buf + n, x->len - n);
		x->len -= n;
	}
	return 0;
}

/* Reads client bytes into x->buf and forwards whole packets; 0 or -1. */
static int
from_client(struct pipe2 *x)
{
	ssize_t	 r;

	if (x->cap - x->len < 65536) {
		x->cap = x->cap ? x->cap * 2 : 1 << 17;
		if ((x->buf = realloc(x->buf, x->cap)) == NULL)
			return -1;
	}
	if ((r = recv(x->c, x->buf + x->len, x->cap - x->len, 0)) <= 0)
		return -1;
	x->len += (size_t)r;
	return forward_packets(x);
}

static void *
relay(void *arg)
{
	struct pipe2	*x = arg;
	struct pollfd	 pf[2] = { { x->c, POLLIN, 0 }, { x->s, POLLIN, 0 } };
	unsigned char	 b[65536];
	ssize_t		 r;

	for (;;) {
		if (poll(pf, 2, -1) <= 0)
			continue;
		if (pf[0].revents && from_client(x) == -1)
			break;
		if (pf[1].revents) {
			if ((r = recv(x->s, b, sizeof b, 0)) <= 0 ||
			    (!is_silent() && write_all(x->c, b, (size_t)r) ==
			    -1))
				break;
		}
	}
	close(x->c);
	close(x->s);
	free(x->buf);
	free(x);
	return NULL;
}

/* Connects to the upstream server; the fd or -1. */
static int
dial(void)
{
	struct sockaddr_in	 a;
	int			 fd;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)upstream);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *
acceptor(void *arg)
{
	struct pipe2	*x;
	pthread_t	 th;
	int		 c, s;

	(void)arg;
	for (;;) {
		if ((c = accept(lfd, NULL, NULL)) == -1)
			continue;
		if ((s = dial()) == -1 || (x = calloc(1, sizeof *x)) == NULL) {
			close(c);
			if (s != -1)
				close(s);
			continue;
		}
		x->c = c;
		x->s = s;
		if (pthread_create(&th, NULL, relay, x) != 0) {
			close(c);
			close(s);
			free(x);
			continue;
		}
		pthread_detach(th);
	}
	return NULL;
}

int
dbproxy_start(int upstream_port)
{
	struct sockaddr_in	 a;
	socklen_t		 len = sizeof a;
	pthread_t		 th;
	int			 one = 1;

	upstream = upstream_port;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) == -1 ||
	    listen(lfd, 64) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) == -1 ||
	    pthread_create(&th, NULL, acceptor, NULL) != 0) {
		close(lfd);
		return -1;
	}
	pthread_detach(th);
	return ntohs(a.sin_port);
}
