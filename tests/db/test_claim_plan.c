/*
 * The claim's statements as the repository sends them (src/repo/repo_stmts.c:
 * STMT_CLAIM_IDS, STMT_CLAIM_LOCK, STMT_CLAIM_LEASES; the text read from repo_stmts, not
 * a copy) on the real MariaDB (ASYNCEXEC_TEST_CONFIG).
 *
 * Plans: EXPLAINed with KEYS consumer keys in s2r_api_key. The ids are read without
 * locks as ranges of ix_exec_claim (type range), without a filesort; the locking select
 * reads the executions by primary key (eq_ref) behind the JSON array of ids (table j,
 * the only table read whole). No sort, no temporary table, and no other table of any
 * part of a statement is scanned (type ALL), the lineage check on the keys included: a
 * claim's read of ids examines many entries, and a scan of the keys per entry made each
 * claim cost that times the number of keys. The lease UPDATE has the placeholders of
 * CLAIM_LEASE_ROWS executions and reads them by primary key. No statement of
 * repo_stmts that locks (FOR UPDATE) names ix_exec_claim. Prints the plans. The
 * list's statements the same way: a range of ix_exec_list (or ix_exec_list_status)
 * read backwards; a rotated key's (_OF) probe each entry's submitting key by
 * uq_api_key_hash (LIST_SEEN), never a scan of the keys.
 *
 * Live leases: a route of its own with LEASED claimed executions (lease an hour ahead)
 * and two due, unclaimed ones; the read of the ids (STMT_CLAIM_IDS) returns the two,
 * the first first. Held as a claim holds them (due at the lease's end, repo_sql.h
 * LEASE_DUE), their entries are not read at all: the session's Handler_icp_attempts
 * grows by at most a few, not by LEASED. Held as an earlier 0.3 left them (due a
 * minute ago, ahead of the two), the lease test of the entries ahead ran on the index
 * entries (sql/014: index condition pushdown): Handler_icp_match grows by at most a
 * few, not by LEASED (each entry whose row had to be read to see its lease).
 * The lock by ids keeps its array's order and stops at its limit. While another
 * transaction holds the first due one, repo_claim of the route hands out the second;
 * then the first; then none.
 *
 * Pages: behind the live leases, 100 due ones whose first 90 another transaction holds:
 * the claim's first read of ids (68 for a claim of one) holds nothing it can lock,
 * and its next pages reach due-91 (none without them).
 *
 * Neighbours: two routes next to each other in ix_exec_claim, one due execution each.
 * A claim of the first holds its transaction open after its locking select
 * (STMT_CLAIM_LOCK); meanwhile repo_claim of the second must hand out the second's
 * execution. A locking range scan locks the first entry past its range, the neighbour's
 * head, and SKIP LOCKED made the neighbour's claim come back empty while its work waited
 * (http_examples_worker beside the other claims of the suite, in .ci/run).
 *
 * Fixtures: a fixture connection (side_open, as every test's) changes another route's
 * rows in a statement that reads the whole table (FORCE INDEX (PRIMARY): the plan the
 * optimizer picks when those rows are most of a small table, as http_schedule's 20,000
 * are) and holds its transaction open; meanwhile repo_claim of a route must hand out its
 * due execution. Under REPEATABLE READ the statement kept a lock on every row it read
 * until COMMIT, and the claims of tests running beside it (http_examples_worker) came
 * back empty; the fixtures' READ COMMITTED (tests/util/side.h) keeps only the rows
 * changed.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "db_fixture.h"
#include "repo_sql.h"

#define KEYS		2000
#define KEYS_STEP	200
#define LEASED		2000
#define HELD_END	"UTC_TIMESTAMP(3) + INTERVAL 1 HOUR"	/* their lease */
#define DUE_MANY	100	/* due ones behind them (check_pages) */
#define DUE_HELD	90	/* of which another transaction holds the first */

static struct config	 cfg;
static MYSQL		*side;
static char		 label[32];
static char		 env[32] = "'plan'";	/* quoted, for the placeholders */
static char		 svc[32] = "'svc'";	/* quoted; the route's service */
static char		 ids[64] = "'[1]'";	/* quoted; the JSON array of ids */
static char		 limit[8] = "10";

