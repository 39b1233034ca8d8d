/*
 * fixture.c - provisioning and request shortcuts shared by the HTTP tests.
 */
#include "fixture.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
must_line(char *line, const char *what)
{
	if (line == NULL || *line == '\0') {
		fprintf(stderr, "FATAL: admin printed no %s\n", what);
		exit(1);
	}
	return line;
}

char *
fx_consumer_key(const char *tenant)
{
	return must_line(admin("key create --tenant %s", tenant), "consumer key");
}

char *
fx_backend_key(const char *route)
{
	return must_line(admin("backend-key create --route %s", route), "backend key");
}

void
fx_setup(struct fx *f, const char *tag)
{
	const char *sfx = unique_suffix();

	memset(f, 0, sizeof *f);
	snprintf(f->env, sizeof f->env, "it");
	snprintf(f->svc, sizeof f->svc, "s%s", sfx);
	snprintf(f->op, sizeof f->op, "%s", tag);
	snprintf(f->route, sizeof f->route, "%s/%s/%s", f->env, f->svc, f->op);
	snprintf(f->tenant, sizeof f->tenant, "t-%s-%s", tag, sfx);
	free(admin("route add %s", f->route));
	f->ckey = fx_consumer_key(f->tenant);
	f->bkey = fx_backend_key(f->route);
}

void
fx_free(struct fx *f)
{
	free(f->ckey);
	free(f->bkey);
	f->ckey = f->bkey = NULL;
}

void
fx_cid(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "%s-%s", tag, unique_suffix());
}

void
fx_exec_path(char *buf, size_t len, const struct fx *f, const char *cid, const char *suffix)
{
	snprintf(buf, len, "/v1/executions/%s%s%s%s", f->route, cid ? "/" : "", cid ? cid : "",
	    suffix ? suffix : "");
}

void
fx_callback_path(char *buf, size_t len, int64_t id, const char *verb)
{
	snprintf(buf, len, "/v1/callbacks/%" PRId64 "/%s", id, verb);
}

static const char *
hdr(char *buf, size_t len, const char *name, const char *value)
{
	if (value == NULL)
		return "";
	snprintf(buf, len, "%s: %s", name, value);
	return buf;
}

/* HEAD, FILL repeated, TAIL: LEN bytes (caller frees). */
char *
fx_padded(size_t len, char fill, const char *head, const char *tail)
{
	size_t hl = strlen(head), tl = strlen(tail);
	char *s;

	if (len < hl + tl || (s = malloc(len + 1)) == NULL) {
		fprintf(stderr, "FATAL: fx_padded: no body of %zu bytes\n", len);
		exit(1);
	}
	memset(s, fill, len);
	memcpy(s, head, hl);
	memcpy(s + len - tl, tail, tl);
	s[len] = '\0';
	return s;
}

int
fx_submit(const struct fx *f, const char *key, const char *cid, const char *body,
    struct http_resp *out)
{
	return fx_submit_hdr(f, key, cid, body, NULL, out);
}

int
fx_submit_hdr(const struct fx *f, const char *key, const char *cid, const char *body,
    const char *extra, struct http_resp *out)
{
	char path[512], h[256];

	fx_exec_path(path, sizeof path, f, NULL, NULL);
	return api("POST", path, key, body, out, hdr(h, sizeof h, "X-Correlation-Id", cid),
	    extra ? extra : "", (const char *)NULL);
}

static void
copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

int
fx_submit_ok(const struct fx *f, const char *cid, const char *body, struct sub *s)
{
	return fx_submit_hdr_ok(f, cid, body, NULL, s);
}

int
fx_submit_hdr_ok(const struct fx *f, const char *cid, const char *body, const char *extra,
    struct sub *s)
{
	struct http_resp r;
	struct json_object *o = NULL;
	int ok;

	memset(s, 0, sizeof *s);
	ok = fx_submit_hdr(f, f->ckey, cid, body, extra, &r) == 202 &&
	    (o = json_body(&r)) != NULL;
	if (ok) {
		copy(s->cid, sizeof s->cid, jstr(o, "correlationId"));
		copy(s->token, sizeof s->token, jstr(o, "pollToken"));
		copy(s->created, sizeof s->created, jstr(o, "createdAt"));
		ok = s->cid[0] != '\0' && s->token[0] != '\0';
	}
	if (!ok)
		fprintf(stderr, "  submit failed: %d %.300s\n", r.status, r.body ? r.body : "");
	json_object_put(o);
	http_resp_free(&r);
	return ok;
}

