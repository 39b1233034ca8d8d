/*
 * proc_scan.c - what /proc says of the processes under test (see
 * proc_util.h): state and parent, the workers and zombies of a master,
 * the system call a process is blocked in and on which socket, its
 * signal masks; and the other end of a connected socket (unix: sock_diag;
 * TCP: /proc/net/tcp and tcp6).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_util.h"

/*
 * The start of /proc/PID/WHAT (one read, NUL-terminated) into buf.
 * 0, or -1 when it cannot be read or is empty.
 */
static int
read_proc(pid_t pid, const char *what, char *buf, size_t sz)
{
	char	 path[64];
	ssize_t	 n;
	int	 fd;

	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, what);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

int
proc_stat(pid_t pid, struct pstat *ps)
{
	char	 buf[1024], *p;
	int	 ppid, pgrp;

	if (read_proc(pid, "stat", buf, sizeof(buf)) == -1)
		return -1;
	/* "pid (comm) S ppid pgrp ..."; comm may hold anything, even ")" */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d %d", &ps->state, &ppid, &pgrp) != 3)
		return -1;
	ps->ppid = (pid_t)ppid;
	ps->pgrp = (pid_t)pgrp;
	return 0;
}

/* Whether pid exists and is not a zombie. */
int
alive(pid_t pid)
{
	struct pstat	 ps;

	return proc_stat(pid, &ps) == 0 && ps.state != 'Z' && ps.state != 'X';
}

size_t
proc_walk(int (*match)(pid_t, void *), void *arg, pid_t *pids, size_t max)
{
	DIR		*d;
	struct dirent	*e;
	char		*end;
	long		 pid;
	size_t		 n = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || !match((pid_t)pid, arg))
			continue;
		if (n < max)
			pids[n] = (pid_t)pid;
		n++;
	}
	closedir(d);
	return n;
}

struct scan_arg {
	pid_t	 id;
	int	 by_group, zombies;
};

/*
 * Whether pid's parent (by_group 0) or process group (by_group 1) is
 * id, pid not id itself, and pid live (zombies 0) or a zombie (zombies
 * 1, state Z).
 */
static int
scan_match(pid_t pid, void *arg)
{
	struct scan_arg	*a = arg;
	struct pstat	 ps;

	if (pid == a->id || proc_stat(pid, &ps) == -1)
		return 0;
	if (a->zombies ? ps.state != 'Z' : (ps.state == 'Z' || ps.state == 'X'))
		return 0;
	return (a->by_group ? ps.pgrp : ps.ppid) == a->id;
}

size_t
scan(pid_t id, int by_group, pid_t *pids, size_t max)
{
	struct scan_arg	 a = { id, by_group, 0 };

	return proc_walk(scan_match, &a, pids, max);
}

size_t
zombies_of(pid_t master)
{
	struct scan_arg	 a = { master, 0, 1 };

	return proc_walk(scan_match, &a, NULL, 0);
}

size_t
workers_of(pid_t master, pid_t *pids, size_t max)
{
	return scan(master, 0, pids, max);
}

int
has_pid(const pid_t *pids, size_t n, pid_t pid)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/*
 * The number of the system call pid is blocked in (first field of
 * /proc/PID/syscall), or -1 when it runs, is not in one, or is gone.
 */
long
blocked_in(pid_t pid)
{
	char	 buf[256], *end;
	long	 nr;

	if (read_proc(pid, "syscall", buf, sizeof(buf)) == -1)
		return -1;
	nr = strtol(buf, &end, 10);
	if (end == buf || nr < 0)
		return -1;
	return nr;
}

/*
 * Whether pid is blocked in read(2) on the socket whose inode is ino:
 * the first argument in /proc/PID/syscall names the fd, and
 * /proc/PID/fd/FD links to "socket:[INO]".
 */
