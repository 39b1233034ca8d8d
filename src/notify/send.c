/*
 * send.c - webhook transfers on a libcurl multi handle (send.h).
 */
#include <sys/socket.h>

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "log.h"
#include "send.h"

struct xfer {
	struct xfer		*next, *prev;	/* the sender's running ones */
	CURL			*easy;
	struct curl_slist	*headers;
	struct sender		*owner;
	size_t			 slot;
	size_t			 got;		/* answer bytes read */
	int			 cut;		/* the answer passed the limit */
	int			 head_cut;	/* its headers did */
	enum addr_range		 refused;	/* AR_PUBLIC: none */
	char			 refused_addr[64];
	unsigned		 allowed;	/* addresses connected to */
};

/*
 * Fixed texts of the common transport failures. libcurl's error buffer
 * is never used: it names the host ("Could not resolve host: x", "Failed
 * to connect to x port 443"), and an attempt's error is logged.
 */
static const struct {
	CURLcode	 code;
	const char	*text;
} transport_errors[] = {
	{ CURLE_COULDNT_RESOLVE_HOST, "the host name did not resolve" },
	{ CURLE_COULDNT_CONNECT, "could not connect" },
	{ CURLE_OPERATION_TIMEDOUT, "timed out" },
	{ CURLE_SEND_ERROR, "the connection broke while sending" },
	{ CURLE_RECV_ERROR, "the connection broke while receiving" },
	{ CURLE_GOT_NOTHING, "the connection closed without an answer" },
};

struct sender {
	CURLM			*multi;
	struct send_opts	 opts;
	struct xfer		*running;
	size_t			 active;
};

/* Unlinks x from s's running list and frees it with its handle. */
static void
xfer_free(struct sender *s, struct xfer *x)
{
	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		s->running = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	curl_multi_remove_handle(s->multi, x->easy);
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x);
	s->active--;
}

struct sender *
sender_new(const struct send_opts *o)
{
	struct sender	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if ((s->multi = curl_multi_init()) == NULL) {
		free(s);
		return NULL;
	}
	s->opts = *o;
	return s;
}

/* Ends every transfer still running (its lease lapses) and frees s. */
void
sender_free(struct sender *s)
{
	if (s == NULL)
		return;
	while (s->running != NULL)
		xfer_free(s, s->running);
	curl_multi_cleanup(s->multi);
	free(s);
}

/* New options (a reload) for the transfers started from now on. */
void
sender_set_opts(struct sender *s, const struct send_opts *o)
{
	s->opts = *o;
}

size_t
sender_active(const struct sender *s)
{
	return s->active;
}

/*
 * Counts len more bytes of the answer (headers and body alike) toward
 * SEND_RESPONSE_MAX: len, or 0 (libcurl then stops the transfer, a
 * failure) with *cut set when they pass it.
 */
static size_t
counted(struct xfer *x, size_t len, int *cut)
{
	if (x->got + len > SEND_RESPONSE_MAX) {
		*cut = 1;
		return 0;
	}
	x->got += len;
	return len;
}

/* Reads at most SEND_RESPONSE_MAX bytes of the answer, then stops it. */
static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	struct xfer	*x = arg;

	(void)p;
	return counted(x, size * n, &x->cut);
}

/* Counts the answer's header lines toward the same limit (head_cut). */
static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer	*x = arg;

	(void)p;
	return counted(x, size * n, &x->head_cut);
}

/*
 * Opens the socket of a connection unless its address is in a refused
 * range (addr.h): libcurl then tries the name's next address, or fails
 * the transfer with CURLE_COULDNT_CONNECT. The socket, or
 * CURL_SOCKET_BAD.
 */
static curl_socket_t
on_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct xfer	*x = arg;
	enum addr_range	 r;

	(void)purpose;
	r = addr_classify(&a->addr, x->owner->opts.allow);
	if (addr_refused(r)) {
		x->refused = r;
		addr_text(&a->addr, x->refused_addr, sizeof(x->refused_addr));
		return CURL_SOCKET_BAD;
	}
	x->allowed++;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Whether url's scheme may be sent to; 0, or -1 with the reason in err. */
static int
scheme_ok(const struct sender *s, const char *url, char *err, size_t errsz)
{
	if (strncasecmp(url, "https://", 8) == 0)
		return 0;
	if (strncasecmp(url, "http://", 7) == 0) {
		if (s->opts.allow_http)
			return 0;
		snprintf(err, errsz, "plain http:// is refused (set "
		    "webhook_allow_http = 1 to allow it, or use https://)");
		return -1;
	}
	snprintf(err, errsz, "the URL is not https://");
	return -1;
}

/* Sets x's options for a POST of body to url within timeout_ms. 0 or -1. */
static int
xfer_setup(struct sender *s, struct xfer *x, const char *url,
    const char *body, size_t len, int64_t timeout_ms)
{
	CURL	*e = x->easy;
	int	 bad = 0;

	bad |= curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR,
	    s->opts.allow_http ? "http,https" : "https") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT,
	    (long)s->opts.connect_timeout) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)len) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, x) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HEADERDATA, x) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PRIVATE, x) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "asyncexec-notify/"
	    ASYNCEXEC_VERSION) != CURLE_OK;
	return bad ? -1 : 0;
}

/*
 * Starts a POST of body (len bytes, copied) to url with the given header
 * lines for the caller's slot, ended after timeout_ms (at most the
 * options' timeout). SEND_STARTED; SEND_REFUSED (the scheme, reason in
 * err); SEND_FAILED (logged).
 */
