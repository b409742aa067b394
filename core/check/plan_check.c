/* plan_check.c: the usage and the checker of a memory plan (docs/placement-rules.md M2,
 * F10; the contract is in passrun/verify.h), over the lifetimes of
 * passrun/plan.h.
 *
 * Usage. planned_bytes of an arena is the top of its highest planned class;
 * the lower bound is the peak, over positions, of the bytes of the planned
 * classes live there (a difference array per arena, one pass). A class counts
 * once however many aliases it has.
 *
 * Checking. Per method: every planned value sits in the arena of its own
 * device, at an offset >= 0 whose end (offset + bytes) fits in int64, so
 * that whoever sizes the arena from it cannot overflow; an alias has exactly
 * its base's memory; a host constant has none.
 * Overlaps are found by a sweep over positions: the live planned classes are
 * kept ordered by (arena, offset) as a set of their ranks (a bitset of
 * 64-way levels), and a class that starts is compared with its two
 * neighbours only. The live set never holds an overlapping pair (a class
 * that overlaps is reported and left out), so two neighbours suffice:
 * O(n log n) for n classes (the sort), never all pairs.
 * A method where no value has memory breaks no rule: it is passed over
 * without computing its lifetimes. */
#include "passrun/plan.h"
#include "passrun/radix_sort.h"
#include "passrun/verify.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- usage ------------------------------------------------------------ */

/* The arenas met so far; neighbouring classes mostly share one, so the
 * last one found is tried first. */
typedef struct arena_list {
	pr_device *d;
	int n, last;
	bool has_raw;
	pr_device_id raw;   /* the last arena looked up, by its spec's id */
	int raw_index;
} arena_list;

/* Index of arena d (canonical) in the list, adding it when new. */
static int arena_index(arena_list *l, pr_device d)
{
	if (l->n && pr_device_equal_at(&l->d[l->last], &d))
		return l->last;
	for (int i = 0; i < l->n; i++)
		if (pr_device_equal(l->d[i], d))
			return l->last = i;
	l->d = pr_xrealloc(l->d, (size_t)(l->n + 1) * sizeof *l->d);
	l->d[l->n] = d;
	return l->last = l->n++;
}

/* arena_index of the arena a spec names, with no search when it is the
 * last one's. */
static int spec_arena(arena_list *l, const pr_spec *s)
{
	if (l->has_raw && l->raw == s->mem_arena_id)
		return l->raw_index;
	l->raw_index = arena_index(l, pr_spec_mem_arena(s));
	l->raw = s->mem_arena_id;
	l->has_raw = true;
	return l->raw_index;
}

static int64_t peak_live_bytes(const pr_lifetimes *lt, const int *arena_of, int arena)
{
	/* 128-bit sums: tensors of up to 2^63 bytes each add up past int64; the
	 * peak is then reported as INT64_MAX. */
	int64_t T = lt->n_positions;
	__int128 *diff = pr_xcalloc((size_t)T + 1, sizeof *diff);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena_of[i] != arena)
			continue;
		const pr_plan_class *c = &lt->classes[i];
		diff[c->start] += c->bytes;
		diff[c->end + 1] -= c->bytes;
	}
	__int128 live = 0, peak = 0;
	for (int64_t t = 0; t < T; t++) {
		live += diff[t];
		if (live > peak)
			peak = live;
	}
	free(diff);
	return peak > INT64_MAX ? INT64_MAX : (int64_t)peak;
}

int pr_plan_usage(pr_graph *g, pr_arena_usage **out)
{
	*out = NULL;
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	arena_list arenas = { 0 };
	int *arena_of = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena_of);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		const pr_spec *s = pr_plan_class_spec(&lt->classes[i]);
		arena_of[i] = s->has_mem ? spec_arena(&arenas, s) : -1;
	}
	int n_arenas = arenas.n;
	pr_arena_usage *u = n_arenas ? pr_xcalloc((size_t)n_arenas, sizeof *u) : NULL;
	for (int a = 0; a < n_arenas; a++) {
		u[a].arena = arenas.d[a];
		u[a].lower_bound_bytes = peak_live_bytes(lt, arena_of, a);
	}
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena_of[i] < 0)
			continue;
		int64_t top;
		if (__builtin_add_overflow(pr_plan_class_spec(&lt->classes[i])->mem_offset, lt->classes[i].bytes, &top))
			top = INT64_MAX;   /* the checker reports it */
		if (top > u[arena_of[i]].planned_bytes)
			u[arena_of[i]].planned_bytes = top;
	}
	free(arenas.d);
	free(arena_of);
	pr_lifetimes_free(lt);
	*out = u;
	return n_arenas;
}

