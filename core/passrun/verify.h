/* verify.h: the core verifier.
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

#include "passrun/diag.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the number of errors it added. */
int pr_verify(pr_program *p, pr_diags *diags, const char *pass_name);

#ifdef __cplusplus
}
#endif
#endif
