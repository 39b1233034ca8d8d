/*
 * notify.h - asyncexec-notify's loop: the outbox turned into
 * deliveries, due deliveries leased and sent, outcomes recorded; SIGHUP
 * reloads the configuration and the key file, SIGTERM and SIGINT stop
 * leasing, let the running transfers finish (at most webhook_timeout)
 * and end.
 *
 * notify layer: main_notify.c.
 */
#ifndef ASYNCEXEC_NOTIFY_H
#define ASYNCEXEC_NOTIFY_H

/* How notify_run ended: the process's exit status. */
enum notify_exit {
	NOTIFY_EXIT_OK = 0,		/* stopped by a signal */
	NOTIFY_EXIT_FAILED = 1,		/* could not start (logged) */
	NOTIFY_EXIT_CONFIG = 2		/* configuration or key file (logged) */
};

enum notify_exit notify_run(const char *config_path);

#endif
