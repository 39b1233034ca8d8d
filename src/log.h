/*
 * log.h - one-line logs on stderr: "LEVEL [pid] message".
 *
 * Control characters in the formatted message are replaced by '?', so
 * nothing a client sent can forge a log line.
 */
#ifndef ASYNCEXEC_LOG_H
#define ASYNCEXEC_LOG_H

enum log_level {
	LOG_ERROR,	/* LOG_ERROR */
	LOG_WARN,	/* LOG_WARN */
	LOG_INFO,	/* LOG_INFO */
	LOG_DEBUG,	/* LOG_DEBUG */
	LOG__MAX
};

void	log_set_level(enum log_level);
int	log_parse_level(const char *, enum log_level *);
void	log_msg(enum log_level, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

#define log_error(...)	log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
