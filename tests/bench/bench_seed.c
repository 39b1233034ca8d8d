/*
 * bench_seed.c - seeds executions for the benchmarks through the real HTTP API (nginx on
 * 127.0.0.1) and writes the data files that tests/bench/poll.lua and complete.lua load.
 *
 *   bench_seed --port P --route ENV/SVC/OP [--threads T] --count N --out FILE MODE
 *
 *   waiting    submit N executions; FILE lists {correlationId, pollToken}
 *   completed  submit N, claim them (max 100 per claim) and complete each;
 *              FILE lists {correlationId, pollToken}
 *   claimed    claim N waiting executions of the route (max 100 per claim, lease 3600 s),
 *              submitting more when the route runs dry; FILE lists {id, callbackToken}
 *
 * Keys come from the environment (never the command line): BENCH_CONSUMER_KEY (ak_...)
 * and BENCH_BACKEND_KEY (bk_...). The data file has the lines
 *   key KEY / path /v1/... / item A B (one per item)
 * Exit status 0 when all N were seeded, 1 otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench_http.h"

#define MAX_THREADS	64
#define MAX_COUNT	5000000
#define CLAIM_MAX	100
#define TIME_LIMIT_S	600.0	/* every phase gives up after this long */

struct item {
	char	*a;	/* correlation id or execution id */
	char	*b;	/* poll token or callback token */
};

static int port;
static const char *route;		/* ENV/SVC/OP */
static char ak_hdr[256], bk_hdr[256];	/* "Authorization: Bearer ...\r\n" */
static struct item *items;
static long count;
static int nthreads = 8;
static double deadline;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long next_index;	/* submit: next slot to fill */
static long nclaimed;	/* claim: items filled so far */
static long nerrors;
static int dry;		/* claim: the route returned nothing */

static _Noreturn void
die(const char *msg)
{
	fprintf(stderr, "bench_seed: %s\n", msg);
	exit(1);
}

static void
count_error(void)
{
	pthread_mutex_lock(&mu);
	nerrors++;
	pthread_mutex_unlock(&mu);
}

static int
safe_token(const char *s)
{
	return s != NULL && *s != '\0' && strlen(s) < 200 &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") ==
	    strlen(s);
}

static const char *
jstring(struct json_object *o, const char *k)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * POSTs body (len bytes) to path with the header lines hdrs: 0 when the status is want,
 * else -1 (said on stderr as "bench_seed: WHAT: status N: BODY").
 */
static int
post_want(struct hconn *c, const char *what, const char *path, const char *hdrs,
    const char *body, size_t len, int want)
{
	int st = hc_request(c, "POST", path, hdrs, body, len);

	if (st != want) {
		fprintf(stderr, "bench_seed: %s: status %d: %.200s\n", what, st,
		    st > 0 ? c->body : "");
		return -1;
	}
	return 0;
}

/* ---- submit ------------------------------------------------------------------------- */

/* Submits one execution; fills *it with its correlation id and poll token. 0 or -1. */
static int
submit_one(struct hconn *c, long n, struct item *it)
{
	char path[512], body[128];
	struct json_object *o;
	const char *cid, *tok;

	snprintf(path, sizeof path, "/v1/executions/%s", route);
	snprintf(body, sizeof body, "{\"bench\":\"seed\",\"n\":%ld}", n);
	if (post_want(c, "submit", path, ak_hdr, body, strlen(body), 202) != 0)
		return -1;
	if ((o = json_tokener_parse(c->body)) == NULL)
		return -1;
	cid = jstring(o, "correlationId");
	tok = jstring(o, "pollToken");
	if (!safe_token(cid) || !safe_token(tok)) {
		json_object_put(o);
		fprintf(stderr, "bench_seed: submit: unexpected body %.200s\n", c->body);
		return -1;
	}
	if (it != NULL) {
		it->a = strdup(cid);
		it->b = strdup(tok);
	}
	json_object_put(o);
	return 0;
}

struct submit_job {
	long	 total;		/* submit this many */
	int	 keep;		/* store the results in items[] */
};

