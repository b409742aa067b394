/* dce.c: dead-code elimination, the demonstration plugin of the pass API.
 *
 * An op node is dead when nothing reads its value (its use list is empty; the
 * method's return node is a reader, so returned values and write-backs are
 * live) and running it has no effect anyone could see:
 *
 *   - it writes none of its arguments (no Tensor(a!) in its schema): an
 *     in-place op changes a tensor others may read, through views too;
 *   - it is not a copy (schema trait h2d or d2h): copies are the placement
 *     passes' business and the runtime counts them;
 *   - it returns something: an op declared `-> ()` exists for its effect.
 *
 * A getitem nobody reads is dead too. Delegate calls are always kept: a
 * delegate is compiled code whose effects the program does not describe, and
 * placement passes attach copies to it. Placeholders (inputs) are kept, since
 * they are the method's signature, and delegate bodies are not touched (they
 * are compiled for a backend).
 *
 * The walk goes backwards in graph order, so removing a reader can make its
 * arguments dead in the same walk: a chain of dead ops goes in one pass, in
 * time linear in the size of the method. With `report: true` each removed
 * node gets a note (N-DCE-REMOVED). */
#include <string.h>

#include "passrun/passrun.h"

static const pr_option_decl dce_options[] = {
	{"report", PR_OPT_BOOL, "false", "add a note for each node removed", PR_SCOPE_PASS, false},
};

static bool writes_an_argument(const pr_schema *s)
{
	for (int i = 0; i < s->n_args; i++)
		if (pr_schema_arg_writes(s, i))
			return true;
	return false;
}

static bool is_dead(const pr_node *n)
{
	if (n->n_uses > 0)
		return false;
	if (n->kind == PR_NODE_GETITEM)
		return true;
	if (n->kind != PR_NODE_OP || !n->of_kind.schema)
		return false;
	const pr_schema *s = n->of_kind.schema;
	return s->n_returns > 0 && !s->h2d && !s->d2h && !writes_an_argument(s);
}

static int64_t dce_graph(pr_pass_ctx *ctx, pr_graph *g, bool report)
{
	int64_t removed = 0;
	for (pr_node *n = g->last, *prev; n; n = prev) {
		prev = n->prev;
		if (!is_dead(n))
			continue;
		if (report) {
			pr_spec *s = pr_node_spec(n);
			pr_pass_diag(ctx, PR_SEV_NOTE, "N-DCE-REMOVED", g->name, n->name,
				     s ? pr_spec_nbytes(s) : -1, "removed '%s': nothing reads it "
				     "and it writes nothing", n->name ? n->name : "?");
		}
		pr_graph_erase(n);
		removed++;
	}
	return removed;
}

/* Per method: a method's dead nodes are its own. */
static pr_err *dce_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	*changed = dce_graph(ctx, g, pr_pass_opt_bool(ctx, "report", NULL)) > 0;
	return NULL;
}

static const pr_pass_info dce_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "dce",
	.summary = "removes ops nobody reads that write nothing and are not copies",
	.options = dce_options,
	.n_options = sizeof dce_options / sizeof dce_options[0],
	.run_graph = dce_run,
};

static pr_err *dce_register(pr_registry *r)
{
	return pr_register_pass(r, &dce_pass);
}

PR_PLUGIN("dce", "1.0", dce_register)
