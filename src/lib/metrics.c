/*
 * metrics.c - request counters, latency histogram and worker gauges
 * shared by all processes through one MAP_SHARED anonymous mapping made
 * before fork. Every series is rendered from the start, at 0.
 *
 * Busy workers: each worker has a flag of its own in the mapping, which
 * the master gives it before the fork (metrics_worker_slot: the child
 * inherits the choice) and clears when it reaps that worker, so a worker
 * killed inside a request (SIGKILL, the OOM killer) is not counted busy
 * for ever, as a shared +1/-1 counter left it. Which pid holds which
 * flag only the master knows (owner, in its own memory).
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "buf.h"
#include "metrics.h"

static const int statuses[] = { 200, 202, 304, 400, 401, 404, 405, 409,
    413, 415, 429, 500, 503 };
#define NSTATUS		(sizeof(statuses) / sizeof(statuses[0]))
static const double bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
#define NBOUNDS		(sizeof(bounds) / sizeof(bounds[0]))

static const char *const refusal_names[REFUSED__MAX] = {
	[REFUSED_STALE_TOKEN] = "stale_token",
	[REFUSED_TERMINAL] = "already_terminal",
	[REFUSED_NO_CANCEL] = "no_cancel_request",
};

struct shm {
	uint64_t	 requests[METRICS_MAX_ENDPOINTS][NSTATUS + 1];
	uint64_t	 hist[METRICS_MAX_ENDPOINTS][NBOUNDS + 1];
	uint64_t	 sum_us[METRICS_MAX_ENDPOINTS];
	uint64_t	 db_errors;
	uint64_t	 db_reconnects;
	uint64_t	 workers;
	uint32_t	 busy[METRICS_WORKER_SLOTS];	/* 1: serving */
	uint64_t	 restarts;
	uint64_t	 refused[REFUSED__MAX];
	uint64_t	 writer;	/* the pin word last reported */
	uint64_t	 failovers;
};

static struct shm		*shm;
static const char *const	*names;
static int			 nnames;
static pid_t			 owner[METRICS_WORKER_SLOTS]; /* master's */
static int			 mine = -1;	/* this worker's flag */

/*
 * Maps the shared region; call once in the master, before the fork.
 * endpoint_names[0..n-1] name the endpoints metrics_request counts
 * (they must outlive the process: static strings). 0 or -1.
 */
int
metrics_init(const char *const *endpoint_names, int n)
{
	void	*p;

	if (n < 1 || n > METRICS_MAX_ENDPOINTS)
		return -1;
	p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	memset(p, 0, sizeof(struct shm));
	shm = p;
	names = endpoint_names;
	nnames = n;
	return 0;
}

static void
add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static uint64_t
get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Counts one request of endpoint e with its status and duration. */
void
metrics_request(int e, int status, double seconds)
{
	size_t	 s, b;

	if (shm == NULL || e < 0 || e >= nnames)
		return;
	for (s = 0; s < NSTATUS && statuses[s] != status; s++)
		;
	for (b = 0; b < NBOUNDS && seconds > bounds[b]; b++)
		;
	add(&shm->requests[e][s], 1);
	add(&shm->hist[e][b], 1);
	add(&shm->sum_us[e], (uint64_t)(seconds * 1e6));
}

void
metrics_db_error(void)
{
	if (shm != NULL)
		add(&shm->db_errors, 1);
}

void
metrics_db_reconnect(void)
{
	if (shm != NULL)
		add(&shm->db_reconnects, 1);
}

/* The master's worker count (asyncexec_workers). */
void
metrics_workers(unsigned total)
{
	if (shm != NULL)
		__atomic_store_n(&shm->workers, total, __ATOMIC_RELAXED);
}

/* A worker forked to replace one that exited. */
void
metrics_worker_restart(void)
{
	if (shm != NULL)
		add(&shm->restarts, 1);
}

