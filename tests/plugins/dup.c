/* Built twice (dup-a, dup-b): both register a pass named 'test-dup', which
 * the loader must refuse, naming both plugins. */
#include "passrun/passrun.h"

#ifndef DUP_PLUGIN_NAME
#error "build with -DDUP_PLUGIN_NAME=..."
#endif

static pr_err *nothing(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	*changed = false;
	return NULL;
}

static const pr_pass_info pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "test-dup",
	.summary = "registered by two plugins",
	.run = nothing,
};

static pr_err *reg(pr_registry *r)
{
	return pr_register_pass(r, &pass);
}

PR_PLUGIN(DUP_PLUGIN_NAME, "1", reg)
