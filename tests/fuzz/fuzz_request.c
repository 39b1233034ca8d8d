/*
 * fuzz_request.c - FastCGI params and body through request parsing,
 * routing, the handler and the response writer, as worker.c's serve()
 * does, with the repository replaced by fake_repo.c.
 *
 * The input is an HTTP-like text, so that seeds are readable:
 *
 *	METHOD SP URI LF		(no SP: the line is the method, no URI)
 *	Name: value LF			(a header; Content-Type and
 *	...				 Content-Length map to CONTENT_*, the
 *					 others to HTTP_NAME as nginx does)
 *	NAME=value LF			(a line without ':' is a raw param)
 *	X-Fuzz-Fail: N LF		(the N-th repository call fails)
 *	LF
 *	body
 *
 * CONTENT_LENGTH is the body's length unless a header gives one. The
 * body is read through a fake FCGX_Stream over exactly its bytes, the
 * response written into a fake one. Besides the sanitizers, the harness
 * aborts when a JSON response body is not valid JSON, when the status
 * is one the service never sends, or when the output does not begin
 * with a Status line, or when a fail callback that won stored an error
 * that is not {"message":"..."}. With FUZZ_REQUEST_VERBOSE set in the environment
 * it prints each request's method, path and status (for checking seeds).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "clock.h"
#include "config.h"
#include "fake_repo.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "lookup.h"
#include "metrics.h"
#include "router.h"

#define MAXPARAMS	40
#define OUTSZ		65536

static struct config	 cfg;
static unsigned char	 outbuf[OUTSZ];	/* the response's first bytes */
static unsigned char	 sink[512];	/* the rest, overwritten */
static size_t		 outlen;	/* bytes kept in outbuf */
static int		 verbose;	/* FUZZ_REQUEST_VERBOSE: print statuses */

struct input {
	char		*params[MAXPARAMS + 1];
	size_t		 nparams;
	int		 has_length;
	unsigned	 fail_at;
	const char	*body;
	size_t		 body_len;
};

/* Reader refill: there is no more body (libfcgi's end of stream). */
static void
fill_eof(FCGX_Stream *s)
{
	s->isClosed = 1;
}

/* Writer flush: keeps outbuf as filled, sends later bytes to sink. */
static void
empty_out(FCGX_Stream *s, int doclose)
{
	(void)doclose;
	if (s->stop == outbuf + OUTSZ)
		outlen = (size_t)(s->wrNext - outbuf);
	s->wrNext = sink;
	s->stop = sink + sizeof(sink);
}

/* Adds "NAME=value" (n bytes of value) to in; 0 or -1 (full). */
static int
add_param(struct input *in, const char *name, size_t nn, const char *v,
    size_t vn)
{
	char	*p;

	if (in->nparams >= MAXPARAMS || (p = malloc(nn + vn + 2)) == NULL)
		return -1;
	memcpy(p, name, nn);
	p[nn] = '=';
	memcpy(p + nn + 1, v, vn);
	p[nn + 1 + vn] = '\0';
	in->params[in->nparams++] = p;
	return 0;
}

/* Adds header line "Name: value" (n bytes) as its FastCGI param. */
static void
add_header(struct input *in, const char *l, size_t n)
{
	char		 name[128];
	const char	*colon = memchr(l, ':', n), *v;
	size_t		 nn, i, vn;

	if (colon == NULL) {		/* a raw NAME=value param */
		if (in->nparams < MAXPARAMS &&
		    (in->params[in->nparams] = strndup(l, n)) != NULL)
			in->nparams++;
		return;
	}
	nn = (size_t)(colon - l);
	v = colon + 1;
	vn = n - nn - 1;
	if (vn > 0 && *v == ' ') {
		v++;
		vn--;
	}
	if (nn == 11 && strncasecmp(l, "X-Fuzz-Fail", nn) == 0) {
		for (i = 0; i < vn && i < 4 && v[i] >= '0' && v[i] <= '9'; i++)
			in->fail_at = in->fail_at * 10 + (unsigned)(v[i] - '0');
		return;
	}
	if (nn + 6 > sizeof(name))
		return;
	if ((nn == 12 && strncasecmp(l, "Content-Type", nn) == 0) ||
	    (nn == 14 && strncasecmp(l, "Content-Length", nn) == 0)) {
		in->has_length |= nn == 14;
		i = 0;
	} else {
		memcpy(name, "HTTP_", 5);
		i = 5;
	}
	for (; nn > 0; nn--, l++)
		name[i++] = *l == '-' ? '_' : (char)(*l >= 'a' && *l <= 'z' ?
		    *l - 'a' + 'A' : *l);
	add_param(in, name, i, v, vn);
}

/* Splits data into in (see the file comment); in->params owns copies. */
static void
decode(struct input *in, const char *d, size_t n)
{
	const char	*end = d + n, *nl, *sp;
	size_t		 ln;
	char		 len[24];

	memset(in, 0, sizeof(*in));
	nl = memchr(d, '\n', n);
	ln = nl ? (size_t)(nl - d) : n;
	if ((sp = memchr(d, ' ', ln)) != NULL) {
		add_param(in, "REQUEST_METHOD", 14, d, (size_t)(sp - d));
		add_param(in, "REQUEST_URI", 11, sp + 1, ln - (size_t)(sp - d) - 1);
	} else
		add_param(in, "REQUEST_METHOD", 14, d, ln);
	d = nl ? nl + 1 : end;
	while (d < end && *d != '\n') {
		nl = memchr(d, '\n', (size_t)(end - d));
		ln = nl ? (size_t)(nl - d) : (size_t)(end - d);
		add_header(in, d, ln > 0 && d[ln - 1] == '\r' ? ln - 1 : ln);
		d = nl ? nl + 1 : end;
	}
	if (d < end)
		d++;			/* the blank line */
	in->body = d;
	in->body_len = (size_t)(end - d);
	if (!in->has_length && in->body_len > 0) {
		snprintf(len, sizeof(len), "%zu", in->body_len);
		add_param(in, "CONTENT_LENGTH", 14, len, strlen(len));
	}
}

