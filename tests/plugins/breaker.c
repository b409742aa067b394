/* A pass that breaks the program on purpose, for --verify-each: it puts
 * every user input of every method on cuda:0 without any copy, so a host op
 * that reads one reads device memory (E-PLACEMENT). */
#include "passrun/passrun.h"

static pr_err *break_inputs(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_device cuda0;
	pr_device_parse("cuda:0", 6, &cuda0);
	for (int i = 0; i < p->n_methods; i++) {
		pr_graph_for_each(p->methods[i], n) {
			pr_spec *s = pr_node_spec(n);
			if (n->kind == PR_NODE_INPUT && n->of_kind.input->kind == PR_INPUT_USER && s) {
				pr_spec_set_device(s, cuda0);
				*changed = true;
			}
		}
	}
	return NULL;
}

static const pr_pass_info pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "test-break",
	.summary = "moves user inputs to cuda:0 without copies (breaks placement)",
	.run = break_inputs,
};

static pr_err *reg(pr_registry *r)
{
	return pr_register_pass(r, &pass);
}

PR_PLUGIN("breaker", "1", reg)
