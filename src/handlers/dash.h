/*
 * dash.h - the operator dashboard's framework (dash.c), shared by its
 * pages (dash_*.c): read-only HTML under /dashboard/ on the loopback
 * server that serves /metrics (nginx/asyncexec.conf), no JavaScript, one
 * stylesheet served by the app, a strict Content-Security-Policy.
 *
 * Every text that is not the page's own markup goes through dash_esc,
 * the one escaping function: dash_html escapes each %s with it. Links
 * are relative (a page is reached through a tunnel or under another
 * prefix); "base" is "" on /dashboard/NAME and "../" one level deeper.
 *
 * handlers layer: the dash_*.c pages.
 */
#ifndef ASYNCEXEC_DASH_H
#define ASYNCEXEC_DASH_H

#include <stdint.h>

#include "handlers.h"

struct ddb;

/* The pages of the navigation, in its order: X(id, path, title). */
#define DASH_PAGES(X)							\
	X(HEALTH, "health", "Health")					\
	X(ROUTES, "routes", "Routes")					\
	X(ATTENTION, "attention", "Attention")				\
	X(TENANTS, "tenants", "Tenants")				\
	X(KEYS, "keys", "Keys")						\
	X(WEBHOOKS, "webhooks", "Webhooks")

enum dash_page {
#define DASH_ENUM(id, path, title)	DASH_##id,
	DASH_PAGES(DASH_ENUM)
#undef DASH_ENUM
	DASH_NONE		/* a page outside the navigation */
};

#define DASH_CSP	"default-src 'none'; style-src 'self'"

void		 dash_esc(struct buf *, const char *);
void		 dash_html(struct buf *, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
void		 dash_begin(struct resp *, enum dash_page, const char *base,
		    const char *title);
enum herr	 dash_end(struct resp *);
void		 dash_time(struct buf *, int64_t ms);
void		 dash_age(struct buf *, int64_t ms, int64_t now);
void		 dash_unavailable(struct buf *, const char *what);
struct ddb	*dash_db(struct app *);
enum herr	 dash_query_u64(const struct req *, const char *name,
		    uint64_t *v, int *given);
enum herr	 dash_query_str(const struct req *, const char *name,
		    char *v, size_t size, int *given);

#endif
