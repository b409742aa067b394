/* Tests of core/ir/lifetimes.c and core/check/plan_check.c: lifetimes
 * (storage classes and their intervals),
 * pr_plan_usage (planned bytes and the lower bound) and the plan checker
 * pr_plan_check, on small programs whose plans are written by hand in the
 * text (mem=ARENA:OFFSET), so that every broken plan the checker must catch
 * can be stated: overlap, wrong arena, alias apart, host constant planned.
 * Rule ids (M1, M2, F10) are in the test names. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/diag.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "passrun/program.h"
#include "testutil.h"

#define OPS \
	"passrun 1\n" \
	"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n" \
	"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n" \
	"op aten::view(Tensor(a) self, int[] size) -> Tensor(a)\n" \
	"op custom::accumulate(Tensor(a!) x, Tensor y) -> ()\n" \
	"delegate @dd backend=\"CudaBackend\" target_device=\"cuda:0\" {\n" \
	"  %a: f32[16] = input\n" \
	"  %b: f32[16] = aten::add.Tensor(%a, %a)\n" \
	"  %c: f32[16] = aten::add.Tensor(%a, %b)\n" \
	"  return %b, %c\n" \
	"}\n"

/* The class of the value named name (elem -1) in method 0. */
static const pr_plan_class *class_of(const pr_lifetimes *lt, const char *name, int elem)
{
	for (int64_t i = 0; i < lt->n_values; i++) {
		const pr_plan_value *v = &lt->values[i];
		if (v->node->name && !strcmp(v->node->name, name) && v->elem == elem)
			return &lt->classes[v->cls];
	}
	cr_assert_fail("no value %s[%d]", name, elem);
	return NULL;
}

static int check(pr_program *p, pr_diags *d)
{
	pr_diags_init(d, "test.pg");
	return pr_plan_check(p, d, "test");
}

static bool has_diag(const pr_diags *d, const char *node, const char *text)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->items[i].code, "E-PLAN") && d->items[i].node && !strcmp(d->items[i].node, node) &&
		    strstr(d->items[i].message, text))
			return true;
	return false;
}

Test(plan, M1_lifetimes_from_definition_to_last_read)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"            /* 0 */
		"  %a: f32[16] = aten::add.Tensor(%x, %x)\n"    /* 1 */
		"  %b: f32[16] = aten::add.Tensor(%a, %a)\n"    /* 2 */
		"  %c: f32[16] = aten::add.Tensor(%b, %x)\n"    /* 3 */
		"  %e: f32[16] = aten::add.Tensor(%c, %c)\n"    /* 4 */
		"  return %e\n"                                  /* 5 */
		"}\n");
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	cr_assert_eq(lt->n_positions, 6);
	cr_assert_eq(lt->n_classes, 5);
	const pr_plan_class *x = class_of(lt, "x", -1), *a = class_of(lt, "a", -1);
	const pr_plan_class *c = class_of(lt, "c", -1), *e = class_of(lt, "e", -1);
	cr_assert(x->start == 0 && x->end == 3, "x lives %lld..%lld", (long long)x->start, (long long)x->end);
	cr_assert(a->start == 1 && a->end == 2);
	cr_assert(c->start == 3 && c->end == 4);
	cr_assert(e->start == 4 && e->end == 5, "the output lives to the return");
	cr_assert(x->flags & PR_CLASS_USER_INPUT);
	cr_assert(e->flags & PR_CLASS_OUTPUT);
	cr_assert_eq(e->bytes, 64);
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

Test(plan, M1_inplace_views_and_getitems_share_and_extend)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"              /* 0 */
		"  %h: f32[16] = aten::add.Tensor(%x, %x)\n"      /* 1 */
		"  %v: f32[16] = aten::view(%h, [16])\n"          /* 2 */
		"  %r: f32[16] = aten::relu_(%v)\n"               /* 3 */
		"  %hd: f32[16]@cuda:0 = aten::add.Tensor(%x, %x)\n" /* 4: a stand-in */
		"  %d: (f32[16]@cuda:0, f32[16]@cuda:0) = delegate @dd(%hd)\n" /* 5 */
		"  %g: f32[16]@cuda:0 = getitem %d, 1\n"          /* 6 */
		"  %s: f32[16] = aten::add.Tensor(%r, %x)\n"      /* 7 */
		"  return %s, %g\n"                                /* 8 */
		"}\n");
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	const pr_plan_class *h = class_of(lt, "h", -1);
	cr_assert_eq(class_of(lt, "v", -1), h, "a view shares its base's class");
	cr_assert_eq(class_of(lt, "r", -1), h, "an in-place result shares its base's class");
	cr_assert(h->start == 1 && h->end == 7, "h lives %lld..%lld", (long long)h->start, (long long)h->end);
	cr_assert_eq(class_of(lt, "g", -1), class_of(lt, "d", 1), "a getitem is its tuple element");
	const pr_plan_class *d0 = class_of(lt, "d", 0), *d1 = class_of(lt, "d", 1);
	cr_assert(d0 != d1);
	cr_assert(d0->start == 5 && d0->end == 5, "an unread element lives only at its definition");
	cr_assert(d1->start == 5 && d1->end == 8);
	cr_assert(pr_device_equal(pr_plan_class_device(lt, d1), pr_plan_class_device(lt, class_of(lt, "hd", -1))));
	cr_assert_str_eq(pr_plan_class_device(lt, d1).type, "cuda");
	cr_assert_eq(lt->n_split, 0, "every member is on its base's device");
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

