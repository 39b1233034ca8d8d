/*
 * test_schema.c - asyncexec-fcgi started against a database whose schema is behind the
 * build (deployed before `asyncexec-admin migrate`): /healthz stays 200, /readyz says 503
 * "schema not current" and what to run, requests get 503 (never 500), the log says what
 * to run without a line per request, and after `migrate` the same processes become ready
 * and serve, without a restart.
 *
 * It uses a scratch database asyncexec_scratch_<pid> on the test stack's MariaDB (made
 * and dropped through the server's root account over its unix socket), migrated with
 * `asyncexec-admin migrate --to N`.
 */
#include "check.h"
#include "fcgi_client.h"
#include "proc_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repo.h"

static char dbname[64], cfg[300], sock[300], logf[300], sql_sock[256];

/* Runs SQL as the test server's root over its socket; 0 or -1. */
static int
root_sql(const char *sql)
{
	char sockarg[300], out[4096], err[4096];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot", sockarg, "-e",
	    (char *)(uintptr_t)sql, NULL };

	snprintf(sockarg, sizeof sockarg, "--socket=%s", sql_sock);
	if (run(argv, out, err, sizeof out, 30000) != 0) {
		fprintf(stderr, "  mariadb -e \"%s\" failed: %s\n", sql, err);
		return -1;
	}
	return 0;
}

/* asyncexec-admin --config cfg ARGS...; its exit status, out gets stdout. */
static int
admin_scratch(char *out, size_t size, const char *a1, const char *a2, const char *a3,
    const char *a4)
{
	char err[4096];
	char *argv[] = { (char *)(uintptr_t)admin_bin, "--config", cfg, (char *)(uintptr_t)a1,
	    (char *)(uintptr_t)a2, (char *)(uintptr_t)a3, (char *)(uintptr_t)a4, NULL };
	int rc = run(argv, out, err, size, 60000);

	if (rc != 0)
		fprintf(stderr, "  asyncexec-admin %s %s: status %d: %s\n", a1,
		    a2 ? a2 : "", rc, err);
	return rc;
}

static char auth[128];	/* "Bearer ak_..." of the scratch database, once made */

