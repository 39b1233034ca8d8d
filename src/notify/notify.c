/*
 * notify.c - asyncexec-notify's loop (notify.h).
 *
 * One pass: refresh the endpoints (every ENDPOINTS_REFRESH_MS: the
 * tenants whose outboxes are read, the URLs and secrets sent with), turn
 * the outbox of every tenant with an enabled endpoint into deliveries
 * (to the endpoints its transaction reads, not to the list's; the
 * running transfers are driven after each tenant's batch, which waits at
 * most 1 s for a lock, so that no answer waits for the step), lease
 * as many due deliveries as there are free transfer slots (at most
 * endpoint_cap running of one endpoint), start them,
 * run the transfers for up to IDLE_POLL_MS (less when more are due)
 * while answering the loopback endpoint (listen.h: its clients never
 * make the loop wait), record what finished.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "config.h"
#include "crypto.h"
#include "eplist.h"
#include "listen.h"
#include "log.h"
#include "notify.h"
#include "policy.h"
#include "repo_notify.h"
#include "send.h"
#include "webhook.h"

#define ENDPOINTS_REFRESH_MS	2000
#define OUTBOX_BATCH		200	/* marked executions per transaction */
#define IDLE_POLL_MS		200	/* the outbox is looked at this often */
#define BUSY_POLL_MS		10	/* when more deliveries may be due */
#define GAUGES_REFRESH_MS	5000
#define HOLD_MS			60000	/* a disabled endpoint's delivery waits */
#define LEASE_MARGIN_MS		5000	/* a lease outlives the timeout by this */
#define SLOTS_MAX		256	/* webhook_concurrency's bound */
#define ENDPOINT_SHARE		4	/* one endpoint: 1/4 of the slots */
#define DB_STALE_MS		10000	/* /readyz: no database answer this long */
#define GONE_MAX		64	/* 410 disables waiting to be written */
#define GONE_REASON		"the receiver answered 410 Gone"

_Static_assert(LISTEN_FDS_MAX <= SEND_POLL_EXTRA_MAX,
    "sender_poll watches every fd of the loopback endpoint");

struct slot {
	int			 used;
	struct notify_delivery	 d;
	unsigned char		 token[NOTIFY_TOKEN_LEN];
};

/* X(id, label): what this sender's attempts came to */
#define RESULTS(X) \
	X(R_DELIVERED, "delivered") \
	X(R_RETRIED, "retried") \
	X(R_DEAD, "dead") \
	X(R_HELD, "held") \
	X(R_LOST, "lease_lost")
enum result {
#define R_ENUM(id, label) id,
	RESULTS(R_ENUM)
#undef R_ENUM
	R__MAX
};
static const char *const result_labels[R__MAX] = {
#define R_LABEL(id, label) [id] = label,
	RESULTS(R_LABEL)
#undef R_LABEL
};

struct nstate {
	const char		*path;
	struct config		 cfg;
	struct schedule		 sched;
	struct addr_allow	 allow;
	struct send_opts	 so;
	unsigned char		 key[AEAD_KEY_LEN];
	struct ndb		*db;
	struct sender		*snd;
	struct eplist		 eps;		/* every endpoint */
	struct eplist		 eps_read;	/* a refresh reads here */
	struct notify_filters	 flt;		/* the outbox's, per tenant */
	int64_t			 eps_at;
	struct slot		 slots[SLOTS_MAX];
	uint64_t		 results[R__MAX];
	uint64_t		 created;	/* deliveries made from the outbox */
	struct notify_gauges	 g;
	int64_t			 g_at;
	int64_t			 db_ok_at;	/* last database answer */
	uint64_t		 gone[GONE_MAX];	/* endpoints to disable */
	size_t			 ngone;
	struct listener		 lsn;		/* the loopback endpoint */
};

static volatile sig_atomic_t stop_flag, reload_flag;

/*
 * Transfers of one endpoint running at once: max(1, webhook_concurrency
 * / ENDPOINT_SHARE), 2 of the default 8. A receiver that does not answer
 * holds that many slots for webhook_timeout, never the others; a fast
 * one still gets that many at a time.
 */
static unsigned
endpoint_cap(const struct nstate *ns)
{
	unsigned	 c = ns->cfg.webhook_concurrency / ENDPOINT_SHARE;

	return c > 0 ? c : 1;
}

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_flag = 1;
	else
		stop_flag = 1;
}