/* A view said to be on another device than its base is counted, so that
 * memory-plan walks the values to report it only when there is one. */
Test(plan, M1_members_off_their_base_device_are_counted)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"
		"  %h: f32[16] = aten::add.Tensor(%x, %x)\n"
		"  %v: f32[16]@cuda:0 = aten::view(%h, [16])\n"
		"  %r: f32[16] = aten::relu_(%h)\n"
		"  %w: f32[16]@cuda:0 = aten::view(%r, [16])\n"
		"  return %v, %w\n"
		"}\n");
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	cr_assert_eq(class_of(lt, "v", -1), class_of(lt, "h", -1));
	cr_assert_eq(lt->n_split, 2, "%v and %w are on cuda:0, their base on the host: %lld", (long long)lt->n_split);
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

Test(plan, M1_mutable_buffers_live_for_the_whole_method_constants_unplanned)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"
		"  %w: f32[16] = input parameter \"w\" data=zeros\n"
		"  %k: f32[16] = input buffer \"k\" data=zeros\n"
		"  %wd: f32[16]@cuda:0 = input parameter \"wd\" data=ones\n"
		"  %a: f32[16] = aten::add.Tensor(%x, %w)\n"
		"  custom::accumulate(%k, %a)\n"
		"  return %a, %k -> buffer \"k\"\n"
		"}\n");
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	const pr_plan_class *k = class_of(lt, "k", -1), *w = class_of(lt, "w", -1);
	const pr_plan_class *wd = class_of(lt, "wd", -1);
	cr_assert(k->flags & PR_CLASS_MUTABLE);
	cr_assert(k->start == 0 && k->end == lt->n_positions - 1);
	cr_assert(pr_plan_class_plannable(k));
	cr_assert(w->flags & PR_CLASS_CONSTANT);
	cr_assert_not(pr_plan_class_plannable(w), "a host constant is never planned");
	cr_assert(pr_plan_class_plannable(wd), "F10: a device-resident constant is planned");
	cr_assert(wd->start == 0 && wd->end == lt->n_positions - 1, "F10: for the whole method");
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

#define CHAIN(MA, MB, MC) \
	OPS \
	"method @forward {\n" \
	"  %x: f32[16]" MA " = input user \"x\"\n" \
	"  %a: f32[16]" MB " = aten::add.Tensor(%x, %x)\n" \
	"  %b: f32[16]" MC " = aten::add.Tensor(%a, %a)\n" \
	"  return %b\n" \
	"}\n"

