/* cpu_delegates.c: delegates that target the CPU (behaviour.md F7).
 *
 * A partitioner may set target_device="cpu". The base placement treats that
 * like any device: it copies each input with an _h2d_copy to the CPU and each
 * output with a _d2h_copy from the CPU, copies the runtime refuses (M3). A
 * delegate on the CPU reads and writes host memory directly, like one with no
 * target_device, so this pass removes every _h2d_copy whose destination is
 * the host and every _d2h_copy whose source is on the host: their readers
 * read the tensor itself. A copy is recognised by its schema trait only. */
#include "propagate-device/placement.h"

static const char *const cpu_preserves[] = {"host-writes", NULL};

static bool host_to_host(const pr_node *n)
{
	if (pl_is_h2d(n))
		return pr_device_is_host(n->type.tensor.device);
	if (pl_is_d2h(n)) {
		pr_node *src = pl_copy_src(n);
		return src && pr_node_spec(src) && pr_device_is_host(pr_node_spec(src)->device);
	}
	return false;
}

static pr_err *cpu_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	for (int m = 0; m < p->n_methods; m++) {
		pl_nodes copies = {0};
		pr_graph_for_each(p->methods[m], n)
			if (host_to_host(n))
				pl_nodes_push(&copies, n);
		for (int i = 0; i < copies.n; i++) {
			pr_node *c = copies.items[i];
			if (c->n_uses)
				pr_node_replace_all_uses(c, pl_copy_src(c));
		}
		pl_erase_unused(&copies);
		*changed |= copies.n > 0;
		pl_nodes_free(&copies);
	}
	return NULL;
}

static const pr_pass_info cpu_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "cpu-delegates",
	.summary = "a delegate with target_device=cpu runs on the host: its copies go (F7)",
	.preserves = cpu_preserves,
	.run = cpu_run,
};

static pr_err *cpu_register(pr_registry *r)
{
	return pr_register_pass(r, &cpu_pass);
}

PL_PLUGIN("cpu-delegates", cpu_register)