/*
 * Loads the configuration at ns->path with what it derives (schedule,
 * allow list, key). A reload (ns->db open) keeps the database settings
 * and notify_listen that ns->cfg has (logged when the file changed one):
 * asyncexec-notify(8) says they take effect at the next start. The
 * connection is made with them whenever it is lost: a reload that took
 * them would apply them at some later loss, unlooked for. 0, or -1
 * (logged) with ns unchanged.
 */
static int
load(struct nstate *ns)
{
	struct config	 c;
	struct schedule	 s;
	struct addr_allow a;
	unsigned char	 key[AEAD_KEY_LEN];
	char		 err[512];
	const char	*k = NULL;

	if (config_load(&c, ns->path, err, sizeof(err)) == -1 ||
	    schedule_parse(c.webhook_retry_schedule, &s, err, sizeof(err)) !=
	    SCHEDULE_OK ||
	    addr_allow_parse(c.webhook_allow_networks, &a, err, sizeof(err)) !=
	    ADDR_OK ||
	    webhook_keyfile_load(c.webhook_key_file, key, err, sizeof(err)) !=
	    WEBHOOK_OK) {
		log_error("notify: %s", err);
		return -1;
	}
	ns->sched = s;
	ns->allow = a;
	memcpy(ns->key, key, sizeof(key));
	explicit_bzero(key, sizeof(key));
	if (ns->db != NULL) {	/* a reload */
		if ((k = config_keep_db(&c, &ns->cfg)) == NULL &&
		    strcmp(c.notify_listen, ns->cfg.notify_listen) != 0)
			k = "notify_listen";
		memcpy(c.notify_listen, ns->cfg.notify_listen,
		    sizeof(c.notify_listen));
	}
	if (k != NULL)
		log_warn("notify: reload: %s changed: the database settings "
		    "and notify_listen take effect at the next start (the "
		    "running ones are kept)", k);
	ns->cfg = c;
	ns->so.allow_http = (int)c.webhook_allow_http;
	ns->so.allow = &ns->allow;
	ns->so.connect_timeout = c.webhook_connect_timeout;
	ns->so.timeout = c.webhook_timeout;
	log_set_level((enum log_level)c.log_level);
	return 0;
}

/*
 * Re-reads the endpoints (sorted by id); those whose disable waits to be
 * written (ns->gone) stay disabled. 0 or -1 (the old list kept).
 */
static int
refresh_endpoints(struct nstate *ns, int64_t now)
{
	struct eplist		 l;
	struct notify_endpoint	*e;
	size_t			 i;

	/* into the other list: a read that fails part way leaves this one
	 * as it was (a pointer into it still names the same endpoint) */
	if (repo_notify_endpoints(ns->db, &ns->eps_read.ep) != REPO_OK ||
	    eplist_group(&ns->eps_read) == -1)
		return -1;
	l = ns->eps;
	ns->eps = ns->eps_read;
	ns->eps_read = l;
	ns->eps_at = now;
	ns->db_ok_at = now;
	for (i = 0; i < ns->ngone; i++)	/* disabled, not yet written */
		if ((e = eplist_find(&ns->eps, ns->gone[i])) != NULL)
			e->enabled = 0;
	return 0;
}

/* 1 when enabled endpoint f wants the event of x. */
static int
matches(const struct notify_filter *f, const struct notify_exec *x)
{
	if ((f->events & (1u << x->ev)) == 0)
		return 0;
	return f->env[0] == '\0' || (strcmp(f->env, x->env) == 0 &&
	    strcmp(f->svc, x->svc) == 0 && strcmp(f->op, x->op) == 0);
}

/* A new webhook-id, "msg_" and 22 base64url characters. 0 or -1. */
static int
new_webhook_id(char out[NOTIFY_ID_MAX + 1])
{
	unsigned char	 r[16];

	if (crypto_random(r, sizeof(r)) == -1)
		return -1;
	memcpy(out, "msg_", 4);
	b64url_encode(r, sizeof(r), out + 4, NOTIFY_ID_MAX + 1 - 4);
	return 0;
}

/*
 * The deliveries of marked execution x, one per matching endpoint of
 * those the outbox read (ns->flt). REPO_OK, or the failure.
 */