/* the placeholders that are not times, by the text before them; any other ? is now */
static const struct {
	const char	*before;
	const char	*value;
} vals[] = {
	{ "LIMIT ", limit },
	{ "OFFSET ", "0" },
	{ "JSON_TABLE(", ids },
	{ "attempts < ", "5" },
	{ "priority <= ", "9" },
	{ "environment = ", env },
	{ "service_key = ", svc },
	{ "operation_key = ", "'op'" },
	{ "initiator_lineage = ", "UNHEX(SHA2('lineage:1', 256))" },	/* list */
	{ "status = ", "'failed'" },
	{ "id < ", "18446744073709551615" },
	{ ") <= ", "1" },
};

/*
 * prefix and sql into q with each ? replaced by its value (vals[], else the database's
 * UTC now). 0, or -1 when q is too small.
 */
static int
fill_text(const char *prefix, const char *sql, char *q, size_t len)
{
	size_t		 i, n = (size_t)snprintf(q, len, "%s", prefix);
	const char	*v;

	for (; *sql != '\0'; sql++) {
		if (*sql != '?') {
			if (n + 1 >= len)
				return -1;
			q[n++] = *sql;
			continue;
		}
		v = "UTC_TIMESTAMP(3)";
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			if (n >= strlen(vals[i].before) && strncmp(q + n -
			    strlen(vals[i].before), vals[i].before,
			    strlen(vals[i].before)) == 0)
				v = vals[i].value;
		if (n + strlen(v) >= len)
			return -1;
		memcpy(q + n, v, strlen(v));
		n += strlen(v);
	}
	q[n] = '\0';
	return 0;
}

/* One row of an EXPLAIN, the columns the checks read ("" for NULL). */
struct plan_row {
	const char	*table, *type, *key, *extra;
};

/* A check of one row of statement id's plan, with its argument. */
typedef void	(*row_check)(enum stmt id, const struct plan_row *r, void *arg);

/*
 * EXPLAIN of statement id: prints every row of the plan, checks that none sorts
 * (filesort) or makes a temporary table, and calls check(id, row, arg) on it.
 * The number of rows.
 */
static int
walk_plan(enum stmt id, row_check check, void *arg)
{
	static char	 q[16384];
	struct plan_row	 r;
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	int		 rows = 0;

	CHECK_EQ_INT(fill_text("EXPLAIN ", repo_stmts[id].sql, q, sizeof(q)), 0);
	side_sql(side, q);
	res = mysql_store_result(side);
	CHECK(res != NULL && mysql_num_fields(res) >= 10);
	/* id select_type table type possible_keys key key_len ref rows Extra */
	while (res != NULL && (w = mysql_fetch_row(res)) != NULL) {
		r.table = w[2] ? w[2] : "", r.type = w[3] ? w[3] : "";
		r.key = w[5] ? w[5] : "", r.extra = w[9] ? w[9] : "";
		printf("%s plan: %s %s, type %s, key %s, extra %s\n",
		    repo_stmts[id].name, w[1] ? w[1] : "", r.table, r.type,
		    r.key, r.extra);
		rows++;
		CHECK(strstr(r.extra, "filesort") == NULL);
		CHECK(strstr(r.extra, "temporary") == NULL);
		check(id, &r, arg);
	}
	mysql_free_result(res);
	return rows;
}

/* A row of a claim's plan (check_plan): only j scanned; e by its index. */
static void
claim_row(enum stmt id, const struct plan_row *r, void *arg)
{
	int	*claim = arg;

	CHECK(strcmp(r->type, "ALL") != 0 || strcmp(r->table, "j") == 0);
	if (strcmp(r->table, "e") == 0) {
		(*claim)++;
		CHECK_EQ_STR(r->type, id == STMT_CLAIM_IDS ? "range" : "eq_ref");
		CHECK_EQ_STR(r->key, id == STMT_CLAIM_LOCK ? "PRIMARY" :
		    "ix_exec_claim");
	}
}

/* EXPLAIN of statement id: checks every row of the plan and prints it. */
static void
check_plan(enum stmt id)
{
	int	 claim = 0;

	CHECK(walk_plan(id, claim_row, &claim) >= 1);
	CHECK_EQ_INT(claim, 1);
}

