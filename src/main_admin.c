/*
 * main_admin.c - asyncexec-admin: schema, routes and keys.
 *
 * usage: asyncexec-admin [--config FILE] VERB ...
 * Exit 0 on success, 1 on a database or runtime error, 2 on a usage or
 * configuration error. New keys are printed once; only hashes are kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "json.h"
#include "log.h"
#include "repo.h"
#include "valid.h"

#define MAX_ROUTES	64

struct ctx {
	struct config	 cfg;
	struct db	*db;
};

static int
usage(void)
{
	fprintf(stderr,
	    "usage: asyncexec-admin [--config FILE] VERB ...\n"
	    "  migrate [--to VERSION]\n"
	    "  route add ENV/SERVICE/OPERATION [--retention-days N]\n"
	    "  route list | route disable ROUTE | route enable ROUTE\n"
	    "  key create --tenant TENANT [--label LABEL]\n"
	    "  key list | key revoke ID|KEY\n"
	    "  backend-key create --route ENV/SERVICE/OPERATION [--route ...] "
	    "[--label LABEL]\n"
	    "  backend-key list | backend-key revoke ID|KEY\n"
	    "  stats\n");
	return 2;
}

#define MIGRATE_LOCK_WAIT	60	/* seconds a second migrate waits */

/* migrate [--to N]: applies the pending migrations (up to N). */
static int
cmd_migrate(struct ctx *c, int target)
{
	int	 applied, version, rc;

	rc = repo_migrate(c->db, target, MIGRATE_LOCK_WAIT, &applied, &version);
	if (rc == REPO_BUSY) {
		fprintf(stderr, "asyncexec-admin: another migrate holds the "
		    "migration lock of this database (waited %d s); nothing "
		    "applied, try again when it has finished\n",
		    MIGRATE_LOCK_WAIT);
		return 1;
	}
	if (rc != REPO_OK) {
		fprintf(stderr, "asyncexec-admin: migrate failed after %d "
		    "migration(s); schema version %d\n", applied, version);
		return 1;
	}
	printf("applied %d migration(s); schema version %d\n", applied, version);
	return 0;
}

static int
cmd_route_add(struct ctx *c, int argc, char **argv)
{
	char	 env[NAME_MAX_LEN + 1], svc[NAME_MAX_LEN + 1], op[NAME_MAX_LEN + 1];
	char	*end;
	long	 days = 7;
	int	 rc;

	if (argc == 3 && strcmp(argv[1], "--retention-days") == 0) {
		days = strtol(argv[2], &end, 10);
		if (*end != '\0' || days < 1 || days > 36500) {
			fprintf(stderr, "asyncexec-admin: --retention-days must "
			    "be 1..36500\n");
			return 2;
		}
	} else if (argc != 1)
		return usage();
	if (!valid_route_triple(argv[0], env, svc, op)) {
		fprintf(stderr, "asyncexec-admin: route must be ENV/SERVICE/"
		    "OPERATION, each [a-z0-9][a-z0-9._-]{0,63}\n");
		return 2;
	}
	rc = repo_route_add(c->db, env, svc, op, (unsigned)days, json_now_ms());
	if (rc == REPO_DUP) {
		fprintf(stderr, "asyncexec-admin: route %s already exists\n",
		    argv[0]);
		return 1;
	}
	if (rc != REPO_OK)
		return 1;
	printf("route %s added (retention %ld days)\n", argv[0], days);
	return 0;
}

/* Parses "--name value" pairs: tenant, label and repeated routes. */
static int
key_args(int argc, char **argv, const char **tenant, const char **label,
    const char **routes, int *nroutes)
{
	int	 i;

	for (i = 0; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--tenant") == 0 && tenant != NULL)
			*tenant = argv[i + 1];
		else if (strcmp(argv[i], "--label") == 0)
			*label = argv[i + 1];
		else if (strcmp(argv[i], "--route") == 0 && routes != NULL &&
		    *nroutes < MAX_ROUTES)
			routes[(*nroutes)++] = argv[i + 1];
		else
			return -1;
	}
	return i == argc ? 0 : -1;
}

static int
cmd_key_create(struct ctx *c, int argc, char **argv)
{
	const char	*tenant = NULL, *label = NULL;
	unsigned char	 hash[SHA256_LEN];
	char		 key[3 + SECRET_B64_LEN + 1];
	uint64_t	 id;

	if (key_args(argc, argv, &tenant, &label, NULL, NULL) == -1 ||
	    tenant == NULL)
		return usage();
	if (!valid_tenant(tenant)) {
		fprintf(stderr, "asyncexec-admin: tenant must match "
		    "[A-Za-z0-9._-]{1,64}\n");
		return 2;
	}
	if (crypto_new_secret("ak_", key, sizeof(key), hash) == -1 ||
	    repo_key_add(c->db, 0, tenant, label, hash, json_now_ms(),
	    &id) != REPO_OK)
		return 1;
	printf("%s\n", key);
	return 0;
}

