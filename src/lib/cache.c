/*
 * cache.c - direct-mapped TTL cache keyed by a 32-byte digest.
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

static size_t
slot_of(const struct cache *c, const unsigned char *key)
{
	uint64_t	 h;

	memcpy(&h, key, sizeof(h));	/* the key is already a digest */
	return (size_t)(h % c->nslots);
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
	i = slot_of(c, key);
	s = &c->slots[i];
	if (s->stored == 0 || now - s->stored >= c->ttl_ms ||
	    now < s->stored || !crypto_equal(s->key, key, CACHE_KEY_LEN))
		return 0;
	memcpy(val, c->vals + i * c->vsize, c->vsize);
	return 1;
}

/* Stores val under key, replacing whatever held the slot. */
void
cache_put(struct cache *c, const unsigned char *key, const void *val,
    int64_t now)
{
	size_t	 i;

	if (c == NULL || c->ttl_ms == 0)
		return;
	i = slot_of(c, key);
	memcpy(c->slots[i].key, key, CACHE_KEY_LEN);
	c->slots[i].stored = now > 0 ? now : 1;
	memcpy(c->vals + i * c->vsize, val, c->vsize);
}
