/*
 * admin_webhook.c - asyncexec-admin webhook add | list | disable | enable
 * | remove | rotate-secret | deliveries | replay: the endpoints that
 * asyncexec-notify sends completion notifications to (contract v3,
 * sql/010_webhooks.sql) and their deliveries.
 *
 * A secret is made here (whsec_ and the base64 of 32 random bytes),
 * printed once on standard output and stored only sealed under the key
 * of webhook_key_file, the endpoint's tenant as associated data
 * (webhook.h); it is never logged, listed or put in a message. Without a
 * usable key file add and rotate-secret refuse (exit 2, the file's
 * problem and what to do) before touching the database.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "json.h"
#include "repo.h"
#include "repo_webhook.h"
#include "webhook.h"

#define SHOWN_DELIVERIES	100	/* webhook deliveries: the newest */
#define NEVENTS			4
#define NSTATES			4
#define ROUTE_TEXT		(3 * (NAME_MAX_LEN + 1))

static const char *const event_names[NEVENTS] = {
	"completed", "failed", "expired", "cancelled"
};
static const char *const state_names[NSTATES] = {
	"pending", "leased", "delivered", "dead"
};

/* Index of the n bytes at s in names (k of them), or -1. */
static int
name_index(const char *const *names, int k, const char *s, size_t n)
{
	int	 i;

	for (i = 0; i < k; i++)
		if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0)
			return i;
	return -1;
}

/* --events E[,E...] (NULL: all four) into o->events in canonical order;
 * 0 or 2 (usage). */
static int
events_arg(struct opts *o, const char *s)
{
	unsigned	 bits = s == NULL ? 0xf : 0;
	size_t		 n;
	int		 i;

	while (s != NULL) {
		n = strcspn(s, ",");
		if ((i = name_index(event_names, NEVENTS, s, n)) == -1 ||
		    (bits & (1u << i)))
			return admin_usage_error(NULL, "--events is a comma "
			    "list of completed, failed, expired, cancelled, "
			    "each once: %s", admin_shown(o->val[O_EVENTS]));
		bits |= 1u << i;
		s = s[n] == ',' ? s + n + 1 : NULL;
	}
	o->events[0] = '\0';
	for (i = 0, n = 0; i < NEVENTS; i++)
		if (bits & (1u << i))
			n += (size_t)snprintf(o->events + n, sizeof(o->events) - n,
			    "%s%s", n > 0 ? "," : "", event_names[i]);
	return 0;
}

/* webhook add --tenant T --url URL [--route R] [--events E,...]; 0 or 2. */
int
chk_wh_add(struct opts *o)
{
	const char	*why;
	int		 plain, rc;

	if (o->val[O_TENANT] == NULL || o->val[O_URL] == NULL)
		return admin_usage_error(NULL, "webhook add needs --tenant and "
		    "--url");
	if (!valid_tenant(o->val[O_TENANT]))
		return admin_usage_error(NULL, "tenant must match "
		    "[A-Za-z0-9._-]{1,64}");
	if (webhook_url_check(o->val[O_URL], &plain, &why) != WEBHOOK_OK)
		return admin_usage_error(NULL, "--url: %s: %s", why,
		    admin_shown(o->val[O_URL]));
	if (o->nroutes > 1)
		return admin_usage_error(NULL, "webhook add takes one --route "
		    "(or none: every route of the tenant)");
	if (o->nroutes == 1 && (rc = admin_route_arg(o, o->routes[0])) != 0)
		return rc;
	return events_arg(o, o->val[O_EVENTS]);
}

/* webhook list [--tenant T]; 0 or 2. */
int
chk_wh_list(struct opts *o)
{
	if (o->val[O_TENANT] != NULL && !valid_tenant(o->val[O_TENANT]))
		return admin_usage_error(NULL, "tenant must match "
		    "[A-Za-z0-9._-]{1,64}");
	return 0;
}

/* An id argument s (what names it) into *id; 0 or 2 (usage). */
static int
id_arg(const char *s, const char *what, uint64_t *id)
{
	if (valid_exec_id(s, id))
		return 0;
	return admin_usage_error(NULL, "%s must be a positive integer: %s",
	    what, admin_shown(s));
}

