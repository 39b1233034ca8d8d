/*
 * test_fault_commit.c - lost answers: the write went through (or not), the
 * app never heard. A private asyncexec-fcgi (ASYNCEXEC_FCGI, one worker)
 * reaches the shared database through dbproxy, spoken to in raw FastCGI;
 * the route and keys come from the shared stack's admin CLI.
 *
 *   1. claim, COMMIT forwarded and its answer lost: the claim re-reads its
 *      rows and hands out the execution (its token then completes it);
 *   2. claim, COMMIT never arrives: 503, nothing committed, the next claim
 *      gets it at attempt 1;
 *   3. complete, its UPDATE forwarded and the answer lost: 200 (the row
 *      shows this callback's outcome), and the same callback again: 409;
 *   4. complete, its UPDATE never arrives: retried whole, 200, stored once.
 * On a Galera node (its cluster copy, cluster_fault_commit) the re-reads of
 * 1 and 3 run with wsrep_sync_wait = 1 (seen by the proxy); never elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fcgi_client.h"
#include "fixture.h"

#define START_MS	15000
#define REQ_MS		20000

static struct fx	 F;
static MYSQL		*m;
static char		 dir[256], sock[300], logpath[300];
static pid_t		 app;

static void
stop_app(void)
{
	if (app > 0) {
		(void)kill(-app, SIGKILL);
		(void)waitpid(app, NULL, 0);
		app = 0;
	}
}

/* The stack's config with the database at 127.0.0.1:port (TCP, through
 * the proxy; one server even on the cluster), our own socket, one worker
 * and no wsrep_sync_wait of the session's own. 0 or -1. */
static int
write_config(const char *path, int port)
{
	static const char *const drop[] = { "db_socket", "db_host", "db_port",
	    "db_hosts", "db_sync_wait", "listen", "listen_mode", "workers",
	    NULL };
	FILE	*in = fopen(test_env("ASYNCEXEC_TEST_CONFIG"), "r"), *out;
	char	 line[1024], key[128];
	int	 i, skip;

	if (in == NULL || (out = fopen(path, "w")) == NULL)
		return -1;
	while (fgets(line, sizeof line, in) != NULL) {
		skip = 0;
		if (sscanf(line, " %127[a-z_] =", key) == 1)
			for (i = 0; drop[i] != NULL; i++)
				skip |= strcmp(key, drop[i]) == 0;
		if (!skip)
			fputs(line, out);
	}
	/* db_sync_wait 0: only the re-read after a lost answer waits */
	fprintf(out, "db_host = 127.0.0.1\ndb_port = %d\nlisten = %s\n"
	    "listen_mode = 0600\nworkers = 1\ndb_sync_wait = 0\n", port, sock);
	fclose(in);
	return fclose(out) == 0 ? 0 : -1;
}

