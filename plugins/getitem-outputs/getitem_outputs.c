/* getitem_outputs.c: delegate results read with no getitem (behaviour.md F3).
 *
 * A delegate call that returns one tensor (not a tuple) has no getitem after
 * it. The base placement copies to the host only after getitems, so such a
 * result got no _d2h_copy: a host op read device memory, and a delegate on
 * another device got an _h2d_copy whose source is on a device. This pass runs
 * after propagate-device and gives the result the copy B3 gives a getitem:
 * a _d2h_copy right after the call that every other reader reads (with
 * skip_d2h_for_method_outputs, none when the method output is its only
 * reader). The _h2d_copy the base made for a delegate on another device now
 * reads the host copy; a delegate on the result's own device, which the base
 * let read the result directly, now reads an _h2d_copy of the host copy, so
 * that elide-round-trips decides about that round-trip as for any getitem
 * (B4 applies, and F2 keeps it when a host op writes the copy first). */
#include "propagate-device/placement.h"

static const pr_option_decl getitem_outputs_options[] = {
	PL_DECL_SKIP_D2H,
};

static pr_err *copy_result(pr_program *p, pr_node *call, bool skip_d2h, bool *changed)
{
	if (call->n_uses == 0 ||
	    (skip_d2h && call->n_uses == 1 && pl_use_is_output(&call->uses[0])))
		return NULL;
	pr_err *e = NULL;
	pr_node *c = pl_copy_new(p, call, false, pr_device_host(), &e);
	if (e)
		return e;
	e = pr_graph_insert_after(call, c);
	if (e)
		return e;
	pr_node_replace_all_uses(call, c);
	pl_copy_attach(c, call);
	*changed = true;
	return pl_copy_to_readers(p, c, true, changed);
}

static pr_err *getitem_outputs_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		bool skip_d2h = pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, g->name);
		pl_nodes calls = {0};
		pr_graph_for_each(g, n) {
			pr_device dev;
			if (n->type.kind == PR_TYPE_TENSOR && pl_call_device(n, true, &dev) &&
			    pr_device_equal(dev, n->type.tensor.device))
				pl_nodes_push(&calls, n);
		}
		pr_err *e = NULL;
		for (int i = 0; i < calls.n && !e; i++)
			e = copy_result(p, calls.items[i], skip_d2h, changed);
		pl_nodes_free(&calls);
		if (e)
			return e;
	}
	return NULL;
}

static const pr_pass_info getitem_outputs_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "getitem-outputs",
	.summary = "a delegate returning one tensor (no getitem) gets its _d2h_copy right after the call (F3)",
	.options = getitem_outputs_options,
	.n_options = sizeof getitem_outputs_options / sizeof getitem_outputs_options[0],
	.run = getitem_outputs_run,
};

static pr_err *getitem_outputs_register(pr_registry *r)
{
	return pr_register_pass(r, &getitem_outputs_pass);
}

PL_PLUGIN("getitem-outputs", getitem_outputs_register)
