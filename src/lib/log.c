/*
 * log.c - stderr logging: key=value fields, journald priority prefix,
 * control characters stripped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static enum log_level level = LOG_INFO;
static const char *ctx_request_id, *ctx_endpoint;

static const struct {
	const char	*name;
	int		 priority;	/* syslog(3) */
} levels[LOG__MAX] = {
	[LOG_ERROR] = { "error", 3 },
	[LOG_WARN] = { "warn", 4 },
	[LOG_INFO] = { "info", 6 },
	[LOG_DEBUG] = { "debug", 7 },
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
		if (strcmp(s, levels[i].name) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

/*
 * Sets the request fields of the lines logged from now on (NULL: none).
 * The strings must live until the next call; the worker sets them
 * around each request and clears them after.
 */
void
log_context(const char *request_id, const char *endpoint)
{
	ctx_request_id = request_id;
	ctx_endpoint = endpoint;
}

/* Appends s to out[*n] (size outsz) with control characters replaced by
 * '?' and, when quoted, '"' and '\' escaped. Truncates silently. */
static void
put_clean(char *out, size_t outsz, size_t *n, const char *s, int quoted)
{
	for (; *s != '\0' && *n + 3 < outsz; s++) {
		unsigned char c = (unsigned char)*s;

		if (quoted && (c == '"' || c == '\\'))
			out[(*n)++] = '\\';
		out[(*n)++] = (c < 0x20 || c == 0x7f || (!quoted && c == ' ')) ?
		    '?' : (char)c;
	}
	out[*n] = '\0';
}

/* Appends the literal s (no cleaning) to out. */
static void
put_lit(char *out, size_t outsz, size_t *n, const char *s)
{
	size_t	 l = strlen(s);

	if (*n + l + 1 > outsz)
		l = outsz - *n - 1;
	memcpy(out + *n, s, l);
	*n += l;
	out[*n] = '\0';
}

/*
 * Formats one log line (without the newline) into out: the priority
 * prefix when prefix is set, level, pid, the request context, msg.
 */
void
log_format_line(char *out, size_t outsz, enum log_level l, int prefix,
    const char *msg)
{
	char	 head[48];
	size_t	 n = 0;

	out[0] = '\0';
	if (prefix)
		snprintf(head, sizeof(head), "<%d>level=%s pid=%ld",
		    levels[l].priority, levels[l].name, (long)getpid());
	else
		snprintf(head, sizeof(head), "level=%s pid=%ld",
		    levels[l].name, (long)getpid());
	put_lit(out, outsz, &n, head);
	if (ctx_request_id != NULL) {
		put_lit(out, outsz, &n, " req=");
		put_clean(out, outsz, &n, ctx_request_id, 0);
	}
	if (ctx_endpoint != NULL) {
		put_lit(out, outsz, &n, " endpoint=");
		put_clean(out, outsz, &n, ctx_endpoint, 0);
	}
	put_lit(out, outsz, &n, " msg=\"");
	put_clean(out, outsz, &n, msg, 1);
	put_lit(out, outsz, &n, "\"");
}

void
log_msg(enum log_level l, const char *fmt, ...)
{
	char	 msg[1024], line[2300];
	va_list	 ap;

	if (l > level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_format_line(line, sizeof(line), l, !isatty(STDERR_FILENO), msg);
	fprintf(stderr, "%s\n", line);
}
