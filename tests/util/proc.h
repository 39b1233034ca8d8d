/*
 * proc.h - the tests' way to run a program and read what it printed
 * (header only, as clock.h).
 */
#ifndef ASYNCEXEC_TEST_PROC_H
#define ASYNCEXEC_TEST_PROC_H

#include <sys/wait.h>

#include <stdio.h>

/*
 * Runs the shell command cmd; the first sz - 1 bytes of its standard
 * output into out (NUL-terminated; out NULL: nothing kept), the rest read
 * and dropped. Its exit status, or -1 when it could not run or did not exit.
 */
static inline int
ut_run(const char *cmd, char *out, size_t sz)
{
	FILE	*f;
	size_t	 n = 0;
	int	 st;

	if (out != NULL && sz > 0)
		out[0] = '\0';
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	if (out != NULL && sz > 0) {
		n = fread(out, 1, sz - 1, f);
		out[n] = '\0';
	}
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
