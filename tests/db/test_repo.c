/*
 * Repository tests against the real MariaDB (ASYNCEXEC_TEST_CONFIG).
 *
 * Each run uses its own route names, so runs are independent. Time is
 * passed to the repository explicitly, so a lapsed lease is simulated by
 * claiming "later" rather than by sleeping; lease_order checks the claim
 * order of a lapsed lease and of a requeue.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "auth.h"
#include "check.h"
#include "claim_race.h"
#include "config.h"
#include "crypto.h"
#include "db.h"
#include "handlers.h"
#include "json.h"
#include "lookup.h"
#include "repo.h"
#include "repo_admin.h"
#include "util/side.h"

static struct config	 cfg;
static struct db	*db;
static char		 env[24], svc[] = "svc", tenant[40];
static char		 ckey[64], ckey2[64];	/* consumer keys of tenant */
static char		 okey[64];		/* consumer key, other tenant */

/* Runs one SQL statement through a side connection (fixtures only). */
static void
raw_sql(const char *q)
{
	MYSQL	*m = mysql_init(NULL);

	side_isolation(m);
	if (mysql_real_connect(m, cfg.db_socket[0] ? NULL : cfg.db_host,
	    cfg.db_user, cfg.db_password, cfg.db_name, cfg.db_port,
	    cfg.db_socket[0] ? cfg.db_socket : NULL, 0) == NULL ||
	    mysql_query(m, q) != 0) {
		fprintf(stderr, "raw_sql: %s: %s\n", q, mysql_error(m));
		exit(1);
	}
	mysql_close(m);
}

/* Creates a consumer key for tenant t into out. */
static void
make_key(const char *t, char *out)
{
	unsigned char	 h[SHA256_LEN];
	uint64_t	 id;

	CHECK(crypto_new_secret("ak_", out, 64, h) == 0);
	CHECK(repo_key_add(db, 0, t, "test", h, clock_now_ms(), &id) == REPO_OK);
}

/* The callbacks' compare-and-set: 1 won, 0 lost, -1 error. */
static int
finish(uint64_t id, const unsigned char *tok, enum exec_status to,
    const char *p, size_t n, int64_t now)
{
	int	 rc = repo_finalize(db, id, tok, to, p, n, now);

	return rc == REPO_OK ? 1 : rc == REPO_NOTFOUND ? 0 : -1;
}

static void
setup(void)
{
	const char	*path = getenv("ASYNCEXEC_TEST_CONFIG");
	char		 err[512], other[48];

	if (path == NULL) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG is not set: run "
		    "scripts/test.sh\n");
		exit(1);
	}
	if (config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	snprintf(env, sizeof(env), "repo%ld%d", (long)getpid(), rand() % 1000);
	snprintf(tenant, sizeof(tenant), "t-%s", env);
	snprintf(other, sizeof(other), "o-%s", env);
	if ((db = repo_open(&cfg, 0)) == NULL || repo_ping(db) != REPO_OK) {
		fprintf(stderr, "cannot reach the database\n");
		exit(1);
	}
	CHECK(repo_route_add(db, env, svc, "op", 7, clock_now_ms()) == REPO_OK);
	CHECK(repo_route_add(db, env, svc, "op", 7, clock_now_ms()) == REPO_DUP);
	make_key(tenant, ckey);
	make_key(tenant, ckey2);
	make_key(other, okey);
}

/* Writes the sealed id (SEALED_B64_LEN characters) in front of tok. */
static void
seal(uint64_t id, char *tok)
{
	unsigned char	 key[IDKEY_LEN];
	char		 s[SEALED_B64_LEN + 1];
	size_t		 len = 0;

	CHECK(repo_secret_get(db, "poll_token_id_key", key, sizeof(key),
	    &len) == REPO_OK && len == IDKEY_LEN);
	CHECK(crypto_id_seal(key, id, s) == 0);
	memcpy(tok, s, SEALED_B64_LEN);
}

