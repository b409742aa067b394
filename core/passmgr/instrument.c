/* instrument.c: the instruments of a run, on one hook list.
 *
 * Like MLIR's PassInstrumentation, each instrument has hooks run before a
 * pass, after it, and after it failed; the manager calls the list and knows
 * none of them. In hook order:
 *
 *   time      the pass's milliseconds and `changed` into the report
 *             (--time-passes, --stats=json), failed passes included;
 *   diags     the diagnostics the pass added, printed on diag_out;
 *   crash     the note the crash handler writes (crash.c);
 *   print     --print-before=PASS (before), --print-after=PASS,
 *             --print-after-all, --print-changed[=diff] (after);
 *   verify    --verify-each: pr_verify and pr_plan_check after every pass,
 *             and a fingerprint taken before and after each pass, so that a
 *             pass that changed the program while reporting no change is
 *             named;
 *   hook      the caller's own (pr_instrument_opts.hook; passrun's
 *             --dot-pass), last, so it sees what the others checked.
 *
 * The fingerprint is a 64-bit FNV-1a hash over what a pass edits: per graph
 * its name and node count, per node its kind, name, type (specs with shape,
 * strides, device and memory plan), op, delegate, argument values (the node
 * read, or the constant), use count and write-backs; per delegate its name,
 * compile specs and body; each schema's name. It allocates nothing and costs
 * one walk of the program per pass, far less than the verifier run next to
 * it. What it does not cover: the bytes of constant data and blobs (hashing
 * them would cost their size per pass), and a node's source line. */
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "pm_run.h"

/* ---- the list ------------------------------------------------------------ */

static void add(pm_instruments *l, pm_instrument in)
{
	PR_ASSERT(l->n < PM_MAX_INSTRUMENTS);
	l->items[l->n++] = in;
}

void pm_instruments_before(pm_instruments *l, pm_run *run, const pm_pass_event *ev)
{
	for (int i = 0; i < l->n; i++)
		if (l->items[i].before)
			l->items[i].before(l->items[i].self, run, ev);
}

pr_err *pm_instruments_after(pm_instruments *l, pm_run *run, const pm_pass_event *ev)
{
	for (int i = 0; i < l->n; i++) {
		pr_err *e = l->items[i].after ? l->items[i].after(l->items[i].self, run, ev) : NULL;
		if (e)
			return e;
	}
	return NULL;
}

void pm_instruments_failed(pm_instruments *l, pm_run *run, const pm_pass_event *ev)
{
	for (int i = 0; i < l->n; i++)
		if (l->items[i].failed)
			l->items[i].failed(l->items[i].self, run, ev);
}

void pm_instruments_free(pm_instruments *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->items[i].self);
	l->n = 0;
}

/* ---- time and diagnostics -------------------------------------------------- */

typedef struct time_state {
	double t0;
} time_state;

static void time_before(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)run, (void)ev;
	((time_state *)self)->t0 = pr_now_ms();
}

static void time_failed(void *self, pm_run *run, const pm_pass_event *ev)
{
	if (run->rep)
		pr_pass_report_add(run->rep, ev->info->name, pr_now_ms() - ((time_state *)self)->t0,
				   ev->changed, true);
}

static pr_err *time_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	time_failed(self, run, ev);
	return NULL;
}

static void diags_failed(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)self;
	if (run->opts->diag_out)
		pr_diags_print(run->diags, ev->diags_before, run->opts->diag_out);
}

static pr_err *diags_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	diags_failed(self, run, ev);
	return NULL;
}

/* ---- the crash note ------------------------------------------------------ */

static void crash_before(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)self;
	pm_crash_enter(run->registry, ev->info, NULL);
}

static void crash_failed(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)self, (void)run, (void)ev;
	pm_crash_leave();
}

static pr_err *crash_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	crash_failed(self, run, ev);
	return NULL;
}

/* ---- printing ------------------------------------------------------------ */

typedef struct print_state {
	char *before;     /* --print-changed=diff: the program before the pass */
} print_state;

static bool named(const char *const *names, int n, const char *pass)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], pass))
			return true;
	return false;
}

static FILE *print_out(const pm_run *run)
{
	return run->opts->print_out ? run->opts->print_out : stderr;
}

static void print_program(const pr_program *p, const char *when, const char *pass, FILE *out)
{
	size_t len;
	char *text = pr_text_print(p, &len);
	fprintf(out, "# *** program %s pass '%s' ***\n", when, pass);
	fwrite(text, 1, len, out);
	fflush(out);
	free(text);
}

