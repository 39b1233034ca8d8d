/*
 * api.h - the limits of the API and of the configuration, named once.
 *
 * The handlers check against them and build their error texts from them
 * (API_STR), the row structs size their buffers with them, config.c and
 * master.c share the workers' bound. Plain integer literals, so that
 * API_STR spells them.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_API_H
#define ASYNCEXEC_API_H

#define API_STR_(x)	#x
#define API_STR(x)	API_STR_(x)

#define LEASE_MIN_SECONDS	5	/* leaseSeconds of claim and heartbeat */
#define LEASE_MAX_SECONDS	3600
#define CLAIM_MAX		100	/* executions one claim takes at most */
#define LIST_MAX		100	/* items a page holds at most */
/* index entries a rotated key's list page reads per item it may hold */
#define LIST_SCAN_OF		5
#define PROGRESS_MAX_BYTES	16384	/* a heartbeat's progress */
#define CID_MAX_LEN		128	/* X-Correlation-Id */
#define WORKERS_MAX		1024	/* workers = N, and what the master forks */
#define DELAY_MAX_SECONDS	2592000	/* X-Delay-Seconds (30 days) */
#define PRIORITY_MAX		9	/* X-Priority 0..PRIORITY_MAX */
/* how far a submitting host's clock may run ahead of a claiming host's
 * (or a clock step back) with work submitted without a start still
 * claimable at once */
#define CLAIM_CLOCK_SKEW_MS	5000

#endif