/* This worker's flag: 1 while it serves a request, 0 when it is done. */
void
metrics_busy(int on)
{
	if (shm != NULL && mine >= 0)
		__atomic_store_n(&shm->busy[mine], on ? 1 : 0,
		    __ATOMIC_RELAXED);
}

/*
 * The master, before a fork: reserves a free flag for the child (which
 * inherits mine); none when all are taken (the child is not counted).
 */
void
metrics_worker_slot(void)
{
	int	 i;

	mine = -1;
	if (shm == NULL)
		return;
	for (i = 0; i < METRICS_WORKER_SLOTS && owner[i] != 0; i++)
		;
	if (i == METRICS_WORKER_SLOTS)
		return;
	__atomic_store_n(&shm->busy[i], 0, __ATOMIC_RELAXED);
	owner[i] = -1;
	mine = i;
}

/* The master, after the fork: the flag reserved is pid's (-1: failed). */
void
metrics_worker_forked(pid_t pid)
{
	if (mine >= 0)
		owner[mine] = pid > 0 ? pid : 0;
	mine = -1;
}

/* The master, once it has reaped pid: its flag is cleared and free. */
void
metrics_worker_reaped(pid_t pid)
{
	int	 i;

	if (shm == NULL || pid <= 0)
		return;
	for (i = 0; i < METRICS_WORKER_SLOTS && owner[i] != pid; i++)
		;
	if (i == METRICS_WORKER_SLOTS)
		return;
	__atomic_store_n(&shm->busy[i], 0, __ATOMIC_RELAXED);
	owner[i] = 0;
}

/* The sum of the busy flags (asyncexec_workers_busy). */
static uint64_t
busy_sum(void)
{
	uint64_t	 n = 0;
	int		 i;

	for (i = 0; i < METRICS_WORKER_SLOTS; i++)
		n += __atomic_load_n(&shm->busy[i], __ATOMIC_RELAXED);
	return n;
}

void
metrics_refused(enum refusal r)
{
	if (shm != NULL && r < REFUSED__MAX)
		add(&shm->refused[r], 1);
}

/*
 * The writer gauge: node, reported with the pin's generation gen (both
 * in one word, gen in the high half), stored only when gen is newer than
 * the one shown, so that two processes reporting moves at once leave the
 * last move's node.
 */
