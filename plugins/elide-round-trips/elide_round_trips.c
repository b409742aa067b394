/* elide_round_trips.c: same-device round-trips (docs/placement-rules.md B4, F2).
 *
 * An _h2d_copy(_d2h_copy(x)) whose destination is x's own device moves data
 * to the host and straight back: the reader of the _h2d_copy reads x and the
 * _h2d_copy goes; the _d2h_copy goes too once no host reader needs it. A real
 * move (cuda:0 -> host -> cuda:1) stays.
 *
 * F2: when a host op writes the host copy in place (directly or through a
 * view, per the host-writes analysis) after the _d2h_copy and before the
 * _h2d_copy, the device tensor x never sees that write, so the round-trip is
 * kept. A write that runs after the _h2d_copy cannot change what it copies,
 * so it keeps nothing. With `respect_host_writes: false` (the baseline, and
 * the pipeline without F2) every round-trip goes, as ExecuTorch did before
 * the fix. Each query is a binary search in the analysis and each
 * _d2h_copy's readers are visited once, so the pass is linear. */
#include <stdint.h>

#include "host_writes.h"
#include "plugin_common.h"

static const pr_option_decl elide_options[] = {
	{ "respect_host_writes", PR_OPT_BOOL, "true",
	  "keep a round-trip whose host copy a host op writes before it is copied back (F2)",
	  PR_SCOPE_PASS, false },
};

static const char *const elide_requires[] = {PR_HOST_WRITES, NULL};
static const char *const elide_preserves[] = {PR_HOST_WRITES, NULL};

static void elide_copy(const pr_host_writes *hw, pr_node *d2h, bool *changed)
{
	pr_node *x = pl_copy_src(d2h);
	if (!x || !pr_node_spec(x))
		return;
	pr_device_id dev = pr_node_spec(x)->device_id;
	for (int i = d2h->n_uses - 1; i >= 0; i--) {
		pr_node *h = pr_use_user(&d2h->uses[i]);
		if (!pl_is_h2d(h) || h->type.tensor.device_id != dev)
			continue;
		if (hw && hw->writer_between(hw, d2h, d2h, h))
			continue;
		pr_node_replace_all_uses(h, x);
		pr_graph_erase(h);   /* its use of d2h was at i: what moves there was visited */
		*changed = true;
	}
	if (d2h->n_uses == 0) {
		pr_graph_erase(d2h);
		*changed = true;
	}
}

/* ---- fetching ahead --------------------------------------------------------
 *
 * At a million nodes elide_copy's cost is its cache misses: each copy reads a
 * dozen lines at scattered addresses (the copy, its argument and use records,
 * its source and that one's use list, its readers, their records, their
 * neighbours in the graph and their names), and one miss waits for the one
 * before. So the loop asks for them some copies ahead, in stages: each stage
 * reads only pointers that the stage before, a few copies earlier, brought
 * in, and asks for the lines they lead to. The hints change nothing that the
 * pass does; a use list names live nodes only, so every pointer read is one. */

/* ahead of elide_copy, in copies: the copy itself, its records, its
 * readers' argument slots (a use entry names the slot, whose owner is the
 * reader), its source and readers, their records, their readers' argument
 * records */
#define AHEAD_NODE 20
#define AHEAD_RECORDS 14
#define AHEAD_READER_SLOTS 12
#define AHEAD_READERS 9
#define AHEAD_READER_RECORDS 5
#define AHEAD_READER_ARGS 2
#define AHEAD_USES_MAX 4   /* a copy has one or two readers; more are rare */

/* Inlined by force: a function that only asks for lines has no effect the
 * compiler knows of, and a call to it that is not inlined is dropped. */
#define FETCH_FN static inline __attribute__((always_inline)) void

FETCH_FN fetch(const void *p)
{
	__builtin_prefetch(p);
}

FETCH_FN fetch_node(const pr_node *n)
{
	pr_node_prefetch_lines((uintptr_t)n);
}

