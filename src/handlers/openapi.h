/*
 * openapi.h - src/openapi.json, the OpenAPI 3.1 document of the API as
 * built, embedded at build time: CMake writes openapi.c from it, as it
 * writes migrations.c from sql/. Served by GET /v1/openapi.json.
 *
 * handlers layer: ops.c and the generated openapi.c.
 */
#ifndef ASYNCEXEC_OPENAPI_H
#define ASYNCEXEC_OPENAPI_H

#include <stddef.h>

extern const char	asyncexec_openapi[];	/* the file's bytes, then a NUL */
extern const size_t	asyncexec_openapi_len;	/* the file's size, without the NUL */

#endif
