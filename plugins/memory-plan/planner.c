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
 *     O((k + 1) log n). Most items are short (a decoder's live a few
 *     positions), so a query first tries a window: with every item longer
 *     than a duration d counted as long (at most 64 of them, d chosen from
 *     the durations), a short item that overlaps [s, e] started after s - d,
 *     so the hits are the placed long items plus the window's leaves read in
 *     a row; a window of more than 64 leaves goes to the tree. The work the
 *     budget counts is the tree's either way, so the orders tried do not
 *     change.
 *  3b. Orders are sorted stably on their leading fields only (8-byte records
 *     of key bytes and id, an LSD radix sort over the bytes that vary): the
 *     items come by (start, id), which is every order's tie-break.
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

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
	int64_t align;            /* sizes round up to it (asize_of) */
	int64_t m;                /* items placed by the greedy (not stacked) */
	int64_t n_whole;          /* items stacked (stack_whole): living
				   * throughout, not empty */
	int32_t *by_start;        /* item ids, by start */
	int32_t *started;         /* per position t: how many start at or before t */
	int64_t T;                /* positions */
	int32_t *slot;            /* item id -> index in by_start */
	int64_t M;                /* leaves of the segment tree (power of two) */
	int depth;                /* log2(M): the leaves' depth */
	int block_h;              /* the blocks' height: min(BLOCK_H, depth) */
	int32_t *tree;            /* max end of placed items per subtree; -1 none */
	int64_t *offset;          /* per item id, for the run in progress */
	struct span *found;       /* memory of the overlapping placed items */
	int64_t n_found, cap_found;
	int32_t *hits;            /* find_overlapping's answer: item ids */
	int64_t n_hits, cap_hits;
	int64_t short_dur;        /* items living longer are long (0: no query
				   * takes the near path, find_near) */
	int32_t long_slots[64];   /* the placed long items' slots, ascending */
	int n_long;
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

/* Item id's size rounded up to the alignment, what it takes in the packing:
 * computed where it is read (an array of them was 8 bytes an item of the
 * peak the plan adds to the run's). */
static inline int64_t asize_of(const engine *e, int64_t id)
{
	return round_up(e->items[id].size, e->align);
}

/* The segment tree's bottom levels are read as blocks of 2^BLOCK_H leaves
 * (16 ends, a cache line): one comparison of the block against s gives a
 * mask of its leaves, the hits are its set bits and the nodes entered under
 * the block are counted from it, level by level, without visiting them. */
enum { BLOCK_H = 4 };

/* Leaf i of the block whose leaves start at v: bit i when its end is >= s
 * (s >= -1: every end is). */
static inline uint32_t block_mask(const int32_t *v, int n_leaves, int32_t s)
{
#ifdef __SSE2__
	if (n_leaves == 16) {
		__m128i t = _mm_set1_epi32(s - 1);
		__m128i a = _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)v), t);
		__m128i b = _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)(v + 4)), t);
		__m128i c = _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)(v + 8)), t);
		__m128i d = _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)(v + 12)), t);
		return (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
	}
#endif
	uint32_t m = 0;
	for (int i = 0; i < n_leaves; i++)
		m |= (uint32_t)(v[i] >= s) << i;
	return m;
}

static inline int popcount32(uint32_t x)
{
	x = x - (x >> 1 & 0x55555555u);
	x = (x & 0x33333333u) + (x >> 2 & 0x33333333u);
	x = (x + (x >> 4)) & 0x0f0f0f0fu;
	return (int)(x * 0x01010101u >> 24);
}

/* The block whose leaves start at node `first` (a multiple of its 2^h
 * leaves), up to its leaf `l`: its hits appended to e->hits, and the nodes
 * entered under it counted as work: those whose first leaf is <= l and
 * whose max end (over all their leaves) is >= s, below the block's root.
 * Level k's nodes sit at the bits of their first leaves; the four levels a
 * block can have are packed into one word and counted at once. */
static inline void scan_block(engine *e, int64_t first, int h, int l, int32_t s)
{
	uint32_t m = block_mask(e->tree + first, 1 << h, s), lim = (2u << l) - 1;
	uint32_t m1 = (m | m >> 1) & 0x5555u, m2 = (m1 | m1 >> 2) & 0x1111u, m3 = (m2 | m2 >> 4) & 0x0101u;
	/* level 0 at bits 0-15, 1 at 16-30 (even), 2 at 17 + 4k, 3 at 19 + 8k */
	uint32_t all = (h > 0 ? m & lim : 0) | (h > 1 ? (m1 & lim) << 16 : 0) | (h > 2 ? (m2 & lim) << 17 : 0) |
		       (h > 3 ? (m3 & lim) << 19 : 0);
	e->work += popcount32(all);
	m &= lim;
	if (!m)
		return;
	if (e->n_hits + 16 > e->cap_hits) {
		e->cap_hits = e->cap_hits ? 2 * e->cap_hits + 16 : 64;
		e->hits = pr_xrealloc(e->hits, (size_t)e->cap_hits * sizeof *e->hits);
	}
	const int32_t *ids = e->by_start + (first - e->M);
	do {
		e->hits[e->n_hits++] = ids[__builtin_ctz(m)];
		m &= m - 1;
	} while (m);
}

