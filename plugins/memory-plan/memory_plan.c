/* memory_plan.c: the memory-plan pass (docs/placement-rules.md M1, M2; F10's planning).
 *
 * For each method: the core computes the storage classes and their lifetimes
 * (pr_lifetimes_compute: a tensor with its in-place results, views and
 * getitems, live from its first write to its last read; outputs to the end;
 * mutable buffers and device-resident constants for the whole method). Each
 * class that needs memory goes to the arena of its device (`cpu`, `cuda:0`,
 * ...): every class except host constants (they point at the program's data),
 * method inputs when alloc_graph_input is false and method outputs when
 * alloc_graph_output is false (M2: the caller passes those; a class holding
 * both an input and an output is the caller's when either option says so).
 * planner.c (mp_plan_graph) then gives each class an offset, per arena, with the arena's
 * alignment (`alignment` for the host, `device_alignment` for devices; both
 * 16 bytes by default, as ExecuTorch's memory planning: every dtype and
 * 128-bit vector loads are aligned; 256 gives cudaMalloc's alignment at a
 * cost in padding; an arena gets at least the alignment its device type was
 * registered with, device.h, and one of an unregistered type is E-PLAN), and
 * every member of a class gets its class's mem=ARENA:OFFSET. A member whose
 * device is not its base's (the baseline's answer to F2's program) is an
 * E-PLAN error: one memory cannot be in two arenas. Values that get
 * no memory lose any mem= an earlier run wrote, so running the pass twice
 * gives the same plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/passrun.h"
#include "passrun/plan.h"
#include "planner.h"

static const pr_option_decl memory_plan_options[] = {
	{ "alloc_graph_input", PR_OPT_BOOL, "true",
	  "plan memory for method inputs; false: the caller passes them (M2)", PR_SCOPE_PASS, true },
	{ "alloc_graph_output", PR_OPT_BOOL, "true",
	  "plan memory for method outputs; false: the caller passes them (M2)", PR_SCOPE_PASS, true },
	{ "alignment", PR_OPT_INT, "16",
	  "offset alignment in bytes in the host arena (cpu); a power of two", PR_SCOPE_PASS, false },
	{ "device_alignment", PR_OPT_INT, "16",
	  "offset alignment in bytes in device arenas (cuda:0, ...); a power of two", PR_SCOPE_PASS, false },
};

static pr_err *get_alignment(pr_pass_ctx *ctx, const char *name, int64_t *out)
{
	int64_t a = pr_pass_opt_int(ctx, name, NULL);
	if (a < 1 || a > (1 << 20) || (a & (a - 1)))
		return pr_err_new("memory-plan: option '%s' must be a power of two from 1 to 1048576, got %lld",
				  name, (long long)a);
	*out = a;
	return NULL;
}

/* A member of a class on another device than its base (an in-place result
 * or a view said to be on cuda:0 of a host tensor: what the baseline makes
 * of F2's program) would need one memory in two arenas: the plan cannot be
 * right, so say which tensors disagree. Each is planned with its base. */
static void report_split_classes(pr_pass_ctx *ctx, pr_graph *g, const pr_lifetimes *lt)
{
	if (!lt->n_split)
		return;   /* none: no walk over the values (11 ms at 10^6) */
	for (int64_t i = 0; i < lt->n_values; i++) {
		const pr_plan_value *v = &lt->values[i];
		const pr_plan_class *c = &lt->classes[v->cls];
		if (pr_plan_value_is_base(lt, v, c))
			continue;   /* the class's device is its base's */
		const pr_spec *s = pr_plan_value_spec(v);
		pr_device d = pr_spec_device(s), cd = pr_plan_class_device(lt, c);
		if (pr_device_equal(d, cd))
			continue;
		char name[128], base[128], dv[PR_DEVICE_STR_MAX], dc[PR_DEVICE_STR_MAX];
		pr_plan_value_name(v->node, v->elem, name, sizeof name);
		const pr_plan_value *b = pr_plan_class_base(lt, c);
		pr_plan_value_name(b->node, b->elem, base, sizeof base);
		pr_pass_diag(ctx, PR_SEV_ERROR, "E-PLAN", g->name, name, pr_spec_storage_bytes(s),
			     "%%%s is on %s but shares the memory of %%%s (it is an in-place result or a view of it), which is on %s: "
			     "one memory cannot be in two arenas",
			     name, pr_device_str(d, dv), base, pr_device_str(cd, dc));
	}
}

static pr_err *plan_method(pr_pass_ctx *ctx, pr_graph *g, bool *changed)
{
	mp_graph_options o;
	pr_err *err = get_alignment(ctx, "alignment", &o.host_alignment);
	if (!err)
		err = get_alignment(ctx, "device_alignment", &o.device_alignment);
	if (err)
		return err;
	o.alloc_graph_input = pr_pass_opt_bool(ctx, "alloc_graph_input", g->name);
	o.alloc_graph_output = pr_pass_opt_bool(ctx, "alloc_graph_output", g->name);
	/* The pass reads no analysis and keeps none (it rewrites every planned
	 * spec): what the cache holds of g goes before the plan takes its
	 * memory, not after (host-writes, left by per-call-copies, was 7 MB of
	 * the 10^6 peak). */
	pr_pass_invalidate(ctx, g);
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	report_split_classes(ctx, g, lt);
	mp_arena_report reps[MP_MAX_ARENAS];
	int n_reps = 0;
	if (mp_plan_lifetimes(g, lt, &o, reps, MP_MAX_ARENAS, &n_reps))
		*changed = true;
	for (int a = 0; a < n_reps; a++) {
		char dev[PR_DEVICE_STR_MAX], types[PR_DEVICE_TYPES_STR_MAX];
		if (reps[a].unknown_type)
			pr_pass_diag(ctx, PR_SEV_ERROR, "E-PLAN", g->name, NULL, -1,
				     "the %lld tensors of arena %s are on a device of type '%s', which is "
				     "not registered (registered: %s; a plugin registers its own), so "
				     "none of them is planned", (long long)reps[a].n_items,
				     pr_device_str(reps[a].arena, dev), reps[a].arena.type,
				     pr_device_types_str(types));
		if (reps[a].too_big)
			pr_pass_diag(ctx, PR_SEV_ERROR, "E-PLAN", g->name, NULL, -1,
				     "the %lld tensors of arena %s need more than %lld bytes together "
				     "(sizes rounded up to the alignment): no plan with 64-bit offsets "
				     "is sure to fit, so none of them is planned",
				     (long long)reps[a].n_items, pr_device_str(reps[a].arena, dev),
				     (long long)INT64_MAX);
	}
	pr_lifetimes_free(lt);
	return NULL;
}

/* Per method: each method has its own arenas. */
static pr_err *memory_plan_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	return plan_method(ctx, g, changed);
}

static const pr_pass_info memory_plan_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "memory-plan",
	.summary = "per-device arenas: offsets for every tensor that needs memory, aliases shared (M1, M2)",
	.options = memory_plan_options,
	.n_options = sizeof memory_plan_options / sizeof memory_plan_options[0],
	.run_graph = memory_plan_run,
};

static pr_err *memory_plan_register(pr_registry *r)
{
	return pr_register_pass(r, &memory_plan_pass);
}

PR_PLUGIN("memory-plan", "1.0", memory_plan_register)
