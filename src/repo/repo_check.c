/*
 * repo_check.c - the database half of --check-config: reachability,
 * the server's version, the user's privileges and the schema version.
 *
 * Privileges are tried, not guessed: each probe is a statement that
 * needs exactly one privilege on one table and touches no row (WHERE 0,
 * or an INSERT ... SELECT of nothing), so a missing privilege shows as
 * the server's own "command denied" answer. The database-level
 * privileges that migrate needs (CREATE, ALTER, INDEX, REFERENCES)
 * come from SHOW GRANTS. probes[] is what each binary's statements need:
 * unit_grants (tests/layers/check_grants.py) derives that from the
 * statements of src/repo and the binaries that reach them, and fails on
 * a difference.
 */
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "db.h"
#include "repo.h"
#include "repo_check.h"

enum cstmt {
	CSTMT_TABLES,
	CSTMT_SERVER,
	CSTMT_GRANTS,
	CSTMT_SCHEMA,
	CSTMT_SEALED,
	CSTMT__PROBES		/* the probes follow, in probes[] order */
};

#define F	CHECK_FCGI
#define X	CHECK_EXPIRE
#define A	CHECK_ADMIN
#define N	CHECK_NOTIFY
#define SEL(t)		"SELECT 1 FROM " t " WHERE 0"
/* every NOT NULL column without a default, or strict mode refuses it */
#define INS(t, c, v)	"INSERT INTO " t " (" c ") SELECT " v " FROM DUAL WHERE 0"
#define N2	"NULL, NULL"
#define N3	N2 ", NULL"
#define N4	N3 ", NULL"
#define N9	N4 ", " N4 ", NULL"
#define UPD(t, set)	"UPDATE " t " SET " set " WHERE 0"
#define DEL(t)		"DELETE FROM " t " WHERE 0"

#define T_EXEC	"s2r_async_execution"
#define T_ROUTE	"s2r_route"
#define T_KEY	"s2r_api_key"
#define T_BKR	"s2r_backend_key_route"
#define T_SEC	"s2r_secret"
#define T_VER	"s2r_schema_version"
#define T_WEP	"s2r_webhook_endpoint"
#define T_WDL	"s2r_webhook_delivery"
#define T_ROC	"s2r_route_outcome"
#define T_RMK	"s2r_rollup_mark"
#define T_JOB	"s2r_job_run"
#define T_TEN	"s2r_tenant"

