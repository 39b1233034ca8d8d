/*
 * test_pollkey.c - `asyncexec-admin poll-key rotate`: a new key version seals the tokens
 * issued after it (66 characters, the version digit first; version 0 keeps the 65-character
 * form), older keys keep opening theirs for the grace period and stop after it, and every
 * worker follows within cache_ttl_seconds. On a scratch database with a service of its own:
 * a rotation changes what every other test's tokens look like.
 */
#include "check.h"
#include "proc_util.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct scratch S;
static char auth[128];

/* Submits {}; copies the poll token into tok (96 bytes); the status. */
static int
submit(char *tok, char *cid)
{
	char out[2048], *p, *q;
	int st = scratch_request(&S, "POST", "/v1/executions/e/s/o", auth, NULL, "{}",
	    out, sizeof out);

	tok[0] = cid[0] = '\0';
	if ((p = strstr(out, "\"pollToken\":\"")) != NULL &&
	    (q = strchr(p + 13, '"')) != NULL && q - p - 13 < 96)
		snprintf(tok, 96, "%.*s", (int)(q - p - 13), p + 13);
	if ((p = strstr(out, "\"correlationId\":\"")) != NULL &&
	    (q = strchr(p + 17, '"')) != NULL && q - p - 17 < 130)
		snprintf(cid, 130, "%.*s", (int)(q - p - 17), p + 17);
	return st;
}

/* Status of polling cid with tok, on one of the workers. */
static int
poll(const char *cid, const char *tok)
{
	char uri[256];

	snprintf(uri, sizeof uri, "/v1/executions/e/s/o/%s", cid);
	return scratch_request(&S, "GET", uri, auth, tok, NULL, NULL, 0);
}

/* 8 polls (reaching every worker): how many gave status. */
static int
polls(const char *cid, const char *tok, int status)
{
	int i, n = 0;

	for (i = 0; i < 8; i++)
		n += poll(cid, tok) == status;
	return n;
}

/* cache_ttl_seconds of the scratch config, in ms (5000 when absent). */
static long
config_long_ms(void)
{
	char *text = read_file(S.cfg);
	const char *v = text ? config_value(text, "cache_ttl_seconds") : NULL;
	long ms = v ? atol(v) * 1000 : 5000;

	free(text);
	return ms;
}

/* Waits until a new submit hands out a token of version digit c; 1 or 0. */
static int
wait_version(char c, char *tok, char *cid)
{
	long long until = ut_now_ms() + config_long_ms() + 3000;

	while (ut_now_ms() < until) {
		if (submit(tok, cid) != 202)
			return 0;
		if (strlen(tok) == 66 && tok[0] == c)
			return 1;
		ut_pause_ms(50);
	}
	return 0;
}

/*
 * Polls cid with tok until 8 in a row (every worker) give status, bounded by the cache
 * TTL plus 3 s (every worker re-reads the keys within the TTL); 1 or 0.
 */
static int
all_workers(const char *cid, const char *tok, int status)
{
	long long until = ut_now_ms() + config_long_ms() + 3000;

	while (ut_now_ms() < until) {
		if (polls(cid, tok, status) == 8)
			return 1;
		ut_pause_ms(50);
	}
	fprintf(stderr, "  not every worker answered %d in time\n", status);
	return 0;
}

int
main(void)
{
	char out[4096], t0[96], c0[130], t1[96], c1[130], t2[96], c2[130];

	if (proc_init("pollkey") == -1 || scratch_init(&S, "pollkey") == -1)
		return 1;
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", NULL), 0);
	CHECK_EQ_INT(scratch_route_key(&S, auth, sizeof auth), 0);
	CHECK(scratch_start(&S) == 0);

	/* version 0: the 65-character form older builds open */
	CHECK_EQ_INT(submit(t0, c0), 202);
	CHECK_EQ_INT((int)strlen(t0), 65);
	CHECK_EQ_INT(polls(c0, t0, 200), 8);

	/* rotate with a grace period: new tokens carry version 1, old ones still open */
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "rotate", "--grace-hours",
	    "1", NULL), 0);
	CHECK(strstr(out, "version 1") != NULL);
	CHECK(wait_version('B', t1, c1));
	CHECK(all_workers(c1, t1, 200));
	CHECK_EQ_INT(polls(c0, t0, 200), 8);
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "list", NULL), 0);
	CHECK(strstr(out, "current") != NULL && strstr(out, "retiring") != NULL);
	/* a version digit of a key that does not exist opens nothing */
	t1[0] = 'Z';
	CHECK_EQ_INT(polls(c1, t1, 404), 8);
	t1[0] = 'B';

	/* rotate with no grace: versions 0 and 1 stop within the TTL, version 2 works */
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "rotate", "--grace-hours",
	    "0", NULL), 0);
	CHECK(wait_version('C', t2, c2));
	CHECK(all_workers(c2, t2, 200));
	CHECK(all_workers(c1, t1, 404));
	/* 8 polls in a row need not reach every worker: each must refuse version 0
	 * within the TTL too (a run here got 5 of 8 right after version 1 gave 8) */
	CHECK(all_workers(c0, t0, 404));
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "list", NULL), 0);
	CHECK(strstr(out, "retired") != NULL);

	CHECK_EQ_INT(scratch_stop(&S), 0);
	scratch_drop(&S);
	return check_done("proc_pollkey");
}
