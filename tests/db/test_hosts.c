/*
 * test_hosts.c - db_hosts writer pinning against the real MariaDB
 * (ASYNCEXEC_TEST_CONFIG's TCP address) and ports where nothing listens:
 *
 *   1. a dead first node: the connection goes to the next one and the
 *      shared pin (the host's writer) moves there, counted once;
 *   2. a second handle (another worker) starts at the pin: no new move;
 *   3. a reload (pin reset): a connected handle follows the pin back to
 *      the first node, finds it dead and moves on again;
 *   4. a handle follows another worker's move, wrapping round the list;
 *   5. no usable node: REPO_ERR at once, no hang;
 *   6. node 1 at its max_connections (a server that answers the
 *      handshake with error 1040, as MariaDB does when it is full) or
 *      refusing the login (1045): REPO_ERR (503) and the pin stays on
 *      node 1, not counted as a failover (it used to move for good).
 * The same against a real Galera cluster (node SIGKILL, rejoin) is
 * tests/cluster's.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "buf.h"
#include "config.h"
#include "db.h"
#include "metrics.h"
#include "pin.h"
#include "repo.h"
#include "check.h"
#include "util/port.h"

static struct config	 base;

/* base with db_hosts set to the n (host, port) pairs given. */
static void
with_hosts(struct config *c, unsigned n, const unsigned *ports)
{
	unsigned	 i;

	*c = base;
	c->db_socket[0] = '\0';
	c->db_nhosts = n;
	for (i = 0; i < n; i++) {
		snprintf(c->db_hosts[i].host, sizeof(c->db_hosts[i].host),
		    "127.0.0.1");
		c->db_hosts[i].port = ports[i];
	}
}

/* The value of the unlabelled series name in the metrics text. */
static long
series(const char *name)
{
	struct buf	 b;
	char		 pat[96];
	const char	*p;
	long		 v = -1;

	buf_init(&b);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	if (metrics_render(&b) == 0 && buf_append(&b, "", 1) == 0 &&
	    (p = strstr(b.data, pat)) != NULL)
		v = strtol(p + strlen(pat), NULL, 10);
	buf_free(&b);
	return v;
}

/*
 * A fake node answering every connection with one error packet, until
 * full_node_stop (the thread reads this struct: it must outlive it).
 */
struct full_node {
	int		 fd;
	unsigned	 code;
	const char	*msg;
	pthread_t	 th;
};

static void *
full_node_run(void *arg)
{
	struct full_node	*f = arg;
	unsigned char		 p[128];
	size_t			 n = strlen(f->msg);
	int			 c;

	/* ERR before any handshake: length, seq 0, 0xff, code, message */
	p[0] = (unsigned char)(n + 3), p[1] = 0, p[2] = 0, p[3] = 0;
	p[4] = 0xff, p[5] = (unsigned char)(f->code & 0xff);
	p[6] = (unsigned char)(f->code >> 8);
	memcpy(p + 7, f->msg, n);
	while ((c = accept(f->fd, NULL, NULL)) != -1) {
		(void)write(c, p, n + 7);
		close(c);
	}
	return NULL;
}

/* Starts a fake node on 127.0.0.1 answering code; its port, 0 on error. */
static unsigned
full_node_start(struct full_node *f, unsigned code, const char *msg)
{
	struct sockaddr_in	 sa;
	socklen_t		 len = sizeof(sa);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->code = code;
	f->msg = msg;
	if ((f->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(f->fd, 16) == -1 || getsockname(f->fd,
	    (struct sockaddr *)&sa, &len) == -1 ||
	    pthread_create(&f->th, NULL, full_node_run, f) != 0)
		return 0;
	return ntohs(sa.sin_port);
}

/*
 * Stops the fake node: shutting the listener down ends its accept loop
 * (a detached thread left running accepted on the next fake's socket,
 * which reused this one's fd, and answered with the earlier code).
 */
static void
full_node_stop(struct full_node *f)
{
	(void)shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->fd);
}

/*
 * 6: node 1 answers code (not a lost or refused connection): the
 * connect fails with code and the pin stays at node 1.
 */
