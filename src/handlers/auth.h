/*
 * auth.h - API key authentication ("Authorization: Bearer ak_/bk_...").
 *
 * handlers layer: the handlers.
 */
#ifndef ASYNCEXEC_AUTH_H
#define ASYNCEXEC_AUTH_H

#include "http.h"
#include "repo.h"

enum key_kind { KEY_CONSUMER, KEY_BACKEND };

enum herr	auth_key(struct app *, const struct req *, enum key_kind,
		    struct key_row *, unsigned char hash[SHA256_LEN]);
void		auth_lineage(const struct key_row *,
		    unsigned char out[SHA256_LEN]);

#endif
