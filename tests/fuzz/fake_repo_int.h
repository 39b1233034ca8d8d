/*
 * fake_repo_int.h - the in-memory table that the parts of the fake
 * repository share: included by fake_repo.c and fake_repo_backend.c
 * only. fuzz_request.c and everything else use fake_repo.h.
 *
 * fake_repo.c owns the table (seeding, lookups, the consumer's and the
 * service's calls); fake_repo_backend.c holds the backend's calls
 * (claim, heartbeat, the callbacks' writes).
 */
#ifndef ASYNCEXEC_FAKE_REPO_INT_H
#define ASYNCEXEC_FAKE_REPO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "repo.h"

#define NEXEC	8

struct fexec {
	int		 used;
	struct exec_row	 row;		/* result/error owned here */
	unsigned char	 cb_hash[SHA256_LEN];
	int		 has_cb;
	int64_t		 lease_until;
	int64_t		 not_before;	/* a retry's time; 0: none */
	unsigned char	 win_hash[SHA256_LEN];
	int		 has_win;
	char		*request;
	size_t		 request_len;
};

extern struct fexec	 fake_tab[NEXEC];

int		 fake_failing(void);
char		*fake_dup(const char *, size_t);
struct fexec	*fake_by_id(uint64_t);

#endif
