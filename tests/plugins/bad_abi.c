/* A plugin built for a plugin ABI this passrun does not have (41 past it):
 * the loader must refuse it, naming both versions, before registering it. */
#include "passrun/passrun.h"

static pr_err *never_called(pr_registry *r)
{
	(void)r;
	return pr_err_new("the register callback of a wrong-ABI plugin ran");
}

static const pr_plugin_info info = {
	.abi_version = PR_PLUGIN_ABI_VERSION + 41,
	.struct_size = sizeof(pr_plugin_info),
	.name = "bad-abi",
	.version = "0",
	.register_fn = never_called,
};

/* Written out, not PR_PLUGIN: the point is a wrong abi_version. */
PR_PLUGIN_EXPORT const pr_plugin_info *PR_PLUGIN_ENTRY(void)
{
	return &info;
}
