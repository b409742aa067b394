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
 * Overlaps are found by a sweep over positions: a class that starts is
 * compared with its two neighbours in (arena, offset, class) order among
 * the live ones only. The live set never holds an overlapping pair (a class
 * that overlaps is reported and left out), so two neighbours suffice: a few
 * word operations a class, never all pairs. Each memory (arena, offset) has
 * a key, in that order (its slot in its arena's window of offsets, or where
 * those are too spread, its place in a sort); as two live classes cannot
 * share one, the live set is of keys (a bitset of 64-way levels) and a
 * class live at the starting one's own key is the neighbour it meets. A
 * class that has ended leaves the set when a search meets it, so the sweep
 * needs no order of the ends.
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

/* The arenas met so far; neighbouring classes mostly share one. A spec
 * names its arena by an id, and one id is always one device, so each id met
 * is kept with its arena: the arena of a spec is then a look-up by id (at
 * 10^6 nodes two arenas alternate, and comparing their devices cost 65 M
 * instructions). */
#define ARENA_SMALL_IDS 32

typedef struct arena_list {
	pr_device *d;
	int n, last;
	int small[ARENA_SMALL_IDS];   /* 1 + the index of the arena of each small id met, else 0 */
	struct arena_id {
		pr_device_id id;
		int index;            /* into d */
	} *ids;                       /* the larger ids met */
	int n_ids;
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

static __attribute__((noinline)) int spec_arena_slow(arena_list *l, const pr_spec *s)
{
	pr_device_id id = s->mem_arena_id;
	for (int i = 0; i < l->n_ids; i++)
		if (l->ids[i].id == id)
			return l->ids[i].index;
	int index = arena_index(l, pr_spec_mem_arena(s));
	if (id < ARENA_SMALL_IDS) {
		l->small[id] = index + 1;
	} else {
		l->ids = pr_xrealloc(l->ids, (size_t)(l->n_ids + 1) * sizeof *l->ids);
		l->ids[l->n_ids++] = (struct arena_id){ id, index };
	}
	return index;
}

/* arena_index of the arena a spec names. */
static inline int spec_arena(arena_list *l, const pr_spec *s)
{
	pr_device_id id = s->mem_arena_id;
	if (id < ARENA_SMALL_IDS && l->small[id])
		return l->small[id] - 1;
	return spec_arena_slow(l, s);
}

static void arena_list_free(arena_list *l)
{
	free(l->d);
	free(l->ids);
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
		const pr_spec *s = pr_plan_class_spec(lt, &lt->classes[i]);
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
		if (__builtin_add_overflow(pr_plan_class_spec(lt, &lt->classes[i])->mem_offset, lt->classes[i].bytes, &top))
			top = INT64_MAX;   /* the checker reports it */
		if (top > u[arena_of[i]].planned_bytes)
			u[arena_of[i]].planned_bytes = top;
	}
	arena_list_free(&arenas);
	free(arena_of);
	pr_lifetimes_free(lt);
	*out = u;
	return n_arenas;
}

/* ---- the checker ------------------------------------------------------ */

/* A class with planned memory, for the overlap sweep: its sort key. Its
 * bytes and positions are its class's, read there: the sweep meets the
 * classes by position, in about the order of their definition, and the
 * record, no larger than a value, is written over the values once they are
 * checked (note_classes), so that the sweep's records take no memory of
 * their own. */
typedef struct planned_class {
	int64_t offset;
	int32_t cls;           /* plan.h: class indexes are 32-bit */
	union {
		int32_t arena;     /* until keyed: the arena's index */
		uint32_t key;      /* then its memory's (sweep_keys) */
	};
} planned_class;

_Static_assert(sizeof(planned_class) <= sizeof(pr_plan_value), "check_method writes pcs over the values");

