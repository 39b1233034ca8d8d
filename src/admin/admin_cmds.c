/*
 * admin_cmds.c - asyncexec-admin's route and key verbs, stats, and the
 * output of listings (tab-separated text, or one JSON document).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "crypto.h"
#include "json.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_revoke.h"

/* tries of a write that a deadlock undid (REPO_RETRY): another session
 * writing the same index ranges at the same moment */
#define ADMIN_TRIES	3

/* A write that lock conflicts undid ADMIN_TRIES times: says so. 1. */
static int
busy_fail(void)
{
	return admin_fail("other sessions held the rows this write needs "
	    "through %d tries (a deadlock or lock wait timeout each); nothing "
	    "was changed: run the command again", ADMIN_TRIES);
}

/*
 * Flushes standard output, where a secret was just printed: 0, or -1
 * when it could not be written, saying so with what (undone) it means
 * for what the command made.
 */
int
admin_written(const char *undone)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	admin_fail("cannot write the new secret to standard output (%s): "
	    "%s", strerror(errno), undone);
	return -1;
}

/*
 * After a COMMIT that failed once what (a key, a secret) was printed:
 * stored is what reading it back on a fresh connection found (REPO_OK:
 * the COMMIT took effect, its answer was lost; REPO_NOTFOUND: nothing
 * changed; else unknown, and check says how to find out). Says which on
 * stderr. 0 when it took effect (the command succeeded), else 1.
 */
int
admin_after_commit(enum repo_rc stored, const char *what, const char *check)
{
	if (stored == REPO_OK) {
		fprintf(stderr, "asyncexec-admin: note: the commit's answer was "
		    "lost, but it took effect: use the printed %s\n", what);
		return 0;
	}
	if (stored == REPO_NOTFOUND)
		return admin_fail("the commit failed after the %s was printed, "
		    "and nothing changed: do not use it (running the command "
		    "again is safe)", what);
	return admin_fail("the commit failed after the %s was printed, and "
	    "reading it back failed too: whether it took effect is unknown; "
	    "%s", what, check);
}

/*
 * What to do about db's failed statement, for a verb that needs schema
 * version (a table or column of that migration): migrate only when a
 * table or column is missing; else where the server's error is (logged
 * above). A static string.
 */
const char *
admin_cause(const struct db *db, int version)
{
	static char	 s[200];

	switch (repo_cause(db)) {
	case CAUSE_SCHEMA:
		snprintf(s, sizeof(s), "is the schema at version %d? "
		    MIGRATE_HINT, version);
		return s;
	case CAUSE_DENIED:
		return "the database user lacks a privilege for it, as logged "
		    "above: run asyncexec-admin check";
	case CAUSE_LOGIN:	/* the connect's hint is logged above */
	case CAUSE_OTHER:
		break;
	}
	return "the database's error is logged above";
}

/* Parses a decimal in [min, max] into *v; 0 or -1. */
int
admin_uint_arg(const char *s, long min, long max, long *v)
{
	char	*end;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -1;
	*v = strtol(s, &end, 10);
	return *end == '\0' && *v >= min && *v <= max ? 0 : -1;
}

/*
 * Argument s as a message may show it: s itself, or "(not shown)" when
 * it could be a key (ak_ or bk_ first: a malformed key is still a
 * secret) or holds a control character or is long.
 */
const char *
admin_shown(const char *s)
{
	size_t	 i;

	if (strncmp(s, "ak_", 3) == 0 || strncmp(s, "bk_", 3) == 0)
		return "(not shown: it may be a key)";
	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || i >= 200)
			return "(not shown)";
	return s;
}

/* Splits route s into o->env/svc/op; 0 or 2 (usage). */
int
admin_route_arg(struct opts *o, const char *s)
{
	if (valid_route_triple(s, o->env, o->svc, o->op))
		return 0;
	return admin_usage_error(NULL, "route must be ENV/SERVICE/OPERATION, "
	    "each [a-z0-9][a-z0-9._-]{0,63}: %s", admin_shown(s));
}

int
chk_route(struct opts *o)
{
	return admin_route_arg(o, o->pos[0]);
}

