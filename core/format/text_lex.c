/* text_lex.c: the scanner of the text format (.pg) and its error messages.
 *
 * There is no token stream: the parser asks for what it expects next, at the
 * cursor. Statements end at a newline; blanks are spaces, tabs and carriage
 * returns; '#' starts a comment that runs to the end of the line. Errors are
 * "FILE:LINE:COL: expected X, found Y", where Y describes what is at the
 * cursor (a word, a character, "end of line", "end of file"). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"
#include "passrun/format.h"
#include "text_lex.h"

uint32_t tp_col(const tp *p, size_t pos)
{
	uint32_t col = 1;
	for (size_t i = p->line_start; i < pos && i < p->n; i++)
		if (((unsigned char)p->s[i] & 0xC0) != 0x80)
			col++;
	return col;
}

static bool tp_verror(tp *p, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
	if (p->err)
		return false;
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	p->err = pr_err_new("%s:%u:%u: %s", p->file, line, col, msg);
	return false;
}

bool tp_error_at(tp *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tp_verror(p, p->line, tp_col(p, pos), fmt, ap);
	va_end(ap);
	return false;
}

bool tp_error_line(tp *p, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tp_verror(p, line, col, fmt, ap);
	va_end(ap);
	return false;
}

/* Byte classes, looked up once per byte in the loops that run over every
 * name and string of a file. */
enum {
	CH_WORD = 1,      /* [A-Za-z0-9_] */
	CH_NAME = 2,      /* a word byte or '.': a %name or @name */
	CH_PLAIN = 4,     /* a byte a string holds as it is (plain_in_string) */
};

static const uint8_t ch_class[256] = {
	/* control bytes and 0x7f have no class; every byte >= 0x80 is plain */
	[' '] = CH_PLAIN, ['!'] = CH_PLAIN, ['#'] = CH_PLAIN, ['$'] = CH_PLAIN,
	['%'] = CH_PLAIN, ['&'] = CH_PLAIN, ['\''] = CH_PLAIN, ['('] = CH_PLAIN,
	[')'] = CH_PLAIN, ['*'] = CH_PLAIN, ['+'] = CH_PLAIN, [','] = CH_PLAIN,
	['-'] = CH_PLAIN, ['.'] = CH_PLAIN | CH_NAME, ['/'] = CH_PLAIN,
	['0' ... '9'] = CH_PLAIN | CH_NAME | CH_WORD,
	[':'] = CH_PLAIN, [';'] = CH_PLAIN, ['<'] = CH_PLAIN, ['='] = CH_PLAIN,
	['>'] = CH_PLAIN, ['?'] = CH_PLAIN, ['@'] = CH_PLAIN,
	['A' ... 'Z'] = CH_PLAIN | CH_NAME | CH_WORD,
	['['] = CH_PLAIN, [']'] = CH_PLAIN, ['^'] = CH_PLAIN,
	['_'] = CH_PLAIN | CH_NAME | CH_WORD, ['`'] = CH_PLAIN,
	['a' ... 'z'] = CH_PLAIN | CH_NAME | CH_WORD,
	['{'] = CH_PLAIN, ['|'] = CH_PLAIN, ['}'] = CH_PLAIN, ['~'] = CH_PLAIN,
	[0x80 ... 0xff] = CH_PLAIN,
};

static bool is_word_char(int c)
{
	return ch_class[(unsigned char)c] & CH_WORD;
}

static bool is_name_char(int c)
{
	return ch_class[(unsigned char)c] & CH_NAME;
}

/* The end of the run of bytes of class cls from q (e at the latest): four
 * a round with no check of e while four are left, as names and words are
 * read byte by byte for every statement. */
static inline const char *class_run(const char *q, const char *e, uint8_t cls)
{
	for (; e - q >= 4; q += 4) {
		if (!(ch_class[(unsigned char)q[0]] & cls))
			return q;
		if (!(ch_class[(unsigned char)q[1]] & cls))
			return q + 1;
		if (!(ch_class[(unsigned char)q[2]] & cls))
			return q + 2;
		if (!(ch_class[(unsigned char)q[3]] & cls))
			return q + 3;
	}
	while (q < e && (ch_class[(unsigned char)*q] & cls))
		q++;
	return q;
}

