/*
 * quota.c - the per-tenant quota check of submit (see quota.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "clock.h"
#include "config.h"
#include "crypto.h"
#include "quota.h"
#include "repo.h"

#define QUOTA_SLOTS	1024

/* What a worker knows of a tenant, read at read_at. */
struct tenant_quota {
	int64_t		 read_at;	/* ms */
	unsigned	 max_open;	/* 0: unlimited */
	unsigned	 open;		/* waiting (+ own submits since) */
};

struct quota {
	struct cache	*tenants;	/* H("quota/" tenant) */
};

/* A quota cache with the given TTL; NULL when out of memory. */
struct quota *
quota_new(unsigned ttl)
{
	struct quota	*q;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return NULL;
	q->tenants = cache_new(QUOTA_SLOTS, sizeof(struct tenant_quota), ttl);
	if (q->tenants == NULL) {
		free(q);
		return NULL;
	}
	return q;
}

void
quota_free(struct quota *q)
{
	if (q == NULL)
		return;
	cache_free(q->tenants);
	free(q);
}

/* The cache key of tenant t. */
static void
digest(const char *t, unsigned char out[SHA256_LEN])
{
	char	 s[TENANT_MAX_LEN + 8];
	int	 n;

	n = snprintf(s, sizeof(s), "quota/%s", t);
	crypto_sha256(s, (size_t)n, out);
}

/*
 * Fills *e with the tenant's limit and, when it has one, its waiting
 * executions (counted up to the limit + 1), from the cache while younger
 * than the TTL, else from the database. REPO_OK or REPO_ERR.
 */
static int
tenant_read(struct app *app, const char *t, const unsigned char *d,
    struct tenant_quota *e)
{
	struct cache	*c = app->quota != NULL ? app->quota->tenants : NULL;
	int64_t		 now = clock_now_ms();
	int		 rc;

	if (cache_get(c, d, e, now))
		return REPO_OK;
	memset(e, 0, sizeof(*e));
	e->read_at = now;
	rc = repo_tenant_quota(app->db, t, &e->max_open);
	if (rc == REPO_ERR)
		return REPO_ERR;
	if (e->max_open > 0 && repo_tenant_open(app->db, t, e->max_open + 1,
	    &e->open) != REPO_OK)
		return REPO_ERR;
	cache_put(c, d, e, now);
	return REPO_OK;
}

/*
 * Whether tenant t may store one more waiting execution: HERR_OK,
 * HERR_QUOTA_EXCEEDED (as far as this worker knows, within the TTL) or
 * HERR_UNAVAILABLE (the database failed).
 */
enum herr
quota_admit(struct app *app, const char *t)
{
	struct tenant_quota	 e;
	unsigned char		 d[SHA256_LEN];

	digest(t, d);
	if (tenant_read(app, t, d, &e) != REPO_OK)
		return HERR_UNAVAILABLE;
	if (e.max_open == 0 || e.open < e.max_open)
		return HERR_OK;
	return HERR_QUOTA_EXCEEDED;
}

/*
 * Counts a new execution of tenant t (just stored by this worker) in
 * the cached count, which keeps its read time: until the next read this
 * worker sees its own submits.
 */
void
quota_note(struct app *app, const char *t)
{
	struct tenant_quota	 e;
	unsigned char		 d[SHA256_LEN];
	struct cache		*c = app->quota != NULL ? app->quota->tenants :
				    NULL;

	digest(t, d);
	if (!cache_get(c, d, &e, clock_now_ms()) || e.max_open == 0)
		return;
	e.open++;
	cache_put(c, d, &e, e.read_at);
}

/*
 * The Retry-After of a 429: the longest a count may lag (the cache TTL),
 * at least retry_after_seconds and 1.
 */
unsigned
quota_retry_after(const struct config *cfg)
{
	unsigned	 s = cfg->cache_ttl_seconds;

	if (s < cfg->retry_after_seconds)
		s = cfg->retry_after_seconds;
	return s > 0 ? s : 1;
}
