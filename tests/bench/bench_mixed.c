/*
 * bench_mixed.c - a fixed number of mixed requests through nginx, one keep-alive
 * connection, every answer checked: the load of scripts/valgrind-worker.sh (memcheck of a
 * worker) and of its --rss measurement.
 *
 *   bench_mixed --port P --route ENV/SVC/OP [--requests 10000]
 *
 * It repeats one round until --requests requests were sent (the last round may stop
 * anywhere): submit, poll, claim, heartbeat with progress, then complete, fail, or a
 * cancel while claimed (202) seen by a second heartbeat and acknowledged (rotating), poll
 * of the outcome, a late callback (409), a byte-identical resubmit (202) and a conflicting
 * one (409); a second execution submitted and cancelled before any claim (200), polled and
 * cancelled again (409); and two bad requests of a rotating list of 4xx cases (invalid JSON,
 * unsupported media type, no key, unknown route, wrong poll token, unknown correlation id,
 * bad claim body, unknown callback id, wrong method, unknown path) plus healthz or readyz
 * in turn. The route must have no other waiting executions (a fresh route).
 *
 * One line on stdout:
 *   requests=N rounds=R seconds=S req_per_s=X unexpected=U submit=.. poll=.. claim=..
 *   heartbeat=.. complete=.. fail=.. cancel=.. bad=.. ops=..
 * An answer with another status than the one expected is printed (the first 20) and
 * counted; exit 1 when any was unexpected or a request failed, 2 on usage errors.
 * Keys from BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench_http.h"

enum kind { K_SUBMIT, K_POLL, K_CLAIM, K_HEARTBEAT, K_COMPLETE, K_FAIL, K_CANCEL,
	K_BAD, K_OPS, K__MAX };

static const char *kind_name[K__MAX] = { "submit", "poll", "claim", "heartbeat",
	"complete", "fail", "cancel", "bad", "ops" };

static struct hconn conn;
static const char *route;
static char ak_hdr[256], bk_hdr[256];
static long budget = 10000, sent, unexpected, count[K__MAX];

/* What the current round knows of its executions. */
struct round {
	long	 n;
	char	 cid[64], cid2[64];
	char	 tok[128], tok2[128];
	char	 body[64];
	long long id;
	char	 cbtok[128 + 1];	/* a callback token: 128 characters at most */
};

/* Sends one request of kind k and checks its status against want (and want2 when not 0).
 * Returns the status, 0 when the budget is spent (nothing sent), -1 on transport error. */
static int
req(enum kind k, int want, int want2, const char *method, const char *path,
    const char *hdrs, const char *body)
{
	int	 st;

	if (sent >= budget)
		return 0;
	sent++;
	count[k]++;
	st = hc_request(&conn, method, path, hdrs, body, body ? strlen(body) : 0);
	if (st == -1) {
		fprintf(stderr, "bench_mixed: %s %s: no answer\n", method, path);
		exit(1);
	}
	if (st != want && (want2 == 0 || st != want2)) {
		if (unexpected++ < 20)
			fprintf(stderr, "bench_mixed: %s %s: %d, expected %d: %.300s\n",
			    method, path, st, want, conn.body);
		return -1;
	}
	return st;
}

/* Whether the last answer (of kind k) holds needle; 0, or -1 (counted as unexpected). */
static int
has(enum kind k, const char *needle)
{
	if (strstr(conn.body, needle) != NULL)
		return 0;
	if (unexpected++ < 20)
		fprintf(stderr, "bench_mixed: %s: no %s in %.300s\n", kind_name[k], needle,
		    conn.body);
	return -1;
}

/* Copies the string member name of the last answer's JSON body into buf; 0, or -1. */
static int
member(const char *name, char *buf, size_t len)
{
	json_object	*o = json_tokener_parse(conn.body), *v;
	int		 rc = -1;

	if (o != NULL && json_object_object_get_ex(o, name, &v) &&
	    json_object_is_type(v, json_type_string) &&
	    (size_t)json_object_get_string_len(v) < len) {
		snprintf(buf, len, "%s", json_object_get_string(v));
		rc = 0;
	}
	json_object_put(o);
	return rc;
}

