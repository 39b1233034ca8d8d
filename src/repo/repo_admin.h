/*
 * repo_admin.h - the operators' statements: what asyncexec-admin runs,
 * on the service handle (struct db: migrations, routes, keys, tenants,
 * the poll-token keys) and on a handle of its own (struct adb: an
 * execution's detail, requeue, operator failure, key rotation), so that
 * the HTTP service cannot run them by accident. Results as repo.h says.
 *
 * repo layer: admin and main (main_admin.c) only, and the tests.
 */
#ifndef ASYNCEXEC_REPO_ADMIN_H
#define ASYNCEXEC_REPO_ADMIN_H

#include "repo.h"

/* on the service handle, in the admin program */
enum repo_rc	repo_migrate(struct db *, int target, unsigned lock_wait,
	    int *applied, int *version, const char **failed,
	    enum repo_cause *cause);
enum repo_rc	repo_migrate_lock(struct db *, unsigned wait_seconds);
void	repo_migrate_unlock(struct db *);
enum repo_rc	repo_route_add(struct db *, const char *env, const char *svc,
	    const char *op, unsigned retention_days, int64_t now);
enum repo_rc	repo_key_add(struct db *, int backend, const char *tenant,
	    const char *label, const unsigned char *hash, int64_t now,
	    uint64_t *id);
enum repo_rc	repo_backend_route_add(struct db *, uint64_t key_id, uint64_t route_id);
enum repo_rc	repo_route_set_enabled(struct db *, const char *env, const char *svc,
	    const char *op, int enabled);
/* Listing callbacks get one row's columns as strings. */
typedef void (*repo_row_fn)(void *arg, const char *const *cols, int ncols);
enum repo_rc	repo_route_list(struct db *, repo_row_fn, void *);
enum repo_rc	repo_key_list(struct db *, int backend, repo_row_fn, void *);
enum repo_rc	repo_key_revoke(struct db *, int backend, uint64_t id, int64_t now);
enum repo_rc	repo_stats(struct db *, repo_row_fn, void *);
enum repo_rc	repo_tx_begin(struct db *);
enum repo_rc	repo_tx_commit(struct db *);
void	repo_tx_rollback(struct db *);


/* poll-token keys, schema compatibility, tenants (repo_keys.c, repo_tenant.c) */
enum repo_rc	repo_poll_key_insert(struct db *, unsigned version,
	    const unsigned char *key, int64_t now);
enum repo_rc	repo_poll_key_rotate(struct db *, unsigned grace_seconds, int64_t now,
	    unsigned *version);
enum repo_rc	repo_schema_set_compat(struct db *, int version, int compat);
enum repo_rc	repo_tenant_set(struct db *, const char *tenant, unsigned max_open,
	    int64_t now);
enum repo_rc	repo_tenant_list(struct db *, repo_row_fn, void *);

/* operator statements (repo_admin.c), on a handle of their own */
struct adb;

/* An execution as `asyncexec-admin execution show` sees it. */
struct exec_admin {
	uint64_t	 id;
	char		 cid[CID_MAX_LEN + 1];
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	char		 status[20];
	char		 tenant[TENANT_MAX_LEN + 1];
	int		 tenant_null;
	unsigned	 attempts;
	int		 cancel_requested;
	int		 has_claim_token;	/* claimed at least once */
	int64_t		 created_at, updated_at, expires_at;	/* ms */
	int64_t		 completed_at, lease_expires_at;	/* 0: NULL */
	long long	 request_bytes, result_bytes, error_bytes; /* -1: NULL */
	char		 error_code[257];	/* the error's "code" (64
						 * characters at most); "": none */
};

typedef void (*repo_applied_fn)(void *arg, int version, int64_t applied_at);

struct adb	*repo_admin_open(const struct config *);
void		 repo_admin_close(struct adb *);
enum repo_rc	repo_route_set_retention(struct adb *, const char *env,
	    const char *svc, const char *op, unsigned days);
enum repo_rc	repo_route_id(struct adb *, const char *env, const char *svc,
	    const char *op, uint64_t *id);
enum repo_rc	repo_key_get(struct adb *, uint64_t id, struct key_row *);
/* What a key rotation made (repo_key_rotate). */
struct key_rotation {
	uint64_t	 new_id;	/* the new key */
	int64_t		 asked;		/* now + the grace, ms */
	int64_t		 revoked_at;	/* the old key's end as stored: asked,
					 * or an earlier end that was kept */
};
/* Called before a commit with what it would keep: 0 to commit it. */
typedef int (*repo_publish_fn)(void *arg, const struct key_rotation *);
enum repo_rc	repo_key_rotate(struct adb *, uint64_t id,
	    const unsigned char *hash, unsigned grace_seconds, int64_t now,
	    repo_publish_fn, void *, struct key_rotation *);
enum repo_rc	repo_backend_grant(struct adb *, uint64_t key_id, uint64_t route_id,
	    int grant);
enum repo_rc	repo_exec_show(struct adb *, uint64_t id, struct exec_admin *);
enum repo_rc	repo_exec_show_key(struct adb *, const char *tenant, const char *env,
	    const char *svc, const char *op, const char *cid,
	    struct exec_admin *);
enum repo_rc	repo_exec_requeue(struct adb *, uint64_t id, int64_t now,
	    unsigned max_attempts);
enum repo_rc	repo_exec_opfail(struct adb *, uint64_t id, const char *error,
	    size_t len, int64_t now);
enum repo_rc	repo_migrations_applied(struct adb *, repo_applied_fn, void *);

#endif
