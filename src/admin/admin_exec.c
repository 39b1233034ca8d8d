/*
 * admin_exec.c - asyncexec-admin's execution verbs (show, requeue and
 * fail, for an operator), migrate (and --status) and check.
 *
 * requeue: only a waiting_callback execution without a cancel request;
 * its claim is dropped (callback token and lease cleared), so it is
 * claimable at once, in its place in the queue, and a backend still
 * holding the old callback token gets 409 on its next call. attempts
 * is kept: it counts claims.
 * fail: only a waiting_callback execution; a compare-and-set to failed
 * with {"message":TEXT,"by":"operator"} as its error, so the consumer's
 * poll shows failed and any backend callback gets 409.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "buf.h"
#include "check.h"
#include "clock.h"
#include "json.h"
#include "migrations.h"
#include "repo.h"
#include "repo_admin.h"

#define MIGRATE_LOCK_WAIT	60	/* seconds a second migrate waits */
#define MAX_MESSAGE		4096	/* bytes of an operator's message */

/* ID, or --tenant T ROUTE CORRELATION_ID; 0 or 2 (usage). */
int
chk_exec(struct opts *o)
{
	int	 rc;

	if (o->val[O_TENANT] == NULL) {
		if (o->npos == 1 && valid_exec_id(o->pos[0], &o->id))
			return 0;
		return admin_usage_error(NULL, "an execution id (a positive "
		    "integer), or --tenant TENANT ROUTE CORRELATION_ID");
	}
	if (o->npos != 2)
		return admin_usage_error(NULL, "--tenant needs ROUTE and "
		    "CORRELATION_ID");
	if (!valid_tenant(o->val[O_TENANT]))
		return admin_usage_error(NULL, "tenant must match "
		    "[A-Za-z0-9._-]{1,64}");
	if ((rc = admin_route_arg(o, o->pos[0])) != 0)
		return rc;
	if (!valid_correlation_id(o->pos[1]))
		return admin_usage_error(NULL, "not a correlation id: %s",
		    o->pos[1]);
	return 0;
}

/*
 * --message: 1..MAX_MESSAGE bytes of UTF-8 (poll serves it to the
 * consumer in a JSON string), and the execution; 0 or 2 (usage).
 */
int
chk_exec_fail(struct opts *o)
{
	if (o->val[O_MESSAGE] == NULL || o->val[O_MESSAGE][0] == '\0' ||
	    strlen(o->val[O_MESSAGE]) > MAX_MESSAGE)
		return admin_usage_error(NULL, "execution fail needs --message "
		    "TEXT (1..%d bytes)", MAX_MESSAGE);
	if (!valid_utf8(o->val[O_MESSAGE]))
		return admin_usage_error(NULL, "--message must be UTF-8 (the "
		    "consumer's poll serves it as JSON text)");
	return chk_exec(o);
}

/* Reads the execution the options name into e; 0, or an exit status. */
static int
exec_load(struct ctx *c, struct exec_admin *e)
{
	struct opts	*o = c->o;
	int		 rc;

	if (o->val[O_TENANT] == NULL)
		rc = repo_exec_show(c->adb, o->id, e);
	else
		rc = repo_exec_show_key(c->adb, o->val[O_TENANT], o->env,
		    o->svc, o->op, o->pos[1], e);
	if (rc == REPO_NOTFOUND)
		return admin_fail("no such execution");
	return rc == REPO_OK ? 0 : 1;
}

/* Adds time ms (0: null) as RFC 3339 member k of obj. */
static void
add_time(struct json_object *obj, const char *k, int64_t ms)
{
	char	 t[RFC3339_LEN + 1];

	json_time(ms, t);
	json_object_object_add(obj, k, ms ? json_object_new_string(t) : NULL);
}

/* Adds byte count n (-1: null) as member k of obj. */
static void
add_len(struct json_object *obj, const char *k, long long n)
{
	json_object_object_add(obj, k, n < 0 ? NULL :
	    json_object_new_int64(n));
}