/* From the last claim's answer: exactly one execution with correlation id cid; sets
 * r->id and r->cbtok. 0, or -1 (counted as unexpected). */
static int
claimed(struct round *r, const char *cid)
{
	json_object	*o = json_tokener_parse(conn.body), *a, *e, *v;
	int		 rc = -1;

	if (o != NULL && json_object_object_get_ex(o, "executions", &a) &&
	    json_object_array_length(a) == 1 && (e = json_object_array_get_idx(a, 0)) &&
	    json_object_object_get_ex(e, "correlationId", &v) &&
	    strcmp(json_object_get_string(v), cid) == 0 &&
	    json_object_object_get_ex(e, "id", &v) &&
	    (r->id = json_object_get_int64(v)) > 0 &&
	    json_object_object_get_ex(e, "callbackToken", &v) &&
	    (size_t)json_object_get_string_len(v) < sizeof(r->cbtok)) {
		snprintf(r->cbtok, sizeof(r->cbtok), "%s", json_object_get_string(v));
		rc = 0;
	}
	json_object_put(o);
	if (rc == -1 && unexpected++ < 20)
		fprintf(stderr, "bench_mixed: claim: not exactly %s: %.300s\n", cid,
		    conn.body);
	return rc;
}

/* Path of execution cid of the route, with suffix (may be ""). */
static const char *
exec_path(const char *cid, const char *suffix)
{
	static char	 p[512];

	snprintf(p, sizeof(p), "/v1/executions/%s/%s%s", route, cid, suffix);
	return p;
}

/* Headers: the consumer key, X-Correlation-Id cid and X-Poll-Token tok (either may be
 * NULL). hc_request adds the Content-Type of a body. */
static const char *
consumer_hdrs(const char *cid, const char *tok)
{
	static char	 h[1024];

	snprintf(h, sizeof(h), "%s%s%s%s%s%s%s", ak_hdr,
	    cid ? "X-Correlation-Id: " : "", cid ? cid : "", cid ? "\r\n" : "",
	    tok ? "X-Poll-Token: " : "", tok ? tok : "", tok ? "\r\n" : "");
	return h;
}

/* Headers: the backend key and X-Callback-Token tok (may be NULL). */
static const char *
backend_hdrs(const char *tok)
{
	static char	 h[1024];

	snprintf(h, sizeof(h), "%s%s%s%s", bk_hdr,
	    tok ? "X-Callback-Token: " : "", tok ? tok : "", tok ? "\r\n" : "");
	return h;
}

/* Submits cid with the round's body, expecting want; stores its poll token in tok. */
static int
submit(struct round *r, const char *cid, char *tok, size_t toklen, int want)
{
	char	 path[512];

	snprintf(path, sizeof(path), "/v1/executions/%s", route);
	if (req(K_SUBMIT, want, 0, "POST", path, consumer_hdrs(cid, NULL), r->body) <= 0)
		return -1;
	if (want == 202 && member("pollToken", tok, toklen) == -1) {
		if (unexpected++ < 20)
			fprintf(stderr, "bench_mixed: submit: no pollToken\n");
		return -1;
	}
	return 0;
}

/* Claims the round's execution (max 1, lease 60 s). 0, or -1. */
static int
claim(struct round *r)
{
	char	 path[512];

	snprintf(path, sizeof(path), "/v1/backend/%s/claim", route);
	if (req(K_CLAIM, 200, 0, "POST", path, backend_hdrs(NULL),
	    "{\"max\":1,\"leaseSeconds\":60}") <= 0)
		return -1;
	return claimed(r, r->cid);
}

/* Callback verb on the round's claim with body, expecting want. */
static int
callback(struct round *r, enum kind k, const char *verb, const char *body, int want)
{
	char	 path[128];

	snprintf(path, sizeof(path), "/v1/callbacks/%lld/%s", r->id, verb);
	return req(k, want, 0, "POST", path, backend_hdrs(r->cbtok), body) <= 0 ? -1 : 0;
}

