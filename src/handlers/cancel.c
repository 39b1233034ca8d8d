/*
 * cancel.c - POST /v1/executions/{env}/{svc}/{op}/{correlationId}/cancel
 *
 * Not claimed (or the lease lapsed): cancelled now, 200. Claimed: the
 * cancel request is recorded for the backend's next heartbeat, 202.
 * Terminal: 409 conflict with currentStatus. Same 404 rules as poll.
 */
#include "clock.h"
#include "handlers.h"
#include "lookup.h"

/* Re-reads execution id and answers with status (200/202) or 409. */
static enum herr
answer(struct app *app, struct resp *resp, uint64_t id, int status,
    int64_t now)
{
	struct exec_row	 r;
	int		 rc;

	if ((rc = repo_exec_by_id(app->db, id, now, &r)) != REPO_OK)
		return rc == REPO_ERR ? HERR_UNAVAILABLE : HERR_NOT_FOUND;
	if (status == 0) {
		resp->current_status = exec_status_name(r.status);
		resp->detail = "the execution has already ended";
		exec_row_free(&r);
		return HERR_CONFLICT;
	}
	view_status(&resp->body, &r);
	resp_json(resp, status);
	exec_row_free(&r);
	return HERR_OK;
}

enum herr
handle_cancel(struct app *app, struct req *req, struct resp *resp)
{
	struct exec_row	 r;
	enum herr	 e;
	int64_t		 now = clock_now_ms();
	uint64_t	 id;
	enum exec_status st;
	int		 rc;

	if ((e = view_find(app, req, &r)) != HERR_OK)
		return e;
	id = r.id;
	st = r.status;
	exec_row_free(&r);
	if (st != ST_WAITING)
		return answer(app, resp, id, 0, now);
	if ((rc = repo_exec_cancel(app->db, id, lookup_mark(app), now)) == REPO_OK)
		return answer(app, resp, id, 200, now);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	if ((rc = repo_exec_request_cancel(app->db, id, now)) == REPO_OK)
		return answer(app, resp, id, 202, now);
	if (rc == REPO_ERR)
		return HERR_UNAVAILABLE;
	return answer(app, resp, id, 0, now);
}
