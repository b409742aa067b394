/* propagate_device.c: device placement (docs/placement-rules.md B1-B5, F5, F6).
 *
 * ExecuTorch's PropagateDevicePass. The baseline pipeline runs it with
 * `copy_constants: false, share_inputs: false`, which is the pass before the
 * fixes; those two fixes change what this pass decides for a placeholder, so
 * they are options of it (on by default) rather than passes of their own
 * (a pass after it could not undo a refusal, and a pass before it could not
 * place one argument of a delegate without placing all of them). The other
 * fixes are plugins that run before it (param-layout, getitem-outputs,
 * cpu-delegates) or after it (elide-round-trips, outputs-on-device,
 * copy-reuse, per-call-copies). The pass works in two walks over each method:
 *
 *   1. Results (B2, B3, B5). Every delegate call whose target_device parses
 *      to a device gets its results tagged with that device: a single tensor
 *      result, or the tuple's elements and the getitems that read them. Each
 *      getitem then gets a _d2h_copy right after it and every other reader
 *      reads the copy; with skip_d2h_for_method_outputs a getitem whose only
 *      reader is the method output gets none. A _d2h_copy that already reads
 *      a getitem keeps reading it and gets no copy of its own, so that a
 *      placed program (written by -o, or placed by another tool) is placed
 *      again unchanged. A single tensor result gets no
 *      copy (getitem-outputs, F3, gives it a getitem first). An unparsable
 *      target_device or an unregistered device type is E-UNKNOWN-DEVICE,
 *      naming the registered types (device.h). target_device=cpu counts as a device here, as it did
 *      before F7 (cpu-delegates removes it first).
 *   2. Arguments (B1). Every tensor a device delegate reads that is not
 *      already on the delegate's device gets its own _h2d_copy before the
 *      call (one per reader: copy-reuse, F8, shares them). A tensor already
 *      on that device gets none (device-constants may have placed it, or it
 *      is an _h2d_copy of a placed program), unless read_placed_args is
 *      false: the baseline, as ExecuTorch before the fixes, copies every
 *      argument, so a single-tensor result read by a delegate on its own
 *      device gets an _h2d_copy of device memory, which the runtime refuses
 *      (the bug F3's getitem-outputs removes). With
 *      skip_h2d_for_method_inputs:
 *        - baseline: a placeholder (any kind) that feeds a device delegate is
 *          tagged with the device, the caller passing device memory, when the
 *          delegate is its one reader; else it is refused (E-INPUT-SHARED).
 *        - F5 (copy_constants): a constant (parameter, buffer or constant
 *          that is not a mutable buffer) keeps its data on the host, so it is
 *          always copied; one neither contiguous nor channels-last is refused
 *          (E-CONSTANT-LAYOUT), since the copy moves the bytes as stored.
 *        - F6 (share_inputs): a method input stays on the device D of its
 *          first device-delegate reader in graph order. Delegates on D, ops
 *          that read only its shape, and (with skip_d2h_for_method_outputs)
 *          the method output read it there; all other readers share one
 *          _d2h_copy of it, and a delegate on another device reads an
 *          _h2d_copy of that. An input that an op writes in place on the host
 *          (host-writes analysis, through views too) is refused
 *          (E-INPUT-WRITTEN-ON-HOST); a write-back that reads it is named.
 *      The per-call copies this leaves are reported by per-call-copies.
 *
 * Copies are declared with the shared contract's schemas and named after what
 * they copy (%x_h2d_cuda0, %t_d2h), first reader first. Each value's readers
 * are moved in one batch, so thousands of readers of one tensor stay linear. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_writes.h"
#include "passrun/radix_sort.h"
#include "plugin_common.h"

static const pr_option_decl propagate_options[] = {
	PL_DECL_SKIP_H2D,
	PL_DECL_SKIP_D2H,
	{ "copy_constants", PR_OPT_BOOL, "true",
	  "F5: constants feeding device delegates are copied even with skip_h2d_for_method_inputs; odd layouts refused",
	  PR_SCOPE_PASS, false },
	{ "share_inputs", PR_OPT_BOOL, "true",
	  "F6: with skip_h2d_for_method_inputs, an input read on and off the device stays on it; the others share a _d2h_copy",
	  PR_SCOPE_PASS, false },
	{ "read_placed_args", PR_OPT_BOOL, "true",
	  "an argument already on the delegate's device is read there; false copies it anyway, as before the fixes (a copy the runtime refuses)",
	  PR_SCOPE_PASS, false },
};

/* host-writes is asked for only by F6, after walk 1 (which may change it),
 * so it is used, not required (that would compute it before the run); it is
 * preserved, as walk 2 keeps it valid: later passes reuse it. */
static const char *const propagate_host_writes[] = {PR_HOST_WRITES, NULL};

/* A reader that needs a copy, and the id of the device its delegate runs
 * on: asked once per reader. */
typedef struct reader {
	pr_use use;
	pr_device_id dev;
} reader;

/* v's readers that need a copy, kept across values so that a run allocates
 * them once, not per value. */
typedef struct reader_buf {
	int cap;
	reader *items;        /* in graph order once sorted */
	pr_node **copies;     /* copies[k] is made for items[k] */
	int sort_cap;         /* the many-reader sort's room (sort_readers) */
	struct reader_key *keys;
	reader *sorted;
} reader_buf;

/* The end of a copy's base name: "_h2d_cuda0" or "_d2h", its 0 and zeros up
 * to SUFFIX_ROOM bytes, so that a name is finished by one copy of a known
 * size. "_h2d_" and a tag of at most PR_DEVICE_STR_MAX - 1 bytes fit. */
#define SUFFIX_ROOM 48
_Static_assert(sizeof "_h2d_" - 1 + PR_DEVICE_STR_MAX <= SUFFIX_ROOM, "a suffix fits");

typedef struct copy_suffix {
	size_t len;             /* without the 0 */
	char s[SUFFIX_ROOM];
} copy_suffix;

/* The h2d suffix of one device, made once per device named last. */
typedef struct device_suffix {
	pr_device_id id;
	bool made;
	copy_suffix suffix;
} device_suffix;

static const copy_suffix d2h_suffix = {sizeof "_d2h" - 1, "_d2h"};

/* A copy's base name, in place when it fits (names of up to 80 bytes: most
 * do), else on the heap. */
typedef struct copy_name {
	char buf[80 + SUFFIX_ROOM];
	char *heap;
	size_t len;
	uint32_t hash;        /* pr_str_hash of the name: the prefetch and the
			       * naming both need it */
} copy_name;

/* A base name built while looking ahead (see prefetch_copy_name), kept for
 * the step that names the copy: src's copies onto dev (h2d) or the host. */
