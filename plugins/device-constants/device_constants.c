/* device_constants.c: the device-constants pass (docs/placement-rules.md F10, seed 001).
 *
 * With `skip_h2d_for_constants`, a constant (an input of kind parameter,
 * buffer or constant that is not a mutable buffer) whose readers are all
 * device delegates on one device gets that device in its spec. It must run
 * before propagate-device: that pass then finds the tensor already on the
 * delegate's device and inserts no per-call copy (the shared contract), the
 * memory-plan pass plans it in that device's arena for the whole method, the
 * program keeps its data as that memory's initial value, and the runtime
 * copies it once at load (--stats=json counts it in load_h2d_bytes).
 *
 * A constant with any other reader keeps the host: a host op (a view or a
 * transpose first, which would change it on the host, or anything else), a
 * delegate with no device or on the CPU, delegates on two devices, or the
 * method's return. A constant whose layout the program does not store as is
 * (neither contiguous nor channels-last, pr_spec_stored_as_is) keeps the host
 * too: its copy, at load or per call, would move the bytes in the wrong
 * order, and the per-call path refuses it. Each method decides for itself (the option may be a map
 * keyed by method) and keeps its own device copy. A constant already on a
 * device, or with no reader, is left alone; an empty tensor is tagged like
 * any other.
 *
 * Methods of one program sharing mutable buffers (`share_mutable_buffers`)
 * cannot have device constants as well, as in ExecuTorch: the pass refuses
 * the pair with E-SHARED-MUTABLE-BUFFERS and tags nothing in that method. */
#include <stdio.h>
#include <string.h>

#include "plugin_common.h"

static const pr_option_decl device_constants_options[] = {
	PL_DECL_SKIP_CONST,
	PL_DECL_SHARE_BUFFERS,
};

/* The device a delegate call runs on, when it is a device delegate. */
static bool delegate_device(const pr_node *n, pr_device *out)
{
	if (n->kind != PR_NODE_DELEGATE || !n->of_kind.delegate)
		return false;
	pr_err *err = pr_delegate_device(n->of_kind.delegate, out);
	if (err) {
		pr_err_free(err);   /* propagate-device reports it (E-UNKNOWN-DEVICE) */
		return false;
	}
	return !pr_device_is_host(*out);
}

/* A parameter, buffer or constant stored on the host: a candidate to live
 * on the device. */
static bool is_host_constant(const pr_node *n, const pr_mutable_buffers *b)
{
	return n->type.kind == PR_TYPE_TENSOR && pl_is_constant(n, b) &&
	       pr_spec_on_host(&n->type.tensor);
}

/* The load-time copy moves the bytes as stored, like a per-call copy: a
 * layout the program does not store as is stays on the host, where the
 * per-call path refuses it (propagate-device's E-CONSTANT-LAYOUT) with the
 * same message whether this option is on or off. */
static bool copyable_at_load(const pr_node *n)
{
	return pr_spec_stored_as_is(&n->type.tensor);
}

/* The one device every reader of n runs on, when all are device delegates. */
static bool sole_reader_device(const pr_node *n, pr_device *out)
{
	if (n->n_uses == 0)
		return false;
	for (int i = 0; i < n->n_uses; i++) {
		pr_device d;
		if (!delegate_device(pr_use_user(&n->uses[i]), &d))
			return false;
		if (i > 0 && !pr_device_equal(d, *out))
			return false;
		*out = d;
	}
	return true;
}

static void tag_method(pr_graph *g, bool *changed)
{
	pr_mutable_buffers *buffers = pr_graph_mutable_buffers(g);
	pr_graph_for_each(g, n) {
		pr_device d;
		if (!is_host_constant(n, buffers) || !copyable_at_load(n) ||
		    !sole_reader_device(n, &d))
			continue;
		pr_spec_set_device(&n->type.tensor, d);
		*changed = true;
	}
	pr_mutable_buffers_free(buffers);
}

/* Per method: each method keeps its own device copy of its constants. */
static pr_err *device_constants_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	if (!pr_pass_opt_bool(ctx, PL_OPT_SKIP_CONST, NULL))
		return NULL;
	if (pr_pass_opt_bool(ctx, PL_OPT_SHARE_BUFFERS, NULL)) {
		pr_pass_diag(ctx, PR_SEV_ERROR, "E-SHARED-MUTABLE-BUFFERS", g->name, NULL, -1,
			     "skip_h2d_for_constants cannot be used with share_mutable_buffers: "
			     "each method keeps its own device copy of its constants; "
			     "set one of the two to false for method '%s'", g->name);
		return NULL;
	}
	tag_method(g, changed);
	return NULL;
}

static const pr_pass_info device_constants_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "device-constants",
	.summary = "constants read only by one device's delegates live in its memory, copied once at load (F10)",
	.options = device_constants_options,
	.n_options = sizeof device_constants_options / sizeof device_constants_options[0],
	.run_graph = device_constants_run,
};

static pr_err *device_constants_register(pr_registry *r)
{
	return pr_register_pass(r, &device_constants_pass);
}

PR_PLUGIN("device-constants", "1.0", device_constants_register)
