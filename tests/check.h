/*
 * check.h - the tests' tiny assertion kit.
 *
 * CHECK(cond) records a failure (file, line, expression) and goes on;
 * CHECK_EQ_INT / CHECK_EQ_STR print both sides. check_done() prints the
 * closing "N passed, N failed" line and returns the process exit code.
 */
#ifndef ASYNCEXEC_CHECK_H
#define ASYNCEXEC_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_pass_, check_fail_;

#define CHECK(c) do { \
	if (c) check_pass_++; \
	else { check_fail_++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); } \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ == b_) check_pass_++; \
	else { check_fail_++; \
		fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
		    __FILE__, __LINE__, #a, #b, a_, b_); } \
} while (0)

#define CHECK_EQ_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (a_ != NULL && b_ != NULL && strcmp(a_, b_) == 0) check_pass_++; \
	else { check_fail_++; \
		fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
		    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)", \
		    b_ ? b_ : "(null)"); } \
} while (0)

/* Prints the summary line; returns 0 when nothing failed, else 1. */
static inline int
check_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_pass_, check_fail_);
	return check_fail_ == 0 && check_pass_ > 0 ? 0 : 1;
}

#endif