static enum repo_rc
add_deliveries(struct nstate *ns, const struct notify_exec *x, int64_t now)
{
	char		 id[NOTIFY_ID_MAX + 1], body[NOTIFY_BODY_MAX + 1];
	size_t		 i, len;
	enum repo_rc	 rc;

	if (event_body(x, body, sizeof(body), &len) == -1)
		return REPO_ERR;
	for (i = 0; i < ns->flt.n; i++) {
		if (!matches(&ns->flt.v[i], x))
			continue;
		if (new_webhook_id(id) == -1)
			return REPO_ERR;
		if ((rc = repo_notify_delivery_add(ns->db, ns->flt.v[i].id, x, id,
		    body, len, now)) != REPO_OK)
			return rc;
		ns->created++;
	}
	return REPO_OK;
}

/*
 * One batch of a tenant's outbox (one transaction). 1 when the batch
 * was full (more may wait: the next pass takes it), else 0. One batch a
 * pass keeps the loop's turn short, so that finished transfers are
 * recorded long before their leases lapse. The endpoints the deliveries
 * go to are read in the transaction that clears the marks, after them,
 * never taken from ns->eps: an endpoint added or enabled before an
 * execution ended gets its event, however old the list is.
 */
static int
outbox_tenant(struct nstate *ns, const char *tenant, int64_t now)
{
	static struct notify_exec xs[OUTBOX_BATCH];
	enum repo_rc	 rc;
	size_t		 i, n;

	ns->flt.n = 0;
	if (repo_notify_outbox_begin(ns->db, tenant, OUTBOX_BATCH, xs, &n) !=
	    REPO_OK || (n > 0 && repo_notify_outbox_filters(ns->db, tenant,
	    &ns->flt) != REPO_OK))
		return 0;
	for (i = 0, rc = REPO_OK; i < n && rc == REPO_OK; i++)
		rc = add_deliveries(ns, &xs[i], now);
	if (rc != REPO_OK) {
		repo_notify_outbox_abort(ns->db);
		return 0;
	}
	if (repo_notify_outbox_commit(ns->db, xs, n) != REPO_OK)
		return 0;
	ns->db_ok_at = now;
	return n == OUTBOX_BATCH;
}

static void drive(struct nstate *);

/*
 * One outbox batch of every tenant with an enabled endpoint, the
 * transfers driven after each (which re-read no list); 1 when one of
 * the batches was full.
 */
static int
outbox_step(struct nstate *ns, int64_t now)
{
	size_t	 i, j;
	int	 more = 0, on;

	for (i = 0; i < ns->eps.ep.n; i = j) {
		j = eplist_tenant_end(&ns->eps, i, &on);
		if (on) {
			more |= outbox_tenant(ns, ns->eps.by_tenant[i]->tenant,
			    now);
			drive(ns);
		}
	}
	return more;
}

/* Queues the disable of endpoint id (a 410) for gone_write. */
static void
gone_add(struct nstate *ns, uint64_t id)
{
	size_t	 i;

	for (i = 0; i < ns->ngone; i++)
		if (ns->gone[i] == id)
			return;
	if (ns->ngone == GONE_MAX) {
		log_warn("notify: endpoint %llu: %d disables wait already: "
		    "disabled at its next 410", (unsigned long long)id,
		    GONE_MAX);
		return;
	}
	ns->gone[ns->ngone++] = id;
}

/*
 * Writes the queued disables (once a pass, after the finished transfers
 * are recorded). One whose row an admin command holds longer than 1 s
 * stays queued for the next pass (the endpoint stays disabled in the
 * list meanwhile): the recording of the other transfers does not wait
 * for it, and it is not lost.
 */
static void
gone_write(struct nstate *ns, int64_t now)
{
	size_t	 i, k = 0;

	for (i = 0; i < ns->ngone; i++) {
		if (repo_notify_disable(ns->db, ns->gone[i], GONE_REASON,
		    now) == REPO_OK) {
			ns->db_ok_at = now;
			continue;
		}
		log_info("notify: endpoint %llu: disable not written yet (its "
		    "row is busy or the database failed): tried again",
		    (unsigned long long)ns->gone[i]);
		ns->gone[k++] = ns->gone[i];
	}
	ns->ngone = k;
}

