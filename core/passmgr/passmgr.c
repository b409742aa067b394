/* passmgr.c: running a pipeline (the pass manager proper).
 *
 * Passes run in pipeline order. A pass with a per-method entry (run_graph)
 * is called once per method, in order; one with run gets the whole program.
 * Each gets a context (pr_pass_ctx) through which it reads its options, asks
 * for analyses and reports diagnostics; the manager does the bookkeeping:
 *
 *   - options: the pass's own value (its entry in the pipeline), then for a
 *     pipeline-scope option the pipeline's `options:`, then the declared
 *     default. A per-method map that has no entry for the method falls
 *     through to the next level. Under run_graph, method NULL means the
 *     running method.
 *   - analyses: computed on the first request for a (analysis, graph) pair
 *     and cached in a hash table. Those a pass `requires` are computed before
 *     it runs (for run_graph, on the method's graph just before the call;
 *     for run, on every method's graph), and one with no result fails the
 *     pass. After a pass that says it changed the program, every cached
 *     result not named in its `preserves` is dropped; under run_graph, only
 *     those of the methods it changed (and of the delegate bodies, which a
 *     method's pass may edit and methods share).
 *   - contracts: a pass that reads an undeclared option or asks for an
 *     unregistered analysis gets a neutral value; the first such request is
 *     kept on the context and fails the pass when it returns.
 *   - instruments (instrument.c), one hook list run before each pass, after
 *     it, or after it failed: time, new diagnostics, the crash note,
 *     --print-before/-after/-changed, --verify-each.
 *
 * The run stops at the first pass that fails: one that returns an error, or
 * whose diagnostics contain errors (warnings too under --werror), or that
 * broke a contract, or after which an instrument (the verifier) fails. With
 * verify_after, the verifier then checks the result once more. The program is
 * then not written by the tool. */
#include "passrun/manager.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <uthash.h>

#include "passrun/format.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "locate.h"
#include "pm_internal.h"
#include "pm_run.h"

typedef struct cache_key {
	const pr_graph *graph;
	const pr_analysis_info *analysis;
} cache_key;

typedef struct cache_entry {
	cache_key key;
	void *result;
	bool computing;     /* guards against an analysis that asks for itself */
	UT_hash_handle hh;
} cache_entry;

struct pr_pass_ctx {
	const pr_registry *registry;
	const pr_pipeline *pipeline;
	const pm_pass_entry *entry;
	pr_diags *diags;
	cache_entry **cache;
	const char *method;     /* under run_graph: the running method */
	pr_err *contract;       /* the first contract the pass broke */
	int last_diag;          /* index of this pass's latest diagnostic, or one of: */
};

#define NO_DIAG (-1)       /* it reported none yet */
#define COUNTED_DIAG (-2)  /* its latest was only counted, not stored */

/* Keeps the first contract error; the pass fails with it when it returns. */
static void broke_contract(pr_pass_ctx *ctx, pr_err *e)
{
	if (ctx->contract)
		pr_err_free(e);
	else
		ctx->contract = e;
}

/* ---- what a pass can ask for --------------------------------------------- */

const char *pr_pass_name(const pr_pass_ctx *ctx)
{
	return ctx->entry->info->name;
}

void *pr_pass_user(const pr_pass_ctx *ctx)
{
	return ctx->entry->info->user;
}

const char *pr_pass_method(const pr_pass_ctx *ctx)
{
	return ctx->method;
}

static const pr_option_decl *declared(pr_pass_ctx *ctx, const char *name, pr_option_type type)
{
	const pr_pass_info *p = ctx->entry->info;
	for (size_t i = 0; i < p->n_options && name; i++) {
		const pr_option_decl *d = &p->options[i];
		if (strcmp(d->name, name))
			continue;
		if (d->type == type)
			return d;
		broke_contract(ctx, pr_err_new("pass '%s' reads option '%s' as %s, but declares "
					       "it as %s", p->name, name, pm_type_article(type),
					       pm_type_article(d->type)));
		return NULL;
	}
	broke_contract(ctx, pr_err_new("pass '%s' reads option '%s', which it does not declare",
				       p->name, name ? name : "(null)"));
	return NULL;
}

