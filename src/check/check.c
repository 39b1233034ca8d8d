/*
 * check.c - --check-config of the three binaries, and `asyncexec-admin
 * check`: one line per check on stdout, "ok", "warn" or "error", then
 * the check's name and what was found (and, when not ok, what to do).
 *
 * Checked: the file parses; the password file is a regular file (never
 * waited on: config_password_open), can be read and is not readable by
 * others; the database can be reached; the server version;
 * the schema version against this build's; the privileges this binary
 * needs; for the sender and the admin, that webhook_key_file opens the
 * stored endpoint secrets; the program's own check (check_run's extra:
 * asyncexec-fcgi's stop deadline). A file that does not parse is reported on
 * stderr and nothing else is checked (exit 2, as for any configuration
 * error).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "crypto.h"
#include "log.h"
#include "repo.h"
#include "repo_check.h"
#include "webhook.h"

struct chk {
	const char	*prog;
	unsigned	 who;
	struct config	 cfg;
	int		 errors, warnings;
	int		 haskey;	/* key holds webhook_key_file's */
	int		 behind;	/* schema older than this build's */
	unsigned char	 key[AEAD_KEY_LEN];
};

/* how many of the newest endpoints' secrets the key is tried on */
#define SEALED_TRY	32

/* Prints one check's line and counts it. */
static void
say(struct chk *k, const char *level, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
say(struct chk *k, const char *level, const char *what, const char *fmt, ...)
{
	va_list	 ap;

	if (strcmp(level, "error") == 0)
		k->errors++;
	else if (strcmp(level, "warn") == 0)
		k->warnings++;
	printf("%-5s %s: ", level, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* The password file: readable by us, not by others. 0, or -1 unusable. */
static int
check_pwfile(struct chk *k)
{
	const char	*f = k->cfg.db_password_file;
	struct stat	 sb;
	char		 why[512];
	int		 fd;

	if ((fd = config_password_open(f, &sb, why, sizeof(why))) == -1) {
		say(k, "error", "password file", "cannot read %s: %s; make it "
		    "readable by the user this runs as (e.g. chown "
		    "root:asyncexec, chmod 0640)", f, strerror(errno));
		return -1;
	}
	if (fd == -2) {		/* a FIFO, say: it could block for ever */
		say(k, "error", "password file", "%s", why);
		return -1;
	}
	(void)close(fd);
	if (sb.st_mode & S_IROTH)
		say(k, "warn", "password file", "%s is readable by others "
		    "(mode %04o); chmod o-r %s", f,
		    (unsigned)(sb.st_mode & 07777), f);
	else
		say(k, "ok", "password file", "%s is readable, not by others "
		    "(mode %04o)", f, (unsigned)(sb.st_mode & 07777));
	return 0;
}

/* The file's own checks; 0, 2 (does not parse) or 1 (cannot go on). */
static int
check_file(struct chk *k, const char *path)
{
	struct stat	 sb;
	char		 err[512];

	if (config_load_syntax(&k->cfg, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s: %s\n", k->prog, err);
		return 2;
	}
	say(k, "ok", "config", "%s parses", path);
	if (k->cfg.db_password[0] != '\0' && stat(path, &sb) == 0 &&
	    (sb.st_mode & S_IROTH))
		say(k, "warn", "config", "%s holds db_password and is readable "
		    "by others; chmod o-r %s, or use db_password_file", path,
		    path);
	if (k->cfg.db_password_file[0] == '\0')
		return 0;
	if (check_pwfile(k) == -1) {
		say(k, "error", "database", "not checked: no password");
		return 1;
	}
	if (config_load(&k->cfg, path, err, sizeof(err)) == -1) {
		say(k, "error", "config", "%s", err);
		return 1;
	}
	return 0;
}

/* The server version: MariaDB 10.6+ or MySQL 8.0+. */
static void
check_server(struct chk *k, struct rchk *r)
{
	char	 v[128];
	int	 maj, min;

	if (repo_check_server(r, v, sizeof(v)) != REPO_OK ||
	    sscanf(v, "%d.%d", &maj, &min) != 2) {
		say(k, "warn", "server", "version unknown");
		return;
	}
	if (strstr(v, "MariaDB") != NULL ? maj * 100 + min < 1006 : maj < 8)
		say(k, "warn", "server", "%s is older than the minimum "
		    "(MariaDB 10.6, MySQL 8.0); upgrade the server", v);
	else
		say(k, "ok", "server", "%s", v);
}

/* The recorded schema version against this build's. */
static void
check_schema(struct chk *k, struct rchk *r)
{
	int	 v;

	if (repo_check_schema(r, &v) != REPO_OK)
		say(k, "error", "schema", "cannot read s2r_schema_version");
	else if ((k->behind = v < SCHEMA_VERSION))
		say(k, "error", "schema", "version %d, this build needs %d; "
		    MIGRATE_HINT, v, SCHEMA_VERSION);
	else if (v > SCHEMA_VERSION)
		say(k, "warn", "schema", "version %d is newer than this "
		    "build's %d; upgrade this binary", v, SCHEMA_VERSION);
	else
		say(k, "ok", "schema", "version %d, as this build needs", v);
}

/* Tries each privilege this binary needs on its table. */
static void
check_dml(struct chk *k, struct rchk *r)
{
	const struct repo_probe	*p;
	unsigned		 e;
	size_t			 i;
	int			 held = 0, bad = 0;

	for (i = 0; (p = repo_check_probe_def(i)) != NULL; i++) {
		if ((p->who & k->who) == 0)
			continue;
		switch (repo_check_probe(r, i, k->behind, &e)) {
		case PROBE_OK:
			held++;
			break;
		case PROBE_NOTABLE:	/* behind: the schema check says it */
			break;
		case PROBE_DENIED:
			bad++;
			say(k, "error", "grants", "%s lacks %s on %s; GRANT %s "
			    "ON `%s`.* TO it", k->cfg.db_user, p->priv,
			    p->table, p->priv, k->cfg.db_name);
			break;
		case PROBE_ERR:
			bad++;
			say(k, "error", "grants", "trying %s on %s failed: "
			    "error %u", p->priv, p->table, e);
			break;
		}
	}
	if (bad == 0 && held == 0)
		say(k, "warn", "grants", "not tried: the tables do not exist "
		    "yet (" MIGRATE_HINT ")");
	else if (bad == 0)
		say(k, "ok", "grants", "%s holds the %d table privileges %s "
		    "needs", k->cfg.db_user, held, k->prog);
}

#define DDL_N	4
static const char *const ddl[DDL_N] = { "CREATE", "ALTER", "INDEX",
    "REFERENCES" };

struct ddl_seen {
	const char	*db;
	int		 have[DDL_N];
};

/* Whether a SHOW GRANTS target ("*.*", "`db`.*") covers database db. */
static int
target_covers(const char *t, size_t n, const char *db)
{
	char	 name[256];
	size_t	 i, j = 0;

	if (n == 3 && strncmp(t, "*.*", 3) == 0)
		return 1;
	if (n < 5 || t[0] != '`' || strncmp(t + n - 3, "`.*", 3) != 0)
		return 0;
	for (i = 1; i < n - 3 && j + 1 < sizeof(name); i++) {
		if (t[i] == '\\' && i + 1 < n - 3)	/* \_ and \% */
			i++;
		name[j++] = t[i];
	}
	name[j] = '\0';
	return strcmp(name, db) == 0;
}

/* Notes the database-level privileges of one SHOW GRANTS line. */
static void
ddl_line(void *arg, const char *line)
{
	struct ddl_seen	*s = arg;
	const char	*on, *t, *p;
	size_t		 n;
	int		 i;

	if (strncmp(line, "GRANT ", 6) != 0 ||
	    (on = strstr(line, " ON ")) == NULL)
		return;
	t = on + 4;
	if (!target_covers(t, strcspn(t, " "), s->db))
		return;
	for (p = line + 6; p < on; p += n + (*(p + n) == ',')) {
		p += strspn(p, " ");
		n = strcspn(p, ",");
		if (p + n > on)
			n = (size_t)(on - p);
		for (i = 0; i < DDL_N; i++)
			if ((n == strlen(ddl[i]) &&
			    strncmp(p, ddl[i], n) == 0) ||
			    strncmp(p, "ALL PRIVILEGES", 14) == 0)
				s->have[i] = 1;
	}
}

/* migrate's database-level privileges, from SHOW GRANTS (a warning). */
static void
check_ddl(struct chk *k, struct rchk *r)
{
	struct ddl_seen	 s;
	char		 miss[64] = "";
	int		 i;

	memset(&s, 0, sizeof(s));
	s.db = k->cfg.db_name;
	if (repo_check_grants(r, ddl_line, &s) != REPO_OK) {
		say(k, "warn", "grants", "SHOW GRANTS failed; migrate needs "
		    "CREATE, ALTER, INDEX, REFERENCES on `%s`.*", s.db);
		return;
	}
	for (i = 0; i < DDL_N; i++)
		if (!s.have[i])
			snprintf(miss + strlen(miss), sizeof(miss) - strlen(miss),
			    "%s%s", miss[0] ? ", " : "", ddl[i]);
	if (miss[0] != '\0')
		say(k, "warn", "grants", "migrate needs %s on `%s`.*, which "
		    "%s lacks; GRANT them, or migrate as another user (%s)",
		    miss, s.db, k->cfg.db_user, MIGRATE_HINT);
	else
		say(k, "ok", "grants", "migrate's CREATE, ALTER, INDEX, "
		    "REFERENCES on `%s`.* are held", s.db);
}

/*
 * With db_hosts: one line per node, whether it can be reached and, on
 * Galera, whether it is Synced in the Primary component. A node that is
 * down is a warning (the others take the writes), not an error.
 */
static void
check_nodes(struct chk *k)
{
	struct config		 one;
	struct repo_node	 n;
	struct db		*db;
	unsigned		 i;
	char			 what[300];

	for (i = 0; i < k->cfg.db_nhosts; i++) {
		/* this node alone, as one server: reached whatever its
		 * state (with db_hosts a node not Synced is skipped) */
		one = k->cfg;
		one.db_nhosts = 0;
		one.db_socket[0] = '\0';
		memcpy(one.db_host, k->cfg.db_hosts[i].host, sizeof(one.db_host));
		one.db_port = k->cfg.db_hosts[i].port;
		snprintf(what, sizeof(what), "node %u (%s:%u)", i + 1,
		    one.db_host, one.db_port);
		if ((db = repo_open(&one, 0)) == NULL ||
		    repo_node_state(db, &n) != REPO_OK)
			say(k, "warn", what, "cannot be reached: the hosts "
			    "skip it while it is down");
		else if (!n.wsrep)
			say(k, "warn", what, "reached, but it runs no Galera "
			    "replication (wsrep_on is OFF): db_hosts is for "
			    "the nodes of one cluster");
		else if (!n.ready)
			say(k, "warn", what, "%s in a %s component: not used "
			    "until it is Synced in the Primary one", n.state,
			    n.status);
		else
			say(k, "ok", what, "%s, %s", n.state, n.status);
		repo_close(db);
	}
}

/*
 * The key of the webhook secrets (webhook_key_file): an error for the
 * sender, which cannot sign without it; a warning for the admin, whose
 * webhook verbs alone need it.
 */
static void
check_keyfile(struct chk *k)
{
	char		 err[512];

	if (webhook_keyfile_load(k->cfg.webhook_key_file, k->key, err,
	    sizeof(err)) == WEBHOOK_OK) {
		k->haskey = 1;
		say(k, "ok", "webhook_key_file", "%s holds a key",
		    k->cfg.webhook_key_file);
	} else
		say(k, k->who & CHECK_NOTIFY ? "error" : "warn",
		    "webhook_key_file", "%s", err);
}

/*
 * The key against the stored endpoint secrets: it must open those of
 * the newest endpoints, or it is not the key they were sealed with (a
 * host given a fresh key, a key file lost on purge). An error for the
 * sender, which cannot sign with them; a warning for the admin.
 */
static void
check_secrets(struct chk *k, struct rchk *r)
{
	struct repo_sealed	 s[SEALED_TRY];
	unsigned char		 raw[WEBHOOK_KEY_MAX];
	size_t			 i, n, rawlen, bad = 0;

	if (repo_check_sealed(r, s, SEALED_TRY, &n) != REPO_OK) {
		say(k, "warn", "webhook secrets", "cannot read them");
		return;
	}
	for (i = 0; i < n; i++)
		if (webhook_secret_open(k->key, s[i].tenant, s[i].sealed,
		    s[i].len, raw, &rawlen) != WEBHOOK_OK)
			bad++;
	explicit_bzero(raw, sizeof(raw));
	if (n == 0)
		say(k, "ok", "webhook secrets", "none stored yet");
	else if (bad == 0)
		say(k, "ok", "webhook secrets", "the %zu newest open with the "
		    "key of %s", n, k->cfg.webhook_key_file);
	else if (bad < n)
		say(k, "warn", "webhook secrets", "%zu of the %zu newest do "
		    "not open with the key of %s: some endpoints were added on "
		    "a host with another key file; give every host the same "
		    "file, then rotate-secret the endpoints that still do not "
		    "open", bad, n, k->cfg.webhook_key_file);
	else
		say(k, k->who & CHECK_NOTIFY ? "error" : "warn",
		    "webhook secrets", "none of the %zu newest opens with the "
		    "key of %s: it is not the key they were sealed with; copy "
		    "that file from a host whose sender delivers (owner "
		    "root:asyncexec, mode 0640), then restart asyncexec-notify",
		    n, k->cfg.webhook_key_file);
}

/*
 * Runs the checks of binary prog (who: CHECK_FCGI, CHECK_EXPIRE,
 * CHECK_ADMIN or CHECK_NOTIFY) on configuration file path, extra (when
 * not NULL) after the file's. Returns the exit status: 0 when no check
 * is an error, 1 otherwise, 2 when the file does not parse.
 */
int
check_run(const char *prog, unsigned who, const char *path,
    const struct check_extra *extra)
{
	struct chk	 k;
	struct rchk	*r;
	unsigned	 e;
	int		 rc;
	char		 msg[768];

	memset(&k, 0, sizeof(k));
	k.prog = prog;
	k.who = who;
	if ((rc = check_file(&k, path)) != 0)
		return rc;
	if (extra != NULL)
		say(&k, extra->fn(&k.cfg, msg, sizeof(msg)) == 0 ? "ok" :
		    "warn", extra->what, "%s", msg);
	if (who & (CHECK_ADMIN | CHECK_NOTIFY))
		check_keyfile(&k);
	log_set_level(LOG_ERROR);
	repo_oneshot();		/* a check connects once, and exits */
	if ((r = repo_check_open(&k.cfg)) == NULL) {
		explicit_bzero(k.key, sizeof(k.key));
		return 1;
	}
	if (repo_check_connect(r, &e) != REPO_OK)
		say(&k, "error", "database", "cannot connect to %s as %s: "
		    "error %u, %s", k.cfg.db_name, k.cfg.db_user, e,
		    repo_check_advice(e));
	else {
		say(&k, "ok", "database", "connected to %s as %s",
		    k.cfg.db_name, k.cfg.db_user);
		check_nodes(&k);
		check_server(&k, r);
		check_schema(&k, r);
		check_dml(&k, r);
		if (who & CHECK_ADMIN)
			check_ddl(&k, r);
		if (k.haskey)
			check_secrets(&k, r);
	}
	explicit_bzero(k.key, sizeof(k.key));
	repo_check_close(r);
	fflush(stdout);
	return k.errors ? 1 : 0;
}
