/*
 * test_http_list.c - GET /v1/executions/{env}/{svc}/{op} (list) through nginx.
 *
 * Paging over several pages while submits run concurrently (no duplicates, no gaps, the
 * newest first, nothing submitted after the first page in later pages), the status
 * filter, other keys and tenants, forged and foreign page tokens, bad parameters, unknown
 * and disabled routes, and that items carry nothing but the six members. Page tokens are
 * encrypted (issue 16): neighbouring positions show no neighbouring numbers, the same
 * position twice gives two tokens, every changed character and a token of another status
 * filter are refused.
 */
#include "check.h"
#include "fixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRE	45	/* executions submitted before the listing */
#define MAXSEEN	400

static struct fx F;

/* GET the list of F's route (or PATH when not NULL) with KEY and QUERY (may be ""). */
static int
list(const struct fx *f, const char *key, const char *query, struct http_resp *r)
{
	char path[512];

	snprintf(path, sizeof path, "/v1/executions/%s%s%s", f->route,
	    query[0] != '\0' ? "?" : "", query);
	return api("GET", path, key, NULL, r, (const char *)NULL);
}

/* Number of items of a 200 list body with KEY and QUERY; -1 when not a 200. */
static long
count(const struct fx *f, const char *key, const char *query)
{
	struct http_resp r;
	struct json_object *o;
	long n = -1;

	if (list(f, key, query, &r) == 200 && (o = json_body(&r)) != NULL) {
		n = jlen(o, "executions");
		json_object_put(o);
	}
	http_resp_free(&r);
	return n;
}

/* ---- concurrent submits ---------------------------------------------------------------- */

static atomic_int first_page_done, stop_submits, late_sent, late_failed;

/* Submits on F's route until told to stop: "during-N" before the first page was
 * answered, "after-N" from then on (those must never show up in a later page). */
static void *
submitter(void *arg)
{
	char cid[CID_MAX], tag[32];
	struct http_resp r;
	int i;

	(void)arg;
	for (i = 0; !atomic_load(&stop_submits) && i < 200; i++) {
		snprintf(tag, sizeof tag, "%s-%d", atomic_load(&first_page_done) ? "after" :
		    "during", i);
		fx_cid(cid, sizeof cid, tag);
		if (fx_submit(&F, F.ckey, cid, "{\"late\":true}", &r) != 202)
			atomic_fetch_add(&late_failed, 1);
		else
			atomic_fetch_add(&late_sent, 1);
		http_resp_free(&r);
	}
	return NULL;
}

/* ---- paging ---------------------------------------------------------------------------- */

struct seen {
	char cid[MAXSEEN][CID_MAX];
	int64_t created[MAXSEEN];
	int n, dups, pages, after_later, bad_items, unordered;
};

/* Whether item O has exactly the six members, of the right forms. */
static int
item_ok(struct json_object *o)
{
	static const char *const members[] = { "correlationId", "status", "createdAt",
	    "updatedAt", "expiresAt", "completedAt" };
	size_t i;

	if (json_object_object_length(o) != 6)
		return 0;
	for (i = 0; i < 6; i++)
		if (jget(o, members[i]) == NULL && !jnull(o, members[i]))
			return 0;
	return is_rfc3339_ms(jstr(o, "createdAt")) && is_rfc3339_ms(jstr(o, "updatedAt")) &&
	    is_rfc3339_ms(jstr(o, "expiresAt")) &&
	    (jnull(o, "completedAt") || is_rfc3339_ms(jstr(o, "completedAt")));
}

/* Adds the items of page body O to S; returns its nextPageToken (malloc'd) or NULL. */
static char *
take_page(struct json_object *o, struct seen *s)
{
	struct json_object *items = jget(o, "executions"), *it;
	const char *cid, *next;
	size_t i, n = items ? json_object_array_length(items) : 0;
	int j;

	for (i = 0; i < n; i++) {
		it = json_object_array_get_idx(items, i);
		cid = jstr(it, "correlationId");
		s->bad_items += !item_ok(it);
		for (j = 0; j < s->n; j++)
			if (strcmp(s->cid[j], cid) == 0)
				s->dups++;
		if (s->pages > 0 && strstr(cid, "after-") != NULL)
			s->after_later++;
		if (s->n > 0 && rfc3339_ms(jstr(it, "createdAt")) > s->created[s->n - 1])
			s->unordered++;
		if (s->n < MAXSEEN) {
			snprintf(s->cid[s->n], CID_MAX, "%s", cid);
			s->created[s->n] = rfc3339_ms(jstr(it, "createdAt"));
			s->n++;
		}
	}
	s->pages++;
	next = jnull(o, "nextPageToken") ? NULL : jstr(o, "nextPageToken");
	return next != NULL && next[0] != '\0' ? strdup(next) : NULL;
}

