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

/* A connection to cfg's database (session time zone UTC); exits on failure. */
static MYSQL *
sidedb_open(const struct config *cfg)
{
	MYSQL *m = mysql_init(NULL);

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
