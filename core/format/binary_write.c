/* binary_write.c: serializing a program into the binary format (.bin).
 *
 * The layout is docs/binary-format.md. The writer builds each metadata
 * section in its own growable buffer and the DATA section alongside: every
 * blob's bytes and the materialized storage bytes of every constant with
 * logical data go there as segments aligned to 64 bytes, and the metadata
 * refers to them by their offset inside DATA. Once the sizes are known, the
 * header and section table are written in front, DATA is padded to start on a
 * 64-byte boundary, and everything is concatenated.
 *
 * Nodes, schemas, delegates and blobs are referred to by index; a pointer ->
 * index table (open addressing) keeps that linear in the program's size.
 * Value references must point backwards (a value is defined before it is
 * read), which the loader relies on, so the writer refuses a graph that is out
 * of order rather than write a file the loader would reject. */
#include <stdlib.h>
#include <string.h>

#include "binary_format.h"
#include "passrun/data.h"
#include "passrun/format.h"

/* ---- output buffer ------------------------------------------------------- */

typedef struct wbuf {
	uint8_t *p;
	size_t len, cap;
	size_t too_long;   /* the length of the first string over PRB_MAX_STRING, or 0 */
} wbuf;

static void *wb_grow(wbuf *b, size_t n)
{
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n)
			cap *= 2;
		b->p = pr_xrealloc(b->p, cap);
		b->cap = cap;
	}
	void *at = b->p + b->len;
	b->len += n;
	return at;
}

static void wb_bytes(wbuf *b, const void *s, size_t n)
{
	if (n)
		memcpy(wb_grow(b, n), s, n);
}

static void wb_le(wbuf *b, uint64_t v, int n)
{
	uint8_t *at = wb_grow(b, (size_t)n);
	for (int i = 0; i < n; i++)
		at[i] = (uint8_t)(v >> (8 * i));
}

static void wb_u8(wbuf *b, unsigned v) { wb_le(b, v, 1); }
static void wb_u32(wbuf *b, uint32_t v) { wb_le(b, v, 4); }
static void wb_u64(wbuf *b, uint64_t v) { wb_le(b, v, 8); }
static void wb_i64(wbuf *b, int64_t v) { wb_le(b, (uint64_t)v, 8); }

static void wb_f64(wbuf *b, double d)
{
	uint64_t v;
	memcpy(&v, &d, sizeof v);
	wb_u64(b, v);
}

static void wb_str(wbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (n > PRB_MAX_STRING && !b->too_long)
		b->too_long = n;   /* pr_binary_write refuses the program: it would not load */
	wb_u32(b, (uint32_t)n);
	wb_bytes(b, s, n);
}

static void wb_ostr(wbuf *b, const char *s)
{
	if (s)
		wb_str(b, s);
	else
		wb_u32(b, PRB_NO_STRING);
}

static void wb_pad(wbuf *b, size_t align)
{
	size_t pad = (align - b->len % align) % align;
	if (pad)
		memset(wb_grow(b, pad), 0, pad);
}

/* ---- pointer -> index ------------------------------------------------------ */

typedef struct ptrmap {
	const void **keys;
	uint64_t *vals;
	size_t cap;   /* a power of two, at least twice the entries */
} ptrmap;

static void pm_init(ptrmap *m, size_t n)
{
	m->cap = 16;
	while (m->cap < 2 * n + 1)
		m->cap *= 2;
	m->keys = pr_xcalloc(m->cap, sizeof *m->keys);
	m->vals = pr_xcalloc(m->cap, sizeof *m->vals);
}

