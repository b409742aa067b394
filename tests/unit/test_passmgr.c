/* Tests of the pass manager proper (core/passmgr/passmgr.c, core/passmgr/stats.c, and the
 * registry's checks in core/passmgr/plugin.c), in-process: passes registered without
 * a plugin, programs from the text parser. Analyses are cached per graph and
 * dropped after a changing pass unless preserved; options resolve pass level,
 * then pipeline level, then the default, per method; a run stops at the
 * first failing pass; --stats=json's object is derived from the graph. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/manager.h"
#include "passrun/verify.h"
#include "testutil.h"

static const char *const two_methods =
	"passrun 1\n"
	"op aten::relu(Tensor self) -> Tensor\n"
	"method @forward {\n  %x: f32[2] = input user \"x\"\n"
	"  %r: f32[2] = aten::relu(%x)\n  return %r\n}\n"
	"method @decode {\n  %x: f32[2] = input user \"x\"\n  return %x\n}\n";

/* ---- passes and an analysis that count what happens --------------------- */

static int computed, destroyed, invalidate_between;
static char seen[512];

static void *count_compute(pr_pass_ctx *ctx, pr_graph *g)
{
	(void)ctx;
	computed++;
	int64_t *n = malloc(sizeof *n);
	*n = g->n_nodes;
	return n;
}

static void count_destroy(void *p)
{
	destroyed++;
	free(p);
}

static pr_err *ask(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)changed;
	for (int i = 0; i < p->n_methods; i++) {
		int64_t *a = pr_pass_analysis(ctx, "count", p->methods[i]);
		cr_assert_eq(*a, p->methods[i]->n_nodes);
		if (invalidate_between)
			pr_pass_invalidate(ctx, p->methods[i]);   /* a is freed now */
		int64_t *b = pr_pass_analysis(ctx, "count", p->methods[i]);
		cr_assert_eq(*b, p->methods[i]->n_nodes);
		cr_assert(invalidate_between || a == b, "cached within a pass");
	}
	return NULL;
}

/* Contract breakers: each gets a neutral value and fails when it returns. */
static pr_err *ask_unknown(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)changed;
	cr_assert_null(pr_pass_analysis(ctx, "no-such-analysis", p->methods[0]));
	return NULL;
}

static pr_err *read_undeclared(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)p, (void)changed;
	cr_assert_eq(pr_pass_opt_int(ctx, "nope", NULL), 0);
	cr_assert_str_eq(pr_pass_opt_string(ctx, "nope", NULL), "");
	return NULL;
}

static pr_err *read_wrong_type(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)p, (void)changed;
	cr_assert_eq(pr_pass_opt_bool(ctx, "level", NULL), false);
	return NULL;
}

/* Per method: records each call and its option, changes only decode. */
static pr_err *per_method(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, bool *changed)
{
	(void)p;
	size_t n = strlen(seen);
	snprintf(seen + n, sizeof seen - n, "%s=%lld ", pr_pass_method(ctx),
		 (long long)pr_pass_opt_int(ctx, "level", NULL));
	cr_assert_str_eq(pr_pass_method(ctx), g->name);
	int64_t *count = pr_pass_analysis(ctx, "count", g);
	cr_assert_eq(*count, g->n_nodes);
	*changed = !strcmp(g->name, "decode");
	return NULL;
}

/* Renames a node but reports no change: the lie --verify-each names. */
static pr_err *lie(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_graph *g = pr_program_find_method(p, "forward");
	cr_assert_null(pr_node_rename(pr_graph_find(g, "x"), "x_renamed"));
	*changed = false;
	return NULL;
}

static void *nothing_for_decode(pr_pass_ctx *ctx, pr_graph *g)
{
	return strcmp(g->name, "decode") ? count_compute(ctx, g) : NULL;
}

static pr_err *change(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	*changed = true;
	return NULL;
}

static const pr_option_decl opt_decls[] = {
	{"level", PR_OPT_INT, "1", "pass level", PR_SCOPE_PASS, true},
	{"shared", PR_OPT_INT, "2", "pipeline level", PR_SCOPE_PIPELINE, true},
	{"ratio", PR_OPT_FLOAT, "0.25", "a float", PR_SCOPE_PASS, false},
	{"on", PR_OPT_BOOL, "false", "a bool", PR_SCOPE_PIPELINE, false},
};

