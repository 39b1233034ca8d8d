/*
 * test_http_webhook_admin.c - asyncexec-admin webhook against the test stack's database
 * (contract v3, sql/010_webhooks.sql): add prints a secret that parses, once, and the row
 * holds it only sealed (it opens with the key of webhook_key_file for its tenant, and
 * neither the secret's text nor its bytes appear in a SELECT * of the table); list (text
 * and --json, --tenant), disable / enable, rotate-secret (the old sealed secret kept with
 * its grace), deliveries (rows written here: newest first, --status), replay of one
 * delivery and of an endpoint's since a time (pending, attempts 0, due now, the same
 * webhook_id and body), remove (with its deliveries); bad URLs, routes, events, ids,
 * times and key files refused with their exit status and message, nothing changed.
 * A secret that cannot be written (stdout on /dev/full) is not kept; `check`
 * with a key that opens none of the stored secrets says to copy the key
 * file.
 */
#include "check.h"
#include "webhook_admin.h"

#define HEADER	"id\ttenant\troute\turl\tevents\tenabled\tdisabled_reason\t" \
		"old_secret_until\tcreated_at\tupdated_at\n"

/* Usage errors: exit 2 before any configuration is read, with the reason. */
static void
test_usage(void)
{
	static const char *const bad_urls[] = {
	    "example.org/hook", "ftp://example.org/", "https://", "https://user@example.org/",
	    "https://u:p@example.org/", "https://example.org/a\x01" "b", "https://exa\tmple.org/",
	    "https://example.org/#f", "https://example.org:0/", "https://example.org:99999/",
	    "https://-bad.example/", "https://example.org/\x7f", "https://exa\xc3\xa9mple.org/",
	    "javascript:alert(1)", "https://example.org/%zz",
	};
	char big[2100];

	for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
		CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url %s", bad_urls[i]), 2);
		CHECK(strstr(err, "--url: ") != NULL && strstr(err, "nonexistent") == NULL);
	}
	memset(big, 'a', sizeof big - 1);
	memcpy(big, "https://example.org/", 20);
	big[sizeof big - 1] = '\0';
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url %s", big), 2);
	CHECK(strstr(err, "longer than 2048 bytes") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1"), 2);
	CHECK(strstr(err, "needs --tenant and --url") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook add --url https://e.org/ --tenant bad!t"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url https://e.org/ --route A/b/c"), 2);
	CHECK(strstr(err, "ENV/SERVICE/OPERATION") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url https://e.org/ --route a/b/c "
	    "--route a/b/d"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url https://e.org/ --events "
	    "completed,bogus"), 2);
	CHECK(strstr(err, "--events") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url https://e.org/ --events "
	    "failed,failed"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook add --tenant t1 --url https://e.org/ --events "
	    "completed,"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook list --tenant bad!t"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook disable abc"), 2);
	CHECK(strstr(err, "positive integer") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook enable 0"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook remove"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook rotate-secret 5 --grace-hours 9999"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook deliveries 5 --status bogus"), 2);
	CHECK(strstr(err, "--status must be") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook deliveries 5 --status"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook deliveries 5 --status dead --status dead"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay 5 --endpoint 3"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay --endpoint 3"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay --endpoint 3 --since yesterday"), 2);
	CHECK(strstr(err, "RFC 3339") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook replay --endpoint 3 --since 2026-02-30T00:00:00Z"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay --endpoint 3 --since 2026-01-01T00:00:00"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook replay --endpoint x --since 2026-01-01T00:00:00Z"), 2);
	CHECK_EQ_INT(run(NOCONF, "webhook frobnicate 1"), 2);
	CHECK_EQ_INT(run(NOCONF, "migrate --status dead"), 2);	/* a value: not migrate's */
	/* help needs no configuration; --status alone is still migrate's flag */
	CHECK_EQ_INT(run(NOCONF, "help webhook"), 0);
	CHECK(strstr(out, "webhook add --tenant TENANT --url URL") != NULL &&
	    strstr(out, "webhook replay DELIVERY_ID | webhook replay --endpoint ID --since "
	    "TIME") != NULL && strstr(out, "route add") == NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook --help"), 0);
	CHECK(strstr(out, "webhook rotate-secret ID [--grace-hours N]") != NULL);
	CHECK_EQ_INT(run(NOCONF, "webhook deliveries --status dead 5"), 2);	/* the config */
	CHECK(strstr(err, "nonexistent") != NULL);
}

/* Derives config DST from the test config with webhook_key_file = KEYFILE. */
static void
derive_keyfile(const char *dst, const char *keyfile)
{
	FILE *in = fopen(conf, "r"), *o = fopen(dst, "w");
	char line[1024];

	if (in == NULL || o == NULL) {
		fprintf(stderr, "FATAL: cannot derive %s\n", dst);
		exit(1);
	}
	while (fgets(line, sizeof line, in) != NULL)
		if (strncmp(line, "webhook_key_file", 16) != 0)
			fputs(line, o);
	fprintf(o, "webhook_key_file = %s\n", keyfile);
	fclose(in);
	fclose(o);
}

/* Bad key files: add and rotate-secret exit 2 with what to do; nothing changed. */
static void
test_keyfiles(const struct fx *f, int64_t id)
{
	char cfg[128], kf[128], sealed[256];
	long long n = endpoints();
	FILE *k;

	snprintf(cfg, sizeof cfg, "%s/kf.conf", dir);
	snprintf(kf, sizeof kf, "%s/none.key", dir);
	derive_keyfile(cfg, kf);
	snprintf(sealed, sizeof sealed, "%s", sql("SELECT HEX(secret_sealed) FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id));
	CHECK_EQ_INT(run(cfg, "webhook add --tenant %s --url https://e.org/", f->tenant), 2);
	CHECK(strstr(err, "does not exist; create it: head -c 32 /dev/urandom | base64 > ") &&
	    strstr(err, "chmod 0640") && strstr(err, kf));
	CHECK(out[0] == '\0');
	CHECK_EQ_INT(run(cfg, "webhook rotate-secret %lld", (long long)id), 2);
	CHECK(strstr(err, "create it") != NULL && out[0] == '\0');
	snprintf(kf, sizeof kf, "%s/open.key", dir);
	if ((k = fopen(kf, "w")) != NULL) {
		fputs("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", k);
		fclose(k);
	}
	chmod(kf, 0644);
	derive_keyfile(cfg, kf);
	CHECK_EQ_INT(run(cfg, "webhook add --tenant %s --url https://e.org/", f->tenant), 2);
	CHECK(strstr(err, "is open to others (mode 0644)") != NULL);
	chmod(kf, 0640);
	/* a good key, not the one the secrets were sealed with (a new host's) */
	CHECK_EQ_INT(run(cfg, "check"), 0);	/* the admin: a warning */
	CHECK(strstr(out, "ok    webhook_key_file: ") != NULL);
	CHECK(strstr(out, "warn  webhook secrets: none of the ") != NULL &&
	    strstr(out, "copy that file from a host whose sender delivers") &&
	    strstr(out, kf) != NULL);
	CHECK_EQ_INT(run(conf, "check"), 0);
	CHECK(strstr(out, "webhook secrets: ") != NULL &&
	    strstr(out, "webhook secrets: none of") == NULL);
	CHECK(truncate(kf, 20) == 0);
	CHECK_EQ_INT(run(cfg, "webhook rotate-secret %lld", (long long)id), 2);
	CHECK(strstr(err, "must hold one line, the standard base64 of 32 random bytes"));
	CHECK(strstr(err, "AAEC") == NULL);	/* never its content */
	CHECK_EQ_INT(endpoints(), n);
	CHECK_EQ_STR(sql("SELECT HEX(secret_sealed) FROM s2r_webhook_endpoint WHERE id = "
	    "%lld", (long long)id), sealed);
	/* no such route: exit 1, nothing added */
	CHECK_EQ_INT(ADM("webhook add --tenant %s --url https://e.org/ --route %s-none",
	    f->tenant, f->route), 1);
	CHECK(strstr(err, "no route ") != NULL);
	CHECK_EQ_INT(endpoints(), n);
}

/* add: the secret once; the row holds it sealed for its tenant, nowhere in clear. */
static int64_t
test_add(const struct fx *f, char *secret, size_t size)
{
	unsigned char k[WEBHOOK_KEY_MAX], sealed[256], got[WEBHOOK_KEY_MAX];
	char want[600];
	int64_t id;
	size_t kl, n, gl;

	CHECK_EQ_INT(ADM("webhook add --tenant %s --url https://hooks.example.invalid/a?x=1 "
	    "--route %s --events failed,completed", f->tenant, f->route), 0);
	id = strtoll(field("id"), NULL, 10);
	snprintf(secret, size, "%s", field("secret"));
	CHECK(id > 0 && strncmp(secret, "whsec_", 6) == 0);
	CHECK_EQ_INT(kl = secret_key(secret, k), WEBHOOK_KEY_LEN);
	CHECK(strstr(err, "shown this once") != NULL && strstr(err, f->route) != NULL);
	CHECK(strstr(err, "webhook_allow_http") == NULL);
	snprintf(want, sizeof want, "%s %s https://hooks.example.invalid/a?x=1 "
	    "completed,failed 1", f->tenant, f->route);
	CHECK_EQ_STR(sql("SELECT CONCAT_WS(' ', tenant_id, CONCAT_WS('/', environment, "
	    "service_key, operation_key), url, events, enabled) FROM s2r_webhook_endpoint "
	    "WHERE id = %lld AND secret_old_sealed IS NULL AND secret_old_until IS NULL",
	    (long long)id), want);
	/* sealed: nonce, ciphertext, tag; neither the bytes nor the text inside */
	n = sqlb(sealed, sizeof sealed, "SELECT secret_sealed FROM s2r_webhook_endpoint "
	    "WHERE id = %lld", (long long)id);
	CHECK_EQ_INT(n, WEBHOOK_KEY_LEN + AEAD_OVERHEAD);
	CHECK(memmem(sealed, n, k, 8) == NULL && memmem(sealed, n, secret + 6, 8) == NULL);
	CHECK(opens_to(id, "secret_sealed", f->tenant, secret));
	CHECK(webhook_secret_open(key, "another-tenant", sealed, n, got, &gl) ==
	    WEBHOOK_FORGED);
	CHECK(!dump_holds(secret, strlen(secret)) && !dump_holds(secret + 6, 43) &&
	    !dump_holds(k, kl));
	return id;
}

/* add --json, the default events, http:// (with its note); another tenant's row. */
static int64_t
test_add_json(const struct fx *f, int64_t id, const char *secret, const char *t2)
{
	unsigned char sealed[256];
	char hex[520];
	struct json_object *o;
	int64_t id2 = 0;
	int yes = 0;
	size_t n;

	CHECK_EQ_INT(ADM("webhook add --json --tenant %s --url http://10.0.0.7:8080/h", t2), 0);
	o = parse_out();
	CHECK(o != NULL && jint(o, "id", &id2) && id2 > id && jnull(o, "route") &&
	    jlen(o, "events") == 4 && jbool(o, "enabled", &yes) && yes);
	CHECK(jstr(o, "secret") != NULL && secret_key(jstr(o, "secret"),
	    (unsigned char[WEBHOOK_KEY_MAX]){ 0 }) == WEBHOOK_KEY_LEN);
	CHECK_EQ_STR(jstr(o, "tenant"), t2);
	CHECK_EQ_STR(jstr(o, "url"), "http://10.0.0.7:8080/h");
	CHECK_EQ_STR(jstr(o, "events.3"), "cancelled");
	CHECK(jstr(o, "secret") && opens_to(id2, "secret_sealed", t2, jstr(o, "secret")));
	json_object_put(o);
	CHECK(strstr(err, "webhook_allow_http = 1") != NULL && strstr(err, "every route"));
	CHECK_EQ_STR(sql("SELECT CONCAT(events, '|', environment IS NULL, service_key IS "
	    "NULL, operation_key IS NULL) FROM s2r_webhook_endpoint WHERE id = %lld",
	    (long long)id2), "completed,failed,expired,cancelled|111");
	/* a sealed secret copied into another tenant's row does not open there (it would
	 * for the tenant it was sealed for) */
	n = sqlb(sealed, sizeof sealed, "SELECT secret_sealed FROM s2r_webhook_endpoint "
	    "WHERE id = %lld", (long long)id);
	hex_encode(sealed, n, hex);
	sql("UPDATE s2r_webhook_endpoint SET secret_sealed = UNHEX('%s') WHERE id = %lld", hex,
	    (long long)id2);
	CHECK(!opens_to(id2, "secret_sealed", t2, secret));
	CHECK(opens_to(id2, "secret_sealed", f->tenant, secret));
	return id2;
}

/* list: text and --json, --tenant; never a secret. */
static void
test_list(const struct fx *f, int64_t id, int64_t id2)
{
	struct json_object *o, *e;
	int yes = 1;

	CHECK_EQ_INT(ADM("webhook list"), 0);
	CHECK(strncmp(out, HEADER, strlen(HEADER)) == 0);
	CHECK(strstr(out, "\thttps://hooks.example.invalid/a?x=1\tcompleted,failed\tyes\t-\t-\t"));
	CHECK(strstr(out, "whsec_") == NULL);
	CHECK_EQ_INT(ADM("webhook list --json --tenant %s", f->tenant), 0);
	o = parse_out();
	e = by_id(o, id);
	CHECK(e != NULL && by_id(o, id2) == NULL);
	CHECK_EQ_STR(jstr(e, "tenant"), f->tenant);
	CHECK_EQ_STR(jstr(e, "route"), f->route);
	CHECK_EQ_STR(jstr(e, "url"), "https://hooks.example.invalid/a?x=1");
	CHECK_EQ_STR(jstr(e, "events.1"), "failed");
	CHECK(e != NULL && jlen(e, "events") == 2 && jbool(e, "enabled", &yes) && yes &&
	    jnull(e, "disabled_reason") && jnull(e, "old_secret_until") &&
	    is_rfc3339_ms(jstr(e, "created_at")) && jget(e, "secret") == NULL);
	json_object_put(o);
	CHECK_EQ_INT(ADM("webhook list --json"), 0);
	o = parse_out();
	CHECK(by_id(o, id) != NULL && by_id(o, id2) != NULL && strstr(out, "whsec_") == NULL);
	json_object_put(o);
}

/* disable / enable: the flag and the reason; an unknown id is exit 1. */
static void
test_enable(int64_t id)
{
	struct json_object *o;
	int yes = 1;
	int64_t v = 0;

	CHECK_EQ_INT(ADM("webhook disable %lld", (long long)id), 0);
	CHECK(strstr(out, "disabled") != NULL);
	CHECK_EQ_STR(sql("SELECT CONCAT(enabled, ' ', disabled_reason LIKE '%%operator%%') "
	    "FROM s2r_webhook_endpoint WHERE id = %lld", (long long)id), "0 1");
	CHECK_EQ_INT(ADM("webhook list --json"), 0);
	o = parse_out();
	CHECK(jbool(by_id(o, id), "enabled", &yes) && !yes &&
	    jstr(by_id(o, id), "disabled_reason") != NULL &&
	    strstr(jstr(by_id(o, id), "disabled_reason"), "operator") != NULL);
	json_object_put(o);
	CHECK_EQ_INT(ADM("webhook enable --json %lld", (long long)id), 0);
	o = parse_out();
	CHECK(jint(o, "id", &v) && v == id && jbool(o, "enabled", &yes) && yes);
	json_object_put(o);
	CHECK_EQ_STR(sql("SELECT CONCAT(enabled, ' ', disabled_reason IS NULL) FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id), "1 1");
	CHECK_EQ_INT(ADM("webhook disable 999999999999"), 1);
	CHECK(strstr(err, "no webhook endpoint 999999999999") != NULL);
	CHECK_EQ_INT(ADM("webhook enable --json 999999999999"), 1);
	CHECK(strstr(err, "no webhook endpoint 999999999999") != NULL && out[0] == '\0');
}

/* rotate-secret: the new secret once; the old sealed secret kept with its grace. */
static void
test_rotate(const struct fx *f, int64_t id, char *secret, size_t size)
{
	unsigned char before[256], old[256];
	struct json_object *o;
	char first[128];
	size_t nb, no;

	nb = sqlb(before, sizeof before, "SELECT secret_sealed FROM s2r_webhook_endpoint "
	    "WHERE id = %lld", (long long)id);
	CHECK_EQ_INT(ADM("webhook rotate-secret %lld --grace-hours 2", (long long)id), 0);
	snprintf(first, sizeof first, "%s", field("secret"));
	CHECK(secret_key(first, (unsigned char[WEBHOOK_KEY_MAX]){ 0 }) == WEBHOOK_KEY_LEN &&
	    strcmp(first, secret) != 0 && is_rfc3339_ms(field("old_secret_until")));
	CHECK(strstr(err, "signed with both secrets until") != NULL);
	no = sqlb(old, sizeof old, "SELECT secret_old_sealed FROM s2r_webhook_endpoint WHERE "
	    "id = %lld", (long long)id);
	CHECK(no == nb && memcmp(old, before, nb) == 0);
	CHECK(opens_to(id, "secret_old_sealed", f->tenant, secret));
	CHECK(opens_to(id, "secret_sealed", f->tenant, first));
	long long grace = sqln("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), "
	    "secret_old_until) FROM s2r_webhook_endpoint WHERE id = %lld", (long long)id);
	CHECK(grace > 7100 && grace <= 7200);
	/* again, no grace: the first rotation's secret is the old one, ending now */
	CHECK_EQ_INT(ADM("webhook rotate-secret --json --grace-hours 0 %lld", (long long)id), 0);
	o = parse_out();
	CHECK(is_rfc3339_ms(jstr(o, "old_secret_until")) && jstr(o, "secret") != NULL &&
	    strncmp(jstr(o, "secret"), "whsec_", 6) == 0);
	CHECK(strstr(err, "the rotation before no longer signs") != NULL);
	CHECK(opens_to(id, "secret_old_sealed", f->tenant, first));
	CHECK(jstr(o, "secret") && opens_to(id, "secret_sealed", f->tenant, jstr(o, "secret")));
	grace = sqln("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(3), secret_old_until) FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id);
	CHECK(grace <= 0 && grace > -30);
	snprintf(secret, size, "%s", jstr(o, "secret") ? jstr(o, "secret") : "");
	json_object_put(o);
	CHECK(!dump_holds(secret, strlen(secret)) && !dump_holds(first, strlen(first)));
	CHECK_EQ_INT(ADM("webhook list --tenant %s", f->tenant), 0);
	CHECK(strstr(out, "whsec_") == NULL && strstr(out, "\tyes\t-\t20") != NULL);
	CHECK_EQ_INT(ADM("webhook rotate-secret 999999999999"), 1);
	CHECK(strstr(err, "no webhook endpoint 999999999999") != NULL && out[0] == '\0');
}

/*
 * A secret that cannot be written (stdout on /dev/full) is not kept: add
 * adds no endpoint, rotate-secret changes neither secret; exit 1, saying
 * so.
 */
static void
test_stdout_full(const struct fx *f, int64_t id)
{
	unsigned char before[256], after[256];
	char until[64];
	long long n = endpoints();
	size_t nb, na;

	stdout_to = "/dev/full";
	CHECK_EQ_INT(ADM("webhook add --tenant %s --url "
	    "https://full.example.invalid/", f->tenant), 1);
	CHECK(strstr(err, "no webhook endpoint was added") != NULL);
	CHECK_EQ_INT(endpoints(), n);
	nb = sqlb(before, sizeof before, "SELECT secret_sealed FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id);
	snprintf(until, sizeof until, "%s", sql("SELECT IFNULL("
	    "secret_old_until, '-') FROM s2r_webhook_endpoint WHERE id = %lld",
	    (long long)id));
	stdout_to = "/dev/full";
	CHECK_EQ_INT(ADM("webhook rotate-secret %lld --grace-hours 5",
	    (long long)id), 1);
	CHECK(strstr(err, "the endpoint's secrets are unchanged") != NULL);
	na = sqlb(after, sizeof after, "SELECT secret_sealed FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id);
	CHECK(na == nb && memcmp(after, before, nb) == 0);
	CHECK_EQ_STR(sql("SELECT IFNULL(secret_old_until, '-') FROM "
	    "s2r_webhook_endpoint WHERE id = %lld", (long long)id), until);
}

/* remove: the endpoint goes (--json), a second remove finds none. */
static void
test_remove(int64_t id)
{
	struct json_object *o;
	int64_t v = -1;
	int yes = 0;

	CHECK_EQ_INT(ADM("webhook remove --json %lld", (long long)id), 0);
	o = parse_out();
	CHECK(jint(o, "id", &v) && v == id && jint(o, "deliveries", &v) && v == 0 &&
	    jbool(o, "removed", &yes) && yes);
	json_object_put(o);
	CHECK_EQ_INT(sqln("SELECT COUNT(*) FROM s2r_webhook_endpoint WHERE id = %lld",
	    (long long)id), 0);
	CHECK_EQ_INT(ADM("webhook remove %lld", (long long)id), 1);
	CHECK(strstr(err, "no webhook endpoint ") != NULL);
}

int
main(void)
{
	char secret[128], t2[80];
	struct fx f;
	int64_t id, id2;
	long long n;

	wa_init("http_webhook_admin");
	n = endpoints();
	test_usage();
	CHECK_EQ_INT(endpoints(), n);
	fx_setup(&f, "webhook");
	snprintf(t2, sizeof t2, "%s-b", f.tenant);
	id = test_add(&f, secret, sizeof secret);
	id2 = test_add_json(&f, id, secret, t2);
	test_keyfiles(&f, id);
	test_list(&f, id, id2);
	test_enable(id);
	test_rotate(&f, id, secret, sizeof secret);
	test_stdout_full(&f, id);
	test_remove(id2);
	test_remove(id);
	fx_free(&f);
	wa_done();
	return check_done("http_webhook_admin");
}