/* ---- the checker ------------------------------------------------------ */

/* A class with planned memory, for the overlap sweep: its sort key. Its
 * bytes and positions are its class's, read there: the sweep meets the
 * classes by position, in about the order of their definition, and the
 * record, no larger than a value, is written over the values already
 * checked (check_method), so that the sweep's records take no memory of
 * their own. */
typedef struct planned_class {
	int64_t offset;
	int32_t cls;           /* plan.h: class indexes are 32-bit */
	int32_t arena;
} planned_class;

_Static_assert(sizeof(planned_class) <= sizeof(pr_plan_value), "check_method writes pcs over the values");

typedef struct check_ctx {
	pr_diags *diags;
	const char *pass;
	const char *method;
	pr_lifetimes *lt;     /* check_method takes its values' memory for pcs */
	int errors;
	planned_class *pcs;   /* the classes the sweep checks, in class order */
	int64_t n_pcs;
	arena_list arenas;
} check_ctx;

static void plan_error(check_ctx *k, const pr_plan_value *v, const char *msg)
{
	char name[128];
	pr_plan_value_name(v->node, v->elem, name, sizeof name);
	pr_diags_add(k->diags, PR_SEV_ERROR, "E-PLAN", k->pass, k->method, name,
		     pr_spec_storage_bytes(pr_plan_value_spec(v)), "%%%s %s", name, msg);
	k->errors++;
}

static bool same_mem(const pr_spec *a, const pr_spec *b)
{
	if (a->has_mem != b->has_mem)
		return false;
	return !a->has_mem || (a->mem_offset == b->mem_offset && a->mem_arena_id == b->mem_arena_id);
}

/* "cuda:0:128", or "none". */
static const char *mem_str(const pr_spec *s, char *buf, size_t cap)
{
	char arena[PR_DEVICE_STR_MAX];
	if (!s->has_mem)
		snprintf(buf, cap, "none");
	else
		snprintf(buf, cap, "%s:%lld", pr_device_str(pr_spec_mem_arena(s), arena),
			 (long long)s->mem_offset);
	return buf;
}

/* The arena and offset rules of a value with planned memory, in a class of
 * class_bytes (the most any of its values spans). */
