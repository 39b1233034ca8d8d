/*
 * httpc.c - HTTP/1.1 client (over tests/util/net.h), exchange recorder and admin CLI
 * runner shared by the HTTP integration tests; the JSON helpers and contract
 * predicates are in httpc_check.c.
 */
#include "httpc.h"
#include "util/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* above the service's longest wait on the database (innodb_lock_wait_timeout
 * 10 s, the client read timeout 15 s, src/db/db.c): a 503 that took the lock
 * wait is read, not raced (fault_conn's lock wait timeout answers after
 * 10.0x s) */
#define RECV_TIMEOUT_S 35
#define MAX_HEADERS 64

/* ---- small utilities ------------------------------------------------------------------ */

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "httpc: out of memory\n");
		exit(1);
	}
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

struct dbuf {
	char *p;
	size_t len, cap;
};

static void
dbuf_add(struct dbuf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (b->p == NULL) {
			fprintf(stderr, "httpc: out of memory\n");
			exit(1);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
dbuf_str(struct dbuf *b, const char *s)
{
	dbuf_add(b, s, strlen(s));
}

/* ---- environment ---------------------------------------------------------------------- */

const char *
test_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0') {
		fprintf(stderr, "FATAL: environment variable %s is not set "
		    "(run the HTTP tests through scripts/test.sh)\n", name);
		exit(1);
	}
	return v;
}

void
http_test_init(void)
{
	test_env("ASYNCEXEC_TEST_HTTP");
	test_env("ASYNCEXEC_TEST_CONFIG");
	test_env("ASYNCEXEC_ADMIN");
	setvbuf(stderr, NULL, _IONBF, 0);
}

static int
config_line_value(char *line, const char *key, long *out)
{
	char *k = line, *eq = strchr(line, '=');
	size_t klen;

	if (eq == NULL)
		return 0;
	while (isspace((unsigned char)*k))
		k++;
	klen = (size_t)(eq - k);
	while (klen > 0 && isspace((unsigned char)k[klen - 1]))
		klen--;
	if (klen != strlen(key) || strncmp(k, key, klen) != 0)
		return 0;
	*out = strtol(eq + 1, NULL, 10);
	return 1;
}

long
config_long(const char *key, long dflt)
{
	FILE *f = fopen(test_env("ASYNCEXEC_TEST_CONFIG"), "r");
	char line[1024];
	long v = dflt;

	if (f == NULL) {
		fprintf(stderr, "FATAL: cannot read %s\n", getenv("ASYNCEXEC_TEST_CONFIG"));
		exit(1);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char *hash = strchr(line, '#');

		if (hash != NULL)
			*hash = '\0';
		config_line_value(line, key, &v);
	}
	fclose(f);
	return v;
}

const char *
unique_suffix(void)
{
	static char buf[64];
	static unsigned n;

	snprintf(buf, sizeof buf, "%ld-%ld-%u", (long)getpid(), (long)time(NULL), n++);
	return buf;
}

/* ---- connecting and sending ----------------------------------------------------------- */

static const char *target_hp, *source_ip;	/* http_set_target / http_set_source */
static _Thread_local const char *thread_hp;	/* http_set_thread_target */

void
http_set_target(const char *hostport)
{
	target_hp = hostport;
}

void
http_set_thread_target(const char *hostport)
{
	thread_hp = hostport;
}

/* Where the next request of this thread goes. */
static const char *
cur_target(void)
{
	if (thread_hp != NULL)
		return thread_hp;
	return target_hp ? target_hp : test_env("ASYNCEXEC_TEST_HTTP");
}

void
http_set_source(const char *ip)
{
	source_ip = ip;
}

/* Binds fd to source_ip (when set); 0 or -1. */
static int
bind_source(int fd)
{
	struct sockaddr_in sa;

	if (source_ip == NULL)
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	if (inet_pton(AF_INET, source_ip, &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "httpc: bind to %s: %s\n", source_ip, strerror(errno));
		return -1;
	}
	return 0;
}

/* The transport's signal-proof connect (tests/util/net.h) within the receive timeout. */
int
httpc_connect_fd(int fd, const struct sockaddr *sa, socklen_t len)
{
	return ut_connect_fd(fd, sa, len, RECV_TIMEOUT_S);
}

