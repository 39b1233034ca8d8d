/*
 * load.c - the load driver and the master helpers that the master
 * tests share (see load.h). Every wait is a bounded poll.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi_client.h"
#include "load.h"

static volatile int	 load_stop;

/* The value of "name":"..." in body into out; 0 or -1. */
static int
json_str(const char *body, const char *name, char *out, size_t sz)
{
	char		 pat[64];
	const char	*p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", name);
	if (body == NULL || (p = strstr(body, pat)) == NULL)
		return -1;
	p += strlen(pat);
	if ((e = strchr(p, '"')) == NULL || (size_t)(e - p) >= sz)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

/* Notes request n of l as failed (what happened, r as far as read). */
static void
failure(struct load *l, long n, const char *what, const struct fcgi_resp *r)
{
	snprintf(l->why, sizeof(l->why), "request %ld: %s, status %d, "
	    "%zu bytes (errno %d)", n, what, r->status, r->out_len, errno);
}

/*
 * Files one finished (or failed) request n of l on fd (rc of its read):
 * a whole answer with want (a submit's, cid set, with a poll token,
 * kept when LOAD_ACKS), else half, closed or bad.
 */
static void
tally(struct load *l, long n, int fd, int rc, struct fcgi_resp *r,
    int want, const char *cid)
{
	if (rc == -1) {
		if (r->out_len > 0 || r->err_len > 0)
			l->half++;
		else
			l->closed++;
		failure(l, n, fd == -1 ? "no connection" : "no whole answer", r);
		return;
	}
	l->answered++;
	if (r->status != want || r->proto_status != 0 || (cid != NULL &&
	    (r->body == NULL || strstr(r->body, "pollToken") == NULL))) {
		l->bad++;
		l->bad_status = r->status;
		failure(l, n, "unexpected answer", r);
		return;
	}
	if (cid != NULL && l->acks != NULL && l->nacks < MAX_ACKS &&
	    json_str(r->body, "pollToken", l->acks[l->nacks][1], 96) == 0) {
		snprintf(l->acks[l->nacks][0], 96, "%s", cid);
		l->nacks++;
	}
}

/*
 * One request of l: even n a /healthz (200), odd n a submit (202). With
 * LOAD_SLOW the odd-numbered clients pause SLOW_MS between connect and
 * the first record of a /healthz, as a busy web server may. 0, or -1
 * refused at connect.
 */
static int
load_one(struct load *l, long n)
{
	static const char *const hz[] = { "REQUEST_METHOD", "GET",
	    "REQUEST_URI", "/healthz", "SCRIPT_NAME", "/healthz" };
	struct fcgi_resp	 r;
	long long		 dl = ut_now_ms() + REQ_MS;
	char			 cid[96], body[64];
	int			 fd, rc = -1;

	memset(&r, 0, sizeof(r));
	snprintf(cid, sizeof(cid), "%s-%ld-%d-%ld", l->prefix, (long)getpid(),
	    l->no, n);
	snprintf(body, sizeof(body), "{\"n\":%ld}", n);
	errno = 0;
	if (n % 2 == 0) {
		if ((fd = fcgi_connect(l->sock)) == -1)
			goto refused;
		if ((l->no % 2 == 0 || !(l->flags & LOAD_SLOW) ||
		    (ut_pause_ms(SLOW_MS), 1)) && fcgi_begin(fd, dl) == 0 &&
		    fcgi_params(fd, hz, 3, dl) == 0 &&
		    fcgi_stdin(fd, NULL, 0, dl) == 0)
			rc = fcgi_read(fd, &r, dl);
	} else {
		if ((fd = submit_start(l->sock, cid, body, strlen(body), dl)) ==
		    -1 && (errno == ENOENT || errno == ECONNREFUSED))
			goto refused;
		if (fd != -1)
			rc = fcgi_read(fd, &r, dl);
	}
	tally(l, n, fd, rc, &r, n % 2 == 0 ? 200 : 202, n % 2 ? cid : NULL);
	if (fd != -1)
		close(fd);
	fcgi_resp_free(&r);
	return 0;
refused:
	l->last_errno = errno;
	l->refused++;
	failure(l, n, "no connection", &r);
	return -1;
}

static void *
load_main(void *arg)
{
	struct load	*l = arg;
	long		 n = 0;

	while (!load_stop)
		if (load_one(l, n++) == -1 && (l->flags & LOAD_STOP_ON_REFUSAL))
			break;
	return NULL;
}

int
load_start(struct load *ls, const char *sock, const char *prefix, int flags)
{
	const char	*uri, *auth;
	int		 i;

	if (proc_route_key(&uri, &auth) == -1)
		return -1;
	load_stop = 0;
	for (i = 0; i < LOAD_THREADS; i++) {
		memset(&ls[i], 0, sizeof(ls[i]));
		ls[i].sock = sock;
		ls[i].prefix = prefix;
		ls[i].no = i;
		ls[i].flags = flags;
		if ((flags & LOAD_ACKS) && (ls[i].acks = calloc(MAX_ACKS,
		    sizeof(*ls[i].acks))) == NULL)
			return -1;
		if (pthread_create(&ls[i].tid, NULL, load_main, &ls[i]) != 0)
			return -1;
	}
	return 0;
}

void
load_join(struct load *ls, struct load *t)
{
	int	 i;

	load_stop = 1;
	memset(t, 0, sizeof(*t));
	for (i = 0; i < LOAD_THREADS; i++) {
		(void)pthread_join(ls[i].tid, NULL);
		t->answered += ls[i].answered;
		t->refused += ls[i].refused;
		t->closed += ls[i].closed;
		t->half += ls[i].half;
		t->bad += ls[i].bad;
		t->nacks += ls[i].nacks;
		if (ls[i].bad > 0)
			t->bad_status = ls[i].bad_status;
		if (ls[i].why[0] != '\0')
			memcpy(t->why, ls[i].why, sizeof(t->why));
	}
	t->failed = t->refused + t->closed + t->half + t->bad;
}

/* The whole answers of the load so far. */
static long
answered(const struct load *ls)
{
	long	 n = 0;
	int	 i;

	for (i = 0; i < LOAD_THREADS; i++)
		n += ls[i].answered;
	return n;
}

struct more_wait {
	const struct load	*ls;
	long			 until;
};

static int
more_answered(void *arg)
{
	struct more_wait	*m = arg;

	return answered(m->ls) >= m->until;
}

int
load_more(const struct load *ls, long n)
{
	struct more_wait	 m = { ls, answered(ls) + n };

	return wait_for(more_answered, &m, START_MS);
}

void
load_report(const char *what, const struct load *t)
{
	printf("figure: %s: %ld answered (%ld submits acknowledged), %ld "
	    "refused at connect, %ld closed without an answer, %ld half "
	    "answers, %ld unexpected statuses (last %d)\n", what, t->answered,
	    t->nacks, t->refused, t->closed, t->half, t->bad, t->bad_status);
}

/* GET uri/cid with auth and token on sock: whether it answers 200 for cid. */
static int
poll_one(const char *sock, const char *uri, const char *auth,
    const char *cid, const char *token)
{
	struct fcgi_resp	 r;
	const char		*kv[2 * (FCGI_BASE_PARAMS + 2)];
	char			 path[256], want[160];
	long long		 dl = ut_now_ms() + REQ_MS;
	size_t			 n;
	int			 fd, ok;

	snprintf(path, sizeof(path), "%s/%s", uri, cid);
	n = fcgi_base_params(kv, "GET", path, NULL, NULL);
	kv[2 * n] = "HTTP_AUTHORIZATION", kv[2 * n + 1] = auth, n++;
	kv[2 * n] = "HTTP_X_POLL_TOKEN", kv[2 * n + 1] = token, n++;
	memset(&r, 0, sizeof(r));
	if ((fd = fcgi_connect(sock)) == -1)
		return 0;
	snprintf(want, sizeof(want), "\"correlationId\":\"%s\"", cid);
	ok = fcgi_begin(fd, dl) == 0 && fcgi_params(fd, kv, n, dl) == 0 &&
	    fcgi_stdin(fd, NULL, 0, dl) == 0 && fcgi_read(fd, &r, dl) == 0 &&
	    r.status == 200 && r.body != NULL && strstr(r.body, want) != NULL;
	fcgi_resp_free(&r);
	close(fd);
	return ok;
}

long
poll_back(const struct load *ls, const char *sock)
{
	const char	*uri, *auth;
	long		 ok = 0, j;
	int		 i;

	if (proc_route_key(&uri, &auth) == -1)
		return -1;
	for (i = 0; i < LOAD_THREADS; i++)
		for (j = 0; j < ls[i].nacks; j++)
			ok += poll_one(sock, uri, auth, ls[i].acks[j][0],
			    ls[i].acks[j][1]);
	return ok;
}

void
load_free(struct load *ls)
{
	int	 i;

	for (i = 0; i < LOAD_THREADS; i++) {
		free(ls[i].acks);
		ls[i].acks = NULL;
	}
}

pid_t
master_up(const char *cfg, const char *sock, const char *log, size_t n,
    const struct run_as *as)
{
	struct up_wait		 u = { 0, sock, -1 };
	struct n_workers	 nw;
	struct exit_wait	 w;
	pid_t			 m;

	if ((m = start_master_as(cfg, log, -1, as)) <= 0)
		return -1;
	u.pid = w.pid = nw.master = m;
	nw.want = n;
	if (!wait_for(answers, &u, START_MS) || has_exited(&w) ||
	    u.status != 200 || !wait_for(has_n_workers, &nw, START_MS)) {
		fprintf(stderr, "asyncexec-fcgi did not come up (%s)\n", cfg);
		dump_log(log);
		kill_master(m);
		return -1;
	}
	return m;
}

int
term_and_wait(pid_t m, int ms, long long *took)
{
	long long	 t0 = ut_now_ms();
	int		 st;

	(void)kill(m, SIGTERM);
	st = wait_master_exit(m, ms);
	if (took != NULL)
		*took = ut_now_ms() - t0;
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

long long
time_until(int (*cond)(void *), void *arg, long long t0, int ms)
{
	while (!cond(arg)) {
		if (ut_now_ms() - t0 > ms)
			return -1;
		ut_pause_ms(2);
	}
	return ut_now_ms() - t0;
}

int
inflight_start(const char *sock, const char *cid)
{
	return submit_start(sock, cid, HALF_BODY, HALF_SENT, ut_now_ms() + REQ_MS);
}

int
finish_inflight(int fd)
{
	static const char	 body[] = HALF_BODY;
	struct fcgi_resp	 r;
	long long		 dl = ut_now_ms() + REQ_MS;
	int			 ok;

	memset(&r, 0, sizeof(r));
	ok = fcgi_stdin(fd, body + HALF_SENT, strlen(body) - HALF_SENT,
	    dl) == 0 && fcgi_stdin(fd, NULL, 0, dl) == 0 &&
	    fcgi_read(fd, &r, dl) == 0 && r.ended && r.proto_status == 0 &&
	    r.status == 202 && r.body != NULL &&
	    strstr(r.body, "\"pollToken\"") != NULL;
	if (!ok)
		fprintf(stderr, "in flight: status %d, %zu bytes\n", r.status,
		    r.out_len);
	fcgi_resp_free(&r);
	close(fd);
	return ok;
}

int
holder(void *arg)
{
	struct holder_wait	*h = arg;
	pid_t			 pids[MAX_PIDS];
	size_t			 n, i;
	unsigned long		 peer;

	/* 0 until a worker has accepted the connection: not yet */
	if ((peer = sock_peer(h->client)) == 0)
		return 0;
	n = workers_of(h->master, pids, MAX_PIDS);
	for (i = 0; i < n; i++)
		if (reading_socket(pids[i], peer)) {
			h->pid = pids[i];
			return 1;
		}
	return 0;
}

int
logged(void *arg)
{
	struct log_wait	*l = arg;

	return log_count(l->path, l->needle) > 0;
}

/* The real uid of pid (first field of the Uid: line), or -1. */
static long
uid_of(pid_t pid)
{
	char	 path[64], *s, *p;
	long	 uid = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((s = read_file(path)) == NULL)
		return -1;
	if ((p = strstr(s, "\nUid:")) != NULL)
		uid = strtol(p + 5, NULL, 10);
	free(s);
	return uid;
}

/* Whether pid's real uid is *(uid_t *)arg. */
static int
uid_match(pid_t pid, void *arg)
{
	return uid_of(pid) == (long)*(uid_t *)arg;
}

size_t
procs_of_uid(uid_t uid)
{
	return proc_walk(uid_match, &uid, NULL, 0);
}

uid_t
unused_uid(uid_t base)
{
	uid_t	 u = base + (uid_t)(getpid() % 2000);

	while (procs_of_uid(u) > 0)
		u++;
	return u;
}

int
user_config(const char *name, uid_t uid, char *cfg, char *sock, size_t sz)
{
	char		*dir = path_in_tmp(name), pw[600], extra[700];
	char		*base, *text;
	const char	*v;

	extra[0] = '\0';
	if (chmod(tmpdir, 0711) == -1 || mkdir(dir, 0755) == -1 ||
	    chown(dir, uid, NOGROUP) == -1 || (base = read_file(base_cfg)) ==
	    NULL)
		return -1;
	if ((v = config_value(base, "db_password_file")) != NULL &&
	    (text = read_file(v)) != NULL) {
		snprintf(pw, sizeof(pw), "%s/pw", dir);
		if (write_file(pw, text) == 0 && chown(pw, uid, NOGROUP) == 0)
			snprintf(extra, sizeof(extra),
			    "db_password_file = %s\n", pw);
		free(text);
	}
	free(base);
	snprintf(cfg, sz, "%s/%s.conf", dir, name);
	snprintf(sock, sz, "%s/%s.sock", dir, name);
	return derive_config_x(cfg, sock, WORKERS_STR, extra, NULL);
}

int
run_scenarios(const char *name, const struct scenario *sc, size_t n,
    int argc, char *argv[])
{
	const char	*only = argc > 1 ? argv[1] : NULL;
	size_t		 i;

	if (proc_init(name) == -1)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < n; i++)
		if (only == NULL || strcmp(only, sc[i].name) == 0)
			sc[i].run();
	kill_all();
	remove_tmpdir();
	return 0;
}
