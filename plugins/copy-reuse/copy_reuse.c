/* copy_reuse.c: one device copy per tensor per device (docs/placement-rules.md F8).
 *
 * The base placement gives every device delegate its own _h2d_copy of each
 * argument, so a tensor that several delegates on one device read is copied
 * once per reader on every call. This pass keeps, for each tensor and each
 * device, the newest copy made so far in graph order, and lets a later copy's
 * readers read it instead, unless the tensor (or a view of it, or the tensor
 * it views) is written between that copy and the later one: then the later
 * copy stays and becomes the newest. Copies on different devices never mix,
 * so a tensor read on cuda:0, cuda:1 and cuda:0 keeps two copies.
 *
 * Each tensor's copies are sorted by graph order once; the write check is a
 * binary search in the host-writes analysis; each use-list edit is O(1). The
 * whole pass is O(n log n) in the number of copies. */
#include <stdlib.h>

#include "host_writes.h"
#include "plugin_common.h"

static const char *const reuse_requires[] = {PR_HOST_WRITES, NULL};
static const char *const reuse_preserves[] = {PR_HOST_WRITES, NULL};

typedef struct newest {
	pr_device_id dev;
	pr_node *copy;
} newest;

static int by_order(const void *a, const void *b)
{
	const pr_node *x = *(pr_node *const *)a, *y = *(pr_node *const *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

static newest *newest_on(newest *list, int *n, pr_device_id dev)
{
	for (int i = 0; i < *n; i++)
		if (list[i].dev == dev)
			return &list[i];
	list[*n] = (newest){.dev = dev, .copy = NULL};
	return &list[(*n)++];
}

/* Marks (scratch) and redirects the copies of s that an earlier one replaces. */
static int reuse_copies_of(const pr_host_writes *hw, pr_node *s, pl_nodes *copies)
{
	qsort(copies->items, (size_t)copies->n, sizeof *copies->items, by_order);
	newest *last = pr_xmalloc((size_t)copies->n * sizeof *last);
	int n_dev = 0, merged = 0;
	for (int i = 0; i < copies->n; i++) {
		pr_node *h = copies->items[i];
		newest *cur = newest_on(last, &n_dev, h->type.tensor.device_id);
		if (cur->copy && !hw->writer_between(hw, s, cur->copy, h)) {
			pr_node_replace_all_uses(h, cur->copy);
			h->scratch = h;
			merged++;
		} else {
			cur->copy = h;
		}
	}
	free(last);
	return merged;
}

static void erase_marked_readers(pr_node *s)
{
	for (int i = s->n_uses - 1; i >= 0; i--) {
		pr_node *h = pr_use_user(&s->uses[i]);
		if (h->scratch == h && h->n_uses == 0)
			pr_graph_erase(h);
	}
}

static bool reuse_value(const pr_host_writes *hw, pr_node *s)
{
	pl_nodes copies = {0};
	for (int i = 0; i < s->n_uses; i++) {
		pr_node *r = pr_use_user(&s->uses[i]);
		if (pl_is_h2d(r))
			pl_nodes_push(&copies, r);
	}
	int merged = copies.n > 1 ? reuse_copies_of(hw, s, &copies) : 0;
	pl_nodes_free(&copies);
	if (merged)
		erase_marked_readers(s);
	return merged > 0;
}

/* A value's scratch while the values are collected: one copy of it seen, or
 * two (it is on the list). Neither is a node, so no value is taken for a
 * copy that reuse_copies_of marked. */
static char seen_once, listed;

/* Counts a copy of s: lists s at its second. */
static void note_copy_of(pr_node *s, pl_nodes *values)
{
	if (s->scratch == &listed)
		return;
	if (s->scratch == &seen_once) {
		s->scratch = &listed;
		pl_nodes_push(values, s);
	} else {
		s->scratch = &seen_once;
	}
}

/* A copy's source is most often far from it in a large graph, so the walk
 * asks for the source's scratch when it comes to the copy and counts the
 * copy COPY_LAG copies later, in the same order. */
#define COPY_LAG 8   /* a power of two */

/* The values that two or more copies read, found from the copies: each node
 * is visited once and only a copy's source besides it, never every reader of
 * every node. A value comes before its readers, so its scratch was cleared
 * before a copy of it is seen (cleared only where set: a store to every
 * node would write every node's line back). Copies themselves are never
 * such values, so no value on the list is erased while the list is walked;
 * the order of the list does not matter, since the values share no copy. */
static void collect_copied_twice(pr_graph *g, pl_nodes *values)
{
	pr_node *lag[COPY_LAG];
	unsigned n_copies = 0;
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		if (n->scratch)
			n->scratch = NULL;
		pr_node *s = pl_is_h2d(n) ? pl_copy_src(n) : NULL;
		if (!s)
			continue;
		__builtin_prefetch(&s->scratch);
		if (n_copies >= COPY_LAG)
			note_copy_of(lag[n_copies % COPY_LAG], values);
		lag[n_copies++ % COPY_LAG] = s;
	}
	unsigned left = n_copies < COPY_LAG ? n_copies : COPY_LAG;
	for (unsigned age = left; age > 0; age--)
		note_copy_of(lag[(n_copies - age) % COPY_LAG], values);
}

/* Per method: a copy is reused only by readers of its own method. */
static pr_err *reuse_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	const pr_host_writes *hw = pr_pass_analysis(ctx, PR_HOST_WRITES, g);
	if (g->order_stale)
		pr_graph_renumber(g);
	pl_nodes values = {0};
	collect_copied_twice(g, &values);
	for (int i = 0; i < values.n; i++)
		*changed |= reuse_value(hw, values.items[i]);
	pl_nodes_free(&values);
	return NULL;
}

static const pr_pass_info reuse_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "copy-reuse",
	.summary = "one _h2d_copy per tensor per device, reused by later readers while the tensor is not written (F8)",
	.requires = reuse_requires,
	.preserves = reuse_preserves,
	.run_graph = reuse_run,
};

static pr_err *reuse_register(pr_registry *r)
{
	return pr_register_pass(r, &reuse_pass);
}

PR_PLUGIN("copy-reuse", "1.0", reuse_register)
