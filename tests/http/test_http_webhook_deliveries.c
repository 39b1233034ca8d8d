/*
 * test_http_webhook_deliveries.c - asyncexec-admin webhook deliveries | replay | remove
 * against the test stack's database, with delivery rows written here (one for a real
 * execution, so its correlation id shows): deliveries lists the newest first, by state
 * with --status, never a body; replay of a dead or delivered delivery makes it pending,
 * attempts 0, due now, with the same webhook_id and body, and refuses a pending or
 * leased one; replay --endpoint --since (an offset and a fraction) takes exactly the
 * finished ones created since; remove takes the endpoint's deliveries along.
 */
#include "check.h"
#include "webhook_admin.h"

#define NDL	5
#define HEADER	"id\texecution_id\tcorrelation_id\twebhook_id\tevent\tstate\tattempts\t" \
		"last_status\tlast_error\tdue_at\tcreated_at\tdelivered_at\n"

/* The rows written: webhook ids, states and ages (minutes), newest first in listing. */
static const struct {
	const char	*event, *state;
	int		 attempts, age_min, status;
	const char	*error;
} rows[NDL] = {
	{ "completed", "delivered", 1, 180, 200, NULL },
	{ "failed", "dead", 10, 120, 500, "HTTP 500\tfrom the receiver" },
	{ "expired", "pending", 2, 60, 503, "HTTP 503" },
	{ "cancelled", "leased", 3, 30, -1, NULL },
	{ "completed", "dead", 10, 7200, -1, "could not resolve the host" },
};

static char wid[NDL][64];	/* their webhook ids */
static int64_t did[NDL];	/* their ids */

/* Writes the rows for endpoint EP, the first for execution EXEC (the others for ids no
 * execution has); pending and leased ones are due tomorrow (no sender takes them). */
static void
write_rows(int64_t ep, int64_t exec)
{
	char q[1024], status[16], error[128];

	for (int i = 0; i < NDL; i++) {
		snprintf(wid[i], sizeof wid[i], "msg_wa%d_%s", i, unique_suffix());
		snprintf(status, sizeof status, "%d", rows[i].status);
		snprintf(error, sizeof error, "'%s'", rows[i].error ? rows[i].error : "");
		snprintf(q, sizeof q, "INSERT INTO s2r_webhook_delivery (endpoint_id, "
		    "execution_id, webhook_id, event, body, state, attempts, due_at, "
		    "lease_token, last_status, last_error, created_at, updated_at, "
		    "delivered_at) VALUES (%lld, %lld, '%s', '%s', '{\"n\":%d}', '%s', %d, "
		    "UTC_TIMESTAMP(3) + INTERVAL %d MINUTE, %s, %s, %s, UTC_TIMESTAMP(3) - "
		    "INTERVAL %d MINUTE, UTC_TIMESTAMP(3), %s)", (long long)ep,
		    i == 0 ? (long long)exec : 900000000000LL + i, wid[i], rows[i].event, i,
		    rows[i].state, rows[i].attempts, i == 2 || i == 3 ? 1440 : -rows[i].age_min,
		    i == 3 ? "UNHEX('00112233445566778899aabbccddeeff')" : "NULL",
		    rows[i].status < 0 ? "NULL" : status, rows[i].error ? error : "NULL",
		    rows[i].age_min, i == 0 ? "UTC_TIMESTAMP(3) - INTERVAL 179 MINUTE" : "NULL");
		sidedb_exec(m, q);
		did[i] = sqln("SELECT id FROM s2r_webhook_delivery WHERE webhook_id = '%s'",
		    wid[i]);
		CHECK(did[i] > 0);
	}
}

/* The position of webhook id I in out, or NULL. */
static const char *
at(int i)
{
	return strstr(out, wid[i]);
}

/* deliveries: text (newest first, control characters shown as spaces), --status,
 * --json; an unknown endpoint is exit 1. */
