/*
 * test_http_ops.c - /healthz, /readyz, /metrics, unknown paths, and a database outage:
 * 503 service_unavailable (never 500) while MariaDB is down, recovery once it is back.
 * Stops the shared test database: CTest runs it with RUN_SERIAL.
 * asyncexec_oldest_waiting_seconds counts only due executions no lease holds
 * (a scheduled one, X-Delay-Seconds, made it climb for a day), rows dated
 * back in SQL. During the outage every dashboard page but Health answers 503 with
 * Retry-After (never a 200 page with a hole), and Health says what it could not read
 * ("unknown"), its node taken from the configuration.
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"
#include "sidedb.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define OUTAGE_PROBES 8         /* enough to reach every preforked worker */
#define RECOVERY_STREAK 8       /* consecutive successes that count as recovered */
#define RECOVERY_WINDOW_MS 20000
#define RECOVERY_PAUSE_MS 250

static struct fx F;
static struct config cfg;
static int db_stopped;

static int
dbctl(const char *verb)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof cmd, "'%s' %s", test_env("ASYNCEXEC_TEST_DBCTL"), verb);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "dbctl %s failed (status %d)\n", verb, st);
		return -1;
	}
	return 0;
}

/* Whatever happens, the shared database is running again when this process ends. */
static void
restart_db(void)
{
	if (db_stopped && dbctl("start") == 0)
		db_stopped = 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	exit(1);        /* runs restart_db() through atexit */
}

/*
 * GET path; /metrics, /readyz/detail and /dashboard/ go to the loopback-only metrics
 * server (ASYNCEXEC_TEST_METRICS), everything else to the public one. The dashboard's
 * HTML is not recorded for http_openapi (it is outside src/openapi.json).
 */
static int
get(const char *path, struct http_resp *r)
{
	int status;

	if (strcmp(path, "/metrics") == 0 || strcmp(path, "/readyz/detail") == 0 ||
	    strncmp(path, "/dashboard/", 11) == 0)
		http_set_target(test_env("ASYNCEXEC_TEST_METRICS"));
	http_set_record(strncmp(path, "/dashboard/", 11) != 0);
	status = api("GET", path, NULL, NULL, r, (const char *)NULL);
	http_set_record(1);
	http_set_target(NULL);
	return status;
}

