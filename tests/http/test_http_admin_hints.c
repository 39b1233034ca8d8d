/*
 * test_http_admin_hints.c - what asyncexec-admin tells an operator to do
 * when a command fails, against a scratch database made through the test
 * server's root account:
 *  - migrate run as the service's user (SELECT, INSERT, UPDATE, DELETE
 *    only) says that user lacks migrate's privileges and names the
 *    migrate configuration, and every "run migrate" hint names it too;
 *  - migrate with a db_name its user has no rights on (a typo: the
 *    server refuses the connect, 1044) says to check db_name in the
 *    file it ran with, not that the user lacks a privilege, nor to run
 *    it with the migrate configuration (that said both);
 *  - tenant set and poll-key rotate give the schema hint only for a
 *    missing table or column, else the server's error as is (a missing
 *    privilege is no schema to migrate): "run asyncexec-admin check",
 *    which names each privilege the binary lacks, table by table;
 *  - a configuration file that cannot be read says what to do;
 *  - a user at its MAX_USER_CONNECTIONS: the hint names the limit, and
 *    check says it once.
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin_run.h"
#include "admin_conf.h"

#define MIGRATE_CMD	"asyncexec-admin --config " \
	"/etc/asyncexec/migrate.conf migrate"

static char dir[256], sql_sock[256], scratch[64], svc[400], ro[400];

/* Runs SQL as the test server's root over its unix socket; 0 or -1. */
static int
root_sql(const char *sql)
{
	char sockarg[300];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot", sockarg,
	    "-N", "-e", (char *)(uintptr_t)sql, NULL };

	snprintf(sockarg, sizeof sockarg, "--socket=%s", sql_sock);
	if (run_v(argv) != 0) {
		fprintf(stderr, "  mariadb -e \"%s\" failed: %s\n", sql, err);
		return -1;
	}
	return 0;
}

/*
 * A user NAME_<pid> with password pw1 and PRIVS on the scratch database
 * (@localhost for a socket, @127.0.0.1 for TCP: the cluster stack), and
 * a configuration file at path for it.
 */
static void
make_user(const char *name, const char *privs, char *path, size_t sz)
{
	char sql[1000], extra[600], pw[400];

	snprintf(sql, sizeof sql, "CREATE USER '%s_%s'@'localhost' IDENTIFIED "
	    "BY 'pw1'; CREATE USER '%s_%s'@'127.0.0.1' IDENTIFIED BY 'pw1'; "
	    "GRANT %s ON %s.* TO '%s_%s'@'localhost'; GRANT %s ON %s.* TO "
	    "'%s_%s'@'127.0.0.1'", name, scratch + 18, name, scratch + 18,
	    privs, scratch, name, scratch + 18, privs, scratch, name,
	    scratch + 18);
	CHECK(root_sql(sql) == 0);
	snprintf(pw, sizeof pw, "%s/pw-%s", dir, name);
	CHECK(write_text(pw, "pw1\n", 0600) == 0);
	snprintf(path, sz, "%s/%s.conf", dir, name);
	snprintf(extra, sizeof extra, "db_name = %s\ndb_user = %s_%s\n"
	    "db_password_file = %s\n", scratch, name, scratch + 18, pw);
	CHECK(derive(path, extra) == 0);
}

static void
drop_user(const char *name)
{
	char sql[300];

	snprintf(sql, sizeof sql, "DROP USER '%s_%s'@'localhost', "
	    "'%s_%s'@'127.0.0.1'", name, scratch + 18, name, scratch + 18);
	CHECK(root_sql(sql) == 0);
}

/*
 * The service's user on an empty database: migrate says what it lacks
 * and which configuration to run it with; check and tenant set (no
 * table yet) name that command.
 */
