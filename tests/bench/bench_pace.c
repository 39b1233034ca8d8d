/*
 * bench_pace.c - requests at a fixed rate (an open-loop client): completes for the webhook
 * latency measurement of scripts/bench.sh --webhooks, polls and submits for
 * scripts/bench.sh --keepalive.
 *
 *   bench_pace --port P --rate R --duration S [--connections C]
 *              [--mode complete|poll|submit] FILE
 *
 * complete (the default): FILE is a bench_seed "claimed" data file (lines "key BK",
 * "item ID CALLBACK_TOKEN"); request i (from 0) is POST /v1/callbacks/ID/complete of item
 * i, with the backend key of its "key" line, as tests/bench/complete.lua sends it.
 * poll: FILE is a bench_seed "waiting" or "completed" file (lines "key AK", "path
 * /v1/executions/ENV/SVC/OP/", "item CORRELATION_ID POLL_TOKEN"); request i is the GET of
 * item i modulo the items, as tests/bench/poll.lua sends it. submit: such a file, whose
 * items are not used (none needed); request i is a POST to the path (a new execution),
 * as tests/bench/submit.lua sends it.
 * Request i is due at start + i / R seconds, R x S requests in all (complete: at most one
 * per item): C threads on their own keep-alive connections through nginx on 127.0.0.1:P
 * take the next due request in turn, wait for its time and send it. The schedule does not
 * wait for answers (open loop) as long as a connection is free; when every connection is
 * busy a request starts late, and its lateness is reported.
 * One line on stdout:
 *   sent=N ok=N errors=E seconds=S rate=X late_p99_ms=A late_max_ms=B p50_ms=C p99_ms=D
 *   due_p50_ms=E due_p99_ms=F
 * (ok: 200 answers, 202 for submit; seconds: from request 0's due time to the last
 * request's start, plus one period; rate: sent / seconds; late: start - due time;
 * p50/p99: the answers' latency from their start; due_p50/due_p99: from their due time,
 * the latency a client sending at that rate sees). Exit 1 when a request failed or the
 * file has too few items.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_http.h"

#define MAX_CONNS	256
#define MAX_ITEMS	5000000

struct item {
	char	*id;
	char	*token;
};

enum mode { MODE_COMPLETE, MODE_POLL, MODE_SUBMIT };

struct counters {
	long	 ok, errors;
	double	*late, *lat, *due;	/* ms, per request this thread sent */
	size_t	 n, cap;
	int64_t	 last;		/* ns, monotonic: the start of its last request */
};

static int port;
static double rate, duration_s;
static int nconns = 16;
static char key_hdr[256];	/* the file's key, as an Authorization line */
static char api_path[512];	/* its path line */
static enum mode mode = MODE_COMPLETE;
static struct item *items;
static long nitems, total;
static int64_t t0;		/* ns, monotonic: request 0 is due then */
static atomic_long next_req;

static _Noreturn void
die(const char *msg)
{
	fprintf(stderr, "bench_pace: %s\n", msg);
	exit(1);
}

static void
load(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024], a[512], b[512];
	long cap = 0;

	if (f == NULL)
		die("cannot open the data file");
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "key %511s", a) == 1) {
			if (strlen(a) > 200)
				die("key too long");
			snprintf(key_hdr, sizeof key_hdr, "Authorization: Bearer %.200s\r\n", a);
		} else if (sscanf(line, "path %511s", a) == 1) {
			if (strlen(a) > 300 || a[0] != '/')
				die("the path line is not /...");
			snprintf(api_path, sizeof api_path, "%s", a);
		} else if (sscanf(line, "item %511s %511s", a, b) == 2) {
			if (nitems == MAX_ITEMS)
				die("too many items");
			if (nitems == cap) {
				cap = cap ? 2 * cap : 4096;
				if ((items = realloc(items, (size_t)cap * sizeof *items)) == NULL)
					die("out of memory");
			}
			if ((items[nitems].id = strdup(a)) == NULL ||
			    (items[nitems].token = strdup(b)) == NULL)
				die("out of memory");
			nitems++;
		}
	}
	fclose(f);
	if (key_hdr[0] == '\0')
		die("no key line in the data file");
	if (mode != MODE_COMPLETE && api_path[0] == '\0')
		die("no path line in the data file");
}

/* Sends request i on h; its status, or -1. */
static int
send_one(struct hconn *h, long i)
{
	static const char body[] = "{\"result\":{\"bench\":\"pace\",\"ok\":true}}";
	static const char request[] = "{\"bench\":\"pace\",\"ok\":true}";
	char path[1200], hdrs[1024];
	const struct item *it = nitems > 0 ? &items[i % nitems] : NULL;

	switch (mode) {
	case MODE_COMPLETE:
		snprintf(path, sizeof path, "/v1/callbacks/%s/complete", it->id);
		snprintf(hdrs, sizeof hdrs, "%sX-Callback-Token: %s\r\n", key_hdr, it->token);
		return hc_request(h, "POST", path, hdrs, body, sizeof body - 1);
	case MODE_POLL:
		snprintf(path, sizeof path, "%s%s%s", api_path,
		    api_path[strlen(api_path) - 1] == '/' ? "" : "/", it->id);
		snprintf(hdrs, sizeof hdrs, "%sX-Poll-Token: %s\r\n", key_hdr, it->token);
		return hc_request(h, "GET", path, hdrs, NULL, 0);
	case MODE_SUBMIT:
		snprintf(path, sizeof path, "%.*s", (int)strlen(api_path) -
		    (api_path[strlen(api_path) - 1] == '/'), api_path);
		return hc_request(h, "POST", path, key_hdr, request, sizeof request - 1);
	}
	return -1;
}

