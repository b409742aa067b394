/* npu-device: a device type of a vendor's own, "npu", for passrun.
 *
 * A device type is what the core knows of a device (device.h): its name,
 * whether host code can address its memory, and the alignment its memory
 * arenas need. Once this plugin registers "npu", a delegate with
 * target_device="npu" (any case; "npu" is npu:0) or "npu:N" is a device
 * delegate like a cuda one: propagate-device copies its arguments to the
 * npu and its results back, memory-plan gives every npu:N an arena aligned
 * to 64 bytes, and `--device=sim` simulates the device (its memory closed to
 * host code, so a misplaced host read is caught). Nothing else is needed:
 * the placement passes, the verifier, the planner and the runtime all read
 * device types from the registry. npu.yaml is a pipeline that loads this
 * plugin and places and plans a program for it. */
#include <passrun/passrun.h>

static const pr_device_type npu = {
	.struct_size = sizeof(pr_device_type),
	.name = "npu",
	.host_addressable = false,   /* host code reaches it only through copies */
	.alignment = 64,             /* the npu's DMA engine moves 64-byte lines */
};

static pr_err *register_device(pr_registry *r)
{
	return pr_register_device_type(r, &npu);
}

PR_PLUGIN("npu-device", "1.0", register_device)
