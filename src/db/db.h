/*
 * db.h - one MariaDB connection with its prepared statements.
 *
 * The connection is made after fork, in the process that uses it. No
 * MYSQL_OPT_RECONNECT: on a lost connection db_run drops the handle,
 * reconnects and re-prepares explicitly, and retries the statement once
 * when its definition says a retry is safe.
 *
 * db layer: the db and repo folders only (the two that see <mysql.h>).
 */
#ifndef ASYNCEXEC_DB_H
#define ASYNCEXEC_DB_H

#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

struct config;

struct db_stmt_def {
	const char	*sql;
	int		 retry_safe;	/* may be re-run after a reconnect */
	const char	*name;		/* for the log; NULL: its number */
};

struct db;

/* A server's replication state (db_node_state). */
struct db_node {
	int		 wsrep;		/* runs Galera (wsrep_on) */
	int		 synced;	/* wsrep_local_state_comment Synced */
	int		 primary;	/* wsrep_cluster_status Primary */
	char		 state[32];	/* wsrep_local_state_comment */
	char		 status[32];	/* wsrep_cluster_status */
};

/* This process runs once (admin, expire, a check): a failed connect says
 * what to check instead of the workers' retry and 503 (db_oneshot). */
void		 db_oneshot(void);
/* A one-shot program's handle whose failed connect its caller reports
 * (a check, with db_connect_hint): db logs nothing about it. */
void		 db_quiet(struct db *);
/* What to check about connect error e the server answered, or NULL
 * (db_hint.c); db_log_connect logs a one-shot program's failed connect
 * with it, or with where the server should be. */
const char	*db_connect_hint(unsigned e);
/* What to do about a statement that does not prepare with error e. */
const char	*db_prepare_hint(unsigned e);
void		 db_log_connect(const struct config *, unsigned e,
		    const char *msg);
struct db	*db_new(const struct config *, const struct db_stmt_def *,
		    size_t nstmts, int eager, int multi);
void		 db_free(struct db *);
int		 db_ready(struct db *);
MYSQL_STMT	*db_run(struct db *, int id, MYSQL_BIND *params);
int		 db_affected(struct db *, int id);
unsigned	 db_errno(const struct db *);
const struct config *db_config(const struct db *);
int		 db_lost(const struct db *);
/* Whether a connection is up: after a failed call, whether its error
 * was a statement's, not the connect's (the server refused it). */
int		 db_connected(const struct db *);
int		 db_conflict(const struct db *);

/* What a statement's failure says about running it again (db_fail_of). */
enum db_fail {
	DB_FAIL_NONE,		/* it did not fail */
	DB_FAIL_RETRY,		/* 1213 (a deadlock, or a Galera certification
				 * failure), 1205 (a lock wait timeout): nothing
				 * was applied; run it again whole */
	DB_FAIL_WRITESET,	/* its writeset is over Galera's
				 * wsrep_max_ws_size: nothing was applied; the
				 * same change in smaller pieces may pass */
	DB_FAIL_WS_ROWS,	/* it changed more rows than Galera's
				 * wsrep_max_ws_rows: nothing was applied; the
				 * same change in smaller pieces may pass */
	DB_FAIL_OTHER		/* any other error */
};

/* The class of error e with the server's text msg (db_hint.c). */
enum db_fail	 db_fail_of(unsigned e, const char *msg);
/* Logs statement name's failure: error e, the server's text (db_hint.c). */
void		 db_log_failed(const char *name, unsigned e, const char *text);
/*
 * The class of the last failure, of whichever call failed last (db_run,
 * db_begin, db_commit, db_ready and its connect, db_node_state,
 * db_sync_reads, db_script, db_fetch_failed): db_errno's error, always
 * recorded with it. db_run, db_begin and db_commit reset both when they
 * succeed (DB_FAIL_NONE, 0); db_rollback keeps the failure that undid
 * the transaction unless the ROLLBACK itself fails.
 */
enum db_fail	 db_failure(const struct db *);
/* Records why fetching the rows of st failed (an error the server sent
 * while they streamed, a deadlock say, is the connection's), so that
 * db_conflict and db_lost answer for it, and frees st's result: when the
 * connection was lost it is dropped, st with it (st must not be used
 * again). It logs nothing: db_fetch_row (or db_fetch_log) did. */
void		 db_fetch_failed(struct db *, MYSQL_STMT *);
int		 db_sync_reads(struct db *, int on);
int		 db_node_state(struct db *, struct db_node *);
int		 db_node(const struct db *);
int		 db_begin(struct db *);
int		 db_commit(struct db *);
void		 db_rollback(struct db *);
int		 db_script(struct db *, const char *sql, size_t len);
int		 db_fetch_blob(MYSQL_STMT *, MYSQL_BIND *, unsigned col,
		    unsigned long len, char **out, size_t *outlen);

#define DB_MAX_COLS	24

/*
 * Result columns: binds with their is_null, length and error slots. A
 * column bound with no buffer (NULL, 0: a payload fetched afterwards
 * with db_fetch_blob) may be truncated; any other truncated column makes
 * db_fetch_row fail.
 */
struct db_cols {
	MYSQL_BIND	 b[DB_MAX_COLS];
	my_bool		 null[DB_MAX_COLS];
	my_bool		 err[DB_MAX_COLS];
	unsigned long	 len[DB_MAX_COLS];
};

/* Parameter binds; the bound memory must outlive the db_run call. */
void		 db_bind_str(MYSQL_BIND *, const char *);
void		 db_bind_blob(MYSQL_BIND *, const void *, size_t);
void		 db_bind_u64(MYSQL_BIND *, const uint64_t *);
void		 db_bind_u32(MYSQL_BIND *, const unsigned *);
void		 db_bind_time(MYSQL_BIND *, MYSQL_TIME *, int64_t ms);
int64_t		 db_time_ms(const MYSQL_TIME *);
/* Result binds: column i of type t over buffer p of n bytes. */
void		 db_rcol(struct db_cols *, int i, enum enum_field_types t,
		    void *p, size_t n);
void		 db_rstr(struct db_cols *, int i, char *p, size_t n);

/* What db_fetch_row got. */
enum db_row {
	DB_ROW_ERR = -1,	/* the fetch failed (logged) */
	DB_ROW = 0,		/* a row, in the bound columns */
	DB_ROW_NONE = 1		/* no more rows */
};

enum db_row	 db_fetch_row(MYSQL_STMT *, struct db_cols *);
/* Logs, in one line with the server's text, why fetching st's rows
 * failed (a deadlock at warn); for a fetch loop of the caller's own. */
void		 db_fetch_log(MYSQL_STMT *);

#endif
