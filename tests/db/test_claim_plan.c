/*
 * The claim's statements as the repository sends them (src/repo/repo_stmts.c:
 * STMT_CLAIM_FIRST, STMT_CLAIM_TOP, STMT_CLAIM_SELECT; the text read from repo_stmts, not
 * a copy), EXPLAINed on the real MariaDB (ASYNCEXEC_TEST_CONFIG) with KEYS consumer keys
 * in s2r_api_key: the executions are read as one range of ix_exec_claim with no filesort
 * and no temporary table, and no table of any part of the statement is scanned (type
 * ALL), the lineage check on the keys included: a claim examines up to CLAIM_SCAN_ROWS
 * entries, and a scan of the keys per entry made each claim cost that times the number of
 * keys. Prints the plans.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "db_fixture.h"
#include "repo_sql.h"

#define KEYS		2000
#define KEYS_STEP	200

static struct config	 cfg;
static MYSQL		*side;
static char		 label[32];

/* the integer placeholders, by the text before them; any other ? is a time */
static const struct {
	const char	*before;
	const char	*value;
} ints[] = {
	{ "LIMIT ", "10" },
	{ "attempts < ", "5" },
	{ "priority <= ", "9" },
};

/*
 * "EXPLAIN " and sql into q with each ? replaced by a value of its kind (ints[], else a
 * time: a string the route's columns compare with as well). 0, or -1 when q is too small.
 */
static int
explain_text(const char *sql, char *q, size_t len)
{
	size_t		 i, n = (size_t)snprintf(q, len, "EXPLAIN ");
	const char	*v;

	for (; *sql != '\0'; sql++) {
		if (*sql != '?') {
			if (n + 1 >= len)
				return -1;
			q[n++] = *sql;
			continue;
		}
		v = "'2026-12-02 07:00:00.000'";
		for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
			if (n >= strlen(ints[i].before) && strncmp(q + n -
			    strlen(ints[i].before), ints[i].before,
			    strlen(ints[i].before)) == 0)
				v = ints[i].value;
		if (n + strlen(v) >= len)
			return -1;
		memcpy(q + n, v, strlen(v));
		n += strlen(v);
	}
	q[n] = '\0';
	return 0;
}

/* EXPLAIN of statement id: checks every row of the plan and prints it. */
static void
check_plan(enum stmt id)
{
	static char	 q[16384];
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	int		 rows = 0, claim = 0;

	CHECK_EQ_INT(explain_text(repo_stmts[id].sql, q, sizeof(q)), 0);
	side_sql(side, q);
	res = mysql_store_result(side);
	CHECK(res != NULL && mysql_num_fields(res) >= 10);
	/* id select_type table type possible_keys key key_len ref rows Extra */
	while (res != NULL && (w = mysql_fetch_row(res)) != NULL) {
		const char *table = w[2] ? w[2] : "", *type = w[3] ? w[3] : "";
		const char *key = w[5] ? w[5] : "", *extra = w[9] ? w[9] : "";

		printf("%s plan: %s %s, type %s, key %s, extra %s\n",
		    repo_stmts[id].name, w[1] ? w[1] : "", table, type, key, extra);
		rows++;
		CHECK(strcmp(type, "ALL") != 0);
		CHECK(strstr(extra, "filesort") == NULL);
		CHECK(strstr(extra, "temporary") == NULL);
		if (strcmp(table, "e") == 0) {
			claim++;
			CHECK_EQ_STR(type, "range");
			CHECK_EQ_STR(key, "ix_exec_claim");
		}
	}
	mysql_free_result(res);
	CHECK(rows >= 1);
	CHECK_EQ_INT(claim, 1);
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
	check_plan(STMT_CLAIM_FIRST);
	check_plan(STMT_CLAIM_TOP);
	check_plan(STMT_CLAIM_SELECT);
	snprintf(q, sizeof(q), "DELETE FROM s2r_api_key WHERE label = '%s'", label);
	side_sql(side, q);
	mysql_close(side);
	return check_done("db_claim_plan");
}
