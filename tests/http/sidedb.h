/*
 * sidedb.h - the database side connection of the HTTP tests that set up fixtures in SQL
 * (http_scale, http_retry_race): the test stack's configuration, UTC, exit on failure.
 * Static functions: include it in one test program only once.
 */
#ifndef ASYNCEXEC_SIDEDB_H
#define ASYNCEXEC_SIDEDB_H

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

/*
 * A connection to cfg's database (session time zone UTC); exits on failure. With
 * db_hosts (a Galera cluster) the first node of the list that accepts, as the app's
 * writer pinning, with wsrep_sync_wait=1 (its reads see every write committed before).
 */
static MYSQL *
sidedb_open(const struct config *cfg)
{
	MYSQL *m = mysql_init(NULL);
	unsigned timeout = 2;

#ifdef CONFIG_MAX_HOSTS
	unsigned i;

	for (i = 0; i < cfg->db_nhosts; i++) {
		mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
		if (mysql_real_connect(m, cfg->db_hosts[i].host, cfg->db_user,
		    cfg->db_password, cfg->db_name, cfg->db_hosts[i].port, NULL, 0) != NULL) {
			if (mysql_query(m, "SET time_zone = '+00:00', wsrep_sync_wait = 1") != 0)
				break;
			return m;
		}
		mysql_close(m);
		m = mysql_init(NULL);
	}
	if (cfg->db_nhosts > 0) {
		fprintf(stderr, "FATAL: database (db_hosts): %s\n", mysql_error(m));
		exit(1);
	}
#endif
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (mysql_real_connect(m, cfg->db_socket[0] ? NULL : cfg->db_host, cfg->db_user,
	    cfg->db_password, cfg->db_name, cfg->db_port,
	    cfg->db_socket[0] ? cfg->db_socket : NULL, 0) == NULL ||
	    mysql_query(m, "SET time_zone = '+00:00'") != 0) {
		fprintf(stderr, "FATAL: database: %s\n", mysql_error(m));
		exit(1);
	}
	return m;
}

/* Runs fixture statement q on m; exits on failure. */
static void
sidedb_exec(MYSQL *m, const char *q)
{
	if (mysql_query(m, q) != 0) {
		fprintf(stderr, "FATAL: %s: %s\n", q, mysql_error(m));
		exit(1);
	}
}

#endif
