/*
 * pin.c - the writer pin's file: one line, the node as host:port (one of
 * db_hosts). Every write goes to a temporary file of its own in the same
 * directory (PATH.XXXXXX, created exclusively: never through a symlink,
 * never another writer's inode), is synced, renamed over PATH, and the
 * directory synced: a reader sees the old or the new value, never a
 * part, and after a crash the file is one of them. The workers and the
 * master write it at once; each re-reads the shared pin's generation
 * after its rename and writes again when the pin moved meanwhile, so
 * the last rename always names the pin's last node.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "pin.h"

#define PIN_TRIES	8	/* writes per save while the pin keeps moving */

/* What one write of the file did. */
enum pin_write {
	PIN_WRITTEN,		/* renamed into place and synced */
	PIN_FAILED		/* logged; the file is as it was */
};

/*
 * Reads the pin of path into *node: the position in cfg's db_hosts of
 * the node it names. 0, or -1 when there is none (no path, no file: the
 * first node) or it names no node of the list, or is a symlink (logged;
 * the first node). The file names the node, not its position, so that
 * a list edited between a move and a restart cannot send the workers
 * elsewhere.
 */
int
pin_load(const struct config *cfg, unsigned *node)
{
	const char	*path = cfg->db_pin_file;
	FILE		*f = NULL;
	char		 line[300], want[300];
	unsigned	 i;
	int		 fd;

	if (path[0] == '\0')
		return -1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    (f = fdopen(fd, "r")) == NULL) {
		if (errno != ENOENT)
			log_warn("db_pin_file %s: %s; the first node is used",
			    path, strerror(errno));
		if (fd != -1)
			close(fd);
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

/* Syncs the directory of path (the rename in it); 0 or -1. */
static int
sync_dir(const char *path)
{
	char		 dir[300];
	char		*slash;
	int		 fd, rc;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir] = '\0';	/* "/x": "/" */
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/*
 * Writes node (a position in cfg's db_hosts) to a new temporary file
 * beside the pin file, syncs it, renames it over the pin file and syncs
 * the directory. PIN_WRITTEN, or PIN_FAILED (logged; the temporary
 * file removed).
 */
static enum pin_write
pin_write(const struct config *cfg, unsigned node)
{
	const char	*path = cfg->db_pin_file;
	char		 tmp[300], line[300];
	int		 fd, len, rc;

	len = snprintf(line, sizeof(line), "%s:%u\n", cfg->db_hosts[node].host,
	    cfg->db_hosts[node].port);
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp) ||
	    (fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW)) == -1) {
		log_error("db_pin_file %s: cannot create a temporary file "
		    "beside it: %s", path, strerror(errno));
		return PIN_FAILED;
	}
	rc = fchmod(fd, 0644) == -1 || len < 0 || len >= (int)sizeof(line) ||
	    write(fd, line, (size_t)len) != len || fsync(fd) == -1;
	rc |= close(fd) == -1;
	if (rc || rename(tmp, path) == -1) {
		log_error("db_pin_file %s: cannot write it: %s", path,
		    strerror(errno));
		(void)unlink(tmp);
		return PIN_FAILED;
	}
	if (sync_dir(path) == -1)
		log_warn("db_pin_file %s: cannot sync its directory: %s", path,
		    strerror(errno));
	return PIN_WRITTEN;
}

/*
 * Writes the pin: the host's shared pin when there is a shared page
 * (the workers, the master; node is then ignored), else node. With the
 * page, the generation read before a write is compared after its
 * rename: when the pin moved meanwhile the file is written again with
 * the new node (up to PIN_TRIES times; the mover writes it too), so the
 * file is never left older than the pin. A node that is not one of
 * db_hosts, or no db_pin_file: nothing written. 0, or -1 (logged).
 */
int
pin_save(const struct config *cfg, unsigned node)
{
	uint64_t	 gen, now;
	unsigned	 cur;
	int		 i;

	if (cfg->db_pin_file[0] == '\0')
		return 0;
	if (metrics_pin_snap(&cur, &gen) == -1) {	/* one process */
		if (node >= cfg->db_nhosts)
			return 0;
		return pin_write(cfg, node) == PIN_WRITTEN ? 0 : -1;
	}
	for (i = 0; i < PIN_TRIES; i++) {
		if (cur >= cfg->db_nhosts)
			return 0;
		if (pin_write(cfg, cur) == PIN_FAILED)
			return -1;
		if (metrics_pin_snap(&cur, &now) == 0 && now == gen)
			return 0;
		gen = now;
	}
	return 0;
}
