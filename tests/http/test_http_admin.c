/*
 * test_http_admin.c - asyncexec-admin's operator verbs, end to end through the real
 * service: route set (the expiresAt of new submits), route add --if-not-exists,
 * backend-key grant / revoke-route (effective within the cache TTL), execution show /
 * requeue / fail (a requeued execution is claimable again with a new token and the old
 * token loses; an operator fail makes poll say failed and a backend callback get 409);
 * usage errors (exit 2, before any configuration is read; a bad
 * --label, a --message that is not UTF-8 (the execution left waiting), too many words
 * after stats; an option a verb does not take, named); --json documents; and
 * --check-config of the three binaries against real files and databases: a password file
 * that cannot be read, one readable by others, a wrong password, a schema behind (in a
 * scratch database made through the test server's root account), a user lacking grants,
 * and migrate making the poll-token key itself; admin and expire against a
 * database they cannot reach (what to check, not the workers' retry text).
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "admin_run.h"
#include "admin_conf.h"

#define DAY_MS		86400000LL

static char dir[256], sql_sock[256], scratch[64];

/* Runs SQL as the test server's root over its unix socket; 0 or -1 (out: -N output). */
static int
root_sql(const char *sql)
{
	char sockarg[300];
	char *argv[] = { "/usr/bin/mariadb", "--no-defaults", "-uroot", sockarg, "-N", "-e",
	    (char *)(uintptr_t)sql, NULL };

	snprintf(sockarg, sizeof sockarg, "--socket=%s", sql_sock);
	if (run_v(argv) != 0) {
		fprintf(stderr, "  mariadb -e \"%s\" failed: %s\n", sql, err);
		return -1;
	}
	return 0;
}

static struct json_object *
parse_out(void)
{
	struct json_object *o = json_tokener_parse(out);

	if (o == NULL)
		fprintf(stderr, "  not JSON: %.300s\n", out);
	return o;
}

/* Usage errors: exit 2 and a usage message even though the config file does not exist. */
static void
test_usage(void)
{
	const char *nocfg = "/nonexistent/asyncexec.conf";

	CHECK_EQ_INT(run("asyncexec-admin", "--config %s bogus", nocfg), 2);
	CHECK(strstr(err, "unknown verb bogus") != NULL && strstr(err, "usage:") != NULL);
	CHECK(strstr(err, "nonexistent") == NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "route add --config %s", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route add Bad/Route", nocfg), 2);
	CHECK(strstr(err, "ENV/SERVICE/OPERATION") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route set a/b/c", nocfg), 2);
	CHECK(strstr(err, "--retention-days") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route add a/b/c --retention-days 0",
	    nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s execution fail 5", nocfg), 2);
	CHECK(strstr(err, "--message") != NULL);
	/* --message: UTF-8 (poll serves it to the consumer as JSON text) */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s execution fail 5 --message "
	    "caf\xff", nocfg), 2);
	CHECK(strstr(err, "--message must be") != NULL);
	/* five words after a verb that is its noun alone (stats, check, migrate) */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s stats a b c d e", nocfg), 2);
	CHECK(strstr(err, "wrong number of arguments") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate a b c d e", nocfg), 2);
	CHECK(strstr(err, "wrong number of arguments") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s execution show --tenant t a/b/c",
	    nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s key create --label x", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list --frobnicate", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route add a/b/c --json", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "--check-config --config %s stats", nocfg), 2);
	CHECK_EQ_INT(run("asyncexec-admin", "%s", ""), 2);
	/* a label: 1-128 bytes of UTF-8, no control character (key list is
	 * tab-separated) */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s key create --tenant t "
	    "--label a\tb", nocfg), 2);
	CHECK(strstr(err, "--label must be") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s key create --tenant t "
	    "--label %0129d", nocfg, 0), 2);
	CHECK(strstr(err, "--label must be") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s key create --tenant t "
	    "--label caf\xe9", nocfg), 2);
	CHECK(strstr(err, "--label must be") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s backend-key create "
	    "--route a/b/c --label x\ny", nocfg), 2);
	CHECK(strstr(err, "--label must be") != NULL);
	/* an option the verb does not take is named */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s key list "
	    "--grace-hours 3", nocfg), 2);
	CHECK(strstr(err, "key list takes no --grace-hours option") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s stats --tenant t",
	    nocfg), 2);
	CHECK(strstr(err, "stats takes no --tenant option") != NULL);
	/* help and version need no configuration either */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s help route", nocfg), 0);
	CHECK(strstr(out, "route set ENV/SERVICE/OPERATION --retention-days N") != NULL);
	CHECK(strstr(out, "key create") == NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "route --help --config %s", nocfg), 0);
	CHECK(strstr(out, "route add") != NULL && strstr(out, "execution") == NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "%s", "--help"), 0);
	CHECK(strstr(out, "execution requeue") != NULL && strstr(out, "migrate --status"));
	CHECK_EQ_INT(run("asyncexec-admin", "%s", "--version"), 0);
	CHECK(strncmp(out, "asyncexec-admin ", 16) == 0 && out[16] >= '0' && out[16] <= '9');
	CHECK_EQ_INT(run("asyncexec-fcgi", "%s", "--version"), 0);
	CHECK(strncmp(out, "asyncexec-fcgi ", 15) == 0 && out[15] >= '0' && out[15] <= '9');
	CHECK_EQ_INT(run("asyncexec-expire", "%s", "--version"), 0);
	CHECK(strncmp(out, "asyncexec-expire ", 17) == 0 && out[17] >= '0');
	/* a real configuration error is still 2, after the command line was accepted */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list", nocfg), 2);
	CHECK(strstr(err, "nonexistent") != NULL);
}

