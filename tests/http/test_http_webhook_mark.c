/*
 * test_http_webhook_mark.c - the webhook outbox mark when no endpoint is enabled
 * anywhere (enum repo_mark, WEBHOOK_SEEN_MS): a worker that read so leaves the mark's
 * subquery out of its terminal transitions, and asyncexec-admin webhook add and enable
 * return only once no worker trusts that reading any more. So:
 *   - with no endpoint enabled, completes of the tenant are left unmarked, driven for
 *     longer than WEBHOOK_SEEN_MS, so that the workers that serve them read "none";
 *   - webhook add takes at least WEBHOOK_SEEN_MS, and every complete, fail and cancel
 *     of the tenant right after it is marked (a worker still trusting "none" would
 *     leave one unmarked);
 *   - after webhook disable and enable, the same for enable.
 * The endpoints other tests left enabled are disabled while it runs and enabled again
 * at the end; RESOURCE_LOCK asyncexec_notify keeps senders and the other webhook
 * tests away.
 */
#include "check.h"
#include "util/clock.h"
#include "webhook_admin.h"

#define BATCH	48	/* transitions after add / enable */

static struct fx F;
static char others[4096];	/* ids of the endpoints disabled here, "1,2" */

/* The tenant's terminal executions with the mark set. */
static long long
marked(void)
{
	return sqln("SELECT COUNT(*) FROM s2r_async_execution WHERE initiator_tenant_id = "
	    "'%s' AND status <> 'waiting_callback' AND notify = 1", F.tenant);
}

/* Completes executions of F for at least SECS seconds; their number. */
static int
complete_for(double secs)
{
	struct sub s;
	struct claim c;
	double t0 = ut_now_s();
	int n = 0;

	while (ut_now_s() - t0 < secs) {
		CHECK(fx_submit_claim(&F, "{\"m\":0}", &s, &c));
		CHECK_EQ_INT(fx_complete(&F, &c, "1"), 200);
		n++;
	}
	return n;
}

/*
 * BATCH executions claimed (and one submitted, for a cancel) before ENABLE (an admin
 * command line, timed); then ended at once: completes, a fail and the cancel. Each is
 * marked.
 */
static void
end_after(const char *enable)
{
	static struct claim c[BATCH];
	struct sub s, q;
	struct http_resp r;
	double t0;
	long long before = marked();

	for (int i = 0; i < BATCH; i++)
		CHECK(fx_submit_claim(&F, "{\"m\":1}", &s, &c[i]));
	CHECK(fx_submit_ok(&F, NULL, "{\"m\":2}", &q));
	t0 = ut_now_s();
	CHECK_EQ_INT(ADM("%s", enable), 0);
	CHECK(ut_now_s() - t0 >= WEBHOOK_SEEN_MS / 1000.0);
	printf("%s: %.2f s\n", enable, ut_now_s() - t0);
	for (int i = 0; i < BATCH - 1; i++)
		CHECK_EQ_INT(fx_complete(&F, &c[i], "2"), 200);
	CHECK_EQ_INT(fx_callback(F.bkey, c[BATCH - 1].id, "fail", c[BATCH - 1].token,
	    "{\"error\":{\"message\":\"no\"}}", &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(fx_cancel(&F, F.ckey, q.cid, q.token, &r), 200);
	http_resp_free(&r);
	CHECK_EQ_INT(marked() - before, BATCH + 1);
}

int
main(void)
{
	char cmd[160];
	long long id, m;
	int n;

	wa_init("http_webhook_mark");
	fx_setup(&F, "mark");
	snprintf(others, sizeof others, "%s", sql("SELECT GROUP_CONCAT(id) FROM "
	    "s2r_webhook_endpoint WHERE enabled = 1"));
	if (others[0] != '\0')
		sql("UPDATE s2r_webhook_endpoint SET enabled = 0 WHERE id IN (%s)", others);

	n = complete_for(2.0 * WEBHOOK_SEEN_MS / 1000.0);
	printf("no endpoint enabled: %d completes\n", n);
	CHECK_EQ_INT(marked(), 0);

	snprintf(cmd, sizeof cmd, "webhook add --tenant %s --url http://127.0.0.1:1/",
	    F.tenant);
	end_after(cmd);
	id = sqln("SELECT MAX(id) FROM s2r_webhook_endpoint WHERE tenant_id = '%s'",
	    F.tenant);
	CHECK(id > 0);

	CHECK_EQ_INT(ADM("webhook disable %lld", id), 0);
	m = marked();
	n = complete_for(2.0 * WEBHOOK_SEEN_MS / 1000.0);
	printf("disabled: %d completes\n", n);
	CHECK_EQ_INT(marked(), m);
	snprintf(cmd, sizeof cmd, "webhook enable %lld", id);
	end_after(cmd);

	CHECK_EQ_INT(ADM("webhook remove %lld", id), 0);
	if (others[0] != '\0')
		sql("UPDATE s2r_webhook_endpoint SET enabled = 1 WHERE id IN (%s)", others);
	fx_free(&F);
	wa_done();
	return check_done("http_webhook_mark");
}