static void print_before(void *self, pm_run *run, const pm_pass_event *ev)
{
	const pr_instrument_opts *o = run->opts;
	if (named(o->print_before, o->n_print_before, ev->info->name))
		print_program(run->program, "before", ev->info->name, print_out(run));
	if (o->print_changed == PR_PRINT_CHANGED_DIFF) {
		size_t len;
		print_state *st = self;
		free(st->before);
		st->before = pr_text_print(run->program, &len);
	}
}

static void print_diff(print_state *st, pm_run *run, const char *pass)
{
	size_t len;
	char *after = pr_text_print(run->program, &len);
	char *a = pr_xasprintf("before pass '%s'", pass);
	char *b = pr_xasprintf("after pass '%s'", pass);
	char *diff = pm_unified_diff(st->before ? st->before : "", after, a, b);
	FILE *out = print_out(run);
	fputs(diff, out);
	fflush(out);
	free(diff);
	free(a);
	free(b);
	free(after);
}

static pr_err *print_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	const pr_instrument_opts *o = run->opts;
	const char *pass = ev->info->name;
	if (o->print_changed == PR_PRINT_CHANGED_DIFF && ev->changed)
		print_diff(self, run, pass);
	else if ((o->print_changed == PR_PRINT_CHANGED_FULL && ev->changed) ||
		 o->print_after_all || named(o->print_after, o->n_print_after, pass))
		print_program(run->program, "after", pass, print_out(run));
	print_state *st = self;
	free(st->before);
	st->before = NULL;
	return NULL;
}

static void print_failed(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)run, (void)ev;
	print_state *st = self;
	free(st->before);
	st->before = NULL;
}

/* ---- the fingerprint ----------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * FNV_PRIME;
	return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	return hash_bytes(h, &v, sizeof v);
}

/* NULL and "" hash differently. */
static uint64_t hash_str(uint64_t h, const char *s)
{
	return s ? hash_bytes(h, s, strlen(s) + 1) : hash_u64(h, 0x9e3779b97f4a7c15ull);
}

/* By meaning: every spelling of the host hashes alike (pr_device_equal). */
static uint64_t hash_device(uint64_t h, pr_device d)
{
	d = pr_device_canonical(d);
	return hash_u64(hash_str(h, d.type), (uint64_t)(int64_t)d.index);
}

static uint64_t hash_spec(uint64_t h, const pr_spec *s)
{
	h = hash_u64(hash_u64(h, (uint64_t)s->dtype), (uint64_t)s->rank);
	for (int i = 0; i < s->rank && i < PR_MAX_RANK; i++)
		h = hash_u64(hash_u64(h, (uint64_t)s->shape[i]), (uint64_t)pr_spec_strides(s)[i]);
	h = hash_u64(hash_device(h, pr_spec_device(s)), s->has_mem);
	/* Without a plan the arena and offset mean nothing (pr_spec_equal). */
	return s->has_mem ? hash_u64(hash_device(h, pr_spec_mem_arena(s)), (uint64_t)s->mem_offset) : h;
}

static uint64_t hash_type(uint64_t h, const pr_type *t)
{
	h = hash_u64(h, (uint64_t)t->kind);
	if (t->kind == PR_TYPE_TENSOR)
		h = hash_spec(h, &t->tensor);
	for (int i = 0; t->kind == PR_TYPE_TUPLE && i < t->n_elems; i++)
		h = hash_spec(h, &t->elems[i]);
	return h;
}

static uint64_t hash_arg(uint64_t h, const pr_arg *a)
{
	h = hash_u64(h, (uint64_t)a->kind);
	switch (a->kind) {
	case PR_ARG_VALUE:
		/* The node read: by name, or by identity when it has none. */
		return a->u.value && a->u.value->name ? hash_str(h, a->u.value->name)
						       : hash_u64(h, (uint64_t)(uintptr_t)a->u.value);
	case PR_ARG_INT: return hash_u64(h, (uint64_t)a->u.i);
	case PR_ARG_FLOAT: return hash_bytes(h, &a->u.f, sizeof a->u.f);
	case PR_ARG_BOOL: return hash_u64(h, a->u.b);
	case PR_ARG_STRING: return hash_str(h, a->u.s);
	case PR_ARG_LIST:
		for (int i = 0; i < a->n_items; i++)
			h = hash_arg(h, &a->u.items[i]);
		return hash_u64(h, (uint64_t)a->n_items);
	case PR_ARG_NONE: break;
	}
	return h;
}