enum send_rc
sender_start(struct sender *s, const char *url, const char *const *headers,
    size_t nheaders, const char *body, size_t len, int64_t timeout_ms,
    size_t slot, char *err, size_t errsz)
{
	struct curl_slist	*l;
	struct xfer		*x;
	size_t			 i;

	if (scheme_ok(s, url, err, errsz) == -1)
		return SEND_REFUSED;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return SEND_FAILED;
	x->owner = s;
	x->slot = slot;
	x->refused = AR_PUBLIC;
	if (timeout_ms <= 0 || timeout_ms > (int64_t)s->opts.timeout * 1000)
		timeout_ms = (int64_t)s->opts.timeout * 1000;
	for (i = 0; i < nheaders; i++) {
		if ((l = curl_slist_append(x->headers, headers[i])) == NULL)
			goto fail;
		x->headers = l;
	}
	if ((l = curl_slist_append(x->headers, "Expect:")) == NULL)
		goto fail;
	x->headers = l;
	if ((x->easy = curl_easy_init()) == NULL ||
	    xfer_setup(s, x, url, body, len, timeout_ms) == -1 ||
	    curl_multi_add_handle(s->multi, x->easy) != CURLM_OK)
		goto fail;
	x->next = s->running;
	if (s->running != NULL)
		s->running->prev = x;
	s->running = x;
	s->active++;
	return SEND_STARTED;
fail:
	log_error("notify: could not start a transfer (libcurl)");
	if (x->easy != NULL)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x);
	return SEND_FAILED;
}

/*
 * Runs the transfers for up to timeout_ms, also waking when one of the
 * n extra fds (at most SEND_POLL_EXTRA_MAX) is ready for its events
 * (POLLIN, POLLOUT): its revents say which. 0 or -1 (logged).
 */
int
sender_poll(struct sender *s, struct pollfd *extra, size_t n,
    int timeout_ms)
{
	struct curl_waitfd	 w[SEND_POLL_EXTRA_MAX];
	size_t			 i;
	int			 running, k = 0;

	if (curl_multi_perform(s->multi, &running) != CURLM_OK)
		return -1;
	if (n > SEND_POLL_EXTRA_MAX)
		n = SEND_POLL_EXTRA_MAX;
	for (i = 0; i < n; i++) {
		w[i].fd = extra[i].fd;
		w[i].events = (extra[i].events & POLLIN ?
		    CURL_WAIT_POLLIN : 0) | (extra[i].events & POLLOUT ?
		    CURL_WAIT_POLLOUT : 0);
		w[i].revents = extra[i].revents = 0;
	}
	if (curl_multi_poll(s->multi, n > 0 ? w : NULL, (unsigned)n,
	    timeout_ms, &k) != CURLM_OK)
		return -1;
	for (i = 0; i < n; i++)
		extra[i].revents = (short)((w[i].revents & CURL_WAIT_POLLIN ?
		    POLLIN : 0) | (w[i].revents & CURL_WAIT_POLLOUT ?
		    POLLOUT : 0));
	if (curl_multi_perform(s->multi, &running) != CURLM_OK)
		return -1;
	return 0;
}

/*
 * The text of transport failure res into err: a fixed one, or libcurl's
 * description of the code (never its error buffer), with the code.
 */
static void
transport_error(CURLcode res, char *err, size_t errsz)
{
	const char	*t = curl_easy_strerror(res);
	size_t		 i;

	for (i = 0; i < sizeof(transport_errors) /
	    sizeof(transport_errors[0]); i++)
		if (transport_errors[i].code == res)
			t = transport_errors[i].text;
	snprintf(err, errsz, "%s (libcurl error %d)", t, (int)res);
}

/*
 * Fills a and err from finished transfer x whose result was res. Refused
 * (dead at once) only when every address tried was refused: when one
 * was allowed, its failure (a timeout, a refused or broken connection,
 * headers past SEND_RESPONSE_MAX) is a failure, retried.
 */
static void
judge(struct xfer *x, CURLcode res, struct attempt *a, char *err,
    size_t errsz)
{
	long		 code = 0;
	curl_off_t	 ra = -1;

	err[0] = '\0';
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	a->status = code > 0 && code < 1000 ? (unsigned)code : 0;
	a->retry_after = -1;
	if (curl_easy_getinfo(x->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
	    ra >= 0)
		a->retry_after = (long)(ra > 86400 * 7 ? 86400 * 7 : ra);
	if (x->refused != AR_PUBLIC && x->allowed == 0 && a->status == 0) {
		a->cls = AC_REFUSED;
		snprintf(err, errsz, "refused to connect to %s (%s; allow it "
		    "with webhook_allow_networks)", x->refused_addr,
		    addr_range_name(x->refused));
		return;
	}
	if (x->head_cut) {
		a->cls = AC_FAILED;
		snprintf(err, errsz, "the answer's headers passed %d bytes",
		    SEND_RESPONSE_MAX);
		return;
	}
	if (a->status != 0 && (res == CURLE_OK || x->cut)) {
		a->cls = policy_class(a->status);
		if (a->cls != AC_DELIVERED)
			snprintf(err, errsz, "HTTP %u", a->status);
		return;
	}
	a->cls = AC_FAILED;
	transport_error(res, err, errsz);
}

/*
 * Takes one finished transfer: its slot and what it came to. 1 when one
 * was taken, 0 when none has finished.
 */
int
sender_done(struct sender *s, size_t *slot, struct attempt *a, char *err,
    size_t errsz)
{
	struct xfer	*x;
	CURLMsg		*m;
	int		 left;

	while ((m = curl_multi_info_read(s->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		judge(x, m->data.result, a, err, errsz);
		*slot = x->slot;
		xfer_free(s, x);
		return 1;
	}
	return 0;
}