/* Stores a backend key serving routes[0..n) in one transaction. */
static int
backend_key_store(struct ctx *c, const char **routes, int n,
    const char *label, const unsigned char *hash)
{
	char		 env[NAME_MAX_LEN + 1], svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	struct route_row rt;
	uint64_t	 id;
	int		 i, rc;

	if (repo_tx_begin(c->db) != REPO_OK ||
	    repo_key_add(c->db, 1, NULL, label, hash, json_now_ms(),
	    &id) != REPO_OK)
		goto fail;
	for (i = 0; i < n; i++) {
		if (!valid_route_triple(routes[i], env, svc, op) ||
		    (rc = repo_route_get(c->db, env, svc, op, &rt)) ==
		    REPO_NOTFOUND) {
			fprintf(stderr, "asyncexec-admin: no route %s\n",
			    routes[i]);
			goto fail;
		}
		if (rc != REPO_OK ||
		    (rc = repo_backend_route_add(c->db, id, rt.id)) == REPO_ERR)
			goto fail;
	}
	if (repo_tx_commit(c->db) != REPO_OK)
		goto fail;
	return 0;
fail:
	repo_tx_rollback(c->db);
	return -1;
}

static int
cmd_backend_key_create(struct ctx *c, int argc, char **argv)
{
	const char	*label = NULL, *routes[MAX_ROUTES];
	unsigned char	 hash[SHA256_LEN];
	char		 key[3 + SECRET_B64_LEN + 1];
	int		 n = 0;

	if (key_args(argc, argv, NULL, &label, routes, &n) == -1 || n == 0)
		return usage();
	if (crypto_new_secret("bk_", key, sizeof(key), hash) == -1 ||
	    backend_key_store(c, routes, n, label, hash) == -1)
		return 1;
	printf("%s\n", key);
	return 0;
}

static int
cmd_route_set(struct ctx *c, int argc, char **argv, int enabled)
{
	char	 env[NAME_MAX_LEN + 1], svc[NAME_MAX_LEN + 1], op[NAME_MAX_LEN + 1];
	int	 rc;

	if (argc != 1 || !valid_route_triple(argv[0], env, svc, op))
		return usage();
	rc = repo_route_set_enabled(c->db, env, svc, op, enabled);
	if (rc == REPO_NOTFOUND)
		fprintf(stderr, "asyncexec-admin: no route %s\n", argv[0]);
	if (rc != REPO_OK)
		return 1;
	printf("route %s %s\n", argv[0], enabled ? "enabled" : "disabled");
	return 0;
}

static int
cmd_route_disable(struct ctx *c, int argc, char **argv)
{
	return cmd_route_set(c, argc, argv, 0);
}

static int
cmd_route_enable(struct ctx *c, int argc, char **argv)
{
	return cmd_route_set(c, argc, argv, 1);
}

/* Prints one listing row as tab-separated columns. */
static void
print_row(void *arg, const char *const *cols, int n)
{
	int	 i;

	(void)arg;
	for (i = 0; i < n; i++)
		printf("%s%s", i ? "\t" : "", cols[i][0] ? cols[i] : "-");
	printf("\n");
}

static int
cmd_route_list(struct ctx *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return usage();
	printf("route\tretention_days\tenabled\n");
	return repo_route_list(c->db, print_row, NULL) == REPO_OK ? 0 : 1;
}

static int
key_list(struct ctx *c, int argc, int backend)
{
	if (argc != 0)
		return usage();
	printf("id\ttenant\tlabel\trevoked\troutes\n");
	return repo_key_list(c->db, backend, print_row, NULL) == REPO_OK ? 0 : 1;
}

static int
cmd_key_list(struct ctx *c, int argc, char **argv)
{
	(void)argv;
	return key_list(c, argc, 0);
}

static int
cmd_backend_key_list(struct ctx *c, int argc, char **argv)
{
	(void)argv;
	return key_list(c, argc, 1);
}

