/*
 * fuzz_config.c - the configuration parser (config_parse, the text that
 * config_load reads from the file).
 *
 * Inputs naming db_password_file may not contain '/': the parser then
 * opens that file, and the harness must not read (or block on) whatever
 * the fuzzer names, such as /dev/tty. A relative name is looked up in
 * the current directory (scripts/fuzz.sh runs the harness in a scratch
 * directory holding a file "db-password").
 *
 * Properties checked besides the sanitizers: on success every number is
 * within the bounds config.h documents and every string is terminated
 * within its field; on failure err is a non-empty message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

/* Whether field f (of its capacity) holds a terminated string. */
#define TERMINATED(f)	(memchr((f), '\0', sizeof(f)) != NULL)

static void
check_ok(const struct config *c)
{
	int	 ok = 1;

	ok &= TERMINATED(c->db_host) && TERMINATED(c->db_socket);
	ok &= TERMINATED(c->db_name) && TERMINATED(c->db_user);
	ok &= TERMINATED(c->db_password) && TERMINATED(c->db_password_file);
	ok &= TERMINATED(c->listen) && TERMINATED(c->listen_group);
	ok &= c->db_port >= 1 && c->db_port <= 65535;
	ok &= c->db_connect_timeout >= 1 && c->db_connect_timeout <= 60;
	ok &= c->listen_mode <= 0777 && c->workers <= 1024;
	ok &= c->listen_backlog >= 1 && c->listen_backlog <= 65535;
	ok &= c->max_request_bytes >= 2 && c->max_request_bytes <= 1UL << 30;
	ok &= c->max_result_bytes >= 16 && c->max_result_bytes <= 1UL << 30;
	ok &= c->max_json_depth >= 1 && c->max_json_depth <= 1000;
	ok &= c->retry_after_seconds >= 1 && c->retry_after_seconds <= 3600;
	ok &= c->max_attempts >= 1 && c->max_attempts <= 1000;
	ok &= c->purge_grace_days <= 36500 && c->cache_ttl_seconds <= 3600;
	ok &= c->log_level >= LOG_ERROR && c->log_level < LOG__MAX;
	if (!ok) {
		fprintf(stderr, "fuzz_config: config_parse accepted an out-of-range value\n");
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config	 c;
	char		 err[256];
	char		*text;
	int		 rc;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (strstr(text, "db_password_file") != NULL &&
	    strchr(text, '/') != NULL) {
		free(text);
		return 0;
	}
	err[0] = '\0';
	rc = config_parse(&c, "fuzz.conf", text, err, sizeof(err));
	if (rc == 0)
		check_ok(&c);
	else if (rc != -1 || err[0] == '\0' ||
	    memchr(err, '\0', sizeof(err)) == NULL) {
		fprintf(stderr, "fuzz_config: config_parse: %d without a message\n", rc);
		abort();
	}
	free(text);
	return 0;
}