/* Records what attempt a of the delivery in slot s came to; frees s. */
static void
finish(struct nstate *ns, struct slot *s, const struct attempt *a,
    const char *err)
{
	struct notify_endpoint *e;
	enum notify_state st;
	int64_t		 now = clock_now_ms(), due;
	uint32_t	 rnd = 0;
	int		 held;

	(void)crypto_random(&rnd, sizeof(rnd));
	st = policy_decide(&ns->sched, s->d.attempts, a, rnd, now, &due);
	s->used = 0;
	if (repo_notify_record(ns->db, s->d.id, s->token, st, a->status,
	    err[0] != '\0' ? err : NULL, due, now, &held) != REPO_OK) {
		log_warn("notify: delivery %llu: outcome not recorded (the "
		    "database): it is sent again when its lease lapses",
		    (unsigned long long)s->d.id);
		return;
	}
	ns->db_ok_at = now;
	if (!held) {
		ns->results[R_LOST]++;
		log_warn("notify: delivery %llu: the lease lapsed before the "
		    "answer came", (unsigned long long)s->d.id);
		return;
	}
	ns->results[st == NST_DELIVERED ? R_DELIVERED : st == NST_RETRY ?
	    R_RETRIED : R_DEAD]++;
	if (a->cls == AC_GONE && (e = eplist_find(&ns->eps, s->d.endpoint_id)) !=
	    NULL) {
		e->enabled = 0;
		log_warn("notify: endpoint %llu disabled: its receiver answered "
		    "410 Gone", (unsigned long long)e->id);
		gone_add(ns, e->id);	/* written after the reaping */
	}
	if (st == NST_DELIVERED)
		log_debug("notify: delivery %llu endpoint %llu: delivered (%u)",
		    (unsigned long long)s->d.id,
		    (unsigned long long)s->d.endpoint_id, a->status);
	else
		log_info("notify: delivery %llu endpoint %llu attempt %u: %s%s",
		    (unsigned long long)s->d.id,
		    (unsigned long long)s->d.endpoint_id, s->d.attempts, err,
		    st == NST_DEAD ? "; dead" : "; retried later");
}

/* Holds the delivery in slot s back (the attempt not counted). */
static void
hold(struct nstate *ns, struct slot *s, int64_t ms, const char *why)
{
	int64_t	 now = clock_now_ms();

	s->used = 0;
	if (repo_notify_release(ns->db, s->d.id, s->token, now + ms, why,
	    now) == REPO_OK)
		ns->results[R_HELD]++;
}

/*
 * The webhook-signature value for endpoint e over (id, ts, body) into
 * out: one "v1,..." per live secret. 0, or -1 (a secret that does not
 * open: the key file is not the one it was sealed with).
 */
static int
signature(struct nstate *ns, const struct notify_endpoint *e,
    const struct notify_delivery *d, int64_t ts, int64_t now, char *out,
    size_t outsz)
{
	unsigned char	 k[WEBHOOK_KEY_MAX];
	char		 sig[2][WEBHOOK_SIG_LEN + 1];
	size_t		 klen;
	int		 n = 0, bad = 0;

	if (webhook_secret_open(ns->key, e->tenant, e->sealed, e->sealed_len,
	    k, &klen) != WEBHOOK_OK)
		return -1;
	bad |= webhook_sign(k, klen, d->webhook_id, ts, d->body, d->body_len,
	    sig[n++]) != WEBHOOK_OK;
	if (e->old_len > 0 && now < e->old_until &&
	    webhook_secret_open(ns->key, e->tenant, e->old_sealed, e->old_len,
	    k, &klen) == WEBHOOK_OK)
		bad |= webhook_sign(k, klen, d->webhook_id, ts, d->body,
		    d->body_len, sig[n++]) != WEBHOOK_OK;
	explicit_bzero(k, sizeof(k));
	if (bad)
		return -1;
	snprintf(out, outsz, "%s%s%s", sig[0], n > 1 ? " " : "",
	    n > 1 ? sig[1] : "");
	return 0;
}

/*
 * Signs and starts the delivery leased into slot s, to end before its
 * lease does (held, due at once, when too little is left). The list is
 * read again when it lacks the endpoint, or says disabled and is older
 * than the delivery or its lease: the outbox made the delivery, and the
 * lease took it, for an endpoint enabled then, maybe after the list was
 * read (an endpoint enabled again).
 */
