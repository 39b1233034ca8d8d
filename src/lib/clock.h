/*
 * clock.h - the two clocks of the service and the civil calendar.
 *
 * clock_now_ms is wall time (UTC milliseconds since the epoch: what is
 * stored and rendered); clock_mono_ms is CLOCK_MONOTONIC milliseconds
 * (deadlines, backoffs, durations). The civil conversions are the
 * proleptic Gregorian calendar in UTC, without time zones or leap seconds.
 *
 * lib layer: no project dependency; anyone may include it.
 */
#ifndef ASYNCEXEC_CLOCK_H
#define ASYNCEXEC_CLOCK_H

#include <stdint.h>

struct clock_civil {
	int		 year;
	unsigned	 month, day, hour, minute, second, millis;
};

int64_t	clock_now_ms(void);
int64_t	clock_mono_ms(void);
void	clock_sleep_ms(unsigned ms);
void	clock_civil(int64_t ms, struct clock_civil *);
int64_t	clock_civil_ms(const struct clock_civil *);
int	clock_parse_rfc3339(const char *, int64_t *ms);

#endif