/* The entry of array A whose member K is the string V, or NULL. */
static struct json_object *
find_in(struct json_object *a, const char *k, const char *v)
{
	size_t i;

	for (i = 0; a != NULL && i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		const char *s = jstr(e, k);
		if (s != NULL && strcmp(s, v) == 0)
			return e;
	}
	return NULL;
}

/* --json on list verbs, stats and migrate --status; options in any order. */
static void
test_json(const struct fx *f)
{
	struct json_object *o, *e;
	int64_t v, b, n;
	char last[40];
	int yes;

	CHECK_EQ_INT(run("asyncexec-admin", "route list --json --config %s", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_is_type(o, json_type_array));
	e = find_in(o, "route", f->route);
	CHECK(e != NULL && jint(e, "retention_days", &v) && v == 7);
	CHECK(e != NULL && jbool(e, "enabled", &yes) && yes);
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("--json backend-key list", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_is_type(o, json_type_array) &&
	    json_object_array_length(o) > 0);
	e = o ? json_object_array_get_idx(o, 0) : NULL;
	CHECK(e != NULL && jint(e, "id", &v) && v > 0 && jnull(e, "tenant") &&
	    json_object_is_type(jget(e, "routes"), json_type_array));
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("key list --json", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_is_type(o, json_type_array));
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("stats --json", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_is_type(o, json_type_array));
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("migrate --json --status", CONF), 0);
	o = parse_out();
	/* migration numbers are handed out in parallel: the applied ones may have gaps,
	 * the newest is the build's */
	snprintf(last, sizeof last, "applied.%ld.version", jlen(o, "applied") - 1);
	CHECK(o != NULL && jint(o, "database_version", &v) && jint(o, "build_version", &b) &&
	    v == b && v >= 4 && jlen(o, "pending") == 0 && jlen(o, "applied") >= 4 &&
	    jlen(o, "applied") <= v && jint(o, last, &n) && n == v);
	CHECK(o != NULL && rfc3339_ms(jstr(o, "applied.0.applied_at")) > 0);
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("migrate --status", CONF), 0);
	CHECK(strstr(out, "up to date") != NULL && strstr(out, "applied\t1\t") != NULL);
}

/* Submits with a fresh correlation id; the poll body's expiresAt - createdAt in days. */
static int64_t
submit_retention_ms(const struct fx *f)
{
	struct sub s;
	struct http_resp r;
	struct json_object *o = NULL;
	char cid[CID_MAX];
	int64_t d = -1;

	fx_cid(cid, sizeof cid, "ret");
	if (fx_submit_ok(f, cid, "{\"x\":1}", &s) &&
	    fx_poll(f, f->ckey, s.cid, s.token, NULL, &r) == 200 && (o = json_body(&r)))
		d = rfc3339_ms(jstr(o, "expiresAt")) - rfc3339_ms(jstr(o, "createdAt"));
	json_object_put(o);
	http_resp_free(&r);
	return d;
}

