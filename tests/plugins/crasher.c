/* A pass that crashes on a NULL dereference in method forward (per method,
 * so the crash report can name the method), for the crash handler, the
 * crash reproducer and compare's isolation. */
#include <string.h>

#include "passrun/passrun.h"

/* Not instrumented: under UBSan the store would be reported and the process
 * ended before the signal the crash handler is there to catch. */
__attribute__((no_sanitize("undefined", "address")))
static pr_err *crash(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)ctx, (void)p;
	*changed = false;
	if (strcmp(g->name, "forward"))
		return NULL;
	volatile int *nowhere = NULL;
	*nowhere = 1;
	return NULL;
}

static const pr_pass_info pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "test-crash",
	.summary = "dereferences NULL in method forward",
	.run_graph = crash,
};

static pr_err *reg(pr_registry *r)
{
	return pr_register_pass(r, &pass);
}

PR_PLUGIN("crasher", "1", reg)
