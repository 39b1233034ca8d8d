/*
 * db_hint.c - what to check when a connect fails with an error the
 * server answered (db.h, db_connect_hint): the one-shot programs' log
 * line, the workers' first line of an outage (db.c, log_down) and
 * asyncexec-admin check's (repo_check.c); what to do about a statement
 * that does not prepare; and what a statement's error says about
 * running it again (db_fail_of).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "config.h"
#include "db.h"
#include "log.h"

#define HINT_LOGIN	"check db_name, db_user and db_password or " \
	"db_password_file in the configuration file, and the grants"

/* X(error number, what to check) */
#define CONNECT_HINTS(X) \
	X(ER_ACCESS_DENIED_ERROR, HINT_LOGIN) \
	X(ER_DBACCESS_DENIED_ERROR, HINT_LOGIN) \
	X(ER_BAD_DB_ERROR, HINT_LOGIN) \
	X(ER_CON_COUNT_ERROR, "the server has max_connections clients " \
	    "already: raise max_connections, or find who holds them (SHOW " \
	    "PROCESSLIST)") \
	X(ER_TOO_MANY_USER_CONNECTIONS, "db_user has the server's " \
	    "max_user_connections connections already: raise it, or find " \
	    "who holds them (SHOW PROCESSLIST)") \
	X(ER_USER_LIMIT_REACHED, "db_user is at a limit of its account, " \
	    "the one the message names (MAX_USER_CONNECTIONS, or an hourly " \
	    "one): raise it (ALTER USER ... WITH), find who holds the " \
	    "connections (SHOW PROCESSLIST), or wait for the hour to pass") \
	X(ER_HOST_IS_BLOCKED, "the server blocks this host after " \
	    "max_connect_errors failed connects: find what failed, then run " \
	    "FLUSH HOSTS on the server") \
	X(ER_HOST_NOT_PRIVILEGED, "the server has no account for db_user " \
	    "from this host: check the account's host part (CREATE USER " \
	    "'user'@'host')") \
	X(ER_UNKNOWN_COM_ERROR, "the cluster node is not ready (not in the " \
	    "primary component, or still joining): check wsrep_ready and " \
	    "wsrep_cluster_status on it, and db_hosts in the configuration " \
	    "file") \
	X(ER_SERVER_SHUTDOWN, "the server is shutting down: check that it " \
	    "comes back (its log, systemctl status mariadb)") \
	X(CR_SSL_CONNECTION_ERROR, "the TLS handshake failed: check the " \
	    "server's TLS settings (ssl_cert, ssl_key, tls_version) and its " \
	    "certificate, and the server's log")

static const struct {
	unsigned	 err;
	const char	*hint;
} hints[] = {
#define HINT_ROW(e, text) { e, text },
	CONNECT_HINTS(HINT_ROW)
#undef HINT_ROW
};

/*
 * What to check about connect error e when the server answered it
 * ("check ..." or a cause and what to do); NULL for the others (no
 * answer: the caller names where the server should be).
 */
const char *
db_connect_hint(unsigned e)
{
	size_t	 i;

	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (hints[i].err == e)
			return hints[i].hint;
	return NULL;
}

/*
 * Logs a one-shot program's failed connect (error e, text msg) with what
 * to check: the error's hint, else the settings that say where the
 * server is. Returns nothing.
 */
void
db_log_connect(const struct config *c, unsigned e, const char *msg)
{
	const char	*hint = db_connect_hint(e);
	char		 chk[1200];

	if (hint != NULL)
		snprintf(chk, sizeof(chk), "%s", hint);
	else if (c->db_nhosts > 0)
		snprintf(chk, sizeof(chk), "check db_hosts (%s) in the "
		    "configuration file, and that the nodes run",
		    c->db_hosts_text);
	else if (c->db_socket[0] != '\0')
		snprintf(chk, sizeof(chk), "check db_socket (%s) in the "
		    "configuration file, and that the server runs", c->db_socket);
	else
		snprintf(chk, sizeof(chk), "check db_host and db_port (%s:%u) in "
		    "the configuration file, and that the server runs",
		    c->db_host, c->db_port);
	log_error("db: cannot connect to database %s as %s: %s; %s",
	    c->db_name, c->db_user, msg, chk);
}