int
fx_poll(const struct fx *f, const char *key, const char *cid, const char *token,
    const char *extra, struct http_resp *out)
{
	char path[512], h[256];

	fx_exec_path(path, sizeof path, f, cid, NULL);
	return api("GET", path, key, NULL, out, hdr(h, sizeof h, "X-Poll-Token", token),
	    extra ? extra : "", (const char *)NULL);
}

char *
fx_poll_body(const struct fx *f, const struct sub *s)
{
	struct http_resp r;
	char *b = NULL;

	if (fx_poll(f, f->ckey, s->cid, s->token, NULL, &r) == 200) {
		b = r.body;
		r.body = NULL;
	} else
		fprintf(stderr, "  poll: %d %.200s\n", r.status, r.body ? r.body : "");
	http_resp_free(&r);
	return b;
}

int
fx_cancel(const struct fx *f, const char *key, const char *cid, const char *token,
    struct http_resp *out)
{
	char path[512], h[256];

	fx_exec_path(path, sizeof path, f, cid, "/cancel");
	return api("POST", path, key, NULL, out, hdr(h, sizeof h, "X-Poll-Token", token),
	    (const char *)NULL);
}

const char *
fx_status(const struct fx *f, const struct sub *s)
{
	static char status[64];
	struct http_resp r;
	struct json_object *o = NULL;

	status[0] = '\0';
	if (fx_poll(f, f->ckey, s->cid, s->token, NULL, &r) == 200 && (o = json_body(&r)))
		copy(status, sizeof status, jstr(o, "status"));
	else
		fprintf(stderr, "  poll failed: %d %.300s\n", r.status, r.body ? r.body : "");
	json_object_put(o);
	http_resp_free(&r);
	return status;
}

void
fx_outsiders(const struct fx *f, struct outsiders *o)
{
	char tenant[128];

	snprintf(tenant, sizeof tenant, "%s-other", f->tenant);
	o->other_tenant_key = fx_consumer_key(tenant);
	o->same_tenant_key = fx_consumer_key(f->tenant);
	fx_cid(o->unknown_cid, sizeof o->unknown_cid, "never-submitted");
}

void
fx_outsiders_free(struct outsiders *o)
{
	free(o->other_tenant_key);
	free(o->same_tenant_key);
	o->other_tenant_key = o->same_tenant_key = NULL;
}

int
fx_outsider_case(const struct fx *f, const struct outsiders *o, const struct sub *s,
    int i, const char **key, const char **cid, const char **token, const char **what)
{
	static const char *wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	static char wrong_secret[128], forged_id[128];
	const struct {
		const char *key, *cid, *token, *what;
	} cases[] = {
		{ f->ckey, o->unknown_cid, s->token, "unknown correlation id" },
		{ f->ckey, s->cid, wrong, "wrong poll token" },
		{ f->ckey, s->cid, wrong_secret, "the sealed id with a wrong secret" },
		{ f->ckey, s->cid, forged_id, "the secret behind a forged sealed id" },
		{ f->ckey, s->cid, "short", "malformed poll token" },
		{ f->ckey, s->cid, NULL, "missing poll token" },
		{ o->other_tenant_key, s->cid, s->token, "other tenant's key" },
		{ o->same_tenant_key, s->cid, s->token, "other key of the same tenant" },
	};

	if (i < 0 || (size_t)i >= sizeof cases / sizeof *cases)
		return 0;
	/* poll token = sealed id (22 characters) + secret (43) */
	snprintf(wrong_secret, sizeof wrong_secret, "%.22s%s", s->token, wrong);
	snprintf(forged_id, sizeof forged_id, "%s", s->token);
	forged_id[5] = forged_id[5] == 'A' ? 'B' : 'A';
	*key = cases[i].key;
	*cid = cases[i].cid;
	*token = cases[i].token;
	*what = cases[i].what;
	return 1;
}

