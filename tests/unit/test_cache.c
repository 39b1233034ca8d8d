/* Unit tests: the direct-mapped TTL cache behind the worker lookups. */
#include <string.h>

#include "cache.h"
#include "check.h"
#include "crypto.h"

int
main(void)
{
	unsigned char	 k1[32], k2[32], k3[32];
	struct cache	*c, *off;
	int		 v = 0;

	crypto_sha256("one", 3, k1);
	crypto_sha256("two", 3, k2);
	memcpy(k3, k1, 32);
	k3[31] ^= 1;		/* same slot as k1 (first 8 bytes equal) */
	c = cache_new(16, sizeof(int), 5);
	CHECK(c != NULL);
	CHECK(!cache_get(c, k1, &v, 1000));
	cache_put(c, k1, &(int){ 11 }, 1000);
	CHECK(cache_get(c, k1, &v, 1000) && v == 11);
	CHECK(cache_get(c, k1, &v, 5999) && v == 11);
	CHECK(!cache_get(c, k1, &v, 6000));	/* TTL is 5 s */
	CHECK(!cache_get(c, k1, &v, 999));	/* clock went back */
	CHECK(!cache_get(c, k2, &v, 1000));
	cache_put(c, k2, &(int){ 22 }, 1000);
	CHECK(cache_get(c, k2, &v, 1000) && v == 22);
	CHECK(!cache_get(c, k3, &v, 1000));	/* collides, other key */
	cache_put(c, k3, &(int){ 33 }, 1000);
	CHECK(cache_get(c, k3, &v, 1000) && v == 33);
	CHECK(!cache_get(c, k1, &v, 1000));	/* evicted by k3 */
	cache_free(c);
	off = cache_new(16, sizeof(int), 0);	/* TTL 0: never caches */
	cache_put(off, k1, &(int){ 1 }, 1000);
	CHECK(!cache_get(off, k1, &v, 1000));
	cache_free(off);
	CHECK(!cache_get(NULL, k1, &v, 1000));
	return check_done("unit_cache");
}
