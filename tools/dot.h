/* dot.h: a Graphviz picture of a program (passrun --dot FILE).
 *
 * One cluster per method, and a legend cluster (the host, each device used,
 * the copy shape, the red outline when used). Nodes are filled with their
 * device's colour (the host grey, each device its own colour, the same in
 * every picture; a delegate takes its target_device's); copies are drawn as
 * bold double-bordered boxes labelled with their direction and bytes per
 * call; each edge is labelled with the bytes its value holds, i.e. what moves
 * per call along it. Copies that run on every call although a skip flag asked
 * for none (the per-call diagnostics W-/E-CONSTANT-COPY, INPUT-COPY,
 * OUTPUT-ON-HOST name their tensor) are outlined in red with their code. */
#ifndef PASSRUN_TOOL_DOT_H
#define PASSRUN_TOOL_DOT_H

#include <stdio.h>

#include "passrun/diag.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* diags may be NULL. Returns the text, malloc'd. */
char *pr_dot_render(const pr_program *p, const pr_diags *diags);

#ifdef __cplusplus
}
#endif
#endif
