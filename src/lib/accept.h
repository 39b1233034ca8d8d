/*
 * accept.h - what a failed accept(2) means for the listening socket.
 *
 * lib layer: no project dependency; anyone may include it.
 */
#ifndef ASYNCEXEC_ACCEPT_H
#define ASYNCEXEC_ACCEPT_H

int	accept_transient(int e);

#endif
