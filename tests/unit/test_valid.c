/* Unit tests: validation of every input field (valid.c). */
#include <string.h>

#include "check.h"
#include "valid.h"

static void
names(void)
{
	char	 long64[65], long65[66];

	memset(long64, 'a', 64);
	long64[64] = '\0';
	memset(long65, 'a', 65);
	long65[65] = '\0';
	CHECK(valid_name("prod"));
	CHECK(valid_name("0a.b_c-d"));
	CHECK(valid_name(long64));
	CHECK(!valid_name(long65));
	CHECK(!valid_name(""));
	CHECK(!valid_name(NULL));
	CHECK(!valid_name("Prod"));
	CHECK(!valid_name("-a"));
	CHECK(!valid_name(".a"));
	CHECK(!valid_name("a b"));
	CHECK(!valid_name("a/b"));
	CHECK(!valid_name("a%20"));
}

static void
tenants_and_ids(void)
{
	char	 c128[129], c129[130];
	uint64_t v = 0;

	memset(c128, 'Z', 128);
	c128[128] = '\0';
	memset(c129, 'Z', 129);
	c129[129] = '\0';
	CHECK(valid_tenant("Acme_1.x-y"));
	CHECK(!valid_tenant(""));
	CHECK(!valid_tenant("a:b"));
	CHECK(!valid_tenant(c128));
	CHECK(valid_correlation_id("order:42.A_b-c"));
	CHECK(valid_correlation_id(c128));
	CHECK(!valid_correlation_id(c129));
	CHECK(!valid_correlation_id("a b"));
	CHECK(!valid_correlation_id("a/b"));
	CHECK(valid_correlation_id(".") && valid_correlation_id(".."));
	CHECK(!valid_new_correlation_id(".") && !valid_new_correlation_id(".."));
	CHECK(valid_new_correlation_id("...") && valid_new_correlation_id(".a"));
	CHECK(!valid_correlation_id(""));
	CHECK(valid_exec_id("1", &v) && v == 1);
	CHECK(valid_exec_id("9223372036854775807", &v) &&
	    v == 9223372036854775807ULL);
	CHECK(!valid_exec_id("0", &v));
	CHECK(!valid_exec_id("01", &v));
	CHECK(!valid_exec_id("1a", &v));
	CHECK(!valid_exec_id("12345678901234567890", &v));
	CHECK(!valid_exec_id("", &v));
}

static void
secrets_and_headers(void)
{
	const char *ok = "ak_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

	CHECK(strlen(ok) == 46);
	CHECK(valid_secret(ok, "ak_"));
	CHECK(!valid_secret(ok, "bk_"));
	CHECK(!valid_secret("ak_short", "ak_"));
	CHECK(!valid_secret("ak_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP=",
	    "ak_"));
	CHECK(valid_secret(ok + 3, ""));
	CHECK(valid_json_content_type("application/json"));
	CHECK(valid_json_content_type("Application/JSON; charset=utf-8"));
	CHECK(!valid_json_content_type("application/jsonx"));
	CHECK(!valid_json_content_type("text/plain"));
	CHECK(!valid_json_content_type(NULL));
	CHECK_EQ_STR(valid_bearer("Bearer abc"), "abc");
	CHECK_EQ_STR(valid_bearer("bearer   abc"), "abc");
	CHECK(valid_bearer("Basic abc") == NULL);
	CHECK(valid_bearer("Bearer") == NULL);
	CHECK(valid_bearer("Bearer ") == NULL);
	CHECK(valid_bearer(NULL) == NULL);
}

static void
triples(void)
{
	char	 e[65], s[65], o[65];

	CHECK(valid_route_triple("prod/billing/charge", e, s, o));
	CHECK_EQ_STR(e, "prod");
	CHECK_EQ_STR(s, "billing");
	CHECK_EQ_STR(o, "charge");
	CHECK(!valid_route_triple("prod/billing", e, s, o));
	CHECK(!valid_route_triple("prod/billing/charge/x", e, s, o));
	CHECK(!valid_route_triple("prod//charge", e, s, o));
	CHECK(!valid_route_triple("Prod/b/c", e, s, o));
}

/* labels: 1-128 bytes of well-formed UTF-8, no control character */
static void
labels(void)
{
	char	 l[130];

	CHECK(valid_label("ops team"));
	CHECK(valid_label("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91"));
	memset(l, 'x', 128);
	l[128] = '\0';
	CHECK(valid_label(l));
	l[128] = 'x';
	l[129] = '\0';
	CHECK(!valid_label(l));
	CHECK(!valid_label(""));
	CHECK(!valid_label("a\tb"));
	CHECK(!valid_label("a\nb"));
	CHECK(!valid_label("a\x7f"));
	CHECK(!valid_label("a\xc2\x85"));		/* C1: NEL */
	CHECK(!valid_label("\xff"));
	CHECK(!valid_label("caf\xe9"));		/* Latin-1 */
	CHECK(!valid_label("\xc0\xaf"));		/* overlong */
	CHECK(!valid_label("\xed\xa0\x80"));		/* a surrogate */
	CHECK(!valid_label("\xf4\x90\x80\x80"));	/* above U+10FFFF */
	CHECK(!valid_label("\xe2\x82"));		/* cut short */
}

/* text: well-formed UTF-8, control characters allowed (JSON escapes them) */
static void
texts(void)
{
	CHECK(valid_utf8(""));
	CHECK(valid_utf8("stuck in\tbackend\n"));
	CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91 \xf4\x8f\xbf\xbf"));
	CHECK(!valid_utf8("\xff"));
	CHECK(!valid_utf8("caf\xe9"));		/* Latin-1 */
	CHECK(!valid_utf8("\x80"));			/* a stray continuation */
	CHECK(!valid_utf8("\xc0\xaf"));		/* overlong */
	CHECK(!valid_utf8("\xed\xa0\x80"));		/* a surrogate */
	CHECK(!valid_utf8("\xf4\x90\x80\x80"));	/* above U+10FFFF */
	CHECK(!valid_utf8("\xf8\x88\x80\x80\x80"));	/* 5 bytes */
	CHECK(!valid_utf8("ok \xe2\x82"));		/* cut short */
}

int
main(void)
{
	names();
	labels();
	texts();
	tenants_and_ids();
	secrets_and_headers();
	triples();
	return check_done("unit_valid");
}
