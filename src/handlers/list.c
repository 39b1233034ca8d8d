/*
 * list.c - GET /v1/executions/{env}/{svc}/{op}
 *
 * The executions that the caller's key, or a key it was rotated from
 * (sql/007: one lineage; a lower key id), submitted on the route, newest
 * first (by id, descending), limit (1..100, default 20) at a time,
 * optionally of one status. Items carry no payload, progress or token. A
 * page after the first starts below the id that the page token names;
 * new submits never show up in later pages. A key with a later key in
 * its lineage (a rotation's old key, key_row.succeeded) never lists
 * what a later key submitted: its page reads at most LIST_SCAN_OF
 * entries per item and may end short, even empty, with a page token
 * (repo_exec_list's past) when that bound ended it.
 *
 * A page token is the digit of the poll-token key version, then the
 * base64url of the last id (8 bytes, big-endian) sealed with AES-256-GCM
 * (a random nonce, the tag: crypto_aead_seal) under the page-token key
 * of that version (HKDF of the poll-token key: crypto_subkey), with the
 * version, the lineage identity, the route and the status filter as
 * associated data. The token shows nothing of the id (ids are one
 * sequence over all tenants: two clear ids would measure everyone's
 * submits between two listings), the same position gives a new text
 * each time, and a token cannot be forged, nor moved to another key's
 * listing, another route or another status filter. A token whose key is
 * retired is refused; so is one of the format before 0.3.0 (33
 * characters: the id in clear and a MAC), like any token not ours.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "auth.h"
#include "json.h"
#include "lookup.h"
#include "handlers.h"

#define LIST_DEFAULT	20
#define PAGE_RAW_LEN	(AEAD_OVERHEAD + 8)		/* 36 bytes */
#define PAGE_AD_MAX	(1 + SHA256_LEN + 3 * (NAME_MAX_LEN + 1) + 1)
#define PAGE_TOKEN_LEN	(1 + PAGE_RAW_LEN / 3 * 4)	/* digit + 48 */

struct list_q {
	unsigned	 limit;
	enum exec_status status;	/* ST__MAX: any */
	uint64_t	 before;		/* UINT64_MAX: from the newest */
	const char	*token;		/* pageToken, NULL when absent */
	size_t		 token_len;
};

/*
 * The associated data of a page token of key version digit v, for
 * lineage, req's route and status filter st, into m; its length.
 */
static size_t
page_ad(char v, const unsigned char *lineage, const struct req *req,
    enum exec_status st, unsigned char m[PAGE_AD_MAX])
{
	const char	*part[3] = { req->env, req->svc, req->op };
	size_t		 n, l;
	int		 i;

	m[0] = (unsigned char)v;
	memcpy(m + 1, lineage, SHA256_LEN);
	n = 1 + SHA256_LEN;
	for (i = 0; i < 3; i++) {
		l = strlen(part[i]) + 1;	/* with its NUL: unambiguous */
		memcpy(m + n, part[i], l);
		n += l;
	}
	m[n++] = (unsigned char)st;
	return n;
}

/* Writes the page token naming id into tok; 0 or -1. */
static int
page_seal(struct app *app, const unsigned char *lineage,
    const struct req *req, const struct list_q *q, uint64_t id,
    char tok[PAGE_TOKEN_LEN + 1])
{
	unsigned char	 key[SUBKEY_LEN], ad[PAGE_AD_MAX], pt[8];
	unsigned char	 raw[PAGE_RAW_LEN];
	size_t		 adlen;
	int		 i, rc = -1;

	tok[0] = b64url_digit(app->idkey_version);
	adlen = page_ad(tok[0], lineage, req, q->status, ad);
	for (i = 0; i < 8; i++)
		pt[i] = (unsigned char)(id >> (56 - 8 * i));
	if (crypto_subkey(app->idkey, KP_PAGE_TOKEN, key) == 0 &&
	    crypto_aead_seal(key, ad, adlen, pt, sizeof(pt), raw) == AEAD_OK &&
	    b64url_encode(raw, sizeof(raw), tok + 1, PAGE_TOKEN_LEN) ==
	    PAGE_TOKEN_LEN - 1)
		rc = 0;
	explicit_bzero(key, sizeof(key));
	return rc;
}

