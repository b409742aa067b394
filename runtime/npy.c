/* npy.c: NumPy .npy files, read and written by hand (the format is small).
 *
 * A file is the magic "\x93NUMPY", a major and minor version, a header length
 * (2 bytes in 1.0, 4 in 2.0/3.0), then a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline so the data starts 64-byte aligned, then the elements
 * in C order. Only little-endian (or byte-order-free) C-order data of our
 * dtypes is accepted; anything else is an error naming the file and what was
 * found (the byte offset, for the header).
 *
 * The reader trusts nothing: it opens only regular files (a FIFO with no
 * writer would block), and checks the header's shape against the file's size
 * before allocating anything for the data, which must fill the rest of the
 * file exactly. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passrun/fileio.h"
#include "rt.h"

static const struct {
	const char *descr;
	pr_dtype t;
} npy_types[] = {
	{"<f4", PR_F32}, {"<f2", PR_F16}, {"<f8", PR_F64}, {"<i8", PR_I64}, {"<i4", PR_I32},
	{"<i2", PR_I16}, {"|i1", PR_I8}, {"|u1", PR_U8}, {"|b1", PR_BOOL}, {"<V2", PR_BF16},
};

/* ---- the header dictionary ----------------------------------------------
 *
 * The header is a Python literal with a fixed grammar, parsed as one (a
 * search for 'descr' would find it inside another string):
 *
 *   header := '{' [entry (',' entry)* [',']] '}' padding
 *   entry  := STRING ':' value      keys 'descr', 'fortran_order', 'shape',
 *                                   each exactly once, in any order
 *   value  := STRING | 'True' | 'False' | '(' [INT (',' INT)* [',']] ')'
 *
 * with spaces or tabs between tokens, a one-element tuple written (N,),
 * strings in single or double quotes without escapes, INT decimal digits,
 * and the padding after '}' spaces and newlines only. Errors give the byte
 * offset in the file. */

typedef struct hdr_parser {
	const char *path;
	const char *s;     /* the header text, NUL-terminated */
	size_t len, pos;
	size_t base;       /* offset of the header's first byte in the file */
} hdr_parser;

static pr_err *hp_error(const hdr_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static pr_err *hp_error(const hdr_parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pr_err *e = pr_err_newv(fmt, ap);
	va_end(ap);
	return pr_err_wrap(e, "%s: .npy header, byte %zu", p->path, p->base + p->pos);
}

/* What is at the cursor, for messages: a quoted character or "the end". */
static const char *hp_found(const hdr_parser *p, char buf[16])
{
	unsigned char c = p->pos < p->len ? (unsigned char)p->s[p->pos] : 0;
	if (p->pos >= p->len)
		return "the end of the header";
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

static void hp_skip_space(hdr_parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
		p->pos++;
}

/* Skips spaces, then c if it is there. */
static bool hp_accept(hdr_parser *p, char c)
{
	hp_skip_space(p);
	if (p->pos < p->len && p->s[p->pos] == c) {
		p->pos++;
		return true;
	}
	return false;
}

static pr_err *hp_expect(hdr_parser *p, char c, const char *what)
{
	char buf[16];
	if (hp_accept(p, c))
		return NULL;
	return hp_error(p, "expected %s, found %s", what, hp_found(p, buf));
}

/* A quoted string: *start and *n give its contents within p->s. */
static pr_err *hp_string(hdr_parser *p, const char **start, size_t *n)
{
	char buf[16];
	hp_skip_space(p);
	char q = p->pos < p->len ? p->s[p->pos] : 0;
	if (q != '\'' && q != '"')
		return hp_error(p, "expected a quoted string, found %s", hp_found(p, buf));
	size_t b = ++p->pos;
	while (p->pos < p->len && p->s[p->pos] != q) {
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '\\' || c < 0x20 || c >= 0x7f)
			return hp_error(p, "unexpected %s in a string (escapes and non-ASCII "
					"are not used in .npy headers)", hp_found(p, buf));
		p->pos++;
	}
	if (p->pos >= p->len) {
		p->pos = b - 1;
		return hp_error(p, "string not closed");
	}
	*start = p->s + b;
	*n = p->pos++ - b;
	return NULL;
}

/* The word at the cursor: letters, digits and underscores. */
static size_t hp_word(const hdr_parser *p)
{
	size_t n = 0;
	while (p->pos + n < p->len && (isalnum((unsigned char)p->s[p->pos + n]) ||
				       p->s[p->pos + n] == '_'))
		n++;
	return n;
}

static pr_err *hp_bool(hdr_parser *p, bool *out)
{
	char buf[16];
	hp_skip_space(p);
	size_t n = hp_word(p);
	const char *w = p->s + p->pos;
	if ((n == 4 && !strncmp(w, "True", 4)) || (n == 5 && !strncmp(w, "False", 5))) {
		*out = n == 4;
		p->pos += n;
		return NULL;
	}
	if (n)
		return hp_error(p, "'fortran_order' must be True or False, found '%.*s'",
				(int)(n > 32 ? 32 : n), w);
	return hp_error(p, "'fortran_order' must be True or False, found %s", hp_found(p, buf));
}

static pr_err *hp_dim(hdr_parser *p, int64_t *out)
{
	char buf[16];
	hp_skip_space(p);
	size_t n = hp_word(p);
	const char *w = p->s + p->pos;
	if (!n || !isdigit((unsigned char)w[0]))
		return hp_error(p, "expected a dimension (a non-negative integer), found %s",
				hp_found(p, buf));
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)w[i]))
			return hp_error(p, "expected a dimension (a non-negative integer), found "
					"'%.*s'", (int)n, w);
		if (v > (INT64_MAX - (w[i] - '0')) / 10)
			return hp_error(p, "dimension '%.*s' is larger than %lld", (int)n, w,
					(long long)INT64_MAX);
		v = v * 10 + (w[i] - '0');
	}
	if (n > 1 && w[0] == '0')
		return hp_error(p, "dimension '%.*s' has a leading zero", (int)n, w);
	p->pos += n;
	*out = v;
	return NULL;
}

