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
	pr_device dev = pr_node_spec(x)->device;
	for (int i = d2h->n_uses - 1; i >= 0; i--) {
		pr_node *h = d2h->uses[i].user;
		if (!pl_is_h2d(h) || !pr_device_equal(h->type.tensor.device, dev))
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
	for (int i = 0; i < copies.n; i++)
		elide_copy(hw, copies.items[i], changed);
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
