/*
 * http.h - the request and response as handlers see them.
 *
 * Free of FastCGI: request.c fills struct req from the FastCGI params
 * (copying every value it keeps), handlers fill struct resp, and
 * response.c writes it out. Handlers return an enum herr; one table in
 * response.c maps each to its HTTP status, title and problem code.
 *
 * http layer: the handlers, serve and the fuzz harness include it; it
 * includes lib headers only.
 */
#ifndef ASYNCEXEC_HTTP_H
#define ASYNCEXEC_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct app;

enum herr {
	HERR_OK,			/* HERR_OK: response filled */
	HERR_UNAUTHORIZED,		/* HERR_UNAUTHORIZED */
	HERR_NOT_FOUND,			/* HERR_NOT_FOUND */
	HERR_UNKNOWN_ROUTE,		/* HERR_UNKNOWN_ROUTE */
	HERR_INVALID_REQUEST,		/* HERR_INVALID_REQUEST */
	HERR_INVALID_JSON,		/* HERR_INVALID_JSON */
	HERR_PAYLOAD_TOO_LARGE,		/* HERR_PAYLOAD_TOO_LARGE */
	HERR_UNSUPPORTED_MEDIA_TYPE,	/* HERR_UNSUPPORTED_MEDIA_TYPE */
	HERR_CORRELATION_CONFLICT,	/* HERR_CORRELATION_CONFLICT */
	HERR_CONFLICT,			/* HERR_CONFLICT */
	HERR_METHOD_NOT_ALLOWED,	/* HERR_METHOD_NOT_ALLOWED */
	HERR_QUOTA_EXCEEDED,		/* HERR_QUOTA_EXCEEDED */
	HERR_UNAVAILABLE,		/* HERR_UNAVAILABLE */
	HERR_INTERNAL,			/* HERR_INTERNAL */
	HERR__MAX
};

struct req {
	char		 method[16];
	char		*path;		/* REQUEST_URI without the query */
	char		*query;		/* what follows '?', NULL without one */
	char		*authorization;	/* header copies, NULL when absent */
	char		*poll_token;
	char		*correlation_id;
	char		*callback_token;
	char		*if_none_match;
	char		*content_type;
	char		*request_id;	/* nginx's $request_id, when valid */
	long long	 content_length;	/* -1 when absent */
	char		*seg[8];	/* path segments (into segbuf) */
	size_t		 nseg;
	char		*segbuf;
	const char	*env, *svc, *op, *cid;	/* route parameters */
	uint64_t	 exec_id;
	char		*body;		/* NUL-terminated, after req_body */
	size_t		 body_len;
	void		*io;		/* the FastCGI request */
};

struct resp {
	int		 status;
	struct buf	 headers;	/* "Name: value\r\n" lines */
	struct buf	 body;
	const char	*content_type;
	const char	*detail;	/* problem detail (static string) */
	const char	*current_status;	/* problem extension */
	const char	*allow;		/* Allow header for 405 */
};

typedef enum herr (*handler_fn)(struct app *, struct req *, struct resp *);

/* request.c */
int		 req_from_params(struct req *, void *fcgx_request);
void		 req_free(struct req *);
enum herr	 req_body(struct req *, size_t limit, struct resp *);

/* response.c */
void		 resp_init(struct resp *);
void		 resp_free(struct resp *);
void		 resp_header(struct resp *, const char *name, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
void		 resp_json(struct resp *, int status);
void		 resp_problem(struct resp *, enum herr);
int		 resp_write(struct resp *, void *fcgx_request, int head_only);
int		 herr_status(enum herr);

#endif
