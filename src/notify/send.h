/*
 * send.h - the webhook transfers of one sender: a libcurl multi handle
 * running up to webhook_concurrency POSTs at once, so that a slow
 * receiver holds only its own slot.
 *
 * Every transfer: the scheme checked first (https://, or http:// when
 * webhook_allow_http = 1), no proxy, no redirect followed, connect and
 * total timeouts, at most SEND_RESPONSE_MAX bytes of the answer read,
 * and the address of every connection checked (addr.h) when the socket
 * is opened, so that what a name resolves to at that moment is what is
 * judged.
 *
 * notify layer: the notify folder only (the one that sees libcurl).
 */
#ifndef ASYNCEXEC_NOTIFY_SEND_H
#define ASYNCEXEC_NOTIFY_SEND_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "policy.h"

#define SEND_RESPONSE_MAX	65536	/* bytes of an answer read at most,
					 * its headers included */
#define SEND_ERROR_MAX		200	/* an attempt's error text */
#define SEND_HEADERS_MAX	8
#define SEND_POLL_EXTRA_MAX	40	/* fds sender_poll watches besides */

struct send_opts {
	int			 allow_http;
	const struct addr_allow	*allow;
	unsigned		 connect_timeout;	/* seconds */
	unsigned		 timeout;		/* seconds */
};

struct sender;

/* What sender_start did with a transfer. */
enum send_rc {
	SEND_STARTED,
	SEND_REFUSED,		/* not started: the reason is in err */
	SEND_FAILED		/* no memory, or libcurl failed (logged) */
};

struct sender	*sender_new(const struct send_opts *);
void		 sender_free(struct sender *);
void		 sender_set_opts(struct sender *, const struct send_opts *);
size_t		 sender_active(const struct sender *);
enum send_rc	 sender_start(struct sender *, const char *url,
		    const char *const *headers, size_t nheaders,
		    const char *body, size_t len, int64_t timeout_ms,
		    size_t slot, char *err, size_t errsz);
int		 sender_poll(struct sender *, struct pollfd *extra, size_t n,
		    int timeout_ms);
int		 sender_done(struct sender *, size_t *slot, struct attempt *,
		    char *err, size_t errsz);

#endif
