/*
 * dbproxy.h - a TCP proxy between the app and MariaDB for fault tests.
 *
 * Forwards bytes both ways, cutting the client's stream into protocol
 * packets (3-byte length, sequence number). When armed with a pattern,
 * the first client packet that contains it fires the fault once:
 *
 *   DBPROXY_LOSE_ANSWER  the packet is forwarded, the server's answer is
 *                        awaited and thrown away, both sides are closed:
 *                        the statement ran, the client never hears of it;
 *   DBPROXY_DROP         both sides are closed without forwarding it: the
 *                        statement never ran (the server rolls back);
 *   DBPROXY_CUT_ANSWER   the packet is forwarded, the server's whole answer
 *                        is awaited and its first half passed on, both
 *                        sides are closed: the client of a result set
 *                        with a large last row reads its columns and
 *                        loses the connection within that row;
 *   DBPROXY_HOOK         (dbproxy_hook) a function of the test runs, then
 *                        the packet is forwarded: whatever the function
 *                        committed happened between two statements of the
 *                        client, at a point the test chose.
 *
 * dbproxy_silence makes the database stop answering without refusing:
 * every connection stays open, nothing passes either way.
 *
 * Runs in threads of the test process; arming is a call.
 */
#ifndef ASYNCEXEC_DBPROXY_H
#define ASYNCEXEC_DBPROXY_H

#include <stddef.h>

enum dbproxy_mode {
	DBPROXY_OFF,
	DBPROXY_LOSE_ANSWER,
	DBPROXY_DROP,
	DBPROXY_CUT_ANSWER,
	DBPROXY_HOOK,
	DBPROXY_SILENT		/* dbproxy_silence: thrown away, not armed */
};

/* Listens on 127.0.0.1 (a free port, returned) for upstream_port; -1. */
int	dbproxy_start(int upstream_port);
/* Arms the one-shot fault for the next client packet holding pattern. */
void	dbproxy_arm(enum dbproxy_mode, const char *pattern);
/* Arms fn(arg), called in the proxy's thread before the first client
 * packet (from now on) that holds pattern and for which when(packet, its
 * length) returns 1 is forwarded; once. */
void	dbproxy_hook(const char *pattern,
	    int (*when)(const unsigned char *, size_t), void (*fn)(void *),
	    void *arg);
/* From now on drops (as DBPROXY_DROP) every client packet for which
 * when(packet, its length) returns 1, until called with NULL; when runs
 * in the proxy's threads, one packet at a time. For a sequence of faults
 * that one pattern cannot name: when keeps the test's state. */
void	dbproxy_drop_when(int (*when)(const unsigned char *, size_t));
/* From now on (on 1, until called with 0) throws away every client
 * packet and every byte of the server, on every connection, new ones
 * included (their server greeting too): the client waits for its own
 * timeouts. Each client packet thrown away counts as fired. */
void	dbproxy_silence(int on);
/* How many faults (and hooks) have fired so far. */
int	dbproxy_fired(void);
/* Counts the client packets holding p from now on (one pattern at a time). */
void	dbproxy_watch(const char *p);
/* How many client packets held the watched pattern since dbproxy_watch. */
int	dbproxy_seen(void);

#endif
