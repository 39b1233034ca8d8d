/*
 * check.h - --check-config and `asyncexec-admin check` (check.c).
 *
 * check layer: admin and the entry points (main).
 */
#ifndef ASYNCEXEC_CHECK_H
#define ASYNCEXEC_CHECK_H

#include "repo_check.h"		/* CHECK_FCGI ... CHECK_NOTIFY */

int	check_run(const char *prog, unsigned who, const char *path);

#endif
