/* plan.h: facts about a memory plan (the mem=ARENA:OFFSET of specs), shared by
 * the verifier's plan checker, --stats=json and the memory-plan plugin.
 *
 * Lifetimes follow behaviour.md M1: a tensor lives from the node that defines
 * it to its last reader in graph order; in-place results and views share their
 * base's memory and extend its life. The lower bound of an arena is the
 * largest total size of tensors live at one moment in it: no plan can use less. */
#ifndef PASSRUN_PLAN_H
#define PASSRUN_PLAN_H

#include "passrun/diag.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pr_arena_usage {
	pr_device arena;            /* arenas are named after their device */
	int64_t planned_bytes;      /* max over planned tensors of offset + storage bytes */
	int64_t lower_bound_bytes;  /* see above */
} pr_arena_usage;

/* Per-arena usage of method g, one entry per arena that has planned tensors.
 * Returns the count; *out is malloc'd (NULL when 0). */
int pr_plan_usage(pr_graph *g, pr_arena_usage **out);

/* The plan checker: overlaps of tensors live at one time in one arena,
 * aliases not sharing memory, device tensors in another device's arena,
 * constants planned without being device-resident. Adds errors (E-PLAN) to
 * diags and returns how many. */
int pr_plan_check(pr_program *p, pr_diags *diags, const char *pass_name);

#ifdef __cplusplus
}
#endif
#endif
