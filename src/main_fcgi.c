/*
 * main_fcgi.c - asyncexec-fcgi: the preforked FastCGI server.
 *
 * usage: asyncexec-fcgi [--config FILE] [--check-config]
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "router.h"
#include "worker.h"

static int
usage(void)
{
	fprintf(stderr, "usage: asyncexec-fcgi [--config FILE] "
	    "[--check-config]\n");
	return 2;
}

int
main(int argc, char *argv[])
{
	struct config	 cfg;
	const char	*path = CONFIG_DEFAULT_PATH;
	char		 err[512];
	const char *const *names;
	int		 i, check = 0, fd, created, rc, nnames;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--check-config") == 0)
			check = 1;
		else
			return usage();
	}
	if (config_load(&cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "asyncexec-fcgi: %s\n", err);
		return 2;
	}
	if (check) {
		printf("config ok: %s\n", path);
		return 0;
	}
	log_set_level((enum log_level)cfg.log_level);
	names = router_names(&nnames);
	if (metrics_init(names, nnames) == -1) {
		fprintf(stderr, "asyncexec-fcgi: cannot map the metrics\n");
		return 1;
	}
	if ((fd = master_listen(&cfg, &created)) == -1)
		return 1;
	/* master_run unlinks the socket it created as its stop begins. */
	(void)created;
	rc = master_run(&cfg, fd);
	log_info("master: stopped");
	return rc;
}
