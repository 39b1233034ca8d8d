/*
 * json.h - JSON validation, raw member spans and rendering helpers.
 *
 * Payloads are validated once and then kept as the bytes received: the
 * service never re-serializes a client's JSON. json_validate is a strict
 * RFC 8259 grammar scan (no NaN, Infinity or other json-c extension; raw
 * strings well-formed UTF-8 per RFC 3629, containers nested at most
 * max_json_depth deep), identical with every json-c; json-c parses only
 * when the caller asks for the tree.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_JSON_H
#define ASYNCEXEC_JSON_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct json_object;

#define RFC3339_LEN	24	/* 2026-11-30T02:20:37.123Z */

int	json_validate(const char *, size_t, unsigned depth,
	    struct json_object **out);
int	json_member(const char *, size_t, const char *key, const char **vp,
	    size_t *vn);
int	json_put_string(struct buf *, const char *);
void	json_time(int64_t ms, char out[RFC3339_LEN + 1]);

#endif