Test(plan, M1_checker_accepts_reuse_after_death)
{
	/* x is read by a (both live at position 1), so they need two slots; x is
	 * dead when b is defined, so b may take x's. */
	pr_program *p = tu_parse(CHAIN("{mem=cpu:0}", "{mem=cpu:64}", "{mem=cpu:0}"));
	pr_diags d;
	cr_assert_eq(check(p, &d), 0);
	pr_arena_usage *u = NULL;
	cr_assert_eq(pr_plan_usage(p->methods[0], &u), 1);
	cr_assert_str_eq(u[0].arena.type, "cpu");
	cr_assert_eq(u[0].planned_bytes, 128);
	cr_assert_eq(u[0].lower_bound_bytes, 128);
	free(u);
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_catches_overlap)
{
	pr_program *p = tu_parse(CHAIN("{mem=cpu:0}", "{mem=cpu:32}", "{mem=cpu:128}"));
	pr_diags d;
	cr_assert_eq(check(p, &d), 1);
	cr_assert(has_diag(&d, "x", "overlap") || has_diag(&d, "a", "overlap"));
	cr_assert(strstr(d.items[0].message, "%x") && strstr(d.items[0].message, "%a"),
		  "the message names both tensors: %s", d.items[0].message);
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_catches_wrong_arena)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"
		"  %a: f32[16]@cuda:0{mem=cpu:0} = aten::add.Tensor(%x, %x)\n"
		"  return %a\n"
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 1);
	cr_assert(has_diag(&d, "a", "is on cuda:0"), "%s", d.n ? d.items[0].message : "none");
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_catches_alias_apart)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:0} = input user \"x\"\n"
		"  %h: f32[16]{mem=cpu:64} = aten::add.Tensor(%x, %x)\n"
		"  %r: f32[16]{mem=cpu:128} = aten::relu_(%h)\n"
		"  return %r\n"
		"}\n");
	pr_diags d;
	cr_assert_geq(check(p, &d), 1);
	cr_assert(has_diag(&d, "r", "shares the memory of %h"), "%s", d.n ? d.items[0].message : "none");
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, F10_checker_refuses_planned_host_constant)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:0} = input user \"x\"\n"
		"  %w: f32[16]{mem=cpu:64} = input parameter \"w\" data=zeros\n"
		"  %wd: f32[16]@cuda:0{mem=cuda:0:0} = input parameter \"wd\" data=zeros\n"
		"  %a: f32[16]{mem=cpu:128} = aten::add.Tensor(%x, %w)\n"
		"  return %a\n"
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 1, "only the host constant is refused");
	cr_assert(has_diag(&d, "w", "constant on the host"));
	pr_diags_free(&d);
	pr_program_free(p);
}

/* A chain of n tensors %t0..%t{n-1} over slots slots of 64 bytes, tensor
 * i in slot i % slots (each live while it and its reader are: a valid plan
 * for slots >= 2), except %t{moved}, put in its predecessor's slot. */
static pr_program *chain_program(int n, int slots, int moved)
{
	char *text = malloc(4 << 20);
	size_t len = (size_t)sprintf(text, "%s%s", OPS, "method @forward {\n  %t0: f32[16]{mem=cpu:0} = input user \"x\"\n");
	for (int i = 1; i < n; i++)
		len += (size_t)sprintf(text + len, "  %%t%d: f32[16]{mem=cpu:%d} = aten::add.Tensor(%%t%d, %%t%d)\n",
				       i, (i == moved ? (i - 1) % slots : i % slots) * 64, i - 1, i - 1);
	sprintf(text + len, "  return %%t%d\n}\n", n - 1);
	pr_program *p = tu_parse(text);
	free(text);
	return p;
}

