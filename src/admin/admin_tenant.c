/*
 * admin_tenant.c - asyncexec-admin tenant set | list: the per-tenant
 * quota of open (waiting_callback) executions (sql/009_tenant_quota.sql).
 */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "clock.h"
#include "repo.h"
#include "repo_admin.h"

#define MAX_OPEN_MAX	1000000000L
#define TENANT_SCHEMA	9	/* sql/009 makes s2r_tenant */

/* tenant set TENANT --max-open N: a valid tenant and 0..10^9. */
int
chk_tenant_set(struct opts *o)
{
	if (!valid_tenant(o->pos[0]))
		return admin_usage_error(NULL, "tenant must match "
		    "[A-Za-z0-9._-]{1,64}: %s", o->pos[0]);
	if (o->val[O_MAXOPEN] == NULL)
		return admin_usage_error(NULL, "tenant set needs --max-open N");
	if (admin_uint_arg(o->val[O_MAXOPEN], 0, MAX_OPEN_MAX, &o->num) != 0)
		return admin_usage_error(NULL, "--max-open must be 0..%ld "
		    "(0: unlimited)", MAX_OPEN_MAX);
	return 0;
}

/*
 * tenant set TENANT --max-open N: stores the limit (0: unlimited); the
 * workers apply it within cache_ttl_seconds.
 */
int
cmd_tenant_set(struct ctx *c)
{
	const char	*t = c->o->pos[0];

	if (repo_tenant_set(c->db, t, (unsigned)c->o->num, clock_now_ms()) !=
	    REPO_OK)
		return admin_fail("cannot set the quota (%s)",
		    admin_cause(c->db, TENANT_SCHEMA));
	if (c->o->num == 0)
		printf("tenant %s: no quota (within cache_ttl_seconds = %u s)\n",
		    t, c->cfg.cache_ttl_seconds);
	else
		printf("tenant %s: at most %ld open executions (within "
		    "cache_ttl_seconds = %u s)\n", t, c->o->num,
		    c->cfg.cache_ttl_seconds);
	return 0;
}

/* tenant list: every tenant with a quota row, its limit and backlog. */
int
cmd_tenant_list(struct ctx *c)
{
	static const char *const names[] = { "tenant", "max_open", "waiting" };
	struct listing	*l;

	if ((l = listing_new(c->o->json, names, "snn")) == NULL)
		return 1;
	return listing_end(l, repo_tenant_list(c->db, listing_row, l));
}