/* The life of execution cid: submit, poll, claim, heartbeat, outcome, poll, late
 * callback, resubmits. 0, or -1 when the round cannot go on. */
static int
lifecycle(struct round *r)
{
	char	 prog[64], res[64];

	if (submit(r, r->cid, r->tok, sizeof(r->tok), 202) == -1 ||
	    req(K_POLL, 200, 0, "GET", exec_path(r->cid, ""),
	    consumer_hdrs(NULL, r->tok), NULL) <= 0 || claim(r) == -1)
		return -1;
	snprintf(prog, sizeof(prog), "{\"leaseSeconds\":60,\"progress\":{\"p\":%ld}}", r->n);
	if (callback(r, K_HEARTBEAT, "heartbeat", prog, 200) == -1)
		return -1;
	snprintf(res, sizeof(res), "{\"result\":{\"n\":%ld}}", r->n);
	switch (r->n % 3) {
	case 0:
		if (callback(r, K_COMPLETE, "complete", res, 200) == -1)
			return -1;
		break;
	case 1:
		if (callback(r, K_FAIL, "fail", "{\"error\":{\"message\":\"no\"}}", 200) == -1)
			return -1;
		break;
	default:	/* cancelled while claimed: 202, seen on heartbeat, acknowledged */
		if (req(K_CANCEL, 202, 0, "POST", exec_path(r->cid, "/cancel"),
		    consumer_hdrs(NULL, r->tok), NULL) <= 0 ||
		    callback(r, K_HEARTBEAT, "heartbeat", prog, 200) == -1 ||
		    has(K_HEARTBEAT, "\"cancelRequested\":true") == -1 ||
		    callback(r, K_CANCEL, "cancelled", "{}", 200) == -1)
			return -1;
	}
	if (req(K_POLL, 200, 0, "GET", exec_path(r->cid, ""),
	    consumer_hdrs(NULL, r->tok), NULL) <= 0 ||
	    callback(r, K_COMPLETE, "complete", "{\"result\":\"late\"}", 409) == -1 ||
	    submit(r, r->cid, r->tok, sizeof(r->tok), 202) == -1)
		return -1;
	snprintf(r->body, sizeof(r->body), "{\"n\":%ld,\"other\":true}", r->n);
	return submit(r, r->cid, NULL, 0, 409);
}

/* A second execution cancelled before any claim, polled, cancelled again. */
static int
cancel_path(struct round *r)
{
	snprintf(r->body, sizeof(r->body), "{\"cancel\":%ld}", r->n);
	if (submit(r, r->cid2, r->tok2, sizeof(r->tok2), 202) == -1 ||
	    req(K_CANCEL, 200, 0, "POST", exec_path(r->cid2, "/cancel"),
	    consumer_hdrs(NULL, r->tok2), NULL) <= 0 ||
	    req(K_POLL, 200, 0, "GET", exec_path(r->cid2, ""),
	    consumer_hdrs(NULL, r->tok2), NULL) <= 0 ||
	    req(K_CANCEL, 409, 0, "POST", exec_path(r->cid2, "/cancel"),
	    consumer_hdrs(NULL, r->tok2), NULL) <= 0)
		return -1;
	return 0;
}

