/*
 * bench_probe.c - ceiling probes for scripts/bench.sh: the least a preforked libfcgi
 * program behind the same nginx can do per request, to compare asyncexec against.
 *
 *   bench_probe --config FILE --listen SOCKET [--max-id N] hello|select|insert
 *
 *   hello   answers every request with a fixed small JSON body (no database)
 *   select  one prepared primary-key SELECT of a random existing s2r_async_execution row
 *           per request (ids between MIN(id) and MAX(id) at start-up; with --max-id, of
 *           the rows up to id N: the same rows after more were added), answered as JSON
 *   insert  one autocommit prepared INSERT into bench_probe per request (the request body,
 *           at most 255 bytes, is the payload); answers 202 with the new id
 *
 * It reads the application's configuration (database settings and `workers`), creates
 * SOCKET (mode 0666), forks that many workers that accept on it (and hold what nginx
 * keeps open, with the application's src/serve/held.c), and runs until SIGTERM or
 * SIGINT: then it stops the workers, removes the socket and exits 0. When a worker
 * dies, the probe stops altogether (exit 1). Workers connect to MariaDB after the fork
 * with the application's connection settings.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <mysql.h>

#include "config.h"
#include "conn.h"
#include "held.h"

#define MAX_WORKERS	256
#define MAX_PAYLOAD	255

enum mode { M_HELLO, M_SELECT, M_INSERT };

static enum mode mode;
static unsigned long long max_id;	/* select: --max-id, 0 none */
static struct config cfg;
static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
	FCGX_ShutdownPending();
}

