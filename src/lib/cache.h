/*
 * cache.h - a small per-process cache of fixed-size values keyed by a
 * 32-byte digest, with a time to live.
 *
 * Two-way: a key may sit in either of two slots (two parts of its
 * digest pick them), and a new entry replaces the older of its two, so
 * the memory is bounded by nslots and two keys in use at once that share
 * one slot both stay (direct-mapped, such a pair, a consumer key and a
 * backend key say, evicted each other on every request and read the
 * database each time). Not shared between processes; each worker fills
 * its own after fork.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_CACHE_H
#define ASYNCEXEC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define CACHE_KEY_LEN	32

struct cache;

struct cache	*cache_new(size_t nslots, size_t vsize, unsigned ttl_seconds);
void		 cache_free(struct cache *);
int		 cache_get(struct cache *, const unsigned char *key, void *val,
		    int64_t now_ms);
void		 cache_put(struct cache *, const unsigned char *key,
		    const void *val, int64_t now_ms);

#endif
