/*
 * test_http_nginx.c - what nginx answers itself is in the contract's format too: methods
 * nginx refuses (TRACE), and the collection paths without a trailing slash, which nginx
 * used to answer with an HTML 301 to an absolute http:// URL. Never a redirect, never HTML.
 */
#include "check.h"
#include "fixture.h"

#include <string.h>

/* A problem+json answer with no-store, no Location header and no HTML. */
static void
check_problem(const char *method, const char *path, int status, const char *code)
{
	struct http_resp r;

	http_do(method, path, NULL, NULL, 0, &r);
	if (!expect_problem(&r, status, code))
		fprintf(stderr, "  ... for %s %s\n", method, path);
	CHECK(expect_problem(&r, status, code));
	CHECK(http_header(&r, "location") == NULL);
	CHECK(r.body == NULL || strstr(r.body, "<html") == NULL);
	http_resp_free(&r);
}

int
main(void)
{
	static const char *const collections[] = { "/v1/executions", "/v1/backend",
	    "/v1/callbacks", "/v1", NULL };
	size_t i;

	http_test_init();
	check_problem("TRACE", "/", 405, "method_not_allowed");
	check_problem("TRACE", "/v1/executions/a/b/c", 405, "method_not_allowed");
	for (i = 0; collections[i] != NULL; i++) {
		check_problem("GET", collections[i], 404, "not_found");
		check_problem("POST", collections[i], 404, "not_found");
	}
	return check_done("http_nginx");
}
