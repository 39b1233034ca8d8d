/*
 * main_fcgi.c - asyncexec-fcgi: the preforked FastCGI server.
 *
 * usage: asyncexec-fcgi [--config FILE] [--check-config] | --version
 * --check-config runs the checks of check.c (the file, the password
 * file, the database, its grants and schema version) and exits.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "router.h"
#include "listener.h"
#include "master.h"

/* --check-config's own line: the stop deadline's room (master.c) */
static const struct check_extra waits = {
	"stop deadline", master_waits_check
};

static int
usage(FILE *f)
{
	fprintf(f, "usage: asyncexec-fcgi [--config FILE] [--check-config]\n"
	    "       asyncexec-fcgi --version\n");
	return f == stdout ? 0 : 2;
}

/*
 * Lets SIGTERM and SIGINT in, with their default action (how), or blocks
 * them again: while main reads the configuration, which may wait on a
 * hung filesystem for ever, a stop ends the start at once (nothing is
 * created yet) rather than after systemd's SIGKILL.
 */
static void
stop_signals(int how)
{
	sigset_t	 s;

	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigprocmask(how, &s, NULL);
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
		else if (strcmp(argv[i], "--version") == 0) {
			printf("asyncexec-fcgi %s\n", ASYNCEXEC_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0)
			return usage(stdout);
		else
			return usage(stderr);
	}
	if (check)
		return check_run("asyncexec-fcgi", CHECK_FCGI, path, &waits);
	/* a SIGHUP before master_run's handlers waits (it would end the
	 * master), a SIGTERM too once the configuration is read */
	master_block_signals();
	stop_signals(SIG_UNBLOCK);
	rc = config_load(&cfg, path, err, sizeof(err));
	stop_signals(SIG_BLOCK);
	if (rc == -1) {
		fprintf(stderr, "asyncexec-fcgi: %s\n", err);
		return 2;
	}
	log_set_level((enum log_level)cfg.log_level);
	names = router_names(&nnames);
	if (metrics_init(names, nnames) == -1) {
		fprintf(stderr, "asyncexec-fcgi: cannot map the metrics\n");
		return 1;
	}
	if ((fd = listener_open(&cfg, &created)) == -1)
		return 1;
	/* master_run unlinks the socket it created as its stop begins. */
	(void)created;
	rc = master_run(&cfg, path, fd);
	log_info("master: stopped");
	return rc;
}
