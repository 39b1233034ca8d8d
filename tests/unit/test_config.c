/* Unit tests: configuration parsing, good and bad files. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "log.h"

static void
good(void)
{
	struct config	 c;
	char		 err[256];

	CHECK(config_parse(&c, "t.conf", "", err, sizeof(err)) == 0);
	CHECK_EQ_STR(c.db_host, "127.0.0.1");
	CHECK_EQ_INT(c.db_port, 3306);
	CHECK_EQ_INT(c.max_request_bytes, 1048576);
	CHECK_EQ_INT(c.max_result_bytes, 4194304);
	CHECK_EQ_INT(c.listen_mode, 0660);
	CHECK_EQ_INT(c.max_attempts, 5);
	CHECK(config_parse(&c, "t.conf",
	    "# comment\n\n  db_host = db.example  \r\n"
	    "db_port=3307\nlisten_mode = 0600\nworkers = 3\n"
	    "max_request_bytes = 2048\nlog_level = debug\n"
	    "db_password = s3cret # not a comment\n", err, sizeof(err)) == 0);
	CHECK_EQ_STR(c.db_host, "db.example");
	CHECK_EQ_INT(c.db_port, 3307);
	CHECK_EQ_INT(c.listen_mode, 0600);
	CHECK_EQ_INT(config_workers(&c), 3);
	CHECK_EQ_INT(c.max_request_bytes, 2048);
	CHECK_EQ_INT(c.log_level, LOG_DEBUG);
	CHECK_EQ_STR(c.db_password, "s3cret # not a comment");
}

/* Expects text to fail with an error containing want. */
static void
bad(const char *text, const char *want)
{
	struct config	 c;
	char		 err[256] = "";

	CHECK(config_parse(&c, "bad.conf", text, err, sizeof(err)) == -1);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
	CHECK(strstr(err, want) != NULL);
}

static void
bad_files(void)
{
	bad("nonsense\n", "bad.conf:1: expected key = value");
	bad("\n\nfoo = 1\n", "bad.conf:3: foo: unknown key");
	bad("db_port = 0\n",
	    "bad.conf:1: db_port: expected a whole number from 1 to 65535");
	bad("db_port = 65536\n", "db_port:");
	bad("db_port = -1\n", "db_port:");
	bad("db_port = 12x\n", "db_port:");
	bad("db_port = \n", "db_port:");
	bad("listen_mode = 0999\n", "listen_mode: expected an octal mode from "
	    "0000 to 0777");
	bad("log_level = loud\n", "log_level:");
	bad("db_host = a\ndb_host = b\n", "bad.conf:2: db_host: set twice");
	/* errors found after the last line name the line of their key (of
	 * the later of two) */
	bad("db_password = x\ndb_password_file = /nonexistent\n", "bad.conf:2: "
	    "db_password_file: db_password and db_password_file are both set");
	bad("db_password_file = /x\n\ndb_password = x\n", "bad.conf:3: "
	    "db_password: db_password and db_password_file are both set");
	bad("\ndb_password_file = /nonexistent/pw\n",
	    "bad.conf:2: db_password_file: cannot open /nonexistent/pw: ");
	bad("max_request_bytes = 1\n", "max_request_bytes: expected a whole "
	    "number of bytes from 2 to 1073741824");
	bad("db_name = 12345678901234567890123456789012345678901234567890"
	    "123456789012345\n", "db_name: value too long (at most 64 bytes)");
}

static void
password_file(void)
{
	struct config	 c;
	char		 path[] = "/tmp/asyncexec-test-pw-XXXXXX", text[128];
	char		 err[256], long_pw[300];
	int		 fd;

	fd = mkstemp(path);
	CHECK(fd != -1);
	CHECK(write(fd, "pa ss\nsecond\n", 13) == 13);
	close(fd);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CHECK(config_parse(&c, "t.conf", text, err, sizeof(err)) == 0);
	CHECK_EQ_STR(c.db_password, "pa ss");
	/* a password longer than 255 bytes: the line of db_password_file */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd != -1);
	memset(long_pw, 'p', sizeof(long_pw));
	CHECK(write(fd, long_pw, sizeof(long_pw)) == (ssize_t)sizeof(long_pw));
	close(fd);
	snprintf(text, sizeof(text), "db_port = 3306\ndb_password_file = %s\n",
	    path);
	CHECK(config_parse(&c, "t.conf", text, err, sizeof(err)) == -1);
	CHECK_EQ_STR(err, "t.conf:2: db_password_file: password too long");
	unlink(path);
	CHECK(config_load(&c, "/nonexistent/asyncexec.conf", err,
	    sizeof(err)) == -1);
	CHECK(strstr(err, "/nonexistent/asyncexec.conf") != NULL);
}