static void pm_free(ptrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

static size_t pm_slot(const ptrmap *m, const void *k)
{
	uint64_t h = (uint64_t)(uintptr_t)k * UINT64_C(0x9E3779B97F4A7C15);
	size_t i = (size_t)(h >> 20) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void pm_put(ptrmap *m, const void *k, uint64_t v)
{
	size_t i = pm_slot(m, k);
	m->keys[i] = k;
	m->vals[i] = v;
}

static bool pm_get(const ptrmap *m, const void *k, uint64_t *v)
{
	size_t i = pm_slot(m, k);
	if (!m->keys[i])
		return false;
	*v = m->vals[i];
	return true;
}

/* ---- the writer ------------------------------------------------------------ */

typedef struct writer {
	const pr_program *prog;
	ptrmap schemas, delegates, blobs;
	ptrmap nodes;          /* of the graph being written */
	wbuf data;             /* the DATA section */
	pr_err *err;
} writer;

static bool w_fail(writer *w, pr_err *e)
{
	if (!w->err)
		w->err = e;
	else
		pr_err_free(e);
	return false;
}

static void w_device(wbuf *b, pr_device d)
{
	size_t n = strnlen(d.type, PR_DEVICE_TYPE_MAX - 1);
	wb_u8(b, (unsigned)n);
	wb_bytes(b, d.type, n);
	wb_u32(b, (uint32_t)d.index);
}

static void w_spec(wbuf *b, const pr_spec *s)
{
	wb_u8(b, (unsigned)s->dtype);
	wb_u8(b, (unsigned)s->rank);
	wb_u8(b, s->has_mem ? PRB_SPEC_HAS_MEM : 0);
	wb_u8(b, 0);
	for (int i = 0; i < s->rank; i++)
		wb_i64(b, s->shape[i]);
	for (int i = 0; i < s->rank; i++)
		wb_i64(b, s->strides[i]);
	w_device(b, s->device);
	if (s->has_mem) {
		w_device(b, s->mem_arena);
		wb_i64(b, s->mem_offset);
	}
}

static void w_type(wbuf *b, const pr_type *t)
{
	wb_u8(b, (unsigned)t->kind);
	if (t->kind == PR_TYPE_TENSOR)
		w_spec(b, &t->tensor);
	if (t->kind == PR_TYPE_TUPLE) {
		wb_u32(b, (uint32_t)t->n_elems);
		for (int i = 0; i < t->n_elems; i++)
			w_spec(b, &t->elems[i]);
	}
}

/* Appends a 64-byte-aligned segment to DATA and returns its offset there. */
static uint64_t w_segment(writer *w, const uint8_t *bytes, size_t n)
{
	wb_pad(&w->data, PRB_ALIGN);
	uint64_t at = w->data.len;
	wb_bytes(&w->data, bytes, n);
	return at;
}

/* Is materializing s cheap, O(its storage)? Not when more elements than the
 * storage holds overlap in it (stride 0): f32[1099511627776]{strides=[0]}
 * spans 4 bytes but has 2^40 elements to compute. */
static bool w_worth_storing(const pr_spec *s, int64_t *storage)
{
	int64_t numel;
	return pr_spec_storage_bytes_checked(s, storage) && *storage > 0 &&
	       pr_spec_numel_checked(s, &numel) && numel <= *storage / (int64_t)pr_dtype_size(s->dtype);
}

/* The storage bytes of a constant with logical data, as a segment. A
 * constant whose data cannot be materialized (a list of the wrong length), or
 * not cheaply (see above), keeps its description only: the verifier reports
 * the former, and a runtime can materialize the latter as it sees fit. */
static void w_data_segment(writer *w, wbuf *b, const pr_node *n)
{
	const pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
	int64_t storage = 0;
	if (s && w_worth_storing(s, &storage)) {
		uint8_t *bytes = pr_xmalloc((size_t)storage);
		pr_err *e = pr_data_materialize(&n->data, s, bytes);
		if (!e) {
			wb_u64(b, w_segment(w, bytes, (size_t)storage));
			wb_u64(b, (uint64_t)storage);
			free(bytes);
			return;
		}
		pr_err_free(e);
		free(bytes);
	}
	wb_u64(b, 0);
	wb_u64(b, 0);
}

static bool w_data(writer *w, wbuf *b, const pr_node *n)
{
	const pr_data *d = &n->data;
	wb_u8(b, (unsigned)d->kind);
	switch (d->kind) {
	case PR_DATA_NONE:
		return true;
	case PR_DATA_FILL: wb_f64(b, d->fill); break;
	case PR_DATA_RANDOM: wb_u64(b, d->seed); break;
	case PR_DATA_LIST:
		wb_u64(b, (uint64_t)d->n_values);
		for (int64_t i = 0; i < d->n_values; i++)
			wb_f64(b, d->values[i]);
		break;
	case PR_DATA_BLOB: {
		uint64_t ix;
		if (!d->blob || !pm_get(&w->blobs, d->blob, &ix))
			return w_fail(w, pr_err_new("cannot write %%%s: its data names a blob the "
						    "program does not hold", n->name ? n->name : "?"));
		wb_u32(b, (uint32_t)ix);
		return true;
	}
	default:
		break;
	}
	w_data_segment(w, b, n);
	return true;
}

static bool w_args(writer *w, wbuf *b, const pr_node *n, const pr_arg *args, int count)
{
	wb_u32(b, (uint32_t)count);
	for (int i = 0; i < count; i++) {
		const pr_arg *a = &args[i];
		wb_u8(b, (unsigned)a->kind);
		uint64_t ix;
		switch (a->kind) {
		case PR_ARG_VALUE:
			if (!pm_get(&w->nodes, a->u.value, &ix))
				return w_fail(w, pr_err_new("cannot write @%s: %%%s reads a value that is "
							    "not defined before it in the graph",
							    n->graph->name, n->name ? n->name : "(a statement)"));
			wb_u64(b, ix);
			break;
		case PR_ARG_INT: wb_i64(b, a->u.i); break;
		case PR_ARG_FLOAT: wb_f64(b, a->u.f); break;
		case PR_ARG_BOOL: wb_u8(b, a->u.b ? 1 : 0); break;
		case PR_ARG_NONE: break;
		case PR_ARG_STRING: wb_str(b, a->u.s); break;
		case PR_ARG_LIST:
			if (!w_args(w, b, n, a->u.list.items, a->u.list.n))
				return false;
			break;
		}
	}
	return true;
}

static bool w_ref(writer *w, wbuf *b, const ptrmap *m, const void *k, const pr_node *n,
		  const char *what)
{
	uint64_t ix;
	if (!k || !pm_get(m, k, &ix))
		return w_fail(w, pr_err_new("cannot write %%%s in @%s: its %s is not part of the program",
					    n->name ? n->name : "(a statement)", n->graph->name, what));
	wb_u32(b, (uint32_t)ix);
	return true;
}

static bool w_node(writer *w, wbuf *b, const pr_node *n)
{
	wb_u8(b, (unsigned)n->kind);
	wb_ostr(b, n->name);
	w_type(b, &n->type);
	switch (n->kind) {
	case PR_NODE_INPUT:
		wb_u8(b, (unsigned)n->input_kind);
		wb_ostr(b, n->input_name);
		return w_data(w, b, n);
	case PR_NODE_OP:
		return w_ref(w, b, &w->schemas, n->schema, n, "op schema") &&
		       w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_DELEGATE:
		return w_ref(w, b, &w->delegates, n->delegate, n, "delegate") &&
		       w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_GETITEM:
		wb_i64(b, n->index);
		return w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_RETURN:
		if (!w_args(w, b, n, n->args, n->n_args))
			return false;
		for (int i = 0; i < n->n_args; i++) {
			const pr_writeback *wb = n->writebacks ? &n->writebacks[i] : NULL;
			wb_u8(b, wb ? (unsigned)wb->kind : PR_WRITEBACK_NONE);
			wb_ostr(b, wb && wb->kind != PR_WRITEBACK_NONE ? wb->target : NULL);
		}
		return true;
	}
	return w_fail(w, pr_err_new("cannot write a node of unknown kind %d", (int)n->kind));
}

/* The loader wants one return node, at the end; say so here rather than
 * write a file it refuses. */
static bool w_graph_shape(writer *w, const pr_graph *g, uint64_t *count)
{
	*count = 0;
	pr_graph_for_each(g, n) {
		(*count)++;
		if ((n->kind == PR_NODE_RETURN) != (n->next == NULL))
			return w_fail(w, pr_err_new("cannot write @%s: it must end with its one return node",
						    g->name));
	}
	if (!*count)
		return w_fail(w, pr_err_new("cannot write @%s: it has no return node", g->name));
	return true;
}

static bool w_graph(writer *w, wbuf *b, const pr_graph *g)
{
	uint64_t count;
	if (!w_graph_shape(w, g, &count))
		return false;
	wb_u64(b, count);
	pm_init(&w->nodes, (size_t)count);
	uint64_t i = 0;
	bool ok = true;
	pr_graph_for_each(g, n) {
		if (!(ok = w_node(w, b, n)))
			break;
		pm_put(&w->nodes, n, i++);
	}
	pm_free(&w->nodes);
	return ok;
}

static void w_schemas(writer *w, wbuf *b)
{
	const pr_program *p = w->prog;
	wb_u32(b, (uint32_t)p->n_schemas);
	for (int i = 0; i < p->n_schemas; i++)
		wb_str(b, p->schemas[i]->text);
}

static void w_blobs(writer *w, wbuf *b)
{
	uint32_t count = 0;
	for (const pr_blob *bl = w->prog->blobs; bl; bl = bl->next)
		count++;
	wb_u32(b, count);
	for (const pr_blob *bl = w->prog->blobs; bl; bl = bl->next) {
		wb_str(b, bl->name);
		wb_u64(b, (uint64_t)bl->size);
		wb_u64(b, w_segment(w, bl->bytes, (size_t)bl->size));
	}
}

static bool w_delegates(writer *w, wbuf *b)
{
	const pr_program *p = w->prog;
	wb_u32(b, (uint32_t)p->n_delegates);
	for (int i = 0; i < p->n_delegates; i++) {
		const pr_delegate *d = p->delegates[i];
		wb_str(b, d->name);
		wb_u32(b, (uint32_t)d->n_specs);
		for (int k = 0; k < d->n_specs; k++) {
			wb_str(b, d->specs[k].key);
			wb_str(b, d->specs[k].value);
		}
	}
	for (int i = 0; i < p->n_delegates; i++)
		if (!w_graph(w, b, p->delegates[i]->body))
			return false;
	return true;
}

static bool w_methods(writer *w, wbuf *b)
{
	const pr_program *p = w->prog;
	wb_u32(b, (uint32_t)p->n_methods);
	for (int i = 0; i < p->n_methods; i++) {
		wb_str(b, p->methods[i]->name);
		if (!w_graph(w, b, p->methods[i]))
			return false;
	}
	return true;
}

static void w_index_program(writer *w)
{
	const pr_program *p = w->prog;
	size_t n_blobs = 0;
	for (const pr_blob *bl = p->blobs; bl; bl = bl->next)
		n_blobs++;
	pm_init(&w->schemas, (size_t)p->n_schemas);
	pm_init(&w->delegates, (size_t)p->n_delegates);
	pm_init(&w->blobs, n_blobs);
	for (int i = 0; i < p->n_schemas; i++)
		pm_put(&w->schemas, p->schemas[i], (uint64_t)i);
	for (int i = 0; i < p->n_delegates; i++)
		pm_put(&w->delegates, p->delegates[i], (uint64_t)i);
	uint64_t i = 0;
	for (const pr_blob *bl = p->blobs; bl; bl = bl->next)
		pm_put(&w->blobs, bl, i++);
}

/* Header, section table, the four metadata sections, padding, DATA. */
static void w_assemble(wbuf *out, wbuf *secs, const wbuf *data)
{
	static const uint32_t kinds[PRB_SEC_COUNT] = {
		PRB_SEC_SCHEMAS, PRB_SEC_BLOBS, PRB_SEC_DELEGATES, PRB_SEC_METHODS, PRB_SEC_DATA,
	};
	uint64_t offs[PRB_SEC_COUNT], sizes[PRB_SEC_COUNT];
	uint64_t at = PRB_HEADER_SIZE + PRB_SEC_COUNT * PRB_SECTION_ENTRY_SIZE;
	for (int i = 0; i < PRB_SEC_COUNT - 1; i++) {
		offs[i] = at;
		sizes[i] = secs[i].len;
		at += secs[i].len;
	}
	at = (at + PRB_ALIGN - 1) / PRB_ALIGN * PRB_ALIGN;
	offs[PRB_SEC_COUNT - 1] = at;
	sizes[PRB_SEC_COUNT - 1] = data->len;
	uint64_t file_size = at + data->len;

	wb_bytes(out, PR_BINARY_MAGIC, 8);
	wb_u32(out, PRB_VERSION);
	wb_u32(out, PRB_BYTE_ORDER);
	wb_u64(out, file_size);
	wb_u64(out, PRB_HEADER_SIZE);
	wb_u32(out, PRB_SEC_COUNT);
	wb_u32(out, PRB_SECTION_ENTRY_SIZE);
	memset(wb_grow(out, PRB_HEADER_SIZE - 40), 0, PRB_HEADER_SIZE - 40);   /* reserved */
	for (int i = 0; i < PRB_SEC_COUNT; i++) {
		wb_u32(out, kinds[i]);
		wb_u32(out, 0);
		wb_u64(out, offs[i]);
		wb_u64(out, sizes[i]);
	}
	for (int i = 0; i < PRB_SEC_COUNT - 1; i++)
		wb_bytes(out, secs[i].p, secs[i].len);
	wb_pad(out, PRB_ALIGN);
	wb_bytes(out, data->p, data->len);
	PR_ASSERT(out->len == file_size);
}

pr_err *pr_binary_write(const pr_program *p, uint8_t **out, size_t *len)
{
	writer w = {.prog = p};
	wbuf secs[PRB_SEC_COUNT - 1] = {{0}};
	w_index_program(&w);
	w_schemas(&w, &secs[0]);
	w_blobs(&w, &secs[1]);
	bool ok = w_delegates(&w, &secs[2]) && w_methods(&w, &secs[3]);
	for (int i = 0; ok && i < PRB_SEC_COUNT - 1; i++)
		if (secs[i].too_long)
			ok = w_fail(&w, pr_err_new("a string of %zu bytes, more than the %u bytes a "
						   "string may hold", secs[i].too_long,
						   PRB_MAX_STRING));
	wbuf file = {0};
	if (ok)
		w_assemble(&file, secs, &w.data);
	for (int i = 0; i < PRB_SEC_COUNT - 1; i++)
		free(secs[i].p);
	free(w.data.p);
	pm_free(&w.schemas);
	pm_free(&w.delegates);
	pm_free(&w.blobs);
	if (!ok) {
		free(file.p);
		return w.err;
	}
	*out = file.p;
	*len = file.len;
	return NULL;
}