/*
 * Submits BODY into S and sends VERB as each outsider case of S: each must get, byte
 * for byte, what a poll of an unknown correlation id gets, a 404 not_found.
 * 1 when the submit succeeded and every answer was that 404, 0 otherwise (each
 * mismatch on stderr, naming its case).
 */
int
fx_same_404(const struct fx *f, enum fx_verb verb, const char *body, struct sub *s)
{
	const char *key, *cid, *token, *what;
	struct outsiders out;
	struct http_resp ref, r;
	int i, ok;

	fx_outsiders(f, &out);
	ok = fx_submit_ok(f, NULL, body, s);
	fx_poll(f, f->ckey, out.unknown_cid, s->token, NULL, &ref);
	if (!expect_problem(&ref, 404, "not_found"))
		ok = 0;
	for (i = 0; fx_outsider_case(f, &out, s, i, &key, &cid, &token, &what); i++) {
		if (verb == FX_CANCEL)
			fx_cancel(f, key, cid, token, &r);
		else
			fx_poll(f, key, cid, token, NULL, &r);
		if (!same_response(&ref, &r)) {
			fprintf(stderr, "  ... %s with %s\n",
			    verb == FX_CANCEL ? "cancel" : "poll", what);
			ok = 0;
		}
		http_resp_free(&r);
	}
	http_resp_free(&ref);
	fx_outsiders_free(&out);
	return ok;
}

int
fx_claim(const struct fx *f, const char *key, const char *body, struct http_resp *out)
{
	char path[512];

	snprintf(path, sizeof path, "/v1/backend/%s/claim", f->route);
	return api("POST", path, key, body, out, (const char *)NULL);
}

int
fx_claim_item(struct json_object *o, size_t i, struct claim *c)
{
	char p[64];

	memset(c, 0, sizeof *c);
	snprintf(p, sizeof p, "executions.%zu.id", i);
	if (!jint(o, p, &c->id))
		return 0;
	snprintf(p, sizeof p, "executions.%zu.correlationId", i);
	copy(c->cid, sizeof c->cid, jstr(o, p));
	snprintf(p, sizeof p, "executions.%zu.callbackToken", i);
	copy(c->token, sizeof c->token, jstr(o, p));
	return c->cid[0] != '\0' && c->token[0] != '\0';
}

int
fx_claim_one(const struct fx *f, struct claim *c)
{
	struct http_resp r;
	struct json_object *o = NULL;
	int ok;

	ok = fx_claim(f, f->bkey, "{\"max\":1}", &r) == 200 && (o = json_body(&r)) != NULL &&
	    jlen(o, "executions") == 1 && fx_claim_item(o, 0, c);
	if (!ok)
		fprintf(stderr, "  claim of one failed: %d %.300s\n", r.status,
		    r.body ? r.body : "");
	json_object_put(o);
	http_resp_free(&r);
	return ok;
}

int
fx_submit_claim(const struct fx *f, const char *body, struct sub *s, struct claim *c)
{
	if (!fx_submit_ok(f, NULL, body, s) || !fx_claim_one(f, c))
		return 0;
	if (strcmp(s->cid, c->cid) == 0)
		return 1;
	fprintf(stderr, "  claimed %s, expected %s\n", c->cid, s->cid);
	return 0;
}

int
fx_callback(const char *key, int64_t id, const char *verb, const char *token,
    const char *body, struct http_resp *out)
{
	char path[256], h[256];

	fx_callback_path(path, sizeof path, id, verb);
	return api("POST", path, key, body, out, hdr(h, sizeof h, "X-Callback-Token", token),
	    (const char *)NULL);
}

int
fx_complete(const struct fx *f, const struct claim *c, const char *result)
{
	struct http_resp r;
	size_t n = strlen(result) + 16;
	char *body = malloc(n);
	int st;

	if (body == NULL)
		exit(1);
	snprintf(body, n, "{\"result\":%s}", result);
	st = fx_callback(f->bkey, c->id, "complete", c->token, body, &r);
	if (st != 200)
		fprintf(stderr, "  complete: %d %.300s\n", st, r.body ? r.body : "");
	http_resp_free(&r);
	free(body);
	return st;
}
