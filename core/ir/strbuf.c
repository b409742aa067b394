/* strbuf.c: a growable string for printers and messages. */
#include "passrun/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
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

size_t pr_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (n == 0 || c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	unsigned cp = c & (0x3F >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)   /* also stops at a NUL */
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/* Control characters as escapes, and a byte that is not part of well-formed
 * UTF-8 as U+FFFD: names come from files (a "\xff" escape in a .pg) and
 * every JSON passrun prints must parse. */
void pr_strbuf_json_string(pr_strbuf *b, const char *s)
{
	pr_strbuf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = pr_utf8_len(p, SIZE_MAX);
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
