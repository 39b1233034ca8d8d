/*
 * buf.c - growable byte buffer; see buf.h for the contract.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void
buf_init(struct buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
buf_free(struct buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Empties the buffer but keeps its storage. */
void
buf_reset(struct buf *b)
{
	b->len = 0;
	b->failed = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/* Ensures room for n more bytes plus a NUL; 0 or -1 (marks failed). */
int
buf_reserve(struct buf *b, size_t n)
{
	size_t	 need, cap;
	char	*p;

	if (b->failed)
		return -1;
	if (n > ((size_t)-1) / 2 - b->len)
		goto fail;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	if ((p = realloc(b->data, cap)) == NULL)
		goto fail;
	b->data = p;
	b->cap = cap;
	return 0;
fail:
	b->failed = 1;
	return -1;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) == -1)
		return -1;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_reserve(b, (size_t)n) == -1) {
		b->failed = 1;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int
buf_failed(const struct buf *b)
{
	return b->failed;
}

/* Returns the NUL-terminated contents ("" when empty); owned by b. */
char *
buf_cstr(struct buf *b)
{
	if (b->data == NULL && buf_reserve(b, 0) == -1)
		return NULL;
	b->data[b->len] = '\0';
	return b->data;
}
