/*
 * handlers.h - one handler per resource, and what they share.
 *
 * A handler fills struct resp and returns HERR_OK, or returns the error
 * whose problem document the worker writes. Handlers never see SQL or
 * FastCGI: they call the repository and the request/response API.
 *
 * handlers layer: the handlers and router.c.
 */
#ifndef ASYNCEXEC_HANDLERS_H
#define ASYNCEXEC_HANDLERS_H

#include "app.h"
#include "http.h"
#include "repo.h"

struct json_object;

enum herr	handle_submit(struct app *, struct req *, struct resp *);
enum herr	handle_poll(struct app *, struct req *, struct resp *);
enum herr	handle_cancel(struct app *, struct req *, struct resp *);
enum herr	handle_claim(struct app *, struct req *, struct resp *);
enum herr	handle_heartbeat(struct app *, struct req *, struct resp *);
enum herr	handle_complete(struct app *, struct req *, struct resp *);
enum herr	handle_fail(struct app *, struct req *, struct resp *);
enum herr	handle_cancelled(struct app *, struct req *, struct resp *);
enum herr	handle_healthz(struct app *, struct req *, struct resp *);
enum herr	handle_readyz(struct app *, struct req *, struct resp *);
enum herr	handle_readyz_detail(struct app *, struct req *, struct resp *);
enum herr	handle_metrics(struct app *, struct req *, struct resp *);
enum herr	handle_openapi(struct app *, struct req *, struct resp *);
enum herr	handle_list(struct app *, struct req *, struct resp *);
const char	*ops_unready(struct app *, struct repo_node *, int *version,
		    int *answered);

/* the operator dashboard (dash*.c): read-only HTML pages */
enum herr	handle_dash_css(struct app *, struct req *, struct resp *);
enum herr	handle_dash_health(struct app *, struct req *, struct resp *);
enum herr	handle_dash_routes(struct app *, struct req *, struct resp *);
enum herr	handle_dash_attention(struct app *, struct req *, struct resp *);
enum herr	handle_dash_tenants(struct app *, struct req *, struct resp *);
enum herr	handle_dash_webhooks(struct app *, struct req *, struct resp *);
enum herr	handle_dash_exec(struct app *, struct req *, struct resp *);
enum herr	handle_dash_keys(struct app *, struct req *, struct resp *);

/* view.c: the execution status body shared by poll, cancel, callbacks */
void		view_status(struct buf *, const struct exec_row *);
enum herr	view_json_body(struct app *, struct req *, struct resp *,
		    size_t limit, struct json_object **);
enum herr	view_find(struct app *, struct req *, struct exec_row *);
int		view_int_member(struct json_object *, const char *name,
		    int lo, int hi, int *);

#endif
