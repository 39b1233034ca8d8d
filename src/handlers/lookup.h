/*
 * lookup.h - keys, routes and backend-route grants, read through the
 * worker's TTL caches (config cache_ttl_seconds; 0 disables them).
 *
 * Only positive answers are cached (for routes: enabled ones), so a
 * new key, a new route or a re-enabled route works at once; a revoked
 * key, a disabled route or a removed grant stops working within the TTL
 * (a key's revocation time is cached with it, so the end of a rotation's
 * grace, asyncexec-admin key rotate, takes effect on time). Each returns
 * REPO_OK, REPO_NOTFOUND or REPO_ERR like the repository calls they wrap.
 * lookup_mark is how the request's terminal transition sets the webhook
 * outbox mark: MARK_NONE while the worker read, less than WEBHOOK_SEEN_MS
 * ago, that no endpoint is enabled anywhere.
 *
 * handlers layer: the handlers and the worker (serve).
 */
#ifndef ASYNCEXEC_LOOKUP_H
#define ASYNCEXEC_LOOKUP_H

#include "app.h"
#include "http.h"
#include "repo.h"

struct lookup;

struct lookup	*lookup_new(unsigned ttl_seconds);
void		 lookup_free(struct lookup *);
int		 lookup_key(struct app *, const unsigned char *hash,
		    struct key_row *);
int		 lookup_route(struct app *, const char *env, const char *svc,
		    const char *op, struct route_row *);
int		 lookup_serves(struct app *, uint64_t key_id, const char *env,
		    const char *svc, const char *op);
int		 lookup_serves_cached(struct app *, uint64_t key_id,
		    const unsigned char route[CB_ROUTE_LEN]);
enum repo_mark	 lookup_mark(struct app *);
int		 lookup_idkey(struct app *);
int		 lookup_idkey_live(const struct app *, unsigned version,
		    int64_t now);
int		 lookup_idkey_open(struct app *, unsigned version);

#endif