/* The neutral value a broken contract reads: false, 0, 0.0, "". */
static const char *neutral(pr_option_type type)
{
	return type == PR_OPT_BOOL ? "false" : type == PR_OPT_STRING ? "" : "0";
}

/* The option's text for method; values were normalized by validation. */
static const char *opt_text(pr_pass_ctx *ctx, const char *name, const char *method,
			    pr_option_type type)
{
	const pr_option_decl *d = declared(ctx, name, type);
	if (!d)
		return neutral(type);
	if (!method)
		method = ctx->method;
	const pm_optval *v = pm_optlist_find(&ctx->entry->opts, name);
	const char *t = v ? pm_optval_for(v, method) : NULL;
	if (!t && d->scope == PR_SCOPE_PIPELINE) {
		v = pm_optlist_find(&ctx->pipeline->opts, name);
		t = v ? pm_optval_for(v, method) : NULL;
	}
	return t ? t : (d->default_value ? d->default_value : "");
}

bool pr_pass_opt_bool(pr_pass_ctx *ctx, const char *name, const char *method)
{
	return !strcasecmp(opt_text(ctx, name, method, PR_OPT_BOOL), "true");
}

int64_t pr_pass_opt_int(pr_pass_ctx *ctx, const char *name, const char *method)
{
	return strtoll(opt_text(ctx, name, method, PR_OPT_INT), NULL, 10);
}

double pr_pass_opt_float(pr_pass_ctx *ctx, const char *name, const char *method)
{
	return strtod(opt_text(ctx, name, method, PR_OPT_FLOAT), NULL);
}

const char *pr_pass_opt_string(pr_pass_ctx *ctx, const char *name, const char *method)
{
	return opt_text(ctx, name, method, PR_OPT_STRING);
}

void pr_pass_diag(pr_pass_ctx *ctx, pr_severity sev, const char *code, const char *method,
		  const char *node, int64_t bytes, const char *fmt, ...)
{
	int before = ctx->diags->n;
	va_list ap;
	va_start(ap, fmt);
	pr_diags_addv(ctx->diags, sev, code, pr_pass_name(ctx), method, node, bytes, fmt, ap);
	va_end(ap);
	/* No item: it was only counted (pr_diags_keep_messages). */
	ctx->last_diag = ctx->diags->n > before ? ctx->diags->n - 1 : COUNTED_DIAG;
}

bool pr_pass_diag_wanted(pr_pass_ctx *ctx, pr_severity sev, const char *code)
{
	return pr_diags_wants_message(ctx->diags, sev, code);
}

void pr_pass_diag_flag(pr_pass_ctx *ctx, unsigned flags)
{
	if (ctx->last_diag == COUNTED_DIAG)
		return;   /* nobody reads the flags of one that is no item */
	if (ctx->last_diag < 0 || ctx->last_diag >= ctx->diags->n) {
		broke_contract(ctx, pr_err_new("pass '%s' flags a diagnostic before it reports one",
					       pr_pass_name(ctx)));
		return;
	}
	ctx->diags->items[ctx->last_diag].flags |= flags;
}

/* ---- analyses ------------------------------------------------------------ */

static void entry_drop(cache_entry **cache, cache_entry *e)
{
	HASH_DEL(*cache, e);
	if (e->result && e->key.analysis->destroy)
		e->key.analysis->destroy(e->result);
	free(e);
}

