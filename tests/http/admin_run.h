/*
 * admin_run.h - running asyncexec's binaries from http_admin with their
 * standard output and error captured (out, err) and an optional standard
 * input (input). Static functions: include it once, after check.h and
 * fixture.h.
 */
#ifndef ASYNCEXEC_ADMIN_RUN_H
#define ASYNCEXEC_ADMIN_RUN_H

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX		65536

static char out[OUT_MAX], err[OUT_MAX];
static const char *input;	/* standard input of the next run, NULL: none */
static const char *stdout_to;	/* the next run's stdout: a file (NULL: out) */
static char bindir[512];	/* where the binaries are (run) */

/* Runs argv (NULL-terminated) with stdout and stderr captured; its exit status or -1. */
static int
run_v(char *const *argv)
{
	int po[2], pe[2], pi[2], st;
	size_t no = 0, ne = 0;
	ssize_t n;
	pid_t pid;
	struct pollfd fds[2];

	out[0] = err[0] = '\0';
	if (pipe(po) == -1 || pipe(pe) == -1 || pipe(pi) == -1)
		return -1;
	if ((pid = fork()) == 0) {
		int fd = stdout_to ? open(stdout_to, O_WRONLY) : -1;

		dup2(fd != -1 ? fd : po[1], 1);
		dup2(pe[1], 2);
		dup2(pi[0], 0);
		close(po[0]), close(pe[0]), close(po[1]), close(pe[1]);
		close(pi[0]), close(pi[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]), close(pe[1]), close(pi[0]);
	/* a key or two: far below the pipe's buffer, written at once */
	if (input != NULL && write(pi[1], input, strlen(input)) != (ssize_t)strlen(input))
		fprintf(stderr, "  could not write the standard input\n");
	close(pi[1]);
	input = NULL;
	stdout_to = NULL;
	fds[0] = (struct pollfd){ po[0], POLLIN, 0 };
	fds[1] = (struct pollfd){ pe[0], POLLIN, 0 };
	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		if (poll(fds, 2, 60000) <= 0)
			break;
		for (int i = 0; i < 2; i++) {
			char *b = i ? err : out;
			size_t *len = i ? &ne : &no;
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			n = read(fds[i].fd, b + *len, OUT_MAX - 1 - *len);
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
			} else
				*len += (size_t)n;
			b[*len] = '\0';
		}
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Runs BIN (asyncexec-admin, -fcgi or -expire) with the words of FMT (split on spaces). */
static int
run(const char *bin, const char *fmt, ...) HTTPC_PRINTF(2, 3);
static int
run(const char *bin, const char *fmt, ...)
{
	static char line[4096];
	char path[600], *argv[64], *p;
	int argc = 0;
	va_list ap;

	snprintf(path, sizeof path, "%s/%s", bindir, bin);
	argv[argc++] = path;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	for (p = strtok(line, " "); p != NULL && argc < 63; p = strtok(NULL, " "))
		argv[argc++] = p;
	argv[argc] = NULL;
	return run_v(argv);
}

/* asyncexec-admin --config TEST_CONFIG ARGS; exit status, out/err filled. */
#define ADMIN(...)	run("asyncexec-admin", "--config %s " __VA_ARGS__)
#define CONF		test_env("ASYNCEXEC_TEST_CONFIG")

#endif