/* webhook disable|enable|remove|deliveries ID: o->id; 0 or 2. */
int
chk_wh_id(struct opts *o)
{
	return id_arg(o->pos[0], "the webhook endpoint id", &o->id);
}

/* webhook rotate-secret ID [--grace-hours N] (default 24, into o->num); 0 or
 * 2. */
int
chk_wh_rotate(struct opts *o)
{
	int	 rc;

	if ((rc = chk_wh_id(o)) != 0)
		return rc;
	return chk_pollkey_rotate(o);
}

/* webhook deliveries ID [--status STATE]; 0 or 2. */
int
chk_wh_deliveries(struct opts *o)
{
	const char	*s = o->val[O_STATE];

	if (o->val[O_STATUS] != NULL || (s != NULL &&
	    name_index(state_names, NSTATES, s, strlen(s)) == -1))
		return admin_usage_error(NULL, "--status must be pending, "
		    "leased, delivered or dead");
	return chk_wh_id(o);
}

/* webhook replay DELIVERY_ID | webhook replay --endpoint ID --since TIME: o->id
 * (the delivery's or the endpoint's), o->since; 0 or 2. */
int
chk_wh_replay(struct opts *o)
{
	const char	*e = o->val[O_ENDPOINT], *t = o->val[O_SINCE];

	if (o->npos == 1 && e == NULL && t == NULL)
		return id_arg(o->pos[0], "the delivery id", &o->id);
	if (o->npos != 0 || e == NULL || t == NULL)
		return admin_usage_error(NULL, "webhook replay takes a delivery "
		    "id, or --endpoint ID and --since TIME");
	if (clock_parse_rfc3339(t, &o->since) == -1)
		return admin_usage_error(NULL, "--since must be an RFC 3339 "
		    "time (2026-12-01T08:00:00Z, or with an offset such as "
		    "+02:00): %s", admin_shown(t));
	return id_arg(e, "--endpoint", &o->id);
}

/* The exit status of a webhook function's failure: a usable key file
 * missing is a configuration error (2), the rest a runtime one (1). */
static int
keyfile_fail(enum webhook_rc rc, const char *err)
{
	switch (rc) {
	case WEBHOOK_BAD_KEYFILE:
		admin_fail("%s", err);
		return 2;
	case WEBHOOK_OK:
	case WEBHOOK_BAD_SECRET:
	case WEBHOOK_FAILED:
	case WEBHOOK_FORGED:
	case WEBHOOK_BAD_URL:
		break;
	}
	return admin_fail("cannot make or seal a webhook secret");
}

/*
 * A new secret for an endpoint of tenant: its text into text, sealed
 * under the key of webhook_key_file into sealed (*n bytes). 0, or the
 * exit status (2: the key file, with its message).
 */
static int
new_secret(struct ctx *c, const char *tenant,
    char text[WEBHOOK_SECRET_MAX + 1], unsigned char sealed[WEBHOOK_SEALED_MAX],
    size_t *n)
{
	unsigned char	 key[AEAD_KEY_LEN], raw[WEBHOOK_KEY_MAX];
	char		 err[1024];
	size_t		 rawlen = 0;
	enum webhook_rc	 rc;

	text[0] = '\0';
	rc = webhook_keyfile_load(c->cfg.webhook_key_file, key, err,
	    sizeof(err));
	if (rc == WEBHOOK_OK && (rc = webhook_secret_new(text)) == WEBHOOK_OK &&
	    (rc = webhook_secret_parse(text, raw, &rawlen)) == WEBHOOK_OK)
		rc = webhook_secret_seal(key, tenant, raw, rawlen, sealed,
		    WEBHOOK_SEALED_MAX, n);
	explicit_bzero(key, sizeof(key));
	explicit_bzero(raw, sizeof(raw));
	if (rc == WEBHOOK_OK)
		return 0;
	explicit_bzero(text, WEBHOOK_SECRET_MAX + 1);
	return keyfile_fail(rc, err);
}