/* What is at pos, for "found ...". */
static void describe(const tp *p, size_t pos, char *buf, size_t cap)
{
	if (pos >= p->n) {
		snprintf(buf, cap, "end of file");
		return;
	}
	unsigned char c = (unsigned char)p->s[pos];
	if (c == '\n' || c == '#') {
		snprintf(buf, cap, "end of line");
		return;
	}
	if (c == '"') {
		snprintf(buf, cap, "a string");
		return;
	}
	size_t e = pos;
	if (c == '%' || c == '@' || c == '-')
		e++;
	while (e < p->n && e - pos < 32 && is_name_char((unsigned char)p->s[e]))
		e++;
	if (e == pos || (e == pos + 1 && !is_word_char(c))) {
		e = pos + 1;
		while (e < p->n && ((unsigned char)p->s[e] & 0xC0) == 0x80)
			e++;
	}
	if (e - pos == 32)
		snprintf(buf, cap, "'%.*s...'", (int)(e - pos), p->s + pos);
	else
		snprintf(buf, cap, "'%.*s'", (int)(e - pos), p->s + pos);
}

bool tp_expected(tp *p, size_t pos, const char *what)
{
	char found[64];
	describe(p, pos, found, sizeof found);
	return tp_error_at(p, pos, "expected %s, found %s", what, found);
}

void tp_ws_slow(tp *p)
{
	/* locals, not p->pos, as in tp_word: this skips every line's indent */
	const char *q = p->s + p->pos, *e = p->s + p->n;
	for (; q < e; q++) {
		if (*q == '#') {
			const char *nl = memchr(q, '\n', (size_t)(e - q));
			q = nl ? nl : e;
			break;
		}
		if (*q != ' ' && *q != '\t' && *q != '\r')
			break;
	}
	p->pos = (size_t)(q - p->s);
}

bool tp_expected_eol(tp *p, const char *after)
{
	char what[128];
	snprintf(what, sizeof what, "end of line after %s", after);
	return tp_expected(p, p->pos, what);
}

size_t tp_word(tp *p, const char **start)
{
	tp_ws(p);
	const char *b = p->s + p->pos, *e = p->s + p->n, *q = b;
	*start = b;
	if (q == e || !is_word_char(*q) || (*q >= '0' && *q <= '9'))
		return 0;
	/* locals, not p->pos: a char read may alias p, so the field would be
	 * stored and loaded again for every byte */
	q = class_run(q + 1, e, CH_WORD);
	p->pos += (size_t)(q - b);
	return (size_t)(q - b);
}

size_t tp_name_len(tp *p, const char *what)
{
	size_t b = p->pos;
	const char *q = class_run(p->s + b, p->s + p->n, CH_NAME);   /* locals, as in tp_word */
	p->pos = (size_t)(q - p->s);
	if (p->pos == b)
		return tp_expected(p, b, what);
	if (p->pos - b > PR_MAX_STRING_BYTES)
		return tp_error_at(p, b, "a name of more than %u bytes (the limit of a string in "
				   "both file formats)", PR_MAX_STRING_BYTES);
	return p->pos - b;
}

bool tp_name(tp *p, const char *what)
{
	size_t len = tp_name_len(p, what);
	if (!len)
		return false;
	size_t b = p->pos - len;
	if (len >= p->scratch.cap) {   /* rare: the copy below needs room for len + 1 */
		p->scratch.len = 0;
		pr_strbuf_add(&p->scratch, p->s + b, len);
		return true;
	}
	memcpy(p->scratch.data, p->s + b, len);   /* inline: this runs for every name */
	p->scratch.data[len] = 0;
	p->scratch.len = len;
	return true;
}

int tp_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One escape after '\\'; appends the byte to b. */
static bool tp_escape(tp *p, pr_strbuf *b)
{
	size_t at = p->pos - 1;
	int c = p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
	switch (c) {
	case '"': pr_strbuf_putc(b, '"'); break;
	case '\\': pr_strbuf_putc(b, '\\'); break;
	case 'n': pr_strbuf_putc(b, '\n'); break;
	case 't': pr_strbuf_putc(b, '\t'); break;
	case 'x': {
		int hi = p->pos + 1 < p->n ? tp_hex_digit((unsigned char)p->s[p->pos + 1]) : -1;
		int lo = p->pos + 2 < p->n ? tp_hex_digit((unsigned char)p->s[p->pos + 2]) : -1;
		if (hi < 0 || lo < 0)
			return tp_error_at(p, at, "expected two hex digits after '\\x' in a string");
		if (hi == 0 && lo == 0)
			return tp_error_at(p, at, "expected a non-NUL byte: '\\x00' is not allowed in a string");
		pr_strbuf_putc(b, (char)(hi * 16 + lo));
		p->pos += 2;
		break;
	}
	default:
		return tp_error_at(p, at, "expected an escape (\\\" \\\\ \\n \\t or \\xHH) after '\\' in a string");
	}
	p->pos++;
	return true;
}

