/*
 * scratch.c - a scratch database and its own asyncexec-fcgi (scratch.h).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fcgi_client.h"
#include "proc_util.h"
#include "scratch.h"

int
scratch_init(struct scratch *s, const char *tag)
{
	char		 sql[512], extra[128];
	char		*text;
	const char	*sock;

	memset(s, 0, sizeof(*s));
	if ((text = read_file(base_cfg)) == NULL ||
	    (sock = config_value(text, "db_socket")) == NULL) {
		fprintf(stderr, "scratch: the test config has no db_socket\n");
		free(text);
		return -1;
	}
	snprintf(s->dbsock, sizeof(s->dbsock), "%s", sock);
	free(text);
	snprintf(s->db, sizeof(s->db), "asyncexec_scratch_%s_%ld", tag,
	    (long)getpid());
	snprintf(s->cfg, sizeof(s->cfg), "%s/%s.conf", tmpdir, tag);
	snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", tmpdir, tag);
	snprintf(s->log, sizeof(s->log), "%s/%s.log", tmpdir, tag);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'localhost'; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'127.0.0.1'", s->db, s->db, s->db);
	snprintf(extra, sizeof(extra), "db_name = %s\n", s->db);
	return scratch_sql(s, sql) == 0 &&
	    derive_config_x(s->cfg, s->sock, WORKERS_STR, extra, NULL) == 0 ?
	    0 : -1;
}

int
scratch_sql(const struct scratch *s, const char *sql)
{
	char	 sockarg[300], out[4096], err[4096];
	char	*argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot",
		    sockarg, "-e", (char *)(uintptr_t)sql, NULL };

	snprintf(sockarg, sizeof(sockarg), "--socket=%s", s->dbsock);
	if (run(argv, out, err, sizeof(out), 30000) != 0) {
		fprintf(stderr, "  mariadb -e \"%s\" failed: %s\n", sql, err);
		return -1;
	}
	return 0;
}

/* asyncexec-admin --config <scratch> and the words of ap; as run(). */
static int
admin_v(const struct scratch *s, char *out, char *err, size_t size,
    va_list ap)
{
	char		*argv[12];
	const char	*a;
	int		 n = 0;

	argv[n++] = (char *)(uintptr_t)admin_bin;
	argv[n++] = "--config";
	argv[n++] = (char *)(uintptr_t)s->cfg;
	while (n < 11 && (a = va_arg(ap, const char *)) != NULL)
		argv[n++] = (char *)(uintptr_t)a;
	argv[n] = NULL;
	return run(argv, out, err, size, 60000);
}

int
scratch_admin(const struct scratch *s, char *out, size_t size, ...)
{
	char		 err[4096];
	const char	*verb;
	va_list		 ap;
	int		 rc;

	va_start(ap, size);
	verb = va_arg(ap, const char *);
	va_end(ap);
	va_start(ap, size);
	rc = admin_v(s, out, err, size < sizeof(err) ? size : sizeof(err), ap);
	va_end(ap);
	if (rc == -1)
		return -1;
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
		fprintf(stderr, "  asyncexec-admin %s: status %d: %s\n",
		    verb ? verb : "", rc, err);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int
scratch_admin_err(const struct scratch *s, char *out, char *err,
    size_t size, ...)
{
	va_list		 ap;
	int		 rc;

	va_start(ap, size);
	rc = admin_v(s, out, err, size, ap);
	va_end(ap);
	if (rc == -1)
		return -1;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int
scratch_route_key(const struct scratch *s, char *auth, size_t size)
{
	char	 out[4096];

	if (scratch_admin(s, out, sizeof out, "route", "add", "e/s/o",
	    NULL) != 0 || scratch_admin(s, out, sizeof out, "key", "create",
	    "--tenant", "t", NULL) != 0)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	snprintf(auth, size, "Bearer %.100s", out);
	return 0;
}

int
scratch_start(struct scratch *s)
{
	struct up_wait	 u;

	if ((s->master = start_master(s->cfg, s->log, -1)) <= 0)
		return -1;
	u = (struct up_wait){ s->master, s->sock, 0 };
	return wait_for(answers, &u, START_MS) && u.status == 200 ? 0 : -1;
}

int
scratch_stop(struct scratch *s)
{
	if (s->master <= 0)
		return -1;
	kill(s->master, SIGTERM);
	return wait_master_exit(s->master, STOP_MS);
}

int
scratch_request(const struct scratch *s, const char *method, const char *uri,
    const char *auth, const char *token, const char *body, char *out,
    size_t size)
{
	const char		*kv[20];
	char			 clen[24];
	long long		 deadline = ut_now_ms() + REQ_MS;
	struct fcgi_resp	 r;
	size_t			 n = 0;
	int			 fd, status = -1;

#define KV(k, v)	(kv[2 * n] = (k), kv[2 * n + 1] = (v), n++)
	KV("REQUEST_METHOD", method);
	KV("REQUEST_URI", uri);
	KV("SCRIPT_NAME", uri);
	KV("SERVER_PROTOCOL", "HTTP/1.1");
	if (fcgi_loopback_path(uri))	/* as nginx's loopback server */
		KV(FCGI_OPERATOR_PARAM, "1");
	if (auth != NULL)
		KV("HTTP_AUTHORIZATION", auth);
	if (token != NULL)
		KV("HTTP_X_POLL_TOKEN", token);
	if (body != NULL) {
		snprintf(clen, sizeof(clen), "%zu", strlen(body));
		KV("CONTENT_TYPE", "application/json");
		KV("CONTENT_LENGTH", clen);
	}
#undef KV
	memset(&r, 0, sizeof(r));
	if ((fd = fcgi_connect(s->sock)) == -1)
		return -1;
	if (fcgi_begin(fd, deadline) == 0 && fcgi_params(fd, kv, n, deadline) == 0 &&
	    (body == NULL || fcgi_stdin(fd, body, strlen(body), deadline) == 0) &&
	    fcgi_stdin(fd, NULL, 0, deadline) == 0 && fcgi_read(fd, &r, deadline) == 0)
		status = r.status;
	close(fd);
	if (out != NULL && size > 0)
		snprintf(out, size, "%.*s", r.body ? (int)r.body_len : 0,
		    r.body ? r.body : "");
	fcgi_resp_free(&r);
	return status;
}

void
scratch_drop(struct scratch *s)
{
	char	 sql[128];

	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", s->db);
	(void)scratch_sql(s, sql);
	remove_tmpdir();
}
