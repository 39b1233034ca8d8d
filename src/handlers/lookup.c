/*
 * lookup.c - cached reads of keys, routes and backend grants, and of
 * whether any webhook endpoint is enabled.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cbtoken.h"
#include "clock.h"
#include "config.h"
#include "crypto.h"
#include "log.h"
#include "lookup.h"
#include "webhook.h"

#define LOOKUP_SLOTS	1024
/* the least time between two reads of the keys for a token of a version
 * newer than any the worker knows (lookup_idkey_open) */
#define IDKEY_REREAD_MS	1000

struct lookup {
	struct cache	*keys;		/* key hash -> struct key_row */
	struct cache	*routes;	/* H(0, cb_route) -> struct route_row */
	struct cache	*serves;	/* H(key id, cb_route) -> int */
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
	int64_t	 now = clock_now_ms();
	int	 rc;

	if (app->lookup != NULL && cache_get(app->lookup->keys, hash, k, now))
		return REPO_OK;
	rc = repo_key_by_hash(app->db, hash, k);
	if (rc == REPO_OK && app->lookup != NULL)
		cache_put(app->lookup->keys, hash, k, now);
	return rc;
}

/*
 * A cache key: key_id (0 for the routes cache, whose keys are the routes
 * alone) and the route's cb_route digest.
 */
static void
cache_digest(uint64_t key_id, const unsigned char route[CB_ROUTE_LEN],
    unsigned char out[SHA256_LEN])
{
	unsigned char	 s[8 + CB_ROUTE_LEN];
	int		 i;

	for (i = 0; i < 8; i++)
		s[i] = (unsigned char)(key_id >> (8 * i));
	memcpy(s + 8, route, CB_ROUTE_LEN);
	crypto_sha256(s, sizeof(s), out);
}

int
lookup_route(struct app *app, const char *env, const char *svc,
    const char *op, struct route_row *r)
{
	unsigned char	 d[SHA256_LEN], route[CB_ROUTE_LEN];
	int64_t		 now = clock_now_ms();
	int		 rc;

	cb_route(env, svc, op, route);
	cache_digest(0, route, d);
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
	unsigned char	 d[SHA256_LEN], route[CB_ROUTE_LEN];
	int64_t		 now = clock_now_ms();
	int		 yes = 1, rc;

	cb_route(env, svc, op, route);
	cache_digest(key_id, route, d);
	if (app->lookup != NULL && cache_get(app->lookup->serves, d, &yes, now))
		return REPO_OK;
	rc = repo_backend_serves(app->db, key_id, env, svc, op);
	if (rc == REPO_OK && app->lookup != NULL)
		cache_put(app->lookup->serves, d, &yes, now);
	return rc;
}

/*
 * Whether the grants cache holds, unexpired, that key key_id serves the
 * route whose cb_route digest is route: 1, or 0 (not cached: ask
 * lookup_serves with the route's names).
 */
int
lookup_serves_cached(struct app *app, uint64_t key_id,
    const unsigned char route[CB_ROUTE_LEN])
{
	unsigned char	 d[SHA256_LEN];
	int		 yes = 0;

	cache_digest(key_id, route, d);
	return app->lookup != NULL && cache_get(app->lookup->serves, d, &yes,
	    clock_now_ms()) && yes;
}

/* Whether key version v of app opens tokens at now. */
int
lookup_idkey_live(const struct app *app, unsigned v, int64_t now)
{
	return v < POLL_KEY_VERSIONS && app->pkey[v].present &&
	    (app->pkey[v].retire_at == 0 || app->pkey[v].retire_at > now);
}