/* The hits under root, a subtree of height >= the blocks' wholly under the
 * prefix and entered (counted here): only maxima to test down to the
 * blocks, each scanned whole. */
static void descend_inside(engine *e, int64_t root, int32_t s)
{
	int64_t stack[64 + 1]; /* a pop pushes <= 2: at most depth + 1 entries */
	int sp = 0, h = e->block_h;
	const int32_t *tree = e->tree;
	const int64_t blocks = e->M >> h; /* the first block root */
	stack[sp++] = root;
	while (sp) {
		int64_t node = stack[--sp];
		e->work++;
		if (node >= blocks) {
			scan_block(e, node << h, h, (1 << h) - 1, s);
			continue;
		}
		if (tree[2 * node + 1] >= s)
			stack[sp++] = 2 * node + 1;
		if (tree[2 * node] >= s)
			stack[sp++] = 2 * node;
	}
}

/* How many of the first `levels` nodes of the path from the root to leaf
 * `last` have a max end >= s: maxima only fall down a path, so those nodes
 * are its first ones, found by binary search over the depth (the root's
 * known to qualify). */
static int path_entered(const engine *e, int64_t last, int32_t s, int levels)
{
	int lo = 1, hi = levels;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (e->tree[last >> (e->depth - mid)] >= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Number of greedy items with start <= t: a table over positions, so that a
 * query costs one load instead of a binary search of random loads. */
static int64_t count_started(const engine *e, int64_t t)
{
	if (t < 0)
		return 0;
	return t < e->T ? e->started[t] : e->m;
}

/* Window leaves past which find_near leaves a query to the tree. */
enum { NEAR_MAX = 64 };

/* Overlapping items few enough for choose_few. */
enum { FEW_SPANS = 8 };

/* find_overlapping's answer without a descent, when the query's window is
 * narrow: a short item whose start is <= s - short_dur ends before s, so the
 * hits are the placed long items before the window (e->long_slots) and the
 * leaves of the window [lo, P) with an end >= s, read in a row. The work is
 * the tree's all the same, counted from the hits' slots p_1 < ... < p_k: the
 * nodes holding a hit number (depth + 1) + sum of (msb(p_i ^ p_i+1) + 1),
 * the path's nodes among them those holding p_k, and the path's other
 * entered nodes hold only placed leaves past P (every one of which ends
 * after s): the entered count less those holding p_k. Returns false, having
 * done nothing, when the window is wider than NEAR_MAX leaves. */
static bool find_near(engine *e, int64_t P, int32_t s)
{
	int64_t lo = count_started(e, (int64_t)s - e->short_dur);
	if (P - lo > NEAR_MAX)
		return false;
	if (e->n_hits + e->n_long + NEAR_MAX > e->cap_hits) {
		e->cap_hits = 2 * e->cap_hits + e->n_long + NEAR_MAX;
		e->hits = pr_xrealloc(e->hits, (size_t)e->cap_hits * sizeof *e->hits);
	}
	const int32_t *leaf = e->tree + e->M;
	int64_t prev = -1, nodes = 0, n = 0;
	for (int j = 0; j < e->n_long && e->long_slots[j] < lo; j++) {
		int64_t p = e->long_slots[j];
		if (leaf[p] >= s) {
			if (prev >= 0)
				nodes += 64 - __builtin_clzll((uint64_t)(prev ^ p));
			prev = p;
			e->hits[n++] = e->by_start[p];
		}
	}
	for (int64_t p = lo; p < P; p++)
		if (leaf[p] >= s) {
			if (prev >= 0)
				nodes += 64 - __builtin_clzll((uint64_t)(prev ^ p));
			prev = p;
			e->hits[n++] = e->by_start[p];
		}
	e->n_hits = n;
	/* The path's nodes are those of heights h > a, a = msb(p_k ^ (P - 1))
	 * (-1 when p_k is P - 1; depth with no hits), and those of heights h > b
	 * for the first leaf q >= P with an end >= s, b = msb(q ^ (P - 1)): it
	 * is under the node of height a only when it is before `limit`. */
	int a = prev < 0 ? e->depth : prev == P - 1 ? -1 : 63 - __builtin_clzll((uint64_t)(prev ^ (P - 1)));
	if (prev >= 0) /* every node holding a hit: the path's among them too */
		nodes += e->depth + 1;
	if (a >= 0) {
		int64_t limit = (((P - 1) >> a) + 1) << a;
		if (limit - P > NEAR_MAX) {
			/* far: the tree's count of the path's entered nodes */
			int64_t entered = path_entered(e, e->M + P - 1, s, e->depth + 1);
			nodes += entered - (prev < 0 ? 0 : e->depth - a); /* less those holding p_k */
		} else {
			for (int64_t q = P; q < limit; q++)
				if (leaf[q] >= s) {
					nodes += a - (63 - __builtin_clzll((uint64_t)(q ^ (P - 1))));
					break;
				}
		}
	}
	e->work += nodes;
	return true;
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
 * visited, from the top. The path's block (the last 2^block_h leaves'),
 * and the blocks the descents reach, are scanned whole (scan_block). */
static void find_overlapping(engine *e, int64_t P, int64_t s64)
{
	e->n_hits = 0;
	if (P <= 0 || e->tree[1] < s64)
		return;   /* nothing reaches s */
	int32_t s = s64 < -1 ? -1 : (int32_t)s64; /* ends are >= -1 */
	if (e->short_dur && find_near(e, P, s))
		return;
	int h = e->block_h, upper = e->depth - h + 1; /* the path's nodes down to its block's root */
	int64_t last = e->M + P - 1; /* the prefix's last leaf */
	int entered = path_entered(e, last, s, upper), low = e->depth - entered;
	e->work += entered;
	/* the turns above the block, below an entered node: bits depth - 1 down to max(low, h) */
	int from = low > h ? low : h;
	uint64_t turns = (uint64_t)(P - 1) & ((1ull << e->depth) - 1) & ~((1ull << from) - 1);
	while (turns) {
		int bit = 63 - __builtin_clzll(turns);
		turns &= ~(1ull << bit);
		int64_t left = (last >> bit) - 1;
		if (e->tree[left] >= s)
			descend_inside(e, left, s);
	}
	if (entered == upper) /* the block's root is entered */
		scan_block(e, (last >> h) << h, h, (int)((P - 1) & ((1 << h) - 1)), s);
}

/* Choosing an offset among the overlapping items' spans [lo, hi) needs them
 * in order of lo only: the sweep (the lowest gaps first) tests a gap below
 * each span, and a span whose lo equals an earlier one's has that span's hi
 * (> lo) below it, so no gap: which of them comes first changes nothing. */

/* The sweep for a few spans: read and sorted by lo by insertion as they
 * come. */
static int64_t choose_few(const engine *e, int64_t need)
{
	int64_t lo[FEW_SPANS], hi[FEW_SPANS], n = e->n_hits;
	for (int64_t i = 0; i < n; i++) {
		int64_t id = e->hits[i], l = e->offset[id], h = l + asize_of(e, id), j = i;
		for (; j > 0 && lo[j - 1] > l; j--) {
			lo[j] = lo[j - 1];
			hi[j] = hi[j - 1];
		}
		lo[j] = l;
		hi[j] = h;
	}
	int64_t top = e->base, best = -1, best_gap = INT64_MAX;
	for (int64_t i = 0; i < n; i++) {
		if (lo[i] - top >= need && lo[i] - top < best_gap && (!e->first_fit || best < 0)) {
			best = top;
			best_gap = lo[i] - top;
		}
		if (hi[i] > top)
			top = hi[i];
	}
	return best >= 0 ? best : top;
}

/* The sweep over spans by lo: best fit among the gaps, else on top of them.
 * Many spans whose lo take few values (a long item overlapping thousands of
 * small ones packed low) are bucketed by lo, the highest hi kept per bucket,
 * instead of sorted. */
static int64_t choose_offset(engine *e, int64_t need)
{
	span *f = e->found;
	int64_t n = e->n_found, top = e->base, best = -1, best_gap = INT64_MAX;
	int64_t min_lo = INT64_MAX, max_lo = 0;
	uint64_t bits = 0;
	for (int64_t i = 0; i < n; i++) {
		if (f[i].lo < min_lo)
			min_lo = f[i].lo;
		if (f[i].lo > max_lo)
			max_lo = f[i].lo;
	}
	for (int64_t i = 0; i < n; i++)
		bits |= (uint64_t)(f[i].lo - min_lo);
	int shift = bits ? __builtin_ctzll(bits) : 0;
	uint64_t buckets = ((uint64_t)(max_lo - min_lo) >> shift) + 1;
	if (buckets <= 4096 + (uint64_t)n / 16) {
		int64_t *max_hi = pr_xmalloc((size_t)buckets * sizeof *max_hi);
		for (uint64_t b = 0; b < buckets; b++)
			max_hi[b] = -1; /* hi > lo >= 0 */
		for (int64_t i = 0; i < n; i++) {
			int64_t *m = &max_hi[(uint64_t)(f[i].lo - min_lo) >> shift];
			if (f[i].hi > *m)
				*m = f[i].hi;
		}
		for (uint64_t b = 0; b < buckets; b++) {
			if (max_hi[b] < 0)
				continue;
			int64_t lo = min_lo + (int64_t)(b << shift);
			if (lo - top >= need && lo - top < best_gap && (!e->first_fit || best < 0)) {
				best = top;
				best_gap = lo - top;
			}
			if (max_hi[b] > top)
				top = max_hi[b];
		}
		free(max_hi);
		return best >= 0 ? best : top;
	}
	sort_spans(f, n);
	for (int64_t i = 0; i < n; i++) {
		if (f[i].lo - top >= need && f[i].lo - top < best_gap && (!e->first_fit || best < 0)) {
			best = top;
			best_gap = f[i].lo - top;
		}
		if (f[i].hi > top)
			top = f[i].hi;
	}
	return best >= 0 ? best : top;
}

/* Where item id goes among the placed items overlapping it in time. */
static int64_t place_item(engine *e, int64_t id)
{
	const mp_item *it = &e->items[id];
	find_overlapping(e, count_started(e, it->end), it->start);
	e->work += e->n_hits;
	if (e->n_hits <= FEW_SPANS)
		return choose_few(e, asize_of(e, id));
	if (e->n_hits > e->cap_found) {
		e->cap_found = e->cap_hits;
		e->found = pr_xrealloc(e->found, (size_t)e->cap_found * sizeof *e->found);
		/* written whole below, and grown for a query that overlaps most of
		 * the arena (10^6: 1,250 faults a page at a time) */
		pr_pages_fill(e->found, (size_t)e->n_hits * sizeof *e->found);
	}
	const mp_item *items = e->items;
	int64_t align = e->align;   /* read once: the stores to found might alias it */
	for (int64_t i = 0; i < e->n_hits; i++) {
		int64_t hid = e->hits[i];
		e->found[i] = (span){ e->offset[hid], e->offset[hid] + round_up(items[hid].size, align) };
	}
	e->n_found = e->n_hits;
	return choose_offset(e, asize_of(e, id));
}

/* Keeps e->long_slots: item id placed or not (either may be so already). */
static void note_long(engine *e, int64_t id, bool placed)
{
	const mp_item *it = &e->items[id];
	if (!e->short_dur || it->end - it->start + 1 <= e->short_dur)
		return;
	int32_t slot = e->slot[id];
	int j = 0;
	while (j < e->n_long && e->long_slots[j] < slot)
		j++;
	bool there = j < e->n_long && e->long_slots[j] == slot;
	if (placed && !there) {
		memmove(&e->long_slots[j + 1], &e->long_slots[j], (size_t)(e->n_long - j) * sizeof *e->long_slots);
		e->long_slots[j] = slot;
		e->n_long++;
	} else if (!placed && there) {
		memmove(&e->long_slots[j], &e->long_slots[j + 1], (size_t)(e->n_long - j - 1) * sizeof *e->long_slots);
		e->n_long--;
	}
}

/* Placing only raises maxima: the walk up stops at the first ancestor that
 * already holds the item's end or more (so do all above it). */
static void mark_placed(engine *e, int64_t id)
{
	note_long(e, id, true);
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
static int64_t run_greedy(engine *e, const uint64_t *order)
{
	memset(e->tree, 0xff, (size_t)(2 * e->M) * sizeof *e->tree); /* every entry -1 */
	e->n_long = 0;
	int64_t peak = e->base_top;
	for (int64_t i = 0; i < e->m; i++) {
		int64_t id = (uint32_t)order[i];
		if (i + 16 < e->m) { /* the order jumps around the arrays */
			int64_t ahead = (uint32_t)order[i + 16];
			__builtin_prefetch(&e->items[ahead]);
			__builtin_prefetch(&e->slot[ahead]);
			__builtin_prefetch(&e->offset[ahead], 1);
		}
		int64_t off = place_item(e, id);
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

/* splitmix64's finalizer: a fixed, portable stream of pseudo-random bits. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Orders' keys: up to three signed fields, compared first to last, each
 * biased into a word whose unsigned order is the field's. ORDER_STACK is the
 * stack's order (the largest first); the others are mp_order_names'. */
enum { ORDER_STACK = -1 };

static int order_fields(int which)
{
	return which == ORDER_STACK ? 1 : which == 4 ? 3 : 2;
}

static inline __attribute__((always_inline)) void order_key(const mp_item *items, int64_t align, int which,
								    const range_max *profile, int64_t id, uint64_t w[3])
{
	const mp_item *it = &items[id];
	int64_t size = round_up(it->size, align), dur = it->end - it->start + 1, k[3] = { 0, 0, 0 };
	switch (which) {
	case ORDER_STACK: k[0] = -size; break;
	case 0: k[0] = -size; k[1] = -dur; break;
	case 1: k[0] = -range_max_query(profile, it->start, it->end); k[1] = -size; break;
	case 2: k[0] = -dur; k[1] = -size; break;
	case 3: {
		double area = (double)size * (double)dur;
		k[0] = area > 9e18 ? INT64_MIN : -(int64_t)area;
		k[1] = -size;
		break;
	}
	case 4: k[0] = it->start; k[1] = -size; k[2] = -dur; break;
	default: {
		/* by size, each size scaled by a pseudo-random factor in
		 * [0.7, 1.4): near sizes trade places, far ones do not */
		double f = 0.7 + 0.7 * (double)(mix64((uint64_t)id * 0x9e3779b97f4a7c15ull + (uint64_t)which) >> 11) / 9007199254740992.0;
		k[0] = -(int64_t)((double)size * f);
		k[1] = -dur;
		break;
	}
	}
	for (int j = 0; j < 3; j++)
		w[j] = (uint64_t)k[j] ^ (1ull << 63);
}

/* sort_ids, inlined where `which` is a constant. The items and the
 * alignment are read once, not at every key (the stores to the records
 * might alias the engine's fields). */
static inline __attribute__((always_inline)) void sort_ids_in(const engine *e, int which, const range_max *profile,
								      uint64_t *a, uint64_t *tmp, int64_t n)
{
	const mp_item *items = e->items;
	int64_t align = e->align;
	int nw = order_fields(which);
	uint64_t first[3], diff[3] = { 0, 0, 0 }, w[3];
	order_key(items, align, which, profile, (uint32_t)a[0], first);
	for (int64_t i = 1; i < n; i++) {
		order_key(items, align, which, profile, (uint32_t)a[i], w);
		for (int j = 0; j < nw; j++)
			diff[j] |= w[j] ^ first[j];
	}
	/* the varying bytes, least significant first: (field, shift) */
	int8_t vary[24][2], n_vary = 0;
	for (int j = nw - 1; j >= 0; j--)
		for (int b = 0; b < 64; b += 8)
			if (diff[j] >> b & 255) {
				vary[n_vary][0] = (int8_t)j;
				vary[n_vary++][1] = (int8_t)b;
			}
	uint64_t *cur = a, *other = tmp;
	int64_t count[8][256];
	for (int c = 0; c < n_vary; c += 4) {
		int nc = n_vary - c < 4 ? n_vary - c : 4, f[4], sh[4];
		for (int k = 0; k < 4; k++) { /* the bytes past nc: word 3, zero */
			f[k] = k < nc ? vary[c + k][0] : 3;
			sh[k] = k < nc ? vary[c + k][1] : 0;
		}
		memset(count[4], 0, 4 * sizeof count[4]);
		for (int64_t i = 0; i < n; i++) {
			uint32_t id = (uint32_t)cur[i];
			uint64_t x[4];
			order_key(items, align, which, profile, id, x);
			x[3] = 0;
			uint32_t b0 = x[f[0]] >> sh[0] & 255, b1 = x[f[1]] >> sh[1] & 255, b2 = x[f[2]] >> sh[2] & 255,
				 b3 = x[f[3]] >> sh[3] & 255;
			count[4][b0]++;
			count[5][b1]++;
			count[6][b2]++;
			count[7][b3]++;
			cur[i] = (uint64_t)(b0 | b1 << 8 | b2 << 16 | b3 << 24) << 32 | id;
		}
		uint64_t *sorted = pr_radix_sort_u64_stable(cur, other, n, ((1u << nc) - 1) << 4, count);
		if (sorted != cur) {
			other = cur;
			cur = sorted;
		}
	}
	if (cur != a)
		memcpy(a, cur, (size_t)n * sizeof *a);
}

/* Sorts the ids in a[0..n) (the low 32 bits of each) stably by their keys in
 * order `which`: a stable LSD radix sort over the key bytes in which some id
 * differs from the first, four at a time packed above the id, least
 * significant first (sizes and durations take few values: a few passes in
 * all). tmp holds n records; the ids end in a, one a record's low 32 bits. */
static void sort_ids(const engine *e, int which, const range_max *profile, uint64_t *a, uint64_t *tmp, int64_t n)
{
	if (n < 2)
		return;
	if (which == 0) /* the order a 10^6-item method runs: its key inlined */
		sort_ids_in(e, 0, profile, a, tmp, n);
	else
		sort_ids_in(e, which, profile, a, tmp, n);
}

/* The greedy items' ids in order `which`, one in the low 32 bits of each of
 * out[0..m). Ties of the fields fall to (start, id): the ids come by (start,
 * id), the sort is stable, and each order's fields end with the start (or, in
 * the start order, begin with it), so equal fields mean an equal start. The
 * sort's scratch is e->offset, unused between runs. */
static void make_order(const engine *e, int which, const range_max *profile, uint64_t *out)
{
	for (int64_t i = 0; i < e->m; i++)
		out[i] = (uint32_t)e->by_start[i];
	sort_ids(e, which, profile, out, (uint64_t *)e->offset, e->m);
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

/* Stacks the whole-method items at the bottom, largest first (ties by id);
 * returns where the next item may start, *last_byte where the last one
 * ends. */
static int64_t stack_whole(const engine *e, mp_item *items, int64_t n, int64_t T, int64_t *last_byte)
{
	uint64_t *ids = pr_xmalloc((size_t)(2 * e->n_whole + 1) * sizeof *ids);
	int64_t k = 0;
	for (int64_t i = 0; i < n; i++)
		if (lives_throughout(&items[i], T) && items[i].size > 0)
			ids[k++] = (uint64_t)i;
	sort_ids(e, ORDER_STACK, NULL, ids, ids + k, k);
	int64_t top = 0;
	*last_byte = 0;
	for (int64_t i = 0; i < k; i++) {
		int64_t id = (uint32_t)ids[i];
		items[id].offset = top;
		*last_byte = top + items[id].size;
		top += asize_of(e, id);
	}
	free(ids);
	return top;
}

/* The duration past which items are long (find_near): a power of two, the
 * one for which a query is expected to read the fewest leaves (the items
 * starting in a window that long, plus the long ones), with no more long
 * items than e->long_slots holds; none (0) when even that one reads many. */
static void choose_short(engine *e)
{
	int64_t n_of[33] = { 0 }; /* items by ceil(log2(duration)) */
	for (int64_t i = 0; i < e->m; i++) {
		const mp_item *it = &e->items[e->by_start[i]];
		uint64_t dur = (uint64_t)(it->end - it->start + 1);
		n_of[dur > 1 ? 64 - __builtin_clzll(dur - 1) : 0]++;
	}
	double best = NEAR_MAX / 2;
	int64_t longer = e->m;
	e->short_dur = 0;
	for (int b = 0; b < 33; b++) {
		longer -= n_of[b]; /* lasting more than 2^b */
		double cost = (double)e->m * (double)(1ll << b) / (double)e->T + (double)longer;
		if (longer <= (int64_t)(sizeof e->long_slots / sizeof e->long_slots[0]) && cost < best) {
			best = cost;
			e->short_dur = 1ll << b;
		}
	}
}

/* The greedy items' count per start position (e->started, where each
 * position's run begins once summed), e->m and e->n_whole, and the lower
 * bounds of r (see mp_result): the peaks of raw and of rounded live sizes,
 * with the largest padding. One walk over the items (10^6 of them are 24 MB
 * read) and one over the positions serve both. The walk also clears the
 * items' offsets: the plan starts empty. */
static void scan_items(engine *e, mp_item *items, int64_t n, mp_result *r)
{
	int64_t (*diff)[2] = pr_xcalloc((size_t)e->T + 1, sizeof *diff), max_pad = 0;
	for (int64_t i = 0; i < n; i++) {
		int64_t size = items[i].size, asize = round_up(size, e->align);
		items[i].offset = 0;
		if (asize - size > max_pad)
			max_pad = asize - size;
		diff[items[i].start][0] += size;
		diff[items[i].end + 1][0] -= size;
		diff[items[i].start][1] += asize;
		diff[items[i].end + 1][1] -= asize;
		if (size > 0 && !lives_throughout(&items[i], e->T)) {
			e->started[items[i].start]++;
			e->m++;
		} else if (size > 0) {
			e->n_whole++;
		}
	}
	int64_t live[2] = { 0, 0 }, peak[2] = { 0, 0 };
	for (int64_t t = 0, sum = 0; t < e->T; t++) {
		for (int k = 0; k < 2; k++) {
			live[k] += diff[t][k];
			if (live[k] > peak[k])
				peak[k] = live[k];
		}
		int32_t c = e->started[t]; /* where position t's run begins */
		e->started[t] = (int32_t)sum;
		sum += c;
	}
	free(diff);
	/* Offsets are multiples of align, so under the top item of a position
	 * every live item takes its rounded size: a plan needs at least the peak
	 * of rounded sizes less the top item's padding (at most the largest). */
	r->lower_bound_bytes = peak[0];
	r->aligned_lower_bound = peak[1] - max_pad > peak[0] ? peak[1] - max_pad : peak[0];
}

/* The greedy items (neither living throughout nor empty) by (start, id): a
 * counting sort over the positions (scan_items counts them), and r's lower
 * bounds. */
static void engine_init(engine *e, mp_item *items, int64_t align, int64_t n, int64_t T, mp_result *r)
{
	memset(e, 0, sizeof *e);
	e->items = items;
	e->align = align;
	e->T = T;
	e->started = pr_xcalloc((size_t)T + 1, sizeof *e->started);
	scan_items(e, items, n, r);
	/* placing advances each run's start to its end: the count at or before t */
	e->by_start = pr_xmalloc((size_t)(e->m + 1) * sizeof *e->by_start);
	for (int64_t i = 0; i < n; i++)
		if (!lives_throughout(&items[i], T) && items[i].size > 0)
			e->by_start[e->started[items[i].start]++] = (int32_t)i;
	e->slot = pr_xmalloc((size_t)(n + 1) * sizeof *e->slot);
	for (int64_t i = 0; i < e->m; i++)
		e->slot[e->by_start[i]] = (int32_t)i;
	e->M = 1;
	for (e->depth = 0; e->M < e->m; e->depth++)
		e->M *= 2;
	e->block_h = e->depth < BLOCK_H ? e->depth : BLOCK_H;
	choose_short(e);
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
	note_long(e, id, placed);
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
		case 0: keys[i] = (sort_key){ -(int64_t)((double)asize_of(e, id) * f), it->start, 0, id }; break;
		case 1: keys[i] = (sort_key){ it->start, -asize_of(e, id), 0, id }; break;
		default: keys[i] = (sort_key){ -(int64_t)((double)(it->end - it->start + 1) * f), -asize_of(e, id), 0, id }; break;
		}
	}
	qsort(keys, (size_t)n, sizeof *keys, cmp_key);
	for (int64_t i = 0; i < n; i++) {
		int64_t id = keys[i].id;
		e->offset[id] = place_item(e, id);
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
		sizes[i] = asize_of(e, e->by_start[i]);
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
	uint64_t *order = pr_xmalloc((size_t)(e->m + 1) * sizeof *order);
	pr_pages_fill(order, (size_t)e->m * sizeof *order);   /* make_order writes it whole */
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
 * stack keeps its order, its most padded item last. Returns the plan's last
 * byte. */
static int64_t stack_on_top_if_smaller(mp_item *items, int64_t align, int64_t n, int64_t T, int64_t base)
{
	int64_t below = 0, others_top = 0, pad_last = -1, last = -1; /* below: last_byte's, in this walk */
	for (int64_t i = 0; i < n; i++) {
		if (items[i].size <= 0)
			continue;
		if (items[i].offset + items[i].size > below)
			below = items[i].offset + items[i].size;
		int64_t asize = round_up(items[i].size, align);
		if (!lives_throughout(&items[i], T)) {
			if (items[i].offset - base + asize > others_top)
				others_top = items[i].offset - base + asize;
		} else if (asize - items[i].size > pad_last) {
			pad_last = asize - items[i].size;
			last = i;
		}
	}
	if (last < 0 || others_top + base - pad_last >= below)
		return below;
	int64_t next = others_top;
	for (int64_t i = 0; i < n; i++) {
		if (items[i].size <= 0)
			continue;
		if (!lives_throughout(&items[i], T))
			items[i].offset -= base;
		else if (i != last) {
			items[i].offset = next;
			next += round_up(items[i].size, align);
		}
	}
	items[last].offset = next;
	return next + items[last].size; /* the others end below the stack */
}

mp_result mp_plan(mp_item *items, int64_t n, int64_t T, int64_t align)
{
	mp_result r = { 0 };
	if (n == 0 || T <= 0)
		return r;
	PR_ASSERT(n < INT32_MAX && T <= INT32_MAX);   /* ids, positions: 32-bit */
	engine e;
	engine_init(&e, items, align, n, T, &r);
	e.base = stack_whole(&e, items, n, T, &e.base_top);
	if (e.m > 0)
		plan_greedy(&e, items, T, r.aligned_lower_bound, &r);
	r.planned_bytes = e.base > 0 && e.m > 0 ? stack_on_top_if_smaller(items, align, n, T, e.base)
						: last_byte(items, n);
	engine_free(&e);
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
	bool changed = mp_plan_lifetimes(g, lt, o, reports, max_reports, n_reports);
	pr_lifetimes_free(lt);
	return changed;
}

/* The values' classes, in place of the values (a class index is read
 * before its 4 bytes, at or below the value's 16, are written), the
 * array shrunk to them: the tail goes back to the heap before the items
 * are gathered, so that they take the memory the values took. */
static int32_t *take_value_classes(pr_lifetimes *lt)
{
	int32_t *cls = (int32_t *)lt->values;
	for (int64_t v = 0; v < lt->n_values; v++) {
		int32_t c = lt->values[v].cls;
		memcpy(&cls[v], &c, sizeof c);   /* the bytes were a value's (strict aliasing) */
	}
	lt->values = NULL;
	return pr_xrealloc(cls, (size_t)(lt->n_values + 1) * sizeof *cls);
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

/* The items of every arena, one run each of the returned array. Each
 * class's start, once gathered, gives way to its item's index in that
 * array (-1: it gets no memory): the classes are not read again but for
 * that, and an array of slots as long as they are would take memory the
 * plan needs. */
static mp_item *gather_items(pr_lifetimes *lt, const mp_graph_options *o, const arena_set *set,
			     arena_items *per, const int8_t *arena)
{
	int64_t total = 0;
	for (int a = 0; a < set->n; a++)
		total += per[a].n;
	mp_item *items = pr_xmalloc((size_t)(total + 1) * sizeof *items);
	pr_pages_fill(items, (size_t)total * sizeof *items);   /* an item a class, written below */
	int64_t base = 0;
	for (int a = 0; a < set->n; a++) {
		const pr_device_type *t = pr_device_type_find(set->devices[a].type);
		per[a].align = t ? arena_alignment(o, set->devices[a], t) : 0;
		per[a].items = items + base;
		base += per[a].n;
		per[a].n = 0;
	}
	for (int64_t i = 0; i < lt->n_classes; i++) {
		pr_plan_class *c = &lt->classes[i];
		if (arena[i] < 0) {
			c->start = -1;
			continue;
		}
		arena_items *a = &per[arena[i]];
		int32_t slot = (int32_t)(a->items - items + a->n);
		gather_class(a, c);
		c->start = slot;
	}
	return items;
}

/* Writes every value's memory: its class's item's offset in the arena
 * of that item (its start, once planned, gives way to its arena's index),
 * or none (no item, or an arena left unplanned). The values are g's nodes'
 * in graph order, as lt listed them. */
static bool write_plan(pr_graph *g, const int32_t *item_of, int64_t n_values, const mp_item *items,
		       const pr_device_id *arena_id, const bool *planned)
{
	bool changed = false;
	int64_t v = 0;
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);
		for (int i = 0, nv = pr_plan_node_n_values(n); i < nv; i++) {
			int32_t k = item_of[v++];
			const mp_item *it = k >= 0 ? &items[k] : NULL;
			bool has = it && planned[it->start];
			pr_spec *s = pr_plan_spec_of(n, n->type.kind == PR_TYPE_TUPLE ? i : -1);
			changed |= write_mem(s, has, has ? arena_id[it->start] : PR_DEVICE_ID_HOST, has ? it->offset : 0);
		}
	}
	PR_ASSERT(v == n_values);   /* lt was g's */
	return changed;
}

bool mp_plan_lifetimes(pr_graph *g, pr_lifetimes *lt, const mp_graph_options *o, mp_arena_report *reports,
		       int max_reports, int *n_reports)
{
	int32_t *item_of = take_value_classes(lt);
	int8_t *arena = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena); /* < MP_MAX_ARENAS */
	arena_set set = { 0 };
	arena_items per[MP_MAX_ARENAS] = { 0 };
	assign_arenas(lt, o, &set, per, arena);
	mp_item *items = gather_items(lt, o, &set, per, arena);
	free(arena);
	for (int64_t v = 0; v < lt->n_values; v++)
		item_of[v] = lt->classes[item_of[v]].start;   /* gather_items: its item */
	/* Gathered, the classes are not read again: their memory goes back
	 * before the planner takes its own. */
	free(lt->classes);
	lt->classes = NULL;
	pr_device_id arena_id[MP_MAX_ARENAS];
	bool planned[MP_MAX_ARENAS];
	for (int a = 0; a < set.n; a++) {
		mp_arena_report rep = { .n_items = per[a].n, .unknown_type = !per[a].align };
		if (per[a].align)
			rep = plan_arena(lt, &per[a]);
		rep.arena = set.devices[a];
		if (reports && a < max_reports)
			reports[a] = rep;
		arena_id[a] = pr_device_intern(set.devices[a]);
		planned[a] = per[a].planned;
		for (int64_t i = 0; i < per[a].n; i++)   /* write_plan: the item's arena */
			per[a].items[i].start = a;
	}
	if (n_reports)
		*n_reports = set.n < max_reports ? set.n : max_reports;
	bool changed = write_plan(g, item_of, lt->n_values, items, arena_id, planned);
	free(items);
	free(item_of);
	return changed;
}