/* (), (N,), (N, M) or (N, M,): Python's tuples of ints. */
static pr_err *hp_shape(hdr_parser *p, prt_tensor *out)
{
	pr_err *e = hp_expect(p, '(', "'(' (the shape is a tuple)");
	out->rank = 0;
	while (!e && !hp_accept(p, ')')) {
		if (out->rank == PR_MAX_RANK)
			return hp_error(p, "more than %d dimensions", PR_MAX_RANK);
		e = hp_dim(p, &out->shape[out->rank++]);
		if (!e && !hp_accept(p, ',')) {
			if (out->rank == 1)   /* (3) is the integer 3, not a tuple */
				return hp_error(p, "expected ',' (a one-dimension shape is (N,))");
			e = hp_expect(p, ')', "',' or ')'");
			break;
		}
	}
	return e;
}

static pr_err *hp_descr(hdr_parser *p, prt_tensor *out)
{
	size_t at = p->pos;
	const char *d;
	size_t n;
	pr_err *e = hp_string(p, &d, &n);
	if (e)
		return e;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (strlen(npy_types[i].descr) == n && !strncmp(d, npy_types[i].descr, n)) {
			out->dtype = npy_types[i].t;
			return NULL;
		}
	p->pos = at;
	hp_skip_space(p);
	return hp_error(p, "unsupported dtype '%.*s' (expected <f4, <f8, <f2, <i8, <i4, <i2, |i1, "
			"|u1, |b1 or <V2 for bf16)", (int)(n > 16 ? 16 : n), d);
}

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, N_KEYS };
static const char *const hp_keys[N_KEYS] = {"descr", "fortran_order", "shape"};

static int hp_key(const char *k, size_t n)
{
	for (int i = 0; i < N_KEYS; i++)
		if (strlen(hp_keys[i]) == n && !strncmp(k, hp_keys[i], n))
			return i;
	return -1;
}