static void
no_move_on(unsigned code, const char *msg)
{
	struct full_node f;
	struct config	 c;
	struct db	*d;
	unsigned	 p[2], pin = 9;
	long		 moves = series("asyncexec_db_failovers_total");

	p[0] = full_node_start(&f, code, msg);
	p[1] = base.db_port;
	CHECK(p[0] != 0);
	with_hosts(&c, 2, p);
	pin_set(0);
	CHECK((d = repo_open(&c, 0)) != NULL);
	CHECK(repo_ping(d) == REPO_ERR);
	CHECK(pin_get(&pin) == 0);
	printf("figure: node 1 answering %u: connect error %u, pin at node "
	    "%u, failovers +%ld\n", code, db_errno(d), pin + 1,
	    series("asyncexec_db_failovers_total") - moves);
	CHECK_EQ_INT(db_errno(d), code);
	CHECK_EQ_INT(pin, 0);
	CHECK_EQ_INT(series("asyncexec_db_failovers_total"), moves);
	CHECK_EQ_INT(series("asyncexec_db_writer_index"), 0);
	repo_close(d);
	if (p[0] != 0)
		full_node_stop(&f);
}

/* The node (1 first) handle db is on, 0 when it cannot say. */
static int
node_of(struct db *db)
{
	struct repo_node n;

	return repo_node_state(db, &n) == REPO_OK ? n.node : 0;
}

int
main(void)
{
	static const char *const names[] = { "none" };
	const char	*path = getenv("ASYNCEXEC_TEST_CONFIG");
	struct config	 c1, c2, c3;
	struct db	*a, *b, *c, *d;
	struct repo_node n;
	unsigned	 live, dead, dead2, pin = 9, p[2];
	char		 err[512];
	double		 t0;

	if (path == NULL || config_load(&base, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", path ? err : "ASYNCEXEC_TEST_CONFIG "
		    "is not set: run scripts/test.sh");
		return 1;
	}
	CHECK(metrics_init(names, 1) == 0 && pin_init() == 0);
	live = base.db_port;
	dead = test_free_port();
	dead2 = test_free_port();
	CHECK(dead != 0 && dead2 != 0 && dead != live);

	/* 1: dead first node, the pin moves to the second */
	p[0] = dead, p[1] = live;
	with_hosts(&c1, 2, p);
	CHECK((a = repo_open(&c1, 0)) != NULL);
	CHECK(repo_ping(a) == REPO_OK);
	CHECK(pin_get(&pin) == 0 && pin == 1);
	CHECK(repo_node_state(a, &n) == REPO_OK);
	CHECK_EQ_INT(n.cluster, 1);
	CHECK_EQ_INT(n.node, 2);
	CHECK_EQ_INT(n.wsrep, 0);
	CHECK_EQ_INT(n.ready, 1);
	snprintf(err, sizeof(err), "127.0.0.1:%u", live);
	CHECK_EQ_STR(n.addr, err);
	CHECK_EQ_INT(series("asyncexec_db_failovers_total"), 1);
	CHECK_EQ_INT(series("asyncexec_db_writer_index"), 1);

	/* 2: another worker starts at the pin */
	CHECK((b = repo_open(&c1, 0)) != NULL);
	CHECK(repo_ping(b) == REPO_OK);
	CHECK_EQ_INT(node_of(b), 2);
	CHECK_EQ_INT(series("asyncexec_db_failovers_total"), 1);

	/* 3: a reload sends the pin back; the handle follows and moves on */
	pin_set(0);
	CHECK_EQ_INT(series("asyncexec_db_writer_index"), 0);
	CHECK(repo_ping(a) == REPO_OK);
	CHECK_EQ_INT(node_of(a), 2);
	CHECK(pin_get(&pin) == 0 && pin == 1);
	CHECK_EQ_INT(series("asyncexec_db_failovers_total"), 2);

	/* 4: live first; another worker's move is followed, wrapping */
	p[0] = live, p[1] = dead;
	with_hosts(&c2, 2, p);
	pin_set(0);
	CHECK((c = repo_open(&c2, 0)) != NULL);
	CHECK(repo_ping(c) == REPO_OK);
	CHECK_EQ_INT(node_of(c), 1);
	CHECK_EQ_INT(pin_move(0, 1), 1);
	CHECK_EQ_INT(pin_move(0, 1), 0);	/* moved already */
	CHECK(repo_ping(c) == REPO_OK);
	CHECK_EQ_INT(node_of(c), 1);
	CHECK(pin_get(&pin) == 0 && pin == 0);

	/* 5: nothing usable: an error at once */
	p[0] = dead, p[1] = dead2;
	with_hosts(&c3, 2, p);
	CHECK((d = repo_open(&c3, 0)) != NULL);
	t0 = ut_now_s();
	CHECK(repo_ping(d) == REPO_ERR);
	CHECK(ut_now_s() - t0 < 1.5);
	repo_close(d);
	repo_close(c);
	repo_close(b);
	repo_close(a);

	/* 6: a full node, a refused login: 503, no move */
	no_move_on(1040, "Too many connections");
	no_move_on(1045, "Access denied for user 'asyncexec'@'localhost'");
	return check_done("db_hosts");
}
