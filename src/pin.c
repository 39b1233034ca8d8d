/*
 * pin.c - the writer pin's file: one line, the node as host:port (one of
 * db_hosts). Written whole to PATH.tmp and renamed, so a
 * reader sees the old or the new value, never a part.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "pin.h"

/*
 * Reads the pin of path into *node: the position in cfg's db_hosts of
 * the node it names. 0, or -1 when there is none (no path, no file: the
 * first node) or it names no node of the list (logged; the first node).
 * The file names the node, not its position, so that a list edited
 * between a move and a restart cannot send the workers elsewhere.
 */
int
pin_load(const struct config *cfg, unsigned *node)
{
	const char	*path = cfg->db_pin_file;
	FILE		*f;
	char		 line[300], want[300];
	unsigned	 i;

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
	for (i = 0; i < cfg->db_nhosts; i++) {
		snprintf(want, sizeof(want), "%s:%u", cfg->db_hosts[i].host,
		    cfg->db_hosts[i].port);
		if (strcmp(line, want) == 0) {
			*node = i;
			return 0;
		}
	}
	log_warn("db_pin_file %s: \"%.60s\" is not a node of db_hosts; the "
	    "first node is used", path, line);
	return -1;
}

/* Writes node (a position in cfg's db_hosts) as the pin; 0 or -1. */
int
pin_save(const struct config *cfg, unsigned node)
{
	const char	*path = cfg->db_pin_file;
	char		 tmp[300];
	FILE		*f;
	int		 rc;

	if (path[0] == '\0' || node >= cfg->db_nhosts)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL) {
		log_error("db_pin_file %s: %s", tmp, strerror(errno));
		return -1;
	}
	rc = fprintf(f, "%s:%u\n", cfg->db_hosts[node].host,
	    cfg->db_hosts[node].port) < 0;
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
