/* text_print.c: the canonical text of a program (docs/text-format.md).
 *
 * `passrun 1`, a blank line, then the op statements (in declaration order),
 * the blobs, each delegate and each method, the groups separated by blank
 * lines and graph bodies indented by two spaces. Everything is printed in one
 * form only (floats as the shortest text that reads back exactly, strides only
 * when not contiguous, the host device never), which is what makes printing a
 * parsed program a fixed point. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/strbuf.h"
#include "outbuf.h"
#include "short_copy.h"

/* The output (outbuf.h). Numbers are formatted here rather than by
 * printf, which would cost more than everything else a node prints. */
typedef outbuf tbuf;

/* The short copies (a name, a spec's text, a number) inline: a call of
 * memcpy costs more than the copy. */
static inline void tb_add(tbuf *b, const char *s, size_t n)
{
	copy_short(out_room(b, n), s, n);
	b->len += n;
}

static inline void tb_putc(tbuf *b, char c)
{
	tb_add(b, &c, 1);
}

static inline void tb_puts(tbuf *b, const char *s)
{
	tb_add(b, s, strlen(s));
}

static unsigned u64_digits(uint64_t v)
{
	for (unsigned n = 1;; n += 4, v /= 10000) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
	}
}

/* Written in place, two digits a step from the right (mem offsets and
 * seeds have six to ten). */
static void tb_u64(tbuf *b, uint64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	unsigned n = u64_digits(v);
	uint8_t *end = out_room(b, n) + n;
	for (; v >= 100; v /= 100)
		memcpy(end -= 2, pairs + 2 * (v % 100), 2);
	if (v >= 10)
		memcpy(end - 2, pairs + 2 * v, 2);
	else
		end[-1] = (uint8_t)('0' + v);
	b->len += n;
}

