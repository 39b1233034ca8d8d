/*
 * repo_notify.h - the statements of asyncexec-notify, the webhook
 * sender: the endpoints it signs for, the outbox (terminal executions
 * marked by SET_NOTIFY, sql/010) turned into deliveries, the lease of due
 * deliveries, the outcome of an attempt, and the gauges of /metrics.
 *
 * The handle is its own kind, struct ndb (own statements, own
 * connection). Functions return enum repo_rc: REPO_OK; REPO_RETRY when
 * a deadlock, a lock wait timeout or a Galera certification conflict
 * undid the transaction (nothing changed: run it again); REPO_ERR
 * (logged). Times are UTC milliseconds passed in by the caller.
 *
 * Exactly once: a marked execution becomes its deliveries and loses its
 * mark in one transaction, and uq_delivery (endpoint, execution) turns a
 * repeat into nothing. At most one sender at a time: a lease is a fresh
 * random token written with the row, and only its holder records the
 * outcome; a sender that dies leaves leases that lapse at due_at.
 *
 * repo layer: notify, main_notify.c, repo_notify.c and the tests.
 */
#ifndef ASYNCEXEC_REPO_NOTIFY_H
#define ASYNCEXEC_REPO_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "repo.h"

struct config;
struct ndb;

#define NOTIFY_URL_MAX		2048
#define NOTIFY_SEALED_MAX	128	/* s2r_webhook_endpoint.secret_sealed */
#define NOTIFY_BODY_MAX		2048	/* an event body (thin: ids only) */
#define NOTIFY_ID_MAX		64	/* webhook_id */
#define NOTIFY_ERROR_MAX	255	/* last_error */
#define NOTIFY_TOKEN_LEN	16	/* lease_token */

/* Terminal statuses as event bits (s2r_webhook_endpoint.events). */
enum notify_event {
	NEV_COMPLETED,
	NEV_FAILED,
	NEV_EXPIRED,
	NEV_CANCELLED,
	NEV__MAX
};

/* An endpoint as the sender needs it (secrets still sealed). */
struct notify_endpoint {
	uint64_t	 id;
	char		 tenant[TENANT_MAX_LEN + 1];
	char		 env[NAME_MAX_LEN + 1];	/* "": every route */
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	char		*url;			/* its list's (malloc) */
	unsigned	 events;		/* 1 << enum notify_event */
	int		 enabled;
	unsigned char	 sealed[NOTIFY_SEALED_MAX];
	size_t		 sealed_len;
	unsigned char	 old_sealed[NOTIFY_SEALED_MAX];
	size_t		 old_len;		/* 0: no previous secret */
	int64_t		 old_until;
};

/* An enabled endpoint's route and events, as the outbox reads them. */
struct notify_filter {
	uint64_t	 id;
	char		 env[NAME_MAX_LEN + 1];	/* "": every route */
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	unsigned	 events;		/* 1 << enum notify_event */
};

/* A marked terminal execution, as its event describes it. */
struct notify_exec {
	uint64_t	 id;
	char		 env[NAME_MAX_LEN + 1];
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	char		 cid[CID_MAX_LEN + 1];
	enum notify_event ev;
	int64_t		 completed_at;
};

/* A leased delivery. */
struct notify_delivery {
	uint64_t	 id;
	uint64_t	 endpoint_id;
	char		 webhook_id[NOTIFY_ID_MAX + 1];
	char		 body[NOTIFY_BODY_MAX + 1];
	size_t		 body_len;
	unsigned	 attempts;		/* this one included */
	int64_t		 created_at;
	int64_t		 leased_at;		/* Unix ms: its lease began */
	int64_t		 lease_until;		/* and ends */
};

/* What an attempt decided for its delivery. */
enum notify_state {
	NST_DELIVERED,		/* a 2xx */
	NST_RETRY,		/* pending again, due at the given time */
	NST_DEAD		/* no attempt left, or the endpoint is gone */
};

/* The gauges of the sender's /metrics. */
struct notify_gauges {
	uint64_t	 pending;	/* pending and leased, capped */
	int64_t		 oldest_ms;	/* created_at of the oldest; 0: none */
	uint64_t	 dead;		/* capped */
	uint64_t	 disabled;	/* endpoints */
	uint64_t	 marked;	/* executions still to become deliveries */
};
#define NOTIFY_GAUGE_CAP	100000