static pr_err *read_opts(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)changed;
	seen[0] = 0;
	for (int i = 0; i < p->n_methods; i++) {
		const char *m = p->methods[i]->name;
		size_t n = strlen(seen);
		snprintf(seen + n, sizeof seen - n, "%s:%lld,%lld,%g,%d ", m,
			 (long long)pr_pass_opt_int(ctx, "level", m),
			 (long long)pr_pass_opt_int(ctx, "shared", m), pr_pass_opt_float(ctx, "ratio", m),
			 pr_pass_opt_bool(ctx, "on", m));
	}
	cr_assert_str_eq(pr_pass_name(ctx), "opts");
	cr_assert_eq(pr_pass_user(ctx), (void *)seen);
	return NULL;
}

static pr_err *warn(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)p;
	(void)changed;
	pr_pass_diag(ctx, PR_SEV_WARNING, "W-X", "forward", "x", 8, "a warning %d", 1);
	return NULL;
}

static pr_err *fail(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	(void)p;
	(void)changed;
	return pr_err_new("it broke");
}

/* Puts forward's input on cuda:0: a host op then reads device memory. */
static pr_err *misplace(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)ctx;
	pr_node *x = pr_graph_find(pr_program_find_method(p, "forward"), "x");
	tu_set_device(pr_node_spec(x), "cuda:0");
	*changed = true;
	return NULL;
}

static const char *const needs_count[] = {"count", NULL};
/* Three flagged warnings, then one flag before any: the first is a contract
 * error only when no diagnostic came before it. */
static pr_err *warn_flagged(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)p;
	(void)changed;
	for (unsigned i = 0; i < 3; i++) {
		pr_pass_diag(ctx, PR_SEV_WARNING, "W-F", "forward", "x", 8, "flagged %u", i);
		pr_pass_diag_flag(ctx, 1u << i);
	}
	return NULL;
}

static pr_err *flag_first(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	(void)p;
	(void)changed;
	pr_pass_diag_flag(ctx, 1u);
	return NULL;
}

static const char *const needs_missing[] = {"missing", NULL};
static const char *const needs_partial[] = {"partial", NULL};

#define PASS(nm, fn) {.struct_size = sizeof(pr_pass_info), .name = nm, .run = fn}

static const pr_pass_info passes[] = {
	{.struct_size = sizeof(pr_pass_info), .name = "ask", .requires = needs_count, .run = ask},
	PASS("change", change),
	{.struct_size = sizeof(pr_pass_info), .name = "change-keep", .preserves = needs_count,
	 .run = change},
	{.struct_size = sizeof(pr_pass_info), .name = "opts", .options = opt_decls,
	 .n_options = 4, .run = read_opts, .user = seen},
	PASS("warn", warn),
	PASS("warn-flagged", warn_flagged),
	PASS("flag-first", flag_first),
	PASS("fail", fail),
	PASS("misplace", misplace),
	{.struct_size = sizeof(pr_pass_info), .name = "needs-missing", .requires = needs_missing,
	 .run = change},
	{.struct_size = sizeof(pr_pass_info), .name = "uses-missing", .run = change,
	 .uses = needs_missing},
	{.struct_size = sizeof(pr_pass_info), .name = "uses-count", .run = ask, .uses = needs_count},
	{.struct_size = sizeof(pr_pass_info), .name = "uses-idle", .run = change,
	 .uses = needs_count},
	PASS("ask-unknown", ask_unknown),
	PASS("read-undeclared", read_undeclared),
	{.struct_size = sizeof(pr_pass_info), .name = "read-wrong-type", .options = opt_decls,
	 .n_options = 4, .run = read_wrong_type},
	{.struct_size = sizeof(pr_pass_info), .name = "per-method", .options = opt_decls,
	 .n_options = 4, .requires = needs_count, .run_graph = per_method},
	{.struct_size = sizeof(pr_pass_info), .name = "per-method-partial", .options = opt_decls,
	 .n_options = 4, .requires = needs_partial, .run_graph = per_method},
	{.struct_size = sizeof(pr_pass_info), .name = "whole-partial", .requires = needs_partial,
	 .run = change},
	PASS("lie", lie),
};

static const pr_analysis_info count_analysis = {
	.struct_size = sizeof(pr_analysis_info), .name = "count", .summary = "nodes",
	.compute = count_compute, .destroy = count_destroy,
};

static const pr_analysis_info partial_analysis = {
	.struct_size = sizeof(pr_analysis_info), .name = "partial",
	.summary = "nodes, but no result for decode",
	.compute = nothing_for_decode, .destroy = count_destroy,
};

