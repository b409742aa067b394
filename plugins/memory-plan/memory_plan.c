/* memory_plan.c: the memory-plan pass (behaviour.md M1, M2; F10's planning).
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
 * planner.c then gives each class an offset, per arena, with the arena's
 * alignment (`alignment` for the host, `device_alignment` for devices), and
 * every member of a class gets its class's mem=ARENA:OFFSET. Values that get
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
	{ "device_alignment", PR_OPT_INT, "256",
	  "offset alignment in bytes in device arenas (cuda:0, ...); a power of two", PR_SCOPE_PASS, false },
};

typedef struct arena_set {
	int n;
	pr_device devices[64];
} arena_set;

static int arena_of(arena_set *s, pr_device d)
{
	for (int i = 0; i < s->n; i++)
		if (pr_device_equal(s->devices[i], d))
			return i;
	PR_ASSERT(s->n < 64);
	s->devices[s->n] = d;
	return s->n++;
}

static bool wants_memory(const pr_plan_class *c, bool alloc_input, bool alloc_output)
{
	if (!pr_plan_class_plannable(c) || c->bytes < 0)
		return false;
	if (!alloc_input && (c->flags & PR_CLASS_USER_INPUT))
		return false;
	if (!alloc_output && (c->flags & PR_CLASS_OUTPUT))
		return false;
	return true;
}

static pr_err *get_alignment(pr_pass_ctx *ctx, const char *name, int64_t *out)
{
	int64_t a = pr_pass_opt_int(ctx, name, NULL);
	if (a < 1 || a > (1 << 20) || (a & (a - 1)))
		return pr_err_new("memory-plan: option '%s' must be a power of two from 1 to 1048576, got %lld",
				  name, (long long)a);
	*out = a;
	return NULL;
}

/* Plans the classes of one arena; writes the offsets into mem_offset[]. */
static void plan_arena(const pr_lifetimes *lt, const int *arena, int which, int64_t align,
		       int64_t *mem_offset)
{
	int64_t n = 0;
	for (int64_t i = 0; i < lt->n_classes; i++)
		n += arena[i] == which;
	mp_item *items = pr_xmalloc((size_t)(n + 1) * sizeof *items);
	int64_t *ids = pr_xmalloc((size_t)(n + 1) * sizeof *ids);
	n = 0;
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena[i] != which)
			continue;
		const pr_plan_class *c = &lt->classes[i];
		items[n] = (mp_item){ c->start, c->end, c->bytes, 0 };
		ids[n++] = i;
	}
	mp_plan(items, n, lt->n_positions, align);
	for (int64_t k = 0; k < n; k++)
		mem_offset[ids[k]] = items[k].offset;
	free(items);
	free(ids);
}

static bool write_mem(pr_spec *s, bool has, pr_device arena, int64_t offset)
{
	bool same = s->has_mem == has &&
		    (!has || (pr_device_equal(s->mem_arena, arena) && s->mem_offset == offset));
	s->has_mem = has;
	s->mem_arena = has ? arena : pr_device_host();
	s->mem_offset = has ? offset : 0;
	return !same;
}

static pr_err *plan_method(pr_pass_ctx *ctx, pr_graph *g, bool *changed)
{
	int64_t host_align = 16, device_align = 256;
	pr_err *err = get_alignment(ctx, "alignment", &host_align);
	if (!err)
		err = get_alignment(ctx, "device_alignment", &device_align);
	if (err)
		return err;
	bool alloc_input = pr_pass_opt_bool(ctx, "alloc_graph_input", g->name);
	bool alloc_output = pr_pass_opt_bool(ctx, "alloc_graph_output", g->name);
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	int *arena = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena);
	int64_t *offset = pr_xcalloc((size_t)lt->n_classes + 1, sizeof *offset);
	arena_set set = { 0 };
	for (int64_t i = 0; i < lt->n_classes; i++) {
		const pr_plan_class *c = &lt->classes[i];
		arena[i] = wants_memory(c, alloc_input, alloc_output) ? arena_of(&set, c->device) : -1;
	}
	for (int a = 0; a < set.n; a++)
		plan_arena(lt, arena, a, pr_device_is_host(set.devices[a]) ? host_align : device_align, offset);
	for (int64_t v = 0; v < lt->n_values; v++) {
		int64_t c = lt->values[v].cls;
		bool has = arena[c] >= 0;
		if (write_mem(lt->values[v].spec, has, has ? set.devices[arena[c]] : pr_device_host(), offset[c]))
			*changed = true;
	}
	free(arena);
	free(offset);
	pr_lifetimes_free(lt);
	return NULL;
}

static pr_err *memory_plan_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_err *err = plan_method(ctx, p->methods[m], changed);
		if (err)
			return err;
	}
	return NULL;
}

static const pr_pass_info memory_plan_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "memory-plan",
	.summary = "per-device arenas: offsets for every tensor that needs memory, aliases shared (M1, M2)",
	.options = memory_plan_options,
	.n_options = sizeof memory_plan_options / sizeof memory_plan_options[0],
	.run = memory_plan_run,
};

static pr_err *memory_plan_register(pr_registry *r)
{
	return pr_register_pass(r, &memory_plan_pass);
}

PR_PLUGIN_EXPORT const pr_plugin_info *passrun_plugin_info(void)
{
	static const pr_plugin_info info = {
		PR_PLUGIN_ABI_VERSION, sizeof(pr_plugin_info), "memory-plan", "1.0", memory_plan_register,
	};
	return &info;
}
