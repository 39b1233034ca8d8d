/*
 * admin_keys.c - asyncexec-admin poll-key rotate | list: the keys that
 * seal execution ids in poll tokens (see sql/003 and sql/005); and key
 * rotate: a consumer key's successor (sql/007).
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "crypto.h"
#include "json.h"
#include "repo.h"
#include "repo_admin.h"

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
	    clock_now_ms(), &v);
	if (rc == REPO_BUSY)
		return admin_fail("another migrate or rotate holds the "
		    "migration lock; try again");
	if (rc == REPO_DUP)
		return admin_fail("all %d key versions are used; no rotation "
		    "is possible", POLL_KEY_VERSIONS - 1);
	if (rc != REPO_OK)
		return admin_fail("rotation failed (%s)",
		    admin_cause(c->db, POLL_KEY_SCHEMA));
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
	int64_t			 now = clock_now_ms();
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

/* key rotate ID|KEY [--grace-hours N]: the key reference and the grace. */
int
chk_key_rotate(struct opts *o)
{
	int	 rc;

	if ((rc = chk_key_ref(o)) != 0)
		return rc;
	return chk_pollkey_rotate(o);
}

/* What key rotate's publish step prints and learns. */
struct rotate_out {
	const char	*key;
	int		 printed;	/* the key went out whole */
};

/* repo_publish_fn: prints the new key before the commit; 0 or -1. */
static int
rotate_publish(void *arg, const struct key_rotation *r)
{
	struct rotate_out	*p = arg;

	(void)r;
	printf("%s\n", p->key);
	if (admin_written("no key was created, and the old key is "
	    "unchanged") == -1)
		return -1;
	p->printed = 1;
	return 0;
}

/*
 * key rotate's note on stderr: the new key's id and when the old one is
 * revoked, as stored (an earlier end than the grace asked for is kept).
 */
static void
rotated_note(struct ctx *c, uint64_t id, const struct key_rotation *r)
{
	char	 when[RFC3339_LEN + 1], asked[RFC3339_LEN + 1];

	json_time(r->revoked_at, when);
	json_time(r->asked, asked);
	fprintf(stderr, "key %llu replaces key %llu, which is revoked at %s "
	    "(workers see it within cache_ttl_seconds = %u s)\n",
	    (unsigned long long)r->new_id, (unsigned long long)id, when,
	    c->cfg.cache_ttl_seconds);
	if (r->revoked_at < r->asked)
		fprintf(stderr, "asyncexec-admin: note: key %llu was already "
		    "in the grace of an earlier rotation, which ends it at %s: "
		    "that end was kept (--grace-hours %ld asked for %s, which "
		    "never extends a grace)\n", (unsigned long long)id, when,
		    c->o->num, asked);
}

/*
 * key rotate ID|KEY [--grace-hours N]: prints a new consumer key of the
 * old one's tenant and lineage (its executions can be polled, cancelled
 * and listed with the new one); the old key works for N more hours
 * (default 24; 0: revoked now, which workers see within
 * cache_ttl_seconds), or less when an earlier rotation ends it sooner.
 * The key is printed before the commit: if it cannot be written, nothing
 * changes; if the commit fails, the key is looked up again to say
 * whether it took effect. 0 or 1.
 */
int
cmd_key_rotate(struct ctx *c)
{
	unsigned char		 hash[SHA256_LEN];
	char			 key[3 + SECRET_B64_LEN + 1], chk[200];
	struct key_row		 k;
	struct key_rotation	 r;
	struct rotate_out	 p = { key, 0 };
	uint64_t		 id = c->o->id;
	int			 rc;

	if (id == 0) {		/* named by the key itself */
		crypto_sha256(c->o->pos[0], strlen(c->o->pos[0]), hash);
		if ((rc = repo_key_by_hash(c->db, hash, &k)) == REPO_ERR)
			return 1;
		id = rc == REPO_OK && !k.backend ? k.id : 0;
	}
	if (crypto_new_secret("ak_", key, sizeof(key), hash) == -1)
		return 1;
	rc = id == 0 ? REPO_NOTFOUND : repo_key_rotate(c->adb, id, hash,
	    (unsigned)c->o->num * 3600, clock_now_ms(), rotate_publish, &p,
	    &r);
	explicit_bzero(key, sizeof(key));
	if (rc == REPO_NOTFOUND)
		return admin_fail("no such live consumer key");
	if (rc != REPO_OK && p.printed) {
		snprintf(chk, sizeof(chk), "key list shows key %llu (the "
		    "new one, replacing key %llu) only if it took effect: then "
		    "use the printed key, else do not",
		    (unsigned long long)r.new_id, (unsigned long long)id);
		/* on c->db: another connection than the rotation's */
		if (admin_after_commit(repo_key_stored(c->db, hash), "key",
		    chk) != 0)
			return 1;
	} else if (rc != REPO_OK)
		return 1;
	rotated_note(c, id, &r);
	return 0;
}