static pr_registry *registry(void)
{
	pr_registry *r = pr_registry_new();
	cr_assert_null(pr_register_analysis(r, &count_analysis));
	cr_assert_null(pr_register_analysis(r, &partial_analysis));
	for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++)
		cr_assert_null(pr_register_pass(r, &passes[i]));
	return r;
}

typedef struct run_result {
	pr_err *err;
	pr_diags diags;
	pr_pass_report rep;
} run_result;

/* print_limit of the runs' lists; not 0: they keep only what they print. */
static int runs_print_limit;

static run_result run_pipeline(pr_registry *r, pr_program *p, const char *inline_passes,
			       const char *const *sets, bool verify_each, bool werror)
{
	pr_pipeline *pl;
	pr_err *e = pr_pipeline_parse_inline(inline_passes, &pl);
	cr_assert_null(e, "%s", pr_err_message(e));
	for (; sets && *sets; sets++)
		cr_assert_null(pr_pipeline_set(pl, *sets));
	e = pr_pipeline_validate(pl, r);
	cr_assert_null(e, "%s", pr_err_message(e));
	run_result res;
	pr_diags_init(&res.diags, "t.pg");
	res.diags.werror = werror;
	res.diags.print_limit = runs_print_limit;
	pr_diags_keep_messages(&res.diags, !runs_print_limit);
	pr_pass_report_init(&res.rep);
	pr_instrument_opts o = {.verify_each = verify_each};
	res.err = pr_pipeline_run(pl, r, p, &res.diags, &o, &res.rep);
	pr_pipeline_free(pl);
	return res;
}

static void result_free(run_result *res)
{
	pr_err_free(res->err);
	pr_diags_free(&res->diags);
	pr_pass_report_free(&res->rep);
}

static void count_computes(const char *pipeline, int expect)
{
	computed = destroyed = 0;
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, pipeline, NULL, false, false);
	cr_assert_null(res.err);
	cr_assert_eq(computed, expect, "%s: computed %d times, expected %d", pipeline, computed,
		     expect);
	cr_assert_eq(destroyed, computed, "%s: every result is destroyed", pipeline);
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, analyses_are_cached_per_graph)
{
	count_computes("ask", 2);          /* two methods, asked twice each */
	count_computes("ask,ask", 2);
}

Test(passmgr, a_changing_pass_drops_analyses_it_does_not_preserve)
{
	count_computes("ask,change,ask", 4);
	count_computes("ask,change-keep,ask", 2);
	count_computes("ask,warn,ask", 2);  /* no change: kept */
}

Test(passmgr, a_used_analysis_is_computed_only_when_asked)
{
	count_computes("uses-idle", 0);
	count_computes("uses-count", 2);
}

Test(passmgr, invalidate_drops_a_graphs_analyses_now)
{
	invalidate_between = 1;
	count_computes("ask", 4);
	invalidate_between = 0;
}