static const struct {
	struct repo_probe	 def;
	const char		*sql;
} probes[] = {
	{ { T_EXEC, "SELECT", F | X | A | N }, SEL(T_EXEC) },
	/* admin: execution replay inserts the replay */
	{ { T_EXEC, "INSERT", F | A }, INS(T_EXEC, "correlation_id, "
	    "environment, service_key, operation_key, request_payload, "
	    "request_sha256, created_at, updated_at, expires_at", N9) },
	{ { T_EXEC, "UPDATE", F | X | A | N }, UPD(T_EXEC, "attempts = 0") },
	{ { T_EXEC, "DELETE", X }, DEL(T_EXEC) },
	/* expire: the cancel step reads the routes (CANCEL_FROM) */
	{ { T_ROUTE, "SELECT", F | X | A }, SEL(T_ROUTE) },
	{ { T_ROUTE, "INSERT", A }, INS(T_ROUTE, "environment, service_key, "
	    "operation_key, created_at", N4) },
	{ { T_ROUTE, "UPDATE", A }, UPD(T_ROUTE, "enabled = 0") },
	/* expire: the revoked step reads the keys (sql/012) */
	{ { T_KEY, "SELECT", F | X | A }, SEL(T_KEY) },
	{ { T_KEY, "INSERT", A }, INS(T_KEY, "kind, key_hash, created_at", N3) },
	{ { T_KEY, "UPDATE", A }, UPD(T_KEY, "revoked_at = NULL") },
	{ { T_BKR, "SELECT", F | A }, SEL(T_BKR) },
	{ { T_BKR, "INSERT", A }, INS(T_BKR, "key_id, route_id", N2) },
	{ { T_BKR, "DELETE", A }, DEL(T_BKR) },
	{ { T_SEC, "SELECT", F | A }, SEL(T_SEC) },
	{ { T_SEC, "INSERT", A }, INS(T_SEC, "name, secret, created_at", N3) },
	/* poll-key rotate retires the older keys */
	{ { T_SEC, "UPDATE", A }, UPD(T_SEC, "created_at = NULL") },
	{ { T_VER, "SELECT", F | X | A | N }, SEL(T_VER) },
	{ { T_VER, "INSERT", A }, INS(T_VER, "version, applied_at", N2) },
	/* migrate records each migration's compatible-from */
	{ { T_VER, "UPDATE", A }, UPD(T_VER, "applied_at = NULL") },
	/* the terminal transitions read it (SET_NOTIFY, sql/010) */
	{ { T_WEP, "SELECT", F | X | A | N }, SEL(T_WEP) },
	{ { T_WEP, "INSERT", A }, INS(T_WEP, "tenant_id, url, events, "
	    "secret_sealed, created_at, updated_at", N4 ", " N2) },
	{ { T_WEP, "UPDATE", A | N }, UPD(T_WEP, "enabled = 1") },
	{ { T_WEP, "DELETE", A }, DEL(T_WEP) },
	/* fcgi: the dashboard's Webhooks page counts them */
	{ { T_WDL, "SELECT", F | X | A | N }, SEL(T_WDL) },
	{ { T_WDL, "INSERT", N }, INS(T_WDL, "endpoint_id, execution_id, "
	    "webhook_id, event, body, due_at, created_at, updated_at",
	    N4 ", " N4) },
	{ { T_WDL, "UPDATE", A | N }, UPD(T_WDL, "attempts = 0") },
	{ { T_WDL, "DELETE", X | A }, DEL(T_WDL) },
	/* the rollup: expire writes it, the dashboard reads it (sql/013) */
	{ { T_ROC, "SELECT", F | X }, SEL(T_ROC) },
	{ { T_ROC, "INSERT", X }, INS(T_ROC, "environment, service_key, "
	    "operation_key, bucket, status, ended", N4 ", " N2) },
	{ { T_ROC, "UPDATE", X }, UPD(T_ROC, "ended = 0") },
	{ { T_ROC, "DELETE", X }, DEL(T_ROC) },
	{ { T_RMK, "SELECT", X }, SEL(T_RMK) },
	{ { T_RMK, "INSERT", X }, INS(T_RMK, "id, counted_until", N2) },
	{ { T_RMK, "UPDATE", X }, UPD(T_RMK, "counted_until = NULL") },
	/* expire records each run (INSERT ... ON DUPLICATE KEY UPDATE,
	 * which reads last_success_at), /metrics reads it (sql/006) */
	{ { T_JOB, "SELECT", F | X }, SEL(T_JOB) },
	{ { T_JOB, "INSERT", X }, INS(T_JOB, "job, last_run_at, last_result",
	    N3) },
	{ { T_JOB, "UPDATE", X }, UPD(T_JOB, "retries = 0") },
	/* the quotas (sql/009): submit and the dashboard read them, admin
	 * tenant set writes them (INSERT ... ON DUPLICATE KEY UPDATE) and
	 * execution replay reads them */
	{ { T_TEN, "SELECT", F | A }, SEL(T_TEN) },
	{ { T_TEN, "INSERT", A }, INS(T_TEN, "tenant_id, updated_at", N2) },
	{ { T_TEN, "UPDATE", A }, UPD(T_TEN, "max_open = 0") },
};
#define NPROBES	(sizeof(probes) / sizeof(probes[0]))

#define MAX_TABLES	64
#define TABLE_LEN	65

struct rchk {
	struct db		*db;
	struct db_stmt_def	 defs[CSTMT__PROBES + NPROBES];
	int			 ntables;	/* -1: not read yet */
	char			 tables[MAX_TABLES][TABLE_LEN];
};

/* Probe i's definition, or NULL past the last. */
const struct repo_probe *
repo_check_probe_def(size_t i)
{
	return i < NPROBES ? &probes[i].def : NULL;
}

