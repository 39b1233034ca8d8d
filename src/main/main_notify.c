/*
 * main_notify.c - asyncexec-notify: the webhook sender daemon.
 *
 * usage: asyncexec-notify [--config FILE]
 *        asyncexec-notify [--config FILE] --check-config | --version | --help
 * Runs until SIGTERM or SIGINT (exit 0); SIGHUP reloads the
 * configuration and the key file. Exit 1 when it cannot start, 2 on a
 * usage, configuration or key file error. --check-config prints one line
 * per check (configuration, password file, webhook_key_file, database,
 * schema, privileges) and exits 0 when none is an error, else 1.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "notify.h"

static int
usage(FILE *f)
{
	fprintf(f, "usage: asyncexec-notify [--config FILE]\n"
	    "  --config FILE   the configuration (default %s)\n"
	    "  --check-config  check the configuration, the key file and the "
	    "database, and exit\n"
	    "  --version       print the version and exit\n"
	    "Sends completion notifications (webhooks) until SIGTERM; SIGHUP "
	    "reloads.\nSee asyncexec-notify(8).\n", CONFIG_DEFAULT_PATH);
	return f == stdout ? 0 : 2;
}

int
main(int argc, char *argv[])
{
	const char	*path = CONFIG_DEFAULT_PATH;
	int		 i, check = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0)
			return usage(stdout);
		if (strcmp(argv[i], "--version") == 0) {
			printf("asyncexec-notify %s\n", ASYNCEXEC_VERSION);
			return 0;
		}
		if (strcmp(argv[i], "--check-config") == 0)
			check = 1;
		else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else
			return usage(stderr);
	}
	if (check)
		return check_run("asyncexec-notify", CHECK_NOTIFY, path, NULL);
	return (int)notify_run(path);
}