/*
 * Opens page token q->token (sealed for lineage, req's route and
 * q->status) into q->before. 0, or -1: not one this listing gave out.
 */
static int
page_open(struct app *app, const unsigned char *lineage,
    const struct req *req, struct list_q *q)
{
	unsigned char	 key[SUBKEY_LEN], ad[PAGE_AD_MAX], pt[8];
	unsigned char	 raw[PAGE_RAW_LEN + 2];
	size_t		 len = 0, adlen;
	uint64_t	 id = 0;
	enum aead_rc	 rc = AEAD_FORGED;
	int		 v, i;

	if (q->token_len != PAGE_TOKEN_LEN ||
	    (v = b64url_value(q->token[0])) < 0 ||
	    !lookup_idkey_open(app, (unsigned)v) ||
	    b64url_decode(q->token + 1, PAGE_TOKEN_LEN - 1, raw, sizeof(raw),
	    &len) == -1 || len != PAGE_RAW_LEN)
		return -1;
	adlen = page_ad(q->token[0], lineage, req, q->status, ad);
	if (crypto_subkey(app->pkey[v].key, KP_PAGE_TOKEN, key) == 0)
		rc = crypto_aead_open(key, ad, adlen, raw, len, pt);
	explicit_bzero(key, sizeof(key));
	if (rc != AEAD_OK)
		return -1;
	for (i = 0; i < 8; i++)
		id = id << 8 | pt[i];
	if (id == 0)
		return -1;
	q->before = id;
	return 0;
}

