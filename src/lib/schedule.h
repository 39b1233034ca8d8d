/*
 * schedule.h - the scheduling headers of a submit (contract v3):
 * X-Not-Before (RFC 3339) or X-Delay-Seconds (0..DELAY_MAX_SECONDS),
 * X-Deadline (RFC 3339, in the future), X-Priority (0..PRIORITY_MAX).
 *
 * sched_parse checks their syntax and answers what they came to; a
 * header that is absent is NULL. sched_check judges the times against
 * the submit's time (a deadline in the future, a start before it): rules
 * for a new execution, not for a retry of one accepted before (submit.c).
 * The canonical text (sched_canon) is what an identical resubmit must
 * repeat: the headers' values as given (times in UTC ms), not the times
 * computed from them, so that a retried delayed submit is identical.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_SCHEDULE_H
#define ASYNCEXEC_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* X(rc, problem detail): what the headers came to */
#define SCHED_RESULTS(X) \
	X(SCHED_OK, NULL) \
	X(SCHED_BAD_NOT_BEFORE, "X-Not-Before must be an RFC 3339 date-time, " \
	    "such as 2026-12-01T08:00:00Z") \
	X(SCHED_BAD_DELAY, "X-Delay-Seconds must be a whole number from 0 to " \
	    API_STR(DELAY_MAX_SECONDS) " with no more digits than that") \
	X(SCHED_BOTH_START, "give X-Not-Before or X-Delay-Seconds, not both") \
	X(SCHED_BAD_DEADLINE, "X-Deadline must be an RFC 3339 date-time, " \
	    "such as 2026-12-01T08:00:00Z") \
	X(SCHED_DEADLINE_PAST, "X-Deadline must be in the future") \
	X(SCHED_START_AFTER_DEADLINE, "the start (X-Not-Before or " \
	    "X-Delay-Seconds) must come before X-Deadline") \
	X(SCHED_BAD_PRIORITY, "X-Priority must be one digit, 0 to " \
	    API_STR(PRIORITY_MAX))

enum sched_rc {
#define SCHED_ENUM(rc, detail) rc,
	SCHED_RESULTS(SCHED_ENUM)
#undef SCHED_ENUM
	SCHED__MAX
};

struct sched {
	int64_t		 not_before;	/* ms; 0: none (due when submitted) */
	int64_t		 deadline;	/* ms; 0: none, unless has_deadline */
	int		 has_deadline;	/* X-Deadline was given */
	unsigned	 priority;
	int		 given;		/* any of the headers was given */
	/* the headers as given, for sched_canon: -1 when absent */
	int64_t		 given_nb, given_dl;
	long		 given_delay, given_priority;
};

#define SCHED_CANON_MAX	96

enum sched_rc	 sched_parse(const char *not_before, const char *delay,
		    const char *deadline, const char *priority, int64_t now,
		    struct sched *);
enum sched_rc	 sched_check(const struct sched *, int64_t now);
const char	*sched_detail(enum sched_rc);
size_t		 sched_canon(const struct sched *, char out[SCHED_CANON_MAX]);

#endif