typedef struct ahead_name {
	const pr_node *src;   /* NULL: none kept */
	bool h2d;
	pr_device_id dev;
	copy_name base;
} ahead_name;

#define AHEAD_RING 4   /* more than the name look-ahead's distance */

/* Where a delegate runs (pl_delegate_where, the CPU counting as a device),
 * remembered per delegate: a program has a few delegates, called many
 * times, and placement asks it of every reader. The device is kept as its
 * id (interned once per delegate), which is what specs hold and what
 * compares with ==: equal devices have equal ids. The memos are an
 * open-addressing table keyed by the delegate's address, so that each
 * delegate is asked once, however many there are and wherever they lie (a
 * table of 16 slots, one delegate each, had two of the decoder's 8 delegates
 * on one slot in some runs, and asked them again per call). */
typedef struct where_memo {
	const pr_delegate *d;   /* NULL: empty */
	pl_where where;
	bool on_device;
	pr_device_id id;        /* on_device: where; PR_DEVICE_ID_HOST for a
				 * target_device=cpu delegate (the baseline's) */
} where_memo;

typedef struct where_table {
	where_memo *slots;      /* NULL until the first delegate */
	int shift;              /* 64 - log2(slots) */
	uint32_t n;             /* delegates in it */
} where_table;

#define WHERE_FIRST_LOG2 6      /* 64 slots, grown when half full */

/* Whether a layout is stored as is (pr_spec_stored_as_is), remembered per
 * layout: a spec's shape points at immutable dims (the shape then the
 * strides), interned, so a program's thousands of constants share a few
 * layouts, and the same pointer and rank always give the same answer. */
typedef struct layout_memo {
	const int64_t *shape;             /* NULL: empty */
	int rank;
	bool as_is;
} layout_memo;

#define LAYOUT_MEMO 16

/* A host copy walk 1 made, and where walk 2 finds it among the values: at
 * is the number of values before it, its getitem's index plus one (the
 * copy follows its getitem, and walk 1 adds no other value). */
typedef struct host_copy {
	size_t at;
	pr_node *copy;
} host_copy;

typedef struct host_copies {
	size_t n, cap;
	host_copy *items;
} host_copies;

typedef struct place_ctx {
	pr_pass_ctx *pass;
	pr_program *p;
	pr_graph *g;
	bool skip_h2d, skip_d2h, copy_constants, share_inputs;
	bool copy_placed;       /* !read_placed_args: copy device tensors too */
	pr_mutable_buffers *buffers;   /* the method's mutable buffers */
	bool *changed;
	bool writes_stale;      /* walk 1 moved a written getitem's readers */
	pr_schema *h2d, *d2h;   /* declared by the run's first copy of each kind */
	reader_buf readers;
	pl_nodes getitems;      /* one call's, kept across calls */
	host_copies host_copies;   /* walk 1's, for walk 2's values */
	device_suffix suffix;   /* the device last named, and its suffix */
	ahead_name ahead[AHEAD_RING];
	int next_ahead;
	where_table where;
	layout_memo layouts[LAYOUT_MEMO];
} place_ctx;

/* ---- copies ------------------------------------------------------------------ */

#define H2D_SCHEMA "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}"
#define D2H_SCHEMA "et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}"

/* The copy op's schema, declared once per run: declaring it per copy would
 * look its text up per copy. Declared when the first copy needs it, so that
 * a program that gets no copies gets no new op. */
static pr_err *copy_schema(place_ctx *c, bool h2d, pr_schema **out)
{
	pr_schema **s = h2d ? &c->h2d : &c->d2h;
	pr_err *e = *s ? NULL : pr_program_declare_op(c->p, h2d ? H2D_SCHEMA : D2H_SCHEMA, s);
	*out = *s;
	return e;
}

/* "_h2d_cuda0" for device id ("cuda:0" without its ':'), made when the id
 * is not the one named last: a run's copies are mostly onto one device. */
static __attribute__((noinline)) void make_device_suffix(device_suffix *d, pr_device_id id)
{
	char s[PR_DEVICE_STR_MAX];
	pr_device_str(*pr_device_of(id), s);
	memset(d->suffix.s, 0, sizeof d->suffix.s);
	memcpy(d->suffix.s, "_h2d_", 5);
	size_t j = 5;
	for (size_t i = 0, t = 0; s[i] && t + 1 < PR_DEVICE_STR_MAX; i++)
		if (s[i] != ':') {
			d->suffix.s[j++] = s[i];
			t++;
		}
	d->suffix.len = j;
	d->id = id;
	d->made = true;
}

/* The suffix of src's copies: onto device id (h2d), or the host. */
static inline const copy_suffix *copy_suffix_of(place_ctx *c, bool h2d, pr_device_id id)
{
	if (!h2d)
		return &d2h_suffix;
	if (!c->suffix.made || c->suffix.id != id)
		make_device_suffix(&c->suffix, id);
	return &c->suffix.suffix;
}

/* The base name of src's copies: "x_h2d_cuda0" for h2d onto a device,
 * "x_d2h" for d2h; "t" for a src without a name. Its name is measured, the
 * suffix's length is known and its bytes (the 0 among them) are one copy of
 * a fixed size. Free it with copy_name_free. */
static inline __attribute__((always_inline)) void copy_base_at(const pr_node *src,
								 const copy_suffix *sfx,
								 copy_name *out)
{
	const char *name = src->name ? src->name : "t";
	size_t a = strlen(name);
	char *base = out->buf;
	out->heap = NULL;
	if (a + SUFFIX_ROOM > sizeof out->buf)
		base = out->heap = pr_xmalloc(a + SUFFIX_ROOM);
	memcpy(base, name, a);
	memcpy(base + a, sfx->s, SUFFIX_ROOM);
	out->len = a + sfx->len;
	out->hash = pr_str_hash(base, out->len);
}

/* copy_base_at, for the steps that name a copy the look-ahead did not. */
static __attribute__((noinline)) void copy_base(const pr_node *src, const copy_suffix *sfx,
						copy_name *out)
{
	copy_base_at(src, sfx, out);
}

static const char *copy_name_str(const copy_name *n)
{
	return n->heap ? n->heap : n->buf;
}

static inline void copy_name_free(copy_name *n)
{
	if (n->heap)
		free(n->heap);
}

/* ---- looking ahead ------------------------------------------------------------- */

/* The walks visit values far apart in memory at a million nodes, and each
 * copy's name is a string-table probe at a random slot: each would be a
 * cache miss in turn. So the walks ask for what a value coming up will read
 * a few steps before they get to it: the node first, then its use list, its
 * readers' argument slots, its readers, then (when a reader is a delegate,
 * so that it is likely to be copied) the table slot of its copy's name.
 * Each step reads only what the step before asked for: a step that reads
 * what is not there yet waits for it (reading the use list's address off a
 * node not yet in the cache cost more than any step here). Only time
 * depends on it. */
