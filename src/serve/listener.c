/*
 * listener.c - the listening socket of the master: inherited (fd 0, or
 * fd 3 under systemd socket activation), a unix socket it creates, or a
 * TCP one (listener.h).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "listener.h"
#include "log.h"
#include "peer.h"

/* The socket file listener_open created, unlinked when the stop begins. */
static char	 owned_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
/* The TCP socket listener_open created, shut down when the stop begins. */
static int	 owned_tcp = -1;

/* Whether fd is a listening stream socket (inherited, spawn-fcgi style). */
static int
is_listening(int fd)
{
	int		 v = 0;
	socklen_t	 l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) == 0 && v;
}

/* The gid of cfg->listen_group into *gid ((gid_t)-1: none). 0 or -1. */
static int
listen_gid(const struct config *cfg, gid_t *gid)
{
	struct group	*g;

	*gid = (gid_t)-1;
	if (cfg->listen_group[0] == '\0')
		return 0;
	if ((g = getgrnam(cfg->listen_group)) == NULL) {
		log_error("listen_group %s: no such group", cfg->listen_group);
		return -1;
	}
	*gid = g->gr_gid;
	return 0;
}

/*
 * Makes sure no one listens on the socket file at sa: a file nobody
 * accepts on (ECONNREFUSED) is stale and removed; a live one (connect
 * succeeds, or its backlog is full) means another instance serves it.
 * 0 when the path is free, -1 (logged) to refuse to start.
 */
static int
claim_path(const struct sockaddr_un *sa)
{
	struct stat	 st;
	int		 fd, rc, err;

	if (lstat(sa->sun_path, &st) == -1 || !S_ISSOCK(st.st_mode))
		return 0;	/* absent; anything else fails in bind */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	err = errno;
	close(fd);
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS) {
		log_error("listen on %s: another instance is listening on "
		    "it; refusing to start", sa->sun_path);
		return -1;
	}
	if (err != ECONNREFUSED) {
		log_error("listen on %s: cannot tell whether another instance "
		    "listens on it: %s", sa->sun_path, strerror(err));
		return -1;
	}
	if (unlink(sa->sun_path) == -1 && errno != ENOENT) {
		log_error("unlink %s: %s", sa->sun_path, strerror(errno));
		return -1;
	}
	log_info("master: removed the stale socket %s", sa->sun_path);
	return 0;
}

/*
 * Binds fd to sa with the umask at ~listen_mode, so that the file is
 * never wider than listen_mode, then applies the group and the mode.
 * 0, or -1 (logged; a file bind created is removed).
 */
static int
bind_socket(const struct config *cfg, int fd, const struct sockaddr_un *sa,
    gid_t gid)
{
	mode_t	 old;
	int	 rc;

	old = umask((mode_t)(~cfg->listen_mode & 0777));
	rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	umask(old);
	if (rc == -1) {
		log_error("bind %s: %s", cfg->listen, strerror(errno));
		return -1;
	}
	if (gid != (gid_t)-1 && chown(cfg->listen, (uid_t)-1, gid) == -1) {
		log_error("chown %s: %s", cfg->listen, strerror(errno));
		goto fail;
	}
	if (chmod(cfg->listen, (mode_t)cfg->listen_mode) == -1) {
		log_error("chmod %s: %s", cfg->listen, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	(void)unlink(cfg->listen);
	return -1;
}

/*
 * An inherited listening socket fd (systemd's ListenStream, spawn-fcgi)
 * that is TCP (AF_INET, or AF_INET6: ListenStream=PORT gives a
 * dual-stack one) is refused without listen_allow: FastCGI has no
 * authentication, anyone who reaches the port could send requests as
 * the web server; the workers check every peer against the list. A
 * socket of another family, whose peers cannot be checked, is refused.
 * fd, or -1 (logged).
 */
static int
inherited_ok(const struct config *cfg, int fd)
{
	switch (peer_listen_kind(fd)) {
	case LISTEN_UNIX:
		return fd;
	case LISTEN_IP:
		if (cfg->listen_allow[0] != '\0')
			return fd;
		log_error("the inherited socket (fd %d) is a TCP one: set "
		    "listen_allow to the web servers' addresses; refusing to "
		    "start", fd);
		return -1;
	case LISTEN_OTHER:
		break;
	}
	log_error("the inherited socket (fd %d) is neither a unix nor a TCP "
	    "one: its peers cannot be checked; refusing to start", fd);
	return -1;
}

/*
 * A TCP socket listening on ADDRESS:PORT (listen_allow, checked by the
 * configuration, names who may connect: the workers close others'
 * connections at accept). An address in use (another instance) is an
 * error. fd or -1.
 */
static int
listen_tcp(const struct config *cfg, const char *addr, unsigned port)
{
	struct sockaddr_in	 sa;
	int			 fd, on = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, (int)cfg->listen_backlog) == -1) {
		log_error("listen on %s: %s%s", cfg->listen, strerror(errno),
		    errno == EADDRINUSE ? " (another instance?); refusing to "
		    "start" : "");
		close(fd);
		return -1;
	}
	owned_tcp = fd;
	return fd;
}

