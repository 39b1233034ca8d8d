/*
 * main_notify.c - asyncexec-notify: the webhook sender daemon.
 *
 * usage: asyncexec-notify [--config FILE]
 *        asyncexec-notify --version | --help
 * Runs until SIGTERM or SIGINT (exit 0); SIGHUP reloads the
 * configuration and the key file. Exit 1 when it cannot start, 2 on a
 * usage, configuration or key file error.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "notify.h"

static int
usage(FILE *f)
{
	fprintf(f, "usage: asyncexec-notify [--config FILE]\n"
	    "  --config FILE   the configuration (default %s)\n"
	    "  --version       print the version and exit\n"
	    "Sends completion notifications (webhooks) until SIGTERM; SIGHUP "
	    "reloads.\nSee asyncexec-notify(8).\n", CONFIG_DEFAULT_PATH);
	return f == stdout ? 0 : 2;
}

int
main(int argc, char *argv[])
{
	const char	*path = CONFIG_DEFAULT_PATH;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0)
			return usage(stdout);
		if (strcmp(argv[i], "--version") == 0) {
			printf("asyncexec-notify %s\n", ASYNCEXEC_VERSION);
			return 0;
		}
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else
			return usage(stderr);
	}
	return (int)notify_run(path);
}
