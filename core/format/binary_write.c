/* binary_write.c: serializing a program into the binary format (.bin).
 *
 * The layout is docs/binary-format.md. The writer appends the metadata
 * sections, in order, after room for the header and section table, to an
 * outbuf (outbuf.h): the one buffer that becomes the file
 * (pr_binary_write, sized up front from the node count), or the stages of
 * a file sink, filled in place (pr_binary_write_sink). It lays the DATA
 * section out alongside: every blob's bytes and the storage bytes of every
 * constant with data get a segment aligned to 64 bytes, and the metadata
 * refers to them by their offset inside DATA. Bytes the program holds (a
 * blob's, a loaded constant's mapped storage) are not copied: DATA, appended
 * at the next 64-byte boundary, is written from where they lie, and only the
 * storage of constants with logical data (fill, random, a list) is
 * materialized into memory first. The header and section table are written
 * last, when every size is known: into the buffer, or over the file's first
 * bytes (a target that cannot seek gets the file made in memory).
 *
 * Nodes, schemas, delegates and blobs are referred to by index. A node's
 * index is in its scratch once it is written (one load per value read, no
 * hash: at a million nodes a table misses the cache on every read), and
 * the node at each index is kept, which tells a written node from one whose
 * scratch is still the caller's; the caller's values are kept alongside and
 * put back at each node's last read that its use list counts (or after the
 * graph, for what is left), so they survive. A graph's nodes are walked
 * once.
 * Schemas, delegates and blobs, few, go through a pointer -> index table
 * (open addressing).
 * Value references must point backwards (a value is defined before it is
 * read), which the loader relies on, so the writer refuses a graph that is out
 * of order rather than write a file the loader would reject. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "binary_format.h"
#include "outbuf.h"
#include "passrun/data.h"
#include "passrun/format.h"
#include "short_copy.h"

/* ---- output buffer ------------------------------------------------------- */

typedef struct wbuf {
	outbuf o;
	size_t too_long;   /* the length of the first string over PRB_MAX_STRING, or 0 */
} wbuf;

/* Room for n more bytes at the cursor (outbuf.h). */
static inline uint8_t *wb_room(wbuf *b, size_t n)
{
	return out_room(&b->o, n);
}

static inline void *wb_grow(wbuf *b, size_t n)
{
	void *at = wb_room(b, n);
	b->o.len += n;
	return at;
}

/* Little-endian stores at a cursor, for records whose largest size is
 * reserved once (w_spec); on a little-endian host each is one store. */
static inline uint8_t *put_le(uint8_t *q, uint64_t v, int n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(q, &v, (size_t)n);
#else
	for (int i = 0; i < n; i++)
		q[i] = (uint8_t)(v >> (8 * i));
#endif
	return q + n;
}

static inline void wb_bytes(wbuf *b, const void *s, size_t n)
{
	out_bytes(&b->o, s, n);
}

static inline void wb_le(wbuf *b, uint64_t v, int n)
{
	put_le(wb_grow(b, (size_t)n), v, n);
}

static inline void wb_u8(wbuf *b, unsigned v) { *(uint8_t *)wb_grow(b, 1) = (uint8_t)v; }
static inline void wb_u32(wbuf *b, uint32_t v) { wb_le(b, v, 4); }
static inline void wb_u64(wbuf *b, uint64_t v) { wb_le(b, v, 8); }
static inline void wb_i64(wbuf *b, int64_t v) { wb_le(b, (uint64_t)v, 8); }

static inline void wb_f64(wbuf *b, double d)
{
	uint64_t v;
	memcpy(&v, &d, sizeof v);
	wb_u64(b, v);
}

/* The bytes of s that its string field takes: all of them, or none for a
 * string too long for the format, which pr_binary_write then refuses (the
 * length field is never right for it; the file is not kept). */
static size_t wb_str_len(wbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (n <= PRB_MAX_STRING)
		return n;
	if (!b->too_long)
		b->too_long = n;
	return 0;
}

/* A string field at q, with 4 + n bytes of room: n = wb_str_len(s). */
static inline uint8_t *put_str(uint8_t *q, const char *s, size_t n)
{
	q = put_le(q, n, 4);
	copy_short(q, s, n);
	return q + n;
}

static void wb_str(wbuf *b, const char *s)
{
	size_t n = wb_str_len(b, s);
	put_str(wb_room(b, 4 + n), s, n);
	b->o.len += 4 + n;
}

/* Inline, with its copy: an input's name, on every constant, and a
 * write-back's target. */
static inline void wb_ostr(wbuf *b, const char *s)
{
	size_t n = s ? wb_str_len(b, s) : 0;
	uint8_t *q = wb_room(b, 4 + n);
	b->o.len += (size_t)((s ? put_str(q, s, n) : put_le(q, PRB_NO_STRING, 4)) - q);
}