Test(passmgr, options_resolve_pass_then_pipeline_then_default)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, "opts", NULL, false, false);
	cr_assert_str_eq(seen, "forward:1,2,0.25,0 decode:1,2,0.25,0 ");
	result_free(&res);
	const char *const sets[] = {"opts.level={forward: 5}", "level=99", "shared=9",
				    "opts.shared={decode: 7}", "on=true", "opts.ratio=1e3", NULL};
	/* "level" is pass-scope: a pipeline-level value for it is an unknown
	 * pipeline option, so it is not in this list's run; see below. */
	const char *const good_sets[] = {sets[0], sets[2], sets[3], sets[4], sets[5], NULL};
	res = run_pipeline(r, p, "opts", good_sets, false, false);
	cr_assert_null(res.err);
	cr_assert_str_eq(seen, "forward:5,9,1000,1 decode:1,7,1000,1 ");
	result_free(&res);
	pr_pipeline *pl;
	cr_assert_null(pr_pipeline_parse_inline("opts", &pl));
	cr_assert_null(pr_pipeline_set(pl, sets[1]));
	pr_err *e = pr_pipeline_validate(pl, r);
	cr_assert(e && strstr(pr_err_message(e), "unknown pipeline option 'level'"),
		  "%s", pr_err_message(e));
	pr_err_free(e);
	pr_pipeline_free(pl);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, run_stops_at_the_first_failing_pass)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, "change,fail,change", NULL, false, false);
	cr_assert(res.err && !strcmp(pr_err_message(res.err), "pass 'fail' failed: it broke"),
		  "%s", pr_err_message(res.err));
	cr_assert_eq(res.rep.n, 2, "the third pass did not run");
	cr_assert(res.rep.items[0].changed && res.rep.items[0].is_pass);
	cr_assert_str_eq(res.rep.items[1].name, "fail");
	result_free(&res);
	/* A warning is fine, unless warnings are errors. */
	res = run_pipeline(r, p, "warn,change", NULL, false, false);
	cr_assert_null(res.err);
	cr_assert_eq(res.diags.n, 1);
	cr_assert_str_eq(res.diags.items[0].pass, "warn");
	cr_assert_str_eq(res.diags.items[0].message, "a warning 1");
	result_free(&res);
	res = run_pipeline(r, p, "warn,change", NULL, false, true);
	cr_assert(res.err && strstr(pr_err_message(res.err), "pass 'warn' reported 1 error"));
	cr_assert_eq(res.rep.n, 1);
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, flagging_a_counted_diagnostic_does_nothing)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	runs_print_limit = 1;
	run_result res = run_pipeline(r, p, "warn-flagged", NULL, false, false);
	runs_print_limit = 0;
	cr_assert_null(res.err, "%s", pr_err_message(res.err));
	cr_assert_eq(res.diags.n, 1, "the two past the limit are only counted");
	cr_assert_eq(pr_diags_count(&res.diags, PR_SEV_WARNING), 3);
	cr_assert_eq(res.diags.items[0].flags, 1u, "their flags went nowhere");
	result_free(&res);
	res = run_pipeline(r, p, "warn-flagged", NULL, false, false);
	cr_assert_null(res.err);
	cr_assert_eq(res.diags.n, 3, "kept: every one, each with its flag");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(res.diags.items[i].flags, 1u << i);
	result_free(&res);
	res = run_pipeline(r, p, "flag-first", NULL, false, false);
	cr_assert(res.err && strstr(pr_err_message(res.err), "flags a diagnostic before it reports one"),
		  "%s", pr_err_message(res.err));
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, verify_each_names_the_pass)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, "change,misplace,change", NULL, true, false);
	cr_assert(res.err, "the verifier should have failed");
	cr_assert(strstr(pr_err_message(res.err), "verifier failed after pass 'misplace'"),
		  "%s", pr_err_message(res.err));
	cr_assert_geq(res.diags.n, 1);
	cr_assert_str_eq(res.diags.items[0].pass, "misplace");
	cr_assert_str_eq(res.diags.items[0].code, "E-PLACEMENT");
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

/* Validating the inline pipeline fails with a message holding want. */
static void refused_at_validation(const char *pipeline, const char *want)
{
	pr_registry *r = registry();
	pr_pipeline *pl;
	cr_assert_null(pr_pipeline_parse_inline(pipeline, &pl));
	pr_err *e = pr_pipeline_validate(pl, r);
	cr_assert(e && strstr(pr_err_message(e), want), "%s: %s", pipeline,
		  e ? pr_err_message(e) : "accepted");
	pr_err_free(e);
	pr_pipeline_free(pl);
	pr_registry_free(r);
}

Test(passmgr, a_required_analysis_must_be_registered)
{
	refused_at_validation("ask,needs-missing",
			      "--passes:1:5: pass 'needs-missing' requires analysis 'missing'");
}

Test(passmgr, a_used_analysis_must_be_registered)
{
	refused_at_validation("change,uses-missing",
			      "--passes:1:8: pass 'uses-missing' uses analysis 'missing', which "
			      "no loaded plugin provides");
}

/* ---- registration checks -------------------------------------------------- */

static void refused(const pr_pass_info *info, const char *expect)
{
	pr_registry *r = registry();
	pr_err *e = pr_register_pass(r, info);
	cr_assert(e, "registered, expected: %s", expect);
	cr_assert(strstr(pr_err_message(e), expect), "'%s' not in: %s", expect, pr_err_message(e));
	pr_err_free(e);
	pr_registry_free(r);
}