static void
test_migrate_as_service(void)
{
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", svc), 1);
	CHECK(strstr(err, "lacks a privilege migrate needs: CREATE, ALTER, "
	    "INDEX, REFERENCES") != NULL &&
	    strstr(err, "--config /etc/asyncexec/migrate.conf") != NULL);
	CHECK(strstr(err, "schema version unknown") == NULL);
	if (strstr(err, "schema version unknown") != NULL)
		fprintf(stderr, "  migrate said: %s\n", err);
	CHECK_EQ_INT(run("asyncexec-admin", "check --config %s", svc), 1);
	CHECK(strstr(out, "error schema: version 0") != NULL &&
	    strstr(out, "run " MIGRATE_CMD) != NULL);
	/* its DDL warning names the user to migrate as */
	CHECK(strstr(out, "lacks; GRANT them, or migrate as another user (run "
	    MIGRATE_CMD ")") != NULL);
	/* no table: 1146, the schema hint, with the command that works */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s tenant set t1 "
	    "--max-open 3", svc), 1);
	CHECK(strstr(err, "run " MIGRATE_CMD) != NULL);
	if (strstr(err, "run " MIGRATE_CMD) == NULL)
		fprintf(stderr, "  tenant set said: %s\n", err);
}

/*
 * migrate with the service's configuration, its db_name mistyped: the
 * server refuses the connect (1044, no rights on that database); the
 * login hint, naming the file in use, and no privilege advice.
 */
static void
test_migrate_wrong_db(void)
{
	char	 path[400], extra[800], pw[400];

	snprintf(pw, sizeof pw, "%s/pw-svc", dir);
	snprintf(path, sizeof path, "%s/typo.conf", dir);
	snprintf(extra, sizeof extra, "db_name = %s_typo\ndb_user = svc_%s\n"
	    "db_password_file = %s\n", scratch, scratch + 18, pw);
	CHECK(derive(path, extra) == 0);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", path), 1);
	CHECK(strstr(err, "Access denied") != NULL);
	CHECK(strstr(err, "check db_name, db_user and db_password") != NULL);
	CHECK(strstr(err, path) != NULL);
	CHECK(strstr(err, "lacks a privilege") == NULL);
	CHECK(strstr(err, "Run it with") == NULL &&
	    strstr(err, "--config /etc/asyncexec/migrate.conf") == NULL);
	fprintf(stderr, "  migrate (db_name typo) said: %s\n", err);
}

/*
 * A user that may only read, on the migrated database: tenant set and
 * poll-key rotate fail on the privilege, and say so, not "migrate".
 */
static void
test_denied_not_schema(void)
{
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s tenant set t1 "
	    "--max-open 3", ro), 1);
	CHECK(strstr(err, "denied") != NULL && strstr(err, "migrate") == NULL);
	if (strstr(err, "migrate") != NULL)
		fprintf(stderr, "  tenant set said: %s\n", err);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s poll-key rotate", ro),
	    1);
	CHECK(strstr(err, "denied") != NULL &&
	    strstr(err, "schema at version") == NULL);
	if (strstr(err, "schema at version") != NULL)
		fprintf(stderr, "  poll-key rotate said: %s\n", err);
	/* the service's user may write the quota */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s tenant set t1 "
	    "--max-open 3", svc), 0);
}

/*
 * A user with every privilege, table by table, on the tables but
 * s2r_tenant (none) and s2r_webhook_delivery (no SELECT): tenant set
 * fails and sends the operator to check, which must name what is lacking
 * (it said every privilege was held: a loop); fcgi reads both tables
 * (the quotas, the dashboard's pages), expire neither. A table the user
 * holds nothing on is not in information_schema: not taken for missing.
 */
