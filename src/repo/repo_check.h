/*
 * repo_check.h - the database half of --check-config (repo_check.c).
 *
 * repo layer: check.c and repo_check.c.
 */
#ifndef ASYNCEXEC_REPO_CHECK_H
#define ASYNCEXEC_REPO_CHECK_H

#include <stddef.h>

#include "valid.h"
#include "webhook.h"

struct config;
struct rchk;

/* which binary needs a privilege */
#define CHECK_FCGI	0x1
#define CHECK_EXPIRE	0x2
#define CHECK_ADMIN	0x4
#define CHECK_NOTIFY	0x8

enum probe_rc {
	PROBE_OK,		/* the privilege is held */
	PROBE_DENIED,		/* it is not */
	PROBE_NOTABLE,		/* the table does not exist */
	PROBE_ERR		/* something else failed */
};

/* a stored endpoint secret, still sealed (repo_check_sealed) */
struct repo_sealed {
	char		 tenant[TENANT_MAX_LEN + 1];
	unsigned char	 sealed[WEBHOOK_SEALED_MAX];
	size_t		 len;
};

struct repo_probe {
	const char	*table;
	const char	*priv;		/* SELECT, INSERT, UPDATE or DELETE */
	unsigned	 who;		/* CHECK_* mask */
};

const struct repo_probe *repo_check_probe_def(size_t);
struct rchk	*repo_check_open(const struct config *);
void		 repo_check_close(struct rchk *);
enum repo_rc	repo_check_connect(struct rchk *, unsigned *err);
enum repo_rc	repo_check_server(struct rchk *, char *, size_t);
enum probe_rc	repo_check_probe(struct rchk *, size_t, int behind,
		    unsigned *err);
const char	*repo_check_advice(unsigned err);
enum repo_rc	repo_check_grants(struct rchk *,
		    void (*)(void *, const char *), void *);
enum repo_rc	repo_check_schema(struct rchk *, int *version);
enum repo_rc	repo_check_sealed(struct rchk *, struct repo_sealed *,
		    size_t max, size_t *n);

#endif
