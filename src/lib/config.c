/*
 * config.c - parse the "key = value" configuration file.
 *
 * One table (enum-indexed) describes every key: its type, bounds and
 * where it lands in struct config. Unknown keys, bad values and
 * duplicates are errors naming the file, line and key; so are those
 * found after the last line (db_hosts, listen, the password file), by
 * the line of their key.
 */
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "log.h"

enum ctype { CT_STR, CT_UINT, CT_SIZE, CT_OCTAL, CT_LEVEL };

/* The programs that read a key (asyncexec.conf(5) "Read by"). */
enum { R_FCGI = 1, R_EXPIRE = 2, R_ADMIN = 4, R_NOTIFY = 8, R_ALL = 15 };

/*
 * Every key, once: X(id, key, type, field, default, min, max, readers).
 * The default is text, parsed like a value from the file (NULL: empty or
 * 0); min and max bound the numbers. tests/docs/check_docs.py reads this
 * list and compares it with asyncexec.conf(5).
 */
#define CONFIG_KEYS(X) \
X(DB_HOST, "db_host", CT_STR, db_host, "127.0.0.1", 0, 0, R_ALL) \
X(DB_PORT, "db_port", CT_UINT, db_port, "3306", 1, 65535, R_ALL) \
X(DB_SOCKET, "db_socket", CT_STR, db_socket, NULL, 0, 0, R_ALL) \
X(DB_NAME, "db_name", CT_STR, db_name, "asyncexec", 0, 0, R_ALL) \
X(DB_USER, "db_user", CT_STR, db_user, "asyncexec", 0, 0, R_ALL) \
X(DB_PASSWORD, "db_password", CT_STR, db_password, NULL, 0, 0, R_ALL) \
X(DB_PASSWORD_FILE, "db_password_file", CT_STR, db_password_file, NULL, \
    0, 0, R_ALL) \
X(DB_CONNECT_TIMEOUT, "db_connect_timeout", CT_UINT, db_connect_timeout, \
    "2", 1, 60, R_ALL) \
X(DB_HOSTS, "db_hosts", CT_STR, db_hosts_text, NULL, 0, 0, R_ALL) \
X(DB_PIN_FILE, "db_pin_file", CT_STR, db_pin_file, NULL, 0, 0, R_ALL) \
X(DB_SYNC_WAIT, "db_sync_wait", CT_UINT, db_sync_wait, "1", 0, 15, R_ALL) \
X(LISTEN, "listen", CT_STR, listen, "/run/asyncexec/asyncexec.sock", 0, 0, \
    R_FCGI) \
X(LISTEN_ALLOW, "listen_allow", CT_STR, listen_allow, NULL, 0, 0, R_FCGI) \
X(LISTEN_MODE, "listen_mode", CT_OCTAL, listen_mode, "0660", 0, 0777, \
    R_FCGI) \
X(LISTEN_GROUP, "listen_group", CT_STR, listen_group, NULL, 0, 0, R_FCGI) \
X(LISTEN_BACKLOG, "listen_backlog", CT_UINT, listen_backlog, "128", 1, \
    65535, R_FCGI) \
X(WORKERS, "workers", CT_UINT, workers, "0", 0, WORKERS_MAX, R_FCGI) \
X(MAX_REQUEST_BYTES, "max_request_bytes", CT_SIZE, max_request_bytes, \
    "1048576", 2, 1UL << 30, R_FCGI) \
X(MAX_RESULT_BYTES, "max_result_bytes", CT_SIZE, max_result_bytes, \
    "4194304", 16, 1UL << 30, R_FCGI) \
X(MAX_JSON_DEPTH, "max_json_depth", CT_UINT, max_json_depth, "64", 1, \
    1000, R_FCGI) \
X(RETRY_AFTER, "retry_after_seconds", CT_UINT, retry_after_seconds, "1", \
    1, 3600, R_FCGI) \
X(MAX_ATTEMPTS, "max_attempts", CT_UINT, max_attempts, "5", 1, 1000, \
    R_FCGI | R_EXPIRE | R_ADMIN) \
X(PURGE_GRACE_DAYS, "purge_grace_days", CT_UINT, purge_grace_days, "7", \
    0, 36500, R_EXPIRE) \
X(CACHE_TTL, "cache_ttl_seconds", CT_UINT, cache_ttl_seconds, "5", 0, \
    3600, R_FCGI | R_ADMIN) \
