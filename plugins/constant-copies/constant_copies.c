/* constant_copies.c: constants that feed device delegates (behaviour.md F5).
 *
 * A constant (a parameter, buffer or constant that is not a mutable buffer)
 * keeps its data in the program, on the host. The baseline placement treats
 * it like a method input: with skip_h2d_for_method_inputs it tags the
 * constant with the device and inserts no copy, so the delegate would get a
 * host pointer labelled as device memory. This pass runs before
 * propagate-device and gives every device delegate that reads a constant off
 * its device its own _h2d_copy (an op result, so planned memory and never a
 * constant), whatever the skip flags say; propagate-device then finds the
 * argument on the device and leaves it. copy-reuse shares the copies of one
 * device, and per-call-copies reports each copy that is left (W-/E-CONSTANT-
 * COPY), after reuse so that each copy is reported once.
 *
 * The copy moves the bytes as stored. A constant that is neither contiguous
 * nor channels-last here (param-layout, F1, makes parameters contiguous
 * before this pass; a pass after it may not) is refused with
 * E-CONSTANT-LAYOUT, since the delegate would read its bytes in the wrong
 * order. A constant already on the delegate's device (device-constants, F10)
 * gets no copy. */
#include "propagate-device/placement.h"

static void strides_str(const pr_spec *s, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < s->rank && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? "," : "", s->strides[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

static bool layout_copyable(pr_pass_ctx *ctx, pr_graph *g, pr_node *c, const pr_use *reader,
			    pr_device dev)
{
	pr_spec *s = pr_node_spec(c);
	if (pr_spec_is_contiguous(s) || pr_spec_is_channels_last(s))
		return true;
	char st[128], r[160], ds[PR_DEVICE_STR_MAX];
	strides_str(s, st, sizeof st);
	pl_describe_use(reader, r, sizeof r);
	pr_pass_diag(ctx, PR_SEV_ERROR, "E-CONSTANT-LAYOUT", g->name, c->name, pl_bytes(c),
		     "%s '%s' (%%%s, %" PRId64 " bytes) feeds %s on %s with strides %s, neither "
		     "contiguous nor channels-last: its copy would move the bytes as stored and the "
		     "delegate would read them in the wrong order; make it contiguous first "
		     "(the param-layout pass does)",
		     pl_input_kind_word(c), c->input_name ? c->input_name : c->name, c->name,
		     pl_bytes(c), r, pl_dev(dev, ds), st);
	return false;
}

static pr_err *copy_constant(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, pr_node *c,
			     bool *changed)
{
	for (int i = 0; i < c->n_uses; i++) {
		pr_device dev;
		if (!pl_needs_copy(&c->uses[i], c, false, &dev))
			continue;
		if (!layout_copyable(ctx, g, c, &c->uses[i], dev))
			return NULL;
		return pl_copy_to_readers(p, c, false, changed);
	}
	return NULL;
}

static pr_err *constant_copies_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		pl_nodes constants = {0};
		pr_graph_for_each(g, n)
			if (pl_is_constant(n) && n->type.kind == PR_TYPE_TENSOR)
				pl_nodes_push(&constants, n);
		pr_err *e = NULL;
		for (int i = 0; i < constants.n && !e; i++)
			e = copy_constant(ctx, p, g, constants.items[i], changed);
		pl_nodes_free(&constants);
		if (e)
			return e;
	}
	return NULL;
}

static const pr_pass_info constant_copies_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "constant-copies",
	.summary = "a constant feeding a device delegate gets an _h2d_copy, also with skip_h2d_for_method_inputs; odd layouts refused (F5)",
	.run = constant_copies_run,
};

static pr_err *constant_copies_register(pr_registry *r)
{
	return pr_register_pass(r, &constant_copies_pass);
}

PL_PLUGIN("constant-copies", constant_copies_register)
