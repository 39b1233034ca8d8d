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

/*
 * The errors a handler answers: X(name, HTTP status, problem code,
 * detail). One row each; the enum and response.c's table are made
 * from it.
 */
#define HERR_LIST(X)							\
	X(OK, 200, NULL, NULL)						\
	X(UNAUTHORIZED, 401, "unauthorized",				\
	    "a valid API key of the right kind is required")		\
	X(NOT_FOUND, 404, "not_found", "no such resource")		\
	X(UNKNOWN_ROUTE, 404, "unknown_route", "no such route")		\
	X(INVALID_REQUEST, 400, "invalid_request",			\
	    "the request is invalid")					\
	X(INVALID_JSON, 400, "invalid_json",				\
	    "the body is not a valid JSON value")			\
	X(PAYLOAD_TOO_LARGE, 413, "payload_too_large",			\
	    "the request body is larger than allowed")			\
	X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type",	\
	    "Content-Type must be application/json")			\
	X(CORRELATION_CONFLICT, 409, "correlation_id_conflict",		\
	    "the correlation id is already used for another request")	\
	X(CONFLICT, 409, "conflict",					\
	    "the execution is not in a state that allows this")	\
	X(METHOD_NOT_ALLOWED, 405, "method_not_allowed",		\
	    "the method is not allowed here")				\
	X(QUOTA_EXCEEDED, 429, "quota_exceeded",			\
	    "the tenant has as many open executions as its quota "	\
	    "allows; retry later")					\
	X(UNAVAILABLE, 503, "service_unavailable",			\
	    "the service is temporarily unavailable; retry later")	\
	X(INTERNAL, 500, "internal_error", "an internal error occurred")

enum herr {
#define HERR_ENUM(name, status, code, detail)	HERR_##name,
	HERR_LIST(HERR_ENUM)
#undef HERR_ENUM
	HERR__MAX
};

/*
 * The FastCGI parameter, set to "1" by the nginx site's loopback server
 * only, that lets a request reach the operator pages (router.h,
 * A_OPERATOR). Not a header: a client cannot send it (its headers
 * arrive as HTTP_*).
 */
#define REQ_OPERATOR_PARAM	"ASYNCEXEC_OPERATOR_PAGES"

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
	char		*not_before;	/* the scheduling headers (contract v3) */
	char		*delay_seconds;
	char		*deadline;
	char		*priority;
	long long	 content_length;	/* -1 when absent */
	int		 operator_pages;	/* REQ_OPERATOR_PARAM is "1" */
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
