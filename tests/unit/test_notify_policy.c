/*
 * Unit tests of the webhook sender's pure parts: the refused networks and
 * the allow list (notify/addr.c), the retry schedule, the decision an
 * attempt leads to, and the event body (notify/policy.c); the list of
 * endpoints by id and by tenant (notify/eplist.c).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "check.h"
#include "eplist.h"
#include "policy.h"

/* The range of text address s under allow list al (NULL: none). */
static enum addr_range
range_of(const char *s, const struct addr_allow *al)
{
	struct sockaddr_in	 a4;
	struct sockaddr_in6	 a6;

	memset(&a4, 0, sizeof(a4));
	memset(&a6, 0, sizeof(a6));
	if (inet_pton(AF_INET, s, &a4.sin_addr) == 1) {
		a4.sin_family = AF_INET;
		return addr_classify((struct sockaddr *)&a4, al);
	}
	if (inet_pton(AF_INET6, s, &a6.sin6_addr) == 1) {
		a6.sin6_family = AF_INET6;
		return addr_classify((struct sockaddr *)&a6, al);
	}
	return AR__MAX;
}

static void
ranges(void)
{
	static const struct { const char *a; enum addr_range r; } t[] = {
		{ "127.0.0.1", AR_LOOPBACK }, { "127.255.1.2", AR_LOOPBACK },
		{ "10.1.2.3", AR_PRIVATE }, { "172.16.0.1", AR_PRIVATE },
		{ "172.31.255.255", AR_PRIVATE }, { "172.32.0.1", AR_PUBLIC },
		{ "192.168.1.1", AR_PRIVATE }, { "100.64.0.1", AR_PRIVATE },
		{ "169.254.169.254", AR_LINK_LOCAL }, { "0.0.0.0", AR_UNSPECIFIED },
		{ "224.0.0.1", AR_MULTICAST }, { "255.255.255.255", AR_RESERVED },
		{ "8.8.8.8", AR_PUBLIC }, { "93.184.216.34", AR_PUBLIC },
		{ "::1", AR_LOOPBACK }, { "::", AR_UNSPECIFIED },
		{ "fe80::1", AR_LINK_LOCAL }, { "fc00::1", AR_UNIQUE_LOCAL },
		{ "fd12:3456::1", AR_UNIQUE_LOCAL }, { "ff02::1", AR_MULTICAST },
		{ "::ffff:127.0.0.1", AR_LOOPBACK }, { "::ffff:10.0.0.1", AR_PRIVATE },
		{ "::ffff:169.254.1.1", AR_LINK_LOCAL }, { "::127.0.0.1", AR_LOOPBACK },
		{ "::ffff:8.8.8.8", AR_PUBLIC }, { "2001:4860:4860::8888", AR_PUBLIC },
		/* NAT64 (RFC 6052), 6to4 and SIIT: the IPv4 inside decides */
		{ "64:ff9b::a00:1", AR_PRIVATE }, { "64:ff9b::7f00:1", AR_LOOPBACK },
		{ "64:ff9b::a9fe:a9fe", AR_LINK_LOCAL },
		{ "64:ff9b::808:808", AR_PUBLIC },
		{ "64:ff9b:1::808:808", AR_RESERVED },	/* local-use (RFC 8215) */
		{ "64:ff9b:1:ffff::1", AR_RESERVED },
		{ "2002:a00:1::1", AR_PRIVATE }, { "2002:7f00:1::", AR_LOOPBACK },
		{ "2002:808:808::1", AR_PUBLIC },
		{ "::ffff:0:7f00:1", AR_LOOPBACK }, { "::ffff:0:c0a8:101", AR_PRIVATE },
		{ "::ffff:0:808:808", AR_PUBLIC },
		/* Teredo (RFC 4380): reserved, as is 64:ff9b:1::/48 */
		{ "2001::1", AR_RESERVED }, { "2001:0:ffff:ffff::", AR_RESERVED },
		{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", AR_RESERVED },
		{ "2001:0:a00:1:0:f5ff:80ff:fffe", AR_RESERVED },
		{ "2001:1::1", AR_PUBLIC }, { "2000:ffff::1", AR_PUBLIC },
	};
	size_t	 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (range_of(t[i].a, NULL) != t[i].r)
			fprintf(stderr, "%s: %s\n", t[i].a,
			    addr_range_name(range_of(t[i].a, NULL)));
		CHECK(range_of(t[i].a, NULL) == t[i].r);
		CHECK(addr_refused(t[i].r) == (t[i].r != AR_PUBLIC));
	}
}

