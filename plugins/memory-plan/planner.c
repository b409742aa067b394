/* planner.c: offsets for one arena, close to the lower bound, fast.
 *
 * The problem is dynamic storage allocation (rectangles fixed in time, free in
 * the offset axis), NP-hard in general; the lower bound is the peak, over
 * positions, of the sizes live there. The planner is the "greedy by size for
 * offset calculation" of Pisarchyk and Lee ("Efficient Memory Management for
 * Deep Neural Net Inference", 2020), which TensorFlow Lite's arena planner also
 * uses, made fast and run with several orders:
 *
 *  1. Items live for the whole method (mutable buffers, device constants) can
 *     share with nothing: they are stacked at the bottom, largest first. Every
 *     position's live sum includes them, so this costs nothing over the bound.
 *  2. The others are placed one by one in a given order. For an item, the
 *     already placed items that overlap it in time are collected, sorted by
 *     offset, and the item goes into the smallest gap between them that fits
 *     (best fit), or on top of them when none does.
 *  3. Finding the overlapping items must not look at all of them (10^6 items).
 *     The items are sorted by start once; a max segment tree over that order
 *     holds, for each placed item, its end (-1 while unplaced). The items with
 *     start <= e and end >= s are exactly those in the prefix [0, P) of the
 *     order (P by binary search) under a subtree whose max end is >= s: a
 *     descent that prunes every other subtree finds the k overlapping items in
 *     O((k + 1) log n).
 *  4. Orders tried, best plan kept, stopping as soon as a plan meets the
 *     (aligned) lower bound: by size (the paper's), by breadth (the peak live
 *     sum over the item's lifetime first, the paper's "greedy by breadth" idea
 *     applied per item), by duration, by size x duration, and by start (what
 *     an online allocator such as ggml's would do). Large programs try fewer
 *     orders: a work budget (items visited) keeps planning well under a second
 *     for 10^6 tensors, and is counted, not timed, so the plan is the same on
 *     every machine.
 *
 * Sizes are rounded up to the alignment for packing, so every offset is a
 * multiple of it; the arena's size is the top of its highest item. */
#include "planner.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

const char *const mp_order_names[] = { "size", "breadth", "duration", "area", "start", NULL };
enum { N_ORDERS = 5 };

/* Items visited (sorted, scanned) before no further order is started. */
#define MP_WORK_BUDGET 40000000LL

typedef struct span {
	int64_t lo, hi;           /* [offset, offset + aligned size) */
} span;

typedef struct engine {
	const mp_item *items;
	const int64_t *asize;     /* aligned sizes */
	int64_t m;                /* items placed by the greedy (not stacked) */
	int64_t *by_start;        /* item ids, by start */
	int64_t *starts;          /* their starts, for the binary search */
	int64_t *slot;            /* item id -> index in by_start */
	int64_t M;                /* leaves of the segment tree (power of two) */
	int64_t *tree;            /* max end of placed items per subtree; -1 none */
	int64_t *offset;          /* per item id, for the run in progress */
	struct span *found;       /* memory of the overlapping placed items */
	int64_t n_found, cap_found;
	int64_t base;             /* where the greedy starts (above the stack) */
	int64_t work;
} engine;

typedef struct sort_key {
	int64_t k1, k2, k3, id;   /* ascending on k1, k2, k3, id */
} sort_key;

