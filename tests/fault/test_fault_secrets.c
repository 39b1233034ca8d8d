/*
 * test_fault_secrets.c - no raw secret leaks. Creates API keys and, through
 * a life cycle over real HTTP (submit, poll, claim, heartbeat, complete,
 * fail, cancel) plus error paths (wrong and revoked keys, wrong and
 * malformed poll and callback tokens, bad bodies, secrets sent where they do
 * not belong), gets poll and callback tokens; then no raw API key, poll
 * token (nor its secret half) or callback token may appear in any error
 * body, in the app log, nginx's access and error logs, MariaDB's error log,
 * or a dump of the database (mariadb-dump). Webhook signing secrets too:
 * one made by `asyncexec-admin webhook add` and the one its rotate-secret
 * makes (the text and its base64 part) are in no log and not in the dump,
 * where they are stored encrypted under webhook_key_file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "check.h"
#include "fault.h"
#include "fixture.h"

#define MAX_SECRETS	64

static struct fx	 F;
static char		*secret[MAX_SECRETS];
static const char	*what[MAX_SECRETS];
static size_t		 nsecret;
static long		 nbodies;
static char		 control[CID_MAX];	/* not secret: must be found */

static void
keep(const char *s, const char *kind)
{
	if (s == NULL || *s == '\0' || nsecret == MAX_SECRETS)
		return;
	secret[nsecret] = strdup(s);
	what[nsecret++] = kind;
}

/* An error answer must not echo any secret seen so far. */
static void
check_body(const struct http_resp *r)
{
	size_t	 i;

	if (r->status < 400)
		return;
	nbodies++;
	for (i = 0; i < nsecret; i++)
		if (r->body && memmem(r->body, r->body_len, secret[i],
		    strlen(secret[i])) != NULL) {
			fprintf(stderr, "  %d body holds a %s\n", r->status,
			    what[i]);
			CHECK(0);
		}
}

/* A poll token and, separately, its secret half (after the sealed id). */
static void
keep_poll(const char *tok)
{
	keep(tok, "poll token");
	if (tok != NULL && strlen(tok) == 65)
		keep(tok + 22, "poll token secret");
}

static void
errors(const struct sub *s, const struct claim *c)
{
	static const char fake_tok[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG";
	struct http_resp r;
	char		 bad[128], body[256];
	char		*revoked = fx_consumer_key(F.tenant);

	keep(revoked, "API key (revoked)");
	keep(fake_tok, "made-up token");
	free(admin("key revoke %s", revoked));
	snprintf(bad, sizeof bad, "%sX", F.ckey);
	keep(bad, "wrong API key");
	fx_submit(&F, bad, NULL, "{}", &r);
	CHECK(expect_unauthorized(&r));
	check_body(&r);
	http_resp_free(&r);
	fx_submit(&F, revoked, NULL, "{}", &r);
	CHECK(expect_unauthorized(&r));
	check_body(&r);
	http_resp_free(&r);
	fx_poll(&F, F.ckey, s->cid, fake_tok, NULL, &r);
	CHECK(expect_problem(&r, 404, "not_found"));
	check_body(&r);
	http_resp_free(&r);
	fx_poll(&F, F.ckey, s->cid, F.ckey, NULL, &r);	/* key as token */
	CHECK_EQ_INT(r.status, 404);
	check_body(&r);
	http_resp_free(&r);
	fx_poll(&F, F.bkey, s->cid, s->token, NULL, &r);	/* backend key */
	CHECK(r.status == 401 || r.status == 403 || r.status == 404);
	check_body(&r);
	http_resp_free(&r);
	fx_callback(F.bkey, c->id, "complete", fake_tok, "{\"result\":1}", &r);
	CHECK(expect_conflict(&r, "waiting_callback"));
	check_body(&r);
	http_resp_free(&r);
	fx_callback(F.ckey, c->id, "complete", c->token, "{\"result\":1}", &r);
	CHECK(r.status == 401 || r.status == 403);	/* consumer key */
	check_body(&r);
	http_resp_free(&r);
	snprintf(body, sizeof body, "{\"token\":\"%s\",\"key\":\"%s\"", c->token,
	    F.bkey);	/* invalid JSON holding secrets */
	fx_callback(F.bkey, c->id, "complete", c->token, body, &r);
	CHECK_EQ_INT(r.status, 400);
	check_body(&r);
	http_resp_free(&r);
	free(revoked);
}

/* Submits, polls, claims: the secrets of one execution. */
static void
start(struct sub *s, struct claim *c)
{
	CHECK(fx_submit_claim(&F, "{\"secret\":\"life cycle\"}", s, c));
	keep_poll(s->token);
	keep(c->token, "callback token");
	CHECK_EQ_STR(fx_status(&F, s), "waiting_callback");
}

static void
life_cycle(void)
{
	struct sub	 s1, s2, s3;
	struct claim	 c1, c2;
	struct http_resp r;

	start(&s1, &c1);
	snprintf(control, sizeof control, "%s", s1.cid);
	errors(&s1, &c1);
	fx_callback(F.bkey, c1.id, "heartbeat", c1.token,
	    "{\"leaseSeconds\":60}", &r);
	CHECK_EQ_INT(r.status, 200);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_complete(&F, &c1, "{\"ok\":true}"), 200);
	fx_callback(F.bkey, c1.id, "complete", c1.token, "{\"result\":2}", &r);
	CHECK(expect_conflict(&r, "completed"));
	check_body(&r);
	http_resp_free(&r);
	start(&s2, &c2);
	fx_callback(F.bkey, c2.id, "fail", c2.token,
	    "{\"error\":{\"message\":\"boom\"}}", &r);
	CHECK_EQ_INT(r.status, 200);
	http_resp_free(&r);
	CHECK(fx_submit_ok(&F, NULL, "{\"to\":\"cancel\"}", &s3));
	keep_poll(s3.token);
	fx_cancel(&F, F.ckey, s3.cid, s3.token, &r);
	CHECK(r.status == 200 || r.status == 202);
	http_resp_free(&r);
	fx_cancel(&F, F.ckey, s3.cid, s3.token, &r);
	check_body(&r);
	http_resp_free(&r);
}

