/* text_lex.h: private to the text parser (core/format/text_lex.c,
 * text_parse.c, text_parse_type.c).
 *
 * The parser reads the buffer in place: a cursor (pos), the current line and
 * where it starts. Columns are computed only when an error needs one: they
 * count characters (UTF-8 code points) from 1, so that a caret under a
 * non-ASCII name still lands right. Every function that can fail returns
 * false after storing the first error in tp->err; later errors are dropped. */
#ifndef PASSRUN_TEXT_LEX_H
#define PASSRUN_TEXT_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "passrun/program.h"
#include "passrun/strbuf.h"

#define TP_MAX_LIST_DEPTH 32

typedef enum tp_pending_kind { TP_PEND_OP, TP_PEND_DELEGATE, TP_PEND_BLOB } tp_pending_kind;

/* A name used before (or without) its definition, resolved at the end. */
typedef struct tp_pending {
	tp_pending_kind kind;
	pr_node *node;
	char *name;
	uint32_t line, col;
} tp_pending;

typedef struct tp_seen tp_seen;
typedef struct tp_recent tp_recent;
typedef struct tp_callee tp_callee;
typedef struct tp_known_shape tp_known_shape;

typedef struct tp {
	const char *file;
	const char *s;
	size_t n, pos;
	uint32_t line;        /* 1-based line of pos */
	size_t line_start;    /* offset where that line starts */
	pr_program *prog;
	pr_err *err;
	tp_pending *pend;
	size_t n_pend, cap_pend;
	tp_seen *seen;        /* top-level names -> the line that defined them */
	pr_strbuf scratch;    /* a NUL-terminated copy of the last name read */
	int depth;            /* list nesting */
	tp_known_shape *shapes;   /* text_parse_type.c's cache, or NULL; freed with p */
	const tp_known_shape *last_shape;   /* in shapes: the last one read, or NULL */
	tp_recent *recent;        /* values defined lately (text_parse.c), or NULL */
	tp_callee *callees;       /* ops and delegates called lately (text_parse.c), or NULL */
	char last_device_text[32];   /* the last device text parsed (text_parse_type.c) */
	size_t last_device_len;      /* 0: none */
	pr_device last_device;
} tp;

/* How many of the n bytes at s, in whole words, are plain in a string for
 * sure: eight at a time while no byte of a word is below 0x20, DEL, '"' or
 * '\\' (the subtractions borrow into a byte's high bit; a byte >= 0x80 is
 * plain, the UTF-8 check having judged it). The bytes after are for a byte
 * loop. */
static inline size_t tp_plain_words(const char *s, size_t n)
{
	const uint64_t lows = 0x0101010101010101u, highs = 0x8080808080808080u;
	size_t i = 0;
	for (uint64_t w; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		uint64_t quote = w ^ ('"' * lows), bslash = w ^ ('\\' * lows), del = w ^ (0x7f * lows);
		uint64_t low = (w - 0x20 * lows) | (quote - lows) | (bslash - lows) | (del - lows);
		if (low & ~w & highs)
			break;
	}
	return i;
}