int
reading_socket(pid_t pid, unsigned long ino)
{
	char		 buf[256], path[64], link[64], want[48], *end;
	unsigned long	 fd;
	ssize_t		 n;

	if (ino == 0 || read_proc(pid, "syscall", buf, sizeof(buf)) == -1 ||
	    strtol(buf, &end, 10) != SYS_read || end == buf)
		return 0;
	errno = 0;
	fd = strtoul(end, NULL, 16);	/* " 0x5 ..." */
	if (errno != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/fd/%lu", (long)pid, fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) <= 0)
		return 0;
	link[n] = '\0';
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	return strcmp(link, want) == 0;
}

/*
 * The inode of the other end of the connected unix socket fd, as the
 * kernel's sock_diag (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER) tells it; 0
 * when it cannot, and while the server has not accepted the connection
 * (the other end has no inode until then).
 */
static unsigned long
unix_peer(int fd)
{
	struct {
		struct nlmsghdr		 nlh;
		struct unix_diag_req	 r;
	}			 req;
	union {
		struct nlmsghdr	 nlh;
		char		 buf[8192];
	}			 res;
	struct sockaddr_nl	 sa;
	struct stat		 st;
	struct unix_diag_msg	*m;
	struct rtattr		*a;
	unsigned long		 peer = 0;
	ssize_t			 len;
	int			 s, alen;

	if (fstat(fd, &st) == -1 || (s = socket(AF_NETLINK, SOCK_DGRAM |
	    SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) == -1)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = AF_UNIX;
	req.r.udiag_states = ~0U;
	req.r.udiag_ino = (unsigned)st.st_ino;
	req.r.udiag_show = UDIAG_SHOW_PEER;
	req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0U;
	if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&sa,
	    sizeof(sa)) == (ssize_t)sizeof(req) &&
	    (len = recv(s, &res, sizeof(res), 0)) > 0 &&
	    NLMSG_OK(&res.nlh, (unsigned)len) &&
	    res.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
		m = NLMSG_DATA(&res.nlh);
		alen = (int)(res.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
		for (a = (struct rtattr *)(m + 1); RTA_OK(a, alen);
		    a = RTA_NEXT(a, alen))
			if (a->rta_type == UNIX_DIAG_PEER &&
			    RTA_PAYLOAD(a) >= sizeof(uint32_t))
				peer = *(uint32_t *)RTA_DATA(a);
	}
	close(s);
	return peer;
}

/*
 * The inode of the TCP socket in table (/proc/net/tcp or tcp6) whose
 * local port is lport and remote port rport; 0 when there is none, and
 * while it waits in the listener's queue (no inode until accept(2)).
 */
static unsigned long
tcp_inode(const char *table, unsigned lport, unsigned rport)
{
	char		*s, *line, *save = NULL;
	unsigned	 lp, rp;
	unsigned long	 ino, found = 0;

	if ((s = read_file(table)) == NULL)
		return 0;
	for (line = strtok_r(s, "\n", &save); line != NULL && found == 0;
	    line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, " %*s %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %*x "
		    "%*s %*s %*s %*u %*u %lu", &lp, &rp, &ino) == 3 &&
		    lp == lport && rp == rport)
			found = ino;
	free(s);
	return found;
}

/* The ports of sockaddr sa (AF_INET or AF_INET6); 0 for another family. */
static unsigned
port_of(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

unsigned long
sock_peer(int fd)
{
	struct sockaddr_storage	 me, peer;
	socklen_t		 ml = sizeof(me), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) == -1)
		return 0;
	if (me.ss_family == AF_UNIX)
		return unix_peer(fd);
	if (getpeername(fd, (struct sockaddr *)&peer, &pl) == -1 ||
	    port_of(&me) == 0 || port_of(&peer) == 0)
		return 0;
	/* the server's end: its local port is our peer's, its remote ours */
	return tcp_inode(me.ss_family == AF_INET ? "/proc/net/tcp" :
	    "/proc/net/tcp6", port_of(&peer), port_of(&me));
}

/*
 * Whether system call nr is an idle worker's wait for a connection:
 * ppoll(2) on the listening socket (accept(2) in older workers).
 */
int
in_accept(long nr)
{
#ifdef SYS_accept
	if (nr == SYS_accept)
		return 1;
#endif
	return nr == SYS_accept4 || nr == SYS_ppoll;
}

/* The mask of signals of a "SigPnd:"/"ShdPnd:"/"SigBlk:" line of pid. */
unsigned long long
signal_mask(pid_t pid, const char *field)
{
	char			 path[64], *s, *p;
	unsigned long long	 m = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((s = read_file(path)) == NULL)
		return 0;
	if ((p = strstr(s, field)) != NULL)
		m = strtoull(p + strlen(field), NULL, 16);
	free(s);
	return m;
}