/* "env/svc/op" of e (or of the options) into out; "" for every route. */
static void
route_text(char out[ROUTE_TEXT], const char *env, const char *svc,
    const char *op)
{
	if (env == NULL || env[0] == '\0')
		out[0] = '\0';
	else
		snprintf(out, ROUTE_TEXT, "%s/%s/%s", env, svc, op);
}

/* events "a,b" as a JSON array */
static struct json_object *
events_json(const char *s)
{
	struct json_object	*a = json_object_new_array();
	size_t			 n;

	while (a != NULL && *s != '\0') {
		n = strcspn(s, ",");
		json_object_array_add(a, json_object_new_string_len(s, (int)n));
		s += n + (s[n] == ',');
	}
	return a;
}

/* Adds member k of obj: string s, or null when s is NULL or "". */
static void
add_str(struct json_object *obj, const char *k, const char *s)
{
	json_object_object_add(obj, k, s != NULL && s[0] != '\0' ?
	    json_object_new_string(s) : NULL);
}

/*
 * Waits until every worker's reading that no endpoint is enabled is older
 * than WEBHOOK_SEEN_MS (lib/webhook.h), counted from the commit that just
 * enabled one: from then on a request's terminal transition marks.
 */
static void
wait_seen(void)
{
	clock_sleep_ms(WEBHOOK_SEEN_MS + WEBHOOK_SEEN_SLACK_MS);
}

/* add's output: id and secret on stdout (text, or one JSON object). 0 or
 * 1. */
static int
added_out(struct ctx *c, uint64_t id, const char *secret)
{
	struct opts		*o = c->o;
	struct json_object	*j;
	char			 route[ROUTE_TEXT];

	route_text(route, o->nroutes ? o->env : NULL, o->svc, o->op);
	if (!o->json) {
		printf("id\t%llu\nsecret\t%s\n", (unsigned long long)id,
		    secret);
		return 0;
	}
	if ((j = json_object_new_object()) == NULL)
		return 1;
	json_object_object_add(j, "id", json_object_new_int64((int64_t)id));
	add_str(j, "secret", secret);
	add_str(j, "tenant", o->val[O_TENANT]);
	add_str(j, "route", route);
	add_str(j, "url", o->val[O_URL]);
	json_object_object_add(j, "events", events_json(o->events));
	json_object_object_add(j, "enabled", json_object_new_boolean(1));
	return admin_print_json(j);
}

/* add's note on stderr, after the commit. */
static void
added_note(struct ctx *c, uint64_t id, int plain)
{
	struct opts	*o = c->o;
	char		 route[ROUTE_TEXT];

	route_text(route, o->nroutes ? o->env : NULL, o->svc, o->op);
	fprintf(stderr, "asyncexec-admin: webhook endpoint %llu added for "
	    "tenant %s, %s%s, events %s; the secret is shown this once: give "
	    "it to the receiver, which verifies webhook-signature with it\n",
	    (unsigned long long)id, o->val[O_TENANT], route[0] ? "route " :
	    "every route", route, o->events);
	if (plain)
		fprintf(stderr, "asyncexec-admin: note: an http:// URL: "
		    "asyncexec-notify sends to it only with webhook_allow_http = "
		    "1 (this configuration has %u)\n", c->cfg.webhook_allow_http);
}

/*
 * Adds the endpoint of the options with sealed secret n and prints it
 * (secret: its text) before the commit, in one transaction: a secret
 * that cannot be written is never kept. 0 or 1 (a message said why).
 */
static int
add_tx(struct ctx *c, const char *secret, const struct webhook_new *n,
    uint64_t *id)
{
	struct opts	*o = c->o;
	char		 chk[200];
	int		 rc;

	if (repo_webhook_begin(c->wdb) != REPO_OK)
		return 1;
	rc = o->nroutes ? repo_webhook_route_exists(c->wdb, o->env, o->svc,
	    o->op) : REPO_OK;
	if (rc == REPO_NOTFOUND)
		admin_fail("no route %s", o->routes[0]);
	if (rc == REPO_OK && (rc = repo_webhook_add(c->wdb, n,
	    clock_now_ms(), id)) == REPO_OK && (added_out(c, *id, secret) != 0 ||
	    admin_written("no webhook endpoint was added") == -1))
		rc = REPO_ERR;
	if (rc != REPO_OK) {
		repo_webhook_rollback(c->wdb);
		return 1;
	}
	if (repo_webhook_commit(c->wdb) == REPO_OK)
		return 0;
	snprintf(chk, sizeof(chk), "webhook list shows endpoint %llu only if "
	    "it took effect: then give the printed secret to its receiver, "
	    "else do not use it", (unsigned long long)*id);
	return admin_after_commit(repo_webhook_stored(c->wdb, *id, n->sealed,
	    n->sealed_len), "secret", chk);
}