Test(plan, M1_checker_sweeps_many_tensors)
{
	/* 20000 tensors in a chain, each at the offset of the one two back: a
	 * valid plan of 2 slots; then one moved onto its neighbour's slot. */
	pr_program *p = chain_program(20000, 2, 12345);
	pr_diags d;
	/* An overlapping tensor is reported once, then left out of the sweep. */
	cr_assert_eq(check(p, &d), 1, "t12345 overlaps t12344");
	cr_assert(has_diag(&d, "t12345", "overlap") || has_diag(&d, "t12344", "overlap"));
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_sorts_offsets_of_several_bytes)
{
	/* 6000 tensors over 300 slots (offsets up to 19136: the sort has two
	 * bytes to sort on, and 20 tensors a slot), with %t4321 moved onto the
	 * slot of %t4320, live beside it: exactly that pair is reported, the
	 * earlier one first. */
	pr_program *p = chain_program(6000, 300, 4321);
	pr_diags d;
	cr_assert_eq(check(p, &d), 1, "%s", d.n ? d.items[0].message : "none");
	cr_assert(has_diag(&d, "t4320", "overlap"), "%s", d.items[0].message);
	cr_assert(strstr(d.items[0].message, "%t4321"), "%s", d.items[0].message);
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_looks_past_ended_neighbours)
{
	/* %w spans the slots of %x, %d and %e, all ended when it starts, and of
	 * %l, still live: only %l is reported, though the three lie nearer to
	 * %w in the arena. */
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:0} = input user \"x\"\n"
		"  %d: f32[16]{mem=cpu:64} = aten::add.Tensor(%x, %x)\n"
		"  %l: f32[16]{mem=cpu:128} = aten::add.Tensor(%d, %d)\n"
		"  %e: f32[16]{mem=cpu:64} = aten::add.Tensor(%l, %l)\n"
		"  %w: f32[64]{mem=cpu:0} = aten::add.Tensor(%l, %l)\n"
		"  return %l, %w\n"
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 1, "%s", d.n ? d.items[0].message : "none");
	cr_assert(has_diag(&d, "l", "overlap"), "%s", d.items[0].message);
	cr_assert(strstr(d.items[0].message, "%w"), "%s", d.items[0].message);
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_reports_in_value_order_then_sweep_order)
{
	/* The value rules are reported in graph order, then the overlaps in the
	 * sweep's order: by start, and at one start by (arena, offset, class).
	 * The delegate's two elements start at one position at one offset: the
	 * second is reported against the first. %e starts where %x ends, at
	 * %x's offset: both are live there. %l starts after %y ended, at %y's
	 * offset: no overlap. The values' own errors (a wrong arena, an alias
	 * apart) come first, though the sweep's records are written over the
	 * values as they are checked. */
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:0} = input user \"x\"\n"                   /* 0 */
		"  %y: f32[16]{mem=cpu:256} = aten::add.Tensor(%x, %x)\n"          /* 1 */
		"  %e: f32[16]{mem=cpu:0} = aten::add.Tensor(%x, %y)\n"            /* 2 */
		"  %hd: f32[16]@cuda:0{mem=cuda:0:512} = aten::add.Tensor(%e, %e)\n" /* 3 */
		"  %d: (f32[16]@cuda:0{mem=cuda:0:0}, f32[16]@cuda:0{mem=cuda:0:0}) = delegate @dd(%hd)\n" /* 4 */
		"  %g: f32[16]@cuda:0{mem=cuda:0:64} = getitem %d, 1\n"           /* 5 */
		"  %w: f32[16]@cuda:0{mem=cpu:1024} = aten::add.Tensor(%e, %e)\n"  /* 6 */
		"  %l: f32[16]{mem=cpu:256} = aten::add.Tensor(%e, %e)\n"          /* 7 */
		"  return %g, %w, %l\n"                                            /* 8 */
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 4, "%d diagnostics", d.n);
	cr_assert_str_eq(d.items[0].node, "g");
	cr_assert(strstr(d.items[0].message, "shares the memory of %d[1]"), "%s", d.items[0].message);
	cr_assert_str_eq(d.items[1].node, "w");
	cr_assert(strstr(d.items[1].message, "is on cuda:0"), "%s", d.items[1].message);
	cr_assert_str_eq(d.items[2].node, "x");
	cr_assert(strstr(d.items[2].message, "%x (offset 0") && strstr(d.items[2].message, "and %e (offset 0"),
		  "%s", d.items[2].message);
	cr_assert_str_eq(d.items[3].node, "d[0]");
	cr_assert(strstr(d.items[3].message, "and %d[1] (offset 0"), "%s", d.items[3].message);
	pr_diags_free(&d);
	pr_program_free(p);
}

Test(plan, M1_checker_reports_overlaps_in_several_arenas)
{
	/* Overlaps in three arenas, each reported against a neighbour in its
	 * own arena only: %c (cpu:0, 1024 bytes) spans offsets that cuda:0 and
	 * cuda:1 use, live beside them. In cuda:0, %w, a device constant defined
	 * after %a, lives from position 0 at %a's offset: %a meets it above
	 * (the same memory, a later class) and is left out; %b, 32 bytes
	 * higher, is reached by %w from below. In cuda:1, %p and %q share an
	 * offset while both live (%q is reported against %p, below, and left
	 * out); %r takes that offset once %p has ended, and reaches into %e.
	 * The sweep's order: by start, then (arena, offset, class). */
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:2048} = input user \"x\"\n"                          /* 0 */
		"  %c: f32[256]{mem=cpu:0} = aten::add.Tensor(%x, %x)\n"                   /* 1 */
		"  %a: f32[16]@cuda:0{mem=cuda:0:64} = aten::add.Tensor(%c, %c)\n"         /* 2 */
		"  %w: f32[16]@cuda:0{mem=cuda:0:64} = input parameter \"w\" data=zeros\n" /* 3 */
		"  %b: f32[16]@cuda:0{mem=cuda:0:96} = aten::add.Tensor(%a, %w)\n"         /* 4 */
		"  %p: f32[8]@cuda:1{mem=cuda:1:0} = aten::add.Tensor(%c, %c)\n"           /* 5 */
		"  %q: f32[16]@cuda:1{mem=cuda:1:0} = aten::add.Tensor(%p, %p)\n"          /* 6 */
		"  %r: f32[16]@cuda:1{mem=cuda:1:0} = aten::add.Tensor(%q, %c)\n"          /* 7 */
		"  %e: f32[16]@cuda:1{mem=cuda:1:32} = aten::add.Tensor(%r, %q)\n"         /* 8 */
		"  return %e, %w, %c\n"                                                    /* 9 */
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 4, "%d diagnostics", d.n);
	const char *want[][2] = {
		{ "w", "%w (offset 64, 64 bytes, live 0..9) and %a (offset 64, 64 bytes, live 2..4) overlap in arena cuda:0" },
		{ "w", "%w (offset 64, 64 bytes, live 0..9) and %b (offset 96, 64 bytes, live 4..4) overlap in arena cuda:0" },
		{ "p", "%p (offset 0, 32 bytes, live 5..6) and %q (offset 0, 64 bytes, live 6..8) overlap in arena cuda:1" },
		{ "r", "%r (offset 0, 64 bytes, live 7..8) and %e (offset 32, 64 bytes, live 8..9) overlap in arena cuda:1" },
	};
	for (int i = 0; i < 4; i++) {
		cr_assert_str_eq(d.items[i].node, want[i][0], "report %d: %s", i, d.items[i].message);
		cr_assert(!strncmp(d.items[i].message, want[i][1], strlen(want[i][1])), "report %d: %s", i,
			  d.items[i].message);
	}
	pr_diags_free(&d);
	pr_program_free(p);
}