int
chk_route_add(struct opts *o)
{
	o->num = 7;
	if (o->val[O_DAYS] != NULL &&
	    admin_uint_arg(o->val[O_DAYS], 1, 36500, &o->num) == -1)
		return admin_usage_error(NULL, "--retention-days must be "
		    "1..36500");
	return chk_route(o);
}

int
chk_route_set(struct opts *o)
{
	if (o->val[O_DAYS] == NULL)
		return admin_usage_error(NULL, "route set needs "
		    "--retention-days N");
	return chk_route_add(o);
}

/* --label L, when given: 0 or 2 (usage). */
static int
label_arg(struct opts *o)
{
	if (o->val[O_LABEL] == NULL || valid_label(o->val[O_LABEL]))
		return 0;
	return admin_usage_error(NULL, "--label must be 1 to %d bytes of "
	    "UTF-8 without control characters (no tab, no newline)",
	    LABEL_MAX_LEN);
}

int
chk_key_create(struct opts *o)
{
	if (o->val[O_TENANT] == NULL)
		return admin_usage_error(NULL, "key create needs --tenant");
	if (!valid_tenant(o->val[O_TENANT]))
		return admin_usage_error(NULL, "tenant must match "
		    "[A-Za-z0-9._-]{1,64}");
	return label_arg(o);
}

int
chk_bkey_create(struct opts *o)
{
	int	 i, rc;

	if (o->nroutes == 0)
		return admin_usage_error(NULL, "backend-key create needs "
		    "--route");
	for (i = 0; i < o->nroutes; i++)
		if ((rc = admin_route_arg(o, o->routes[i])) != 0)
			return rc;
	return label_arg(o);
}

/*
 * Reads the key of `-` from standard input into o->key: one line (its
 * newline optional), an ak_ or bk_ key, nothing after it. 0, or 2
 * (usage; what was read is never shown).
 */
static int
key_stdin(struct opts *o)
{
	char	 line[sizeof(o->key) + 2];
	size_t	 n;
	int	 more;

	if (fgets(line, sizeof(line), stdin) == NULL)
		line[0] = '\0';
	n = strcspn(line, "\n");
	more = line[n] == '\n' ? fgetc(stdin) != EOF : n == sizeof(line) - 1;
	line[n] = '\0';
	if (n > 0 && line[n - 1] == '\r')
		line[--n] = '\0';
	if (!more && (valid_secret(line, "ak_") || valid_secret(line, "bk_"))) {
		memcpy(o->key, line, n + 1);
		o->pos[0] = o->key;
		explicit_bzero(line, sizeof(line));
		return 0;
	}
	explicit_bzero(line, sizeof(line));
	return admin_usage_error(NULL, "-: standard input must hold one key "
	    "(ak_ or bk_ and 43 base64url characters) on one line, nothing "
	    "else");
}

/*
 * pos[0] names a key: its id, `-` (the key on standard input), or the
 * key itself, which works but is warned about (ps and the shell's
 * history show it). bk_/ak_ is checked at run time. 0, or 2 (usage: a
 * malformed key is never shown).
 */
int
chk_key_ref(struct opts *o)
{
	if (strcmp(o->pos[0], "-") == 0)
		return key_stdin(o);
	if (valid_exec_id(o->pos[0], &o->id))
		return 0;
	if (valid_secret(o->pos[0], "ak_") || valid_secret(o->pos[0], "bk_")) {
		fprintf(stderr, "asyncexec-admin: warning: a key on the command "
		    "line shows in ps and in the shell's history; name it by its "
		    "id (key list, backend-key list), or give - and the key on "
		    "standard input\n");
		return 0;
	}
	return admin_usage_error(NULL, "the key must be named by its id, by - "
	    "(the key on standard input) or by the key; the argument is none "
	    "of them (not shown: it may be a key)");
}

int
chk_bkey_grant(struct opts *o)
{
	int	 rc;

	if ((rc = chk_key_ref(o)) != 0)
		return rc;
	return admin_route_arg(o, o->pos[1]);
}