static void
sleep_until(int64_t t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(t / 1000000000);
	ts.tv_nsec = (long)(t % 1000000000);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static void
add(struct counters *c, double late, double lat)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 4096;
		if ((c->late = realloc(c->late, c->cap * sizeof *c->late)) == NULL ||
		    (c->lat = realloc(c->lat, c->cap * sizeof *c->lat)) == NULL ||
		    (c->due = realloc(c->due, c->cap * sizeof *c->due)) == NULL)
			die("out of memory");
	}
	c->late[c->n] = late;
	c->due[c->n] = late + lat;
	c->lat[c->n++] = lat;
}

static void *
worker(void *arg)
{
	struct counters *c = arg;
	struct hconn h;
	long i;

	hc_init(&h, port);
	while ((i = atomic_fetch_add(&next_req, 1)) < total) {
		int64_t due = t0 + (int64_t)((double)i * 1e9 / rate), start, end;
		int s;

		sleep_until(due);
		start = ut_now_ns();
		c->last = start;
		s = send_one(&h, i);
		end = ut_now_ns();
		if (s == (mode == MODE_SUBMIT ? 202 : 200))
			c->ok++;
		else
			c->errors++;
		add(c, (double)(start - due) / 1e6, (double)(end - start) / 1e6);
	}
	hc_close(&h);
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(const double *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

enum series { LATE, LAT, DUE };

/* The values of series w of the nc threads' counters c (n in all), sorted. */
static double *
sorted(const struct counters *c, int nc, size_t n, enum series w)
{
	double *v, *from = NULL;
	size_t k = 0;
	int i;

	if ((v = malloc((n ? n : 1) * sizeof *v)) == NULL)
		die("out of memory");
	for (i = 0; i < nc; k += c[i].n, i++) {
		switch (w) {
		case LATE:
			from = c[i].late;
			break;
		case LAT:
			from = c[i].lat;
			break;
		case DUE:
			from = c[i].due;
			break;
		}
		if (c[i].n)
			memcpy(v + k, from, c[i].n * sizeof *v);
	}
	qsort(v, n, sizeof *v, cmp_double);
	return v;
}

static _Noreturn void
usage(void)
{
	fprintf(stderr, "usage: bench_pace --port P --rate R --duration S [--connections C] "
	    "[--mode complete|poll|submit] FILE\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static pthread_t tid[MAX_CONNS];
	static struct counters c[MAX_CONNS];
	const char *file = NULL;
	double *late, *lat, *due, secs;
	long ok = 0, errors = 0;
	int64_t last = 0;
	size_t n = 0;
	int i;

	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--port") == 0 && v != NULL)
			port = atoi(v);
		else if (strcmp(argv[i], "--rate") == 0 && v != NULL)
			rate = atof(v);
		else if (strcmp(argv[i], "--duration") == 0 && v != NULL)
			duration_s = atof(v);
		else if (strcmp(argv[i], "--connections") == 0 && v != NULL)
			nconns = atoi(v);
		else if (strcmp(argv[i], "--mode") == 0 && v != NULL &&
		    strcmp(v, "complete") == 0)
			mode = MODE_COMPLETE;
		else if (strcmp(argv[i], "--mode") == 0 && v != NULL && strcmp(v, "poll") == 0)
			mode = MODE_POLL;
		else if (strcmp(argv[i], "--mode") == 0 && v != NULL &&
		    strcmp(v, "submit") == 0)
			mode = MODE_SUBMIT;
		else if (argv[i][0] != '-' && file == NULL) {
			file = argv[i];
			continue;
		} else
			usage();
		i++;
	}
	if (port <= 0 || port > 65535 || rate <= 0 || rate > 1e6 || duration_s <= 0 ||
	    duration_s > 3600 || nconns < 1 || nconns > MAX_CONNS || file == NULL)
		usage();
	load(file);
	total = (long)(rate * duration_s + 0.5);
	if ((mode == MODE_COMPLETE && total > nitems) || (mode == MODE_POLL && nitems == 0)) {
		fprintf(stderr, "bench_pace: %ld requests wanted, the file has %ld items\n",
		    total, nitems);
		return 1;
	}
	t0 = ut_now_ns() + 50000000;	/* the threads are up by then */
	for (i = 0; i < nconns; i++)
		if (pthread_create(&tid[i], NULL, worker, &c[i]) != 0)
			die("pthread_create failed");
	for (i = 0; i < nconns; i++) {
		pthread_join(tid[i], NULL);
		ok += c[i].ok;
		errors += c[i].errors;
		n += c[i].n;
		if (c[i].last > last)
			last = c[i].last;
	}
	late = sorted(c, nconns, n, LATE);
	lat = sorted(c, nconns, n, LAT);
	due = sorted(c, nconns, n, DUE);
	/* the span: from request 0's due time to the last start, plus one period */
	secs = (last > t0 ? (double)(last - t0) / 1e9 : 0) + 1 / rate;
	printf("sent=%zu ok=%ld errors=%ld seconds=%.3f rate=%.1f late_p99_ms=%.3f "
	    "late_max_ms=%.3f p50_ms=%.3f p99_ms=%.3f due_p50_ms=%.3f due_p99_ms=%.3f\n", n,
	    ok, errors, secs, (double)n / secs, pct(late, n, 0.99), n ? late[n - 1] : 0.0,
	    pct(lat, n, 0.50), pct(lat, n, 0.99), pct(due, n, 0.50), pct(due, n, 0.99));
	return errors ? 1 : 0;
}