#define AHEAD_NODE 16
#define AHEAD_USES 12
#define AHEAD_ARGS 8
#define AHEAD_READERS 4
#define AHEAD_NAME 2
#define AHEAD_MAX_READERS 4

/* The lines of a node that the walks read: its use list, type and name,
 * and the links a copy before it edits: all of them. */
static void prefetch_node(const pr_node *v)
{
	pr_node_prefetch_lines((uintptr_t)v);
}

static void prefetch_uses(const pr_node *v)
{
	__builtin_prefetch(v->uses);
}

/* A use is its reader's argument slot (pr_use_user reads the owner there). */
static void prefetch_args(const pr_node *v)
{
	for (int i = 0; i < v->n_uses && i < AHEAD_MAX_READERS; i++)
		__builtin_prefetch(v->uses[i].arg);
}

static void prefetch_readers(const pr_node *v)
{
	for (int i = 0; i < v->n_uses && i < AHEAD_MAX_READERS; i++)
		__builtin_prefetch(pr_use_user(&v->uses[i]));
}

/* Is v read by a delegate? Its delegate readers' argument slots and the
 * nodes before them, which the copies' edits touch, are asked for too. */
static bool read_by_delegate(const pr_node *v)
{
	bool any = false;
	for (int i = 0; i < v->n_uses && i < AHEAD_MAX_READERS; i++)
		if (pr_use_user(&v->uses[i])->kind == PR_NODE_DELEGATE) {
			__builtin_prefetch(v->uses[i].arg);
			__builtin_prefetch(pr_use_user(&v->uses[i])->prev);
			any = true;
		}
	return any;
}

/* The slot of the name src's first copy would get: onto the device last
 * named (h2d), or the host. */
static void prefetch_copy_name(place_ctx *c, const pr_node *src, bool h2d)
{
	if (h2d && !c->suffix.made)
		return;   /* no device named yet: nothing to guess from */
	ahead_name *a = &c->ahead[c->next_ahead];
	c->next_ahead = (c->next_ahead + 1) & (AHEAD_RING - 1);
	copy_name_free(&a->base);   /* the ring owns its names, taken or not */
	a->src = src;
	a->h2d = h2d;
	a->dev = h2d ? c->suffix.id : PR_DEVICE_ID_HOST;
	copy_base_at(src, h2d ? &c->suffix.suffix : &d2h_suffix, &a->base);
	pr_program_prefetch_name(c->p, a->base.hash);
}
_Static_assert((AHEAD_RING & (AHEAD_RING - 1)) == 0, "the ring's size is a power of two");

/* The base name of src's copies (copy_base): the look-ahead's own when it
 * built this one, read in place (no copy of the buffer) and valid until the
 * next prefetch_copy_name, which no copy's making calls; else built in *own.
 * *own is left for copy_name_free either way. */
static inline const copy_name *copy_base_ahead(place_ctx *c, const pr_node *src, bool h2d,
					       pr_device_id dev, copy_name *own)
{
	own->heap = NULL;
	ahead_name *a = c->ahead;
	for (int i = 0; i < AHEAD_RING; i++)
		if (a[i].src == src && a[i].h2d == h2d && a[i].dev == dev) {
			a[i].src = NULL;
			return &a[i].base;
		}
	copy_base(src, copy_suffix_of(c, h2d, dev), own);
	return own;
}

static void ahead_free(place_ctx *c)
{
	for (int i = 0; i < AHEAD_RING; i++)
		copy_name_free(&c->ahead[i].base);
}

/* An op named base or the next free name after it, at the end of g: a
 * copy after a graph's last node (a graph without a return yet). */
static __attribute__((noinline)) pr_node *copy_appended(pr_graph *g, const copy_name *base,
							int *next, pr_err **err)
{
	pr_node *n = pr_graph_new_node_fresh_hashed(g, PR_NODE_OP, copy_name_str(base), base->len,
						    base->hash, next);
	*err = pr_graph_append(g, n);
	if (*err) {
		pr_graph_erase(n);   /* made in the slab, never linked */
		return NULL;
	}
	return n;
}

/* A new copy of src onto device dev (h2d) or the host (d2h: dev is
 * PR_DEVICE_ID_HOST), linked into src's graph right before pos (at its end
 * when pos is NULL), named base or the next free name after it (*next, may
 * be NULL, is the naming cursor of pr_graph_fresh_name_next). Its output
 * moves the bytes as stored: same dtype, shape and strides as src, on the
 * destination device, with no memory (planned later) and never a constant
 * (it is an op's result). Its argument is set by pr_node_set_value_arg
 * afterwards, so that a caller moving many readers can order the use-list
 * edits. */
static inline __attribute__((always_inline)) pr_node *
copy_new_named(place_ctx *c, pr_node *src, pr_node *pos, bool h2d, pr_device_id dev,
	       const copy_name *base, int *next, pr_err **err)
{
	pr_schema *s = h2d ? c->h2d : c->d2h;
	if (!s) {
		*err = copy_schema(c, h2d, &s);
		if (*err)
			return NULL;
	}
	/* src is a tensor (pr_node_spec's case), read in place */
	const pr_spec *spec = src->type.kind == PR_TYPE_TENSOR ? &src->type.tensor : NULL;
	/* In the graph's slab, named and linked in one step, its argument in
	 * graph storage: no malloc of their own for the many copies a run
	 * makes. */
	pr_node *n = pos ? pr_graph_new_node_fresh_before(pos, PR_NODE_OP, copy_name_str(base),
							  base->len, base->hash, next)
			 : copy_appended(src->graph, base, next, err);
	if (!n)
		return NULL;
	n->of_kind.schema = s;
	n->type.kind = PR_TYPE_TENSOR;
	n->type.tensor = *spec;
	n->type.tensor.device_id = dev;
	n->type.tensor.has_mem = false;
	n->type.tensor.mem_arena_id = PR_DEVICE_ID_HOST;
	n->type.tensor.mem_offset = 0;
	return n;
}

/* src's one host copy (%x_d2h), linked before pos (NULL: at the end). */
static pr_node *copy_to_host(place_ctx *c, pr_node *src, pr_node *pos, pr_err **err)
{
	copy_name own;
	const copy_name *base = copy_base_ahead(c, src, false, PR_DEVICE_ID_HOST, &own);
	pr_node *n = copy_new_named(c, src, pos, false, PR_DEVICE_ID_HOST, base, NULL, err);
	copy_name_free(&own);
	return n;
}

/* Orders uses by their readers' graph order (the graph must be numbered),
 * one reader's slots by their place in the use list. */