static _Noreturn void
die(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench_probe[%ld]: ", (long)getpid());
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* ---- worker ------------------------------------------------------------------------- */

struct worker {
	MYSQL		*db;
	MYSQL_STMT	*st;
	unsigned long long lo, hi;	/* select: id range */
	unsigned	 seed;
};

static void
reply(FCGX_Request *r, int status, const char *reason, const char *body, int n)
{
	FCGX_FPrintF(r->out, "Status: %d %s\r\nCache-Control: no-store\r\n"
	    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", status, reason, n);
	FCGX_PutStr(body, n, r->out);
}

static void
db_connect(struct worker *w)
{
	unsigned to = cfg.db_connect_timeout, io = 30;
	int sock = cfg.db_socket[0] != '\0';

	if ((w->db = mysql_init(NULL)) == NULL)
		die("%s", "mysql_init failed");
	mysql_options(w->db, MYSQL_OPT_CONNECT_TIMEOUT, &to);
	mysql_options(w->db, MYSQL_OPT_READ_TIMEOUT, &io);
	mysql_options(w->db, MYSQL_OPT_WRITE_TIMEOUT, &io);
	mysql_options(w->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(w->db, MYSQL_INIT_COMMAND,
	    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	if (mysql_real_connect(w->db, sock ? NULL : cfg.db_host, cfg.db_user,
	    cfg.db_password, cfg.db_name, sock ? 0 : cfg.db_port, sock ? cfg.db_socket : NULL,
	    0) == NULL)
		die("connect: %s", mysql_error(w->db));
}

static void
prepare(struct worker *w, const char *sql)
{
	if ((w->st = mysql_stmt_init(w->db)) == NULL ||
	    mysql_stmt_prepare(w->st, sql, strlen(sql)) != 0)
		die("prepare: %s", mysql_error(w->db));
}

static void
select_range(struct worker *w)
{
	MYSQL_RES *res;
	MYSQL_ROW row;

	char q[160];

	snprintf(q, sizeof q, "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0) "
	    "FROM s2r_async_execution WHERE id <= %llu", max_id ? max_id : ~0ULL);
	if (mysql_query(w->db, q) != 0 || (res = mysql_store_result(w->db)) == NULL)
		die("range: %s", mysql_error(w->db));
	if ((row = mysql_fetch_row(res)) == NULL)
		die("%s", "range: no row");
	w->lo = strtoull(row[0], NULL, 10);
	w->hi = strtoull(row[1], NULL, 10);
	mysql_free_result(res);
	if (w->hi == 0)
		die("%s", "select probe: s2r_async_execution is empty (seed it first)");
}

static void
serve_select(struct worker *w, FCGX_Request *r)
{
	unsigned long long id = w->lo + (unsigned long long)rand_r(&w->seed) % (w->hi - w->lo + 1);
	unsigned long long rid = 0;
	char cid[129], status[32], body[512];
	unsigned long cid_len = 0, status_len = 0;
	my_bool cid_null = 0, status_null = 0, created_null = 0;
	MYSQL_TIME created;
	MYSQL_BIND p, res[4];
	int n, rc;

	memset(&p, 0, sizeof p);
	p.buffer_type = MYSQL_TYPE_LONGLONG;
	p.buffer = &id;
	p.is_unsigned = 1;
	memset(res, 0, sizeof res);
	memset(&created, 0, sizeof created);
	res[0].buffer_type = MYSQL_TYPE_LONGLONG;
	res[0].buffer = &rid;
	res[0].is_unsigned = 1;
	res[1].buffer_type = MYSQL_TYPE_STRING;
	res[1].buffer = cid;
	res[1].buffer_length = sizeof cid - 1;
	res[1].length = &cid_len;
	res[1].is_null = &cid_null;
	res[2].buffer_type = MYSQL_TYPE_STRING;
	res[2].buffer = status;
	res[2].buffer_length = sizeof status - 1;
	res[2].length = &status_len;
	res[2].is_null = &status_null;
	res[3].buffer_type = MYSQL_TYPE_DATETIME;
	res[3].buffer = &created;
	res[3].is_null = &created_null;
	if (mysql_stmt_bind_param(w->st, &p) != 0 || mysql_stmt_execute(w->st) != 0 ||
	    mysql_stmt_bind_result(w->st, res) != 0)
		die("select: %s", mysql_stmt_error(w->st));
	rc = mysql_stmt_fetch(w->st);
	if (rc == 1)
		die("fetch: %s", mysql_stmt_error(w->st));
	if (rc == MYSQL_NO_DATA) {
		n = snprintf(body, sizeof body, "{\"id\":%llu,\"found\":false}", id);
	} else {
		cid[cid_len < sizeof cid ? cid_len : sizeof cid - 1] = '\0';
		status[status_len < sizeof status ? status_len : sizeof status - 1] = '\0';
		n = snprintf(body, sizeof body, "{\"id\":%llu,\"correlationId\":\"%s\","
		    "\"status\":\"%s\",\"createdAt\":\"%04u-%02u-%02uT%02u:%02u:%02u.%03luZ\"}",
		    rid, cid, status, created.year, created.month, created.day, created.hour,
		    created.minute, created.second, created.second_part / 1000);
	}
	mysql_stmt_free_result(w->st);
	reply(r, 200, "OK", body, n);
}

static void
serve_insert(struct worker *w, FCGX_Request *r)
{
	char payload[MAX_PAYLOAD], body[64], sink[4096];
	unsigned long plen;
	struct timespec ts;
	struct tm tm;
	MYSQL_TIME now;
	MYSQL_BIND p[2];
	int n;

	n = FCGX_GetStr(payload, sizeof payload, r->in);
	plen = n > 0 ? (unsigned long)n : 0;
	while (FCGX_GetStr(sink, sizeof sink, r->in) > 0)
		;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	memset(&now, 0, sizeof now);
	now.year = (unsigned)tm.tm_year + 1900;
	now.month = (unsigned)tm.tm_mon + 1;
	now.day = (unsigned)tm.tm_mday;
	now.hour = (unsigned)tm.tm_hour;
	now.minute = (unsigned)tm.tm_min;
	now.second = (unsigned)tm.tm_sec;
	now.second_part = (unsigned long)(ts.tv_nsec / 1000000) * 1000;
	now.time_type = MYSQL_TIMESTAMP_DATETIME;
	memset(p, 0, sizeof p);
	p[0].buffer_type = MYSQL_TYPE_BLOB;
	p[0].buffer = payload;
	p[0].buffer_length = plen;
	p[0].length = &plen;
	p[1].buffer_type = MYSQL_TYPE_DATETIME;
	p[1].buffer = &now;
	if (mysql_stmt_bind_param(w->st, p) != 0 || mysql_stmt_execute(w->st) != 0)
		die("insert: %s", mysql_stmt_error(w->st));
	n = snprintf(body, sizeof body, "{\"id\":%llu}",
	    (unsigned long long)mysql_stmt_insert_id(w->st));
	reply(r, 202, "Accepted", body, n);
}

static void
serve_hello(FCGX_Request *r)
{
	static const char body[] = "{\"status\":\"ok\",\"probe\":\"hello\"}";
	char sink[4096];

	while (FCGX_GetStr(sink, sizeof sink, r->in) > 0)
		;
	reply(r, 200, "OK", body, (int)sizeof body - 1);
}

static _Noreturn void
worker_main(int listen_fd)
{
	struct worker w;
	struct held *h;
	struct held_ready ready;
	struct conn *c;
	FCGX_Request *r;
	sigset_t wait;
	int k;

	memset(&w, 0, sizeof w);
	w.seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (mode != M_HELLO)
		db_connect(&w);
	if (mode == M_SELECT) {
		select_range(&w);
		prepare(&w, "SELECT id, correlation_id, status, created_at "
		    "FROM s2r_async_execution WHERE id = ?");
	} else if (mode == M_INSERT) {
		prepare(&w, "INSERT INTO bench_probe (payload, created_at) VALUES (?, ?)");
	}
	if ((h = held_new(listen_fd, 1)) == NULL)
		die("%s", "FCGX_Init failed (or out of memory)");
	sigemptyset(&wait);	/* SIGTERM only while waiting, as worker.c does */
	while (!stopping) {
		if (held_wait(h, 1, -1, &wait, &ready) == -1)
			continue;
		for (k = 0; k < ready.n; k++) {
			if ((c = held_take(h, ready.slot[k])) == NULL)
				continue;
			switch (conn_accept(c)) {
			case CONN_AGAIN:
			case CONN_CLOSED:
				continue;
			case CONN_FAILED:
				if (stopping)
					continue;
				die("accept: %s", strerror(errno));
			case CONN_ACCEPTED:
				break;
			}
			r = conn_io(c);
			if (mode == M_HELLO)
				serve_hello(r);
			else if (mode == M_SELECT)
				serve_select(&w, r);
			else
				serve_insert(&w, r);
			conn_finish(c);
		}
	}
	held_free(h);
	if (w.st != NULL)
		mysql_stmt_close(w.st);
	if (w.db != NULL)
		mysql_close(w.db);
	_exit(0);
}

/* ---- master ------------------------------------------------------------------------- */

static int
listen_on(const char *path, unsigned backlog)
{
	struct sockaddr_un sa;
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		die("socket path too long: %s", path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	unlink(path);
	/* non-blocking: the workers that lose the race for a connection wait again */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(path, 0666) != 0 ||
	    listen(fd, (int)backlog) != 0)
		die("cannot listen on %s", path);
	return fd;
}

/* Stops the workers: SIGTERM, repeated every 100 ms (a worker may sit between libfcgi's
 * shutdown check and accept), SIGKILL after 5 s. Reaps them all. */
static void
stop_workers(pid_t *pids, unsigned n)
{
	unsigned i, alive;
	int k;

	for (k = 0; k < 50; k++) {
		for (i = 0, alive = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
				pids[i] = 0;
				continue;
			}
			kill(pids[i], SIGTERM);
			alive++;
		}
		if (alive == 0)
			return;
		usleep(100000);
	}
	for (i = 0; i < n; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

int
main(int argc, char **argv)
{
	const char *conf = NULL, *sock = NULL, *m = NULL;
	char err[512];
	pid_t pids[MAX_WORKERS], master = getpid();
	sigset_t set;
	unsigned n, i;
	int fd, sig, rc = 0, a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--config") == 0 && a + 1 < argc)
			conf = argv[++a];
		else if (strcmp(argv[a], "--listen") == 0 && a + 1 < argc)
			sock = argv[++a];
		else if (strcmp(argv[a], "--max-id") == 0 && a + 1 < argc)
			max_id = strtoull(argv[++a], NULL, 10);
		else if (argv[a][0] != '-' && m == NULL)
			m = argv[a];
		else
			m = NULL, a = argc;
	}
	if (conf == NULL || sock == NULL || m == NULL) {
		fprintf(stderr, "usage: bench_probe --config FILE --listen SOCKET "
		    "[--max-id N] hello|select|insert\n");
		return 2;
	}
	if (strcmp(m, "hello") == 0)
		mode = M_HELLO;
	else if (strcmp(m, "select") == 0)
		mode = M_SELECT;
	else if (strcmp(m, "insert") == 0)
		mode = M_INSERT;
	else
		die("unknown mode %s", m);
	if (config_load(&cfg, conf, err, sizeof err) != 0)
		die("%s", err);
	n = config_workers(&cfg);
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	fd = listen_on(sock, cfg.listen_backlog);
	for (i = 0; i < n; i++) {
		if ((pids[i] = fork()) < 0) {
			stop_workers(pids, i);
			die("%s", "fork failed");
		}
		if (pids[i] == 0) {
			struct sigaction sa;
			sigset_t keep;

			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != master)
				_exit(1);
			memset(&sa, 0, sizeof sa);
			sigemptyset(&sa.sa_mask);
			sa.sa_handler = on_term;	/* no SA_RESTART */
			sigaction(SIGTERM, &sa, NULL);
			sigaction(SIGINT, &sa, NULL);
			signal(SIGCHLD, SIG_DFL);
			/* TERM and INT stay blocked outside accept */
			sigemptyset(&keep);
			sigaddset(&keep, SIGTERM);
			sigaddset(&keep, SIGINT);
			sigprocmask(SIG_SETMASK, &keep, NULL);
			worker_main(fd);
		}
	}
	fprintf(stderr, "bench_probe[%ld]: %s with %u workers on %s\n", (long)master, m, n,
	    sock);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGCHLD) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);

			if (p <= 0)
				continue;
			for (i = 0; i < n; i++)
				if (pids[i] == p)
					pids[i] = 0;
			fprintf(stderr, "bench_probe: worker %ld exited (status %d); stopping\n",
			    (long)p, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			rc = 1;
		}
		break;
	}
	stop_workers(pids, n);
	close(fd);
	unlink(sock);
	return rc;
}
