/* host_writes.h: the "host-writes" analysis (docs/placement-rules.md F2), as seen by
 * the passes that ask for it with pr_pass_analysis(ctx, PR_HOST_WRITES, g).
 *
 * Which ops write which tensor, as their schemas declare: an argument
 * Tensor(a!) is written. A write to a view is a write to the tensor it views
 * (a view is an op result whose schema aliases an argument, Tensor(a) or
 * Tensor(a!): the result of an in-place op counts; a view_copy does not), and
 * so, transitively, to every tensor of that storage. The analysis groups
 * writes by storage root and keeps each root's writers in graph order, so
 * "is X written between P and Q?" is one binary search, whatever the size of
 * the graph or the number of readers of X.
 *
 * The result stays valid while passes only add or remove copies and move
 * delegate arguments (the passes that do only that preserve it), and while
 * the host ops they move onto another value read storage that no op writes
 * (n_writers is 0 for it); a pass that moves the arguments of other host ops
 * must not keep it. Queries go through the
 * function pointers below: plugins never link against each other.
 *
 * A stable API, installed as <passrun/host_writes.h> for passes built
 * outside passrun's tree (docs/plugin-guide.md). A pass that wants it:
 *
 *   1. lists PR_HOST_WRITES in its pr_pass_info.requires (and in .preserves
 *      when it only adds or removes copies or moves delegate arguments);
 *   2. calls pr_pass_analysis(ctx, PR_HOST_WRITES, g) for each graph g it
 *      looks at, and treats the result as read-only; it lives until the
 *      graph is changed by a pass that does not preserve it;
 *   3. runs where the host-writes plugin is loaded (it ships with passrun
 *      and is found on the default plugin path).
 *
 * What holds across versions: the name "host-writes", the meaning of each
 * function below, and the layout of pr_host_writes, which only grows at the
 * end; a caller that uses a field added later checks struct_size first.
 * impl is the analysis's own and may change at any time. */
#ifndef PR_HOST_WRITES_H
#define PR_HOST_WRITES_H

#include "passrun/program.h"

#define PR_HOST_WRITES "host-writes"

typedef struct pr_host_writes pr_host_writes;

struct pr_host_writes {
	size_t struct_size;   /* sizeof(pr_host_writes) of the analysis that made it */
	/* The first op (in graph order) that writes the storage of t strictly
	 * after `after` and strictly before `before`; either bound may be NULL
	 * (the start / the end of the graph). NULL when there is none. */
	pr_node *(*writer_between)(const pr_host_writes *hw, pr_node *t,
				   const pr_node *after, const pr_node *before);
	/* How many ops write the storage of t anywhere in the graph. */
	int (*n_writers)(const pr_host_writes *hw, pr_node *t);
	void *impl;           /* the analysis's own tables */
};

/* The first writer of t anywhere, or NULL. */
static inline pr_node *pr_host_writer(const pr_host_writes *hw, pr_node *t)
{
	return hw->writer_between(hw, t, NULL, NULL);
}

#endif
