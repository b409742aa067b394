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
 *     share with nothing: they are stacked at the bottom, largest first (or
 *     above everything else, when that saves the top item's padding). Every
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
 *  4. Orders tried, each with best fit and with first fit (the lowest gap
 *     that fits), the best plan kept, stopping as soon as a plan meets the
 *     (aligned) lower bound: by size (the paper's), by breadth (the peak live
 *     sum over the item's lifetime first, the paper's "greedy by breadth" idea
 *     applied per item), by duration, by size x duration, by start (what an
 *     online allocator such as ggml's would do), then by sizes scaled by
 *     seeded noise (near sizes trade places).
 *  5. If the best plan is still above the bound: ruin and recreate. The items
 *     live around an item that reaches the peak are taken out and placed
 *     again in another order while the rest stay; the move is kept when the
 *     peak, then the number of items reaching it, does not grow.
 *  All of it runs under a work budget (items visited, 10^7; the local search
 *  also stops after 64 + 8n moves): counted, not timed, so the plan is the
 *  same on every machine, and a 10^6-tensor method runs one order (which
 *  meets the bound on decoder-like programs) and stops. The pseudo-random
 *  choices come from a fixed seed.
 *
 * A plan is judged by its last byte (offset + size of its highest item)
 * against the bound for aligned plans: the peak of rounded-up sizes, less
 * the largest padding (the top item needs none), never below the plain bound.
 * Sizes are rounded up to the alignment for packing, so every offset is a
 * multiple of it.
 *
 * No offset, top or sum here exceeds the sum of an arena's rounded sizes, so
 * an arena whose rounded sizes add up past INT64_MAX is not planned at all
 * (mp_arena_report.too_big): with tensors over 2^62 bytes the arithmetic
 * overflowed and gave overlapping offsets. */
#include "planner.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"
#include "passrun/radix_sort.h"

const char *const mp_order_names[] = { "size", "breadth", "duration", "area", "start", "size (perturbed)",
				       "local search", NULL };
enum { N_ORDERS = 5, N_PERTURBED = 3 };

/* Items visited (sorted, scanned) before no further order is started. */
#ifndef MP_WORK_BUDGET
#define MP_WORK_BUDGET 10000000LL
#endif

typedef struct span {
	int64_t lo, hi;           /* [offset, offset + aligned size) */
} span;

typedef struct engine {
	const mp_item *items;
	const int64_t *asize;     /* aligned sizes */
	int64_t m;                /* items placed by the greedy (not stacked) */
	int32_t *by_start;        /* item ids, by start */
	int32_t *started;         /* per position t: how many start at or before t */
	int64_t T;                /* positions */
	int32_t *slot;            /* item id -> index in by_start */
	int64_t M;                /* leaves of the segment tree (power of two) */
	int depth;                /* log2(M): the leaves' depth */
	int32_t *tree;            /* max end of placed items per subtree; -1 none */
	int64_t *offset;          /* per item id, for the run in progress */
	struct span *found;       /* memory of the overlapping placed items */
	int64_t n_found, cap_found;
	int32_t *hits;            /* find_overlapping's answer: item ids */
	int64_t n_hits, cap_hits;
	int64_t base;             /* where the greedy starts (above the stack) */
	int64_t base_top;         /* the stack's last byte */
	int64_t work;
	bool first_fit;           /* the lowest gap that fits, not the tightest */
} engine;

/* k3 is a position or a duration and id an item: both fit 32 bits (mp_plan
 * takes no more), and 24-byte keys are a quarter less to sort. */
typedef struct sort_key {
	int64_t k1, k2;
	int32_t k3, id;           /* ascending on k1, k2, k3, then id */
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

static bool span_less(const span *x, const span *y)
{
	return x->lo != y->lo ? x->lo < y->lo : x->hi < y->hi;
}

/* Byte b of a span's key (lo, hi), least significant first: 0-7 hi, 8-15
 * lo (offsets are >= 0, so unsigned order is theirs). */
static unsigned span_byte(const span *x, int b)
{
	return (uint64_t)(b < 8 ? x->hi : x->lo) >> (8 * (b & 7)) & 255;
}

PR_RADIX_SORT_DEFINE(msd_sort_spans, span, span_byte, span_less)

/* By (lo, hi): insertion sort for the few spans an item usually overlaps,
 * the radix sort, in place, over the bytes in which they differ for the
 * rare item overlapping thousands. Either gives the one sorted sequence
 * (equal spans are equal values). */
static void sort_spans(span *a, int64_t n)
{
	if (n <= 64) {
		msd_sort_spans_small(a, n);
		return;
	}
	uint64_t lo = 0, hi = 0;
	for (int64_t i = 1; i < n; i++) {
		lo |= (uint64_t)(a[i].lo ^ a[0].lo);
		hi |= (uint64_t)(a[i].hi ^ a[0].hi);
	}
	msd_sort_spans(a, n, 15, pr_radix_varying(hi, 0, 8) | pr_radix_varying(lo, 8, 8));
}

static int64_t round_up(int64_t x, int64_t align)
{
	return (x + align - 1) & ~(align - 1);
}

static void add_hit(engine *e, int64_t leaf)
{
	PR_GROW(e->hits, e->n_hits, e->cap_hits);
	e->hits[e->n_hits++] = e->by_start[leaf];
}

/* The hits under root, a subtree wholly under the prefix and entered: only
 * maxima to test. */
static void descend_inside(engine *e, int64_t root, int64_t s)
{
	int64_t stack[64 + 1]; /* a pop pushes <= 2: at most depth + 1 entries */
	int sp = 0;
	const int32_t *tree = e->tree;
	const int64_t M = e->M;
	stack[sp++] = root;
	while (sp) {
		int64_t node = stack[--sp];
		e->work++;
		if (node >= M) {
			add_hit(e, node - M);
			continue;
		}
		if (tree[2 * node + 1] >= s)
			stack[sp++] = 2 * node + 1;
		if (tree[2 * node] >= s)
			stack[sp++] = 2 * node;
	}
}

/* How many nodes of the path from the root to leaf `last` have a max end >= s:
 * maxima only fall down a path, so those nodes are its first ones, found by
 * binary search over the depth (the root's known to qualify). */
static int path_entered(const engine *e, int64_t last, int64_t s)
{
	int lo = 1, hi = e->depth + 1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (e->tree[last >> (e->depth - mid)] >= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The placed items in the prefix [0, P) of the start order whose end is >= s:
 * their ids appended to e->hits (e->n_hits of them), left to right. The
 * nodes entered are those whose first leaf is under the prefix and whose max
 * end is >= s, each counted as one unit of work, leaf or not (a property of
 * the set, not of the walk). They are the first nodes of the path from the
 * root to leaf P - 1 and, where that path turns right, the subtree on its
 * left, wholly under the prefix: walking the path apart leaves the subtrees
 * a descent that tests only maxima, one node per stack entry. The path's
 * right turns are the set bits of its last leaf: only those levels are
 * visited, from the top. The descent is the planner's inner loop: an
 * explicit stack, children tested before they are pushed. */
static void find_overlapping(engine *e, int64_t P, int64_t s)
{
	e->n_hits = 0;
	if (P <= 0 || e->tree[1] < s)
		return;   /* nothing reaches s */
	int64_t last = e->M + P - 1; /* the prefix's last leaf */
	int entered = path_entered(e, last, s), low = e->depth - entered;
	e->work += entered;
	/* the turns below an entered node: bits depth - 1 down to low */
	uint64_t turns = (uint64_t)last & ((1ull << e->depth) - 1) & ~((1ull << (low > 0 ? low : 0)) - 1);
	while (turns) {
		int bit = 63 - __builtin_clzll(turns);
		turns &= ~(1ull << bit);
		int64_t left = (last >> bit) - 1;
		if (e->tree[left] >= s)
			descend_inside(e, left, s);
	}
	if (entered == e->depth + 1)
		add_hit(e, last - e->M);
}

/* The memory of the placed items overlapping [s, t] in time, into e->found. */
static void collect(engine *e, int64_t P, int64_t s)
{
	find_overlapping(e, P, s);
	if (e->n_hits > e->cap_found) {
		e->cap_found = e->cap_hits;
		e->found = pr_xrealloc(e->found, (size_t)e->cap_found * sizeof *e->found);
	}
	for (int64_t i = 0; i < e->n_hits; i++) {
		int64_t id = e->hits[i];
		e->found[i] = (span){ e->offset[id], e->offset[id] + e->asize[id] };
	}
	e->n_found = e->n_hits;
}

/* Number of greedy items with start <= t: a table over positions, so that a
 * query costs one load instead of a binary search of random loads. */
static int64_t count_started(const engine *e, int64_t t)
{
	if (t < 0)
		return 0;
	return t < e->T ? e->started[t] : e->m;
}

/* Best fit among the gaps of the overlapping items, else on top of them. */
static int64_t choose_offset(engine *e, int64_t need)
{
	sort_spans(e->found, e->n_found);
	e->work += e->n_found;
	int64_t top = e->base, best = -1, best_gap = INT64_MAX;
	for (int64_t i = 0; i < e->n_found; i++) {
		const span *f = &e->found[i];
		if (f->lo - top >= need && f->lo - top < best_gap && (!e->first_fit || best < 0)) {
			best = top;
			best_gap = f->lo - top;
		}
		if (f->hi > top)
			top = f->hi;
	}
	return best >= 0 ? best : top;
}

/* Placing only raises maxima: the walk up stops at the first ancestor that
 * already holds the item's end or more (so do all above it). */
static void mark_placed(engine *e, int64_t id)
{
	int64_t x = e->M + e->slot[id];
	int32_t end = (int32_t)e->items[id].end;
	e->tree[x] = end;
	for (x /= 2; x >= 1 && e->tree[x] < end; x /= 2)
		e->tree[x] = end;
}

/* The top of item id at offset off: its raw size, not the rounded one (the
 * arena ends where the last byte is). */
static int64_t item_top(const engine *e, int64_t id, int64_t off)
{
	return off + e->items[id].size;
}

/* Places the greedy items in the given order; returns the plan's top. */
static int64_t run_greedy(engine *e, const sort_key *order)
{
	memset(e->tree, 0xff, (size_t)(2 * e->M) * sizeof *e->tree); /* every entry -1 */
	int64_t peak = e->base_top;
	for (int64_t i = 0; i < e->m; i++) {
		int64_t id = order[i].id;
		if (i + 16 < e->m) { /* the order jumps around the arrays */
			int64_t ahead = order[i + 16].id;
			__builtin_prefetch(&e->items[ahead]);
			__builtin_prefetch(&e->slot[ahead]);
			__builtin_prefetch(&e->asize[ahead]);
			__builtin_prefetch(&e->offset[ahead], 1);
		}
		const mp_item *it = &e->items[id];
		e->n_found = 0;
		collect(e, count_started(e, it->end), it->start);
		int64_t off = choose_offset(e, e->asize[id]);
		e->offset[id] = off;
		mark_placed(e, id);
		if (item_top(e, id, off) > peak)
			peak = item_top(e, id, off);
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

/* Word w of a key (k1, k2, k3, id) as an unsigned number, least
 * significant first: 0 holds k3 and the id, 1 k2, 2 k1, each signed field
 * biased so that unsigned order is its order. */
static uint64_t key_word(const sort_key *k, int w)
{
	if (w == 0)
		return (uint64_t)((uint32_t)k->k3 ^ 0x80000000u) << 32 | (uint32_t)k->id;
	return (uint64_t)(w == 1 ? k->k2 : k->k1) ^ (1ull << 63);
}

static unsigned key_byte(const sort_key *k, int b)
{
	return key_word(k, b >> 3) >> (8 * (b & 7)) & 255;
}

static bool key_less(const sort_key *x, const sort_key *y)
{
	return cmp_key(x, y) < 0;
}

/* In place: a second copy of 10^6 keys was the planner's largest scratch. */
PR_RADIX_SORT_DEFINE(msd_sort_keys, sort_key, key_byte, key_less)

/* Sorts keys by (k1, k2, k3, id). Sizes and durations take few values and
 * share their high bytes: the bytes no key differs in take no pass. */
static void sort_keys(sort_key *a, int64_t n)
{
	uint64_t diff[3] = { 0, 0, 0 }; /* the bits some key has unlike the first */
	for (int64_t i = 1; i < n; i++) {
		diff[0] |= key_word(&a[i], 0) ^ key_word(&a[0], 0);
		diff[1] |= key_word(&a[i], 1) ^ key_word(&a[0], 1);
		diff[2] |= key_word(&a[i], 2) ^ key_word(&a[0], 2);
	}
	uint64_t varying = 0;
	for (int w = 0; w < 3; w++)
		varying |= pr_radix_varying(diff[w], 8 * w, 8);
	msd_sort_keys(a, n, 23, varying);
}

/* splitmix64's finalizer: a fixed, portable stream of pseudo-random bits. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void make_order(const engine *e, int which, const range_max *profile, sort_key *out)
{
	for (int64_t i = 0; i < e->m; i++) {
		int32_t id = e->by_start[i], start = (int32_t)e->items[id].start;
		const mp_item *it = &e->items[id];
		int64_t size = e->asize[id], dur = it->end - it->start + 1;
		sort_key k = { 0, 0, 0, id };
		switch (which) {
		case 0: k = (sort_key){ -size, -dur, start, id }; break;
		case 1: k = (sort_key){ -range_max_query(profile, it->start, it->end), -size, start, id }; break;
		case 2: k = (sort_key){ -dur, -size, start, id }; break;
		case 3: {
			double area = (double)size * (double)dur;
			k = (sort_key){ area > 9e18 ? INT64_MIN : -(int64_t)area, -size, start, id };
			break;
		}
		case 4: k = (sort_key){ it->start, -size, (int32_t)-dur, id }; break;
		default: {
			/* by size, each size scaled by a pseudo-random factor in
			 * [0.7, 1.4): near sizes trade places, far ones do not */
			double f = 0.7 + 0.7 * (double)(mix64((uint64_t)id * 0x9e3779b97f4a7c15ull + (uint64_t)which) >> 11) / 9007199254740992.0;
			k = (sort_key){ -(int64_t)((double)size * f), -dur, start, id };
			break;
		}
		}
		out[i] = k;
	}
	/* The id last makes the keys unique: one order, whatever the sort.
	 * The keys come by (start, id) and hold the start as k3 (as k1 in the
	 * start order), so it is the order a stable sort on the fields before
	 * would give. */
	sort_keys(out, e->m);
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

/* peak_of for raw and for rounded sizes at once: one walk over the items
 * and the positions. */
static void peaks_of(const mp_item *items, const int64_t *asize, int64_t n, int64_t T,
		     int64_t *raw_peak, int64_t *aligned_peak)
{
	int64_t (*diff)[2] = pr_xcalloc((size_t)T + 1, sizeof *diff);
	for (int64_t i = 0; i < n; i++) {
		diff[items[i].start][0] += items[i].size;
		diff[items[i].end + 1][0] -= items[i].size;
		diff[items[i].start][1] += asize[i];
		diff[items[i].end + 1][1] -= asize[i];
	}
	int64_t live[2] = { 0, 0 }, peak[2] = { 0, 0 };
	for (int64_t t = 0; t < T; t++)
		for (int k = 0; k < 2; k++) {
			live[k] += diff[t][k];
			if (live[k] > peak[k])
				peak[k] = live[k];
		}
	free(diff);
	*raw_peak = peak[0];
	*aligned_peak = peak[1];
}

static bool lives_throughout(const mp_item *it, int64_t T)
{
	return it->start == 0 && it->end >= T - 1;
}

/* Stacks the whole-method items at the bottom, largest first; returns where
 * the next item may start, *last_byte where the last one ends. */
static int64_t stack_whole(mp_item *items, const int64_t *asize, int64_t n, int64_t T, int64_t *last_byte)
{
	int64_t k = 0;
	sort_key *keys = pr_xmalloc((size_t)(n + 1) * sizeof *keys);
	for (int64_t i = 0; i < n; i++)
		if (lives_throughout(&items[i], T) && items[i].size > 0)
			keys[k++] = (sort_key){ -asize[i], 0, 0, (int32_t)i };
	qsort(keys, (size_t)k, sizeof *keys, cmp_key);
	int64_t top = 0;
	*last_byte = 0;
	for (int64_t i = 0; i < k; i++) {
		items[keys[i].id].offset = top;
		*last_byte = top + items[keys[i].id].size;
		top += asize[keys[i].id];
	}
	free(keys);
	return top;
}

/* Sorts the ids by (start, id). */
static void sort_by_start(const mp_item *items, int32_t *ids, int64_t m)
{
	sort_key *keys = pr_xmalloc((size_t)(m + 1) * sizeof *keys);
	for (int64_t i = 0; i < m; i++)
		keys[i] = (sort_key){ items[ids[i]].start, 0, 0, ids[i] };
	qsort(keys, (size_t)m, sizeof *keys, cmp_key);
	for (int64_t i = 0; i < m; i++)
		ids[i] = keys[i].id;
	free(keys);
}

static void engine_init(engine *e, mp_item *items, const int64_t *asize, int64_t n, int64_t T)
{
	memset(e, 0, sizeof *e);
	e->items = items;
	e->asize = asize;
	e->by_start = pr_xmalloc((size_t)(n + 1) * sizeof *e->by_start);
	bool sorted = true; /* items usually come in graph order already: no keys */
	for (int64_t i = 0; i < n; i++)
		if (!lives_throughout(&items[i], T) && items[i].size > 0) {
			sorted = sorted && (!e->m || items[e->by_start[e->m - 1]].start <= items[i].start);
			e->by_start[e->m++] = (int32_t)i;
		}
	if (!sorted)
		sort_by_start(items, e->by_start, e->m);
	e->T = T;
	e->started = pr_xcalloc((size_t)T + 1, sizeof *e->started);
	e->slot = pr_xmalloc((size_t)(n + 1) * sizeof *e->slot);
	for (int64_t i = 0; i < e->m; i++) {
		e->started[items[e->by_start[i]].start]++;
		e->slot[e->by_start[i]] = (int32_t)i;
	}
	for (int64_t t = 1; t < T; t++)
		e->started[t] += e->started[t - 1];
	e->M = 1;
	for (e->depth = 0; e->M < e->m; e->depth++)
		e->M *= 2;
	e->tree = pr_xmalloc((size_t)(2 * e->M) * sizeof *e->tree);
	e->offset = pr_xcalloc((size_t)n + 1, sizeof *e->offset);
}

static void engine_free(engine *e)
{
	free(e->by_start);
	free(e->started);
	free(e->slot);
	free(e->tree);
	free(e->offset);
	free(e->found);
	free(e->hits);
}

/* ---- local search ------------------------------------------------------ */

/* The plan's peak, and how many items reach it (fewer is closer to a
 * lower peak: the search's second objective). */
static int64_t plan_peak(const engine *e, int64_t *n_at_peak)
{
	int64_t peak = e->base_top, n = 0;
	for (int64_t i = 0; i < e->m; i++) {
		int64_t id = e->by_start[i], top = item_top(e, id, e->offset[id]);
		if (top > peak) {
			peak = top;
			n = 0;
		}
		n += top == peak;
	}
	*n_at_peak = n;
	return peak;
}

static void set_placed(engine *e, int64_t id, bool placed)
{
	int64_t x = e->M + e->slot[id];
	e->tree[x] = placed ? (int32_t)e->items[id].end : -1;
	for (x /= 2; x >= 1; x /= 2) {
		int32_t l = e->tree[2 * x], r = e->tree[2 * x + 1];
		e->tree[x] = l > r ? l : r;
	}
}

/* The ids of the placed items live somewhere in [s, t]. */
static int64_t collect_ids(engine *e, int64_t s, int64_t t, int64_t **ids, int64_t *cap)
{
	find_overlapping(e, count_started(e, t), s);
	if (e->n_hits > *cap) {
		*cap = e->n_hits;
		*ids = pr_xrealloc(*ids, (size_t)*cap * sizeof **ids);
	}
	for (int64_t i = 0; i < e->n_hits; i++)
		(*ids)[i] = e->hits[i];
	return e->n_hits;
}

/* Places ids[0..n) again, in order of their sizes scaled by noise. */
static void replace_items(engine *e, const int64_t *ids, int64_t n, uint64_t seed, sort_key *keys)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t id = ids[i];
		double f = 0.6 + 0.8 * (double)(mix64(seed ^ ((uint64_t)id * 0x9e3779b97f4a7c15ull)) >> 11) / 9007199254740992.0;
		const mp_item *it = &e->items[id];
		switch (seed % 3) {
		case 0: keys[i] = (sort_key){ -(int64_t)((double)e->asize[id] * f), it->start, 0, id }; break;
		case 1: keys[i] = (sort_key){ it->start, -e->asize[id], 0, id }; break;
		default: keys[i] = (sort_key){ -(int64_t)((double)(it->end - it->start + 1) * f), -e->asize[id], 0, id }; break;
		}
	}
	qsort(keys, (size_t)n, sizeof *keys, cmp_key);
	for (int64_t i = 0; i < n; i++) {
		int64_t id = keys[i].id;
		const mp_item *it = &e->items[id];
		e->n_found = 0;
		collect(e, count_started(e, it->end), it->start);
		e->offset[id] = choose_offset(e, e->asize[id]);
		set_placed(e, id, true);
	}
}

/* Ruin and recreate: the items live around an item that sets the peak are
 * taken out and placed again in another order, the rest staying where they
 * are; the move is kept when the peak does not grow. A few hundred moves fix
 * most of what greedy orders leave above the bound. */
static int64_t local_search(engine *e, int64_t peak, int64_t bound, int64_t budget)
{
	int64_t *ids = NULL, cap = 0, *saved = NULL, saved_cap = 0;
	sort_key *keys = NULL;
	int64_t keys_cap = 0, n_at_peak;
	plan_peak(e, &n_at_peak);
	/* The bound may be out of reach: small problems stop after a number of
	 * moves proportional to their size, large ones at the budget. */
	uint64_t max_iter = 64 + 8 * (uint64_t)e->m;
	for (uint64_t iter = 0; peak > bound && e->work < budget && iter < max_iter; iter++) {
		int64_t top_id = -1, n_top = 0;
		for (int64_t i = 0; i < e->m; i++) {
			int64_t id = e->by_start[i];
			if (item_top(e, id, e->offset[id]) != peak)
				continue;
			n_top++; /* one of the items at the peak, at random */
			if (mix64(iter * 31 + (uint64_t)n_top) % (uint64_t)n_top == 0)
				top_id = id;
		}
		e->work += e->m;
		const mp_item *it = &e->items[top_id];
		int64_t widen = (int64_t)(mix64(iter) % 4) * (it->end - it->start + 1);
		int64_t n = collect_ids(e, it->start - widen, it->end + widen, &ids, &cap);
		if (n > saved_cap || n > keys_cap) {
			saved_cap = keys_cap = n;
			saved = pr_xrealloc(saved, (size_t)n * sizeof *saved);
			keys = pr_xrealloc(keys, (size_t)n * sizeof *keys);
		}
		for (int64_t i = 0; i < n; i++) {
			saved[i] = e->offset[ids[i]];
			set_placed(e, ids[i], false);
		}
		replace_items(e, ids, n, mix64(iter + 0x5eed), keys);
		int64_t n_np, np = plan_peak(e, &n_np);
		e->work += e->m;
		if (np < peak || (np == peak && n_np <= n_at_peak)) {
			peak = np;
			n_at_peak = n_np;
			continue;
		}
		for (int64_t i = 0; i < n; i++)
			e->offset[ids[i]] = saved[i];
	}
	free(ids);
	free(saved);
	free(keys);
	return peak;
}

/* Tries the orders, keeping the best plan in items[].offset. */
/* The peak live sum over positions, as a range-max structure: the breadth
 * order's key. Built when that order is first needed. */
static range_max breadth_profile(const engine *e, const mp_item *items, int64_t T)
{
	int64_t *profile = pr_xcalloc((size_t)T + 1, sizeof *profile);
	int64_t *sizes = pr_xcalloc((size_t)e->m + 1, sizeof *sizes);
	mp_item *greedy = pr_xmalloc((size_t)(e->m + 1) * sizeof *greedy);
	for (int64_t i = 0; i < e->m; i++) {
		greedy[i] = items[e->by_start[i]];
		sizes[i] = e->asize[e->by_start[i]];
	}
	peak_of(greedy, sizes, e->m, T, profile);
	range_max rm = range_max_build(profile, T);
	free(profile);
	free(sizes);
	free(greedy);
	return rm;
}

static void plan_greedy(engine *e, mp_item *items, int64_t T, int64_t bound, mp_result *r)
{
	sort_key *order = pr_xmalloc((size_t)(e->m + 1) * sizeof *order);
	range_max rm = { 0, NULL };
	int64_t best = INT64_MAX;
	for (int a = 0; a < 2 * (N_ORDERS + N_PERTURBED) && best > bound; a++) {
		int o = a / 2;
		if (a > 0 && e->work > MP_WORK_BUDGET)
			break;
		e->first_fit = !(a % 2); /* first fit first: it wins more often */
		if (o == 1 && !rm.t)
			rm = breadth_profile(e, items, T);
		make_order(e, o, &rm, order);
		e->work += e->m;
		int64_t peak = run_greedy(e, order);
		r->orders_tried++;
		if (peak < best) {
			best = peak;
			r->best_order = o < N_ORDERS ? o : N_ORDERS;
			r->first_fit = e->first_fit;
			for (int64_t i = 0; i < e->m; i++)
				items[e->by_start[i]].offset = e->offset[e->by_start[i]];
		}
	}
	if (best > bound && e->work < MP_WORK_BUDGET) {
		/* start from the best plan: every item placed at its offset */
		for (int64_t i = 0; i < e->m; i++) {
			e->offset[e->by_start[i]] = items[e->by_start[i]].offset;
			set_placed(e, e->by_start[i], true);
		}
		e->first_fit = r->first_fit;
		int64_t peak = local_search(e, best, bound, MP_WORK_BUDGET);
		if (peak < best) {
			best = peak;
			r->best_order = N_ORDERS + 1;
			for (int64_t i = 0; i < e->m; i++)
				items[e->by_start[i]].offset = e->offset[e->by_start[i]];
		}
	}
	free(rm.t);
	free(order);
}

static int64_t last_byte(const mp_item *items, int64_t n)
{
	int64_t top = 0;
	for (int64_t i = 0; i < n; i++)
		if (items[i].size > 0 && items[i].offset + items[i].size > top)
			top = items[i].offset + items[i].size;
	return top;
}

/* The stack of whole-method items may as well sit above the others: every
 * item overlaps it in time, so moving it keeps the plan valid, and the top
 * item needs no padding: the cheaper way round wins (small tensors). The
 * stack keeps its order, its most padded item last. */
static void stack_on_top_if_smaller(mp_item *items, const int64_t *asize, int64_t n, int64_t T,
				    int64_t base)
{
	int64_t below = last_byte(items, n), others_top = 0, pad_last = -1, last = -1;
	for (int64_t i = 0; i < n; i++) {
		if (items[i].size <= 0)
			continue;
		if (!lives_throughout(&items[i], T)) {
			if (items[i].offset - base + asize[i] > others_top)
				others_top = items[i].offset - base + asize[i];
		} else if (asize[i] - items[i].size > pad_last) {
			pad_last = asize[i] - items[i].size;
			last = i;
		}
	}
	if (last < 0 || others_top + base - pad_last >= below)
		return;
	int64_t next = others_top;
	for (int64_t i = 0; i < n; i++) {
		if (items[i].size <= 0)
			continue;
		if (!lives_throughout(&items[i], T))
			items[i].offset -= base;
		else if (i != last) {
			items[i].offset = next;
			next += asize[i];
		}
	}
	items[last].offset = next;
}

mp_result mp_plan(mp_item *items, int64_t n, int64_t T, int64_t align)
{
	mp_result r = { 0 };
	if (n == 0 || T <= 0)
		return r;
	PR_ASSERT(n < INT32_MAX && T <= INT32_MAX);   /* ids, positions: 32-bit */
	int64_t *asize = pr_xmalloc((size_t)n * sizeof *asize);
	for (int64_t i = 0; i < n; i++) {
		asize[i] = round_up(items[i].size, align);
		items[i].offset = 0;
	}
	/* Offsets are multiples of align, so under the top item of a position
	 * every live item takes its rounded size: a plan needs at least the peak
	 * of rounded sizes less the top item's padding (at most the largest). */
	int64_t aligned_peak, max_pad = 0;
	peaks_of(items, asize, n, T, &r.lower_bound_bytes, &aligned_peak);
	for (int64_t i = 0; i < n; i++)
		if (asize[i] - items[i].size > max_pad)
			max_pad = asize[i] - items[i].size;
	r.aligned_lower_bound = aligned_peak - max_pad > r.lower_bound_bytes ? aligned_peak - max_pad
									     : r.lower_bound_bytes;
	engine e;
	engine_init(&e, items, asize, n, T);
	e.base = stack_whole(items, asize, n, T, &e.base_top);
	if (e.m > 0)
		plan_greedy(&e, items, T, r.aligned_lower_bound, &r);
	if (e.base > 0 && e.m > 0)
		stack_on_top_if_smaller(items, asize, n, T, e.base);
	for (int64_t i = 0; i < n; i++)
		if (items[i].size > 0 && items[i].offset + items[i].size > r.planned_bytes)
			r.planned_bytes = items[i].offset + items[i].size;
	engine_free(&e);
	free(asize);
	return r;
}

/* ---- a whole method ----------------------------------------------------- */

typedef struct arena_set {
	int n;
	int last;                 /* the arena arena_of found last */
	pr_device devices[MP_MAX_ARENAS];
} arena_set;

/* Neighbouring classes are mostly on one device: the last answer first,
 * and the same bytes before pr_device_equal (the same bytes are the same
 * device; other bytes may still name it, so it decides then). */
static int arena_of(arena_set *s, pr_device d)
{
	if (s->n && !memcmp(&s->devices[s->last], &d, sizeof d))
		return s->last;
	for (int i = 0; i < s->n; i++)
		if (!memcmp(&s->devices[i], &d, sizeof d))
			return s->last = i;
	for (int i = 0; i < s->n; i++)
		if (pr_device_equal(s->devices[i], d))
			return s->last = i;
	PR_ASSERT(s->n < MP_MAX_ARENAS);
	s->devices[s->n] = d;
	return s->last = s->n++;
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

/* One arena's classes, gathered for every arena in one walk over the
 * classes (a 10^6-class method's classes are 40 MB: a walk per arena and
 * per question costs more than planning them). The arenas' items are
 * consecutive runs of one array, sized by a counting walk first; a class
 * finds its item (and so its offset, once planned) by its slot. */
typedef struct arena_items {
	int64_t n;           /* classes in the arena */
	mp_item *items;      /* their lifetimes and sizes, in class order */
	int64_t align;       /* 0: the device's type is not registered */
	int64_t total;       /* their sizes rounded up to align, summed */
	bool too_big;        /* that sum passes INT64_MAX */
	bool planned;        /* mp_plan gave its items offsets */
} arena_items;

/* Appends class c to arena a, counting its rounded size in. */
static void gather_class(arena_items *a, const pr_plan_class *c)
{
	int64_t rounded;
	a->items[a->n++] = (mp_item){ c->start, c->end, c->bytes, 0 };
	if (!a->align || a->too_big)
		return;
	if (__builtin_add_overflow(c->bytes, a->align - 1, &rounded) ||
	    __builtin_add_overflow(a->total, rounded & ~(a->align - 1), &a->total))
		a->too_big = true;
}

/* Plans the classes of one arena: their offsets stay in a->items. */
static mp_arena_report plan_arena(const pr_lifetimes *lt, arena_items *a)
{
	if (a->too_big)
		return (mp_arena_report){ pr_device_host(), a->n, { 0 }, true, false };
	a->planned = true;
	return (mp_arena_report){ pr_device_host(), a->n, mp_plan(a->items, a->n, lt->n_positions, a->align),
				  false, false };
}

static bool write_mem(pr_spec *s, bool has, pr_device_id arena, int64_t offset)
{
	bool same = s->has_mem == has && (!has || (s->mem_arena_id == arena && s->mem_offset == offset));
	s->has_mem = has;
	s->mem_arena_id = has ? arena : PR_DEVICE_ID_HOST;
	s->mem_offset = has ? offset : 0;
	return !same;
}

/* The option's alignment for the host or for devices, raised to what the
 * arena's device type needs (device.h). */
static int64_t arena_alignment(const mp_graph_options *o, pr_device d, const pr_device_type *t)
{
	int64_t a = pr_device_is_host(d) ? o->host_alignment : o->device_alignment;
	return a > t->alignment ? a : t->alignment;
}

bool mp_plan_graph(pr_graph *g, const mp_graph_options *o, mp_arena_report *reports,
		   int max_reports, int *n_reports)
{
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	bool changed = mp_plan_lifetimes(lt, o, reports, max_reports, n_reports);
	pr_lifetimes_free(lt);
	return changed;
}

/* Each class's arena (-1: none) into arena[], counting the arenas'
 * classes into per[]. */
static void assign_arenas(const pr_lifetimes *lt, const mp_graph_options *o, arena_set *set,
			  arena_items *per, int8_t *arena)
{
	/* per device of lt: its arena, -2 until a class wanting memory asks */
	int8_t *arena_of_device = pr_xmalloc((size_t)(lt->n_devices + 1) * sizeof *arena_of_device);
	memset(arena_of_device, -2, (size_t)(lt->n_devices + 1));
	for (int64_t i = 0; i < lt->n_classes; i++) {
		const pr_plan_class *c = &lt->classes[i];
		bool wants = wants_memory(c, o);
		if (wants && arena_of_device[c->device] == -2)
			arena_of_device[c->device] = (int8_t)arena_of(set, pr_plan_class_device(lt, c));
		arena[i] = wants ? arena_of_device[c->device] : -1;
		if (arena[i] >= 0)
			per[arena[i]].n++;
	}
	free(arena_of_device);
}

/* The items of every arena, one run each of the returned array; slot[i]
 * is class i's item (when arena[i] >= 0). */
static mp_item *gather_items(const pr_lifetimes *lt, const mp_graph_options *o, const arena_set *set,
			     arena_items *per, const int8_t *arena, int32_t *slot)
{
	int64_t total = 0;
	for (int a = 0; a < set->n; a++)
		total += per[a].n;
	mp_item *items = pr_xmalloc((size_t)(total + 1) * sizeof *items);
	int64_t base = 0;
	for (int a = 0; a < set->n; a++) {
		const pr_device_type *t = pr_device_type_find(set->devices[a].type);
		per[a].align = t ? arena_alignment(o, set->devices[a], t) : 0;
		per[a].items = items + base;
		base += per[a].n;
		per[a].n = 0;
	}
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena[i] < 0)
			continue;
		arena_items *a = &per[arena[i]];
		slot[i] = (int32_t)(a->items - items + a->n);
		gather_class(a, &lt->classes[i]);
	}
	return items;
}

bool mp_plan_lifetimes(pr_lifetimes *lt, const mp_graph_options *o, mp_arena_report *reports,
		       int max_reports, int *n_reports)
{
	int8_t *arena = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena); /* < MP_MAX_ARENAS */
	int32_t *slot = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *slot);
	arena_set set = { 0 };
	arena_items per[MP_MAX_ARENAS] = { 0 };
	assign_arenas(lt, o, &set, per, arena);
	mp_item *items = gather_items(lt, o, &set, per, arena, slot);
	/* Gathered, the classes are not read again: their memory goes back
	 * before the planner takes its own. */
	free(lt->classes);
	lt->classes = NULL;
	for (int a = 0; a < set.n; a++) {
		mp_arena_report rep = { .n_items = per[a].n, .unknown_type = !per[a].align };
		if (per[a].align)
			rep = plan_arena(lt, &per[a]);
		rep.arena = set.devices[a];
		if (reports && a < max_reports)
			reports[a] = rep;
	}
	if (n_reports)
		*n_reports = set.n < max_reports ? set.n : max_reports;
	bool changed = false;
	pr_device_id *arena_id = pr_xmalloc((size_t)(set.n ? set.n : 1) * sizeof *arena_id);
	for (int i = 0; i < set.n; i++)
		arena_id[i] = pr_device_intern(set.devices[i]);
	for (int64_t v = 0; v < lt->n_values; v++) {
		if (v + 8 < lt->n_values)
			__builtin_prefetch(&pr_plan_value_spec(&lt->values[v + 8])->has_mem, 1);
		int64_t c = lt->values[v].cls;
		/* unplanned arenas' classes get none: the pass reports the arena */
		bool has = arena[c] >= 0 && per[arena[c]].planned;
		changed |= write_mem(pr_plan_value_spec(&lt->values[v]), has,
				     has ? arena_id[arena[c]] : PR_DEVICE_ID_HOST, has ? items[slot[c]].offset : 0);
	}
	free(arena_id);
	free(items);
	free(arena);
	free(slot);
	return changed;
}