/* A handle for the checks (no connection yet); NULL out of memory. */
struct rchk *
repo_check_open(const struct config *cfg)
{
	struct rchk	*r;
	size_t		 i;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->ntables = -1;
	r->defs[CSTMT_TABLES].sql = "SELECT TABLE_NAME FROM "
	    "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()";
	r->defs[CSTMT_SERVER].sql = "SELECT VERSION()";
	r->defs[CSTMT_GRANTS].sql = "SHOW GRANTS FOR CURRENT_USER()";
	r->defs[CSTMT_SCHEMA].sql =
	    "SELECT COALESCE(MAX(version), 0) FROM " T_VER;
	/* the newest endpoints' secrets, to try the key on */
	r->defs[CSTMT_SEALED].sql = "SELECT tenant_id, secret_sealed FROM "
	    T_WEP " ORDER BY id DESC LIMIT ?";
	for (i = 0; i < NPROBES; i++)
		r->defs[CSTMT__PROBES + i].sql = probes[i].sql;
	if ((r->db = db_new(cfg, r->defs, CSTMT__PROBES + NPROBES, 0,
	    0)) == NULL) {
		free(r);
		return NULL;
	}
	db_quiet(r->db);	/* the check says why it cannot connect */
	return r;
}

void
repo_check_close(struct rchk *r)
{
	if (r == NULL)
		return;
	db_free(r->db);
	free(r);
}

/* Connects; REPO_OK, or REPO_ERR with *err the client or server error. */
enum repo_rc
repo_check_connect(struct rchk *r, unsigned *err)
{
	*err = 0;
	if (db_ready(r->db) == 0)
		return REPO_OK;
	*err = db_errno(r->db);
	return REPO_ERR;
}

/* Runs text statement id and copies its first row's first column. */
static enum repo_rc
first_text(struct rchk *r, int id, char *out, size_t outsz)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	out[0] = '\0';
	if ((st = db_run(r->db, id, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, out, outsz);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	db_rstr(&c, 0, out, outsz);
	return rc == DB_ROW ? REPO_OK : REPO_ERR;
}

/* The server's VERSION() into out. REPO_OK or REPO_ERR. */
enum repo_rc
repo_check_server(struct rchk *r, char *out, size_t outsz)
{
	return first_text(r, CSTMT_SERVER, out, outsz);
}

/* Reads the database's table names once; 0 or -1. */
static int
tables_read(struct rchk *r)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	char		 name[TABLE_LEN];
	int		 rc;

	if (r->ntables >= 0)
		return 0;
	if ((st = db_run(r->db, CSTMT_TABLES, NULL)) == NULL)
		return -1;
	r->ntables = 0;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, name, sizeof(name));
	while ((rc = db_fetch_row(st, &c)) == DB_ROW && r->ntables < MAX_TABLES) {
		db_rstr(&c, 0, name, sizeof(name));
		memcpy(r->tables[r->ntables++], name, sizeof(name));
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? -1 : 0;
}

/* Whether table t exists (1), not (0), or -1 on error. */
static int
table_exists(struct rchk *r, const char *t)
{
	int	 i;

	if (tables_read(r) == -1)
		return -1;
	for (i = 0; i < r->ntables; i++)
		if (strcmp(r->tables[i], t) == 0)
			return 1;
	return 0;
}

/* Whether any table of the schema (s2r_) is seen. */
static int
any_table(const struct rchk *r)
{
	int	 i;

	for (i = 0; i < r->ntables; i++)
		if (strncmp(r->tables[i], "s2r_", 4) == 0)
			return 1;
	return 0;
}

/*
 * Runs probe i: PROBE_OK (allowed), PROBE_DENIED (the privilege is
 * missing), PROBE_NOTABLE (no such table) or PROBE_ERR; *err gets the
 * error number. A table the user holds no privilege on is not in
 * information_schema either: it is taken for missing only when behind
 * (the schema is known to be older than this build's, which the schema
 * check says); else the probe runs, and the server refuses it (1142).
 */