int
cmd_route_add(struct ctx *c)
{
	struct opts	*o = c->o;
	int		 i, rc;

	for (i = 0, rc = REPO_RETRY; rc == REPO_RETRY && i < ADMIN_TRIES; i++)
		rc = repo_route_add(c->db, o->env, o->svc, o->op,
		    (unsigned)o->num, clock_now_ms());
	if (rc == REPO_DUP && o->val[O_IFNE] != NULL) {
		printf("route %s exists\n", o->pos[0]);
		return 0;
	}
	if (rc == REPO_DUP)
		return admin_fail("route %s already exists", o->pos[0]);
	if (rc == REPO_RETRY)
		return busy_fail();
	if (rc != REPO_OK)
		return 1;
	printf("route %s added (retention %ld days)\n", o->pos[0], o->num);
	return 0;
}

int
cmd_route_set(struct ctx *c)
{
	struct opts	*o = c->o;
	int		 rc;

	rc = repo_route_set_retention(c->adb, o->env, o->svc, o->op,
	    (unsigned)o->num);
	if (rc == REPO_NOTFOUND)
		return admin_fail("no route %s", o->pos[0]);
	if (rc != REPO_OK)
		return 1;
	printf("route %s: retention %ld days (executions submitted from now "
	    "on)\n", o->pos[0], o->num);
	return 0;
}

/* Enables or disables the route of c's options. */
static int
route_enable(struct ctx *c, int enabled)
{
	struct opts	*o = c->o;
	int		 rc;

	rc = repo_route_set_enabled(c->db, o->env, o->svc, o->op, enabled);
	if (rc == REPO_NOTFOUND)
		return admin_fail("no route %s", o->pos[0]);
	if (rc != REPO_OK)
		return 1;
	printf("route %s %s\n", o->pos[0], enabled ? "enabled" : "disabled");
	return 0;
}

int
cmd_route_disable(struct ctx *c)
{
	return route_enable(c, 0);
}

int
cmd_route_enable(struct ctx *c)
{
	return route_enable(c, 1);
}

/*
 * Stores a key of the kind (backend: serving the options' routes) and
 * prints key before the commit, in one transaction: a key that cannot
 * be written is never kept. REPO_OK, REPO_RETRY (a deadlock undid it,
 * nothing printed) or REPO_ERR (*printed: after the key was printed).
 */
static enum repo_rc
key_tx(struct ctx *c, int backend, const unsigned char *hash,
    const char *key, int *printed)
{
	struct opts	*o = c->o;
	struct route_row rt;
	uint64_t	 id;
	enum repo_rc	 rc;
	int		 i;

	if ((rc = repo_tx_begin(c->db)) != REPO_OK ||
	    (rc = repo_key_add(c->db, backend, o->val[O_TENANT],
	    o->val[O_LABEL], hash, clock_now_ms(), &id)) != REPO_OK)
		goto fail;
	for (i = 0; backend && i < o->nroutes; i++) {
		valid_route_triple(o->routes[i], o->env, o->svc, o->op);
		rc = repo_route_get(c->db, o->env, o->svc, o->op, &rt);
		if (rc == REPO_NOTFOUND)
			admin_fail("no route %s", o->routes[i]);
		if (rc != REPO_OK || ((rc = repo_backend_route_add(c->db, id,
		    rt.id)) != REPO_OK && rc != REPO_DUP))
			goto fail;
	}
	printf("%s\n", key);
	if (admin_written("no key was created") == -1) {
		rc = REPO_ERR;
		goto fail;
	}
	*printed = 1;
	if ((rc = repo_tx_commit(c->db)) == REPO_OK)
		return REPO_OK;
fail:
	repo_tx_rollback(c->db);
	return rc == REPO_RETRY && !*printed ? REPO_RETRY : REPO_ERR;
}

/*
 * key create and backend-key create: a new key, printed once on stdout
 * (key_tx, tried again after a deadlock). 0 or 1.
 */
static int
key_create(struct ctx *c, int backend)
{
	unsigned char	 hash[SHA256_LEN];
	char		 key[3 + SECRET_B64_LEN + 1];
	enum repo_rc	 rc = REPO_RETRY;
	int		 i, printed = 0;

	if (crypto_new_secret(backend ? "bk_" : "ak_", key, sizeof(key),
	    hash) == -1)
		return 1;
	for (i = 0; rc == REPO_RETRY && i < ADMIN_TRIES; i++)
		rc = key_tx(c, backend, hash, key, &printed);
	explicit_bzero(key, sizeof(key));
	if (rc == REPO_RETRY)
		return busy_fail();
	if (rc != REPO_OK && printed)
		return admin_after_commit(repo_key_stored(c->db, hash), "key",
		    "key list shows the new key (the newest of its tenant) "
		    "only if it took effect: then use it, else do not");
	return rc == REPO_OK ? 0 : 1;
}