typedef struct check_ctx {
	pr_diags *diags;
	const char *pass;
	const char *method;
	pr_lifetimes *lt;     /* check_method takes its values' memory for pcs */
	const pr_graph *g;    /* lt's: overlaps name their classes' bases from it */
	int errors;
	planned_class *pcs;   /* the classes the sweep checks, in class order, then its */
	int64_t n_pcs;
	uint64_t diff_offsets;  /* the bits some record's offset has unlike pcs[0]'s */
	bool starts_fall;       /* some record's class starts before the one before */
	arena_list arenas;
	struct overlap *overlaps;   /* found by the sweep, reported after it */
	int64_t n_overlaps, cap_overlaps;
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
 * class_bytes (the most any of its values spans), when check_placed finds
 * one broken. */
static __attribute__((noinline, cold)) void placed_errors(check_ctx *k, const pr_plan_value *v, int64_t class_bytes)
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

/* v's spec s has memory: is it in the arena of s's device, at an offset >= 0
 * whose end fits in int64? */
static inline void check_placed(check_ctx *k, const pr_plan_value *v, const pr_spec *s, int64_t class_bytes)
{
	if (s->mem_arena_id != s->device_id || s->mem_offset < 0 || s->mem_offset > INT64_MAX - class_bytes)
		placed_errors(k, v, class_bytes);
}

static __attribute__((noinline, cold)) void apart_error(check_ctx *k, const pr_plan_value *v, const pr_plan_class *c)
{
	const pr_plan_value *b = pr_plan_class_base(k->lt, c);
	const pr_spec *s = pr_plan_value_spec(v), *cs = pr_plan_value_spec(b);
	char msg[512], mem[64], base_mem[64], base[128];
	snprintf(msg, sizeof msg, "shares the memory of %%%s (an in-place result, view or getitem of it) but is planned apart (mem=%s, %%%s has mem=%s)",
		 pr_plan_value_name(b->node, b->elem, base, sizeof base), mem_str(s, mem, sizeof mem),
		 base, mem_str(cs, base_mem, sizeof base_mem));
	plan_error(k, v, msg);
}

static __attribute__((noinline, cold)) void host_constant_error(check_ctx *k, const pr_plan_value *v)
{
	char msg[512], mem[64];
	snprintf(msg, sizeof msg, "is a constant on the host but has planned memory (mem=%s); only device-resident constants are planned",
		 mem_str(pr_plan_value_spec(v), mem, sizeof mem));
	plan_error(k, v, msg);
}

/* Arena, alias and constant rules, one value at a time: v, value i of lt,
 * of class c. A class's own value without memory (most of a program before
 * planning) has nothing to check. The caller reads lt's arrays once, not
 * through k a value (the cold error paths might change k for all the
 * compiler knows). */
static inline void check_value(check_ctx *k, const pr_lifetimes *lt, int64_t i)
{
	const pr_plan_value *v = &lt->values[i];
	const pr_plan_class *c = &lt->classes[v->cls];
	const pr_spec *s = pr_plan_value_spec(v);
	if (!pr_plan_value_is_base(lt, v, c)) {
		if (s->has_mem)
			check_placed(k, v, s, c->bytes);
		if (!same_mem(s, pr_plan_class_spec(lt, c)))
			apart_error(k, v, c);
		return;
	}
	if (!s->has_mem)
		return;
	check_placed(k, v, s, c->bytes);
	if (!pr_plan_class_plannable(c))
		host_constant_error(k, v);
}

/* How far ahead the walks over the values and the classes ask for a
 * spec (SPEC_AHEAD / 2), and the classes' walk for the base value naming
 * it first (SPEC_AHEAD): the specs are in the nodes, all over the heap, and
 * the walk over the values has pushed them out of cache by the time the
 * classes are walked (note_classes waited on a third of the checker's
 * own time at 10^6 nodes). */
#define SPEC_AHEAD 16

/* The lines of spec s that the checks read: has_mem and the arena at its
 * head, the offset at its tail (one line in a slab node, whose spec lies
 * in its second line; a detached node's or a tuple element's may span
 * two). */
static inline void prefetch_spec(const pr_spec *s)
{
	__builtin_prefetch(&s->has_mem);
	__builtin_prefetch(&s->mem_offset);
}

/* The sweep's records of the classes whose base has memory at a real
 * offset (check_placed reports one that is not), in class order, each
 * written over the values (as check_value has left them): the n-th record
 * lands on value n, and the base of its class, and of every later one, is
 * a later value (plan.h: class i's base is value i or after), read before
 * it is written over. With them, the bits in which their offsets differ
 * from the first's (keys_by_slot) and whether their starts fall somewhere
 * (order_by_start). The sums are kept in locals, and lt's arrays read once:
 * through k, written over, the compiler would read them again a class. */
static void note_classes(check_ctx *k)
{
	const pr_lifetimes lt = *k->lt;
	planned_class *pcs = (planned_class *)lt.values;
	int64_t n = 0, first_offset = 0;
	uint64_t diff_offsets = 0;
	int32_t last_start = 0;
	bool starts_fall = false;
	for (int64_t i = 0; i < lt.n_classes; i++) {
		/* a base not yet written over: it is value i or later (plan.h) */
		if (i + SPEC_AHEAD < lt.n_classes)
			__builtin_prefetch(&lt.values[lt.classes[i + SPEC_AHEAD].base]);
		if (i + SPEC_AHEAD / 2 < lt.n_classes)
			prefetch_spec(pr_plan_class_spec(&lt, &lt.classes[i + SPEC_AHEAD / 2]));
		const pr_plan_class *c = &lt.classes[i];
		const pr_spec *s = pr_plan_class_spec(&lt, c);
		int64_t end;
		if (!s->has_mem || c->bytes <= 0 || s->mem_offset < 0 ||
		    __builtin_add_overflow(s->mem_offset, c->bytes, &end))
			continue;
		planned_class pc = { .offset = s->mem_offset, .cls = (int32_t)i, .arena = spec_arena(&k->arenas, s) };
		if (!n)
			first_offset = pc.offset;
		diff_offsets |= (uint64_t)(pc.offset ^ first_offset);
		starts_fall |= c->start < last_start;
		last_start = c->start;
		/* memcpy: the bytes were a value's, and the compiler must not
		 * move a read of the value past this write (strict aliasing). */
		memcpy(&pcs[n++], &pc, sizeof pc);
	}
	k->pcs = pcs;
	k->n_pcs = n;
	k->diff_offsets = diff_offsets;
	k->starts_fall = starts_fall;
}

/* The sweep's live set: keys in a bitset of 64-way levels (level 0 a bit
 * per key, each level above a bit per nonzero word below), so that the
 * nearest live keys either side of one are a few word operations away. */
typedef struct key_set {
	uint64_t *lv[12];   /* 64^11 words cover any int64 key count */
	int levels;
} key_set;

static void ks_init(key_set *s, int64_t n)
{
	s->levels = 0;
	do {
		n = n / 64 + 1;
		s->lv[s->levels++] = pr_xcalloc((size_t)n, sizeof(uint64_t));
	} while (n > 1);
}

static void ks_free(key_set *s)
{
	for (int l = 0; l < s->levels; l++)
		free(s->lv[l]);
}

static bool ks_has(const key_set *s, int64_t r)
{
	return s->lv[0][r >> 6] >> (r & 63) & 1;
}

static void ks_add(key_set *s, int64_t r)
{
	for (int l = 0; l < s->levels; l++, r >>= 6) {
		uint64_t was = s->lv[l][r >> 6];
		s->lv[l][r >> 6] = was | 1ull << (r & 63);
		if (was)
			return;   /* the levels above already know this word */
	}
}

static void ks_remove(key_set *s, int64_t r)
{
	for (int l = 0; l < s->levels; l++, r >>= 6)
		if ((s->lv[l][r >> 6] &= ~(1ull << (r & 63))))
			return;   /* the word still holds keys */
}

/* The largest live key below r, or -1. */
static int64_t ks_below(const key_set *s, int64_t r)
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

/* The smallest live key above r, or -1. */
static int64_t ks_above(const key_set *s, int64_t r)
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

/* The smallest live key above r and at most limit, or -1: where both are
 * in one word, that word alone, without a climb through the levels. */
static inline __attribute__((always_inline)) int64_t ks_above_upto(const key_set *s, int64_t r, int64_t limit)
{
	if (limit <= r)
		return -1;
	if (limit >> 6 != r >> 6) {
		int64_t above = ks_above(s, r);
		return above <= limit ? above : -1;
	}
	uint64_t w = s->lv[0][r >> 6] & ~((2ull << (r & 63)) - 1) & (~0ull >> (63 - (limit & 63)));
	return w ? (r & ~(int64_t)63) | __builtin_ctzll(w) : -1;
}

/* Each memory (arena, offset) of the records gets a key, a number rising
 * with (arena, offset), with barriers for the sweep (keys of no memory)
 * before the first arena, between two arenas and after the last, so that a
 * search for the nearest live key stops at its arena's end, near where it
 * began. No sort is needed for them: the records stay where they are
 * (order_by_start and order_position put them in the sweep's order, mostly
 * theirs already) and each keeps its key in place of its arena. */
typedef struct sweep_keys {
	int64_t n_keys;
	int step_bits;       /* each key above another in an arena is 2^step_bits
			      * bytes of offset or more above it (keys_by_slot), or
			      * -1: no bound known (keys_by_sort) */
	int64_t *barriers;   /* one per arena and one more */
	int n_barriers;
} sweep_keys;

/* The window of the offsets' bits in which some record differs from the
 * first: bits [lo, lo + bits) (none when all are equal). Above and below it
 * every record has the first's bits, so the window orders the offsets. */
typedef struct key_window {
	int lo, bits;
	uint64_t mask;   /* bits ones */
} key_window;

static key_window window_of(uint64_t diff)
{
	key_window w = { 0, 0, 0 };
	if (diff) {
		w.lo = __builtin_ctzll(diff);
		w.bits = 64 - __builtin_clzll(diff) - w.lo;
		w.mask = (2ull << (w.bits - 1)) - 1;
	}
	return w;
}

/* The keys keys_by_slot may spend, per record: the sweep takes 4 bytes and
 * a bit a key. Beyond them (offsets spread over more than 2^36 steps, or
 * over many more steps than records) the keys come from a sort. */
#define KEY_SLOTS_PER_RECORD 4
#define KEY_WINDOW_MAX_BITS 36

/* The keys when the offsets' window is narrow (at 10^6 nodes 19 bits above
 * a 16-byte alignment, in 2 arenas, for 893,000 records): each arena is a
 * block of slots, a barrier and then one slot per offset in the window, and
 * a record's key is its slot. One pass over the records, where a sort of
 * them cost 8 times as many instructions; the keys of no memory cost the
 * sweep nothing but their bits, as it reads only the keys it finds live.
 * Returns false, doing nothing, when the window is too wide. */
static bool keys_by_slot(check_ctx *k, sweep_keys *out)
{
	planned_class *pcs = k->pcs;
	int64_t n = k->n_pcs, n_arenas = k->arenas.n;
	key_window ow = window_of(k->diff_offsets);
	if (ow.bits > KEY_WINDOW_MAX_BITS)
		return false;
	int64_t block = ((int64_t)1 << ow.bits) + 1, slots = n_arenas * block + 1;
	if (slots > KEY_SLOTS_PER_RECORD * n + 4096 || slots >= UINT32_MAX)
		return false;
	int lo = ow.lo;
	uint64_t mask = ow.mask;
	for (int64_t i = 0; i < n; i++)
		pcs[i].key = (uint32_t)(pcs[i].arena * block + 1 + (int64_t)((uint64_t)pcs[i].offset >> lo & mask));
	for (int64_t a = 0; a <= n_arenas; a++)
		out->barriers[out->n_barriers++] = a * block;
	out->n_keys = slots;
	out->step_bits = lo;
	return true;
}

/* Byte b of the sort key (arena, offset, record), least significant first:
 * bytes 0-3 the record's index, 4-11 the offset (>= 0), 12-15 the arena
 * index (>= 0). */
static unsigned planned_byte(const planned_class *p, int b)
{
	if (b < 4)
		return (unsigned)((uint32_t)p->cls >> (8 * b)) & 255;
	if (b < 12)
		return (unsigned)((uint64_t)p->offset >> (8 * (b - 4))) & 255;
	return (unsigned)((uint32_t)p->arena >> (8 * (b - 12))) & 255;
}

static bool pc_less(const planned_class *x, const planned_class *y)
{
	if (x->arena != y->arena)
		return x->arena < y->arena;
	if (x->offset != y->offset)
		return x->offset < y->offset;
	return x->cls < y->cls;
}

PR_RADIX_SORT_DEFINE(msd_sort_planned, planned_class, planned_byte, pc_less)

/* The keys when the offsets are too spread for keys_by_slot (a plan with
 * offsets near 2^62, say): a copy of the records, each naming its index in
 * place of its class, sorted by (arena, offset), and the keys counted along
 * it. qsort's comparisons cost more than the sweep. */
static void keys_by_sort(check_ctx *k, sweep_keys *out)
{
	int64_t n = k->n_pcs;
	planned_class *a = pr_xmalloc((size_t)n * sizeof *a);
	for (int64_t i = 0; i < n; i++)
		a[i] = (planned_class){ .offset = k->pcs[i].offset, .cls = (int32_t)i, .arena = k->pcs[i].arena };
	uint64_t arenas = k->arenas.n > 1 ? ~0ull >> __builtin_clzll((uint64_t)k->arenas.n - 1) : 0;
	uint64_t indexes = n > 1 ? ~0ull >> __builtin_clzll((uint64_t)n - 1) : 0;
	msd_sort_planned(a, n, 15, pr_radix_varying(indexes, 0, 4) | pr_radix_varying(k->diff_offsets, 4, 8) |
					   pr_radix_varying(arenas, 12, 4));
	int64_t key = 1;
	out->barriers[out->n_barriers++] = 0;
	for (int64_t r = 0; r < n; r++) {
		if (r && a[r].arena != a[r - 1].arena) {
			out->barriers[out->n_barriers++] = ++key;
			key++;
		} else if (r && a[r].offset != a[r - 1].offset) {
			key++;
		}
		k->pcs[a[r].cls].key = (uint32_t)key;
	}
	out->barriers[out->n_barriers++] = ++key;
	out->n_keys = key + 1;
	out->step_bits = -1;
	free(a);
}

static const pr_plan_class *pc_class(const check_ctx *k, const planned_class *p)
{
	return &k->lt->classes[p->cls];
}

/* Whether lo, at an offset no higher than hi's in the same arena, reaches
 * into hi. */
static bool pc_reaches(const check_ctx *k, const planned_class *lo, const planned_class *hi)
{
	return pc_class(k, lo)->bytes > hi->offset - lo->offset;  /* offsets >= 0 */
}

/* Two classes found overlapping: reported once the sweep is done (the
 * values, which name their bases, are its records by then). */
struct overlap {
	int32_t cls[2];
	int64_t offset[2];
};

static __attribute__((noinline, cold)) void overlap_error(check_ctx *k, const planned_class *a, const planned_class *b)
{
	if (k->n_overlaps == k->cap_overlaps) {
		k->cap_overlaps = k->cap_overlaps ? 2 * k->cap_overlaps : 16;
		k->overlaps = pr_xrealloc(k->overlaps, (size_t)k->cap_overlaps * sizeof *k->overlaps);
	}
	k->overlaps[k->n_overlaps++] = (struct overlap){ { a->cls, b->cls }, { a->offset, b->offset } };
	k->errors++;
}

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* The values that are bases of the classes of k's overlaps, sorted, with
 * their nodes and elements, from one walk over the graph's values (lt's
 * order). */
