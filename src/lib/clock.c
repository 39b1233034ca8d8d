/*
 * clock.c - wall and monotonic milliseconds, UTC civil fields (clock.h).
 */
#include <time.h>

#include "clock.h"

/* The current UTC time in milliseconds since the epoch. */
int64_t
clock_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds on the monotonic clock (an arbitrary origin). */
int64_t
clock_mono_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Days since 1970-01-01 of the civil date y-m-d (proleptic Gregorian),
 * and back: plain arithmetic, no time zone lock (gmtime_r and timegm
 * take one on every call).
 */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t		 era;
	unsigned	 yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void
civil_from_days(int64_t z, struct clock_civil *c)
{
	int64_t		 era;
	unsigned	 doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	c->day = doy - (153 * mp + 2) / 5 + 1;
	c->month = mp < 10 ? mp + 3 : mp - 9;
	c->year = (int)((int64_t)yoe + era * 400 + (c->month <= 2));
}

/* Splits UTC milliseconds since the epoch into civil fields. */
void
clock_civil(int64_t ms, struct clock_civil *c)
{
	int64_t		 days = ms / 86400000, rest = ms % 86400000;

	if (rest < 0) {
		rest += 86400000;
		days--;
	}
	civil_from_days(days, c);
	c->hour = (unsigned)(rest / 3600000);
	c->minute = (unsigned)(rest / 60000 % 60);
	c->second = (unsigned)(rest / 1000 % 60);
	c->millis = (unsigned)(rest % 1000);
}

/* UTC milliseconds since the epoch of civil fields c. */
int64_t
clock_civil_ms(const struct clock_civil *c)
{
	return ((days_from_civil(c->year, c->month, c->day) * 24 +
	    c->hour) * 60 + c->minute) * 60000 + (int64_t)c->second * 1000 +
	    c->millis;
}