static void
allow_list(void)
{
	struct addr_allow al;
	char		 err[256];

	CHECK(addr_allow_parse("", &al, err, sizeof(err)) == ADDR_OK && al.n == 0);
	CHECK(addr_allow_parse("127.0.0.1/32, 10.0.0.0/8,fd00::/8", &al, err,
	    sizeof(err)) == ADDR_OK && al.n == 3);
	CHECK(range_of("127.0.0.1", &al) == AR_ALLOWED);
	CHECK(range_of("127.0.0.2", &al) == AR_LOOPBACK);
	CHECK(range_of("::ffff:127.0.0.1", &al) == AR_ALLOWED);
	CHECK(range_of("10.200.0.1", &al) == AR_ALLOWED);
	CHECK(range_of("fd00::5", &al) == AR_ALLOWED);
	CHECK(range_of("fc00::5", &al) == AR_UNIQUE_LOCAL);
	CHECK(range_of("64:ff9b::a00:5", &al) == AR_ALLOWED);
	CHECK(range_of("2002:7f00:1::", &al) == AR_ALLOWED);
	CHECK(range_of("64:ff9b::7f00:2", &al) == AR_LOOPBACK);
	CHECK(range_of("2001:0:4136:e378::1", &al) == AR_RESERVED);
	CHECK(addr_allow_parse("2001::/32", &al, err, sizeof(err)) == ADDR_OK);
	CHECK(range_of("2001:0:4136:e378::1", &al) == AR_ALLOWED);
	CHECK(addr_allow_parse("192.168.1.7", &al, err, sizeof(err)) == ADDR_OK);
	CHECK(range_of("192.168.1.7", &al) == AR_ALLOWED);
	CHECK(range_of("192.168.1.8", &al) == AR_PRIVATE);
	CHECK(addr_allow_parse("10.0.0.0/33", &al, err, sizeof(err)) == ADDR_BAD);
	CHECK(strstr(err, "10.0.0.0/8") != NULL);
	CHECK(addr_allow_parse("10.0.0.0/", &al, err, sizeof(err)) == ADDR_BAD);
	CHECK(addr_allow_parse("localhost", &al, err, sizeof(err)) == ADDR_BAD);
	CHECK(addr_allow_parse("10.0.0.0/8,", &al, err, sizeof(err)) == ADDR_BAD);
	CHECK(addr_allow_parse(",", &al, err, sizeof(err)) == ADDR_BAD);
	CHECK(addr_allow_parse("::1/129", &al, err, sizeof(err)) == ADDR_BAD);
}

