/* per_call_copies.c: copies that run on every call (docs/placement-rules.md F4-F6, F9).
 *
 * With the skip flags a user expects no copy at the method's edges, yet three
 * kinds of copy stay and run on every call. This pass runs last among the
 * placement passes, after copy-reuse, and reports each copy that is left
 * exactly once, with its own code and message, flagged PR_DIAG_PER_CALL_COPY
 * (diag.h) so that a picture outlines the copy without knowing the codes:
 *
 *   constant  an _h2d_copy of a constant (F5): "Constant 'w' ...".
 *             W-CONSTANT-COPY; E-CONSTANT-COPY with error_on_per_call_copies
 *             when skip_h2d_for_method_inputs is set (without it every input
 *             is copied anyway).
 *   input     a _d2h_copy of a method input kept on the device (F6):
 *             "Method input 'x' ...", naming one reader off the device,
 *             saying when the copy goes on to another device and when
 *             skip_d2h_for_method_outputs would remove it (the method returns
 *             the input). W-INPUT-COPY; E-INPUT-COPY with the error flag
 *             (the copy only exists under skip_h2d_for_method_inputs).
 *   output    with skip_d2h_for_method_outputs, a returned delegate output
 *             that an op writes in place on the host, returned from the host
 *             (F4): "Method output N ('r') ...", naming the writer and saying
 *             that a caller passing its own output buffers must pass a host
 *             buffer. W-OUTPUT-ON-HOST; E-OUTPUT-ON-HOST with the error flag.
 *
 * F9: error_on_per_call_copies turns each report into an error under the
 * conditions above. Set without either skip flag it can never fire, and the
 * pass says so (W-POLICY-NO-EFFECT) instead of staying silent. Without this
 * pass, nothing reports copies that run on every call.
 *
 * A report builds the pieces of its message (reader descriptions, device
 * names) only when pr_pass_diag_wanted says the message is kept: a large
 * program has hundreds of thousands of such copies, and building pieces
 * nobody reads would cost more than finding the copies. */
#include <inttypes.h>
#include <stdio.h>

#include "host_writes.h"
#include "plugin_common.h"

#define OPT_ERROR_COPIES "error_on_per_call_copies"

static const pr_option_decl per_call_options[] = {
	PL_DECL_SKIP_H2D,
	PL_DECL_SKIP_D2H,
	PL_DECL_SKIP_CONST,
	{ OPT_ERROR_COPIES, PR_OPT_BOOL, "false",
	  "copies that run on every call although a skip flag asked for none are errors (F9)",
	  PR_SCOPE_PIPELINE, true },
};

static const char *const per_call_requires[] = {PR_HOST_WRITES, NULL};

typedef struct flags {
	bool skip_h2d, skip_d2h, skip_const, error;
	pr_mutable_buffers *buffers;   /* the method's mutable buffers */
} flags;

#define RAISED " (an error because error_on_per_call_copies is set)"

static void report_constant(pr_pass_ctx *ctx, pr_graph *g, const flags *f, pr_node *h)
{
	pr_node *c = pl_copy_src(h);
	bool err = f->error && f->skip_h2d;
	pr_severity sev = err ? PR_SEV_ERROR : PR_SEV_WARNING;
	const char *code = err ? "E-CONSTANT-COPY" : "W-CONSTANT-COPY";
	char ds[PR_DEVICE_STR_MAX] = "", r[160] = "no reader";
	const char *kind = "";
	if (pr_pass_diag_wanted(ctx, sev, code)) {
		if (h->n_uses)
			pl_describe_use(pl_first_use(h), r, sizeof r);
		pr_device_str(pr_spec_device(&h->type.tensor), ds);
		kind = pl_input_kind_word(c, f->buffers);   /* a buffer's is a set lookup */
	}
	int64_t bytes = pl_bytes(c);
	pr_pass_diag(ctx, sev, code, g->name, c->name, bytes,
		     "Constant '%s' (%s %%%s, %" PRId64 " bytes) is copied to %s on every call "
		     "(%%%s, read by %s): its data is stored on the host, and "
		     "skip_h2d_for_method_inputs does not apply to constants%s%s",
		     pl_input_name(c), kind, c->name, bytes, ds, h->name, r,
		     f->skip_const ? "" : "; skip_h2d_for_constants keeps a constant that only one "
					   "device's delegates read in device memory",
		     err ? RAISED : "");
	pr_pass_diag_flag(ctx, PR_DIAG_PER_CALL_COPY);
}