/* Whether S holds CID exactly once. */
static int
once(const struct seen *s, const char *cid)
{
	int j, k = 0;

	for (j = 0; j < s->n; j++)
		k += strcmp(s->cid[j], cid) == 0;
	return k == 1;
}

static void
test_paging(void)
{
	static struct seen s;
	char pre[PRE][CID_MAX], query[256], *tok = NULL;
	struct http_resp r;
	struct json_object *o;
	pthread_t th;
	int i, missing = 0, loops = 0;

	for (i = 0; i < PRE; i++) {
		fx_cid(pre[i], sizeof pre[i], "pre");
		CHECK(fx_submit_ok(&F, pre[i], "{\"n\":1}", &(struct sub){ 0 }));
	}
	CHECK(pthread_create(&th, NULL, submitter, NULL) == 0);
	do {
		snprintf(query, sizeof query, "limit=7%s%s", tok ? "&pageToken=" : "",
		    tok ? tok : "");
		free(tok);
		tok = NULL;
		o = list(&F, F.ckey, query, &r) == 200 ? json_body(&r) : NULL;
		CHECK(o != NULL);
		if (o == NULL) {
			fprintf(stderr, "  page %d: %d %.300s\n", s.pages, r.status,
			    r.body ? r.body : "");
			http_resp_free(&r);
			break;
		}
		CHECK(jlen(o, "executions") <= 7);
		tok = take_page(o, &s);
		if (tok != NULL)
			CHECK_EQ_INT(jlen(o, "executions"), 7);
		atomic_store(&first_page_done, 1);
		json_object_put(o);
		http_resp_free(&r);
	} while (tok != NULL && ++loops < 100);
	atomic_store(&stop_submits, 1);
	pthread_join(th, NULL);
	for (i = 0; i < PRE; i++)
		missing += !once(&s, pre[i]);
	CHECK_EQ_INT(missing, 0);		/* no gap, no duplicate of what was there */
	CHECK_EQ_INT(s.dups, 0);
	CHECK_EQ_INT(s.after_later, 0);
	CHECK_EQ_INT(s.bad_items, 0);
	CHECK_EQ_INT(s.unordered, 0);
	CHECK(s.pages >= PRE / 7);
	CHECK(atomic_load(&late_sent) > 0);	/* submits did run meanwhile */
	CHECK_EQ_INT(atomic_load(&late_failed), 0);
	/* newest first: the last one submitted before the listing precedes the first */
	for (i = 0; i < s.n && strcmp(s.cid[i], pre[PRE - 1]) != 0; i++)
		;
	CHECK(i < s.n && once(&s, pre[0]));
	for (; i < s.n && strcmp(s.cid[i], pre[0]) != 0; i++)
		;
	CHECK(i < s.n);
	/* the default limit is 20, the largest 100 */
	CHECK_EQ_INT(count(&F, F.ckey, ""), 20);
	CHECK(count(&F, F.ckey, "limit=100") > PRE);
}

/* ---- status filter --------------------------------------------------------------------- */

