/*
 * addr.c - refused networks and the allow list (addr.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

static const char *const range_names[AR__MAX] = {
#define AR_NAME(r, name) [r] = name,
	ADDR_RANGES(AR_NAME)
#undef AR_NAME
};

/* The IPv4 networks refused by default, with their range. */
static const struct {
	unsigned char	 a[4];
	unsigned	 bits;
	enum addr_range	 r;
} v4_refused[] = {
	{ { 0, 0, 0, 0 }, 8, AR_UNSPECIFIED },
	{ { 10, 0, 0, 0 }, 8, AR_PRIVATE },
	{ { 100, 64, 0, 0 }, 10, AR_PRIVATE },	/* shared (carrier NAT) */
	{ { 127, 0, 0, 0 }, 8, AR_LOOPBACK },
	{ { 169, 254, 0, 0 }, 16, AR_LINK_LOCAL },
	{ { 172, 16, 0, 0 }, 12, AR_PRIVATE },
	{ { 192, 0, 0, 0 }, 24, AR_RESERVED },
	{ { 192, 168, 0, 0 }, 16, AR_PRIVATE },
	{ { 198, 18, 0, 0 }, 15, AR_RESERVED },	/* benchmarking */
	{ { 224, 0, 0, 0 }, 4, AR_MULTICAST },
	{ { 240, 0, 0, 0 }, 4, AR_RESERVED },	/* and 255.255.255.255 */
};

/* 1 when the first bits of a and b agree. */
static int
prefix_eq(const unsigned char *a, const unsigned char *b, unsigned bits)
{
	unsigned	 full = bits / 8, rest = bits % 8;
	unsigned char	 mask;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (unsigned char)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

const char *
addr_range_name(enum addr_range r)
{
	return range_names[r];
}

/* 1 for the ranges a delivery may not connect to. */
int
addr_refused(enum addr_range r)
{
	return r != AR_PUBLIC && r != AR_ALLOWED;
}

/* One "ADDRESS/BITS" (or a bare address: all bits) into *n; 0 or -1. */
static int
parse_net(const char *s, struct addr_net *n)
{
	char		 host[64], *slash, *end;
	unsigned long	 bits;
	unsigned	 max;

	size_t		 len = strlen(s);

	if (len >= sizeof(host))
		return -1;
	memcpy(host, s, len + 1);
	memset(n, 0, sizeof(*n));
	if ((slash = strchr(host, '/')) != NULL)
		*slash = '\0';
	if (inet_pton(AF_INET, host, n->a) == 1)
		max = 32;
	else if (inet_pton(AF_INET6, host, n->a) == 1) {
		n->v6 = 1;
		max = 128;
	} else
		return -1;
	n->bits = max;
	if (slash != NULL) {
		bits = strtoul(slash + 1, &end, 10);
		if (slash[1] < '0' || slash[1] > '9' || *end != '\0' ||
		    bits > max)
			return -1;
		n->bits = (unsigned)bits;
	}
	return 0;
}

/*
 * Parses webhook_allow_networks: CIDRs separated by commas (blanks
 * around each ignored), at most ADDR_ALLOW_MAX. ADDR_OK, or ADDR_BAD
 * with the reason in err.
 */
enum addr_rc
addr_allow_parse(const char *text, struct addr_allow *al, char *err,
    size_t errsz)
{
	char		 item[96];
	const char	*p = text, *e;
	size_t		 k;

	memset(al, 0, sizeof(*al));
	while (*p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, ",");
		k = (size_t)(e - p);
		while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t'))
			k--;
		if (k == 0 || k >= sizeof(item) || al->n == ADDR_ALLOW_MAX)
			goto bad;
		memcpy(item, p, k);
		item[k] = '\0';
		if (parse_net(item, &al->net[al->n]) == -1)
			goto bad;
		al->n++;
		if (*e == ',' && e[1 + strspn(e + 1, " \t")] == '\0')
			goto bad;	/* a trailing comma */
		p = *e == ',' ? e + 1 : e;
	}
	return ADDR_OK;
bad:
	snprintf(err, errsz, "webhook_allow_networks: expected at most %d "
	    "networks such as 10.0.0.0/8 or fd00::/8, separated by commas",
	    ADDR_ALLOW_MAX);
	return ADDR_BAD;
}

