/* The well-behaved test plugin: a no-op pass (the benchmark's empty pass),
 * a pass that echoes its options as notes, an analysis that counts its own
 * computations (to observe caching and invalidation), passes that change the
 * program with and without preserving it, and passes that warn, report an
 * error diagnostic, or fail. */
#include <stdlib.h>

#include "passrun/passrun.h"

static int64_t computations;   /* how often test-node-count was computed */

static pr_err *noop(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	*changed = false;
	return NULL;
}

/* ---- test-opts: echoes every option it reads, per method ---------------- */

static const pr_option_decl opts_decl[] = {
	{"flag", PR_OPT_BOOL, "false", "a bool", PR_SCOPE_PASS, false},
	{"count", PR_OPT_INT, "3", "an int", PR_SCOPE_PASS, false},
	{"ratio", PR_OPT_FLOAT, "0.5", "a float", PR_SCOPE_PASS, false},
	{"label", PR_OPT_STRING, "x", "a string", PR_SCOPE_PASS, false},
	{"test_level", PR_OPT_INT, "0", "a pipeline option, per method", PR_SCOPE_PIPELINE, true},
	{"test_mode", PR_OPT_STRING, "a", "a pipeline option", PR_SCOPE_PIPELINE, false},
};

static pr_err *echo_opts(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	*changed = false;
	for (int i = 0; i < p->n_methods; i++) {
		const char *m = p->methods[i]->name;
		pr_pass_diag(ctx, PR_SEV_NOTE, "N-TEST-OPTS", m, NULL, -1,
			     "flag=%d count=%lld ratio=%g label=%s level=%lld mode=%s",
			     pr_pass_opt_bool(ctx, "flag", m), (long long)pr_pass_opt_int(ctx, "count", m),
			     pr_pass_opt_float(ctx, "ratio", m), pr_pass_opt_string(ctx, "label", m),
			     (long long)pr_pass_opt_int(ctx, "test_level", m),
			     pr_pass_opt_string(ctx, "test_mode", m));
	}
	return NULL;
}

/* ---- the analysis and the passes that use it ------------------------------ */

static void *count_nodes(pr_pass_ctx *ctx, pr_graph *g)
{
	(void)ctx;
	int64_t *n = malloc(sizeof *n);
	*n = g->n_nodes;
	computations++;
	return n;
}

static const char *const needs_count[] = {"test-node-count", NULL};

/* Per method (run_graph): the manager computes the analysis it requires
 * just before each call. */
static pr_err *use_count(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	*changed = false;
	int64_t *a = pr_pass_analysis(ctx, "test-node-count", g);
	int64_t *b = pr_pass_analysis(ctx, "test-node-count", g);
	pr_pass_diag(ctx, PR_SEV_NOTE, "N-TEST-COUNT", g->name, NULL, -1,
		     "nodes=%lld computed=%lld same=%d", (long long)*a,
		     (long long)computations, a == b);
	return NULL;
}

static pr_err *touch(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	*changed = true;
	return NULL;
}

static pr_err *warn(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	*changed = false;
	pr_pass_diag(ctx, PR_SEV_WARNING, "W-TEST", p->n_methods ? p->methods[0]->name : NULL,
		     "x", 24, "a test warning about \"x\"\twith a tab");
	return NULL;
}

static pr_err *error_diag(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	*changed = false;
	pr_pass_diag(ctx, PR_SEV_ERROR, "E-TEST", p->n_methods ? p->methods[0]->name : NULL,
		     NULL, -1, "a test error");
	return NULL;
}

static pr_err *fail(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	*changed = true;
	return pr_err_new("test-fail always fails");
}

static const char *const keeps_count[] = {"test-node-count", NULL};

#define PASS(nm, fn, sum) {.struct_size = sizeof(pr_pass_info), .name = nm, .summary = sum, .run = fn}

static const pr_pass_info passes[] = {
	PASS("test-noop", noop, "does nothing (the benchmark's empty pass)"),
	{.struct_size = sizeof(pr_pass_info), .name = "test-opts", .summary = "echoes its options",
	 .options = opts_decl, .n_options = sizeof opts_decl / sizeof opts_decl[0], .run = echo_opts},
	{.struct_size = sizeof(pr_pass_info), .name = "test-count",
	 .summary = "asks for test-node-count twice per method", .requires = needs_count,
	 .run_graph = use_count},
	PASS("test-touch", touch, "says it changed the program, preserves nothing"),
	{.struct_size = sizeof(pr_pass_info), .name = "test-touch-keep",
	 .summary = "says it changed the program, preserves test-node-count",
	 .preserves = keeps_count, .run = touch},
	PASS("test-warn", warn, "reports a warning"),
	PASS("test-error", error_diag, "reports an error diagnostic"),
	PASS("test-fail", fail, "returns an error"),
};

static const pr_analysis_info node_count = {
	.struct_size = sizeof(pr_analysis_info),
	.name = "test-node-count",
	.summary = "the number of nodes of a graph",
	.compute = count_nodes,
	.destroy = free,
};

static pr_err *reg(pr_registry *r)
{
	pr_err *e = pr_register_analysis(r, &node_count);
	for (size_t i = 0; !e && i < sizeof passes / sizeof passes[0]; i++)
		e = pr_register_pass(r, &passes[i]);
	return e;
}

PR_PLUGIN("test-good", "1.0", reg)