struct ndb	*repo_notify_open(const struct config *);
void		 repo_notify_close(struct ndb *);
int		 repo_notify_ready(struct ndb *);
/* "completed", "failed", "expired", "cancelled" */
const char	*repo_notify_event_name(enum notify_event);

/*
 * A list read whole: rows v[0..n), room for cap (grown as it is read,
 * never shrunk; the caller frees v, and for endpoints each v[i].url:
 * repo_notify_endpoints_free). Start it zeroed.
 */
struct notify_endpoints {
	struct notify_endpoint	*v;
	size_t			 n;
	size_t			 cap;
};
struct notify_filters {
	struct notify_filter	*v;
	size_t			 n;
	size_t			 cap;
};

/* Every endpoint, enabled or not, by id, into l (as many as there are). */
enum repo_rc	repo_notify_endpoints(struct ndb *, struct notify_endpoints *l);
void		repo_notify_endpoints_free(struct notify_endpoints *l);

/*
 * One outbox batch of tenant's marked terminal executions, at most
 * limit: repo_notify_outbox_begin reads them (locked, SKIP LOCKED),
 * repo_notify_outbox_filters reads the tenant's enabled endpoints in
 * the same transaction (share-locked: an endpoint added or enabled
 * before is there, one removed or disabled meanwhile waits for the
 * commit), the caller adds each one's deliveries,
 * repo_notify_outbox_commit clears their marks and commits;
 * repo_notify_outbox_abort rolls back.
 */
enum repo_rc	repo_notify_outbox_begin(struct ndb *, const char *tenant,
	    unsigned limit, struct notify_exec *, size_t *n);
enum repo_rc	repo_notify_outbox_filters(struct ndb *, const char *tenant,
	    struct notify_filters *l);
enum repo_rc	repo_notify_delivery_add(struct ndb *, uint64_t endpoint_id,
	    const struct notify_exec *, const char *webhook_id,
	    const char *body, size_t len, int64_t now);
enum repo_rc	repo_notify_outbox_commit(struct ndb *,
	    const struct notify_exec *, size_t n);
void		repo_notify_outbox_abort(struct ndb *);

/*
 * A lease's cap per endpoint: at most max transfers of one endpoint at
 * once. busy: the endpoint of every transfer running (nbusy of them, one
 * per transfer). skipped, set by the lease: due deliveries it read and
 * left as they were, their endpoint at max (more may be due).
 */
struct notify_cap {
	unsigned	 max;
	const uint64_t	*busy;
	size_t		 nbusy;
	size_t		 skipped;
};

/*
 * Leases up to limit due deliveries (lapsed leases first, then pending
 * ones whose due_at <= now, each in due_at order) until now + lease_ms
 * under token, counting the attempt; *n of them are in out, each with
 * its lease's times. The deliveries of a disabled endpoint are not
 * leased. None of an endpoint with cap->max transfers counted in busy
 * and out: those of an endpoint at max in busy are not read, the others
 * not taken.
 */
enum repo_rc	repo_notify_lease(struct ndb *, int64_t now, int64_t lease_ms,
	    unsigned limit, struct notify_cap *cap,
	    const unsigned char token[NOTIFY_TOKEN_LEN],
	    struct notify_delivery *out, size_t *n);

/*
 * Records an attempt of delivery id leased under token: its new state,
 * the HTTP status (0: none), the error text (NULL: none) and, for
 * NST_RETRY, when it is due. *held 0: the lease was no longer ours
 * (lapsed and taken): nothing changed. Waits at most 1 s for the row
 * (as the release): a failure leaves the delivery to its lease.
 */
enum repo_rc	repo_notify_record(struct ndb *, uint64_t id,
	    const unsigned char token[NOTIFY_TOKEN_LEN], enum notify_state,
	    unsigned http_status, const char *error, int64_t due, int64_t now,
	    int *held);
/* Holds a leased delivery back without counting the attempt. */
enum repo_rc	repo_notify_release(struct ndb *, uint64_t id,
	    const unsigned char token[NOTIFY_TOKEN_LEN], int64_t due,
	    const char *why, int64_t now);
/*
 * Disables an endpoint (a 410 from its receiver) with the reason; waits
 * at most 1 s for its row: REPO_RETRY when that was not enough.
 */
enum repo_rc	repo_notify_disable(struct ndb *, uint64_t endpoint_id,
	    const char *reason, int64_t now);

enum repo_rc	repo_notify_gauges(struct ndb *, struct notify_gauges *);

#endif