/* route set --retention-days: stored, and new executions expire that much later. */
static void
test_route_set(const struct fx *f)
{
	struct json_object *o;
	int64_t v;

	CHECK_EQ_INT(submit_retention_ms(f), 7 * DAY_MS);
	CHECK_EQ_INT(ADMIN("route set %s --retention-days 3", CONF, f->route), 0);
	CHECK_EQ_INT(ADMIN("route list --json", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && jint(find_in(o, "route", f->route), "retention_days", &v) &&
	    v == 3);
	json_object_put(o);
	/* the route cache of the workers may hold the old value for cache_ttl_seconds */
	int64_t until = ut_now_ms() + (config_long("cache_ttl_seconds", 5) + 3) * 1000, d;
	while ((d = submit_retention_ms(f)) != 3 * DAY_MS && ut_now_ms() < until)
		;
	CHECK_EQ_INT(d, 3 * DAY_MS);
	CHECK_EQ_INT(ADMIN("route set %s/nope --retention-days 3", CONF, f->env), 2);
	CHECK_EQ_INT(ADMIN("route set %s-none --retention-days 3", CONF, f->route), 1);
	CHECK(strstr(err, "no route") != NULL);
	/* --if-not-exists */
	CHECK_EQ_INT(ADMIN("route add %s", CONF, f->route), 1);
	CHECK(strstr(err, "already exists") != NULL);
	CHECK_EQ_INT(ADMIN("route add --if-not-exists %s --retention-days 9", CONF, f->route), 0);
	CHECK_EQ_INT(ADMIN("route list --json", CONF), 0);
	o = parse_out();
	CHECK(o != NULL && jint(find_in(o, "route", f->route), "retention_days", &v) &&
	    v == 3);	/* an existing route is left as it is */
	json_object_put(o);
}

/* Claim status on ROUTE with KEY. */
static int
claim_status(const char *route, const char *key)
{
	struct http_resp r;
	char path[512];
	int st;

	snprintf(path, sizeof path, "/v1/backend/%s/claim", route);
	st = api("POST", path, key, "{\"max\":1}", &r, (const char *)NULL);
	http_resp_free(&r);
	return st;
}

/* backend-key grant / revoke-route, by key and by id, effective through HTTP. */
static void
test_grants(const struct fx *f)
{
	struct json_object *o, *e = NULL;
	char r2[256], idstr[32];
	int64_t id = 0, until;
	size_t i;

	snprintf(r2, sizeof r2, "%s/%s/second", f->env, f->svc);
	CHECK_EQ_INT(ADMIN("route add %s", CONF, r2), 0);
	CHECK_EQ_INT(claim_status(r2, f->bkey), 404);
	CHECK_EQ_INT(ADMIN("backend-key grant %s %s", CONF, f->bkey, r2), 0);
	CHECK_EQ_INT(claim_status(r2, f->bkey), 200);	/* only positives are cached */
	CHECK_EQ_INT(ADMIN("backend-key grant %s %s", CONF, f->bkey, r2), 0);
	CHECK(strstr(out, "already") != NULL);
	CHECK_EQ_INT(ADMIN("backend-key grant %s %s-x", CONF, f->bkey, r2), 1);
	CHECK_EQ_INT(ADMIN("backend-key grant %s %s", CONF, f->ckey, r2), 1);
	CHECK(strstr(err, "no such backend key") != NULL);
	/* the key's id, from the listing: the one serving both routes */
	CHECK_EQ_INT(ADMIN("backend-key list --json", CONF), 0);
	o = parse_out();
	for (i = 0; o != NULL && i < json_object_array_length(o); i++) {
		struct json_object *k = json_object_array_get_idx(o, i), *rs = jget(k, "routes");
		for (size_t j = 0; rs != NULL && j < json_object_array_length(rs); j++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(rs, j)),
			    r2) == 0)
				e = k;
	}
	CHECK(strstr(out, r2) != NULL);	/* no "\/" escapes */
	CHECK(e != NULL && jint(e, "id", &id) && id > 0 && jlen(e, "routes") == 2);
	json_object_put(o);
	snprintf(idstr, sizeof idstr, "%lld", (long long)id);
	CHECK_EQ_INT(ADMIN("backend-key revoke-route %s %s", CONF, idstr, r2), 0);
	CHECK(strstr(out, "no longer serves") != NULL && strstr(out, "was not") == NULL);
	/*
	 * One worker answering 404 does not mean all do: another may have cached the grant
	 * just before the revocation. Once the TTL (plus scheduling slack) has passed since
	 * the revocation, every worker must refuse.
	 */
	until = ut_now_ms() + config_long("cache_ttl_seconds", 5) * 1000 + 250;
	while (ut_now_ms() < until)
		(void)claim_status(r2, f->bkey);
	for (i = 0; i < 8; i++)
		CHECK_EQ_INT(claim_status(r2, f->bkey), 404);
	CHECK_EQ_INT(claim_status(f->route, f->bkey), 200);	/* the other route stays */
	CHECK_EQ_INT(ADMIN("backend-key revoke-route %s %s", CONF, idstr, r2), 0);
	CHECK(strstr(out, "was not granted") != NULL);
}