/*
 * A password file that is not a regular file is refused at once, named
 * with what it is: a FIFO no one writes to (the open used to wait for
 * ever: SIGALRM ends this test then), a directory (read as an empty
 * password).
 */
static void
password_not_regular(void)
{
	struct config	 c;
	char		 dir[] = "/tmp/asyncexec-test-pwdir-XXXXXX";
	char		 fifo[64], text[128], err[512] = "";

	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/pw", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	snprintf(text, sizeof(text), "db_password_file = %s\n", fifo);
	alarm(10);
	CHECK(config_parse(&c, "t.conf", text, err, sizeof(err)) == -1);
	alarm(0);
	CHECK(strstr(err, "t.conf:1: db_password_file: ") == err &&
	    strstr(err, fifo) != NULL &&
	    strstr(err, "is a FIFO, not a regular file") != NULL);
	unlink(fifo);
	snprintf(text, sizeof(text), "db_password_file = %s\n", dir);
	CHECK(config_parse(&c, "t.conf", text, err, sizeof(err)) == -1);
	CHECK(strstr(err, "is a directory, not a regular file") != NULL);
	if (strstr(err, "not a regular file") == NULL)
		fprintf(stderr, "config_parse said: %s\n", err);
	rmdir(dir);
}

/*
 * Loads path in a child (config_load, or config_load_syntax when syntax)
 * that SIGALRM ends after 5 s, so that a load that waits for ever is a
 * failure, not a test that hangs. Results: 0 when the load returned -1
 * (its error in err), 1 when it returned 0, -1 when the child did not
 * return (the alarm: it waited).
 */