static void
test_list(int64_t ep, const char *cid)
{
	struct json_object *o, *e;
	int64_t v;

	CHECK_EQ_INT(ADM("webhook deliveries %lld", (long long)ep), 0);
	CHECK(strncmp(out, HEADER, strlen(HEADER)) == 0);
	CHECK(at(3) && at(2) && at(1) && at(0) && at(4));
	CHECK(at(3) < at(2) && at(2) < at(1) && at(1) < at(0) && at(0) < at(4));
	CHECK(strstr(out, "\tfailed\tdead\t10\t500\tHTTP 500 from the receiver\t") != NULL);
	CHECK(strstr(out, cid) != NULL && strstr(out, "{\"n\"") == NULL);	/* no body */
	CHECK_EQ_INT(ADM("webhook deliveries %lld --status dead --json", (long long)ep), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_array_length(o) == 2);
	e = by_id(o, did[1]);
	CHECK(jint(e, "last_status", &v) && v == 500 && jint(e, "attempts", &v) && v == 10);
	CHECK_EQ_STR(jstr(e, "webhook_id"), wid[1]);
	CHECK_EQ_STR(jstr(e, "event"), "failed");
	CHECK(jnull(e, "correlation_id") && jnull(e, "delivered_at") &&
	    is_rfc3339_ms(jstr(e, "due_at")));
	CHECK(jnull(by_id(o, did[4]), "last_status"));
	json_object_put(o);
	CHECK_EQ_INT(ADM("webhook deliveries --json --status pending %lld", (long long)ep), 0);
	o = parse_out();
	CHECK(o != NULL && json_object_array_length(o) == 1 && by_id(o, did[2]) != NULL);
	json_object_put(o);
	CHECK_EQ_INT(ADM("webhook deliveries --json %lld", (long long)ep), 0);
	o = parse_out();
	e = by_id(o, did[0]);
	CHECK_EQ_STR(jstr(e, "correlation_id"), cid);
	CHECK(jint(e, "execution_id", &v) && v > 0 && is_rfc3339_ms(jstr(e, "delivered_at")));
	CHECK(o != NULL && json_object_array_length(o) == NDL);
	json_object_put(o);
	CHECK_EQ_INT(ADM("webhook deliveries 999999999999"), 1);
	CHECK(strstr(err, "no webhook endpoint 999999999999") != NULL && out[0] == '\0');
}

/* Delivery I's "state attempts due-in-seconds lease delivered webhook_id body". */
static const char *
row(int i)
{
	return sql("SELECT CONCAT_WS(' ', state, attempts, TIMESTAMPDIFF(SECOND, "
	    "UTC_TIMESTAMP(3), due_at) BETWEEN -30 AND 1, lease_token IS NULL, "
	    "delivered_at IS NULL, webhook_id, body) FROM s2r_webhook_delivery WHERE id = %lld",
	    (long long)did[i]);
}

/* replay ID: dead and delivered ones pending again, due now, same id and body; a pending
 * or leased one and an unknown id refused. */
static void
test_replay_one(int64_t ep)
{
	struct json_object *o;
	char want[200], before[2][300];
	int64_t v;

	snprintf(before[0], sizeof before[0], "%s", row(2));
	snprintf(before[1], sizeof before[1], "%s", row(3));
	CHECK_EQ_INT(ADM("webhook replay %lld", (long long)did[1]), 0);
	CHECK(strstr(out, "replayed") != NULL && strstr(out, wid[1]) != NULL);
	snprintf(want, sizeof want, "pending 0 1 1 1 %s {\"n\":1}", wid[1]);
	CHECK_EQ_STR(row(1), want);
	CHECK_EQ_INT(ADM("webhook replay --json %lld", (long long)did[0]), 0);
	o = parse_out();
	CHECK(jint(o, "id", &v) && v == did[0] && jint(o, "endpoint_id", &v) && v == ep);
	json_object_put(o);
	snprintf(want, sizeof want, "pending 0 1 1 1 %s {\"n\":0}", wid[0]);
	CHECK_EQ_STR(row(0), want);
	CHECK_EQ_INT(ADM("webhook replay %lld", (long long)did[2]), 1);
	CHECK(strstr(err, "is pending, not delivered or dead") != NULL);
	CHECK_EQ_INT(ADM("webhook replay %lld", (long long)did[3]), 1);
	CHECK(strstr(err, "is leased") != NULL);
	CHECK_EQ_STR(row(2), before[0]);
	CHECK_EQ_STR(row(3), before[1]);
	CHECK_EQ_INT(ADM("webhook replay 999999999999"), 1);
	CHECK(strstr(err, "no webhook delivery 999999999999") != NULL);
}

/* TIME ago (MINUTES) as RFC 3339 with offset +02:00, or with a fraction and Z. */
static void
ago(char *buf, size_t n, int minutes, int offset)
{
	time_t t = time(NULL) - minutes * 60 + (offset ? 7200 : 0);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, offset ? "%Y-%m-%dT%H:%M:%S+02:00" : "%Y-%m-%dT%H:%M:%S.250Z", &tm);
}

