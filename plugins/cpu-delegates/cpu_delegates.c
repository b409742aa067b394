/* cpu_delegates.c: delegates that target the CPU (docs/placement-rules.md F7).
 *
 * A partitioner may set target_device="cpu". The base placement treats that
 * like any device: it copies each input with an _h2d_copy to the CPU and each
 * output with a _d2h_copy from the CPU, copies the runtime refuses (M3). A
 * delegate on the CPU reads and writes host memory directly, exactly like a
 * delegate with no target_device (the shared contract says the same), so
 * this pass, run before propagate-device, marks such delegates as host code:
 * it removes their target_device compile spec (any spelling that parses to
 * the host: "cpu", "CPU", "cpu:0"). Every other compile spec stays, and the
 * delegates then get no copies. */
#include "plugin_common.h"

static bool remove_cpu_target(pr_delegate *d)
{
	pr_device dev;
	if (pl_delegate_where(d, false, &dev) != PL_HOST_CODE)
		return false;
	return pr_delegate_remove_spec(d, "target_device");
}

static pr_err *cpu_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	for (int i = 0; i < p->n_delegates; i++)
		*changed |= remove_cpu_target(p->delegates[i]);
	return NULL;
}

static const char *const cpu_preserves[] = {"host-writes", NULL};

static const pr_pass_info cpu_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "cpu-delegates",
	.summary = "a delegate with target_device=cpu is host code: it gets no copies (F7)",
	.preserves = cpu_preserves,
	.run = cpu_run,
};

static pr_err *cpu_register(pr_registry *r)
{
	return pr_register_pass(r, &cpu_pass);
}

PR_PLUGIN("cpu-delegates", "1.0", cpu_register)