/* Bad request number i (of a rotating list), each a documented 4xx. */
static void
bad(struct round *r, long i)
{
	char	 path[512];

	snprintf(path, sizeof(path), "/v1/executions/%s", route);
	switch (i % 10) {
	case 0:
		(void)req(K_BAD, 400, 0, "POST", path, consumer_hdrs("bad-json", NULL),
		    "{\"a\":");
		break;
	case 1:
		(void)req(K_BAD, 415, 0, "POST", path, ak_hdr, NULL);
		break;
	case 2:
		(void)req(K_BAD, 401, 0, "POST", path, NULL, "{}");
		break;
	case 3:
		(void)req(K_BAD, 404, 0, "POST", "/v1/executions/no/such/route",
		    consumer_hdrs("x1", NULL), "{}");
		break;
	case 4:
		(void)req(K_BAD, 404, 0, "GET", exec_path(r->cid, ""),
		    consumer_hdrs(NULL, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
		    NULL);
		break;
	case 5:
		(void)req(K_BAD, 404, 0, "GET", exec_path("never-submitted", ""),
		    consumer_hdrs(NULL, r->tok), NULL);
		break;
	case 6:
		snprintf(path, sizeof(path), "/v1/backend/%s/claim", route);
		(void)req(K_BAD, 400, 0, "POST", path, backend_hdrs(NULL), "{\"max\":0}");
		break;
	case 7:
		(void)req(K_BAD, 404, 0, "POST", "/v1/callbacks/999999999999/complete",
		    backend_hdrs(r->cbtok), "{\"result\":1}");
		break;
	case 8:
		(void)req(K_BAD, 405, 0, "DELETE", path, ak_hdr, NULL);
		break;
	default:
		(void)req(K_BAD, 404, 0, "GET", "/v1/nothing-here", ak_hdr, NULL);
	}
}

/* One round number n; false when the budget is spent. */
static int
round_run(long n)
{
	static const char *ops[] = { "/healthz", "/readyz" };
	struct round	 r;
	long		 pid = (long)getpid();

	memset(&r, 0, sizeof(r));
	r.n = n;
	snprintf(r.cid, sizeof(r.cid), "mx-%ld-%ld", pid, n);
	snprintf(r.cid2, sizeof(r.cid2), "mx-%ld-%ld-c", pid, n);
	snprintf(r.body, sizeof(r.body), "{\"n\":%ld}", n);
	(void)lifecycle(&r);
	(void)cancel_path(&r);
	bad(&r, 2 * n);
	bad(&r, 2 * n + 1);
	(void)req(K_OPS, 200, 0, "GET", ops[n % 2], NULL, NULL);
	return sent < budget;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: bench_mixed --port P --route ENV/SVC/OP [--requests N]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char	*ak = getenv("BENCH_CONSUMER_KEY"), *bk = getenv("BENCH_BACKEND_KEY");
	double		 t0, secs;
	long		 n = 0;
	int		 i, port = 0;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0)
			port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--route") == 0)
			route = argv[i + 1];
		else if (strcmp(argv[i], "--requests") == 0)
			budget = atol(argv[i + 1]);
		else
			usage();
	}
	if (i != argc || port <= 0 || port > 65535 || route == NULL || budget < 1 ||
	    strspn(route, "abcdefghijklmnopqrstuvwxyz0123456789._-/") != strlen(route) ||
	    strlen(route) > 200)
		usage();
	if (ak == NULL || bk == NULL || strlen(ak) > 200 || strlen(bk) > 200 ||
	    strpbrk(ak, "\r\n") != NULL || strpbrk(bk, "\r\n") != NULL) {
		fprintf(stderr, "bench_mixed: BENCH_CONSUMER_KEY and BENCH_BACKEND_KEY "
		    "must be set\n");
		return 2;
	}
	snprintf(ak_hdr, sizeof ak_hdr, "Authorization: Bearer %s\r\n", ak);
	snprintf(bk_hdr, sizeof bk_hdr, "Authorization: Bearer %s\r\n", bk);
	hc_init(&conn, port);
	t0 = ut_now_s();
	while (round_run(n))
		n++;
	secs = ut_now_s() - t0;
	hc_close(&conn);
	printf("requests=%ld rounds=%ld seconds=%.3f req_per_s=%.1f unexpected=%ld", sent,
	    n + 1, secs, secs > 0 ? (double)sent / secs : 0.0, unexpected);
	for (i = 0; i < K__MAX; i++)
		printf(" %s=%ld", kind_name[i], count[i]);
	printf("\n");
	return unexpected ? 1 : 0;
}