typedef struct base_names {
	int32_t *base;
	pr_plan_value *value;   /* value[i] is value base[i] (its cls unset) */
	int64_t n;
} base_names;

static base_names find_bases(const check_ctx *k)
{
	base_names b = { pr_xmalloc((size_t)(2 * k->n_overlaps) * sizeof *b.base), NULL, 0 };
	for (int64_t i = 0; i < k->n_overlaps; i++)
		for (int j = 0; j < 2; j++)
			b.base[b.n++] = k->lt->classes[k->overlaps[i].cls[j]].base;
	qsort(b.base, (size_t)b.n, sizeof *b.base, cmp_int32);
	b.value = pr_xmalloc((size_t)b.n * sizeof *b.value);
	int64_t v = 0, at = 0;
	pr_graph_for_each(k->g, n) {
		for (int e = 0, nv = pr_plan_node_n_values(n); e < nv; e++, v++)
			while (at < b.n && b.base[at] == v)
				b.value[at++] = (pr_plan_value){ n, -1, n->type.kind == PR_TYPE_TUPLE ? e : -1 };
	}
	PR_ASSERT(at == b.n);
	return b;
}

static const pr_plan_value *base_of(const base_names *b, int32_t base)
{
	const int32_t *at = bsearch(&base, b->base, (size_t)b->n, sizeof *b->base, cmp_int32);
	return &b->value[at - b->base];
}

