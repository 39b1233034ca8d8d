/*
 * test_http_admin_secret.c - asyncexec-admin's new keys and their
 * labels, end to end: a label of 128 bytes of UTF-8 is kept whole; a
 * new key that cannot be written (stdout on /dev/full) is never kept
 * (key create, backend-key create: no key; key rotate: no successor,
 * the old key not revoked), exit 1 saying so. The webhook secrets'
 * counterpart is in http_webhook_admin. Keys read from standard input
 * (`-`) and never echoed (moved here from http_admin).
 */
#include "util/clock.h"
#include "check.h"
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_run.h"

/* How many lines of out (the last run's stdout) hold S. */
static int
lines_with(const char *s)
{
	const char *p = out, *e;
	int n = 0;

	for (; *p != '\0'; p = *e ? e + 1 : e) {
		e = p + strcspn(p, "\n");
		if (memmem(p, (size_t)(e - p), s, strlen(s)) != NULL)
			n++;
	}
	return n;
}

/* A label of 128 bytes of UTF-8 (two-byte characters too) is kept whole. */
static void
test_label(const struct fx *f)
{
	char label[200], tab[300];

	snprintf(label, sizeof label, "caf\xc3\xa9-%0122d", 0);
	CHECK_EQ_INT(strlen(label), 128);
	CHECK_EQ_INT(ADMIN("key create --tenant %s --label %s", CONF,
	    f->tenant, label), 0);
	CHECK(strncmp(out, "ak_", 3) == 0);
	CHECK_EQ_INT(ADMIN("key list", CONF), 0);
	snprintf(tab, sizeof tab, "\t%s\t%s\t", f->tenant, label);
	CHECK_EQ_INT(lines_with(tab), 1);
}

/*
 * A new key that cannot be written (stdout on /dev/full) is not kept:
 * exit 1 saying so, and key list as before; a rotation whose new key
 * cannot be written leaves the old key unrevoked.
 */
static void
test_stdout_full(const struct fx *f)
{
	char tenant[100], tab[120], line[128], *ck;
	int nb;

	snprintf(tenant, sizeof tenant, "%s-full", f->tenant);
	snprintf(tab, sizeof tab, "\t%s\t", tenant);
	stdout_to = "/dev/full";
	CHECK_EQ_INT(ADMIN("key create --tenant %s", CONF, tenant), 1);
	CHECK(strstr(err, "no key was created") != NULL);
	CHECK_EQ_INT(ADMIN("key list", CONF), 0);
	CHECK_EQ_INT(lines_with(tab), 0);
	/* rotate: no successor, and the old key is not revoked */
	ck = fx_consumer_key(tenant);
	snprintf(line, sizeof line, "%s\n", ck);
	input = line;
	stdout_to = "/dev/full";
	CHECK_EQ_INT(ADMIN("key rotate - --grace-hours 0", CONF), 1);
	CHECK(strstr(err, "the old key is unchanged") != NULL);
	CHECK_EQ_INT(ADMIN("key list", CONF), 0);
	CHECK_EQ_INT(lines_with(tab), 1);
	snprintf(tab, sizeof tab, "\t%s\t-\tno\t", tenant);
	CHECK_EQ_INT(lines_with(tab), 1);
	/* backend-key create (the keys of this route only: other suites
	 * make backend keys meanwhile) */
	CHECK_EQ_INT(ADMIN("backend-key list", CONF), 0);
	nb = lines_with(f->route);
	CHECK(nb >= 1);
	stdout_to = "/dev/full";
	CHECK_EQ_INT(ADMIN("backend-key create --route %s", CONF, f->route), 1);
	CHECK(strstr(err, "no key was created") != NULL);
	CHECK_EQ_INT(ADMIN("backend-key list", CONF), 0);
	CHECK_EQ_INT(lines_with(f->route), nb);
	free(ck);
}

/*
 * Keys off the command line (issue 16): `-` reads the key from standard input for key
 * revoke / rotate and backend-key grant / revoke-route; a key on the command line still
 * works but warns; a malformed key is never echoed into a message.
 */