Test(passmgr, bad_registrations_are_refused)
{
	static const pr_option_decl dup[] = {{"a", PR_OPT_INT, "1", "", PR_SCOPE_PASS, false},
					     {"a", PR_OPT_INT, "1", "", PR_SCOPE_PASS, false}};
	static const pr_option_decl bad_default[] = {{"n", PR_OPT_INT, "lots", "", PR_SCOPE_PASS, false}};
	static const pr_option_decl clash[] = {{"shared", PR_OPT_BOOL, "false", "", PR_SCOPE_PIPELINE, true}};
	static const pr_option_decl bad_type[] = {{"t", (pr_option_type)9, "1", "", PR_SCOPE_PASS, false}};
	static const pr_option_decl no_name[] = {{NULL, PR_OPT_INT, "1", "", PR_SCOPE_PASS, false}};
	pr_pass_info p = PASS("a,b", change);
	refused(&p, "no valid name");
	p = (pr_pass_info)PASS(NULL, change);
	refused(&p, "a pass has no valid name ('(null)'");
	p = (pr_pass_info)PASS("ask", change);
	refused(&p, "pass 'ask' is registered twice: by built-in and by built-in");
	p = (pr_pass_info)PASS("x", NULL);
	refused(&p, "pass 'x' has no run function (set run or run_graph)");
	p = (pr_pass_info){.struct_size = sizeof p, .name = "x", .options = bad_type, .n_options = 1,
			   .run = change};
	refused(&p, "pass 'x': option 't' has an unknown type (9;");
	p.options = no_name;
	refused(&p, "pass 'x': option 0 has no valid name ('(null)')");
	p.options = NULL;
	refused(&p, "pass 'x' declares 1 options but no option array");
	p = (pr_pass_info){.struct_size = sizeof p, .name = "x", .options = dup, .n_options = 2,
			   .run = change};
	refused(&p, "declares option 'a' twice");
	p.options = bad_default;
	p.n_options = 1;
	refused(&p, "the default of option 'n' is not an int");
	p.options = clash;
	refused(&p, "pipeline option 'shared' as bool (per method), but another pass declares "
		"it as int (per method)");
	p = (pr_pass_info)PASS("x", change);
	p.struct_size = offsetof(pr_pass_info, run);
	refused(&p, "too small");
}

Test(passmgr, an_older_shorter_pass_struct_reads_as_zero_past_its_size)
{
	pr_registry *r = pr_registry_new();
	pr_pass_info p = PASS("old", change);
	p.user = (void *)&p;
	p.struct_size = offsetof(pr_pass_info, user);
	cr_assert_null(pr_register_pass(r, &p));
	const pr_pass_info *got = pr_registry_find_pass(r, "old");
	cr_assert_null(got->user);
	cr_assert_eq(got->struct_size, sizeof(pr_pass_info));
	pr_registry_free(r);
}

Test(passmgr, a_plugin_built_before_run_graph_still_runs)
{
	pr_registry *r = registry();
	pr_pass_info p = PASS("old-run", change);
	p.run_graph = per_method;   /* past its struct_size: never read */
	p.struct_size = offsetof(pr_pass_info, run_graph);
	cr_assert_null(pr_register_pass(r, &p));
	cr_assert_null(pr_registry_find_pass(r, "old-run")->run_graph);
	pr_program *p2 = tu_parse(two_methods);
	seen[0] = 0;
	run_result res = run_pipeline(r, p2, "old-run", NULL, false, false);
	cr_assert_null(res.err, "%s", pr_err_message(res.err));
	cr_assert_str_eq(seen, "", "the whole-program entry ran, not run_graph");
	cr_assert(res.rep.items[0].changed);
	result_free(&res);
	pr_program_free(p2);
	pr_registry_free(r);
}

/* ---- per method ------------------------------------------------------------ */

Test(passmgr, run_graph_runs_once_per_method_with_its_options)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	seen[0] = 0;
	const char *const sets[] = {"per-method.level={decode: 4}", NULL};
	run_result res = run_pipeline(r, p, "per-method", sets, false, false);
	cr_assert_null(res.err, "%s", pr_err_message(res.err));
	cr_assert_str_eq(seen, "forward=1 decode=4 ");
	cr_assert(res.rep.items[0].changed, "decode changed");
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, run_graph_drops_analyses_only_of_the_methods_it_changed)
{
	/* per-method changes decode only: forward's count survives it. */
	count_computes("ask,per-method,ask", 3);
	count_computes("ask,change,ask", 4);
}

