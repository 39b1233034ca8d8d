/*
 * repo_admin.c - the repository's operator statements: schema
 * migrations, routes and keys (asyncexec-admin).
 */
#include <string.h>

#include <mysqld_error.h>

#include "db.h"
#include "json.h"
#include "log.h"
#include "migrations.h"
#include "repo.h"
#include "repo_sql.h"

#define VERSION_TABLE \
	"CREATE TABLE IF NOT EXISTS s2r_schema_version (" \
	"version INT UNSIGNED NOT NULL PRIMARY KEY, " \
	"applied_at DATETIME(3) NOT NULL) ENGINE=InnoDB"

/* Runs an insert; REPO_OK, REPO_DUP or REPO_ERR. */
static int
insert(struct db *db, enum stmt id, MYSQL_BIND *p)
{
	if (db_run(db, id, p) != NULL)
		return REPO_OK;
	return db_errno(db) == ER_DUP_ENTRY ? REPO_DUP : REPO_ERR;
}

/* Applies migration m and records it; REPO_OK or REPO_ERR. */
static int
apply_one(struct db *db, const struct migration *m)
{
	MYSQL_BIND	 p[2];
	MYSQL_TIME	 t;
	unsigned	 v = (unsigned)m->version;

	log_info("migrate: applying %s", m->name);
	if (db_script(db, m->sql, m->len) == -1)
		return REPO_ERR;
	db_bind_u32(&p[0], &v);
	db_bind_time(&p[1], &t, json_now_ms());
	return insert(db, STMT_MIGRATION_RECORD, p);
}

/*
 * Takes the migration lock of this database (a MariaDB named lock,
 * "asyncexec_migrate:<database>"), waiting up to wait_seconds. REPO_OK,
 * REPO_BUSY (another session holds it) or REPO_ERR. The lock belongs to
 * the connection: a crashed holder releases it.
 */