/* The overlaps the sweep found, in its order. */
static void report_overlaps(check_ctx *k)
{
	if (!k->n_overlaps)
		return;
	base_names b = find_bases(k);
	for (int64_t i = 0; i < k->n_overlaps; i++) {
		const struct overlap *o = &k->overlaps[i];
		const pr_plan_class *ca = &k->lt->classes[o->cls[0]], *cb = &k->lt->classes[o->cls[1]];
		const pr_plan_value *va = base_of(&b, ca->base), *vb = base_of(&b, cb->base);
		char na[128], nb[128], arena[PR_DEVICE_STR_MAX];
		pr_plan_value_name(va->node, va->elem, na, sizeof na);
		pr_plan_value_name(vb->node, vb->elem, nb, sizeof nb);
		pr_diags_add(k->diags, PR_SEV_ERROR, "E-PLAN", k->pass, k->method, na, ca->bytes,
			     "%%%s (offset %lld, %lld bytes, live %lld..%lld) and %%%s (offset %lld, %lld bytes, live %lld..%lld) overlap in arena %s while both are live",
			     na, (long long)o->offset[0], (long long)ca->bytes, (long long)ca->start, (long long)ca->end,
			     nb, (long long)o->offset[1], (long long)cb->bytes, (long long)cb->start, (long long)cb->end,
			     pr_device_str(pr_spec_mem_arena(pr_plan_value_spec(va)), arena));
	}
	free(b.base);
	free(b.value);
	free(k->overlaps);
}