static void
test_probes(void)
{
	struct http_resp r;
	const char *ct;

	CHECK_EQ_INT(get("/healthz", &r), 200);
	http_resp_free(&r);
	/* the public readiness says ready, nothing more (issue 16) */
	CHECK_EQ_INT(get("/readyz", &r), 200);
	CHECK_EQ_STR(r.body, "{\"status\":\"ready\"}");
	http_resp_free(&r);
	/* the detail is on the loopback metrics server only */
	CHECK_EQ_INT(get("/readyz/detail", &r), 200);
	CHECK(r.body != NULL && strstr(r.body, "\"status\":\"ready\",\"schemaVersion\":") != NULL &&
	    strstr(r.body, "\"buildSchemaVersion\":") != NULL);
	http_resp_free(&r);
	api("GET", "/readyz/detail", NULL, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	api("GET", "/readyz/%64etail", NULL, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	CHECK_EQ_INT(get("/metrics", &r), 200);
	ct = http_header(&r, "content-type");
	CHECK(ct != NULL && strncmp(ct, "text/plain", 10) == 0);
	http_resp_free(&r);
	/* not on the public server, not even from loopback */
	api("GET", "/metrics", NULL, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
}

static void
test_unknown_path(void)
{
	struct http_resp r;

	get("/no/such/path", &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
	api("POST", "/v1/nothing-here", F.ckey, "{}", &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "not_found"));
	http_resp_free(&r);
}

/* 503 service_unavailable with Retry-After, within the connect timeout (plus slack). */
static void
check_unavailable(const struct http_resp *r, int64_t elapsed_ms, const char *what)
{
	int64_t bound = (config_long("db_connect_timeout", 2) + 3) * 1000;

	if (!expect_problem(r, 503, "service_unavailable"))
		fprintf(stderr, "  ... %s during the outage\n", what);
	CHECK(expect_problem(r, 503, "service_unavailable"));
	CHECK(is_digits(http_header(r, "retry-after")));
	if (elapsed_ms > bound)
		fprintf(stderr, "  %s took %lld ms (bound %lld)\n", what, (long long)elapsed_ms,
		    (long long)bound);
	CHECK(elapsed_ms <= bound);
}

/*
 * The dashboard during the outage: each page that reads the database answers 503 with
 * Retry-After at its first failed read; Health renders the outage, the node as the
 * configuration has it and "unknown" for what it could not read (not "no Galera").
 */
static void
dash_outage(void)
{
	static const char *const pages[] = { "routes", "keys", "tenants", "webhooks",
	    "attention", "routes?after=1", "attention?page=1" };
	struct http_resp r;
	char path[64];
	size_t i;
	int64_t t0;

	for (i = 0; i < sizeof pages / sizeof pages[0]; i++) {
		snprintf(path, sizeof path, "/dashboard/%s", pages[i]);
		t0 = ut_now_ms();
		get(path, &r);
		check_unavailable(&r, ut_now_ms() - t0, path);
		http_resp_free(&r);
	}
	CHECK_EQ_INT(get("/dashboard/health", &r), 200);
	CHECK(r.body != NULL && strstr(r.body, "<tr><th>Reachable</th>"
	    "<td class=\"bad\">no</td></tr>") != NULL);
	CHECK(r.body != NULL && strstr(r.body, cfg.db_nhosts > 0 ?
	    "<tr><th>Node</th><td>unknown</td></tr>" :
	    "<tr><th>Node</th><td>db_host (no db_hosts)</td></tr>") != NULL);
	CHECK(r.body != NULL && strstr(r.body,
	    "<tr><th>Galera state</th><td>unknown</td></tr>") != NULL);
	CHECK(r.body != NULL && strstr(r.body, "no Galera") == NULL);
	http_resp_free(&r);
}

static void
outage_round(const struct sub *s)
{
	struct http_resp r;
	int64_t t0 = ut_now_ms();

	fx_submit(&F, F.ckey, NULL, "{\"during\":\"outage\"}", &r);
	check_unavailable(&r, ut_now_ms() - t0, "submit");
	http_resp_free(&r);
	t0 = ut_now_ms();
	fx_poll(&F, F.ckey, s->cid, s->token, NULL, &r);
	check_unavailable(&r, ut_now_ms() - t0, "poll");
	http_resp_free(&r);
	t0 = ut_now_ms();
	fx_claim(&F, F.bkey, "{}", &r);
	check_unavailable(&r, ut_now_ms() - t0, "claim");
	http_resp_free(&r);
	/* public: a generic detail; the loopback detail says what is wrong */
	CHECK_EQ_INT(get("/readyz", &r), 503);
	CHECK(expect_problem(&r, 503, "service_unavailable"));
	CHECK(is_digits(http_header(&r, "retry-after")));
	CHECK(r.body != NULL && strstr(r.body, "\"detail\":\"the service is temporarily "
	    "unavailable; retry later\"") != NULL);
	http_resp_free(&r);
	CHECK_EQ_INT(get("/readyz/detail", &r), 503);
	CHECK(expect_problem(&r, 503, "service_unavailable"));
	CHECK(r.body != NULL && strstr(r.body, "database") != NULL);
	http_resp_free(&r);
	CHECK_EQ_INT(get("/healthz", &r), 200);
	http_resp_free(&r);
	dash_outage();
}

/* Readiness polling: submits until RECOVERY_STREAK in a row succeed, bounded in time. */
static int
await_recovery(void)
{
	int64_t deadline = ut_now_ms() + RECOVERY_WINDOW_MS;
	int streak = 0, attempts = 0;
	struct http_resp r;

	while (streak < RECOVERY_STREAK && ut_now_ms() < deadline) {
		int st = fx_submit(&F, F.ckey, NULL, "{\"after\":\"outage\"}", &r);

		http_resp_free(&r);
		attempts++;
		if (st == 202) {
			streak++;
			continue;
		}
		if (st != 503)
			fprintf(stderr, "  recovery attempt %d: unexpected status %d\n", attempts, st);
		streak = 0;
		ut_pause_ms(RECOVERY_PAUSE_MS);
	}
	fprintf(stderr, "  recovery: %d attempts, streak %d\n", attempts, streak);
	return streak >= RECOVERY_STREAK;
}

/* The value of an unlabelled counter in GET /metrics, -1 when absent. */
static long long
counter(const char *name)
{
	struct http_resp r;
	const char *p;
	long long v = -1;
	size_t n = strlen(name);

	if (get("/metrics", &r) == 200)
		for (p = r.body; p != NULL && *p != '\0'; p = strchr(p, '\n'),
		    p = p ? p + 1 : NULL)
			if (strncmp(p, name, n) == 0 && p[n] == ' ')
				v = atoll(p + n + 1);
	http_resp_free(&r);
	return v;
}

/* Whether GET /metrics has a line starting with PREFIX. */
static int
metrics_has(const char *prefix)
{
	struct http_resp r;
	const char *p;
	int found = 0;
	size_t n = strlen(prefix);

	if (get("/metrics", &r) == 200)
		for (p = r.body; p != NULL && *p != '\0' && !found; p = strchr(p, '\n'),
		    p = p ? p + 1 : NULL)
			found = strncmp(p, prefix, n) == 0;
	http_resp_free(&r);
	if (!found)
		fprintf(stderr, "  /metrics has no line starting with %s\n", prefix);
	return found;
}

/*
 * The last asyncexec-expire run shows in /metrics: one run of the binary moves the last
 * run and last success times to now, and it did not fail. A run recorded as locked
 * (it stopped while retrying a row lock, asyncexec-expire(8)) shows as failed.
 */
static void
test_expiry_metrics(void)
{
	char cmd[1024];
	long long before = (long long)time(NULL) - 1, ran, ok;
	int st;
	MYSQL *db;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' >/dev/null", test_env("ASYNCEXEC_EXPIRE"),
	    test_env("ASYNCEXEC_TEST_CONFIG"));
	st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ran = counter("asyncexec_expire_last_run_timestamp_seconds");
	ok = counter("asyncexec_expire_last_success_timestamp_seconds");
	CHECK(ran >= before && ran <= (long long)time(NULL) + 1);
	CHECK(ok >= before);
	CHECK_EQ_INT(counter("asyncexec_expire_last_run_failed"), 0);
	CHECK(metrics_has("asyncexec_expire_last_run_rows{step=\"purged\"} "));
	db = sidedb_open(&cfg);
	sidedb_exec(db, "UPDATE s2r_job_run SET last_result = 'locked' "
	    "WHERE job = 'expire'");
	CHECK_EQ_INT(counter("asyncexec_expire_last_run_failed"), 1);
	sidedb_exec(db, "UPDATE s2r_job_run SET last_result = 'complete' "
	    "WHERE job = 'expire'");
	mysql_close(db);
}

/*
 * The series operators watch: HELP text, build info, every endpoint/status series from
 * the start, workers and busy workers, the database's reachability, callbacks refused by
 * reason, and per route the waiting executions and the oldest one's age.
 */
static void
test_metrics_series(void)
{
	struct sub s;
	struct claim c;
	struct http_resp r;
	char name[400];
	long long stale0, waiting, oldest;
	int i;

	CHECK(metrics_has("# HELP asyncexec_requests_total "));
	CHECK(metrics_has("asyncexec_build_info{version=\""));
	CHECK(metrics_has("asyncexec_requests_total{endpoint=\"cancelled\",status=\"429\"} "));
	CHECK(metrics_has("asyncexec_request_duration_seconds_bucket{endpoint=\"submit\",le=\"30\"} "));
	CHECK(counter("asyncexec_workers") >= 1);
	CHECK(counter("asyncexec_workers_busy") >= 1);	/* the scrape itself */
	CHECK_EQ_INT(counter("asyncexec_db_up"), 1);
	stale0 = counter("asyncexec_callbacks_refused_total{reason=\"stale_token\"}");
	CHECK(stale0 >= 0);
	CHECK(fx_submit_claim(&F, "{}", &s, &c));
	CHECK_EQ_INT(fx_callback(F.bkey, c.id, "complete",
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "{\"result\":1}", &r), 409);
	http_resp_free(&r);
	CHECK(counter("asyncexec_callbacks_refused_total{reason=\"stale_token\"}") >= stale0 + 1);
	for (i = 0; i < 2; i++)
		CHECK(fx_submit_ok(&F, NULL, "{}", &s));
	snprintf(name, sizeof name, "asyncexec_executions_waiting{route=\"%s\"}", F.route);
	waiting = counter(name);
	CHECK_EQ_INT(waiting, 3);
	snprintf(name, sizeof name, "asyncexec_oldest_waiting_seconds{route=\"%s\"}", F.route);
	oldest = counter(name);		/* integer part of the seconds */
	CHECK(oldest >= 0 && oldest < 600);
	test_expiry_metrics();
}

/* Dates the executions of g's tenant (cid NULL: all of them) back by secs. */
static void
date_back(MYSQL *db, const struct fx *g, const char *cid, int secs)
{
	char q[1024];

	snprintf(q, sizeof q, "UPDATE s2r_async_execution SET created_at = "
	    "created_at - INTERVAL %d SECOND WHERE initiator_tenant_id = '%s' "
	    "AND ('%s' = '' OR correlation_id = '%s')", secs, g->tenant,
	    cid ? cid : "", cid ? cid : "");
	sidedb_exec(db, q);
	CHECK(mysql_affected_rows(db) >= 1);
}

/*
 * The oldest waiting execution is the oldest due one no lease holds: a route
 * with one scheduled a day ahead and one claimed, both submitted an hour ago,
 * shows 0; a due one submitted a minute ago then shows its age.
 * asyncexec_executions_waiting counts all.
 */
static void
test_oldest_due(void)
{
	struct fx g;
	struct sub sched, held, due;
	struct claim c;
	MYSQL *db = sidedb_open(&cfg);
	char oldest[400], waiting[400];
	long long age;

	fx_setup(&g, "opsdue");
	snprintf(oldest, sizeof oldest,
	    "asyncexec_oldest_waiting_seconds{route=\"%s\"}", g.route);
	snprintf(waiting, sizeof waiting,
	    "asyncexec_executions_waiting{route=\"%s\"}", g.route);
	CHECK(fx_submit_hdr_ok(&g, NULL, "{\"sched\":1}",
	    "X-Delay-Seconds: 86400", &sched));
	CHECK(fx_submit_claim(&g, "{\"held\":1}", &held, &c));
	date_back(db, &g, NULL, 3600);
	CHECK_EQ_INT(counter(waiting), 2);
	age = counter(oldest);
	if (age != 0)
		fprintf(stderr, "  oldest waiting %lld s: scheduled or leased "
		    "counted\n", age);
	CHECK_EQ_INT(age, 0);
	CHECK(fx_submit_ok(&g, NULL, "{\"due\":1}", &due));
	date_back(db, &g, due.cid, 60);
	CHECK_EQ_INT(counter(waiting), 3);
	age = counter(oldest);
	CHECK(age >= 60 && age < 3600);
	mysql_close(db);
	fx_free(&g);
}

static void
test_outage(void)
{
	struct http_resp r;
	struct sub s;
	long long errors0, reconnects0;
	int i;

	CHECK(fx_submit_ok(&F, NULL, "{\"before\":\"outage\"}", &s));
	errors0 = counter("asyncexec_db_errors_total");
	reconnects0 = counter("asyncexec_db_reconnects_total");
	CHECK(errors0 >= 0 && reconnects0 >= 0);
	db_stopped = 1;
	CHECK_EQ_INT(dbctl("stop"), 0);
	for (i = 0; i < OUTAGE_PROBES; i++)
		outage_round(&s);
	restart_db();
	CHECK_EQ_INT(db_stopped, 0);
	CHECK(await_recovery());
	CHECK_EQ_INT(get("/readyz", &r), 200);
	http_resp_free(&r);
	CHECK_EQ_STR(fx_status(&F, &s), "waiting_callback");
	/* the outage shows in the metrics: errors, and workers that reconnected */
	CHECK(counter("asyncexec_db_errors_total") > errors0);
	CHECK(counter("asyncexec_db_reconnects_total") > reconnects0);
}

int
main(void)
{
	http_test_init();
	sidedb_init(&cfg);
	test_env("ASYNCEXEC_TEST_DBCTL");
	atexit(restart_db);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fx_setup(&F, "ops");
	test_probes();
	test_unknown_path();
	test_metrics_series();
	test_oldest_due();
	test_outage();
	fx_free(&F);
	return check_done("http_ops");
}