X(DASHBOARD_SHOW_ERRORS, "dashboard_show_errors", CT_UINT, \
    dashboard_show_errors, "0", 0, 1, R_FCGI) \
X(WEBHOOK_KEY_FILE, "webhook_key_file", CT_STR, webhook_key_file, \
    "/etc/asyncexec/webhook.key", 0, 0, R_ADMIN | R_NOTIFY) \
X(WEBHOOK_ALLOW_HTTP, "webhook_allow_http", CT_UINT, webhook_allow_http, \
    "0", 0, 1, R_NOTIFY) \
X(WEBHOOK_ALLOW_NETWORKS, "webhook_allow_networks", CT_STR, \
    webhook_allow_networks, NULL, 0, 0, R_NOTIFY) \
X(WEBHOOK_CONNECT_TIMEOUT, "webhook_connect_timeout", CT_UINT, \
    webhook_connect_timeout, "5", 1, 60, R_NOTIFY) \
X(WEBHOOK_TIMEOUT, "webhook_timeout", CT_UINT, webhook_timeout, "15", 1, \
    300, R_NOTIFY) \
X(WEBHOOK_CONCURRENCY, "webhook_concurrency", CT_UINT, webhook_concurrency, \
    "8", 1, 256, R_NOTIFY) \
X(WEBHOOK_RETRY_SCHEDULE, "webhook_retry_schedule", CT_STR, \
    webhook_retry_schedule, "5,30,120,600,1800,3600,7200,14400,28800,28800", \
    0, 0, R_NOTIFY) \
X(NOTIFY_LISTEN, "notify_listen", CT_STR, notify_listen, "127.0.0.1:9466", \
    0, 0, R_NOTIFY) \
X(LOG_LEVEL, "log_level", CT_LEVEL, log_level, "info", 0, 0, \
    R_FCGI | R_EXPIRE | R_NOTIFY)

enum ckey {
#define CK_ENUM(id, key, type, field, dflt, min, max, readers) CK_##id,
	CONFIG_KEYS(CK_ENUM)
#undef CK_ENUM
	CK__MAX
};

struct cdef {
	const char	*key;
	enum ctype	 type;
	size_t		 off;
	size_t		 size;		/* the field's size (CT_STR: capacity) */
	const char	*dflt;
	unsigned long	 min, max;	/* numbers */
	unsigned	 readers;
};

static const struct cdef defs[CK__MAX] = {
#define CK_DEF(id, k, t, f, d, lo, hi, r) [CK_##id] = { k, t, \
	offsetof(struct config, f), sizeof(((struct config *)0)->f), d, lo, \
	hi, r },
	CONFIG_KEYS(CK_DEF)
#undef CK_DEF
};

/* A file being parsed: its name, the line of each key, the error. */
struct pstate {
	const char	*name;
	unsigned	 line[CK__MAX];	/* 0: not in the file */
	char		*err;
	size_t		 errsz;
};

static int	apply(struct config *, const struct cdef *, const char *,
	    char *, size_t);

/*
 * Writes "FILE:LINE: key: " and the message into ps->err ("FILE: key: "
 * when the file does not set key k). Results: -1.
 */
static int __attribute__((format(printf, 3, 4)))
key_error(struct pstate *ps, enum ckey k, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (ps->line[k] != 0)
		n = snprintf(ps->err, ps->errsz, "%s:%u: %s: ", ps->name,
		    ps->line[k], defs[k].key);
	else
		n = snprintf(ps->err, ps->errsz, "%s: %s: ", ps->name,
		    defs[k].key);
	if (n >= 0 && (size_t)n < ps->errsz) {
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errsz - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Every field to its default: the table's text, applied like a value. */
void
config_defaults(struct config *c)
{
	char	 why[96];
	size_t	 i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < CK__MAX; i++)
		if (defs[i].dflt != NULL &&
		    apply(c, &defs[i], defs[i].dflt, why, sizeof(why)) == -1)
			abort();	/* a default outside its own range */
}

/* Number of workers to fork: the configured one, or 2 x online cores. */
unsigned
config_workers(const struct config *c)
{
	long	 n;

	if (c->workers > 0)
		return c->workers;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)(2 * n) : 2;
}

