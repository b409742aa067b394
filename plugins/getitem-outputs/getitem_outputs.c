/* getitem_outputs.c: delegate results read with no getitem (docs/placement-rules.md F3).
 *
 * A delegate call that returns one tensor (not a tuple) has no getitem after
 * it. The base placement copies results to the host only after getitems, so
 * such a result got no _d2h_copy: a host op read device memory, and a
 * delegate on another device got an _h2d_copy whose source is on a device.
 * This pass runs before propagate-device and gives each such call on a
 * device (target_device=cpu included, as the base placement sees it) the
 * getitem it lacks: the call returns a one-element tuple and a getitem
 * takes over the result's name and readers. The base placement then copies
 * it like any getitem (B3), and B4 and F2 apply to its round-trips. The
 * program is unchanged otherwise and still unplaced, so it verifies. */
#include <stdlib.h>

#include "plugin_common.h"

static pr_err *add_getitem(pr_node *call, bool *changed)
{
	char *old = pr_xstrdup(call->name);
	char *base = pr_xasprintf("%s_call", old);
	char *fresh = pr_graph_fresh_name(call->graph, base);
	pr_err *e = pr_node_rename(call, fresh);
	free(base);
	free(fresh);
	if (e) {
		free(old);
		return e;
	}
	pr_node *gi = pr_node_new(PR_NODE_GETITEM, old);
	free(old);
	gi->type = call->type;           /* the tensor spec */
	gi->of_kind.index = 0;
	pr_spec *elem = pr_xmalloc(sizeof *elem);
	*elem = gi->type.tensor;
	pr_node_set_tuple(call, elem, 1, PR_STORAGE_OWNED);
	e = pr_graph_insert_after(call, gi);
	if (e)
		return e;
	pr_node_replace_all_uses(call, gi);
	pr_arg *a = pr_xcalloc(1, sizeof *a);
	a->kind = PR_ARG_VALUE;
	a->u.value = call;
	pr_node_set_args(gi, a, 1);
	*changed = true;
	return NULL;
}

/* Per method: each call of the method gets its own getitem. */
static pr_err *getitem_outputs_run(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)ctx;
	(void)p;
	pl_nodes calls = {0};
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		/* the kind first: it lies in the line the walk reads anyway */
		if (n->kind == PR_NODE_DELEGATE && n->type.kind == PR_TYPE_TENSOR && n->name &&
		    pl_call_device(n, true, NULL))
			pl_nodes_push(&calls, n);
	}
	pr_err *e = NULL;
	for (int i = 0; i < calls.n && !e; i++)
		e = add_getitem(calls.items[i], changed);
	pl_nodes_free(&calls);
	return e;
}

static const pr_pass_info getitem_outputs_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "getitem-outputs",
	.summary = "a delegate returning one tensor gets a getitem, so its result gets a _d2h_copy like any other (F3)",
	.run_graph = getitem_outputs_run,
};

static pr_err *getitem_outputs_register(pr_registry *r)
{
	return pr_register_pass(r, &getitem_outputs_pass);
}

PR_PLUGIN("getitem-outputs", "1.0", getitem_outputs_register)
