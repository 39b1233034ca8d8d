/*
 * clock.c - wall and monotonic milliseconds, UTC civil fields (clock.h).
 */
#include <string.h>
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

/* The digits of s[0..n) as a number, or -1. */
static long
digits(const char *s, int n)
{
	long	 v = 0;
	int	 i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* RFC 3339's date and time "YYYY-MM-DDTHH:MM:SS" at s into c; 0 or -1. */
static int
civil_arg(const char *s, struct clock_civil *c)
{
	long	 v[6];
	int	 i;

	if (strlen(s) < 19 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
		return -1;
	v[0] = digits(s, 4);
	for (i = 1; i < 6; i++)
		v[i] = digits(s + 2 + 3 * i, 2);
	for (i = 0; i < 6; i++)
		if (v[i] < 0)
			return -1;
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 ||
	    v[4] > 59 || v[5] > 60)
		return -1;
	*c = (struct clock_civil){ (int)v[0], (unsigned)v[1], (unsigned)v[2],
	    (unsigned)v[3], (unsigned)v[4], v[5] == 60 ? 59 : (unsigned)v[5],
	    0 };
	return 0;
}

/*
 * An RFC 3339 date-time (2026-12-01T08:00:00Z, a fraction and an offset
 * such as +02:00 allowed) as UTC milliseconds into *ms. 0 or -1.
 */
int
clock_parse_rfc3339(const char *s, int64_t *ms)
{
	struct clock_civil	 c, back;
	const char		*p = s + 19;
	long			 off = 0, scale = 100;

	if (civil_arg(s, &c) == -1)
		return -1;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			c.millis += (unsigned)((*p - '0') * scale);
	}
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && digits(p + 1, 2) >= 0 &&
	    digits(p + 1, 2) < 24 && p[3] == ':' && digits(p + 4, 2) >= 0 &&
	    digits(p + 4, 2) < 60) {
		off = (digits(p + 1, 2) * 60 + digits(p + 4, 2)) *
		    (*p == '-' ? -1 : 1);
		p += 6;
	} else
		return -1;
	clock_civil(clock_civil_ms(&c), &back);
	if (*p != '\0' || back.day != c.day || back.month != c.month)
		return -1;		/* 2026-02-30 */
	*ms = clock_civil_ms(&c) - (int64_t)off * 60000;
	return 0;
}

/* Sleeps ms milliseconds (the rest again after a signal). */
void
clock_sleep_ms(unsigned ms)
{
	struct timespec	 ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1)
		continue;
}