/* Parses limit: [1-9][0-9]* within 1..LIST_MAX. 0, or -1. */
static int
parse_limit(const char *v, size_t n, unsigned *out)
{
	unsigned	 x = 0;
	size_t		 i;

	if (n == 0 || n > 3 || v[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (unsigned)(v[i] - '0');
	}
	if (x < 1 || x > LIST_MAX)
		return -1;
	*out = x;
	return 0;
}

/* Parses status: one of the status names. 0, or -1. */
static int
parse_status(const char *v, size_t n, enum exec_status *out)
{
	int	 i;

	for (i = 0; i < ST__MAX; i++)
		if (strlen(exec_status_name((enum exec_status)i)) == n &&
		    memcmp(exec_status_name((enum exec_status)i), v, n) == 0) {
			*out = (enum exec_status)i;
			return 0;
		}
	return -1;
}

/*
 * Parses one name=value pair of the query (not NUL-terminated, n
 * bytes) into q; seen has a bit per name already given. 0, or -1 with
 * resp->detail set.
 */
static int
parse_pair(const char *p, size_t n, struct list_q *q, unsigned *seen,
    struct resp *resp)
{
	static const char *const names[] = { "limit", "status", "pageToken" };
	const char	*eq = memchr(p, '=', n);
	size_t		 kl, vl;
	int		 i, rc = -1;

	kl = eq != NULL ? (size_t)(eq - p) : n;
	vl = eq != NULL ? n - kl - 1 : 0;
	for (i = 0; i < 3; i++)
		if (strlen(names[i]) == kl && memcmp(names[i], p, kl) == 0)
			break;
	if (i == 3 || eq == NULL || (*seen & (1u << i))) {
		resp->detail = i == 3 ? "unknown query parameter (limit, "
		    "status and pageToken are known)" :
		    "a query parameter without a value, or given twice";
		return -1;
	}
	*seen |= 1u << i;
	if (i == 0 && (rc = parse_limit(eq + 1, vl, &q->limit)) == -1)
		resp->detail = "limit must be an integer 1.."
		    API_STR(LIST_MAX);
	if (i == 1 && (rc = parse_status(eq + 1, vl, &q->status)) == -1)
		resp->detail = "status must be waiting_callback, completed, "
		    "failed, expired or cancelled";
	if (i == 2) {
		q->token = eq + 1;
		q->token_len = vl;
		rc = 0;
	}
	return rc;
}

/* Parses req's query strictly into q. HERR_OK or HERR_INVALID_REQUEST. */
static enum herr
parse_query(const struct req *req, struct list_q *q, struct resp *resp)
{
	const char	*p = req->query;
	unsigned	 seen = 0;
	size_t		 n;

	q->limit = LIST_DEFAULT;
	q->status = ST__MAX;
	q->before = UINT64_MAX;
	q->token = NULL;
	q->token_len = 0;
	while (p != NULL && *p != '\0') {
		n = strcspn(p, "&");
		if (parse_pair(p, n, q, &seen, resp) == -1)
			return HERR_INVALID_REQUEST;
		p += n;
		if (*p == '&' && *++p == '\0') {
			resp->detail = "a query that ends in '&'";
			return HERR_INVALID_REQUEST;
		}
	}
	return HERR_OK;
}

/* Appends ,"name":"time" (or null when ms is 0). */
static void
put_time(struct buf *b, const char *name, int64_t ms)
{
	char	 t[RFC3339_LEN + 1];

	if (ms == 0) {
		buf_printf(b, ",\"%s\":null", name);
		return;
	}
	json_time(ms, t);
	buf_printf(b, ",\"%s\":\"%s\"", name, t);
}

/* Writes the 200 body: n items (the first limit of them) and the token. */
static void
page_body(struct buf *b, const struct list_item *it, size_t n,
    const char *next)
{
	size_t	 i;

	buf_puts(b, "{\"executions\":[");
	for (i = 0; i < n; i++) {
		buf_puts(b, i > 0 ? ",{\"correlationId\":" :
		    "{\"correlationId\":");
		json_put_string(b, it[i].cid);
		buf_printf(b, ",\"status\":\"%s\"",
		    exec_status_name(it[i].status));
		put_time(b, "createdAt", it[i].created_at);
		put_time(b, "updatedAt", it[i].updated_at);
		put_time(b, "expiresAt", it[i].expires_at);
		put_time(b, "completedAt", it[i].completed_at);
		buf_puts(b, "}");
	}
	buf_puts(b, "],\"nextPageToken\":");
	if (next != NULL)
		buf_printf(b, "\"%s\"}", next);
	else
		buf_puts(b, "null}");
}

/* Checks the route: HERR_OK when it exists and is enabled. */
static enum herr
route_ok(struct app *app, const struct req *req)
{
	struct route_row rt;
	int		 rc;

	rc = lookup_route(app, req->env, req->svc, req->op, &rt);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	return rc == REPO_OK && rt.enabled ? HERR_OK : HERR_UNKNOWN_ROUTE;
}

enum herr
handle_list(struct app *app, struct req *req, struct resp *resp)
{
	unsigned char	 khash[SHA256_LEN], lineage[SHA256_LEN];
	char		 next[PAGE_TOKEN_LEN + 1];
	struct list_item *it = NULL;
	struct key_row	 key;
	struct list_q	 q;
	struct list_at	 at;
	enum herr	 e;
	size_t		 n = 0;
	uint64_t	 past = 0;
	int		 rc;

	if ((e = auth_key(app, req, KEY_CONSUMER, &key, khash)) != HERR_OK ||
	    (e = route_ok(app, req)) != HERR_OK ||
	    (e = parse_query(req, &q, resp)) != HERR_OK)
		return e;
	if (lookup_idkey(app) != REPO_OK)
		return HERR_UNAVAILABLE;
	auth_lineage(&key, lineage);
	if (q.token != NULL && page_open(app, lineage, req, &q) == -1) {
		resp->detail = "pageToken is not one this listing gave out";
		return HERR_INVALID_REQUEST;
	}
	if ((it = calloc(LIST_MAX + 1, sizeof(*it))) == NULL)
		return HERR_INTERNAL;
	at = (struct list_at){ req->env, req->svc, req->op, q.status,
	    q.before };
	rc = repo_exec_list(app->db, lineage, key.succeeded ? key.id : 0, &at,
	    q.limit + 1, it, &n, &past);
	e = rc == REPO_OK ? HERR_OK : HERR_UNAVAILABLE;
	if (n > q.limit)
		past = it[q.limit - 1].id;
	if (e == HERR_OK && past != 0 &&
	    page_seal(app, lineage, req, &q, past, next) == -1)
		e = HERR_INTERNAL;
	if (e == HERR_OK) {
		page_body(&resp->body, it, n > q.limit ? q.limit : n,
		    past != 0 ? next : NULL);
		resp_json(resp, 200);
	}
	free(it);
	return e;
}