/* Revokes the key named by its id or by the key itself. */
static int
key_revoke(struct ctx *c, int argc, char **argv, int backend)
{
	unsigned char	 h[SHA256_LEN];
	struct key_row	 k;
	uint64_t	 id;
	int		 rc;

	if (argc != 1)
		return usage();
	if (valid_secret(argv[0], backend ? "bk_" : "ak_")) {
		crypto_sha256(argv[0], strlen(argv[0]), h);
		if ((rc = repo_key_by_hash(c->db, h, &k)) == REPO_ERR)
			return 1;
		id = rc == REPO_OK ? k.id : 0;
	} else if (!valid_exec_id(argv[0], &id))
		return usage();
	rc = id ? repo_key_revoke(c->db, backend, id, json_now_ms()) :
	    REPO_NOTFOUND;
	if (rc == REPO_NOTFOUND)
		fprintf(stderr, "asyncexec-admin: no such %s key\n",
		    backend ? "backend" : "consumer");
	if (rc != REPO_OK)
		return 1;
	printf("key %llu revoked\n", (unsigned long long)id);
	return 0;
}

static int
cmd_key_revoke(struct ctx *c, int argc, char **argv)
{
	return key_revoke(c, argc, argv, 0);
}

static int
cmd_backend_key_revoke(struct ctx *c, int argc, char **argv)
{
	return key_revoke(c, argc, argv, 1);
}

static int
cmd_stats(struct ctx *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return usage();
	printf("route\tstatus\tcount\n");
	return repo_stats(c->db, print_row, NULL) == REPO_OK ? 0 : 1;
}

static int
cmd_migrate_v(struct ctx *c, int argc, char **argv)
{
	char	*end;
	long	 to;

	if (argc == 0)
		return cmd_migrate(c, 0);
	if (argc != 2 || strcmp(argv[0], "--to") != 0)
		return usage();
	to = strtol(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end != '\0' || to < 1 || to > SCHEMA_VERSION) {
		fprintf(stderr, "asyncexec-admin: --to must be 1..%d\n",
		    SCHEMA_VERSION);
		return 2;
	}
	return cmd_migrate(c, (int)to);
}

enum verb {
	VERB_MIGRATE, VERB_ROUTE_ADD, VERB_ROUTE_LIST, VERB_ROUTE_DISABLE,
	VERB_ROUTE_ENABLE, VERB_KEY_CREATE, VERB_KEY_LIST, VERB_KEY_REVOKE,
	VERB_BKEY_CREATE, VERB_BKEY_LIST, VERB_BKEY_REVOKE, VERB_STATS,
	VERB__MAX
};

static const struct {
	const char	*noun, *verb;	/* verb NULL: the noun alone */
	int		(*fn)(struct ctx *, int, char **);
} verbs[VERB__MAX] = {
	{ "migrate", NULL, cmd_migrate_v },		/* VERB_MIGRATE */
	{ "route", "add", cmd_route_add },		/* VERB_ROUTE_ADD */
	{ "route", "list", cmd_route_list },		/* VERB_ROUTE_LIST */
	{ "route", "disable", cmd_route_disable },	/* VERB_ROUTE_DISABLE */
	{ "route", "enable", cmd_route_enable },	/* VERB_ROUTE_ENABLE */
	{ "key", "create", cmd_key_create },		/* VERB_KEY_CREATE */
	{ "key", "list", cmd_key_list },		/* VERB_KEY_LIST */
	{ "key", "revoke", cmd_key_revoke },		/* VERB_KEY_REVOKE */
	{ "backend-key", "create", cmd_backend_key_create }, /* VERB_BKEY_CREATE */
	{ "backend-key", "list", cmd_backend_key_list },	/* VERB_BKEY_LIST */
	{ "backend-key", "revoke", cmd_backend_key_revoke }, /* VERB_BKEY_REVOKE */
	{ "stats", NULL, cmd_stats },			/* VERB_STATS */
};

/* Dispatches argv (after the global options) to a verb. */
static int
dispatch(struct ctx *c, int argc, char **argv)
{
	int	 i, skip;

	for (i = 0; i < VERB__MAX; i++) {
		if (strcmp(argv[0], verbs[i].noun) != 0)
			continue;
		skip = verbs[i].verb ? 2 : 1;
		if (verbs[i].verb != NULL &&
		    (argc < 2 || strcmp(argv[1], verbs[i].verb) != 0))
			continue;
		return verbs[i].fn(c, argc - skip, argv + skip);
	}
	return usage();
}

int
main(int argc, char *argv[])
{
	struct ctx	 c;
	const char	*path = CONFIG_DEFAULT_PATH;
	char		 err[512];
	int		 i = 1, rc;

	if (argc > 2 && strcmp(argv[1], "--config") == 0) {
		path = argv[2];
		i = 3;
	}
	if (i >= argc)
		return usage();
	if (config_load(&c.cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "asyncexec-admin: %s\n", err);
		return 2;
	}
	log_set_level(LOG_WARN);
	if ((c.db = repo_open(&c.cfg, 0)) == NULL)
		return 1;
	rc = dispatch(&c, argc - i, argv + i);
	repo_close(c.db);
	return rc;
}
