/*
 * test_fault_admin_commit.c - asyncexec-admin key rotate and webhook
 * rotate-secret (which print the new key or secret before their COMMIT)
 * when the COMMIT fails; key create and webhook add when its answer is
 * lost. asyncexec-admin reaches the shared database
 * through dbproxy (a config of its own), which loses the COMMIT's answer
 * (the COMMIT ran: the change is applied), drops it (nothing changed),
 * or drops it and the read back of the key too (unknown).
 *
 * Each time the command must say which state it is in, as stored: a
 * lost answer to a COMMIT that took effect is success (use the printed
 * key or secret: the old one is already in its grace), a dropped one
 * says nothing changed, and a failed read back says how to check.
 * Following "do not use it; run rotate-secret again" after a COMMIT that
 * took effect would drop the receiver's current secret.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dbproxy.h"
#include "fault.h"
#include "fixture.h"

#define OUT_MAX	16384
/* COM_QUERY COMMIT: not the READ COMMITTED of the connect's init command */
#define QCOMMIT	"\003COMMIT"

static MYSQL	*m;
static char	 cfg[300], out[OUT_MAX], tenant[64];

/* asyncexec-admin ARGS through the proxy (httpc_admin, output into out). */
#define adm(...)	httpc_admin(cfg, out, sizeof(out), __VA_ARGS__)

/* The COMMIT and key rotate's read back of its key (the unknown case). */
static int
commit_or_reread(const unsigned char *p, size_t n)
{
	return (n > 10 && memcmp(p + 4, "\003COMMIT", 7) == 0) ||
	    memmem(p, n, "key_hash = ? LOCK IN SHARE", 26) != NULL;
}

/* How many keys of the tenant are stored. */
static long long
keys(void)
{
	return f_sql_num(m, "SELECT COUNT(*) FROM s2r_api_key WHERE "
	    "tenant_id = '%s'", tenant);
}

/* Whether a key is printed (a line of its own) and stored. */
static int
printed_key_stored(int *printed)
{
	char		 key[128];
	const char	*p = strncmp(out, "ak_", 3) == 0 ? out :
			    strstr(out, "\nak_");

	if ((*printed = p != NULL) == 0)
		return 0;
	p += *p == '\n';
	snprintf(key, sizeof key, "%.*s", (int)strcspn(p, "\n"), p);
	return f_sql_num(m, "SELECT COUNT(*) FROM s2r_api_key WHERE key_hash "
	    "= UNHEX(SHA2('%s', 256))", key) == 1;
}

static void
test_key_rotate(void)
{
	long long	 id;
	int		 printed;

	snprintf(tenant, sizeof tenant, "t-fac-%ld", (long)getpid());
	CHECK_EQ_INT(adm("key create --tenant %s", tenant), 0);
	id = f_sql_num(m, "SELECT id FROM s2r_api_key WHERE tenant_id = '%s'",
	    tenant);
	CHECK(id > 0 && keys() == 1);

	/* the COMMIT ran, its answer lost: success, the new key stored */
	dbproxy_arm(DBPROXY_LOSE_ANSWER, QCOMMIT);
	CHECK_EQ_INT(adm("key rotate %lld", id), 0);
	CHECK_EQ_INT(dbproxy_fired(), 1);
	fprintf(stderr, "  lost: %s", out);
	CHECK(strstr(out, "took effect: use the printed key") != NULL &&
	    strstr(out, "do not use") == NULL);
	CHECK(printed_key_stored(&printed) && printed);
	CHECK(keys() == 2);

	/* the COMMIT never ran: exit 1, nothing changed */
	dbproxy_arm(DBPROXY_DROP, QCOMMIT);
	CHECK_EQ_INT(adm("key rotate %lld --grace-hours 1", id), 1);
	CHECK_EQ_INT(dbproxy_fired(), 2);
	fprintf(stderr, "  dropped: %s", out);
	CHECK(strstr(out, "nothing changed: do not use it") != NULL);
	CHECK(!printed_key_stored(&printed) && printed);
	CHECK(keys() == 2);

	/* the COMMIT and the read back dropped: unknown, how to check */
	dbproxy_drop_when(commit_or_reread);
	CHECK_EQ_INT(adm("key rotate %lld --grace-hours 1", id), 1);
	dbproxy_drop_when(NULL);
	fprintf(stderr, "  unknown: %s", out);
	CHECK(strstr(out, "whether it took effect is unknown") != NULL &&
	    strstr(out, "key list") != NULL);
	CHECK(keys() == 2);
}