static void
input_free(struct input *in)
{
	size_t	 i;

	for (i = 0; i < in->nparams; i++)
		free(in->params[i]);
}

/* Aborts unless the response the handler made is one the API allows. */
static void
check(const struct resp *resp)
{
	static const int ok[] = { 200, 202, 304, 400, 401, 404, 405, 409, 413,
	    415, 503 };
	size_t	 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (resp->status == ok[i])
			break;
	if (i == sizeof(ok) / sizeof(ok[0])) {
		fprintf(stderr, "fuzz_request: status %d\n", resp->status);
		abort();
	}
	if (resp->status != 304 && resp->content_type != NULL &&
	    strstr(resp->content_type, "json") != NULL &&
	    json_validate(resp->body.data, resp->body.len, 1000, NULL) == -1) {
		fprintf(stderr, "fuzz_request: invalid JSON body: %.*s\n",
		    (int)resp->body.len, resp->body.data ? resp->body.data : "");
		abort();
	}
	if (outlen < 8 || memcmp(outbuf, "Status: ", 8) != 0) {
		fprintf(stderr, "fuzz_request: no Status line\n");
		abort();
	}
}

/*
 * Aborts when a won fail callback answers (and so stored) an error that
 * is not {"message":"..."}, as the handler checked it through json-c.
 */
static void
check_fail(enum route route, const struct resp *resp)
{
	struct json_object	*o, *e, *msg;
	int			 ok;

	if (route != ROUTE_FAIL || resp->status != 200)
		return;
	if (json_validate(resp->body.data, resp->body.len, 1000, &o) == -1)
		abort();
	ok = json_object_object_get_ex(o, "error", &e) &&
	    json_object_object_get_ex(e, "message", &msg) &&
	    json_object_is_type(msg, json_type_string);
	json_object_put(o);
	if (!ok) {
		fprintf(stderr, "fuzz_request: fail stored %.*s\n",
		    (int)resp->body.len, resp->body.data);
		abort();
	}
}

/* Serves fr through router_serve, as worker.c's serve() does, then checks the response. */
static void
serve(struct app *app, FCGX_Request *fr)
{
	struct req	 req;
	struct resp	 resp;
	enum route	 route;

	resp_init(&resp);
	route = router_serve(app, fr, &req, &resp);
	resp_write(&resp, fr, strcmp(req.method, "HEAD") == 0);
	empty_out(fr->out, 1);
	if (verbose)
		fprintf(stderr, "fuzz_request: %s %s -> %d %s\n", req.method,
		    req.path ? req.path : "(none)", resp.status,
		    resp.status >= 400 && resp.body.data ? resp.body.data : "");
	check(&resp);
	check_fail(route, &resp);
	log_context(NULL, NULL);
	req_free(&req);
	resp_free(&resp);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	 sealed[SEALED_B64_LEN + 1];
	const char *const *names;
	int	 nnames;

	(void)argc;
	(void)argv;
	config_defaults(&cfg);
	cfg.max_request_bytes = 1024;	/* reachable limits */
	cfg.max_result_bytes = 2048;
	cfg.max_json_depth = 16;
	verbose = getenv("FUZZ_REQUEST_VERBOSE") != NULL;
	names = router_names(&nnames);
	if (metrics_init(names, nnames) == -1 ||
	    crypto_id_seal((const unsigned char *)FAKE_IDKEY, 1, sealed) == -1 ||
	    strcmp(sealed, FAKE_SEALED_1) != 0) {
		fprintf(stderr, "fuzz_request: set-up failed (sealed %s)\n",
		    sealed);
		abort();
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input	 in;
	struct app	 app;
	FCGX_Stream	 is, os;
	FCGX_Request	 fr;
	unsigned char	*body;

	decode(&in, (const char *)data, size);
	/* the body in its own allocation: reads past it are caught */
	if ((body = malloc(in.body_len + 1)) == NULL) {
		input_free(&in);
		return 0;
	}
	memcpy(body, in.body, in.body_len);
	memset(&is, 0, sizeof(is));
	is.rdNext = is.stopUnget = body;
	is.stop = is.wrNext = body + in.body_len;
	is.isReader = 1;
	is.fillBuffProc = fill_eof;
	memset(&os, 0, sizeof(os));
	os.rdNext = os.wrNext = outbuf;
	os.stop = outbuf + OUTSZ;
	os.emptyBuffProc = empty_out;
	outlen = 0;
	memset(&fr, 0, sizeof(fr));
	fr.in = &is;
	fr.out = &os;
	fr.envp = in.params;
	fr.ipcFd = -1;
	memset(&app, 0, sizeof(app));
	app.cfg = &cfg;
	app.lookup = lookup_new(cfg.cache_ttl_seconds);
	fake_repo_reset(clock_now_ms());
	fake_repo_fail_at(in.fail_at);
	serve(&app, &fr);
	lookup_free(app.lookup);
	fake_repo_clear();
	free(body);
	input_free(&in);
	return 0;
}
