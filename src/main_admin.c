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
	    "  migrate\n"
	    "  route add ENV/SERVICE/OPERATION [--retention-days N]\n"
	    "  key create --tenant TENANT [--label LABEL]\n"
	    "  backend-key create --route ENV/SERVICE/OPERATION [--route ...] "
	    "[--label LABEL]\n");
	return 2;
}

static int
cmd_migrate(struct ctx *c)
{
	int	 applied, version;

	if (repo_migrate(c->db, &applied, &version) != REPO_OK) {
		fprintf(stderr, "asyncexec-admin: migrate failed\n");
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

/* Dispatches argv (after the global options) to a verb. */
static int
dispatch(struct ctx *c, int argc, char **argv)
{
	if (argc == 1 && strcmp(argv[0], "migrate") == 0)
		return cmd_migrate(c);
	if (argc >= 3 && strcmp(argv[0], "route") == 0 &&
	    strcmp(argv[1], "add") == 0)
		return cmd_route_add(c, argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[0], "key") == 0 &&
	    strcmp(argv[1], "create") == 0)
		return cmd_key_create(c, argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[0], "backend-key") == 0 &&
	    strcmp(argv[1], "create") == 0)
		return cmd_backend_key_create(c, argc - 2, argv + 2);
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