/* A row of a list's plan (check_list_plan): counts the executions read by the index, k
 * by its key hash. */
struct list_plan {
	const char	*index;
	int		 e, k;
};

static void
list_row(enum stmt id, const struct plan_row *r, void *arg)
{
	struct list_plan *p = arg;

	(void)id;
	CHECK(strcmp(r->type, "ALL") != 0);
	p->e += (strcmp(r->table, "e") == 0 ||
	    strcmp(r->table, "s2r_async_execution") == 0) &&
	    strcmp(r->key, p->index) == 0 &&
	    strcmp(r->type, "range") == 0;
	p->k += strcmp(r->table, "k") == 0 && strcmp(r->key, "uq_api_key_hash") == 0;
}

/*
 * EXPLAIN of list statement id: one range of index (read backwards: no filesort), and
 * for a rotated key's statements (keyed) each entry's submitting key by uq_api_key_hash
 * (LIST_SEEN), never a scan of the keys.
 */
static void
check_list_plan(enum stmt id, const char *index, int keyed)
{
	struct list_plan p = { index, 0, 0 };

	CHECK(walk_plan(id, list_row, &p) >= 1);
	CHECK_EQ_INT(p.e, 1);
	CHECK_EQ_INT(p.k, keyed);
}

/* No statement that locks what it reads (FOR UPDATE) names ix_exec_claim (see the top). */
static void
check_no_locking_scan(void)
{
	int	 id, locking = 0;

	for (id = 0; id < STMT__MAX; id++) {
		if (strstr(repo_stmts[id].sql, "FOR UPDATE") == NULL)
			continue;
		locking++;
		if (strstr(repo_stmts[id].sql, "ix_exec_claim") != NULL)
			printf("%s locks and names ix_exec_claim\n", repo_stmts[id].name);
		CHECK(strstr(repo_stmts[id].sql, "ix_exec_claim") == NULL);
	}
	printf("locking statements: %d, none names ix_exec_claim\n", locking);
	CHECK(locking >= 1);
}

/*
 * The claim's lease UPDATE (STMT_CLAIM_LEASES): CLAIM_LEASE_ROWS WHEN pairs, the lease
 * and CLAIM_LEASE_ROWS ids, so 3 * CLAIM_LEASE_ROWS + 1 placeholders; EXPLAINed (every
 * placeholder 1), the rows are read by primary key (a range of the ids), not scanned.
 */
static void
check_leases(void)
{
	static char	 q[16384];
	const char	*p = repo_stmts[STMT_CLAIM_LEASES].sql;
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	size_t		 n = 0, qn = (size_t)snprintf(q, sizeof(q), "EXPLAIN ");

	for (; *p != '\0' && qn + 2 < sizeof(q); p++) {
		n += *p == '?';
		q[qn++] = *p == '?' ? '1' : *p;
	}
	q[qn] = '\0';
	CHECK_EQ_INT((int)n, 3 * CLAIM_LEASE_ROWS + 1);
	side_sql(side, q);
	res = mysql_store_result(side);
	w = res != NULL ? mysql_fetch_row(res) : NULL;
	CHECK(w != NULL && w[3] != NULL && w[5] != NULL);
	if (w != NULL && w[3] != NULL && w[5] != NULL) {
		printf("%s plan: type %s, key %s\n", repo_stmts[STMT_CLAIM_LEASES].name,
		    w[3], w[5]);
		CHECK_EQ_STR(w[3], "range");
		CHECK_EQ_STR(w[5], "PRIMARY");
	}
	mysql_free_result(res);
}

/* The session's status counter name. */
static long long
status(const char *name)
{
	char		 q[128];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	long long	 v = -1;

	snprintf(q, sizeof(q), "SHOW SESSION STATUS LIKE '%s'", name);
	side_sql(side, q);
	res = mysql_store_result(side);
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[1] != NULL)
		v = atoll(w[1]);
	mysql_free_result(res);
	return v;
}

/*
 * The correlation ids that repo_claim of route env/service/op (up to max, at most 2)
 * hands out, in its order and comma-separated ("none" when none), its claim committed.
 */
