/*
 * fixture.h - provisioning and request shortcuts shared by the HTTP tests.
 *
 * fx_setup() registers a fresh route with a unique name, a consumer key for a fresh tenant
 * and a backend key serving that route, so each test owns its queue and can re-run against
 * the same database. Like httpc.h, nothing here touches check.h counters.
 */
#ifndef ASYNCEXEC_FIXTURE_H
#define ASYNCEXEC_FIXTURE_H

#include "httpc.h"

#define CID_MAX 129

struct fx {
	char env[65], svc[65], op[65];
	char route[200];        /* "env/svc/op" */
	char tenant[65];
	char *ckey;             /* consumer key of tenant */
	char *bkey;             /* backend key serving route */
};

/* What a 202 from submit handed out. */
struct sub {
	char cid[CID_MAX];
	char token[96];
	char created[40];
};

/* One claimed execution. */
#define CB_TOKEN_MAX 128	/* a callback token's characters at most */

struct claim {
	int64_t id;
	char cid[CID_MAX];
	char token[CB_TOKEN_MAX + 1];
};

/* Route, tenant and keys named after TAG ([a-z0-9-]) plus a unique suffix. */
void fx_setup(struct fx *f, const char *tag);
void fx_free(struct fx *f);
/* A new consumer key for TENANT / a new backend key serving ROUTE ("e/s/o"). */
char *fx_consumer_key(const char *tenant);
char *fx_backend_key(const char *route);
/* A client-chosen correlation id unique to this run: "<tag>-<suffix>". */
void fx_cid(char *buf, size_t len, const char *tag);

/* Paths. SUFFIX (may be NULL) is appended, e.g. "/cancel". */
void fx_exec_path(char *buf, size_t len, const struct fx *f, const char *cid,
    const char *suffix);
void fx_callback_path(char *buf, size_t len, int64_t id, const char *verb);

/* A body of exactly LEN bytes: HEAD, FILL repeated, TAIL (HEAD and TAIL "\"": the JSON
 * string "aaa...a" with FILL 'a'). The caller frees it; exits when LEN is too short for
 * HEAD and TAIL, or out of memory. */
char *fx_padded(size_t len, char fill, const char *head, const char *tail);

/* Raw submit with KEY; CID NULL means no X-Correlation-Id header. Returns status. */
int fx_submit(const struct fx *f, const char *key, const char *cid, const char *body,
    struct http_resp *out);
/* The same with EXTRA, one more header ("Name: value") or NULL. */
int fx_submit_hdr(const struct fx *f, const char *key, const char *cid, const char *body,
    const char *extra, struct http_resp *out);
/* Submit with f->ckey expecting 202; fills S. Returns 1 on success. */
int fx_submit_ok(const struct fx *f, const char *cid, const char *body, struct sub *s);
/* The same with EXTRA, one more header or NULL. */
int fx_submit_hdr_ok(const struct fx *f, const char *cid, const char *body, const char *extra,
    struct sub *s);
/* Poll / cancel with KEY and TOKEN (either may be NULL); EXTRA is one more header or NULL. */
int fx_poll(const struct fx *f, const char *key, const char *cid, const char *token,
    const char *extra, struct http_resp *out);
int fx_cancel(const struct fx *f, const char *key, const char *cid, const char *token,
    struct http_resp *out);
/* The body of a 200 poll of S with f->ckey (caller frees), or NULL (the status on
 * stderr). */
char *fx_poll_body(const struct fx *f, const struct sub *s);
/* Status member of a successful poll with f->ckey, or "" (static buffer). */
const char *fx_status(const struct fx *f, const struct sub *s);

/* Callers that are not the initiator of an execution (poll / cancel must say 404). */
struct outsiders {
	char *other_tenant_key;
	char *same_tenant_key;  /* another key of f's tenant */
	char unknown_cid[CID_MAX];
};

void fx_outsiders(const struct fx *f, struct outsiders *o);
void fx_outsiders_free(struct outsiders *o);
/* Case I (0, 1, ...) of addressing S as a non-initiator: the key, correlation id and poll
 * token to send, and a description. Returns 0 when I is past the last case. */
int fx_outsider_case(const struct fx *f, const struct outsiders *o, const struct sub *s,
    int i, const char **key, const char **cid, const char **token, const char **what);

/* The request fx_same_404 sends as each outsider: fx_poll (no extra header) or fx_cancel. */
enum fx_verb { FX_POLL, FX_CANCEL };
/* Submits BODY with f->ckey into S, then sends VERB as each fx_outsider_case of S: each
 * must get, byte for byte, the 404 not_found that a poll of an unknown correlation id
 * gets. Returns 1 when the submit succeeded and every answer was that 404 (each mismatch
 * on stderr). Checks nothing about S afterwards: the caller does (e.g. fx_status). */
int fx_same_404(const struct fx *f, enum fx_verb verb, const char *body, struct sub *s);

/* Raw claim on f's route with KEY and BODY. Returns status. */
int fx_claim(const struct fx *f, const char *key, const char *body, struct http_resp *out);
/* Claims exactly one execution with f->bkey; returns 1 when one came back. */
int fx_claim_one(const struct fx *f, struct claim *c);
/* Fills C from element I of a claim response; returns 1 when well-formed. */
int fx_claim_item(struct json_object *claim_body, size_t i, struct claim *c);

/* Submits BODY (server-generated id) and claims it with f->bkey; 1 when the claim
 * handed out exactly that execution (f's queue must hold no other unclaimed one). */
int fx_submit_claim(const struct fx *f, const char *body, struct sub *s, struct claim *c);

/* Raw callback with KEY and TOKEN (either may be NULL). Returns status. */
int fx_callback(const char *key, int64_t id, const char *verb, const char *token,
    const char *body, struct http_resp *out);
/* complete with {"result":RESULT} using f->bkey. Returns status. */
int fx_complete(const struct fx *f, const struct claim *c, const char *result);

#endif