/* Installs the n keys read into app; 0, or -1 when none is live. */
static int
idkeys_install(struct app *app, const struct poll_key_row *k, size_t n,
    int64_t now)
{
	size_t	 i;
	int	 newest = -1;

	memset(app->pkey, 0, sizeof(app->pkey));
	app->idkey_top = 0;
	for (i = 0; i < n; i++) {
		app->pkey[k[i].version].present = 1;
		if (k[i].version > app->idkey_top)
			app->idkey_top = k[i].version;
		memcpy(app->pkey[k[i].version].key, k[i].key, IDKEY_LEN);
		app->pkey[k[i].version].retire_at = k[i].retire_at;
		if (lookup_idkey_live(app, k[i].version, now) &&
		    (int)k[i].version > newest)
			newest = (int)k[i].version;
	}
	if (newest == -1)
		return -1;
	app->idkey_version = (unsigned)newest;
	memcpy(app->idkey, app->pkey[newest].key, IDKEY_LEN);
	return 0;
}

/*
 * How the request's terminal transition sets the outbox mark: MARK_NONE
 * while the worker's reading that no endpoint is enabled anywhere is
 * younger than WEBHOOK_SEEN_MS (the reading's time is taken before the
 * read, so it sees every endpoint committed before then), else it reads
 * again; MARK_ASK when one is enabled, the read failed, or caches are
 * off (cache_ttl_seconds = 0: every transition asks).
 */
enum repo_mark
lookup_mark(struct app *app)
{
	int64_t		 now = clock_mono_ms();
	int		 any;

	if (app->cfg->cache_ttl_seconds == 0)
		return MARK_ASK;
	if (app->hooks_read == 0 || now - app->hooks_read >= WEBHOOK_SEEN_MS) {
		if (repo_hooks_any(app->db, &any) != REPO_OK)
			return MARK_ASK;
		app->hooks_none = !any;
		app->hooks_read = now;
	}
	return app->hooks_none ? MARK_NONE : MARK_ASK;
}

/*
 * Reads the poll-token keys into app at now. While the database cannot
 * be read, the keys already read stay in use. REPO_OK, or REPO_ERR
 * (database down before any key was read, or no live key: logged).
 */
static int
idkeys_read(struct app *app, int64_t now)
{
	struct poll_key_row	 k[POLL_KEY_VERSIONS];
	size_t			 n = 0;
	int			 rc;

	rc = repo_poll_keys(app->db, k, POLL_KEY_VERSIONS, &n);
	if (rc == REPO_OK && idkeys_install(app, k, n, now) == 0) {
		app->idkey_ok = 1;
		app->idkeys_read = now;
		explicit_bzero(k, sizeof(k));
		return REPO_OK;
	}
	explicit_bzero(k, sizeof(k));
	if (rc != REPO_ERR) {
		log_error("s2r_secret: no live poll-token key (" MIGRATE_HINT
		    ")");
		app->idkey_ok = 0;
	}
	return app->idkey_ok ? REPO_OK : REPO_ERR;
}

/*
 * Reads the poll-token keys (migrations 3 and 5; rotated by
 * asyncexec-admin poll-key rotate) into app, again once they are older
 * than the cache TTL, so a rotation reaches every worker within it (and
 * at once for a token of the new version: lookup_idkey_open). Returns
 * as idkeys_read.
 */
int
lookup_idkey(struct app *app)
{
	unsigned	 ttl = app->cfg->cache_ttl_seconds;
	int64_t		 now = clock_now_ms();

	if (app->idkey_ok && now - app->idkeys_read < (int64_t)ttl * 1000)
		return REPO_OK;
	return idkeys_read(app, now);
}

/*
 * Whether key version v of app opens tokens now (lookup_idkey_live),
 * the keys loaded. A version newer than any the worker read may be that
 * of a rotation made since, whose tokens another worker already seals:
 * the keys are read again first, at most once per IDKEY_REREAD_MS, so
 * that tokens naming versions that do not exist cannot make every
 * request a database read. 1 or 0.
 */
int
lookup_idkey_open(struct app *app, unsigned v)
{
	int64_t	 mono = clock_mono_ms();

	if (v < POLL_KEY_VERSIONS && v > app->idkey_top && app->idkey_ok &&
	    (app->idkeys_forced == 0 ||
	    mono - app->idkeys_forced >= IDKEY_REREAD_MS)) {
		app->idkeys_forced = mono;
		(void)idkeys_read(app, clock_now_ms());
	}
	return lookup_idkey_live(app, v, clock_now_ms());
}