/* execution show as JSON by tenant + route + correlation id. */
static struct json_object *
show_key(const struct fx *f, const char *cid)
{
	if (ADMIN("--json execution show --tenant %s %s %s", CONF, f->tenant, f->route,
	    cid) != 0)
		return NULL;
	return parse_out();
}

/* Callback status of VERB with TOKEN for execution ID. */
static int
callback(const struct fx *f, int64_t id, const char *verb, const char *token,
    const char *body)
{
	struct http_resp r;
	int st = fx_callback(f->bkey, id, verb, token, body, &r);

	http_resp_free(&r);
	return st;
}

/* execution show, then requeue: the claim is dropped and the old token loses. */
static void
test_show_requeue(const struct fx *f)
{
	struct json_object *o;
	struct claim c1, c2;
	struct sub s;
	int64_t v, id = 0;
	int yes;

	memset(&c1, 0, sizeof c1);
	memset(&c2, 0, sizeof c2);
	CHECK(fx_submit_claim(f, "{\"show\":1}", &s, &c1));
	CHECK_EQ_INT(ADMIN("execution show %lld", CONF, (long long)c1.id), 0);
	CHECK(strstr(out, "status\twaiting_callback\n") != NULL);
	CHECK(strstr(out, "claimed\tyes\n") != NULL && strstr(out, "attempts\t1\n") != NULL);
	CHECK(strstr(out, c1.token) == NULL && strstr(out, s.token) == NULL);
	CHECK(strstr(out, "hash") == NULL && strstr(out, "token") == NULL);
	o = show_key(f, s.cid);
	CHECK(o != NULL && jint(o, "id", &id) && id == c1.id);
	CHECK(o != NULL && jstr(o, "status") && strcmp(jstr(o, "status"), "waiting_callback") == 0);
	CHECK(o != NULL && jint(o, "attempts", &v) && v == 1);
	CHECK(o != NULL && jbool(o, "claimed", &yes) && yes);
	CHECK(o != NULL && jbool(o, "cancel_requested", &yes) && !yes);
	CHECK(o != NULL && rfc3339_ms(jstr(o, "lease_expires_at")) > rfc3339_ms(jstr(o, "created_at")));
	CHECK(o != NULL && jnull(o, "completed_at") && jnull(o, "result_bytes"));
	CHECK(o != NULL && jint(o, "request_bytes", &v) && v == 10);
	CHECK(o != NULL && jstr(o, "tenant") && strcmp(jstr(o, "tenant"), f->tenant) == 0);
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("execution show 999999999999", CONF), 1);
	CHECK(strstr(err, "no such execution") != NULL);

	/* requeue: claimable at once, with a new token; the old one loses */
	CHECK_EQ_INT(ADMIN("execution requeue %lld", CONF, (long long)c1.id), 0);
	o = show_key(f, s.cid);
	CHECK(o != NULL && jnull(o, "lease_expires_at") && jbool(o, "claimed", &yes) && !yes);
	json_object_put(o);
	CHECK(fx_claim_one(f, &c2));
	CHECK_EQ_INT(c2.id, c1.id);
	CHECK(strcmp(c2.token, c1.token) != 0);
	CHECK_EQ_INT(callback(f, c1.id, "heartbeat", c1.token, "{\"leaseSeconds\":30}"), 409);
	CHECK_EQ_INT(callback(f, c1.id, "complete", c1.token, "{\"result\":1}"), 409);
	CHECK_EQ_INT(callback(f, c2.id, "complete", c2.token, "{\"result\":2}"), 200);
	CHECK_EQ_STR(fx_status(f, &s), "completed");
	o = show_key(f, s.cid);
	CHECK(o != NULL && jint(o, "attempts", &v) && v == 2);
	CHECK(o != NULL && jint(o, "result_bytes", &v) && v == 1);
	json_object_put(o);
	CHECK_EQ_INT(ADMIN("execution requeue %lld", CONF, (long long)c1.id), 1);
	CHECK(strstr(err, "already completed") != NULL);
}

/*
 * requeue after max_attempts claims is refused: it would leave the execution
 * claimable by no one (claims stop at max_attempts) and, without a lease, out
 * of the expiry's rescue, waiting for its retention. The claim stays.
 */
