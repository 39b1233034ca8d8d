/*
 * repo.h - the execution repository: every SQL statement of the service.
 *
 * Functions return enum repo_rc: REPO_OK, REPO_NOTFOUND (no row, or the
 * compare-and-set matched nothing), REPO_DUP (unique key taken) or
 * REPO_ERR (the database failed or is unreachable; already logged).
 * Rows filled by the repository own their payload buffers: release them
 * with exec_row_free / claim_free.
 *
 * The operators' statements (asyncexec-admin) are in repo_admin.h, the
 * expiry's in repo_expire.h, the schema check's in repo_check.h.
 *
 * repo layer: every layer above db (check, handlers, serve, admin, expire,
 * main).
 */
#ifndef ASYNCEXEC_REPO_H
#define ASYNCEXEC_REPO_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "cbtoken.h"
#include "crypto.h"
#include "valid.h"

struct config;
struct db;

#define SCHEMA_VERSION	15	/* the newest migration in sql/ */

/*
 * The longest result or error (bytes, as received) that a callback ending
 * an execution also stores in the row's payload_inline (migration 15), so
 * that a poll gets it in its one statement; longer ones only in
 * result_payload or error_payload, which a poll reads in a second one.
 */
#define REPO_INLINE_MAX		1024

enum repo_rc {
	REPO_ERR = -1,
	REPO_OK = 0,
	REPO_NOTFOUND = 1,
	REPO_DUP = 2,
	REPO_BUSY = 3,		/* a named lock is held by another session */
	REPO_RETRY = 4,		/* deadlock or lock wait timeout undid it: run again */
	REPO_SPLIT = 5,		/* over wsrep_max_ws_size: run it in smaller pieces */
	REPO_SPLIT_ROWS = 6	/* over wsrep_max_ws_rows: run it in smaller pieces */
};

/*
 * How a request's terminal transition sets the webhook outbox mark
 * (sql/010): MARK_ASK asks the database in the statement whether the
 * tenant has an enabled endpoint; MARK_NONE, for a caller that read
 * lately that no endpoint is enabled anywhere (handlers/lookup.c
 * lookup_mark, WEBHOOK_SEEN_MS), leaves the question out.
 */
enum repo_mark {
	MARK_ASK,
	MARK_NONE,
	MARK__MAX
};

enum exec_status {
	ST_WAITING,
	ST_COMPLETED,
	ST_FAILED,
	ST_EXPIRED,
	ST_CANCELLED,
	ST__MAX
};

struct key_row {
	uint64_t	 id;
	int		 backend;	/* 1 backend key, 0 consumer key */
	int		 revoked;	/* revoked_at is set (maybe ahead) */
	char		 tenant[TENANT_MAX_LEN + 1];	/* "" for backend */
	int64_t		 revoke_at;	/* ms: revoked from then on; 0 none */
	uint64_t	 lineage;	/* the first key of its lineage */
	int		 succeeded;	/* a later key of its lineage exists */
};

struct route_row {
	uint64_t	 id;
	unsigned	 retention_days;
	int		 enabled;
};

struct exec_row {
	uint64_t	 id;
	char		 cid[CID_MAX_LEN + 1];
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	enum exec_status status;
	char		 tenant[TENANT_MAX_LEN + 1];
	int		 tenant_null;
	unsigned char	 key_hash[SHA256_LEN];
	int		 key_hash_null;
	unsigned char	 poll_hash[SHA256_LEN];
	int		 poll_hash_null;
	unsigned char	 lineage[SHA256_LEN];	/* initiator_lineage (poll) */
	int		 lineage_null;
	unsigned char	 request_sha[SHA256_LEN];
	unsigned	 attempts;
	int		 cancel_requested;
	int		 claimed;	/* has a lease that has not lapsed */
	int64_t		 created_at, updated_at, expires_at;	/* ms */
	int64_t		 completed_at;	/* 0 when NULL */
	char		*result;	/* NULL when NULL */
	size_t		 result_len;
	char		*error;
	size_t		 error_len;
	/* migration 8: the last heartbeat's progress (NULL: none reported)
	 * and the last retryable failure's error (NULL: none, or the
	 * execution ended); poll's pre-read only sets the has_ flags */
	char		*progress;
	size_t		 progress_len;
	char		*last_error;
	size_t		 last_error_len;
	int		 has_progress, has_last_error;
	/* migration 11: X-Priority, the start (a scheduled one's or a
	 * retry's; 0 when NULL) and the scheduling headers' hash */
	unsigned	 priority;
	int64_t		 not_before;
	unsigned char	 sched_hash[SHA256_LEN];
	int		 sched_null;
	/* replay (sql/011, poll only): the correlation ids of the
	 * execution's replay and of its original; "" when none */
	char		 replaced_by[CID_MAX_LEN + 1];
	char		 replay_of[CID_MAX_LEN + 1];
	/* poll: the ended execution's payload came with the row (its copy
	 * in payload_inline, the caller's token and lineage hashes matched
	 * in the statement too, no progress); 0: repo_exec_payload reads
	 * the payloads */
	int		 payloads;
};