/* ---- the sweep against a quadratic one ---------------------------------- */

/* A planned class, for ref_overlaps. */
typedef struct ref_class {
	int64_t offset;
	int32_t cls;
	int arena;
} ref_class;

static int ref_less(const void *x, const void *y)
{
	const ref_class *a = x, *b = y;
	if (a->arena != b->arena)
		return a->arena < b->arena ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return a->cls < b->cls ? -1 : a->cls > b->cls;
}

static bool ref_overlap(const pr_lifetimes *lt, const ref_class *a, const ref_class *b)
{
	if (a->arena != b->arena)
		return false;
	const ref_class *lo = a->offset <= b->offset ? a : b, *hi = lo == a ? b : a;
	return lt->classes[lo->cls].bytes > hi->offset - lo->offset;
}

/* The overlaps of method g as the plan checker's contract (verify.h,
 * plan_check.c) has them, by brute force: the planned classes in
 * (arena, offset, class) order, arenas numbered as met in class order; at
 * each position, the classes that ended before it leave, then each class
 * that starts there, in that order, is compared with the nearest live
 * class below it, then above it, and reported against the first it
 * overlaps, or made live. Writes "FIRST SECOND" per report into out. */
static int ref_overlaps(pr_graph *g, char (*out)[300], int cap)
{
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	ref_class *pcs = calloc((size_t)lt->n_classes + 1, sizeof *pcs);
	bool *live = calloc((size_t)lt->n_classes + 1, sizeof *live);
	pr_device arenas[16];
	int n = 0, n_arenas = 0, found = 0;
	for (int32_t i = 0; i < lt->n_classes; i++) {
		const pr_plan_class *c = &lt->classes[i];
		const pr_spec *s = pr_plan_class_spec(lt, c);
		int64_t end;
		if (!s->has_mem || c->bytes <= 0 || s->mem_offset < 0 ||
		    __builtin_add_overflow(s->mem_offset, c->bytes, &end))
			continue;
		int a = 0;
		while (a < n_arenas && !pr_device_equal(arenas[a], pr_spec_mem_arena(s)))
			a++;
		if (a == n_arenas)
			arenas[n_arenas++] = pr_spec_mem_arena(s);
		pcs[n++] = (ref_class){ s->mem_offset, i, a };
	}
	qsort(pcs, (size_t)n, sizeof *pcs, ref_less);
	for (int64_t t = 0; t < lt->n_positions; t++) {
		for (int r = 0; r < n; r++)
			if (live[r] && lt->classes[pcs[r].cls].end < t)
				live[r] = false;
		for (int r = 0; r < n; r++) {
			if (lt->classes[pcs[r].cls].start != t)
				continue;
			int below = r - 1, above = r + 1, other = -1;
			while (below >= 0 && !live[below])
				below--;
			while (above < n && !live[above])
				above++;
			if (below >= 0 && ref_overlap(lt, &pcs[below], &pcs[r]))
				other = below;
			else if (above < n && ref_overlap(lt, &pcs[r], &pcs[above]))
				other = above;
			if (other < 0) {
				live[r] = true;
				continue;
			}
			const pr_plan_value *vo = pr_plan_class_base(lt, &lt->classes[pcs[other].cls]);
			const pr_plan_value *vr = pr_plan_class_base(lt, &lt->classes[pcs[r].cls]);
			char a[128], b[128];
			cr_assert_lt(found, cap);
			snprintf(out[found++], sizeof *out, "%s %s", pr_plan_value_name(vo->node, vo->elem, a, sizeof a),
				 pr_plan_value_name(vr->node, vr->elem, b, sizeof b));
		}
	}
	free(live);
	free(pcs);
	pr_lifetimes_free(lt);
	return found;
}