static void
test_requeue_spent(const struct fx *f)
{
	struct json_object *o;
	struct claim c;
	struct sub s;
	long max = config_long("max_attempts", 5), k;
	int64_t v = 0;
	int yes = 0;

	memset(&c, 0, sizeof c);
	CHECK(fx_submit_claim(f, "{\"spent\":1}", &s, &c));
	for (k = 1; k < max; k++) {
		CHECK_EQ_INT(ADMIN("execution requeue %lld", CONF, (long long)c.id), 0);
		if (!fx_claim_one(f, &c)) {
			fprintf(stderr, "requeue_spent: no claim after requeue %ld\n", k);
			CHECK(0);
			return;
		}
	}
	CHECK_EQ_INT(ADMIN("execution requeue %lld", CONF, (long long)c.id), 1);
	CHECK(strstr(err, "max_attempts") != NULL);
	o = show_key(f, s.cid);
	CHECK(o != NULL && jint(o, "attempts", &v) && v == max);
	CHECK(o != NULL && jbool(o, "claimed", &yes) && yes);
	json_object_put(o);
	CHECK_EQ_INT(callback(f, c.id, "complete", c.token, "{\"result\":1}"), 200);
}

/* execution fail by an operator: poll says failed, a backend callback gets 409. */
static void
test_fail(const struct fx *f)
{
	struct json_object *o = NULL;
	struct http_resp r;
	struct claim c;
	struct sub s;

	CHECK(fx_submit_claim(f, "{\"fail\":1}", &s, &c));
	/* a message that is not UTF-8: refused (2), the execution as it was */
	CHECK_EQ_INT(ADMIN("execution fail %lld --message bad\xe6\x97", CONF,
	    (long long)c.id), 2);
	CHECK(strstr(err, "--message must be") != NULL);
	CHECK((o = show_key(f, s.cid)) != NULL && jstr(o, "status") &&
	    strcmp(jstr(o, "status"), "waiting_callback") == 0);
	json_object_put(o);
	o = NULL;
	CHECK_EQ_INT(run("asyncexec-admin", "execution fail --message stuck-in-backend "
	    "--tenant %s %s %s --config %s", f->tenant, f->route, s.cid, CONF), 0);
	CHECK(fx_poll(f, f->ckey, s.cid, s.token, NULL, &r) == 200 && (o = json_body(&r)));
	CHECK(o != NULL && jstr(o, "status") && strcmp(jstr(o, "status"), "failed") == 0);
	CHECK(o != NULL && jstr(o, "error.message") &&
	    strcmp(jstr(o, "error.message"), "stuck-in-backend") == 0);
	CHECK(o != NULL && jstr(o, "error.by") && strcmp(jstr(o, "error.by"), "operator") == 0);
	json_object_put(o);
	http_resp_free(&r);
	CHECK_EQ_INT(callback(f, c.id, "complete", c.token, "{\"result\":1}"), 409);
	CHECK_EQ_INT(callback(f, c.id, "fail", c.token, "{\"error\":{\"message\":\"x\"}}"), 409);
	CHECK_EQ_INT(ADMIN("execution fail %lld --message again", CONF, (long long)c.id), 1);
	CHECK(strstr(err, "already failed") != NULL);
	CHECK_EQ_INT(ADMIN("execution requeue %lld", CONF, (long long)c.id), 1);
}

/* --check-config of BIN on CFG: its exit status; out holds the lines. */
static int
check_config(const char *bin, const char *cfg)
{
	static int n;

	if (strcmp(bin, "asyncexec-admin") == 0 && n++ % 2 == 0)
		return run(bin, "check --config %s", cfg);
	return run(bin, "--config %s --check-config", cfg);
}