/* Parses an unsigned number in base; 0 or -1 (not a number, out of range). */
static int
parse_num(const char *v, int base, unsigned long min, unsigned long max,
    unsigned long *out)
{
	char		*end;
	unsigned long	 n;

	if (!isdigit((unsigned char)v[0]))
		return -1;
	errno = 0;
	n = strtoul(v, &end, base);
	if (errno != 0 || *end != '\0' || n < min || n > max)
		return -1;
	*out = n;
	return 0;
}

/*
 * Stores value v for definition d into c. Returns 0, or -1 with the reason
 * (built from the table's bounds) in why.
 */
static int
apply(struct config *c, const struct cdef *d, const char *v, char *why,
    size_t whysz)
{
	char		*p = (char *)c + d->off;
	unsigned long	 n;
	enum log_level	 l;

	switch (d->type) {
	case CT_STR:
		if (strlen(v) < d->size) {
			memcpy(p, v, strlen(v) + 1);
			return 0;
		}
		snprintf(why, whysz, "value too long (at most %zu bytes)",
		    d->size - 1);
		return -1;
	case CT_LEVEL:
		if (log_parse_level(v, &l) == 0) {
			*(int *)(void *)p = (int)l;
			return 0;
		}
		snprintf(why, whysz, "expected error, warn, info or debug");
		return -1;
	case CT_OCTAL:
		if (parse_num(v, 8, d->min, d->max, &n) == 0) {
			*(unsigned *)(void *)p = (unsigned)n;
			return 0;
		}
		snprintf(why, whysz, "expected an octal mode from %04lo to %04lo, "
		    "such as 0660", d->min, d->max);
		return -1;
	case CT_SIZE:
	case CT_UINT:
		if (parse_num(v, 10, d->min, d->max, &n) == -1) {
			snprintf(why, whysz, "expected a whole number%s from %lu "
			    "to %lu", d->type == CT_SIZE ? " of bytes" : "",
			    d->min, d->max);
			return -1;
		}
		if (d->type == CT_SIZE)
			*(size_t *)(void *)p = (size_t)n;
		else
			*(unsigned *)(void *)p = (unsigned)n;
		return 0;
	}
	snprintf(why, whysz, "bad definition");
	return -1;
}

/* Trims blanks at both ends of s in place; returns the new start. */
static char *
trim(char *s)
{
	char	*e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/*
 * Parses line lineno of ps; ps->line records where each key is set. 0,
 * or -1 with ps->err filled.
 */
static int
parse_line(struct config *c, struct pstate *ps, unsigned lineno, char *line)
{
	char		*eq, *key, *val, why[96];
	int		 i;

	key = trim(line);
	if (*key == '\0' || *key == '#')
		return 0;
	if ((eq = strchr(key, '=')) == NULL) {
		snprintf(ps->err, ps->errsz, "%s:%u: expected key = value",
		    ps->name, lineno);
		return -1;
	}
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	for (i = 0; i < CK__MAX; i++)
		if (strcmp(defs[i].key, key) == 0)
			break;
	if (i == CK__MAX) {
		snprintf(ps->err, ps->errsz, "%s:%u: %.64s: unknown key",
		    ps->name, lineno, key);
		return -1;
	}
	if (ps->line[i] != 0) {
		snprintf(ps->err, ps->errsz, "%s:%u: %s: set twice", ps->name,
		    lineno, key);
		return -1;
	}
	ps->line[i] = lineno;
	if (apply(c, &defs[i], val, why, sizeof(why)) == -1)
		return key_error(ps, (enum ckey)i, "%s", why);
	return 0;
}

/* What a file of mode m is, for "PATH is ..., not a regular file". */
static const char *
file_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "of another type";
}

/*
 * open(2) of path for reading, close-on-exec, with O_NONBLOCK: a FIFO no
 * one writes to opens at once. A regular file under a lease (an NFS
 * delegation, Samba's oplock: EWOULDBLOCK with O_NONBLOCK) is opened
 * again without it, waiting for the lease's break as a plain open does.
 * The fd, or -1 (errno; *sb may be filled).
 */
static int
open_nowait(const char *path, struct stat *sb)
{
	int	 fd, e;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) != -1 ||
	    (e = errno) != EWOULDBLOCK)
		return fd;
	if (stat(path, sb) == 0 && S_ISREG(sb->st_mode))
		return open(path, O_RDONLY | O_CLOEXEC);
	errno = e;
	return -1;
}

