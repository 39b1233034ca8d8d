/*
 * log.c - stderr logging with control characters stripped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static enum log_level level = LOG_INFO;

static const char *const level_names[LOG__MAX] = {
	"error",	/* LOG_ERROR */
	"warn",		/* LOG_WARN */
	"info",		/* LOG_INFO */
	"debug",	/* LOG_DEBUG */
};

void
log_set_level(enum log_level l)
{
	level = l;
}

/* Maps a level name to its enum; 0, or -1 when unknown. */
int
log_parse_level(const char *s, enum log_level *out)
{
	int	 i;

	for (i = 0; i < LOG__MAX; i++)
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

void
log_msg(enum log_level l, const char *fmt, ...)
{
	char	 line[1024];
	va_list	 ap;
	size_t	 i;

	if (l > level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (i = 0; line[i] != '\0'; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	fprintf(stderr, "%s [%ld] %s\n", level_names[l], (long)getpid(),
	    line);
}