static void check_placed(check_ctx *k, const pr_plan_value *v, int64_t class_bytes)
{
	const pr_spec *s = pr_plan_value_spec(v);
	char msg[512], dev[PR_DEVICE_STR_MAX], mem[64];
	if (s->mem_arena_id != s->device_id) {
		snprintf(msg, sizeof msg, "is on %s but planned in another arena (mem=%s)",
			 pr_device_str(pr_spec_device(s), dev), mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
	if (s->mem_offset < 0) {
		snprintf(msg, sizeof msg, "has a negative offset (mem=%s)", mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
	int64_t end;
	/* No value of the class spans more than class_bytes: below that bound
	 * its own size need not be computed. */
	if (s->mem_offset >= 0 && s->mem_offset > INT64_MAX - class_bytes &&
	    __builtin_add_overflow(s->mem_offset, pr_spec_storage_bytes(s), &end)) {
		snprintf(msg, sizeof msg, "ends past the largest offset an arena can have (mem=%s and "
			 "%lld bytes overflow int64); expected offset + size of at most %lld",
			 mem_str(s, mem, sizeof mem), (long long)pr_spec_storage_bytes(s),
			 (long long)INT64_MAX);
		plan_error(k, v, msg);
	}
}

/* Keeps class cls for the overlap sweep when it holds memory at a real
 * offset (check_placed reports one that is not), read here while its spec
 * is in cache rather than in a second walk over the nodes. */
static void note_planned(check_ctx *k, int32_t cls)
{
	const pr_plan_class *c = &k->lt->classes[cls];
	const pr_spec *s = pr_plan_class_spec(c);
	int64_t end;
	if (!s->has_mem || c->bytes <= 0 || s->mem_offset < 0 ||
	    __builtin_add_overflow(s->mem_offset, c->bytes, &end))
		return;
	planned_class pc = { s->mem_offset, cls, spec_arena(&k->arenas, s) };
	/* memcpy: the bytes were a value's, and the compiler must not move a
	 * read of the value past this write (strict aliasing). */
	memcpy(&k->pcs[k->n_pcs++], &pc, sizeof pc);
}

/* Arena, alias and constant rules, one value at a time. A class's own value
 * without memory (most of a program before planning) has nothing to check.
 * Its last act is note_planned, which may write over v. */
static void check_value(check_ctx *k, const pr_plan_value *v)
{
	const pr_plan_class *c = &k->lt->classes[v->cls];
	const pr_spec *s = pr_plan_value_spec(v), *cs = pr_plan_class_spec(c);
	bool is_base = pr_plan_value_is_base(v, c);
	char msg[512], mem[64], base_mem[64], base[128];
	if (s->has_mem)
		check_placed(k, v, c->bytes);
	if (!is_base && !same_mem(s, cs)) {
		snprintf(msg, sizeof msg, "shares the memory of %%%s (an in-place result, view or getitem of it) but is planned apart (mem=%s, %%%s has mem=%s)",
			 pr_plan_value_name(c->node, c->elem, base, sizeof base), mem_str(s, mem, sizeof mem),
			 base, mem_str(cs, base_mem, sizeof base_mem));
		plan_error(k, v, msg);
	}
	if (is_base && s->has_mem && !pr_plan_class_plannable(c)) {
		snprintf(msg, sizeof msg, "is a constant on the host but has planned memory (mem=%s); only device-resident constants are planned",
			 mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
	if (is_base)
		note_planned(k, v->cls);
}

/* The sweep's live set: ranks in a bitset of 64-way levels (level 0 a bit
 * per rank, each level above a bit per nonzero word below), so that the
 * nearest live ranks either side of one are a few word operations away. */
typedef struct rank_set {
	uint64_t *lv[12];   /* 64^11 words cover any int64 rank count */
	int levels;
} rank_set;

static void rs_init(rank_set *s, int64_t n)
{
	s->levels = 0;
	do {
		n = n / 64 + 1;
		s->lv[s->levels++] = pr_xcalloc((size_t)n, sizeof(uint64_t));
	} while (n > 1);
}

static void rs_free(rank_set *s)
{
	for (int l = 0; l < s->levels; l++)
		free(s->lv[l]);
}

static bool rs_has(const rank_set *s, int64_t r)
{
	return s->lv[0][r >> 6] >> (r & 63) & 1;
}

static void rs_add(rank_set *s, int64_t r)
{
	for (int l = 0; l < s->levels; l++, r >>= 6) {
		uint64_t was = s->lv[l][r >> 6];
		s->lv[l][r >> 6] = was | 1ull << (r & 63);
		if (was)
			return;   /* the levels above already know this word */
	}
}

static void rs_remove(rank_set *s, int64_t r)
{
	for (int l = 0; l < s->levels; l++, r >>= 6)
		if ((s->lv[l][r >> 6] &= ~(1ull << (r & 63))))
			return;   /* the word still holds ranks */
}

/* The largest live rank below r, or -1. */
static int64_t rs_below(const rank_set *s, int64_t r)
{
	int l = 0;
	for (;; l++, r >>= 6) {
		if (l == s->levels)
			return -1;
		uint64_t w = s->lv[l][r >> 6] & ((1ull << (r & 63)) - 1);
		if (w) {
			r = (r & ~(int64_t)63) | (63 - __builtin_clzll(w));
			break;
		}
	}
	while (l-- > 0)
		r = r << 6 | (63 - __builtin_clzll(s->lv[l][r]));
	return r;
}

/* The smallest live rank above r, or -1. */
static int64_t rs_above(const rank_set *s, int64_t r)
{
	int l = 0;
	for (;; l++, r >>= 6) {
		if (l == s->levels)
			return -1;
		uint64_t w = s->lv[l][r >> 6] & ~((2ull << (r & 63)) - 1);
		if (w) {
			r = (r & ~(int64_t)63) | __builtin_ctzll(w);
			break;
		}
	}
	while (l-- > 0)
		r = r << 6 | __builtin_ctzll(s->lv[l][r]);
	return r;
}

/* Byte b of the sort key (arena, offset, class), least significant first:
 * bytes 0-3 the class, 4-11 the offset (>= 0), 12-15 the arena index (>= 0). */
static unsigned planned_byte(const planned_class *p, int b)
{
	if (b < 4)
		return (unsigned)((uint32_t)p->cls >> (8 * b)) & 255;
	if (b < 12)
		return (unsigned)((uint64_t)p->offset >> (8 * (b - 4))) & 255;
	return (unsigned)((uint32_t)p->arena >> (8 * (b - 12))) & 255;
}

/* The sort's order: (arena, offset), then class, so that equal memory
 * stays in class order (pcs come in class order). */
static bool pc_less(const planned_class *x, const planned_class *y)
{
	if (x->arena != y->arena)
		return x->arena < y->arena;
	if (x->offset != y->offset)
		return x->offset < y->offset;
	return x->cls < y->cls;
}

/* In place, so that the sweep's peak holds no second copy of the classes. */
PR_RADIX_SORT_DEFINE(msd_sort_planned, planned_class, planned_byte, pc_less)

/* Sorts by (arena, offset), equal memory in class order. qsort's
 * comparisons cost more than the sweep. */
static void sort_planned(planned_class *a, int64_t n)
{
	uint64_t cls = 0, offsets = 0, arenas = 0;   /* the bits some key has unlike the first */
	for (int64_t i = 1; i < n; i++) {
		cls |= (uint64_t)(uint32_t)(a[i].cls ^ a[0].cls);
		offsets |= (uint64_t)(a[i].offset ^ a[0].offset);
		arenas |= (uint64_t)(uint32_t)(a[i].arena ^ a[0].arena);
	}
	msd_sort_planned(a, n, 15, pr_radix_varying(cls, 0, 4) | pr_radix_varying(offsets, 4, 8) |
					   pr_radix_varying(arenas, 12, 4));
}

static const pr_plan_class *pc_class(const check_ctx *k, const planned_class *p)
{
	return &k->lt->classes[p->cls];
}

static bool pc_overlap(const check_ctx *k, const planned_class *a, const planned_class *b)
{
	if (a->arena != b->arena)
		return false;
	const planned_class *lo = a->offset <= b->offset ? a : b, *hi = lo == a ? b : a;
	return pc_class(k, lo)->bytes > hi->offset - lo->offset;  /* offsets >= 0 */
}

static void overlap_error(check_ctx *k, const planned_class *a, const planned_class *b)
{
	const pr_plan_class *ca = pc_class(k, a), *cb = pc_class(k, b);
	char na[128], nb[128], arena[PR_DEVICE_STR_MAX];
	pr_plan_value_name(ca->node, ca->elem, na, sizeof na);
	pr_plan_value_name(cb->node, cb->elem, nb, sizeof nb);
	pr_diags_add(k->diags, PR_SEV_ERROR, "E-PLAN", k->pass, k->method, na, ca->bytes,
		     "%%%s (offset %lld, %lld bytes, live %lld..%lld) and %%%s (offset %lld, %lld bytes, live %lld..%lld) overlap in arena %s while both are live",
		     na, (long long)a->offset, (long long)ca->bytes, (long long)ca->start, (long long)ca->end,
		     nb, (long long)b->offset, (long long)cb->bytes, (long long)cb->start, (long long)cb->end,
		     pr_device_str(pr_spec_mem_arena(pr_plan_class_spec(ca)), arena));
	k->errors++;
}

/* Inserts rank r into the live set unless it overlaps a neighbour. */
static void sweep_insert(check_ctx *k, rank_set *live, const planned_class *pcs, int64_t r)
{
	int64_t below = rs_below(live, r);
	if (below >= 0 && pc_overlap(k, &pcs[below], &pcs[r])) {
		overlap_error(k, &pcs[below], &pcs[r]);
		return;
	}
	int64_t above = rs_above(live, r);
	if (above >= 0 && pc_overlap(k, &pcs[r], &pcs[above])) {
		overlap_error(k, &pcs[above], &pcs[r]);
		return;
	}
	rs_add(live, r);
}

/* The position where the class of rank r starts (or ends). */
static uint32_t rank_position(const check_ctx *k, uint32_t r, bool by_end)
{
	const pr_plan_class *c = pc_class(k, &k->pcs[r]);
	return (uint32_t)(by_end ? c->end : c->start);
}

/* The ranks in order of the position where their class starts (or ends),
 * each position's in rank order: a counting sort over positions, through
 * head (T + 1 counters), the caller's so that both orders share it. */
static uint32_t *ranks_by_position(const check_ctx *k, bool by_end, uint32_t *head)
{
	int64_t T = k->lt->n_positions, n = k->n_pcs;
	uint32_t *order = pr_xmalloc((size_t)(n + 1) * sizeof *order);
	memset(head, 0, (size_t)(T + 1) * sizeof *head);
	for (int64_t r = 0; r < n; r++)
		head[rank_position(k, (uint32_t)r, by_end) + 1]++;
	for (int64_t t = 1; t < T; t++)
		head[t] += head[t - 1];
	for (int64_t r = 0; r < n; r++)
		order[head[rank_position(k, (uint32_t)r, by_end)]++] = (uint32_t)r;
	return order;
}

/* Positions and ranks are 32-bit, halving the sweep's arrays: orders step by
 * 2^32 in 64 bits (pr_graph_renumber), so a method has fewer than 2^32 nodes,
 * and 2^32 planned values would not fit in memory. The sweep takes, at each
 * position, the classes that start there, then drops those that end there:
 * the two orders merged, an end coming first only where it is at an earlier
 * position. Once every class has started the ends left change nothing. */
static void check_overlaps(check_ctx *k)
{
	int64_t n = k->n_pcs, T = k->lt->n_positions;
	PR_ASSERT(T < UINT32_MAX - 2 && n < UINT32_MAX);
	planned_class *pcs = k->pcs;
	sort_planned(pcs, n);
	uint32_t *head = pr_xmalloc((size_t)(T + 1) * sizeof *head);
	uint32_t *starts = ranks_by_position(k, false, head);
	uint32_t *ends = ranks_by_position(k, true, head);
	free(head);
	rank_set live;
	rs_init(&live, n);
	/* the next start's and the next end's positions, read once each */
	uint32_t at_start = n ? rank_position(k, starts[0], false) : 0;
	uint32_t at_end = n ? rank_position(k, ends[0], true) : UINT32_MAX;
	for (int64_t i = 0, j = 0; i < n;) {
		if (at_end < at_start) {
			if (rs_has(&live, ends[j]))
				rs_remove(&live, ends[j]);
			at_end = ++j < n ? rank_position(k, ends[j], true) : UINT32_MAX;
		} else {
			sweep_insert(k, &live, pcs, starts[i]);
			if (++i < n)
				at_start = rank_position(k, starts[i], false);
		}
	}
	rs_free(&live);
	free(starts);
	free(ends);
}

/* Every rule over one method's lifetimes, computed once. The sweep's
 * records are written over the values as they are checked: a value is read
 * before its record is written, and no more classes than values come before
 * it, so a record only ever lands on a value checked already. The values'
 * memory is then the records' (shrunk to them), and the sweep's peak holds
 * the classes and the records, no values (at 10^6 nodes the checker took
 * 25 MB of values, 39 of records of 32 bytes and 50 of classes at once). */
static void check_method(check_ctx *k)
{
	pr_lifetimes *lt = k->lt;
	k->pcs = (planned_class *)lt->values;
	for (int64_t i = 0; i < lt->n_values; i++) {
		if (i + 8 < lt->n_values)   /* the specs are all over the heap */
			__builtin_prefetch(&pr_plan_value_spec(&lt->values[i + 8])->has_mem);
		check_value(k, &lt->values[i]);
	}
	k->pcs = pr_xrealloc(k->pcs, (size_t)(k->n_pcs + 1) * sizeof *k->pcs);
	lt->values = NULL;
	lt->n_values = 0;
	check_overlaps(k);
	free(k->pcs);
	free(k->arenas.d);
}

/* Whether any value of g has planned memory. Every rule above is about
 * values with memory, so a method without any (a program before planning)
 * is fine as it is: one light walk instead of its lifetimes. */
static bool any_planned(const pr_graph *g)
{
	pr_graph_for_each(g, n) {
		if (n->next)
			__builtin_prefetch(&n->next->type.tensor.has_mem);
		if (n->type.kind == PR_TYPE_TENSOR && n->type.tensor.has_mem)
			return true;
		for (int i = 0; n->type.kind == PR_TYPE_TUPLE && i < n->type.n_elems; i++)
			if (n->type.elems[i].has_mem)
				return true;
	}
	return false;
}

int pr_plan_check(pr_program *p, pr_diags *diags, const char *pass_name)
{
	int errors = 0;
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		if (!any_planned(g))
			continue;
		check_ctx k = { .diags = diags, .pass = pass_name ? pass_name : "verifier", .method = g->name };
		k.lt = pr_lifetimes_compute(g);
		check_method(&k);
		errors += k.errors;
		pr_lifetimes_free(k.lt);
	}
	return errors;
}
