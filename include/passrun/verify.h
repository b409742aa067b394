/* verify.h: the checks: the core verifier and the memory-plan checker.
 *
 * Structure: every use defined before it, arity and types against the schema,
 * getitem indexes in range, return entries valid, write-back targets exist.
 * Placement: a host op never reads device memory unless its schema is
 * shape_only; a device delegate reads only its own device; copies go the way
 * their names say; an in-place result has the spec of the tensor it writes.
 * Findings are added to diags as errors with the node's name and a code
 * (E-PLACEMENT for placement). pass_name says who is checking ("verifier", or
 * the pass after which --verify-each ran). */
#ifndef PASSRUN_VERIFY_H
#define PASSRUN_VERIFY_H

#include <stdint.h>

#include "passrun/diag.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the number of errors it added. */
int pr_verify(pr_program *p, pr_diags *diags, const char *pass_name);

/* ---- memory plans (over the lifetimes of plan.h) ------------------------ */

typedef struct pr_arena_usage {
	pr_device arena;            /* arenas are named after their device */
	int64_t planned_bytes;      /* max over planned tensors of offset + storage bytes */
	int64_t lower_bound_bytes;  /* the most bytes live at one moment: no plan can use less */
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
