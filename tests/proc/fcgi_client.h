/*
 * fcgi_client.h - a tiny FastCGI client (responder role, request id 1;
 * one request per connection, or several with fcgi_begin_keep) for the
 * process-level tests. Every call is bounded by
 * a deadline; nothing blocks forever.
 */
#ifndef ASYNCEXEC_FCGI_CLIENT_H
#define ASYNCEXEC_FCGI_CLIENT_H

#include "util/clock.h"
#include <stddef.h>

/* What one request brought back. */
struct fcgi_resp {
	char	*out;		/* FCGI_STDOUT, NUL-terminated */
	size_t	 out_len;
	char	*err;		/* FCGI_STDERR, NUL-terminated */
	size_t	 err_len;
	int	 ended;		/* FCGI_END_REQUEST seen */
	unsigned app_status;	/* from FCGI_END_REQUEST */
	int	 proto_status;	/* from FCGI_END_REQUEST */
	int	 status;	/* the "Status: NNN" of the header block, else 0 */
	const char *body;	/* into out: after the blank line, or NULL */
	size_t	 body_len;
};

/* Connects to the unix socket path (or, not starting with '/', to IPv4
 * ADDRESS:PORT); the fd, or -1 (errno set). */
int		 fcgi_connect(const char *path);

/* One raw record of type (request id 1) with len <= 65535 content bytes. */
int		 fcgi_record(int fd, int type, const void *data, size_t len,
		    long long deadline_ms);

/* FCGI_BEGIN_REQUEST, role responder, keep_conn 0. 0 or -1. */
int		 fcgi_begin(int fd, long long deadline_ms);
/* The same with FCGI_KEEP_CONN: the application keeps the connection. */
int		 fcgi_begin_keep(int fd, long long deadline_ms);

/*
 * The name/value pairs kv[0], kv[1], ... (n names) as FCGI_PARAMS
 * records, then the empty FCGI_PARAMS that ends them. 0 or -1.
 */
int		 fcgi_params(int fd, const char *const *kv, size_t n,
		    long long deadline_ms);

/*
 * Fills kv (room for FCGI_BASE_PARAMS names) with the params of a
 * request for method and uri and, when content_type is not NULL, its
 * CONTENT_TYPE and CONTENT_LENGTH clen. Returns how many names.
 */
#define FCGI_BASE_PARAMS	6
size_t		 fcgi_base_params(const char **kv, const char *method,
		    const char *uri, const char *content_type,
		    const char *clen);

/*
 * The FastCGI parameter that nginx's loopback server sets (value "1",
 * nginx/asyncexec.conf) and without which the application answers its
 * operator pages (/readyz/detail, /dashboard/...) 404. A test client
 * that stands in for nginx sends it where the shipped site would:
 * fcgi_loopback_path(uri) says whether uri is one of those pages.
 */
#define FCGI_OPERATOR_PARAM	"ASYNCEXEC_OPERATOR_PAGES"
int		 fcgi_loopback_path(const char *uri);

/* One FCGI_STDIN record with len bytes (len 0: the end of the body). */
int		 fcgi_stdin(int fd, const void *data, size_t len,
		    long long deadline_ms);

/*
 * Reads records until FCGI_END_REQUEST (or EOF, error, deadline) and
 * fills r (free with fcgi_resp_free). 0 when FCGI_END_REQUEST arrived,
 * else -1 with whatever was collected in r.
 */
int		 fcgi_read(int fd, struct fcgi_resp *r, long long deadline_ms);

/*
 * A whole request on a new connection to path: the params for method,
 * uri and, when content_type is not NULL, CONTENT_TYPE and
 * CONTENT_LENGTH, then the body. 0 or -1 (as fcgi_read).
 */
int		 fcgi_request(const char *path, const char *method,
		    const char *uri, const char *content_type,
		    const char *body, size_t body_len, int timeout_ms,
		    struct fcgi_resp *r);

/* Value of header name in r's header block (static buffer), or NULL. */
const char	*fcgi_header(const struct fcgi_resp *r, const char *name);

void		 fcgi_resp_free(struct fcgi_resp *r);

#endif
