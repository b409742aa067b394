/* planner.h: offsets for one arena (private to the memory-plan plugin; the
 * benchmark in bench/memplan compiles planner.c too).
 *
 * Input: items, each live over positions [start, end] (inclusive) and needing
 * size bytes. Output: an offset per item, a multiple of align, such that two
 * items live at one position never overlap. */
#ifndef PASSRUN_MEMPLAN_PLANNER_H
#define PASSRUN_MEMPLAN_PLANNER_H

#include <stdbool.h>
#include <stdint.h>

#include "passrun/plan.h"

typedef struct mp_item {
	int32_t start, end;  /* positions, inclusive; start <= end (32-bit as
			      * plan.h's: 24 bytes an item, not 32) */
	int64_t size;        /* bytes; 0 is allowed (gets offset 0) */
	int64_t offset;      /* out */
} mp_item;

typedef struct mp_result {
	int64_t planned_bytes;      /* max over items of offset + size */
	int64_t lower_bound_bytes;  /* peak over positions of the live sizes */
	int64_t aligned_lower_bound;/* no plan with this alignment can use less: the
				     * peak of rounded sizes less the largest padding */
	int orders_tried;           /* greedy orders run before stopping */
	int best_order;             /* which one gave the plan (index into mp_order_names) */
	bool first_fit;             /* with the lowest fitting gap, not the tightest */
} mp_result;

extern const char *const mp_order_names[];

/* Plans items in place. n_positions bounds every end (end < n_positions).
 * align is a power of two. Ids and positions are 32-bit inside (plan.h's
 * lifetimes are): n < INT32_MAX and n_positions <= INT32_MAX, else an
 * invariant failure. */
mp_result mp_plan(mp_item *items, int64_t n, int64_t n_positions, int64_t align);


/* Arenas one method can have (one per device). */
#define MP_MAX_ARENAS 64

/* What mp_plan_graph did in one arena. */
typedef struct mp_arena_report {
	pr_device arena;
	int64_t n_items;
	mp_result result;
	bool too_big;        /* its rounded sizes add up past INT64_MAX: nothing planned */
	bool unknown_type;   /* its device's type is not registered: nothing planned */
} mp_arena_report;

typedef struct mp_graph_options {
	bool alloc_graph_input, alloc_graph_output;
	int64_t host_alignment, device_alignment;  /* powers of two; an arena gets at
						      least its device type's alignment */
} mp_graph_options;

/* Plans method g: every class that needs memory (see memory_plan.c) gets an
 * offset in the arena of its device, written into the spec of each of its
 * members; other values lose any mem=. Returns whether a spec changed.
 * reports (may be NULL) receives up to max_reports arenas; *n_reports their
 * count. */
bool mp_plan_graph(pr_graph *g, const mp_graph_options *o, mp_arena_report *reports,
		   int max_reports, int *n_reports);
/* The same with lifetimes the caller computed (lt must be g's, fresh). It
 * takes lt->values and lt->classes (NULL after) before planning: the values
 * shrink to their classes' items, the classes are freed once gathered, and
 * the plan is written by walking g's nodes, so that the planner's memory is
 * what they took, not more; pr_lifetimes_free still frees lt. */
bool mp_plan_lifetimes(pr_graph *g, pr_lifetimes *lt, const mp_graph_options *o, mp_arena_report *reports,
		       int max_reports, int *n_reports);

#endif