/* the name's interned record lies just before it */
FETCH_FN fetch_name(const pr_node *n)
{
	if (n->name)
		fetch((const void *)((uintptr_t)n->name - 1));
}

/* what unlinking and freeing n reads besides n */
FETCH_FN fetch_records(const pr_node *n)
{
	fetch(n->args);
	fetch(n->uses);
	fetch_name(n);
	if (n->prev)
		fetch(&n->prev->next);
	if (n->next)
		fetch(&n->next->prev);
}

static int n_fetched_uses(const pr_node *n)
{
	return n->n_uses < AHEAD_USES_MAX ? n->n_uses : AHEAD_USES_MAX;
}

FETCH_FN fetch_reader_slots(const pr_node *d2h)
{
	for (int i = 0; i < n_fetched_uses(d2h); i++)
		fetch(d2h->uses[i].arg);
}

FETCH_FN fetch_readers(const pr_node *d2h)
{
	pr_node *x = pl_copy_src(d2h);
	if (x) {
		fetch(&x->n_uses);
		fetch(&x->type.tensor.device_id);
	}
	for (int i = 0; i < n_fetched_uses(d2h); i++)
		fetch_node(pr_use_user(&d2h->uses[i]));
}

FETCH_FN fetch_reader_records(const pr_node *d2h)
{
	pr_node *x = pl_copy_src(d2h);
	if (x && x->uses)
		fetch(&x->uses[x->n_uses]);
	for (int i = 0; i < n_fetched_uses(d2h); i++)
		fetch_records(pr_use_user(&d2h->uses[i]));
}

FETCH_FN fetch_reader_args(const pr_node *d2h)
{
	for (int i = 0; i < n_fetched_uses(d2h); i++) {
		const pr_node *h = pr_use_user(&d2h->uses[i]);
		for (int j = 0; j < n_fetched_uses(h); j++)
			fetch(h->uses[j].arg);
	}
}

FETCH_FN fetch_ahead(const pl_nodes *copies, int i)
{
	if (i + AHEAD_NODE < copies->n)
		fetch_node(copies->items[i + AHEAD_NODE]);
	if (i + AHEAD_RECORDS < copies->n)
		fetch_records(copies->items[i + AHEAD_RECORDS]);
	if (i + AHEAD_READER_SLOTS < copies->n)
		fetch_reader_slots(copies->items[i + AHEAD_READER_SLOTS]);
	if (i + AHEAD_READERS < copies->n)
		fetch_readers(copies->items[i + AHEAD_READERS]);
	if (i + AHEAD_READER_RECORDS < copies->n)
		fetch_reader_records(copies->items[i + AHEAD_READER_RECORDS]);
	if (i + AHEAD_READER_ARGS < copies->n)
		fetch_reader_args(copies->items[i + AHEAD_READER_ARGS]);
}

/* Per method: a round trip lies within one method. */
static pr_err *elide_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	bool respect = pr_pass_opt_bool(ctx, "respect_host_writes", NULL);
	const pr_host_writes *hw = respect ? pr_pass_analysis(ctx, PR_HOST_WRITES, g) : NULL;
	pl_nodes copies = {0};
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		if (pl_is_d2h(n))
			pl_nodes_push(&copies, n);
	}
	for (int i = 0; i < copies.n; i++) {
		fetch_ahead(&copies, i);
		elide_copy(hw, copies.items[i], changed);
	}
	pl_nodes_free(&copies);
	return NULL;
}

static const pr_pass_info elide_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "elide-round-trips",
	.summary = "removes _h2d_copy(_d2h_copy(x)) back to x's device unless the host copy is written first (B4, F2)",
	.options = elide_options,
	.n_options = sizeof elide_options / sizeof elide_options[0],
	.requires = elide_requires,
	.preserves = elide_preserves,
	.run_graph = elide_run,
};

static pr_err *elide_register(pr_registry *r)
{
	return pr_register_pass(r, &elide_pass);
}

PR_PLUGIN("elide-round-trips", "1.0", elide_register)