static void contract_error(const char *pipeline, const char *expect)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, pipeline, NULL, false, false);
	cr_assert(res.err, "%s: no error, expected: %s", pipeline, expect);
	cr_assert(strstr(pr_err_message(res.err), expect), "%s: '%s' not in: %s", pipeline, expect,
		  pr_err_message(res.err));
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, broken_contracts_are_errors_naming_the_pass)
{
	contract_error("ask-unknown,change", "pass 'ask-unknown' asks for analysis "
		       "'no-such-analysis', which no plugin registers");
	contract_error("read-undeclared", "pass 'read-undeclared' reads option 'nope', which it "
		       "does not declare");
	contract_error("read-wrong-type", "pass 'read-wrong-type' reads option 'level' as a bool, "
		       "but declares it as an int");
}

Test(passmgr, a_required_analysis_is_never_null)
{
	seen[0] = 0;
	contract_error("per-method-partial", "pass 'per-method-partial' requires analysis "
		       "'partial', which has no result for method 'decode'");
	cr_assert_str_eq(seen, "forward=1 ", "forward ran, decode did not");
	contract_error("whole-partial", "pass 'whole-partial' requires analysis 'partial', which "
		       "has no result for method 'decode'");
}

Test(passmgr, verify_each_names_a_pass_that_hides_a_change)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	run_result res = run_pipeline(r, p, "change,lie", NULL, true, false);
	cr_assert(res.err && strstr(pr_err_message(res.err), "pass 'lie' changed the program but "
				    "reported no change"), "%s", pr_err_message(res.err));
	result_free(&res);
	pr_program_free(p);
	p = tu_parse(two_methods);
	res = run_pipeline(r, p, "change,lie", NULL, false, false);
	cr_assert_null(res.err, "only --verify-each takes fingerprints");
	result_free(&res);
	pr_program_free(p);
	pr_registry_free(r);
}

Test(passmgr, verify_after_blames_the_last_pass_that_changed_something)
{
	pr_registry *r = registry();
	pr_program *p = tu_parse(two_methods);
	pr_pipeline *pl;
	cr_assert_null(pr_pipeline_parse_inline("change,misplace,warn", &pl));
	cr_assert_null(pr_pipeline_validate(pl, r));
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	pr_instrument_opts o = {.verify_after = true};
	pr_err *e = pr_pipeline_run(pl, r, p, &d, &o, NULL);
	cr_assert(e && strstr(pr_err_message(e), "verifier failed after the pipeline (1 error); "
			      "most likely at fault: pass 'misplace', the last that reported a "
			      "change (rerun with --verify-each"), "%s", pr_err_message(e));
	pr_err_free(e);
	pr_diags_free(&d);
	pr_pipeline_free(pl);
	pr_program_free(p);
	pr_registry_free(r);
}

/* ---- --stats=json's object -------------------------------------------------- */

Test(passmgr, stats_json_includes_the_run_object_and_escapes_strings)
{
	pr_program *p = tu_parse(two_methods);
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	pr_diags_add(&d, PR_SEV_ERROR, "E-Q", "p\"q", NULL, "n\\m", -1, "line\nbreak");
	pr_pass_report rep;
	pr_pass_report_init(&rep);
	pr_pass_report_add(&rep, "load plugins", 1.0, false, false);
	pr_pass_report_add(&rep, "ask", 0.5, true, true);
	char *json = pr_stats_json(p, &d, &rep, "{\"device\": \"sim\", \"iterations\": 2}");
	cr_assert(strstr(json, "\"pass\": \"p\\\"q\""), "%s", json);
	cr_assert(strstr(json, "\"node\": \"n\\\\m\""), "%s", json);
	cr_assert(strstr(json, "\"message\": \"line\\nbreak\""), "%s", json);
	cr_assert(strstr(json, "\"method\": null"), "%s", json);
	cr_assert(strstr(json, "\"passes\": [\n    {\"name\": \"ask\", \"ms\": 0.5000, "
			 "\"changed\": true}\n  ]"), "phases are not passes: %s", json);
	cr_assert(strstr(json, "\"run\": {\"device\": \"sim\", \"iterations\": 2}"), "%s", json);
	cr_assert(strstr(json, "\"decode\": {\n      \"nodes\": 2,"), "%s", json);
	const char *file = tu_write_temp("s.json", json);
	tu_result r = tu_run("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
			     "assert d[\"run\"][\"iterations\"]==2; "
			     "assert list(d[\"methods\"])==[\"forward\",\"decode\"]' %s", file);
	cr_assert_eq(r.status, 0, "invalid JSON: %s\n%s", r.err, json);
	tu_result_free(&r);
	free(json);
	pr_pass_report_free(&rep);
	pr_diags_free(&d);
	pr_program_free(p);
}