static int cmp_key(const void *a, const void *b)
{
	const sort_key *x = a, *y = b;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	if (x->k3 != y->k3)
		return x->k3 < y->k3 ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_span(const void *a, const void *b)
{
	const span *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int64_t round_up(int64_t x, int64_t align)
{
	return (x + align - 1) & ~(align - 1);
}

static void collect(engine *e, int64_t node, int64_t lo, int64_t hi, int64_t P, int64_t s)
{
	if (lo >= P || e->tree[node] < s)
		return;
	e->work++;
	if (node >= e->M) {
		if (e->n_found == e->cap_found) {
			e->cap_found = e->cap_found ? 2 * e->cap_found : 256;
			e->found = pr_xrealloc(e->found, (size_t)e->cap_found * sizeof *e->found);
		}
		int64_t id = e->by_start[node - e->M];
		e->found[e->n_found++] = (span){ e->offset[id], e->offset[id] + e->asize[id] };
		return;
	}
	int64_t mid = lo + (hi - lo) / 2;
	collect(e, 2 * node, lo, mid, P, s);
	collect(e, 2 * node + 1, mid, hi, P, s);
}

/* Number of greedy items with start <= t. */
static int64_t count_started(const engine *e, int64_t t)
{
	int64_t lo = 0, hi = e->m;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (e->starts[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Best fit among the gaps of the overlapping items, else on top of them. */
static int64_t choose_offset(engine *e, int64_t need)
{
	if (e->n_found > 1)
		qsort(e->found, (size_t)e->n_found, sizeof *e->found, cmp_span);
	e->work += e->n_found;
	int64_t top = e->base, best = -1, best_gap = INT64_MAX;
	for (int64_t i = 0; i < e->n_found; i++) {
		const span *f = &e->found[i];
		if (f->lo - top >= need && f->lo - top < best_gap) {
			best = top;
			best_gap = f->lo - top;
		}
		if (f->hi > top)
			top = f->hi;
	}
	return best >= 0 ? best : top;
}

static void mark_placed(engine *e, int64_t id)
{
	int64_t x = e->M + e->slot[id];
	e->tree[x] = e->items[id].end;
	for (x /= 2; x >= 1; x /= 2) {
		int64_t l = e->tree[2 * x], r = e->tree[2 * x + 1];
		e->tree[x] = l > r ? l : r;
	}
}

/* Places the greedy items in the given order; returns the aligned peak. */
static int64_t run_greedy(engine *e, const sort_key *order)
{
	for (int64_t i = 0; i < 2 * e->M; i++)
		e->tree[i] = -1;
	int64_t peak = e->base;
	for (int64_t i = 0; i < e->m; i++) {
		int64_t id = order[i].id;
		const mp_item *it = &e->items[id];
		e->n_found = 0;
		collect(e, 1, 0, e->M, count_started(e, it->end), it->start);
		int64_t off = choose_offset(e, e->asize[id]);
		e->offset[id] = off;
		mark_placed(e, id);
		if (off + e->asize[id] > peak)
			peak = off + e->asize[id];
	}
	return peak;
}

/* ---- orders ------------------------------------------------------------ */

/* Range maximum over a profile of positions, for the breadth order. */
typedef struct range_max {
	int64_t M;
	int64_t *t;
} range_max;

static range_max range_max_build(const int64_t *v, int64_t n)
{
	range_max r = { 1, NULL };
	while (r.M < n)
		r.M *= 2;
	r.t = pr_xcalloc((size_t)(2 * r.M), sizeof *r.t);
	for (int64_t i = 0; i < n; i++)
		r.t[r.M + i] = v[i];
	for (int64_t x = r.M - 1; x >= 1; x--)
		r.t[x] = r.t[2 * x] > r.t[2 * x + 1] ? r.t[2 * x] : r.t[2 * x + 1];
	return r;
}

static int64_t range_max_query(const range_max *r, int64_t lo, int64_t hi) /* [lo, hi] */
{
	int64_t best = 0;
	for (lo += r->M, hi += r->M + 1; lo < hi; lo /= 2, hi /= 2) {
		if (lo & 1) {
			if (r->t[lo] > best)
				best = r->t[lo];
			lo++;
		}
		if (hi & 1) {
			hi--;
			if (r->t[hi] > best)
				best = r->t[hi];
		}
	}
	return best;
}

static void make_order(const engine *e, int which, const range_max *profile, sort_key *out)
{
	for (int64_t i = 0; i < e->m; i++) {
		int64_t id = e->by_start[i];
		const mp_item *it = &e->items[id];
		int64_t size = e->asize[id], dur = it->end - it->start + 1;
		sort_key k = { 0, 0, 0, id };
		switch (which) {
		case 0: k = (sort_key){ -size, -dur, it->start, id }; break;
		case 1: k = (sort_key){ -range_max_query(profile, it->start, it->end), -size, it->start, id }; break;
		case 2: k = (sort_key){ -dur, -size, it->start, id }; break;
		case 3: {
			double area = (double)size * (double)dur;
			k = (sort_key){ area > 9e18 ? INT64_MIN : -(int64_t)area, -size, it->start, id };
			break;
		}
		default: k = (sort_key){ it->start, -size, -dur, id }; break;
		}
		out[i] = k;
	}
	qsort(out, (size_t)e->m, sizeof *out, cmp_key);
}

/* ---- bounds and the stack --------------------------------------------- */

static int64_t peak_of(const mp_item *items, const int64_t *sizes, int64_t n, int64_t T, int64_t *profile)
{
	int64_t *diff = pr_xcalloc((size_t)T + 1, sizeof *diff);
	for (int64_t i = 0; i < n; i++) {
		diff[items[i].start] += sizes[i];
		diff[items[i].end + 1] -= sizes[i];
	}
	int64_t live = 0, peak = 0;
	for (int64_t t = 0; t < T; t++) {
		live += diff[t];
		if (profile)
			profile[t] = live;
		if (live > peak)
			peak = live;
	}
	free(diff);
	return peak;
}

static bool lives_throughout(const mp_item *it, int64_t T)
{
	return it->start == 0 && it->end >= T - 1;
}

/* Stacks the whole-method items at the bottom, largest first; returns the top. */
static int64_t stack_whole(mp_item *items, const int64_t *asize, int64_t n, int64_t T)
{
	int64_t k = 0;
	sort_key *keys = pr_xmalloc((size_t)(n + 1) * sizeof *keys);
	for (int64_t i = 0; i < n; i++)
		if (lives_throughout(&items[i], T) && items[i].size > 0)
			keys[k++] = (sort_key){ -asize[i], 0, 0, i };
	qsort(keys, (size_t)k, sizeof *keys, cmp_key);
	int64_t top = 0;
	for (int64_t i = 0; i < k; i++) {
		items[keys[i].id].offset = top;
		top += asize[keys[i].id];
	}
	free(keys);
	return top;
}

static void engine_init(engine *e, mp_item *items, const int64_t *asize, int64_t n, int64_t T)
{
	memset(e, 0, sizeof *e);
	e->items = items;
	e->asize = asize;
	sort_key *keys = pr_xmalloc((size_t)(n + 1) * sizeof *keys);
	for (int64_t i = 0; i < n; i++)
		if (!lives_throughout(&items[i], T) && items[i].size > 0)
			keys[e->m++] = (sort_key){ items[i].start, 0, 0, i };
	qsort(keys, (size_t)e->m, sizeof *keys, cmp_key);
	e->by_start = pr_xmalloc((size_t)(e->m + 1) * sizeof *e->by_start);
	e->starts = pr_xmalloc((size_t)(e->m + 1) * sizeof *e->starts);
	e->slot = pr_xmalloc((size_t)(n + 1) * sizeof *e->slot);
	for (int64_t i = 0; i < e->m; i++) {
		e->by_start[i] = keys[i].id;
		e->starts[i] = keys[i].k1;
		e->slot[keys[i].id] = i;
	}
	free(keys);
	e->M = 1;
	while (e->M < e->m)
		e->M *= 2;
	e->tree = pr_xmalloc((size_t)(2 * e->M) * sizeof *e->tree);
	e->offset = pr_xcalloc((size_t)n + 1, sizeof *e->offset);
}

static void engine_free(engine *e)
{
	free(e->by_start);
	free(e->starts);
	free(e->slot);
	free(e->tree);
	free(e->offset);
	free(e->found);
}

/* Tries the orders, keeping the best plan in items[].offset. */
static void plan_greedy(engine *e, mp_item *items, int64_t T, int64_t bound, mp_result *r)
{
	sort_key *order = pr_xmalloc((size_t)(e->m + 1) * sizeof *order);
	int64_t *profile = pr_xcalloc((size_t)T + 1, sizeof *profile);
	int64_t *greedy_sizes = pr_xcalloc((size_t)e->m + 1, sizeof *greedy_sizes);
	mp_item *greedy_items = pr_xmalloc((size_t)(e->m + 1) * sizeof *greedy_items);
	for (int64_t i = 0; i < e->m; i++) {
		greedy_items[i] = items[e->by_start[i]];
		greedy_sizes[i] = e->asize[e->by_start[i]];
	}
	peak_of(greedy_items, greedy_sizes, e->m, T, profile);
	range_max rm = range_max_build(profile, T);
	int64_t best = INT64_MAX;
	for (int o = 0; o < N_ORDERS && best > bound; o++) {
		if (o > 0 && e->work > MP_WORK_BUDGET)
			break;
		make_order(e, o, &rm, order);
		e->work += e->m;
		int64_t peak = run_greedy(e, order);
		r->orders_tried++;
		if (peak < best) {
			best = peak;
			r->best_order = o;
			for (int64_t i = 0; i < e->m; i++)
				items[e->by_start[i]].offset = e->offset[e->by_start[i]];
		}
	}
	free(rm.t);
	free(order);
	free(profile);
	free(greedy_sizes);
	free(greedy_items);
}

mp_result mp_plan(mp_item *items, int64_t n, int64_t T, int64_t align)
{
	mp_result r = { 0 };
	if (n == 0 || T <= 0)
		return r;
	int64_t *asize = pr_xmalloc((size_t)n * sizeof *asize);
	int64_t *raw = pr_xmalloc((size_t)n * sizeof *raw);
	for (int64_t i = 0; i < n; i++) {
		raw[i] = items[i].size;
		asize[i] = round_up(items[i].size, align);
		items[i].offset = 0;
	}
	r.lower_bound_bytes = peak_of(items, raw, n, T, NULL);
	r.aligned_lower_bound = peak_of(items, asize, n, T, NULL);
	engine e;
	engine_init(&e, items, asize, n, T);
	e.base = stack_whole(items, asize, n, T);
	if (e.m > 0)
		plan_greedy(&e, items, T, r.aligned_lower_bound, &r);
	for (int64_t i = 0; i < n; i++)
		if (items[i].size > 0 && items[i].offset + items[i].size > r.planned_bytes)
			r.planned_bytes = items[i].offset + items[i].size;
	engine_free(&e);
	free(asize);
	free(raw);
	return r;
}

/* ---- a whole method ----------------------------------------------------- */

typedef struct arena_set {
	int n;
	pr_device devices[64];
} arena_set;

static int arena_of(arena_set *s, pr_device d)
{
	for (int i = 0; i < s->n; i++)
		if (pr_device_equal(s->devices[i], d))
			return i;
	PR_ASSERT(s->n < 64);
	s->devices[s->n] = d;
	return s->n++;
}

/* M1 and M2: who gets planned memory. */
static bool wants_memory(const pr_plan_class *c, const mp_graph_options *o)
{
	if (!pr_plan_class_plannable(c))
		return false;
	if (!o->alloc_graph_input && (c->flags & PR_CLASS_USER_INPUT))
		return false;
	if (!o->alloc_graph_output && (c->flags & PR_CLASS_OUTPUT))
		return false;
	return true;
}

/* Plans the classes of one arena; writes their offsets into mem_offset[]. */
static mp_arena_report plan_arena(const pr_lifetimes *lt, const int *arena, int which,
				  int64_t align, int64_t *mem_offset)
{
	int64_t n = 0;
	for (int64_t i = 0; i < lt->n_classes; i++)
		n += arena[i] == which;
	mp_item *items = pr_xmalloc((size_t)(n + 1) * sizeof *items);
	int64_t *ids = pr_xmalloc((size_t)(n + 1) * sizeof *ids);
	n = 0;
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena[i] != which)
			continue;
		const pr_plan_class *c = &lt->classes[i];
		items[n] = (mp_item){ c->start, c->end, c->bytes, 0 };
		ids[n++] = i;
	}
	mp_arena_report rep = { pr_device_host(), n, mp_plan(items, n, lt->n_positions, align) };
	for (int64_t k = 0; k < n; k++)
		mem_offset[ids[k]] = items[k].offset;
	free(items);
	free(ids);
	return rep;
}

static bool write_mem(pr_spec *s, bool has, pr_device arena, int64_t offset)
{
	bool same = s->has_mem == has &&
		    (!has || (pr_device_equal(s->mem_arena, arena) && s->mem_offset == offset));
	s->has_mem = has;
	s->mem_arena = has ? arena : pr_device_host();
	s->mem_offset = has ? offset : 0;
	return !same;
}

bool mp_plan_graph(pr_graph *g, const mp_graph_options *o, mp_arena_report *reports,
		   int max_reports, int *n_reports)
{
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	bool changed = mp_plan_lifetimes(lt, o, reports, max_reports, n_reports);
	pr_lifetimes_free(lt);
	return changed;
}

bool mp_plan_lifetimes(const pr_lifetimes *lt, const mp_graph_options *o, mp_arena_report *reports,
		       int max_reports, int *n_reports)
{
	int *arena = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena);
	int64_t *offset = pr_xcalloc((size_t)lt->n_classes + 1, sizeof *offset);
	arena_set set = { 0 };
	for (int64_t i = 0; i < lt->n_classes; i++)
		arena[i] = wants_memory(&lt->classes[i], o) ? arena_of(&set, lt->classes[i].device) : -1;
	for (int a = 0; a < set.n; a++) {
		bool host = pr_device_is_host(set.devices[a]);
		mp_arena_report rep = plan_arena(lt, arena, a, host ? o->host_alignment : o->device_alignment, offset);
		rep.arena = set.devices[a];
		if (reports && a < max_reports)
			reports[a] = rep;
	}
	if (n_reports)
		*n_reports = set.n < max_reports ? set.n : max_reports;
	bool changed = false;
	for (int64_t v = 0; v < lt->n_values; v++) {
		int64_t c = lt->values[v].cls;
		bool has = arena[c] >= 0;
		changed |= write_mem(lt->values[v].spec, has, has ? set.devices[arena[c]] : pr_device_host(), offset[c]);
	}
	free(arena);
	free(offset);
	return changed;
}
