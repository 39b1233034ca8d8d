/*
 * db.c - connection, prepare after fork, reconnect and re-prepare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "config.h"
#include "db.h"
#include "db_io.h"
#include "log.h"
#include "metrics.h"
#include "pin.h"

#define DB_IDLE_PING_SECONDS	30	/* ping before use after this idle */
/*
 * Reconnect backoff per worker: after a failed connect no other is tried
 * for a wait that starts at DB_BACKOFF_MIN_MS and doubles up to
 * DB_BACKOFF_MAX_MS, each drawn uniformly from [wait/2, wait] (jitter, so
 * that the workers do not retry in step); meanwhile db_ready fails at
 * once (503). The cap bounds the recovery: under load a worker probes at
 * least once per DB_BACKOFF_MAX_MS, so it is back within that (plus one
 * connect) of the database's return. One "still unreachable" line per
 * DB_DOWN_NOTE_MS at most.
 */
#define DB_BACKOFF_MIN_MS	100
#define DB_BACKOFF_MAX_MS	1000
#define DB_DOWN_NOTE_MS		10000
#define DB_LOCK_WAIT_SECONDS_STR "10"	/* innodb_lock_wait_timeout, < IO */

struct db {
	const struct config		*cfg;
	const struct db_stmt_def	*defs;
	size_t				 n;
	MYSQL				*conn;
	MYSQL_STMT			**stmts;
	char				*prep_logged;	/* per statement */
	int				 eager;	/* prepare all at connect */
	int				 multi;	/* multi-statements: migrations only */
	int				 in_tx;
	int				 connected_once;	/* reconnects count after it */
	int				 quiet;	/* db_quiet */
	unsigned			 last_errno;
	enum db_fail			 last_fail;	/* db_failure */
	time_t				 last_used;
	/* reconnect backoff (db_down / db_up), times on CLOCK_MONOTONIC */
	unsigned			 down_attempts;	/* failed in a row */
	unsigned			 down_errno;	/* of the last failure */
	unsigned			 backoff_ms;
	unsigned			 seed;		/* jitter, rand_r */
	long long			 down_since, next_try, last_note;
	char				 errmsg[256];	/* the last connect error */
	/* db_hosts (a Galera cluster): the node of the connection */
	int				 node;		/* -1: none / one server */
	unsigned			 pin;		/* own pin, no shared page */
	int				 wsrep;		/* the server replicates */
	int				 sync_boost;	/* wsrep_sync_wait |= 1 */
};

static int	 oneshot;	/* db_oneshot: report a failed connect, no retry */

/* Marks this process as a one-shot program (db.h); returns nothing. */
void
db_oneshot(void)
{
	oneshot = 1;
}

/* The caller reports a failed connect of db itself (db.h). */
void
db_quiet(struct db *db)
{
	db->quiet = 1;
}

/* Allocates a handle; does not connect. NULL when out of memory. */
struct db *
db_new(const struct config *cfg, const struct db_stmt_def *defs, size_t n,
    int eager, int multi)
{
	struct db	*db;

	if ((db = calloc(1, sizeof(*db))) == NULL)
		return NULL;
	if ((db->stmts = calloc(n ? n : 1, sizeof(*db->stmts))) == NULL ||
	    (db->prep_logged = calloc(n ? n : 1, 1)) == NULL) {
		free(db->stmts);
		free(db);
		return NULL;
	}
	db->cfg = cfg;
	db->defs = defs;
	db->n = n;
	db->eager = eager;
	db->multi = multi;
	db->node = -1;
	/* a program without the host's shared page (asyncexec-expire,
	 * asyncexec-admin) starts at the node the host's workers write to */
	if (cfg->db_nhosts > 0 && pin_get(&db->pin) == -1)
		(void)pin_load(cfg, &db->pin);	/* else 0: the first node */
	return db;
}

