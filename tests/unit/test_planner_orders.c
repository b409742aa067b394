/* White-box tests of the memory planner's inner parts (planner.c, included
 * whole: its functions are static), each against the plain way it stands
 * for, on random items with many ties:
 *  - the orders (a stable LSD radix sort of ids over the bytes the keys
 *    differ in) against the full sort on (k1, k2, k3, id) they replace;
 *  - the start order (a counting sort) and the whole-method stack's order;
 *  - the overlap query (the segment tree, its blocks, and the window and
 *    long items of find_near) against a scan of every item, and the work it
 *    counts against the count of the tree's nodes it stands for;
 *  - the offset choice (a few spans, buckets, the sort) against the sweep
 *    over spans sorted by (lo, hi). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../plugins/memory-plan/planner.c"
#include "passrun/verify.h"
#include "testutil.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n items over T positions: durations of a few values (some long), sizes of
 * a few values (some 0), some living throughout, unsorted or by start. */
static mp_item *random_items(int64_t n, int64_t T, uint64_t *seed, bool sorted)
{
	mp_item *it = malloc((size_t)(n + 1) * sizeof *it);
	for (int64_t i = 0; i < n; i++) {
		int64_t s = (int64_t)(rnd(seed) % (uint64_t)T), d;
		switch (rnd(seed) % 8) {
		case 0: d = (int64_t)(rnd(seed) % (uint64_t)T); break;
		case 1: d = 20; break;
		default: d = (int64_t)(rnd(seed) % 4); break;
		}
		int64_t e = s + d < T ? s + d : T - 1;
		if (rnd(seed) % 16 == 0) {
			s = 0;
			e = T - 1;
		}
		static const int64_t sizes[] = { 0, 16, 16, 64, 64, 64, 100, 4096, 1ll << 40 };
		int64_t size = sizes[rnd(seed) % 9];
		if (rnd(seed) % 32 == 0)
			size = (int64_t)(rnd(seed) % 100000);
		it[i] = (mp_item){ (int32_t)s, (int32_t)e, size, 0 };
	}
	if (sorted)
		for (int64_t i = 1; i < n; i++)
			for (int64_t j = i; j > 0 && it[j].start < it[j - 1].start; j--) {
				mp_item t = it[j];
				it[j] = it[j - 1];
				it[j - 1] = t;
			}
	return it;
}

static int64_t *rounded(const mp_item *it, int64_t n, int64_t align)
{
	int64_t *a = malloc((size_t)(n + 1) * sizeof *a);
	for (int64_t i = 0; i < n; i++)
		a[i] = round_up(it[i].size, align);
	return a;
}

/* The key an order gave an item before: (k1, k2, k3, id), sorted whole. */
static sort_key old_key(const engine *e, int which, const range_max *profile, int32_t id)
{
	const mp_item *it = &e->items[id];
	int32_t start = it->start;
	int64_t size = round_up(it->size, e->align), dur = it->end - it->start + 1;
	switch (which) {
	case 0: return (sort_key){ -size, -dur, start, id };
	case 1: return (sort_key){ -range_max_query(profile, it->start, it->end), -size, start, id };
	case 2: return (sort_key){ -dur, -size, start, id };
	case 3: {
		double area = (double)size * (double)dur;
		return (sort_key){ area > 9e18 ? INT64_MIN : -(int64_t)area, -size, start, id };
	}
	case 4: return (sort_key){ it->start, -size, (int32_t)-dur, id };
	default: {
		double f = 0.7 + 0.7 * (double)(mix64((uint64_t)id * 0x9e3779b97f4a7c15ull + (uint64_t)which) >> 11) / 9007199254740992.0;
		return (sort_key){ -(int64_t)((double)size * f), -dur, start, id };
	}
	}
}

Test(planner, orders_are_the_full_sorts_order)
{
	uint64_t seed = 0x1234567;
	for (int round = 0; round < 40; round++) {
		int64_t n = 1 + (int64_t)(rnd(&seed) % (round < 30 ? 300 : 20000)), T = 1 + (int64_t)(rnd(&seed) % (uint64_t)(2 * n));
		mp_item *items = random_items(n, T, &seed, round % 2);
		engine e;
		engine_init(&e, items, 16, n, T, &(mp_result){ 0 });
		if (!e.m) {
			engine_free(&e);
			free(items);
			continue;
		}
		range_max rm = breadth_profile(&e, items, T);
		uint64_t *got = malloc((size_t)(e.m + 1) * sizeof *got);
		sort_key *want = malloc((size_t)(e.m + 1) * sizeof *want);
		for (int which = 0; which < N_ORDERS + N_PERTURBED; which++) {
			make_order(&e, which, &rm, got);
			for (int64_t i = 0; i < e.m; i++)
				want[i] = old_key(&e, which, &rm, e.by_start[i]);
			qsort(want, (size_t)e.m, sizeof *want, cmp_key);
			for (int64_t i = 0; i < e.m; i++)
				cr_assert_eq((int32_t)(uint32_t)got[i], want[i].id, "round %d, order %d, n %lld: place %lld has id %d, expected %d",
					     round, which, (long long)e.m, (long long)i, (int32_t)(uint32_t)got[i], want[i].id);
		}
		free(got);
		free(want);
		free(rm.t);
		engine_free(&e);
		free(items);
	}
}