/* Errors. */
uint32_t tp_col(const tp *p, size_t pos);
bool tp_error_at(tp *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool tp_error_line(tp *p, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool tp_expected(tp *p, size_t pos, const char *what);

/* Scanning. tp_ws skips blanks and a comment, never the newline. It, peek
 * and accept run between every two tokens: inline, the common case (no blank
 * here, or one space) is a compare or two. */
/* The value of hex digit c (either case), or -1. */
int tp_hex_digit(int c);
void tp_ws_slow(tp *p);

/* Is c a blank or '#' (what tp_ws_slow skips)? One compare and a bit test. */
static inline bool tp_blank_or_comment(unsigned char c)
{
	const uint64_t set = 1ull << ' ' | 1ull << '\t' | 1ull << '\r' | 1ull << '#';
	return c <= '#' && (set >> c & 1);
}

static inline void tp_ws(tp *p)
{
	/* locals, not p->pos: each field read once (the byte read may alias p) */
	size_t pos = p->pos, n = p->n;
	if (pos >= n)
		return;
	const char *s = p->s;
	unsigned char c = (unsigned char)s[pos];
	if (c == ' ') {   /* the one space between tokens */
		p->pos = ++pos;
		if (pos >= n)
			return;
		c = (unsigned char)s[pos];
	}
	if (tp_blank_or_comment(c))
		tp_ws_slow(p);
}

static inline int tp_peek(tp *p)        /* after tp_ws; -1 at the end */
{
	tp_ws(p);
	return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

static inline bool tp_accept(tp *p, char c)   /* after tp_ws */
{
	if (tp_peek(p) == (unsigned char)c) {
		p->pos++;
		return true;
	}
	return false;
}

static inline bool tp_expect(tp *p, char c, const char *what)
{
	return tp_accept(p, c) || tp_expected(p, p->pos, what);
}

static inline bool tp_at_eol(tp *p)
{
	int c = tp_peek(p);
	return c < 0 || c == '\n';
}

static inline void tp_newline(tp *p)   /* at a '\n' */
{
	p->pos++;
	p->line++;
	p->line_start = p->pos;
}

/* "expected end of line after <after>" at the cursor. */
bool tp_expected_eol(tp *p, const char *after);

static inline bool tp_end_stmt(tp *p, const char *after)
{
	int c = tp_peek(p);
	if (c == '\n')
		tp_newline(p);
	return c < 0 || c == '\n' || tp_expected_eol(p, after);
}

static inline void tp_skip_blank_lines(tp *p)
{
	for (;;) {
		size_t q = p->pos;
		while (q < p->n && p->s[q] == ' ')   /* the indent, without tp_ws_slow */
			q++;
		p->pos = q;
		if (tp_peek(p) != '\n')
			return;
		tp_newline(p);
	}
}
/* Are the n bytes at a and at b the same? Inline for the short names and
 * shapes compared on every use (overlapping moves; a call of memcmp costs
 * more than the compare). */
static inline bool tp_same_bytes(const char *a, const char *b, size_t n)
{
	if (n >= 8 && n <= 16) {
		uint64_t a0, b0, a1, b1;
		memcpy(&a0, a, 8), memcpy(&b0, b, 8);
		memcpy(&a1, a + n - 8, 8), memcpy(&b1, b + n - 8, 8);
		return !((a0 ^ b0) | (a1 ^ b1));
	}
	if (n >= 4 && n < 8) {
		uint32_t a0, b0, a1, b1;
		memcpy(&a0, a, 4), memcpy(&b0, b, 4);
		memcpy(&a1, a + n - 4, 4), memcpy(&b1, b + n - 4, 4);
		return !((a0 ^ b0) | (a1 ^ b1));
	}
	return !memcmp(a, b, n);
}

/* An identifier [A-Za-z_][A-Za-z0-9_]*: its length, 0 if none (no error). */
size_t tp_word(tp *p, const char **start);
static inline bool tp_word_is(const char *w, size_t k, const char *lit)
{
	return strlen(lit) == k && memcmp(w, lit, k) == 0;
}
/* A name after '%' or '@' ([A-Za-z0-9_.]+), copied into p->scratch. */
bool tp_name(tp *p, const char *what);
/* The same name left in the buffer: its length (it ends at the cursor), 0
 * after an error. */
size_t tp_name_len(tp *p, const char *what);
/* A double-quoted string with escapes: its len bytes (no NUL among them) at
 * *s, in the buffer when it has no escape, else in b, which the caller
 * frees (made here, empty or not, after an error too). */
bool tp_string_bytes(tp *p, const char **s, size_t *len, pr_strbuf *b);
/* The same string, NUL-terminated, malloc'd into *out. */
bool tp_string(tp *p, char **out);
/* The same in g's storage (pr_graph_alloc), for a part a node of g keeps
 * (PR_STORAGE_GRAPH); with g NULL, the program's interned copy (never to
 * be written). */
bool tp_string_kept(tp *p, pr_graph *g, char **out);
/* Numbers. tp_number sets *is_float and one of *i / *f. */
bool tp_number(tp *p, bool *is_float, int64_t *i, double *f);
bool tp_int(tp *p, const char *what, int64_t *out);
bool tp_looks_numeric(tp *p);

/* text_parse_type.c */
/* n's type (n made in a graph); a tuple's elements are that graph's storage
 * (pr_node_set_tuple, PR_STORAGE_GRAPH). */
bool tp_type(tp *p, pr_node *n);

#endif