/* The binary format's limit, so that every program that parses converts
 * and loads again (a 17 MiB string did not). */
static bool tp_string_too_long(tp *p, size_t at)
{
	return tp_error_at(p, at, "a string of more than %u bytes (the limit of a string in "
			   "both file formats)", PR_MAX_STRING_BYTES);
}

/* A byte a string holds as it is: not a quote, backslash or control byte
 * (a newline is one). */
static bool plain_in_string(unsigned char c)
{
	return ch_class[c] & CH_PLAIN;
}

/* The common string, plain bytes up to the closing quote, left in the
 * buffer; false (nothing consumed) when it holds an escape or a bad byte. */
static bool tp_plain_string(tp *p, const char **s, size_t *len)
{
	size_t end = p->pos + tp_plain_words(p->s + p->pos, p->n - p->pos);
	while (end < p->n && plain_in_string((unsigned char)p->s[end]))
		end++;
	if (end >= p->n || p->s[end] != '"' || end - p->pos > PR_MAX_STRING_BYTES)
		return false;
	*s = p->s + p->pos;
	*len = end - p->pos;
	p->pos = end + 1;
	return true;
}

/* The string after its opening quote, with escapes, into b (which has ""). */
static bool tp_escaped_string(tp *p, size_t open, pr_strbuf *b)
{
	for (;;) {
		if (p->pos >= p->n || p->s[p->pos] == '\n')
			return tp_error_at(p, open, "unterminated string: expected '\"' before the end of the line");
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"')
			break;
		if (c == '\\') {
			p->pos++;
			if (!tp_escape(p, b))
				return false;
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			return tp_error_at(p, p->pos, "expected a printable character in a string "
				"(write control byte 0x%02x as \\x%02x)", c, c);
		/* The run of plain characters from here, in one add. */
		size_t run = p->pos + 1;
		while (run < p->n && plain_in_string((unsigned char)p->s[run]))
			run++;
		pr_strbuf_add(b, p->s + p->pos, run - p->pos);
		p->pos = run;
		if (b->len > PR_MAX_STRING_BYTES)
			return tp_string_too_long(p, open);
	}
	p->pos++;
	return true;
}

bool tp_string_bytes(tp *p, const char **s, size_t *len, pr_strbuf *b)
{
	size_t open = p->pos;
	*b = (pr_strbuf){0};   /* pr_strbuf_init's, inline: most strings never use it */
	if (!tp_expect(p, '"', "a string (\"...\")"))
		return false;
	if (tp_plain_string(p, s, len))
		return true;
	pr_strbuf_add(b, "", 0);
	if (!tp_escaped_string(p, open, b))
		return false;
	*s = b->data;
	*len = b->len;
	return true;
}

bool tp_string(tp *p, char **out)
{
	const char *s;
	size_t len;
	pr_strbuf b;
	bool ok = tp_string_bytes(p, &s, &len, &b);
	if (ok && s == b.data)
		*out = pr_strbuf_take(&b);
	else if (ok)
		*out = pr_xstrndup(s, len);
	pr_strbuf_free(&b);
	return ok;
}

bool tp_string_kept(tp *p, pr_graph *g, char **out)
{
	const char *s;
	size_t len;
	pr_strbuf b;
	bool ok = tp_string_bytes(p, &s, &len, &b);
	if (ok && g)
		*out = memcpy(pr_graph_alloc(g, len + 1), s, len);   /* zeroed: the NUL */
	else if (ok)
		*out = (char *)pr_program_intern(p->prog, s, len);
	if (b.data)
		pr_strbuf_free(&b);
	return ok;
}

bool tp_looks_numeric(tp *p)
{
	int c = tp_peek(p);
	if (c == '-' || c == '+')
		c = p->pos + 1 < p->n ? (unsigned char)p->s[p->pos + 1] : -1;
	if (c == '.')
		c = p->pos + 2 < p->n ? (unsigned char)p->s[p->pos + 2] : -1;
	return c >= '0' && c <= '9';
}

static bool tp_special_float(tp *p, double *f)
{
	size_t b = p->pos;
	bool neg = false;
	if (p->pos < p->n && (p->s[p->pos] == '-' || p->s[p->pos] == '+')) {
		neg = p->s[p->pos] == '-';
		p->pos++;
	}
	const char *w;
	size_t k = tp_word(p, &w);
	if (tp_word_is(w, k, "inf")) {
		*f = neg ? -__builtin_inf() : __builtin_inf();
		return true;
	}
	if (tp_word_is(w, k, "nan")) {
		*f = neg ? -__builtin_nan("") : __builtin_nan("");
		return true;
	}
	p->pos = b;
	return false;
}

/* The common number, [-]digits (at most 18) and nothing of a name after,
 * read in one loop; false, nothing consumed, for anything else, which
 * tp_number's full path reads (and judges). */
static bool tp_plain_int(tp *p, int64_t *out)
{
	const char *q = p->s + p->pos, *e = p->s + p->n;
	bool neg = q < e && *q == '-';
	const char *digits = q + neg, *d = digits;
	const char *lim = e - digits > 18 ? digits + 18 : e;   /* 18 digits fit */
	int64_t v = 0;
	for (unsigned digit; d < lim && (digit = (unsigned)(unsigned char)*d - '0') <= 9; d++)
		v = v * 10 + digit;
	if (d == digits || (d < e && is_name_char(*d)))   /* '.', 'e', a 19th digit */
		return false;
	*out = neg ? -v : v;
	p->pos = (size_t)(d - p->s);
	return true;
}

/* [+-]digits[.digits][e[+-]digits], or [+-]inf / [+-]nan. */
bool tp_number(tp *p, bool *is_float, int64_t *i, double *f)
{
	tp_ws(p);
	if (tp_plain_int(p, i)) {
		*is_float = false;
		return true;
	}
	size_t b = p->pos;
	size_t e = b;
	if (e < p->n && (p->s[e] == '-' || p->s[e] == '+'))
		e++;
	/* Only a word (after blanks, as tp_word skips them) can be inf or nan:
	 * the common number does not look for one. */
	while (e < p->n && (p->s[e] == ' ' || p->s[e] == '\t' || p->s[e] == '\r'))
		e++;
	bool word = e < p->n && (p->s[e] == 'i' || p->s[e] == 'n');
	if (word && tp_special_float(p, f)) {
		*is_float = true;
		return true;
	}
	e = b;
	if (e < p->n && (p->s[e] == '-' || p->s[e] == '+'))
		e++;
	size_t digits = 0;
	while (e < p->n && p->s[e] >= '0' && p->s[e] <= '9')
		e++, digits++;
	*is_float = false;
	if (e < p->n && p->s[e] == '.') {
		*is_float = true;
		e++;
		while (e < p->n && p->s[e] >= '0' && p->s[e] <= '9')
			e++, digits++;
	}
	if (!digits)
		return tp_expected(p, b, "a number");
	if (e < p->n && (p->s[e] == 'e' || p->s[e] == 'E')) {
		size_t x = e + 1;
		if (x < p->n && (p->s[x] == '-' || p->s[x] == '+'))
			x++;
		if (x >= p->n || p->s[x] < '0' || p->s[x] > '9')
			return tp_expected(p, x, "digits in the exponent");
		while (x < p->n && p->s[x] >= '0' && p->s[x] <= '9')
			x++;
		e = x;
		*is_float = true;
	}
	if (e < p->n && is_name_char((unsigned char)p->s[e]))
		return tp_expected(p, b, "a number");
	/* Up to 18 digits always fit in int64: no strtoll needed. */
	if (!*is_float && digits <= 18) {
		bool neg = p->s[b] == '-';
		int64_t v = 0;
		for (size_t k = b + (neg || p->s[b] == '+'); k < e; k++)
			v = v * 10 + (p->s[k] - '0');
		*i = neg ? -v : v;
		p->pos = e;
		return true;
	}
	char tmp[400];
	if (e - b >= sizeof tmp)
		return tp_error_at(p, b, "expected a number of at most %zu characters", sizeof tmp - 1);
	memcpy(tmp, p->s + b, e - b);
	tmp[e - b] = 0;
	errno = 0;
	if (*is_float) {
		*f = strtod(tmp, NULL);
		if (errno == ERANGE && isinf(*f))   /* not silently inf: that is written 'inf' */
			return tp_error_at(p, b, "expected a float that fits in 64 bits (at most "
					   "1.7976931348623157e308; infinity is written 'inf'), "
					   "found '%s'", tmp);
	} else {
		long long v = strtoll(tmp, NULL, 10);
		if (errno == ERANGE)
			return tp_error_at(p, b, "expected an integer that fits in 64 bits, found '%s'", tmp);
		*i = v;
	}
	p->pos = e;
	return true;
}

bool tp_int(tp *p, const char *what, int64_t *out)
{
	tp_ws(p);
	if (tp_plain_int(p, out))
		return true;
	size_t b = p->pos;
	bool is_float;
	double f;
	if (!tp_looks_numeric(p))
		return tp_expected(p, b, what);
	if (!tp_number(p, &is_float, out, &f))
		return false;
	if (is_float)
		return tp_expected(p, b, what);
	return true;
}
