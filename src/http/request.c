/*
 * request.c - struct req from the FastCGI params and body.
 *
 * Every FCGX_GetParam value that is kept is copied: the params die at
 * the next accept. CONTENT_LENGTH is checked against the limit before a
 * single body byte is read.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

#include "http.h"
#include "log.h"

/* The params kept, in one table: name and where its copy goes. */
static char **
param_slot(struct req *req, const char *name, size_t n)
{
	static const struct {
		const char	*name;
		size_t		 off;
	} kept[] = {
		{ "HTTP_AUTHORIZATION", offsetof(struct req, authorization) },
		{ "HTTP_X_POLL_TOKEN", offsetof(struct req, poll_token) },
		{ "HTTP_X_CORRELATION_ID", offsetof(struct req, correlation_id) },
		{ "HTTP_X_CALLBACK_TOKEN", offsetof(struct req, callback_token) },
		{ "HTTP_IF_NONE_MATCH", offsetof(struct req, if_none_match) },
		{ "CONTENT_TYPE", offsetof(struct req, content_type) },
		{ "REQUEST_ID", offsetof(struct req, request_id) },
		{ "HTTP_X_NOT_BEFORE", offsetof(struct req, not_before) },
		{ "HTTP_X_DELAY_SECONDS", offsetof(struct req, delay_seconds) },
		{ "HTTP_X_DEADLINE", offsetof(struct req, deadline) },
		{ "HTTP_X_PRIORITY", offsetof(struct req, priority) },
	};
	size_t	 i;

	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strncmp(kept[i].name, name, n) == 0 &&
		    kept[i].name[n] == '\0')
			return (char **)(void *)((char *)req + kept[i].off);
	return NULL;
}

/*
 * Copies the kept headers of r into req in one pass over the params
 * (the first of a repeated name wins, as FCGX_GetParam's). 0, or -1 on
 * no memory.
 */
static int
params_copy(struct req *req, FCGX_Request *r)
{
	char		**e, **slot;
	const char	*eq;

	for (e = r->envp; e != NULL && *e != NULL; e++) {
		if ((eq = strchr(*e, '=')) == NULL ||
		    (slot = param_slot(req, *e, (size_t)(eq - *e))) == NULL ||
		    *slot != NULL)
			continue;
		if ((*slot = strdup(eq + 1)) == NULL)
			return -1;
	}
	return 0;
}

/* Whether s is a request id we echo and log: [A-Za-z0-9._-]{1,64}. */
static int
valid_request_id(const char *s)
{
	size_t	 n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-");

	return n > 0 && n <= 64 && s[n] == '\0';
}

/* Parses CONTENT_LENGTH: -1 absent, -2 malformed, else the length. */
static long long
content_length(FCGX_Request *r)
{
	const char	*v = FCGX_GetParam("CONTENT_LENGTH", r->envp);
	long long	 n = 0;

	if (v == NULL || *v == '\0')
		return -1;
	for (; *v != '\0'; v++) {
		if (*v < '0' || *v > '9' || n > (1LL << 50))
			return -2;
		n = n * 10 + (*v - '0');
	}
	return n;
}

/* Splits req->path into segments in req->segbuf; 0 or -1 (no memory). */
static int
split_path(struct req *req)
{
	char	*p, *s;

	req->nseg = 0;
	if ((req->segbuf = strdup(req->path)) == NULL)
		return -1;
	p = req->segbuf;
	if (*p == '/')
		p++;
	while (p != NULL && req->nseg < sizeof(req->seg) / sizeof(req->seg[0])) {
		s = strchr(p, '/');
		if (s != NULL)
			*s++ = '\0';
		req->seg[req->nseg++] = p;
		p = s;
	}
	if (p != NULL)		/* too many segments: never matches */
		req->nseg = 0;
	return 0;
}

/*
 * Fills req from FastCGI request fr. Returns 0, or -1 when out of
 * memory. A malformed Content-Length is left for the router as -2;
 * REQ_OPERATOR_PARAM is kept as a flag (no copy of its value).
 */
int
req_from_params(struct req *req, void *fr)
{
	FCGX_Request	*r = fr;
	const char	*m, *uri;
	size_t		 n;

	memset(req, 0, sizeof(*req));
	req->io = r;
	m = FCGX_GetParam("REQUEST_METHOD", r->envp);
	snprintf(req->method, sizeof(req->method), "%s", m ? m : "");
	uri = FCGX_GetParam("REQUEST_URI", r->envp);
	if (uri == NULL)
		uri = FCGX_GetParam("DOCUMENT_URI", r->envp);
	if (uri == NULL)
		uri = "/";
	n = strcspn(uri, "?");
	if ((req->path = strndup(uri, n)) == NULL || split_path(req) == -1 ||
	    params_copy(req, r) == -1)
		return -1;
	if (uri[n] == '?' && (req->query = strdup(uri + n + 1)) == NULL)
		return -1;
	if (req->request_id != NULL && !valid_request_id(req->request_id)) {
		free(req->request_id);		/* never echo or log junk */
		req->request_id = NULL;
	}
	req->content_length = content_length(r);
	m = FCGX_GetParam(REQ_OPERATOR_PARAM, r->envp);
	req->operator_pages = m != NULL && strcmp(m, "1") == 0;
	return 0;
}

void
req_free(struct req *req)
{
	free(req->path);
	free(req->query);
	free(req->segbuf);
	free(req->authorization);
	free(req->poll_token);
	free(req->correlation_id);
	free(req->callback_token);
	free(req->if_none_match);
	free(req->content_type);
	free(req->request_id);
	free(req->not_before);
	free(req->delay_seconds);
	free(req->deadline);
	free(req->priority);
	free(req->body);
	memset(req, 0, sizeof(*req));
}

/*
 * Reads the body (at most limit bytes) into req->body, NUL-terminated.
 * HERR_OK; HERR_PAYLOAD_TOO_LARGE before reading when Content-Length
 * exceeds limit; HERR_INVALID_REQUEST on a malformed length or a short
 * read; HERR_INTERNAL when out of memory.
 */
enum herr
req_body(struct req *req, size_t limit, struct resp *resp)
{
	FCGX_Request	*r = req->io;
	size_t		 want, got = 0;
	int		 n;

	if (req->body != NULL)
		return HERR_OK;
	if (req->content_length == -2) {
		resp->detail = "malformed Content-Length";
		return HERR_INVALID_REQUEST;
	}
	want = req->content_length < 0 ? 0 : (size_t)req->content_length;
	if ((unsigned long long)req->content_length > limit &&
	    req->content_length > 0) {
		resp->detail = "the request body is larger than allowed";
		return HERR_PAYLOAD_TOO_LARGE;
	}
	if ((req->body = malloc(want + 1)) == NULL)
		return HERR_INTERNAL;
	while (got < want && r != NULL) {
		n = FCGX_GetStr(req->body + got, (int)(want - got), r->in);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	req->body[got] = '\0';
	req->body_len = got;
	if (got < want) {
		resp->detail = "the request body is shorter than Content-Length";
		return HERR_INVALID_REQUEST;
	}
	return HERR_OK;
}
