/* dot.h: a Graphviz picture of a program (passrun --dot FILE).
 *
 * One cluster per method, and a legend cluster (the host, each device used,
 * the copy shape, the red outline when used). Nodes are filled with their
 * device's colour (the host grey, each device its own colour, the same in
 * every picture; a delegate takes its target_device's); copies are drawn as
 * bold double-bordered boxes labelled with their direction and bytes per
 * call; each edge is labelled with the bytes its value holds, i.e. what moves
 * per call along it. Copies of a tensor that a diagnostic flags
 * PR_DIAG_PER_CALL_COPY (diag.h: a copy on every call, e.g. one a skip flag
 * asked to remove) are outlined in red with the diagnostic's code.
 *
 * A view draws a part of the program, so that a large one still gives a
 * picture Graphviz lays out in seconds (dot's layout grows much faster than
 * the node count: a few hundred nodes is its comfortable size): one method,
 * one delegate's body, or a window of the nodes within RADIUS edges
 * (arguments or readers, either way) of one node, where each drawn node whose
 * neighbours are left out says how many ("+3 not drawn"). With a program
 * `before`, nodes the program has that before had not (by name; a nameless
 * call by its op and what it reads; the return node is always the same) are
 * outlined green, "added by WHO", and
 * before's nodes that are gone are drawn dashed grey, "removed by WHO", with
 * dashed edges from what they read. */
#ifndef PASSRUN_TOOL_DOT_H
#define PASSRUN_TOOL_DOT_H

#include <stdio.h>

#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pr_dot_view {
	const char *method;         /* only this method (NULL: every method) */
	const char *delegate;       /* only this delegate's body, instead of methods */
	const char *around;         /* only the window around the node of this name */
	int radius;                 /* the window's radius in edges, >= 0 */
	const pr_program *before;   /* mark what changed against it; NULL: nothing */
	const char *changed_by;     /* who changed it, for the marks ("pass 'dce'") */
} pr_dot_view;

/* The whole program. diags may be NULL. Returns the text, malloc'd. */
char *pr_dot_render(const pr_program *p, const pr_diags *diags);
/* The part view asks for (NULL: the whole program) into *text (malloc'd);
 * *n_drawn (when not NULL) gets how many nodes it drew. An unknown method,
 * delegate or node is an error naming the nearest one. */
pr_err *pr_dot_render_view(const pr_program *p, const pr_diags *diags, const pr_dot_view *view,
			   char **text, int *n_drawn);

#ifdef __cplusplus
}
#endif
#endif
