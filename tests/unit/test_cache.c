/* Unit tests: the two-way TTL cache behind the worker lookups. */
#include <string.h>

#include "cache.h"
#include "check.h"
#include "crypto.h"

int
main(void)
{
	unsigned char	 k1[32], k2[32], k3[32], k4[32], k5[32];
	struct cache	*c, *off;
	int		 v = 0;

	crypto_sha256("one", 3, k1);
	crypto_sha256("two", 3, k2);
	memcpy(k3, k1, 32);
	k3[8] ^= 1;		/* k1's first slot, another second one */
	memcpy(k4, k1, 32);
	k4[31] ^= 1;		/* both of k1's slots (first 16 bytes equal) */
	memcpy(k5, k4, 32);
	k5[30] ^= 1;		/* and again */
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
	CHECK(!cache_get(c, k3, &v, 1000));	/* shares a slot, other key */
	/* two keys used in turn that share a slot both stay (a consumer
	 * key and a backend key: direct-mapped, each evicted the other) */
	cache_put(c, k3, &(int){ 33 }, 1001);
	CHECK(cache_get(c, k3, &v, 1001) && v == 33);
	CHECK(cache_get(c, k1, &v, 1001) && v == 11);
	cache_put(c, k1, &(int){ 12 }, 1002);	/* stays in its slot */
	CHECK(cache_get(c, k1, &v, 1002) && v == 12);
	CHECK(cache_get(c, k3, &v, 1002) && v == 33);
	/* on both of k1's slots: the empty one, then the older of the two */
	cache_put(c, k4, &(int){ 44 }, 1003);
	CHECK(cache_get(c, k4, &v, 1003) && v == 44);
	CHECK(cache_get(c, k1, &v, 1003) && v == 12);
	cache_put(c, k5, &(int){ 55 }, 1004);
	CHECK(cache_get(c, k5, &v, 1004) && v == 55);
	CHECK(!cache_get(c, k1, &v, 1004));	/* stored at 1002, k4 at 1003 */
	CHECK(cache_get(c, k4, &v, 1004) && v == 44);
	CHECK(cache_get(c, k3, &v, 1004) && v == 33);
	cache_free(c);
	off = cache_new(16, sizeof(int), 0);	/* TTL 0: never caches */
	cache_put(off, k1, &(int){ 1 }, 1000);
	CHECK(!cache_get(off, k1, &v, 1000));
	cache_free(off);
	CHECK(!cache_get(NULL, k1, &v, 1000));
	return check_done("unit_cache");
}
