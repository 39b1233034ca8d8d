/*
 * main_admin.c - asyncexec-admin: schema, routes, keys, executions and
 * webhook endpoints.
 *
 * usage: asyncexec-admin [--config FILE] [--json] VERB ... (see --help)
 *        asyncexec-admin [--config FILE] --check-config (= check)
 * Options may come in any order, before or after the verb. The command
 * line is checked completely before the configuration is read, so a
 * usage error is reported as such even without a configuration file.
 * Exit 0 on success, 1 on a database or runtime error, 2 on a usage or
 * configuration error. New keys are printed once; only hashes are kept.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "log.h"
#include "repo.h"
#include "repo_admin.h"
#include "repo_webhook.h"

#ifndef ASYNCEXEC_VERSION
#define ASYNCEXEC_VERSION	"unknown"
#endif

#define O_VAL	(OPT(O_TENANT) | OPT(O_LABEL) | OPT(O_ROUTE) | OPT(O_DAYS) | \
		OPT(O_MESSAGE) | OPT(O_TO) | OPT(O_GRACE) | OPT(O_MAXOPEN) | \
		OPT(O_URL) | OPT(O_EVENTS) | OPT(O_ENDPOINT) | OPT(O_SINCE))
							/* taking a value */
#define EXEC_BY	"ID | --tenant TENANT ENV/SERVICE/OPERATION CORRELATION_ID"
#define WH_ID	1, 1, 1		/* one positional id, --json */