static const char *
claim_max(const char *service, unsigned max)
{
	static char	 cids[2 * (CID_MAX_LEN + 1)];
	struct claim_item *it = NULL;
	struct db	*db = repo_open(&cfg, 0);
	char		 bare[32];
	size_t		 n = 0, i, len = 0;

	snprintf(bare, sizeof(bare), "%.*s", (int)strlen(env) - 2, env + 1);
	snprintf(cids, sizeof(cids), "none");
	CHECK(db != NULL && repo_claim(db, bare, service, "op", max, 60, 5,
	    clock_now_ms(), &it, &n) == REPO_OK);
	for (i = 0; i < n && len < sizeof(cids); i++)
		len += (size_t)snprintf(cids + len, sizeof(cids) - len, "%s%s",
		    i > 0 ? "," : "", it[i].cid);
	claim_free(it, n);
	repo_close(db);
	return cids;
}

/* The correlation id of what a claim of one of service gets, or "none". */
static const char *
claim_one(const char *service)
{
	return claim_max(service, 1);
}

/*
 * The claim's lock (STMT_CLAIM_LOCK) keeps the order of its array of ids, and
 * reads no id past its limit: due-2 before due-1 (id1) when the array says so, and
 * only due-2 with the limit 1, while a claim gets due-1 (then made claimable again).
 */
static void
check_lock_order(const char *id1)
{
	static char	 q[16384];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	char		 got[64] = "";
	int		 i;

	snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE environment = "
	    "%s AND correlation_id = 'due-2'", env);
	side_sql(side, q);
	res = mysql_store_result(side);
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
		snprintf(ids, sizeof(ids), "'[%.20s,%.20s]'", w[0], id1);
	mysql_free_result(res);
	for (i = 0; i < 2; i++) {
		snprintf(limit, sizeof(limit), i == 0 ? "10" : "1");
		side_sql(side, "START TRANSACTION");
		CHECK_EQ_INT(fill_text("", repo_stmts[STMT_CLAIM_LOCK].sql, q,
		    sizeof(q)), 0);
		side_sql(side, q);
		res = mysql_store_result(side);
		got[0] = '\0';
		while (res != NULL && (w = mysql_fetch_row(res)) != NULL)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			    got[0] ? " " : "", w[1] ? w[1] : "NULL");
		mysql_free_result(res);
		printf("lock by ids [due-2, due-1], limit %s: %s\n", limit, got);
		CHECK_EQ_STR(got, i == 0 ? "due-2 due-1" : "due-2");
		/* due-1, past the limit, was not locked: a claim gets it */
		if (i == 1)
			CHECK_EQ_STR(claim_one("svc"), "due-1");
		side_sql(side, "ROLLBACK");
	}
	/* due-1's claim dropped, as a requeue drops one */
	snprintf(q, sizeof(q), "UPDATE s2r_async_execution SET callback_token_hash = NULL, "
	    "lease_expires_at = NULL, " DUE_RESTORED ", attempts = 0 WHERE id = %s", id1);
	side_sql(side, q);
	snprintf(ids, sizeof(ids), "'[1]'");
	snprintf(limit, sizeof(limit), "10");
}

/*
 * Starts a transaction on side that holds DUE_HELD of route pages' due executions (by
 * primary key, each id named), those after the first skip in claim order.
 */
static void
hold_due(int skip)
{
	static char	 q[16384];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	size_t		 len;

	snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE environment = %s "
	    "AND service_key = 'pages' AND correlation_id LIKE 'due-%%' ORDER BY due_at, id "
	    "LIMIT %d OFFSET %d", env, DUE_HELD, skip);
	side_sql(side, q);
	res = mysql_store_result(side);
	len = (size_t)snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE "
	    "id IN (0");
	while (res != NULL && (w = mysql_fetch_row(res)) != NULL && len + 24 < sizeof(q))
		len += (size_t)snprintf(q + len, sizeof(q) - len, ",%.20s", w[0]);
	mysql_free_result(res);
	snprintf(q + len, sizeof(q) - len, ") FOR UPDATE");
	side_sql(side, "START TRANSACTION");
	side_sql(side, q);
	res = mysql_store_result(side);
	CHECK(res != NULL && mysql_num_rows(res) == DUE_HELD);
	mysql_free_result(res);
}

