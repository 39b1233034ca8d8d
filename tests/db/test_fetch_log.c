/*
 * test_fetch_log.c - an error that the server sends while a result's
 * rows stream is logged once, against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG): a side connection holds a tenant's webhook
 * endpoint row (FOR UPDATE), asyncexec-notify's outbox reads the
 * tenant's endpoints share-locked (repo_notify_outbox_filters, a 1 s
 * lock wait): REPO_RETRY, and the log (stderr, captured) has exactly
 * one "db: fetch: " line, with the server's text. It had two: the
 * fetch's own and db_fetch_failed's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "db_fixture.h"
#include "repo.h"
#include "repo_notify.h"

static struct config	 cfg;

/* Lines of the file at path holding needle; -1 when unreadable. */
static int
lines_with(const char *path, const char *needle)
{
	char	 line[2048];
	FILE	*f = fopen(path, "r");
	int	 n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/*
 * The outbox's endpoint read of tenant while side holds its endpoint,
 * stderr into the file at path meanwhile. Results: its repo_rc.
 */
static enum repo_rc
filters_held(struct ndb *n, const char *tenant, const char *path)
{
	struct notify_exec	 x[4];
	struct notify_filters	 f = { NULL, 0, 0 };
	size_t			 nx = 0;
	enum repo_rc		 rc;
	int			 keep = dup(STDERR_FILENO);
	int			 fd = open(path, O_WRONLY | O_TRUNC);

	if (keep == -1 || fd == -1 || dup2(fd, STDERR_FILENO) == -1) {
		fprintf(stderr, "cannot capture stderr into %s\n", path);
		exit(1);
	}
	close(fd);
	rc = repo_notify_outbox_begin(n, tenant, 4, x, &nx);
	if (rc == REPO_OK)
		rc = repo_notify_outbox_filters(n, tenant, &f);
	if (rc == REPO_OK)
		repo_notify_outbox_abort(n);
	free(f.v);
	dup2(keep, STDERR_FILENO);
	close(keep);
	return rc;
}

int
main(void)
{
	const char	*path = getenv("ASYNCEXEC_TEST_CONFIG");
	char		 err[512], tenant[64], logf[] = "/tmp/fetchlog.XXXXXX";
	struct ndb	*n;
	MYSQL		*side;
	int		 fd;

	mysql_library_init(0, NULL, NULL);
	if (path == NULL || config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", path ? err : "ASYNCEXEC_TEST_CONFIG "
		    "is not set: run scripts/test.sh");
		return 1;
	}
	if ((fd = mkstemp(logf)) == -1 || (n = repo_notify_open(&cfg)) ==
	    NULL) {
		fprintf(stderr, "no log file or no database\n");
		return 1;
	}
	close(fd);
	snprintf(tenant, sizeof(tenant), "t-fetchlog-%ld", (long)getpid());
	side = side_open(&cfg, NULL);
	side_sqlf(side, "INSERT INTO s2r_webhook_endpoint (tenant_id, url, "
	    "events, enabled, secret_sealed, created_at, updated_at) VALUES "
	    "('%s', 'https://fetchlog.invalid/', 'completed', 1, 'x', "
	    "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))", tenant);
	side_sql(side, "START TRANSACTION");
	side_sqlf(side, "SELECT id FROM s2r_webhook_endpoint WHERE tenant_id "
	    "= '%s' FOR UPDATE", tenant);
	mysql_free_result(mysql_store_result(side));
	CHECK_EQ_INT(filters_held(n, tenant, logf), REPO_RETRY);
	side_sql(side, "ROLLBACK");
	CHECK_EQ_INT(lines_with(logf, "db: fetch: "), 1);
	CHECK_EQ_INT(lines_with(logf, "Lock wait timeout exceeded"), 1);
	/* the read again, nothing held: no line */
	CHECK_EQ_INT(filters_held(n, tenant, logf), REPO_OK);
	CHECK_EQ_INT(lines_with(logf, "db: "), 0);
	side_sqlf(side, "DELETE FROM s2r_webhook_endpoint WHERE tenant_id = "
	    "'%s'", tenant);
	mysql_close(side);
	repo_notify_close(n);
	unlink(logf);
	mysql_library_end();
	return check_done("db_fetch_log");
}