static inline int use_by_order(const reader *a, const reader *b)
{
	const pr_use *u = &a->use, *w = &b->use;
	const pr_node *x = pr_use_user(u), *y = pr_use_user(w);
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return (u->arg->use_index > w->arg->use_index) - (u->arg->use_index < w->arg->use_index);
}

/* A reader's place in use_by_order's order, for sorting many: the key is
 * (order, use_index), 12 bytes, use_index's the low 4. */
typedef struct reader_key {
	uint64_t order;
	uint32_t use_index;
	uint32_t at;          /* the reader's index before the sort */
} reader_key;

static inline unsigned reader_key_byte(const reader_key *k, int b)
{
	return b < 4 ? k->use_index >> (8 * b) & 255 : (unsigned)(k->order >> (8 * (b - 4)) & 255);
}

static inline bool reader_key_less(const reader_key *x, const reader_key *y)
{
	return x->order != y->order ? x->order < y->order : x->use_index < y->use_index;
}

PR_RADIX_SORT_DEFINE(sort_reader_keys, reader_key, reader_key_byte, reader_key_less)

/* Most values that need copies have a few readers: an insertion sort of
 * those. Many (the attention mask's tens of thousands) are sorted by their
 * keys, read once each, with an in-place radix sort, and moved into that
 * order. The order is total (a reader's slots differ in use_index), so both
 * give use_by_order's. */
#define SORT_INSERTION_MAX 16

static void sort_many_readers(reader_buf *r, int n)
{
	if (n > r->sort_cap) {
		r->sort_cap = r->cap;   /* n <= cap */
		r->keys = pr_xrealloc(r->keys, (size_t)r->sort_cap * sizeof *r->keys);
		r->sorted = pr_xrealloc(r->sorted, (size_t)r->sort_cap * sizeof *r->sorted);
	}
	reader_key *keys = r->keys;
	uint64_t order_diff = 0, index_diff = 0;
	for (int i = 0; i < n; i++) {
		keys[i].order = pr_use_user(&r->items[i].use)->order;
		keys[i].use_index = (uint32_t)r->items[i].use.arg->use_index;
		keys[i].at = (uint32_t)i;
		order_diff |= keys[i].order ^ keys[0].order;
		index_diff |= keys[i].use_index ^ keys[0].use_index;
	}
	sort_reader_keys(keys, n, 11, pr_radix_varying(index_diff, 0, 4) |
				      pr_radix_varying(order_diff, 4, 8));
	for (int i = 0; i < n; i++)
		r->sorted[i] = r->items[keys[i].at];
	memcpy(r->items, r->sorted, (size_t)n * sizeof *r->items);
}

static void sort_readers(reader_buf *r, int n)
{
	reader *items = r->items;
	if (n > SORT_INSERTION_MAX) {
		sort_many_readers(r, n);
		return;
	}
	for (int i = 1; i < n; i++) {
		reader k = items[i];
		int j = i;
		for (; j > 0 && use_by_order(&items[j - 1], &k) > 0; j--)
			items[j] = items[j - 1];
		items[j] = k;
	}
}

/* The slot of delegate d in t (the high bits of a multiplicative hash:
 * delegates lie a fixed size apart), or the empty one where it goes. */
static inline where_memo *where_slot(const where_table *t, const pr_delegate *d)
{
	size_t mask = ((size_t)1 << (64 - t->shift)) - 1;
	for (size_t i = ((uint64_t)(uintptr_t)d * 0x9E3779B97F4A7C15u) >> t->shift;; i = (i + 1) & mask)
		if (t->slots[i].d == d || !t->slots[i].d)
			return &t->slots[i];
}

/* pl_delegate_where(d, true, ...) of a delegate d not in the table yet,
 * added to it. */
static __attribute__((noinline)) where_memo *where_add(where_table *t, const pr_delegate *d)
{
	if (!t->slots || 2 * (size_t)(t->n + 1) > (size_t)1 << (64 - t->shift)) {
		where_table old = *t;
		t->shift = old.slots ? old.shift - 1 : 64 - WHERE_FIRST_LOG2;
		t->slots = pr_xcalloc((size_t)1 << (64 - t->shift), sizeof *t->slots);
		for (size_t i = 0; old.slots && i < (size_t)1 << (64 - old.shift); i++)
			if (old.slots[i].d)
				*where_slot(t, old.slots[i].d) = old.slots[i];
		free(old.slots);
	}
	where_memo *m = where_slot(t, d);
	pr_device dev;
	m->d = d;
	m->where = pl_delegate_where(d, true, &dev);
	m->on_device = m->where == PL_ON_DEVICE;
	m->id = m->on_device ? pr_device_intern(dev) : PR_DEVICE_ID_HOST;
	t->n++;
	return m;
}

/* pl_delegate_where(d, true, ...) of delegate d (not NULL), through c's
 * memos: both walks ask it per call, walk 2 per delegate reader. */
static inline const where_memo *where_of(place_ctx *c, const pr_delegate *d)
{
	if (c->where.slots) {
		where_memo *m = where_slot(&c->where, d);
		if (m->d)
			return m;
	}
	return where_add(&c->where, d);
}

/* The where memo of n when it is a device delegate call, else NULL
 * (pl_call_device(n, true, ...)). */
static inline const where_memo *call_where(place_ctx *c, const pr_node *n)
{
	if (!n || n->kind != PR_NODE_DELEGATE || !n->of_kind.delegate)
		return NULL;
	const where_memo *m = where_of(c, n->of_kind.delegate);
	return m->on_device ? m : NULL;
}

/* v's readers that need a copy, into c->readers.items in graph order (use
 * lists have no order, so that the copies get the same names whatever the
 * edits before). Returns how many. Every reader is asked with cpu_is_device:
 * a target_device=cpu delegate still here is the baseline's (F7). A reader
 * needs v copied to its device unless v is there already: ids compare as
 * the devices do. A v already there still needs one with copy_placed (the
 * baseline copied every argument, a device tensor too: a copy the runtime
 * then refuses), and a delegate on the CPU counts as a device only in the
 * baseline (F7), which copied every argument "to the CPU". */
static inline __attribute__((always_inline)) int copy_readers(place_ctx *c, pr_node *v)
{
	reader_buf *r = &c->readers;
	if (v->n_uses > r->cap) {
		r->cap = v->n_uses > 2 * r->cap ? v->n_uses : 2 * r->cap;
		r->items = pr_xrealloc(r->items, (size_t)r->cap * sizeof *r->items);
		r->copies = pr_xrealloc(r->copies, (size_t)r->cap * sizeof *r->copies);
	}
	int n = 0;
	const pr_use *uses = v->uses;
	for (int i = 0, n_uses = v->n_uses; i < n_uses; i++) {
		const where_memo *m = call_where(c, pr_use_user(&uses[i]));
		if (!m)
			continue;
		/* v is a tensor (pr_node_spec's case) */
		if (c->copy_placed || m->id == PR_DEVICE_ID_HOST || m->id != v->type.tensor.device_id) {
			r->items[n].use = uses[i];
			r->items[n].dev = m->id;
			n++;
		}
	}
	if (n > 1) {
		if (v->graph->order_stale)
			pr_graph_renumber(v->graph);
		sort_readers(r, n);
	}
	return n;
}

