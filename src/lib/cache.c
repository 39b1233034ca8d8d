/*
 * cache.c - two-way TTL cache keyed by a 32-byte digest: a key may sit in
 * either of two slots, chosen by two parts of the digest (cache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "crypto.h"

struct slot {
	unsigned char	 key[CACHE_KEY_LEN];
	int64_t		 stored;	/* ms; 0 = empty */
};

struct cache {
	size_t		 nslots;
	size_t		 vsize;
	int64_t		 ttl_ms;
	struct slot	*slots;
	unsigned char	*vals;
};

/* A cache of nslots values of vsize bytes; NULL when out of memory. */
struct cache *
cache_new(size_t nslots, size_t vsize, unsigned ttl_seconds)
{
	struct cache	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->nslots = nslots;
	c->vsize = vsize;
	c->ttl_ms = (int64_t)ttl_seconds * 1000;
	c->slots = calloc(nslots, sizeof(*c->slots));
	c->vals = calloc(nslots, vsize);
	if (c->slots == NULL || c->vals == NULL) {
		cache_free(c);
		return NULL;
	}
	return c;
}

void
cache_free(struct cache *c)
{
	if (c == NULL)
		return;
	free(c->slots);
	free(c->vals);
	free(c);
}

/* The slot of key's way w (0 or 1): bytes 8w..8w+8 of the digest. */
static size_t
slot_of(const struct cache *c, const unsigned char *key, int w)
{
	uint64_t	 h;

	memcpy(&h, key + 8 * w, sizeof(h));	/* the key is already a digest */
	return (size_t)(h % c->nslots);
}

/* The slot that holds key (of either way), or nslots when none does. */
static size_t
slot_holding(const struct cache *c, const unsigned char *key)
{
	size_t	 i;
	int	 w;

	for (w = 0; w < 2; w++) {
		i = slot_of(c, key, w);
		if (c->slots[i].stored != 0 &&
		    crypto_equal(c->slots[i].key, key, CACHE_KEY_LEN))
			return i;
	}
	return c->nslots;
}

/*
 * Copies the value stored under key into val when it is younger than
 * the TTL; returns 1 on a hit, 0 on a miss (always 0 with TTL 0).
 */
int
cache_get(struct cache *c, const unsigned char *key, void *val, int64_t now)
{
	struct slot	*s;
	size_t		 i;

	if (c == NULL || c->ttl_ms == 0)
		return 0;
	if ((i = slot_holding(c, key)) == c->nslots)
		return 0;
	s = &c->slots[i];
	if (now - s->stored >= c->ttl_ms || now < s->stored)
		return 0;
	memcpy(val, c->vals + i * c->vsize, c->vsize);
	return 1;
}

/*
 * Stores val under key: in the slot that holds key already, else in the
 * one of its two that was stored longer ago (an empty one first), whose
 * entry it replaces.
 */
void
cache_put(struct cache *c, const unsigned char *key, const void *val,
    int64_t now)
{
	size_t	 i, j;

	if (c == NULL || c->ttl_ms == 0)
		return;
	if ((i = slot_holding(c, key)) == c->nslots) {
		i = slot_of(c, key, 0);
		j = slot_of(c, key, 1);
		if (c->slots[j].stored < c->slots[i].stored)
			i = j;
	}
	memcpy(c->slots[i].key, key, CACHE_KEY_LEN);
	c->slots[i].stored = now > 0 ? now : 1;
	memcpy(c->vals + i * c->vsize, val, c->vsize);
}