/* The first reader of input v on its device (a delegate there), for messages. */
static const pr_use *device_reader(const pr_node *v)
{
	const pr_use *first = NULL;
	for (int i = 0; i < v->n_uses; i++) {
		pr_device d;
		if (pl_call_device(pr_use_user(&v->uses[i]), false, &d) &&
		    pr_device_equal(d, pr_spec_device(&v->type.tensor)) &&
		    (!first || pr_node_before(pr_use_user(&v->uses[i]), pr_use_user(first))))
			first = &v->uses[i];
	}
	return first;
}

static void input_extras(const pr_node *c, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < c->n_uses && at < len; i++) {
		const pr_node *u = pr_use_user(&c->uses[i]);
		if (pl_is_h2d(u)) {
			char ds[PR_DEVICE_STR_MAX], r[160] = "a delegate";
			if (u->n_uses)
				pl_describe_use(pl_first_use(u), r, sizeof r);
			at += (size_t)snprintf(buf + at, len - at, ", and on to %s for %s (%%%s)",
					       pr_device_str(pr_spec_device(&u->type.tensor), ds), r, u->name);
		}
	}
	for (int i = 0; i < c->n_uses && at < len; i++)
		if (pl_use_is_output(&c->uses[i])) {
			snprintf(buf + at, len - at, "; the method returns it: "
				 "skip_d2h_for_method_outputs removes that copy");
			break;
		}
}

/* The readers report_input names: onr on the device, offr off it, and extra,
 * where the copy goes on to and whether the method returns it. */
static void input_readers(const pr_node *v, const pr_node *c, char onr[160], char offr[160],
			  char extra[512])
{
	const pr_use *on = device_reader(v), *off = pl_first_use(c);
	if (on)
		pl_describe_use(on, onr, 160);
	const pr_node *copy = off ? pr_use_user(off) : NULL;
	if (copy && pl_is_h2d(copy) && copy->n_uses)
		off = pl_first_use(copy);   /* the delegate on another device, not its copy */
	if (off)
		pl_describe_use(off, offr, 160);
	input_extras(c, extra, 512);
}

static void report_input(pr_pass_ctx *ctx, pr_graph *g, const flags *f, pr_node *c)
{
	pr_node *v = pl_copy_src(c);
	pr_severity sev = f->error ? PR_SEV_ERROR : PR_SEV_WARNING;
	const char *code = f->error ? "E-INPUT-COPY" : "W-INPUT-COPY";
	char ds[PR_DEVICE_STR_MAX] = "", onr[160] = "a delegate", offr[160] = "a reader";
	char extra[512] = "";
	if (pr_pass_diag_wanted(ctx, sev, code)) {
		input_readers(v, c, onr, offr, extra);
		pr_device_str(pr_spec_device(&v->type.tensor), ds);
	}
	int64_t bytes = pl_bytes(v);
	pr_pass_diag(ctx, sev, code, g->name, v->name, bytes,
		     "Method input '%s' (%s%%%s, %" PRId64 " bytes) stays on %s for %s, but %s "
		     "reads it off the device: it is copied to the host on every call (%%%s)%s%s",
		     pl_input_name(v), v->of_kind.input->kind == PR_INPUT_USER ? "" : "mutable buffer ",
		     v->name,
		     bytes, ds, onr, offr, c->name, extra, f->error ? RAISED : "");
	pr_pass_diag_flag(ctx, PR_DIAG_PER_CALL_COPY);
}

/* The host copy of a device delegate's result that returned value v is
 * (or views), when an op writes it on the host; *writer gets that op. */
static pr_node *written_output_copy(const pr_host_writes *hw, pr_node *v, pr_node **writer)
{
	pr_node *root = pl_alias_root(v);
	if (!pl_is_d2h(root))
		return NULL;
	pr_node *x = pl_copy_src(root);
	if (!x || (x->kind != PR_NODE_GETITEM && x->kind != PR_NODE_DELEGATE) ||
	    !pr_node_spec(x) || pr_spec_on_host(pr_node_spec(x)))
		return NULL;
	*writer = pr_host_writer(hw, root);
	return *writer ? root : NULL;
}