Test(planner, start_order_and_stack_order)
{
	uint64_t seed = 99;
	for (int round = 0; round < 30; round++) {
		int64_t n = 1 + (int64_t)(rnd(&seed) % 2000), T = 1 + (int64_t)(rnd(&seed) % (uint64_t)n);
		mp_item *items = random_items(n, T, &seed, false);
		int64_t *asize = rounded(items, n, 64);
		engine e;
		engine_init(&e, items, 64, n, T, &(mp_result){ 0 });
		/* by (start, id): the greedy items, compared with a qsort */
		sort_key *want = malloc((size_t)(n + 1) * sizeof *want);
		int64_t m = 0, k = 0;
		for (int64_t i = 0; i < n; i++)
			if (!lives_throughout(&items[i], T) && items[i].size > 0)
				want[m++] = (sort_key){ items[i].start, 0, 0, (int32_t)i };
		qsort(want, (size_t)m, sizeof *want, cmp_key);
		cr_assert_eq(e.m, m);
		for (int64_t i = 0; i < m; i++) {
			cr_assert_eq(e.by_start[i], want[i].id);
			cr_assert_eq(e.slot[want[i].id], i);
		}
		for (int64_t t = 0, c = 0, i = 0; t < T; t++) {
			while (i < m && items[want[i].id].start <= t)
				i++, c++;
			cr_assert_eq(count_started(&e, t), c);
		}
		/* the stack: largest first, ties by id */
		for (int64_t i = 0; i < n; i++)
			if (lives_throughout(&items[i], T) && items[i].size > 0)
				want[k++] = (sort_key){ -asize[i], 0, 0, (int32_t)i };
		qsort(want, (size_t)k, sizeof *want, cmp_key);
		int64_t last, top = stack_whole(&e, items, n, T, &last), off = 0;
		for (int64_t i = 0; i < k; i++) {
			cr_assert_eq(items[want[i].id].offset, off, "stack place %lld", (long long)i);
			off += asize[want[i].id];
		}
		cr_assert_eq(top, off);
		free(want);
		engine_free(&e);
		free(asize);
		free(items);
	}
}

