/* same_device.h (private to core/check/): device equality as the checks ask
 * it, per tensor read and per planned value. */
#ifndef PASSRUN_CHECK_SAME_DEVICE_H
#define PASSRUN_CHECK_SAME_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "passrun/device.h"

_Static_assert(PR_DEVICE_TYPE_MAX >= 8, "check_same_type reads 8 bytes of a type name");

/* Two type names the same up to their 0. The first 8 bytes are compared as
 * one word: equal words holding a 0 byte are equal names (most names are
 * short: "cpu", "cuda"), without a call to strcmp. */
static inline bool check_same_type(const char *a, const char *b)
{
	uint64_t x, y;
	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	if (x == y && ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull))
		return true;
	return !strcmp(a, b);
}

/* pr_device_equal, with the common case (the very same spelling) first. */
static inline bool check_same_device(const pr_device *a, const pr_device *b)
{
	return (a->index == b->index && check_same_type(a->type, b->type)) ||
	       pr_device_equal(*a, *b);
}

#endif
