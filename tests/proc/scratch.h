/*
 * scratch.h - a scratch database on the test stack's MariaDB with an
 * asyncexec-fcgi of its own, for tests that change what every other test
 * relies on (the schema version, the poll-token keys). The database is
 * made and dropped through the server's root account over its unix
 * socket; the config is the base one with db_name and listen replaced.
 */
#ifndef ASYNCEXEC_SCRATCH_H
#define ASYNCEXEC_SCRATCH_H

#include <stddef.h>
#include <sys/types.h>

struct scratch {
	char	 db[64];
	char	 cfg[300], sock[300], log[300];
	char	 dbsock[256];
	pid_t	 master;
};

/* Makes database asyncexec_scratch_<tag>_<pid> and its config. 0 or -1. */
int	scratch_init(struct scratch *, const char *tag);
/* Runs sql as the server's root; 0 or -1 (printed). */
int	scratch_sql(const struct scratch *, const char *sql);
/* asyncexec-admin --config <scratch> a1 .. (NULL-terminated); its exit
 * status (-1: did not run); out gets stdout. */
int	scratch_admin(const struct scratch *, char *out, size_t size, ...);
/* The same with stderr into err; out and err are size bytes each. */
int	scratch_admin_err(const struct scratch *, char *out, char *err,
	    size_t size, ...);
/*
 * Adds route e/s/o and a key of tenant t to the scratch database; the
 * "Bearer ak_..." value into auth (size bytes). 0 or -1.
 */
int	scratch_route_key(const struct scratch *, char *auth, size_t size);
/* Starts the scratch master and waits until it answers; 0 or -1. */
int	scratch_start(struct scratch *);
/* SIGTERM and wait: the master's wait status, -1 on timeout. */
int	scratch_stop(struct scratch *);
/*
 * One FastCGI request: method, uri, and (each may be NULL) the
 * Authorization value, the X-Poll-Token, a JSON body. Its status, the
 * body copied into out (size bytes). -1 when the exchange failed.
 */
int	scratch_request(const struct scratch *, const char *method,
	    const char *uri, const char *auth, const char *token,
	    const char *body, char *out, size_t size);
/* Drops the database and removes the test's temporary directory (the
 * config, the log). */
void	scratch_drop(struct scratch *);

#endif
