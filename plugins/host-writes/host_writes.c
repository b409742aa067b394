/* host_writes.c: the host-writes analysis (F2).
 *
 * The analysis (host_writes.h): one walk over the graph in order. For every
 * op argument its schema marks Tensor(a!), the written tensor is followed up
 * its chain of views (pl_alias_root: an op result whose schema aliases an
 * argument, in-place results included) to the tensor that owns the storage,
 * and the op is appended to that root's writer list. The lists are built in
 * graph order, so they are sorted; "written between P and Q" finds the first
 * writer after P by binary search on the nodes' current order numbers, which
 * insertions never reorder. Building is linear in the graph; a query costs
 * O(view depth + log writers). Roots with no writer take no memory.
 *
 * F2 is this analysis plus elide-round-trips' use of it: a host op that writes
 * a device delegate's output in place writes the output's host copy (the base
 * placement moves it onto the _d2h_copy, and its in-place result keeps the
 * host spec of what it writes), so a round-trip to the same device is kept
 * when the host copy is written before it is copied back. */
#include "host_writes.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugin_common.h"

/* One storage root's writers: ops[first .. first + n) of the analysis, in
 * graph order. Entries live in blocks and the writers of every root in one
 * array, so the analysis makes a few allocations however many tensors are
 * written (a decoder writes one cache per layer). */
typedef struct writes_entry {
	const pr_node *root;
	int first, n;
	const pr_node *last_op;  /* while collecting: the op noted last, to note it once */
} writes_entry;

#define ENTRY_BLOCK 256

typedef struct entry_block {
	struct entry_block *next;
	int used;
	writes_entry items[ENTRY_BLOCK];
} entry_block;

/* While collecting: each write as its root's entry and the op, in graph order. */
typedef struct write_note {
	writes_entry *entry;
	pr_node *op;
} write_note;

/* The root -> entry index: open addressing on the root's address, so a
 * question about a tensor nobody writes (most of them: 86% of those
 * elide-round-trips asks) ends at the first empty slot. At a million nodes
 * the slots fill megabytes, so the index is laid out for the cache: a slot's
 * tag byte (0: empty, else 8 bits of the root's hash) lies apart from the
 * slots, so a probe reads tags and only a matching tag reads its slot; and a
 * root's first slot follows its address, not a hash of it, since the passes
 * ask about copies in graph order, which is the order they were made in
 * memory: one question's tag is most often on the line of the one before. */
typedef struct root_slot {
	const pr_node *root;
	writes_entry *entry;
} root_slot;

typedef struct writes_impl {
	pr_graph *graph;
	uint8_t *tags;           /* one per slot */
	root_slot *slots;
	size_t cap, count;       /* cap: 0 or a power of two, at most half full */
	entry_block *blocks;
	pr_node **ops;
	int n_notes, cap_notes;
	write_note *notes;
} writes_impl;

static uint64_t root_hash(const pr_node *root)
{
	return (uint64_t)(uintptr_t)root * 0x9E3779B97F4A7C15u;
}

static uint8_t tag_of(uint64_t hash)
{
	uint8_t tag = (uint8_t)(hash >> 56);
	return tag ? tag : 1;
}

/* The slot of root, or the empty one where it would go. */
static size_t slot_of(const uint8_t *tags, const root_slot *slots, size_t cap,
		      const pr_node *root)
{
	uint64_t hash = root_hash(root);
	uint8_t tag = tag_of(hash);
	size_t at = (size_t)((uintptr_t)root / 8) & (cap - 1);
	while (tags[at] && (tags[at] != tag || slots[at].root != root))
		at = (at + 1) & (cap - 1);
	return at;
}

static writes_entry *find_entry(const writes_impl *w, const pr_node *root)
{
	if (!w->cap)
		return NULL;
	size_t at = slot_of(w->tags, w->slots, w->cap, root);
	return w->tags[at] ? w->slots[at].entry : NULL;
}

static void put_slot(uint8_t *tags, root_slot *slots, size_t cap, root_slot s)
{
	size_t at = slot_of(tags, slots, cap, s.root);
	tags[at] = tag_of(root_hash(s.root));
	slots[at] = s;
}

static void grow_slots(writes_impl *w)
{
	size_t cap = w->cap ? w->cap * 2 : 64;
	uint8_t *tags = pr_xcalloc(cap, sizeof *tags);
	root_slot *slots = pr_xmalloc(cap * sizeof *slots);
	for (size_t i = 0; i < w->cap; i++)
		if (w->tags[i])
			put_slot(tags, slots, cap, w->slots[i]);
	free(w->tags);
	free(w->slots);
	w->tags = tags;
	w->slots = slots;
	w->cap = cap;
}

static writes_entry *new_entry(writes_impl *w, const pr_node *root)
{
	if (!w->blocks || w->blocks->used == ENTRY_BLOCK) {
		entry_block *b = pr_xcalloc(1, sizeof *b);
		b->next = w->blocks;
		w->blocks = b;
	}
	writes_entry *e = &w->blocks->items[w->blocks->used++];
	e->root = root;
	if (2 * (w->count + 1) > w->cap)
		grow_slots(w);
	put_slot(w->tags, w->slots, w->cap, (root_slot){root, e});
	w->count++;
	return e;
}

