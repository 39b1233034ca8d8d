/*
 * lookup.c - cached reads of keys, routes and backend grants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "crypto.h"
#include "json.h"
#include "log.h"
#include "lookup.h"

#define LOOKUP_SLOTS	1024

struct lookup {
	struct cache	*keys;		/* key hash -> struct key_row */
	struct cache	*routes;	/* H(route) -> struct route_row */
	struct cache	*serves;	/* H(key id, route) -> int */
};

/* A set of caches with the given TTL; NULL when out of memory. */
struct lookup *
lookup_new(unsigned ttl)
{
	struct lookup	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->keys = cache_new(LOOKUP_SLOTS, sizeof(struct key_row), ttl);
	l->routes = cache_new(LOOKUP_SLOTS, sizeof(struct route_row), ttl);
	l->serves = cache_new(LOOKUP_SLOTS, sizeof(int), ttl);
	if (l->keys == NULL || l->routes == NULL || l->serves == NULL) {
		lookup_free(l);
		return NULL;
	}
	return l;
}

void
lookup_free(struct lookup *l)
{
	if (l == NULL)
		return;
	cache_free(l->keys);
	cache_free(l->routes);
	cache_free(l->serves);
	free(l);
}

int
lookup_key(struct app *app, const unsigned char *hash, struct key_row *k)
{
	int64_t	 now = json_now_ms();
	int	 rc;

	if (app->lookup != NULL && cache_get(app->lookup->keys, hash, k, now))
		return REPO_OK;
	rc = repo_key_by_hash(app->db, hash, k);
	if (rc == REPO_OK && app->lookup != NULL)
		cache_put(app->lookup->keys, hash, k, now);
	return rc;
}

/* The cache key of a route, optionally qualified by a key id. */
static void
route_digest(uint64_t key_id, const char *env, const char *svc,
    const char *op, unsigned char out[SHA256_LEN])
{
	char	 s[3 * (NAME_MAX_LEN + 1) + 24];
	int	 n;

	n = snprintf(s, sizeof(s), "%llu/%s/%s/%s",
	    (unsigned long long)key_id, env, svc, op);
	crypto_sha256(s, (size_t)n, out);
}

int
lookup_route(struct app *app, const char *env, const char *svc,
    const char *op, struct route_row *r)
{
	unsigned char	 d[SHA256_LEN];
	int64_t		 now = json_now_ms();
	int		 rc;

	route_digest(0, env, svc, op, d);
	if (app->lookup != NULL && cache_get(app->lookup->routes, d, r, now))
		return REPO_OK;
	rc = repo_route_get(app->db, env, svc, op, r);
	/* Only enabled routes: `route enable` then works at once, like a
	 * new route, and `route disable` within the TTL. */
	if (rc == REPO_OK && r->enabled && app->lookup != NULL)
		cache_put(app->lookup->routes, d, r, now);
	return rc;
}

int
lookup_serves(struct app *app, uint64_t key_id, const char *env,
    const char *svc, const char *op)
{
	unsigned char	 d[SHA256_LEN];
	int64_t		 now = json_now_ms();
	int		 yes = 1, rc;

	route_digest(key_id, env, svc, op, d);
	if (app->lookup != NULL && cache_get(app->lookup->serves, d, &yes, now))
		return REPO_OK;
	rc = repo_backend_serves(app->db, key_id, env, svc, op);
	if (rc == REPO_OK && app->lookup != NULL)
		cache_put(app->lookup->serves, d, &yes, now);
	return rc;
}

/*
 * Reads the key that seals execution ids in poll tokens (migration 3)
 * into app->idkey, once per process: it never changes. REPO_OK, or
 * REPO_ERR (database down, or the row missing or malformed: logged).
 */
int
lookup_idkey(struct app *app)
{
	size_t	 len = 0;
	int	 rc;

	if (app->idkey_ok)
		return REPO_OK;
	rc = repo_secret_get(app->db, "poll_token_id_key", app->idkey,
	    sizeof(app->idkey), &len);
	if (rc == REPO_OK && len == IDKEY_LEN) {
		app->idkey_ok = 1;
		return REPO_OK;
	}
	if (rc != REPO_ERR)
		log_error("s2r_secret: poll_token_id_key missing or not %d "
		    "bytes (run asyncexec-admin migrate)", IDKEY_LEN);
	return REPO_ERR;
}