/* Closes statements and the connection; the handle stays usable. */
static void
db_drop(struct db *db)
{
	size_t	 i;

	for (i = 0; i < db->n; i++)
		if (db->stmts[i] != NULL) {
			mysql_stmt_close(db->stmts[i]);
			db->stmts[i] = NULL;
		}
	if (db->conn != NULL)
		mysql_close(db->conn);
	db->conn = NULL;
	db->in_tx = 0;
	db->node = -1;
	db->wsrep = 0;
	memset(db->prep_logged, 0, db->n ? db->n : 1);
}

void
db_free(struct db *db)
{
	if (db == NULL)
		return;
	db_drop(db);
	free(db->stmts);
	free(db->prep_logged);
	free(db);
}

/* Errors after which the connection is gone and must be remade. */
static int
conn_lost(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
	    e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR ||
	    e == CR_SERVER_LOST_EXTENDED || e == ER_CONNECTION_KILLED ||
	    e == ER_SERVER_SHUTDOWN || e == 4031 /* MySQL 8 idle kick */ ||
	    e == ER_UNKNOWN_COM_ERROR /* 1047: Galera node not ready */;
}

/* Records error e (0: none) with the server's text msg: db_errno and
 * db_failure answer for it, together (db.h). No result. */
static void
set_err(struct db *db, unsigned e, const char *msg)
{
	db->last_errno = e;
	db->last_fail = db_fail_of(e, msg);
}

/* The statement's name for the log (its number when it has none). */
static const char *
stmt_name(const struct db *db, size_t id, char *buf, size_t sz)
{
	if (db->defs[id].name != NULL)
		return db->defs[id].name;
	snprintf(buf, sz, "#%zu", id);
	return buf;
}

/*
 * Prepares statement id on the live connection; 0 or -1 (last_errno
 * set). A failure is logged once per connection and statement unless
 * quiet (db_connect sums them up in one line); a missing table fails
 * every use until `migrate` runs, db_drop resets.
 */
static int
db_prepare(struct db *db, size_t id, int quiet)
{
	MYSQL_STMT	*st;
	char		 nb[24];

	if ((st = mysql_stmt_init(db->conn)) == NULL) {
		set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
		return -1;
	}
	if (mysql_stmt_prepare(st, db->defs[id].sql,
	    strlen(db->defs[id].sql)) != 0) {
		set_err(db, mysql_stmt_errno(st), mysql_stmt_error(st));
		snprintf(db->errmsg, sizeof(db->errmsg), "%s",
		    mysql_stmt_error(st));
		if (!db->prep_logged[id] && !quiet)
			log_error("db: prepare %s: %s (%s)", stmt_name(db, id,
			    nb, sizeof(nb)), mysql_stmt_error(st),
			    db_prepare_hint(db->last_errno));
		db->prep_logged[id] = 1;
		mysql_stmt_close(st);
		return -1;
	}
	db->stmts[id] = st;
	return 0;
}

/*
 * Prepares every statement (eager handles) after a connect. One that
 * does not prepare (a table of a newer schema missing) stays NULL and
 * is retried on use: the others work, and /readyz can say that the
 * schema is not current; all such are logged in one line. 0, or -1
 * when the connection was lost meanwhile.
 */
static int
prepare_all(struct db *db)
{
	char	 nb[24], first[320] = "";
	size_t	 i, failed = 0;
	unsigned e = 0;

	for (i = 0; i < db->n; i++) {
		if (db_prepare(db, i, 1) == 0)
			continue;
		if (conn_lost(db->last_errno))
			return -1;
		if (failed++ == 0) {
			e = db->last_errno;
			snprintf(first, sizeof(first), "%.40s: %.250s",
			    stmt_name(db, i, nb, sizeof(nb)), db->errmsg);
		}
	}
	if (failed > 0)
		log_error("db: %zu of %zu statements do not prepare (first, %s; "
		    "%s); they are retried on use", failed, db->n, first,
		    db_prepare_hint(e));
	return 0;
}