int
cmd_key_create(struct ctx *c)
{
	return key_create(c, 0);
}

int
cmd_bkey_create(struct ctx *c)
{
	return key_create(c, 1);
}

/*
 * The id of the key pos[0] names (its id, or the key itself) if it is
 * of the kind; 0 with a message when there is none, -1 on error.
 */
static int
key_resolve(struct ctx *c, int backend, uint64_t *id)
{
	unsigned char	 h[SHA256_LEN];
	struct key_row	 k;
	int		 rc;

	*id = 0;
	if (c->o->id == 0) {
		crypto_sha256(c->o->pos[0], strlen(c->o->pos[0]), h);
		rc = repo_key_by_hash(c->db, h, &k);
	} else
		rc = repo_key_get(c->adb, c->o->id, &k);
	if (rc == REPO_ERR)
		return -1;
	if (rc == REPO_OK && k.backend == backend)
		*id = k.id;
	else
		admin_fail("no such %s key", backend ? "backend" : "consumer");
	return 0;
}

/*
 * Revokes consumer key id; when no key of its lineage is live after
 * that, its unclaimed waiting executions fail (initiator_revoked) in
 * the same transaction (repo_revoke.c). 0 or an exit status.
 */
static int
consumer_revoke(struct ctx *c, uint64_t id)
{
	struct revoke_outcome	 out;
	struct rvdb		*r;
	int			 rc;

	if ((r = repo_revoke_open(&c->cfg)) == NULL)
		return 1;
	rc = repo_consumer_revoke(r, id, clock_now_ms(), &out);
	repo_revoke_close(r);
	if (rc == REPO_NOTFOUND)
		return admin_fail("no such consumer key");
	if (rc != REPO_OK)
		return 1;
	printf("key %llu revoked\n", (unsigned long long)id);
	if (out.live > 0)
		fprintf(stderr, "its lineage (key %llu) still has a live key: "
		    "its waiting executions stay\n",
		    (unsigned long long)out.lineage);
	else
		fprintf(stderr, "its lineage (key %llu) has no live key: %lu "
		    "unclaimed waiting execution(s) failed (initiator_revoked); "
		    "claimed ones run on\n", (unsigned long long)out.lineage,
		    out.failed);
	return 0;
}

/* Revokes the key named by its id or by the key itself. */
static int
key_revoke(struct ctx *c, int backend)
{
	uint64_t	 id;
	int		 rc;

	if (key_resolve(c, backend, &id) == -1)
		return 1;
	if (id == 0)
		return 1;
	if (!backend)
		return consumer_revoke(c, id);
	rc = repo_key_revoke(c->db, backend, id, clock_now_ms());
	if (rc == REPO_NOTFOUND)
		return admin_fail("no such %s key", backend ? "backend" :
		    "consumer");
	if (rc != REPO_OK)
		return 1;
	printf("key %llu revoked\n", (unsigned long long)id);
	return 0;
}

int
cmd_key_revoke(struct ctx *c)
{
	return key_revoke(c, 0);
}

int
cmd_bkey_revoke(struct ctx *c)
{
	return key_revoke(c, 1);
}

/* Grants (grant 1) or revokes backend key pos[0] the route pos[1]. */
static int
bkey_route(struct ctx *c, int grant)
{
	struct opts	*o = c->o;
	uint64_t	 kid, rid;
	int		 rc;

	if (key_resolve(c, 1, &kid) == -1 || kid == 0)
		return 1;
	if ((rc = repo_route_id(c->adb, o->env, o->svc, o->op, &rid)) ==
	    REPO_NOTFOUND)
		return admin_fail("no route %s", o->pos[1]);
	if (rc != REPO_OK)
		return 1;
	rc = repo_backend_grant(c->adb, kid, rid, grant);
	if (rc == REPO_ERR)
		return 1;
	printf("backend key %llu %s %s%s\n", (unsigned long long)kid,
	    grant ? "serves" : "no longer serves", o->pos[1],
	    rc == REPO_OK ? "" : grant ? " (already)" : " (was not granted)");
	return 0;
}