/*
 * A token naming a key version above every one the worker read makes it
 * read the keys again (a rotation since: idkeys_read moves), at most once
 * per second however many such tokens come; a version not above them
 * (unknown or retired) reads nothing.
 */
static void
idkey_reread(struct app *app)
{
	unsigned	 v = POLL_KEY_VERSIONS - 1;	/* never made here */

	CHECK(lookup_idkey_open(app, app->idkey_version));
	CHECK(!app->pkey[v].present && app->idkey_top < v);
	app->idkeys_read = 1;
	CHECK(!lookup_idkey_open(app, v) && app->idkeys_read > 1);
	app->idkeys_read = 1;
	CHECK(!lookup_idkey_open(app, v) && app->idkeys_read == 1);
	CHECK(!lookup_idkey_open(app, v) && app->idkeys_read == 1);
	app->idkeys_forced -= 1000;		/* a second later */
	CHECK(!lookup_idkey_open(app, v) && app->idkeys_read > 1);
	app->idkeys_read = 1;
	app->idkeys_forced = 0;
	app->idkey_top = v;
	CHECK(!lookup_idkey_open(app, v - 1) && app->idkeys_read == 1);
}

/*
 * The poll-token key of migration 3: 16 bytes, read once into the app;
 * an unknown name is not found; a value longer than the buffer is an
 * error (db_fetch_row refuses a truncated column), never cut.
 */
static void
idkey_rules(void)
{
	struct app	 app = { .cfg = &cfg, .db = db };
	unsigned char	 key[IDKEY_LEN], small[8];
	size_t		 len = 0;

	CHECK(repo_secret_get(db, "poll_token_id_key", key, sizeof(key),
	    &len) == REPO_OK && len == IDKEY_LEN);
	CHECK(repo_secret_get(db, "no_such_secret", key, sizeof(key),
	    &len) == REPO_NOTFOUND);
	CHECK(repo_secret_get(db, "poll_token_id_key", small, sizeof(small),
	    &len) == REPO_ERR);
	CHECK(!app.idkey_ok && lookup_idkey(&app) == REPO_OK && app.idkey_ok);
	CHECK(memcmp(app.idkey, key, IDKEY_LEN) == 0);
	idkey_reread(&app);
}

/* Inserts an execution (cid) for key k of tenant t; returns its token. */
static void
submit(const char *t, const char *k, const char *op, const char *cid,
    char tok[POLL_TOKEN_LEN + 1])
{
	struct exec_new	 n;
	struct key_row	 kr;
	uint64_t	 nid = 0;

	memset(&n, 0, sizeof(n));
	n.cid = cid;
	n.env = env;
	n.svc = svc;
	n.op = op;
	n.tenant = t;
	n.request = "{\"b\":1,\"a\":9007199254740993}";
	n.request_len = strlen(n.request);
	crypto_sha256(n.request, n.request_len, n.request_sha);
	crypto_sha256(k, strlen(k), n.key_hash);
	/* as submit: the initiator's lineage identity (sql/007) */
	CHECK(repo_key_by_hash(db, n.key_hash, &kr) == REPO_OK);
	auth_lineage(&kr, n.lineage);
	CHECK(crypto_new_secret("", tok + SEALED_B64_LEN, SECRET_B64_LEN + 1,
	    n.poll_hash) == 0);
	/* a second ago: a claim at a "now" read before this call finds it
	 * due (claim reads due_at <= now, sql/011) */
	n.now = clock_now_ms() - 1000;
	n.expires_at = n.now + 86400000;
	CHECK(repo_exec_insert(db, &n, &nid) == REPO_OK);
	CHECK(nid > 0);
	seal(nid, tok);
	CHECK(repo_exec_insert(db, &n, &nid) == REPO_DUP);
}

/* view_find as poll would call it: key k, token tok, id cid. */
static enum herr
find(const char *k, const char *tok, const char *cid, struct exec_row *r)
{
	struct app	 app = { .cfg = &cfg, .db = db };
	struct req	 req;
	char		 auth[80];
	enum herr	 e;

	memset(&req, 0, sizeof(req));
	snprintf(auth, sizeof(auth), "Bearer %s", k);
	req.authorization = auth;
	req.poll_token = (char *)(uintptr_t)tok;
	req.env = env;
	req.svc = svc;
	req.op = "op";
	req.cid = cid;
	e = view_find(&app, &req, r);
	return e;
}