/*
 * Opens path for reading waiting on nothing but a lease (open_nowait), and
 * then only a regular file is taken (reading anything else may wait for
 * ever), O_NONBLOCK cleared. Returns the fd (close-on-exec), its stat in
 * *sb; -1 when it cannot be opened (errno kept), or -2 when it is not a
 * regular file. why (size bytes) says which, naming path; for -2 it ends
 * with todo, what to do.
 */
static int
open_regular(const char *path, struct stat *sb, const char *todo, char *why,
    size_t size)
{
	int	 fd, fl, e;

	if ((fd = open_nowait(path, sb)) == -1 || fstat(fd, sb) == -1) {
		e = errno;
		snprintf(why, size, "cannot open %s: %s", path, strerror(e));
		if (fd != -1)
			(void)close(fd);
		errno = e;
		return -1;
	}
	if (S_ISREG(sb->st_mode)) {
		if ((fl = fcntl(fd, F_GETFL)) != -1)
			(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		return fd;
	}
	(void)close(fd);
	snprintf(why, size, "%s is %s, not a regular file: reading it could "
	    "wait for ever; %s", path, file_kind(sb->st_mode), todo);
	return -2;
}

/*
 * Opens the password file path as open_regular does (a systemd
 * credential is a regular file; a FIFO held asyncexec-fcgi's start, its
 * SIGTERM held). Results: open_regular's.
 */
int
config_password_open(const char *path, struct stat *sb, char *why,
    size_t size)
{
	return open_regular(path, sb, "name a regular file (a systemd "
	    "credential, LoadCredential=, is one)", why, size);
}

/*
 * Reads the first line of the password file into c; 0, or -1 with
 * ps->err (at db_password_file's line).
 */
static int
read_password_file(struct config *c, struct pstate *ps)
{
	FILE		*f;
	struct stat	 sb;
	char		 line[sizeof(c->db_password) + 2], why[512];
	size_t		 n;
	int		 fd;

	if ((fd = config_password_open(c->db_password_file, &sb, why,
	    sizeof(why))) < 0)
		return key_error(ps, CK_DB_PASSWORD_FILE, "%s", why);
	if ((f = fdopen(fd, "r")) == NULL) {
		(void)key_error(ps, CK_DB_PASSWORD_FILE, "%s: %s",
		    c->db_password_file, strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	n = strcspn(line, "\r\n");
	if (n >= sizeof(c->db_password))
		return key_error(ps, CK_DB_PASSWORD_FILE, "password too long");
	line[n] = '\0';
	memcpy(c->db_password, line, n + 1);
	return 0;
}

/*
 * Parses one db_hosts entry, host[:port] or [v6]:port, of n bytes at s
 * into h (port dflt when none). NULL or a reason.
 */
static const char *
parse_host(const char *s, size_t n, unsigned dflt, struct config_host *h)
{
	const char	*colon = NULL, *hs = s, *he;
	unsigned long	 port = dflt;
	char		 num[8];
	size_t		 i;

	if (s[0] == '[') {
		if ((he = memchr(s, ']', n)) == NULL)
			return "an IPv6 address needs its closing ]";
		hs = s + 1;
		if (he + 1 < s + n && he[1] != ':')
			return "expected [address]:port";
		colon = he + 1 < s + n ? he + 1 : NULL;
	} else {
		colon = memchr(s, ':', n);
		he = colon ? colon : s + n;
	}
	if (he == hs || (size_t)(he - hs) >= sizeof(h->host))
		return "an empty or too long host name";
	for (i = 0; hs + i < he; i++)
		if (!isalnum((unsigned char)hs[i]) && strchr(".-_:", hs[i]) ==
		    NULL)
			return "a host name holds letters, digits, '.', '-', '_'";
	if (colon != NULL) {
		if ((size_t)(s + n - colon - 1) >= sizeof(num))
			return "expected host:port, port 1..65535";
		memcpy(num, colon + 1, (size_t)(s + n - colon - 1));
		num[s + n - colon - 1] = '\0';
		if (parse_num(num, 10, 1, 65535, &port) == -1)
			return "expected host:port, port 1..65535";
	}
	memcpy(h->host, hs, (size_t)(he - hs));
	h->host[he - hs] = '\0';
	h->port = (unsigned)port;
	return NULL;
}

/*
 * Splits db_hosts (entries separated by commas and/or blanks) into
 * c->db_hosts; ports default to db_port. 0, or -1 with ps->err filled.
 */
static int
parse_hosts(struct config *c, struct pstate *ps)
{
	const char	*p = c->db_hosts_text, *why;
	size_t		 n;
	unsigned	 i;

	c->db_nhosts = 0;
	for (;;) {
		p += strspn(p, ", \t");
		if (*p == '\0')
			break;
		n = strcspn(p, ", \t");
		if (c->db_nhosts == CONFIG_MAX_HOSTS) {
			why = "more than 8 nodes";
			goto fail;
		}
		if ((why = parse_host(p, n, c->db_port,
		    &c->db_hosts[c->db_nhosts])) != NULL)
			goto fail;
		for (i = 0; i < c->db_nhosts; i++)
			if (strcmp(c->db_hosts[i].host,
			    c->db_hosts[c->db_nhosts].host) == 0 &&
			    c->db_hosts[i].port == c->db_hosts[c->db_nhosts].port) {
				why = "a node is listed twice";
				goto fail;
			}
		c->db_nhosts++;
		p += n;
	}
	return 0;
fail:
	return key_error(ps, CK_DB_HOSTS, "%.*s: %s", (int)(n > 80 ? 80 : n),
	    p, why);
}

/*
 * Whether listen names a TCP address, IPv4 ADDRESS:PORT (1: its parts
 * into addr and *port), a unix socket path (0: it starts with '/'), or
 * neither (-1).
 */
int
config_listen_tcp(const char *listen, char *addr, size_t addrsz,
    unsigned *port)
{
	const char	*colon = strrchr(listen, ':');
	struct in_addr	 in;
	unsigned long	 n;
	size_t		 len;

	if (listen[0] == '/')
		return 0;
	if (colon == NULL || (len = (size_t)(colon - listen)) == 0 ||
	    len >= addrsz || parse_num(colon + 1, 10, 1, 65535, &n) == -1)
		return -1;
	memcpy(addr, listen, len);
	addr[len] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1)
		return -1;
	*port = (unsigned)n;
	return 1;
}

/*
 * listen: a path, or ADDRESS:PORT with listen_allow (comma-separated
 * IPv4 addresses of the web servers; FastCGI has no authentication, so
 * an open TCP port is refused). 0, or -1 with ps->err filled.
 */
static int
check_listen(const struct config *c, struct pstate *ps)
{
	char		 addr[64], one[64];
	const char	*p = c->listen_allow;
	struct in_addr	 in;
	unsigned	 port;
	size_t		 n;
	int		 tcp = config_listen_tcp(c->listen, addr, sizeof(addr),
			    &port);

	if (tcp == -1)
		return key_error(ps, CK_LISTEN, "expected a socket path "
		    "(starting with /) or IPV4-ADDRESS:PORT");
	if (tcp == 1 && c->listen_allow[0] == '\0')
		return key_error(ps, CK_LISTEN, "listen on TCP needs "
		    "listen_allow, the addresses of the web servers that may "
		    "connect");
	while (*p != '\0') {
		n = strcspn(p, ",");
		if (n >= sizeof(one) || (memcpy(one, p, n), one[n] = '\0',
		    inet_pton(AF_INET, one, &in) != 1))
			return key_error(ps, CK_LISTEN_ALLOW, "expected IPv4 "
			    "addresses separated by commas, no blanks");
		p += n + (p[n] == ',');
	}
	return 0;
}

/*
 * Parses text named name, reading the password file when readpw. 0, or
 * -1 with err ("FILE:LINE: key: reason").
 */
static int
parse_text(struct config *c, const char *name, const char *text, int readpw,
    char *err, size_t errsz)
{
	struct pstate	 ps = { .name = name, .err = err, .errsz = errsz };
	unsigned	 lineno = 0, *at = ps.line;
	const char	*p = text, *nl;
	char		 line[1024];
	size_t		 n;

	config_defaults(c);
	while (*p != '\0') {
		lineno++;
		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		if (n >= sizeof(line)) {
			snprintf(err, errsz, "%s:%u: line too long", name, lineno);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		if (parse_line(c, &ps, lineno, line) == -1)
			return -1;
		p = nl ? nl + 1 : p + n;
	}
	if (at[CK_DB_PASSWORD] != 0 && at[CK_DB_PASSWORD_FILE] != 0)
		return key_error(&ps, at[CK_DB_PASSWORD] >
		    at[CK_DB_PASSWORD_FILE] ? CK_DB_PASSWORD :
		    CK_DB_PASSWORD_FILE, "db_password and db_password_file "
		    "are both set; use one");
	if (parse_hosts(c, &ps) == -1 || check_listen(c, &ps) == -1)
		return -1;
	if (at[CK_DB_HOSTS] != 0 && c->db_nhosts == 0)
		return key_error(&ps, CK_DB_HOSTS, "lists no node");
	if (readpw && c->db_password_file[0] != '\0')
		return read_password_file(c, &ps);
	return 0;
}

/* Parses text (the file's contents) named name; 0 or -1 with err. */
int
config_parse(struct config *c, const char *name, const char *text, char *err,
    size_t errsz)
{
	return parse_text(c, name, text, 1, err, errsz);
}

/*
 * Opens the configuration file path as open_regular does (a FIFO held
 * the start of every program for ever). Results: a stream, or NULL with
 * err filled ("PATH: reason (what to do)").
 */
static FILE *
open_config(const char *path, char *err, size_t errsz)
{
	struct stat	 sb;
	FILE		*f;
	char		 why[512];
	int		 fd, e;

	fd = open_regular(path, &sb, "pass --config FILE naming a regular "
	    "file", why, sizeof(why));
	if (fd == -1) {
		e = errno;
		snprintf(err, errsz, "%s: %s (%s)", path, strerror(e),
		    e == EACCES ? "run as root or as a member of group "
		    "asyncexec, or pass --config FILE" : "pass --config FILE "
		    "to read another file");
		return NULL;
	}
	if (fd == -2) {
		snprintf(err, errsz, "%s", why);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		(void)close(fd);
	}
	return f;
}

/* Loads path, reading the password file when readpw; 0 or -1. */
static int
load(struct config *c, const char *path, int readpw, char *err, size_t errsz)
{
	FILE	*f;
	char	*text;
	long	 sz;
	int	 rc;

	if ((f = open_config(path, err, errsz)) == NULL)
		return -1;
	if (fseek(f, 0, SEEK_END) == -1 || (sz = ftell(f)) < 0 ||
	    sz > 1 << 20 || fseek(f, 0, SEEK_SET) == -1 ||
	    (text = malloc((size_t)sz + 1)) == NULL) {
		snprintf(err, errsz, "%s: cannot read (too large?)", path);
		fclose(f);
		return -1;
	}
	if (fread(text, 1, (size_t)sz, f) != (size_t)sz) {
		snprintf(err, errsz, "%s: read error", path);
		free(text);
		fclose(f);
		return -1;
	}
	fclose(f);
	text[sz] = '\0';
	rc = parse_text(c, path, text, readpw, err, errsz);
	free(text);
	return rc;
}

/* Loads path; 0 or -1 with err ("FILE:LINE: key: reason"). */
int
config_load(struct config *c, const char *path, char *err, size_t errsz)
{
	return load(c, path, 1, err, errsz);
}

/*
 * As config_load, but db_password_file is only named, not read (the
 * checks of --check-config look at that file apart).
 */
int
config_load_syntax(struct config *c, const char *path, char *err,
    size_t errsz)
{
	return load(c, path, 0, err, errsz);
}

/*
 * The database settings, S(key) a string, N(key) a number (db_hosts and
 * db_nhosts go with db_hosts_text).
 */
#define DB_KEYS(S, N) \
	S(db_host) N(db_port) S(db_socket) S(db_name) S(db_user) \
	S(db_password_file) S(db_password) N(db_connect_timeout) \
	S(db_hosts_text) N(db_sync_wait) S(db_pin_file)

/*
 * Keeps old's database settings in c (a reload that applies them at the
 * next start). Results: the first key whose value c changed, or NULL.
 */
const char *
config_keep_db(struct config *c, const struct config *old)
{
	const char	*changed = NULL;

#define KEEP_S(k) \
	if (changed == NULL && strcmp(c->k, old->k) != 0) \
		changed = #k; \
	memcpy(c->k, old->k, sizeof(c->k));
#define KEEP_N(k) \
	if (changed == NULL && c->k != old->k) \
		changed = #k; \
	c->k = old->k;
	DB_KEYS(KEEP_S, KEEP_N)
#undef KEEP_S
#undef KEEP_N
	memcpy(c->db_hosts, old->db_hosts, sizeof(c->db_hosts));
	c->db_nhosts = old->db_nhosts;
	return changed;
}