void *pr_pass_analysis(pr_pass_ctx *ctx, const char *name, pr_graph *g)
{
	const pr_analysis_info *a = name ? pr_registry_find_analysis(ctx->registry, name) : NULL;
	if (!a) {
		broke_contract(ctx, pr_err_new("pass '%s' asks for analysis '%s', which no plugin "
					       "registers", pr_pass_name(ctx), name ? name : "(null)"));
		return NULL;
	}
	cache_key key;
	memset(&key, 0, sizeof key);
	key.graph = g;
	key.analysis = a;
	cache_entry *e;
	HASH_FIND(hh, *ctx->cache, &key, sizeof key, e);
	if (e) {
		if (e->computing) {
			broke_contract(ctx, pr_err_new("pass '%s': analysis '%s' asks for itself on "
						       "graph '%s'", pr_pass_name(ctx), name,
						       g->name));
			return NULL;
		}
		return e->result;
	}
	e = pr_xcalloc(1, sizeof *e);
	e->key = key;
	e->computing = true;
	HASH_ADD(hh, *ctx->cache, key, sizeof key, e);
	e->result = a->compute(ctx, g);
	e->computing = false;
	return e->result;
}

void pr_pass_invalidate(pr_pass_ctx *ctx, pr_graph *g)
{
	cache_entry *e, *tmp;
	HASH_ITER(hh, *ctx->cache, e, tmp)
		if (e->key.graph == g && !e->computing)
			entry_drop(ctx->cache, e);
}

static bool preserves(const pr_pass_info *p, const char *analysis)
{
	for (const char *const *a = p->preserves; a && *a; a++)
		if (!strcmp(*a, analysis))
			return true;
	return false;
}

/* After p changed the program (method NULL) or method g of it: drops what
 * it does not preserve, of every graph or of g and the delegate bodies. */
static void invalidate_after(cache_entry **cache, const pr_pass_info *p, const pr_graph *g)
{
	cache_entry *e, *tmp;
	HASH_ITER(hh, *cache, e, tmp) {
		bool hit = !g || e->key.graph == g || e->key.graph->delegate;
		if (hit && !preserves(p, e->key.analysis->name))
			entry_drop(cache, e);
	}
}

static void cache_clear(cache_entry **cache)
{
	cache_entry *e, *tmp;
	HASH_ITER(hh, *cache, e, tmp)
		entry_drop(cache, e);
}

/* ---- the report and --time-passes ----------------------------------------- */

double pr_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void pr_pass_report_init(pr_pass_report *rep)
{
	memset(rep, 0, sizeof *rep);
}

void pr_pass_report_free(pr_pass_report *rep)
{
	for (int i = 0; i < rep->n; i++)
		free(rep->items[i].name);
	free(rep->items);
	memset(rep, 0, sizeof *rep);
}

void pr_pass_report_add(pr_pass_report *rep, const char *name, double ms, bool changed,
		       bool is_pass)
{
	PR_GROW(rep->items, rep->n, rep->cap);
	rep->items[rep->n++] = (pr_pass_record){pr_xstrdup(name), ms, changed, is_pass};
}

static int by_time_desc(const void *a, const void *b)
{
	const pr_pass_record *x = *(const pr_pass_record *const *)a;
	const pr_pass_record *y = *(const pr_pass_record *const *)b;
	return (x->ms < y->ms) - (x->ms > y->ms);
}

void pr_pass_report_print_times(const pr_pass_report *rep, FILE *out)
{
	double total = 0;
	const pr_pass_record **sorted = pr_xcalloc((size_t)rep->n + 1, sizeof *sorted);
	for (int i = 0; i < rep->n; i++) {
		total += rep->items[i].ms;
		sorted[i] = &rep->items[i];
	}
	qsort(sorted, (size_t)rep->n, sizeof *sorted, by_time_desc);
	fprintf(out, "===-------------------------------------------------------===\n");
	fprintf(out, "                   passrun: time per pass\n");
	fprintf(out, "===-------------------------------------------------------===\n");
	fprintf(out, "  %12s  %6s  %-7s  %s\n", "ms", "%", "changed", "name");
	for (int i = 0; i < rep->n; i++) {
		const pr_pass_record *r = sorted[i];
		fprintf(out, "  %12.3f  %5.1f%%  %-7s  %s%s%s\n", r->ms,
			total > 0 ? 100.0 * r->ms / total : 0.0,
			r->is_pass ? (r->changed ? "yes" : "no") : "-", r->is_pass ? "" : "(",
			r->name, r->is_pass ? "" : ")");
	}
	fprintf(out, "  %12.3f  %5.1f%%  %-7s  %s\n", total, 100.0, "", "total");
	free(sorted);
}