/* webhook add: a new endpoint and its secret, printed once. 0, 1 (database,
 * no such route, standard output) or 2 (the key file). */
int
cmd_wh_add(struct ctx *c)
{
	struct opts		*o = c->o;
	struct webhook_new	 n;
	unsigned char		 sealed[WEBHOOK_SEALED_MAX];
	char			 secret[WEBHOOK_SECRET_MAX + 1];
	const char		*why;
	size_t			 slen = 0;
	uint64_t		 id = 0;
	int			 plain = 0, rc;

	if ((rc = new_secret(c, o->val[O_TENANT], secret, sealed, &slen)) != 0)
		return rc;
	n = (struct webhook_new){ o->val[O_TENANT], NULL, NULL, NULL,
	    o->val[O_URL], o->events, sealed, slen };
	if (o->nroutes) {
		n.env = o->env;
		n.svc = o->svc;
		n.op = o->op;
	}
	rc = add_tx(c, secret, &n, &id);
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(sealed, sizeof(sealed));
	if (rc != 0)
		return rc;
	webhook_url_check(o->val[O_URL], &plain, &why);
	wait_seen();
	added_note(c, id, plain);
	return 0;
}

/* Copies s into out (size n), control characters as spaces. */
static const char *
clean(char *out, size_t n, const char *s)
{
	size_t	 i;

	for (i = 0; s[i] != '\0' && i + 1 < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' :
		    s[i];
	out[i] = '\0';
	return out;
}

/* repo_endpoint_fn: one endpoint as a listing row (arg: the listing). */
static void
endpoint_row(void *arg, const struct webhook_endpoint *e)
{
	char		 id[24], route[ROUTE_TEXT], reason[WEBHOOK_REASON_MAX + 1];
	char		 t[3][RFC3339_LEN + 1];
	const char	*cols[10];

	snprintf(id, sizeof(id), "%llu", (unsigned long long)e->id);
	route_text(route, e->env, e->svc, e->op);
	json_time(e->old_until, t[0]);
	json_time(e->created_at, t[1]);
	json_time(e->updated_at, t[2]);
	cols[0] = id;
	cols[1] = e->tenant;
	cols[2] = route;
	cols[3] = e->url;
	cols[4] = e->events;
	cols[5] = e->enabled ? "yes" : "no";
	cols[6] = clean(reason, sizeof(reason), e->reason);
	cols[7] = e->old_until != 0 ? t[0] : "";
	cols[8] = t[1];
	cols[9] = t[2];
	listing_row(arg, cols, 10);
}

/* webhook list [--tenant T]: every endpoint (of T), never a secret. 0 or 1. */
int
cmd_wh_list(struct ctx *c)
{
	static const char *const names[] = { "id", "tenant", "route", "url",
	    "events", "enabled", "disabled_reason", "old_secret_until",
	    "created_at", "updated_at" };
	struct listing	*l;

	if ((l = listing_new(c->o->json, names, "nssslbssss")) == NULL)
		return 1;
	return listing_end(l, repo_webhook_list(c->wdb, c->o->val[O_TENANT],
	    endpoint_row, l));
}

/* The message for endpoint id not found; 1. */
static int
no_endpoint(uint64_t id)
{
	return admin_fail("no webhook endpoint %llu", (unsigned long long)id);
}

static int	result(struct ctx *, const char *, const char *, uint64_t,
		    const char *, int, const char *, ...)
		    __attribute__((format(printf, 7, 8)));

/*
 * Prints a verb's result: with --json one object of the members idk =
 * the id of the command line, k1 = v1 (an integer) and k2 = b (a
 * boolean), each left out when its name is NULL; else the text. 0 or 1.
 */
static int
result(struct ctx *c, const char *idk, const char *k1, uint64_t v1,
    const char *k2, int b, const char *fmt, ...)
{
	struct json_object	*j;
	va_list			 ap;

	if (!c->o->json) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		return 0;
	}
	if ((j = json_object_new_object()) == NULL)
		return 1;
	json_object_object_add(j, idk, json_object_new_int64(
	    (int64_t)c->o->id));
	if (k1 != NULL)
		json_object_object_add(j, k1, json_object_new_int64(
		    (int64_t)v1));
	if (k2 != NULL)
		json_object_object_add(j, k2, json_object_new_boolean(b));
	return admin_print_json(j);
}

