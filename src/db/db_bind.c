/*
 * repo_bind.c - parameter binds and result columns of the repository's
 * prepared statements (db.h): every bound value and fetched column of
 * the SQL in repo*.c goes through these.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "db.h"
#include "log.h"

/* Binds string s (NULL: SQL NULL); s must outlive the statement's run. */
void
db_bind_str(MYSQL_BIND *b, const char *s)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)(uintptr_t)s;
	b->buffer_length = s ? strlen(s) : 0;
	if (s == NULL)
		b->buffer_type = MYSQL_TYPE_NULL;
}

/* Binds the n bytes at p as a BLOB. */
void
db_bind_blob(MYSQL_BIND *b, const void *p, size_t n)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_BLOB;
	b->buffer = (void *)(uintptr_t)p;
	b->buffer_length = n;
}

/* Binds *v as an unsigned BIGINT. */
void
db_bind_u64(MYSQL_BIND *b, const uint64_t *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = (void *)(uintptr_t)v;
	b->is_unsigned = 1;
}

/* Binds *v as an unsigned INT. */
void
db_bind_u32(MYSQL_BIND *b, const unsigned *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONG;
	b->buffer = (void *)(uintptr_t)v;
	b->is_unsigned = 1;
}

/* Binds ms (UTC milliseconds) as a DATETIME(3) through t. */
void
db_bind_time(MYSQL_BIND *b, MYSQL_TIME *t, int64_t ms)
{
	struct clock_civil	 c;

	clock_civil(ms, &c);
	memset(t, 0, sizeof(*t));
	t->year = (unsigned)c.year;
	t->month = c.month;
	t->day = c.day;
	t->hour = c.hour;
	t->minute = c.minute;
	t->second = c.second;
	t->second_part = (unsigned long)c.millis * 1000;
	t->time_type = MYSQL_TIMESTAMP_DATETIME;
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_DATETIME;
	b->buffer = t;
}

/* UTC milliseconds since the epoch of a fetched DATETIME(3). */
int64_t
db_time_ms(const MYSQL_TIME *t)
{
	struct clock_civil	 c;

	c.year = (int)t->year;
	c.month = t->month;
	c.day = t->day;
	c.hour = t->hour;
	c.minute = t->minute;
	c.second = t->second;
	c.millis = (unsigned)(t->second_part / 1000);
	return clock_civil_ms(&c);
}

/* Sets result column i to type t over buffer p of size n. */
void
db_rcol(struct db_cols *r, int i, enum enum_field_types t, void *p, size_t n)
{
	memset(&r->b[i], 0, sizeof(r->b[i]));
	r->b[i].buffer_type = t;
	r->b[i].buffer = p;
	r->b[i].buffer_length = n;
	r->b[i].is_null = &r->null[i];
	r->b[i].length = &r->len[i];
	r->b[i].error = &r->err[i];
	r->b[i].is_unsigned = 1;
	r->err[i] = 0;
}

/* NUL-terminates a fetched string column i in buffer p of size n. */
void
db_rstr(struct db_cols *r, int i, char *p, size_t n)
{
	size_t	 l = r->null[i] ? 0 : r->len[i];

	p[l < n ? l : n - 1] = '\0';
}

/*
 * Fetches one row: DB_ROW, DB_ROW_NONE (no more rows) or DB_ROW_ERR
 * (logged, once: db_fetch_failed, which the caller may run next, logs
 * nothing). Only the columns bound
 * without a buffer (payloads, fetched afterwards) may be truncated; a
 * value longer than any other column's buffer is an error, never cut.
 * Every column of the result must be bound (db_rcol).
 */
enum db_row
db_fetch_row(MYSQL_STMT *st, struct db_cols *r)
{
	unsigned	 i, n = mysql_stmt_field_count(st);
	int		 rc;

	if (n > DB_MAX_COLS || mysql_stmt_bind_result(st, r->b) != 0) {
		log_error("db: bind result: %s", mysql_stmt_error(st));
		return DB_ROW_ERR;
	}
	rc = mysql_stmt_fetch(st);
	if (rc == 0)
		return DB_ROW;
	if (rc == MYSQL_DATA_TRUNCATED) {
		for (i = 0; i < n; i++)
			if (r->err[i] && r->b[i].buffer != NULL) {
				log_error("db: result column %u truncated "
				    "(%lu bytes for a %lu-byte buffer)", i,
				    r->len[i], r->b[i].buffer_length);
				return DB_ROW_ERR;
			}
		return DB_ROW;
	}
	if (rc == MYSQL_NO_DATA)
		return DB_ROW_NONE;
	db_fetch_log(st);
	return DB_ROW_ERR;
}

/*
 * Logs the error that ended fetching st's rows, one line with the
 * server's text: a deadlock at warn (as db_query), any other at error.
 * An error while the rows stream (a lock wait, a lost connection) is the
 * connection's, not the statement's. No result.
 */
void
db_fetch_log(MYSQL_STMT *st)
{
	MYSQL		*m = st->mysql;
	unsigned	 e = mysql_stmt_errno(st);
	const char	*text = e != 0 ? mysql_stmt_error(st) : m != NULL ?
			    mysql_error(m) : "no connection";

	if (e == 0 && m != NULL)
		e = mysql_errno(m);
	if (e == ER_LOCK_DEADLOCK)
		log_warn("db: fetch: %s (another write won; retried or 503)",
		    text);
	else
		log_error("db: fetch: %s", text);
}

/*
 * Fetches column col of the current row (bound with a zero-length
 * buffer) whose real length is len into a new NUL-terminated buffer
 * *out (caller frees). 0 or -1.
 */
int
db_fetch_blob(MYSQL_STMT *st, MYSQL_BIND *b, unsigned col,
    unsigned long len, char **out, size_t *outlen)
{
	MYSQL_BIND	 one;
	char		*p;

	if ((p = malloc(len + 1)) == NULL) {
		log_error("db: fetch column %u: no memory for %lu bytes", col,
		    len);
		return -1;
	}
	memset(&one, 0, sizeof(one));
	one.buffer_type = b->buffer_type;
	one.buffer = p;
	one.buffer_length = len;
	if (len > 0 && mysql_stmt_fetch_column(st, &one, col, 0) != 0) {
		log_error("db: fetch column %u: %s", col, mysql_stmt_error(st));
		free(p);
		return -1;
	}
	p[len] = '\0';
	*out = p;
	*outlen = len;
	return 0;
}