static void
schedules(void)
{
	struct schedule	 s;
	char		 err[256];

	CHECK(schedule_parse("5,30,120", &s, err, sizeof(err)) == SCHEDULE_OK);
	CHECK(s.n == 3 && s.delay[0] == 5 && s.delay[2] == 120);
	CHECK(schedule_parse("", &s, err, sizeof(err)) == SCHEDULE_OK && s.n == 0);
	CHECK(schedule_parse("0", &s, err, sizeof(err)) == SCHEDULE_BAD);
	CHECK(schedule_parse("5,,6", &s, err, sizeof(err)) == SCHEDULE_BAD);
	CHECK(schedule_parse("5,", &s, err, sizeof(err)) == SCHEDULE_BAD);
	CHECK(schedule_parse("5 ,6", &s, err, sizeof(err)) == SCHEDULE_BAD);
	CHECK(schedule_parse("604801", &s, err, sizeof(err)) == SCHEDULE_BAD);
	CHECK(strstr(err, "604800") != NULL);
	CHECK(schedule_parse("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	    "1,1,1,1,1,1,1,1,1", &s, err, sizeof(err)) == SCHEDULE_BAD);
	/* the default: 10 retries, their sum about a day */
	CHECK(schedule_parse("5,30,120,600,1800,3600,7200,14400,28800,28800",
	    &s, err, sizeof(err)) == SCHEDULE_OK && s.n == 10);
}

static void
decisions(void)
{
	struct schedule	 s;
	struct attempt	 a = { AC_FAILED, 500, -1 };
	char		 err[64];
	int64_t		 due, now = 1000000;
	uint32_t	 r;

	schedule_parse("10,100", &s, err, sizeof(err));
	CHECK(policy_decide(&s, 1, &a, 0, now, &due) == NST_RETRY);
	CHECK_EQ_INT(due, now + 8000);			/* 80 % */
	CHECK(policy_decide(&s, 1, &a, 40, now, &due) == NST_RETRY);
	CHECK_EQ_INT(due, now + 12000);			/* 120 % */
	for (r = 0; r < 1000; r += 7) {
		policy_decide(&s, 2, &a, r, now, &due);
		CHECK(due >= now + 80000 && due <= now + 120000);
	}
	CHECK(policy_decide(&s, 3, &a, 0, now, &due) == NST_DEAD);
	a.status = 429;
	a.retry_after = 3600;
	CHECK(policy_decide(&s, 1, &a, 0, now, &due) == NST_RETRY);
	CHECK_EQ_INT(due, now + 3600000);		/* Retry-After wins */
	a.retry_after = 1;
	policy_decide(&s, 1, &a, 0, now, &due);
	CHECK_EQ_INT(due, now + 8000);			/* the schedule's is longer */
	a.status = 503;
	a.retry_after = 10 * 86400;
	policy_decide(&s, 1, &a, 0, now, &due);
	CHECK_EQ_INT(due, now + (int64_t)RETRY_AFTER_MAX * 1000);
	a.cls = AC_DELIVERED;
	CHECK(policy_decide(&s, 1, &a, 0, now, &due) == NST_DELIVERED);
	a.cls = AC_GONE;
	CHECK(policy_decide(&s, 1, &a, 0, now, &due) == NST_DEAD);
	a.cls = AC_REFUSED;
	CHECK(policy_decide(&s, 1, &a, 0, now, &due) == NST_DEAD);
	CHECK(policy_class(200) == AC_DELIVERED && policy_class(299) ==
	    AC_DELIVERED && policy_class(204) == AC_DELIVERED);
	CHECK(policy_class(410) == AC_GONE && policy_class(302) == AC_FAILED &&
	    policy_class(300) == AC_FAILED && policy_class(500) == AC_FAILED);
}

static void
bodies(void)
{
	struct notify_exec x;
	struct json_object *o, *d, *v;
	char		 out[NOTIFY_BODY_MAX + 1];
	size_t		 len;

	memset(&x, 0, sizeof(x));
	strcpy(x.env, "prod");
	strcpy(x.svc, "billing");
	strcpy(x.op, "charge");
	strcpy(x.cid, "order-\"42\"");
	x.ev = NEV_FAILED;
	x.completed_at = 1764547200123LL;
	CHECK(event_body(&x, out, sizeof(out), &len) == 0 && len == strlen(out));
	CHECK((o = json_tokener_parse(out)) != NULL);
	CHECK(json_object_object_get_ex(o, "type", &v) &&
	    strcmp(json_object_get_string(v), "execution.failed") == 0);
	CHECK(json_object_object_get_ex(o, "timestamp", &v) &&
	    strcmp(json_object_get_string(v), "2025-12-01T00:00:00.123Z") == 0);
	CHECK(json_object_object_get_ex(o, "data", &d));
	CHECK(json_object_object_get_ex(d, "correlationId", &v) &&
	    strcmp(json_object_get_string(v), "order-\"42\"") == 0);
	CHECK(json_object_object_get_ex(d, "status", &v) &&
	    strcmp(json_object_get_string(v), "failed") == 0);
	CHECK(json_object_object_get_ex(d, "statusUrl", &v) &&
	    strcmp(json_object_get_string(v),
	    "/v1/executions/prod/billing/charge/order-\"42\"") == 0);
	CHECK(json_object_object_get_ex(d, "environment", &v) &&
	    json_object_object_get_ex(d, "service", &v) &&
	    json_object_object_get_ex(d, "operation", &v) &&
	    json_object_object_get_ex(d, "completedAt", &v));
	json_object_put(o);
	CHECK(event_body(&x, out, 40, &len) == -1);
}

/* A transfer's time limit: webhook_timeout, cut so it ends before its
 * lease with room to record it; none when too little is left. */
static void
transfer_limits(void)
{
	int64_t	 now = 1000000;

	/* a lease just taken (webhook_timeout + 5 s left): webhook_timeout */
	CHECK_EQ_INT(policy_transfer_ms(now + 15000 + 5000, now, 15), 15000);
	CHECK_EQ_INT(policy_transfer_ms(now + 300000 + 5000, now, 300),
	    300000);
	/* the lease taken 4 s ago (a statement waited): what is left less the
	 * margin to record the answer */
	CHECK_EQ_INT(policy_transfer_ms(now + 15000 + 1000, now, 15),
	    16000 - POLICY_RECORD_MS);
	CHECK(policy_transfer_ms(now + 16000, now, 15) < 15000);
	CHECK(now + policy_transfer_ms(now + 16000, now, 15) +
	    POLICY_RECORD_MS <= now + 16000);
	/* too little left: not started (0) */
	CHECK_EQ_INT(policy_transfer_ms(now + POLICY_RECORD_MS +
	    POLICY_TRANSFER_MIN_MS - 1, now, 15), 0);
	CHECK_EQ_INT(policy_transfer_ms(now + POLICY_RECORD_MS +
	    POLICY_TRANSFER_MIN_MS, now, 15), POLICY_TRANSFER_MIN_MS);
	CHECK_EQ_INT(policy_transfer_ms(now, now, 15), 0);
	CHECK_EQ_INT(policy_transfer_ms(now - 60000, now, 15), 0);
}

/* eplist: endpoints found by id, grouped by tenant, however many. */
static void
endpoint_list(void)
{
	static const char *const tenants[] = { "b", "a", "b", "c", "a" };
	struct eplist	 l;
	size_t		 i, j, n = 5000;
	int		 on;

	memset(&l, 0, sizeof(l));
	CHECK(eplist_find(&l, 1) == NULL);
	CHECK((l.ep.v = calloc(n, sizeof(*l.ep.v))) != NULL);
	if (l.ep.v == NULL)
		return;
	for (i = 0; i < n; i++) {	/* ids 1..n; 3 and 4 disabled */
		l.ep.v[i].id = i + 1;
		strcpy(l.ep.v[i].tenant, i < 5 ? tenants[i] : "d");
		l.ep.v[i].enabled = i != 2 && i != 3;
	}
	l.ep.n = l.ep.cap = n;
	CHECK(eplist_group(&l) == 0);
	CHECK(eplist_find(&l, 3) != NULL && eplist_find(&l, 3)->id == 3);
	CHECK(eplist_find(&l, 4321) != NULL &&
	    eplist_find(&l, 4321)->id == 4321);
	CHECK(eplist_find(&l, n + 1) == NULL);
	/* the groups in tenant order: a (2, 5), b (1, 3), c (4: disabled),
	 * d (the other 4995) */
	CHECK_EQ_INT(j = eplist_tenant_end(&l, 0, &on), 2);
	CHECK(on == 1 && strcmp(l.by_tenant[0]->tenant, "a") == 0);
	CHECK_EQ_INT(j = eplist_tenant_end(&l, j, &on), 4);
	CHECK(on == 1 && strcmp(l.by_tenant[2]->tenant, "b") == 0);
	CHECK_EQ_INT(j = eplist_tenant_end(&l, j, &on), 5);
	CHECK(on == 0 && l.by_tenant[4]->id == 4);
	CHECK_EQ_INT(eplist_tenant_end(&l, j, &on), n);
	CHECK(on == 1);
	eplist_free(&l);
	CHECK(l.ep.v == NULL && l.by_tenant == NULL);
	/* the sender holds every endpoint twice (a refresh reads into the
	 * second list): its URL is not kept in a NOTIFY_URL_MAX array */
	CHECK(sizeof(struct notify_endpoint) < 1024);
}

int
main(void)
{
	ranges();
	allow_list();
	schedules();
	decisions();
	bodies();
	transfer_limits();
	endpoint_list();
	return check_done("unit_notify_policy");
}