static void
lookup_rules(void)
{
	char		 tok[POLL_TOKEN_LEN + 1], tok2[POLL_TOKEN_LEN + 1];
	struct exec_row	 r;

	submit(tenant, ckey, "op", "look-1", tok);
	CHECK(find(ckey, tok, "look-1", &r) == HERR_OK);
	CHECK_EQ_STR(r.cid, "look-1");
	CHECK(r.status == ST_WAITING && !r.claimed && r.attempts == 0);
	exec_row_free(&r);
	/* the bare secret (the token form before schema 3) finds nothing:
	 * it would need a lookup by correlation id, a timing oracle */
	CHECK(find(ckey, tok + SEALED_B64_LEN, "look-1", &r) ==
	    HERR_NOT_FOUND);
	/* another secret behind the right sealed id */
	memcpy(tok2, tok, sizeof(tok2));
	crypto_new_secret("", tok2 + SEALED_B64_LEN, SECRET_B64_LEN + 1,
	    (unsigned char[32]){0});
	CHECK(find(ckey, tok2, "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey, tok2 + SEALED_B64_LEN, "look-1", &r) ==
	    HERR_NOT_FOUND);
	/* the right secret behind a forged, a foreign or a missing id */
	memcpy(tok2, tok, sizeof(tok2));
	tok2[3] = tok2[3] == 'A' ? 'B' : 'A';
	CHECK(find(ckey, tok2, "look-1", &r) == HERR_NOT_FOUND);
	submit(tenant, ckey, "op", "look-3", tok2);
	memcpy(tok2 + SEALED_B64_LEN, tok + SEALED_B64_LEN, SECRET_B64_LEN);
	CHECK(find(ckey, tok2, "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey, tok2, "look-3", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey, tok + 1, "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey, "", "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey2, tok, "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(okey, tok, "look-1", &r) == HERR_NOT_FOUND);
	CHECK(find(ckey, tok, "look-2", &r) == HERR_NOT_FOUND);
	CHECK(find("ak_unknownunknownunknownunknownunknownunknownx", tok,
	    "look-1", &r) == HERR_UNAUTHORIZED);
	/* rows from older systems: NULL hashes are never returned */
	submit(tenant, ckey, "op", "legacy-1", tok);
	raw_sql("UPDATE s2r_async_execution SET poll_token_hash = NULL "
	    "WHERE correlation_id = 'legacy-1'");
	CHECK(find(ckey, tok, "legacy-1", &r) == HERR_NOT_FOUND);
	submit(tenant, ckey, "op", "legacy-2", tok);
	raw_sql("UPDATE s2r_async_execution SET initiator_key_hash = NULL "
	    "WHERE correlation_id = 'legacy-2'");
	CHECK(find(ckey, tok, "legacy-2", &r) == HERR_NOT_FOUND);
	submit(tenant, ckey, "op", "legacy-3", tok);
	raw_sql("UPDATE s2r_async_execution SET initiator_tenant_id = NULL "
	    "WHERE correlation_id = 'legacy-3'");
	CHECK(find(ckey, tok, "legacy-3", &r) == HERR_NOT_FOUND);
}

/* Claims at most max from op at time now; returns how many. */
static size_t
claim(const char *op, unsigned max, int64_t now, struct claim_item **it)
{
	size_t	 n = 0;

	CHECK(repo_claim(db, env, svc, op, max, 60, 5, now, it, &n) == REPO_OK);
	return n;
}

static void
finalize_once(void)
{
	char		 tok[POLL_TOKEN_LEN + 1];
	unsigned char	 h[SHA256_LEN], stale[SHA256_LEN];
	struct claim_item *it;
	struct exec_row	 r;
	int64_t		 now = clock_now_ms();
	uint64_t	 id;

	submit(tenant, ckey, "fin", "fin-1", tok);
	CHECK(claim("fin", 10, now, &it) == 1);
	CHECK(it[0].attempt == 1);
	CHECK(strcmp(it[0].request, "{\"b\":1,\"a\":9007199254740993}") == 0);
	id = it[0].id;
	crypto_sha256(it[0].token, strlen(it[0].token), stale);
	claim_free(it, 1);
	CHECK(claim("fin", 10, now, &it) == 0);		/* lease is live */
	claim_free(it, 0);
	/* 61 s later the 60 s lease has lapsed: re-claim, attempt 2 */
	CHECK(claim("fin", 10, now + 61000, &it) == 1);
	CHECK(it[0].id == id && it[0].attempt == 2);
	crypto_sha256(it[0].token, strlen(it[0].token), h);
	claim_free(it, 1);
	CHECK(repo_heartbeat(db, id, stale, now + 120000) == REPO_NOTFOUND);
	CHECK_EQ_INT(finish(id, stale, ST_COMPLETED, "1", 1, now), 0);
	CHECK(repo_heartbeat(db, id, h, now + 120000) == REPO_OK);
	CHECK_EQ_INT(finish(id, h, ST_COMPLETED, "1.10", 4, now), 1);
	CHECK_EQ_INT(finish(id, h, ST_COMPLETED, "2", 1, now), 0);
	CHECK_EQ_INT(finish(id, h, ST_FAILED, "{}", 2, now), 0);
	CHECK_EQ_INT(finish(id + 100000, h, ST_FAILED, "{}", 2, now), 0);
	CHECK(repo_exec_by_id(db, id, now, &r) == REPO_OK);
	CHECK(r.status == ST_COMPLETED && r.result_len == 4 &&
	    memcmp(r.result, "1.10", 4) == 0 && r.completed_at == now);
	exec_row_free(&r);
	CHECK(repo_exec_cancel(db, id, MARK_ASK, now) == REPO_NOTFOUND);
	CHECK(repo_exec_request_cancel(db, id, now) == REPO_NOTFOUND);
}

/* The first column of the first row of query q on a side connection. */
static long
raw_long(const char *q)
{
	MYSQL		*m = mysql_init(NULL);
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	long		 v = -1;

	side_isolation(m);
	CHECK(mysql_real_connect(m, cfg.db_socket[0] ? NULL : cfg.db_host,
	    cfg.db_user, cfg.db_password, cfg.db_name, cfg.db_port,
	    cfg.db_socket[0] ? cfg.db_socket : NULL, 0) != NULL);
	if (mysql_query(m, q) == 0 && (res = mysql_store_result(m)) != NULL) {
		if ((w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
			v = strtol(w[0], NULL, 10);
		mysql_free_result(res);
	}
	mysql_close(m);
	return v;
}

/* 1 when execution id's due_at is what expression want gives on its row */
static int
due_is(uint64_t id, const char *want)
{
	char	 q[256];

	snprintf(q, sizeof(q), "SELECT COUNT(*) FROM s2r_async_execution "
	    "WHERE id = %llu AND due_at = %s", (unsigned long long)id, want);
	return raw_long(q) == 1;
}

/*
 * A held execution is due when its lease ends (repo_sql.h LEASE_DUE):
 * claim and heartbeat set due_at to the lease's end, so once the lease
 * lapses the execution queues behind work due before that end; an
 * operator's requeue puts it back in its place, due when submitted.
 */
static void
lease_order(void)
{
	char		 tok[POLL_TOKEN_LEN + 1];
	unsigned char	 h[SHA256_LEN];
	struct claim_item *it;
	struct adb	*a;
	int64_t		 now = clock_now_ms();
	uint64_t	 first, later;

	submit(tenant, ckey, "lease", "lease-1", tok);
	CHECK(claim("lease", 1, now, &it) == 1);
	first = it[0].id;
	claim_free(it, 1);
	CHECK(due_is(first, "lease_expires_at"));
	submit(tenant, ckey, "lease", "lease-2", tok);
	/* the lease lapsed: due at its end, after lease-2, due at its submit */
	CHECK(claim("lease", 1, now + 61000, &it) == 1);
	later = it[0].id;
	CHECK(later != first && it[0].attempt == 1);
	claim_free(it, 1);
	CHECK(claim("lease", 1, now + 61000, &it) == 1);
	CHECK(it[0].id == first && it[0].attempt == 2);
	crypto_sha256(it[0].token, strlen(it[0].token), h);
	claim_free(it, 1);
	CHECK(repo_heartbeat(db, first, h, now + 300000) == REPO_OK);
	CHECK(due_is(first, "lease_expires_at"));
	CHECK(claim("lease", 1, now + 200000, &it) == 1);	/* lease-2's lapsed */
	CHECK(it[0].id == later);
	claim_free(it, 1);
	CHECK(claim("lease", 1, now + 200000, &it) == 0);	/* first's lives */
	claim_free(it, 0);
	a = repo_admin_open(&cfg);
	CHECK(a != NULL);
	if (a != NULL) {
		CHECK(repo_exec_requeue(a, first, now, cfg.max_attempts) ==
		    REPO_OK);
		repo_admin_close(a);
	}
	CHECK(due_is(first, "created_at"));
	CHECK(claim("lease", 1, now + 200000, &it) == 1);
	CHECK(it[0].id == first && it[0].attempt == 3);
	claim_free(it, 1);
}

/*
 * Submits cid on route op (key ckey), claims it and ends it as to with
 * payload p (n bytes), after a progress report when progress is set;
 * tok gets the poll token, pf what its poller presents.
 */
static void
ended(const char *op, const char *cid, enum exec_status to, const char *p,
    size_t n, int progress, char *tok, struct poll_proof *pf)
{
	struct claim_item *it;
	struct key_row	 kr;
	unsigned char	 h[SHA256_LEN];
	int64_t		 now = clock_now_ms();

	submit(tenant, ckey, op, cid, tok);
	CHECK(claim(op, 1, now, &it) == 1);
	crypto_sha256(it[0].token, strlen(it[0].token), h);
	if (progress)
		CHECK(repo_heartbeat_progress(db, it[0].id, h, now + 60000,
		    "7", 1, now) == REPO_OK);
	CHECK_EQ_INT(finish(it[0].id, h, to, p, n, now), 1);
	claim_free(it, 1);
	crypto_sha256(ckey, strlen(ckey), pf->key);
	CHECK(repo_key_by_hash(db, pf->key, &kr) == REPO_OK);
	auth_lineage(&kr, pf->lineage);
	crypto_sha256(tok + SEALED_B64_LEN, SECRET_B64_LEN, pf->token);
}

/* The id that poll token tok seals. */
static uint64_t
unseal(const char *tok)
{
	unsigned char	 key[IDKEY_LEN];
	size_t		 len = 0;
	uint64_t	 id = 0;

	CHECK(repo_secret_get(db, "poll_token_id_key", key, sizeof(key),
	    &len) == REPO_OK && len == IDKEY_LEN);
	CHECK(crypto_id_open(key, tok, &id) == 0);
	return id;
}

/*
 * Migration 15: a callback's payload of at most REPO_INLINE_MAX bytes
 * comes with the poll's row (r.payloads), only where the poller's
 * token and key hashes match in the statement; a larger one, one of an
 * execution with progress, and any payload for a wrong token do not
 * (the handler reads them in a second statement, or answers 404).
 */
static void
inline_payload(void)
{
	static char	 big[REPO_INLINE_MAX + 2];
	char		 tok[POLL_TOKEN_LEN + 1];
	struct poll_proof pf, wrong;
	struct exec_row	 r;

	CHECK_EQ_INT(raw_long("SELECT CHARACTER_MAXIMUM_LENGTH FROM "
	    "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
	    "TABLE_NAME = 's2r_async_execution' AND "
	    "COLUMN_NAME = 'payload_inline'"), REPO_INLINE_MAX);
	memset(big, '7', sizeof(big) - 1);
	/* exactly REPO_INLINE_MAX bytes, completed: with the row */
	ended("inl", "inl-1", ST_COMPLETED, big, REPO_INLINE_MAX, 0, tok, &pf);
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-1", &pf, &r) == REPO_OK);
	CHECK(r.payloads && r.status == ST_COMPLETED &&
	    r.result_len == REPO_INLINE_MAX &&
	    memcmp(r.result, big, REPO_INLINE_MAX) == 0 && r.error == NULL);
	exec_row_free(&r);
	/* the same row for a wrong token, or another key: no payload */
	wrong = pf;
	wrong.token[0] ^= 1;
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-1", &wrong, &r) == REPO_OK);
	CHECK(!r.payloads && r.result == NULL);
	exec_row_free(&r);
	wrong = pf;
	wrong.lineage[0] ^= 1;
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-1", &wrong, &r) == REPO_OK);
	CHECK(!r.payloads && r.result == NULL);
	exec_row_free(&r);
	/* a row without a lineage (before sql/007): read in a second
	 * statement, the key hash compared by view_find */
	raw_sql("UPDATE s2r_async_execution SET initiator_lineage = NULL "
	    "WHERE correlation_id = 'inl-1'");
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-1", &pf, &r) == REPO_OK);
	CHECK(!r.payloads && r.result == NULL && r.lineage_null);
	exec_row_free(&r);
	/* one byte more: not with the row */
	ended("inl", "inl-2", ST_COMPLETED, big, REPO_INLINE_MAX + 1, 0, tok,
	    &pf);
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-2", &pf, &r) == REPO_OK);
	CHECK(!r.payloads && r.result == NULL && r.status == ST_COMPLETED);
	exec_row_free(&r);
	/* a failure's error object */
	ended("inl", "inl-3", ST_FAILED, "{\"message\":\"m\"}", 15, 0, tok,
	    &pf);
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-3", &pf, &r) == REPO_OK);
	CHECK(r.payloads && r.status == ST_FAILED && r.error_len == 15 &&
	    memcmp(r.error, "{\"message\":\"m\"}", 15) == 0);
	exec_row_free(&r);
	/* progress reported: the poll needs it too, so none comes alone */
	ended("inl", "inl-4", ST_COMPLETED, "5", 1, 1, tok, &pf);
	CHECK(repo_exec_poll(db, unseal(tok), tenant, env, svc, "inl",
	    "inl-4", &pf, &r) == REPO_OK);
	CHECK(!r.payloads && r.has_progress && r.result == NULL);
	exec_row_free(&r);
}

static void
cancel_rules(void)
{
	char		 tok[POLL_TOKEN_LEN + 1];
	struct claim_item *it;
	struct exec_row	 r;
	int64_t		 now = clock_now_ms();

	submit(tenant, ckey, "can", "can-1", tok);
	CHECK(find(ckey, tok, "can-1", &r) == HERR_NOT_FOUND);	/* op differs */
	CHECK(claim("can", 1, now, &it) == 1);
	CHECK(repo_exec_cancel(db, it[0].id, MARK_ASK, now) == REPO_NOTFOUND);
	CHECK(repo_exec_request_cancel(db, it[0].id, now) == REPO_OK);
	CHECK(repo_exec_by_id(db, it[0].id, now, &r) == REPO_OK);
	CHECK(r.cancel_requested && r.claimed && r.status == ST_WAITING);
	exec_row_free(&r);
	/* cancel-requested: never handed out again, even after the lease */
	claim_free(it, 1);
	CHECK(claim("can", 1, now + 61000, &it) == 0);
	claim_free(it, 0);
	submit(tenant, ckey, "can", "can-2", tok);
	CHECK(claim("can", 1, now, &it) == 1);
	CHECK(repo_exec_cancel(db, it[0].id, MARK_ASK, now + 61000) == REPO_OK);
	claim_free(it, 1);
}

/*
 * RACE_THREADS claimers race for a pool of RACE_POOL (claim_race.h),
 * half of it held at first by another transaction: each execution is
 * handed out once, none twice, none lost, and no claim fails. The ids
 * are one auto-increment over every test that inserts meanwhile
 * (http_scale beside this one), so they are neither contiguous nor
 * within any span of the first.
 */
static void
concurrent_claims(void)
{
	char		 tok[POLL_TOKEN_LEN + 1], cid[32];
	uint64_t	 ids[RACE_POOL];
	struct exec_row	 r;
	int		 i, total = 0;

	for (i = 0; i < RACE_POOL; i++) {
		snprintf(cid, sizeof(cid), "race-%d", i);
		submit(tenant, ckey, "race", cid, tok);
		CHECK(repo_exec_by_key(db, tenant, env, svc, "race", cid,
		    clock_now_ms(), &r) == REPO_OK);
		ids[i] = r.id;
		exec_row_free(&r);
	}
	race_run(&cfg, env, svc, "race", ids);
	for (i = 0; i < RACE_POOL; i++)
		total += race.claimed[i];
	printf("figure: %d claimers, %d claims empty while work remained\n",
	    RACE_THREADS, race.empty);
	CHECK_EQ_INT(race.errs, 0);
	CHECK_EQ_INT(race.dups, 0);
	CHECK_EQ_INT(total, RACE_POOL);
}

/*
 * Two migrates never both apply: while another session holds the
 * migration lock, migrate waits lock_wait seconds, then answers
 * REPO_BUSY having applied nothing (it used to go on without the lock).
 */
static void
migrate_lock(void)
{
	struct db	*holder = repo_open(&cfg, 0), *mig = repo_open_migrate(&cfg);
	const char	*failed = "";
	int		 applied = -1, version = -1;
	enum repo_cause	 cause;

	CHECK(holder != NULL && repo_migrate_lock(holder, 0) == REPO_OK);
	CHECK_EQ_INT(repo_migrate(mig, 0, 1, &applied, &version,
	    &failed, &cause), REPO_BUSY);
	CHECK_EQ_INT(applied, 0);
	repo_migrate_unlock(holder);
	CHECK_EQ_INT(repo_migrate(mig, 0, 1, &applied, &version,
	    &failed, &cause), REPO_OK);
	CHECK_EQ_INT(applied, 0);
	CHECK_EQ_INT(version, SCHEMA_VERSION);
	CHECK(failed == NULL);
	/* and the lock is free again afterwards */
	CHECK(repo_migrate_lock(holder, 0) == REPO_OK);
	repo_migrate_unlock(holder);
	repo_close(holder);
	repo_close(mig);
}

/*
 * The admin's main handle (repo_open, not eager: asyncexec-admin's)
 * refuses a multi-statement string: the server sees one statement and
 * answers 1064, nothing of it runs (it used to run both). The
 * migration handle (repo_open_migrate) runs it.
 */
static void
multi_statements(void)
{
	static const char	 two[] = "DO 1; DO 2";
	struct db		*mig = repo_open_migrate(&cfg);
	unsigned		 e;

	CHECK_EQ_INT(db_script(db, two, sizeof(two) - 1), -1);
	e = db_errno(db);
	printf("figure: \"%s\" on the admin's main connection: %s (error "
	    "%u)\n", two, e == 1064 ? "refused" : "RUN", e);
	CHECK_EQ_INT(e, 1064);
	CHECK(mig != NULL && db_script(mig, two, sizeof(two) - 1) == 0);
	repo_close(mig);
}

int
main(void)
{
	mysql_library_init(0, NULL, NULL);
	srand((unsigned)getpid());
	setup();
	idkey_rules();
	lookup_rules();
	finalize_once();
	lease_order();
	inline_payload();
	cancel_rules();
	concurrent_claims();
	migrate_lock();
	multi_statements();
	repo_close(db);
	mysql_library_end();
	return check_done("db_repo");
}
