/*
 * quota.h - per-tenant quotas of open executions, as submit sees them.
 *
 * Each worker keeps, per tenant, the limit (asyncexec-admin tenant set
 * --max-open; 0 or no row: unlimited) and, for a limited tenant, the
 * count of its waiting executions, both read at most once per
 * cache_ttl_seconds (0: on every submit) and counted up by this worker's
 * own submits in between. So a limit, and the count, may lag by at most
 * the TTL: an execution finished elsewhere frees its slot within it, and
 * the workers together may admit more than the limit within one TTL.
 * Nothing is written per submit (no hot row); the count is an index
 * range of at most limit + 1 entries.
 *
 * handlers layer: the handlers and the worker (serve).
 */
#ifndef ASYNCEXEC_QUOTA_H
#define ASYNCEXEC_QUOTA_H

#include "app.h"
#include "http.h"

struct quota;

struct quota	*quota_new(unsigned ttl_seconds);
void		 quota_free(struct quota *);
enum herr	 quota_admit(struct app *, const char *tenant);
void		 quota_note(struct app *, const char *tenant);
unsigned	 quota_retry_after(const struct config *);

#endif