/* ---- running -------------------------------------------------------------- */

/* Computes what the pass requires on g; an analysis with no result there
 * fails the pass (pass.h promises a pass non-NULL results). */
static pr_err *require_analyses(pr_pass_ctx *ctx, pr_graph *g)
{
	const pr_pass_info *info = ctx->entry->info;
	for (const char *const *a = info->requires; a && *a; a++) {
		if (pr_pass_analysis(ctx, *a, g))
			continue;
		if (ctx->contract)
			return NULL;
		return pr_err_new("pass '%s' requires analysis '%s', which has no result for "
				  "%s '%s'", info->name, *a, g->delegate ? "delegate" : "method",
				  g->name);
	}
	return NULL;
}

static pr_err *run_whole(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	const pr_pass_info *info = ctx->entry->info;
	pr_err *e = NULL;
	for (int m = 0; m < p->n_methods && !e && !ctx->contract; m++)
		e = require_analyses(ctx, p->methods[m]);
	if (!e && !ctx->contract)
		e = info->run(ctx, p, changed);
	if (*changed)
		invalidate_after(ctx->cache, info, NULL);
	return e;
}

static pr_err *run_per_method(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	const pr_pass_info *info = ctx->entry->info;
	pr_err *e = NULL;
	for (int m = 0; m < p->n_methods && !e && !ctx->contract; m++) {
		pr_graph *g = p->methods[m];
		ctx->method = g->name;
		pm_crash_enter(ctx->registry, info, g->name);
		e = require_analyses(ctx, g);
		bool one = false;
		if (!e && !ctx->contract)
			e = info->run_graph(ctx, p, g, &one);
		if (one)
			invalidate_after(ctx->cache, info, g);
		*changed |= one;
	}
	ctx->method = NULL;
	return e;
}

/* Why the pass failed, or NULL: its error, a broken contract, its errors. */
static pr_err *pass_failure(pr_pass_ctx *ctx, pr_err *e, int errors_before)
{
	const char *name = ctx->entry->info->name;
	if (e) {
		pr_err_free(ctx->contract);
		return pr_err_wrap(e, "pass '%s' failed", name);
	}
	if (ctx->contract)
		return ctx->contract;
	int errors = pr_diags_errors(ctx->diags) - errors_before;
	if (errors)
		return pr_err_new("pass '%s' reported %d error%s", name, errors,
				  errors == 1 ? "" : "s");
	return NULL;
}

/* Runs one pass between the instruments' hooks; returns an error that stops
 * the run. */
static pr_err *run_one(pr_pass_ctx *ctx, pm_run *run, pm_instruments *ins, int index)
{
	const pr_pass_info *info = ctx->entry->info;
	pm_pass_event ev = {info, index, false, ctx->diags->n};
	int errors_before = pr_diags_errors(ctx->diags);
	pm_instruments_before(ins, run, &ev);
	bool changed = false;
	pr_err *e = info->run_graph ? run_per_method(ctx, run->program, &changed)
				    : run_whole(ctx, run->program, &changed);
	ev.changed = changed;
	if (changed)
		run->last_changed = info->name;
	e = pass_failure(ctx, e, errors_before);
	if (e) {
		pm_instruments_failed(ins, run, &ev);
		return e;
	}
	return pm_instruments_after(ins, run, &ev);
}

