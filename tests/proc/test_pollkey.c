/*
 * test_pollkey.c - `asyncexec-admin poll-key rotate`: a new key version seals the tokens
 * issued after it (66 characters, the version digit first; version 0 keeps the 65-character
 * form), older keys keep opening theirs for the grace period and stop after it, and every
 * worker follows within cache_ttl_seconds. Right after a rotation, a
 * token (poll or page) sealed with the new version by one worker opens
 * at once on every other one, though their keys were read before the
 * rotation (each is reached alone: the others stopped). On a scratch
 * database with a service of its own: a rotation changes what every
 * other test's tokens look like.
 */
#include "check.h"
#include "proc_util.h"
#include "scratch.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct scratch S;
static char auth[128];
static pid_t W[16];	/* the scratch master's workers */
static size_t NW;

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

/* Status of polling cid with tok, on one of the workers; the body into
 * out (size bytes). */
static int
poll_out(const char *cid, const char *tok, char *out, size_t size)
{
	char uri[256];

	snprintf(uri, sizeof uri, "/v1/executions/e/s/o/%s", cid);
	return scratch_request(&S, "GET", uri, auth, tok, NULL, out, size);
}

/* Status of polling cid with tok, on one of the workers. */
static int
poll(const char *cid, const char *tok)
{
	return poll_out(cid, tok, NULL, 0);
}

/* 8 polls (on whichever workers take them): how many gave status. */
static int
polls(const char *cid, const char *tok, int status)
{
	int i, n = 0;

	for (i = 0; i < 8; i++)
		n += poll(cid, tok) == status;
	return n;
}

/* Whether every worker but W[*arg] is stopped. */
static int
others_stopped(void *arg)
{
	size_t k = *(size_t *)arg, i;
	struct pstat ps;

	for (i = 0; i < NW; i++)
		if (i != k && (proc_stat(W[i], &ps) == -1 || ps.state != 'T'))
			return 0;
	return 1;
}

/*
 * Lets only worker W[k] take new connections: the others get SIGSTOP and
 * are waited for until stopped (a connection then queues for W[k]
 * alone). k == NW: every worker continues. 1, or 0 when they did not
 * stop within 5 s.
 */
static int
only(size_t k)
{
	size_t i;

	for (i = 0; i < NW; i++)
		kill(W[i], k == NW || i == k ? SIGCONT : SIGSTOP);
	return k == NW || wait_for(others_stopped, &k, 5000);
}

/* Status of polling cid with tok on worker W[k] alone; -2: not reached. */
static int
poll_on(size_t k, const char *cid, const char *tok)
{
	int st = only(k) ? poll(cid, tok) : -2;

	return only(NW) ? st : -2;
}

/*
 * Lists e/s/o, one per page (pageToken page, or the first page when
 * NULL), on worker W[k] alone (k == NW: any); the status, nextPageToken
 * copied into next (64 bytes).
 */
static int
list_on(size_t k, const char *page, char *next)
{
	char uri[256], out[4096], *p, *q;
	int st = -2;

	snprintf(uri, sizeof uri, "/v1/executions/e/s/o?limit=1%s%s",
	    page ? "&pageToken=" : "", page ? page : "");
	out[0] = '\0';
	if (k == NW || only(k))
		st = scratch_request(&S, "GET", uri, auth, NULL, NULL, out, sizeof out);
	if (!only(NW))
		st = -2;
	next[0] = '\0';
	if ((p = strstr(out, "\"nextPageToken\":\"")) != NULL &&
	    (q = strchr(p + 17, '"')) != NULL && q - p - 17 < 64)
		snprintf(next, 64, "%.*s", (int)(q - p - 17), p + 17);
	return st;
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
 * Polls cid with tok until 8 in a row (every worker, likely) give
 * status, bounded by the cache TTL plus 3 s (every worker re-reads the
 * keys within the TTL); 1 or 0.
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
	char p1[64], next[64], forged[2048];
	long long ttl, read0, others;
	size_t i;
	char save;

	if (proc_init("pollkey") == -1 || scratch_init(&S, "pollkey") == -1)
		return 1;
	/* 4 workers, as the test stack's; a TTL of 3 s, not the stack's
	 * 1 s: the window below (half of it) must hold the polls of every
	 * worker on a loaded machine */
	snprintf(out, sizeof out, "db_name = %s\ncache_ttl_seconds = 3\n", S.db);
	CHECK(derive_config_x(S.cfg, S.sock, "4", out, NULL) == 0);
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "migrate", NULL), 0);
	CHECK_EQ_INT(scratch_route_key(&S, auth, sizeof auth), 0);
	CHECK(scratch_start(&S) == 0);
	NW = workers_of(S.master, W, sizeof W / sizeof W[0]);
	CHECK(NW == 4);
	ttl = config_long_ms();
	CHECK(ttl == 3000);

	/* version 0: the 65-character form older builds open. Worker 0
	 * reads the keys first, the others half a TTL later: after the
	 * rotation below worker 0 reads them again first, while the others
	 * keep what they read before it */
	CHECK(only(0));
	read0 = ut_now_ms();
	CHECK_EQ_INT(submit(t0, c0), 202);
	CHECK(only(NW));
	CHECK_EQ_INT((int)strlen(t0), 65);
	while (ut_now_ms() < read0 + ttl / 2)
		ut_pause_ms(20);
	others = ut_now_ms();
	for (i = 0; i < NW; i++)
		CHECK_EQ_INT(poll_on(i, c0, t0), 200);

	/* rotate with a grace period: new tokens carry version 1, old ones still open */
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "rotate", "--grace-hours",
	    "1", NULL), 0);
	CHECK(strstr(out, "version 1") != NULL);
	/* worker 0 seals version 1 first; at once, with no retry, every
	 * worker opens that poll token and that page token (before: 404
	 * and 400 on the others) */
	CHECK(only(0) && wait_version('B', t1, c1));
	CHECK_EQ_INT(list_on(0, NULL, p1), 200);
	CHECK(only(NW));
	CHECK(p1[0] == 'B');
	for (i = 0; i < NW; i++) {
		CHECK_EQ_INT(poll_on(i, c1, t1), 200);
		CHECK_EQ_INT(list_on(i, p1, next), 200);
	}
	/* the others had not reached their TTL: they held the keys read
	 * before the rotation */
	CHECK(ut_now_ms() < others + ttl);
	CHECK(all_workers(c1, t1, 200));
	CHECK_EQ_INT(polls(c0, t0, 200), 8);
	CHECK_EQ_INT(scratch_admin(&S, out, sizeof out, "poll-key", "list", NULL), 0);
	CHECK(strstr(out, "current") != NULL && strstr(out, "retiring") != NULL);
	/* a version digit of a key that does not exist opens nothing */
	t1[0] = 'Z';
	CHECK_EQ_INT(polls(c1, t1, 404), 8);
	/* the same answer, byte for byte, as a forged token of a known
	 * version */
	CHECK_EQ_INT(poll_out(c1, t1, out, sizeof out), 404);
	t1[0] = 'B';
	save = t1[1];
	t1[1] = save == 'A' ? 'B' : 'A';
	CHECK_EQ_INT(poll_out(c1, t1, forged, sizeof forged), 404);
	t1[1] = save;
	CHECK(strcmp(out, forged) == 0);

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
