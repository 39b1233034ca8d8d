/*
 * bench_http.c - HTTP/1.1 keep-alive client for the benchmark tools (see bench_http.h),
 * over the tests' TCP transport (tests/util/net.h).
 */
#include "bench_http.h"
#include "util/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_S	30
#define MAX_HEAD	(64 * 1024)
#define MAX_BODY	(16 * 1024 * 1024)

static void
grow(char **p, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 8192;

	if (need <= *cap)
		return;
	while (c < need)
		c *= 2;
	if ((*p = realloc(*p, c)) == NULL) {
		fprintf(stderr, "bench_http: out of memory\n");
		exit(1);
	}
	*cap = c;
}

void
hc_init(struct hconn *c, int port)
{
	memset(c, 0, sizeof *c);
	c->port = port;
	c->fd = -1;
}

static void
hc_disconnect(struct hconn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

void
hc_close(struct hconn *c)
{
	hc_disconnect(c);
	free(c->buf);
	free(c->body);
	c->buf = c->body = NULL;
	c->cap = c->body_cap = 0;
}

static int
hc_connect(struct hconn *c)
{
	struct sockaddr_in sa;
	int one = 1;

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((c->fd = ut_tcp_socket(IO_TIMEOUT_S)) < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (ut_connect_fd(c->fd, (struct sockaddr *)&sa, sizeof sa, IO_TIMEOUT_S) != 0) {
		fprintf(stderr, "bench_http: connect 127.0.0.1:%d: %s\n", c->port,
		    strerror(errno));
		hc_disconnect(c);
		return -1;
	}
	c->len = 0;
	return 0;
}

/* Reads more bytes into c->buf: >0 bytes read, 0 EOF, -1 error. */
static ssize_t
fill(struct hconn *c)
{
	ssize_t r;

	grow(&c->buf, &c->cap, c->len + 16384);
	do
		r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		c->len += (size_t)r;
	return r;
}

static const char *
find_head_end(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i + 3 < n; i++)
		if (p[i] == '\r' && memcmp(p + i, "\r\n\r\n", 4) == 0)
			return p + i;
	return NULL;
}

/* Header value (not NUL-terminated: up to the CR) of NAME within the head, or NULL. */
static const char *
head_value(const char *head, const char *end, const char *name)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', (size_t)(end - head));

	while (p != NULL && p + 1 < end) {
		p++;
		if ((size_t)(end - p) > nl + 1 && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			p += nl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
		p = memchr(p, '\n', (size_t)(end - p));
	}
	return NULL;
}

static void
set_body(struct hconn *c, const char *p, size_t n, int append)
{
	size_t off = append ? c->body_len : 0;

	grow(&c->body, &c->body_cap, off + n + 1);
	memcpy(c->body + off, p, n);
	c->body_len = off + n;
	c->body[c->body_len] = '\0';
}

/*
 * Parses a chunked body starting at p (n bytes available). Returns the bytes consumed when
 * complete, 0 when more is needed, -1 when malformed.
 */
static long
dechunk(struct hconn *c, const char *p, size_t n)
{
	size_t off = 0;

	c->body_len = 0;
	set_body(c, "", 0, 0);
	for (;;) {
		const char *eol = NULL;
		size_t i;
		unsigned long sz;
		char *after;

		for (i = off; i + 1 < n; i++)
			if (p[i] == '\r' && p[i + 1] == '\n') {
				eol = p + i;
				break;
			}
		if (eol == NULL)
			return n - off > 64 ? -1 : 0;
		if (!isxdigit((unsigned char)p[off]))
			return -1;
		sz = strtoul(p + off, &after, 16);
		if (after > eol || sz > MAX_BODY)
			return -1;
		off = (size_t)(eol - p) + 2;
		if (sz == 0) {
			/* no trailers expected: the final CRLF */
			if (n - off < 2)
				return 0;
			if (p[off] != '\r' || p[off + 1] != '\n')
				return -1;
			return (long)(off + 2);
		}
		if (n - off < sz + 2)
			return 0;
		set_body(c, p + off, sz, 1);
		off += sz + 2;
	}
}

/* Reads one response; 0 ok, -1 failed, -2 EOF before any byte (stale connection). */
static int
read_response(struct hconn *c, const char *method)
{
	const char *he, *v;
	size_t hlen, need;
	long cl = -1;
	int chunked = 0, close_after = 0;

	for (;;) {
		if (c->len > 0 && (he = find_head_end(c->buf, c->len)) != NULL)
			break;
		if (c->len > MAX_HEAD)
			return -1;
		ssize_t r = fill(c);

		if (r == 0 && c->len == 0)
			return -2;
		if (r <= 0) {
			fprintf(stderr, "bench_http: recv: %s\n",
			    r == 0 ? "connection closed" : strerror(errno));
			return -1;
		}
	}
	hlen = (size_t)(he - c->buf) + 4;
	if (c->len < 12 || strncmp(c->buf, "HTTP/1.", 7) != 0)
		return -1;
	c->status = atoi(c->buf + 9);
	if ((v = head_value(c->buf, he, "Content-Length")) != NULL)
		cl = strtol(v, NULL, 10);
	if ((v = head_value(c->buf, he, "Transfer-Encoding")) != NULL &&
	    strncasecmp(v, "chunked", 7) == 0)
		chunked = 1;
	if ((v = head_value(c->buf, he, "Connection")) != NULL && strncasecmp(v, "close", 5) == 0)
		close_after = 1;
	if (strcmp(method, "HEAD") == 0 || c->status == 204 || c->status == 304 ||
	    c->status < 200) {
		set_body(c, "", 0, 0);
		need = hlen;
	} else if (chunked) {
		long used;

		while ((used = dechunk(c, c->buf + hlen, c->len - hlen)) == 0) {
			/* he points into c->buf, which fill() may move: not used below */
			if (fill(c) <= 0)
				return -1;
		}
		if (used < 0)
			return -1;
		need = hlen + (size_t)used;
	} else if (cl >= 0) {
		if (cl > MAX_BODY)
			return -1;
		need = hlen + (size_t)cl;
		while (c->len < need)
			if (fill(c) <= 0)
				return -1;
		set_body(c, c->buf + hlen, (size_t)cl, 0);
	} else {
		/* body until EOF */
		ssize_t r;

		while ((r = fill(c)) > 0)
			;
		set_body(c, c->buf + hlen, c->len - hlen, 0);
		close_after = 1;
		need = c->len;
	}
	memmove(c->buf, c->buf + need, c->len - need);
	c->len -= need;
	if (close_after)
		hc_disconnect(c);
	return 0;
}

int
hc_request(struct hconn *c, const char *method, const char *path, const char *hdrs,
    const char *body, size_t body_len)
{
	char head[4096];
	int n, attempt, rc;

	n = snprintf(head, sizeof head,
	    "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s", method, path, hdrs ? hdrs : "",
	    body ? "Content-Type: application/json\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof head - 64) {
		fprintf(stderr, "bench_http: request head too long\n");
		return -1;
	}
	if (body != NULL)
		n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n",
		    body_len);
	n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
	for (attempt = 0; attempt < 2; attempt++) {
		int reused = c->fd >= 0;

		if (c->fd < 0 && hc_connect(c) != 0)
			return -1;
		if (ut_send_all(c->fd, head, (size_t)n) != 0 ||
		    (body != NULL && ut_send_all(c->fd, body, body_len) != 0)) {
			hc_disconnect(c);
			if (reused)
				continue;
			fprintf(stderr, "bench_http: send failed: %s\n", strerror(errno));
			return -1;
		}
		rc = read_response(c, method);
		if (rc == 0)
			return c->status;
		hc_disconnect(c);
		if (rc == -2 && reused)
			continue;
		fprintf(stderr, "bench_http: %s %.100s: no valid response\n", method, path);
		return -1;
	}
	return -1;
}