/*
 * webhook enable|disable ID: the endpoint's row, then its pending
 * deliveries held out of the due range (disable) or due now (enable),
 * in statements of their own (repo_webhook_hold). 0 or 1 (no such
 * endpoint, database: the command may be run again).
 */
static int
set_enabled(struct ctx *c, int enabled)
{
	uint64_t	 id = c->o->id, n;
	int		 rc;

	rc = repo_webhook_set_enabled(c->wdb, id, enabled, "disabled by the "
	    "operator (asyncexec-admin webhook disable)", clock_now_ms());
	if (rc == REPO_NOTFOUND)
		return no_endpoint(id);
	if (rc != REPO_OK)
		return 1;
	if (repo_webhook_hold(c->wdb, id, !enabled, clock_now_ms(), &n) !=
	    REPO_OK)
		return admin_fail("webhook endpoint %llu %s, but not all its "
		    "pending deliveries %s (%llu were): run webhook %s %llu "
		    "again", (unsigned long long)id, enabled ? "enabled" :
		    "disabled", enabled ? "made due" : "held",
		    (unsigned long long)n, enabled ? "enable" : "disable",
		    (unsigned long long)id);
	if (enabled) {
		wait_seen();
		return result(c, "id", NULL, 0, "enabled", 1, "webhook endpoint "
		    "%llu enabled\n", (unsigned long long)id);
	}
	return result(c, "id", NULL, 0, "enabled", 0, "webhook endpoint %llu "
	    "disabled: asyncexec-notify holds its pending deliveries, and "
	    "executions that end meanwhile get none for it\n",
	    (unsigned long long)id);
}

/* webhook disable ID; 0 or 1. */
int
cmd_wh_disable(struct ctx *c)
{
	return set_enabled(c, 0);
}

/* webhook enable ID; 0 or 1. */
int
cmd_wh_enable(struct ctx *c)
{
	return set_enabled(c, 1);
}

/* webhook remove ID: the endpoint and its deliveries, together. 0 or 1. */
int
cmd_wh_remove(struct ctx *c)
{
	uint64_t	 n = 0;
	int		 rc;

	rc = repo_webhook_remove(c->wdb, c->o->id, &n);
	if (rc == REPO_NOTFOUND)
		return no_endpoint(c->o->id);
	if (rc != REPO_OK)
		return 1;
	return result(c, "id", "deliveries", n, "removed", 1, "webhook endpoint %llu "
	    "removed with its %llu deliveries\n", (unsigned long long)c->o->id,
	    (unsigned long long)n);
}

/* rotate-secret's output on stdout: the new secret once and when the old
 * one ends (t). 0 or 1. */
static int
rotated_out(struct ctx *c, const char *secret, const char *t)
{
	struct json_object	*j;

	if (!c->o->json) {
		printf("id\t%llu\nsecret\t%s\nold_secret_until\t%s\n",
		    (unsigned long long)c->o->id, secret, t);
		return 0;
	}
	if ((j = json_object_new_object()) == NULL)
		return 1;
	json_object_object_add(j, "id", json_object_new_int64(
	    (int64_t)c->o->id));
	add_str(j, "secret", secret);
	add_str(j, "old_secret_until", t);
	return admin_print_json(j);
}

/*
 * Rotates endpoint e's secret to sealed (n bytes) and prints secret
 * before the commit (the old one ends at until): a secret that cannot be
 * written is never kept. 0 or 1 (a message said why).
 */
