/* view_bounds.h (private to core/check/): the static bound of strided views. */
#ifndef PASSRUN_VIEW_BOUNDS_H
#define PASSRUN_VIEW_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>

#include "passrun/program.h"

/* False when op call n is a strided view (below) whose constant geometry
 * addresses elements outside its base's storage; msg then says what it
 * reaches and what the storage holds. True otherwise, also when the
 * geometry is not known until run time. */
bool pr_view_within_storage(const pr_node *n, char *msg, size_t cap);

#endif