static int
http_connect(void)
{
	const char *hp = cur_target();
	struct sockaddr_in sa;
	int fd;

	if (ut_parse_hostport(hp, &sa) != 0) {
		fprintf(stderr, "httpc: ASYNCEXEC_TEST_HTTP must be IPV4:PORT, got %s\n", hp);
		return -1;
	}
	fd = ut_tcp_socket(RECV_TIMEOUT_S);
	if (fd < 0)
		return -1;
	if (bind_source(fd) != 0 || httpc_connect_fd(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "httpc: connect %s: %s\n", hp, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void
build_request(struct dbuf *b, const char *method, const char *path,
    const char *const *headers, const char *body, size_t body_len)
{
	char line[128];

	dbuf_str(b, method);
	dbuf_str(b, " ");
	dbuf_str(b, path);
	dbuf_str(b, " HTTP/1.1\r\nHost: ");
	dbuf_str(b, getenv("ASYNCEXEC_TEST_HTTP"));
	dbuf_str(b, "\r\nConnection: close\r\n");
	for (; headers != NULL && *headers != NULL; headers++) {
		if (**headers == '\0')
			continue;
		dbuf_str(b, *headers);
		dbuf_str(b, "\r\n");
	}
	if (body != NULL) {
		snprintf(line, sizeof line, "Content-Length: %zu\r\n", body_len);
		dbuf_str(b, line);
	}
	dbuf_str(b, "\r\n");
	if (body != NULL)
		dbuf_add(b, body, body_len);
}

/* Reads until EOF. Returns 0, or -1 on timeout / error before any byte arrived. */
static int
recv_all(int fd, struct dbuf *b)
{
	char chunk[65536];

	for (;;) {
		ssize_t r = recv(fd, chunk, sizeof chunk, 0);

		if (r > 0) {
			dbuf_add(b, chunk, (size_t)r);
			continue;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET && b->len > 0)
			return 0;
		fprintf(stderr, "httpc: recv: %s\n",
		    errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : strerror(errno));
		return -1;
	}
}

/* ---- parsing -------------------------------------------------------------------------- */

static int
parse_status_line(const char *p, const char *eol, int *status)
{
	if (eol - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		return -1;
	if (!isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
	    !isdigit((unsigned char)p[11]))
		return -1;
	*status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	return 0;
}

static void
add_header(struct http_resp *out, const char *p, const char *eol)
{
	const char *colon = memchr(p, ':', (size_t)(eol - p));
	const char *v;
	const char *e = eol;

	if (colon == NULL || out->nhdrs >= MAX_HEADERS)
		return;
	v = colon + 1;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	out->hdrs[out->nhdrs].name = xstrndup(p, (size_t)(colon - p));
	out->hdrs[out->nhdrs].value = xstrndup(v, (size_t)(e - v));
	out->nhdrs++;
}

/* Parses the status line and headers; returns the offset of the body, or -1. */
static long
parse_head(const char *raw, size_t len, struct http_resp *out)
{
	const char *end = NULL, *p = raw, *eol;
	size_t i;

	for (i = 0; i + 3 < len; i++) {
		if (memcmp(raw + i, "\r\n\r\n", 4) == 0) {
			end = raw + i;
			break;
		}
	}
	if (end == NULL)
		return -1;
	eol = strstr(p, "\r\n");
	if (parse_status_line(p, eol, &out->status) != 0)
		return -1;
	out->hdrs = xmalloc(MAX_HEADERS * sizeof *out->hdrs);
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = strstr(p, "\r\n");
		add_header(out, p, eol);
	}
	return (long)(end + 4 - raw);
}

static int
dechunk(const char *p, size_t len, struct dbuf *body)
{
	const char *end = p + len;

	for (;;) {
		char *after;
		unsigned long n = strtoul(p, &after, 16);
		const char *eol = strstr(after, "\r\n");

		if (after == p || eol == NULL || eol >= end)
			return -1;
		p = eol + 2;
		if (n == 0)
			return 0;
		if ((size_t)(end - p) < n + 2)
			return -1;
		dbuf_add(body, p, n);
		p += n + 2;
	}
}

static int
no_body_status(const char *method, int status)
{
	return strcmp(method, "HEAD") == 0 || status == 204 || status == 304 ||
	    (status >= 100 && status < 200);
}

static int
parse_body(const char *method, const char *p, size_t len, struct http_resp *out)
{
	const char *te = http_header(out, "transfer-encoding");
	const char *cl = http_header(out, "content-length");
	struct dbuf body = { 0 };

	dbuf_add(&body, "", 0);
	if (no_body_status(method, out->status)) {
		/* nothing */
	} else if (te != NULL && strcasestr(te, "chunked") != NULL) {
		if (dechunk(p, len, &body) != 0) {
			fprintf(stderr, "httpc: malformed chunked body\n");
			free(body.p);
			return -1;
		}
	} else if (cl != NULL) {
		size_t n = strtoul(cl, NULL, 10);

		if (n > len) {
			fprintf(stderr, "httpc: body truncated (%zu of %zu bytes)\n", len, n);
			free(body.p);
			return -1;
		}
		dbuf_add(&body, p, n);
	} else {
		dbuf_add(&body, p, len);
	}
	out->body = body.p;
	out->body_len = body.len;
	return 0;
}

static int
parse_response(const char *method, const struct dbuf *raw, struct http_resp *out)
{
	long off;

	if (raw->len == 0) {
		fprintf(stderr, "httpc: empty response\n");
		return -1;
	}
	off = parse_head(raw->p, raw->len, out);
	if (off < 0) {
		fprintf(stderr, "httpc: malformed response head: %.200s\n", raw->p);
		return -1;
	}
	return parse_body(method, raw->p + off, raw->len - (size_t)off, out);
}

/* ---- exchange recorder ---------------------------------------------------------------- */

/*
 * When ASYNCEXEC_TEST_RECORD names a directory, every exchange that got a response is
 * appended to RECORD/<program>.<pid>.jsonl as one JSON line: {"program","pid","seq",
 * "target","method","path","status","headers":{lower-case name: value},"body"}. "path" is
 * the raw request target; "body" holds the response's bytes, one code point U+0000..U+00FF
 * per byte (decode: encode as Latin-1). tests/http/openapi_conformance.py checks them
 * against src/openapi.json. One write(2) per line on an O_APPEND file, under a mutex.
 */
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static int rec_fd = -2;		/* -2: not opened yet, -1: not recording */
static unsigned long rec_seq;
static _Thread_local int rec_off;	/* http_set_record(0) */

void
http_set_record(int on)
{
	rec_off = !on;
}

static void
rec_str(struct dbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char e[7] = "\\u00";
	size_t i;

	dbuf_str(b, "\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			e[1] = (char)c;
			dbuf_add(b, e, 2);
			e[1] = 'u';
		} else if (c < 0x20 || c >= 0x7f) {
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			dbuf_add(b, e, 6);
		} else
			dbuf_add(b, &s[i], 1);
	}
	dbuf_str(b, "\"");
}

/* Opens the record file on first use (rec_mu held); its descriptor or -1. */
static int
rec_open(void)
{
	const char *dir = getenv("ASYNCEXEC_TEST_RECORD");
	char path[4096];

	if (rec_fd != -2)
		return rec_fd;
	rec_fd = -1;
	if (dir == NULL || *dir == '\0')
		return -1;
	snprintf(path, sizeof path, "%s/%s.%ld.jsonl", dir, program_invocation_short_name,
	    (long)getpid());
	rec_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (rec_fd < 0)
		fprintf(stderr, "httpc: cannot record to %s: %s\n", path, strerror(errno));
	return rec_fd;
}

/* Appends the exchange METHOD PATH -> R to the record file, when recording. */
static void
rec_exchange(const char *method, const char *path, const struct http_resp *r)
{
	struct dbuf b = { 0 };
	char num[96];
	size_t i, off = 0;
	ssize_t w;

	if (rec_fd == -1)
		return;
	pthread_mutex_lock(&rec_mu);
	if (rec_open() >= 0) {
		snprintf(num, sizeof num, "{\"pid\":%ld,\"seq\":%lu,\"program\":",
		    (long)getpid(), rec_seq++);
		dbuf_str(&b, num);
		rec_str(&b, program_invocation_short_name, strlen(program_invocation_short_name));
		dbuf_str(&b, ",\"target\":");
		rec_str(&b, cur_target(), strlen(cur_target()));
		dbuf_str(&b, ",\"method\":");
		rec_str(&b, method, strlen(method));
		dbuf_str(&b, ",\"path\":");
		rec_str(&b, path, strlen(path));
		snprintf(num, sizeof num, ",\"status\":%d,\"headers\":{", r->status);
		dbuf_str(&b, num);
		for (i = 0; i < r->nhdrs; i++) {
			char name[128];
			size_t k, n = strlen(r->hdrs[i].name);

			for (k = 0; k < n && k < sizeof name - 1; k++)
				name[k] = (char)tolower((unsigned char)r->hdrs[i].name[k]);
			dbuf_str(&b, i ? "," : "");
			rec_str(&b, name, k);
			dbuf_str(&b, ":");
			rec_str(&b, r->hdrs[i].value, strlen(r->hdrs[i].value));
		}
		dbuf_str(&b, "},\"body\":");
		rec_str(&b, r->body ? r->body : "", r->body ? r->body_len : 0);
		dbuf_str(&b, "}\n");
		while (off < b.len && ((w = write(rec_fd, b.p + off, b.len - off)) > 0 ||
		    (w < 0 && errno == EINTR)))
			off += w > 0 ? (size_t)w : 0;
	}
	pthread_mutex_unlock(&rec_mu);
	free(b.p);
}

/* ---- public HTTP API ------------------------------------------------------------------ */

int
http_do(const char *method, const char *path, const char *const *headers,
    const char *body, size_t body_len, struct http_resp *out)
{
	struct dbuf req = { 0 }, raw = { 0 };
	int fd, rc = -1;

	memset(out, 0, sizeof *out);
	fd = http_connect();
	if (fd >= 0) {
		build_request(&req, method, path, headers, body, body_len);
		/* a peer that answers early (413) and closes is not an error: read it */
		(void)ut_send_all(fd, req.p, req.len);
		if (recv_all(fd, &raw) == 0)
			rc = parse_response(method, &raw, out);
		close(fd);
	}
	free(req.p);
	free(raw.p);
	if (rc == 0 && !rec_off)
		rec_exchange(method, path, out);
	if (rc != 0) {
		fprintf(stderr, "httpc: %s %.120s failed\n", method, path);
		http_resp_free(out);
		out->status = 0;
	}
	return rc;
}

const char *
http_header(const struct http_resp *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nhdrs; i++)
		if (strcasecmp(r->hdrs[i].name, name) == 0)
			return r->hdrs[i].value;
	return NULL;
}

void
http_resp_free(struct http_resp *r)
{
	size_t i;

	for (i = 0; i < r->nhdrs; i++) {
		free(r->hdrs[i].name);
		free(r->hdrs[i].value);
	}
	free(r->hdrs);
	free(r->body);
	memset(r, 0, sizeof *r);
}

#define API_MAX_HDRS 16

int
api(const char *method, const char *path, const char *key, const char *body,
    struct http_resp *out, ...)
{
	const char *hdrs[API_MAX_HDRS + 3];
	char auth[256];
	size_t n = 0;
	va_list ap;
	const char *h;

	if (key != NULL) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
		hdrs[n++] = auth;
	}
	if (body != NULL)
		hdrs[n++] = "Content-Type: application/json";
	va_start(ap, out);
	while ((h = va_arg(ap, const char *)) != NULL && n < API_MAX_HDRS + 2)
		hdrs[n++] = h;
	va_end(ap);
	hdrs[n] = NULL;
	http_do(method, path, hdrs, body, body ? strlen(body) : 0, out);
	return out->status;
}