const struct verb admin_verbs[] = {
	{ "migrate", NULL, OPT(O_TO) | OPT(O_STATUS), 0, 0, 1,
	  "migrate [--to VERSION] | migrate --status", chk_migrate,
	  cmd_migrate },
	{ "check", NULL, 0, 0, 0, 0, "check", NULL, cmd_check },
	{ "route", "add", OPT(O_DAYS) | OPT(O_IFNE), 1, 1, 0,
	  "route add ENV/SERVICE/OPERATION [--retention-days N] "
	  "[--if-not-exists]", chk_route_add, cmd_route_add },
	{ "route", "set", OPT(O_DAYS), 1, 1, 0,
	  "route set ENV/SERVICE/OPERATION --retention-days N",
	  chk_route_set, cmd_route_set },
	{ "route", "list", 0, 0, 0, 1, "route list", NULL, cmd_route_list },
	{ "route", "disable", 0, 1, 1, 0, "route disable ENV/SERVICE/OPERATION",
	  chk_route, cmd_route_disable },
	{ "route", "enable", 0, 1, 1, 0, "route enable ENV/SERVICE/OPERATION",
	  chk_route, cmd_route_enable },
	{ "key", "create", OPT(O_TENANT) | OPT(O_LABEL), 0, 0, 0,
	  "key create --tenant TENANT [--label LABEL]", chk_key_create,
	  cmd_key_create },
	{ "key", "list", 0, 0, 0, 1, "key list", NULL, cmd_key_list },
	{ "key", "revoke", 0, 1, 1, 0, "key revoke ID|-|KEY", chk_key_ref,
	  cmd_key_revoke },
	{ "key", "rotate", OPT(O_GRACE), 1, 1, 0,
	  "key rotate ID|-|KEY [--grace-hours N]", chk_key_rotate,
	  cmd_key_rotate },
	{ "backend-key", "create", OPT(O_ROUTE) | OPT(O_LABEL), 0, 0, 0,
	  "backend-key create --route ENV/SERVICE/OPERATION [--route ...] "
	  "[--label LABEL]", chk_bkey_create, cmd_bkey_create },
	{ "backend-key", "list", 0, 0, 0, 1, "backend-key list", NULL,
	  cmd_bkey_list },
	{ "backend-key", "revoke", 0, 1, 1, 0, "backend-key revoke ID|-|KEY",
	  chk_key_ref, cmd_bkey_revoke },
	{ "backend-key", "grant", 0, 2, 2, 0,
	  "backend-key grant ID|-|KEY ENV/SERVICE/OPERATION", chk_bkey_grant,
	  cmd_bkey_grant },
	{ "backend-key", "revoke-route", 0, 2, 2, 0,
	  "backend-key revoke-route ID|-|KEY ENV/SERVICE/OPERATION",
	  chk_bkey_grant, cmd_bkey_revoke_route },
	{ "execution", "show", OPT(O_TENANT), 1, 2, 1,
	  "execution show " EXEC_BY, chk_exec, cmd_exec_show },
	{ "execution", "requeue", OPT(O_TENANT), 1, 2, 0,
	  "execution requeue " EXEC_BY, chk_exec, cmd_exec_requeue },
	{ "execution", "fail", OPT(O_TENANT) | OPT(O_MESSAGE), 1, 2, 0,
	  "execution fail " EXEC_BY " --message TEXT", chk_exec_fail,
	  cmd_exec_fail },
	{ "execution", "replay", OPT(O_TENANT) | OPT(O_ROUTE) | OPT(O_STATE) |
	  OPT(O_SINCE) | OPT(O_DRYRUN), 0, 2, 1,
	  "execution replay " EXEC_BY " | execution replay --route "
	  "ENV/SERVICE/OPERATION --status failed|expired|cancelled --since TIME "
	  "[--dry-run]", chk_exec_replay, cmd_exec_replay },
	{ "poll-key", "rotate", OPT(O_GRACE), 0, 0, 0,
	  "poll-key rotate [--grace-hours N]", chk_pollkey_rotate,
	  cmd_pollkey_rotate },
	{ "poll-key", "list", 0, 0, 0, 1, "poll-key list", NULL,
	  cmd_pollkey_list },
	{ "tenant", "set", OPT(O_MAXOPEN), 1, 1, 0,
	  "tenant set TENANT --max-open N", chk_tenant_set, cmd_tenant_set },
	{ "tenant", "list", 0, 0, 0, 1, "tenant list", NULL, cmd_tenant_list },
	{ "webhook", "add", OPT(O_TENANT) | OPT(O_URL) | OPT(O_ROUTE) |
	  OPT(O_EVENTS), 0, 0, 1,
	  "webhook add --tenant TENANT --url URL [--route ENV/SERVICE/OPERATION] "
	  "[--events completed,failed,expired,cancelled]", chk_wh_add,
	  cmd_wh_add },
	{ "webhook", "list", OPT(O_TENANT), 0, 0, 1,
	  "webhook list [--tenant TENANT]", chk_wh_list, cmd_wh_list },
	{ "webhook", "disable", 0, WH_ID, "webhook disable ID", chk_wh_id,
	  cmd_wh_disable },
	{ "webhook", "enable", 0, WH_ID, "webhook enable ID", chk_wh_id,
	  cmd_wh_enable },
	{ "webhook", "remove", 0, WH_ID, "webhook remove ID", chk_wh_id,
	  cmd_wh_remove },
	{ "webhook", "rotate-secret", OPT(O_GRACE), WH_ID,
	  "webhook rotate-secret ID [--grace-hours N]", chk_wh_rotate,
	  cmd_wh_rotate },
	{ "webhook", "deliveries", OPT(O_STATE) | OPT(O_STATUS), WH_ID,
	  "webhook deliveries ID [--status pending|leased|delivered|dead]",
	  chk_wh_deliveries, cmd_wh_deliveries },
	{ "webhook", "replay", OPT(O_ENDPOINT) | OPT(O_SINCE), 0, 1, 1,
	  "webhook replay DELIVERY_ID | webhook replay --endpoint ID --since "
	  "TIME", chk_wh_replay, cmd_wh_replay },
	{ "stats", NULL, 0, 0, 0, 1, "stats", NULL, cmd_stats },
};
const int admin_nverbs = sizeof(admin_verbs) / sizeof(admin_verbs[0]);

static const struct {
	const char	*name;
	enum opt	 o;
} optnames[] = {
	{ "--tenant", O_TENANT }, { "--label", O_LABEL },
	{ "--route", O_ROUTE }, { "--retention-days", O_DAYS },
	{ "--if-not-exists", O_IFNE }, { "--message", O_MESSAGE },
	{ "--to", O_TO }, { "--status", O_STATUS },
	{ "--grace-hours", O_GRACE }, { "--max-open", O_MAXOPEN },
	{ "--url", O_URL }, { "--events", O_EVENTS },
	{ "--endpoint", O_ENDPOINT }, { "--since", O_SINCE },
	{ "--dry-run", O_DRYRUN },
};
#define NOPTNAMES	(sizeof(optnames) / sizeof(optnames[0]))

