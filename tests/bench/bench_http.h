/*
 * bench_http.h - a small HTTP/1.1 keep-alive client for the benchmark tools
 * (bench_seed, bench_lifecycle). One connection per struct hconn, to 127.0.0.1 only;
 * it reconnects by itself when nginx closes an idle or exhausted keep-alive connection.
 */
#ifndef ASYNCEXEC_BENCH_HTTP_H
#define ASYNCEXEC_BENCH_HTTP_H

#include "util/clock.h"
#include <stddef.h>
#include <stdint.h>

struct hconn {
	int	 port;
	int	 fd;		/* -1 when not connected */
	char	*buf;		/* bytes received and not yet consumed */
	size_t	 len, cap;
	char	*body;		/* body of the last response (NUL-terminated) */
	size_t	 body_len, body_cap;
	int	 status;	/* status of the last response */
};

/* Prepares a connection to 127.0.0.1:port (connects lazily). */
void	hc_init(struct hconn *, int port);
void	hc_close(struct hconn *);

/*
 * Sends one request and reads its response. hdrs: further header lines, each ending in
 * "\r\n" (NULL for none). body may be NULL (no body; no Content-Type). Returns the status,
 * or -1 when the exchange failed (message on stderr). A request on a reused connection that
 * got no byte back is retried once on a fresh connection.
 */
int	hc_request(struct hconn *, const char *method, const char *path,
	    const char *hdrs, const char *body, size_t body_len);

#endif