/* ---- admin CLI ------------------------------------------------------------------------ */

/* Opens "$ASYNCEXEC_ADMIN --config CFG ARGS" plus TAIL (e.g. " 2>&1") for reading, ARGS
 * made from FMT and AP; the command into cmd (size bytes). Results: the stream, or NULL
 * when popen failed. */
static FILE *
admin_open(char *cmd, size_t size, const char *cfg, const char *tail, const char *fmt,
    va_list ap)
{
	char args[2048];

	vsnprintf(args, sizeof args, fmt, ap);
	snprintf(cmd, size, "'%s' --config '%s' %s%s", test_env("ASYNCEXEC_ADMIN"), cfg,
	    args, tail);
	return popen(cmd, "r");
}

char *
admin(const char *fmt, ...)
{
	char cmd[4096], line[1024];
	char *first = NULL;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	p = admin_open(cmd, sizeof cmd, test_env("ASYNCEXEC_TEST_CONFIG"), "", fmt, ap);
	va_end(ap);
	if (p == NULL) {
		fprintf(stderr, "FATAL: popen(%s): %s\n", cmd, strerror(errno));
		exit(1);
	}
	while (fgets(line, sizeof line, p) != NULL)
		if (first == NULL)
			first = xstrndup(line, strcspn(line, "\r\n"));
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "FATAL: admin command failed (status %d): %s\n",
		    WIFEXITED(st) ? WEXITSTATUS(st) : -1, cmd);
		exit(1);
	}
	return first;
}

int
httpc_admin(const char *cfg, char *out, size_t size, const char *fmt, ...)
{
	char cmd[4096];
	size_t n = 0, k;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	p = admin_open(cmd, sizeof cmd, cfg, " 2>&1", fmt, ap);
	va_end(ap);
	out[0] = '\0';
	if (p == NULL)
		return -1;
	while ((k = fread(out + n, 1, size - 1 - n, p)) > 0)
		n += k;
	out[n] = '\0';
	st = pclose(p);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}
