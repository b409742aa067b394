/* strbuf.c: a growable string for printers and messages. */
#include "passrun/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

void pr_strbuf_init(pr_strbuf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void pr_strbuf_free(pr_strbuf *b)
{
	free(b->data);
	pr_strbuf_init(b);
}

static void reserve(pr_strbuf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = pr_xrealloc(b->data, cap);
	b->cap = cap;
}

void pr_strbuf_add(pr_strbuf *b, const char *s, size_t n)
{
	reserve(b, n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}

void pr_strbuf_puts(pr_strbuf *b, const char *s)
{
	pr_strbuf_add(b, s, strlen(s));
}

void pr_strbuf_putc(pr_strbuf *b, char c)
{
	pr_strbuf_add(b, &c, 1);
}

void pr_strbuf_vprintf(pr_strbuf *b, const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	PR_ASSERT(n >= 0);
	reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void pr_strbuf_printf(pr_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pr_strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

void pr_strbuf_json_string_or_null(pr_strbuf *b, const char *s)
{
	if (s)
		pr_strbuf_json_string(b, s);
	else
		pr_strbuf_puts(b, "null");
}

char *pr_strbuf_take(pr_strbuf *b)
{
	char *s = b->data ? b->data : pr_xstrdup("");
	pr_strbuf_init(b);
	return s;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static int utf8_len(const unsigned char *p)
{
	int n = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
		: p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	for (int i = 1; i < n; i++)   /* stops at the NUL: it is no continuation byte */
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;   /* overlong, a surrogate, or above U+10FFFF */
	return n;
}

/* Control characters as escapes, and a byte that is not part of well-formed
 * UTF-8 as U+FFFD: names come from files (a "\xff" escape in a .pg) and
 * every JSON passrun prints must parse. */
void pr_strbuf_json_string(pr_strbuf *b, const char *s)
{
	pr_strbuf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = utf8_len(p);
		switch (n ? *p : 0) {
		case '"': pr_strbuf_puts(b, "\\\""); break;
		case '\\': pr_strbuf_puts(b, "\\\\"); break;
		case '\n': pr_strbuf_puts(b, "\\n"); break;
		case '\t': pr_strbuf_puts(b, "\\t"); break;
		case '\r': pr_strbuf_puts(b, "\\r"); break;
		case 0: pr_strbuf_puts(b, "\\ufffd"); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				pr_strbuf_printf(b, "\\u%04x", *p);
			else
				pr_strbuf_add(b, (const char *)p, (size_t)n);
		}
		p += n ? n : 1;
	}
	pr_strbuf_putc(b, '"');
}

void pr_strbuf_double(pr_strbuf *b, double d)
{
	if (isnan(d)) {
		pr_strbuf_puts(b, "nan");
		return;
	}
	if (isinf(d)) {
		pr_strbuf_puts(b, d < 0 ? "-inf" : "inf");
		return;
	}
	char buf[64];
	/* The shortest precision that reads back as exactly d. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	pr_strbuf_puts(b, buf);
	if (!strpbrk(buf, ".e"))
		pr_strbuf_puts(b, ".0");
}
