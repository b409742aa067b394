/* A plugin that registers a device type the core already has, with other
 * properties ("cuda", host addressable): the load must fail, naming the
 * plugin and the type, and leave the core's cuda as it was. */
#include "passrun/passrun.h"

static pr_err *register_fn(pr_registry *r)
{
	static const pr_device_type cuda = {sizeof cuda, "cuda", true, 64};
	pr_err *e = pr_register_device_type(r, &cuda);
	pr_err_free(e);   /* ignored on purpose: the registry remembers it */
	return NULL;
}

PR_PLUGIN("bad-device", "0", register_fn)