/* Prints the synopsis of every verb of noun (NULL: all) to f. */
static void
synopsis(FILE *f, const char *noun)
{
	int	 i;

	fprintf(f, "usage: asyncexec-admin [--config FILE] [--json] VERB ...\n"
	    "       asyncexec-admin --help | --version | help [NOUN] | "
	    "--check-config\n");
	for (i = 0; i < admin_nverbs; i++)
		if (noun == NULL || strcmp(noun, admin_verbs[i].noun) == 0)
			fprintf(f, "  %s\n", admin_verbs[i].synopsis);
	if (noun == NULL)
		fprintf(f, "--json: one JSON document on stdout (the list "
		    "verbs, stats, execution show and replay, migrate --status, "
		    "the webhook verbs).\n"
		    "Exit 0 success, 1 database or runtime error, 2 usage "
		    "or configuration error.\n");
}

/* Writes "asyncexec-admin: MESSAGE" and a newline on stderr. */
static void
vsay(const char *fmt, va_list ap)
{
	fprintf(stderr, "asyncexec-admin: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
}

/* Reports a usage error (with v's noun's synopsis, if known); 2. */
int
admin_usage_error(const struct verb *v, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	synopsis(stderr, v != NULL ? v->noun : NULL);
	return 2;
}

/* Reports a runtime failure on stderr; 1. */
int
admin_fail(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	return 1;
}

/*
 * Whether word s after --status is its value (webhook deliveries ID
 * --status dead): a word that is no option and no noun. Alone --status
 * is migrate's flag.
 */
static int
status_value(const char *s)
{
	int	 i;

	if (s[0] == '-' || s[0] == '\0')
		return 0;
	for (i = 0; i < admin_nverbs; i++)
		if (strcmp(s, admin_verbs[i].noun) == 0)
			return 0;
	return 1;
}

/* Stores verb option a (with its value at *i + 1); 0 or -1 (usage). */
static int
parse_opt(struct opts *o, int argc, char **argv, int *i)
{
	const char	*a = argv[*i];
	size_t		 k;

	for (k = 0; k < NOPTNAMES; k++)
		if (strcmp(a, optnames[k].name) == 0)
			break;
	if (k == NOPTNAMES)
		return admin_usage_error(NULL, "unknown option %s",
		    admin_shown(a)), -1;
	if (optnames[k].o == O_STATUS && *i + 1 < argc &&
	    status_value(argv[*i + 1])) {
		if (o->val[O_STATE] != NULL)
			return admin_usage_error(NULL, "--status given twice"),
			    -1;
		o->val[O_STATE] = argv[++*i];
		return 0;
	}
	if ((O_VAL & OPT(optnames[k].o)) == 0) {
		o->val[optnames[k].o] = a;
		return 0;
	}
	if (*i + 1 >= argc)
		return admin_usage_error(NULL, "%s needs a value", a), -1;
	a = argv[++*i];
	if (optnames[k].o == O_ROUTE) {
		if (o->nroutes == MAX_ROUTES)
			return admin_usage_error(NULL, "too many --route"), -1;
		o->routes[o->nroutes++] = a;
		o->val[O_ROUTE] = a;
	} else if (o->val[optnames[k].o] != NULL)
		return admin_usage_error(NULL, "%s given twice",
		    optnames[k].name), -1;
	else
		o->val[optnames[k].o] = a;
	return 0;
}

enum mode { M_RUN, M_HELP, M_VERSION, M_CHECK };

/* Splits argv into options and words (any order); 0 or 2 (usage). */
static int
parse_argv(struct opts *o, int argc, char **argv, const char **words,
    int *nwords, enum mode *mode)
{
	int	 i, dashdash = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || a[1] == '\0') {
			if (*nwords == MAX_POS + 2)
				return admin_usage_error(NULL, "too many "
				    "arguments");
			words[(*nwords)++] = a;
		} else if (strcmp(a, "--") == 0)
			dashdash = 1;
		else if (strcmp(a, "--config") == 0) {
			if (i + 1 >= argc)
				return admin_usage_error(NULL,
				    "--config needs a value");
			o->config = argv[++i];
		} else if (strcmp(a, "--json") == 0)
			o->json = 1;
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			*mode = M_HELP;
		else if (strcmp(a, "--version") == 0)
			*mode = *mode == M_HELP ? M_HELP : M_VERSION;
		else if (strcmp(a, "--check-config") == 0)	/* = check */
			*mode = *mode == M_RUN ? M_CHECK : *mode;
		else if (parse_opt(o, argc, argv, &i) == -1)
			return 2;
	}
	return 0;
}