/* One 'key': value entry; seen[] marks the keys already given. */
static pr_err *hp_entry(hdr_parser *p, bool seen[N_KEYS], prt_tensor *out)
{
	hp_skip_space(p);
	size_t at = p->pos;
	const char *k;
	size_t n;
	pr_err *e = hp_string(p, &k, &n);
	if (e)
		return e;
	int key = hp_key(k, n);
	if (key < 0 || seen[key]) {
		p->pos = at;
		return key < 0 ? hp_error(p, "unknown key '%.*s' (expected 'descr', "
					  "'fortran_order' and 'shape')", (int)(n > 32 ? 32 : n), k)
			       : hp_error(p, "key '%s' given twice", hp_keys[key]);
	}
	if ((e = hp_expect(p, ':', "':'")))
		return e;
	seen[key] = true;
	if (key == KEY_DESCR)
		return hp_descr(p, out);
	if (key == KEY_SHAPE)
		return hp_shape(p, out);
	hp_skip_space(p);
	at = p->pos;
	bool fortran = false;
	if ((e = hp_bool(p, &fortran)) || !fortran)
		return e;
	p->pos = at;
	return hp_error(p, "Fortran-order arrays are not supported (fortran_order: True)");
}

/* After '}': only the padding numpy writes, spaces and a final newline. */
static pr_err *hp_padding(hdr_parser *p)
{
	char buf[16];
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\n'))
		p->pos++;
	if (p->pos < p->len)
		return hp_error(p, "unexpected %s after the header's '}' (only spaces and a "
				"newline may follow it)", hp_found(p, buf));
	return NULL;
}

static pr_err *parse_header(const char *path, const char *h, size_t len, size_t base,
			    prt_tensor *out)
{
	hdr_parser p = {path, h, len, 0, base};
	bool seen[N_KEYS] = {false};
	pr_err *e = hp_expect(&p, '{', "'{' (the header is a Python dict)");
	while (!e && !hp_accept(&p, '}')) {
		e = hp_entry(&p, seen, out);
		if (!e && !hp_accept(&p, ',')) {
			e = hp_expect(&p, '}', "',' or '}'");
			break;
		}
	}
	for (int i = 0; !e && i < N_KEYS; i++)
		if (!seen[i]) {
			p.pos--;   /* at the '}' */
			e = hp_error(&p, "the header has no '%s'", hp_keys[i]);
		}
	return e ? e : hp_padding(&p);
}

/* ---- reading --------------------------------------------------------------- */

/* Opens path for reading, refusing what is not a regular file: O_NONBLOCK so
 * that a FIFO with no writer does not block the open, then fstat. */
