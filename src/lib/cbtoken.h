/*
 * cbtoken.h - the callback token: SECRET_LEN random bytes and, when they
 * fit, the facts of its claim sealed behind them, as one base64url text
 * of at most CBTOKEN_MAX characters.
 *
 * Only the SHA-256 of the whole token text is stored, and a callback
 * matches its claim only through that hash: a token whose facts were
 * altered matches nothing. The facts are not secret; they let a complete
 * answer with its status body from its one UPDATE (handlers/callbacks.c).
 * A token without facts (SECRET_B64_LEN characters) is the same as any
 * other; callbacks then read the row.
 *
 * lib layer: repo (claim makes tokens) and handlers (callbacks open them).
 */
#ifndef ASYNCEXEC_CBTOKEN_H
#define ASYNCEXEC_CBTOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "crypto.h"

#define CBTOKEN_MAX	128	/* characters (the contract's bound) */
#define CB_ROUTE_LEN	16	/* the route's digest in a token */

/* what a claim seals: all fixed while that claim is current */
struct cb_facts {
	uint64_t	 id;
	int64_t		 created_at, expires_at;	/* ms */
	int64_t		 not_before;	/* ms; 0: none */
	unsigned	 attempt;	/* this claim's */
	unsigned	 priority;
	unsigned char	 route[CB_ROUTE_LEN];	/* cb_route of the route */
	char		 cid[CID_MAX_LEN + 1];
};

/* what cbtoken_open found */
enum cbtoken_rc {
	CBT_SEALED,	/* well formed, with facts: *f holds them */
	CBT_PLAIN	/* no facts (or not a token of ours) */
};

void		 cb_route(const char *env, const char *svc, const char *op,
		    unsigned char out[CB_ROUTE_LEN]);
int		 cbtoken_valid(const char *);
int		 cbtoken_new(const struct cb_facts *, char out[CBTOKEN_MAX + 1],
		    unsigned char hash[SHA256_LEN]);
enum cbtoken_rc	 cbtoken_open(const char *, struct cb_facts *);

#endif
