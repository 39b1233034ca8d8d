/*
 * asyncexec-admin's retry of a write that a lock wait timeout undid (ADMIN_TRIES in
 * src/admin/admin_cmds.c; REPO_RETRY from repo_failed), against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG) and the real binary (ASYNCEXEC_ADMIN).
 *
 * A side connection inserts the route first and keeps its transaction open, so that
 * `route add` of the same route waits on that row's lock until the connection's
 * innodb_lock_wait_timeout (10 s, src/db/db.c) ends the statement with 1205. The side
 * rolls back when the command's log says so (its first "error 1205"), not after a
 * pause. The command must then succeed (exit 0, "route ... added", one row, one timeout
 * logged, about LOCK_WAIT_S after it started). Before the retries, the first timeout was
 * its exit status 1.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "db_fixture.h"
#include "util/clock.h"

#define LOCK_WAIT_S	10	/* the connection's innodb_lock_wait_timeout */

static struct config	 cfg;
static MYSQL		*side;

/* One integer of query q on the side connection; -1 when none. */
static long long
q_one(const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 w;
	long long	 v = -1;

	side_sql(side, q);
	if ((res = mysql_store_result(side)) != NULL && (w = mysql_fetch_row(res)) != NULL &&
	    w[0] != NULL)
		v = strtoll(w[0], NULL, 10);
	mysql_free_result(res);
	return v;
}

int
main(void)
{
	char		 err[512], route[64], q[256], line[512], out[4096] = "";
	const char	*admin = getenv("ASYNCEXEC_ADMIN"), *conf;
	double		 t0, took = 0;
	int		 po[2], pe[2], st = -1, timeouts = 0;
	pid_t		 pid;
	FILE		*f;
	size_t		 n;

	conf = getenv("ASYNCEXEC_TEST_CONFIG");
	if (conf == NULL || admin == NULL || config_load(&cfg, conf, err, sizeof(err)) == -1) {
		fprintf(stderr, "ASYNCEXEC_TEST_CONFIG, ASYNCEXEC_ADMIN: run scripts/test.sh\n");
		return 1;
	}
	snprintf(route, sizeof(route), "retry%ld/svc/op", (long)getpid());
	side = side_open(&cfg, "SET time_zone = '+00:00'");
	side_sql(side, "START TRANSACTION");
	snprintf(q, sizeof(q), "INSERT INTO s2r_route (environment, service_key, "
	    "operation_key, retention_days, enabled, created_at) VALUES ('retry%ld', 'svc', "
	    "'op', 7, 1, UTC_TIMESTAMP(3))", (long)getpid());
	side_sql(side, q);
	if (pipe(po) == -1 || pipe(pe) == -1)
		return 1;
	t0 = ut_now_s();
	if ((pid = fork()) == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		execl(admin, admin, "--config", conf, "route", "add", route, (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* its log: the first 1205 ends the side's transaction, so the retry that the
	 * command sends next (or has sent) gets the row */
	f = fdopen(pe[0], "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		fputs(line, stderr);
		if (strstr(line, "error 1205 ") != NULL && timeouts++ == 0) {
			took = ut_now_s() - t0;
			side_sql(side, "ROLLBACK");
		}
	}
	if (f != NULL)
		fclose(f);
	if (timeouts == 0)
		side_sql(side, "ROLLBACK");
	n = 0;
	while (n + 1 < sizeof(out) && read(po[0], out + n, 1) == 1)
		n++;
	out[n] = '\0';
	close(po[0]);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	printf("route add: timed out once after %.1f s (%d in all), exit %d; it printed: %s",
	    took, timeouts, WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
	CHECK_EQ_INT(timeouts, 1);
	CHECK(took >= LOCK_WAIT_S - 1);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, " added (retention 7 days)") != NULL);
	snprintf(q, sizeof(q), "SELECT COUNT(*) FROM s2r_route WHERE environment = "
	    "'retry%ld'", (long)getpid());
	CHECK(q_one(q) == 1);
	snprintf(q, sizeof(q), "DELETE FROM s2r_route WHERE environment = 'retry%ld'",
	    (long)getpid());
	side_sql(side, q);
	mysql_close(side);
	return check_done("db_admin_retry");
}
