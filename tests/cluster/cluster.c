/*
 * cluster.c - the cluster tests' load, answer classification, cluster
 * control and loss checks (see cluster.h).
 */
#include <mysql.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"

#define PACE_MS		5	/* between two rounds of one load thread */
#define PROBE_MS	20	/* between two submits of a probe */
#define RETRY_BOUND_MS	60000	/* a request is retried for at most this long */
#define RETRY_PAUSE_MS	200	/* at most this long between two tries */
#define LEASE_BODY	"{\"max\":1,\"leaseSeconds\":300}"

static struct config	 cfg;
static const struct fx	*F;
static struct cl_exec	*ex;
static atomic_long	 next_slot;
static atomic_int	 running;
static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;
static struct cl_stats	 st;
static pthread_t	 th[CL_MAX_THREADS];
static int		 nth;
static atomic_llong	 probe_mark, probe_ok[2];
static char		 ctl_out[8192];
static char		 restore[4][CL_RESTORE_MAX];

/* The exit hook: runs what cl_restore left to be run. */
static void
run_restore(void)
{
	int i;

	for (i = 0; i < 4; i++)
		if (restore[i][0] != '\0') {
			fprintf(stderr, "cluster: restoring: %s\n", restore[i]);
			cl_ctl(restore[i]);
		}
}

static void
on_signal(int sig)
{
	(void)sig;
	exit(1);	/* runs run_restore through atexit */
}

void
cl_init(void)
{
	char err[512];

	http_test_init();
	test_env("ASYNCEXEC_TEST_CLUSTERCTL");
	setvbuf(stdout, NULL, _IOLBF, 0);
	mysql_library_init(0, NULL, NULL);
	if (config_load(&cfg, test_env("ASYNCEXEC_TEST_CONFIG"), err, sizeof err) == -1) {
		fprintf(stderr, "FATAL: %s\n", err);
		exit(1);
	}
	if ((ex = calloc(CL_MAX_ACKED, sizeof *ex)) == NULL)
		exit(1);
	atexit(run_restore);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
}

void
cl_restore(int slot, const char *args)
{
	snprintf(restore[slot], sizeof restore[slot], "%s", args ? args : "");
}

