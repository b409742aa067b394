/* shared_inputs.c: method inputs read on and off the device (behaviour.md F6).
 *
 * With skip_h2d_for_method_inputs the caller passes a method input (a user
 * input or a mutable buffer) that a device delegate reads in device memory.
 * The baseline allows this only when that delegate is the input's one
 * reader. This pass, run before propagate-device, places every such input
 * whatever its readers:
 *
 *   - the input stays on the device D of its first device-delegate reader in
 *     graph order (its spec is tagged with D); later delegates on D read it
 *     there, and so does an op that reads only its shape (trait shape_only);
 *     with skip_d2h_for_method_outputs the method output reads it there too;
 *   - every other reader (host ops, delegates with no device or on the CPU,
 *     delegates on other devices, write-backs, the method output without the
 *     output flag) reads one _d2h_copy of it, placed before the first of
 *     them; propagate-device then gives a delegate on another device an
 *     _h2d_copy of that host copy;
 *   - an input that an op writes in place on the host (directly or through a
 *     view, per the host-writes analysis) is refused with
 *     E-INPUT-WRITTEN-ON-HOST: the write would reach only the host copy. When
 *     the method writes it back (a mutable buffer), the message says to keep
 *     that buffer inside the delegate.
 *
 * The copy runs on every call; per-call-copies reports it (W-/E-INPUT-COPY). */
#include "host-writes/host_writes.h"
#include "propagate-device/placement.h"

static const pr_option_decl shared_inputs_options[] = {
	PL_DECL_SKIP_H2D,
	PL_DECL_SKIP_D2H,
};

static const char *const shared_inputs_requires[] = {PR_HOST_WRITES, NULL};

/* Does reader u read input v where it stays, on dev? */
static bool reads_on_device(const pr_use *u, pr_device dev, bool skip_d2h)
{
	pr_device d;
	if (pl_call_device(u->user, false, &d))
		return pr_device_equal(d, dev);
	if (u->user->kind == PR_NODE_OP && u->user->schema && u->user->schema->shape_only)
		return true;
	return skip_d2h && pl_use_is_output(u);
}

/* The first device-delegate reader of v in graph order, or NULL. */
static const pr_use *first_device_reader(const pr_node *v, pr_device *dev)
{
	const pr_use *first = NULL;
	for (int i = 0; i < v->n_uses; i++) {
		pr_device d;
		if (!pl_call_device(v->uses[i].user, false, &d))
			continue;
		if (!first || pr_node_before(v->uses[i].user, first->user)) {
			first = &v->uses[i];
			*dev = d;
		}
	}
	return first;
}

static const pr_use *writeback_reader(const pr_node *v)
{
	for (int i = 0; i < v->n_uses; i++)
		if (pl_return_slot(&v->uses[i]) >= 0 && !pl_use_is_output(&v->uses[i]))
			return &v->uses[i];
	return NULL;
}

static void refuse_written(pr_pass_ctx *ctx, pr_graph *g, pr_node *v, const pr_use *first,
			   pr_device dev, pr_node *writer)
{
	char r[160], w[160], ds[PR_DEVICE_STR_MAX], wb[256] = "";
	pl_describe_use(first, r, sizeof r);
	pl_describe_node(writer, w, sizeof w);
	const pr_use *back = writeback_reader(v);
	if (back) {
		char b[160];
		pl_describe_use(back, b, sizeof b);
		snprintf(wb, sizeof wb, "; %s reads it: keep that buffer inside the delegate", b);
	}
	pr_pass_diag(ctx, PR_SEV_ERROR, "E-INPUT-WRITTEN-ON-HOST", g->name, v->name, pl_bytes(v),
		     "%s '%s' (%%%s, %" PRId64 " bytes) would stay on %s for %s, but %s writes it "
		     "in place on the host, which would change only a host copy%s",
		     pl_input_kind_word(v), v->input_name ? v->input_name : v->name, v->name,
		     pl_bytes(v), pl_dev(dev, ds), r, w, wb);
}

/* The readers off the device read one host copy of v. */
static pr_err *copy_off_device(pr_program *p, pr_node *v, pr_device dev, bool skip_d2h)
{
	pr_node *first_off = NULL;
	for (int i = 0; i < v->n_uses; i++)
		if (!reads_on_device(&v->uses[i], dev, skip_d2h) &&
		    (!first_off || pr_node_before(v->uses[i].user, first_off)))
			first_off = v->uses[i].user;
	pr_err *e = NULL;
	pr_node *c = pl_copy_new(p, v, false, pr_device_host(), &e);
	if (e)
		return e;
	e = pr_graph_insert_before(first_off, c);
	if (e)
		return e;
	for (int i = v->n_uses - 1; i >= 0; i--)
		if (!reads_on_device(&v->uses[i], dev, skip_d2h))
			pr_arg_set_value(v->uses[i].arg, c);
	pl_copy_attach(c, v);
	return NULL;
}

static pr_err *place_input(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, pr_node *v,
			   bool skip_d2h, bool *changed)
{
	pr_device dev;
	const pr_use *first = first_device_reader(v, &dev);
	if (!first)
		return NULL;
	bool all_on_device = true;
	for (int i = 0; i < v->n_uses && all_on_device; i++)
		all_on_device = reads_on_device(&v->uses[i], dev, skip_d2h);
	if (!all_on_device) {
		const pr_host_writes *hw = pr_pass_analysis(ctx, PR_HOST_WRITES, g);
		pr_node *writer = hw ? pr_host_writer(hw, v) : NULL;
		if (writer) {
			refuse_written(ctx, g, v, first, dev, writer);
			return NULL;
		}
		pr_err *e = copy_off_device(p, v, dev, skip_d2h);
		if (e)
			return e;
	}
	v->type.tensor.device = dev;
	*changed = true;
	return NULL;
}

static pr_err *shared_inputs_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		if (!pr_pass_opt_bool(ctx, PL_OPT_SKIP_H2D, g->name))
			continue;
		bool skip_d2h = pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, g->name);
		pl_nodes inputs = {0};
		pr_graph_for_each(g, n)
			if (pl_is_method_input(n) && n->type.kind == PR_TYPE_TENSOR &&
			    pr_device_is_host(n->type.tensor.device))
				pl_nodes_push(&inputs, n);
		pr_err *e = NULL;
		for (int i = 0; i < inputs.n && !e; i++)
			e = place_input(ctx, p, g, inputs.items[i], skip_d2h, changed);
		pl_nodes_free(&inputs);
		if (e)
			return e;
	}
	return NULL;
}

static const pr_pass_info shared_inputs_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "shared-inputs",
	.summary = "with skip_h2d_for_method_inputs, an input stays on its first delegate's device; other readers share one _d2h_copy (F6)",
	.options = shared_inputs_options,
	.n_options = sizeof shared_inputs_options / sizeof shared_inputs_options[0],
	.requires = shared_inputs_requires,
	.run = shared_inputs_run,
};

static pr_err *shared_inputs_register(pr_registry *r)
{
	return pr_register_pass(r, &shared_inputs_pass);
}

PL_PLUGIN("shared-inputs", shared_inputs_register)
