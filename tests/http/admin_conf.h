/*
 * admin_conf.h - configuration files for http_admin's runs of the
 * binaries: the test stack's config (CONF) with some keys replaced, one
 * of its values, a file of given text and mode. Static functions:
 * include it once, after fixture.h.
 */
#ifndef ASYNCEXEC_ADMIN_CONF_H
#define ASYNCEXEC_ADMIN_CONF_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Whether the "key = value" lines of EXTRA set the key that LINE sets. */
static int
overridden(const char *line, const char *extra)
{
	size_t n = strcspn(line, " =");
	const char *p;

	if (n == 0 || line[0] == '#')
		return 0;
	for (p = extra; *p != '\0'; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
		if (strncmp(p, line, n) == 0 && strchr(" =", p[n]) != NULL)
			return 1;
	return 0;
}

/* Writes the test config minus the keys of EXTRA ("key = value\n" lines), plus EXTRA. */
static int
derive(const char *dst, const char *extra)
{
	FILE *in = fopen(CONF, "r"), *o = fopen(dst, "w");
	char line[1024];
	int rc = -1;

	if (in == NULL || o == NULL)
		goto done;
	while (fgets(line, sizeof line, in) != NULL)
		if (!overridden(line, extra))
			fputs(line, o);
	fputs(extra, o);
	rc = 0;
done:
	if (in)
		fclose(in);
	if (o)
		fclose(o);
	if (rc == 0)
		chmod(dst, 0600);
	return rc;
}

/* The value of KEY in the test config (static buffer), or "". */
static const char *
conf_value(const char *key)
{
	static char v[512];
	FILE *f = fopen(CONF, "r");
	char line[1024];
	size_t n = strlen(key);

	v[0] = '\0';
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, n) == 0 && strchr(" =", line[n]) != NULL) {
			char *p = line + n + strspn(line + n, " =");
			snprintf(v, sizeof v, "%.*s", (int)strcspn(p, "\r\n"), p);
		}
	if (f)
		fclose(f);
	return v;
}

static int
write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, mode);
}

#endif
