/*
 * webhook_admin.h - what the tests of asyncexec-admin webhook share (http_webhook_admin,
 * http_webhook_deliveries): running the admin binary with its output captured, reading
 * the test stack's database (sidedb.h), and the key of its webhook_key_file, with which
 * a sealed secret is opened to compare it with the one printed. Static functions: include
 * it in one test program only once, after check.h (static inline: a test that uses
 * a part of them compiles without warnings).
 */
#ifndef ASYNCEXEC_WEBHOOK_ADMIN_H
#define ASYNCEXEC_WEBHOOK_ADMIN_H

#include "fixture.h"
#include "sidedb.h"
#include "webhook.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX		65536
#define NOCONF		"/nonexistent/asyncexec.conf"

extern char **environ;

static char out[OUT_MAX], err[OUT_MAX], dir[64];
static const char *bin, *conf;
static const char *stdout_to;	/* the next run's stdout (NULL: out) */
static MYSQL *m;
static unsigned char key[AEAD_KEY_LEN];	/* the stack's webhook_key_file key */

/* Reads file PATH into BUF (OUT_MAX bytes, NUL-terminated). */
static inline void
slurp(const char *path, char *buf)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd == -1 ? 0 : read(fd, buf, OUT_MAX - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd != -1)
		close(fd);
}

/*
 * Runs asyncexec-admin --config CFG with the words of FMT (split on spaces; a \x01 in a
 * word becomes a space); out and err get its output. Its exit status, or -1.
 */
