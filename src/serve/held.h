/*
 * held.h - the FastCGI connections of one worker process: every
 * connection the web server keeps open to it between requests
 * (fastcgi_keep_conn with an upstream keepalive cache in nginx), and the
 * slot the next new connection is accepted into (held.c).
 *
 * A worker serves one request at a time, but it waits on all of its kept
 * connections and on the listening socket at once: an idle kept
 * connection never keeps it from the others, and nginx opens a new
 * connection whenever it has no idle one. At HELD_MAX open connections
 * a new one closes the least recently served idle one: only one the
 * worker has accepted (another worker may have taken the connection it
 * woke for), on a TCP listener one whose peer listen_allow admits
 * (held_room, then held_take).
 *
 * held_new(fd, 0), as the worker makes them on every listener: the slots
 * never accept on fd themselves (it is only waited on): the worker
 * accepts (on TCP checks the peer), then takes a slot and gives it the
 * connection (conn_give). held_new(fd, 1): libfcgi's accept in the
 * slot, after held_take has closed an idle one for it even when that
 * accept then finds none (tests/bench/bench_probe.c only).
 *
 * serve layer: worker.c includes it.
 */
#ifndef ASYNCEXEC_HELD_H
#define ASYNCEXEC_HELD_H

#include <signal.h>

#define HELD_MAX	128	/* connections one worker keeps open */
#define HELD_LISTEN	(-1)	/* the listening socket, in held_ready */
#define HELD_FREE	(-2)	/* held_take: a free slot, none closed for it */

struct conn;
struct held;

/* What one wait found readable: slot numbers, HELD_LISTEN last. */
struct held_ready {
	int	 n;
	int	 slot[HELD_MAX + 1];
};

struct held	*held_new(int listen_fd, int self_accepts);
int		 held_wait(struct held *, int with_listen, int ms,
		    const sigset_t *, struct held_ready *);
int		 held_room(const struct held *, int slot);
struct conn	*held_take(struct held *, int slot);
void		 held_free(struct held *);

#endif
