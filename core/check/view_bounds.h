/* view_bounds.h (private to core/check/): the static bound of strided views. */
#ifndef PASSRUN_VIEW_BOUNDS_H
#define PASSRUN_VIEW_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>

#include "passrun/program.h"

/* What a schema says about the geometry of its calls, read once per schema
 * (the verifier keeps one per schema, not per call). */
typedef struct pr_view_geometry {
	bool strided;               /* a strided view: the rest is meaningful */
	int size, stride, offset;   /* argument indices; offset -1 when absent */
} pr_view_geometry;

void pr_view_geometry_of(const pr_schema *s, pr_view_geometry *out);

/* False when op call n, of a schema whose geometry is g, is a strided view
 * (below) whose constant geometry addresses elements outside its base's
 * storage; msg then says what it reaches and what the storage holds. True
 * otherwise, also when the geometry is not known until run time. */
bool pr_view_within_storage(const pr_node *n, const pr_view_geometry *g, char *msg, size_t cap);

#endif