static void wb_pad(wbuf *b, size_t align)
{
	size_t pad = (align - out_pos(&b->o) % align) % align;
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

/* The most bytes a device field takes: length, type, index. */
#define W_DEVICE_MAX (1 + (PR_DEVICE_TYPE_MAX - 1) + 4)
#define W_DEVICE_COPY 24   /* >= W_DEVICE_MAX: a device's bytes are copied as one block */
#define W_DEVICE_IDS 16    /* ids below this keep their bytes (w_device_bytes) */

/* A device's bytes in the file, by its id: a program names a few devices
 * on every spec (ids are handed out from 0, the host, up), and encoding
 * each costs a strnlen and a copy of its own. */
typedef struct w_device_bytes {
	uint8_t raw[W_DEVICE_COPY];
	size_t len;   /* 0: not made yet */
} w_device_bytes;

/* The bytes of a spec up to its memory plan (dtype, rank, flags without
 * the plan's bit, reserved, shape, strides, device) by what makes them:
 * its interned layout, dtype and device. A program's specs repeat a few
 * of these a million times (a host value and its device copy share the
 * layout), and a kept one is one compare and a fixed-size copy instead of
 * a word per dimension and the device. Kept when no longer than
 * W_SPEC_KEPT (rank 4 on a device of up to 15 bytes' type: 64 + 20). */
#define W_SPEC_KEPT 96
#define W_SPECS_LOG2 5
#define W_SPECS (1 << W_SPECS_LOG2)

typedef struct w_spec_bytes {
	const int64_t *shape;   /* with rank, names the strides too */
	pr_device_id device_id;
	pr_dtype dtype;
	int16_t rank;
	uint8_t len;   /* 0: empty */
	uint8_t raw[W_SPEC_KEPT];
} w_spec_bytes;

/* The storage of a layout (its interned shape and strides, dtype and rank),
 * and whether a constant of it is stored (w_worth_storing): the constants of
 * a program share a few layouts. */
typedef struct w_known_layout {
	const int64_t *shape;   /* with rank, names the strides too */
	int rank;
	pr_dtype dtype;
	bool used, worth;
	int64_t storage;
} w_known_layout;

#define W_LAYOUTS_LOG2 4   /* kept layouts: the constants of a layer have a few */

/* A segment of DATA, written after the metadata: bytes the program holds
 * already (a blob's, a loaded constant's mapped storage), written from where
 * they lie, or a constant's materialized storage, kept in the writer's
 * buffer (bytes NULL: the next size bytes made, as they were made in
 * segment order). Its DATA offset follows from the sizes before it
 * (segment_at); 16 bytes, as a million nodes have 400 000 segments, whose
 * list is made new for each write. */
typedef struct w_segment_ref {
	const uint8_t *bytes;
	uint64_t size;
} w_segment_ref;

/* A node of the graph being written, by its index, and its caller's
 * scratch; node is marked (slot_done) once that scratch is back in it. */
typedef struct w_slot {
	const pr_node *node;
	void *scratch;
} w_slot;

/* A written node's scratch, while its reads are still to come: its index +
 * 1 in the low 32 bits, the reads its use list counts still to come in the
 * high ones (w_graph). */
#define W_INDEX_BITS 32
#define W_INDEX_MASK ((UINT64_C(1) << W_INDEX_BITS) - 1)
#define W_ONE_READ (UINT64_C(1) << W_INDEX_BITS)

static inline const pr_node *slot_done(const pr_node *n)
{
	return (const pr_node *)((uintptr_t)n | 1);   /* nodes are aligned */
}

static inline bool slot_is_done(const pr_node *n)
{
	return (uintptr_t)n & 1;
}

typedef struct writer {
	const pr_program *prog;
	ptrmap schemas, delegates, blobs;
	const pr_graph *graph; /* being written; its nodes' scratch holds index + 1 once written
				* (node_index), until their last read */
	w_slot *slots;         /* its nodes written so far, n_written of them */
	size_t n_written, cap_slots;
	size_t n_pending;      /* of those, the ones whose scratch is not back yet */
	w_segment_ref *segs;   /* DATA, in order: n_segs of them */
	size_t n_segs, cap_segs;
	uint64_t data_len;     /* DATA's size so far */
	outbuf made;           /* the materialized storage of constants, one after another */
	w_device_bytes devices[W_DEVICE_IDS];   /* by id */
	w_spec_bytes *specs;   /* W_SPECS, by a hash of what makes them */
	w_known_layout layouts[1 << W_LAYOUTS_LOG2];   /* by a hash of the layout */
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

static uint8_t *encode_device(uint8_t *q, pr_device d)
{
	size_t n = strnlen(d.type, PR_DEVICE_TYPE_MAX - 1);
	*q++ = (uint8_t)n;
	memcpy(q, d.type, n);
	return put_le(q + n, (uint32_t)d.index, 4);
}

/* The bytes of the device of id at q, which has W_DEVICE_COPY bytes of
 * room, for an id not kept yet (put_device). */
static __attribute__((noinline)) uint8_t *put_device_made(writer *w, uint8_t *q, pr_device_id id)
{
	if (id >= W_DEVICE_IDS) {   /* a process with that many devices: made each time */
		uint8_t raw[W_DEVICE_COPY] = {0};
		size_t len = (size_t)(encode_device(raw, *pr_device_of(id)) - raw);
		memcpy(q, raw, W_DEVICE_COPY);
		return q + len;
	}
	w_device_bytes *k = &w->devices[id];
	memset(k->raw, 0, sizeof k->raw);
	k->len = (size_t)(encode_device(k->raw, *pr_device_of(id)) - k->raw);
	memcpy(q, k->raw, W_DEVICE_COPY);
	return q + k->len;
}

static inline uint8_t *put_device(writer *w, uint8_t *q, pr_device_id id)
{
	if (__builtin_expect(id < W_DEVICE_IDS && w->devices[id].len, 1)) {
		memcpy(q, w->devices[id].raw, W_DEVICE_COPY);
		return q + w->devices[id].len;
	}
	return put_device_made(w, q, id);
}

/* The most bytes a spec of rank dims takes, with room for the devices'
 * whole blocks (put_device) and for a kept spec's (put_spec). */
#define W_SPEC_MAX(rank) (4 + 16 * (rank) + 2 * W_DEVICE_MAX + 8 + W_DEVICE_COPY + W_SPEC_KEPT)

static w_spec_bytes *spec_slot(writer *w, const pr_spec *s)
{
	uint64_t h = ((uint64_t)(uintptr_t)s->shape ^ ((uint64_t)(uintptr_t)pr_spec_strides(s) << 17) ^
		      ((uint64_t)s->device_id << 40) ^ ((uint64_t)s->dtype << 56) ^
		      ((uint64_t)s->rank << 61)) * UINT64_C(0x9E3779B97F4A7C15);
	return &w->specs[h >> (64 - W_SPECS_LOG2)];
}

/* A spec's bytes up to its memory plan, made (and kept when short). */
static __attribute__((noinline)) uint8_t *put_spec_made(writer *w, uint8_t *q, const pr_spec *s,
							w_spec_bytes *k)
{
	uint8_t *start = q;
	size_t rank = (size_t)s->rank;
	*q++ = (uint8_t)s->dtype;
	*q++ = (uint8_t)rank;
	*q++ = 0;   /* the flags: put_spec sets the plan's bit */
	*q++ = 0;
	for (size_t i = 0; i < rank; i++) {
		put_le(q + 8 * i, (uint64_t)s->shape[i], 8);
		put_le(q + 8 * (rank + i), (uint64_t)pr_spec_strides(s)[i], 8);
	}
	q = put_device(w, q + 16 * rank, s->device_id);
	size_t len = (size_t)(q - start);
	if (len <= W_SPEC_KEPT) {
		k->shape = s->shape;
		k->device_id = s->device_id;
		k->rank = s->rank;
		k->dtype = s->dtype;
		k->len = (uint8_t)len;
		memcpy(k->raw, start, len);
	}
	return q;
}

/* A spec is the record every node has: its largest size is reserved once
 * (W_SPEC_MAX), with the node's head before it (w_node_head), then the
 * fields are stored at a cursor. Inline in the head: a call per node cost
 * more than its kept case. */
static inline __attribute__((always_inline)) uint8_t *put_spec(writer *w, uint8_t *q,
								const pr_spec *s)
{
	w_spec_bytes *k = spec_slot(w, s);
	uint8_t *start = q;
	if (k->len && k->shape == s->shape &&
	    k->device_id == s->device_id && k->rank == s->rank && k->dtype == s->dtype) {
		if (k->len <= 48)   /* rank 2 on a device: 44 */
			memcpy(q, k->raw, 48);
		else
			memcpy(q, k->raw, W_SPEC_KEPT);
		q += k->len;
	} else {
		q = put_spec_made(w, q, s, k);
	}
	if (s->has_mem) {
		start[2] = PRB_SPEC_HAS_MEM;
		q = put_device(w, q, s->mem_arena_id);
		q = put_le(q, (uint64_t)s->mem_offset, 8);
	}
	return q;
}

static void w_spec(writer *w, wbuf *b, const pr_spec *s)
{
	uint8_t *q = wb_room(b, W_SPEC_MAX((size_t)s->rank));
	b->o.len += (size_t)(put_spec(w, q, s) - q);
}

/* What every node starts with, its kind, name and type, in one room up to
 * a tensor's spec: a tuple's elements follow one by one. */
static void w_node_head(writer *w, wbuf *b, const pr_node *n)
{
	const pr_type *t = &n->type;
	size_t len = n->name ? wb_str_len(b, n->name) : 0;
	size_t rank = t->kind == PR_TYPE_TENSOR ? (size_t)t->tensor.rank : 0;
	uint8_t *start = wb_room(b, 1 + 4 + len + 1 + W_SPEC_MAX(rank)), *q = start;
	*q++ = (uint8_t)n->kind;
	q = n->name ? put_str(q, n->name, len) : put_le(q, PRB_NO_STRING, 4);
	*q++ = (uint8_t)t->kind;
	if (t->kind == PR_TYPE_TENSOR)
		q = put_spec(w, q, &t->tensor);
	b->o.len += (size_t)(q - start);
	if (t->kind == PR_TYPE_TUPLE) {
		wb_u32(b, (uint32_t)t->n_elems);
		for (int i = 0; i < t->n_elems; i++)
			w_spec(w, b, &t->elems[i]);
	}
}

/* Where the segment after DATA's first `end` bytes starts: the next
 * 64-byte boundary. */
static uint64_t segment_at(uint64_t end)
{
	return (end + PRB_ALIGN - 1) / PRB_ALIGN * PRB_ALIGN;
}

/* Places a segment of n bytes at the next 64-byte boundary of DATA and
 * returns its offset there; bytes NULL: the last n bytes made (w->made). */
static uint64_t w_segment(writer *w, const uint8_t *bytes, size_t n)
{
	if (w->n_segs == w->cap_segs) {
		w->cap_segs = 2 * w->cap_segs + 16;
		w->segs = pr_xrealloc(w->segs, w->cap_segs * sizeof *w->segs);
	}
	uint64_t at = segment_at(w->data_len);
	w->segs[w->n_segs++] = (w_segment_ref){bytes, n};
	w->data_len = at + n;
	return at;
}

/* The pages of a loaded program's mapping whose bytes are written (copied
 * to the sink or the buffer) are handed back in runs of W_DROP_STEP bytes,
 * so that the 32 MB of constants a million nodes hold are not all kept in
 * memory once read. Safe only because the mapping is private, read-only
 * and backed by the file (fileio.c's load_mapped): a page dropped and
 * touched again, by this writer or by a later reader of the program, is
 * read back from the file as at first, and nothing in it can be lost. A
 * page is dropped once the segment that ends past it is written; the gap
 * between two segments (another's bytes, the padding) goes with them. */
#define W_DROP_STEP ((uintptr_t)1 << 20)

typedef struct w_dropped {
	uintptr_t map_lo, map_hi;   /* the program's mapping; empty: none */
	uintptr_t page;
	uintptr_t lo, hi;           /* the run written and not dropped yet */
} w_dropped;

static void w_drop_run(w_dropped *d)
{
	if (d->hi > d->lo)
		madvise((void *)d->lo, d->hi - d->lo, MADV_DONTNEED);   /* best effort */
	d->lo = d->hi;
}

/* bytes, n of them, just written: their whole pages join the run. */
static void w_drop_written(w_dropped *d, const uint8_t *bytes, size_t n)
{
	uintptr_t a = (uintptr_t)bytes;
	if (a < d->map_lo || a >= d->map_hi || n > d->map_hi - a)
		return;
	uintptr_t lo = a / d->page * d->page, hi = (a + n) / d->page * d->page;
	if (lo < d->lo || lo > d->hi + W_DROP_STEP) {
		w_drop_run(d);
		d->lo = d->hi = lo;
	}
	if (hi > d->hi)
		d->hi = hi;
	if (d->hi - d->lo >= W_DROP_STEP)
		w_drop_run(d);
}

#define W_SMALL_SEGMENT 4096

/* DATA, segment by segment, with the zeros between. */
static void w_data_section(const writer *w, wbuf *file)
{
	static const uint8_t zeros[PRB_ALIGN];
	uintptr_t map = (uintptr_t)w->prog->mapping;
	w_dropped dropped = {map, map + (map ? w->prog->mapping_size : 0),
			     (uintptr_t)sysconf(_SC_PAGESIZE), 0, 0};
	uint64_t pos = 0;
	size_t made_at = 0;
	for (size_t i = 0; i < w->n_segs; i++) {
		const w_segment_ref *g = &w->segs[i];
		const uint8_t *bytes = g->bytes ? g->bytes : w->made.p + made_at;
		uint64_t at = segment_at(pos);
		size_t pad = (size_t)(at - pos), n = (size_t)g->size;   /* pad < PRB_ALIGN */
		if (n <= W_SMALL_SEGMENT) {   /* most constants: the padding and bytes in one room */
			uint8_t *q = wb_room(file, PRB_ALIGN + n);
			memset(q, 0, PRB_ALIGN);
			memcpy(q + pad, bytes, n);
			file->o.len += pad + n;
		} else {
			wb_bytes(file, zeros, pad);
			wb_bytes(file, bytes, n);
		}
		if (g->bytes)
			w_drop_written(&dropped, g->bytes, (size_t)g->size);
		else
			made_at += n;
		pos = at + g->size;
	}
	w_drop_run(&dropped);
}

/* Is materializing s cheap, O(its storage)? Not when more elements than the
 * storage holds overlap in it (stride 0): f32[1099511627776]{strides=[0]}
 * spans 4 bytes but has 2^40 elements to compute. */
static bool worth_storing(const pr_spec *s, int64_t *storage)
{
	int64_t numel;
	return pr_spec_storage_bytes_checked(s, storage) && *storage > 0 &&
	       pr_spec_numel_checked(s, &numel) && numel <= *storage / (int64_t)pr_dtype_size(s->dtype);
}

/* The same, known for the layouts asked about before: the layout's interned
 * dims identify it, and nothing changes them while a program is written.
 * Consecutive constants alternate between a layer's few layouts. */
static bool w_worth_storing(writer *w, const pr_spec *s, int64_t *storage)
{
	uint64_t h = ((uint64_t)(uintptr_t)s->shape ^ ((uint64_t)(uintptr_t)pr_spec_strides(s) << 17) ^
		      ((uint64_t)s->dtype << 56) ^ ((uint64_t)s->rank << 61)) *
		     UINT64_C(0x9E3779B97F4A7C15);
	w_known_layout *k = &w->layouts[h >> (64 - W_LAYOUTS_LOG2)];
	if (!k->used || k->shape != s->shape || k->rank != s->rank ||
	    k->dtype != s->dtype) {
		*k = (w_known_layout){s->shape, s->rank, s->dtype, true, false, 0};
		k->worth = worth_storing(s, &k->storage);
	}
	*storage = k->storage;
	return k->worth;
}

/* The storage bytes of a constant with logical data, as a segment. A
 * constant whose data cannot be materialized (a list of the wrong length), or
 * not cheaply (see above), keeps its description only: the verifier reports
 * the former, and a runtime can materialize the latter as it sees fit. */
/* A constant's storage bytes placed in DATA, at *at: a loaded constant's
 * mapped bytes (what pr_data_materialize would copy) are written from where
 * they lie; others are materialized into w->made. */
static bool w_place_storage(writer *w, const pr_data *d, const pr_spec *s, int64_t storage,
			    uint64_t *at)
{
	if (d->mapped && d->mapped_size == storage) {
		*at = w_segment(w, d->mapped, (size_t)storage);
		return true;
	}
	pr_err *e = pr_data_materialize(d, s, out_room(&w->made, (size_t)storage));
	if (e) {
		pr_err_free(e);
		return false;
	}
	w->made.len += (size_t)storage;
	*at = w_segment(w, NULL, (size_t)storage);
	return true;
}

static void w_data_segment(writer *w, wbuf *b, const pr_node *n)
{
	const pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
	int64_t storage = 0;
	uint64_t at = 0;
	if (!s || !w_worth_storing(w, s, &storage) ||
	    !w_place_storage(w, &n->of_kind.input->data, s, storage, &at))
		storage = 0, at = 0;   /* no segment, and no padding for one */
	wb_u64(b, at);
	wb_u64(b, (uint64_t)storage);
}

static bool w_data(writer *w, wbuf *b, const pr_node *n)
{
	const pr_data *d = &n->of_kind.input->data;
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

/* The index of v, a node written before in the graph being written: its
 * scratch holds the index + 1, which a node not written yet, or of another
 * graph (its scratch the caller's, whatever that is), cannot pass off as
 * its own, since the slot at that index names another node (or v marked,
 * once v's scratch is the caller's again). That is also why v->graph,
 * another cache line at a million nodes, is not read. The read is counted
 * off in v's scratch, and at the last one its use list counts, the
 * caller's scratch goes back into v, whose line is at hand now: a pass
 * over every node afterwards, a store to a line long gone from the cache
 * each, cost 15 % of the writer at a million nodes. */
static inline bool node_index(writer *w, const pr_node *v, uint64_t *ix)
{
	if (!v)
		return false;
	uint64_t scratch = (uint64_t)(uintptr_t)v->scratch;
	*ix = (scratch & W_INDEX_MASK) - 1;
	if (*ix >= w->n_written || w->slots[*ix].node != v)
		return false;
	if (scratch < 2 * W_ONE_READ) {   /* the last read */
		((pr_node *)v)->scratch = w->slots[*ix].scratch;
		w->slots[*ix].node = slot_done(v);
		w->n_pending--;
	} else {
		((pr_node *)v)->scratch = (void *)(uintptr_t)(scratch - W_ONE_READ);
	}
	return true;
}

/* node_index's refusal, out of line: v is not written yet, or not in this
 * graph, or read more often than its use list says (which the verifier
 * reports as E-USES), found by a look through the slots. */
static __attribute__((noinline, cold)) bool w_unread(writer *w, const pr_node *n, const pr_node *v)
{
	for (size_t i = 0; v && i < w->n_written; i++)
		if (w->slots[i].node == slot_done(v))
			return w_fail(w, pr_err_new("cannot write @%s: %%%s reads %%%s more often than its "
						    "use list says, expected a use for every read",
						    n->graph->name, n->name ? n->name : "(a statement)",
						    v->name ? v->name : "(a statement)"));
	return w_fail(w, pr_err_new("cannot write @%s: %%%s reads a value that is not defined before "
				    "it in the graph", n->graph->name, n->name ? n->name : "(a statement)"));
}

static bool w_list(writer *w, wbuf *b, const pr_node *n, const pr_arg *args, int count);

/* An arg is its kind byte and at most 8 bytes of its own (a string's and a
 * list's follow): room for the count and every arg's 9 is checked at once,
 * and again only after a string or a list, which make room of their own.
 * Inline in w_node, which calls it on nearly every node; a nested list goes
 * through w_list, a call. */
static inline __attribute__((always_inline)) bool w_args(writer *w, wbuf *b, const pr_node *n,
							 const pr_arg *args, int count)
{
	uint8_t *q = put_le(wb_room(b, 4 + 9 * (size_t)count), (uint32_t)count, 4);
	for (int i = 0; i < count; i++) {
		const pr_arg *a = &args[i];
		*q++ = (uint8_t)a->kind;
		uint64_t ix;
		switch (a->kind) {
		case PR_ARG_VALUE:
			if (!node_index(w, a->u.value, &ix))
				return w_unread(w, n, a->u.value);
			q = put_le(q, ix, 8);
			break;
		case PR_ARG_INT: q = put_le(q, (uint64_t)a->u.i, 8); break;
		case PR_ARG_FLOAT: {
			uint64_t v;
			memcpy(&v, &a->u.f, sizeof v);
			q = put_le(q, v, 8);
			break;
		}
		case PR_ARG_BOOL: *q++ = a->u.b ? 1 : 0; break;
		case PR_ARG_NONE: break;
		case PR_ARG_STRING:
		case PR_ARG_LIST:
			b->o.len = (size_t)(q - b->o.p);
			if (a->kind == PR_ARG_STRING)
				wb_str(b, a->u.s);
			else if (!w_list(w, b, n, a->u.items, a->n_items))
				return false;
			q = wb_room(b, 9 * (size_t)(count - i - 1));
			break;
		}
	}
	b->o.len = (size_t)(q - b->o.p);
	return true;
}

static __attribute__((noinline)) bool w_list(writer *w, wbuf *b, const pr_node *n,
					     const pr_arg *args, int count)
{
	return w_args(w, b, n, args, count);
}

static __attribute__((noinline, cold)) bool w_ref_missing(writer *w, const pr_node *n,
							 const char *what)
{
	return w_fail(w, pr_err_new("cannot write %%%s in @%s: its %s is not part of the program",
				    n->name ? n->name : "(a statement)", n->graph->name, what));
}

/* Every op and delegate call: inline, its message out of line. */
static inline bool w_ref(writer *w, wbuf *b, const ptrmap *m, const void *k, const pr_node *n,
			 const char *what)
{
	uint64_t ix;
	if (!k || !pm_get(m, k, &ix))
		return w_ref_missing(w, n, what);
	wb_u32(b, (uint32_t)ix);
	return true;
}

static bool w_node(writer *w, wbuf *b, const pr_node *n)
{
	w_node_head(w, b, n);
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT:
		wb_u8(b, (unsigned)n->of_kind.input->kind);
		wb_ostr(b, n->of_kind.input->name);
		return w_data(w, b, n);
	case PR_NODE_OP:
		return w_ref(w, b, &w->schemas, n->of_kind.schema, n, "op schema") &&
		       w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_DELEGATE:
		return w_ref(w, b, &w->delegates, n->of_kind.delegate, n, "delegate") &&
		       w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_GETITEM:
		wb_i64(b, n->of_kind.index);
		return w_args(w, b, n, n->args, n->n_args);
	case PR_NODE_RETURN:
		if (!w_args(w, b, n, n->args, n->n_args))
			return false;
		for (int i = 0; i < n->n_args; i++) {
			const pr_writeback *wb = n->of_kind.writebacks ? &n->of_kind.writebacks[i] : NULL;
			wb_u8(b, wb ? (unsigned)wb->kind : PR_WRITEBACK_NONE);
			wb_ostr(b, wb && wb->kind != PR_WRITEBACK_NONE ? wb->target : NULL);
		}
		return true;
	}
	return w_fail(w, pr_err_new("cannot write a node of unknown kind %d", (int)n->kind));
}

/* The caller's scratch back in each node written whose reads did not all
 * come (node_index): none, after a graph whose use lists are right and
 * that was written whole. */
static void scratch_restore(writer *w)
{
	for (size_t i = 0; w->n_pending && i < w->n_written; i++) {
		const pr_node *n = w->slots[i].node;
		if (!slot_is_done(n)) {
			((pr_node *)n)->scratch = w->slots[i].scratch;
			w->n_pending--;
		}
	}
	w->n_written = 0;
}

/* The loader wants one return node, at the end: say so rather than write
 * a file it refuses. */
static bool shaped(const pr_node *n)
{
	return (n->kind == PR_NODE_RETURN) == (n->next == NULL);
}

static bool w_misshapen(writer *w, const pr_graph *g)
{
	return w_fail(w, pr_err_new(g->first ? "cannot write @%s: it must end with its one return node" :
				    "cannot write @%s: it has no return node", g->name));
}

/* A node's value arguments are read (node_index) from nodes written long
 * before, whose lines are gone from the cache at a million nodes: the
 * walk asks for them W_VALUES_AHEAD nodes ahead of writing the reader,
 * through at most W_VALUES_ASKED of its arguments (nearly every node has
 * fewer). A hint: nothing read here is trusted. */
#define W_VALUES_AHEAD 4
#define W_VALUES_ASKED 4

static inline void prefetch_values(const pr_node *n)
{
	int count = n->n_args < W_VALUES_ASKED ? n->n_args : W_VALUES_ASKED;
	for (int i = 0; i < count; i++)
		if (n->args[i].kind == PR_ARG_VALUE && n->args[i].u.value)
			__builtin_prefetch(&n->args[i].u.value->scratch);
}

/* The nodes in one walk: each checked for its place, written, then given
 * its index. A graph out of shape is reported as such even when a node
 * before the fault fails to write: the rest is looked at for it. */
static bool w_graph(writer *w, wbuf *b, const pr_graph *g)
{
	if (!g->first)
		return w_misshapen(w, g);
	if (g->n_nodes > (int64_t)PRB_MAX_COUNT)   /* the loader's limit, and node_index's */
		return w_fail(w, pr_err_new("cannot write @%s: it has %lld nodes, more than the %u a "
					    "graph may hold", g->name, (long long)g->n_nodes, PRB_MAX_COUNT));
	if (w->cap_slots < (size_t)g->n_nodes) {
		free(w->slots);
		w->cap_slots = (size_t)g->n_nodes;
		w->slots = pr_xmalloc(w->cap_slots * sizeof *w->slots);
	}
	wb_u64(b, (uint64_t)g->n_nodes);
	w->graph = g;
	const pr_node *n, *ahead = g->first;
	bool ok = true, misshapen = false;
	for (int i = 0; ahead && i < W_VALUES_AHEAD; i++)
		ahead = ahead->next;
	for (n = g->first; n; n = n->next) {
		pr_node_prefetch_ahead(n);
		if (ahead) {
			prefetch_values(ahead);
			ahead = ahead->next;
		}
		if ((misshapen = !shaped(n)))
			break;
		if (w->n_written == w->cap_slots) {   /* more than n_nodes: see below */
			if (w->n_written >= PRB_MAX_COUNT)
				break;
			w->cap_slots = 2 * w->cap_slots + 1;
			w->slots = pr_xrealloc(w->slots, w->cap_slots * sizeof *w->slots);
		}
		void *scratch = n->scratch;
		if (!(ok = w_node(w, b, n)))
			break;
		/* a node no one reads keeps the caller's scratch */
		w->slots[w->n_written++] = (w_slot){n->n_uses > 0 ? n : slot_done(n), scratch};
		if (n->n_uses > 0) {
			((pr_node *)n)->scratch = (void *)(uintptr_t)((uint64_t)n->n_uses * W_ONE_READ +
								   w->n_written);
			w->n_pending++;
		}
	}
	for (const pr_node *m = n ? n->next : NULL; !ok && !misshapen && m; m = m->next)
		misshapen = !shaped(m);   /* after a write error at n: a shape error comes first */
	if (misshapen) {
		pr_err_free(w->err);
		w->err = NULL;
		ok = w_misshapen(w, g);
	} else if (ok && w->n_written != (size_t)g->n_nodes) {
		ok = w_fail(w, pr_err_new("cannot write @%s: it counts %lld nodes but holds %zu", g->name,
					  (long long)g->n_nodes, w->n_written));
	}
	w->graph = NULL;
	scratch_restore(w);
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

#define W_HEAD_SIZE (PRB_HEADER_SIZE + PRB_SEC_COUNT * PRB_SECTION_ENTRY_SIZE)

/* Header and section table, the file's first W_HEAD_SIZE bytes, once the
 * metadata sections (ends[i] is where section i ends in the file) and DATA
 * (data_len bytes at data_off, the file's end) have their places. */
static void w_header(uint8_t *q, const size_t *ends, size_t data_off, size_t data_len)
{
	static const uint32_t kinds[PRB_SEC_COUNT] = {
		PRB_SEC_SCHEMAS, PRB_SEC_BLOBS, PRB_SEC_DELEGATES, PRB_SEC_METHODS, PRB_SEC_DATA,
	};
	memcpy(q, PR_BINARY_MAGIC, 8);
	q = put_le(q + 8, PRB_VERSION, 4);
	q = put_le(q, PRB_BYTE_ORDER, 4);
	q = put_le(q, (uint64_t)(data_off + data_len), 8);
	q = put_le(q, PRB_HEADER_SIZE, 8);
	q = put_le(q, PRB_SEC_COUNT, 4);
	q = put_le(q, PRB_SECTION_ENTRY_SIZE, 4);
	memset(q, 0, PRB_HEADER_SIZE - 40);   /* reserved */
	q += PRB_HEADER_SIZE - 40;
	size_t at = W_HEAD_SIZE;
	for (int i = 0; i < PRB_SEC_COUNT; i++) {
		size_t off = i < PRB_SEC_COUNT - 1 ? at : data_off;
		size_t size = i < PRB_SEC_COUNT - 1 ? ends[i] - at : data_len;
		q = put_le(q, kinds[i], 4);
		q = put_le(q, 0, 4);
		q = put_le(q, off, 8);
		q = put_le(q, size, 8);
		if (i < PRB_SEC_COUNT - 1)
			at = ends[i];
	}
}

/* The metadata sections, after room for the header and section table; DATA,
 * built alongside, follows them at the next 64-byte boundary (w_finish). */
static bool w_sections(writer *w, wbuf *out, size_t *ends)
{
	memset(wb_grow(out, W_HEAD_SIZE), 0, W_HEAD_SIZE);
	w_schemas(w, out);
	ends[0] = out_pos(&out->o);
	w_blobs(w, out);
	ends[1] = out_pos(&out->o);
	if (!w_delegates(w, out))
		return false;
	ends[2] = out_pos(&out->o);
	if (!w_methods(w, out))
		return false;
	ends[3] = out_pos(&out->o);
	if (out->too_long)
		return w_fail(w, pr_err_new("a string of %zu bytes, more than the %u bytes a string may "
					    "hold", out->too_long, PRB_MAX_STRING));
	return true;
}

/* Writes the whole program to file (its sink, if any, gets every byte but
 * the header, which is left to the caller: head). */
static pr_err *w_program(const pr_program *p, wbuf *file, uint8_t *head)
{
	writer w = {.prog = p, .specs = pr_xcalloc(W_SPECS, sizeof(w_spec_bytes))};
	size_t ends[PRB_SEC_COUNT - 1];
	w_index_program(&w);
	bool ok = w_sections(&w, file, ends);
	if (ok) {
		wb_pad(file, PRB_ALIGN);
		size_t data_off = out_pos(&file->o);
		w_data_section(&w, file);
		w_header(head, ends, data_off, (size_t)w.data_len);
	}
	free(w.made.p);
	free(w.specs);
	free(w.segs);
	pm_free(&w.schemas);
	pm_free(&w.delegates);
	pm_free(&w.blobs);
	free(w.slots);
	return ok ? NULL : w.err;
}

pr_err *pr_binary_write(const pr_program *p, uint8_t **out, size_t *len)
{
	wbuf file = {0};
	uint8_t head[W_HEAD_SIZE];
	out_reserve(&file.o, 65536 + out_node_count(p) * 128);   /* a node takes about 100 */
	pr_err *e = w_program(p, &file, head);
	if (e) {
		free(file.o.p);
		return e;
	}
	memcpy(file.o.p, head, W_HEAD_SIZE);
	*out = file.o.p;
	*len = file.o.len;
	return NULL;
}

/* A target that cannot seek (a device, a FIFO) gets the file in one piece,
 * made in memory: its header, which comes first, is known last. */
pr_err *pr_binary_write_sink(const pr_program *p, pr_file_sink *sink)
{
	if (!pr_file_sink_can_seek(sink)) {
		uint8_t *bytes;
		size_t len;
		pr_err *e = pr_binary_write(p, &bytes, &len);
		if (!e)
			pr_file_sink_write(sink, bytes, len);
		free(bytes);
		return e;
	}
	wbuf file = {.o = out_to_sink(sink)};
	uint8_t head[W_HEAD_SIZE];
	pr_err *e = w_program(p, &file, head);
	out_finish(&file.o);
	if (!e)
		pr_file_sink_write_at(sink, 0, head, W_HEAD_SIZE);
	return e;
}