/*
 * Returns the listening socket: an inherited one (fd 0, or fd 3 under
 * systemd socket activation), else a new unix socket at cfg->listen
 * (*created is set) or, for ADDRESS:PORT, a TCP socket. A stale socket
 * file is replaced; a socket another instance still listens on is an
 * error. -1 on error (logged).
 */
int
listener_open(const struct config *cfg, int *created)
{
	struct sockaddr_un	 sa;
	const char		*lp = getenv("LISTEN_PID");
	char			 addr[64];
	unsigned		 port;
	gid_t			 gid;
	int			 fd;

	*created = 0;
	if (lp != NULL && atol(lp) == (long)getpid() && is_listening(3))
		return inherited_ok(cfg, 3);
	if (is_listening(0))
		return inherited_ok(cfg, 0);
	if (config_listen_tcp(cfg->listen, addr, sizeof(addr), &port) == 1)
		return listen_tcp(cfg, addr, port);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg->listen);
	if (listen_gid(cfg, &gid) == -1 || claim_path(&sa) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	if (bind_socket(cfg, fd, &sa, gid) == -1) {
		close(fd);
		return -1;
	}
	if (listen(fd, (int)cfg->listen_backlog) == -1) {
		log_error("listen on %s: %s", cfg->listen, strerror(errno));
		(void)unlink(cfg->listen);
		close(fd);
		return -1;
	}
	snprintf(owned_path, sizeof(owned_path), "%s", cfg->listen);
	*created = 1;
	return fd;
}

/* Unlinks the socket file listener_open created, if any (new connections are refused). */
void
listener_unlink(void)
{
	if (owned_path[0] != '\0')
		(void)unlink(owned_path);
}

/*
 * Stops the TCP socket listener_open created, if any, from listening in
 * every process that holds it (new connections are refused, and those
 * in its queue reset): a worker busy with a request keeps its copy open
 * until it has answered, and a connection queued meanwhile would wait,
 * unaccepted, until the last copy closed. Called after the workers were
 * sent SIGTERM, so that a worker that then finds the socket ready sees
 * its SIGTERM pending and does not accept. A socket systemd passed is
 * never shut down: systemd keeps it listening for the next start.
 */
void
listener_shutdown(void)
{
	if (owned_tcp != -1)
		(void)shutdown(owned_tcp, SHUT_RDWR);
}

/*
 * What socket fd listens on, for the log: its path, or ADDRESS:PORT
 * ([ADDRESS]:PORT for IPv6), from getsockname, so that an inherited
 * socket (systemd's ListenStream=, spawn-fcgi) is named as it is, not
 * as the configuration's listen says. buf (size bytes); "?" when fd
 * tells nothing.
 */
const char *
listener_name(int fd, char *buf, size_t size)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	char			 a[INET6_ADDRSTRLEN];

	snprintf(buf, size, "?");
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return buf;
	if (ss.ss_family == AF_UNIX)
		snprintf(buf, size, "%s", ((struct sockaddr_un *)&ss)->sun_path);
	else if (ss.ss_family == AF_INET && inet_ntop(AF_INET,
	    &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a)) != NULL)
		snprintf(buf, size, "%s:%u", a,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	else if (ss.ss_family == AF_INET6 && inet_ntop(AF_INET6,
	    &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a)) != NULL)
		snprintf(buf, size, "[%s]:%u", a,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	return buf;
}
