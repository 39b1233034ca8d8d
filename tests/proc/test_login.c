/*
 * test_login.c - asyncexec-fcgi with a wrong database password (error
 * 1045): the workers' log says what to check (the one-shot programs' hint:
 * db_user and db_password), once per worker and outage, not once per
 * retry; /readyz/detail says the login was refused, not that the
 * database did not answer; /healthz stays 200. Then with the right
 * password and a db_name that does not exist (a typo: 1044 or 1049 at
 * connect): /readyz/detail says the login was refused and to check
 * db_name (it said the database did not answer). A scratch database and
 * a master of its own (tests/proc/scratch.c).
 */
#include "check.h"
#include "proc_util.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HINT	"check db_name, db_user and db_password"
#define PROBES	20

static struct scratch S;

static int
logged_hint(void *arg)
{
	(void)arg;
	return log_count(S.log, HINT) >= 1;
}

int
main(void)
{
	char body[4096], pw[300], extra[700];
	FILE *f;
	int i, lines;

	if (proc_init("login") == -1 || scratch_init(&S, "login") == -1)
		return 1;
	snprintf(pw, sizeof pw, "%s/pw-wrong", tmpdir);
	if ((f = fopen(pw, "w")) == NULL)
		return 1;
	fputs("not-the-password\n", f);
	fclose(f);
	CHECK(chmod(pw, 0600) == 0);
	snprintf(extra, sizeof extra, "db_name = %s\ndb_password_file = %s\n",
	    S.db, pw);
	CHECK(derive_config_x(S.cfg, S.sock, WORKERS_STR, extra, NULL) == 0);
	CHECK(scratch_start(&S) == 0);
	for (i = 0; i < PROBES; i++) {
		CHECK_EQ_INT(scratch_request(&S, "GET", "/readyz/detail", NULL,
		    NULL, NULL, body, sizeof body), 503);
		CHECK(strstr(body, "refused") != NULL &&
		    strstr(body, "db_password") != NULL &&
		    strstr(body, "did not answer") == NULL);
		if (i == 0 && strstr(body, "refused") == NULL)
			fprintf(stderr, "  /readyz/detail said: %s\n", body);
		ut_pause_ms(50);	/* across several backoff periods */
	}
	CHECK_EQ_INT(scratch_request(&S, "GET", "/healthz", NULL, NULL, NULL,
	    body, sizeof body), 200);
	/* the hint, once per worker's outage: not once per retry */
	CHECK(wait_for(logged_hint, NULL, 5000));
	lines = log_count(S.log, HINT);
	CHECK(lines >= 1 && lines <= WORKERS);
	if (lines < 1 || lines > WORKERS) {
		char *t = read_file(S.log);

		fprintf(stderr, "  %d lines with the hint; the log:\n%s\n",
		    lines, t ? t : "(none)");
		free(t);
	}
	CHECK(log_count(S.log, "Access denied") >= 1);
	CHECK_EQ_INT(scratch_stop(&S), 0);
	/* a db_name typo: refused at connect too, say check db_name */
	snprintf(extra, sizeof extra, "db_name = %s_typo\n", S.db);
	CHECK(derive_config_x(S.cfg, S.sock, WORKERS_STR, extra, NULL) == 0);
	CHECK(scratch_start(&S) == 0);
	CHECK_EQ_INT(scratch_request(&S, "GET", "/readyz/detail", NULL, NULL,
	    NULL, body, sizeof body), 503);
	CHECK(strstr(body, "refused") != NULL &&
	    strstr(body, "db_name") != NULL &&
	    strstr(body, "did not answer") == NULL);
	fprintf(stderr, "  /readyz/detail (db_name typo) said: %s\n", body);
	CHECK_EQ_INT(scratch_stop(&S), 0);
	scratch_drop(&S);
	return check_done("proc_login");
}
