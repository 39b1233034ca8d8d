/*
 * pin.h - the writer pin of an app host: the db_hosts node its workers
 * write to, on a shared page of its own (pin_init, before the fork) so
 * that they move together, and kept in a file (db_pin_file), so that a
 * restarted master (a crash, systemd's Restart=) resumes writing to the
 * node its workers had moved to instead of splitting writes across
 * nodes; only a reload sends it back to the first node. Without
 * pin_init (one process: admin, expire) pin_get and pin_snap answer -1
 * and the caller keeps its own.
 *
 * db layer: db.c and the master (serve).
 */
#ifndef ASYNCEXEC_PIN_H
#define ASYNCEXEC_PIN_H

#include <stdint.h>

struct config;

int	pin_init(void);
int	pin_get(unsigned *node);
int	pin_snap(unsigned *node, uint64_t *gen);
int	pin_move(unsigned from, unsigned to);
void	pin_set(unsigned node);

int	pin_load(const struct config *, unsigned *node);
int	pin_save(const struct config *, unsigned node);

#endif
