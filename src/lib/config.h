/*
 * config.h - the one configuration file, "key = value" lines.
 *
 * config_load fills every field with its default, then applies the file.
 * On error it writes "FILE:LINE: key: reason" into err and returns -1.
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_CONFIG_H
#define ASYNCEXEC_CONFIG_H

#include <stddef.h>

#define CONFIG_DEFAULT_PATH	"/etc/asyncexec/asyncexec.conf"
#define CONFIG_MAX_HOSTS	8	/* db_hosts entries */
/*
 * The configuration of migrate's user (CREATE, ALTER, INDEX, REFERENCES;
 * asyncexec-ops(7), DEPLOYMENT ON DEBIAN), and the one hint every
 * program gives for a schema behind (the service's own user cannot
 * migrate).
 */
#define CONFIG_MIGRATE_PATH	"/etc/asyncexec/migrate.conf"
#define MIGRATE_HINT	"run asyncexec-admin --config " CONFIG_MIGRATE_PATH \
	" migrate"

/* One database node of db_hosts (a Galera cluster), in preference order. */
struct config_host {
	char		 host[256];
	unsigned	 port;
};

struct config {
	char		 db_host[256];
	unsigned	 db_port;
	char		 db_socket[256];
	char		 db_name[65];
	char		 db_user[81];
	char		 db_password[256];
	char		 db_password_file[256];
	unsigned	 db_connect_timeout;
	char		 db_hosts_text[1024];	/* db_hosts as written */
	struct config_host db_hosts[CONFIG_MAX_HOSTS];
	unsigned	 db_nhosts;	/* 0: one server (db_socket/db_host) */
	unsigned	 db_sync_wait;	/* wsrep_sync_wait on a Galera node */
	char		 db_pin_file[256];	/* the writer pin across restarts */
	char		 listen[108];	/* a unix socket path, or ADDRESS:PORT */
	char		 listen_allow[256];	/* TCP: the web servers' addresses */
	unsigned	 listen_mode;
	char		 listen_group[64];
	unsigned	 listen_backlog;
	unsigned	 workers;
	size_t		 max_request_bytes;
	size_t		 max_result_bytes;
	unsigned	 max_json_depth;
	unsigned	 retry_after_seconds;
	unsigned	 max_attempts;
	unsigned	 purge_grace_days;
	unsigned	 cache_ttl_seconds;
	unsigned	 dashboard_show_errors;	/* 1: errors' messages on the dashboard */
	char		 webhook_key_file[256];
	unsigned	 webhook_allow_http;	/* 1: http:// URLs too */
	char		 webhook_allow_networks[1024];	/* CIDRs, refused ranges let through */
	unsigned	 webhook_connect_timeout;	/* seconds */
	unsigned	 webhook_timeout;	/* seconds, the whole attempt */
	unsigned	 webhook_concurrency;	/* transfers at once, per sender */
	char		 webhook_retry_schedule[256];	/* seconds between attempts */
	char		 notify_listen[64];	/* ADDRESS:PORT of /metrics, /readyz */
	int		 log_level;
};

void	config_defaults(struct config *);
int	config_load(struct config *, const char *path, char *err, size_t);
int	config_load_syntax(struct config *, const char *path, char *err,
	    size_t);
int	config_parse(struct config *, const char *name, const char *text,
	    char *err, size_t);
unsigned config_workers(const struct config *);
struct stat;
int	config_password_open(const char *path, struct stat *, char *why,
	    size_t);
const char *config_keep_db(struct config *, const struct config *old);
int	config_listen_tcp(const char *listen, char *addr, size_t addrsz,
	    unsigned *port);

#endif