/*
 * Pages: LEASED live leases ahead of DUE_MANY due executions whose first DUE_HELD another
 * transaction holds (hold_due). The claim's first read of ids (4 x 1 + 16 of them: all
 * held) yields nothing it can lock, and its next page (4 times as many ids) must reach
 * due-(DUE_HELD + 1); without next pages the claim was empty, and with next pages no
 * larger than the first it ran out of statements before. Then, due-1 claimed and the
 * DUE_HELD after due-2 held, a claim of 2 locks due-2 from its first read and must leave
 * it out of its next read, which reads from the head again: locked a second time by its
 * own transaction (SKIP LOCKED skips only others' locks), it would be handed out twice,
 * and the claim would fail on its lease UPDATE (as it did with that check removed).
 */
static void
check_pages(void)
{
	static char	 q[2048];
	const char	*got;
	char		 want[64];

	snprintf(q, sizeof(q), "INSERT INTO s2r_async_execution (correlation_id, "
	    "environment, service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, initiator_key_hash, poll_token_hash, "
	    "callback_token_hash, attempts, lease_expires_at, created_at, updated_at, "
	    "expires_at, due_at) SELECT IF(seq > %d, CONCAT('due-', seq - %d), "
	    "CONCAT('leased-', seq)), %s, 'pages', 'op', 'waiting_callback', '{}', "
	    "UNHEX(SHA2(seq, 256)), 'plan', UNHEX(SHA2('k', 256)), UNHEX(SHA2(CONCAT('p', "
	    "seq), 256)), IF(seq > %d, NULL, UNHEX(SHA2('cb', 256))), seq <= %d, IF(seq > "
	    "%d, NULL, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR), UTC_TIMESTAMP(3), "
	    "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 1 DAY, UTC_TIMESTAMP(3) - "
	    "INTERVAL 1 MINUTE + INTERVAL seq MICROSECOND FROM seq_1_to_%d", LEASED, LEASED,
	    env, LEASED, LEASED, LEASED, LEASED + DUE_MANY);
	side_sql(side, q);
	hold_due(0);
	snprintf(want, sizeof(want), "due-%d", DUE_HELD + 1);
	got = claim_one("pages");
	printf("pages: %d of %d due ones held behind %d live leases, the claim got %s\n",
	    DUE_HELD, DUE_MANY, LEASED, got);
	CHECK_EQ_STR(got, want);
	side_sql(side, "ROLLBACK");
	CHECK_EQ_STR(claim_one("pages"), "due-1");
	hold_due(1);	/* due-3 on, but for due-(DUE_HELD + 1), claimed above */
	snprintf(want, sizeof(want), "due-2,due-%d", DUE_HELD + 4);
	got = claim_max("pages", 2);
	printf("pages: due-2 free, the next %d held, a claim of 2 got %s\n", DUE_HELD, got);
	CHECK_EQ_STR(got, want);
	side_sql(side, "ROLLBACK");
	snprintf(q, sizeof(q), "DELETE FROM s2r_async_execution WHERE environment = %s",
	    env);
	side_sql(side, q);
}

/*
 * LEASED live leases and two due executions (see the top), the leased ones due at due
 * (SQL), written as such (an UPDATE of due_at would leave their old entries in the
 * range, delete-marked, until purge): when a claim or heartbeat leaves them, at the
 * lease's end (HELD_END), the read of ids reads none of their entries; when an earlier
 * 0.3 left them due in the past, it tests their leases on the entries. It runs first
 * on its route: no entry of a deleted row lies in its range then.
 */