static void
test_denied_check(void)
{
	static const char *const t[] = { "route", "api_key",
	    "backend_key_route", "async_execution", "secret", "schema_version",
	    "job_run", "webhook_endpoint", "route_outcome", "rollup_mark",
	    "webhook_delivery" };
	const size_t n = sizeof(t) / sizeof(t[0]);
	const char *host[] = { "localhost", "127.0.0.1" };
	char sql[400], cfg[400];
	size_t i, h;

	make_user("tbl", "USAGE", cfg, sizeof cfg);
	for (h = 0; h < 2; h++)
		for (i = 0; i < n; i++) {
			snprintf(sql, sizeof sql, "GRANT %s ON %s.s2r_%s TO "
			    "'tbl_%s'@'%s'", i + 1 < n ? "SELECT, INSERT, "
			    "UPDATE, DELETE" : "INSERT, UPDATE, DELETE", scratch,
			    t[i], scratch + 18, host[h]);
			CHECK(root_sql(sql) == 0);
		}
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s tenant set t1 "
	    "--max-open 3", cfg), 1);
	CHECK(strstr(err, "run asyncexec-admin check") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "check --config %s", cfg), 1);
	CHECK(strstr(out, "lacks SELECT on s2r_tenant") != NULL &&
	    strstr(out, "lacks INSERT on s2r_tenant") != NULL &&
	    strstr(out, "lacks UPDATE on s2r_tenant") != NULL);
	if (strstr(out, "lacks INSERT on s2r_tenant") == NULL)
		fprintf(stderr, "  check said: %s\n", out);
	CHECK_EQ_INT(run("asyncexec-fcgi", "--config %s --check-config", cfg),
	    1);
	CHECK(strstr(out, "lacks SELECT on s2r_tenant") != NULL &&
	    strstr(out, "lacks SELECT on s2r_webhook_delivery") != NULL);
	CHECK_EQ_INT(run("asyncexec-expire", "--config %s --check-config",
	    cfg), 1);
	CHECK(strstr(out, "s2r_tenant") == NULL &&
	    strstr(out, "lacks SELECT on s2r_webhook_delivery") != NULL);
	/* nothing on s2r_schema_version either: no "version 0, migrate" */
	for (h = 0; h < 2; h++) {
		snprintf(sql, sizeof sql, "REVOKE ALL ON %s.s2r_schema_version "
		    "FROM 'tbl_%s'@'%s'", scratch, scratch + 18, host[h]);
		CHECK(root_sql(sql) == 0);
	}
	CHECK_EQ_INT(run("asyncexec-admin", "check --config %s", cfg), 1);
	CHECK(strstr(out, "cannot read s2r_schema_version") != NULL &&
	    strstr(out, "lacks SELECT on s2r_schema_version") != NULL &&
	    strstr(out, "version 0") == NULL);
	drop_user("tbl");
}

/*
 * A user at its MAX_USER_CONNECTIONS (MariaDB says 1226, naming the
 * resource): the hint names the limit, and check says it once.
 */
static void
test_user_limit(void)
{
	char cfg[400], sql[600], extra[600], sock[300], u[80];
	int64_t end = ut_now_ms() + 10000;
	pid_t pid;

	snprintf(u, sizeof u, "-uone_%s", scratch + 18);
	snprintf(sql, sizeof sql, "CREATE USER '%s'@'localhost' IDENTIFIED BY "
	    "'pw1' WITH MAX_USER_CONNECTIONS 1; GRANT SELECT ON %s.* TO "
	    "'%s'@'localhost'", u + 2, scratch, u + 2);
	CHECK(root_sql(sql) == 0);
	snprintf(sock, sizeof sock, "--socket=%s", sql_sock);
	if ((pid = fork()) == 0) {	/* holds the user's one connection */
		execl("/usr/bin/mariadb", "mariadb", "--no-defaults", u,
		    "-ppw1", sock, "-e", "DO SLEEP(60)", (char *)NULL);
		_exit(127);
	}
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM "
	    "information_schema.PROCESSLIST WHERE USER = '%s'", u + 2);
	while (root_sql(sql) == 0 && out[0] != '1' && ut_now_ms() < end)
		ut_pause_ms(50);
	CHECK(out[0] == '1');
	snprintf(cfg, sizeof cfg, "%s/one.conf", dir);
	snprintf(extra, sizeof extra, "db_name = %s\ndb_user = %s\n"
	    "db_password_file = %s/pw-one\n", scratch, u + 2, dir);
	snprintf(sql, sizeof sql, "%s/pw-one", dir);
	CHECK(write_text(sql, "pw1\n", 0600) == 0);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list", cfg),
	    1);
	CHECK(strstr(err, "MAX_USER_CONNECTIONS") != NULL &&
	    strstr(err, "the server runs") == NULL);
	if (strstr(err, "MAX_USER_CONNECTIONS") == NULL)
		fprintf(stderr, "  asyncexec-admin said: %s\n", err);
	CHECK_EQ_INT(run("asyncexec-admin", "check --config %s", cfg), 1);
	CHECK(strstr(out, "error 1226, ") != NULL &&
	    strstr(out, "MAX_USER_CONNECTIONS") != NULL &&
	    strstr(err, "cannot connect") == NULL);
	if (strstr(out, "error 1226, ") == NULL)
		fprintf(stderr, "  asyncexec-admin check said: %s\n", out);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(sql, sizeof sql, "DROP USER '%s'@'localhost'", u + 2);
	CHECK(root_sql(sql) == 0);
}

