/*
 * dash.c - the operator dashboard's framework: the escaping function, the
 * page frame (headers, head, navigation), times and ages, the query's
 * numbers, the dashboard's database handle, and GET
 * /dashboard/style.css (the one stylesheet; no inline style: the
 * Content-Security-Policy forbids it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dash.h"
#include "json.h"
#include "repo_dash.h"

static const struct {
	const char	*path, *title;
} pages[] = {
#define DASH_DEF(id, path, title)	[DASH_##id] = { path, title },
	DASH_PAGES(DASH_DEF)
#undef DASH_DEF
};

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;"
    "background:#f6f7f9}\n"
    "header{background:#24303d;color:#fff;padding:.6em 1.2em}\n"
    "header b{margin-right:1.5em}\n"
    "nav a{color:#cfe0f2;margin-right:1em;text-decoration:none}\n"
    "nav a.on{color:#fff;border-bottom:2px solid #fff}\n"
    "main{padding:1em 1.2em}\n"
    "h1{font-size:1.4em;margin:.2em 0 .6em}\n"
    "h2{font-size:1.1em;margin:1.2em 0 .4em}\n"
    "table{border-collapse:collapse;background:#fff;margin-bottom:1em}\n"
    "th,td{border:1px solid #d6dbe1;padding:.25em .6em;text-align:left;"
    "vertical-align:top}\n"
    "th{background:#eef1f4;font-weight:600}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".ok{color:#176b2c;font-weight:600}\n"
    ".bad{color:#a4161a;font-weight:600}\n"
    ".warn{color:#8a5a00;font-weight:600}\n"
    ".muted{color:#6b7580}\n"
    "p.more a{font-weight:600}\n"
    "footer{padding:1em 1.2em;color:#6b7580;font-size:.85em}\n";

/*
 * Appends s to b with &, <, >, " and ' as character references: the one
 * function every text of a page goes through. NULL appends nothing.
 */
void
dash_esc(struct buf *b, const char *s)
{
	const char	*p;
	size_t		 n;

	if (s == NULL)
		return;
	for (p = s; *p != '\0'; p += n) {
		n = strcspn(p, "&<>\"'");
		buf_append(b, p, n);
		switch (p[n]) {
		case '\0':
			return;
		case '&':
			buf_puts(b, "&amp;");
			break;
		case '<':
			buf_puts(b, "&lt;");
			break;
		case '>':
			buf_puts(b, "&gt;");
			break;
		case '"':
			buf_puts(b, "&quot;");
			break;
		default:
			buf_puts(b, "&#39;");
			break;
		}
		n++;
	}
}

/*
 * Appends one printf conversion at *f (after its '%') of ap to b; each
 * %s through dash_esc. Returns the character after the conversion.
 * Knows s, d, u, ld, lu, lld, llu, zu and %%: the page code's.
 */
static const char *
conv(struct buf *b, const char *f, va_list *ap)
{
	size_t	 n = strspn(f, "lz");

	if (n > 2 || f[n] == '\0')
		return f + strlen(f);
	if (strncmp(f, "s", 1) == 0)
		dash_esc(b, va_arg(*ap, const char *));
	else if (strncmp(f, "d", 1) == 0)
		buf_printf(b, "%d", va_arg(*ap, int));
	else if (strncmp(f, "u", 1) == 0)
		buf_printf(b, "%u", va_arg(*ap, unsigned));
	else if (strncmp(f, "ld", 2) == 0)
		buf_printf(b, "%ld", va_arg(*ap, long));
	else if (strncmp(f, "lu", 2) == 0)
		buf_printf(b, "%lu", va_arg(*ap, unsigned long));
	else if (strncmp(f, "lld", 3) == 0)
		buf_printf(b, "%lld", va_arg(*ap, long long));
	else if (strncmp(f, "llu", 3) == 0)
		buf_printf(b, "%llu", va_arg(*ap, unsigned long long));
	else if (strncmp(f, "zu", 2) == 0)
		buf_printf(b, "%zu", va_arg(*ap, size_t));
	else if (*f == '%')
		buf_puts(b, "%");
	return f + n + 1;
}

/*
 * printf into b for page markup: fmt is the page's own (trusted) text,
 * and every %s argument is escaped by dash_esc. The numbers as printf.
 */
void
dash_html(struct buf *b, const char *fmt, ...)
{
	va_list		 ap;
	const char	*p = fmt;
	size_t		 n;

	va_start(ap, fmt);
	while (*p != '\0') {
		n = strcspn(p, "%");
		buf_append(b, p, n);
		p += n;
		if (*p == '%')
			p = conv(b, p + 1, &ap);
	}
	va_end(ap);
}

/*
 * Starts a page: the dashboard's headers (HTML, the CSP, no framing, no
 * referrer; Cache-Control no-store is every answer's), the head with the
 * stylesheet, the navigation with page marked, and the title as h1.
 */
void
dash_begin(struct resp *resp, enum dash_page page, const char *base,
    const char *title)
{
	struct buf	*b = &resp->body;
	size_t		 i;

	resp_header(resp, "Content-Security-Policy", "%s", DASH_CSP);
	resp_header(resp, "X-Content-Type-Options", "nosniff");
	resp_header(resp, "X-Frame-Options", "DENY");
	resp_header(resp, "Referrer-Policy", "no-referrer");
	dash_html(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
	    "charset=\"utf-8\"><title>%s - asyncexec</title><link "
	    "rel=\"stylesheet\" href=\"%sstyle.css\"></head>\n<body><header>"
	    "<b>asyncexec " ASYNCEXEC_VERSION "</b><nav>", title, base);
	for (i = 0; i < sizeof(pages) / sizeof(pages[0]); i++)
		dash_html(b, "<a href=\"%s%s\" class=\"%s\">%s</a>", base,
		    pages[i].path, (enum dash_page)i == page ? "on" : "off",
		    pages[i].title);
	dash_html(b, "</nav></header>\n<main><h1>%s</h1>\n", title);
}