static int
rotate_tx(struct ctx *c, const struct webhook_endpoint *e,
    const char *secret, const unsigned char *sealed, size_t n, int64_t until)
{
	char	 t[RFC3339_LEN + 1], chk[300];
	int	 rc;

	json_time(until, t);
	if (repo_webhook_begin(c->wdb) != REPO_OK)
		return 1;
	rc = repo_webhook_rotate(c->wdb, e->id, e->tenant, sealed, n, until,
	    clock_now_ms());
	if (rc == REPO_NOTFOUND)
		no_endpoint(c->o->id);
	if (rc == REPO_OK && (rotated_out(c, secret, t) != 0 ||
	    admin_written("the endpoint's secrets are unchanged") == -1))
		rc = REPO_ERR;
	if (rc != REPO_OK) {
		repo_webhook_rollback(c->wdb);
		return 1;
	}
	if (repo_webhook_commit(c->wdb) == REPO_OK)
		return 0;
	snprintf(chk, sizeof(chk), "webhook list shows endpoint %llu's old "
	    "secret ending at %s only if it took effect: then give the "
	    "printed secret to its receiver, else do not use it (and run "
	    "rotate-secret again only then)", (unsigned long long)e->id, t);
	return admin_after_commit(repo_webhook_stored(c->wdb, e->id, sealed,
	    n), "secret", chk);
}

/* webhook rotate-secret ID [--grace-hours N]: 0, 1 (no such endpoint, database,
 * standard output) or 2 (the key file). */
int
cmd_wh_rotate(struct ctx *c)
{
	struct webhook_endpoint	 e;
	unsigned char		 sealed[WEBHOOK_SEALED_MAX];
	char			 secret[WEBHOOK_SECRET_MAX + 1];
	char			 t[RFC3339_LEN + 1];
	size_t			 n = 0;
	int64_t			 now = clock_now_ms();
	int64_t			 until = now + c->o->num * 3600 * 1000;
	int			 rc;

	if ((rc = repo_webhook_get(c->wdb, c->o->id, &e)) == REPO_NOTFOUND)
		return no_endpoint(c->o->id);
	if (rc != REPO_OK)
		return 1;
	if ((rc = new_secret(c, e.tenant, secret, sealed, &n)) != 0)
		return rc;
	rc = rotate_tx(c, &e, secret, sealed, n, until);
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(sealed, sizeof(sealed));
	if (rc != 0)
		return rc;
	json_time(until, t);
	fprintf(stderr, "asyncexec-admin: webhook endpoint %llu: the new secret "
	    "is shown this once; deliveries are signed with both secrets until "
	    "%s (%ld hour(s)), then with the new one alone: give it to the "
	    "receiver now%s\n", (unsigned long long)c->o->id, t, c->o->num,
	    e.old_until > now ? "; the secret of the rotation before no longer "
	    "signs" : "");
	return 0;
}

struct dl_listing {
	struct listing	*l;
	unsigned	 n;
};

/* repo_delivery_fn: one delivery as a listing row. */
static void
delivery_row(void *arg, const struct webhook_delivery *d)
{
	struct dl_listing	*dl = arg;
	char			 num[3][24], st[8], err[WEBHOOK_REASON_MAX + 1];
	char			 t[3][RFC3339_LEN + 1];
	const char		*cols[12];

	snprintf(num[0], sizeof(num[0]), "%llu", (unsigned long long)d->id);
	snprintf(num[1], sizeof(num[1]), "%llu",
	    (unsigned long long)d->execution_id);
	snprintf(num[2], sizeof(num[2]), "%u", d->attempts);
	snprintf(st, sizeof(st), "%d", d->last_status);
	json_time(d->due_at, t[0]);
	json_time(d->created_at, t[1]);
	json_time(d->delivered_at, t[2]);
	cols[0] = num[0];
	cols[1] = num[1];
	cols[2] = d->cid;
	cols[3] = d->webhook_id;
	cols[4] = d->event;
	cols[5] = d->state;
	cols[6] = num[2];
	cols[7] = d->last_status >= 0 ? st : "";
	cols[8] = clean(err, sizeof(err), d->last_error);
	cols[9] = t[0];
	cols[10] = t[1];
	cols[11] = d->delivered_at != 0 ? t[2] : "";
	listing_row(dl->l, cols, 12);
	dl->n++;
}