/* The range of IPv4 address a (4 bytes), the allow list first. */
static enum addr_range
classify4(const unsigned char *a, const struct addr_allow *al)
{
	size_t	 i;

	for (i = 0; al != NULL && i < al->n; i++)
		if (!al->net[i].v6 && prefix_eq(a, al->net[i].a, al->net[i].bits))
			return AR_ALLOWED;
	for (i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++)
		if (prefix_eq(a, v4_refused[i].a, v4_refused[i].bits))
			return v4_refused[i].r;
	return AR_PUBLIC;
}

/*
 * The IPv4 address that IPv6 address a carries to an IPv4 host: NAT64
 * with the well-known prefix 64:ff9b::/96 (RFC 6052) and SIIT
 * ::ffff:0:0/96 in the low 32 bits, 6to4 2002::/16 in bits 16..47.
 * A pointer into a, or NULL for another address.
 */
static const unsigned char *
embedded4(const unsigned char *a)
{
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const unsigned char siit[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
	    0xff };

	if (memcmp(a, nat64, 12) == 0 || memcmp(a, siit, 12) == 0)
		return a + 12;
	if (a[0] == 0x20 && a[1] == 0x02)
		return a + 2;
	return NULL;
}

/*
 * The range of IPv6 address a (16 bytes); the forms that carry an IPv4
 * address (mapped, compatible, embedded4) as that IPv4 address; the
 * local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215, where the IPv4 address
 * sits depends on the network) and Teredo 2001::/32 (RFC 4380: a tunnel
 * to an IPv4 host behind a NAT, its address obfuscated) reserved.
 */
static enum addr_range
classify6(const unsigned char *a, const struct addr_allow *al)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0,
	    0, 0xff, 0xff };
	static const unsigned char nat64_local[6] = { 0, 0x64, 0xff, 0x9b,
	    0, 1 };
	static const unsigned char teredo[4] = { 0x20, 0x01, 0, 0 };
	static const unsigned char zero[16];
	const unsigned char *v4;
	size_t	 i;

	if (memcmp(a, mapped, 12) == 0)
		return classify4(a + 12, al);
	for (i = 0; al != NULL && i < al->n; i++)
		if (al->net[i].v6 && prefix_eq(a, al->net[i].a, al->net[i].bits))
			return AR_ALLOWED;
	if (memcmp(a, zero, 15) == 0)
		return a[15] == 1 ? AR_LOOPBACK : AR_UNSPECIFIED;
	if (memcmp(a, zero, 12) == 0)
		return classify4(a + 12, al);	/* IPv4-compatible ::a.b.c.d */
	if ((v4 = embedded4(a)) != NULL)
		return classify4(v4, al);
	if (memcmp(a, nat64_local, 6) == 0 || memcmp(a, teredo, 4) == 0)
		return AR_RESERVED;
	if (a[0] == 0xff)
		return AR_MULTICAST;
	if ((a[0] & 0xfe) == 0xfc)
		return AR_UNIQUE_LOCAL;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return AR_LINK_LOCAL;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return AR_UNIQUE_LOCAL;		/* site-local, deprecated */
	return AR_PUBLIC;
}

/* The range of the address sa; AR_UNKNOWN for another family. */
enum addr_range
addr_classify(const struct sockaddr *sa, const struct addr_allow *al)
{
	const struct sockaddr_in	*s4 = (const void *)sa;
	const struct sockaddr_in6	*s6 = (const void *)sa;

	switch (sa->sa_family) {
	case AF_INET:
		return classify4((const unsigned char *)&s4->sin_addr, al);
	case AF_INET6:
		return classify6(s6->sin6_addr.s6_addr, al);
	}
	return AR_UNKNOWN;
}

/* The address of sa as text (for errors and logs). */
void
addr_text(const struct sockaddr *sa, char *out, size_t outsz)
{
	const struct sockaddr_in	*s4 = (const void *)sa;
	const struct sockaddr_in6	*s6 = (const void *)sa;

	out[0] = '\0';
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, out, (socklen_t)outsz);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)outsz);
	else
		snprintf(out, outsz, "(family %d)", sa->sa_family);
}
