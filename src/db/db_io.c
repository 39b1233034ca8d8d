/*
 * db_io.c - the read/write timeout of this process's database
 * connections (db_io.h).
 */
#include "db_io.h"

static int	 serving;	/* db_serving: the requests' stop deadline */

/*
 * Marks this process (and the children it forks after) as
 * request-serving: its connections' reads and writes wait at most
 * DB_IO_TIMEOUT_SECONDS. Call before the first connect. Returns nothing.
 */
void
db_serving(void)
{
	serving = 1;
}

/* The read and write timeout, in seconds, of a connection of this
 * process: the migrations' one (multi) or another. */
unsigned
db_io_seconds(int multi)
{
	if (multi)
		return DB_MIGRATE_IO_SECONDS;
	return serving ? DB_IO_TIMEOUT_SECONDS : DB_TOOL_IO_SECONDS;
}