/* --check-config on the good file, and on password files that are wrong in three ways. */
static void
test_check_files(void)
{
	static const char *const bins[] = { "asyncexec-fcgi", "asyncexec-expire",
	    "asyncexec-admin" };
	char cfg[400], pw[400], extra[600];
	const char *pwsrc = conf_value("db_password_file");
	FILE *f;
	char pass[256] = "";
	size_t i;

	for (i = 0; i < 3; i++) {
		CHECK_EQ_INT(check_config(bins[i], CONF), 0);
		CHECK(strstr(out, "ok    config: ") == out);
		CHECK(strstr(out, "ok    database: ") && strstr(out, "ok    schema: ") &&
		    strstr(out, "ok    grants: "));
		CHECK(strstr(out, "error") == NULL);
	}
	/* the test stack's password, copied into files of our own */
	CHECK(pwsrc[0] != '\0' && (f = fopen(pwsrc, "r")) != NULL);
	if (pwsrc[0] != '\0' && (f = fopen(pwsrc, "r")) != NULL) {
		if (fgets(pass, sizeof pass, f) == NULL)
			pass[0] = '\0';
		fclose(f);
	}
	snprintf(cfg, sizeof cfg, "%s/check.conf", dir);
	snprintf(pw, sizeof pw, "%s/pw-world", dir);
	CHECK(write_text(pw, pass, 0644) == 0);
	snprintf(extra, sizeof extra, "db_password_file = %s\n", pw);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(check_config("asyncexec-fcgi", cfg), 0);	/* a warning only */
	CHECK(strstr(out, "warn  password file: ") != NULL && strstr(out, "chmod o-r") != NULL);
	CHECK(strstr(out, "ok    database: ") != NULL);

	snprintf(extra, sizeof extra, "db_password_file = %s/no-such-file\n", dir);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(check_config("asyncexec-expire", cfg), 1);
	CHECK(strstr(out, "error password file: cannot read ") != NULL);

	snprintf(pw, sizeof pw, "%s/pw-wrong", dir);
	CHECK(write_text(pw, "not-the-password\n", 0600) == 0);
	snprintf(extra, sizeof extra, "db_password_file = %s\n", pw);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(check_config("asyncexec-admin", cfg), 1);
	CHECK(strstr(out, "error database: cannot connect") != NULL &&
	    strstr(out, "access denied") != NULL);
	CHECK(strstr(out, "not-the-password") == NULL && strstr(err, "not-the-password") == NULL);

	/* a file that does not parse: 2, the reason on stderr */
	CHECK(derive(cfg, "workers = lots\n") == 0);
	CHECK_EQ_INT(check_config("asyncexec-fcgi", cfg), 2);
	CHECK(strstr(err, "workers") != NULL && out[0] == '\0');
}

/*
 * A one-shot program (admin, expire) that cannot connect says what to
 * check, not the workers' "retrying ...; 503 meanwhile": it neither
 * retries nor answers anything.
 */
static void
test_unreachable(void)
{
	static const char *const bins[] = { "asyncexec-admin", "asyncexec-expire" };
	char cfg[400], extra[400];
	size_t i;

	snprintf(cfg, sizeof cfg, "%s/unreachable.conf", dir);
	/* a file of its own: the cluster run's db_hosts would win over db_socket */
	CHECK(write_text(cfg, "db_socket = /nonexistent/mysqld.sock\n", 0600) == 0);
	for (i = 0; i < 2; i++) {
		CHECK_EQ_INT(run(bins[i], "--config %s%s", cfg, i ? "" : " route list"), 1);
		CHECK(strstr(err, "/nonexistent/mysqld.sock") != NULL &&
		    strstr(err, "check db_socket") != NULL);
		CHECK(strstr(err, "retrying") == NULL && strstr(err, "503 ") == NULL);
		if (strstr(err, "check db_socket") == NULL || strstr(err, "503 ") != NULL)
			fprintf(stderr, "  %s said: %s\n", bins[i], err);
	}
	/* the wrong password of test_check_files: the credentials to check */
	snprintf(extra, sizeof extra, "db_password_file = %s/pw-wrong\n", dir);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s route list", cfg), 1);
	CHECK(strstr(err, "db_user and db_password") != NULL &&
	    strstr(err, "503 ") == NULL);
	/* check says it once: its own line, not db's log line beside it */
	CHECK_EQ_INT(run("asyncexec-admin", "check --config %s", cfg), 1);
	CHECK(strstr(out, "cannot connect") != NULL &&
	    strstr(err, "cannot connect") == NULL);
}

/*
 * A backend key granted 80 routes of about 130 characters: backend-key list names every
 * one, in text and --json (over 10 KiB: a 4 KiB column cut them, and GROUP_CONCAT's
 * group_concat_max_len can). Made through root; removed again.
 */
