/* propagate_device.c: the base device placement (behaviour.md B1-B5).
 *
 * This is ExecuTorch's PropagateDevicePass before the fixes, on purpose: each
 * fix is its own plugin, and the baseline pipeline runs this pass alone (with
 * elide-round-trips, B4) so that what each fix changes can be seen. The pass
 * works in two walks over each method:
 *
 *   1. Results (B2, B3, B5). Every delegate call whose target_device parses
 *      to a device gets its results tagged with that device: a single tensor
 *      result, or the tuple's elements and the getitems that read them. The
 *      tag also reaches every view and in-place result of those tensors, as
 *      if they shared one spec (ExecuTorch's SpecPropPass shares the spec
 *      object; the host-writes pass, F2, undoes this for views of host
 *      copies). Each getitem then gets a _d2h_copy right after it and every
 *      other reader reads the copy; with skip_d2h_for_method_outputs a getitem
 *      whose only reader is the method output gets none. A single tensor
 *      result gets no copy at all (F3 adds it). An unparsable target_device or
 *      an unknown device type is E-UNKNOWN-DEVICE, naming the valid types.
 *   2. Arguments (B1). Every tensor a device delegate reads that is not
 *      already on the delegate's device gets its own _h2d_copy before the
 *      call (one per reader: copy-reuse, F8, shares them). A tensor already
 *      on that device gets none (the shared contract: a device-constants or
 *      shared-inputs pass may have placed it). With
 *      skip_h2d_for_method_inputs a placeholder that feeds a device delegate
 *      is instead tagged with the device, the caller passing device memory:
 *      only when the delegate is its one reader, else it is refused
 *      (E-INPUT-SHARED; F6 lifts this). The baseline does not tell constants
 *      from inputs here (F5 does), and it treats target_device=cpu as a
 *      device (F7 removes those copies).
 *
 * Copies are declared with the shared contract's schemas and named after what
 * they copy (%x_h2d_cuda0, %t_d2h). Walk 2 visits each value's readers from
 * the last one back, so moving thousands of readers of one tensor stays
 * linear (the core removes a use by scanning from the end). */
#include "propagate-device/placement.h"

static const pr_option_decl propagate_options[] = {
	PL_DECL_SKIP_H2D,
	PL_DECL_SKIP_D2H,
};

/* ---- walk 1: results ---------------------------------------------------------- */

/* Tags v's views and in-place results (transitively) with dev. */
static void tag_views(pr_node *v, pr_device dev)
{
	pl_nodes todo = {0};
	pl_nodes_push(&todo, v);
	for (int k = 0; k < todo.n; k++) {
		pr_node *t = todo.items[k];
		for (int i = 0; i < t->n_uses; i++) {
			pr_node *u = t->uses[i].user;
			if (!pl_reads_as_view(u, t))
				continue;
			u->type.tensor.device = dev;
			pl_nodes_push(&todo, u);
		}
	}
	pl_nodes_free(&todo);
}

static bool only_reader_is_output(const pr_node *v)
{
	return v->n_uses == 1 && pl_use_is_output(&v->uses[0]);
}

/* B3: the getitem's readers read a host copy of it. */
static pr_err *copy_getitem_to_host(pr_program *p, pr_node *gi, bool skip_d2h, bool *changed)
{
	if (gi->n_uses == 0 || (skip_d2h && only_reader_is_output(gi)))
		return NULL;
	pr_err *e = NULL;
	pr_node *c = pl_copy_new(p, gi, false, pr_device_host(), &e);
	if (e)
		return e;
	e = pr_graph_insert_after(gi, c);
	if (e)
		return e;
	pr_node_replace_all_uses(gi, c);
	pl_copy_attach(c, gi);
	*changed = true;
	return NULL;
}

static pr_err *place_results(pr_program *p, pr_node *call, pr_device dev, bool skip_d2h,
			     bool *changed)
{
	if (call->type.kind == PR_TYPE_TENSOR) {
		call->type.tensor.device = dev;
		tag_views(call, dev);
		*changed = true;
		return NULL;
	}
	if (call->type.kind != PR_TYPE_TUPLE)
		return NULL;
	for (int i = 0; i < call->type.n_elems; i++)
		call->type.elems[i].device = dev;
	pl_nodes getitems = {0};
	for (int i = 0; i < call->n_uses; i++)
		if (call->uses[i].user->kind == PR_NODE_GETITEM)
			pl_nodes_push(&getitems, call->uses[i].user);
	pr_err *e = NULL;
	for (int i = 0; i < getitems.n && !e; i++) {
		pr_node *gi = getitems.items[i];
		if (gi->type.kind == PR_TYPE_TENSOR) {
			gi->type.tensor.device = dev;
			tag_views(gi, dev);
		}
		e = copy_getitem_to_host(p, gi, skip_d2h, changed);
	}
	*changed = true;
	pl_nodes_free(&getitems);
	return e;
}

