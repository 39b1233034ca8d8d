/*
 * expire_fixture.h - the fixtures that db_expire and db_expire_race
 * share beyond db_fixture.h (the side connection): wiping a test's
 * environment, a waiting execution inserted through the repository,
 * and reading the binary's summary line. Included by each of them: the
 * functions are static inline so that their CHECKs count in that test
 * (see check.h).
 */
#ifndef ASYNCEXEC_EXPIRE_FIXTURE_H
#define ASYNCEXEC_EXPIRE_FIXTURE_H

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "crypto.h"
#include "db_fixture.h"
#include "repo.h"

#define DAY	86400000LL
#define MIN	60000LL

/* Deletes every execution of environment env; exits on failure. */
static inline void
wipe_env(const struct config *cfg, const char *env)
{
	MYSQL	*m = side_open(cfg, NULL);
	char	 q[128];

	snprintf(q, sizeof(q), "DELETE FROM s2r_async_execution WHERE "
	    "environment = '%s'", env);
	side_sql(m, q);
	mysql_close(m);
}

/*
 * Sets the rollup's mark (sql/013) to ms, as if the rollup had counted
 * every execution that ended by then (ms -1: no mark, as before the
 * first count), so that the purge takes what ended before it; returns
 * the mark it replaced (-1: none), to put back.
 */
static inline long long
mark_set(const struct config *cfg, long long ms)
{
	MYSQL		*m = side_open(cfg, "SET time_zone = '+00:00'");
	long long	 old;

	old = side_numf(m, "SELECT CAST(UNIX_TIMESTAMP(counted_until) * "
	    "1000 AS SIGNED) FROM s2r_rollup_mark WHERE id = 1");
	if (ms < 0)
		side_sqlf(m, "DELETE FROM s2r_rollup_mark WHERE id = 1");
	else
		side_sqlf(m, "INSERT INTO s2r_rollup_mark (id, counted_until) "
		    "VALUES (1, FROM_UNIXTIME(%lld.%03lld)) ON DUPLICATE KEY "
		    "UPDATE counted_until = VALUES(counted_until)", ms / 1000,
		    ms % 1000);
	mysql_close(m);
	return old;
}

/*
 * Inserts waiting execution env/svc/op/cid of tenant with request "{}",
 * created a day before it expires (expires_at); the id the insert
 * returned (0: none).
 */
static inline uint64_t
insert_waiting(struct db *db, const char *env, const char *svc,
    const char *op, const char *tenant, const char *cid, int64_t expires_at)
{
	struct exec_new	 n;
	char		 tok[SECRET_B64_LEN + 1];
	uint64_t	 id = 0;

	exec_new_init(&n, env, svc, op, tenant, cid, "{}");
	CHECK(crypto_new_secret("", tok, sizeof(tok), n.key_hash) == 0);
	CHECK(crypto_new_secret("", tok, sizeof(tok), n.poll_hash) == 0);
	/* created well before: the tests claim at times around expires_at,
	 * and claim hands out only what is due (due_at <= now, sql/011) */
	n.now = expires_at - 30 * DAY;
	n.expires_at = expires_at;
	CHECK(repo_exec_insert(db, &n, &id) == REPO_OK);
	return id;
}

/* The N of "name=N" in an asyncexec-expire summary line, or -1. */
static inline long
field(const char *line, const char *name)
{
	char		 key[32];
	const char	*p;

	snprintf(key, sizeof(key), " %s=", name);
	if ((p = strstr(line, key)) == NULL)
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

#endif
