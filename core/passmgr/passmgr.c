/* passmgr.c: running a pipeline (the pass manager proper).
 *
 * Passes run in pipeline order over the whole program. Each gets a context
 * (pr_pass_ctx) through which it reads its options, asks for analyses and
 * reports diagnostics; the manager does the bookkeeping around it:
 *
 *   - options: the pass's own value (its entry in the pipeline), then for a
 *     pipeline-scope option the pipeline's `options:`, then the declared
 *     default. A per-method map that has no entry for the method falls
 *     through to the next level.
 *   - analyses: computed on the first request for a (analysis, graph) pair
 *     and cached in a hash table; after a pass that says it changed the
 *     program, every cached result not named in its `preserves` is dropped.
 *   - instrumentation: the time of each pass, --print-after-all /
 *     --print-after=PASS (the program as text on print_out), --verify-each
 *     (pr_verify and the memory-plan checker pr_plan_check, with the pass's
 *     name; a failure stops the run and names the pass), and new diagnostics
 *     printed after each pass.
 *
 * The run stops at the first pass that fails: one that returns an error, or
 * whose diagnostics contain errors (warnings too under --werror), or after
 * which the verifier fails. The program is then not written by the tool. */
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
};

/* ---- what a pass can ask for --------------------------------------------- */

const char *pr_pass_name(const pr_pass_ctx *ctx)
{
	return ctx->entry->info->name;
}

void *pr_pass_user(const pr_pass_ctx *ctx)
{
	return ctx->entry->info->user;
}

static const pr_option_decl *declared(pr_pass_ctx *ctx, const char *name)
{
	const pr_pass_info *p = ctx->entry->info;
	for (size_t i = 0; i < p->n_options; i++)
		if (!strcmp(p->options[i].name, name))
			return &p->options[i];
	/* A pass asking for an option it never declared is a bug in the pass. */
	fprintf(stderr, "passrun: pass '%s' reads option '%s', which it does not declare\n",
		p->name, name);
	pr_assert_fail("option declared by the running pass", __FILE__, __LINE__);
}

/* The option's text for method; values were normalized by validation. */
static const char *opt_text(pr_pass_ctx *ctx, const char *name, const char *method,
			    pr_option_type type)
{
	const pr_option_decl *d = declared(ctx, name);
	PR_ASSERT(d->type == type);
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
	va_list ap;
	va_start(ap, fmt);
	pr_err *msg = pr_err_newv(fmt, ap);
	va_end(ap);
	pr_diags_add(ctx->diags, sev, code, pr_pass_name(ctx), method, node, bytes, "%s",
		     pr_err_message(msg));
	pr_err_free(msg);
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
	const pr_analysis_info *a = pr_registry_find_analysis(ctx->registry, name);
	if (!a)
		return NULL;
	cache_key key;
	memset(&key, 0, sizeof key);
	key.graph = g;
	key.analysis = a;
	cache_entry *e;
	HASH_FIND(hh, *ctx->cache, &key, sizeof key, e);
	if (e) {
		if (e->computing) {
			fprintf(stderr, "passrun: analysis '%s' asks for itself on graph '%s'\n",
				name, g->name);
			pr_assert_fail("no cycle between analyses", __FILE__, __LINE__);
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

static void invalidate_after(cache_entry **cache, const pr_pass_info *p)
{
	cache_entry *e, *tmp;
	HASH_ITER(hh, *cache, e, tmp)
		if (!preserves(p, e->key.analysis->name))
			entry_drop(cache, e);
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
	if (rep->n == rep->cap) {
		rep->cap = rep->cap ? 2 * rep->cap : 16;
		rep->items = pr_xrealloc(rep->items, (size_t)rep->cap * sizeof *rep->items);
	}
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

static bool wants_print(const pr_instrument_opts *o, const char *pass)
{
	if (o->print_after_all)
		return true;
	for (int i = 0; i < o->n_print_after; i++)
		if (!strcmp(o->print_after[i], pass))
			return true;
	return false;
}

static void print_program(const pr_program *p, const char *pass, FILE *out)
{
	size_t len;
	char *text = pr_text_print(p, &len);
	fprintf(out, "# *** program after pass '%s' ***\n", pass);
	fwrite(text, 1, len, out);
	fflush(out);
	free(text);
}

/* Runs one pass and what surrounds it; returns an error that stops the run. */
static pr_err *run_one(pr_pass_ctx *ctx, pr_program *p, const pr_instrument_opts *o,
		       pr_pass_report *rep)
{
	const pr_pass_info *info = ctx->entry->info;
	int diags_before = ctx->diags->n;
	int errors_before = pr_diags_errors(ctx->diags);
	bool changed = false;
	double t0 = pr_now_ms();
	pr_err *e = info->run(ctx, p, &changed);
	double ms = pr_now_ms() - t0;
	if (rep)
		pr_pass_report_add(rep, info->name, ms, changed, true);
	if (changed)
		invalidate_after(ctx->cache, info);
	if (o->diag_out)
		pr_diags_print(ctx->diags, diags_before, o->diag_out);
	if (e)
		return pr_err_wrap(e, "pass '%s' failed", info->name);
	int errors = pr_diags_errors(ctx->diags) - errors_before;
	if (errors)
		return pr_err_new("pass '%s' reported %d error%s", info->name, errors,
				  errors == 1 ? "" : "s");
	if (wants_print(o, info->name))
		print_program(p, info->name, o->print_out ? o->print_out : stderr);
	if (o->verify_each) {
		diags_before = ctx->diags->n;
		int bad = pr_verify(p, ctx->diags, info->name);
		bad += pr_plan_check(p, ctx->diags, info->name);
		if (o->diag_out)
			pr_diags_print(ctx->diags, diags_before, o->diag_out);
		if (bad)
			return pr_err_new("verifier failed after pass '%s' (%d error%s)",
					  info->name, bad, bad == 1 ? "" : "s");
	}
	return NULL;
}

pr_err *pr_pipeline_run(const pr_pipeline *pl, const pr_registry *r, pr_program *p,
			pr_diags *diags, const pr_instrument_opts *opts, pr_pass_report *rep)
{
	PR_ASSERT(pl->validated || pl->n_passes == 0);
	pr_instrument_opts none;
	memset(&none, 0, sizeof none);
	if (!opts)
		opts = &none;
	cache_entry *cache = NULL;
	pr_err *e = NULL;
	for (int i = 0; i < pl->n_passes && !e; i++) {
		pr_pass_ctx ctx = {r, pl, &pl->passes[i], diags, &cache};
		e = run_one(&ctx, p, opts, rep);
	}
	cache_clear(&cache);
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
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->items = pr_xrealloc(l->items, (size_t)l->cap * sizeof *l->items);
	}
	l->items[l->n++] = name;
}

/* NAME.yaml files under dir and one level of folders (ablate/), as
 * pr_pipeline_find resolves them. */
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
