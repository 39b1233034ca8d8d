/*
 * addr.h - the networks a webhook delivery may not connect to unless
 * webhook_allow_networks lets them through, checked on the address
 * actually connected to (so a name that resolves, or re-resolves, to
 * 127.0.0.1 is refused as 127.0.0.1 is).
 *
 * notify layer: the notify folder and the unit tests.
 */
#ifndef ASYNCEXEC_NOTIFY_ADDR_H
#define ASYNCEXEC_NOTIFY_ADDR_H

#include <stddef.h>

#include <sys/socket.h>

#define ADDR_ALLOW_MAX	32	/* networks webhook_allow_networks lists */

/* X(range, name): the answer of addr_classify, refused ones after AR_ALLOWED */
#define ADDR_RANGES(X) \
	X(AR_PUBLIC, "public") \
	X(AR_ALLOWED, "allowed by webhook_allow_networks") \
	X(AR_LOOPBACK, "loopback") \
	X(AR_PRIVATE, "private") \
	X(AR_LINK_LOCAL, "link-local") \
	X(AR_UNIQUE_LOCAL, "unique-local") \
	X(AR_MULTICAST, "multicast") \
	X(AR_UNSPECIFIED, "unspecified") \
	X(AR_RESERVED, "reserved") \
	X(AR_UNKNOWN, "not IPv4 or IPv6")

enum addr_range {
#define AR_ENUM(r, name) r,
	ADDR_RANGES(AR_ENUM)
#undef AR_ENUM
	AR__MAX
};

struct addr_net {
	int		 v6;
	unsigned char	 a[16];		/* v4: the first 4 bytes */
	unsigned	 bits;
};

struct addr_allow {
	size_t		 n;
	struct addr_net	 net[ADDR_ALLOW_MAX];
};

/* What addr_allow_parse found. */
enum addr_rc {
	ADDR_OK,
	ADDR_BAD		/* the reason is in err */
};

enum addr_rc	 addr_allow_parse(const char *text, struct addr_allow *,
		    char *err, size_t errsz);
enum addr_range	 addr_classify(const struct sockaddr *,
		    const struct addr_allow *);
int		 addr_refused(enum addr_range);
const char	*addr_range_name(enum addr_range);
void		 addr_text(const struct sockaddr *, char *out, size_t outsz);

#endif