int
cl_ctl(const char *args)
{
	char cmd[1024], *line, *save;
	size_t n;
	FILE *f;
	int rc;

	snprintf(cmd, sizeof cmd, "'%s' %s", test_env("ASYNCEXEC_TEST_CLUSTERCTL"), args);
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	n = fread(ctl_out, 1, sizeof ctl_out - 1, f);
	ctl_out[n] = '\0';
	rc = pclose(f);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
	printf("  clusterctl %s: exit %d\n", args, rc);
	if (n > 0) {
		char copy[sizeof ctl_out];

		memcpy(copy, ctl_out, n + 1);
		for (line = strtok_r(copy, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			printf("    %s\n", line);
	}
	return rc;
}

const char *
cl_ctl_out(void)
{
	return ctl_out;
}

/* ---- answers ------------------------------------------------------------------------- */

/*
 * Classifies answer R to WHAT, which wants status WANT: 1 when it is WANT, 0 when
 * another try may help (503 with Retry-After; nginx's 502/504 and no answer, which
 * are counted bad), -1 otherwise (bad).
 */
static int
classify(const struct http_resp *r, int want, const char *what)
{
	const char *ra = http_header(r, "retry-after");
	long long nbad;

	pthread_mutex_lock(&mu);
	if (r->status == want) {
		st.ok++;
		pthread_mutex_unlock(&mu);
		return 1;
	}
	if (r->status == 503 && ra != NULL && is_digits(ra)) {
		st.r503++;
		pthread_mutex_unlock(&mu);
		return 0;
	}
	nbad = ++st.bad;
	st.last_bad_ms = ut_now_ms();
	st.s500 += r->status == 500;
	st.s502 += r->status == 502;
	st.s504 += r->status == 504;
	st.s0 += r->status == 0;
	pthread_mutex_unlock(&mu);
	if (nbad <= 20)
		fprintf(stderr, "  unexpected answer to %s: %d (want %d or 503 with "
		    "Retry-After): %.200s\n", what, r->status, want, r->body ? r->body : "");
	return r->status == 502 || r->status == 504 || r->status == 0 ? 0 : -1;
}

/* The pause before another try after R: its Retry-After, at most RETRY_PAUSE_MS. */
static void
retry_pause(const struct http_resp *r)
{
	const char *ra = http_header(r, "retry-after");
	long ms = ra != NULL && is_digits(ra) ? atol(ra) * 1000 : RETRY_PAUSE_MS;

	pthread_mutex_lock(&mu);
	st.retries++;
	pthread_mutex_unlock(&mu);
	ut_pause_ms(ms < RETRY_PAUSE_MS ? ms : RETRY_PAUSE_MS);
}

/* The slot of correlation id "c-N", or -1. */
static long
cid_slot(const char *cid)
{
	long n;

	if (strncmp(cid, "c-", 2) != 0 || !is_digits(cid + 2))
		return -1;
	n = atol(cid + 2);
	return n >= 0 && n < CL_MAX_ACKED ? n : -1;
}

/*
 * Submits a new execution (correlation id "c-SLOT"), trying the same request again
 * after a 503 / 502 / 504 (a retry is the same execution) while the load runs and for
 * at most RETRY_BOUND_MS. 1 when acknowledged (202).
 */
static int
one_submit(void)
{
	long slot = atomic_fetch_add(&next_slot, 1);
	struct http_resp r;
	struct json_object *o;
	char cid[CID_MAX], body[64];
	int64_t t0 = ut_now_ms();
	int c;

	if (slot >= CL_MAX_ACKED)
		return 0;
	snprintf(cid, sizeof cid, "c-%ld", slot);
	snprintf(body, sizeof body, "{\"slot\":%ld}", slot);
	for (;;) {
		fx_submit(F, F->ckey, cid, body, &r);
		if ((c = classify(&r, 202, "submit")) == 1)
			break;
		if (c == -1 || !running || ut_now_ms() - t0 > RETRY_BOUND_MS) {
			http_resp_free(&r);
			return 0;
		}
		retry_pause(&r);
		http_resp_free(&r);
	}
	if ((o = json_body(&r)) != NULL && jstr(o, "pollToken") != NULL) {
		pthread_mutex_lock(&mu);
		snprintf(ex[slot].token, sizeof ex[slot].token, "%s", jstr(o, "pollToken"));
		ex[slot].acked = 1;
		st.acked++;
		pthread_mutex_unlock(&mu);
	}
	json_object_put(o);
	http_resp_free(&r);
	return 1;
}

/* Completes claim C of slot SLOT as thread T, retrying as one_submit does. */
static void
one_complete(const struct claim *c, long slot, int t)
{
	struct http_resp r;
	char result[64], body[96];
	int64_t t0 = ut_now_ms();
	int k;

	snprintf(result, sizeof result, "{\"s\":%ld,\"t\":%d}", slot, t);
	snprintf(body, sizeof body, "{\"result\":%s}", result);
	for (;;) {
		fx_callback(F->bkey, c->id, "complete", c->token, body, &r);
		if ((k = classify(&r, 200, "complete")) == 1)
			break;
		if (k == -1 || !running || ut_now_ms() - t0 > RETRY_BOUND_MS) {
			http_resp_free(&r);
			return;
		}
		retry_pause(&r);
		http_resp_free(&r);
	}
	http_resp_free(&r);
	pthread_mutex_lock(&mu);
	ex[slot].completed = 1;
	snprintf(ex[slot].result, sizeof ex[slot].result, "%s", result);
	st.completed++;
	pthread_mutex_unlock(&mu);
}

/* Claims one execution (300 s lease) and completes it. */
static void
one_claim(int t)
{
	struct http_resp r;
	struct json_object *o;
	struct claim c;
	long slot;
	int got;

	fx_claim(F, F->bkey, LEASE_BODY, &r);
	if (classify(&r, 200, "claim") != 1) {
		http_resp_free(&r);
		return;
	}
	got = (o = json_body(&r)) != NULL && jlen(o, "executions") == 1 &&
	    fx_claim_item(o, 0, &c);
	json_object_put(o);
	http_resp_free(&r);
	if (got && (slot = cid_slot(c.cid)) >= 0)
		one_complete(&c, slot, t);
}

/* Polls one random acknowledged execution. */
static void
one_poll(unsigned *seed)
{
	struct http_resp r;
	char cid[CID_MAX], token[96];
	long n = atomic_load(&next_slot), slot, i;

	n = n < CL_MAX_ACKED ? n : CL_MAX_ACKED;
	for (i = 0; i < 8 && n > 0; i++) {
		slot = (long)((unsigned long)rand_r(seed) % (unsigned long)n);
		pthread_mutex_lock(&mu);
		if (!ex[slot].acked) {
			pthread_mutex_unlock(&mu);
			continue;
		}
		snprintf(token, sizeof token, "%s", ex[slot].token);
		pthread_mutex_unlock(&mu);
		snprintf(cid, sizeof cid, "c-%ld", slot);
		fx_poll(F, F->ckey, cid, token, NULL, &r);
		classify(&r, 200, "poll");
		http_resp_free(&r);
		return;
	}
}

static void *
load_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned seed = (unsigned)t * 7919u + 1u;

	while (running) {
		one_submit();
		one_claim(t);
		one_poll(&seed);
		ut_pause_ms(PACE_MS);
	}
	return NULL;
}

/* A probe: submits through host ARG (0: A, 1: B) only. */
static void *
probe_main(void *arg)
{
	int h = (int)(intptr_t)arg;
	int64_t t0, mark;

	http_set_thread_target(test_env(h == 0 ? "ASYNCEXEC_TEST_HTTP_A" :
	    "ASYNCEXEC_TEST_HTTP_B"));
	while (running) {
		t0 = ut_now_ms();
		mark = atomic_load(&probe_mark);
		if (one_submit() && mark > 0 && t0 >= mark &&
		    atomic_load(&probe_ok[h]) == 0)
			atomic_store(&probe_ok[h], ut_now_ms());
		ut_pause_ms(PROBE_MS);
	}
	return NULL;
}

void
cl_load_start(const struct fx *f, int threads, int probes)
{
	int i;

	F = f;
	running = 1;
	nth = 0;
	for (i = 0; i < threads && nth < CL_MAX_THREADS; i++)
		pthread_create(&th[nth++], NULL, load_main, (void *)(intptr_t)i);
	for (i = 0; probes && i < 2 && nth < CL_MAX_THREADS; i++)
		pthread_create(&th[nth++], NULL, probe_main, (void *)(intptr_t)i);
}

void
cl_load_stop(void)
{
	int i;

	running = 0;
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	nth = 0;
}

void
cl_stats(struct cl_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

int
cl_wait_progress(long long after_acked, long long n, long long after_done, long long m,
    long bound_ms)
{
	int64_t end = ut_now_ms() + bound_ms;
	struct cl_stats s;

	for (;;) {
		cl_stats(&s);
		if (s.acked >= after_acked + n && s.completed >= after_done + m)
			return 1;
		if (ut_now_ms() > end)
			return 0;
		ut_pause_ms(50);
	}
}

int
cl_load_warm(const struct fx *f, int threads, int probes, long long acked,
    long long done, struct cl_stats *s0)
{
	int ok;

	cl_load_start(f, threads, probes);
	ok = cl_wait_progress(0, acked, 0, done, 30000);
	cl_stats(s0);
	return ok;
}

void
cl_probe_mark(void)
{
	atomic_store(&probe_ok[0], 0);
	atomic_store(&probe_ok[1], 0);
	atomic_store(&probe_mark, ut_now_ms());
}

int64_t
cl_probe_first_ok(int host)
{
	return atomic_load(&probe_ok[host]);
}

/* ---- the checks afterwards ------------------------------------------------------------- */

/* Polls slot SLOT (retrying a 503 for at most RETRY_BOUND_MS); 1 when it is there as
 * answered: 200, and completed with its result when the complete got 200. */
static int
verify_one(const struct fx *f, long slot)
{
	struct http_resp r;
	struct json_object *o = NULL;
	char cid[CID_MAX];
	const char *s;
	int64_t t0 = ut_now_ms();
	int ok;

	snprintf(cid, sizeof cid, "c-%ld", slot);
	http_set_thread_target(test_env(slot % 2 ? "ASYNCEXEC_TEST_HTTP_B" :
	    "ASYNCEXEC_TEST_HTTP_A"));
	while (fx_poll(f, f->ckey, cid, ex[slot].token, NULL, &r) == 503 &&
	    ut_now_ms() - t0 < RETRY_BOUND_MS) {
		http_resp_free(&r);
		ut_pause_ms(RETRY_PAUSE_MS);
	}
	http_set_thread_target(NULL);
	ok = r.status == 200 && (o = json_body(&r)) != NULL;
	if (ok && ex[slot].completed) {
		s = jstr(o, "status");
		ok = s != NULL && strcmp(s, "completed") == 0 &&
		    strstr(r.body, ex[slot].result) != NULL;
	}
	json_object_put(o);
	if (!ok)
		fprintf(stderr, "  lost or changed: %s (poll %d%s): %.200s\n", cid, r.status,
		    ex[slot].completed ? ", completed with 200" : "", r.body ? r.body : "");
	http_resp_free(&r);
	return ok;
}

long
cl_verify_http(const struct fx *f)
{
	long n = atomic_load(&next_slot), slot, lost = 0;

	n = n < CL_MAX_ACKED ? n : CL_MAX_ACKED;
	for (slot = 0; slot < n; slot++)
		if (ex[slot].acked)
			lost += !verify_one(f, slot);
	return lost;
}

/* Host A's configuration, as cl_init read it. */
const struct config *
cl_config(void)
{
	return &cfg;
}

/*
 * Runs SQL (any statements, DELIMITER lines too) as root on node N through
 * "clusterctl node-sql N", from a file (no quoting of SQL in a shell
 * command). Its exit status, -1 when it could not run.
 */
int
cl_node_sql(int n, const char *sql)
{
	char	 path[] = "/tmp/cluster-sql.XXXXXX", cmd[1024];
	int	 fd, rc;

	if ((fd = mkstemp(path)) == -1)
		return -1;
	rc = write(fd, sql, strlen(sql)) == (ssize_t)strlen(sql) ? 0 : -1;
	close(fd);
	snprintf(cmd, sizeof cmd, "'%s' node-sql %d <'%s' >/dev/null",
	    test_env("ASYNCEXEC_TEST_CLUSTERCTL"), n, path);
	if (rc == 0)
		rc = system(cmd);
	unlink(path);
	return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A session on node N (1-based, db_hosts of host A's config) with wsrep_sync_wait=1. */
MYSQL *
cl_node_open(int n)
{
	MYSQL *m;
	unsigned timeout = 5;

	if (n < 1 || (unsigned)n > cfg.db_nhosts) {
		fprintf(stderr, "  node %d: not in db_hosts (%u nodes)\n", n, cfg.db_nhosts);
		return NULL;
	}
	m = mysql_init(NULL);
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	if (mysql_real_connect(m, cfg.db_hosts[n - 1].host, cfg.db_user, cfg.db_password,
	    cfg.db_name, cfg.db_hosts[n - 1].port, NULL, 0) == NULL ||
	    mysql_query(m, "SET wsrep_sync_wait = 1") != 0) {
		fprintf(stderr, "  node %d: %s\n", n, mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

/* The integer the one-row query Q on M answers, or -1 (its error on stderr). */
long long
cl_num(MYSQL *m, const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	if (mysql_query(m, q) != 0 || (res = mysql_store_result(m)) == NULL) {
		fprintf(stderr, "  %s: %s\n", q, mysql_error(m));
		return -1;
	}
	if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

/* cl_restore_global's file */
static char	 global_sql[] = "/tmp/cl-global.XXXXXX";

int
cl_restore_global(const char *var, long long was, int nodes)
{
	char	 q[CL_RESTORE_MAX];
	FILE	*f;
	int	 fd, n;

	if ((fd = mkstemp(global_sql)) == -1 || (f = fdopen(fd, "w")) == NULL)
		return 0;
	fprintf(f, "SET GLOBAL %s = %lld;\n", var, was);
	fclose(f);
	for (n = 1; n <= nodes; n++) {
		snprintf(q, sizeof q, "node-sql %d <'%s'", n, global_sql);
		cl_restore(n - 1, q);
	}
	return 1;
}

void
cl_restore_global_done(int nodes)
{
	int	 n;

	for (n = 0; n < nodes; n++)
		cl_restore(n, NULL);
	unlink(global_sql);
}

int
cl_sqlf(MYSQL *m, const char *fmt, ...)
{
	char	 q[2048];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof q, fmt, ap);
	va_end(ap);
	if (mysql_query(m, q) == 0)
		return 1;
	fprintf(stderr, "  %s: %s\n", q, mysql_error(m));
	return 0;
}

long long
cl_count(MYSQL *m, const char *env, const char *tag, const char *st)
{
	char	 q[512];

	snprintf(q, sizeof q, "SELECT COUNT(*) FROM s2r_async_execution WHERE "
	    "environment = '%s' AND correlation_id LIKE '%s-%%'%s%s%s", env,
	    tag, st[0] ? " AND status = '" : "", st, st[0] ? "'" : "");
	return cl_num(m, q);
}

int
cl_run_expire(const char *const *want, int *said)
{
	char	 cmd[1024], line[2048];
	FILE	*p;
	int	 st, i;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' 2>&1",
	    test_env("ASYNCEXEC_EXPIRE"), test_env("ASYNCEXEC_TEST_CONFIG"));
	for (i = 0; want != NULL && want[i] != NULL; i++)
		said[i] = 0;
	if ((p = popen(cmd, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, p) != NULL) {
		printf("  expire: %s", line);
		for (i = 0; want != NULL && want[i] != NULL; i++)
			if (strstr(line, want[i]) != NULL)
				said[i] = 1;
	}
	st = pclose(p);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Counts slots of f's rows on M missing or unlike what was answered; -1 on error. */
static long
verify_rows(const struct fx *f, MYSQL *m)
{
	char q[512], *seen;
	long n = atomic_load(&next_slot), slot, lost = 0;
	MYSQL_RES *res;
	MYSQL_ROW row;
	unsigned long *len;

	n = n < CL_MAX_ACKED ? n : CL_MAX_ACKED;
	snprintf(q, sizeof q, "SELECT correlation_id, status, result_payload FROM "
	    "s2r_async_execution WHERE environment = '%s' AND service_key = '%s' AND "
	    "operation_key = '%s'", f->env, f->svc, f->op);
	if (mysql_query(m, q) != 0 || (res = mysql_store_result(m)) == NULL) {
		fprintf(stderr, "  rows: %s\n", mysql_error(m));
		return -1;
	}
	if ((seen = calloc((size_t)n + 1, 1)) == NULL)
		exit(1);
	while ((row = mysql_fetch_row(res)) != NULL) {
		len = mysql_fetch_lengths(res);
		if ((slot = cid_slot(row[0])) < 0 || slot >= n)
			continue;
		seen[slot] = !ex[slot].completed || (strcmp(row[1], "completed") == 0 &&
		    row[2] != NULL && len[2] == strlen(ex[slot].result) &&
		    memcmp(row[2], ex[slot].result, len[2]) == 0);
	}
	mysql_free_result(res);
	for (slot = 0; slot < n; slot++)
		if ((ex[slot].acked || ex[slot].completed) && !seen[slot]) {
			if (lost++ < 5)
				fprintf(stderr, "  row lost or changed: c-%ld%s\n", slot,
				    ex[slot].completed ? " (completed with 200)" : "");
		}
	free(seen);
	return lost;
}

long
cl_verify_node(const struct fx *f, int n)
{
	MYSQL *m = cl_node_open(n);
	long lost;

	if (m == NULL)
		return -1;
	lost = verify_rows(f, m);
	mysql_close(m);
	return lost;
}

int
cl_node_checksum(int n, long long *rows, unsigned long long *sum)
{
	MYSQL *m = cl_node_open(n);
	MYSQL_RES *res;
	MYSQL_ROW row;
	int rc = -1;

	if (m == NULL)
		return -1;
	if (mysql_query(m, "SELECT COUNT(*), COALESCE(BIT_XOR(CRC32(CONCAT_WS('|', id, "
	    "correlation_id, environment, service_key, operation_key, status, attempts, "
	    "HEX(request_sha256), HEX(IFNULL(callback_token_hash, '')), "
	    "MD5(IFNULL(result_payload, '')), IFNULL(completed_at, '')))), 0) "
	    "FROM s2r_async_execution") == 0 && (res = mysql_store_result(m)) != NULL) {
		if ((row = mysql_fetch_row(res)) != NULL && row[0] && row[1]) {
			*rows = strtoll(row[0], NULL, 10);
			*sum = strtoull(row[1], NULL, 10);
			rc = 0;
		}
		mysql_free_result(res);
	}
	if (rc == -1)
		fprintf(stderr, "  node %d checksum: %s\n", n, mysql_error(m));
	mysql_close(m);
	return rc;
}

/* ---- metrics and readiness ------------------------------------------------------------- */

long
cl_metric(const char *env_name, const char *name)
{
	struct http_resp r;
	const char *p;
	size_t len = strlen(name);
	long v = -1;

	http_set_thread_target(test_env(env_name));
	if (http_do("GET", "/metrics", NULL, NULL, 0, &r) == 0 && r.status == 200)
		for (p = r.body; (p = strstr(p, name)) != NULL; p += len)
			if ((p == r.body || p[-1] == '\n') && p[len] == ' ') {
				v = strtol(p + len + 1, NULL, 10);
				break;
			}
	http_set_thread_target(NULL);
	http_resp_free(&r);
	return v;
}

int
cl_get_status(const char *env_name, const char *path)
{
	struct http_resp r;
	int status;

	http_set_thread_target(test_env(env_name));
	http_do("GET", path, NULL, NULL, 0, &r);
	http_set_thread_target(NULL);
	status = r.status;
	http_resp_free(&r);
	return status;
}

/* ---- writer pinning ------------------------------------------------------------------- */

int
cl_master_kill(const char *host)
{
	char args[32];
	int rc, i;

	snprintf(args, sizeof args, "master-kill %s", host);
	for (i = 0; (rc = cl_ctl(args)) == 2 && i < 2; i++)
		printf("  clusterctl master-kill %s exited 2 before killing: again\n", host);
	return rc;
}

/* Waits at most BOUND_MS until both hosts report writer index WANT; 1 then. */
int
cl_writers_at(long want, long bound_ms)
{
	int64_t end = ut_now_ms() + bound_ms;

	for (;;) {
		if (cl_metric("ASYNCEXEC_TEST_METRICS", "asyncexec_db_writer_index") == want &&
		    cl_metric("ASYNCEXEC_TEST_METRICS_B", "asyncexec_db_writer_index") == want)
			return 1;
		if (ut_now_ms() > end)
			return 0;
		ut_pause_ms(100);
	}
}

/*
 * Both hosts writing to node 1. A host still pinned elsewhere (an earlier failover:
 * pinning keeps it there until a reload, and a restart resumes it from db_pin_file)
 * gets its master reloaded (SIGHUP), which sends it back to the first node. 1 when
 * both report writer index 0.
 */
int
cl_writers_home(void)
{
	static const char *const h[2][3] = {
		{ "ASYNCEXEC_TEST_METRICS", "A", "ASYNCEXEC_TEST_HTTP_A" },
		{ "ASYNCEXEC_TEST_METRICS_B", "B", "ASYNCEXEC_TEST_HTTP_B" } };
	char args[32];
	int64_t end;
	long w;
	int i;

	for (i = 0; i < 2; i++) {
		if ((w = cl_metric(h[i][0], "asyncexec_db_writer_index")) == 0)
			continue;
		printf("  host %s writes to node index %ld: reloading its master\n",
		    h[i][1], w);
		snprintf(args, sizeof args, "master-reload %s", h[i][1]);
		if (cl_ctl(args) != 0)
			return 0;
		end = ut_now_ms() + 30000;
		while (cl_metric(h[i][0], "asyncexec_db_writer_index") != 0 &&
		    ut_now_ms() < end)
			ut_pause_ms(50);
		end = ut_now_ms() + 30000;
		while (cl_get_status(h[i][2], "/readyz") != 200 && ut_now_ms() < end)
			ut_pause_ms(50);
	}
	return cl_writers_at(0, 5000);
}
