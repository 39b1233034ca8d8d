/*
 * fault.h - shared helpers of the fault-injection tests (tests/fault): the
 * shared stack's database stopped, SIGKILLed and restarted (always running
 * again when the test ends), the app log's line count, a root SQL session
 * on the private server, and bounded waits. Nothing here asserts: the
 * tests' CHECKs do.
 *
 * The stack's state directory (scripts/lib/stack.sh) is ASYNCEXEC_TEST_LOGDIR
 * when set, else the directory of ASYNCEXEC_TEST_CONFIG: asyncexec.log,
 * nginx/{access,error}.log, mariadb/mysqld.pid live there.
 */
#ifndef ASYNCEXEC_FAULT_H
#define ASYNCEXEC_FAULT_H

#include "util/clock.h"
#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

/* Installs the exit hook that restarts the database if a test stopped it. */
void		 f_init(void);
/* "$ASYNCEXEC_TEST_DBCTL verb"; 0 or -1. */
int		 f_dbctl(const char *verb);
/* Stops the database gracefully (dbctl stop) or with SIGKILL; 0 or -1. */
int		 f_db_stop(int sigkill);
/* Starts it again and returns once it answers (dbctl start); 0 or -1. */
int		 f_db_start(void);

/* The state directory, and path of a file in it (static buffer). */
const char	*f_state_path(const char *file);
/* Lines in a file (0 when missing). */
long		 f_log_lines(const char *path);
/* Prints lines from+1 .. from+max of a file to stderr, indented. */
void		 f_log_show(const char *path, long from, long max);
/* Whether the file contains the byte string needle; -1 when unreadable. */
int		 f_file_contains(const char *path, const char *needle);

/* String value of key in the stack's config (into buf), "" when absent. */
const char	*f_cfg_str(const char *key, char *buf, size_t n);
/* Writes to path the stack's config with the database at 127.0.0.1:port
 * (TCP, through dbproxy; one server even on the cluster), no
 * wsrep_sync_wait of the session's own, no listen, listen_mode or
 * workers, then the "key = value\n" lines of extra. 0 or -1. */
int		 f_proxy_config(const char *path, int port, const char *extra);
/* A root session on the private server (unix socket), in the app's database. */
MYSQL		*f_sql_open(void);
/* Runs q (printf format); 0 or the error number (printed). */
unsigned	 f_sql(MYSQL *, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
/* First column of the first row of q as a number; -1 on error or no row. */
long long	 f_sql_num(MYSQL *, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

#endif
