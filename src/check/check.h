/*
 * check.h - --check-config and `asyncexec-admin check` (check.c).
 *
 * check layer: admin and the entry points (main).
 */
#ifndef ASYNCEXEC_CHECK_H
#define ASYNCEXEC_CHECK_H

#include <stddef.h>

#include "repo_check.h"		/* CHECK_FCGI ... CHECK_NOTIFY */

struct config;

/*
 * A check of the program's own that a layer below check cannot make
 * (asyncexec-fcgi's stop deadline, src/serve): the line's name, and fn,
 * which puts the line's text in msg (size bytes) and answers 0 (ok) or
 * -1 (warn). Run on the parsed file, before the database checks.
 */
struct check_extra {
	const char	*what;
	int		(*fn)(const struct config *, char *msg, size_t size);
};

/* extra: NULL, or the program's own check */
int	check_run(const char *prog, unsigned who, const char *path,
	    const struct check_extra *extra);

#endif
