/*
 * bench_lifecycle.c - the mixed life-cycle benchmark of scripts/bench.sh: consumers submit
 * and poll, backend workers claim in batches and complete, all at once through nginx on
 * 127.0.0.1, for a fixed time.
 *
 *   bench_lifecycle --port P --route ENV/SVC/OP [--consumers 32] [--backends 16]
 *                   [--queue 16] [--poll-delay-ms 10] [--batch 10]
 *                   [--warmup 2] [--duration 10]
 *
 * Each consumer thread keeps up to --queue executions in flight on its keep-alive
 * connection: it submits while it has room, and polls the oldest one once its poll time
 * (--poll-delay-ms after submit or after the last poll) has come, until the poll shows
 * "completed". Each backend thread claims up to --batch executions (lease 60 s) and
 * completes each; an empty claim makes it wait 2 ms.
 *
 * An execution is done when a poll sees it completed. Executions done during the measured
 * window (after the warm-up) per second is the result; the latency is submit -> poll sees
 * completed. One line on stdout:
 *   done=N seconds=S exec_per_s=X p50_ms=A p99_ms=B submits=.. polls=.. claims=..
 *   empty_claims=.. claimed=.. completes=.. errors=E
 * (empty_claims: the claims that handed out none).
 * Keys from BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY. Exit 1 when errors occurred.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench_http.h"

#define MAX_THREADS	256
#define MAX_QUEUE	256

static int port, nconsumers = 32, nbackends = 16, qmax = 16, batch = 10;
static int64_t poll_delay_ns = 10 * 1000000LL;
static double warmup_s = 2, duration_s = 10;
static const char *route;
static char ak_hdr[256], bk_hdr[256];
static int64_t t_measure, t_end;	/* ns, monotonic */

struct counters {
	long	 done, submits, polls, claims, empty_claims, claimed, completes, errors;
	double	*lat;			/* ms, done executions */
	size_t	 nlat, caplat;
};

struct pending {
	char	 cid[130];
	char	 tok[96];
	int64_t	 t_submit, next_poll;
};

struct thread_arg {
	pthread_t	 tid;
	struct counters	 c;
};

static int
in_window(int64_t t)
{
	return t >= t_measure && t < t_end;
}

static void
add_lat(struct counters *c, double ms)
{
	if (c->nlat == c->caplat) {
		c->caplat = c->caplat ? 2 * c->caplat : 4096;
		if ((c->lat = realloc(c->lat, c->caplat * sizeof *c->lat)) == NULL) {
			fprintf(stderr, "bench_lifecycle: out of memory\n");
			exit(1);
		}
	}
	c->lat[c->nlat++] = ms;
}

/* Copies the string value of "name" in the flat JSON body into out; 0 or -1. */
static int
json_field(const char *body, const char *name, char *out, size_t outsz)
{
	char key[64];
	const char *p, *e;

	snprintf(key, sizeof key, "\"%s\"", name);
	if ((p = strstr(body, key)) == NULL)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p++ != ':')
		return -1;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p++ != '"' || (e = strchr(p, '"')) == NULL || (size_t)(e - p) >= outsz)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

static void
sleep_ns(int64_t ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	if (ns > 50000000)
		ns = 50000000;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)ns;
	nanosleep(&ts, NULL);
}

/* ---- consumer ----------------------------------------------------------------------- */