/* The nodes a query enters: first leaf under the prefix, max end >= s. */
static int64_t nodes_entered(const engine *e, int64_t P, int64_t s)
{
	int64_t n = 0;
	for (int h = 0; h <= e->depth; h++) /* level h: nodes M >> h .. (2M >> h) - 1 */
		for (int64_t x = e->M >> h; x < (2 * e->M) >> h && (x << h) - e->M < P; x++)
			n += e->tree[x] >= s;
	return n;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Places a random part of the items, takes some out again, and checks
 * queries of every kind against a scan: the hits, and the work. */
static void check_queries(engine *e, uint64_t *seed, int64_t short_dur)
{
	memset(e->tree, 0xff, (size_t)(2 * e->M) * sizeof *e->tree);
	e->n_long = 0;
	e->short_dur = short_dur;
	for (int64_t i = 0; i < e->m; i++)
		if (rnd(seed) % 4)
			mark_placed(e, e->by_start[i]);
	for (int64_t i = 0; i < e->m; i++)
		if (rnd(seed) % 8 == 0)
			set_placed(e, e->by_start[i], false);
	int32_t *want = malloc((size_t)(e->m + 1) * sizeof *want);
	for (int q = 0; q < 300; q++) {
		int64_t t = (int64_t)(rnd(seed) % (uint64_t)e->T), s = t - (int64_t)(rnd(seed) % (q % 3 ? 4 : 64));
		if (q % 17 == 0)
			s = -(int64_t)(rnd(seed) % 3); /* the local search widens below 0 */
		int64_t P = count_started(e, t), n = 0;
		for (int64_t p = 0; p < P; p++)
			if (e->tree[e->M + p] >= s)
				want[n++] = e->by_start[p];
		int64_t work = e->work;
		find_overlapping(e, P, s);
		cr_assert_eq(e->n_hits, n, "query %d (P %lld, s %lld, short %lld): %lld hits, expected %lld", q, (long long)P,
			     (long long)s, (long long)short_dur, (long long)e->n_hits, (long long)n);
		if (n) { /* no hits: e->hits may still be NULL, which qsort may not take */
			qsort(e->hits, (size_t)n, sizeof *e->hits, cmp_i32);
			qsort(want, (size_t)n, sizeof *want, cmp_i32);
		}
		for (int64_t i = 0; i < n; i++)
			cr_assert_eq(e->hits[i], want[i]);
		cr_assert_eq(e->work - work, nodes_entered(e, P, s),
			     "query %d (P %lld, s %lld, short %lld): work", q, (long long)P, (long long)s, (long long)short_dur);
	}
	free(want);
}

Test(planner, overlap_queries_find_what_a_scan_finds)
{
	uint64_t seed = 4242;
	for (int round = 0; round < 45; round++) {
		int64_t n = round < 10 ? 1 + round / 2 : 1 + (int64_t)(rnd(&seed) % (round < 25 ? 40 : 3000));
		int64_t T = 1 + (int64_t)(rnd(&seed) % (uint64_t)(2 * n));
		mp_item *items = random_items(n, T, &seed, round % 2);
		engine e;
		engine_init(&e, items, 16, n, T, &(mp_result){ 0 });
		if (e.m) {
			check_queries(&e, &seed, 0); /* the tree alone */
			/* the window and long items, for each duration that
			 * leaves few enough long items */
			for (int64_t d = 1; d <= 2 * T; d *= 2) {
				int64_t n_long = 0;
				for (int64_t i = 0; i < e.m; i++)
					n_long += items[e.by_start[i]].end - items[e.by_start[i]].start + 1 > d;
				if (n_long <= (int64_t)(sizeof e.long_slots / sizeof e.long_slots[0]))
					check_queries(&e, &seed, d);
			}
		}
		engine_free(&e);
		free(items);
	}
}

/* The sweep as it was: spans sorted by (lo, hi). */
static int64_t sweep(span *f, int64_t n, int64_t base, int64_t need, bool first_fit)
{
	for (int64_t i = 1; i < n; i++)
		for (int64_t j = i; j > 0 && span_less(&f[j], &f[j - 1]); j--) {
			span t = f[j];
			f[j] = f[j - 1];
			f[j - 1] = t;
		}
	int64_t top = base, best = -1, best_gap = INT64_MAX;
	for (int64_t i = 0; i < n; i++) {
		if (f[i].lo - top >= need && f[i].lo - top < best_gap && (!first_fit || best < 0)) {
			best = top;
			best_gap = f[i].lo - top;
		}
		if (f[i].hi > top)
			top = f[i].hi;
	}
	return best >= 0 ? best : top;
}

Test(planner, offset_choice_is_the_sweeps)
{
	uint64_t seed = 777;
	int64_t N = 3000;
	engine e = { 0 };
	int64_t *offset = malloc((size_t)N * sizeof *offset), *asize = malloc((size_t)N * sizeof *asize);
	mp_item *items = calloc((size_t)N, sizeof *items);
	span *ref = malloc((size_t)N * sizeof *ref);
	e.offset = offset;
	e.items = items;
	e.hits = malloc((size_t)N * sizeof *e.hits);
	e.cap_hits = N;
	for (int round = 0; round < 3000; round++) {
		int64_t n = round % 3 ? (int64_t)(rnd(&seed) % (FEW_SPANS + 3)) : (int64_t)(rnd(&seed) % N);
		int64_t unit = round % 5 ? 16 : 1, spread = 1 + (int64_t)(rnd(&seed) % (round % 2 ? 8 : 100000));
		e.base = unit * (int64_t)(rnd(&seed) % 4);
		e.align = unit;   /* the sizes are multiples of it: asize_of gives them */
		for (int64_t i = 0; i < n; i++) {
			offset[i] = e.base + unit * (int64_t)(rnd(&seed) % (uint64_t)spread);
			asize[i] = items[i].size = unit * (1 + (int64_t)(rnd(&seed) % 6));
			e.hits[i] = (int32_t)i;
			ref[i] = (span){ offset[i], offset[i] + asize[i] };
		}
		e.n_hits = n;
		int64_t need = unit * (1 + (int64_t)(rnd(&seed) % 4));
		for (int ff = 0; ff < 2; ff++) {
			e.first_fit = ff;
			int64_t got;
			if (n <= FEW_SPANS) {
				got = choose_few(&e, need);
			} else {
				if (n > e.cap_found) {
					e.cap_found = n;
					e.found = pr_xrealloc(e.found, (size_t)n * sizeof *e.found);
				}
				for (int64_t i = 0; i < n; i++)
					e.found[i] = (span){ offset[i], offset[i] + asize[i] };
				e.n_found = n;
				got = choose_offset(&e, need);
			}
			int64_t want = sweep(ref, n, e.base, need, ff);
			cr_assert_eq(got, want, "round %d, %lld spans, first fit %d: %lld, expected %lld", round, (long long)n, ff,
				     (long long)got, (long long)want);
		}
	}
	free(e.found);
	free(e.hits);
	free(offset);
	free(asize);
	free(items);
	free(ref);
}

/* mp_plan_graph writes the plan back by walking the graph beside the
 * values' items (the values give way to them before the plan): every value
 * of a tuple, an alias and a getitem gets its class's memory, in its arena,
 * with arenas on both sides of one left unplanned (an unregistered type),
 * whose values lose a stale mem=, as a host constant does. */
Test(planner, plan_is_written_to_every_value_of_its_class)
{
	pr_program *p = tu_parse(
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
		"delegate @dd backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
		"  %a: f32[8] = input\n  %b: f32[4] = input\n"
		"  %s: f32[8] = aten::add.Tensor(%a, %a)\n  return %b, %s\n}\n"
		"method @forward {\n"
		"  %x: f32[4] = input user \"x\"\n"
		"  %w: f32[4]{mem=cpu:64} = input parameter \"w\" data=zeros\n"
		"  %t: f32[4]@tpu:0{mem=tpu:0:16} = input user \"t\"\n"
		"  %c: f32[8]@cuda:0 = input user \"c\"\n"
		"  %h: f32[4] = aten::add.Tensor(%x, %w)\n"
		"  %r: f32[4] = aten::relu_(%h)\n"
		"  %d: (f32[4]@cuda:0, f32[8]@cuda:0) = delegate @dd(%c, %c)\n"
		"  %g: f32[8]@cuda:0 = getitem %d, 1\n"
		"  %u: f32[4]@tpu:0 = aten::add.Tensor(%t, %t)\n"
		"  return %r, %g, %u\n}\n");
	pr_graph *g = p->methods[0];
	mp_graph_options o = { true, true, 16, 16 };
	mp_arena_report reps[MP_MAX_ARENAS];
	int n_reps = 0;
	cr_assert(mp_plan_graph(g, &o, reps, MP_MAX_ARENAS, &n_reps));
	cr_assert_eq(n_reps, 3);
	cr_assert(!reps[0].unknown_type && reps[1].unknown_type && !reps[2].unknown_type);
	pr_spec *x = pr_node_spec(pr_graph_find(g, "x")), *h = pr_node_spec(pr_graph_find(g, "h"));
	pr_spec *r = pr_node_spec(pr_graph_find(g, "r")), *c = pr_node_spec(pr_graph_find(g, "c"));
	pr_spec *gi = pr_node_spec(pr_graph_find(g, "g")), *d = pr_graph_find(g, "d")->type.elems;
	cr_assert(x->has_mem && h->has_mem && r->has_mem && c->has_mem && d[0].has_mem && d[1].has_mem && gi->has_mem);
	cr_assert(h->mem_offset == r->mem_offset && h->mem_offset != x->mem_offset, "an in-place result shares");
	cr_assert(gi->mem_offset == d[1].mem_offset && d[0].mem_offset != d[1].mem_offset, "a getitem is its element");
	cr_assert(c->mem_offset != d[0].mem_offset && c->mem_offset != d[1].mem_offset);
	cr_assert_str_eq(pr_spec_mem_arena(r).type, "cpu");
	cr_assert_str_eq(pr_spec_mem_arena(gi).type, "cuda");
	cr_assert_str_eq(pr_spec_mem_arena(&d[0]).type, "cuda");
	const char *none[] = { "w", "t", "u" };
	for (int i = 0; i < 3; i++)
		cr_assert(!pr_node_spec(pr_graph_find(g, none[i]))->has_mem, "%%%s has memory", none[i]);
	pr_diags diags;
	pr_diags_init(&diags, "t.pg");
	cr_assert_eq(pr_plan_check(p, &diags, "test"), 0);
	pr_diags_free(&diags);
	cr_assert(!mp_plan_graph(g, &o, NULL, 0, NULL), "a second plan is the first");
	pr_program_free(p);
}