/* The endpoint's sealed secrets as hex: current into cur, old into old. */
static void
secrets(unsigned long long id, char *cur, char *old, size_t n)
{
	char		 q[200];
	MYSQL_RES	*res;
	MYSQL_ROW	 row;

	cur[0] = old[0] = '\0';
	snprintf(q, sizeof q, "SELECT HEX(secret_sealed), COALESCE(HEX("
	    "secret_old_sealed), '') FROM s2r_webhook_endpoint WHERE id = %llu",
	    id);
	if (mysql_query(m, q) != 0 || (res = mysql_store_result(m)) == NULL)
		return;
	if ((row = mysql_fetch_row(res)) != NULL) {
		snprintf(cur, n, "%s", row[0]);
		snprintf(old, n, "%s", row[1]);
	}
	mysql_free_result(res);
}

static void
test_webhook_rotate(void)
{
	char			 c0[512], o0[512], c1[512], o1[512];
	unsigned long long	 id = 0;
	const char		*p;

	CHECK_EQ_INT(adm("webhook add --tenant %s --url "
	    "https://receiver.example/hook", tenant), 0);
	if ((p = strstr(out, "id\t")) != NULL)
		id = strtoull(p + 3, NULL, 10);
	CHECK(id > 0);
	secrets(id, c0, o0, sizeof c0);
	CHECK(c0[0] != '\0' && o0[0] == '\0');

	/* lost answer: applied; the old secret moved to the old slot */
	dbproxy_arm(DBPROXY_LOSE_ANSWER, QCOMMIT);
	CHECK_EQ_INT(adm("webhook rotate-secret %llu", id), 0);
	fprintf(stderr, "  lost: %s", out);
	CHECK(strstr(out, "took effect: use the printed secret") != NULL &&
	    strstr(out, "run rotate-secret again") == NULL);
	secrets(id, c1, o1, sizeof c1);
	CHECK(strcmp(o1, c0) == 0 && strcmp(c1, c0) != 0);

	/* dropped: nothing changed */
	dbproxy_arm(DBPROXY_DROP, QCOMMIT);
	CHECK_EQ_INT(adm("webhook rotate-secret %llu", id), 1);
	fprintf(stderr, "  dropped: %s", out);
	CHECK(strstr(out, "nothing changed: do not use it") != NULL);
	secrets(id, c0, o0, sizeof c0);
	CHECK(strcmp(c0, c1) == 0 && strcmp(o0, o1) == 0);
	CHECK_EQ_INT(adm("webhook remove %llu", id), 0);
}

/* key create and webhook add: a lost answer to a COMMIT that took effect */
static void
test_creates(void)
{
	unsigned long long	 id = 0;
	const char		*p;
	int			 printed;

	dbproxy_arm(DBPROXY_LOSE_ANSWER, QCOMMIT);
	CHECK_EQ_INT(adm("key create --tenant %s", tenant), 0);
	CHECK(strstr(out, "took effect: use the printed key") != NULL);
	CHECK(printed_key_stored(&printed) && printed && keys() == 3);
	dbproxy_arm(DBPROXY_LOSE_ANSWER, QCOMMIT);
	CHECK_EQ_INT(adm("webhook add --tenant %s --url "
	    "https://receiver.example/hook", tenant), 0);
	CHECK(strstr(out, "took effect: use the printed secret") != NULL);
	if ((p = strstr(out, "id\t")) != NULL)
		id = strtoull(p + 3, NULL, 10);
	CHECK(id > 0 && f_sql_num(m, "SELECT COUNT(*) FROM "
	    "s2r_webhook_endpoint WHERE id = %llu", id) == 1);
	CHECK_EQ_INT(adm("webhook remove %llu", id), 0);
}

int
main(void)
{
	int	 port;

	http_test_init();
	f_init();
	snprintf(cfg, sizeof cfg, "/tmp/fault-admin-commit-%ld.conf",
	    (long)getpid());
	if ((m = f_sql_open()) == NULL ||
	    (port = dbproxy_start((int)config_long("db_port", 0))) == -1 ||
	    f_proxy_config(cfg, port, "") == -1) {
		fprintf(stderr, "FATAL: cannot start the proxy\n");
		return 1;
	}
	test_key_rotate();
	test_webhook_rotate();
	test_creates();
	f_sql(m, "DELETE FROM s2r_api_key WHERE tenant_id = '%s'", tenant);
	unlink(cfg);
	mysql_close(m);
	return check_done("fault_admin_commit");
}
