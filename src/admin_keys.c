/*
 * admin_keys.c - asyncexec-admin poll-key rotate | list: the keys that
 * seal execution ids in poll tokens (see sql/003 and sql/005).
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "json.h"
#include "repo.h"

#define GRACE_DEFAULT_HOURS	24

int
chk_pollkey_rotate(struct opts *o)
{
	o->num = GRACE_DEFAULT_HOURS;
	if (o->val[O_GRACE] != NULL && admin_uint_arg(o->val[O_GRACE], 0, 8760,
	    &o->num) != 0)
		return admin_usage_error(NULL, "--grace-hours must be 0..8760");
	return 0;
}

/*
 * poll-key rotate [--grace-hours N]: a new key seals the tokens issued
 * from now on; the older keys open theirs for N more hours (default 24).
 */
int
cmd_pollkey_rotate(struct ctx *c)
{
	unsigned	 v = 0;
	int		 rc;

	rc = repo_poll_key_rotate(c->db, (unsigned)c->o->num * 3600,
	    json_now_ms(), &v);
	if (rc == REPO_BUSY)
		return admin_fail("another migrate or rotate holds the "
		    "migration lock; try again");
	if (rc == REPO_DUP)
		return admin_fail("all %d key versions are used; no rotation "
		    "is possible", POLL_KEY_VERSIONS - 1);
	if (rc != REPO_OK)
		return admin_fail("rotation failed (is the schema at version "
		    "%d? run asyncexec-admin migrate)", POLL_KEY_SCHEMA);
	printf("poll-token key version %u seals new tokens (within "
	    "cache_ttl_seconds = %u s); older keys open their tokens for %ld "
	    "more hour(s)\n", v, c->cfg.cache_ttl_seconds, c->o->num);
	return 0;
}

/* The state of key k at now: current (the newest live), live, retired. */
static const char *
key_state(const struct poll_key_row *k, unsigned newest, int64_t now)
{
	if (k->retire_at != 0 && k->retire_at <= now)
		return "retired";
	return k->version == newest ? "current" : "retiring";
}

/* poll-key list: version, state and retire time of every key. */
int
cmd_pollkey_list(struct ctx *c)
{
	static const char *const names[] = { "version", "state", "retire_at" };
	struct poll_key_row	 k[POLL_KEY_VERSIONS];
	struct listing		*l;
	char			 ver[8], when[RFC3339_LEN + 1];
	const char		*cols[3];
	unsigned		 newest = 0;
	int64_t			 now = json_now_ms();
	size_t			 i, n;

	if (repo_poll_keys(c->db, k, POLL_KEY_VERSIONS, &n) != REPO_OK)
		return 1;
	for (i = 0; i < n; i++)
		if ((k[i].retire_at == 0 || k[i].retire_at > now) &&
		    k[i].version > newest)
			newest = k[i].version;
	if ((l = listing_new(c->o->json, names, "nss")) == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(ver, sizeof(ver), "%u", k[i].version);
		if (k[i].retire_at != 0)
			json_time(k[i].retire_at, when);
		cols[0] = ver;
		cols[1] = key_state(&k[i], newest, now);
		cols[2] = k[i].retire_at != 0 ? when : "";
		listing_row(l, cols, 3);
	}
	explicit_bzero(k, sizeof(k));
	return listing_end(l, REPO_OK);
}
