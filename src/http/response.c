/*
 * response.c - struct resp, problem+json rendering and FastCGI output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <fcgiapp.h>

#include "http.h"
#include "json.h"

struct herr_def {
	int		 status;
	const char	*code;
	const char	*detail;
};

static const struct herr_def herrs[HERR__MAX] = {
#define HERR_DEF(name, status, code, detail)	\
	[HERR_##name] = { status, code, detail },
	HERR_LIST(HERR_DEF)
#undef HERR_DEF
};

/* The reason phrase of an HTTP status. */
static const char *
reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 202: return "Accepted";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

int
herr_status(enum herr e)
{
	return e < HERR__MAX ? herrs[e].status : 500;
}

void
resp_init(struct resp *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->headers);
	buf_init(&r->body);
	r->status = 500;
}

void
resp_free(struct resp *r)
{
	buf_free(&r->headers);
	buf_free(&r->body);
}

/* Adds a header line; the value is formatted from fmt. */
void
resp_header(struct resp *r, const char *name, const char *fmt, ...)
{
	char	 v[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	buf_printf(&r->headers, "%s: %s\r\n", name, v);
}

/* Marks the (already written) body as JSON with this status. */
void
resp_json(struct resp *r, int status)
{
	r->status = status;
	r->content_type = "application/json";
}

/*
 * Replaces the body with the problem+json document for e, using
 * r->detail and r->current_status when set, and adds the headers the
 * error calls for (WWW-Authenticate, Allow). Retry-After on 503 and 429 is
 * added by the caller, who knows the configured value.
 */
void
resp_problem(struct resp *r, enum herr e)
{
	const struct herr_def *d = &herrs[e < HERR__MAX ? e : HERR_INTERNAL];

	buf_reset(&r->body);
	r->status = d->status;
	r->content_type = "application/problem+json";
	buf_printf(&r->body, "{\"type\":\"about:blank\",\"title\":\"%s\","
	    "\"status\":%d,\"detail\":", reason(d->status), d->status);
	json_put_string(&r->body, r->detail ? r->detail : d->detail);
	buf_printf(&r->body, ",\"code\":\"%s\"", d->code);
	if (r->current_status != NULL)
		buf_printf(&r->body, ",\"currentStatus\":\"%s\"",
		    r->current_status);
	buf_puts(&r->body, "}");
	if (d->status == 401)
		resp_header(r, "WWW-Authenticate", "Bearer");
	if (d->status == 405 && r->allow != NULL)
		resp_header(r, "Allow", "%s", r->allow);
}

/* Writes r to FastCGI request fr; 0 or -1 when the client went away. */
int
resp_write(struct resp *r, void *fr, int head_only)
{
	FCGX_Request	*q = fr;
	struct buf	 h;
	int		 rc = 0;

	if (buf_failed(&r->body) || buf_failed(&r->headers)) {
		buf_reset(&r->headers);
		r->detail = NULL;
		resp_problem(r, HERR_INTERNAL);
	}
	buf_init(&h);
	buf_printf(&h, "Status: %d %s\r\nCache-Control: no-store\r\n",
	    r->status, reason(r->status));
	if (r->status != 304)
		buf_printf(&h, "Content-Type: %s\r\nContent-Length: %zu\r\n",
		    r->content_type ? r->content_type : "application/json",
		    r->body.len);
	buf_append(&h, r->headers.data, r->headers.len);
	buf_puts(&h, "\r\n");
	if (FCGX_PutStr(h.data, (int)h.len, q->out) < 0)
		rc = -1;
	if (rc == 0 && !head_only && r->status != 304 && r->body.len > 0 &&
	    FCGX_PutStr(r->body.data, (int)r->body.len, q->out) < 0)
		rc = -1;
	buf_free(&h);
	return rc;
}