static void note_write(writes_impl *w, pr_node *op, pr_node *target)
{
	pr_node *root = pl_alias_root(target);
	writes_entry *e = find_entry(w, root);
	if (!e)
		e = new_entry(w, root);
	if (e->last_op == op)
		return;
	e->last_op = op;
	e->n++;
	PR_GROW(w->notes, w->n_notes, w->cap_notes);
	w->notes[w->n_notes++] = (write_note){e, op};
}

static void note_arg_writes(writes_impl *w, pr_node *op, const pr_arg *a)
{
	if (a->kind == PR_ARG_VALUE && a->u.value)
		note_write(w, op, a->u.value);
	else if (a->kind == PR_ARG_LIST)
		for (int i = 0; i < a->n_items; i++)
			note_arg_writes(w, op, &a->u.items[i]);
}

/* Lays each root's writers out in ops, in the order they were noted (graph
 * order): a counting sort of the notes by root. */
static void lay_out_writers(writes_impl *w)
{
	int at = 0;
	for (entry_block *b = w->blocks; b; b = b->next)
		for (int i = 0; i < b->used; i++) {
			b->items[i].first = at;
			at += b->items[i].n;
			b->items[i].n = 0;
		}
	w->ops = pr_xmalloc((size_t)(at > 0 ? at : 1) * sizeof *w->ops);
	for (int i = 0; i < w->n_notes; i++) {
		writes_entry *e = w->notes[i].entry;
		w->ops[e->first + e->n++] = w->notes[i].op;
	}
	free(w->notes);
	w->notes = NULL;
	w->n_notes = w->cap_notes = 0;
}

static writes_entry *entry_of(const writes_impl *w, pr_node *t)
{
	return find_entry(w, pl_alias_root(t));
}

static pr_node *writer_between(const pr_host_writes *hw, pr_node *t, const pr_node *after,
			       const pr_node *before)
{
	const writes_impl *w = hw->impl;
	writes_entry *e = entry_of(w, t);
	if (!e)
		return NULL;
	if (w->graph->order_stale)
		pr_graph_renumber(w->graph);
	pr_node **writers = w->ops + e->first;
	int lo = 0, hi = e->n;
	if (after) {
		while (lo < hi) {   /* first writer that runs after `after` */
			int mid = lo + (hi - lo) / 2;
			if (writers[mid]->order <= after->order)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (lo >= e->n)
		return NULL;
	pr_node *first = writers[lo];
	if (before && first->order >= before->order)
		return NULL;
	return first;
}

static int n_writers(const pr_host_writes *hw, pr_node *t)
{
	writes_entry *e = entry_of(hw->impl, t);
	return e ? e->n : 0;
}

/* The walk asks for nodes ahead (pr_node_prefetch_ahead) like every pass's
 * walk: it reads only each node's kind and schema, so at a million nodes
 * waiting for each next node was most of its time. */

/* Whether a schema writes any argument, remembered per schema: a graph has
 * a few schemas and many ops, and most schemas write nothing, so most ops
 * cost one look here instead of one question per argument. */
#define SCHEMA_MEMO 64

typedef struct schema_memo {
	const pr_schema *schema[SCHEMA_MEMO];
	bool writes[SCHEMA_MEMO];
} schema_memo;

static bool schema_writes(schema_memo *m, const pr_schema *s)
{
	size_t at = ((uintptr_t)s / sizeof(void *)) % SCHEMA_MEMO;
	if (m->schema[at] != s) {
		bool any = false;
		for (int i = 0; i < s->n_args && !any; i++)
			any = pr_schema_arg_writes(s, i);
		m->schema[at] = s;
		m->writes[at] = any;
	}
	return m->writes[at];
}

static void *host_writes_compute(pr_pass_ctx *ctx, pr_graph *g)
{
	(void)ctx;
	writes_impl *w = pr_xcalloc(1, sizeof *w);
	w->graph = g;
	schema_memo memo = {0};
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		const pr_schema *s = pr_node_schema(n);
		if (!s || !schema_writes(&memo, s))
			continue;
		for (int i = 0; i < n->n_args && i < s->n_args; i++)
			if (pr_schema_arg_writes(s, i))
				note_arg_writes(w, n, &n->args[i]);
	}
	lay_out_writers(w);
	pr_host_writes *hw = pr_xcalloc(1, sizeof *hw);
	hw->struct_size = sizeof *hw;
	hw->writer_between = writer_between;
	hw->n_writers = n_writers;
	hw->impl = w;
	return hw;
}

static void host_writes_destroy(void *result)
{
	pr_host_writes *hw = result;
	writes_impl *w = hw->impl;
	free(w->tags);
	free(w->slots);
	for (entry_block *b = w->blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(w->ops);
	free(w);
	free(hw);
}

static const pr_analysis_info host_writes_analysis = {
	.struct_size = sizeof(pr_analysis_info),
	.name = PR_HOST_WRITES,
	.summary = "which ops write which tensor (directly or through views), in graph order (F2)",
	.compute = host_writes_compute,
	.destroy = host_writes_destroy,
};

static pr_err *host_writes_register(pr_registry *r)
{
	return pr_register_analysis(r, &host_writes_analysis);
}

PR_PLUGIN("host-writes", "1.0", host_writes_register)