/* Sets the connection's options before connecting. */
static void
db_options(struct db *db)
{
	unsigned	 to = db->cfg->db_connect_timeout;
	unsigned	 io = db_io_seconds(db->multi);

	mysql_options(db->conn, MYSQL_OPT_CONNECT_TIMEOUT, &to);
	mysql_options(db->conn, MYSQL_OPT_READ_TIMEOUT, &io);
	mysql_options(db->conn, MYSQL_OPT_WRITE_TIMEOUT, &io);
	mysql_options(db->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(db->conn, MYSQL_INIT_COMMAND,
	    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	/* Strict: a value that does not fit is an error, never cut. */
	mysql_options(db->conn, MYSQL_INIT_COMMAND, "SET SESSION sql_mode = "
	    "'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
	    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'");
	/* A lock wait ends (1205) well before the socket read timeout, so
	 * a waiting compare-and-set never gets a 503 and commits later. */
	mysql_options(db->conn, MYSQL_INIT_COMMAND, "SET SESSION "
	    "innodb_lock_wait_timeout = " DB_LOCK_WAIT_SECONDS_STR);
}

/*
 * Connects to one server (host and port, or the unix socket sock when
 * not NULL) and reads its replication state into st; 0 or -1
 * (db->errmsg says why, naming the node when it is one of db_hosts).
 */
static int
connect_server(struct db *db, const char *host, unsigned port,
    const char *sock, struct db_node *st)
{
	const struct config	*c = db->cfg;
	unsigned long		 flags = CLIENT_FOUND_ROWS;

	if ((db->conn = mysql_init(NULL)) == NULL) {
		set_err(db, CR_OUT_OF_MEMORY, "");
		return -1;
	}
	db_options(db);
	if (db->multi)
		flags |= CLIENT_MULTI_STATEMENTS;
	if (mysql_real_connect(db->conn, sock ? NULL : host, c->db_user,
	    c->db_password, c->db_name, sock ? 0 : port, sock, flags) == NULL) {
		set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
		if (c->db_nhosts > 0)
			snprintf(db->errmsg, sizeof(db->errmsg), "%.60s:%u: %.180s",
			    host, port, mysql_error(db->conn));
		else
			snprintf(db->errmsg, sizeof(db->errmsg), "%s",
			    mysql_error(db->conn));
		db_drop(db);
		return -1;
	}
	if (db_node_state(db, st) == -1) {
		db_drop(db);
		return -1;
	}
	db->wsrep = st->wsrep;
	return 0;
}

/* The node this process should write to: the host's shared pin. */
static unsigned
pin_now(struct db *db)
{
	unsigned	 n = db->cfg->db_nhosts, pin;

	if (pin_get(&pin) == -1)
		pin = db->pin;
	return n > 0 && pin < n ? pin : 0;
}

/*
 * Connects to the first usable node of db_hosts from the pinned one on,
 * in list order (wrapping): reachable, and Synced in the Primary
 * component when it runs Galera. Only a lost or refused connection
 * (conn_lost: 2002, 2003, 2013, 1047...) or a node not Synced in the
 * Primary component sends it to the next node; any other error (1040
 * too many connections, 1045, 1203: the node is there and answers) ends
 * the attempt where it is, a 503 without a move. Another node than the
 * pinned one moves the pin (logged once, by the worker that moved it).
 * 0 or -1.
 */
static int
connect_cluster(struct db *db)
{
	const struct config	*c = db->cfg;
	const struct config_host *h;
	struct db_node		 st;
	unsigned		 start = pin_now(db), k, i;

	for (k = 0; k < c->db_nhosts; k++) {
		i = (start + k) % c->db_nhosts;
		h = &c->db_hosts[i];
		if (connect_server(db, h->host, h->port, NULL, &st) == -1) {
			if (!conn_lost(db->last_errno))
				return -1;	/* it answered: no move */
			continue;
		}
		if (st.wsrep && (!st.synced || !st.primary)) {
			snprintf(db->errmsg, sizeof(db->errmsg), "%.60s:%u: the "
			    "node is %.31s in a %.31s component, not Synced in the "
			    "Primary one", h->host, h->port, st.state,
			    st.status);
			set_err(db, ER_UNKNOWN_COM_ERROR, db->errmsg);
			db_drop(db);
			continue;
		}
		db->node = (int)i;
		db->pin = i;
		if (!db->connected_once)
			log_info("db: writing to node %u (%s:%u) of db_hosts",
			    i + 1, h->host, h->port);
		if (i != start && pin_move(start, i)) {
			log_warn("db: writer moved from node %u (%s:%u) to node "
			    "%u (%s:%u): %s", start + 1, c->db_hosts[start].host,
			    c->db_hosts[start].port, i + 1, h->host, h->port,
			    "it stays there until a reload");
			(void)pin_save(c, i);
		}
		return 0;
	}
	return -1;
}

/*
 * Sets the session's wsrep_sync_wait on a Galera node: the configured
 * one, with bit 1 (reads wait for every earlier write of the cluster)
 * added while sync_boost is set. 0 or -1.
 */
static int
apply_sync_wait(struct db *db)
{
	char	 q[64];

	if (!db->wsrep)
		return 0;
	snprintf(q, sizeof(q), "SET SESSION wsrep_sync_wait = %u",
	    db->cfg->db_sync_wait | (db->sync_boost ? 1u : 0u));
	if (mysql_real_query(db->conn, q, strlen(q)) != 0) {
		set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", q,
		    mysql_error(db->conn));
		return -1;
	}
	return 0;
}

/* Connects (and prepares all when eager); 0 or -1 (logged once). */
static int
db_connect(struct db *db)
{
	const struct config	*c = db->cfg;
	struct db_node		 st;
	int			 rc;

	if (c->db_nhosts > 0)
		rc = connect_cluster(db);
	else
		rc = connect_server(db, c->db_host, c->db_port,
		    c->db_socket[0] ? c->db_socket : NULL, &st);
	if (rc == -1 || apply_sync_wait(db) == -1)
		goto fail;
	if (db->eager && prepare_all(db) == -1)
		goto fail;
	db->last_used = time(NULL);
	return 0;
fail:
	metrics_db_error();
	db_drop(db);
	return -1;
}

/* Logs an outage's first failed connect, with what to check. */
static void
log_down(const struct db *db)
{
	const char	*msg = db->errmsg[0] ? db->errmsg : "no connection";
	const char	*hint = db_connect_hint(db->down_errno);

	if (!oneshot)
		log_error("db: connect: %s (retrying every %u..%u ms; 503 "
		    "meanwhile)%s%s", msg, DB_BACKOFF_MIN_MS, DB_BACKOFF_MAX_MS,
		    hint ? "; " : "", hint ? hint : "");
	else if (!db->quiet)
		db_log_connect(db->cfg, db->down_errno, msg);
}

/*
 * Records a failed connect at now: logs the first of an outage, then at
 * most one "still unreachable" line per DB_DOWN_NOTE_MS, and sets the
 * time of the next attempt (doubling backoff with jitter).
 */
static void
db_down(struct db *db, long long now)
{
	unsigned	 wait;

	db->down_errno = db->last_errno ? db->last_errno : CR_UNKNOWN_ERROR;
	if (db->down_attempts++ == 0) {
		if (db->seed == 0)
			db->seed = (unsigned)getpid() ^ (unsigned)now;
		db->down_since = db->last_note = now;
		db->backoff_ms = DB_BACKOFF_MIN_MS;
		log_down(db);
	} else {
		db->backoff_ms = db->backoff_ms * 2 > DB_BACKOFF_MAX_MS ?
		    DB_BACKOFF_MAX_MS : db->backoff_ms * 2;
		if (now - db->last_note >= DB_DOWN_NOTE_MS) {
			db->last_note = now;
			log_warn("db: still unreachable (%u attempts, for %lld "
			    "s): %s", db->down_attempts,
			    (now - db->down_since) / 1000, db->errmsg);
		}
	}
	wait = db->backoff_ms / 2 + (unsigned)rand_r(&db->seed) %
	    (db->backoff_ms / 2 + 1);
	db->next_try = now + wait;
}

/* Records a successful connect at now: ends an outage (logged once). */
static void
db_up(struct db *db, long long now)
{
	if (db->down_attempts > 0)
		log_info("db: reconnected after %.1f s (%u failed attempts)",
		    (double)(now - db->down_since) / 1000, db->down_attempts);
	db->down_attempts = 0;
	db->errmsg[0] = '\0';
	if (db->connected_once)
		metrics_db_reconnect();
	db->connected_once = 1;
}

/*
 * Makes sure a usable connection exists: connects when there is none,
 * pings after a long idle time and reconnects when the ping fails. While
 * the reconnect backoff runs (the last connect failed) it fails at once
 * without trying. Returns 0, or -1 when the database cannot be reached
 * (db_errno: the last connect's error).
 */
int
db_ready(struct db *db)
{
	time_t		 now = time(NULL);
	long long	 ms;

	if (db->conn != NULL && db->node >= 0 && !db->in_tx &&
	    pin_now(db) != (unsigned)db->node) {
		log_info("db: following this host's writer to node %u",
		    pin_now(db) + 1);
		db_drop(db);
	}
	if (db->conn != NULL && now - db->last_used > DB_IDLE_PING_SECONDS &&
	    mysql_ping(db->conn) != 0) {
		log_warn("db: connection lost while idle: %s",
		    mysql_error(db->conn));
		db_drop(db);
	}
	if (db->conn == NULL) {
		ms = clock_mono_ms();
		if (db->down_attempts > 0 && ms < db->next_try) {
			set_err(db, db->down_errno, db->errmsg);
			return -1;
		}
		if (db_connect(db) == -1) {
			db_down(db, ms);
			return -1;
		}
		db_up(db, clock_mono_ms());
	}
	db->last_used = now;
	return 0;
}

/* Executes st with params once; returns 0 or the error number. */
static unsigned
exec_once(struct db *db, int id, MYSQL_BIND *params)
{
	MYSQL_STMT	*st;

	if (db->stmts[id] == NULL && db_prepare(db, (size_t)id, 0) == -1)
		return db->last_errno ? db->last_errno : CR_UNKNOWN_ERROR;
	st = db->stmts[id];
	if ((params != NULL && mysql_stmt_bind_param(st, params) != 0) ||
	    mysql_stmt_execute(st) != 0)
		return mysql_stmt_errno(st) ? mysql_stmt_errno(st) :
		    CR_UNKNOWN_ERROR;
	return 0;
}

/*
 * Logs statement id's failure with error e (why: the text of a lost
 * connection's error) with db_log_failed. No result.
 */
static void
run_failed_log(struct db *db, int id, unsigned e, const char *why)
{
	char	 nb[24];

	db_log_failed(stmt_name(db, (size_t)id, nb, sizeof(nb)), e,
	    db->conn && db->stmts[id] ? mysql_stmt_error(db->stmts[id]) :
	    why[0] != '\0' ? why : "(connection lost)");
}

/*
 * Runs prepared statement id with params (NULL when it has none).
 * Returns the executed statement (results are the caller's to fetch and
 * free with mysql_stmt_free_result), or NULL on error: db_errno() tells
 * which; lost connections are dropped and, for retry-safe statements
 * outside a transaction, retried once on a fresh connection.
 */
MYSQL_STMT *
db_run(struct db *db, int id, MYSQL_BIND *params)
{
	unsigned	 e;
	char		 why[128] = "";

	set_err(db, 0, NULL);
	if (db_ready(db) == -1)
		return NULL;
	if ((e = exec_once(db, id, params)) != 0 && conn_lost(e)) {
		int	 was_tx = db->in_tx;

		log_warn("db: connection lost (error %u), reconnecting", e);
		if (db->stmts[id] != NULL)	/* the text goes with it */
			snprintf(why, sizeof(why), "%s",
			    mysql_stmt_error(db->stmts[id]));
		db_drop(db);
		if (!was_tx && db->defs[id].retry_safe && db_ready(db) == 0)
			e = exec_once(db, id, params);
	}
	set_err(db, e, e == 0 || db->conn == NULL || db->stmts[id] == NULL ?
	    "" : mysql_stmt_error(db->stmts[id]));
	if (e == 0)
		return db->stmts[id];
	if (e != ER_DUP_ENTRY && db->conn != NULL && db->stmts[id] == NULL) {
		metrics_db_error();	/* not prepared: db_prepare logged it */
	} else if (e != ER_DUP_ENTRY) {
		metrics_db_error();
		run_failed_log(db, id, e, why);
	}
	return NULL;
}

/* Rows matched by the last run of statement id (CLIENT_FOUND_ROWS). */
int
db_affected(struct db *db, int id)
{
	return (int)mysql_stmt_affected_rows(db->stmts[id]);
}

/*
 * Whether the last failure lost the connection: a write sent on it may
 * or may not have happened (its outcome must be read back).
 */
int
db_lost(const struct db *db)
{
	return conn_lost(db->last_errno);
}

/* Whether a connection is up (db.h). */
int
db_connected(const struct db *db)
{
	return db->conn != NULL;
}

/* The db_hosts position of the connected node; -1 none or one server. */
int
db_node(const struct db *db)
{
	return db->node;
}

/* The configuration the handle was made with. */
const struct config *
db_config(const struct db *db)
{
	return db->cfg;
}

/* The error number of the last failed call, 0 after success. */
unsigned
db_errno(const struct db *db)
{
	return db->last_errno;
}

/* What the last failure says about running it again (db.h). */
enum db_fail
db_failure(const struct db *db)
{
	return db->last_fail;
}

/*
 * Whether the last failure was a conflict (1213: a deadlock, or on
 * Galera a write of another node certified first): nothing of the
 * statement or transaction was applied; it may be run again whole.
 */
int
db_conflict(const struct db *db)
{
	return db->last_errno == ER_LOCK_DEADLOCK;
}

/*
 * While on, reads on a Galera node wait until the node has applied
 * every write the cluster committed before them (wsrep_sync_wait bit
 * 1): for re-reading what a write whose answer was lost did, possibly
 * on another node than the one it was sent to. 0 or -1.
 */
int
db_sync_reads(struct db *db, int on)
{
	db->sync_boost = on;
	if (db->conn == NULL)
		return 0;	/* the next connect applies it */
	if (apply_sync_wait(db) == -1) {
		log_error("db: %s", db->errmsg);
		if (conn_lost(db->last_errno))
			db_drop(db);
		return -1;
	}
	return 0;
}

/*
 * Reads the server's replication state into st: whether it runs Galera
 * (wsrep_on), and then wsrep_local_state(_comment) and
 * wsrep_cluster_status. 0 or -1 (the connection failed).
 */
int
db_node_state(struct db *db, struct db_node *st)
{
	static const char qon[] = "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'";
	static const char q[] = "SHOW GLOBAL STATUS WHERE Variable_name IN "
	    "('wsrep_local_state_comment', 'wsrep_cluster_status')";
	MYSQL_RES	*res;
	MYSQL_ROW	 row;

	memset(st, 0, sizeof(*st));
	if (mysql_real_query(db->conn, qon, sizeof(qon) - 1) != 0 ||
	    (res = mysql_store_result(db->conn)) == NULL)
		goto fail;
	if ((row = mysql_fetch_row(res)) != NULL && row[1] != NULL)
		st->wsrep = strcmp(row[1], "ON") == 0;
	mysql_free_result(res);
	if (!st->wsrep)
		return 0;
	if (mysql_real_query(db->conn, q, sizeof(q) - 1) != 0 ||
	    (res = mysql_store_result(db->conn)) == NULL)
		goto fail;
	while ((row = mysql_fetch_row(res)) != NULL)
		if (row[0] != NULL && row[1] != NULL)
			snprintf(strcmp(row[0], "wsrep_cluster_status") == 0 ?
			    st->status : st->state, sizeof(st->state), "%.31s",
			    row[1]);
	mysql_free_result(res);
	st->synced = strcmp(st->state, "Synced") == 0;
	st->primary = strcmp(st->status, "Primary") == 0;
	return 0;
fail:
	set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
	snprintf(db->errmsg, sizeof(db->errmsg), "replication state: %s",
	    mysql_error(db->conn));
	if (conn_lost(db->last_errno))
		db_drop(db);	/* the next db_ready reconnects */
	return -1;
}

/* Runs a plain query (no values); 0, or -1 (the failure recorded). */
static int
db_query(struct db *db, const char *q)
{
	if (mysql_real_query(db->conn, q, strlen(q)) != 0) {
		set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
		metrics_db_error();
		if (db->last_errno == ER_LOCK_DEADLOCK)
			log_warn("db: %s: %s (another write won; retried or "
			    "503)", q, mysql_error(db->conn));
		else
			log_error("db: %s: %s", q, mysql_error(db->conn));
		if (conn_lost(db->last_errno))
			db_drop(db);
		return -1;
	}
	return 0;
}

void
db_fetch_failed(struct db *db, MYSQL_STMT *st)
{
	set_err(db, mysql_stmt_errno(st) != 0 || db->conn == NULL ?
	    mysql_stmt_errno(st) : mysql_errno(db->conn), mysql_stmt_error(st));
	metrics_db_error();	/* the fetch logged it (db_fetch_log) */
	mysql_stmt_free_result(st);
	if (conn_lost(db->last_errno))
		db_drop(db);	/* closes (frees) st */
}

int
db_begin(struct db *db)
{
	if (db_ready(db) == -1 || db_query(db, "START TRANSACTION") == -1)
		return -1;
	set_err(db, 0, NULL);
	db->in_tx = 1;
	return 0;
}

int
db_commit(struct db *db)
{
	int	 rc;

	if (db->conn == NULL)
		return -1;
	if ((rc = db_query(db, "COMMIT")) == 0)
		set_err(db, 0, NULL);
	db->in_tx = 0;
	return rc;
}

/* Rolls back; a ROLLBACK that works keeps db_failure (db.h). */
void
db_rollback(struct db *db)
{
	if (db->conn != NULL && db->in_tx)
		(void)db_query(db, "ROLLBACK");
	db->in_tx = 0;
}

/* Runs a multi-statement script (migrations), draining all results. */
int
db_script(struct db *db, const char *sql, size_t len)
{
	MYSQL_RES	*res;
	int		 st;

	if (db_ready(db) == -1)
		return -1;
	if (mysql_real_query(db->conn, sql, len) != 0)
		goto fail;
	do {
		if ((res = mysql_store_result(db->conn)) != NULL)
			mysql_free_result(res);
		else if (mysql_field_count(db->conn) != 0)
			goto fail;
		if ((st = mysql_next_result(db->conn)) > 0)
			goto fail;
	} while (st == 0);
	return 0;
fail:
	set_err(db, mysql_errno(db->conn), mysql_error(db->conn));
	log_error("db: script: %s", mysql_error(db->conn));
	return -1;
}
