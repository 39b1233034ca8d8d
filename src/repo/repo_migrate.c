/*
 * repo_migrate.c - the repository's schema migrations (asyncexec-admin
 * migrate, and the service's schema checks): the lock, the applied
 * versions, each migration's script and record, the poll-token key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "crypto.h"
#include "db.h"
#include "log.h"
#include "migrations.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_sql.h"

#define POLL_KEY_VERSION	3	/* the migration that makes s2r_secret */

#define VERSION_TABLE \
	"CREATE TABLE IF NOT EXISTS s2r_schema_version (" \
	"version INT UNSIGNED NOT NULL PRIMARY KEY, " \
	"applied_at DATETIME(3) NOT NULL) ENGINE=InnoDB"

/*
 * Makes sure the poll-token key of migration 3 (version 0) exists: a new
 * one is drawn from this process's random source (crypto_random, not
 * the server's RANDOM_BYTES, which MariaDB < 10.10 and MySQL lack) and
 * inserted with INSERT IGNORE, so an existing key is never replaced and
 * of two racing inserts one wins. REPO_OK or REPO_ERR.
 */
static enum repo_rc
poll_key_ensure(struct db *db)
{
	unsigned char	 key[IDKEY_LEN];
	int		 rc;

	if (crypto_random(key, sizeof(key)) == -1)
		return REPO_ERR;
	rc = repo_poll_key_insert(db, 0, key, clock_now_ms());
	explicit_bzero(key, sizeof(key));
	return rc;
}

/*
 * Records the "-- compatible-from" of every applied migration whose row
 * has none: rows recorded before migration 5 made the column, and rows
 * an earlier build recorded without it. Call only once the column
 * exists. REPO_OK or REPO_ERR.
 */
static enum repo_rc
record_compat(struct db *db)
{
	size_t	 i;

	for (i = 0; i < asyncexec_nmigrations; i++) {
		const struct migration *m = &asyncexec_migrations[i];

		if (m->compat > 0 &&
		    repo_schema_set_compat(db, m->version, m->compat) != REPO_OK)
			return REPO_ERR;
	}
	return REPO_OK;
}

/*
 * Applies migration m and records it: with its compatible-from in the
 * same row once the column exists (col, or m is the migration that
 * makes it), so that old hosts' readiness never reads an applied
 * migration as incompatible, also while a run goes on or after one
 * stopped part way. REPO_OK or REPO_ERR.
 */
static enum repo_rc
apply_one(struct db *db, const struct migration *m, int col)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;
	unsigned	 v = (unsigned)m->version, c = (unsigned)m->compat;
	enum stmt	 id = STMT_MIGRATION_RECORD;

	log_info("migrate: applying %s", m->name);
	if (db_script(db, m->sql, m->len) == -1)
		return REPO_ERR;
	if (col || m->version == POLL_KEY_SCHEMA)
		id = STMT_MIGRATION_RECORD_COMPAT;
	db_bind_u32(&p[0], &v);
	db_bind_time(&p[1], &t, clock_now_ms());
	db_bind_u32(&p[2], &c);
	return db_run(db, id, p) != NULL ? REPO_OK : repo_failed(db);
}

/*
 * Takes the migration lock of this database (a MariaDB named lock,
 * "asyncexec_migrate:<database>"), waiting up to wait_seconds. REPO_OK,
 * REPO_BUSY (another session holds it, or the wait for it ended in an
 * error: a lost connection, GET_LOCK's NULL when killed) or REPO_ERR.
 * The lock belongs to the connection: a crashed holder releases it.
 */
enum repo_rc
repo_migrate_lock(struct db *db, unsigned wait_seconds)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 got = 0, rc;

	db_bind_u32(&p[0], &wait_seconds);
	if ((st = db_run(db, STMT_MIGRATE_LOCK, p)) == NULL)
		return db_lost(db) ? REPO_BUSY : REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &got, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != DB_ROW)
		return REPO_ERR;
	if (c.null[0]) {	/* NULL: an error inside GET_LOCK */
		log_warn("migrate: the wait for the migration lock ended in "
		    "an error (its session killed?)");
		return REPO_BUSY;
	}
	return got == 1 ? REPO_OK : REPO_BUSY;
}

