/*
 * test_httpc_connect.c - the tests' HTTP client keeps a connect that a signal interrupts
 * (seen on Debian 13 as "httpc: connect 127.0.0.1:N: Interrupted system call" in
 * fault_db). No services: a loopback listener whose accept queue is full makes the next
 * connect wait for the SYN's retransmission; a SIGALRM handler without SA_RESTART
 * interrupts it; once the listener accepts, the connect must finish and serve a request.
 */
#include "check.h"
#include "httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;

static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A listener on 127.0.0.1 (port in *sa) with the smallest accept queue. */
static int
listener(struct sockaddr_in *sa)
{
	socklen_t n = sizeof(*sa);
	struct timeval tv = { .tv_sec = 5 };	/* bounds accept too */
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) != 0 ||
	    listen(fd, 0) != 0 || getsockname(fd, (struct sockaddr *)sa, &n) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
		return -1;
	return fd;
}

struct server {
	int lfd;
	int served;
};

/*
 * Waits until the client has been interrupted, then accepts every queued connection
 * (the fillers first) and answers the last one with a minimal HTTP response.
 */
static void *
serve(void *arg)
{
	struct server *sv = arg;
	static const char resp[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
	char buf[4096];
	int fd, i;

	for (i = 0; i < 2000 && alarms == 0; i++)
		usleep(1000);
	for (i = 0; i < 3; i++) {
		if ((fd = accept(sv->lfd, NULL, NULL)) < 0)
			return NULL;
		/* the fillers send nothing; the client's request arrives at once */
		struct timeval tv = { .tv_usec = 200000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (read(fd, buf, sizeof buf) > 0) {
			(void)!write(fd, resp, sizeof resp - 1);
			sv->served++;
		}
		close(fd);
		if (sv->served)
			break;
	}
	return NULL;
}

int
main(void)
{
	struct sigaction act = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	struct sockaddr_in sa;
	struct server sv = { 0 };
	struct http_resp r;
	pthread_t th;
	char target[64];
	int fill[2], i;

	/* its exchanges with the stand-in server are not the API: keep them out of http_openapi */
	unsetenv("ASYNCEXEC_TEST_RECORD");
	sigemptyset(&act.sa_mask);
	sigaction(SIGALRM, &act, NULL);
	sv.lfd = listener(&sa);
	CHECK(sv.lfd >= 0);
	/* a queue of 0 holds one connection: fill it, and one more SYN waits */
	for (i = 0; i < 2; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fill[i], (struct sockaddr *)&sa, sizeof sa);
	}
	usleep(50000);
	snprintf(target, sizeof target, "127.0.0.1:%u", ntohs(sa.sin_port));
	setenv("ASYNCEXEC_TEST_HTTP", target, 1);
	http_set_target(target);
	pthread_create(&th, NULL, serve, &sv);
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK_EQ_INT(http_do("GET", "/x", NULL, NULL, 0, &r), 0);
	CHECK_EQ_INT(r.status, 204);
	http_resp_free(&r);
	pthread_join(th, NULL);
	CHECK(alarms == 1);
	CHECK_EQ_INT(sv.served, 1);
	for (i = 0; i < 2; i++)
		close(fill[i]);
	close(sv.lfd);
	return check_done("unit_httpc_connect");
}
