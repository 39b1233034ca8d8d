/*
 * httpc.h - a tiny HTTP/1.1 client and helpers for the HTTP integration tests.
 *
 * Every request opens one TCP connection to ASYNCEXEC_TEST_HTTP ("127.0.0.1:PORT"),
 * sends "Connection: close" and reads the response until EOF (35 s receive timeout).
 * None of these functions uses check.h: they return a truth value and print the reason
 * for a mismatch to stderr, so callers wrap them in CHECK() and keep their own counters.
 */
#ifndef ASYNCEXEC_HTTPC_H
#define ASYNCEXEC_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <json-c/json.h>

struct http_hdr {
	char *name;
	char *value;
};

struct http_resp {
	int status;             /* 0 when the exchange failed */
	struct http_hdr *hdrs;
	size_t nhdrs;
	char *body;             /* always NUL-terminated (may contain NULs) */
	size_t body_len;
};

#if defined(__GNUC__)
#define HTTPC_SENTINEL __attribute__((sentinel))
#define HTTPC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HTTPC_SENTINEL
#define HTTPC_PRINTF(f, a)
#endif

/* ---- environment ------------------------------------------------------------------ */

/* Exits 1 with a message unless ASYNCEXEC_TEST_HTTP, _CONFIG and ASYNCEXEC_ADMIN are set. */
void http_test_init(void);
/* getenv() that exits 1 with a message when the variable is missing or empty. */
const char *test_env(const char *name);
/* Integer value of KEY in the test stack's config file, DFLT when absent. */
long config_long(const char *key, long dflt);
/* Unique, lower-case [a-z0-9-] name fragment for this process: "<pid>-<time>-<n>". */
const char *unique_suffix(void);

/* ---- HTTP --------------------------------------------------------------------------- */

/* Later requests go to HOSTPORT ("127.0.0.1:PORT"; NULL: ASYNCEXEC_TEST_HTTP again). */
void http_set_target(const char *hostport);
/* Later requests of the calling thread go to HOSTPORT, whatever http_set_target says
 * (NULL: back to http_set_target's choice). */
void http_set_thread_target(const char *hostport);
/* 0: later exchanges of the calling thread are not recorded (pages outside
 * src/openapi.json: the dashboard's HTML); 1: recorded again (the default). */
void http_set_record(int on);
/* Later requests are sent from local address IP (e.g. "127.0.0.3"; NULL: any). */
void http_set_source(const char *ip);
/* Returns 0 when a response was parsed, -1 otherwise (reason on stderr, out->status 0). */
int http_do(const char *method, const char *path, const char *const *headers,
    const char *body, size_t body_len, struct http_resp *out);
/* connect(2) of FD that an interrupting signal does not break (it waits for the
 * kernel's connect to finish); 0 when connected, -1 with errno. */
int httpc_connect_fd(int fd, const struct sockaddr *sa, socklen_t len);
/* First header NAME (case-insensitive), or NULL. */
const char *http_header(const struct http_resp *r, const char *name);
void http_resp_free(struct http_resp *r);

/*
 * A request with "Authorization: Bearer KEY" (KEY may be NULL) and, when BODY is not NULL,
 * "Content-Type: application/json". The varargs are further "Name: value" header lines,
 * terminated by NULL (NULL entries before the end are not possible: pass "" to skip).
 * Returns the response status (0 on failure).
 */
int api(const char *method, const char *path, const char *key, const char *body,
    struct http_resp *out, ...) HTTPC_SENTINEL;

/* ---- admin CLI ---------------------------------------------------------------------- */

/* Runs "$ASYNCEXEC_ADMIN --config $ASYNCEXEC_TEST_CONFIG <args>"; returns its first stdout
 * line (malloc'd) or NULL when it printed nothing. Exits 1 when the command fails. */
char *admin(const char *fmt, ...) HTTPC_PRINTF(1, 2);
/* Runs "$ASYNCEXEC_ADMIN --config CFG <args>" (CFG: any config file), its stdout and
 * stderr into OUT (SIZE bytes, cut, NUL-terminated). Results: its exit status, -1 when
 * it could not start or did not exit. */
int httpc_admin(const char *cfg, char *out, size_t size, const char *fmt, ...)
    HTTPC_PRINTF(4, 5);

/* ---- JSON --------------------------------------------------------------------------- */

/* Parsed response body (json_object_put() it), or NULL with a message on stderr. */
struct json_object *json_body(const struct http_resp *r);
/* Member at a dotted path ("error.code"), or NULL. Array elements: "executions.0.id". */
struct json_object *jget(struct json_object *o, const char *path);
/* String member, or NULL when missing or not a string. */
const char *jstr(struct json_object *o, const char *path);
/* 1 and *out when the member is a JSON integer, else 0. */
int jint(struct json_object *o, const char *path, int64_t *out);
/* 1 and *out when the member is a JSON boolean, else 0. */
int jbool(struct json_object *o, const char *path, int *out);
/* 1 when the member exists and is JSON null. */
int jnull(struct json_object *o, const char *path);
/* Length of the array member, -1 when missing or not an array. */
long jlen(struct json_object *o, const char *path);

/* ---- contract predicates (print the reason when false) ------------------------------ */

int is_rfc3339_ms(const char *s);           /* 2026-11-30T02:20:37.123Z */
int is_callback_token(const char *s);      /* 43..128 base64url chars, no padding */
int is_poll_token(const char *s);          /* 65: sealed id (22) + secret (43) */
int is_uuid(const char *s);                 /* 8-4-4-4-12 hex */
int is_digits(const char *s);               /* non-empty, only 0-9 */
/* Milliseconds since the epoch of an RFC 3339 UTC timestamp, -1 when malformed. */
int64_t rfc3339_ms(const char *s);
/* Exact status, with the body printed on mismatch. */
int expect_status(const struct http_resp *r, int status);
/* Status, Content-Type application/json, Cache-Control no-store. */
int expect_json(const struct http_resp *r, int status);
/* RFC 9457 problem: status, problem+json, no-store, type/title/status/detail/code. */
int expect_problem(const struct http_resp *r, int status, const char *code);
/* 401 unauthorized problem with "WWW-Authenticate: Bearer". */
int expect_unauthorized(const struct http_resp *r);
/* 409 conflict problem whose currentStatus member is CURRENT. */
int expect_conflict(const struct http_resp *r, const char *current);
/* Same status and byte-identical body. */
int same_response(const struct http_resp *a, const struct http_resp *b);
/* Body contains the exact byte string NEEDLE. */
int body_contains(const struct http_resp *r, const char *needle);

#endif
