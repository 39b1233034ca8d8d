/*
 * Unit tests: asyncexec-expire's words that no run outside a Galera
 * cluster reaches (cluster_expire_writeset runs them there).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "expire.h"

/* The closing error of a run that skipped rows over wsrep_max_ws_size. */
static void
oversize(void)
{
	char	 buf[160];

	CHECK_EQ_STR(expire_oversize_text(buf, sizeof(buf), 1), "1 row "
	    "skipped, alone over the node's wsrep_max_ws_size or "
	    "wsrep_max_ws_rows (logged above); the other rows and steps are done");
	CHECK_EQ_STR(expire_oversize_text(buf, sizeof(buf), 2), "2 rows "
	    "skipped, each alone over the node's wsrep_max_ws_size or "
	    "wsrep_max_ws_rows (logged above); the other rows and steps are done");
	CHECK(strncmp(expire_oversize_text(buf, sizeof(buf), 10000),
	    "10000 rows skipped, each alone over", 35) == 0);
	/* cut to the buffer, never past it */
	CHECK_EQ_STR(expire_oversize_text(buf, 8, 1), "1 row s");
}

int
main(void)
{
	oversize();
	return check_done("unit_expire_text");
}