/* e as one JSON object. */
static struct json_object *
exec_json(const struct exec_admin *e)
{
	struct json_object	*o;
	char			 route[3 * (NAME_MAX_LEN + 1)];

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	snprintf(route, sizeof(route), "%s/%s/%s", e->env, e->svc, e->op);
	json_object_object_add(o, "id", json_object_new_int64((int64_t)e->id));
	json_object_object_add(o, "route", json_object_new_string(route));
	json_object_object_add(o, "correlation_id",
	    json_object_new_string(e->cid));
	json_object_object_add(o, "tenant", e->tenant_null ? NULL :
	    json_object_new_string(e->tenant));
	json_object_object_add(o, "status", json_object_new_string(e->status));
	json_object_object_add(o, "attempts",
	    json_object_new_int64(e->attempts));
	json_object_object_add(o, "cancel_requested",
	    json_object_new_boolean(e->cancel_requested));
	json_object_object_add(o, "claimed",
	    json_object_new_boolean(e->has_claim_token));
	add_time(o, "lease_expires_at", e->lease_expires_at);
	add_time(o, "created_at", e->created_at);
	add_time(o, "updated_at", e->updated_at);
	add_time(o, "completed_at", e->completed_at);
	add_time(o, "expires_at", e->expires_at);
	add_len(o, "request_bytes", e->request_bytes);
	add_len(o, "result_bytes", e->result_bytes);
	add_len(o, "error_bytes", e->error_bytes);
	json_object_object_add(o, "error_code", e->error_code[0] ?
	    json_object_new_string(e->error_code) : NULL);
	return o;
}

/* Prints e as "name<TAB>value" lines (the JSON form's members). */
static int
exec_text(const struct exec_admin *e)
{
	struct json_object	*o;
	const char		*v;

	if ((o = exec_json(e)) == NULL)
		return 1;
	json_object_object_foreach(o, k, val) {
		v = val == NULL ? "-" : json_object_get_string(val);
		if (json_object_is_type(val, json_type_boolean))
			v = json_object_get_boolean(val) ? "yes" : "no";
		printf("%s\t%s\n", k, v);
	}
	json_object_put(o);
	return 0;
}

int
cmd_exec_show(struct ctx *c)
{
	struct exec_admin	 e;
	int			 rc;

	if ((rc = exec_load(c, &e)) != 0)
		return rc;
	return c->o->json ? admin_print_json(exec_json(&e)) : exec_text(&e);
}

/* Why a waiting-only action on e did not apply; 1. */
static int
not_waiting(const struct exec_admin *e, const char *what)
{
	if (strcmp(e->status, "waiting_callback") != 0)
		return admin_fail("execution %llu is already %s; nothing to "
		    "%s", (unsigned long long)e->id, e->status, what);
	if (e->cancel_requested)
		return admin_fail("execution %llu has a cancel request; %s "
		    "refused (it is cancelled by its backend, or expires)",
		    (unsigned long long)e->id, what);
	return admin_fail("execution %llu has used its max_attempts (%u "
	    "claims); %s refused: no claim would take it again. Its backend "
	    "may still finish it; else end it with execution fail, or raise "
	    "max_attempts first", (unsigned long long)e->id, e->attempts,
	    what);
}

int
cmd_exec_requeue(struct ctx *c)
{
	struct exec_admin	 e;
	int			 rc;

	if ((rc = exec_load(c, &e)) != 0)
		return rc;
	rc = repo_exec_requeue(c->adb, e.id, clock_now_ms(),
	    c->cfg.max_attempts);
	if (rc == REPO_NOTFOUND) {
		if ((rc = repo_exec_show(c->adb, e.id, &e)) != REPO_OK)
			return 1;
		return not_waiting(&e, "requeue");
	}
	if (rc != REPO_OK)
		return 1;
	printf("execution %llu requeued (attempts so far %u)\n",
	    (unsigned long long)e.id, e.attempts);
	return 0;
}

