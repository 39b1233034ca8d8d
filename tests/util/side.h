/*
 * side.h - what every fixture connection to the test stack's database sets before it
 * connects (tests/db/db_fixture.h, tests/http/sidedb.h, tests/db/test_repo.c; the
 * Python helpers pass the same statement as the client's --init-command): READ
 * COMMITTED, so that a fixture's UPDATE or DELETE keeps locks only on the rows it
 * changes. Under REPEATABLE READ a statement that reads the whole table (the
 * optimizer's plan when its rows are most of a small table) holds every row it read
 * until COMMIT, and the claims of tests running beside it skip those rows (SKIP
 * LOCKED) and come back empty (tests/db/test_claim_plan.c, fixtures). The sessions of
 * the fault and cluster tests (tests/fault/fault.c, tests/cluster/cluster.c) keep the
 * default: those tests run alone (RUN_SERIAL). Header only.
 */
#ifndef ASYNCEXEC_TEST_SIDE_H
#define ASYNCEXEC_TEST_SIDE_H

#include <mysql.h>

#define SIDE_INIT	"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"

/* Sets SIDE_INIT as m's init command (before mysql_real_connect). */
static inline void
side_isolation(MYSQL *m)
{
	mysql_options(m, MYSQL_INIT_COMMAND, SIDE_INIT);
}

#endif