/* The copies of one value onto one device: named from one base, first
 * reader first (%x_h2d_cuda0, then %x_h2d_cuda0_1, ...). */
typedef struct copy_group {
	pr_device_id dev;
	const copy_name *base;   /* the look-ahead's, or own */
	copy_name own;
	int next;     /* pr_graph_fresh_name_next's cursor */
	int ahead;    /* copies whose names were looked ahead at */
} copy_group;

#define MAX_GROUPS 8

/* The group of dev among g[0, *n), added when there is room; NULL when
 * there is none (such a copy is named on its own). */
static copy_group *group_of(place_ctx *c, copy_group *g, int *n, const pr_node *v,
			    pr_device_id dev)
{
	for (int d = 0; d < *n; d++)
		if (g[d].dev == dev)
			return &g[d];
	if (*n == MAX_GROUPS)
		return NULL;
	g[*n].dev = dev;
	g[*n].next = 0;
	g[*n].ahead = 0;
	g[*n].base = copy_base_ahead(c, v, true, dev, &g[*n].own);
	return &g[(*n)++];
}

/* One new _h2d_copy of v onto dev, inserted before reader. */
static pr_node *copy_for_reader(place_ctx *c, pr_node *v, pr_node *reader, copy_group *grp,
				pr_device_id dev, pr_err **e)
{
	copy_name own;
	if (!grp)
		copy_base(v, copy_suffix_of(c, true, dev), &own);
	pr_node *n = copy_new_named(c, v, reader, true, dev, grp ? grp->base : &own,
				    grp ? &grp->next : NULL, e);
	if (!grp)
		copy_name_free(&own);
	return n;
}

/* B1 for one value: every device delegate reading v off its device (or on
 * it, with copy_placed), the n in c->readers, reads its own new _h2d_copy of
 * v, placed right before it. The readers move after all copies exist, last
 * first, then the copies read v: the use-list edits are in that order
 * whatever the count. */
static pr_err *copy_one(place_ctx *c, pr_node *v)
{
	/* most values: one copy, named from its base (a group of one) */
	const reader *k = &c->readers.items[0];
	pr_err *e = NULL;
	copy_name own;
	const copy_name *base = copy_base_ahead(c, v, true, k->dev, &own);
	int next = 0;
	pr_node *copy = copy_new_named(c, v, pr_use_user(&k->use), true, k->dev, base, &next, &e);
	copy_name_free(&own);
	if (e)
		return e;
	pr_node_interpose(copy, k->use.arg);
	*c->changed = true;
	return NULL;
}

/* A group's copies after its first are named base_1, base_2, ... (when
 * those are free, as they nearly always are): each a string-table slot
 * nothing asked for before, a cache miss in turn at a million nodes. So the
 * slot of the name the copy AHEAD_SUFFIXED readers on will get is asked for
 * now. Only time depends on it. */
#define AHEAD_SUFFIXED 4
#define SUFFIXED_NAME_MAX 160
#define GROUP_RING 8
_Static_assert(AHEAD_SUFFIXED < GROUP_RING && (GROUP_RING & (GROUP_RING - 1)) == 0,
	       "the groups looked ahead at fit the ring");

static void prefetch_suffixed_name(place_ctx *c, copy_group *grp)
{
	int i = grp->ahead++;
	size_t len = grp->base->len;
	if (i == 0 || len + PR_FRESH_SUFFIX_MAX > SUFFIXED_NAME_MAX)
		return;   /* the base's slot: asked for by prefetch_copy_name */
	char s[SUFFIXED_NAME_MAX];
	memcpy(s, copy_name_str(grp->base), len);
	len += pr_fresh_name_suffix(s + len, i);
	pr_program_prefetch_name(c->p, pr_str_hash(s, len));
}

static __attribute__((noinline)) pr_err *copy_many(place_ctx *c, pr_node *v, int n)
{
	reader_buf *r = &c->readers;
	pr_err *e = NULL;
	int made = 0, n_groups = 0, ahead = 0;
	copy_group groups[MAX_GROUPS];
	copy_group *group_at[GROUP_RING];   /* reader i's group, from the look-ahead */
	for (; made < n; made++) {
		for (; ahead < n && ahead <= made + AHEAD_SUFFIXED; ahead++) {
			copy_group *g = group_of(c, groups, &n_groups, v, r->items[ahead].dev);
			group_at[ahead & (GROUP_RING - 1)] = g;
			if (g)
				prefetch_suffixed_name(c, g);
		}
		const reader *k = &r->items[made];
		copy_group *grp = group_at[made & (GROUP_RING - 1)];
		r->copies[made] = copy_for_reader(c, v, pr_use_user(&k->use), grp, k->dev, &e);
		if (e)
			break;
	}
	for (int k = made - 1; k >= 0; k--)
		pr_arg_set_value(r->items[k].use.arg, r->copies[k]);
	for (int k = 0; k < made; k++)
		pr_node_set_value_arg(r->copies[k], v);
	for (int d = 0; d < n_groups; d++)
		copy_name_free(&groups[d].own);
	*c->changed |= made > 0;
	return e;
}

static pr_err *copy_collected(place_ctx *c, pr_node *v, int n)
{
	return n == 1 ? copy_one(c, v) : copy_many(c, v, n);
}

static pr_err *copy_to_readers(place_ctx *c, pr_node *v)
{
	return copy_collected(c, v, copy_readers(c, v));
}

/* ---- walk 1: results ---------------------------------------------------------- */

/* A reader of a getitem that needs a host copy of it: any but a _d2h_copy,
 * which is one already (a program placed before, by -o or another tool). */
static bool needs_host_copy(const pr_use *u)
{
	return !pl_is_d2h(pr_use_user(u));
}

/* The getitem's readers that need a host copy: none, or only the method
 * output (*only_output), are the cases that get no new copy. */
static int host_readers(const pr_node *gi, bool *only_output)
{
	int n = 0;
	*only_output = false;
	for (int i = 0; i < gi->n_uses; i++)
		if (needs_host_copy(&gi->uses[i])) {
			n++;
			*only_output = n == 1 && pl_use_is_output(&gi->uses[i]);
		}
	return n;
}

/* May an op write v's storage: does a reader of v, or of a view of it (a
 * reader whose result aliases it), write any argument? An over-estimate
 * (the argument it writes may be another), asked without the host-writes
 * analysis, so that walk 1 needs none. */
