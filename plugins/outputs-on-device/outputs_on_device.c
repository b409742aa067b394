/* outputs_on_device.c: returned outputs stay on the device (docs/placement-rules.md F4).
 *
 * With skip_d2h_for_method_outputs the base placement skips a getitem's
 * _d2h_copy only when the method output is its one reader, and decides that
 * while it inserts copies. So a returned delegate output that anything else
 * reads (a host op, a delegate on another device, or a delegate on the same
 * device whose round-trip is removed later) came back on the host. This pass
 * runs after the round-trips are gone: every output slot that returns a
 * _d2h_copy of a device delegate's result returns that result instead, and
 * the copy stays only for the readers that still need it (it goes when none
 * is left).
 *
 * An output that an op outside the delegate writes in place on the host
 * (the copy, or a view of it, per the host-writes analysis) is right only in
 * host memory: it is returned from the host as it is, so the method's
 * metadata (its spec's device) says the output is in host memory.
 * per-call-copies reports it (W-/E-OUTPUT-ON-HOST). */
#include "host_writes.h"
#include "plugin_common.h"

static const pr_option_decl outputs_options[] = {
	PL_DECL_SKIP_D2H,
};

static const char *const outputs_requires[] = {PR_HOST_WRITES, NULL};
static const char *const outputs_preserves[] = {PR_HOST_WRITES, NULL};

/* The device tensor a returned host copy was made from, or NULL. */
static pr_node *delegate_result_of(pr_node *copy)
{
	if (!pl_is_d2h(copy))
		return NULL;
	pr_node *x = pl_copy_src(copy);
	if (!x || (x->kind != PR_NODE_GETITEM && x->kind != PR_NODE_DELEGATE) ||
	    !pr_node_spec(x) || pr_spec_on_host(pr_node_spec(x)))
		return NULL;
	return x;
}

/* A copy goes when its last reader is moved off it: one returned at
 * several slots stays until the last of them is moved. */
static void keep_outputs(const pr_host_writes *hw, pr_node *ret, bool *changed)
{
	for (int i = 0; i < ret->n_args; i++) {
		pr_arg *a = &ret->args[i];
		if (a->kind != PR_ARG_VALUE || !a->u.value ||
		    (ret->of_kind.writebacks && ret->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE))
			continue;
		pr_node *copy = a->u.value;
		pr_node *x = delegate_result_of(copy);
		if (!x || pr_host_writer(hw, copy))
			continue;
		pr_arg_set_value(a, x);
		if (copy->n_uses == 0)
			pr_graph_erase(copy);
		*changed = true;
	}
}

/* Per method: the option and the outputs are the method's. */
static pr_err *outputs_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	pr_node *ret = pr_graph_return(g);
	if (!ret || !pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, NULL))
		return NULL;
	const pr_host_writes *hw = pr_pass_analysis(ctx, PR_HOST_WRITES, g);
	keep_outputs(hw, ret, changed);
	return NULL;
}

static const pr_pass_info outputs_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "outputs-on-device",
	.summary = "with skip_d2h_for_method_outputs, returned delegate outputs stay on the device unless written on the host (F4)",
	.options = outputs_options,
	.n_options = sizeof outputs_options / sizeof outputs_options[0],
	.requires = outputs_requires,
	.preserves = outputs_preserves,
	.run_graph = outputs_run,
};

static pr_err *outputs_register(pr_registry *r)
{
	return pr_register_pass(r, &outputs_pass);
}

PR_PLUGIN("outputs-on-device", "1.0", outputs_register)