/* Ends the page begun by dash_begin; HERR_OK, or HERR_INTERNAL (memory). */
enum herr
dash_end(struct resp *resp)
{
	buf_puts(&resp->body, "</main>\n<footer>read-only; figures as of this "
	    "request</footer>\n</body></html>\n");
	if (buf_failed(&resp->body))
		return HERR_INTERNAL;
	resp->status = 200;
	resp->content_type = "text/html; charset=utf-8";
	return HERR_OK;
}

/* A time (UTC milliseconds) as RFC 3339 in <time>; 0: "never". */
void
dash_time(struct buf *b, int64_t ms)
{
	char	 t[RFC3339_LEN + 1];

	if (ms <= 0) {
		buf_puts(b, "<span class=\"muted\">never</span>");
		return;
	}
	json_time(ms, t);
	dash_html(b, "<time datetime=\"%s\">%s</time>", t, t);
}

/* How long before now ms was, as "1 d 2 h", "3 h 4 m", "5 m 6 s", "7 s"; 0: "-". */
void
dash_age(struct buf *b, int64_t ms, int64_t now)
{
	long long	 s = ms > 0 && now > ms ? (now - ms) / 1000 : 0;

	if (ms <= 0)
		buf_puts(b, "-");
	else if (s >= 86400)
		buf_printf(b, "%lld d %lld h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		buf_printf(b, "%lld h %lld m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		buf_printf(b, "%lld m %lld s", s / 60, s % 60);
	else
		buf_printf(b, "%lld s", s);
}

/* A section the database could not fill. */
void
dash_unavailable(struct buf *b, const char *what)
{
	dash_html(b, "<p class=\"bad\">%s: the database did not answer "
	    "(see the log)</p>\n", what);
}

/*
 * The dashboard's own database handle (repo_dash.h), opened on first
 * use and kept by the worker (worker.c closes it); NULL when it cannot
 * be made (memory).
 */
struct ddb *
dash_db(struct app *app)
{
	if (app->dash == NULL)
		app->dash = repo_dash_open(app->cfg);
	return app->dash;
}

/*
 * The query parameter name as an unsigned decimal into *v (*given 1), or
 * *given 0 when absent. HERR_OK, or HERR_INVALID_REQUEST when present
 * but not 1..20 digits.
 */
enum herr
dash_query_u64(const struct req *req, const char *name, uint64_t *v,
    int *given)
{
	const char	*p = req->query;
	size_t		 kl = strlen(name), n, i;

	*given = 0;
	while (p != NULL && *p != '\0') {
		n = strcspn(p, "&");
		if (n > kl && strncmp(p, name, kl) == 0 && p[kl] == '=') {
			if (n - kl - 1 < 1 || n - kl - 1 > 19)
				return HERR_INVALID_REQUEST;
			for (*v = 0, i = kl + 1; i < n; i++) {
				if (p[i] < '0' || p[i] > '9')
					return HERR_INVALID_REQUEST;
				*v = *v * 10 + (uint64_t)(p[i] - '0');
			}
			*given = 1;
			return HERR_OK;
		}
		p += n + (p[n] == '&');
	}
	return HERR_OK;
}

/* The value of hex digit c, or -1. */
static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The query parameter name, percent-decoded, into v (size bytes, NUL
 * terminated; *given 1), or *given 0 when absent. HERR_OK, or
 * HERR_INVALID_REQUEST when present but empty, longer than size - 1,
 * badly encoded or holding a control character (the caller checks the
 * value itself: valid.h).
 */
enum herr
dash_query_str(const struct req *req, const char *name, char *v, size_t size,
    int *given)
{
	const char	*p = req->query;
	size_t		 kl = strlen(name), n, i, o;
	int		 hi, lo;

	*given = 0;
	while (p != NULL && *p != '\0') {
		n = strcspn(p, "&");
		if (n > kl && strncmp(p, name, kl) == 0 && p[kl] == '=') {
			for (o = 0, i = kl + 1; i < n; i++) {
				if (o + 1 >= size)
					return HERR_INVALID_REQUEST;
				if (p[i] == '%') {
					if (i + 2 >= n ||
					    (hi = hexval(p[i + 1])) < 0 ||
					    (lo = hexval(p[i + 2])) < 0)
						return HERR_INVALID_REQUEST;
					v[o++] = (char)(hi * 16 + lo);
					i += 2;
				} else
					v[o++] = p[i] == '+' ? ' ' : p[i];
				if ((unsigned char)v[o - 1] < 0x20)
					return HERR_INVALID_REQUEST;
			}
			if (o == 0)
				return HERR_INVALID_REQUEST;
			v[o] = '\0';
			*given = 1;
			return HERR_OK;
		}
		p += n + (p[n] == '&');
	}
	return HERR_OK;
}

/* GET /dashboard/style.css: the stylesheet (an hour in no cache: no-store). */
enum herr
handle_dash_css(struct app *app, struct req *req, struct resp *resp)
{
	(void)app;
	(void)req;
	resp_header(resp, "X-Content-Type-Options", "nosniff");
	buf_append(&resp->body, style, sizeof(style) - 1);
	resp->status = 200;
	resp->content_type = "text/css; charset=utf-8";
	return buf_failed(&resp->body) ? HERR_INTERNAL : HERR_OK;
}
