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
#include <string.h>

#include "config.h"
#include "httpc.h"
#include "util/side.h"

/*
 * The MySQL client library initialised and the test stack's configuration
 * (ASYNCEXEC_TEST_CONFIG) loaded into cfg, for sidedb_open; exits on failure.
 */
static void
sidedb_init(struct config *cfg)
{
	char err[512];

	mysql_library_init(0, NULL, NULL);
	if (config_load(cfg, test_env("ASYNCEXEC_TEST_CONFIG"), err, sizeof err) == -1) {
		fprintf(stderr, "FATAL: %s\n", err);
		exit(1);
	}
}

/*
 * The node the app hosts write to: asyncexec_db_writer_index of host A's metrics
 * (ASYNCEXEC_TEST_METRICS), 0 when unknown. After a failover the hosts stay on the
 * next node until a reload: fixtures written on another node would conflict with the
 * app's writes (1213 at certification), which one server never shows.
 */
static unsigned
sidedb_writer(unsigned nhosts)
{
	const char *addr = getenv("ASYNCEXEC_TEST_METRICS"), *p;
	struct http_resp r;
	long w = 0;

	if (addr == NULL || *addr == '\0')
		return 0;
	http_set_thread_target(addr);
	if (http_do("GET", "/metrics", NULL, NULL, 0, &r) == 0 && r.status == 200 &&
	    (p = strstr(r.body, "\nasyncexec_db_writer_index ")) != NULL)
		w = strtol(p + strlen("\nasyncexec_db_writer_index "), NULL, 10);
	http_set_thread_target(NULL);
	http_resp_free(&r);
	return w > 0 && (unsigned long)w < nhosts ? (unsigned)w : 0;
}

/*
 * A connection to cfg's database (session time zone UTC); exits on failure. With
 * db_hosts (a Galera cluster) the node the app hosts write to (sidedb_writer), else
 * the next of the list that accepts, with wsrep_sync_wait=1 (its reads see every
 * write committed before).
 */
static MYSQL *
sidedb_open(const struct config *cfg)
{
	MYSQL *m = mysql_init(NULL);
	unsigned timeout = 2;

	side_isolation(m);

#ifdef CONFIG_MAX_HOSTS
	unsigned i, k, w = cfg->db_nhosts > 0 ? sidedb_writer(cfg->db_nhosts) : 0;

	for (k = 0; k < cfg->db_nhosts; k++) {
		i = (w + k) % cfg->db_nhosts;
		mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
		if (mysql_real_connect(m, cfg->db_hosts[i].host, cfg->db_user,
		    cfg->db_password, cfg->db_name, cfg->db_hosts[i].port, NULL, 0) != NULL) {
			if (mysql_query(m, "SET time_zone = '+00:00', wsrep_sync_wait = 1") != 0)
				break;
			return m;
		}
		mysql_close(m);
		m = mysql_init(NULL);
		side_isolation(m);
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

/* The first column of the first row of q on m as a number (-1 when none or NULL). */
static inline long long
sidedb_num(MYSQL *m, const char *q)
{
	MYSQL_RES *res;
	MYSQL_ROW w;
	long long v = -1;

	sidedb_exec(m, q);
	res = mysql_store_result(m);
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
		v = atoll(w[0]);
	mysql_free_result(res);
	return v;
}

/* m's clock, NOW(3), in ms since the epoch (the session is UTC). */
static inline long long
sidedb_now_ms(MYSQL *m)
{
	return sidedb_num(m, "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)");
}

#endif
