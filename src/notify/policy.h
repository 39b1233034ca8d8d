/*
 * policy.h - what the webhook sender decides without the network or the
 * database: the retry schedule (webhook_retry_schedule), the state an
 * attempt's result leads to, and the event body of a terminal execution.
 *
 * notify layer: the notify folder, main_notify.c and the unit tests.
 */
#ifndef ASYNCEXEC_NOTIFY_POLICY_H
#define ASYNCEXEC_NOTIFY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "repo_notify.h"

#define SCHEDULE_MAX		32	/* retries a schedule may list */
#define SCHEDULE_DELAY_MAX	604800	/* one delay, seconds (7 days) */
#define RETRY_AFTER_MAX		86400	/* a Retry-After honoured, seconds */
#define JITTER_PERCENT		20	/* each delay drawn from 80..120 % */
#define POLICY_RECORD_MS	2000	/* a transfer ends this long before its
					 * lease: room to record its answer */
#define POLICY_TRANSFER_MIN_MS	1000	/* less left: not started */

struct schedule {
	unsigned	 n;
	unsigned	 delay[SCHEDULE_MAX];	/* seconds before retry i + 1 */
};

/* What one attempt came to, as the sender saw it. */
enum attempt_class {
	AC_DELIVERED,		/* a 2xx */
	AC_GONE,		/* 410: the endpoint is disabled */
	AC_FAILED,		/* another status, or no answer (transport) */
	AC_REFUSED		/* never sent: the URL or its address refused */
};

struct attempt {
	enum attempt_class cls;
	unsigned	 status;	/* HTTP status, 0: none */
	long		 retry_after;	/* seconds from a 429 or 503, -1: none */
};

/* What schedule_parse found. */
enum schedule_rc {
	SCHEDULE_OK,
	SCHEDULE_BAD		/* the reason is in err */
};

enum schedule_rc schedule_parse(const char *text, struct schedule *,
		    char *err, size_t errsz);
enum notify_state policy_decide(const struct schedule *, unsigned attempts,
		    const struct attempt *, uint32_t rnd, int64_t now,
		    int64_t *due);
enum attempt_class policy_class(unsigned status);
int64_t		 policy_transfer_ms(int64_t lease_until, int64_t now,
		    unsigned timeout_s);
int		 event_body(const struct notify_exec *, char *out, size_t outsz,
		    size_t *len);

#endif