/* Status of METHOD URI (with auth and a poll token when made); body copied to out. */
static int
request(const char *method, const char *uri, char *out, size_t size)
{
	const char *kv[] = { "REQUEST_METHOD", method, "REQUEST_URI", uri, "SCRIPT_NAME", uri,
	    "SERVER_PROTOCOL", "HTTP/1.1", "HTTP_AUTHORIZATION", auth,
	    "HTTP_X_POLL_TOKEN", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" };
	long long deadline = fcgi_now_ms() + REQ_MS;
	struct fcgi_resp r;
	int fd, status = -1;

	memset(&r, 0, sizeof r);
	if ((fd = fcgi_connect(sock)) != -1) {
		if (fcgi_begin(fd, deadline) == 0 &&
		    fcgi_params(fd, kv, auth[0] ? 6 : 4, deadline) == 0 &&
		    fcgi_stdin(fd, NULL, 0, deadline) == 0 && fcgi_read(fd, &r, deadline) == 0)
			status = r.status;
		close(fd);
	}
	if (out != NULL)
		snprintf(out, size, "%.*s", r.body ? (int)r.body_len : 0, r.body ? r.body : "");
	fcgi_resp_free(&r);
	return status;
}

/* Lines of the master's log that contain needle. */
static int
log_count(const char *needle)
{
	char *t = read_file(logf), *p;
	int n = 0;

	for (p = t; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(t);
	return n;
}

static int
is_ready(void *arg)
{
	(void)arg;
	return request("GET", "/readyz", NULL, 0) == 200;
}

/* The schema at version v (< SCHEMA_VERSION): not ready, 503s, bounded log. */
static void
check_behind(int v)
{
	char body[2048], vs[16];
	int i, lines, status;

	snprintf(vs, sizeof vs, "%d", v);
	CHECK_EQ_INT(admin_scratch(body, sizeof body, "migrate", "--to", vs, NULL), 0);
	CHECK(strstr(body, "schema version") != NULL);
	CHECK_EQ_INT(request("GET", "/healthz", NULL, 0), 200);
	for (i = 0; i < 20; i++) {
		CHECK_EQ_INT(request("GET", "/readyz", body, sizeof body), 503);
		/* a poll needs the token key of migration 3: 503 before it */
		status = request("GET", "/v1/executions/e/s/o/x", NULL, 0);
		CHECK(status == (v < 3 ? 503 : 404));
	}
	CHECK(strstr(body, "schema") != NULL && strstr(body, "asyncexec-admin migrate") != NULL);
	if (strstr(body, "asyncexec-admin migrate") == NULL)
		fprintf(stderr, "  /readyz at schema %d said: %s\n", v, body);
	/* the log says what to run, once per worker and state, not once per request */
	lines = log_count("asyncexec-admin migrate");
	CHECK(lines >= 1 && lines <= 4 * WORKERS);
	if (lines < 1 || lines > 4 * WORKERS) {
		fprintf(stderr, "  %d log lines name migrate at schema %d\n", lines, v);
		dump_log(logf);
	}
}

int
main(void)
{
	char sql[512], out[4096], uri[128];
	const char *text;
	pid_t master;
	struct up_wait u;

	if (proc_init("schema") == -1)
		return 1;
	text = read_file(base_cfg);
	if (text == NULL || config_value(text, "db_socket") == NULL) {
		fprintf(stderr, "test_schema: the test config has no db_socket\n");
		return 1;
	}
	snprintf(sql_sock, sizeof sql_sock, "%s", config_value(text, "db_socket"));
	snprintf(dbname, sizeof dbname, "asyncexec_scratch_%ld", (long)getpid());
	snprintf(sql, sizeof sql, "CREATE DATABASE %s; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'localhost'; GRANT ALL ON %s.* TO 'asyncexec'@'127.0.0.1'",
	    dbname, dbname, dbname);
	CHECK(root_sql(sql) == 0);
	snprintf(cfg, sizeof cfg, "%s/scratch.conf", tmpdir);
	snprintf(sock, sizeof sock, "%s/scratch.sock", tmpdir);
	snprintf(logf, sizeof logf, "%s/scratch.log", tmpdir);
	snprintf(sql, sizeof sql, "db_name = %s\n", dbname);
	CHECK(derive_config_x(cfg, sock, WORKERS_STR, sql, NULL) == 0);

	/* deployed before migrate: schema 2 lacks s2r_secret (migration 3) */
	CHECK_EQ_INT(admin_scratch(out, sizeof out, "migrate", "--to", "2", NULL), 0);
	CHECK_EQ_INT(admin_scratch(out, sizeof out, "route", "add", "e/s/o", NULL), 0);
	CHECK_EQ_INT(admin_scratch(out, sizeof out, "key", "create", "--tenant", "t"), 0);
	out[strcspn(out, "\n")] = '\0';
	snprintf(auth, sizeof auth, "Bearer %.100s", out);
	master = start_master(cfg, logf, -1);
	u = (struct up_wait){ master, sock, 0 };
	CHECK(master > 0 && wait_for(answers, &u, START_MS) && u.status == 200);
	check_behind(2);
	check_behind(SCHEMA_VERSION - 1);

	/* migrate while it runs: ready without a restart, and it serves */
	CHECK_EQ_INT(admin_scratch(out, sizeof out, "migrate", NULL, NULL, NULL), 0);
	CHECK(wait_for(is_ready, NULL, 5000));
	/* the poll's statements prepare now: the (unknown) execution is a 404 */
	snprintf(uri, sizeof uri, "/v1/executions/e/s/o/x");
	CHECK_EQ_INT(request("GET", uri, out, sizeof out), 404);
	kill(master, SIGTERM);
	CHECK_EQ_INT(wait_master_exit(master, STOP_MS), 0);

	snprintf(sql, sizeof sql, "DROP DATABASE %s", dbname);
	CHECK(root_sql(sql) == 0);
	return check_done("proc_schema");
}