static bool maybe_written(const pr_node *v)
{
	for (int i = 0; i < v->n_uses; i++) {
		const pr_node *op = pr_use_user(&v->uses[i]);
		if (op->kind != PR_NODE_OP || !op->of_kind.schema)
			continue;
		for (int a = 0; a < op->of_kind.schema->n_args; a++)
			if (pr_schema_arg_writes(op->of_kind.schema, a))
				return true;
		if (pr_node_alias_value(op, 0) == v && maybe_written(op))
			return true;
	}
	return false;
}

/* Moving gi's readers onto its host copy moves the ops that write gi's
 * storage (directly or through a view) onto the copy's: a host-writes result
 * then no longer holds. Storage nobody writes (most) changes nothing there. */
static void note_moved_writes(place_ctx *c, const pr_node *gi)
{
	if (!c->writes_stale)
		c->writes_stale = maybe_written(gi);
}

/* B3: the getitem's readers read a host copy of it. A _d2h_copy that reads
 * it keeps doing so, so that placing a placed program changes nothing. */
static pr_err *copy_getitem_to_host(place_ctx *c, pr_node *gi)
{
	bool only_output;
	int n = host_readers(gi, &only_output);
	if (n == 0 || (c->skip_d2h && n == 1 && only_output))
		return NULL;
	note_moved_writes(c, gi);
	pr_err *e = NULL;
	pr_node *copy = copy_to_host(c, gi, gi->next, &e);
	if (e)
		return e;
	/* last first, the first moved with the copy's own argument
	 * (pr_node_interpose): the edits pr_arg_set_value for each and then
	 * pr_node_set_value_arg would make */
	int first = 0;
	while (!needs_host_copy(&gi->uses[first]))
		first++;
	for (int i = gi->n_uses - 1; i > first; i--)
		if (needs_host_copy(&gi->uses[i]))
			pr_arg_set_value(gi->uses[i].arg, copy);
	pr_node_interpose(copy, gi->uses[first].arg);
	*c->changed = true;
	host_copies *h = &c->host_copies;
	PR_GROW(h->items, h->n, h->cap);
	/* gi->scratch: its place among the values (collect) */
	h->items[h->n++] = (host_copy){(size_t)(uintptr_t)gi->scratch, copy};
	return NULL;
}

static pr_err *place_results(place_ctx *c, pr_node *call, pr_device_id id)
{
	*c->changed = true;
	if (call->type.kind == PR_TYPE_TENSOR) {
		call->type.tensor.device_id = id;
		return NULL;
	}
	if (call->type.kind != PR_TYPE_TUPLE)
		return NULL;
	for (int i = 0; i < call->type.n_elems; i++)
		call->type.elems[i].device_id = id;
	pl_nodes *getitems = &c->getitems;
	getitems->n = 0;
	if (call->n_uses > getitems->cap) {
		getitems->cap = call->n_uses;
		getitems->items = pr_xrealloc(getitems->items,
					      (size_t)getitems->cap * sizeof *getitems->items);
	}
	for (int i = 0; i < call->n_uses; i++)
		if (pr_use_user(&call->uses[i])->kind == PR_NODE_GETITEM)
			getitems->items[getitems->n++] = pr_use_user(&call->uses[i]);
	pr_err *e = NULL;
	for (int i = 0; i < getitems->n && !e; i++) {
		pr_node *gi = getitems->items[i];
		if (gi->type.kind == PR_TYPE_TENSOR)
			gi->type.tensor.device_id = id;
		e = copy_getitem_to_host(c, gi);
	}
	return e;
}

static void report_bad_device(place_ctx *c, pr_node *call)
{
	pr_device dev;
	pr_err *err = pr_delegate_device(call->of_kind.delegate, &dev);
	pr_pass_diag(c->pass, PR_SEV_ERROR, "E-UNKNOWN-DEVICE", c->g->name, call->name, -1,
		     "%s (called as %%%s)", pr_err_message(err), call->name ? call->name : "");
	pr_err_free(err);
}

/* Walk 1's look ahead: a call's getitems, their use lists and their host
 * copies' names. */
static void prefetch_getitems(place_ctx *c, const pr_node *call)
{
	for (int i = 0; i < call->n_uses && i < AHEAD_MAX_READERS; i++) {
		const pr_node *gi = pr_use_user(&call->uses[i]);
		if (gi->kind == PR_NODE_GETITEM) {
			prefetch_uses(gi);
			prefetch_copy_name(c, gi, false);
		}
	}
}

/* The readers of a call's getitems, and their argument slots, which moving
 * them onto the host copy edits. */
static void prefetch_getitem_readers(const pr_node *call)
{
	for (int i = 0; i < call->n_uses && i < AHEAD_MAX_READERS; i++) {
		const pr_node *gi = pr_use_user(&call->uses[i]);
		for (int j = 0; gi->kind == PR_NODE_GETITEM && j < gi->n_uses &&
				j < AHEAD_MAX_READERS; j++) {
			__builtin_prefetch(pr_use_user(&gi->uses[j]));
			__builtin_prefetch(gi->uses[j].arg);
		}
	}
}

static void prefetch_calls_ahead(place_ctx *c, const pl_nodes *calls, int i)
{
	if (i + 1 < calls->n)
		prefetch_getitem_readers(calls->items[i + 1]);
	if (i + AHEAD_NODE < calls->n)
		prefetch_node(calls->items[i + AHEAD_NODE]);
	if (i + AHEAD_USES < calls->n)
		prefetch_uses(calls->items[i + AHEAD_USES]);
	if (i + AHEAD_ARGS < calls->n)
		prefetch_args(calls->items[i + AHEAD_ARGS]);
	if (i + AHEAD_READERS < calls->n)
		prefetch_readers(calls->items[i + AHEAD_READERS]);
	if (i + AHEAD_NAME < calls->n)
		prefetch_getitems(c, calls->items[i + AHEAD_NAME]);
}

static pr_err *walk_results(place_ctx *c, const pl_nodes *calls)
{
	pr_err *e = NULL;
	for (int i = 0; i < calls->n && !e; i++) {
		prefetch_calls_ahead(c, calls, i);
		const pr_delegate *d = calls->items[i]->of_kind.delegate;
		const where_memo *m = d ? where_of(c, d) : NULL;
		if (m && m->where == PL_BAD_DEVICE)
			report_bad_device(c, calls->items[i]);
		else if (m && m->on_device)
			e = place_results(c, calls->items[i], m->id);
	}
	return e;
}

/* ---- walk 2: arguments ------------------------------------------------------- */

static int distinct_readers(const pr_node *v)
{
	int n = 0;
	for (int i = 0; i < v->n_uses && n <= 2; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = pr_use_user(&v->uses[j]) == pr_use_user(&v->uses[i]);
		n += !seen;
	}
	return n;
}

