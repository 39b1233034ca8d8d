/*
 * repo_revoke.h - revoking a consumer key (asyncexec-admin key revoke)
 * together with what a dead lineage leaves waiting (sql/012): on a
 * handle of its own (struct rvdb), opened by the admin program only.
 * Results as repo.h says.
 *
 * repo layer: admin only, and the tests.
 */
#ifndef ASYNCEXEC_REPO_REVOKE_H
#define ASYNCEXEC_REPO_REVOKE_H

#include <stddef.h>
#include <stdint.h>

#include "repo.h"

struct config;
struct rvdb;

/* What repo_consumer_revoke did. */
struct revoke_outcome {
	uint64_t	 lineage;	/* the key's lineage (its first key) */
	unsigned long	 live;		/* 1: a key of the lineage is live */
	unsigned long	 failed;	/* waiting executions failed */
};

struct rvdb	*repo_revoke_open(const struct config *);
void		 repo_revoke_close(struct rvdb *);
enum repo_rc	 repo_consumer_revoke(struct rvdb *, uint64_t id, int64_t now,
		    struct revoke_outcome *);

#endif
