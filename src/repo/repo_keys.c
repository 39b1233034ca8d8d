/*
 * repo_keys.c - the poll-token keys (s2r_secret: version 0 is the row
 * "poll_token_id_key", version N >= 1 the row "poll_token_id_key.N";
 * retire_at ends a rotated-out key) and the schema's compatibility with
 * older binaries (s2r_schema_version.compatible_from, migration 5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "db.h"
#include "log.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_sql.h"

#define KEY_NAME	"poll_token_id_key"

/* The version a key row's name stands for; -1 when it is none. */
static int
name_version(const char *name)
{
	char	*end;
	long	 v;

	if (strcmp(name, KEY_NAME) == 0)
		return 0;
	if (strncmp(name, KEY_NAME ".", sizeof(KEY_NAME)) != 0)
		return -1;
	v = strtol(name + sizeof(KEY_NAME), &end, 10);
	if (*end != '\0' || v < 1 || v >= POLL_KEY_VERSIONS ||
	    name[sizeof(KEY_NAME)] == '0')
		return -1;
	return (int)v;
}

/*
 * Reads every poll-token key (at most max) into k, by version; rows
 * with another name or a secret that is not IDKEY_LEN bytes are skipped
 * (and logged). REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_poll_keys(struct db *db, struct poll_key_row *k, size_t max, size_t *n)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	MYSQL_TIME	 t;
	char		 name[80];
	unsigned char	 key[64];
	enum db_row	 rc = DB_ROW;
	int		 v;

	*n = 0;
	if ((st = db_run(db, STMT_POLL_KEYS, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, name, sizeof(name));
	db_rcol(&c, 1, MYSQL_TYPE_BLOB, key, sizeof(key));
	db_rcol(&c, 2, MYSQL_TYPE_DATETIME, &t, sizeof(t));
	while (*n < max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 0, name, sizeof(name));
		if ((v = name_version(name)) == -1 || c.null[1] ||
		    c.len[1] != IDKEY_LEN) {
			log_error("s2r_secret: row %s is not a %d-byte poll-token "
			    "key; ignored", name, IDKEY_LEN);
			continue;
		}
		k[*n].version = (unsigned)v;
		memcpy(k[*n].key, key, IDKEY_LEN);
		k[*n].retire_at = c.null[2] ? 0 : db_time_ms(&t);
		(*n)++;
	}
	explicit_bzero(key, sizeof(key));
	mysql_stmt_free_result(st);
	return *n <= max && rc != DB_ROW_ERR ? REPO_OK : REPO_ERR;
}

/*
 * Inserts key (IDKEY_LEN bytes) as poll-token key version, unless that
 * version exists (INSERT IGNORE: of two racing inserts one wins, an
 * existing key is never replaced). REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_poll_key_insert(struct db *db, unsigned version, const unsigned char *key,
    int64_t now)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t;
	char		 name[40];

	if (version == 0)
		snprintf(name, sizeof(name), "%s", KEY_NAME);
	else
		snprintf(name, sizeof(name), "%s.%u", KEY_NAME, version);
	db_bind_str(&p[0], name);
	db_bind_blob(&p[1], key, IDKEY_LEN);
	db_bind_time(&p[2], &t, now);
	return db_run(db, STMT_POLL_KEY_INSERT, p) != NULL ? REPO_OK : REPO_ERR;
}

/* Sets retire_at = until on every key but version keep that would
 * otherwise live longer. REPO_OK or REPO_ERR. */
static enum repo_rc
retire_others(struct db *db, unsigned keep, int64_t until)
{
	MYSQL_BIND	 p[3];
	MYSQL_TIME	 t[2];
	char		 name[40];

	snprintf(name, sizeof(name), "%s.%u", KEY_NAME, keep);
	db_bind_time(&p[0], &t[0], until);
	db_bind_str(&p[1], name);
	db_bind_time(&p[2], &t[1], until);
	return db_run(db, STMT_POLL_KEY_RETIRE, p) != NULL ? REPO_OK : REPO_ERR;
}

/*
 * Rotates the poll-token key, holding the migration lock: a new key
 * (this process's random source) becomes version newest + 1 and seals
 * the tokens issued from now on (workers see it within their cache
 * TTL); every older key keeps opening tokens for grace_seconds, then
 * stops (their tokens then poll 404: an identical resubmit hands out a
 * fresh one). *version gets the new version. REPO_OK, REPO_BUSY (another
 * migrate or rotate holds the lock), REPO_DUP (all 63 versions used) or
 * REPO_ERR.
 */
enum repo_rc
repo_poll_key_rotate(struct db *db, unsigned grace_seconds, int64_t now,
    unsigned *version)
{
	struct poll_key_row	 k[POLL_KEY_VERSIONS];
	unsigned char		 key[IDKEY_LEN];
	size_t			 i, n;
	unsigned		 newest = 0;
	int			 rc;

	if ((rc = repo_migrate_lock(db, 10)) != REPO_OK)
		return rc;
	if ((rc = repo_poll_keys(db, k, POLL_KEY_VERSIONS, &n)) != REPO_OK)
		goto out;
	for (i = 0; i < n; i++)
		newest = k[i].version > newest ? k[i].version : newest;
	rc = REPO_DUP;
	if (n == 0 || newest + 1 >= POLL_KEY_VERSIONS)
		goto out;
	rc = REPO_ERR;
	if (crypto_random(key, sizeof(key)) == -1)
		goto out;
	*version = newest + 1;
	if ((rc = repo_poll_key_insert(db, *version, key, now)) == REPO_OK)
		rc = retire_others(db, *version, now +
		    (int64_t)grace_seconds * 1000);
	explicit_bzero(key, sizeof(key));
out:
	repo_migrate_unlock(db);
	return rc == REPO_DUP && n == 0 ? REPO_ERR : rc;
}

/*
 * For a binary built for schema built_for: *version gets the database's
 * schema version, *needs the oldest binary schema that every migration
 * newer than built_for still serves (0 when there is none). A database
 * before migration 5 has no compatible_from: *needs is then *version.
 * REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_schema_compat(struct db *db, int built_for, int *version, int *needs)
{
	MYSQL_BIND	 p[1];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	unsigned	 b = built_for > 0 ? (unsigned)built_for : 0;
	int		 rc;

	*version = *needs = 0;
	db_bind_u32(&p[0], &b);
	if ((st = db_run(db, STMT_SCHEMA_COMPAT, p)) == NULL) {
		if (repo_schema_version(db, version) != REPO_OK)
			return REPO_ERR;
		*needs = *version;	/* no compatible_from column yet */
		return REPO_OK;
	}
	db_rcol(&c, 0, MYSQL_TYPE_LONG, version, 0);
	db_rcol(&c, 1, MYSQL_TYPE_LONG, needs, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK : REPO_ERR;
}

/* Records that migration version serves binaries from schema compat on
 * (only where nothing is recorded yet). REPO_OK or REPO_ERR. */
enum repo_rc
repo_schema_set_compat(struct db *db, int version, int compat)
{
	MYSQL_BIND	 p[2];
	unsigned	 v = (unsigned)version, c = (unsigned)compat;

	db_bind_u32(&p[0], &c);
	db_bind_u32(&p[1], &v);
	return db_run(db, STMT_SCHEMA_SET_COMPAT, p) != NULL ? REPO_OK :
	    REPO_ERR;
}
