/*
 * papp.c - the private asyncexec-fcgi of the dbproxy tests (papp.h).
 */
#include "papp.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dbproxy.h"
#include "fault.h"
#include "httpc.h"

#define START_MS	15000
/* above the longest a request may wait on the database and the
 * master's stop deadline (STOP_KILL_SECONDS), so that a test sees the
 * answer or the worker's death */
#define REQ_MS		40000

static char	 dir[256], sock[300], logpath[300], cfg[300];
static pid_t	 app;
static int	 proxy_port;
static const char *more = "";	/* papp_extra */

static void
kill_app(void)
{
	if (app > 0) {
		(void)kill(-app, SIGKILL);
		(void)waitpid(app, NULL, 0);
		app = 0;
	}
}

/* The proxied config (f_proxy_config) with our own socket and one
 * worker. 0 or -1. */
static int
write_config(const char *path, int port)
{
	char	 extra[1200];

	snprintf(extra, sizeof extra, "listen = %s\nlisten_mode = 0600\n"
	    "workers = 1\n%s", sock, more);
	return f_proxy_config(path, port, extra);
}

void
papp_extra(const char *lines)
{
	more = lines != NULL ? lines : "";
}

/* Forks and execs the app; 0 once its socket accepts, else -1. */
static int
spawn(int port)
{
	long long	 deadline = ut_now_ms() + START_MS;
	int		 fd;

	if (write_config(cfg, port) == -1)
		return -1;
	atexit(kill_app);
	if ((app = fork()) == 0) {
		setpgid(0, 0);
		if ((fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(test_env("ASYNCEXEC_FCGI"), "asyncexec-fcgi", "--config",
		    cfg, (char *)NULL);
		_exit(127);
	}
	while (ut_now_ms() < deadline) {
		if ((fd = fcgi_connect(sock)) >= 0) {
			close(fd);
			return 0;
		}
		ut_pause_ms(20);
	}
	return -1;
}

/* One request on fd (with FCGI_KEEP_CONN when keep) into r; 0 or -1. */
static int
send_req(int fd, int keep, const char *method, const char *uri,
    const char *key, const char *token, const char *body,
    struct fcgi_resp *r)
{
	char		 auth[256], clen[32];
	const char	*kv[24];
	size_t		 n = 0, blen = body ? strlen(body) : 0;
	long long	 deadline = ut_now_ms() + REQ_MS;

	memset(r, 0, sizeof *r);
	snprintf(auth, sizeof auth, "Bearer %s", key);
	snprintf(clen, sizeof clen, "%zu", blen);
	kv[2 * n] = "REQUEST_METHOD", kv[2 * n + 1] = method, n++;
	kv[2 * n] = "REQUEST_URI", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SCRIPT_NAME", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SERVER_PROTOCOL", kv[2 * n + 1] = "HTTP/1.1", n++;
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	if (fcgi_loopback_path(uri))	/* as nginx's loopback server */
		kv[2 * n] = FCGI_OPERATOR_PARAM, kv[2 * n + 1] = "1", n++;
	if (token != NULL)
		kv[2 * n] = "HTTP_X_CALLBACK_TOKEN", kv[2 * n + 1] = token, n++;
	if (body != NULL) {
		kv[2 * n] = "CONTENT_TYPE", kv[2 * n + 1] = "application/json",
		    n++;
		kv[2 * n] = "CONTENT_LENGTH", kv[2 * n + 1] = clen, n++;
	}
	if ((keep ? fcgi_begin_keep(fd, deadline) : fcgi_begin(fd,
	    deadline)) == 0 && fcgi_params(fd, kv, n, deadline) == 0 &&
	    (blen == 0 || fcgi_stdin(fd, body, blen, deadline) == 0) &&
	    fcgi_stdin(fd, NULL, 0, deadline) == 0)
		return fcgi_read(fd, r, deadline);
	return -1;
}

int
papp_api(const char *method, const char *uri, const char *key,
    const char *token, const char *body, struct fcgi_resp *r)
{
	int	 fd;

	memset(r, 0, sizeof *r);
	if ((fd = fcgi_connect(sock)) == -1)
		return 0;
	(void)send_req(fd, 0, method, uri, key, token, body, r);
	close(fd);
	return r->status;
}

int
papp_connect(void)
{
	return fcgi_connect(sock);
}

int
papp_api_keep(int fd, const char *method, const char *uri, const char *key,
    const char *token, const char *body, struct fcgi_resp *r)
{
	(void)send_req(fd, 1, method, uri, key, token, body, r);
	return r->status;
}

/* Polls GET /readyz until 200, for START_MS at most; 1 or 0. Ready first:
 * its worker's first connection goes through the proxy, and under load a
 * slow first connect puts a worker into its reconnect backoff (503
 * meanwhile). */
static int
wait_ready(const char *key)
{
	struct fcgi_resp	 r;
	long long		 deadline = ut_now_ms() + START_MS;
	int			 st = 0;

	while (st != 200 && ut_now_ms() < deadline) {
		st = papp_api("GET", "/readyz", key, NULL, NULL, &r);
		fcgi_resp_free(&r);
		if (st != 200)
			ut_pause_ms(50);
	}
	return st == 200;
}

int
papp_start(const char *key)
{
	int	 port;

	if ((port = dbproxy_start((int)config_long("db_port", 0))) == -1)
		return -1;
	proxy_port = port;
	snprintf(dir, sizeof dir, "/tmp/fault-papp.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(sock, sizeof sock, "%s/app.sock", dir);
	snprintf(logpath, sizeof logpath, "%s/app.log", dir);
	snprintf(cfg, sizeof cfg, "%s/app.conf", dir);
	if (spawn(port) == -1 || !wait_ready(key))
		return -1;
	return 0;
}

int
papp_respawn(const char *key)
{
	if (app > 0 || proxy_port == 0)
		return -1;
	(void)unlink(logpath);
	(void)unlink(sock);
	if (spawn(proxy_port) == -1 || !wait_ready(key))
		return -1;
	return 0;
}

int
papp_signal(int sig)
{
	return app > 0 ? kill(app, sig) : -1;
}

int
papp_wait(long long ms)
{
	long long	 deadline = ut_now_ms() + ms;
	int		 st;

	while (app > 0) {
		if (waitpid(app, &st, WNOHANG) == app) {
			app = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			    128 + WTERMSIG(st);
		}
		if (ut_now_ms() >= deadline)
			return -1;
		ut_pause_ms(20);
	}
	return -1;
}

int
papp_log_contains(const char *needle)
{
	return f_file_contains(logpath, needle);
}

void
papp_stop(void)
{
	kill_app();
	fprintf(stderr, "  private app log (%s):\n", logpath);
	f_log_show(logpath, 0, 40);
	(void)unlink(logpath);
	(void)unlink(sock);
	(void)unlink(cfg);
	(void)rmdir(dir);
}
