/*
 * app.h - the application context a worker hands to every handler: the
 * configuration, the repository handle, the caches and the poll-token
 * keys.
 *
 * http layer: the handlers and serve include it (not http.h, which stays
 * free of the crypto sizes).
 */
#ifndef ASYNCEXEC_APP_H
#define ASYNCEXEC_APP_H

#include <stdint.h>

#include "crypto.h"

struct config;
struct db;
struct ddb;
struct lookup;
struct quota;

struct app {
	const struct config	*cfg;
	struct db		*db;
	struct lookup		*lookup;	/* worker caches; may be NULL */
	struct quota		*quota;		/* tenant quotas; may be NULL */
	struct ddb		*dash;		/* the dashboard's handle, made
						 * on first use (dash_db); NULL */
	/* poll-token keys (lookup_idkey, re-read every cache TTL, and for
	 * a token of a version above idkey_top, the highest read, at most
	 * once a second: idkeys_forced, clock_mono_ms, 0 never): idkey
	 * (version idkey_version, the newest live one) seals new tokens,
	 * pkey[v] opens tokens of version v while live */
	unsigned char		 idkey[IDKEY_LEN];
	/* lookup_mark: no endpoint was enabled at hooks_read (clock_mono_ms,
	 * taken before the read; 0: never read) */
	int			 hooks_none;
	int64_t			 hooks_read;
	int			 idkey_ok;
	unsigned		 idkey_version;
	int64_t			 idkeys_read;	/* ms */
	unsigned		 idkey_top;
	int64_t			 idkeys_forced;
	struct {
		int		 present;
		unsigned char	 key[IDKEY_LEN];
		int64_t		 retire_at;	/* ms; 0: never */
	}			 pkey[POLL_KEY_VERSIONS];
};

#endif
