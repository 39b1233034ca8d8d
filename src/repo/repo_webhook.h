/*
 * repo_webhook.h - the operators' statements on webhook endpoints and
 * their deliveries (sql/010_webhooks.sql): what asyncexec-admin webhook
 * runs, on a handle of its own (struct wdb, own statement table, own
 * connection made on first use), so that neither the HTTP service's
 * handle nor the admin's other handles can run them by mistake.
 *
 * Results as repo.h says: REPO_OK, REPO_NOTFOUND (no such row, or the
 * compare-and-set matched none), REPO_ERR (logged). Times are UTC
 * milliseconds passed in by the caller. No function sees a secret in
 * clear: the endpoint's secret arrives sealed (webhook_secret_seal,
 * webhook.h), and no listing returns the sealed bytes.
 *
 * repo layer: admin and main (main_admin.c), the tests, and later the
 * notify daemon (asyncexec-notify); nothing else.
 */
#ifndef ASYNCEXEC_REPO_WEBHOOK_H
#define ASYNCEXEC_REPO_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "repo.h"
#include "webhook.h"

struct config;
struct wdb;

/* "completed,failed,expired,cancelled" and its NUL */
#define WEBHOOK_EVENTS_LEN	36
#define WEBHOOK_REASON_MAX	1020	/* disabled_reason: 255 utf8mb4 */
#define WEBHOOK_ID_MAX		64	/* webhook_id */
#define WEBHOOK_DELIVERIES_MAX	1000	/* a listing's bound */

/* A new endpoint (repo_webhook_add). */
struct webhook_new {
	const char		*tenant;
	const char		*env, *svc, *op;	/* all NULL: every route */
	const char		*url;
	const char		*events;	/* "completed,failed,..." */
	const unsigned char	*sealed;	/* webhook_secret_seal's */
	size_t			 sealed_len;
};

/* An endpoint as the operator sees it: no secret, sealed or not. */
struct webhook_endpoint {
	uint64_t	 id;
	char		 tenant[TENANT_MAX_LEN + 1];
	char		 env[NAME_MAX_LEN + 1];	/* "": every route */
	char		 svc[NAME_MAX_LEN + 1];
	char		 op[NAME_MAX_LEN + 1];
	char		 url[WEBHOOK_URL_MAX + 1];
	char		 events[WEBHOOK_EVENTS_LEN];
	int		 enabled;
	char		 reason[WEBHOOK_REASON_MAX + 1];	/* "": none */
	int64_t		 old_until;	/* the previous secret signs until
					 * then; 0: there is none */
	int64_t		 created_at, updated_at;
};

/* One delivery of an endpoint. */
struct webhook_delivery {
	uint64_t	 id, endpoint_id, execution_id;
	char		 cid[CID_MAX_LEN + 1];	/* "": execution purged */
	char		 webhook_id[WEBHOOK_ID_MAX + 1];
	char		 event[12];	/* completed, failed, ... */
	char		 state[12];	/* pending, leased, delivered, dead */
	unsigned	 attempts;
	int		 last_status;	/* HTTP status; -1: none yet */
	char		 last_error[WEBHOOK_REASON_MAX + 1];
	int64_t		 due_at, created_at;
	int64_t		 delivered_at;	/* 0: not delivered */
};

typedef void (*repo_endpoint_fn)(void *arg, const struct webhook_endpoint *);
typedef void (*repo_delivery_fn)(void *arg, const struct webhook_delivery *);

struct wdb	*repo_webhook_open(const struct config *);
void		 repo_webhook_close(struct wdb *);
enum repo_rc	repo_webhook_begin(struct wdb *);
enum repo_rc	repo_webhook_commit(struct wdb *);
/* After a failed commit: does endpoint id hold this sealed secret? */
enum repo_rc	repo_webhook_stored(struct wdb *, uint64_t id,
	    const unsigned char *sealed, size_t n);
void		 repo_webhook_rollback(struct wdb *);

enum repo_rc	repo_webhook_route_exists(struct wdb *, const char *env,
		    const char *svc, const char *op);
enum repo_rc	repo_webhook_add(struct wdb *, const struct webhook_new *,
		    int64_t now, uint64_t *id);
enum repo_rc	repo_webhook_list(struct wdb *, const char *tenant,
		    repo_endpoint_fn, void *);
enum repo_rc	repo_webhook_get(struct wdb *, uint64_t id,
		    struct webhook_endpoint *);
enum repo_rc	repo_webhook_set_enabled(struct wdb *, uint64_t id, int enabled,
		    const char *reason, int64_t now);
enum repo_rc	repo_webhook_hold(struct wdb *, uint64_t id, int hold,
		    int64_t now, uint64_t *n);
enum repo_rc	repo_webhook_remove(struct wdb *, uint64_t id,
		    uint64_t *deliveries);
enum repo_rc	repo_webhook_rotate(struct wdb *, uint64_t id,
		    const char *tenant, const unsigned char *sealed, size_t n,
		    int64_t old_until, int64_t now);
enum repo_rc	repo_webhook_deliveries(struct wdb *, uint64_t endpoint,
		    const char *state, unsigned limit, repo_delivery_fn, void *);
enum repo_rc	repo_webhook_delivery_get(struct wdb *, uint64_t id,
		    struct webhook_delivery *);
enum repo_rc	repo_webhook_replay(struct wdb *, uint64_t delivery,
		    int64_t now);
enum repo_rc	repo_webhook_replay_since(struct wdb *, uint64_t endpoint,
		    int64_t since, int64_t now, uint64_t *n);

#endif
