/*
 * admin.h - asyncexec-admin's parts: the parsed command line (main_admin.c),
 * the verbs (admin_cmds.c: routes and keys; admin_exec.c: executions,
 * migrate and check; admin_webhook.c: webhook endpoints and deliveries)
 * and the output of listings (admin_cmds.c).
 *
 * admin layer: the admin folder and main_admin.c.
 */
#ifndef ASYNCEXEC_ADMIN_H
#define ASYNCEXEC_ADMIN_H

#include <stdint.h>

#include "config.h"
#include "repo.h"
#include "valid.h"

struct json_object;

#define MAX_ROUTES	64
#define MAX_POS		4

/* verb options; a verb's mask of them is OPT(O_X) | ... */
enum opt {
	O_TENANT,		/* O_TENANT --tenant T */
	O_LABEL,		/* O_LABEL --label L */
	O_ROUTE,		/* O_ROUTE --route R (repeated) */
	O_DAYS,			/* O_DAYS --retention-days N */
	O_IFNE,			/* O_IFNE --if-not-exists */
	O_MESSAGE,		/* O_MESSAGE --message TEXT */
	O_TO,			/* O_TO --to VERSION */
	O_STATUS,		/* O_STATUS --status */
	O_GRACE,		/* O_GRACE --grace-hours N */
	O_MAXOPEN,		/* O_MAXOPEN --max-open N */
	O_URL,			/* O_URL --url URL */
	O_EVENTS,		/* O_EVENTS --events E,E... */
	O_ENDPOINT,		/* O_ENDPOINT --endpoint ID */
	O_SINCE,		/* O_SINCE --since TIME */
	O_STATE,		/* O_STATE --status STATE (with a value; alone
				 * it is O_STATUS, migrate's) */
	O_DRYRUN,		/* O_DRYRUN --dry-run */
	O__MAX
};
#define OPT(o)	(1u << (o))

/* The command line, parsed and checked before the configuration is read. */
struct opts {
	const char	*config;
	int		 json;
	const char	*pos[MAX_POS];	/* after the noun and verb words */
	int		 npos;
	const char	*val[O__MAX];	/* NULL: not given */
	const char	*routes[MAX_ROUTES];
	int		 nroutes;
	/* filled by the verbs' checks */
	char		 env[NAME_MAX_LEN + 1], svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	long		 num;		/* --retention-days or --to */
	uint64_t	 id;		/* an execution, key, webhook endpoint
					 * or delivery id; 0: by key */
	char		 key[64];	/* a key read from standard input */
	char		 events[40];	/* --events, in canonical order */
	int64_t		 since;		/* --since, UTC ms */
};

struct ctx {
	struct config	 cfg;
	const char	*path;
	struct db	*db;		/* the service's statements */
	struct adb	*adb;		/* the operator's (repo_admin.c) */
	struct wdb	*wdb;		/* webhooks' (repo_webhook.c) */
	struct opts	*o;
};

struct verb {
	const char	*noun, *verb;	/* verb NULL: the noun alone */
	unsigned	 opts;		/* OPT() mask accepted */
	int		 pmin, pmax;	/* positional arguments */
	int		 json;		/* has a --json form */
	const char	*synopsis;	/* after "asyncexec-admin " */
	int		(*check)(struct opts *);	/* 0 or 2 */
	int		(*run)(struct ctx *);
};

extern const struct verb	admin_verbs[];
extern const int		admin_nverbs;

int	admin_usage_error(const struct verb *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	admin_fail(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2)));
int	admin_written(const char *undone);
const char *admin_cause(const struct db *, int version);
int	admin_after_commit(enum repo_rc stored, const char *what,
	    const char *check);

/* checks shared by verbs */
const char *admin_shown(const char *);
int	admin_route_arg(struct opts *, const char *);
int	admin_uint_arg(const char *, long min, long max, long *);

/* listings: column names and kinds ('s' text, 'n' number, 'b' yes/no,
 * 'l' comma list), rows from a repo_row_fn, text or one JSON document */
struct listing;
struct listing	*listing_new(int json, const char *const *names,
		    const char *kinds);
void		 listing_row(void *, const char *const *cols, int n);
int		 listing_end(struct listing *, int ok);
int		 admin_print_json(struct json_object *);

/* admin_cmds.c */
int	cmd_route_add(struct ctx *);
int	cmd_route_set(struct ctx *);
int	cmd_route_list(struct ctx *);
int	cmd_route_disable(struct ctx *);
int	cmd_route_enable(struct ctx *);
int	cmd_key_create(struct ctx *);
int	cmd_key_list(struct ctx *);
int	cmd_key_revoke(struct ctx *);
int	cmd_bkey_create(struct ctx *);
int	cmd_bkey_list(struct ctx *);
int	cmd_bkey_revoke(struct ctx *);
int	cmd_bkey_grant(struct ctx *);
int	cmd_bkey_revoke_route(struct ctx *);
int	cmd_stats(struct ctx *);
int	chk_route(struct opts *);
int	chk_route_add(struct opts *);
int	chk_route_set(struct opts *);
int	chk_key_create(struct opts *);
int	chk_bkey_create(struct opts *);
int	chk_key_ref(struct opts *);
int	chk_bkey_grant(struct opts *);

/* admin_exec.c */
int	cmd_exec_show(struct ctx *);
int	cmd_exec_requeue(struct ctx *);
int	cmd_exec_fail(struct ctx *);
int	cmd_migrate(struct ctx *);
int	cmd_check(struct ctx *);
int	chk_exec(struct opts *);
int	chk_exec_fail(struct opts *);
int	chk_migrate(struct opts *);

/* admin_replay.c */
int	cmd_exec_replay(struct ctx *);
int	chk_exec_replay(struct opts *);

/* admin_keys.c */
int	cmd_pollkey_rotate(struct ctx *);
int	cmd_pollkey_list(struct ctx *);
int	chk_pollkey_rotate(struct opts *);
int	cmd_key_rotate(struct ctx *);
int	chk_key_rotate(struct opts *);

/* admin_tenant.c */
int	cmd_tenant_set(struct ctx *);
int	cmd_tenant_list(struct ctx *);
int	chk_tenant_set(struct opts *);

/* admin_webhook.c */
int	cmd_wh_add(struct ctx *);
int	cmd_wh_list(struct ctx *);
int	cmd_wh_disable(struct ctx *);
int	cmd_wh_enable(struct ctx *);
int	cmd_wh_remove(struct ctx *);
int	cmd_wh_rotate(struct ctx *);
int	cmd_wh_deliveries(struct ctx *);
int	cmd_wh_replay(struct ctx *);
int	chk_wh_add(struct opts *);
int	chk_wh_list(struct opts *);
int	chk_wh_id(struct opts *);
int	chk_wh_rotate(struct opts *);
int	chk_wh_deliveries(struct opts *);
int	chk_wh_replay(struct opts *);

#endif
