/*
 * eplist.h - the sender's list of endpoints (as repo_notify_endpoints
 * reads them): every one by id, to find the one a delivery goes to, and
 * the same ones grouped by tenant, to read each tenant's outbox once a
 * pass. Both stay linear or n log n in the endpoints, however many.
 *
 * notify layer: the notify folder and the unit tests.
 */
#ifndef ASYNCEXEC_NOTIFY_EPLIST_H
#define ASYNCEXEC_NOTIFY_EPLIST_H

#include <stddef.h>
#include <stdint.h>

#include "repo_notify.h"

struct eplist {
	struct notify_endpoints	 ep;		/* by id */
	struct notify_endpoint	**by_tenant;	/* ep's, grouped by tenant */
	size_t			 tcap;		/* room in by_tenant */
};

int			 eplist_group(struct eplist *);
size_t			 eplist_tenant_end(const struct eplist *, size_t i,
			    int *enabled);
struct notify_endpoint	*eplist_find(struct eplist *, uint64_t id);
void			 eplist_free(struct eplist *);

#endif
