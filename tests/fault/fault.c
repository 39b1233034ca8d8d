/*
 * fault.c - helpers of the fault-injection tests: database control, logs,
 * a root SQL session.
 */
#include "fault.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "httpc.h"

#define DB_GONE_MS	30000	/* a SIGKILLed server's pid disappears */

static int	 db_down;	/* this process stopped the database */

static void
restart_db(void)
{
	if (db_down)
		(void)f_db_start();
}

static void
on_signal(int sig)
{
	(void)sig;
	exit(1);	/* runs restart_db through atexit */
}

/* ASYNCEXEC_TEST_DBCTL is required by f_dbctl, where a test stops the
 * database (the cluster's copy of fault_commit never does). */
void
f_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(restart_db);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
}

int
f_dbctl(const char *verb)
{
	char	 cmd[1024];
	int	 st;

	snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1",
	    test_env("ASYNCEXEC_TEST_DBCTL"), verb);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "dbctl %s failed (status %d)\n", verb, st);
		return -1;
	}
	return 0;
}

const char *
f_state_path(const char *file)
{
	static char	 path[1024];
	char		 cfg[1024];
	const char	*dir = getenv("ASYNCEXEC_TEST_LOGDIR");

	if (dir == NULL || *dir == '\0') {
		snprintf(cfg, sizeof cfg, "%s", test_env("ASYNCEXEC_TEST_CONFIG"));
		dir = dirname(cfg);
	}
	snprintf(path, sizeof path, "%s/%s", dir, file);
	return path;
}

/* The pid of the stack's mariadbd (its pid file, name checked), or -1. */
static long
db_pid(void)
{
	char	 p[64], comm[64];
	FILE	*f;
	long	 pid = -1;

	if ((f = fopen(f_state_path("mariadb/mysqld.pid"), "r")) == NULL)
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	fclose(f);
	snprintf(p, sizeof p, "/proc/%ld/comm", pid);
	if (pid <= 0 || (f = fopen(p, "r")) == NULL)
		return -1;
	if (fgets(comm, sizeof comm, f) == NULL || strncmp(comm, "mariadbd", 8))
		pid = -1;
	fclose(f);
	return pid;
}

/* Whether pid is gone (or a zombie). */
static int
pid_gone(long pid)
{
	char	 p[64], buf[512], *s;
	FILE	*f;
	int	 gone = 1;

	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	if ((f = fopen(p, "r")) == NULL)
		return 1;
	if (fgets(buf, sizeof buf, f) != NULL && (s = strrchr(buf, ')')) &&
	    s[1] == ' ' && s[2] != 'Z')
		gone = 0;
	fclose(f);
	return gone;
}

int
f_db_stop(int sigkill)
{
	int64_t	 deadline = ut_now_ms() + DB_GONE_MS;
	long	 pid;

	db_down = 1;
	if (!sigkill)
		return f_dbctl("stop");
	if ((pid = db_pid()) == -1) {
		fprintf(stderr, "no running mariadbd in %s\n",
		    f_state_path("mariadb/mysqld.pid"));
		return -1;
	}
	if (kill((pid_t)pid, SIGKILL) == -1)
		return -1;
	while (!pid_gone(pid))
		if (ut_now_ms() > deadline)
			return -1;
		else
			ut_pause_ms(10);
	return 0;
}

int
f_db_start(void)
{
	if (f_dbctl("start") == -1)
		return -1;
	db_down = 0;
	return 0;
}

long
f_log_lines(const char *path)
{
	FILE	*f = fopen(path, "r");
	long	 n = 0;
	int	 c;

	if (f == NULL)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

void
f_log_show(const char *path, long from, long max)
{
	FILE	*f = fopen(path, "r");
	char	 line[1024];
	long	 n = 0;

	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strchr(line, '\n') == NULL)
			continue;	/* the rest of a long line */
		if (n++ >= from && n <= from + max)
			fprintf(stderr, "  | %s", line);
	}
	fclose(f);
}

