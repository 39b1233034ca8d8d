/*
 * fake_repo_dash.c - the dashboard's repository (src/repo/repo_dash.h)
 * for fuzz_request: a handle that is never a connection, no routes, no
 * keys, no execution; failing when the fake is (fake_failing).
 */
#include <stdint.h>
#include <string.h>

#include "fake_repo_int.h"
#include "repo_dash.h"

struct ddb {
	int	 unused;
};

static struct ddb	 the_ddb;

struct ddb *
repo_dash_open(const struct config *cfg)
{
	(void)cfg;
	return &the_ddb;
}

void
repo_dash_close(struct ddb *d)
{
	(void)d;
}

enum repo_rc
repo_dash_routes(struct ddb *d, uint64_t after, struct dash_route *r,
    size_t max, size_t *n)
{
	(void)d;
	(void)after;
	(void)r;
	(void)max;
	*n = 0;
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_route_open(struct ddb *d, const struct dash_route *r, int64_t now,
    struct dash_open *o)
{
	(void)d;
	(void)r;
	(void)now;
	memset(o, 0, sizeof(*o));
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_route_ended(struct ddb *d, const struct dash_route *r, int64_t now,
    struct dash_ended *e)
{
	(void)d;
	(void)r;
	(void)now;
	memset(e, 0, sizeof(*e));
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_exec(struct ddb *d, uint64_t id, struct exec_admin *e)
{
	(void)d;
	(void)id;
	memset(e, 0, sizeof(*e));
	return fake_failing() ? REPO_ERR : REPO_NOTFOUND;
}

enum repo_rc
repo_dash_keys(struct ddb *d, uint64_t before, struct dash_key *k,
    size_t max, size_t *n)
{
	(void)d;
	(void)before;
	(void)k;
	(void)max;
	*n = 0;
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_attention(struct ddb *d, enum dash_att which,
    const struct dash_route *only, unsigned max_attempts, int show_errors,
    int64_t now, unsigned offset, struct dash_att_row *r, size_t max,
    size_t *n, int *capped)
{
	(void)d;
	(void)which;
	(void)only;
	(void)max_attempts;
	(void)show_errors;
	(void)now;
	(void)offset;
	(void)r;
	(void)max;
	*n = 0;
	*capped = 0;
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_tenants(struct ddb *d, const char *after, struct dash_tenant *t,
    size_t max, size_t *n)
{
	(void)d;
	(void)after;
	(void)t;
	(void)max;
	*n = 0;
	return fake_failing() ? REPO_ERR : REPO_OK;
}

enum repo_rc
repo_dash_webhooks(struct ddb *d, int after_enabled, uint64_t after_id,
    struct dash_webhook *w, size_t max, size_t *n, struct dash_wh_caps *caps)
{
	(void)d;
	(void)after_enabled;
	(void)after_id;
	(void)w;
	(void)max;
	*n = 0;
	memset(caps, 0, sizeof(*caps));
	return fake_failing() ? REPO_ERR : REPO_OK;
}
