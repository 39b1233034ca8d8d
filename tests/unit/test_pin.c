/*
 * test_pin.c - db_pin_file: the writer pin names its node as host:port,
 * so a restart finds that node wherever the edited db_hosts list now
 * puts it, and falls back to the first node for anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/config.h"
#include "../src/log.h"
#include "../src/pin.h"
#include "check.h"

/* c with db_hosts from text and db_pin_file path. */
static void
hosts(struct config *c, const char *list, const char *path)
{
	char	 text[512], err[256];

	snprintf(text, sizeof text, "db_hosts = %s\ndb_pin_file = %s\n", list,
	    path);
	CHECK(config_parse(c, "t.conf", text, err, sizeof err) == 0);
}

int
main(void)
{
	struct config	 c, d;
	char		 dir[] = "/tmp/test-pin.XXXXXX", path[300], line[64];
	unsigned	 node = 9;
	FILE		*f;

	log_set_level(LOG_ERROR);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/writer", dir);
	hosts(&c, "10.0.0.1:3306, 10.0.0.2:3306, 10.0.0.3:3307", path);

	CHECK_EQ_INT(pin_load(&c, &node), -1);		/* no file yet */
	CHECK_EQ_INT(pin_save(&c, 2), 0);
	CHECK((f = fopen(path, "r")) != NULL && fgets(line, sizeof line, f));
	if (f != NULL)
		fclose(f);
	CHECK_EQ_STR(line, "10.0.0.3:3307\n");
	CHECK_EQ_INT(pin_load(&c, &node), 0);
	CHECK_EQ_INT(node, 2);

	/* the list edited: the same node elsewhere, or gone */
	hosts(&d, "10.0.0.3:3307 10.0.0.1:3306", path);
	CHECK_EQ_INT(pin_load(&d, &node), 0);
	CHECK_EQ_INT(node, 0);
	hosts(&d, "10.0.0.1:3306 10.0.0.3:3306", path);	/* another port */
	CHECK_EQ_INT(pin_load(&d, &node), -1);

	/* garbage, or no file configured */
	CHECK((f = fopen(path, "w")) != NULL && fputs("2\n", f) >= 0);
	if (f != NULL)
		fclose(f);
	CHECK_EQ_INT(pin_load(&c, &node), -1);
	hosts(&d, "10.0.0.1", "");
	CHECK_EQ_INT(pin_save(&d, 0), 0);
	CHECK_EQ_INT(pin_load(&d, &node), -1);
	CHECK_EQ_INT(pin_save(&c, 3), 0);		/* not a node: nothing */
	CHECK_EQ_INT(pin_load(&c, &node), -1);

	unlink(path);
	rmdir(dir);
	return check_done("unit_pin");
}