/* A random method over three arenas whose plan overlaps often: adds of
 * recent values, device constants defined anywhere (they live from position
 * 0), delegates with two results at one position, views sharing their
 * base's memory; offsets on a few 16-byte slots, so that many classes share
 * one, and with wide, some at 2^62 and above (too wide a key for the
 * checker's packed sort). */
static char *random_method(unsigned seed, bool wide)
{
	static const char *devices[] = { "cpu", "cuda:0", "cuda:1" };
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	len += (size_t)snprintf(text, cap, "%smethod @forward {\n  %%v0: f32[16]{mem=cpu:0} = input user \"x\"\n", OPS);
	int n = 1 + (int)(seed % 7) * 10;
	for (int i = 1; i <= n; i++) {
		unsigned r = (unsigned)rand();
		const char *dev = devices[r % 3];
		char type[96];
		int64_t offset = (int64_t)(r / 3 % 9) * 16;
		if (wide && r / 27 % 4 == 0)
			offset += (int64_t)1 << (62 - (int)(r / 108 % 3));
		int elems = 4 << (r / 324 % 3);
		if (!strcmp(dev, "cpu"))
			snprintf(type, sizeof type, "f32[%d]{mem=cpu:%lld}", elems, (long long)offset);
		else
			snprintf(type, sizeof type, "f32[%d]@%s{mem=%s:%lld}", elems, dev, dev, (long long)offset);
		int a = i - 1 - (int)(r / 972 % (unsigned)(i < 4 ? i : 4)), b = i - 1 - (int)(r / 3888 % (unsigned)(i < 8 ? i : 8));
		switch (r / 31104 % 8) {
		case 0:
			len += (size_t)snprintf(text + len, cap - len, "  %%v%d: %s = input parameter \"p%d\" data=zeros\n",
						i, type, i);
			break;
		case 1:
			len += (size_t)snprintf(text + len, cap - len,
						"  %%d%d: (f32[16]@cuda:0{mem=cuda:0:%lld}, f32[16]@cuda:0{mem=cuda:0:%lld}) = delegate @dd(%%v%d)\n"
						"  %%v%d: f32[16]@cuda:0{mem=cuda:0:%lld} = getitem %%d%d, %d\n",
						i, (long long)offset, (long long)(r / 7 % 5) * 16, a, i,
						(long long)(r % 2 ? (r / 7 % 5) * 16 : offset), i, (int)(r % 2));
			break;
		case 2:
			len += (size_t)snprintf(text + len, cap - len, "  %%v%d: %s = aten::view(%%v%d, [16])\n", i, type, a);
			break;
		default:
			len += (size_t)snprintf(text + len, cap - len, "  %%v%d: %s = aten::add.Tensor(%%v%d, %%v%d)\n", i,
						type, a, b);
		}
	}
	snprintf(text + len, cap - len, "  return %%v%d, %%v%d\n}\n", n, n / 2);
	return text;
}

Test(plan, M1_checker_sweep_matches_a_quadratic_one)
{
	/* The checker's sweep (a sort, keys, a live set of keys whose ended
	 * classes leave when met) reports what the brute-force sweep of its
	 * contract does, pair for pair and in order, over random plans in three
	 * arenas, narrow keys and wide. */
	static char want[4096][300];
	int reports = 0;
	srand(12345);
	for (unsigned seed = 0; seed < 400; seed++) {
		char *text = random_method(seed, seed % 2);
		pr_program *p = tu_parse(text);
		int n_want = ref_overlaps(p->methods[0], want, 4096);
		pr_diags d;
		check(p, &d);
		int got = 0;
		for (int i = 0; i < d.n; i++) {
			if (!strstr(d.items[i].message, ") overlap in arena "))
				continue;
			cr_assert_lt(got, n_want, "seed %u: more reports than %d: %s\n%s", seed, n_want, d.items[i].message, text);
			char first[128], second[128], needle[160];
			cr_assert_eq(sscanf(want[got], "%127s %127s", first, second), 2);
			snprintf(needle, sizeof needle, " and %%%s (offset ", second);
			cr_assert(!strcmp(d.items[i].node, first) && strstr(d.items[i].message, needle),
				  "seed %u: report %d is %s, expected %s\n%s", seed, got, d.items[i].message, want[got], text);
			got++;
		}
		cr_assert_eq(got, n_want, "seed %u: %d reports, expected %d\n%s", seed, got, n_want, text);
		reports += got;
		pr_diags_free(&d);
		pr_program_free(p);
		free(text);
	}
	cr_assert_gt(reports, 1000, "the plans overlap often enough to test the sweep: %d", reports);
}

