/* dot.h: a Graphviz picture of a program (passrun --dot FILE).
 *
 * One cluster per method. Nodes are filled with their device's colour (the
 * host grey, each device its own colour, the same on every run); copies are
 * drawn as bold boxes; each edge is labelled with the bytes its value holds,
 * i.e. what moves per call along it. Copies that run on every call although a
 * skip flag asked for none (the per-call diagnostics W-/E-CONSTANT-COPY,
 * INPUT-COPY, OUTPUT-ON-HOST name their tensor) are outlined in red. */
#ifndef PASSRUN_DOT_H
#define PASSRUN_DOT_H

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