static void
test_key_many_routes(const struct fx *f)
{
	static char sql[16384];
	char svc[100], op[100], last[300];
	struct json_object *o, *e = NULL;
	const char *db = conf_value("db_name")[0] ? conf_value("db_name") : "asyncexec";
	size_t i, n;
	int64_t id, v;

	snprintf(svc, sizeof svc, "%.20s-many-%034d", f->svc, 0);	/* 60 characters */
	n = (size_t)snprintf(sql, sizeof sql, "USE %s; INSERT INTO s2r_route (environment, "
	    "service_key, operation_key, retention_days, enabled, created_at) VALUES ", db);
	for (i = 1; i <= 80; i++) {
		snprintf(op, sizeof op, "op%02zu-%055d", i, 0);
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s('%s', '%s', '%s', 7, 1, "
		    "UTC_TIMESTAMP(3))", i > 1 ? ", " : "", f->env, svc, op);
	}
	snprintf(last, sizeof last, "%s/%s/%s", f->env, svc, op);
	snprintf(sql + n, sizeof sql - n, "; INSERT INTO s2r_api_key (kind, key_hash, label, "
	    "created_at) VALUES ('backend', UNHEX(SHA2(UUID(), 256)), 'many', "
	    "UTC_TIMESTAMP(3)); SET @k = LAST_INSERT_ID(); INSERT INTO s2r_backend_key_route "
	    "(key_id, route_id) SELECT @k, id FROM s2r_route WHERE service_key = '%s'; "
	    "SELECT @k", svc);
	CHECK(root_sql(sql) == 0);
	id = strtoll(out, NULL, 10);
	CHECK_EQ_INT(ADMIN("backend-key list", CONF), 0);
	CHECK(strstr(out, last) != NULL);
	CHECK_EQ_INT(ADMIN("backend-key list --json", CONF), 0);
	o = parse_out();
	for (i = 0; o != NULL && i < json_object_array_length(o); i++)
		if (jint(json_object_array_get_idx(o, i), "id", &v) && v == id)
			e = json_object_array_get_idx(o, i);
	CHECK(e != NULL && jlen(e, "routes") == 80 && jstr(e, "routes.79") != NULL &&
	    strcmp(jstr(e, "routes.79"), last) == 0);
	json_object_put(o);
	snprintf(sql, sizeof sql, "USE %s; DELETE FROM s2r_backend_key_route WHERE key_id = "
	    "%lld; DELETE FROM s2r_api_key WHERE id = %lld; DELETE FROM s2r_route WHERE "
	    "service_key = '%s'", db, (long long)id, (long long)id, svc);
	CHECK(root_sql(sql) == 0);
}