/* verify_after: the result checked once, blaming the last pass that said it
 * changed something (the first that broke it is found with --verify-each). */
static pr_err *verify_result(pm_run *run)
{
	int before = run->diags->n;
	double t0 = pr_now_ms();
	int bad = pr_verify(run->program, run->diags, "verifier");
	bad += pr_plan_check(run->program, run->diags, "verifier");
	if (run->rep)
		pr_pass_report_add(run->rep, "verify result", pr_now_ms() - t0, false, false);
	if (run->opts->diag_out)
		pr_diags_print(run->diags, before, run->opts->diag_out);
	if (!bad)
		return NULL;
	const char *blame = run->last_changed;
	return pr_err_new("verifier failed after the pipeline (%d error%s); %s%s%s "
			  "(rerun with --verify-each to name the first pass that breaks it)",
			  bad, bad == 1 ? "" : "s",
			  blame ? "most likely at fault: pass '" : "no pass reported a change",
			  blame ? blame : "", blame ? "', the last that reported a change" : "");
}

pr_err *pr_pipeline_run(const pr_pipeline *pl, const pr_registry *r, pr_program *p,
			pr_diags *diags, const pr_instrument_opts *opts, pr_pass_report *rep)
{
	PR_ASSERT(pl->validated || pl->n_passes == 0);
	pr_instrument_opts none;
	memset(&none, 0, sizeof none);
	pm_run run = {r, pl, p, diags, opts ? opts : &none, rep, NULL};
	pm_instruments ins;
	pm_instruments_init(&ins, &run);
	pm_crash_prepare_reproducer(&run);
	cache_entry *cache = NULL;
	pr_err *e = NULL;
	for (int i = 0; i < pl->n_passes && !e; i++) {
		pr_pass_ctx ctx = {r, pl, &pl->passes[i], diags, &cache, NULL, NULL, NO_DIAG};
		e = run_one(&ctx, &run, &ins, i);
	}
	pm_crash_forget_reproducer();
	cache_clear(&cache);
	pm_instruments_free(&ins);
	if (!e && run.opts->verify_after && !run.opts->verify_each && pl->n_passes)
		e = verify_result(&run);
	return e;
}

/* ---- the shipped pipelines, for the pipeline reference and suggestions ---- */

const char *pr_pipeline_description(const pr_pipeline *pl)
{
	return pl->description;
}

typedef struct name_list {
	int n, cap;
	char **items;
} name_list;

static void name_list_add(name_list *l, char *name)
{
	PR_GROW(l->items, l->n, l->cap);
	l->items[l->n++] = name;
}

/* NAME.yaml files under dir and one level of folders (ablate/): the one walk
 * of the shipped folder, for the reference and for pr_pipeline_find's
 * message. */
static void collect_pipelines(const char *dir, const char *prefix, int depth, name_list *l)
{
	struct dirent **ents;
	int count = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < count; i++) {
		const char *nm = ents[i]->d_name;
		char *path = pr_xasprintf("%s/%s", dir, nm);
		struct stat st;
		size_t len = strlen(nm);
		if (nm[0] != '.' && stat(path, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < 1) {
				char *sub = pr_xasprintf("%s%s/", prefix, nm);
				collect_pipelines(path, sub, depth + 1, l);
				free(sub);
			} else if (S_ISREG(st.st_mode) && len > 5 && !strcmp(nm + len - 5, ".yaml")) {
				name_list_add(l, pr_xasprintf("%s%.*s", prefix, (int)(len - 5), nm));
			}
		}
		free(path);
		free(ents[i]);
	}
	if (count >= 0)
		free(ents);
}

int pr_pipeline_list_shipped(char ***names)
{
	name_list l = {0, 0, NULL};
	const char *dir = pr_locate_pipeline_dir();
	if (dir)
		collect_pipelines(dir, "", 0, &l);
	*names = l.items;
	return l.n;
}

void pr_names_free(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
