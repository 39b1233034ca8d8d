/*
 * test_log.c - the log line format: journald priority prefix, key=value fields, the
 * request context, and that nothing in a message can forge a line or a field.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static void
test_fields(void)
{
	char line[512], want[512];

	log_context(NULL, NULL);
	log_format_line(line, sizeof line, LOG_ERROR, 1, "db: connect failed");
	snprintf(want, sizeof want, "<3>level=error pid=%ld msg=\"db: connect failed\"",
	    (long)getpid());
	CHECK_EQ_STR(line, want);
	log_format_line(line, sizeof line, LOG_INFO, 0, "hello");
	snprintf(want, sizeof want, "level=info pid=%ld msg=\"hello\"", (long)getpid());
	CHECK_EQ_STR(line, want);
	log_format_line(line, sizeof line, LOG_WARN, 1, "w");
	CHECK(strncmp(line, "<4>level=warn ", 14) == 0);
	log_format_line(line, sizeof line, LOG_DEBUG, 1, "d");
	CHECK(strncmp(line, "<7>level=debug ", 15) == 0);
}

static void
test_context(void)
{
	char line[512], want[512];

	log_context("0123abcd", "submit");
	log_format_line(line, sizeof line, LOG_WARN, 0, "x");
	snprintf(want, sizeof want, "level=warn pid=%ld req=0123abcd endpoint=submit msg=\"x\"",
	    (long)getpid());
	CHECK_EQ_STR(line, want);
	/* a field value cannot carry a space or a control character into the line */
	log_context("a b\nc", NULL);
	log_format_line(line, sizeof line, LOG_WARN, 0, "x");
	CHECK(strstr(line, " req=a?b?c msg=") != NULL);
	log_context(NULL, NULL);
}

static void
test_forgery(void)
{
	char line[512];

	/* a newline cannot start a new line; a quote cannot end the msg field early */
	log_format_line(line, sizeof line, LOG_INFO, 1,
	    "evil\n<3>level=error msg=\"x\" \\ \x7f\x01");
	CHECK(strchr(line, '\n') == NULL);
	CHECK(strstr(line, "msg=\"evil?<3>level=error msg=\\\"x\\\" \\\\ ??\"") != NULL);
	/* a long message is cut, the line stays terminated */
	{
		char big[2000];

		memset(big, 'a', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		log_format_line(line, sizeof line, LOG_INFO, 1, big);
		CHECK(strlen(line) < sizeof line);
	}
}

int
main(void)
{
	test_fields();
	test_context();
	test_forgery();
	return check_done("unit_log");
}