static void *
submit_thread(void *arg)
{
	const struct submit_job *job = arg;
	struct hconn c;
	long i;

	hc_init(&c, port);
	for (;;) {
		pthread_mutex_lock(&mu);
		i = next_index < job->total ? next_index++ : -1;
		pthread_mutex_unlock(&mu);
		if (i < 0 || ut_now_s() > deadline)
			break;
		if (submit_one(&c, i, job->keep ? &items[i] : NULL) != 0)
			count_error();
	}
	hc_close(&c);
	return NULL;
}

static void
run_threads(void *(*fn)(void *), void *arg)
{
	pthread_t t[MAX_THREADS];
	int i;

	for (i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, fn, arg) != 0)
			die("pthread_create failed");
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
}

static void
submit_all(long total, int keep)
{
	struct submit_job job = { total, keep };

	next_index = 0;
	run_threads(submit_thread, &job);
}

/* ---- claim (and complete) ----------------------------------------------------------- */

struct claim_job {
	int	 complete;	/* complete each claimed execution (mode "completed") */
	long	 want;		/* stop once this many were claimed */
};

/* Completes execution id with its callback token cbt: 0, or -1 (said on stderr). */
static int
complete_one(struct hconn *c, const char *id, const char *cbt)
{
	char path[128], hdrs[512], what[64];
	static const char body[] = "{\"result\":{\"bench\":\"seed\",\"ok\":true}}";

	snprintf(path, sizeof path, "/v1/callbacks/%s/complete", id);
	snprintf(hdrs, sizeof hdrs, "%sX-Callback-Token: %s\r\n", bk_hdr, cbt);
	snprintf(what, sizeof what, "complete %s", id);
	return post_want(c, what, path, hdrs, body, sizeof body - 1, 200);
}

/* One claim request for up to max executions; returns how many it got, -1 on error. */
static int
claim_batch(struct hconn *c, const struct claim_job *job, int max)
{
	char path[512], body[64];
	struct json_object *o, *arr;
	size_t i, n;

	snprintf(path, sizeof path, "/v1/backend/%s/claim", route);
	snprintf(body, sizeof body, "{\"max\":%d,\"leaseSeconds\":3600}", max);
	if (post_want(c, "claim", path, bk_hdr, body, strlen(body), 200) != 0)
		return -1;
	if ((o = json_tokener_parse(c->body)) == NULL ||
	    !json_object_object_get_ex(o, "executions", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		json_object_put(o);
		return -1;
	}
	n = json_object_array_length(arr);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i), *idv;
		const char *cbt = jstring(e, "callbackToken");
		char id[32];
		long slot = -1;

		if (!json_object_object_get_ex(e, "id", &idv) || !safe_token(cbt)) {
			count_error();
			continue;
		}
		snprintf(id, sizeof id, "%lld", (long long)json_object_get_int64(idv));
		if (job->complete) {
			if (complete_one(c, id, cbt) != 0)
				count_error();
			pthread_mutex_lock(&mu);
			nclaimed++;
			pthread_mutex_unlock(&mu);
			continue;
		}
		pthread_mutex_lock(&mu);
		if (nclaimed < count)
			slot = nclaimed++;
		pthread_mutex_unlock(&mu);
		if (slot >= 0) {
			items[slot].a = strdup(id);
			items[slot].b = strdup(cbt);
		}
	}
	json_object_put(o);
	return (int)n;
}

static void *
claim_thread(void *arg)
{
	const struct claim_job *job = arg;
	struct hconn c;
	int empties = 0;

	hc_init(&c, port);
	for (;;) {
		long have, left;
		int got, is_dry;

		pthread_mutex_lock(&mu);
		have = nclaimed;
		is_dry = dry;
		pthread_mutex_unlock(&mu);
		left = job->want - have;
		if (left <= 0 || is_dry || ut_now_s() > deadline)
			break;
		/* the threads together ask for at most what is missing (rounded up) */
		left = (left + nthreads - 1) / nthreads;
		got = claim_batch(&c, job, left > CLAIM_MAX ? CLAIM_MAX : (int)left);
		if (got < 0) {
			count_error();
			usleep(10000);
		} else if (got == 0) {
			/* SKIP LOCKED: another thread may hold the rest; dry after 3 tries */
			if (++empties >= 3) {
				pthread_mutex_lock(&mu);
				dry = 1;
				pthread_mutex_unlock(&mu);
			} else {
				usleep(20000);
			}
		} else {
			empties = 0;
		}
	}
	hc_close(&c);
	return NULL;
}