static void tb_i64(tbuf *b, int64_t v)
{
	if (v < 0)
		tb_putc(b, '-');
	tb_u64(b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

static void tb_double(tbuf *b, double d)
{
	pr_strbuf t;
	pr_strbuf_init(&t);
	pr_strbuf_double(&t, d);
	tb_add(b, t.data, t.len);
	pr_strbuf_free(&t);
}

/* The bytes a string prints as they are: printable ASCII but the quote and
 * the backslash (not the NUL, which ends the run). */
static const uint8_t plain_ascii[256] = {
	[0x20 ... 0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7e] = 1,
};

/* The end of the run of plain bytes from c, four a round: a byte is read
 * only after the one before it was plain, so not past the NUL, and the
 * string's length is never needed. */
static const unsigned char *plain_run(const unsigned char *c)
{
	for (;; c += 4) {
		if (!plain_ascii[c[0]])
			return c;
		if (!plain_ascii[c[1]])
			return c + 1;
		if (!plain_ascii[c[2]])
			return c + 2;
		if (!plain_ascii[c[3]])
			return c + 3;
	}
}

static void put_string(tbuf *b, const char *s)
{
	tb_putc(b, '"');
	const unsigned char *c = (const unsigned char *)(s ? s : "");
	while (*c) {
		size_t k;
		const unsigned char *run = c;
		c = plain_run(c);   /* the common string is one run, in one copy */
		size_t n = (size_t)(c - run);
		if (n) {   /* out_bytes: a long string goes to the sink, not into a grown buffer */
			if (n < 4096)
				tb_add(b, (const char *)run, n);
			else
				out_bytes(b, run, n);
			continue;
		}
		if (*c == '"' || *c == '\\') {
			tb_putc(b, '\\');
			tb_putc(b, (char)*c++);
		} else if (*c == '\n') {
			tb_puts(b, "\\n"), c++;
		} else if (*c == '\t') {
			tb_puts(b, "\\t"), c++;
		} else if (*c >= 0x80 && (k = pr_utf8_len(c, SIZE_MAX))) {
			tb_add(b, (const char *)c, k);
			c += k;
		} else {
			static const char hex[] = "0123456789abcdef";
			char esc[4] = { '\\', 'x', hex[*c >> 4], hex[*c & 15] };
			tb_add(b, esc, 4);
			c++;
		}
	}
	tb_putc(b, '"');
}

static void put_ints(tbuf *b, const int64_t *v, int n)
{
	tb_putc(b, '[');
	for (int i = 0; i < n; i++) {
		if (i)
			tb_putc(b, ',');
		tb_i64(b, v[i]);
	}
	tb_putc(b, ']');
}

/* pr_device_str's text, without its snprintf. */
static void put_device(tbuf *b, pr_device d)
{
	d = pr_device_canonical(d);
	if (pr_device_is_host(d)) {
		tb_puts(b, "cpu");
		return;
	}
	tb_puts(b, d.type);
	tb_putc(b, ':');
	tb_i64(b, d.index);
}

/* A spec's whole text: DTYPE[SHAPE][@DEVICE], then "{strides=[...]" when
 * not contiguous and "mem=ARENA:OFFSET" when placed, in one brace. A
 * program spells a few layouts a million times, at a few hundred offsets
 * (a planned program reuses them all along), and layouts are immutable
 * arrays (interned by the IR), so the same pointers, rank, dtype, device
 * and mem print the same text: kept here per print, it is one compare and
 * a copy instead of a contiguity test and a number per dimension, and the
 * offset's digits and the arena's text. */
#define SPEC_TEXTS_LOG2 9
#define SPEC_TEXTS (1 << SPEC_TEXTS_LOG2)
#define SPEC_TEXT_MAX 96       /* longer texts are printed each time */
#define SPEC_TEXT_BOUND 1024   /* more than any spec's text: 16 dims and strides of 20 digits, mem */

/* What a spec's text depends on. */
typedef struct spec_key {
	const int64_t *shape;             /* with rank, names the strides too */
	int64_t mem_offset;               /* 0 without mem */
	int rank;
	pr_dtype dtype;
	pr_device_id device_id, mem_arena_id;   /* the arena 0 without mem */
	bool has_mem;
} spec_key;

typedef struct spec_text {
	spec_key key;
	bool used;
	uint8_t len;
	char text[SPEC_TEXT_MAX];
} spec_text;

/* The print's state: its output and the texts it keeps. */
typedef struct printer {
	tbuf *b;
	spec_text *specs;   /* SPEC_TEXTS of them, or NULL */
	pr_device_id arena; /* the last arena printed, and its text (arena_len 0: none) */
	char arena_text[PR_DEVICE_STR_MAX];
	size_t arena_len;
} printer;

static void put_layout(tbuf *b, const pr_spec *s, bool strided)
{
	tb_puts(b, pr_dtype_name(s->dtype));
	put_ints(b, s->shape, s->rank);
	if (!pr_spec_on_host(s)) {
		tb_putc(b, '@');
		put_device(b, pr_spec_device(s));
	}
	if (strided) {
		tb_puts(b, "{strides=");
		put_ints(b, pr_spec_strides(s), s->rank);
	}
}

/* s's key: the mem fields only when it has mem, as they print only then. */
static spec_key spec_key_of(const pr_spec *s)
{
	return (spec_key){ .shape = s->shape, .rank = s->rank,
			   .dtype = s->dtype, .device_id = s->device_id, .has_mem = s->has_mem,
			   .mem_arena_id = s->has_mem ? s->mem_arena_id : 0,
			   .mem_offset = s->has_mem ? s->mem_offset : 0 };
}

static bool spec_text_is(const spec_text *t, const spec_key *k)
{
	const spec_key *a = &t->key;
	return t->used && a->shape == k->shape && a->rank == k->rank &&
	       a->dtype == k->dtype && a->device_id == k->device_id && a->has_mem == k->has_mem &&
	       a->mem_offset == k->mem_offset && a->mem_arena_id == k->mem_arena_id;
}

static spec_text *spec_text_slot(printer *pr, const spec_key *k)
{
	if (!pr->specs)
		pr->specs = pr_xcalloc(SPEC_TEXTS, sizeof *pr->specs);
	/* Multiplied, so that every input bit reaches the slot's bits: the
	 * device ids are small numbers (the host 0, the first GPU 1), and a
	 * host value and its device copy have the same layout, so an id that
	 * misses the slot's bits (as `id << 9` did with the fold that kept
	 * bits 3-8) puts both in one slot, to evict each other all along a
	 * placed program. Offsets are multiples of an alignment: its low
	 * bits are zeros. */
	uint64_t h = ((uint64_t)(uintptr_t)k->shape ^ ((uint64_t)(uintptr_t)(k->shape + k->rank) << 17) ^
		      ((uint64_t)k->device_id << 40) ^ ((uint64_t)k->dtype << 56) ^
		      ((uint64_t)k->rank << 61)) * UINT64_C(0x9E3779B97F4A7C15);
	h ^= ((uint64_t)k->mem_offset ^ ((uint64_t)k->mem_arena_id << 48) ^ k->has_mem) *
	     UINT64_C(0xC2B2AE3D27D4EB4F);
	return &pr->specs[h >> (64 - SPEC_TEXTS_LOG2)];
}

/* An arena's device: values in one arena follow each other. */
static void put_arena(printer *pr, pr_device_id id)
{
	tbuf *b = pr->b;
	if (!pr->arena_len || pr->arena != id) {
		size_t start = (out_room(b, PR_DEVICE_STR_MAX), b->len);   /* no flush before the copy */
		put_device(b, *pr_device_of(id));
		pr->arena = id;
		pr->arena_len = b->len - start;
		memcpy(pr->arena_text, b->p + start, pr->arena_len);
		return;
	}
	tb_add(b, pr->arena_text, pr->arena_len);
}

static void put_spec_text(printer *pr, const pr_spec *s)
{
	tbuf *b = pr->b;
	bool strides = !pr_spec_is_contiguous(s);
	put_layout(b, s, strides);
	if (!strides && !s->has_mem)
		return;
	if (!strides)
		tb_putc(b, '{');
	if (s->has_mem) {
		tb_puts(b, strides ? ", mem=" : "mem=");
		put_arena(pr, s->mem_arena_id);
		tb_putc(b, ':');
		tb_i64(b, s->mem_offset);
	}
	tb_putc(b, '}');
}

/* The spec's text, from the kept one or printed (and then kept). */
static void put_spec(printer *pr, const pr_spec *s)
{
	tbuf *b = pr->b;
	spec_key k = spec_key_of(s);
	spec_text *t = spec_text_slot(pr, &k);
	if (spec_text_is(t, &k)) {
		tb_add(b, t->text, t->len);
		return;
	}
	out_room(b, SPEC_TEXT_BOUND);   /* no flush to the sink while it is copied below */
	size_t start = b->len;
	put_spec_text(pr, s);
	size_t len = b->len - start;
	if (len <= SPEC_TEXT_MAX) {
		t->key = k;
		t->used = true;
		t->len = (uint8_t)len;
		memcpy(t->text, b->p + start, len);
	}
}

static void put_type(printer *pr, const pr_type *t)
{
	tbuf *b = pr->b;
	switch (t->kind) {
	case PR_TYPE_TENSOR:
		put_spec(pr, &t->tensor);
		break;
	case PR_TYPE_TUPLE:
		tb_putc(b, '(');
		for (int i = 0; i < t->n_elems; i++) {
			if (i)
				tb_puts(b, ", ");
			put_spec(pr, &t->elems[i]);
		}
		tb_putc(b, ')');
		break;
	case PR_TYPE_INT:
	case PR_TYPE_NONE:
		tb_puts(b, "int");
		break;
	}
}

/* The name a use of v prints after its '%'. */
static const char *value_name(const pr_node *v)
{
	return v && v->name ? v->name : "?";
}

static void put_value(tbuf *b, const pr_node *v)
{
	tb_putc(b, '%');
	tb_puts(b, value_name(v));
}

static void put_arg(tbuf *b, const pr_arg *a)
{
	switch (a->kind) {
	case PR_ARG_VALUE: put_value(b, a->u.value); break;
	case PR_ARG_INT: tb_i64(b, a->u.i); break;
	case PR_ARG_FLOAT: tb_double(b, a->u.f); break;
	case PR_ARG_BOOL: tb_puts(b, a->u.b ? "true" : "false"); break;
	case PR_ARG_NONE: tb_puts(b, "none"); break;
	case PR_ARG_STRING: put_string(b, a->u.s); break;
	case PR_ARG_LIST:
		tb_putc(b, '[');
		for (int i = 0; i < a->n_items; i++) {
			if (i)
				tb_puts(b, ", ");
			put_arg(b, &a->u.items[i]);
		}
		tb_putc(b, ']');
		break;
	}
}

/* (ARG, ...): a value's separator and '%' in one put (most args are). */
static void put_args(tbuf *b, const pr_node *n)
{
	if (!n->n_args)
		tb_puts(b, "(");
	for (int i = 0; i < n->n_args; i++) {
		const pr_arg *a = &n->args[i];
		if (a->kind != PR_ARG_VALUE) {
			tb_puts(b, i ? ", " : "(");
			put_arg(b, a);
			continue;
		}
		tb_puts(b, i ? ", %" : "(%");
		tb_puts(b, value_name(a->u.value));
	}
	tb_putc(b, ')');
}

/* A data value: true/false for bool tensors, integers for integer tensors
 * (when it is one), else the shortest exact float. */
static void put_number(tbuf *b, double v, pr_dtype t, bool is_float)
{
	if (t == PR_BOOL && (v == 0 || v == 1))
		tb_puts(b, v == 1 ? "true" : "false");
	else if (!is_float && v == floor(v) && fabs(v) < 9.0e15)
		tb_i64(b, (int64_t)v);
	else
		tb_double(b, v);
}

static void put_data(tbuf *b, const pr_data *d, const pr_type *t)
{
	pr_dtype dt = t->kind == PR_TYPE_TENSOR ? t->tensor.dtype : PR_F32;
	bool is_float = pr_dtype_is_float(dt);
	switch (d->kind) {
	case PR_DATA_NONE: return;
	case PR_DATA_ZEROS: tb_puts(b, " data=zeros"); return;
	case PR_DATA_ONES: tb_puts(b, " data=ones"); return;
	case PR_DATA_ARANGE: tb_puts(b, " data=arange"); return;
	case PR_DATA_FILL:
		tb_puts(b, " data=fill(");
		put_number(b, d->fill, dt, is_float);
		tb_putc(b, ')');
		return;
	case PR_DATA_RANDOM:
		tb_puts(b, " data=random(");
		tb_u64(b, d->seed);
		tb_putc(b, ')');
		return;
	case PR_DATA_LIST:
		tb_puts(b, " data=[");
		for (int64_t i = 0; i < d->n_values; i++) {
			if (i)
				tb_puts(b, ", ");
			put_number(b, d->values[i], dt, is_float);
		}
		tb_putc(b, ']');
		return;
	case PR_DATA_BLOB:
		tb_puts(b, " data=@");
		tb_puts(b, d->blob ? d->blob->name : "?");
		return;
	}
}

static void put_input(tbuf *b, const pr_node *n)
{
	static const char *const kinds[] = {
		[PR_INPUT_POSITIONAL] = "", [PR_INPUT_USER] = " user",
		[PR_INPUT_PARAMETER] = " parameter", [PR_INPUT_BUFFER] = " buffer",
		[PR_INPUT_CONSTANT] = " constant",
	};
	tb_puts(b, "input");
	tb_puts(b, kinds[n->of_kind.input->kind]);
	if (n->of_kind.input->name) {
		tb_putc(b, ' ');
		put_string(b, n->of_kind.input->name);
	}
	put_data(b, &n->of_kind.input->data, &n->type);
}

static void put_return(tbuf *b, const pr_node *n)
{
	tb_puts(b, "return");
	for (int i = 0; i < n->n_args; i++) {
		tb_puts(b, i ? ", " : " ");
		put_arg(b, &n->args[i]);
		const pr_writeback *w = n->of_kind.writebacks ? &n->of_kind.writebacks[i] : NULL;
		if (w && w->kind != PR_WRITEBACK_NONE) {
			tb_puts(b, w->kind == PR_WRITEBACK_BUFFER ? " -> buffer " : " -> input ");
			put_string(b, w->target);
		}
	}
}

/* The indent, and "%NAME: TYPE = " of a node that defines a value. */
static void put_def(printer *pr, const pr_node *n)
{
	tbuf *b = pr->b;
	if (!n->name && n->kind == PR_NODE_OP) {
		tb_puts(b, "  ");
		return;
	}
	tb_puts(b, "  %");
	tb_puts(b, value_name(n));
	tb_puts(b, ": ");
	put_type(pr, &n->type);
	tb_puts(b, " = ");
}

static void put_node(printer *pr, const pr_node *n)
{
	tbuf *b = pr->b;
	if (n->kind == PR_NODE_RETURN) {
		tb_puts(b, "  ");
		put_return(b, n);
		tb_putc(b, '\n');
		return;
	}
	put_def(pr, n);
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT:
		put_input(b, n);
		break;
	case PR_NODE_OP:
		tb_puts(b, n->of_kind.schema ? n->of_kind.schema->full_name : "unknown::op");
		put_args(b, n);
		break;
	case PR_NODE_DELEGATE:
		tb_puts(b, "delegate @");
		tb_puts(b, n->of_kind.delegate ? n->of_kind.delegate->name : "?");
		put_args(b, n);
		break;
	case PR_NODE_GETITEM:
		tb_puts(b, "getitem ");
		if (n->n_args)
			put_arg(b, &n->args[0]);
		tb_puts(b, ", ");
		tb_i64(b, n->of_kind.index);
		break;
	case PR_NODE_RETURN:
		break;
	}
	tb_putc(b, '\n');
}

static void put_body(printer *pr, const pr_graph *g)
{
	tb_puts(pr->b, " {\n");
	pr_graph_for_each(g, n)
		put_node(pr, n);
	tb_puts(pr->b, "}\n");
}

static void put_blob(tbuf *b, const pr_blob *blob)
{
	static const char hex[] = "0123456789abcdef";
	tb_puts(b, "blob @");
	tb_puts(b, blob->name);
	tb_puts(b, " hex\"");
	for (int64_t i = 0; i < blob->size; i++) {
		char two[2] = { hex[blob->bytes[i] >> 4], hex[blob->bytes[i] & 15] };
		tb_add(b, two, 2);
	}
	tb_puts(b, "\"\n");
}

static void put_top_name(tbuf *b, const char *before, const char *name)
{
	tb_puts(b, before);
	tb_puts(b, name);
}

static void put_program(tbuf *b, const pr_program *p)
{
	printer pr = { .b = b };
	tb_puts(b, "passrun 1\n");
	if (p->n_schemas)
		tb_putc(b, '\n');
	for (int i = 0; i < p->n_schemas; i++) {
		put_top_name(b, "op ", p->schemas[i]->text);
		tb_putc(b, '\n');
	}
	if (p->blobs)
		tb_putc(b, '\n');
	for (const pr_blob *blob = p->blobs; blob; blob = blob->next)
		put_blob(b, blob);
	for (int i = 0; i < p->n_delegates; i++) {
		const pr_delegate *d = p->delegates[i];
		put_top_name(b, "\ndelegate @", d->name);
		for (int k = 0; k < d->n_specs; k++) {
			put_top_name(b, " ", d->specs[k].key);
			tb_putc(b, '=');
			put_string(b, d->specs[k].value);
		}
		put_body(&pr, d->body);
	}
	for (int i = 0; i < p->n_methods; i++) {
		put_top_name(b, "\nmethod @", p->methods[i]->name);
		put_body(&pr, p->methods[i]);
	}
	free(pr.specs);
}

char *pr_text_print(const pr_program *p, size_t *len)
{
	tbuf b = {0};
	out_reserve(&b, 65536 + out_node_count(p) * 96);   /* a node prints in about 80 */
	put_program(&b, p);
	if (len)
		*len = b.len;
	tb_putc(&b, 0);   /* a string, as callers print it */
	return (char *)b.p;
}

void pr_text_print_sink(const pr_program *p, pr_file_sink *sink)
{
	tbuf b = out_to_sink(sink);
	put_program(&b, p);
	out_finish(&b);
}