static void
dispatch(struct nstate *ns, struct slot *s)
{
	struct notify_endpoint *e;
	struct attempt	 a = { AC_REFUSED, 0, -1 };
	char		 h[4][2 * WEBHOOK_SIG_LEN + 64], err[SEND_ERROR_MAX];
	const char	*hp[4] = { h[0], h[1], h[2], h[3] };
	int64_t		 now = clock_now_ms(), ms;

	if ((e = eplist_find(&ns->eps, s->d.endpoint_id)) == NULL &&
	    (refresh_endpoints(ns, now) == -1 ||
	    (e = eplist_find(&ns->eps, s->d.endpoint_id)) == NULL)) {
		finish(ns, s, &a, "the endpoint was removed");
		return;
	}
	/* e points into the list a refresh replaces: found again after it */
	if (!e->enabled && (s->d.created_at >= ns->eps_at ||
	    s->d.leased_at >= ns->eps_at) &&
	    refresh_endpoints(ns, now) == 0 &&
	    (e = eplist_find(&ns->eps, s->d.endpoint_id)) == NULL) {
		finish(ns, s, &a, "the endpoint was removed");
		return;
	}
	if (!e->enabled) {
		hold(ns, s, HOLD_MS, "held: the endpoint is disabled");
		return;
	}
	snprintf(h[0], sizeof(h[0]), "Content-Type: application/json");
	snprintf(h[1], sizeof(h[1]), "webhook-id: %s", s->d.webhook_id);
	snprintf(h[2], sizeof(h[2]), "webhook-timestamp: %lld",
	    (long long)(now / 1000));
	memcpy(h[3], "webhook-signature: ", 19);
	if (signature(ns, e, &s->d, now / 1000, now, h[3] + 19,
	    sizeof(h[3]) - 19) == -1) {
		log_error("notify: endpoint %llu: its secret does not open with "
		    "webhook_key_file (not the key it was stored with?): "
		    "deliveries held", (unsigned long long)e->id);
		hold(ns, s, HOLD_MS, "held: the secret does not open with "
		    "webhook_key_file");
		return;
	}
	/* the transfer ends before its lease does (policy_transfer_ms) */
	if ((ms = policy_transfer_ms(s->d.lease_until, clock_now_ms(),
	    ns->cfg.webhook_timeout)) == 0) {
		hold(ns, s, 0, "held: too little of the lease was left");
		return;
	}
	switch (sender_start(ns->snd, e->url, hp, 4, s->d.body, s->d.body_len,
	    ms, (size_t)(s - ns->slots), err, sizeof(err))) {
	case SEND_STARTED:
		return;
	case SEND_REFUSED:
		finish(ns, s, &a, err);
		return;
	case SEND_FAILED:
		hold(ns, s, 5000, "held: the sender could not start it");
		return;
	}
}

/*
 * Leases due deliveries into the free slots and starts them, at most
 * endpoint_cap of one endpoint running at once; *full 1 when every free
 * slot got one or a due delivery was left for its endpoint's cap (more
 * may be due: the next pass leases again soon).
 */
static void
lease_step(struct nstate *ns, int64_t now, int *full)
{
	static struct notify_delivery ds[SLOTS_MAX];
	static uint64_t	 busy[SLOTS_MAX];
	struct notify_cap cap = { endpoint_cap(ns), busy, 0, 0 };
	unsigned char	 token[NOTIFY_TOKEN_LEN];
	size_t		 i, j = 0, n, want;
	int64_t		 lease_ms;

	*full = 0;
	want = ns->cfg.webhook_concurrency - sender_active(ns->snd);
	if (ns->cfg.webhook_concurrency <= sender_active(ns->snd) ||
	    crypto_random(token, sizeof(token)) == -1)
		return;
	for (i = 0; i < SLOTS_MAX; i++)
		if (ns->slots[i].used)
			busy[cap.nbusy++] = ns->slots[i].d.endpoint_id;
	lease_ms = (int64_t)ns->cfg.webhook_timeout * 1000 + LEASE_MARGIN_MS;
	if (repo_notify_lease(ns->db, now, lease_ms, (unsigned)want, &cap,
	    token, ds, &n) != REPO_OK)
		return;
	ns->db_ok_at = now;
	*full = n == want || cap.skipped > 0;
	for (i = 0; i < n; i++) {
		while (j < SLOTS_MAX && ns->slots[j].used)
			j++;
		if (j == SLOTS_MAX)
			break;	/* cannot happen: want counted the free ones */
		ns->slots[j].used = 1;
		ns->slots[j].d = ds[i];
		memcpy(ns->slots[j].token, token, sizeof(token));
		dispatch(ns, &ns->slots[j]);
	}
}

