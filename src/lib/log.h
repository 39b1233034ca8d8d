/*
 * log.h - one line per event on stderr, as key=value fields:
 *
 *   <3>level=error pid=1234 req=5f0c… endpoint=submit msg="db: connect: …"
 *
 * The "<N>" prefix is the syslog priority that journald reads from a
 * service's stderr (`journalctl -p err` works); it is left out when
 * stderr is a terminal. req and endpoint are those of the request the
 * worker is serving (log_context), absent outside a request. Control
 * characters in the message are replaced by '?', '"' and '\' escaped,
 * so nothing a client sent can forge a line or a field.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_LOG_H
#define ASYNCEXEC_LOG_H

#include <stddef.h>

enum log_level {
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
	LOG__MAX
};

void	log_set_level(enum log_level);
int	log_parse_level(const char *, enum log_level *);
void	log_context(const char *request_id, const char *endpoint);
void	log_format_line(char *out, size_t outsz, enum log_level, int prefix,
	    const char *msg);
void	log_msg(enum log_level, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

#define log_error(...)	log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