static void
check_live_leases(const char *due)
{
	static char	 q[16384];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	long long	 icp, read;
	char		 got[64] = "", first[64];
	int		 moved = strcmp(due, HELD_END) == 0;

	snprintf(q, sizeof(q), "INSERT INTO s2r_async_execution (correlation_id, "
	    "environment, service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, initiator_key_hash, poll_token_hash, "
	    "callback_token_hash, attempts, lease_expires_at, created_at, updated_at, "
	    "expires_at, due_at) SELECT IF(seq > %d, CONCAT('due-', seq - %d), "
	    "CONCAT('leased-', seq)), %s, "
	    "'svc', 'op', 'waiting_callback', '{}', UNHEX(SHA2(seq, 256)), 'plan', "
	    "UNHEX(SHA2('k', 256)), UNHEX(SHA2(CONCAT('p', seq), 256)), IF(seq > %d, NULL, "
	    "UNHEX(SHA2('cb', 256))), seq <= %d, IF(seq > %d, NULL, " HELD_END "), "
	    "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 1 DAY, "
	    "IF(seq > %d, UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE, %s) FROM seq_1_to_%d",
	    LEASED, LEASED, env, LEASED, LEASED, LEASED, LEASED, due, LEASED + 2);
	side_sql(side, q);
	icp = status("Handler_icp_match");
	read = status("Handler_icp_attempts");
	CHECK_EQ_INT(fill_text("", repo_stmts[STMT_CLAIM_IDS].sql, q, sizeof(q)), 0);
	side_sql(side, q);
	res = mysql_store_result(side);
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
		snprintf(got, sizeof(got), "%s", w[0]);
	CHECK(res != NULL && mysql_num_rows(res) == 2);
	mysql_free_result(res);
	icp = status("Handler_icp_match") - icp;
	read = status("Handler_icp_attempts") - read;
	snprintf(first, sizeof(first), "%s", got[0] != '\0' ? got : "0");
	snprintf(q, sizeof(q), "SELECT correlation_id FROM s2r_async_execution WHERE "
	    "id = %s", first);
	side_sql(side, q);
	res = mysql_store_result(side);
	got[0] = '\0';
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
		snprintf(got, sizeof(got), "%s", w[0]);
	mysql_free_result(res);
	printf("live leases due at %s: %d, the ids read got %s, Handler_icp_attempts "
	    "+%lld, Handler_icp_match +%lld\n", due, LEASED, got, read, icp);
	CHECK_EQ_STR(got, "due-1");
	CHECK(icp >= 1 && icp <= 5);
	if (moved)
		CHECK(read >= 1 && read <= 5);
	check_lock_order(first);
	/* the claim skips what another transaction holds and goes on */
	snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE id = %s FOR "
	    "UPDATE", first);
	side_sql(side, "START TRANSACTION");
	side_sql(side, q);
	mysql_free_result(mysql_store_result(side));
	CHECK_EQ_STR(claim_one("svc"), "due-2");
	side_sql(side, "ROLLBACK");
	CHECK_EQ_STR(claim_one("svc"), "due-1");
	CHECK_EQ_STR(claim_one("svc"), "none");
	snprintf(q, sizeof(q), "DELETE FROM s2r_async_execution WHERE environment = %s",
	    env);
	side_sql(side, q);
}

/*
 * One due, unclaimed execution (correlation id cid) on route env/service/op, for
 * the neighbours.
 */
static void
add_due(const char *service, const char *cid)
{
	char	 q[2048];

	snprintf(q, sizeof(q), "INSERT INTO s2r_async_execution (correlation_id, "
	    "environment, service_key, operation_key, status, request_payload, "
	    "request_sha256, initiator_tenant_id, initiator_key_hash, poll_token_hash, "
	    "attempts, created_at, updated_at, expires_at, due_at) VALUES ('%s', %s, "
	    "'%s', 'op', 'waiting_callback', '{}', UNHEX(SHA2('%s', 256)), 'plan', "
	    "UNHEX(SHA2('k', 256)), UNHEX(SHA2('p%s', 256)), 0, UTC_TIMESTAMP(3), "
	    "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 1 DAY, UTC_TIMESTAMP(3) - "
	    "INTERVAL 1 MINUTE)", cid, env, service, cid, cid);
	side_sql(side, q);
}