static void report_bad_device(pr_pass_ctx *ctx, pr_graph *g, pr_node *call)
{
	const char *td = pr_delegate_spec(call->delegate, "target_device");
	pr_pass_diag(ctx, PR_SEV_ERROR, "E-UNKNOWN-DEVICE", g->name, call->name, -1,
		     "delegate @%s (%%%s) has target_device=\"%s\", which is not a device: "
		     "expected TYPE[:INDEX] (any case) with TYPE one of: " PL_DEVICE_TYPES,
		     call->delegate->name, call->name ? call->name : "", td);
}

static pr_err *walk_results(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	bool skip_d2h = pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, g->name);
	pl_nodes calls = {0};
	pr_graph_for_each(g, n)
		if (n->kind == PR_NODE_DELEGATE)
			pl_nodes_push(&calls, n);
	pr_err *e = NULL;
	for (int i = 0; i < calls.n && !e; i++) {
		pr_device dev;
		pl_where w = pl_delegate_where(calls.items[i]->delegate, true, &dev);
		if (w == PL_BAD_DEVICE)
			report_bad_device(ctx, g, calls.items[i]);
		else if (w == PL_ON_DEVICE)
			e = place_results(p, calls.items[i], dev, skip_d2h, changed);
	}
	pl_nodes_free(&calls);
	return e;
}

/* ---- walk 2: arguments ------------------------------------------------------- */

static bool needs_copy(const pr_use *u, pr_node *v, pr_device *dev)
{
	return pl_needs_copy(u, v, true, dev);
}

static int distinct_readers(const pr_node *v)
{
	int n = 0;
	for (int i = 0; i < v->n_uses; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = v->uses[j].user == v->uses[i].user;
		n += !seen;
		if (n > 2)
			break;
	}
	return n;
}

/* B1 with skip_h2d_for_method_inputs: the caller passes v on the device. */
static void place_skipped_input(pr_pass_ctx *ctx, pr_graph *g, pr_node *v, const pr_use *first,
				pr_device dev, bool *changed)
{
	if (distinct_readers(v) == 1) {
		v->type.tensor.device = dev;
		*changed = true;
		return;
	}
	const pr_use *other = NULL;
	for (int i = 0; i < v->n_uses && !other; i++)
		if (v->uses[i].user != first->user)
			other = &v->uses[i];
	char ds[PR_DEVICE_STR_MAX], reader[160], other_reader[160];
	pl_describe_use(first, reader, sizeof reader);
	pl_describe_use(other, other_reader, sizeof other_reader);
	pr_pass_diag(ctx, PR_SEV_ERROR, "E-INPUT-SHARED", g->name, v->name, pl_bytes(v),
		     "%s %%%s (%" PRId64 " bytes) feeds %s on %s, but with %s it must have one reader "
		     "and %s also reads it",
		     pl_input_kind_word(v), v->name, pl_bytes(v), reader, pl_dev(dev, ds),
		     PL_OPT_SKIP_H2D, other_reader);
}

static pr_err *place_arguments(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	bool skip_h2d = pr_pass_opt_bool(ctx, PL_OPT_SKIP_H2D, g->name);
	pl_nodes values = {0};
	pr_graph_for_each(g, n)
		if (n->type.kind == PR_TYPE_TENSOR && n->n_uses > 0)
			pl_nodes_push(&values, n);
	pr_err *e = NULL;
	for (int k = 0; k < values.n && !e; k++) {
		pr_node *v = values.items[k];
		const pr_use *first = NULL;
		pr_device dev, first_dev;
		for (int i = 0; i < v->n_uses; i++)
			if (needs_copy(&v->uses[i], v, &dev)) {
				if (!first || pr_node_before(v->uses[i].user, first->user)) {
					first = &v->uses[i];
					first_dev = dev;
				}
			}
		if (!first)
			continue;
		if (skip_h2d && v->kind == PR_NODE_INPUT)
			place_skipped_input(ctx, g, v, first, first_dev, changed);
		else
			e = pl_copy_to_readers(p, v, true, changed);
	}
	pl_nodes_free(&values);
	return e;
}

static pr_err *propagate_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		pr_err *e = walk_results(ctx, p, g, changed);
		if (!e)
			e = place_arguments(ctx, p, g, changed);
		if (e)
			return pr_err_wrap(e, "propagate-device, method '%s'", g->name);
	}
	return NULL;
}

static const pr_pass_info propagate_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "propagate-device",
	.summary = "base placement: _h2d_copy before device delegates, _d2h_copy after their getitems, skip flags (B1-B5)",
	.options = propagate_options,
	.n_options = sizeof propagate_options / sizeof propagate_options[0],
	.run = propagate_run,
};

static pr_err *propagate_register(pr_registry *r)
{
	return pr_register_pass(r, &propagate_pass);
}

PL_PLUGIN("propagate-device", propagate_register)
