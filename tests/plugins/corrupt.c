/* Passes that break the program in ways a plugin author's bug would, for the
 * verifier that passrun runs by default: a wrong use list, an edited shape,
 * a device edit after placement; and one that edits the program while
 * reporting no change (--verify-each names it). Each acts on method
 * forward's nodes %x, %y and %a (an op reading %x and %y, written in place by
 * a later op). */
#include <string.h>

#include "passrun/passrun.h"

static pr_node *forward_node(pr_program *p, const char *name)
{
	pr_graph *g = pr_program_find_method(p, "forward");
	return g ? pr_graph_find(g, name) : NULL;
}

/* %a's first argument reads %y, but %x's use list still says %a reads it. */
static pr_err *bad_uses(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_node *a = forward_node(p, "a"), *y = forward_node(p, "y");
	if (!a || !y || a->n_args < 1)
		return pr_err_new("needs forward's %%a and %%y");
	a->args[0].u.value = y;
	*changed = true;
	return NULL;
}

/* %a gets another shape, so an in-place op writing %a no longer has its
 * spec. */
static pr_err *bad_shape(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_node *a = forward_node(p, "a");
	pr_spec *s = a ? pr_node_spec(a) : NULL;
	if (!s)
		return pr_err_new("needs forward's %%a");
	int64_t shape[PR_MAX_RANK];
	memcpy(shape, s->shape, sizeof shape[0] * (size_t)s->rank);
	shape[0] += 5;
	pr_spec_set_layout(s, s->rank, shape, pr_spec_strides(s));
	*changed = true;
	return NULL;
}

/* After placement, %x moves to cuda:0 with no copy in front of its host
 * readers. */
static pr_err *bad_device(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_node *x = forward_node(p, "x");
	if (!x || !pr_node_spec(x))
		return pr_err_new("needs forward's %%x");
	pr_device cuda0;
	pr_device_parse("cuda:0", 6, &cuda0);
	pr_spec_set_device(pr_node_spec(x), cuda0);
	*changed = true;
	return NULL;
}

/* A valid edit (a rename) reported as no change. */
static pr_err *hide_change(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_node *a = forward_node(p, "a");
	if (!a)
		return pr_err_new("needs forward's %%a");
	*changed = false;
	return pr_node_rename(a, "a_renamed");
}

#define PASS(nm, fn, sum) {.struct_size = sizeof(pr_pass_info), .name = nm, .summary = sum, .run = fn}

static const pr_pass_info passes[] = {
	PASS("test-bad-uses", bad_uses, "leaves a wrong use list"),
	PASS("test-bad-shape", bad_shape, "edits a shape"),
	PASS("test-bad-device", bad_device, "moves an input to cuda:0 without a copy"),
	PASS("test-hide-change", hide_change, "renames a node, reports no change"),
};

static pr_err *reg(pr_registry *r)
{
	for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
		pr_err *e = pr_register_pass(r, &passes[i]);
		if (e)
			return e;
	}
	return NULL;
}

PR_PLUGIN("corrupt", "1", reg)
