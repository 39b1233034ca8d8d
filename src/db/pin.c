/*
 * pin.c - the writer pin of an app host: a word on a shared page of its
 * own, and its file.
 *
 * The word: the position in db_hosts of the node every worker writes
 * to, mapped by the master before the fork so that all workers move
 * together. It holds the node in its low PIN_NODE_BITS and above them a
 * generation, +1 on every change, so that a writer of the pin file can
 * tell whether the pin moved while it wrote (pin_save). Every change is
 * reported to the metrics (asyncexec_db_writer_index, a move also to
 * asyncexec_db_failovers_total).
 *
 * The file: one line, the node as host:port (one of
 * db_hosts). Every write goes to a temporary file of its own in the same
 * directory (PATH.XXXXXX, created exclusively: never through a symlink,
 * never another writer's inode), is synced, renamed over PATH, and the
 * directory synced: a reader sees the old or the new value, never a
 * part, and after a crash the file is one of them. The workers and the
 * master write it at once; each re-reads the shared pin's generation
 * after its rename and writes again when the pin moved meanwhile, so
 * the last rename always names the pin's last node.
 */
#include <sys/mman.h>
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
#define PIN_NODE_BITS	8
#define PIN_NODE_MASK	((1u << PIN_NODE_BITS) - 1)

static uint64_t	*word;		/* the shared page; NULL: one process */

/*
 * Maps the shared page; the master calls it once, before the fork.
 * 0, or -1 (no memory).
 */
int
pin_init(void)
{
	void	*p;

	if (word != NULL)
		return 0;
	p = mmap(NULL, sizeof(*word), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	word = p;
	*word = 0;
	return 0;
}

/* The word after w with node: the next generation. */
static uint64_t
pin_next(uint64_t w, unsigned node)
{
	return ((w >> PIN_NODE_BITS) + 1) << PIN_NODE_BITS |
	    (node & PIN_NODE_MASK);
}

/*
 * The pin and its generation, read together: *node and *gen. 0, or -1
 * without a shared page (a one-process program keeps its own pin).
 */
int
pin_snap(unsigned *node, uint64_t *gen)
{
	uint64_t	 w;

	if (word == NULL)
		return -1;
	w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	*node = (unsigned)(w & PIN_NODE_MASK);
	*gen = w >> PIN_NODE_BITS;
	return 0;
}

/* The pin: *node. 0, or -1 without a shared page. */
int
pin_get(unsigned *node)
{
	uint64_t	 gen;

	return pin_snap(node, &gen);
}

/*
 * Moves the pin from node from to node to, unless another worker moved
 * it meanwhile (then the caller follows that one). 1 when this call
 * moved it (a failover), else 0.
 */
int
pin_move(unsigned from, unsigned to)
{
	uint64_t	 w;

	if (word == NULL)
		return 0;
	w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	do {
		if ((w & PIN_NODE_MASK) != from)
			return 0;
	} while (!__atomic_compare_exchange_n(word, &w, pin_next(w, to), 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	metrics_db_failover();
	metrics_db_writer((w >> PIN_NODE_BITS) + 1, to);
	return 1;
}

/* Sets the pin to node (the master: 0 on reload, the saved one at start). */
void
pin_set(unsigned node)
{
	uint64_t	 w;

	if (word == NULL)
		return;
	w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(word, &w, pin_next(w, node), 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	metrics_db_writer((w >> PIN_NODE_BITS) + 1, node);
}

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
	uint64_t	 gen = 0, now = 0;
	unsigned	 cur;
	int		 i;

	if (cfg->db_pin_file[0] == '\0')
		return 0;
	if (pin_snap(&cur, &gen) == -1) {	/* one process */
		if (node >= cfg->db_nhosts)
			return 0;
		return pin_write(cfg, node) == PIN_WRITTEN ? 0 : -1;
	}
	for (i = 0; i < PIN_TRIES; i++) {
		if (cur >= cfg->db_nhosts)
			return 0;
		if (pin_write(cfg, cur) == PIN_FAILED)
			return -1;
		if (pin_snap(&cur, &now) == 0 && now == gen)
			return 0;
		gen = now;
	}
	return 0;
}
