/* written-inputs: a client of the host-writes analysis that another plugin
 * (host-writes, shipped with passrun) computes, built against the installed
 * <passrun/host_writes.h> only. For each method input it reports how many ops
 * write its storage (directly or through a view) and the first of them:
 * N-INPUT-WRITES, one note each. It runs per method: the manager computes the
 * analysis it requires for the method before calling it. */
#include <passrun/host_writes.h>
#include <passrun/passrun.h>

static const char *const requires_[] = {PR_HOST_WRITES, NULL};
static const char *const preserves_[] = {PR_HOST_WRITES, NULL};

static pr_err *run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	*changed = false;
	const pr_host_writes *hw = pr_pass_analysis(ctx, PR_HOST_WRITES, g);
	if (hw->struct_size < sizeof *hw)
		return pr_err_new("written-inputs: the host-writes analysis is older than this plugin");
	pr_graph_for_each(g, n) {
		if (n->kind != PR_NODE_INPUT)
			continue;
		pr_node *first = pr_host_writer(hw, n);
		pr_pass_diag(ctx, PR_SEV_NOTE, "N-INPUT-WRITES", g->name, n->name, -1,
			     "input %%%s is written by %d op(s)%s%s", n->name, hw->n_writers(hw, n),
			     first ? ", first by %" : "", first && first->name ? first->name : "");
	}
	return NULL;
}

static const pr_pass_info pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "written-inputs",
	.summary = "report how many ops write each method input (host-writes)",
	.requires = requires_,
	.preserves = preserves_,
	.run_graph = run,
};

static pr_err *register_passes(pr_registry *r)
{
	return pr_register_pass(r, &pass);
}

PR_PLUGIN("written-inputs", "1.0", register_passes)
