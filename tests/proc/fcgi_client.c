/*
 * fcgi_client.c - a tiny FastCGI client for the process-level tests:
 * FCGI_BEGIN_REQUEST, FCGI_PARAMS, FCGI_STDIN out; FCGI_STDOUT,
 * FCGI_STDERR and FCGI_END_REQUEST in. Request id 1, one request per
 * connection unless FCGI_KEEP_CONN is asked for. Every wait is a
 * poll(2) bounded by the caller's deadline.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fcgi_client.h"
#include "util/net.h"

#define FCGI_VERSION_1		1
#define FCGI_BEGIN_REQUEST	1
#define FCGI_END_REQUEST	3
#define FCGI_PARAMS		4
#define FCGI_STDIN		5
#define FCGI_STDOUT		6
#define FCGI_STDERR		7
#define FCGI_RESPONDER		1
#define FCGI_KEEP_CONN		1
#define REQ_ID			1
#define MAX_CONTENT		65535

/* Waits for events on fd until deadline; 1 ready, 0 timeout, -1 error. */
static int
wait_fd(int fd, short events, long long deadline_ms)
{
	struct pollfd	 p;
	long long	 left;
	int		 rc;

	for (;;) {
		left = deadline_ms - ut_now_ms();
		if (left < 0)
			left = 0;
		p.fd = fd;
		p.events = events;
		p.revents = 0;
		rc = poll(&p, 1, (int)left);
		if (rc > 0)
			return 1;
		if (rc == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int
write_all(int fd, const void *data, size_t len, long long deadline_ms)
{
	const char	*p = data;
	ssize_t		 n;

	while (len > 0) {
		if (wait_fd(fd, POLLOUT, deadline_ms) != 1)
			return -1;
		n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes; 0, or -1 on EOF, error or deadline. */
static int
read_all(int fd, void *data, size_t len, long long deadline_ms)
{
	char	*p = data;
	ssize_t	 n;

	while (len > 0) {
		if (wait_fd(fd, POLLIN, deadline_ms) != 1)
			return -1;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (n == 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A stream socket of family connected to sa; the fd, or -1 (errno set). */
static int
stream_connect(int family, const struct sockaddr *sa, socklen_t len)
{
	int	 fd;

	if ((fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, sa, len) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Connects to IPv4 ADDRESS:PORT; the fd, or -1 (errno set). */
static int
tcp_connect(const char *addr)
{
	struct sockaddr_in	 sa;

	if (ut_parse_hostport(addr, &sa) == -1)
		return -1;
	return stream_connect(AF_INET, (struct sockaddr *)&sa, sizeof(sa));
}

/* One record of type with len (<= MAX_CONTENT) content bytes. */
int
fcgi_record(int fd, int type, const void *data, size_t len,
    long long deadline_ms)
{
	unsigned char	 h[8];

	h[0] = FCGI_VERSION_1;
	h[1] = (unsigned char)type;
	h[2] = (REQ_ID >> 8) & 0xff;
	h[3] = REQ_ID & 0xff;
	h[4] = (unsigned char)((len >> 8) & 0xff);
	h[5] = (unsigned char)(len & 0xff);
	h[6] = 0;			/* padding */
	h[7] = 0;
	if (write_all(fd, h, sizeof(h), deadline_ms) == -1)
		return -1;
	return len == 0 ? 0 : write_all(fd, data, len, deadline_ms);
}

int
fcgi_connect(const char *path)
{
	struct sockaddr_un	 sa;

	if (path[0] != '/')
		return tcp_connect(path);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	return stream_connect(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa));
}

/* FCGI_BEGIN_REQUEST, role responder, with flags (FCGI_KEEP_CONN or 0). */
static int
begin(int fd, unsigned char flags, long long deadline_ms)
{
	unsigned char	 b[8] = { 0, FCGI_RESPONDER, 0 };

	b[2] = flags;
	return fcgi_record(fd, FCGI_BEGIN_REQUEST, b, sizeof(b), deadline_ms);
}

int
fcgi_begin(int fd, long long deadline_ms)
{
	return begin(fd, 0, deadline_ms);
}

int
fcgi_begin_keep(int fd, long long deadline_ms)
{
	return begin(fd, FCGI_KEEP_CONN, deadline_ms);
}

/* Appends the FastCGI length encoding of n to p; returns bytes used. */
static size_t
put_len(unsigned char *p, size_t n)
{
	if (n < 128) {
		p[0] = (unsigned char)n;
		return 1;
	}
	p[0] = (unsigned char)(((n >> 24) & 0x7f) | 0x80);
	p[1] = (unsigned char)((n >> 16) & 0xff);
	p[2] = (unsigned char)((n >> 8) & 0xff);
	p[3] = (unsigned char)(n & 0xff);
	return 4;
}

int
fcgi_params(int fd, const char *const *kv, size_t n, long long deadline_ms)
{
	unsigned char	*buf, *p;
	size_t		 i, total = 0, len, off;
	int		 rc = 0;

	for (i = 0; i < n; i++)
		total += 8 + strlen(kv[2 * i]) + strlen(kv[2 * i + 1]);
	if ((buf = malloc(total + 1)) == NULL)
		return -1;
	p = buf;
	for (i = 0; i < n; i++) {
		size_t	 kl = strlen(kv[2 * i]), vl = strlen(kv[2 * i + 1]);

		p += put_len(p, kl);
		p += put_len(p, vl);
		memcpy(p, kv[2 * i], kl);
		p += kl;
		memcpy(p, kv[2 * i + 1], vl);
		p += vl;
	}
	len = (size_t)(p - buf);
	for (off = 0; rc == 0 && off < len; off += MAX_CONTENT)
		rc = fcgi_record(fd, FCGI_PARAMS, buf + off,
		    len - off > MAX_CONTENT ? MAX_CONTENT : len - off,
		    deadline_ms);
	free(buf);
	if (rc == 0)
		rc = fcgi_record(fd, FCGI_PARAMS, NULL, 0, deadline_ms);
	return rc;
}

int
fcgi_stdin(int fd, const void *data, size_t len, long long deadline_ms)
{
	const char	*p = data;
	size_t		 chunk;

	if (len == 0)
		return fcgi_record(fd, FCGI_STDIN, NULL, 0, deadline_ms);
	while (len > 0) {
		chunk = len > MAX_CONTENT ? MAX_CONTENT : len;
		if (fcgi_record(fd, FCGI_STDIN, p, chunk, deadline_ms) == -1)
			return -1;
		p += chunk;
		len -= chunk;
	}
	return 0;
}

/* Appends len bytes to *dst (length *dlen), keeping a NUL after them. */
static int
append(char **dst, size_t *dlen, const unsigned char *src, size_t len)
{
	char	*n;

	if ((n = realloc(*dst, *dlen + len + 1)) == NULL)
		return -1;
	memcpy(n + *dlen, src, len);
	*dlen += len;
	n[*dlen] = '\0';
	*dst = n;
	return 0;
}

/* Finds the end of the header block; sets body and status. */
static void
parse_head(struct fcgi_resp *r)
{
	char	*end, *s;
	int	 sep = 4;

	r->status = 0;
	r->body = NULL;
	r->body_len = 0;
	if (r->out == NULL)
		return;
	if ((end = strstr(r->out, "\r\n\r\n")) == NULL) {
		if ((end = strstr(r->out, "\n\n")) == NULL)
			return;
		sep = 2;
	}
	r->body = end + sep;
	r->body_len = r->out_len - (size_t)(r->body - r->out);
	if (strncmp(r->out, "Status: ", 8) == 0 &&
	    isdigit((unsigned char)r->out[8]) &&
	    isdigit((unsigned char)r->out[9]) &&
	    isdigit((unsigned char)r->out[10]) &&
	    (r->out[11] == ' ' || r->out[11] == '\r')) {
		s = r->out + 8;
		r->status = (s[0] - '0') * 100 + (s[1] - '0') * 10 +
		    (s[2] - '0');
	}
}

int
fcgi_read(int fd, struct fcgi_resp *r, long long deadline_ms)
{
	unsigned char	 h[8], content[MAX_CONTENT + 255];
	size_t		 clen, plen;

	memset(r, 0, sizeof(*r));
	for (;;) {
		if (read_all(fd, h, sizeof(h), deadline_ms) == -1)
			break;
		clen = ((size_t)h[4] << 8) | h[5];
		plen = h[6];
		if (h[0] != FCGI_VERSION_1 ||
		    read_all(fd, content, clen + plen, deadline_ms) == -1)
			break;
		if (h[1] == FCGI_STDOUT) {
			if (append(&r->out, &r->out_len, content, clen) == -1)
				break;
		} else if (h[1] == FCGI_STDERR) {
			if (append(&r->err, &r->err_len, content, clen) == -1)
				break;
		} else if (h[1] == FCGI_END_REQUEST && clen >= 8) {
			r->ended = 1;
			r->app_status = ((unsigned)content[0] << 24) |
			    ((unsigned)content[1] << 16) |
			    ((unsigned)content[2] << 8) | content[3];
			r->proto_status = content[4];
			break;
		}
	}
	parse_head(r);
	return r->ended ? 0 : -1;
}

size_t
fcgi_base_params(const char **kv, const char *method, const char *uri,
    const char *content_type, const char *clen)
{
	size_t	 n = 0;

	kv[2 * n] = "REQUEST_METHOD", kv[2 * n + 1] = method, n++;
	kv[2 * n] = "REQUEST_URI", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SCRIPT_NAME", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SERVER_PROTOCOL", kv[2 * n + 1] = "HTTP/1.1", n++;
	if (content_type != NULL) {
		kv[2 * n] = "CONTENT_TYPE", kv[2 * n + 1] = content_type, n++;
		kv[2 * n] = "CONTENT_LENGTH", kv[2 * n + 1] = clen, n++;
	}
	return n;
}

int
fcgi_loopback_path(const char *uri)
{
	return strcmp(uri, "/readyz/detail") == 0 ||
	    strncmp(uri, "/dashboard/", 11) == 0;
}

int
fcgi_request(const char *path, const char *method, const char *uri,
    const char *content_type, const char *body, size_t body_len,
    int timeout_ms, struct fcgi_resp *r)
{
	char		 clen[32];
	const char	*kv[2 * FCGI_BASE_PARAMS];
	size_t		 n;
	long long	 deadline = ut_now_ms() + timeout_ms;
	int		 fd, rc = -1;

	memset(r, 0, sizeof(*r));
	snprintf(clen, sizeof(clen), "%zu", body_len);
	n = fcgi_base_params(kv, method, uri, content_type, clen);
	if ((fd = fcgi_connect(path)) == -1)
		return -1;
	if (fcgi_begin(fd, deadline) == 0 &&
	    fcgi_params(fd, kv, n, deadline) == 0 &&
	    (body_len == 0 || fcgi_stdin(fd, body, body_len, deadline) == 0) &&
	    fcgi_stdin(fd, NULL, 0, deadline) == 0)
		rc = fcgi_read(fd, r, deadline);
	close(fd);
	return rc;
}

const char *
fcgi_header(const struct fcgi_resp *r, const char *name)
{
	static char	 val[1024];
	const char	*p, *eol, *v;
	size_t		 nl = strlen(name), len;

	if (r->out == NULL || r->body == NULL)
		return NULL;
	for (p = r->out; p < r->body; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(r->body - p))) == NULL)
			break;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 &&
		    p[nl] == ':') {
			for (v = p + nl + 1; *v == ' ' || *v == '\t'; v++)
				;
			len = (size_t)(eol - v);
			if (len > 0 && v[len - 1] == '\r')
				len--;
			if (len >= sizeof(val))
				len = sizeof(val) - 1;
			memcpy(val, v, len);
			val[len] = '\0';
			return val;
		}
	}
	return NULL;
}

void
fcgi_resp_free(struct fcgi_resp *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}