static uint64_t hash_node(uint64_t h, const pr_node *n)
{
	const pr_schema *s = pr_node_schema(n);
	const pr_delegate *d = pr_node_delegate(n);
	const pr_input *in = pr_node_input(n);
	const pr_writeback *wbs = pr_node_writebacks(n);
	h = hash_str(hash_u64(h, (uint64_t)n->kind), n->name);
	h = hash_type(h, &n->type);
	h = hash_str(h, s ? s->full_name : NULL);
	h = hash_str(h, d ? d->name : NULL);
	h = hash_u64(hash_u64(h, (uint64_t)pr_node_getitem_index(n)), (uint64_t)n->n_uses);
	h = hash_u64(hash_str(h, in->name), (uint64_t)in->kind);
	h = hash_u64(hash_u64(h, (uint64_t)in->data.kind), in->data.seed);
	for (int i = 0; i < n->n_args; i++) {
		h = hash_arg(h, &n->args[i]);
		if (wbs)
			h = hash_str(hash_u64(h, (uint64_t)wbs[i].kind), wbs[i].target);
	}
	return hash_u64(h, (uint64_t)n->n_args);
}

static uint64_t hash_graph(uint64_t h, const pr_graph *g)
{
	h = hash_u64(hash_str(h, g->name), (uint64_t)g->n_nodes);
	pr_graph_for_each(g, n)
		h = hash_node(h, n);
	return h;
}

uint64_t pm_program_fingerprint(const pr_program *p)
{
	uint64_t h = FNV_OFFSET;
	for (int i = 0; i < p->n_schemas; i++)
		h = hash_str(h, p->schemas[i]->full_name);
	for (const pr_blob *b = p->blobs; b; b = b->next)
		h = hash_u64(hash_str(h, b->name), (uint64_t)b->size);
	for (int i = 0; i < p->n_delegates; i++) {
		const pr_delegate *d = p->delegates[i];
		h = hash_str(h, d->name);
		for (int k = 0; k < d->n_specs; k++)
			h = hash_str(hash_str(h, d->specs[k].key), d->specs[k].value);
		h = d->body ? hash_graph(h, d->body) : h;
	}
	for (int i = 0; i < p->n_methods; i++)
		h = hash_graph(h, p->methods[i]);
	return h;
}

/* ---- --verify-each --------------------------------------------------------- */

typedef struct verify_state {
	uint64_t before;
} verify_state;

static void verify_before(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)ev;
	((verify_state *)self)->before = pm_program_fingerprint(run->program);
}

static pr_err *verify_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	const char *pass = ev->info->name;
	int before = run->diags->n;
	int bad = pr_verify(run->program, run->diags, pass);
	bad += pr_plan_check(run->program, run->diags, pass);
	if (run->opts->diag_out)
		pr_diags_print(run->diags, before, run->opts->diag_out);
	if (bad)
		return pr_err_new("verifier failed after pass '%s' (%d error%s)", pass, bad,
				  bad == 1 ? "" : "s");
	if (!ev->changed && pm_program_fingerprint(run->program) != ((verify_state *)self)->before)
		return pr_err_new("pass '%s' changed the program but reported no change "
				  "(*changed = false): the analyses it did not preserve were kept",
				  pass);
	return NULL;
}

/* ---- the instruments a run asks for --------------------------------------- */

/* ---- the caller's hook ------------------------------------------------- */

static void hook_before(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)self;
	const pr_pass_hook *h = run->opts->hook;
	if (h->before)
		h->before(h->ctx, ev->info->name, ev->index, run->program);
}

static pr_err *hook_after(void *self, pm_run *run, const pm_pass_event *ev)
{
	(void)self;
	const pr_pass_hook *h = run->opts->hook;
	return h->after ? h->after(h->ctx, ev->info->name, ev->index, run->program, ev->changed) : NULL;
}

void pm_instruments_init(pm_instruments *l, const pm_run *run)
{
	const pr_instrument_opts *o = run->opts;
	memset(l, 0, sizeof *l);
	add(l, (pm_instrument){time_before, time_after, time_failed,
			       pr_xcalloc(1, sizeof(time_state))});
	add(l, (pm_instrument){NULL, diags_after, diags_failed, NULL});
	add(l, (pm_instrument){crash_before, crash_after, crash_failed, NULL});
	if (o->print_after_all || o->n_print_after || o->n_print_before || o->print_changed)
		add(l, (pm_instrument){print_before, print_after, print_failed,
				       pr_xcalloc(1, sizeof(print_state))});
	if (o->verify_each)
		add(l, (pm_instrument){verify_before, verify_after, NULL,
				       pr_xcalloc(1, sizeof(verify_state))});
	if (o->hook)
		add(l, (pm_instrument){hook_before, hook_after, NULL, NULL});
}