/* The records by the position where their class starts (the sweep's
 * order, order_position sorting each position's). They come in class
 * order, which is the order of the starts but for classes that live from
 * position 0 and are defined later (starts_fall): then a counting sort over
 * positions, stable, gives each record its place, and the records are
 * moved there in place, a cycle at a time (no second copy of them). */
static void order_by_start(check_ctx *k)
{
	if (!k->starts_fall)
		return;
	planned_class *pcs = k->pcs;
	const pr_plan_class *classes = k->lt->classes;
	int64_t T = k->lt->n_positions, n = k->n_pcs;
	uint32_t *head = pr_xcalloc((size_t)T + 1, sizeof *head);
	for (int64_t r = 0; r < n; r++)
		head[classes[pcs[r].cls].start + 1]++;
	for (int64_t t = 1; t < T; t++)
		head[t] += head[t - 1];
	uint32_t *place = pr_xmalloc((size_t)n * sizeof *place);
	for (int64_t r = 0; r < n; r++)
		place[r] = head[classes[pcs[r].cls].start]++;
	free(head);
	for (int64_t r = 0; r < n; r++)
		while (place[r] != r) {
			uint32_t to = place[r];
			planned_class moved = pcs[to];
			pcs[to] = pcs[r];
			pcs[r] = moved;
			place[r] = place[to];
			place[to] = to;
		}
	free(place);
}