/* Starts the private instance; 0 once its socket accepts, else -1. */
static int
start_app(int port)
{
	char		 cfg[300];
	long long	 deadline = ut_now_ms() + START_MS;
	int		 fd;

	snprintf(cfg, sizeof cfg, "%s/app.conf", dir);
	if (write_config(cfg, port) == -1)
		return -1;
	atexit(stop_app);
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

/* One request to the private instance; the status (0 on failure). */
static int
fcgi_api(const char *method, const char *uri, const char *key,
    const char *token, const char *body, struct fcgi_resp *r)
{
	char		 auth[256], clen[32];
	const char	*kv[24];
	size_t		 n = 0, blen = body ? strlen(body) : 0;
	long long	 deadline = ut_now_ms() + REQ_MS;
	int		 fd;

	memset(r, 0, sizeof *r);
	snprintf(auth, sizeof auth, "Bearer %s", key);
	snprintf(clen, sizeof clen, "%zu", blen);
	kv[2 * n] = "REQUEST_METHOD", kv[2 * n + 1] = method, n++;
	kv[2 * n] = "REQUEST_URI", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SCRIPT_NAME", kv[2 * n + 1] = uri, n++;
	kv[2 * n] = "SERVER_PROTOCOL", kv[2 * n + 1] = "HTTP/1.1", n++;
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	if (token != NULL)
		kv[2 * n] = "HTTP_X_CALLBACK_TOKEN", kv[2 * n + 1] = token, n++;
	if (body != NULL) {
		kv[2 * n] = "CONTENT_TYPE", kv[2 * n + 1] = "application/json",
		    n++;
		kv[2 * n] = "CONTENT_LENGTH", kv[2 * n + 1] = clen, n++;
	}
	if ((fd = fcgi_connect(sock)) == -1)
		return 0;
	if (fcgi_begin(fd, deadline) == 0 && fcgi_params(fd, kv, n,
	    deadline) == 0 && (blen == 0 || fcgi_stdin(fd, body, blen,
	    deadline) == 0) && fcgi_stdin(fd, NULL, 0, deadline) == 0)
		(void)fcgi_read(fd, r, deadline);
	close(fd);
	return r->status;
}

/* Claims one on F's route through the private instance into c; status. */
static int
claim(struct claim *c, int64_t *attempt)
{
	struct fcgi_resp	 r;
	struct json_object	*o;
	char			 uri[300];
	int			 st;

	memset(c, 0, sizeof *c);
	snprintf(uri, sizeof uri, "/v1/backend/%s/claim", F.route);
	st = fcgi_api("POST", uri, F.bkey, NULL, "{\"max\":1}", &r);
	if (st == 200 && (o = json_tokener_parse(r.body ? r.body : "")) !=
	    NULL) {
		if (!fx_claim_item(o, 0, c))
			st = -1;	/* 200 without an execution */
		*attempt = 0;
		jint(o, "executions.0.attempt", attempt);
		json_object_put(o);
	} else if (st != 200)
		fprintf(stderr, "  claim: %d %.200s\n", st, r.body ? r.body : "");
	fcgi_resp_free(&r);
	return st;
}

/* complete with {"result":"<result>"} through the private instance. */
static int
complete(const struct claim *c, const char *result)
{
	struct fcgi_resp	 r;
	char			 uri[128], body[256];
	int			 st;

	snprintf(uri, sizeof uri, "/v1/callbacks/%lld/complete",
	    (long long)c->id);
	snprintf(body, sizeof body, "{\"result\":\"%s\"}", result);
	st = fcgi_api("POST", uri, F.bkey, c->token, body, &r);
	if (st != 200)
		fprintf(stderr, "  complete: %d %.200s\n", st,
		    r.body ? r.body : "");
	fcgi_resp_free(&r);
	return st;
}

/* Polls GET /readyz of the private instance until 200, for START_MS at most; 1 or 0. */
static int
wait_ready(void)
{
	struct fcgi_resp	 r;
	long long		 deadline = ut_now_ms() + START_MS;
	int			 st = 0;

	while (st != 200 && ut_now_ms() < deadline) {
		st = fcgi_api("GET", "/readyz", F.bkey, NULL, NULL, &r);
		fcgi_resp_free(&r);
		if (st != 200)
			ut_pause_ms(50);
	}
	return st == 200;
}

/* What a session sends to make its reads wait for the cluster (Galera). */
#define SYNC_READ	"wsrep_sync_wait = 1"

static int	 wsrep;		/* the database is a Galera node */

/*
 * After a lost answer the row is read again; on a Galera node (the
 * cluster copy of this test) that read runs with wsrep_sync_wait = 1,
 * so it sees every write the cluster committed before it: the session
 * sent SET SESSION wsrep_sync_wait = 1 through the proxy. A server
 * without Galera never gets it.
 */
static void
check_sync_read(const char *what)
{
	int	 n = dbproxy_seen();

	printf("%s: %d sync-wait read(s) after the lost answer (%s)\n", what,
	    n, wsrep ? "Galera" : "no Galera");
	if (wsrep)
		CHECK(n >= 1);
	else
		CHECK_EQ_INT(n, 0);
}

/* How many rows of cid hold status and result "\"<result>\"". */
static long long
stored(const char *cid, const char *status, const char *result)
{
	return f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "correlation_id = '%s' AND status = '%s' AND result_payload = "
	    "'\"%s\"'", cid, status, result);
}