int
f_file_contains(const char *path, const char *needle)
{
	FILE	*f = fopen(path, "r");
	char	*buf = NULL;
	size_t	 len = 0, cap = 0, n, nl = strlen(needle);
	int	 found;

	if (f == NULL)
		return -1;
	for (;;) {
		if (len + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			if ((buf = realloc(buf, cap + 1)) == NULL)
				exit(1);
		}
		if ((n = fread(buf + len, 1, 65536, f)) == 0)
			break;
		len += n;
	}
	fclose(f);
	found = memmem(buf ? buf : "", len, needle, nl) != NULL;
	free(buf);
	return found;
}

const char *
f_cfg_str(const char *key, char *buf, size_t n)
{
	FILE	*f = fopen(test_env("ASYNCEXEC_TEST_CONFIG"), "r");
	char	 line[1024], *k, *v, *e;

	buf[0] = '\0';
	if (f == NULL)
		return buf;
	while (fgets(line, sizeof line, f) != NULL) {
		if ((v = strchr(line, '=')) == NULL || line[0] == '#')
			continue;
		*v++ = '\0';
		for (k = line; isspace((unsigned char)*k); k++)
			;
		for (e = k + strlen(k); e > k && isspace((unsigned char)e[-1]);)
			*--e = '\0';
		if (strcmp(k, key) != 0)
			continue;
		while (isspace((unsigned char)*v))
			v++;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);)
			*--e = '\0';
		snprintf(buf, n, "%s", v);
	}
	fclose(f);
	return buf;
}

int
f_proxy_config(const char *path, int port, const char *extra)
{
	static const char *const drop[] = { "db_socket", "db_host", "db_port",
	    "db_hosts", "db_sync_wait", "listen", "listen_mode", "workers",
	    NULL };
	FILE	*in = fopen(test_env("ASYNCEXEC_TEST_CONFIG"), "r"), *out;
	char	 line[1024], key[128];
	int	 i, skip;

	if (in == NULL || (out = fopen(path, "w")) == NULL) {
		if (in != NULL)
			fclose(in);
		return -1;
	}
	while (fgets(line, sizeof line, in) != NULL) {
		skip = 0;
		if (sscanf(line, " %127[a-z_] =", key) == 1)
			for (i = 0; drop[i] != NULL; i++)
				skip |= strcmp(key, drop[i]) == 0;
		if (!skip)
			fputs(line, out);
	}
	/* db_sync_wait 0: only the re-read after a lost answer waits */
	fprintf(out, "db_host = 127.0.0.1\ndb_port = %d\ndb_sync_wait = 0\n%s",
	    port, extra);
	fclose(in);
	return fclose(out) == 0 ? 0 : -1;
}

MYSQL *
f_sql_open(void)
{
	char	 sock[512], name[128];
	MYSQL	*m;

	f_cfg_str("db_socket", sock, sizeof sock);
	f_cfg_str("db_name", name, sizeof name);
	if ((m = mysql_init(NULL)) == NULL)
		return NULL;
	if (mysql_real_connect(m, NULL, "root", NULL, name[0] ? name :
	    "asyncexec", 0, sock, 0) == NULL) {
		fprintf(stderr, "sql: connect as root via %s: %s\n", sock,
		    mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

static unsigned
vsql(MYSQL *m, const char *fmt, va_list ap)
{
	char	 q[8192];

	vsnprintf(q, sizeof q, fmt, ap);
	if (mysql_query(m, q) != 0) {
		fprintf(stderr, "sql: %s: %u %s\n", q, mysql_errno(m),
		    mysql_error(m));
		return mysql_errno(m) ? mysql_errno(m) : 1;
	}
	return 0;
}

unsigned
f_sql(MYSQL *m, const char *fmt, ...)
{
	MYSQL_RES	*r;
	va_list		 ap;
	unsigned	 e;

	va_start(ap, fmt);
	e = vsql(m, fmt, ap);
	va_end(ap);
	if (e == 0 && (r = mysql_store_result(m)) != NULL)
		mysql_free_result(r);
	return e;
}

long long
f_sql_num(MYSQL *m, const char *fmt, ...)
{
	MYSQL_RES	*r;
	MYSQL_ROW	 row;
	va_list		 ap;
	long long	 v = -1;
	unsigned	 e;

	va_start(ap, fmt);
	e = vsql(m, fmt, ap);
	va_end(ap);
	if (e != 0 || (r = mysql_store_result(m)) == NULL)
		return -1;
	if ((row = mysql_fetch_row(r)) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(r);
	return v;
}
