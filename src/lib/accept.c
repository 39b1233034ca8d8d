/*
 * accept.c - what a failed accept(2) means (accept.h).
 */
#include <errno.h>

#include "accept.h"

/*
 * Whether accept's errno e means no connection this time, but nothing
 * wrong with the listener: none waiting, a signal, or one that failed
 * in the backlog (accept(2) passes such network errors on). 1 or 0
 * (EMFILE, ENFILE, ENOMEM, ENOBUFS, EINVAL...: the listener's problem).
 */
int
accept_transient(int e)
{
	switch (e) {
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
	case ENETDOWN:
	case ENETUNREACH:
	case EHOSTDOWN:
	case EHOSTUNREACH:
	case ENOPROTOOPT:
	case EOPNOTSUPP:
		return 1;
	default:
		return 0;
	}
}
