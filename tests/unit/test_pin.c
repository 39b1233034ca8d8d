/*
 * test_pin.c - db_pin_file: the writer pin names its node as host:port,
 * so a restart finds that node wherever the edited db_hosts list now
 * puts it, and falls back to the first node for anything else. Its
 * writes: never through a symlink planted at a temporary name, and with
 * WRITERS processes moving the shared pin and saving it at once (as the
 * workers and the master do) a reader never sees an empty or foreign
 * file and the file ends naming the pin's last node.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "pin.h"
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

#define WRITERS		4
#define ROUNDS		300

/* A writer of the race: ROUNDS moves of the shared pin, each saved. */
static void
writer(const struct config *c, unsigned no)
{
	unsigned	 seed = (unsigned)getpid() * 2654435761u + no, i, node;

	for (i = 0; i < ROUNDS; i++) {
		node = (unsigned)rand_r(&seed) % c->db_nhosts;
		pin_set(node);
		(void)pin_save(c, node);
	}
	_exit(0);
}

/*
 * The race: WRITERS processes move and save the pin while this one
 * reads the file. Returns the reads that found no node (empty, part of
 * a line, gone) into *bad, of *reads.
 */
static void
race(const struct config *c, long *bad, long *reads)
{
	pid_t		 pids[WRITERS];
	unsigned	 i, node, done = 0;
	int		 st;

	*bad = *reads = 0;
	for (i = 0; i < WRITERS; i++)
		if ((pids[i] = fork()) == 0)
			writer(c, i);
	while (done < WRITERS) {
		(*reads)++;
		if (pin_load(c, &node) == -1)
			(*bad)++;
		for (i = 0; i < WRITERS; i++)
			if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) ==
			    pids[i]) {
				pids[i] = 0;
				done++;
			}
	}
}

/* The race of many writers: no bad read, the file ends at the pin. */
static void
race_rules(const char *dir)
{
	struct config	 c;
	char		 path[300];
	unsigned	 pin = 9, node = 9;
	long		 bad, reads;

	snprintf(path, sizeof path, "%s/raced", dir);
	hosts(&c, "10.0.0.1:3306, 10.0.0.2:3306, 10.0.0.3:3306", path);
	CHECK(pin_init() == 0);
	pin_set(1);
	CHECK_EQ_INT(pin_save(&c, 1), 0);
	race(&c, &bad, &reads);
	CHECK(pin_get(&pin) == 0);
	CHECK_EQ_INT(pin_load(&c, &node), 0);
	printf("figure: pin race: %d writers x %d moves: %ld of %ld reads "
	    "found no node; file node %u, pin %u\n", WRITERS, ROUNDS, bad,
	    reads, node, pin);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(node, pin);
	unlink(path);
}

/* A symlink planted at PATH.tmp (the old temporary name) is not followed. */
static void
symlink_rules(const char *dir, const struct config *c)
{
	char	 victim[300], tmp[320], *p = NULL;
	FILE	*f;
	size_t	 n = 0;

	snprintf(victim, sizeof victim, "%s/victim", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", c->db_pin_file);
	CHECK((f = fopen(victim, "w")) != NULL && fputs("keep\n", f) >= 0);
	if (f != NULL)
		fclose(f);
	CHECK_EQ_INT(symlink(victim, tmp), 0);
	CHECK_EQ_INT(pin_save(c, 1), 0);
	CHECK((f = fopen(victim, "r")) != NULL && getline(&p, &n, f) > 0);
	if (f != NULL)
		fclose(f);
	CHECK_EQ_STR(p ? p : "", "keep\n");
	free(p);
	(void)unlink(tmp);
	(void)unlink(victim);
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

	symlink_rules(dir, &c);
	unlink(path);
	race_rules(dir);
	rmdir(dir);
	return check_done("unit_pin");
}