/* What a poll's caller presents (SHA-256 each): repo_exec_poll */
struct poll_proof {
	unsigned char	 token[SHA256_LEN];	/* the poll token's secret */
	unsigned char	 key[SHA256_LEN];	/* the consumer key */
	unsigned char	 lineage[SHA256_LEN];	/* the key's lineage identity */
};

#define PROGRESS_SCHEMA		8	/* progress, retries, the winner */
#define SCHEDULE_SCHEMA		11	/* priority, the start, replay links */
#define INLINE_SCHEMA		15	/* payload_inline: the poll's one statement */
#define REPLAY_HOPS		8	/* poll follows at most this many
					 * replaced_by links */
/* progress: at most this many bytes as sent (else 413) */
/* a retryable failure's delay: 0..RETRY_AFTER_MAX seconds */
#define RETRY_AFTER_MAX		86400

struct exec_new {
	const char	*cid, *env, *svc, *op, *tenant;
	const char	*request;
	size_t		 request_len;
	unsigned char	 request_sha[SHA256_LEN];
	unsigned char	 key_hash[SHA256_LEN];
	unsigned char	 poll_hash[SHA256_LEN];
	unsigned char	 lineage[SHA256_LEN];	/* auth_lineage of the key */
	int64_t		 now, expires_at;
	/* migration 11: the scheduling headers' outcome */
	unsigned	 priority;
	int64_t		 not_before;	/* 0: none */
	unsigned char	 sched_hash[SHA256_LEN];
	int		 sched_given;	/* a scheduling header was given */
	uint64_t	 lineage_id;	/* the key's lineage (its first key); 0:
					 * unknown, never checked by claim */
};

struct claim_item {
	uint64_t	 id;
	char		 cid[CID_MAX_LEN + 1];
	char		 tenant[TENANT_MAX_LEN + 1];
	int		 tenant_null;
	char		*request;
	size_t		 request_len;
	char		 token[CBTOKEN_MAX + 1];
	unsigned	 attempt;
	int64_t		 lease_expires_at, created_at;
	/* what the token seals besides (cbtoken.h) */
	int64_t		 expires_at, not_before;	/* not_before 0: NULL */
	unsigned	 priority;
};

/* The database node of a connection (repo_node_state). */
struct repo_node {
	int		 cluster;	/* db_hosts is set */
	int		 node;		/* its position there, 1 first; 0 none */
	char		 addr[272];	/* host:port of that node */
	int		 wsrep;		/* the server runs Galera */
	int		 ready;		/* no Galera, or Synced and Primary */
	char		 state[32];	/* wsrep_local_state_comment */
	char		 status[32];	/* wsrep_cluster_status */
};

enum repo_rc	repo_node_state(struct db *, struct repo_node *);

/* What the operator can do about a failed statement, by its error. */
enum repo_cause {
	CAUSE_SCHEMA,	/* a table or column is missing: migrate */
	CAUSE_DENIED,	/* the user lacks a privilege for the statement */
	CAUSE_LOGIN,	/* it refused the connect: credentials, db_name */
	CAUSE_OTHER	/* any other: the server's error, as logged */
};
enum repo_cause	repo_cause(const struct db *);
const char	*exec_status_name(enum exec_status);
enum exec_status exec_status_parse(const char *);
void		 exec_row_free(struct exec_row *);
void		 claim_free(struct claim_item *, size_t);

void		 repo_oneshot(void);
struct db	*repo_open(const struct config *, int eager);
struct db	*repo_open_migrate(const struct config *);
void		 repo_close(struct db *);
enum repo_rc	repo_ping(struct db *);
enum repo_rc	repo_schema_version(struct db *, int *version);

enum repo_rc	repo_key_by_hash(struct db *, const unsigned char *, struct key_row *);
/* After a failed COMMIT: is the key of this hash stored (repo_outcome.c)? */
enum repo_rc	repo_key_stored(struct db *, const unsigned char *hash);
enum repo_rc	repo_backend_serves(struct db *, uint64_t key_id, const char *env,
	    const char *svc, const char *op);
enum repo_rc	repo_route_get(struct db *, const char *env, const char *svc,
	    const char *op, struct route_row *);

enum repo_rc	repo_exec_insert(struct db *, const struct exec_new *, uint64_t *id);
enum repo_rc	repo_secret_get(struct db *, const char *name, unsigned char *out,
	    size_t outsz, size_t *len);
enum repo_rc	repo_exec_by_key(struct db *, const char *tenant, const char *env,
	    const char *svc, const char *op, const char *cid, int64_t now,
	    struct exec_row *);
enum repo_rc	repo_exec_by_id(struct db *, uint64_t, int64_t now, struct exec_row *);
enum repo_rc	repo_exec_poll(struct db *, uint64_t id, const char *tenant,
	    const char *env, const char *svc, const char *op, const char *cid,
	    const struct poll_proof *, struct exec_row *);