/* Records every finished transfer; how many there were. */
static size_t
reap(struct nstate *ns)
{
	struct attempt	 a;
	char		 err[SEND_ERROR_MAX];
	size_t		 slot, n = 0;

	while (sender_done(ns->snd, &slot, &a, err, sizeof(err))) {
		n++;
		if (slot < SLOTS_MAX && ns->slots[slot].used)
			finish(ns, &ns->slots[slot], &a, err);
	}
	return n;
}

/*
 * Runs the transfers in flight without waiting and records those that
 * finished: between two tenants' outbox batches, each of which may wait
 * up to 1 s for a lock (repo_notify.c), so that an answer is recorded
 * long before its lease lapses however many tenants wait.
 */
static void
drive(struct nstate *ns)
{
	if (sender_active(ns->snd) == 0)
		return;
	if (sender_poll(ns->snd, NULL, 0, 0) == -1)
		log_error("notify: libcurl's multi interface failed");
	reap(ns);
}

/* The loopback endpoint's answers (listen.h). */
static unsigned
answer(void *arg, const char *path, struct buf *b)
{
	struct nstate	*ns = arg;
	int64_t		 now = clock_now_ms();
	int		 i;

	if (strcmp(path, "/healthz") == 0) {
		buf_puts(b, "ok\n");
		return 200;
	}
	if (strcmp(path, "/readyz") == 0) {
		if (now - ns->db_ok_at <= DB_STALE_MS) {
			buf_puts(b, "ready\n");
			return 200;
		}
		buf_puts(b, "not ready: no answer from the database\n");
		return 503;
	}
	if (strcmp(path, "/metrics") != 0) {
		buf_puts(b, "not found: /healthz, /readyz or /metrics\n");
		return 404;
	}
	buf_puts(b, "# HELP asyncexec_webhook_attempts_total Attempts this "
	    "sender finished, by what they led to.\n# TYPE "
	    "asyncexec_webhook_attempts_total counter\n");
	for (i = 0; i < R__MAX; i++)
		buf_printf(b, "asyncexec_webhook_attempts_total{result=\"%s\"} "
		    "%llu\n", result_labels[i],
		    (unsigned long long)ns->results[i]);
	buf_printf(b, "# TYPE asyncexec_webhook_created_total counter\n"
	    "asyncexec_webhook_created_total %llu\n"
	    "# TYPE asyncexec_webhook_inflight gauge\n"
	    "asyncexec_webhook_inflight %zu\n"
	    "# TYPE asyncexec_webhook_pending gauge\n"
	    "asyncexec_webhook_pending %llu\n"
	    "# TYPE asyncexec_webhook_oldest_pending_seconds gauge\n"
	    "asyncexec_webhook_oldest_pending_seconds %.3f\n"
	    "# TYPE asyncexec_webhook_dead gauge\n"
	    "asyncexec_webhook_dead %llu\n"
	    "# TYPE asyncexec_webhook_endpoints_disabled gauge\n"
	    "asyncexec_webhook_endpoints_disabled %llu\n"
	    "# TYPE asyncexec_webhook_outbox gauge\n"
	    "asyncexec_webhook_outbox %llu\n",
	    (unsigned long long)ns->created, sender_active(ns->snd),
	    (unsigned long long)ns->g.pending,
	    ns->g.oldest_ms ? (double)(now - ns->g.oldest_ms) / 1000 : 0.0,
	    (unsigned long long)ns->g.dead, (unsigned long long)ns->g.disabled,
	    (unsigned long long)ns->g.marked);
	return 200;
}

/*
 * Runs the transfers for up to timeout_ms, answering the loopback
 * endpoint meanwhile (listen.h): a wait its clients (or their deadlines)
 * end goes on, so that they never make the outbox be read more often;
 * the rest end it (a transfer's progress, the time).
 */