static void
claim_until(long want, int complete)
{
	struct claim_job job = { complete, want };

	dry = 0;
	run_threads(claim_thread, &job);
}

/* ---- output ------------------------------------------------------------------------- */

/*
 * Writes the data file: text lines "key KEY", "path PATH", then one "item A B" per item.
 * (Text rather than a Lua table: LuaJIT refuses a chunk with more than 65536 constants.)
 */
static void
write_data(const char *out, const char *key, const char *path)
{
	char tmp[4096];
	FILE *f;
	long i;

	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	if ((f = fopen(tmp, "w")) == NULL) {
		fprintf(stderr, "bench_seed: %s: %s\n", tmp, strerror(errno));
		exit(1);
	}
	fprintf(f, "key %s\npath %s\n", key, path);
	for (i = 0; i < count; i++)
		if (items[i].a != NULL)
			fprintf(f, "item %s %s\n", items[i].a, items[i].b);
	if (fclose(f) != 0 || rename(tmp, out) != 0) {
		fprintf(stderr, "bench_seed: writing %s failed\n", out);
		exit(1);
	}
}

static long
filled(void)
{
	long i, n = 0;

	for (i = 0; i < count; i++)
		n += items[i].a != NULL;
	return n;
}

static _Noreturn void
usage(void)
{
	fprintf(stderr, "usage: bench_seed --port P --route ENV/SVC/OP [--threads T] "
	    "--count N --out FILE waiting|completed|claimed\n"
	    "  keys from BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *out = NULL, *mode = NULL, *ak, *bk;
	char path[512];
	double t0 = ut_now_s();
	long got;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (strcmp(argv[i], "--route") == 0 && i + 1 < argc)
			route = argv[++i];
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = atol(argv[++i]);
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] != '-' && mode == NULL)
			mode = argv[i];
		else
			usage();
	}
	ak = getenv("BENCH_CONSUMER_KEY");
	bk = getenv("BENCH_BACKEND_KEY");
	if (port <= 0 || port > 65535 || route == NULL || out == NULL || mode == NULL ||
	    count <= 0 || count > MAX_COUNT || nthreads < 1 || nthreads > MAX_THREADS)
		usage();
	if (strspn(route, "abcdefghijklmnopqrstuvwxyz0123456789._-/") != strlen(route))
		die("bad route");
	if (ak == NULL || !safe_token(ak) || bk == NULL || !safe_token(bk))
		die("BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY must be set");
	snprintf(ak_hdr, sizeof ak_hdr, "Authorization: Bearer %s\r\n", ak);
	snprintf(bk_hdr, sizeof bk_hdr, "Authorization: Bearer %s\r\n", bk);
	if ((items = calloc((size_t)count, sizeof *items)) == NULL)
		die("out of memory");
	deadline = t0 + TIME_LIMIT_S;

	if (strcmp(mode, "waiting") == 0 || strcmp(mode, "completed") == 0) {
		submit_all(count, 1);
		if (strcmp(mode, "completed") == 0) {
			nclaimed = 0;
			claim_until(count, 1);
			if (nclaimed < count) {
				fprintf(stderr, "bench_seed: completed only %ld of %ld\n",
				    nclaimed, count);
				nerrors++;
			}
		}
		snprintf(path, sizeof path, "/v1/executions/%s/", route);
		write_data(out, ak, path);
	} else if (strcmp(mode, "claimed") == 0) {
		nclaimed = 0;
		claim_until(count, 0);
		if (nclaimed < count) {
			long more = count - nclaimed;

			fprintf(stderr, "bench_seed: route %s ran dry after %ld claims; "
			    "submitting %ld more\n", route, nclaimed, more);
			submit_all(more, 0);
			claim_until(count, 0);
		}
		write_data(out, bk, "/v1/callbacks/");
	} else {
		usage();
	}
	got = filled();
	fprintf(stderr, "bench_seed: %s: %ld of %ld items in %.1f s (%ld errors) -> %s\n",
	    mode, got, count, ut_now_s() - t0, nerrors, out);
	return got == count && nerrors == 0 ? 0 : 1;
}
