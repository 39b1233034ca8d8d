/*
 * migrations.h - the sql/NNN_*.sql files, embedded at build time.
 *
 * repo layer: repo_admin.c, admin_exec.c and the generated migrations.c.
 */
#ifndef ASYNCEXEC_MIGRATIONS_H
#define ASYNCEXEC_MIGRATIONS_H

#include <stddef.h>

struct migration {
	int		 version;	/* NNN of the file name */
	const char	*name;
	const char	*sql;
	size_t		 len;
	int		 compat;	/* "-- compatible-from: N", 0: none */
};

extern const struct migration	asyncexec_migrations[];
extern const size_t		asyncexec_nmigrations;

#endif