static pr_err *open_regular(const char *path, FILE **fp, off_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return pr_err_new("%s: %s", path, strerror(errno));
	struct stat st;
	pr_err *e = NULL;
	if (fstat(fd, &st) < 0)
		e = pr_err_new("%s: cannot stat: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		e = pr_err_new("%s: not a regular file (a .npy input must be a file, not a %s)",
			       path, S_ISDIR(st.st_mode) ? "folder" : S_ISFIFO(st.st_mode) ? "FIFO"
			       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" : "socket");
	else if (!(*fp = fdopen(fd, "rb")))
		e = pr_err_new("%s: %s", path, strerror(errno));
	if (e) {
		close(fd);
		return e;
	}
	*size = st.st_size;
	return NULL;
}

/* The prelude: magic, version and header length; *hdr is the prelude's size. */
static pr_err *read_prelude(const char *path, FILE *fp, size_t *hdr, size_t *hlen)
{
	unsigned char pre[12];
	if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
		return pr_err_new("%s: not a .npy file (bad magic)", path);
	if (pre[6] == 1) {
		*hlen = pre[8] | (size_t)pre[9] << 8;
		*hdr = 10;
		return NULL;
	}
	if ((pre[6] == 2 || pre[6] == 3) && fread(pre + 10, 1, 2, fp) == 2) {
		*hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
		*hdr = 12;
		return NULL;
	}
	return pr_err_new("%s: unsupported .npy version %d", path, pre[6]);
}

/* The data's size in bytes, checked for overflow and against what the file
 * holds after the header, before anything is allocated for it. */
static pr_err *data_size(const char *path, const prt_tensor *t, off_t file_size, size_t start,
			 size_t *bytes)
{
	uint64_t n = pr_dtype_size(t->dtype);
	for (int i = 0; i < t->rank; i++)
		if (__builtin_mul_overflow(n, (uint64_t)t->shape[i], &n) || n > (uint64_t)INT64_MAX)
			return pr_err_new("%s: the array is too large (its shape's byte count "
					  "overflows 64 bits)", path);
	uint64_t have = (uint64_t)file_size - start;
	if (n > have)
		return pr_err_new("%s: truncated data: the header's shape needs %llu bytes after "
				  "the %zu-byte header, the file has %llu", path,
				  (unsigned long long)n, start, (unsigned long long)have);
	if (n < have)
		return pr_err_new("%s: %llu bytes after the data (the header's shape needs %llu "
				  "bytes after the %zu-byte header)", path,
				  (unsigned long long)(have - n), (unsigned long long)n, start);
	*bytes = (size_t)n;
	return NULL;
}

static pr_err *read_header(const char *path, FILE *fp, off_t size, size_t *start, prt_tensor *out)
{
	size_t hdr = 0, hlen = 0;
	pr_err *err = read_prelude(path, fp, &hdr, &hlen);
	if (!err && (uint64_t)hdr + hlen > (uint64_t)size)
		return pr_err_new("%s: truncated .npy header: %zu bytes announced, the file has %llu",
				  path, hlen, (unsigned long long)(size - (off_t)hdr));
	if (err)
		return err;
	char *h = pr_xmalloc(hlen + 1);
	if (fread(h, 1, hlen, fp) != hlen)
		err = pr_err_new("%s: truncated .npy header", path);
	h[hlen] = 0;
	if (!err)
		err = parse_header(path, h, hlen, hdr, out);
	free(h);
	*start = hdr + hlen;
	return err;
}

pr_err *prt_npy_read(const char *path, prt_tensor *out)
{
	memset(out, 0, sizeof *out);   /* callers free out->storage on any outcome */
	FILE *fp = NULL;
	off_t size = 0;
	size_t start = 0, bytes = 0;
	pr_err *err = open_regular(path, &fp, &size);
	if (err)
		return err;
	if (!(err = read_header(path, fp, size, &start, out)))
		err = data_size(path, out, size, start, &bytes);
	if (!err) {
		uint8_t *buf = pr_xmalloc(bytes ? bytes : 1);
		if (fread(buf, 1, bytes, fp) != bytes) {
			free(buf);
			err = pr_err_new("%s: cannot read the data: %s", path,
					 ferror(fp) ? strerror(errno) : "the file shrank");
		} else {
			*out = prt_tensor_make(out->dtype, out->rank, out->shape, buf);
		}
	}
	fclose(fp);
	return err;
}

/* The header numpy writes for t, padded with spaces and a newline so that
 * the data starts 64-byte aligned; returns its length with the prelude. */
static size_t header_text(const prt_tensor *t, char h[1024])
{
	const char *descr = NULL;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (npy_types[i].t == t->dtype)
			descr = npy_types[i].descr;
	char shape[PR_MAX_RANK * 24 + 4] = "(";
	for (int i = 0; i < t->rank; i++)
		snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s",
			 (long long)t->shape[i], i + 1 < t->rank ? " " : "");
	if (t->rank > 1)
		shape[strlen(shape) - 1] = 0;   /* (2, 3) but (2,) */
	strcat(shape, ")");
	int n = snprintf(h, 1024, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
			 shape);
	size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
	memset(h + n, ' ', total - 10 - (size_t)n - 1);
	h[total - 10 - 1] = '\n';
	return total;
}

/* The whole file is built in memory and written by pr_file_write_atomic: a
 * full disk or a kill leaves the old file or none, never part of one. */
pr_err *prt_npy_write(const char *path, const prt_tensor *t)
{
	char h[1024];
	size_t total = header_text(t, h);
	size_t bytes = (size_t)prt_tensor_numel(t) * pr_dtype_size(t->dtype);
	uint8_t *file = pr_xmalloc(total + bytes);
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
	pre[8] = (unsigned char)((total - 10) & 0xff);
	pre[9] = (unsigned char)((total - 10) >> 8);
	memcpy(file, pre, 10);
	memcpy(file + 10, h, total - 10);
	prt_tensor c = prt_tensor_make(t->dtype, t->rank, t->shape, file + total);
	pr_err *err = prt_tensor_copy(&c, t);
	if (!err)
		err = pr_file_write_atomic(path, file, total + bytes);
	free(file);
	return err;
}