/* Baseline B1 with skip_h2d_for_method_inputs: the caller passes v on the
 * device, which only works when the delegate is its one reader. */
static void tag_skipped_input(place_ctx *c, pr_node *v, const pr_use *first, pr_device_id dev)
{
	if (distinct_readers(v) == 1) {
		v->type.tensor.device_id = dev;
		*c->changed = true;
		return;
	}
	const pr_use *other = NULL;   /* the first other reader in graph order */
	for (int i = 0; i < v->n_uses; i++)
		if (pr_use_user(&v->uses[i]) != pr_use_user(first) &&
		    (!other || pr_node_before(pr_use_user(&v->uses[i]), pr_use_user(other))))
			other = &v->uses[i];
	char ds[PR_DEVICE_STR_MAX], reader[160], other_reader[160];
	pl_describe_use(first, reader, sizeof reader);
	pl_describe_use(other, other_reader, sizeof other_reader);
	pr_pass_diag(c->pass, PR_SEV_ERROR, "E-INPUT-SHARED", c->g->name, v->name, pl_bytes(v),
		     "%s '%s' (%%%s, %" PRId64 " bytes) feeds %s on %s, but with %s it may have no "
		     "other reader, and %s also reads it",
		     pl_input_kind_word(v, c->buffers), pl_input_name(v), v->name,
		     pl_bytes(v), reader, pr_device_str(*pr_device_of(dev), ds), PL_OPT_SKIP_H2D,
		     other_reader);
}

/* pr_spec_stored_as_is(s), through c's memo. */
static bool stored_as_is(place_ctx *c, const pr_spec *s)
{
	if (!s->shape)
		return pr_spec_stored_as_is(s);
	layout_memo *m = &c->layouts[((uint64_t)(uintptr_t)pr_spec_strides(s) * 0x9E3779B97F4A7C15u) >> 60];
	if (m->shape != s->shape || m->rank != s->rank) {
		m->shape = s->shape;
		m->rank = s->rank;
		m->as_is = pr_spec_stored_as_is(s);
	}
	return m->as_is;
}

/* F5: a constant is copied as stored, so its layout must survive that. */
static bool constant_copyable(place_ctx *c, pr_node *v, const pr_use *first, pr_device_id dev)
{
	pr_spec *s = pr_node_spec(v);
	if (stored_as_is(c, s))
		return true;
	char st[128], r[160], ds[PR_DEVICE_STR_MAX];
	pl_strides_str(s, st, sizeof st);
	pl_describe_use(first, r, sizeof r);
	pr_pass_diag(c->pass, PR_SEV_ERROR, "E-CONSTANT-LAYOUT", c->g->name, v->name, pl_bytes(v),
		     "%s '%s' (%%%s, %" PRId64 " bytes) feeds %s on %s with strides %s, neither "
		     "contiguous nor channels-last: its copy would move the bytes as stored and the "
		     "delegate would read them in the wrong order; make it contiguous first "
		     "(the param-layout pass does)",
		     pl_input_kind_word(v, c->buffers), pl_input_name(v), v->name,
		     pl_bytes(v), r, pr_device_str(*pr_device_of(dev), ds), st);
	return false;
}

/* F6: does reader u read input v where it stays, on dev? */
static bool reads_on_device(place_ctx *c, const pr_use *u, pr_device_id dev)
{
	const where_memo *m = call_where(c, pr_use_user(u));
	if (m)
		return m->id == dev;
	const pr_schema *s = pr_node_schema(pr_use_user(u));
	if (s && s->shape_only)
		return true;
	return c->skip_d2h && pl_use_is_output(u);
}

static void refuse_written_input(place_ctx *c, pr_node *v, const pr_use *first, pr_device_id dev,
				 pr_node *writer)
{
	char r[160], w[160], ds[PR_DEVICE_STR_MAX], wb[256] = "";
	pl_describe_use(first, r, sizeof r);
	pl_describe_node(writer, w, sizeof w);
	for (int i = 0; i < v->n_uses; i++)
		if (pl_return_slot(&v->uses[i]) >= 0 && !pl_use_is_output(&v->uses[i])) {
			char b[160];
			pl_describe_use(&v->uses[i], b, sizeof b);
			snprintf(wb, sizeof wb, "; %s reads it: keep that buffer inside the delegate", b);
			break;
		}
	pr_pass_diag(c->pass, PR_SEV_ERROR, "E-INPUT-WRITTEN-ON-HOST", c->g->name, v->name,
		     pl_bytes(v),
		     "%s '%s' (%%%s, %" PRId64 " bytes) would stay on %s for %s, but %s writes it "
		     "in place on the host, which would change only a host copy%s",
		     pl_input_kind_word(v, c->buffers), pl_input_name(v), v->name,
		     pl_bytes(v), pr_device_str(*pr_device_of(dev), ds), r, w, wb);
}

/* F6: the readers off the device read one host copy of v. */
static pr_err *share_input(place_ctx *c, pr_node *v, pr_device_id dev)
{
	pr_node *first_off = NULL;
	for (int i = 0; i < v->n_uses; i++)
		if (!reads_on_device(c, &v->uses[i], dev) &&
		    (!first_off || pr_node_before(pr_use_user(&v->uses[i]), first_off)))
			first_off = pr_use_user(&v->uses[i]);
	v->type.tensor.device_id = dev;
	*c->changed = true;
	if (!first_off)
		return NULL;
	pr_err *e = NULL;
	pr_node *copy = copy_to_host(c, v, first_off, &e);
	if (e)
		return e;
	for (int i = v->n_uses - 1; i >= 0; i--)
		if (!reads_on_device(c, &v->uses[i], dev))
			pr_arg_set_value(v->uses[i].arg, copy);
	pr_node_set_value_arg(copy, v);
	return copy_to_readers(c, copy);
}

static pr_err *place_shared_input(place_ctx *c, pr_node *v, const pr_use *first,
				  pr_device_id dev)
{
	bool off = false;
	for (int i = 0; i < v->n_uses && !off; i++)
		off = !reads_on_device(c, &v->uses[i], dev);
	if (off) {
		const pr_host_writes *hw = pr_pass_analysis(c->pass, PR_HOST_WRITES, c->g);
		if (!hw)   /* not loaded: the manager fails the pass */
			return NULL;
		pr_node *writer = pr_host_writer(hw, v);
		if (writer) {
			refuse_written_input(c, v, first, dev, writer);
			return NULL;
		}
	}
	return share_input(c, v, dev);
}

/* v's readers that need it on their device are found once (copy_readers,
 * by the walk: most values have none, and then nothing else is asked): the
 * first of them (graph order) decides, and they are the n that
 * copy_collected copies to. */