static void
test_claim_commit_lost(void)
{
	struct sub	 s;
	struct claim	 c;
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired();

	CHECK(fx_submit_ok(&F, NULL, "{\"commit\":\"lost\"}", &s));
	dbproxy_watch(SYNC_READ);
	dbproxy_arm(DBPROXY_LOSE_ANSWER, "COMMIT");
	CHECK_EQ_INT(claim(&c, &at), 200);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	check_sync_read("claim");
	printf("claim, COMMIT's answer lost: %s, attempt %lld\n",
	    c.cid[0] ? "handed out" : "nothing", (long long)at);
	CHECK_EQ_STR(c.cid, s.cid);
	CHECK_EQ_INT(at, 1);
	CHECK_EQ_INT(complete(&c, "after-lost-commit"), 200);
	CHECK_EQ_INT(stored(s.cid, "completed", "after-lost-commit"), 1);
}

static void
test_claim_commit_dropped(void)
{
	struct sub	 s;
	struct claim	 c;
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired(), st;

	CHECK(fx_submit_ok(&F, NULL, "{\"commit\":\"dropped\"}", &s));
	dbproxy_arm(DBPROXY_DROP, "COMMIT");
	st = claim(&c, &at);
	printf("claim, COMMIT never arrived: %d\n", st);
	CHECK_EQ_INT(st, 503);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	CHECK_EQ_INT(f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE correlation_id = '%s' AND attempts = 0 AND "
	    "callback_token_hash IS NULL", s.cid), 1);
	CHECK_EQ_INT(claim(&c, &at), 200);
	CHECK_EQ_STR(c.cid, s.cid);
	CHECK_EQ_INT(at, 1);
	CHECK_EQ_INT(complete(&c, "after-dropped-commit"), 200);
}

/* Finalization whose UPDATE is lost (mode) after being sent. */
static void
test_complete(enum dbproxy_mode mode, const char *what)
{
	struct sub	 s;
	struct claim	 c;
	char		 marker[96];
	int64_t		 at = 0;
	int		 f0 = dbproxy_fired(), st;

	CHECK(fx_submit_ok(&F, NULL, "{\"complete\":1}", &s));
	CHECK_EQ_INT(claim(&c, &at), 200);
	snprintf(marker, sizeof marker, "%s-%s", what, unique_suffix());
	dbproxy_watch(SYNC_READ);
	dbproxy_arm(mode, marker);
	st = complete(&c, marker);
	printf("complete, %s: %d\n", what, st);
	CHECK_EQ_INT(st, 200);
	CHECK_EQ_INT(dbproxy_fired(), f0 + 1);
	check_sync_read(what);
	CHECK_EQ_INT(stored(s.cid, "completed", marker), 1);
	/* it won once: the same callback again is a conflict */
	CHECK_EQ_INT(complete(&c, "again"), 409);
	CHECK_EQ_INT(stored(s.cid, "completed", marker), 1);
}

int
main(void)
{
	int	 pport;

	http_test_init();
	f_init();
	snprintf(dir, sizeof dir, "/tmp/fault-commit.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(sock, sizeof sock, "%s/app.sock", dir);
	snprintf(logpath, sizeof logpath, "%s/app.log", dir);
	fx_setup(&F, "fault-commit");
	if ((m = f_sql_open()) == NULL ||
	    (wsrep = (int)f_sql_num(m, "SELECT @@wsrep_on")) < 0 ||
	    (pport = dbproxy_start((int)config_long("db_port", 0))) == -1 ||
	    start_app(pport) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy and the app\n");
		return 1;
	}
	/* ready first: its workers' first connections go through the proxy, and under load a
	 * slow first connect puts a worker into its reconnect backoff (503 meanwhile) */
	CHECK(wait_ready());
	test_claim_commit_lost();
	test_claim_commit_dropped();
	test_complete(DBPROXY_LOSE_ANSWER, "answer-lost");
	test_complete(DBPROXY_DROP, "update-dropped");
	stop_app();
	fprintf(stderr, "  private app log (%s):\n", logpath);
	f_log_show(logpath, 0, 40);
	mysql_close(m);
	fx_free(&F);
	(void)unlink(logpath);
	(void)unlink(sock);
	snprintf(logpath, sizeof logpath, "%s/app.conf", dir);
	(void)unlink(logpath);
	(void)rmdir(dir);
	return check_done("fault_commit");
}