static bool key_class_less(const planned_class *x, const planned_class *y)
{
	return x->key != y->key ? x->key < y->key : x->cls < y->cls;
}

/* Byte b of the sort key (key, class), least significant first: bytes 0-3
 * the class, 4-7 the key. */
static unsigned key_class_byte(const planned_class *p, int b)
{
	return (unsigned)((b < 4 ? (uint32_t)p->cls : p->key) >> (8 * (b & 3))) & 255;
}

PR_RADIX_SORT_DEFINE(msd_sort_key_class, planned_class, key_class_byte, key_class_less)

/* Puts the records a[0..m), which start at one position, in (key, class)
 * order. A position starts a few classes (a tuple's elements), but position
 * 0 starts the inputs and what lives for the whole method (10^4 of them at
 * 10^5 nodes): the radix sort, in place, which finishes small runs by
 * insertion. Classes are unique, so equal keys come out in class order. */
static void sort_position(planned_class *a, int64_t m)
{
	uint64_t keys = 0, classes = 0;
	for (int64_t x = 1; x < m; x++) {
		keys |= a[x].key ^ a[0].key;
		classes |= (uint32_t)(a[x].cls ^ a[0].cls);
	}
	msd_sort_key_class(a, m, 7, pr_radix_varying(classes, 0, 4) | pr_radix_varying(keys, 4, 4));
}