/* replay --endpoint --since: exactly the finished deliveries created since then. */
static void
test_replay_since(int64_t ep)
{
	struct json_object *o;
	char t[64], want[200];
	int64_t v;

	sql("UPDATE s2r_webhook_delivery SET state = 'delivered', attempts = 1, delivered_at "
	    "= UTC_TIMESTAMP(3), due_at = UTC_TIMESTAMP(3) - INTERVAL 1 HOUR WHERE id = %lld",
	    (long long)did[0]);
	sql("UPDATE s2r_webhook_delivery SET state = 'dead', attempts = 10, due_at = "
	    "UTC_TIMESTAMP(3) - INTERVAL 1 HOUR WHERE id = %lld", (long long)did[1]);
	ago(t, sizeof t, 150, 1);	/* after 0 (180 min ago), before 1 (120) */
	CHECK_EQ_INT(ADM("webhook replay --endpoint %lld --since %s", (long long)ep, t), 0);
	CHECK(strncmp(out, "1 delivered or dead deliveries", 30) == 0);
	snprintf(want, sizeof want, "pending 0 1 1 1 %s {\"n\":1}", wid[1]);
	CHECK_EQ_STR(row(1), want);
	CHECK(strncmp(row(0), "delivered 1 0 1 0 ", 18) == 0);
	CHECK(strncmp(row(4), "dead 10 0 1 1 ", 14) == 0);
	ago(t, sizeof t, 10 * 1440, 0);	/* 0 and 4 (1 is pending now) */
	CHECK_EQ_INT(ADM("webhook replay --since %s --json --endpoint %lld", t, (long long)ep),
	    0);
	o = parse_out();
	CHECK(jint(o, "endpoint_id", &v) && v == ep && jint(o, "replayed", &v) && v == 2);
	json_object_put(o);
	CHECK(strncmp(row(0), "pending 0 1 1 1 ", 16) == 0);
	CHECK(strncmp(row(4), "pending 0 1 1 1 ", 16) == 0);
	CHECK(strncmp(row(3), "leased 3 0 0 1 ", 15) == 0);
	CHECK_EQ_INT(ADM("webhook replay --endpoint %lld --since %s", (long long)ep, t), 0);
	CHECK(strncmp(out, "0 delivered or dead", 19) == 0);
	CHECK_EQ_INT(ADM("webhook replay --endpoint 999999999999 --since %s", t), 1);
	CHECK(strstr(err, "no webhook endpoint 999999999999") != NULL);
	/* a disabled endpoint's replay is held by the sender: said so */
	sql("UPDATE s2r_webhook_delivery SET state = 'dead' WHERE id = %lld",
	    (long long)did[4]);
	CHECK_EQ_INT(ADM("webhook disable %lld", (long long)ep), 0);
	CHECK_EQ_INT(ADM("webhook replay %lld", (long long)did[4]), 0);
	CHECK(strstr(err, "is disabled") != NULL && strstr(err, "webhook enable") != NULL);
	CHECK_EQ_INT(ADM("webhook enable %lld", (long long)ep), 0);
}

/* remove: the endpoint and all its deliveries, in one step. */
static void
test_remove(int64_t ep)
{
	char want[64];

	CHECK_EQ_INT(sqln("SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = "
	    "%lld", (long long)ep), NDL);
	CHECK_EQ_INT(ADM("webhook remove %lld", (long long)ep), 0);
	snprintf(want, sizeof want, "with its %d deliveries", NDL);
	CHECK(strstr(out, want) != NULL);
	CHECK_EQ_INT(sqln("SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = "
	    "%lld", (long long)ep), 0);
	CHECK_EQ_INT(sqln("SELECT COUNT(*) FROM s2r_webhook_endpoint WHERE id = %lld",
	    (long long)ep), 0);
	CHECK_EQ_INT(ADM("webhook deliveries %lld", (long long)ep), 1);
	CHECK(strstr(err, "no webhook endpoint") != NULL);
}

int
main(void)
{
	struct fx f;
	struct sub s;
	char cid[CID_MAX];
	int64_t ep, exec;

	wa_init("http_webhook_deliveries");
	fx_setup(&f, "webhook-dl");
	fx_cid(cid, sizeof cid, "wh");
	CHECK(fx_submit_ok(&f, cid, "{\"x\":1}", &s));
	exec = sqln("SELECT id FROM s2r_async_execution WHERE initiator_tenant_id = '%s' AND "
	    "correlation_id = '%s'", f.tenant, cid);
	CHECK(exec > 0);
	CHECK_EQ_INT(ADM("webhook add --tenant %s --url https://dl.example.invalid/h",
	    f.tenant), 0);
	ep = strtoll(field("id"), NULL, 10);
	CHECK(ep > 0);
	write_rows(ep, exec);
	test_list(ep, cid);
	test_replay_one(ep);
	test_replay_since(ep);
	test_remove(ep);
	fx_free(&f);
	wa_done();
	return check_done("http_webhook_deliveries");
}