static void
wait_step(struct nstate *ns, int timeout_ms)
{
	struct pollfd	 pf[LISTEN_FDS_MAX];
	int64_t		 now, wake, until = clock_mono_ms() + timeout_ms;
	size_t		 i, n;
	int		 t, woke;

	do {
		n = listen_fds(&ns->lsn, pf, &wake);
		now = clock_mono_ms();
		t = until > now ? (int)(until - now) : 0;
		if (wake - now < t)
			t = wake > now ? (int)(wake - now) : 0;
		woke = t < until - now;		/* a deadline ends this wait */
		if (sender_poll(ns->snd, pf, n, t) == -1)
			log_error("notify: libcurl's multi interface failed");
		for (i = 0; i < n; i++)
			woke |= pf[i].revents != 0;
		listen_serve(&ns->lsn, answer, ns);
	} while (reap(ns) == 0 && woke && clock_mono_ms() < until);
}

/* One pass of the loop (see the top of the file). */
static void
pass(struct nstate *ns)
{
	int64_t	 now = clock_now_ms();
	int	 full = 0, more = 0;

	if (reload_flag) {
		reload_flag = 0;
		if (load(ns) == 0) {
			sender_set_opts(ns->snd, &ns->so);
			log_info("notify: configuration reloaded");
		}
		ns->eps_at = 0;
	}
	if (now - ns->eps_at >= ENDPOINTS_REFRESH_MS)
		(void)refresh_endpoints(ns, now);
	if (!stop_flag) {
		more = outbox_step(ns, now);
		/* a lease runs from when it is taken: the outbox step may have
		 * waited for locks (notify_lease) */
		lease_step(ns, clock_now_ms(), &full);
	}
	wait_step(ns, full || more ? BUSY_POLL_MS : IDLE_POLL_MS);
	if (ns->ngone > 0)
		gone_write(ns, clock_now_ms());
	if (now - ns->g_at >= GAUGES_REFRESH_MS) {
		ns->g_at = now;
		if (repo_notify_gauges(ns->db, &ns->g) == REPO_OK)
			ns->db_ok_at = now;
	}
}

/* Sets the handlers: SIGTERM, SIGINT stop; SIGHUP reloads. */
static void
signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* Opens what the loop needs; NOTIFY_EXIT_OK or the failure (logged). */
static enum notify_exit
start(struct nstate *ns)
{
	char	 err[256];

	if (load(ns) == -1)
		return NOTIFY_EXIT_CONFIG;
	if (listen_open(&ns->lsn, ns->cfg.notify_listen, err,
	    sizeof(err)) == -1) {
		log_error("notify: %s", err);
		return NOTIFY_EXIT_CONFIG;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (ns->db = repo_notify_open(&ns->cfg)) == NULL ||
	    (ns->snd = sender_new(&ns->so)) == NULL) {
		log_error("notify: out of memory starting");
		return NOTIFY_EXIT_FAILED;
	}
	return NOTIFY_EXIT_OK;
}

/*
 * Runs the sender until SIGTERM or SIGINT, then lets the running
 * transfers finish for at most webhook_timeout seconds (the rest are
 * sent again when their leases lapse). The exit status (notify.h).
 */
enum notify_exit
notify_run(const char *config_path)
{
	static struct nstate ns;
	enum notify_exit rc;
	int64_t		 deadline = 0;

	ns.path = config_path;
	ns.lsn.fd = -1;
	signals();
	if ((rc = start(&ns)) == NOTIFY_EXIT_OK) {
		log_info("notify: started, %u transfers at once, /metrics on %s",
		    ns.cfg.webhook_concurrency, ns.cfg.notify_listen);
		for (;;) {
			pass(&ns);
			if (!stop_flag)
				continue;
			if (deadline == 0)
				deadline = clock_mono_ms() +
				    (int64_t)ns.cfg.webhook_timeout * 1000;
			if (sender_active(ns.snd) == 0 ||
			    clock_mono_ms() >= deadline)
				break;
		}
		log_info("notify: stopped, %zu transfers left to their leases",
		    sender_active(ns.snd));
	}
	sender_free(ns.snd);
	repo_notify_close(ns.db);
	eplist_free(&ns.eps);
	eplist_free(&ns.eps_read);
	free(ns.flt.v);
	listen_close(&ns.lsn);
	explicit_bzero(ns.key, sizeof(ns.key));
	curl_global_cleanup();
	return rc;
}