/* Neighbours (see the top), the first route's claim holding its select id. */
static void
check_neighbours(enum stmt id)
{
	static char	 q[16384];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	const char	*got;

	add_due("nb-a", "a-head");
	add_due("nb-b", "b-head");
	snprintf(q, sizeof(q), "SELECT id FROM s2r_async_execution WHERE environment = "
	    "%s AND correlation_id = 'a-head'", env);
	side_sql(side, q);
	res = mysql_store_result(side);
	if (res != NULL && (w = mysql_fetch_row(res)) != NULL && w[0] != NULL)
		snprintf(ids, sizeof(ids), "'[%.20s]'", w[0]);
	mysql_free_result(res);
	snprintf(svc, sizeof(svc), "'nb-a'");
	side_sql(side, "START TRANSACTION");
	CHECK_EQ_INT(fill_text("", repo_stmts[id].sql, q, sizeof(q)), 0);
	side_sql(side, q);
	res = mysql_store_result(side);
	CHECK(res != NULL && mysql_num_rows(res) == 1);
	mysql_free_result(res);
	got = claim_one("nb-b");
	printf("neighbours: %s of nb-a holds its transaction, the claim of nb-b got "
	    "%s\n", repo_stmts[id].name, got);
	CHECK_EQ_STR(got, "b-head");
	side_sql(side, "ROLLBACK");
	snprintf(svc, sizeof(svc), "'svc'");
	snprintf(ids, sizeof(ids), "'[1]'");
	snprintf(q, sizeof(q), "DELETE FROM s2r_async_execution WHERE environment = %s",
	    env);
	side_sql(side, q);
}

/* Fixtures (see the top): a side statement that scans the table, held open. */
static void
check_side_scan(void)
{
	MYSQL		*m = side_open(&cfg, NULL);
	char		 q[512];
	const char	*got;

	add_due("ss-b", "ss-head");
	side_sql(m, "START TRANSACTION");
	snprintf(q, sizeof(q), "UPDATE s2r_async_execution FORCE INDEX (PRIMARY) SET "
	    "updated_at = UTC_TIMESTAMP(3) WHERE environment = %s AND service_key = "
	    "'ss-a'", env);
	side_sql(m, q);
	got = claim_one("ss-b");
	printf("fixtures: a side UPDATE that read the whole table holds its transaction, "
	    "the claim of another route got %s\n", got);
	CHECK_EQ_STR(got, "ss-head");
	side_sql(m, "ROLLBACK");
	mysql_close(m);
	snprintf(q, sizeof(q), "DELETE FROM s2r_async_execution WHERE environment = %s",
	    env);
	side_sql(side, q);
}

int
main(void)
{
	char	 err[512], q[512];
	int	 i;

	if (getenv("ASYNCEXEC_TEST_CONFIG") == NULL || config_load(&cfg,
	    getenv("ASYNCEXEC_TEST_CONFIG"), err, sizeof(err)) == -1) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG: run scripts/test.sh\n");
		return 1;
	}
	side = side_open(&cfg, NULL);
	snprintf(label, sizeof(label), "claim-plan-%ld", (long)getpid());
	snprintf(env, sizeof(env), "'plan%ld'", (long)getpid());
	/* in statements of KEYS_STEP keys, so that other tests' key writes wait less */
	for (i = 0; i < KEYS; i += KEYS_STEP) {
		snprintf(q, sizeof(q), "INSERT INTO s2r_api_key (kind, key_hash, tenant_id, "
		    "label, created_at) SELECT 'consumer', UNHEX(SHA2(CONCAT('%s', seq), "
		    "256)), '%s', '%s', UTC_TIMESTAMP(3) FROM seq_%d_to_%d", label, label,
		    label, i + 1, i + KEYS_STEP);
		side_sql(side, q);
	}
	side_sql(side, "ANALYZE TABLE s2r_api_key");
	mysql_free_result(mysql_store_result(side));
	check_no_locking_scan();
	check_plan(STMT_CLAIM_IDS);
	check_plan(STMT_CLAIM_LOCK);
	check_list_plan(STMT_EXEC_LIST, "ix_exec_list", 0);
	check_list_plan(STMT_EXEC_LIST_STATUS, "ix_exec_list_status", 0);
	check_list_plan(STMT_EXEC_LIST_OF, "ix_exec_list", 1);
	check_list_plan(STMT_EXEC_LIST_STATUS_OF, "ix_exec_list_status", 1);
	check_leases();
	check_live_leases(HELD_END);
	check_live_leases("UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE");
	check_pages();
	check_neighbours(STMT_CLAIM_LOCK);
	check_side_scan();
	snprintf(q, sizeof(q), "DELETE FROM s2r_api_key WHERE label = '%s'", label);
	side_sql(side, q);
	mysql_close(side);
	return check_done("db_claim_plan");
}
