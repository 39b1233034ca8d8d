/* Unit tests: the scheduling headers of a submit (lib/schedule.c). */
#include <string.h>

#include "api.h"
#include "check.h"
#include "schedule.h"

#define NOW	1764576000000LL		/* 2025-12-01T08:00:00Z */

/* sched_parse, then (headers that parse) sched_check, at NOW. */
static enum sched_rc
p(const char *nb, const char *d, const char *dl, const char *pr,
    struct sched *s)
{
	enum sched_rc	 rc;

	if ((rc = sched_parse(nb, d, dl, pr, NOW, s)) != SCHED_OK)
		return rc;
	return sched_check(s, NOW);
}

static void
starts(void)
{
	struct sched	 s;

	CHECK(p(NULL, NULL, NULL, NULL, &s) == SCHED_OK && !s.given &&
	    s.not_before == 0 && s.priority == 0);
	CHECK(p("2025-12-01T09:00:00Z", NULL, NULL, NULL, &s) == SCHED_OK);
	CHECK_EQ_INT(s.not_before, NOW + 3600000);
	CHECK(p("2025-12-01T10:00:00.250+01:00", NULL, NULL, NULL, &s) ==
	    SCHED_OK);
	CHECK_EQ_INT(s.not_before, NOW + 3600000 + 250);
	CHECK(p("2020-01-01T00:00:00Z", NULL, NULL, NULL, &s) == SCHED_OK);
	CHECK(p("2025-12-01 09:00:00", NULL, NULL, NULL, &s) ==
	    SCHED_BAD_NOT_BEFORE);
	CHECK(p("2025-02-30T09:00:00Z", NULL, NULL, NULL, &s) ==
	    SCHED_BAD_NOT_BEFORE);
	CHECK(p("", NULL, NULL, NULL, &s) == SCHED_BAD_NOT_BEFORE);
	CHECK(p(NULL, "0", NULL, NULL, &s) == SCHED_OK && s.not_before == NOW);
	CHECK(p(NULL, API_STR(DELAY_MAX_SECONDS), NULL, NULL, &s) == SCHED_OK);
	CHECK_EQ_INT(s.not_before, NOW + (int64_t)DELAY_MAX_SECONDS * 1000);
	CHECK(p(NULL, "2592001", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, "-1", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, "1.5", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, "", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, " 5", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, "99999999999", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p("2025-12-01T09:00:00Z", "5", NULL, NULL, &s) ==
	    SCHED_BOTH_START);
}

static void
deadlines_and_priorities(void)
{
	struct sched	 s;

	CHECK(p(NULL, NULL, "2025-12-01T08:00:01Z", NULL, &s) == SCHED_OK);
	CHECK_EQ_INT(s.deadline, NOW + 1000);
	CHECK(p(NULL, NULL, "2025-12-01T08:00:00Z", NULL, &s) ==
	    SCHED_DEADLINE_PAST);
	CHECK(p(NULL, NULL, "soon", NULL, &s) == SCHED_BAD_DEADLINE);
	CHECK(p(NULL, "10", "2025-12-01T08:00:10Z", NULL, &s) ==
	    SCHED_START_AFTER_DEADLINE);
	CHECK(p(NULL, "9", "2025-12-01T08:00:10Z", NULL, &s) == SCHED_OK);
	CHECK(p("2025-12-01T09:00:00Z", NULL, "2025-12-01T08:30:00Z", NULL,
	    &s) == SCHED_START_AFTER_DEADLINE);
	/* the times are sched_check's: the syntax alone is fine */
	CHECK(sched_parse(NULL, "10", "2025-12-01T08:00:10Z", NULL, NOW, &s) ==
	    SCHED_OK && s.has_deadline && s.deadline == NOW + 10000);
	CHECK(sched_check(&s, NOW) == SCHED_START_AFTER_DEADLINE);
	CHECK(sched_parse(NULL, "9", "2025-12-01T08:00:10Z", NULL, NOW, &s) ==
	    SCHED_OK && sched_check(&s, NOW) == SCHED_OK);
	CHECK(sched_check(&s, NOW + 9999) == SCHED_OK);
	CHECK(sched_check(&s, NOW + 10000) == SCHED_DEADLINE_PAST);
	CHECK(sched_parse(NULL, NULL, "1970-01-01T00:00:00Z", NULL, NOW, &s) ==
	    SCHED_OK && s.has_deadline);
	CHECK(sched_check(&s, NOW) == SCHED_DEADLINE_PAST);
	CHECK(sched_parse(NULL, NULL, NULL, NULL, NOW, &s) == SCHED_OK &&
	    !s.has_deadline && sched_check(&s, NOW) == SCHED_OK);
	/* a malformed header comes first, before any time rule */
	CHECK(p(NULL, NULL, "2025-12-01T08:00:00Z", "x", &s) ==
	    SCHED_BAD_PRIORITY);
	CHECK(p(NULL, NULL, NULL, "0", &s) == SCHED_OK && s.given);
	CHECK(p(NULL, NULL, NULL, "9", &s) == SCHED_OK && s.priority == 9);
	CHECK(p(NULL, NULL, NULL, "10", &s) == SCHED_BAD_PRIORITY);
	/* no more digits than the largest value has (openapi.json's patterns) */
	CHECK(p(NULL, NULL, NULL, "05", &s) == SCHED_BAD_PRIORITY);
	CHECK(p(NULL, "0000600", NULL, NULL, &s) == SCHED_OK &&
	    s.not_before == NOW + 600000);
	CHECK(p(NULL, "00000600", NULL, NULL, &s) == SCHED_BAD_DELAY);
	CHECK(p(NULL, NULL, NULL, "a", &s) == SCHED_BAD_PRIORITY);
	CHECK(p(NULL, NULL, NULL, "", &s) == SCHED_BAD_PRIORITY);
}

static void
details_and_canon(void)
{
	struct sched	 a, b;
	char		 x[SCHED_CANON_MAX], y[SCHED_CANON_MAX];
	int		 rc;

	CHECK(sched_detail(SCHED_OK) == NULL);
	for (rc = 1; rc < SCHED__MAX; rc++)
		CHECK(sched_detail((enum sched_rc)rc) != NULL &&
		    strstr(sched_detail((enum sched_rc)rc), "X-") != NULL);
	CHECK(strstr(sched_detail(SCHED_BAD_DELAY), "2592000") != NULL);
	CHECK(strstr(sched_detail(SCHED_BAD_PRIORITY), "9") != NULL);
	p(NULL, NULL, NULL, NULL, &a);
	CHECK(sched_canon(&a, x) == 0 && x[0] == '\0');
	/* a delay is canonical as given: the same seconds at another time */
	sched_parse(NULL, "60", NULL, "3", NOW, &a);
	sched_parse(NULL, "60", NULL, "3", NOW + 5000, &b);
	CHECK(sched_canon(&a, x) > 0 && sched_canon(&b, y) > 0 &&
	    strcmp(x, y) == 0);
	sched_parse(NULL, "61", NULL, "3", NOW, &b);
	sched_canon(&b, y);
	CHECK(strcmp(x, y) != 0);
	/* the same instant written two ways is the same */
	p("2025-12-01T09:00:00Z", NULL, NULL, NULL, &a);
	p("2025-12-01T10:00:00+01:00", NULL, NULL, NULL, &b);
	sched_canon(&a, x);
	sched_canon(&b, y);
	CHECK(strcmp(x, y) == 0);
	p(NULL, NULL, NULL, "0", &b);
	sched_canon(&b, y);
	CHECK(strcmp(x, y) != 0 && y[0] != '\0');
}

int
main(void)
{
	starts();
	deadlines_and_priorities();
	details_and_canon();
	return check_done("unit_schedule");
}
