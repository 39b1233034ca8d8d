/*
 * clock.h - the tests' clock and pause (header only, as check.h: a test
 * program may be one file). ut_now_ms is monotonic, for deadlines and
 * durations; ut_wall_ms is the epoch, for comparing with the service's
 * timestamps.
 */
#ifndef ASYNCEXEC_TEST_CLOCK_H
#define ASYNCEXEC_TEST_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* The milliseconds of clock id (CLOCK_MONOTONIC, CLOCK_REALTIME). */
static inline int64_t
ut_clock_ms(clockid_t id)
{
	struct timespec	 ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic milliseconds. */
static inline int64_t
ut_now_ms(void)
{
	return ut_clock_ms(CLOCK_MONOTONIC);
}

/* Monotonic nanoseconds. */
static inline int64_t
ut_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Monotonic seconds. */
static inline double
ut_now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds since the epoch. */
static inline int64_t
ut_wall_ms(void)
{
	return ut_clock_ms(CLOCK_REALTIME);
}

/* Sleeps ms milliseconds, resumed across signals. */
static inline void
ut_pause_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

#endif
