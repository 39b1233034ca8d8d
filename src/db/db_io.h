/*
 * db_io.h - how long a read or write on a database connection waits, by
 * the process it runs in: the request-serving one (asyncexec-fcgi, its
 * master and workers) has a stop deadline, the other programs have none.
 *
 * db layer: db.c, and asyncexec-fcgi's master and workers (serve).
 */
#ifndef ASYNCEXEC_DB_IO_H
#define ASYNCEXEC_DB_IO_H

/*
 * Read/write timeout on the socket of a request-serving process
 * (Connector/C waits once, it does not retry): above the lock wait
 * (DB_LOCK_WAIT_SECONDS_STR, db.c), so that 1205 comes first; and, with
 * the one reconnect after it (db_connect_timeout), inside
 * asyncexec-fcgi's stop deadline (STOP_KILL_SECONDS, 25 s,
 * src/serve/master.c), so that a request waiting on a database that
 * stopped answering gets its 503 before its worker would be killed.
 */
#define DB_IO_TIMEOUT_SECONDS	15
/* The other programs (asyncexec-expire, -admin, -notify, the checks):
 * no stop deadline; a long count or purge batch must not be cut. */
#define DB_TOOL_IO_SECONDS	30
/* The migrations' connection (multi): it waits for the migration lock
 * (asyncexec-admin, 60 s) and runs ALTERs that may take minutes. */
#define DB_MIGRATE_IO_SECONDS	3600

void		 db_serving(void);
unsigned	 db_io_seconds(int multi);

#endif
