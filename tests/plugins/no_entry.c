/* A shared object that is not a passrun plugin: it exports a function, but
 * not passrun_plugin_info. */
#include "passrun/passrun.h"

PR_PLUGIN_EXPORT int not_the_entry_point(void)
{
	return 42;
}
