/*
 * policy.c - retry schedule, outcome decision and event body (policy.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "policy.h"

/*
 * Parses "5,30,120" (seconds, 1..SCHEDULE_DELAY_MAX each, at most
 * SCHEDULE_MAX; empty: no retry). SCHEDULE_OK, or SCHEDULE_BAD with the
 * reason in err.
 */
enum schedule_rc
schedule_parse(const char *text, struct schedule *s, char *err, size_t errsz)
{
	const char	*p = text;
	char		*end;
	unsigned long	 v;

	memset(s, 0, sizeof(*s));
	while (*p != '\0') {
		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno != 0 || v < 1 || v > SCHEDULE_DELAY_MAX ||
		    (*end != ',' && *end != '\0'))
			goto bad;
		if (s->n == SCHEDULE_MAX) {
			snprintf(err, errsz, "webhook_retry_schedule: at most %d "
			    "delays", SCHEDULE_MAX);
			return SCHEDULE_BAD;
		}
		s->delay[s->n++] = (unsigned)v;
		p = *end == ',' ? end + 1 : end;
		if (*end == ',' && *p == '\0')
			goto bad;
	}
	return SCHEDULE_OK;
bad:
	snprintf(err, errsz, "webhook_retry_schedule: expected seconds "
	    "separated by commas, each 1 to %d, such as 5,30,120",
	    SCHEDULE_DELAY_MAX);
	return SCHEDULE_BAD;
}

/*
 * The time limit of a transfer started at now under a lease that ends at
 * lease_until (both Unix ms): webhook_timeout (timeout_s) at most, and
 * over POLICY_RECORD_MS before the lease ends, so that no transfer
 * outlives its lease (another sender may then take the delivery).
 * Milliseconds, or 0 when less than POLICY_TRANSFER_MIN_MS is left (the
 * transfer is not to be started).
 */
int64_t
policy_transfer_ms(int64_t lease_until, int64_t now, unsigned timeout_s)
{
	int64_t	 left = lease_until - now - POLICY_RECORD_MS;
	int64_t	 max = (int64_t)timeout_s * 1000;

	if (left < POLICY_TRANSFER_MIN_MS)
		return 0;
	return left < max ? left : max;
}

/* The class of an HTTP status: 2xx delivered, 410 gone, else failed. */
enum attempt_class
policy_class(unsigned status)
{
	if (status >= 200 && status <= 299)
		return AC_DELIVERED;
	if (status == 410)
		return AC_GONE;
	return AC_FAILED;
}

/*
 * The state attempt a (the attempts-th of its delivery) leads to, and
 * for NST_RETRY when it is due in *due: the schedule's delay for that
 * retry scaled by 80..120 % (rnd picks where), or a 429's or 503's
 * Retry-After (capped at RETRY_AFTER_MAX) when it asks for longer.
 * Delivered: NST_DELIVERED; gone or refused: NST_DEAD; out of retries:
 * NST_DEAD.
 */
enum notify_state
policy_decide(const struct schedule *s, unsigned attempts,
    const struct attempt *a, uint32_t rnd, int64_t now, int64_t *due)
{
	int64_t		 ms, ra;
	unsigned	 pct;

	*due = 0;
	switch (a->cls) {
	case AC_DELIVERED:
		return NST_DELIVERED;
	case AC_GONE:
	case AC_REFUSED:
		return NST_DEAD;
	case AC_FAILED:
		break;
	}
	if (attempts == 0 || attempts > s->n)
		return NST_DEAD;
	pct = 100 - JITTER_PERCENT + rnd % (2 * JITTER_PERCENT + 1);
	ms = (int64_t)s->delay[attempts - 1] * 10 * pct;
	if ((a->status == 429 || a->status == 503) && a->retry_after >= 0) {
		ra = a->retry_after > RETRY_AFTER_MAX ? RETRY_AFTER_MAX :
		    a->retry_after;
		if (ra * 1000 > ms)
			ms = ra * 1000;
	}
	*due = now + ms;
	return NST_RETRY;
}

/*
 * The thin event body of x (../API: the result stays behind the poll
 * token) into out: {"type","timestamp","data":{...}}. 0, or -1 when it
 * does not fit outsz.
 */
int
event_body(const struct notify_exec *x, char *out, size_t outsz, size_t *len)
{
	struct buf	 b;
	char		 t[RFC3339_LEN + 1], url[512];
	const char	*ev = repo_notify_event_name(x->ev);
	int		 rc = -1;

	buf_init(&b);
	json_time(x->completed_at, t);
	snprintf(url, sizeof(url), "/v1/executions/%s/%s/%s/%s", x->env,
	    x->svc, x->op, x->cid);
	buf_printf(&b, "{\"type\":\"execution.%s\",\"timestamp\":\"%s\","
	    "\"data\":{\"environment\":", ev, t);
	json_put_string(&b, x->env);
	buf_puts(&b, ",\"service\":");
	json_put_string(&b, x->svc);
	buf_puts(&b, ",\"operation\":");
	json_put_string(&b, x->op);
	buf_puts(&b, ",\"correlationId\":");
	json_put_string(&b, x->cid);
	buf_printf(&b, ",\"status\":\"%s\",\"completedAt\":\"%s\","
	    "\"statusUrl\":", ev, t);
	json_put_string(&b, url);
	buf_puts(&b, "}}");
	if (!buf_failed(&b) && b.len < outsz) {
		memcpy(out, b.data, b.len);
		out[b.len] = '\0';
		*len = b.len;
		rc = 0;
	}
	buf_free(&b);
	return rc;
}