static inline int
run(const char *cfg, const char *fmt, ...) HTTPC_PRINTF(2, 3);
static inline int
run(const char *cfg, const char *fmt, ...)
{
	static char line[8192], po[128], pe[128];
	char *argv[64], *p, *q;
	posix_spawn_file_actions_t fa;
	int argc = 0, st;
	pid_t pid;
	va_list ap;

	argv[argc++] = (char *)(uintptr_t)bin;
	argv[argc++] = "--config";
	argv[argc++] = (char *)(uintptr_t)cfg;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	for (p = strtok(line, " "); p != NULL && argc < 63; p = strtok(NULL, " ")) {
		for (q = p; (q = strchr(q, '\x01')) != NULL; )
			*q = ' ';
		argv[argc++] = p;
	}
	argv[argc] = NULL;
	snprintf(po, sizeof po, "%s/out", dir);
	snprintf(pe, sizeof pe, "%s/err", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, stdout_to ? stdout_to : po,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600);
	stdout_to = NULL;
	posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	st = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (st != 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	slurp(po, out);
	slurp(pe, err);
	if (strstr(err, "whsec_") != NULL)	/* a secret goes to stdout alone */
		fprintf(stderr, "  a secret on stderr: %s\n", err);
	CHECK(strstr(err, "whsec_") == NULL);
	return WEXITSTATUS(st);
}

#define ADM(...)	run(conf, __VA_ARGS__)

/* The first column of the first row of query FMT as text (static; "" for NULL or no
 * row); *len its length. Exits on an SQL error. */
static inline const char *
sqlv(size_t *len, const char *fmt, va_list ap)
{
	static char v[4096];
	char q[2048];
	MYSQL_RES *r;
	MYSQL_ROW row;
	unsigned long *l;

	vsnprintf(q, sizeof q, fmt, ap);
	sidedb_exec(m, q);
	v[0] = '\0';
	*len = 0;
	if ((r = mysql_store_result(m)) == NULL)
		return v;
	if ((row = mysql_fetch_row(r)) != NULL && row[0] != NULL &&
	    (l = mysql_fetch_lengths(r)) != NULL && l[0] < sizeof v) {
		memcpy(v, row[0], l[0]);
		v[l[0]] = '\0';
		*len = l[0];
	}
	mysql_free_result(r);
	return v;
}

static inline const char *sql(const char *fmt, ...) HTTPC_PRINTF(1, 2);
static inline const char *
sql(const char *fmt, ...)
{
	va_list ap;
	size_t n;
	const char *v;

	va_start(ap, fmt);
	v = sqlv(&n, fmt, ap);
	va_end(ap);
	return v;
}

/* As sql, a number (-1 for NULL or none). */
static inline long long sqln(const char *fmt, ...) HTTPC_PRINTF(1, 2);
static inline long long
sqln(const char *fmt, ...)
{
	va_list ap;
	size_t n;
	const char *v;

	va_start(ap, fmt);
	v = sqlv(&n, fmt, ap);
	va_end(ap);
	return n > 0 ? strtoll(v, NULL, 10) : -1;
}

/* As sql, bytes into BUF (SIZE); their number. */
static inline size_t sqlb(unsigned char *buf, size_t size, const char *fmt, ...)
    HTTPC_PRINTF(3, 4);
static inline size_t
sqlb(unsigned char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;
	const char *v;

	va_start(ap, fmt);
	v = sqlv(&n, fmt, ap);
	va_end(ap);
	n = n < size ? n : size;
	memcpy(buf, v, n);
	return n;
}

/* The value of "NAME\tVALUE" line NAME of out (static), or "". */
static inline const char *
field(const char *name)
{
	static char v[512];
	const char *p = out;
	size_t n = strlen(name);

	v[0] = '\0';
	for (; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == '\t') {
			snprintf(v, sizeof v, "%.*s", (int)strcspn(p + n + 1, "\n"), p + n + 1);
			break;
		}
	return v;
}

static inline struct json_object *
parse_out(void)
{
	struct json_object *o = json_tokener_parse(out);

	if (o == NULL)
		fprintf(stderr, "  not JSON: %.300s\n", out);
	return o;
}

/* The element of JSON array A whose "id" is ID, or NULL. */
static inline struct json_object *
by_id(struct json_object *a, int64_t id)
{
	int64_t v;

	for (size_t i = 0; a != NULL && i < json_object_array_length(a); i++)
		if (jint(json_object_array_get_idx(a, i), "id", &v) && v == id)
			return json_object_array_get_idx(a, i);
	return NULL;
}

static inline long long
endpoints(void)
{
	return sqln("SELECT COUNT(*) FROM s2r_webhook_endpoint");
}

/* Whether the SQL text dump of every row and column of the endpoint table holds the
 * N bytes at P. */
static inline int
dump_holds(const void *p, size_t n)
{
	MYSQL_RES *r;
	MYSQL_ROW row;
	unsigned long *l;
	int found = 0;

	sidedb_exec(m, "SELECT * FROM s2r_webhook_endpoint");
	if ((r = mysql_store_result(m)) == NULL)
		return 1;
	while ((row = mysql_fetch_row(r)) != NULL && (l = mysql_fetch_lengths(r)) != NULL)
		for (unsigned i = 0; i < mysql_num_fields(r); i++)
			if (row[i] != NULL && memmem(row[i], l[i], p, n) != NULL)
				found = 1;
	mysql_free_result(r);
	return found;
}

/* The key bytes of secret text S into K (WEBHOOK_KEY_MAX); their number, 0 if none. */
static inline size_t
secret_key(const char *s, unsigned char *k)
{
	size_t kl = 0;

	return webhook_secret_parse(s, k, &kl) == WEBHOOK_OK ? kl : 0;
}

/* Whether endpoint ID's sealed column COL opens for TENANT to the key of secret TEXT. */
static inline int
opens_to(int64_t id, const char *col, const char *tenant, const char *text)
{
	unsigned char sealed[256], want[WEBHOOK_KEY_MAX], got[WEBHOOK_KEY_MAX];
	size_t n, wl = secret_key(text, want), gl = 0;

	n = sqlb(sealed, sizeof sealed, "SELECT %s FROM s2r_webhook_endpoint WHERE id = "
	    "%lld", col, (long long)id);
	return wl == WEBHOOK_KEY_LEN && webhook_secret_open(key, tenant, sealed, n, got, &gl) ==
	    WEBHOOK_OK && gl == wl && memcmp(got, want, wl) == 0;
}

/*
 * The set-up: the admin binary, the test config, a scratch directory, the database and
 * the key of the stack's webhook_key_file; exits on failure.
 */
static inline void
wa_init(const char *name)
{
	struct config cfg;
	char kerr[512];

	http_test_init();
	bin = test_env("ASYNCEXEC_ADMIN");
	conf = test_env("ASYNCEXEC_TEST_CONFIG");
	snprintf(dir, sizeof dir, "/tmp/test_%s.XXXXXX", name);
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		exit(1);
	}
	sidedb_init(&cfg);
	m = sidedb_open(&cfg);
	if (webhook_keyfile_load(cfg.webhook_key_file, key, kerr, sizeof kerr) != WEBHOOK_OK) {
		fprintf(stderr, "FATAL: the test stack's key file: %s\n", kerr);
		exit(1);
	}
}

/* The end: the database closed, the scratch directory removed. */
static inline void
wa_done(void)
{
	char cmd[128];

	mysql_close(m);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

#endif