Test(plan, M1_usage_lower_bound_counts_aliases_once)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16]{mem=cpu:0} = input user \"x\"\n"
		"  %h: f32[16]{mem=cpu:64} = aten::add.Tensor(%x, %x)\n"
		"  %r: f32[16]{mem=cpu:64} = aten::relu_(%h)\n"
		"  %v: f32[16]{mem=cpu:64} = aten::view(%r, [16])\n"
		"  %s: f32[16]{mem=cpu:0} = aten::add.Tensor(%v, %h)\n"
		"  return %s\n"
		"}\n");
	pr_diags d;
	cr_assert_eq(check(p, &d), 0);
	pr_arena_usage *u = NULL;
	cr_assert_eq(pr_plan_usage(p->methods[0], &u), 1);
	cr_assert_eq(u[0].lower_bound_bytes, 128, "h, r and v are one tensor");
	cr_assert_eq(u[0].planned_bytes, 128);
	free(u);
	pr_diags_free(&d);
	pr_program_free(p);
}

/* A pass inserted a node: the orders no longer step evenly, and lifetimes
 * still number the nodes in graph order. */
/* The walk keeps the last device and each schema's alias answer: schemas and
 * devices met again, alternating, must still give every value its own. */
Test(plan, M1_repeated_schemas_and_devices_keep_their_answers)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"              /* 0 */
		"  %a: f32[16] = aten::add.Tensor(%x, %x)\n"      /* 1 */
		"  %v: f32[16] = aten::view(%a, [16])\n"          /* 2 */
		"  %b: f32[16] = aten::add.Tensor(%v, %x)\n"      /* 3 */
		"  %w: f32[16] = aten::view(%b, [16])\n"          /* 4 */
		"  %r: f32[16] = aten::relu_(%w)\n"               /* 5 */
		"  %c: f32[16]@cuda:0 = aten::add.Tensor(%x, %x)\n" /* 6 */
		"  %d: f32[16] = aten::add.Tensor(%r, %a)\n"      /* 7 */
		"  %e: f32[16]@cuda:0 = aten::add.Tensor(%c, %c)\n" /* 8 */
		"  return %d, %e\n"                               /* 9 */
		"}\n");
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	const pr_plan_class *a = class_of(lt, "a", -1), *b = class_of(lt, "b", -1);
	cr_assert_eq(class_of(lt, "v", -1), a);
	cr_assert(b != a, "the add after a view is fresh");
	cr_assert_eq(class_of(lt, "w", -1), b, "a view met again joins its own base");
	cr_assert_eq(class_of(lt, "r", -1), b);
	cr_assert(a->start == 1 && a->end == 7, "a lives %lld..%lld", (long long)a->start, (long long)a->end);
	cr_assert(b->start == 3 && b->end == 7);
	const pr_plan_class *c = class_of(lt, "c", -1), *d = class_of(lt, "d", -1), *e = class_of(lt, "e", -1);
	cr_assert_str_eq(pr_plan_class_device(lt, c).type, "cuda");
	cr_assert(pr_device_is_host(pr_plan_class_device(lt, d)), "host after cuda");
	cr_assert(d->flags & PR_CLASS_HOST);
	cr_assert(!(e->flags & PR_CLASS_HOST), "cuda after host");
	cr_assert_eq(e->device, c->device);
	cr_assert_eq(lt->n_devices, 2);
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