enum repo_rc	repo_exec_payload(struct db *, struct exec_row *);
enum repo_rc	repo_exec_rotate_poll(struct db *, uint64_t, const unsigned char *);
enum repo_rc	repo_exec_cancel(struct db *, uint64_t, enum repo_mark,
	    int64_t now);
enum repo_rc	repo_hooks_any(struct db *, int *any);
enum repo_rc	repo_exec_request_cancel(struct db *, uint64_t, int64_t now);
/* one item of a listing (repo_list.c): no payload, no secret */
struct list_item {
	uint64_t	 id;
	char		 cid[CID_MAX_LEN + 1];
	enum exec_status status;
	int64_t		 created_at, updated_at, expires_at;	/* ms */
	int64_t		 completed_at;	/* 0 when NULL */
};
/* where a listing's page starts */
struct list_at {
	const char	*env, *svc, *op;
	enum exec_status status;	/* ST__MAX: any */
	uint64_t	 before;	/* ids below it */
};
enum repo_rc	repo_exec_list(struct db *, const unsigned char *lineage,
	    uint64_t key_id, const struct list_at *, unsigned max,
	    struct list_item *, size_t *n, uint64_t *past);
enum repo_rc	repo_claim(struct db *, const char *env, const char *svc,
	    const char *op, unsigned max, unsigned lease_seconds,
	    unsigned max_attempts, int64_t now, struct claim_item **, size_t *);
enum repo_rc	repo_heartbeat(struct db *, uint64_t, const unsigned char *tokhash,
	    int64_t lease_until);
enum repo_rc	repo_finalize(struct db *, uint64_t, const unsigned char *tokhash,
	    enum exec_status to, const char *payload, size_t len, int64_t now);
enum repo_rc	repo_finalize_win(struct db *, uint64_t, const unsigned char *tokhash,
	    enum exec_status to, const char *payload, size_t len,
	    const unsigned char *winhash, enum repo_mark, int64_t now);
enum repo_rc	repo_finalize_sealed(struct db *, uint64_t,
	    const unsigned char *tokhash, enum exec_status to,
	    const char *payload, size_t len, const unsigned char *winhash,
	    enum repo_mark, int64_t now);
/* retryable failures, progress, the winner (repo_callback.c) */
enum repo_rc	repo_heartbeat_progress(struct db *, uint64_t,
	    const unsigned char *tokhash, int64_t lease_until,
	    const char *progress, size_t len, int64_t now);
enum repo_rc	repo_retry(struct db *, uint64_t, const unsigned char *tokhash,
	    const char *error, size_t len, unsigned max_attempts,
	    int64_t not_before, int64_t now);
enum repo_rc	repo_exec_winner(struct db *, uint64_t, unsigned char *tokhash,
	    unsigned char *winhash);

/* metrics (repo_metrics.c): per route, waiting executions (capped) and
 * the age of the oldest one waiting for a claim (due, no live lease, not
 * cancel-requested: repo_sql.h OPEN_HEAD) */
#define REPO_METRICS_ROUTES	256	/* routes reported at most */
#define REPO_METRICS_ROUTES_STR	"256"
#define REPO_WAITING_CAP	10000	/* counted at most per route */
#define REPO_WAITING_CAP_STR	"10000"
struct route_waiting {
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	unsigned	 waiting;	/* capped at REPO_WAITING_CAP */
	int64_t		 oldest_ms;	/* created_at, 0 when none */
};
enum repo_rc	repo_metrics_waiting(struct db *, struct route_waiting *, size_t max,
	    size_t *n, int64_t now);
/* the text, name and parameter kinds of metrics statement i (for the
 * EXPLAIN test, as repo_dash_sql); NULL past the last one */
const char	*repo_metrics_sql(unsigned i, const char **name,
		    const char **params);
/* the last asyncexec-expire run (s2r_job_run, migration 6) */
struct job_run {
	int64_t		 last_run_ms, last_success_ms;	/* 0: never */
	char		 result[16];	/* complete, stopped, locked, error */
	uint64_t	 count[4];	/* expired, cancelled, abandoned, purged */
	uint64_t	 duration_ms;
	int		 failed;	/* result error or locked */
};
enum repo_rc	repo_metrics_expiry(struct db *, struct job_run *);

/* poll-token keys and schema compatibility (repo_keys.c) */
#define POLL_KEY_SCHEMA		5	/* the migration that versions keys */
struct poll_key_row {
	unsigned	 version;
	unsigned char	 key[IDKEY_LEN];
	int64_t		 retire_at;	/* ms; 0: never */
};
enum repo_rc	repo_poll_keys(struct db *, struct poll_key_row *, size_t max,
	    size_t *n);
enum repo_rc	repo_schema_compat(struct db *, int built_for, int *version,
	    int *needs);

/* per-tenant quota (repo_tenant.c, migration 9) */
enum repo_rc	repo_tenant_quota(struct db *, const char *tenant, unsigned *max_open);
enum repo_rc	repo_tenant_open(struct db *, const char *tenant, unsigned cap,
	    unsigned *open);

#endif