/* webhook deliveries ID [--status S]: the newest 100, newest first. 0 or 1. */
int
cmd_wh_deliveries(struct ctx *c)
{
	static const char *const names[] = { "id", "execution_id",
	    "correlation_id", "webhook_id", "event", "state", "attempts",
	    "last_status", "last_error", "due_at", "created_at",
	    "delivered_at" };
	struct webhook_endpoint	 e;
	struct dl_listing	 dl = { NULL, 0 };
	int			 rc;

	if ((rc = repo_webhook_get(c->wdb, c->o->id, &e)) == REPO_NOTFOUND)
		return no_endpoint(c->o->id);
	if (rc != REPO_OK ||
	    (dl.l = listing_new(c->o->json, names, "nnssssnnssss")) == NULL)
		return 1;
	rc = listing_end(dl.l, repo_webhook_deliveries(c->wdb, e.id,
	    c->o->val[O_STATE], SHOWN_DELIVERIES, delivery_row, &dl));
	if (rc == 0 && dl.n == SHOWN_DELIVERIES)
		fprintf(stderr, "asyncexec-admin: the newest %d shown\n",
		    SHOWN_DELIVERIES);
	return rc;
}

/* A note when endpoint id is disabled: its replays wait. */
static void
disabled_note(struct ctx *c, uint64_t id)
{
	struct webhook_endpoint	 e;

	if (repo_webhook_get(c->wdb, id, &e) == REPO_OK && !e.enabled)
		fprintf(stderr, "asyncexec-admin: note: webhook endpoint %llu "
		    "is disabled: asyncexec-notify holds its deliveries until "
		    "webhook enable %llu\n", (unsigned long long)id,
		    (unsigned long long)id);
}

/* webhook replay DELIVERY_ID: a delivered or dead one sent again. 0 or 1 (no
 * such delivery, not finished, database). */
static int
replay_one(struct ctx *c)
{
	struct webhook_delivery	 d;
	int			 rc;

	if ((rc = repo_webhook_delivery_get(c->wdb, c->o->id, &d)) ==
	    REPO_NOTFOUND)
		return admin_fail("no webhook delivery %llu",
		    (unsigned long long)c->o->id);
	if (rc == REPO_OK && (rc = repo_webhook_replay(c->wdb, d.id,
	    clock_now_ms())) == REPO_NOTFOUND)
		return admin_fail("delivery %llu is %s, not delivered or dead: "
		    "nothing to replay (it is sent, or being sent)",
		    (unsigned long long)d.id, d.state);
	if (rc != REPO_OK)
		return 1;
	disabled_note(c, d.endpoint_id);
	return result(c, "id", "endpoint_id", d.endpoint_id, NULL, 0, "delivery %llu "
	    "of webhook endpoint %llu replayed: pending, due now, the same "
	    "webhook-id %s\n", (unsigned long long)d.id,
	    (unsigned long long)d.endpoint_id, d.webhook_id);
}

/* webhook replay --endpoint ID --since TIME (or DELIVERY_ID: replay_one); 0
 * or 1. */
int
cmd_wh_replay(struct ctx *c)
{
	struct webhook_endpoint	 e;
	char			 t[RFC3339_LEN + 1];
	uint64_t		 n = 0;
	int			 rc;

	if (c->o->val[O_ENDPOINT] == NULL)
		return replay_one(c);
	if ((rc = repo_webhook_get(c->wdb, c->o->id, &e)) == REPO_NOTFOUND)
		return no_endpoint(c->o->id);
	if (rc != REPO_OK || repo_webhook_replay_since(c->wdb, e.id,
	    c->o->since, clock_now_ms(), &n) != REPO_OK)
		return 1;
	if (!e.enabled)
		disabled_note(c, e.id);
	json_time(c->o->since, t);
	return result(c, "endpoint_id", "replayed", n, NULL, 0, "%llu delivered or dead "
	    "deliveries of webhook endpoint %llu created since %s replayed: "
	    "pending, due now, each with its webhook-id\n",
	    (unsigned long long)n, (unsigned long long)e.id, t);
}