/* The end of the records from r on whose classes start where r's does,
 * those put in (key, class) order where they are not already. The sweep
 * calls it at the first record of a position that starts several, just
 * before it takes them: most positions start one class, and the next
 * record's start, which the sweep reads next, is all that costs (a pass of
 * its own over the records cost 2 M instructions at 10^5 nodes). */
static int64_t order_position(check_ctx *k, int64_t r)
{
	planned_class *pcs = k->pcs;
	const pr_plan_class *classes = k->lt->classes;
	int64_t n = k->n_pcs, j = r + 1;
	int32_t t = classes[pcs[r].cls].start;
	bool sorted = true;
	for (; j < n && classes[pcs[j].cls].start == t; j++)
		sorted &= pcs[j - 1].key <= pcs[j].key;   /* equal keys are in class order */
	if (!sorted)
		sort_position(pcs + r, j - r);
	return j;
}

/* The sweep's state: the keys of the live classes, and at each the record
 * of its class and where it ends (so that finding one ended reads nothing
 * else), or a barrier. */
typedef struct live_class {
	uint32_t r, end;
} live_class;

typedef struct sweep {
	key_set live;
	live_class *at;
	int step_bits;      /* sweep_keys' */
	int64_t last_key;   /* the last barrier */
} sweep;

#define SWEEP_BARRIER UINT32_MAX

/* The record of the live class nearest below key in its arena (or above
 * it, up to key limit), or SWEEP_BARRIER. A class that ended before
 * position t is dropped when met: the live set holds the classes that
 * started and were not reported, less those found ended, so that the sweep
 * needs no order of the ends. A barrier ends at UINT32_MAX, never. */
static inline __attribute__((always_inline)) uint32_t sweep_neighbour(sweep *s, int64_t key, int64_t limit, uint32_t t,
								       bool below)
{
	while ((key = below ? ks_below(&s->live, key) : ks_above_upto(&s->live, key, limit)) >= 0) {
		const live_class *c = &s->at[key];
		if (c->end >= t)
			return c->r;
		ks_remove(&s->live, key);
	}
	return SWEEP_BARRIER;   /* none up to limit (below, not reached: the arenas are between barriers) */
}

/* Checks the class of record r, which starts at t, against its neighbours
 * in (arena, offset, class) order among the live classes, and makes it live
 * unless it overlaps one. Two live classes never share a key (the second
 * would overlap the first), and one at r's own key is the neighbour
 * reported, below r or above it by class: the live classes beyond it do not
 * reach it, so they do not reach r. Else the neighbours are the nearest
 * live keys either side; above, only those of the offsets below r's end
 * can reach it, and where the keys are slots, r's bytes bound them (most
 * classes span one slot: no search above at all). */
static inline __attribute__((always_inline)) void sweep_insert(check_ctx *k, sweep *s, uint32_t r, uint32_t t,
								uint32_t end, int64_t bytes)
{
	const planned_class *pcs = k->pcs, *p = &pcs[r];
	uint32_t key = p->key;
	bool held = ks_has(&s->live, key);   /* by a class live or ended */
	if (held && s->at[key].end >= t) {
		overlap_error(k, &pcs[s->at[key].r], p);
		return;
	}
	uint32_t below = sweep_neighbour(s, key, 0, t, true);
	if (below != SWEEP_BARRIER && pc_reaches(k, &pcs[below], p)) {
		overlap_error(k, &pcs[below], p);
		return;
	}
	int64_t limit = s->last_key;
	if (s->step_bits >= 0 && (bytes - 1) >> s->step_bits < limit - key)
		limit = key + ((bytes - 1) >> s->step_bits);
	uint32_t above = sweep_neighbour(s, key, limit, t, false);
	if (above != SWEEP_BARRIER && pc_reaches(k, p, &pcs[above])) {
		overlap_error(k, &pcs[above], p);
		return;
	}
	s->at[key] = (live_class){ r, end };
	if (!held)
		ks_add(&s->live, key);
}