static void
test_key_stdin(const struct fx *f)
{
	static const char *const malformed[] = { "ak_NOTAKEYbutSECRETish",
	    "bk_short-SECRETish", "ak_" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!" , NULL };
	char *ck = fx_consumer_key(f->tenant), *ck2 = fx_consumer_key(f->tenant), line[128];
	char r2[256];
	int i;

	snprintf(r2, sizeof r2, "%s/%s/stdin", f->env, f->svc);
	CHECK_EQ_INT(ADMIN("route add %s", CONF, r2), 0);
	/* the key on standard input, with and without its newline */
	snprintf(line, sizeof line, "%s\n", f->bkey);
	input = line;
	CHECK_EQ_INT(ADMIN("backend-key grant - %s", CONF, r2), 0);
	CHECK(strstr(out, "serves") != NULL);
	CHECK(strstr(err, "warning") == NULL);
	input = f->bkey;
	CHECK_EQ_INT(ADMIN("backend-key revoke-route - %s", CONF, r2), 0);
	CHECK(strstr(out, "no longer serves") != NULL);
	snprintf(line, sizeof line, "%s\n", ck);
	input = line;
	CHECK_EQ_INT(ADMIN("key rotate - --grace-hours 1", CONF), 0);
	CHECK(strncmp(out, "ak_", 3) == 0);
	snprintf(line, sizeof line, "%s\n", ck);
	input = line;
	CHECK_EQ_INT(ADMIN("key revoke -", CONF), 0);
	CHECK(strstr(out, "revoked") != NULL && strstr(err, ck) == NULL);
	/* on the command line: works, with a warning naming the better ways */
	CHECK_EQ_INT(ADMIN("key revoke %s", CONF, ck2), 0);
	CHECK(strstr(err, "warning") != NULL && strstr(err, "standard input") != NULL);
	CHECK(strstr(err, ck2) == NULL);
	/* malformed keys, on argv or on standard input: exit 2, never echoed */
	for (i = 0; malformed[i] != NULL; i++) {
		CHECK_EQ_INT(ADMIN("key revoke %s", CONF, malformed[i]), 2);
		CHECK(strstr(err, "SECRET") == NULL && strstr(err, "AAAAAAAAAA") == NULL);
		if (strstr(err, "SECRET") != NULL || strstr(err, "AAAAAAAAAA") != NULL)
			fprintf(stderr, "  key revoke echoed the malformed key: %s", err);
		input = malformed[i];
		CHECK_EQ_INT(ADMIN("key rotate -", CONF), 2);
		CHECK(strstr(err, "SECRET") == NULL && strstr(err, "AAAAAAAAAA") == NULL);
		input = malformed[i];
		CHECK_EQ_INT(ADMIN("backend-key grant - %s", CONF, r2), 2);
		CHECK(strstr(err, "SECRET") == NULL && strstr(err, "AAAAAAAAAA") == NULL);
	}
	/* nothing on standard input, or two keys */
	input = "";
	CHECK_EQ_INT(ADMIN("key revoke -", CONF), 2);
	snprintf(line, sizeof line, "%s\n%s\n", ck, ck2);
	input = line;
	CHECK_EQ_INT(ADMIN("key revoke -", CONF), 2);
	CHECK(strstr(err, ck) == NULL && strstr(err, ck2) == NULL);
	/* a route where the key belongs is not echoed either when it is a key */
	CHECK_EQ_INT(ADMIN("backend-key grant %s %s", CONF, r2, f->bkey), 2);
	CHECK(strstr(err, f->bkey) == NULL);
	free(ck);
	free(ck2);
}

int
main(void)
{
	struct fx f;
	const char *admin_bin;

	http_test_init();
	admin_bin = test_env("ASYNCEXEC_ADMIN");
	snprintf(bindir, sizeof bindir, "%.*s",
	    (int)(strrchr(admin_bin, '/') - admin_bin), admin_bin);
	fx_setup(&f, "admsecret");
	test_label(&f);
	test_stdout_full(&f);
	test_key_stdin(&f);
	fx_free(&f);
	return check_done("http_admin_secret");
}
