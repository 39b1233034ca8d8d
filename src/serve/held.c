/*
 * held.c - the connections one worker holds (held.h): HELD_MAX request
 * slots on the listening socket, a slot free when conn_fd is -1.
 */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "conn.h"
#include "held.h"

struct held {
	struct conn	*c[HELD_MAX];
	unsigned long	 last[HELD_MAX];	/* serial of its last take */
	unsigned char	 ready[HELD_MAX];	/* readable in the last wait */
	unsigned long	 serial;
	int		 listen_fd;
};

/*
 * HELD_MAX empty slots on listen_fd, accepting on it themselves when
 * self_accepts (bench_probe), else only given connections (conn_give:
 * the worker accepts); or NULL (out of memory, libfcgi).
 */
struct held *
held_new(int listen_fd, int self_accepts)
{
	struct held	*h;
	int		 i;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->listen_fd = listen_fd;
	for (i = 0; i < HELD_MAX; i++)
		if ((h->c[i] = conn_new(self_accepts ? listen_fd : -1)) ==
		    NULL) {
			held_free(h);
			return NULL;
		}
	return h;
}

/*
 * Waits until a kept connection or, with_listen, the listening socket
 * is readable, ms milliseconds at most (-1: no limit), with the signal
 * mask mask for the wait (NULL: the current one). Fills r (n 0 after
 * the time ran out). 0, or -1 (errno; EINTR after a signal).
 */
int
held_wait(struct held *h, int with_listen, int ms, const sigset_t *mask,
    struct held_ready *r)
{
	struct pollfd		 pfd[HELD_MAX + 1];
	int			 slot[HELD_MAX + 1], i;
	nfds_t			 n = 0, k;
	struct timespec		 ts = { ms / 1000, (ms % 1000) * 1000000L };

	r->n = 0;
	for (i = 0; i < HELD_MAX; i++) {
		h->ready[i] = 0;
		if (conn_fd(h->c[i]) < 0)
			continue;
		pfd[n].fd = conn_fd(h->c[i]);
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		slot[n++] = i;
	}
	if (with_listen) {
		pfd[n].fd = h->listen_fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		slot[n++] = HELD_LISTEN;
	}
	if (n == 0)
		return 0;
	if (ppoll(pfd, n, ms < 0 ? NULL : &ts, mask) == -1)
		return -1;
	for (k = 0; k < n; k++) {
		if (pfd[k].revents == 0)
			continue;
		r->slot[r->n++] = slot[k];
		if (slot[k] != HELD_LISTEN)
			h->ready[slot[k]] = 1;
	}
	return 0;
}

/*
 * The slot held_take gives for slot of the last wait, closing nothing:
 * that kept one, or for HELD_LISTEN a free slot, else the least recently
 * taken idle one; for HELD_FREE a free slot only. -1 when there is none
 * (for HELD_LISTEN: every slot was readable in the wait).
 */
static int
pick(const struct held *h, int slot)
{
	int	 i, lru = -1, want = slot;

	if (want != HELD_LISTEN && want != HELD_FREE)
		return slot;
	for (i = 0; i < HELD_MAX && slot == want; i++) {
		if (conn_fd(h->c[i]) < 0)
			slot = i;
		else if (!h->ready[i] &&
		    (lru < 0 || h->last[i] < h->last[lru]))
			lru = i;
	}
	if (slot != want)
		return slot;
	return want == HELD_FREE ? -1 : lru;
}

/*
 * Whether held_take(h, slot) would give a conn, closing nothing: 1 or 0
 * (the worker checks a peer first; only then is a kept one closed).
 */
int
held_room(const struct held *h, int slot)
{
	return pick(h, slot) >= 0;
}

/*
 * The conn to accept on (or give an accepted connection) for slot of
 * the last wait: that kept one, or for HELD_LISTEN a free slot, else the
 * least recently taken idle one, closed first (so the worker takes it
 * only for a connection it has accepted); for HELD_FREE a free slot
 * only. NULL when there is none (for HELD_LISTEN: every slot was
 * readable in the wait).
 */
struct conn *
held_take(struct held *h, int slot)
{
	int	 i = pick(h, slot);

	if (i < 0)
		return NULL;
	if (slot < 0 && conn_fd(h->c[i]) >= 0)
		conn_drop(h->c[i]);	/* HELD_LISTEN: the idle one */
	h->last[i] = ++h->serial;
	return h->c[i];
}

/* Closes every kept connection and frees h (NULL: nothing). */
void
held_free(struct held *h)
{
	int	 i;

	if (h == NULL)
		return;
	for (i = 0; i < HELD_MAX; i++)
		conn_free(h->c[i]);	/* closes a kept connection */
	free(h);
}
