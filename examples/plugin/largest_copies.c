/* largest-copies: reports the copies that move the most bytes per call.
 *
 * A researcher's first question after placement is "where do my bytes go?".
 * This pass looks at every copy node (an op whose schema carries the h2d or
 * d2h trait), sorts them by the bytes they move on each call, and reports the
 * `top` largest as notes (code N-LARGEST-COPY) naming the copy, the tensor it
 * reads, the direction and the device. It changes nothing.
 *
 * It is also the walk-through of docs/plugin-guide.md: one entry point, one
 * pass with an option, diagnostics, no access to other plugins. */
#include <passrun/passrun.h>

#include <stdlib.h>

typedef struct copy_ref {
	pr_node *node;
	int64_t bytes;
} copy_ref;

static int by_bytes_desc(const void *a, const void *b)
{
	const copy_ref *x = a, *y = b;
	return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

static bool is_copy(const pr_node *n)
{
	const pr_schema *s = pr_node_schema(n);
	return s && (s->h2d || s->d2h);
}

static void report_method(pr_pass_ctx *ctx, pr_graph *g, int64_t top)
{
	int64_t n = 0;
	pr_graph_for_each(g, node) n += is_copy(node);
	if (n == 0)
		return;
	copy_ref *refs = pr_xmalloc((size_t)n * sizeof *refs);
	int64_t i = 0;
	pr_graph_for_each(g, node) {
		if (is_copy(node))
			refs[i++] = (copy_ref){node, pr_spec_nbytes(pr_node_spec(node))};
	}
	qsort(refs, (size_t)n, sizeof *refs, by_bytes_desc);
	for (i = 0; i < n && i < top; i++) {
		pr_node *c = refs[i].node;
		pr_node *src = c->n_args > 0 && c->args[0].kind == PR_ARG_VALUE ? c->args[0].u.value : NULL;
		char dev[PR_DEVICE_STR_MAX];
		bool h2d = c->of_kind.schema->h2d;   /* a copy: an op */
		pr_device where = h2d ? pr_spec_device(pr_node_spec(c)) : pr_spec_device(pr_node_spec(src));
		pr_pass_diag(ctx, PR_SEV_NOTE, "N-LARGEST-COPY", g->name, c->name, refs[i].bytes,
			     "#%lld: copy %%%s moves %lld bytes per call %s %s, reading %%%s",
			     (long long)i + 1, c->name, (long long)refs[i].bytes,
			     h2d ? "to" : "from", pr_device_str(where, dev),
			     src && src->name ? src->name : "?");
	}
	free(refs);
}

static pr_err *run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	*changed = false;
	for (int m = 0; m < p->n_methods; m++) {
		int64_t top = pr_pass_opt_int(ctx, "top", p->methods[m]->name);
		if (top < 0)
			return pr_err_new("largest-copies: option top must be >= 0, not %lld", (long long)top);
		report_method(ctx, p->methods[m], top);
	}
	return NULL;
}

static const pr_option_decl options[] = {
	{.name = "top", .type = PR_OPT_INT, .default_value = "3",
	 .help = "how many of the largest copies to report per method", .scope = PR_SCOPE_PASS},
};

static const pr_pass_info pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "largest-copies",
	.summary = "report the copies that move the most bytes per call",
	.options = options,
	.n_options = sizeof options / sizeof options[0],
	.run = run,
};

static pr_err *register_passes(pr_registry *r)
{
	return pr_register_pass(r, &pass);
}

PR_PLUGIN("largest-copies", "1.0", register_passes)