Test(plan, M1_lifetimes_after_an_insertion)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"
		"  %a: f32[16] = aten::add.Tensor(%x, %x)\n"
		"  %b: f32[16] = aten::add.Tensor(%a, %a)\n"
		"  return %b\n"
		"}\n");
	pr_graph *g = p->methods[0];
	pr_node *a = pr_graph_find(g, "a"), *b = pr_graph_find(g, "b");
	pr_node *m = pr_node_new(PR_NODE_OP, "m");
	m->of_kind.schema = pr_program_find_schema(p, "aten::add.Tensor");
	m->type.kind = PR_TYPE_TENSOR;
	int64_t shape[1] = { 16 };
	pr_spec_init(&m->type.tensor, PR_F32, 1, shape);
	pr_arg *args = calloc(2, sizeof *args);
	args[0].kind = args[1].kind = PR_ARG_VALUE;
	args[0].u.value = args[1].u.value = a;
	pr_node_set_args(m, args, 2);
	cr_assert_null(pr_graph_insert_before(b, m));
	pr_arg_set_value(&b->args[1], m);   /* b = a + m */
	uint64_t step = a->order - g->first->order;
	cr_assert(g->order_stale || m->order - a->order != step, "the orders step unevenly now");
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	cr_assert_eq(lt->n_positions, 5);
	const pr_plan_class *ca = class_of(lt, "a", -1), *cm = class_of(lt, "m", -1);
	cr_assert(ca->start == 1 && ca->end == 3, "a lives %lld..%lld", (long long)ca->start, (long long)ca->end);
	cr_assert(cm->start == 2 && cm->end == 3);
	cr_assert(class_of(lt, "b", -1)->end == 4);
	pr_lifetimes_free(lt);
	pr_program_free(p);
}

/* Positions come from the orders whatever step the graph was numbered with:
 * one that is no power of two, a node numbered below the first (the walk
 * gives it the step's order), and orders so high that the step overflows
 * (the graph is renumbered and walked again). Every case gives the classes
 * of graph order. */
static void expect_chain_lifetimes(pr_graph *g)
{
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	cr_assert_eq(lt->n_positions, 6);
	const pr_plan_class *x = class_of(lt, "x", -1), *a = class_of(lt, "a", -1);
	const pr_plan_class *b = class_of(lt, "b", -1), *c = class_of(lt, "c", -1);
	cr_assert(x->start == 0 && x->end == 1, "x lives %lld..%lld", (long long)x->start, (long long)x->end);
	cr_assert(a->start == 1 && a->end == 4, "a lives %lld..%lld", (long long)a->start, (long long)a->end);
	cr_assert_eq(class_of(lt, "v", -1), b, "a view joins its base");
	cr_assert(b->start == 2 && b->end == 4, "b lives %lld..%lld", (long long)b->start, (long long)b->end);
	cr_assert(c->start == 4 && c->end == 5 && (c->flags & PR_CLASS_OUTPUT));
	pr_lifetimes_free(lt);
	uint64_t last = 0;
	pr_graph_for_each(g, n) {
		cr_assert(n == g->first || n->order > last, "the orders rise along the graph");
		last = n->order;
	}
}

Test(plan, M1_lifetimes_from_any_rising_orders)
{
	pr_program *p = tu_parse(OPS
		"method @forward {\n"
		"  %x: f32[16] = input user \"x\"\n"              /* 0 */
		"  %a: f32[16] = aten::add.Tensor(%x, %x)\n"      /* 1 */
		"  %b: f32[16] = aten::add.Tensor(%a, %a)\n"      /* 2 */
		"  %v: f32[16] = aten::view(%b, [16])\n"          /* 3 */
		"  %c: f32[16] = aten::add.Tensor(%v, %a)\n"      /* 4 */
		"  return %c\n"                                   /* 5 */
		"}\n");
	pr_graph *g = p->methods[0];
	pr_node *nodes[6];
	int k = 0;
	pr_graph_for_each(g, n)
		nodes[k++] = n;
	cr_assert_eq(k, 6);
	/* a step of 3 */
	for (int i = 0; i < k; i++)
		nodes[i]->order = 1000 + 3 * (uint64_t)i;
	g->order_stale = false;
	expect_chain_lifetimes(g);
	cr_assert_eq(nodes[5]->order, 1015, "even steps are left as they are");
	/* node 2 below node 0, node 4 off the step */
	uint64_t off[6] = { 100, 107, 5, 121, 50, 135 };
	for (int i = 0; i < k; i++)
		nodes[i]->order = off[i];
	expect_chain_lifetimes(g);
	cr_assert(nodes[2]->order == 114 && nodes[4]->order == 128, "the step's orders");
	/* a step that overflows at node 3 */
	for (int i = 0; i < k; i++)
		nodes[i]->order = UINT64_MAX - 20 + 10 * (uint64_t)(i < 3 ? i : 0);
	expect_chain_lifetimes(g);
	pr_program_free(p);
}
