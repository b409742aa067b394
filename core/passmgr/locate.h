/* locate.h (private to core/): the shipped plugin and pipeline folders. */
#ifndef PASSRUN_LOCATE_H
#define PASSRUN_LOCATE_H

#include <stdbool.h>

/* NULL when there is none. */
const char *pr_locate_plugin_dir(void);
const char *pr_locate_pipeline_dir(void);

#endif