/* Whether any secret appears in file path (which must exist if must). */
static void
check_file(const char *path, const char *label, int must)
{
	size_t	 i;
	int	 rc;

	for (i = 0; i < nsecret; i++) {
		rc = f_file_contains(path, secret[i]);
		if (rc == -1) {
			if (must)
				fprintf(stderr, "  cannot read %s\n", path);
			CHECK(!must);
			return;
		}
		if (rc == 1)
			fprintf(stderr, "  %s holds a %s\n", label, what[i]);
		CHECK_EQ_INT(rc, 0);
	}
}

/* Runs asyncexec-admin ARGS --json; its parsed output, or NULL. */
static struct json_object *
admin_json(const char *args)
{
	char	 cmd[2048], out[8192];
	size_t	 n;
	FILE	*p;

	snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s --json",
	    test_env("ASYNCEXEC_ADMIN"), test_env("ASYNCEXEC_TEST_CONFIG"),
	    args);
	if ((p = popen(cmd, "r")) == NULL)
		return NULL;
	n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	if (pclose(p) != 0)
		return NULL;
	return json_tokener_parse(out);
}

/* Keeps the "secret" member of o: the text and its base64 after whsec_. */
static void
keep_webhook(struct json_object *o, const char *kind)
{
	struct json_object *v;

	CHECK(o != NULL && json_object_object_get_ex(o, "secret", &v));
	if (o == NULL || !json_object_object_get_ex(o, "secret", &v))
		return;
	keep(json_object_get_string(v), kind);
	keep(json_object_get_string(v) + strlen("whsec_"), kind);
}

/* A webhook endpoint with a secret, and that secret rotated. */
static void
webhook_secrets(void)
{
	struct json_object *o, *id, *r;
	char	 args[512];

	snprintf(args, sizeof args, "webhook add --tenant '%s' --url "
	    "https://hooks.example.invalid/fault-secrets", F.tenant);
	o = admin_json(args);
	keep_webhook(o, "webhook secret");
	if (o != NULL && json_object_object_get_ex(o, "id", &id)) {
		snprintf(args, sizeof args, "webhook rotate-secret %lld",
		    (long long)json_object_get_int64(id));
		r = admin_json(args);
		keep_webhook(r, "webhook secret (rotated)");
		json_object_put(r);
	}	/* kept: both sealed secrets are in the dump */
	json_object_put(o);
}

/* Dumps the database (data and schema) into path; 0 or -1. */
static int
dump(const char *path)
{
	char	 sock[512], name[128], cmd[2048];
	int	 st;

	f_cfg_str("db_socket", sock, sizeof sock);
	f_cfg_str("db_name", name, sizeof name);
	snprintf(cmd, sizeof cmd, "mariadb-dump --no-defaults --user=root "
	    "--socket='%s' --skip-extended-insert --hex-blob=0 '%s' >'%s'",
	    sock, name[0] ? name : "asyncexec", path);
	st = system(cmd);
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int
main(void)
{
	char	 path[1024], tmp[] = "/tmp/fault-dump.XXXXXX";
	int	 fd;

	http_test_init();
	f_init();
	fx_setup(&F, "fault-secrets");
	keep(F.ckey, "API key (consumer)");
	keep(F.bkey, "API key (backend)");
	life_cycle();
	webhook_secrets();
	printf("secrets: %zu raw values, %ld error bodies checked\n", nsecret,
	    nbodies);
	check_file(f_state_path("asyncexec.log"), "the app log", 1);
	snprintf(path, sizeof path, "%s", f_state_path("nginx/access.log"));
	check_file(path, "nginx's access log", 1);
	snprintf(path, sizeof path, "%s", f_state_path("nginx/error.log"));
	check_file(path, "nginx's error log", 0);
	snprintf(path, sizeof path, "%s", f_state_path("mariadb/mysqld.err"));
	check_file(path, "MariaDB's error log", 0);
	if ((fd = mkstemp(tmp)) == -1)
		return 1;
	CHECK_EQ_INT(dump(tmp), 0);
	/* the searches work: the correlation id (not secret) is found */
	CHECK_EQ_INT(f_file_contains(tmp, control), 1);
	CHECK_EQ_INT(f_file_contains(f_state_path("nginx/access.log"),
	    control), 1);
	check_file(tmp, "the database dump", 1);
	unlink(tmp);
	fx_free(&F);
	return check_done("fault_secrets");
}