/* A configuration file that cannot be read: what to do, not just why. */
static void
test_config_unreadable(void)
{
	char path[400];

	snprintf(path, sizeof path, "%s/missing.conf", dir);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list", path), 2);
	CHECK(strstr(err, "No such file") != NULL &&
	    strstr(err, "--config FILE") != NULL);
	if (strstr(err, "--config FILE") == NULL)
		fprintf(stderr, "  asyncexec-admin said: %s\n", err);
	if (getuid() != 0) {	/* as root a mode of 0 does not stop the read */
		snprintf(path, sizeof path, "%s/closed.conf", dir);
		CHECK(write_text(path, "db_name = x\n", 0) == 0);
		CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list",
		    path), 2);
		CHECK(strstr(err, "Permission denied") != NULL &&
		    strstr(err, "group asyncexec") != NULL);
	}
}

int
main(void)
{
	const char *admin_bin;
	char sql[300], cfg[400], extra[200];

	http_test_init();
	admin_bin = test_env("ASYNCEXEC_ADMIN");
	snprintf(bindir, sizeof bindir, "%.*s",
	    (int)(strrchr(admin_bin, '/') - admin_bin), admin_bin);
	snprintf(dir, sizeof dir, "/tmp/test_http_admin_hints.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(sql_sock, sizeof sql_sock, "%s", conf_value("db_socket"));
	snprintf(scratch, sizeof scratch, "asyncexec_scratch_h%ld",
	    (long)getpid());
	test_config_unreadable();
	if (sql_sock[0] == '\0') {
		fprintf(stderr, "the test config has no db_socket: no scratch "
		    "database\n");
		CHECK(sql_sock[0] != '\0');
		return check_done("http_admin_hints");
	}
	snprintf(sql, sizeof sql, "CREATE DATABASE %s; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'localhost'; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'127.0.0.1'", scratch, scratch, scratch);
	CHECK(root_sql(sql) == 0);
	make_user("svc", "SELECT, INSERT, UPDATE, DELETE", svc, sizeof svc);
	make_user("ro", "SELECT", ro, sizeof ro);
	test_migrate_as_service();
	test_migrate_wrong_db();
	/* the test's own user holds migrate's privileges */
	snprintf(cfg, sizeof cfg, "%s/owner.conf", dir);
	snprintf(extra, sizeof extra, "db_name = %s\n", scratch);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", cfg), 0);
	test_denied_not_schema();
	test_denied_check();
	if (conf_value("db_hosts")[0] == '\0')	/* one server */
		test_user_limit();
	drop_user("svc");
	drop_user("ro");
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", scratch);
	CHECK(root_sql(sql) == 0);
	snprintf(sql, sizeof sql, "rm -rf '%s'", dir);
	if (system(sql) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_done("http_admin_hints");
}