int
cmd_exec_fail(struct ctx *c)
{
	struct exec_admin	 e;
	struct buf		 b;
	int			 rc;

	if ((rc = exec_load(c, &e)) != 0)
		return rc;
	buf_init(&b);
	buf_puts(&b, "{\"message\":");
	json_put_string(&b, c->o->val[O_MESSAGE]);
	buf_puts(&b, ",\"by\":\"operator\"}");
	if (buf_failed(&b)) {
		buf_free(&b);
		return 1;
	}
	rc = repo_exec_opfail(c->adb, e.id, buf_cstr(&b), strlen(buf_cstr(&b)),
	    clock_now_ms());
	buf_free(&b);
	if (rc == REPO_NOTFOUND) {
		if ((rc = repo_exec_show(c->adb, e.id, &e)) != REPO_OK)
			return 1;
		return not_waiting(&e, "fail");
	}
	if (rc != REPO_OK)
		return 1;
	printf("execution %llu failed by the operator\n",
	    (unsigned long long)e.id);
	return 0;
}

int
chk_migrate(struct opts *o)
{
	if (o->val[O_STATUS] != NULL && o->val[O_TO] != NULL)
		return admin_usage_error(NULL, "--status and --to exclude "
		    "each other");
	if (o->json && o->val[O_STATUS] == NULL)
		return admin_usage_error(NULL, "--json only with migrate "
		    "--status");
	if (o->val[O_TO] != NULL &&
	    admin_uint_arg(o->val[O_TO], 1, SCHEMA_VERSION, &o->num) == -1)
		return admin_usage_error(NULL, "--to must be 1..%d",
		    SCHEMA_VERSION);
	return 0;
}

struct applied {
	int			 json;
	int			 seen[64];	/* by version, < 64 */
	int			 max;
	struct json_object	*arr;
};

/* repo_applied_fn: one recorded migration. */
static void
applied_row(void *arg, int version, int64_t at)
{
	struct applied		*a = arg;
	struct json_object	*o;
	char			 t[RFC3339_LEN + 1];

	json_time(at, t);
	if (version >= 0 && version < 64)
		a->seen[version] = 1;
	if (version > a->max)
		a->max = version;
	if (!a->json) {
		printf("applied\t%d\t%s\n", version, t);
		return;
	}
	if ((o = json_object_new_object()) == NULL)
		return;
	json_object_object_add(o, "version", json_object_new_int(version));
	json_object_object_add(o, "applied_at", json_object_new_string(t));
	json_object_array_add(a->arr, o);
}

/* Prints the embedded migrations not applied; how many. */
static int
pending(struct applied *a, struct json_object *parr)
{
	size_t	 i;
	int	 n = 0;

	for (i = 0; i < asyncexec_nmigrations; i++) {
		const struct migration *m = &asyncexec_migrations[i];
		if (m->version < 64 && a->seen[m->version])
			continue;
		n++;
		if (parr != NULL)
			json_object_array_add(parr,
			    json_object_new_string(m->name));
		else
			printf("pending\t%d\t%s\n", m->version, m->name);
	}
	return n;
}

/* migrate --status: applied versions with times, pending ones. */
static int
migrate_status(struct ctx *c)
{
	struct applied		 a;
	struct json_object	*doc = NULL, *parr = NULL;
	int			 np;

	memset(&a, 0, sizeof(a));
	a.json = c->o->json;
	if (a.json && ((doc = json_object_new_object()) == NULL ||
	    (a.arr = json_object_new_array()) == NULL ||
	    (parr = json_object_new_array()) == NULL))
		goto fail;
	if (repo_migrations_applied(c->adb, applied_row, &a) == REPO_ERR)
		goto fail;		/* REPO_NOTFOUND: none applied */
	np = pending(&a, parr);
	if (!a.json) {
		printf("database\t%d\nbuild\t%d\n%s\n", a.max, SCHEMA_VERSION,
		    np ? MIGRATE_HINT : "up to date");
		return 0;
	}
	json_object_object_add(doc, "database_version",
	    json_object_new_int(a.max));
	json_object_object_add(doc, "build_version",
	    json_object_new_int(SCHEMA_VERSION));
	json_object_object_add(doc, "applied", a.arr);
	json_object_object_add(doc, "pending", parr);
	return admin_print_json(doc);
fail:
	json_object_put(doc);
	json_object_put(a.arr);
	json_object_put(parr);
	return 1;
}

/*
 * What to do about a statement migrate's user may not run, into buf
 * (sz bytes): the privileges migrate needs, and run it with the migrate
 * configuration, or, when that is the file in use, grant them. No
 * result.
 */
