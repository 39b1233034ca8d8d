/*
 * papp.h - a private asyncexec-fcgi (ASYNCEXEC_FCGI, one worker) for the
 * fault tests that put dbproxy between the app and the shared database:
 * the stack's config with the database at the proxy's port, its own socket
 * and log in a temporary directory, spoken to in raw FastCGI
 * (tests/proc/fcgi_client.c). Included by tests/fault tests only.
 */
#ifndef ASYNCEXEC_PAPP_H
#define ASYNCEXEC_PAPP_H

#include "fcgi_client.h"

/* Starts dbproxy (dbproxy.h) in front of the stack's db_port and the app
 * behind it; 0 once the app answers GET /readyz with key's requests, else
 * -1. Stopped at exit too. */
int	papp_start(const char *key);
/* Config lines (each ending in a newline) the app gets beside the proxied
 * ones, from the next papp_start or papp_respawn on (NULL: none). */
void	papp_extra(const char *lines);
/* One request (token: X-Callback-Token, body JSON, both may be NULL) into
 * r (the caller frees it with fcgi_resp_free); the status, 0 on failure. */
int	papp_api(const char *method, const char *uri, const char *key,
	    const char *token, const char *body, struct fcgi_resp *r);
/* Starts the app again (same files, same proxy) after it exited, with a
 * fresh log; 0 once ready, else -1. */
int	papp_respawn(const char *key);
/* A connection to its socket, for papp_api_keep: the fd, or -1. */
int	papp_connect(void);
/* papp_api on fd with FCGI_KEEP_CONN: the app keeps the connection open
 * for the next request (as nginx's upstream keepalive); fd stays open. */
int	papp_api_keep(int fd, const char *method, const char *uri,
	    const char *key, const char *token, const char *body,
	    struct fcgi_resp *r);
/* Sends sig to its master; 0 or -1. */
int	papp_signal(int sig);
/* Waits up to ms for its master to exit; its exit status (128 + the
 * signal when killed by one), or -1 when it still runs. */
int	papp_wait(long long ms);
/* Whether its log holds needle (1 or 0; -1 when unreadable). */
int	papp_log_contains(const char *needle);
/* Stops it, shows the first lines of its log and removes its files. */
void	papp_stop(void);

#endif
