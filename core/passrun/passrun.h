/* passrun.h: everything a plugin may include. */
#ifndef PASSRUN_PASSRUN_H
#define PASSRUN_PASSRUN_H

#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/format.h"
#include "passrun/pass.h"
#include "passrun/program.h"
#include "passrun/strbuf.h"
#include "passrun/verify.h"

#endif
