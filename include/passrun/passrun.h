/* passrun.h: everything a plugin may include: the IR (programs, nodes, specs,
 * devices and device types, constant data, lifetimes, diagnostics, errors,
 * strings, the radix sort template) and the pass API.
 * The formats, the checks and the pass manager's driver (format.h, verify.h,
 * manager.h) are the tool's: a pass neither reads files nor runs the verifier
 * (the manager does, around every pass, when asked). */
#ifndef PASSRUN_PASSRUN_H
#define PASSRUN_PASSRUN_H

#include "passrun/data.h"
#include "passrun/device.h"
#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/pass.h"
#include "passrun/plan.h"
#include "passrun/program.h"
#include "passrun/radix_sort.h"
#include "passrun/strbuf.h"

#endif