static void
test_status(void)
{
	struct fx g;
	struct sub s[6];
	struct claim c;
	struct http_resp r;
	char q[128];
	int i;

	fx_setup(&g, "liststatus");
	for (i = 0; i < 6; i++)
		CHECK(fx_submit_ok(&g, NULL, "{\"s\":1}", &s[i]));
	/* two completed, one cancelled, three waiting */
	for (i = 0; i < 2; i++) {
		CHECK(fx_claim_one(&g, &c));
		CHECK_EQ_INT(fx_complete(&g, &c, "{\"ok\":1}"), 200);
	}
	CHECK_EQ_INT(fx_cancel(&g, g.ckey, s[5].cid, s[5].token, &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(count(&g, g.ckey, "status=completed"), 2);
	CHECK_EQ_INT(count(&g, g.ckey, "status=cancelled"), 1);
	CHECK_EQ_INT(count(&g, g.ckey, "status=waiting_callback"), 3);
	CHECK_EQ_INT(count(&g, g.ckey, "status=failed"), 0);
	CHECK_EQ_INT(count(&g, g.ckey, "status=expired"), 0);
	CHECK_EQ_INT(count(&g, g.ckey, ""), 6);
	/* paging with a filter: 3 waiting over pages of 2 */
	CHECK(list(&g, g.ckey, "status=waiting_callback&limit=2", &r) == 200);
	{
		struct json_object *o = json_body(&r);
		const char *t = jstr(o, "nextPageToken");

		CHECK_EQ_INT(jlen(o, "executions"), 2);
		CHECK(t != NULL && t[0] != '\0');
		snprintf(q, sizeof q, "status=waiting_callback&limit=2&pageToken=%s", t ? t : "");
		json_object_put(o);
	}
	http_resp_free(&r);
	CHECK(list(&g, g.ckey, q, &r) == 200);
	{
		struct json_object *o = json_body(&r);

		CHECK_EQ_INT(jlen(o, "executions"), 1);
		CHECK(jnull(o, "nextPageToken"));
		CHECK_EQ_STR(jstr(json_object_array_get_idx(jget(o, "executions"), 0),
		    "status"), "waiting_callback");
		json_object_put(o);
	}
	http_resp_free(&r);
	fx_free(&g);
}

/* ---- what a page token tells ------------------------------------------------------------ */

/* Decodes unpadded base64url IN into OUT; the byte count, or -1. */
static int
unb64(const char *in, unsigned char *out, size_t size)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned v = 0;
	int bits = 0, n = 0;
	const char *p;

	for (; *in != '\0'; in++) {
		if ((p = strchr(a, *in)) == NULL)
			return -1;
		v = (v << 6 | (unsigned)(p - a)) & 0xffffff;
		if ((bits += 6) >= 8) {
			if ((size_t)n == size)
				return -1;
			bits -= 8;
			out[n++] = (unsigned char)(v >> bits);
		}
	}
	return n;
}

/* The nextPageToken of G's listing with QUERY, malloc'd, or NULL. */
static char *
token_of(const struct fx *g, const char *query)
{
	struct http_resp r;
	struct json_object *o;
	char *t = NULL;

	if (list(g, g->ckey, query, &r) == 200 && (o = json_body(&r)) != NULL) {
		if (!jnull(o, "nextPageToken") && jstr(o, "nextPageToken") != NULL)
			t = strdup(jstr(o, "nextPageToken"));
		json_object_put(o);
	}
	http_resp_free(&r);
	return t;
}

/*
 * Whether tokens A and B (of two positions in one listing: A the later id) show two close
 * numbers: at some offset, 8 big-endian bytes of A exceed those of B by less than 2^20.
 * The ids are one sequence over all tenants, so a clear id would measure everyone's submits.
 */
static int
shows_ids(const char *a, const char *b)
{
	unsigned char x[128], y[128];
	uint64_t u, v;
	int nx = unb64(a + 1, x, sizeof x), ny = unb64(b + 1, y, sizeof y), o, i;

	for (o = 0; o + 8 <= nx && o + 8 <= ny; o++) {
		for (u = v = 0, i = 0; i < 8; i++) {
			u = u << 8 | x[o + i];
			v = v << 8 | y[o + i];
		}
		if (u > v && u - v < (1u << 20)) {
			fprintf(stderr, "  tokens %s and %s: bytes %d..%d are %llu and %llu\n",
			    a, b, o, o + 7, (unsigned long long)u, (unsigned long long)v);
			return 1;
		}
	}
	return 0;
}

/* The correlation id of the first item G's listing with QUERY returns (static), or "". */
static const char *
first_cid(const struct fx *g, const char *query)
{
	static char cid[CID_MAX];
	struct http_resp r;
	struct json_object *o;
	const char *c;

	cid[0] = '\0';
	if (list(g, g->ckey, query, &r) == 200 && (o = json_body(&r)) != NULL) {
		c = jlen(o, "executions") > 0 ? jstr(json_object_array_get_idx(jget(o,
		    "executions"), 0), "correlationId") : NULL;
		snprintf(cid, sizeof cid, "%s", c != NULL ? c : "");
		json_object_put(o);
	}
	http_resp_free(&r);
	return cid;
}

static void
bad(const struct fx *f, const char *key, const char *query);

static void
test_token_privacy(void)
{
	struct fx g;
	struct sub s[3];
	char *t1, *t1b, *t2, *tw, q[256], forged[128];
	size_t i, n;
	int refused = 0;

	fx_setup(&g, "listpriv");
	for (i = 0; i < 3; i++)
		CHECK(fx_submit_ok(&g, NULL, "{\"p\":1}", &s[i]));
	t1 = token_of(&g, "limit=1");		/* names the newest: s[2] */
	t1b = token_of(&g, "limit=1");		/* the same position again */
	t2 = token_of(&g, "limit=2");		/* names s[1], one id before */
	CHECK(t1 != NULL && t1b != NULL && t2 != NULL);
	if (t1 == NULL || t1b == NULL || t2 == NULL)
		goto out;
	CHECK(strlen(t1) == 49 && strlen(t2) == 49);
	CHECK(!shows_ids(t1, t2));
	CHECK(strcmp(t1, t1b) != 0);		/* a random nonce: never the same text */
	if (strcmp(t1, t1b) == 0)
		fprintf(stderr, "  the same position gave the same token twice: %s\n", t1);
	/* both tokens of the same position page on to the same item */
	snprintf(q, sizeof q, "limit=1&pageToken=%s", t1);
	CHECK_EQ_STR(first_cid(&g, q), s[1].cid);
	snprintf(q, sizeof q, "limit=1&pageToken=%s", t1b);
	CHECK_EQ_STR(first_cid(&g, q), s[1].cid);
	snprintf(q, sizeof q, "limit=1&pageToken=%s", t2);
	CHECK_EQ_STR(first_cid(&g, q), s[0].cid);
	/* every single changed character is refused (400), the version digit included */
	n = strlen(t1);
	for (i = 0; i < n && i < sizeof forged - 1; i++) {
		struct http_resp r;

		memcpy(forged, t1, n + 1);
		forged[i] = forged[i] == 'A' ? 'B' : 'A';
		snprintf(q, sizeof q, "limit=1&pageToken=%s", forged);
		list(&g, g.ckey, q, &r);
		refused += expect_problem(&r, 400, "invalid_request");
		http_resp_free(&r);
	}
	CHECK_EQ_INT(refused, (int)n);
	/* a token given out under one status filter is refused under another, or none */
	tw = token_of(&g, "status=waiting_callback&limit=1");
	CHECK(tw != NULL);
	snprintf(q, sizeof q, "status=waiting_callback&limit=1&pageToken=%s", tw ? tw : "");
	CHECK_EQ_STR(first_cid(&g, q), s[1].cid);
	snprintf(q, sizeof q, "limit=1&pageToken=%s", tw ? tw : "");
	bad(&g, g.ckey, q);
	snprintf(q, sizeof q, "status=completed&limit=1&pageToken=%s", tw ? tw : "");
	bad(&g, g.ckey, q);
	snprintf(q, sizeof q, "status=waiting_callback&limit=1&pageToken=%s", t1);
	bad(&g, g.ckey, q);
	free(tw);
out:
	free(t1);
	free(t1b);
	free(t2);
	fx_free(&g);
}

/* ---- who sees what --------------------------------------------------------------------- */

/* A nextPageToken of F's listing with limit=1, malloc'd. */
static char *
some_token(const struct fx *f)
{
	struct http_resp r;
	struct json_object *o;
	char *t = NULL;

	if (list(f, f->ckey, "limit=1", &r) == 200 && (o = json_body(&r)) != NULL) {
		if (!jnull(o, "nextPageToken") && jstr(o, "nextPageToken") != NULL)
			t = strdup(jstr(o, "nextPageToken"));
		json_object_put(o);
	}
	http_resp_free(&r);
	return t;
}

/* GET with QUERY expecting 400 invalid_request. */
static void
bad(const struct fx *f, const char *key, const char *query)
{
	struct http_resp r;
	int ok;

	list(f, key, query, &r);
	ok = expect_problem(&r, 400, "invalid_request");
	if (!ok)
		fprintf(stderr, "  query: %s -> %d\n", query, r.status);
	CHECK(ok);
	http_resp_free(&r);
}

static void
test_others(void)
{
	struct outsiders o;
	struct fx g;
	char *tok, q[256];

	fx_outsiders(&F, &o);
	CHECK_EQ_INT(count(&F, o.same_tenant_key, ""), 0);
	CHECK_EQ_INT(count(&F, o.other_tenant_key, ""), 0);
	CHECK_EQ_INT(count(&F, o.same_tenant_key, "status=waiting_callback"), 0);
	/* F's page token is no use to another key, nor on another route */
	tok = some_token(&F);
	CHECK(tok != NULL);
	snprintf(q, sizeof q, "pageToken=%s", tok ? tok : "");
	bad(&F, o.same_tenant_key, q);
	bad(&F, o.other_tenant_key, q);
	fx_setup(&g, "listother");
	CHECK(fx_submit_ok(&g, NULL, "{}", &(struct sub){ 0 }));
	bad(&g, g.ckey, q);
	/* a forged one: one character changed */
	if (tok != NULL) {
		tok[5] = tok[5] == 'A' ? 'B' : 'A';
		snprintf(q, sizeof q, "pageToken=%s", tok);
		bad(&F, F.ckey, q);
	}
	free(tok);
	fx_free(&g);
	fx_outsiders_free(&o);
}

static void
test_bad_params(void)
{
	static const char *const qs[] = { "limit=0", "limit=101", "limit=abc", "limit=01",
	    "limit=-1", "limit=", "limit", "limit=1&limit=2", "foo=1", "status=bogus",
	    "status=", "status=COMPLETED", "pageToken=", "pageToken=abc",
	    "pageToken=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "pageToken=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "limit=5&", "&", "limit=%35",
	    "limit=1000000000000", NULL };
	struct http_resp r;
	int i;

	for (i = 0; qs[i] != NULL; i++)
		bad(&F, F.ckey, qs[i]);
	CHECK_EQ_INT(count(&F, F.ckey, "limit=1"), 1);
	CHECK_EQ_INT(count(&F, F.ckey, "status=completed&limit=3"), 0);
	/* no key, a backend key: 401 */
	list(&F, NULL, "", &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
	list(&F, F.bkey, "", &r);
	CHECK(expect_unauthorized(&r));
	http_resp_free(&r);
}

static void
test_routes(void)
{
	struct fx g;
	struct http_resp r;
	char path[300];
	long ttl = config_long("cache_ttl_seconds", 5);
	time_t until;
	int i, st = 0;

	snprintf(path, sizeof path, "/v1/executions/no-such/route/%s", unique_suffix());
	api("GET", path, F.ckey, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "unknown_route"));
	http_resp_free(&r);
	api("GET", "/v1/executions/BAD!/x/y", F.ckey, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 404, "unknown_route"));
	http_resp_free(&r);
	/* a disabled route: 404 within the cache TTL, from every worker */
	fx_setup(&g, "listoff");
	CHECK_EQ_INT(count(&g, g.ckey, ""), 0);
	free(admin("route disable %s", g.route));
	until = time(NULL) + ttl + 3;
	do {
		int k, all = 1;

		for (k = 0; k < 8; k++) {
			list(&g, g.ckey, "", &r);
			all &= r.status == 404;
			http_resp_free(&r);
		}
		st = all ? 404 : 200;
		if (st != 404)
			nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	} while (st != 404 && time(NULL) < until);
	CHECK_EQ_INT(st, 404);
	/* past the documented bound (the TTL since the disable), every worker: 404 */
	while (time(NULL) < until - 1)		/* disable + TTL + 2 s */
		nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	for (i = 0; i < 12; i++) {
		list(&g, g.ckey, "", &r);
		CHECK(expect_problem(&r, 404, "unknown_route"));
		http_resp_free(&r);
	}
	/* other methods on the collection: 405 naming both */
	api("PUT", "/v1/executions/a/b/c", F.ckey, NULL, &r, (const char *)NULL);
	CHECK(expect_problem(&r, 405, "method_not_allowed"));
	CHECK_EQ_STR(http_header(&r, "allow"), "GET, HEAD, POST");
	http_resp_free(&r);
	fx_free(&g);
}

int
main(void)
{
	http_test_init();
	fx_setup(&F, "list");
	test_paging();
	test_status();
	test_others();
	test_token_privacy();
	test_bad_params();
	test_routes();
	fx_free(&F);
	return check_done("http_list");
}