/* What to do about a statement that does not prepare, by its error e. */
const char *
db_prepare_hint(unsigned e)
{
	if (e == ER_TABLEACCESS_DENIED_ERROR || e == ER_COLUMNACCESS_DENIED_ERROR ||
	    e == ER_DBACCESS_DENIED_ERROR)
		return "the database user lacks a privilege: run "
		    "asyncexec-admin check";
	return "is the schema current? " MIGRATE_HINT;
}

/*
 * The text MariaDB (10.4 and later, wsrep_override_error) gives a
 * statement whose writeset is over wsrep_max_ws_size, with error 1105
 * (ER_UNKNOWN_ERROR); the node's log says "WSREP: transaction size limit
 * (N) exceeded: M". Measured on MariaDB 10.11 with Galera 4
 * (cluster_expire_writeset): a DELETE or an INSERT over it gets this;
 * an UPDATE joined to JSON_TABLE gets 4165 "Galera replication not
 * supported" at any wsrep_max_ws_size below its default, whatever its
 * size, so that one is not of this class.
 */
#define WS_SIZE_TEXT	"Maximum writeset size exceeded"

/*
 * The text MariaDB gives a statement that writes more rows than
 * wsrep_max_ws_rows (when it is not 0), with error 1180
 * (ER_ERROR_DURING_COMMIT), which a node also answers for other causes
 * (a commit cut off when the node left the primary component, say), so
 * the number alone does not tell it. Measured on MariaDB 10.11 with
 * Galera 4 (cluster_expire_ws_rows): a DELETE joined to JSON_TABLE, an
 * INSERT (also INSERT ... SELECT ... ON DUPLICATE KEY UPDATE) and a
 * plain UPDATE get this; an UPDATE joined to JSON_TABLE gets 4165 at any
 * wsrep_max_ws_rows but 0, whatever its size, as with wsrep_max_ws_size.
 * The rows are counted per transaction, and a smaller statement after
 * the failed one passes.
 */
#define WS_ROWS_TEXT	"wsrep_max_ws_rows exceeded"

/*
 * The class of a statement's error e, msg the server's text of it (NULL
 * or "" when unknown): DB_FAIL_NONE (e 0), DB_FAIL_RETRY (1213, 1205),
 * DB_FAIL_WRITESET (1105 with WS_SIZE_TEXT: 1105 is the server's catch-
 * all, so the number alone does not tell it), DB_FAIL_WS_ROWS (1180
 * with WS_ROWS_TEXT, likewise) or DB_FAIL_OTHER.
 */
enum db_fail
db_fail_of(unsigned e, const char *msg)
{
	if (e == 0)
		return DB_FAIL_NONE;
	if (e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT)
		return DB_FAIL_RETRY;
	if (e == ER_UNKNOWN_ERROR && msg != NULL &&
	    strncmp(msg, WS_SIZE_TEXT, sizeof(WS_SIZE_TEXT) - 1) == 0)
		return DB_FAIL_WRITESET;
	if (e == ER_ERROR_DURING_COMMIT && msg != NULL &&
	    strncmp(msg, WS_ROWS_TEXT, sizeof(WS_ROWS_TEXT) - 1) == 0)
		return DB_FAIL_WS_ROWS;
	return DB_FAIL_OTHER;
}

/*
 * Logs statement name's failure with error e and the server's text: a
 * deadlock (1213) or a lock wait timeout (1205), which its caller
 * retries (repo_failed: REPO_RETRY) or answers with a 503, at warn, as
 * db_query and db_fetch_log log a deadlock; a writeset over
 * wsrep_max_ws_size or one over wsrep_max_ws_rows at warn; any other
 * error at error. No result.
 */
void
db_log_failed(const char *name, unsigned e, const char *text)
{
	enum db_fail	 f = db_fail_of(e, text);

	if (e == ER_LOCK_DEADLOCK)
		log_warn("db: statement %s failed: error %u %s (another write "
		    "won; retried or 503)", name, e, text);
	else if (e == ER_LOCK_WAIT_TIMEOUT)
		log_warn("db: statement %s failed: error %u %s (a row lock "
		    "was held too long; retried or 503)", name, e, text);
	else if (f == DB_FAIL_WRITESET || f == DB_FAIL_WS_ROWS)
		log_warn("db: statement %s failed: error %u %s (over the "
		    "node's %s)", name, e, text, f == DB_FAIL_WRITESET ?
		    "wsrep_max_ws_size" : "wsrep_max_ws_rows");
	else
		log_error("db: statement %s failed: error %u %s", name, e,
		    text);
}
