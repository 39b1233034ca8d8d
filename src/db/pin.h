/*
 * pin.h - the writer pin of an app host kept in a file (db_pin_file), so
 * that a restarted master (a crash, systemd's Restart=) resumes writing
 * to the node its workers had moved to instead of splitting writes
 * across nodes; only a reload sends it back to the first node.
 *
 * db layer: db.c and the master (serve).
 */
#ifndef ASYNCEXEC_PIN_H
#define ASYNCEXEC_PIN_H

struct config;

int	pin_load(const struct config *, unsigned *node);
int	pin_save(const struct config *, unsigned node);

#endif