static void
migrate_denied(const struct ctx *c, char *buf, size_t sz)
{
	int	 own = strcmp(c->path, CONFIG_MIGRATE_PATH) == 0;

	snprintf(buf, sz, "%s lacks a privilege migrate needs: CREATE, ALTER, "
	    "INDEX, REFERENCES on %s (the service's own user has only "
	    "SELECT, INSERT, UPDATE, DELETE). %s%s%s", c->cfg.db_user,
	    c->cfg.db_name, own ? "GRANT them to " : "Run it with a user "
	    "that has them, the migrate configuration of asyncexec-ops(7): "
	    "asyncexec-admin --config " CONFIG_MIGRATE_PATH " migrate",
	    own ? c->cfg.db_user : "", own ? ", the user of "
	    CONFIG_MIGRATE_PATH " (asyncexec-ops(7))" : "");
}

/*
 * Reports a failed migrate: the migration that failed (NULL: none, the
 * failure came before or after them), how many were applied, the
 * version the database is at (-1: unknown) and what to do: for a
 * refused connect, the settings of the file in use; for a statement
 * the user may not run, which user to run it as. 1.
 */
static int
migrate_failed(const struct ctx *c, const char *failed, int applied,
    int version, enum repo_cause cause)
{
	char	 v[32], why[700] = "";

	if (version >= 0)
		snprintf(v, sizeof(v), "%d", version);
	else
		snprintf(v, sizeof(v), "unknown");
	if (cause == CAUSE_LOGIN)
		return admin_fail("migrate: the server refused the connect of "
		    "%s to database %s (logged above): check db_name, db_user "
		    "and db_password (or db_password_file) in %s, and the "
		    "grants; nothing applied", c->cfg.db_user, c->cfg.db_name,
		    c->path);
	if (cause == CAUSE_DENIED)
		migrate_denied(c, why, sizeof(why));
	if (why[0] != '\0' && failed == NULL)	/* no table: no version */
		return admin_fail("migrate: %s (%d migration(s) applied%s%s)",
		    why, applied, version >= 0 ? "; schema version " : "",
		    version >= 0 ? v : "");
	if (failed == NULL)
		return admin_fail("migrate failed after %d migration(s); "
		    "schema version %s. The error is logged above; fix its "
		    "cause and run migrate again (asyncexec-ops(7), "
		    "UPGRADES)", applied, v);
	return admin_fail("migrate failed at %s after %d migration(s); "
	    "schema version %s. The server's error is logged above%s%s. What "
	    "%s changed before its failing statement stays (DDL is not rolled "
	    "back) and is skipped when it runs again: fix the cause, then run "
	    "migrate again (asyncexec-ops(7), UPGRADES)", failed, applied, v,
	    why[0] ? ": " : "", why, failed);
}

/*
 * migrate [--to N]: applies the pending migrations (up to N), on a
 * connection of its own: the only one that accepts multi-statement
 * scripts.
 */
int
cmd_migrate(struct ctx *c)
{
	struct db	*mdb;
	const char	*failed;
	enum repo_cause	 cause;
	int		 applied, version, rc;

	if (c->o->val[O_STATUS] != NULL)
		return migrate_status(c);
	if ((mdb = repo_open_migrate(&c->cfg)) == NULL)
		return admin_fail("out of memory");
	rc = repo_migrate(mdb, c->o->val[O_TO] ? (int)c->o->num : 0,
	    MIGRATE_LOCK_WAIT, &applied, &version, &failed, &cause);
	repo_close(mdb);
	if (rc == REPO_BUSY)
		return admin_fail("another migrate holds the migration lock "
		    "of this database (waited up to %d s; a wait cut short "
		    "is logged above); nothing applied, try again when it "
		    "has finished", MIGRATE_LOCK_WAIT);
	if (rc != REPO_OK)
		return migrate_failed(c, failed, applied, version, cause);
	printf("applied %d migration(s); schema version %d\n", applied,
	    version);
	return 0;
}

/* check: the checks of --check-config, for asyncexec-admin. */
int
cmd_check(struct ctx *c)
{
	return check_run("asyncexec-admin", CHECK_ADMIN, c->path, NULL);
}