/* Positions and record indexes are 32-bit, halving the sweep's arrays:
 * orders step by 2^32 in 64 bits (pr_graph_renumber), so a method has fewer
 * than 2^32 nodes, and 2^32 planned values would not fit in memory. The
 * sweep takes the classes by the position where they start, at one position
 * in (arena, offset, class) order; a class is live from its start to its
 * end, inclusive, so that one that ends where another starts meets it. */
static void check_overlaps(check_ctx *k)
{
	int64_t n = k->n_pcs, T = k->lt->n_positions;
	PR_ASSERT(T < UINT32_MAX - 2 && n < UINT32_MAX);
	if (!n)
		return;
	sweep_keys keys = { .barriers = pr_xmalloc((size_t)(k->arenas.n + 1) * sizeof *keys.barriers) };
	if (!keys_by_slot(k, &keys))
		keys_by_sort(k, &keys);
	PR_ASSERT(keys.n_keys < UINT32_MAX);
	order_by_start(k);
	sweep s = { .step_bits = keys.step_bits, .last_key = keys.n_keys - 1 };
	ks_init(&s.live, keys.n_keys);
	s.at = pr_xmalloc((size_t)keys.n_keys * sizeof *s.at);
	for (int i = 0; i < keys.n_barriers; i++) {
		s.at[keys.barriers[i]] = (live_class){ SWEEP_BARRIER, UINT32_MAX };
		ks_add(&s.live, keys.barriers[i]);
	}
	free(keys.barriers);
	const pr_plan_class *classes = k->lt->classes;
	const planned_class *pcs = k->pcs;
	for (int64_t r = 0, ordered = 0; r < n; r++) {
		const pr_plan_class *c = &classes[pcs[r].cls];
		if (r >= ordered && r + 1 < n && classes[pcs[r + 1].cls].start == c->start) {
			ordered = order_position(k, r);
			c = &classes[pcs[r].cls];   /* r's record may be another now */
		}
		sweep_insert(k, &s, (uint32_t)r, (uint32_t)c->start, (uint32_t)c->end, c->bytes);
	}
	ks_free(&s.live);
	free(s.at);
}

/* Every rule over one method's lifetimes, computed once. The values are
 * checked first; then the sweep's records are written over them, in class
 * order (note_classes), the memory shrunk to them, so that the sweep's peak
 * holds the classes and the records, no values (at 10^6 nodes the checker
 * took 25 MB of values, 39 of records of 32 bytes and 50 of classes at
 * once). The overlaps it finds name their classes' bases after it, from
 * the graph. */
static void check_method(check_ctx *k)
{
	pr_lifetimes *lt = k->lt;
	const pr_lifetimes arrays = *lt;
	for (int64_t i = 0; i < arrays.n_values; i++) {
		if (i + SPEC_AHEAD / 2 < arrays.n_values)
			prefetch_spec(pr_plan_value_spec(&arrays.values[i + SPEC_AHEAD / 2]));
		check_value(k, &arrays, i);
	}
	note_classes(k);
	k->pcs = pr_xrealloc(k->pcs, (size_t)(k->n_pcs + 1) * sizeof *k->pcs);
	lt->values = NULL;
	lt->n_values = 0;
	check_overlaps(k);
	free(k->pcs);
	report_overlaps(k);
	arena_list_free(&k->arenas);
}

/* Whether any value of g has planned memory. Every rule above is about
 * values with memory, so a method without any (a program before planning)
 * is fine as it is: one light walk instead of its lifetimes. */
static bool any_planned(const pr_graph *g)
{
	pr_graph_for_each(g, n) {
		pr_node_prefetch_ahead(n);   /* a loaded method's walk reads every node */
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
		check_ctx k = { .diags = diags, .pass = pass_name ? pass_name : "verifier", .method = g->name, .g = g };
		k.lt = pr_lifetimes_compute(g);
		check_method(&k);
		errors += k.errors;
		pr_lifetimes_free(k.lt);
	}
	return errors;
}
