/*
 * pin.c - the writer pin's file: one line, the node's position in
 * db_hosts (0 the first). Written whole to PATH.tmp and renamed, so a
 * reader sees the old or the new value, never a part.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pin.h"

/*
 * Reads the pin of path into *node: 0, or -1 when there is none (no
 * path, no file: the first node) or it is not a position below nhosts
 * (logged; the first node).
 */
int
pin_load(const char *path, unsigned nhosts, unsigned *node)
{
	FILE		*f;
	char		 line[32], *end;
	unsigned long	 v;

	if (path[0] == '\0' || (f = fopen(path, "r")) == NULL) {
		if (path[0] != '\0' && errno != ENOENT)
			log_warn("db_pin_file %s: %s; the first node is used",
			    path, strerror(errno));
		return -1;
	}
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	errno = 0;
	v = strtoul(line, &end, 10);
	if (line[0] < '0' || line[0] > '9' || *end != '\0' || errno != 0 ||
	    v >= nhosts) {
		log_warn("db_pin_file %s: \"%.20s\" is not a node of db_hosts "
		    "(0..%u); the first node is used", path, line, nhosts - 1);
		return -1;
	}
	*node = (unsigned)v;
	return 0;
}

/* Writes node as the pin of path (nothing without a path); 0 or -1. */
int
pin_save(const char *path, unsigned node)
{
	char	 tmp[300];
	FILE	*f;
	int	 rc;

	if (path[0] == '\0')
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL) {
		log_error("db_pin_file %s: %s", tmp, strerror(errno));
		return -1;
	}
	rc = fprintf(f, "%u\n", node) < 0;
	rc |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	rc |= fclose(f) != 0;
	if (rc || rename(tmp, path) == -1) {
		log_error("db_pin_file %s: cannot write it: %s", path,
		    strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}