/* A scratch database: schema behind, then migrate (which makes the poll-token key). */
static void
test_check_schema(void)
{
	char cfg[400], sql[512], extra[200], key1[80] = "", key2[80] = "";

	snprintf(sql, sizeof sql, "CREATE DATABASE %s; GRANT ALL ON %s.* TO "
	    "'asyncexec'@'localhost'; GRANT ALL ON %s.* TO 'asyncexec'@'127.0.0.1'",
	    scratch, scratch, scratch);
	CHECK(root_sql(sql) == 0);
	snprintf(cfg, sizeof cfg, "%s/scratch.conf", dir);
	snprintf(extra, sizeof extra, "db_name = %s\n", scratch);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(check_config("asyncexec-fcgi", cfg), 1);
	CHECK(strstr(out, "error schema: version 0") != NULL &&
	    strstr(out, "run asyncexec-admin --config "
	    "/etc/asyncexec/migrate.conf migrate") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate --to 2", cfg), 0);
	CHECK_EQ_INT(check_config("asyncexec-admin", cfg), 1);
	CHECK(strstr(out, "error schema: version 2, this build needs") != NULL);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate --status", cfg), 0);
	CHECK(strstr(out, "pending\t3\t003_poll_token_key.sql") != NULL);

	/* migrate makes the 16-byte key, once; a second migrate keeps it */
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", cfg), 0);
	snprintf(sql, sizeof sql, "SELECT HEX(secret) FROM %s.s2r_secret WHERE name = "
	    "'poll_token_id_key'", scratch);
	CHECK(root_sql(sql) == 0);
	snprintf(key1, sizeof key1, "%.*s", (int)strcspn(out, "\n"), out);
	CHECK_EQ_INT(strlen(key1), 32);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", cfg), 0);
	CHECK(strstr(out, "applied 0 migration(s)") != NULL);
	CHECK(root_sql(sql) == 0);
	snprintf(key2, sizeof key2, "%.*s", (int)strcspn(out, "\n"), out);
	CHECK_EQ_STR(key2, key1);
	/* a lost key row is made again by the next migrate (a new key) */
	snprintf(sql, sizeof sql, "DELETE FROM %s.s2r_secret", scratch);
	CHECK(root_sql(sql) == 0);
	CHECK_EQ_INT(run("asyncexec-admin", "--config %s migrate", cfg), 0);
	snprintf(sql, sizeof sql, "SELECT HEX(secret) FROM %s.s2r_secret", scratch);
	CHECK(root_sql(sql) == 0);
	CHECK(strlen(out) == 33 && strncmp(out, key1, 32) != 0);
	CHECK_EQ_INT(check_config("asyncexec-fcgi", cfg), 0);
	CHECK(strstr(out, "ok    schema: ") != NULL);
	/* ahead of this build: a warning */
	snprintf(sql, sizeof sql, "INSERT INTO %s.s2r_schema_version (version, "
	    "applied_at) VALUES (999, "
	    "UTC_TIMESTAMP(3))", scratch);
	CHECK(root_sql(sql) == 0);
	CHECK_EQ_INT(check_config("asyncexec-expire", cfg), 0);
	CHECK(strstr(out, "warn  schema: version 999 is newer") != NULL);
}

/* A user with too few privileges: each missing one named. */
static void
test_check_grants(void)
{
	char cfg[400], sql[700], extra[700];

	/* @localhost for a socket, @127.0.0.1 for TCP (db_hosts: the cluster stack) */
	snprintf(sql, sizeof sql, "CREATE USER 'lim_%s'@'localhost' IDENTIFIED BY 'pw1'; "
	    "CREATE USER 'lim_%s'@'127.0.0.1' IDENTIFIED BY 'pw1'; "
	    "GRANT SELECT, UPDATE ON %s.* TO 'lim_%s'@'localhost'; "
	    "GRANT SELECT, UPDATE ON %s.* TO 'lim_%s'@'127.0.0.1'", scratch + 18,
	    scratch + 18, scratch, scratch + 18, scratch, scratch + 18);
	CHECK(root_sql(sql) == 0);
	snprintf(cfg, sizeof cfg, "%s/lim.conf", dir);
	snprintf(extra, sizeof extra, "db_name = %s\ndb_user = lim_%s\ndb_password_file = %s/pw-lim\n",
	    scratch, scratch + 18, dir);
	snprintf(sql, sizeof sql, "%s/pw-lim", dir);
	CHECK(write_text(sql, "pw1\n", 0600) == 0);
	CHECK(derive(cfg, extra) == 0);
	CHECK_EQ_INT(check_config("asyncexec-fcgi", cfg), 1);
	CHECK(strstr(out, "lacks INSERT on s2r_async_execution") != NULL);
	CHECK(strstr(out, "lacks SELECT") == NULL);
	CHECK_EQ_INT(check_config("asyncexec-expire", cfg), 1);
	CHECK(strstr(out, "lacks DELETE on s2r_async_execution") != NULL);
	/* expire inserts only into the rollup's tables (sql/013) */
	CHECK(strstr(out, "lacks INSERT on s2r_route_outcome") != NULL);
	CHECK(strstr(out, "lacks INSERT on s2r_rollup_mark") != NULL);
	CHECK(strstr(out, "lacks INSERT on s2r_async_execution") == NULL);
	CHECK_EQ_INT(check_config("asyncexec-admin", cfg), 1);
	CHECK(strstr(out, "lacks INSERT on s2r_route") != NULL);
	CHECK(strstr(out, "warn  grants: migrate needs CREATE, ALTER, INDEX, REFERENCES") != NULL);
	snprintf(sql, sizeof sql, "DROP USER 'lim_%s'@'localhost', 'lim_%s'@'127.0.0.1'",
	    scratch + 18, scratch + 18);
	CHECK(root_sql(sql) == 0);
}

int
main(void)
{
	struct fx f;
	const char *admin_bin;

	http_test_init();
	admin_bin = test_env("ASYNCEXEC_ADMIN");
	snprintf(bindir, sizeof bindir, "%.*s", (int)(strrchr(admin_bin, '/') - admin_bin),
	    admin_bin);
	snprintf(dir, sizeof dir, "/tmp/test_http_admin.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(sql_sock, sizeof sql_sock, "%s", conf_value("db_socket"));
	snprintf(scratch, sizeof scratch, "asyncexec_scratch_a%ld", (long)getpid());

	test_usage();
	fx_setup(&f, "admin");
	test_json(&f);
	test_route_set(&f);
	test_grants(&f);
	fx_free(&f);
	fx_setup(&f, "admin-exec");	/* an empty queue: each claim gets ours */
	test_show_requeue(&f);
	test_requeue_spent(&f);
	test_fail(&f);
	test_check_files();
	test_unreachable();
	if (sql_sock[0] == '\0') {
		fprintf(stderr, "the test config has no db_socket: no scratch database\n");
		CHECK(sql_sock[0] != '\0');
	} else {
		test_key_many_routes(&f);
		test_check_schema();
		test_check_grants();
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", scratch);
		CHECK(root_sql(sql) == 0);
	}
	fx_free(&f);
	{
		char cmd[400];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return check_done("http_admin");
}