static void *
consumer(void *arg)
{
	struct counters *c = &((struct thread_arg *)arg)->c;
	struct pending *q = calloc((size_t)qmax, sizeof *q);
	struct hconn h;
	char sub_path[512], path[768], hdrs[512], body[96], st[32];
	size_t head = 0, len = 0;
	long n = 0;

	if (q == NULL)
		return NULL;
	hc_init(&h, port);
	snprintf(sub_path, sizeof sub_path, "/v1/executions/%s", route);
	for (;;) {
		int64_t now = ut_now_ns();

		if (now >= t_end)
			break;
		if (len < (size_t)qmax && (len == 0 || q[head].next_poll > now)) {
			struct pending *p = &q[(head + len) % (size_t)qmax];
			int s;

			snprintf(body, sizeof body, "{\"bench\":\"lifecycle\",\"n\":%ld}", n++);
			s = hc_request(&h, "POST", sub_path, ak_hdr, body, strlen(body));
			if (in_window(now))
				c->submits++;
			if (s != 202 || json_field(h.body, "correlationId", p->cid,
			    sizeof p->cid) != 0 || json_field(h.body, "pollToken", p->tok,
			    sizeof p->tok) != 0) {
				c->errors++;
				sleep_ns(1000000);
				continue;
			}
			p->t_submit = now;
			p->next_poll = ut_now_ns() + poll_delay_ns;
			len++;
		} else if (q[head].next_poll <= now) {
			struct pending *p = &q[head];
			int s;

			snprintf(path, sizeof path, "%s/%s", sub_path, p->cid);
			snprintf(hdrs, sizeof hdrs, "%sX-Poll-Token: %s\r\n", ak_hdr, p->tok);
			s = hc_request(&h, "GET", path, hdrs, NULL, 0);
			now = ut_now_ns();
			if (in_window(now))
				c->polls++;
			if (s != 200 || json_field(h.body, "status", st, sizeof st) != 0) {
				c->errors++;
				head = (head + 1) % (size_t)qmax;	/* drop it */
				len--;
				continue;
			}
			if (strcmp(st, "completed") == 0) {
				if (in_window(now)) {
					c->done++;
					add_lat(c, (double)(now - p->t_submit) / 1e6);
				}
				head = (head + 1) % (size_t)qmax;
				len--;
			} else if (strcmp(st, "waiting_callback") == 0) {
				/* to the back of the queue */
				struct pending tmp = *p;

				tmp.next_poll = now + poll_delay_ns;
				head = (head + 1) % (size_t)qmax;
				q[(head + len - 1) % (size_t)qmax] = tmp;
			} else {
				c->errors++;
				head = (head + 1) % (size_t)qmax;
				len--;
			}
		} else {
			int64_t wait = q[head].next_poll - now;

			sleep_ns(wait < t_end - now ? wait : t_end - now);
		}
	}
	hc_close(&h);
	free(q);
	return NULL;
}

/* ---- backend ------------------------------------------------------------------------ */

static void *
backend(void *arg)
{
	struct counters *c = &((struct thread_arg *)arg)->c;
	struct hconn h;
	char claim_path[512], claim_body[64], path[128], hdrs[512];
	static const char result[] = "{\"result\":{\"bench\":\"lifecycle\",\"ok\":true}}";

	hc_init(&h, port);
	snprintf(claim_path, sizeof claim_path, "/v1/backend/%s/claim", route);
	snprintf(claim_body, sizeof claim_body, "{\"max\":%d,\"leaseSeconds\":60}", batch);
	while (ut_now_ns() < t_end) {
		struct json_object *o = NULL, *arr;
		size_t i, n;
		int s = hc_request(&h, "POST", claim_path, bk_hdr, claim_body,
		    strlen(claim_body));

		if (in_window(ut_now_ns()))
			c->claims++;
		if (s != 200 || (o = json_tokener_parse(h.body)) == NULL ||
		    !json_object_object_get_ex(o, "executions", &arr) ||
		    !json_object_is_type(arr, json_type_array)) {
			json_object_put(o);
			c->errors++;
			sleep_ns(1000000);
			continue;
		}
		n = json_object_array_length(arr);
		if (in_window(ut_now_ns())) {
			c->claimed += (long)n;
			c->empty_claims += n == 0;
		}
		for (i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(arr, i), *idv, *tv;

			if (!json_object_object_get_ex(e, "id", &idv) ||
			    !json_object_object_get_ex(e, "callbackToken", &tv)) {
				c->errors++;
				continue;
			}
			snprintf(path, sizeof path, "/v1/callbacks/%lld/complete",
			    (long long)json_object_get_int64(idv));
			snprintf(hdrs, sizeof hdrs, "%sX-Callback-Token: %s\r\n", bk_hdr,
			    json_object_get_string(tv));
			s = hc_request(&h, "POST", path, hdrs, result, sizeof result - 1);
			if (in_window(ut_now_ns()))
				c->completes++;
			if (s != 200)
				c->errors++;
		}
		json_object_put(o);
		if (n == 0)
			sleep_ns(2000000);
	}
	hc_close(&h);
	return NULL;
}

/* ---- main --------------------------------------------------------------------------- */

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