static pr_err *place_value(place_ctx *c, pr_node *v, int n)
{
	/* copies: share_input reuses the buffer */
	pr_use first = c->readers.items[0].use;
	pr_device_id dev = c->readers.items[0].dev;
	/* pl_is_constant asks only of an input */
	if (c->copy_constants && v->kind == PR_NODE_INPUT && pl_is_constant(v, c->buffers)) {
		if (!constant_copyable(c, v, &first, dev))
			return NULL;
		return copy_collected(c, v, n);
	}
	if (c->skip_h2d && v->kind == PR_NODE_INPUT) {
		if (c->share_inputs && pl_is_method_input(v, c->buffers))
			return place_shared_input(c, v, &first, dev);
		tag_skipped_input(c, v, &first, dev);
		return NULL;
	}
	return copy_collected(c, v, n);
}

static void prefetch_values_ahead(place_ctx *c, const pl_nodes *values, int k)
{
	if (k + AHEAD_NODE < values->n)
		prefetch_node(values->items[k + AHEAD_NODE]);
	if (k + AHEAD_USES < values->n)
		prefetch_uses(values->items[k + AHEAD_USES]);
	if (k + AHEAD_ARGS < values->n)
		prefetch_args(values->items[k + AHEAD_ARGS]);
	if (k + AHEAD_READERS < values->n)
		prefetch_readers(values->items[k + AHEAD_READERS]);
	if (k + AHEAD_NAME < values->n && read_by_delegate(values->items[k + AHEAD_NAME]))
		prefetch_copy_name(c, values->items[k + AHEAD_NAME], true);
}

static pr_err *walk_arguments(place_ctx *c, const pl_nodes *values)
{
	/* Walk 1 may have moved writers onto host copies. Walk 2 keeps what is
	 * left valid: it moves only delegate arguments, and a method input's
	 * host readers only when nothing writes it (place_shared_input). */
	if (c->writes_stale)
		pr_pass_invalidate(c->pass, c->g);
	pr_err *e = NULL;
	for (int k = 0; k < values->n && !e; k++) {
		prefetch_values_ahead(c, values, k);
		pr_node *v = values->items[k];
		int n = copy_readers(c, v);
		if (n > 0)
			e = place_value(c, v, n);
	}
	return e;
}

/* ---- the walks' nodes ------------------------------------------------------ */

/* The delegate calls (walk 1) and the tensors with readers (walk 2), in
 * graph order, from one pass over the list: at a million nodes each pass
 * is a cache miss per node. A getitem's scratch is the number of values up
 * to it, where walk 1 puts its host copy (merge_host_copies). Sized once:
 * the node count bounds both; values has room for the host copies too. */
static void collect(const pr_graph *g, pl_nodes *calls, pl_nodes *values)
{
	calls->cap = values->cap = (int)g->n_nodes + 1;
	calls->items = pr_xmalloc((size_t)calls->cap * sizeof *calls->items);
	values->items = pr_xmalloc((size_t)values->cap * sizeof *values->items);
	pr_graph_for_each(g, n) {
		if (n->kind == PR_NODE_DELEGATE)
			calls->items[calls->n++] = n;
		if (n->type.kind == PR_TYPE_TENSOR && n->n_uses > 0)
			values->items[values->n++] = n;
		if (n->kind == PR_NODE_GETITEM)
			n->scratch = (void *)(uintptr_t)values->n;
	}
}

static int host_copy_by_at(const void *a, const void *b)
{
	size_t x = ((const host_copy *)a)->at, y = ((const host_copy *)b)->at;
	return (x > y) - (x < y);
}

/* Walk 1's host copies into values, each right after its getitem, as a
 * pass over the list after walk 1 would find them: walk 1 changes no other
 * value's kind, and leaves a getitem it copies readers (its copy). They
 * come by call, and a call's getitems in use-list order: sorted first
 * (distinct places, one copy per getitem) when that was not graph order. */
static void merge_host_copies(host_copies *h, pl_nodes *values)
{
	if (!h->n)
		return;
	for (size_t i = 1; i < h->n; i++)
		if (h->items[i - 1].at > h->items[i].at) {
			qsort(h->items, h->n, sizeof *h->items, host_copy_by_at);
			break;
		}
	size_t n = (size_t)values->n, total = n + h->n;
	if (total > (size_t)values->cap) {
		values->cap = (int)total;
		values->items = pr_xrealloc(values->items, total * sizeof *values->items);
	}
	/* from the back: each value moves up by the copies before it */
	pr_node **v = values->items;
	for (size_t i = h->n, end = n; i-- > 0;) {
		size_t at = h->items[i].at;
		memmove(&v[at + i + 1], &v[at], (end - at) * sizeof *v);
		v[at + i] = h->items[i].copy;
		end = at;
	}
	values->n = (int)total;
}

/* Per method: a method's copies, skip flags and buffers are its own. */
static pr_err *propagate_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	place_ctx c = {
		.pass = ctx, .p = p, .g = g, .changed = changed,
		.skip_h2d = pr_pass_opt_bool(ctx, PL_OPT_SKIP_H2D, NULL),
		.skip_d2h = pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, NULL),
		.copy_constants = pr_pass_opt_bool(ctx, "copy_constants", NULL),
		.share_inputs = pr_pass_opt_bool(ctx, "share_inputs", NULL),
		.copy_placed = !pr_pass_opt_bool(ctx, "read_placed_args", NULL),
	};
	c.buffers = pr_graph_mutable_buffers(g);
	pl_nodes calls = {0}, values = {0};
	collect(g, &calls, &values);
	pr_err *e = walk_results(&c, &calls);
	pl_nodes_free(&calls);
	if (!e) {
		merge_host_copies(&c.host_copies, &values);
		e = walk_arguments(&c, &values);
	}
	pl_nodes_free(&values);
	free(c.host_copies.items);
	ahead_free(&c);
	pr_mutable_buffers_free(c.buffers);
	free(c.readers.items);
	pl_nodes_free(&c.getitems);
	free(c.readers.copies);
	free(c.readers.keys);
	free(c.where.slots);
	free(c.readers.sorted);
	return e ? pr_err_wrap(e, "propagate-device, method '%s'", g->name) : NULL;
}

static const pr_pass_info propagate_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "propagate-device",
	.summary = "device placement: _h2d_copy before device delegates, _d2h_copy after their getitems, skip flags (B1-B5, F5, F6)",
	.options = propagate_options,
	.n_options = sizeof propagate_options / sizeof propagate_options[0],
	.preserves = propagate_host_writes,
	.run_graph = propagate_run,
	.uses = propagate_host_writes,
};

static pr_err *propagate_register(pr_registry *r)
{
	return pr_register_pass(r, &propagate_pass);
}

PR_PLUGIN("propagate-device", "1.0", propagate_register)
