/*
 * valid.h - input validation for every field a client or operator sends.
 *
 * Each predicate returns 1 when the input is acceptable, 0 otherwise.
 * None allocates.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_VALID_H
#define ASYNCEXEC_VALID_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

#define NAME_MAX_LEN	64	/* environment, service, operation */
#define TENANT_MAX_LEN	64
#define LABEL_MAX_LEN	128	/* bytes of a key's label */

int	valid_name(const char *);
int	valid_tenant(const char *);
int	valid_label(const char *);
int	valid_utf8(const char *);
int	valid_correlation_id(const char *);
int	valid_new_correlation_id(const char *);
int	valid_secret(const char *, const char *prefix);
int	valid_exec_id(const char *, uint64_t *);
int	valid_json_content_type(const char *);
int	valid_route_triple(const char *, char env[NAME_MAX_LEN + 1],
	    char svc[NAME_MAX_LEN + 1], char op[NAME_MAX_LEN + 1]);
const char *valid_bearer(const char *authorization);

#endif
