/*
 * repo_rollup.h - the rollup of terminal outcomes per route (sql/013)
 * that asyncexec-expire adds to every run and the dashboard's Routes
 * page sums: on a handle of its own (struct odb, own statements, its
 * connection made on first use). Results as repo.h says; REPO_RETRY:
 * a deadlock or lock wait timeout undid the window, which may run again.
 *
 * repo layer: expire.c, repo_dash.c (the interval), and the tests.
 */
#ifndef ASYNCEXEC_REPO_ROLLUP_H
#define ASYNCEXEC_REPO_ROLLUP_H

#include <stdint.h>

#include "repo.h"

struct config;
struct odb;

#define ROLLUP_BUCKET_MIN	5		/* a row's interval, minutes */
#define ROLLUP_BUCKET_MS	(ROLLUP_BUCKET_MIN * 60000LL)
#define ROLLUP_LAG_MS		60000LL		/* counted up to now - this */
#define ROLLUP_WINDOW_MS	600000LL	/* a busy transaction's span */
#define ROLLUP_START_MS		86400000LL	/* a first count goes back a day */
#define ROLLUP_KEEP_MS		172800000LL	/* intervals kept: two days */

struct odb	*repo_rollup_open(const struct config *);
void		 repo_rollup_close(struct odb *);
enum repo_rc	 repo_rollup_window(struct odb *, int64_t now, uint64_t *counted,
		    int *more);
enum repo_rc	 repo_rollup_pending(struct odb *, int64_t now, uint64_t *n);
enum repo_rc	 repo_rollup_mark(struct odb *, int64_t now, int64_t *mark);
enum repo_rc	 repo_rollup_prune(struct odb *, int64_t now, uint64_t *deleted);

#endif