static void report_output(pr_pass_ctx *ctx, pr_graph *g, const flags *f, int slot, pr_node *v,
			  pr_node *copy, pr_node *writer)
{
	pr_severity sev = f->error ? PR_SEV_ERROR : PR_SEV_WARNING;
	const char *code = f->error ? "E-OUTPUT-ON-HOST" : "W-OUTPUT-ON-HOST";
	pr_node *x = pl_copy_src(copy);
	char ds[PR_DEVICE_STR_MAX] = "", w[160] = "";
	if (pr_pass_diag_wanted(ctx, sev, code)) {
		pl_describe_node(writer, w, sizeof w);
		pr_device_str(pr_spec_device(pr_node_spec(x)), ds);
	}
	const char *out_name = v == copy ? x->name : v->name;   /* the user's tensor */
	int64_t bytes = pl_bytes(v);
	pr_pass_diag(ctx, sev, code, g->name, v->name, bytes,
		     "Method output %d ('%s', %" PRId64 " bytes) comes from %s, but %s writes it "
		     "in place on the host after its copy (%%%s): it is returned from host "
		     "memory, copied from the device on every call, and the method's metadata "
		     "says so; a caller who passes its own output buffers must pass a host "
		     "buffer for it; move that op into the delegate to keep the output on the "
		     "device%s",
		     slot, out_name, bytes, ds, w, copy->name, f->error ? RAISED : "");
	pr_pass_diag_flag(ctx, PR_DIAG_PER_CALL_COPY);
}

static void report_outputs(pr_pass_ctx *ctx, pr_graph *g, const flags *f,
			   const pr_host_writes *hw)
{
	pr_node *ret = pr_graph_return(g);
	for (int i = 0; ret && i < ret->n_args; i++) {
		pr_arg *a = &ret->args[i];
		if (a->kind != PR_ARG_VALUE || !a->u.value ||
		    (ret->of_kind.writebacks && ret->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE))
			continue;
		pr_node *v = a->u.value, *writer = NULL;
		pr_node *copy = written_output_copy(hw, v, &writer);
		if (copy)
			report_output(ctx, g, f, i, v, copy, writer);
	}
}

static void report_method(pr_pass_ctx *ctx, pr_graph *g, const flags *f)
{
	const pr_host_writes *hw = pr_pass_analysis(ctx, PR_HOST_WRITES, g);
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		pr_node *src = pl_is_copy(n) ? pl_copy_src(n) : NULL;
		if (!src)
			continue;
		if (pl_is_h2d(n) && pl_is_constant(src, f->buffers))
			report_constant(ctx, g, f, n);
		else if (pl_is_d2h(n) && pl_is_method_input(src, f->buffers) &&
			 !pr_spec_on_host(&src->type.tensor))
			report_input(ctx, g, f, n);
	}
	if (f->skip_d2h)
		report_outputs(ctx, g, f, hw);
}

/* Per method: the flags and the copies are the method's. */
static pr_err *per_call_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	(void)changed;
	flags f = {
		.skip_h2d = pr_pass_opt_bool(ctx, PL_OPT_SKIP_H2D, NULL),
		.skip_d2h = pr_pass_opt_bool(ctx, PL_OPT_SKIP_D2H, NULL),
		.skip_const = pr_pass_opt_bool(ctx, PL_OPT_SKIP_CONST, NULL),
		.error = pr_pass_opt_bool(ctx, OPT_ERROR_COPIES, NULL),
	};
	if (f.error && !f.skip_h2d && !f.skip_d2h)
		pr_pass_diag(ctx, PR_SEV_WARNING, "W-POLICY-NO-EFFECT", g->name, NULL, -1,
			     "error_on_per_call_copies is set for method '%s' but neither "
			     "skip_h2d_for_method_inputs nor skip_d2h_for_method_outputs is: "
			     "every input and output is copied anyway, so it can never fire",
			     g->name);
	f.buffers = pr_graph_mutable_buffers(g);
	report_method(ctx, g, &f);
	pr_mutable_buffers_free(f.buffers);
	return NULL;
}

static const pr_pass_info per_call_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "per-call-copies",
	.summary = "reports each copy that runs on every call; error_on_per_call_copies makes them errors (F4-F6, F9)",
	.options = per_call_options,
	.n_options = sizeof per_call_options / sizeof per_call_options[0],
	.requires = per_call_requires,
	.run_graph = per_call_run,
};

static pr_err *per_call_register(pr_registry *r)
{
	return pr_register_pass(r, &per_call_pass);
}

PR_PLUGIN("per-call-copies", "1.0", per_call_register)