/* Releases the migration lock (if this connection holds it). */
void
repo_migrate_unlock(struct db *db)
{
	MYSQL_STMT	*st;

	if ((st = db_run(db, STMT_MIGRATE_UNLOCK, NULL)) != NULL)
		mysql_stmt_free_result(st);
}

/* Whether migration version v is recorded: 1, 0, or -1 on error. */
static int
is_applied(struct db *db, int v)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	unsigned	 uv = (unsigned)v;
	long long	 n = 0;
	int		 rc;

	db_bind_u32(&p[0], &uv);
	if ((st = db_run(db, STMT_MIGRATION_APPLIED, p)) == NULL)
		return -1;
	db_rcol(&c, 0, MYSQL_TYPE_LONGLONG, &n, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? n > 0 : -1;
}

/*
 * Applies migration m unless it is recorded (*ran: whether it ran), then
 * what follows it: the poll-token key (from migration 3 on: never a
 * window without it) and, when m made compatible_from (*col: the column
 * exists), the rows recorded before it. REPO_OK, or REPO_ERR with
 * *failed naming m when m itself failed.
 */
static enum repo_rc
apply_pending(struct db *db, const struct migration *m, int before,
    int *col, int *ran, const char **failed)
{
	int	 done;

	*ran = 0;
	if ((done = is_applied(db, m->version)) == -1)
		return REPO_ERR;
	if (done)
		return REPO_OK;
	if (m->version < before)
		log_warn("migrate: %s is applied after version %d (out of "
		    "order)", m->name, before);
	if (apply_one(db, m, *col) != REPO_OK) {
		*failed = m->name;
		return REPO_ERR;
	}
	*ran = 1;
	if (m->version >= POLL_KEY_VERSION && poll_key_ensure(db) != REPO_OK)
		return REPO_ERR;
	if (m->version == POLL_KEY_SCHEMA) {
		*col = 1;
		return record_compat(db);
	}
	return REPO_OK;
}

/*
 * Applies every embedded migration that is not recorded yet, up to
 * target (0: the newest), in order, holding the migration lock (a
 * concurrent run waits up to lock_wait seconds, then gets REPO_BUSY and
 * applies nothing). A missing version below a recorded one (numbers
 * handed out in parallel, merged out of order) is applied too, with a
 * warning. *applied gets how many ran, *version the schema version
 * after (also after a failure; -1 when it cannot be read), *failed the
 * name of the migration that failed (NULL: none did, the failure was
 * elsewhere), *cause what the failing statement's error means (set on
 * REPO_ERR only). REPO_OK, REPO_BUSY or REPO_ERR.
 */
enum repo_rc
repo_migrate(struct db *db, int target, unsigned lock_wait, int *applied,
    int *version, const char **failed, enum repo_cause *cause)
{
	size_t	 i;
	int	 rc, ran, before, col;

	*applied = 0;
	*version = -1;
	*failed = NULL;
	*cause = CAUSE_OTHER;
	if (db_script(db, VERSION_TABLE, strlen(VERSION_TABLE)) == -1) {
		*cause = repo_cause(db);
		return REPO_ERR;
	}
	if ((rc = repo_migrate_lock(db, lock_wait)) != REPO_OK)
		return rc;
	if ((rc = repo_schema_version(db, &before)) != REPO_OK)
		goto fail;
	rc = REPO_ERR;
	if ((col = is_applied(db, POLL_KEY_SCHEMA)) == -1)
		goto fail;
	/* what an earlier build, or a run that stopped, left without it */
	if (col && (rc = record_compat(db)) != REPO_OK)
		goto fail;
	for (i = 0; i < asyncexec_nmigrations; i++) {
		const struct migration *m = &asyncexec_migrations[i];

		if (target > 0 && m->version > target)
			break;
		rc = apply_pending(db, m, before, &col, &ran, failed);
		*applied += ran;
		if (rc != REPO_OK)
			goto fail;
	}
	if ((rc = repo_schema_version(db, version)) != REPO_OK)
		goto fail;
	/* also repairs a database whose key row went missing */
	rc = *version >= POLL_KEY_VERSION ? poll_key_ensure(db) : REPO_OK;
fail:
	if (rc == REPO_ERR)	/* before the reads below replace the error */
		*cause = repo_cause(db);
	/* what the database is at now, for the operator */
	if (rc != REPO_OK && repo_schema_version(db, version) != REPO_OK)
		*version = -1;
	repo_migrate_unlock(db);
	return rc;
}