static int
load_in_child(const char *path, int syntax, char *err, size_t errsz)
{
	struct config	 c;
	int		 fds[2], st;
	pid_t		 pid;
	ssize_t		 n;
	size_t		 got = 0;

	if (pipe(fds) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(fds[0]);
		alarm(5);
		st = (syntax ? config_load_syntax : config_load)(&c, path,
		    err, errsz);
		(void)write(fds[1], err, strlen(err));
		_exit(st == -1 ? 0 : 1);
	}
	close(fds[1]);
	while (got + 1 < errsz &&
	    (n = read(fds[0], err + got, errsz - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = '\0';
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		fprintf(stderr, "loading %s did not return (waited)\n", path);
		return -1;
	}
	return WEXITSTATUS(st);
}

/*
 * A configuration file that is not a regular file is refused at once,
 * named with what it is and what to do: a FIFO no one writes to (its
 * open waited for ever, asyncexec-fcgi's start held), a directory.
 */
static void
config_not_regular(void)
{
	char		 dir[] = "/tmp/asyncexec-test-confdir-XXXXXX";
	char		 fifo[64], err[512] = "";
	int		 syntax;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/asyncexec.conf", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	for (syntax = 0; syntax <= 1; syntax++) {
		err[0] = '\0';
		CHECK_EQ_INT(load_in_child(fifo, syntax, err, sizeof(err)), 0);
		CHECK(strstr(err, fifo) == err);
		CHECK(strstr(err, "is a FIFO, not a regular file") != NULL);
		CHECK(strstr(err, "--config FILE") != NULL);
		if (strstr(err, "--config FILE") == NULL)
			fprintf(stderr, "config_load said: %s\n", err);
	}
	unlink(fifo);
	err[0] = '\0';
	CHECK_EQ_INT(load_in_child(dir, 0, err, sizeof(err)), 0);
	CHECK(strstr(err, "is a directory, not a regular file") != NULL);
	rmdir(dir);
}

/* db_hosts: the nodes in order, ports from db_port when left out. */
static void
hosts(void)
{
	struct config	 c;
	char		 err[256] = "";

	CHECK(config_parse(&c, "t.conf", "", err, sizeof(err)) == 0);
	CHECK_EQ_INT(c.db_nhosts, 0);
	CHECK_EQ_INT(c.db_sync_wait, 1);
	CHECK(config_parse(&c, "t.conf", "db_port = 3400\n"
	    "db_hosts = 127.0.0.1:3401, db-2.example,[::1]:3403  node_4\n"
	    "db_sync_wait = 0\n", err, sizeof(err)) == 0);
	CHECK_EQ_INT(c.db_nhosts, 4);
	CHECK_EQ_STR(c.db_hosts[0].host, "127.0.0.1");
	CHECK_EQ_INT(c.db_hosts[0].port, 3401);
	CHECK_EQ_STR(c.db_hosts[1].host, "db-2.example");
	CHECK_EQ_INT(c.db_hosts[1].port, 3400);
	CHECK_EQ_STR(c.db_hosts[2].host, "::1");
	CHECK_EQ_INT(c.db_hosts[2].port, 3403);
	CHECK_EQ_STR(c.db_hosts[3].host, "node_4");
	CHECK_EQ_INT(c.db_sync_wait, 0);
	bad("db_hosts = ,\n", "bad.conf:1: db_hosts: lists no node");
	bad("db_port = 1\ndb_hosts = a:0\n",
	    "bad.conf:2: db_hosts: a:0: expected host:port");
	bad("db_hosts = a:70000\n", "expected host:port");
	bad("db_hosts = a:1x\n", "expected host:port");
	bad("db_hosts = a b a\n", "a node is listed twice");
	bad("db_hosts = a:1 a:2 a:3 a:4 a:5 a:6 a:7 a:8 a:9\n",
	    "more than 8 nodes");
	bad("db_hosts = [::1\n", "closing ]");
	bad("db_hosts = [::1]x\n", "expected [address]:port");
	bad("db_hosts = a;b\n", "a host name holds");
	bad("db_hosts = :3306\n", "empty or too long host");
	bad("db_sync_wait = 16\n", "db_sync_wait:");
	bad("listen = sock\n", "bad.conf:1: listen: expected a socket path");
	bad("listen = 127.0.0.1:0\n", "listen: expected");
	bad("\nlisten = 127.0.0.1:9000\n",
	    "bad.conf:2: listen: listen on TCP needs listen_allow");
	bad("listen = 127.0.0.1:9000\nlisten_allow = 10.0.0.1, 10.0.0.2\n",
	    "bad.conf:2: listen_allow: expected IPv4");
	CHECK(config_parse(&c, "t.conf", "listen = 10.0.0.12:9000\n"
	    "listen_allow = 10.0.0.10,10.0.0.11\n", err, sizeof(err)) == 0);
}

/* config_keep_db: a reload's file with the running database settings. */
static void
keep_db(void)
{
	struct config	 run, c;
	char		 err[256];

	CHECK(config_parse(&run, "t.conf", "db_user = a\ndb_hosts = x:1 y:2\n"
	    "db_host = db.example\n", err, sizeof(err)) == 0);
	CHECK(config_parse(&c, "t.conf", "db_user = a\ndb_hosts = x:1 y:2\n"
	    "db_host = db.example\nwebhook_timeout = 7\n", err,
	    sizeof(err)) == 0);
	CHECK(config_keep_db(&c, &run) == NULL);
	CHECK_EQ_INT(c.webhook_timeout, 7);
	/* db_host, db_user, db_port, db_hosts changed: the first named */
	CHECK(config_parse(&c, "t.conf", "db_user = bb\ndb_hosts = z:3\n"
	    "db_port = 3307\n", err, sizeof(err)) == 0);
	CHECK_EQ_STR(config_keep_db(&c, &run), "db_host");
	CHECK_EQ_STR(c.db_user, "a");
	CHECK_EQ_STR(c.db_host, "db.example");
	CHECK_EQ_INT(c.db_port, 3306);
	CHECK_EQ_INT(c.db_nhosts, 2);
	CHECK_EQ_STR(c.db_hosts[1].host, "y");
	CHECK_EQ_STR(c.db_hosts_text, run.db_hosts_text);
}

int
main(void)
{
	good();
	hosts();
	bad_files();
	password_file();
	password_not_regular();
	config_not_regular();
	keep_db();
	return check_done("unit_config");
}
