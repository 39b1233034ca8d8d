/*
 * eplist.c - the sender's list of endpoints (eplist.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eplist.h"

static int
cmp_id(const void *a, const void *b)
{
	const struct notify_endpoint *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int
cmp_tenant(const void *a, const void *b)
{
	const struct notify_endpoint *const *x = a, *const *y = b;

	return strcmp((*x)->tenant, (*y)->tenant);
}

/*
 * Groups the endpoints of l->ep (read by id) by tenant into l->by_tenant
 * (grown to hold them). 0, or -1 (no memory: l->by_tenant as it was).
 */
int
eplist_group(struct eplist *l)
{
	struct notify_endpoint **t;
	size_t	 i, c;

	if (l->ep.n > l->tcap) {
		c = l->ep.n > 64 ? l->ep.n : 64;
		if (c > SIZE_MAX / sizeof(*t) ||
		    (t = realloc(l->by_tenant, c * sizeof(*t))) == NULL)
			return -1;
		l->by_tenant = t;
		l->tcap = c;
	}
	for (i = 0; i < l->ep.n; i++)
		l->by_tenant[i] = &l->ep.v[i];
	if (l->ep.n > 1)
		qsort(l->by_tenant, l->ep.n, sizeof(*l->by_tenant), cmp_tenant);
	return 0;
}

/*
 * The tenant group that starts at by_tenant[i] (i < ep.n): the index past
 * its last endpoint; *enabled 1 when one of them is enabled.
 */
size_t
eplist_tenant_end(const struct eplist *l, size_t i, int *enabled)
{
	const char	*t = l->by_tenant[i]->tenant;
	size_t		 j;

	*enabled = 0;
	for (j = i; j < l->ep.n && strcmp(l->by_tenant[j]->tenant, t) == 0;
	    j++)
		*enabled |= l->by_tenant[j]->enabled;
	return j;
}

/* Endpoint id of the list, or NULL. */
struct notify_endpoint *
eplist_find(struct eplist *l, uint64_t id)
{
	struct notify_endpoint key;

	if (l->ep.n == 0)
		return NULL;	/* none read yet: no array to search */
	key.id = id;
	return bsearch(&key, l->ep.v, l->ep.n, sizeof(key), cmp_id);
}

void
eplist_free(struct eplist *l)
{
	repo_notify_endpoints_free(&l->ep);
	free(l->by_tenant);
	memset(l, 0, sizeof(*l));
}