enum probe_rc
repo_check_probe(struct rchk *r, size_t i, int behind, unsigned *err)
{
	MYSQL_STMT	*st;
	int		 rc;

	*err = 0;
	if ((rc = table_exists(r, probes[i].def.table)) == -1)
		return PROBE_ERR;
	if (rc == 0 && behind)
		return PROBE_NOTABLE;
	if ((st = db_run(r->db, (int)(CSTMT__PROBES + i), NULL)) != NULL) {
		mysql_stmt_free_result(st);
		return PROBE_OK;
	}
	*err = db_errno(r->db);
	if (*err == ER_NO_SUCH_TABLE)
		return PROBE_NOTABLE;
	return *err == ER_TABLEACCESS_DENIED_ERROR ||
	    *err == ER_COLUMNACCESS_DENIED_ERROR ? PROBE_DENIED : PROBE_ERR;
}

/* What to do about connect error e (repo_check_connect). */
const char *
repo_check_advice(unsigned e)
{
	switch (e) {
	case ER_ACCESS_DENIED_ERROR:
		return "access denied: check db_user and the password";
	case ER_BAD_DB_ERROR:
		return "no such database: create db_name (CREATE DATABASE)";
	case ER_DBACCESS_DENIED_ERROR:
		return "the user may not use db_name: GRANT it the privileges";
	case 2002: case 2003: case 2005: case 2006: case 2013:
		return "server not reachable: check db_socket, db_host, "
		    "db_port and that the server runs";
	default:
		return db_connect_hint(e) != NULL ? db_connect_hint(e) :
		    "check the db_* settings and the server's log";
	}
}


/* Calls fn(arg, line) for each line of SHOW GRANTS. REPO_OK/ERR. */
enum repo_rc
repo_check_grants(struct rchk *r, void (*fn)(void *, const char *),
    void *arg)
{
	static char	 line[8192];
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	if ((st = db_run(r->db, CSTMT_GRANTS, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, line, sizeof(line));
	if (mysql_stmt_bind_result(st, c.b) != 0) {
		mysql_stmt_free_result(st);
		return REPO_ERR;
	}
	/* a truncated line keeps its start: the privileges and the target */
	while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
		db_rstr(&c, 0, line, sizeof(line));
		fn(arg, line);
	}
	mysql_stmt_free_result(st);
	return rc == MYSQL_NO_DATA ? REPO_OK : REPO_ERR;
}

/* The recorded schema version (0: never migrated). REPO_OK or ERR. */
enum repo_rc
repo_check_schema(struct rchk *r, int *version)
{
	MYSQL_STMT	*st;
	struct db_cols	 c;
	int		 rc;

	*version = 0;
	/* not seen: never migrated, unless other tables are (no privilege on
	 * it: the statement fails) */
	if ((rc = table_exists(r, T_VER)) == -1)
		return REPO_ERR;
	if (rc == 0 && !any_table(r))
		return REPO_OK;
	if ((st = db_run(r->db, CSTMT_SCHEMA, NULL)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_LONG, version, 0);
	rc = db_fetch_row(st, &c);
	mysql_stmt_free_result(st);
	return rc == DB_ROW ? REPO_OK : REPO_ERR;
}

/*
 * The sealed secrets of the max newest endpoints into out, *n of them
 * (0: none, or no endpoint table yet). REPO_OK or REPO_ERR.
 */
enum repo_rc
repo_check_sealed(struct rchk *r, struct repo_sealed *out, size_t max,
    size_t *n)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[1];
	struct db_cols	 c;
	struct repo_sealed s;
	unsigned	 lim = (unsigned)max;
	int		 rc;

	*n = 0;
	if ((rc = table_exists(r, T_WEP)) != 1)
		return rc == 0 ? REPO_OK : REPO_ERR;
	db_bind_u32(&p[0], &lim);
	if ((st = db_run(r->db, CSTMT_SEALED, p)) == NULL)
		return REPO_ERR;
	db_rcol(&c, 0, MYSQL_TYPE_STRING, s.tenant, sizeof(s.tenant));
	db_rcol(&c, 1, MYSQL_TYPE_BLOB, s.sealed, sizeof(s.sealed));
	rc = DB_ROW_NONE;
	while (*n < max && (rc = db_fetch_row(st, &c)) == DB_ROW) {
		db_rstr(&c, 0, s.tenant, sizeof(s.tenant));
		s.len = c.null[1] ? 0 : c.len[1];
		out[(*n)++] = s;
	}
	mysql_stmt_free_result(st);
	return rc == DB_ROW_ERR ? REPO_ERR : REPO_OK;
}
