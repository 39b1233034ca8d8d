/*
 * main_expire.c - asyncexec-expire: one run of expiry, rescue and purge.
 *
 * usage: asyncexec-expire [--config FILE] [--batch-size N]
 *                         [--max-runtime SECONDS] [--dry-run]
 *        asyncexec-expire [--config FILE] --check-config | --version
 * Prints one summary line on stdout. Exit 0 on success (also when
 * another run holds the lock and this one skips, and when the runtime
 * bound stopped it), 1 on a database error, 2 on a usage or
 * configuration error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "expire.h"
#include "log.h"
#include "repo_expire.h"

static int
usage(FILE *f)
{
	fprintf(f, "usage: asyncexec-expire [--config FILE] [--batch-size N] "
	    "[--max-runtime SECONDS] [--dry-run]\n"
	    "  --batch-size N        rows per transaction, 1..%d (default %d)\n"
	    "  --max-runtime SECONDS no new batch after this, 1..%d "
	    "(default %d)\n"
	    "  --dry-run             count what would change, change nothing\n"
	    "  --check-config        check the configuration and the "
	    "database, and exit\n"
	    "  --version             print the version and exit\n",
	    EXPIRE_BATCH_MAX, EXPIRE_BATCH_DEFAULT, EXPIRE_RUNTIME_MAX,
	    EXPIRE_RUNTIME_DEFAULT);
	return 2;
}

/* Parses a decimal in [min, max] into *v; 0 or -1. */
static int
parse_uint(const char *s, unsigned long min, unsigned long max,
    unsigned long *v)
{
	char	*end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	*v = strtoul(s, &end, 10);
	return *end == '\0' && *v >= min && *v <= max ? 0 : -1;
}

/* Parses the options into path, o and check; 0, -1 (done: exit 0) or 2. */
static int
parse_args(int argc, char **argv, const char **path,
    struct expire_opts *o, int *check)
{
	unsigned long	 v;
	int		 i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--dry-run") == 0) {
			o->dry_run = 1;
			continue;
		}
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strcmp(a, "--version") == 0) {
			printf("asyncexec-expire %s\n", ASYNCEXEC_VERSION);
			return -1;
		}
		if (strcmp(a, "--check-config") == 0) {
			*check = 1;
			continue;
		}
		if (val == NULL)
			return usage(stderr);
		i++;
		if (strcmp(a, "--config") == 0)
			*path = val;
		else if (strcmp(a, "--batch-size") == 0 &&
		    parse_uint(val, 1, EXPIRE_BATCH_MAX, &v) == 0)
			o->batch_size = (unsigned)v;
		else if (strcmp(a, "--max-runtime") == 0 &&
		    parse_uint(val, 1, EXPIRE_RUNTIME_MAX, &v) == 0)
			o->max_runtime_ms = (int64_t)v * 1000;
		else
			return usage(stderr);
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct config		 cfg;
	struct expire_opts	 o, cli;
	struct expire_result	 r;
	struct xdb		*db;
	const char		*path = CONFIG_DEFAULT_PATH;
	char			 err[512], line[512];
	int			 rc, check = 0;

	config_defaults(&cfg);
	expire_opts_init(&cli, &cfg);
	if ((rc = parse_args(argc, argv, &path, &cli, &check)) != 0)
		return rc == -1 ? 0 : rc;
	if (check)
		return check_run("asyncexec-expire", CHECK_EXPIRE, path, NULL);
	if (config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "asyncexec-expire: %s\n", err);
		return 2;
	}
	log_set_level((enum log_level)cfg.log_level);
	expire_opts_init(&o, &cfg);
	o.batch_size = cli.batch_size;
	o.max_runtime_ms = cli.max_runtime_ms;
	o.dry_run = cli.dry_run;
	o.now = clock_now_ms();
	repo_oneshot();		/* one run: no retry behind a 503 */
	if ((db = repo_expire_open(&cfg)) == NULL)
		return 1;
	rc = expire_run(db, &o, &r);
	repo_expire_close(db);
	if (expire_summary(&r, o.dry_run, line, sizeof(line)) == 0)
		printf("asyncexec-expire: %s\n", line);
	return rc == 0 ? 0 : 1;
}
