/*
 * metrics.c - request counters and latency histogram shared by all
 * workers through one MAP_SHARED anonymous mapping made before fork.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "buf.h"
#include "metrics.h"
#include "router.h"

static const int statuses[] = { 200, 202, 304, 400, 401, 404, 405, 409,
    413, 415, 500, 503 };
#define NSTATUS		(sizeof(statuses) / sizeof(statuses[0]))
static const double bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1, 2.5 };
#define NBOUNDS		(sizeof(bounds) / sizeof(bounds[0]))

struct shm {
	uint64_t	 requests[ROUTE__MAX + 1][NSTATUS + 1];
	uint64_t	 hist[ROUTE__MAX + 1][NBOUNDS + 1];
	uint64_t	 sum_us[ROUTE__MAX + 1];
	uint64_t	 db_errors;
	uint64_t	 db_reconnects;
};

static struct shm *shm;

/* Maps the shared region; call once in the master. 0 or -1. */
int
metrics_init(void)
{
	void	*p;

	p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	memset(p, 0, sizeof(struct shm));
	shm = p;
	return 0;
}

static void
add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Counts one request of route (ROUTE_NONE for unmatched). */
void
metrics_request(int route, int status, double seconds)
{
	size_t	 s, b;

	if (shm == NULL || route < 0 || route > ROUTE__MAX)
		return;
	for (s = 0; s < NSTATUS && statuses[s] != status; s++)
		;
	for (b = 0; b < NBOUNDS && seconds > bounds[b]; b++)
		;
	add(&shm->requests[route][s], 1);
	add(&shm->hist[route][b], 1);
	add(&shm->sum_us[route], (uint64_t)(seconds * 1e6));
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

static uint64_t
get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Renders the latency histogram of route r. */
static void
render_hist(struct buf *b, int r)
{
	const char	*n = router_name((enum route)r);
	uint64_t	 cum = 0;
	size_t		 i;

	for (i = 0; i <= NBOUNDS; i++) {
		cum += get(&shm->hist[r][i]);
		if (i < NBOUNDS)
			buf_printf(b, "asyncexec_request_duration_seconds_bucket"
			    "{endpoint=\"%s\",le=\"%g\"} %llu\n", n, bounds[i],
			    (unsigned long long)cum);
		else
			buf_printf(b, "asyncexec_request_duration_seconds_bucket"
			    "{endpoint=\"%s\",le=\"+Inf\"} %llu\n", n,
			    (unsigned long long)cum);
	}
	buf_printf(b, "asyncexec_request_duration_seconds_sum{endpoint=\"%s\"}"
	    " %.6f\n", n, (double)get(&shm->sum_us[r]) / 1e6);
	buf_printf(b, "asyncexec_request_duration_seconds_count"
	    "{endpoint=\"%s\"} %llu\n", n, (unsigned long long)cum);
}

/* Appends the Prometheus text exposition to b; 0 or -1. */
int
metrics_render(struct buf *b)
{
	int	 r;
	size_t	 s;
	uint64_t v;

	if (shm == NULL)
		return -1;
	buf_puts(b, "# TYPE asyncexec_requests_total counter\n");
	for (r = 0; r <= ROUTE__MAX; r++)
		for (s = 0; s <= NSTATUS; s++)
			if ((v = get(&shm->requests[r][s])) > 0) {
				if (s < NSTATUS)
					buf_printf(b, "asyncexec_requests_total"
					    "{endpoint=\"%s\",status=\"%d\"} %llu\n",
					    router_name((enum route)r),
					    statuses[s], (unsigned long long)v);
				else
					buf_printf(b, "asyncexec_requests_total"
					    "{endpoint=\"%s\",status=\"other\"} %llu\n",
					    router_name((enum route)r),
					    (unsigned long long)v);
			}
	buf_puts(b, "# TYPE asyncexec_request_duration_seconds histogram\n");
	for (r = 0; r <= ROUTE__MAX; r++)
		render_hist(b, r);
	buf_printf(b, "# TYPE asyncexec_db_errors_total counter\n"
	    "asyncexec_db_errors_total %llu\n"
	    "# TYPE asyncexec_db_reconnects_total counter\n"
	    "asyncexec_db_reconnects_total %llu\n",
	    (unsigned long long)get(&shm->db_errors),
	    (unsigned long long)get(&shm->db_reconnects));
	return buf_failed(b) ? -1 : 0;
}
