/* planner.h: offsets for one arena (private to the memory-plan plugin; the
 * benchmark in bench/memplan compiles planner.c too).
 *
 * Input: items, each live over positions [start, end] (inclusive) and needing
 * size bytes. Output: an offset per item, a multiple of align, such that two
 * items live at one position never overlap. */
#ifndef PASSRUN_MEMPLAN_PLANNER_H
#define PASSRUN_MEMPLAN_PLANNER_H

#include <stdint.h>

typedef struct mp_item {
	int64_t start, end;  /* positions, inclusive; start <= end */
	int64_t size;        /* bytes; 0 is allowed (gets offset 0) */
	int64_t offset;      /* out */
} mp_item;

typedef struct mp_result {
	int64_t planned_bytes;      /* max over items of offset + size */
	int64_t lower_bound_bytes;  /* peak over positions of the live sizes */
	int64_t aligned_lower_bound;/* the same with sizes rounded up to align */
	int orders_tried;           /* greedy orders run before stopping */
	int best_order;             /* which one gave the plan (index into mp_order_names) */
} mp_result;

extern const char *const mp_order_names[];

/* Plans items in place. n_positions bounds every end (end < n_positions).
 * align is a power of two. */
mp_result mp_plan(mp_item *items, int64_t n, int64_t n_positions, int64_t align);

#endif
