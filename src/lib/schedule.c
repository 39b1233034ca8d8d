/*
 * schedule.c - the scheduling headers of a submit (schedule.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "schedule.h"

static const char *const details[SCHED__MAX] = {
#define SCHED_DETAIL(rc, detail) [rc] = detail,
	SCHED_RESULTS(SCHED_DETAIL)
#undef SCHED_DETAIL
};

const char *
sched_detail(enum sched_rc rc)
{
	return details[rc];
}

/*
 * A whole number of s in 0..max into *v (no sign, no blanks, no more
 * digits than max has: openapi.json's patterns); 0 or -1.
 */
static int
whole(const char *s, unsigned long max, unsigned long *v)
{
	unsigned long	 m;
	size_t		 i, digits = 1;

	for (m = max; m >= 10; m /= 10)
		digits++;
	if (s[0] == '\0' || strlen(s) > digits)
		return -1;
	*v = 0;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	return *v <= max ? 0 : -1;
}

/* The start: X-Not-Before or now + X-Delay-Seconds (0: none). */
static enum sched_rc
start(const char *nb, const char *delay, int64_t now, struct sched *s)
{
	unsigned long	 v;

	if (nb != NULL && delay != NULL)
		return SCHED_BOTH_START;
	if (nb != NULL) {
		if (clock_parse_rfc3339(nb, &s->not_before) == -1)
			return SCHED_BAD_NOT_BEFORE;
		s->given_nb = s->not_before;
	}
	if (delay != NULL) {
		if (whole(delay, DELAY_MAX_SECONDS, &v) == -1)
			return SCHED_BAD_DELAY;
		s->not_before = now + (int64_t)v * 1000;
		s->given_delay = (long)v;
	}
	return SCHED_OK;
}

/*
 * Parses the four headers (NULL: absent) into *s, a delay from time now.
 * SCHED_OK, or the first malformed one (sched_detail names the header).
 * The times are not judged here: sched_check.
 */
enum sched_rc
sched_parse(const char *nb, const char *delay, const char *deadline,
    const char *priority, int64_t now, struct sched *s)
{
	unsigned long	 v;
	enum sched_rc	 rc;

	memset(s, 0, sizeof(*s));
	s->given_nb = s->given_dl = -1;
	s->given_delay = s->given_priority = -1;
	s->given = nb != NULL || delay != NULL || deadline != NULL ||
	    priority != NULL;
	if ((rc = start(nb, delay, now, s)) != SCHED_OK)
		return rc;
	if (deadline != NULL) {
		if (clock_parse_rfc3339(deadline, &s->deadline) == -1)
			return SCHED_BAD_DEADLINE;
		s->given_dl = s->deadline;
		s->has_deadline = 1;
	}
	if (priority != NULL) {
		if (whole(priority, PRIORITY_MAX, &v) == -1)
			return SCHED_BAD_PRIORITY;
		s->priority = (unsigned)v;
		s->given_priority = (long)v;
	}
	return SCHED_OK;
}

/*
 * The time rules of the headers s was parsed from, at time now: SCHED_OK,
 * SCHED_DEADLINE_PAST or SCHED_START_AFTER_DEADLINE. A not-before in the
 * past is allowed (due at once).
 */
enum sched_rc
sched_check(const struct sched *s, int64_t now)
{
	if (!s->has_deadline)
		return SCHED_OK;
	if (s->deadline <= now)
		return SCHED_DEADLINE_PAST;
	if (s->not_before != 0 && s->not_before >= s->deadline)
		return SCHED_START_AFTER_DEADLINE;
	return SCHED_OK;
}

/*
 * The canonical text of the headers s was parsed from,
 * "nb=MS;delay=S;dl=MS;p=N" (-1 for an absent one); its length, 0 when
 * none was given (out is then empty).
 */
size_t
sched_canon(const struct sched *s, char out[SCHED_CANON_MAX])
{
	int	 n;

	out[0] = '\0';
	if (!s->given)
		return 0;
	n = snprintf(out, SCHED_CANON_MAX, "nb=%lld;delay=%ld;dl=%lld;p=%ld",
	    (long long)s->given_nb, s->given_delay, (long long)s->given_dl,
	    s->given_priority);
	return n > 0 && n < SCHED_CANON_MAX ? (size_t)n : 0;
}