int
cmd_bkey_grant(struct ctx *c)
{
	return bkey_route(c, 1);
}

int
cmd_bkey_revoke_route(struct ctx *c)
{
	return bkey_route(c, 0);
}

struct listing {
	int			 json;
	const char *const	*names;
	const char		*kinds;
	struct json_object	*arr;
};

/* A listing (header printed now in text form); NULL out of memory. */
struct listing *
listing_new(int json, const char *const *names, const char *kinds)
{
	struct listing	*l;
	size_t		 i;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->json = json;
	l->names = names;
	l->kinds = kinds;
	if (json && (l->arr = json_object_new_array()) == NULL) {
		free(l);
		return NULL;
	}
	for (i = 0; !json && kinds[i] != '\0'; i++)
		printf("%s%s", i ? "\t" : "", names[i]);
	if (!json)
		printf("\n");
	return l;
}

/* Column value s of kind k as a JSON value (NULL: null; so is an empty
 * number). */
static struct json_object *
cell(char k, const char *s)
{
	struct json_object	*a;
	size_t			 n;

	if (k == 'n')
		return s[0] ? json_object_new_int64(strtoll(s, NULL, 10)) : NULL;
	if (k == 'b')
		return json_object_new_boolean(strcmp(s, "yes") == 0);
	if (k == 's')
		return s[0] ? json_object_new_string(s) : NULL;
	a = json_object_new_array();
	while (a != NULL && *s != '\0') {
		n = strcspn(s, ",");
		json_object_array_add(a, json_object_new_string_len(s, (int)n));
		s += n + (s[n] == ',');
	}
	return a;
}

/* Row callback (repo_row_fn): one line, or one object of the array. */
void
listing_row(void *arg, const char *const *cols, int n)
{
	struct listing		*l = arg;
	struct json_object	*o;
	int			 i;

	if (!l->json) {
		for (i = 0; i < n; i++)
			printf("%s%s", i ? "\t" : "", cols[i][0] ? cols[i] :
			    "-");
		printf("\n");
		return;
	}
	if ((o = json_object_new_object()) == NULL)
		return;
	for (i = 0; i < n && l->kinds[i] != '\0'; i++)
		json_object_object_add(o, l->names[i], cell(l->kinds[i],
		    cols[i]));
	json_object_array_add(l->arr, o);
}

/* Prints obj as one JSON document on stdout and releases it; 0 or 1. */
int
admin_print_json(struct json_object *obj)
{
	const char	*s;
	int		 rc = 1;

	if (obj != NULL && (s = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) != NULL) {
		printf("%s\n", s);
		rc = 0;
	}
	json_object_put(obj);
	return rc;
}

/* Ends listing l (ok: the repository's answer); the exit status. */
int
listing_end(struct listing *l, int ok)
{
	int	 rc = ok == REPO_OK ? 0 : 1;

	if (l == NULL)
		return 1;
	if (l->json) {
		if (rc == 0)
			rc = admin_print_json(l->arr);
		else
			json_object_put(l->arr);
	}
	free(l);
	return rc;
}

int
cmd_route_list(struct ctx *c)
{
	static const char *const names[] = { "route", "retention_days",
	    "enabled" };
	struct listing	*l;

	if ((l = listing_new(c->o->json, names, "snb")) == NULL)
		return 1;
	return listing_end(l, repo_route_list(c->db, listing_row, l));
}

/* key list / backend-key list */
static int
key_list(struct ctx *c, int backend)
{
	static const char *const names[] = { "id", "tenant", "label",
	    "revoked", "routes" };
	struct listing	*l;

	if ((l = listing_new(c->o->json, names, "nssbl")) == NULL)
		return 1;
	return listing_end(l, repo_key_list(c->db, backend, listing_row, l));
}

int
cmd_key_list(struct ctx *c)
{
	return key_list(c, 0);
}

int
cmd_bkey_list(struct ctx *c)
{
	return key_list(c, 1);
}

int
cmd_stats(struct ctx *c)
{
	static const char *const names[] = { "route", "status", "count" };
	struct listing	*l;

	if ((l = listing_new(c->o->json, names, "ssn")) == NULL)
		return 1;
	return listing_end(l, repo_stats(c->db, listing_row, l));
}