int
repo_migrate_lock(struct db *db, unsigned wait_seconds)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 got = 0, rc;

	db_bind_u32(&p[0], &wait_seconds);
	if ((st = db_run(db, STMT_MIGRATE_LOCK, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, &got, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	if (rc != 0 || c.null[0])	/* NULL: an error inside GET_LOCK */
		return REPO_ERR;
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

/*
 * Applies every embedded migration newer than the recorded version, up
 * to target (0: the newest), in order, holding the migration lock (a
 * concurrent run waits up to lock_wait seconds, then gets REPO_BUSY and
 * applies nothing). *applied gets how many ran, *version the schema
 * version after. REPO_OK, REPO_BUSY or REPO_ERR.
 */
int
repo_migrate(struct db *db, int target, unsigned lock_wait, int *applied,
    int *version)
{
	size_t	 i;
	int	 rc;

	*applied = 0;
	*version = 0;
	if (db_script(db, VERSION_TABLE, strlen(VERSION_TABLE)) == -1)
		return REPO_ERR;
	if ((rc = repo_migrate_lock(db, lock_wait)) != REPO_OK)
		return rc;
	if ((rc = repo_schema_version(db, version)) != REPO_OK)
		goto fail;
	for (i = 0; i < asyncexec_nmigrations; i++) {
		const struct migration *m = &asyncexec_migrations[i];
		if (m->version <= *version)
			continue;
		if (target > 0 && m->version > target)
			break;
		if ((rc = apply_one(db, m)) != REPO_OK)
			goto fail;
		*version = m->version;
		(*applied)++;
	}
	rc = REPO_OK;
fail:
	repo_migrate_unlock(db);
	return rc;
}

/* Adds an enabled route. REPO_OK, REPO_DUP (exists) or REPO_ERR. */
int
repo_route_add(struct db *db, const char *env, const char *svc,
    const char *op, unsigned retention_days, int64_t now)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t;

	db_bind_str(&p[0], env);
	db_bind_str(&p[1], svc);
	db_bind_str(&p[2], op);
	db_bind_u32(&p[3], &retention_days);
	db_bind_time(&p[4], &t, now);
	return insert(db, STMT_ROUTE_ADD, p);
}

/*
 * Stores a key hash (tenant NULL for backend keys, label may be NULL);
 * *id gets the new key's id. REPO_OK, REPO_DUP or REPO_ERR.
 */
int
repo_key_add(struct db *db, int backend, const char *tenant,
    const char *label, const unsigned char *hash, int64_t now, uint64_t *id)
{
	MYSQL_BIND	 p[5];
	MYSQL_TIME	 t;
	MYSQL_STMT	*st;

	db_bind_str(&p[0], backend ? "backend" : "consumer");
	db_bind_blob(&p[1], hash, SHA256_LEN);
	db_bind_str(&p[2], tenant);
	db_bind_str(&p[3], label);
	db_bind_time(&p[4], &t, now);
	if ((st = db_run(db, STMT_KEY_ADD, p)) == NULL)
		return db_errno(db) == ER_DUP_ENTRY ? REPO_DUP : REPO_ERR;
	*id = mysql_stmt_insert_id(st);
	return REPO_OK;
}

/* Lets backend key key_id serve route route_id. REPO_OK/DUP/ERR. */
int
repo_backend_route_add(struct db *db, uint64_t key_id, uint64_t route_id)
{
	MYSQL_BIND	 p[2];

	db_bind_u64(&p[0], &key_id);
	db_bind_u64(&p[1], &route_id);
	return insert(db, STMT_BACKEND_ROUTE_ADD, p);
}

/* Enables or disables a route. REPO_OK, REPO_NOTFOUND or REPO_ERR. */
int
repo_route_set_enabled(struct db *db, const char *env, const char *svc,
    const char *op, int enabled)
{
	MYSQL_BIND	 p[4];
	unsigned	 v = enabled ? 1 : 0;

	db_bind_u32(&p[0], &v);
	db_bind_str(&p[1], env);
	db_bind_str(&p[2], svc);
	db_bind_str(&p[3], op);
	if (db_run(db, STMT_ROUTE_SET_ENABLED, p) == NULL)
		return REPO_ERR;
	return db_affected(db, STMT_ROUTE_SET_ENABLED) > 0 ? REPO_OK :
	    REPO_NOTFOUND;
}

#define LIST_COLS	5
#define LIST_WIDTH	4096

/*
 * Runs listing statement id (params may be NULL) whose ncols columns
 * are all fetched as text, and calls fn for each row. REPO_OK/ERR.
 */
static int
list(struct db *db, enum stmt id, MYSQL_BIND *p, int ncols, repo_row_fn fn,
    void *arg)
{
	static char	 cell[LIST_COLS][LIST_WIDTH];
	const char	*cols[LIST_COLS];
	struct db_cols	 c;
	MYSQL_STMT	*st;
	int		 i, rc;

	if ((st = db_run(db, id, p)) == NULL)
		return REPO_ERR;
	for (i = 0; i < ncols; i++) {
		db_rcol(&c, i, MYSQL_TYPE_STRING, cell[i], LIST_WIDTH);
		cols[i] = cell[i];
	}
	if (mysql_stmt_bind_result(st, c.b) != 0) {
		mysql_stmt_free_result(st);
		return REPO_ERR;
	}
	while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
		for (i = 0; i < ncols; i++)
			db_rstr(&c, i, cell[i], LIST_WIDTH);
		fn(arg, cols, ncols);
	}
	mysql_stmt_free_result(st);
	return rc == MYSQL_NO_DATA ? REPO_OK : REPO_ERR;
}

/* Rows: route ("env/svc/op"), retention_days, enabled (yes/no). */
int
repo_route_list(struct db *db, repo_row_fn fn, void *arg)
{
	return list(db, STMT_ROUTE_LIST, NULL, 3, fn, arg);
}

/* Rows: id, tenant, label, revoked (yes/no), routes ("e/s/o,..."). */
int
repo_key_list(struct db *db, int backend, repo_row_fn fn, void *arg)
{
	MYSQL_BIND	 p[1];

	db_bind_str(&p[0], backend ? "backend" : "consumer");
	return list(db, STMT_KEY_LIST, p, 5, fn, arg);
}

/* Rows: route ("env/svc/op"), status, count. */
int
repo_stats(struct db *db, repo_row_fn fn, void *arg)
{
	return list(db, STMT_STATS, NULL, 3, fn, arg);
}

/* Revokes key id of the kind; idempotent. REPO_OK/NOTFOUND/ERR. */
int
repo_key_revoke(struct db *db, int backend, uint64_t id, int64_t now)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;

	db_bind_time(&p[0], &t, now);
	db_bind_u64(&p[1], &id);
	db_bind_str(&p[2], backend ? "backend" : "consumer");
	if (db_run(db, STMT_KEY_REVOKE, p) == NULL)
		return REPO_ERR;
	return db_affected(db, STMT_KEY_REVOKE) > 0 ? REPO_OK : REPO_NOTFOUND;
}