static _Noreturn void
usage(void)
{
	fprintf(stderr, "usage: bench_lifecycle --port P --route ENV/SVC/OP [--consumers N] "
	    "[--backends N] [--queue N] [--poll-delay-ms MS] [--batch N] [--warmup S] "
	    "[--duration S]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static struct thread_arg th[MAX_THREADS];
	struct counters tot;
	const char *ak = getenv("BENCH_CONSUMER_KEY"), *bk = getenv("BENCH_BACKEND_KEY");
	double *all;
	size_t k;
	int i, n;

	for (i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(argv[i], "--port") == 0)
			port = atoi(v);
		else if (strcmp(argv[i], "--route") == 0)
			route = v;
		else if (strcmp(argv[i], "--consumers") == 0)
			nconsumers = atoi(v);
		else if (strcmp(argv[i], "--backends") == 0)
			nbackends = atoi(v);
		else if (strcmp(argv[i], "--queue") == 0)
			qmax = atoi(v);
		else if (strcmp(argv[i], "--poll-delay-ms") == 0)
			poll_delay_ns = (int64_t)(atof(v) * 1e6);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = atoi(v);
		else if (strcmp(argv[i], "--warmup") == 0)
			warmup_s = atof(v);
		else if (strcmp(argv[i], "--duration") == 0)
			duration_s = atof(v);
		else
			usage();
	}
	if (port <= 0 || port > 65535 || route == NULL || nconsumers < 1 || nbackends < 1 ||
	    nconsumers + nbackends > MAX_THREADS || qmax < 1 || qmax > MAX_QUEUE ||
	    batch < 1 || batch > 100 || poll_delay_ns < 0 || warmup_s < 0 || warmup_s > 600 ||
	    duration_s <= 0 || duration_s > 3600 ||
	    strspn(route, "abcdefghijklmnopqrstuvwxyz0123456789._-/") != strlen(route))
		usage();
	if (ak == NULL || bk == NULL || strlen(ak) > 200 || strlen(bk) > 200 ||
	    strpbrk(ak, "\r\n") != NULL || strpbrk(bk, "\r\n") != NULL) {
		fprintf(stderr, "bench_lifecycle: BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY "
		    "must be set\n");
		return 2;
	}
	snprintf(ak_hdr, sizeof ak_hdr, "Authorization: Bearer %s\r\n", ak);
	snprintf(bk_hdr, sizeof bk_hdr, "Authorization: Bearer %s\r\n", bk);
	t_measure = ut_now_ns() + (int64_t)(warmup_s * 1e9);
	t_end = t_measure + (int64_t)(duration_s * 1e9);

	n = nconsumers + nbackends;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i].tid, NULL, i < nconsumers ? consumer : backend,
		    &th[i]) != 0) {
			fprintf(stderr, "bench_lifecycle: pthread_create failed\n");
			return 1;
		}
	memset(&tot, 0, sizeof tot);
	for (i = 0; i < n; i++) {
		pthread_join(th[i].tid, NULL);
		tot.done += th[i].c.done;
		tot.submits += th[i].c.submits;
		tot.polls += th[i].c.polls;
		tot.claims += th[i].c.claims;
		tot.empty_claims += th[i].c.empty_claims;
		tot.claimed += th[i].c.claimed;
		tot.completes += th[i].c.completes;
		tot.errors += th[i].c.errors;
		tot.nlat += th[i].c.nlat;
	}
	if ((all = malloc((tot.nlat ? tot.nlat : 1) * sizeof *all)) == NULL)
		return 1;
	for (i = 0, k = 0; i < n; i++) {
		if (th[i].c.nlat)
			memcpy(all + k, th[i].c.lat, th[i].c.nlat * sizeof *all);
		k += th[i].c.nlat;
		free(th[i].c.lat);
	}
	qsort(all, tot.nlat, sizeof *all, cmp_double);
	printf("done=%ld seconds=%.3f exec_per_s=%.1f p50_ms=%.3f p99_ms=%.3f submits=%ld "
	    "polls=%ld claims=%ld empty_claims=%ld claimed=%ld completes=%ld "
	    "errors=%ld\n", tot.done, duration_s, (double)tot.done / duration_s,
	    pct(all, tot.nlat, 0.50), pct(all, tot.nlat, 0.99), tot.submits,
	    tot.polls, tot.claims, tot.empty_claims, tot.claimed, tot.completes,
	    tot.errors);
	free(all);
	return tot.errors ? 1 : 0;
}
