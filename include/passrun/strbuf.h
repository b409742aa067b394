/* strbuf.h: a growable string, for printers and messages. */
#ifndef PASSRUN_STRBUF_H
#define PASSRUN_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pr_strbuf {
	char *data;   /* always NUL-terminated once anything was added */
	size_t len, cap;
} pr_strbuf;

void pr_strbuf_init(pr_strbuf *b);
void pr_strbuf_free(pr_strbuf *b);
void pr_strbuf_add(pr_strbuf *b, const char *s, size_t n);
void pr_strbuf_puts(pr_strbuf *b, const char *s);
void pr_strbuf_putc(pr_strbuf *b, char c);
void pr_strbuf_printf(pr_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pr_strbuf_vprintf(pr_strbuf *b, const char *fmt, va_list ap);
/* Takes the string out; the buffer is empty afterwards. Never NULL. */
char *pr_strbuf_take(pr_strbuf *b);
/* The length of the well-formed UTF-8 sequence at s, which has n bytes left
 * (SIZE_MAX for a NUL-terminated string: the NUL ends any sequence), or 0:
 * RFC 3629, so no overlong forms, no surrogates, nothing above U+10FFFF. An
 * ASCII byte is a sequence of 1; the NUL byte is none (0). */
size_t pr_utf8_len(const unsigned char *s, size_t n);
/* JSON string literal, quotes included: control characters escaped, a byte
 * that is not part of well-formed UTF-8 written as \ufffd (always valid JSON). */
void pr_strbuf_json_string(pr_strbuf *b, const char *s);
/* The same, or null for NULL. */
void pr_strbuf_json_string_or_null(pr_strbuf *b, const char *s);
/* Shortest text that reads back as exactly d (always with '.', 'e', "inf" or "nan"). */
void pr_strbuf_double(pr_strbuf *b, double d);

#ifdef __cplusplus
}
#endif
#endif
