/*
 * buf.h - a growable byte buffer.
 *
 * A buf owns its storage; buf_free releases it. Appends return 0, or -1
 * when memory ran out (the buffer is then marked failed and later appends
 * are no-ops, so callers may check once at the end with buf_failed()).
 *
 * lib layer: any layer.
 */
#ifndef ASYNCEXEC_BUF_H
#define ASYNCEXEC_BUF_H

#include <stddef.h>

struct buf {
	char	*data;
	size_t	 len;
	size_t	 cap;
	int	 failed;
};

void	 buf_init(struct buf *);
void	 buf_free(struct buf *);
void	 buf_reset(struct buf *);
int	 buf_reserve(struct buf *, size_t);
int	 buf_append(struct buf *, const void *, size_t);
int	 buf_puts(struct buf *, const char *);
int	 buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 buf_failed(const struct buf *);
char	*buf_cstr(struct buf *);

#endif