/* The verb named by words; NULL (and *noun_known) when none. */
static const struct verb *
find_verb(const char **words, int nwords, int *noun_known)
{
	int	 i;

	*noun_known = 0;
	for (i = 0; i < admin_nverbs; i++) {
		const struct verb *v = &admin_verbs[i];

		if (strcmp(words[0], v->noun) != 0)
			continue;
		*noun_known = 1;
		if (v->verb == NULL ||
		    (nwords > 1 && strcmp(words[1], v->verb) == 0))
			return v;
	}
	return NULL;
}

/* The command-line name of option o (O_STATE: --status with a value). */
static const char *
opt_name(enum opt o)
{
	size_t	 k;

	for (k = 0; k < NOPTNAMES; k++)
		if (optnames[k].o == o)
			return optnames[k].name;
	return "--status VALUE";
}

/* Checks the verb's options and arguments; 0 or 2 (usage). */
static int
check_verb(const struct verb *v, struct opts *o, const char **words,
    int nwords)
{
	int	 i, skip = v->verb ? 2 : 1;

	for (i = 0; i < O__MAX; i++)
		if (o->val[i] != NULL && (v->opts & OPT(i)) == 0)
			return admin_usage_error(v, "%s%s%s takes no %s "
			    "option", v->noun, v->verb ? " " : "",
			    v->verb ? v->verb : "", opt_name(i));
	if (o->json && !v->json)
		return admin_usage_error(v, "%s has no --json form",
		    v->synopsis);
	if (nwords - skip > MAX_POS)	/* a noun alone and 5 more words */
		return admin_usage_error(v, "wrong number of arguments");
	for (i = skip; i < nwords; i++)
		o->pos[o->npos++] = words[i];
	if (o->npos < v->pmin || o->npos > v->pmax)
		return admin_usage_error(v, "wrong number of arguments");
	return v->check != NULL ? v->check(o) : 0;
}

/* Parses and checks the command line; *vp gets the verb. -1: run it. */
static int
parse(int argc, char **argv, struct opts *o, const struct verb **vp)
{
	const char	*words[MAX_POS + 2];
	enum mode	 mode = M_RUN;
	int		 nwords = 0, known, rc;

	if ((rc = parse_argv(o, argc, argv, words, &nwords, &mode)) != 0)
		return rc;
	if (mode == M_VERSION) {
		printf("asyncexec-admin %s\n", ASYNCEXEC_VERSION);
		return 0;
	}
	if (mode == M_CHECK) {
		if (nwords > 0)
			return admin_usage_error(NULL, "--check-config takes "
			    "no verb (it is the verb check)");
		words[nwords++] = "check";
		mode = M_RUN;
	}
	if (nwords > 0 && strcmp(words[0], "help") == 0) {
		synopsis(stdout, nwords > 1 ? words[1] : NULL);
		return 0;
	}
	if (nwords == 0) {
		synopsis(mode == M_HELP ? stdout : stderr, NULL);
		return mode == M_HELP ? 0 : 2;
	}
	*vp = find_verb(words, nwords, &known);
	if (mode == M_HELP) {
		synopsis(stdout, known ? words[0] : NULL);
		return 0;
	}
	if (*vp == NULL)
		return known ? admin_usage_error(&(struct verb){ .noun =
		    words[0] }, "%s: which verb?", words[0]) :
		    admin_usage_error(NULL, "unknown verb %s",
		    admin_shown(words[0]));
	rc = check_verb(*vp, o, words, nwords);
	return rc != 0 ? rc : -1;
}

int
main(int argc, char *argv[])
{
	struct opts		 o;
	struct ctx		 c;
	const struct verb	*v = NULL;
	char			 err[512];
	int			 rc;

	memset(&o, 0, sizeof(o));
	memset(&c, 0, sizeof(c));
	if ((rc = parse(argc, argv, &o, &v)) != -1)
		return rc;
	c.o = &o;
	c.path = o.config != NULL ? o.config : CONFIG_DEFAULT_PATH;
	if (v->run == cmd_check)	/* check reads the file itself */
		return cmd_check(&c);
	if (config_load(&c.cfg, c.path, err, sizeof(err)) == -1) {
		fprintf(stderr, "asyncexec-admin: %s\n", err);
		return 2;
	}
	log_set_level(LOG_WARN);
	repo_oneshot();
	if ((c.db = repo_open(&c.cfg, 0)) == NULL ||
	    (c.adb = repo_admin_open(&c.cfg)) == NULL ||
	    (c.wdb = repo_webhook_open(&c.cfg)) == NULL)
		rc = 1;
	else
		rc = v->run(&c);
	repo_webhook_close(c.wdb);
	repo_admin_close(c.adb);
	repo_close(c.db);
	return rc;
}
