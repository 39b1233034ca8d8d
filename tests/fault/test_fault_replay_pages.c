/*
 * test_fault_replay_pages.c - the bulk form of asyncexec-admin execution
 * replay (--route, --status failed, --since) while its own replays fail.
 * asyncexec-admin reaches the shared database through dbproxy (a config of
 * its own), which runs a step of the test between two pages of candidates.
 *
 * The route holds PAGE + 1 failed executions, one more than a page of
 * candidates (REPLAY_BATCH, repo_replay.h). The run replays the first
 * page; before it reads the second page (the candidates statement with
 * after = the page's last id), every replay it made fails, as a backend
 * failing fast would fail it. Those replays ended after --since, are
 * failed and not replaced, and their ids are above every original's: the
 * run must not take them. It replays exactly the originals, as many as
 * --dry-run counted, and no execution it made replays a replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"

#define PAGE	100		/* REPLAY_BATCH */
#define ORIG	(PAGE + 1)
#define OUT_MAX	65536

static struct fx	 F;
static MYSQL		*m, *side;
static char		 cfg[300], out[OUT_MAX];
static unsigned char	 last[8];	/* the first page's last id, LE */

/* The stack's config with the database at 127.0.0.1:port (the proxy);
 * 0 or -1. */
static int
write_config(int port)
{
	snprintf(cfg, sizeof cfg, "/tmp/fault-replay-%ld.conf", (long)getpid());
	return f_proxy_config(cfg, port, "");
}

/* asyncexec-admin ARGS through the proxy (httpc_admin, output into out). */
#define adm(...)	httpc_admin(cfg, out, sizeof(out), __VA_ARGS__)

/* The candidates statement of the second page: it binds the route's
 * service key (the pattern) and the first page's last id. */
static int
second_page(const unsigned char *p, size_t n)
{
	return memmem(p, n, last, sizeof last) != NULL;
}

/* Fails every waiting replay of the route (the backend's fail). */
static void
fail_replays(void *arg)
{
	(void)arg;
	f_sql(side, "UPDATE s2r_async_execution SET status = 'failed', "
	    "error_payload = '{\"message\":\"fast\",\"code\":1}', "
	    "completed_at = UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3) "
	    "WHERE environment = '%s' AND service_key = '%s' AND "
	    "replay_of IS NOT NULL AND status = 'waiting_callback'",
	    F.env, F.svc);
}

/* The route's rows matching cond: how many. */
static long long
count(const char *cond)
{
	return f_sql_num(m, "SELECT COUNT(*) FROM s2r_async_execution e "
	    "WHERE environment = '%s' AND service_key = '%s' AND %s",
	    F.env, F.svc, cond);
}

static void
test_replay_pages(void)
{
	struct sub	 s;
	char		 since[40], want[80];
	const char	*line;
	long long	 id;
	time_t		 t = time(NULL) - 120;
	struct tm	 tm;
	int		 i, ok = 1;

	gmtime_r(&t, &tm);
	strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (i = 0; i < ORIG && ok; i++)
		ok = fx_submit_ok(&F, NULL, "{\"q\":\"page\"}", &s);
	CHECK(ok);
	CHECK_EQ_INT(f_sql(m, "UPDATE s2r_async_execution SET status = "
	    "'failed', error_payload = '{\"message\":\"orig\",\"code\":1}', "
	    "completed_at = UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3) "
	    "WHERE environment = '%s' AND service_key = '%s'", F.env, F.svc),
	    0);
	CHECK(count("status = 'failed'") == ORIG);
	id = f_sql_num(m, "SELECT id FROM s2r_async_execution WHERE "
	    "environment = '%s' AND service_key = '%s' ORDER BY id LIMIT 1 "
	    "OFFSET %d", F.env, F.svc, PAGE - 1);
	CHECK(id > 0);
	for (i = 0; i < 8; i++)
		last[i] = (unsigned char)((unsigned long long)id >> (8 * i));
	CHECK_EQ_INT(adm("execution replay --route %s --status failed "
	    "--since %s --dry-run", F.route, since), 0);
	snprintf(want, sizeof want, "%d execution(s) would be replayed", ORIG);
	CHECK(strstr(out, want) != NULL);
	dbproxy_hook(F.svc, second_page, fail_replays, NULL);
	CHECK_EQ_INT(adm("execution replay --route %s --status failed "
	    "--since %s", F.route, since), 0);
	CHECK_EQ_INT(dbproxy_fired(), 1);
	line = strstr(out, " execution(s) replayed");
	while (line != NULL && line > out && line[-1] != '\n')
		line--;
	fprintf(stderr, "  %s", line != NULL ? line : out);
	snprintf(want, sizeof want, "\n%d execution(s) replayed", ORIG);
	CHECK(strstr(out, want) != NULL);
	/* one replay per original, none of a replay */
	CHECK(count("replay_of IS NOT NULL") == ORIG);
	CHECK(count("replay_of IS NULL AND replaced_by IS NOT NULL") == ORIG);
	CHECK(count("EXISTS (SELECT 1 FROM s2r_async_execution o WHERE "
	    "o.id = e.replay_of AND o.replay_of IS NOT NULL)") == 0);
}

int
main(void)
{
	int	 port;

	http_test_init();
	f_init();
	fx_setup(&F, "fault-replay");
	if ((m = f_sql_open()) == NULL || (side = f_sql_open()) == NULL ||
	    (port = dbproxy_start((int)config_long("db_port", 0))) == -1 ||
	    write_config(port) == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy\n");
		return 1;
	}
	test_replay_pages();
	unlink(cfg);
	mysql_close(side);
	mysql_close(m);
	fx_free(&F);
	return check_done("fault_replay_pages");
}