void
metrics_db_writer(uint64_t gen, unsigned node)
{
	uint64_t	 w, word = gen << 32 | (node & 0xffffffffu);

	if (shm == NULL)
		return;
	w = __atomic_load_n(&shm->writer, __ATOMIC_RELAXED);
	do {
		if ((w >> 32) >= gen)
			return;
	} while (!__atomic_compare_exchange_n(&shm->writer, &w, word, 0,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

void
metrics_db_failover(void)
{
	if (shm != NULL)
		add(&shm->failovers, 1);
}

/*
 * Reads the counters and gauges /metrics shows unlabelled (and the 429s
 * of every endpoint) into s, for the dashboard. 0, or -1 without
 * metrics_init (s zeroed).
 */
int
metrics_snapshot(struct metrics_snap *s)
{
	size_t	 i, k429 = 0;
	int	 e, r;

	memset(s, 0, sizeof(*s));
	if (shm == NULL)
		return -1;
	s->db_errors = get(&shm->db_errors);
	s->db_reconnects = get(&shm->db_reconnects);
	s->workers = get(&shm->workers);
	s->busy = busy_sum();
	s->restarts = get(&shm->restarts);
	s->writer_index = get(&shm->writer) & 0xffffffffu;
	s->failovers = get(&shm->failovers);
	for (r = 0; r < REFUSED__MAX; r++)
		s->refused[r] = get(&shm->refused[r]);
	for (i = 0; i < NSTATUS; i++)
		if (statuses[i] == 429)
			k429 = i;
	for (e = 0; e < nnames; e++)
		s->status_429 += get(&shm->requests[e][k429]);
	return 0;
}

/* A "# HELP" and "# TYPE" pair. */
static void
head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Renders the request counters of every endpoint and status. */
static void
render_requests(struct buf *b)
{
	int	 e;
	size_t	 s;

	head(b, "asyncexec_requests_total", "counter",
	    "Requests answered, by endpoint and HTTP status.");
	for (e = 0; e < nnames; e++)
		for (s = 0; s <= NSTATUS; s++) {
			buf_printf(b, "asyncexec_requests_total{endpoint=\"%s\","
			    "status=\"", names[e]);
			if (s < NSTATUS)
				buf_printf(b, "%d", statuses[s]);
			else
				buf_puts(b, "other");
			buf_printf(b, "\"} %llu\n", (unsigned long long)
			    get(&shm->requests[e][s]));
		}
}

/* Renders the latency histogram of endpoint e. */
static void
render_hist(struct buf *b, int e)
{
	uint64_t	 cum = 0;
	size_t		 i;

	for (i = 0; i <= NBOUNDS; i++) {
		cum += get(&shm->hist[e][i]);
		buf_printf(b, "asyncexec_request_duration_seconds_bucket"
		    "{endpoint=\"%s\",le=\"", names[e]);
		if (i < NBOUNDS)
			buf_printf(b, "%g", bounds[i]);
		else
			buf_puts(b, "+Inf");
		buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
	}
	buf_printf(b, "asyncexec_request_duration_seconds_sum{endpoint=\"%s\"}"
	    " %.6f\n", names[e], (double)get(&shm->sum_us[e]) / 1e6);
	buf_printf(b, "asyncexec_request_duration_seconds_count"
	    "{endpoint=\"%s\"} %llu\n", names[e], (unsigned long long)cum);
}

/* Renders one unlabelled series. */
static void
one(struct buf *b, const char *name, const char *type, const char *help,
    uint64_t v)
{
	head(b, name, type, help);
	buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* Appends the Prometheus text exposition to b; 0 or -1. */
int
metrics_render(struct buf *b)
{
	int	 e, r;

	if (shm == NULL)
		return -1;
	head(b, "asyncexec_build_info", "gauge",
	    "Always 1; the version of this build as a label.");
	buf_puts(b, "asyncexec_build_info{version=\"" ASYNCEXEC_VERSION "\"} 1\n");
	render_requests(b);
	head(b, "asyncexec_request_duration_seconds", "histogram",
	    "Time from accepting a request to having written its response.");
	for (e = 0; e < nnames; e++)
		render_hist(b, e);
	one(b, "asyncexec_db_errors_total", "counter", "Failed database "
	    "statements and connects.", get(&shm->db_errors));
	one(b, "asyncexec_db_reconnects_total", "counter", "Connections "
	    "remade after a lost one.", get(&shm->db_reconnects));
	one(b, "asyncexec_workers", "gauge", "Worker processes the master "
	    "keeps.", get(&shm->workers));
	one(b, "asyncexec_workers_busy", "gauge", "Workers serving a request "
	    "now (this scrape included).", busy_sum());
	one(b, "asyncexec_worker_restarts_total", "counter", "Workers forked "
	    "to replace one that exited.", get(&shm->restarts));
	one(b, "asyncexec_db_writer_index", "gauge", "The database node "
	    "this host writes to: its position in db_hosts, 0 the first.",
	    get(&shm->writer) & 0xffffffffu);
	one(b, "asyncexec_db_failovers_total", "counter", "Moves of this "
	    "host's writer to the next node of db_hosts.",
	    get(&shm->failovers));
	head(b, "asyncexec_callbacks_refused_total", "counter",
	    "Callbacks answered 409, by reason.");
	for (r = 0; r < REFUSED__MAX; r++)
		buf_printf(b, "asyncexec_callbacks_refused_total{reason=\"%s\"} "
		    "%llu\n", refusal_names[r],
		    (unsigned long long)get(&shm->refused[r]));
	return buf_failed(b) ? -1 : 0;
}
