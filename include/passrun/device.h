/* device.h: devices, the device a delegate runs on, and the device types.
 *
 * A device is written TYPE[:INDEX] ("cuda:1"), in any case. A bare type is
 * index 0, so "CUDA", "cuda" and "cuda:0" are one device everywhere: copies,
 * memory arenas, the runtime and pictures all see the same value. Type "cpu",
 * whatever its index, is the host. Every pr_device this API returns is
 * canonical: a lower-case type, an index >= 0 for a device, and the host
 * always pr_device_host().
 *
 * A delegate runs where its target_device compile spec says, on the host when
 * it has none. pr_delegate_device is the one reader of that spec.
 *
 * Device types are a registry: a name, whether host code can address the
 * type's memory, and the alignment its memory arenas need. The core registers
 * "cpu" (the host) and "cuda"; a plugin adds its own through
 * pr_register_device_type (pass.h). A device of a type nobody registered
 * parses, and is refused by whatever must place, plan or run it. The registry
 * is process-wide and only grows, so a type stays valid as long as the
 * program values that name it. */
#ifndef PASSRUN_DEVICE_H
#define PASSRUN_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "passrun/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PR_DEVICE_TYPE_MAX 16   /* a type's length, its terminating 0 included */
#define PR_DEVICE_STR_MAX 32    /* "cuda:0" and its 0, for pr_device_str */

typedef struct pr_device {
	char type[PR_DEVICE_TYPE_MAX];  /* lower case; "cpu" is the host */
	int32_t index;                  /* >= 0; -1 only for the host */
} pr_device;

pr_device pr_device_host(void);
/* Type "cpu" (or none yet): placement asks it of every value, so it is
 * inline (C99's: device.c holds the exported definition, which plugins
 * built before call). */
inline bool pr_device_is_host(pr_device d)
{
	return d.type[0] == 0 || (d.type[0] == 'c' && d.type[1] == 'p' && d.type[2] == 'u' && d.type[3] == 0);
}
/* d canonical: the host made pr_device_host(), a missing index made 0. */
pr_device pr_device_canonical(pr_device d);
/* Equal once canonical: "cuda" and "cuda:0" are one device. */
bool pr_device_equal(pr_device a, pr_device b);

#ifndef __cplusplus   /* C++ spells it static_assert; the C builds check it */
_Static_assert(PR_DEVICE_TYPE_MAX >= 8, "pr_device_same_spelling reads 8 bytes of a type");
#endif

/* a and b spelt alike: the same index and type name (up to its 0). The
 * names' first 8 bytes are compared as one word: equal words holding a 0 byte
 * are equal names (most are short: "cpu", "cuda"), with no call to strcmp. */
static inline bool pr_device_same_spelling(const pr_device *a, const pr_device *b)
{
	uint64_t x, y;
	memcpy(&x, a->type, sizeof x);
	memcpy(&y, b->type, sizeof y);
	if (a->index != b->index)
		return false;
	if (x == y && ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull))
		return true;
	return !strcmp(a->type, b->type);
}

/* pr_device_equal, with its usual case (the same spelling: copies of one
 * device value) decided inline, for code that compares a device per value. */
static inline bool pr_device_equal_at(const pr_device *a, const pr_device *b)
{
	return pr_device_same_spelling(a, b) || pr_device_equal(*a, *b);
}
/* Parses s[0, n) as TYPE[:INDEX] (a letter, then letters, digits or '_')
 * case-insensitively into a canonical device. Only the syntax is checked:
 * whether the type is registered is pr_device_type_find's question. */
bool pr_device_parse(const char *s, size_t n, pr_device *out);
/* Writes "cuda:0" or "cpu" into buf (PR_DEVICE_STR_MAX bytes). */
const char *pr_device_str(pr_device d, char *buf);

/* ---- device ids: the devices a spec names ---------------------------- */

/* A spec names two devices (where its value lives, and the arena it is
 * planned in) and a big program has millions of specs, so a spec holds an id
 * instead: the number of one canonical device in a process-wide table that
 * only grows (as pr_layout_intern's layouts do), so an id is valid in every
 * program until exit. Equal devices have equal ids: compare ids with ==. Id
 * 0 is the host, so a zeroed spec is on the host. Thread-safe. */
typedef uint32_t pr_device_id;
#define PR_DEVICE_ID_HOST 0u

/* d's id, d made canonical first (pr_device_canonical: a missing index is
 * 0, so {"cuda", -1} and "cuda:0" have one id; pr_device_parse has already
 * lower-cased "CUDA"). */
pr_device_id pr_device_intern(pr_device d);
/* The device of id, at an address valid until exit. An id no
 * pr_device_intern gave names the device "<invalid id>", whose type no one
 * can register, so that nothing can place or run a value there. */
const pr_device *pr_device_of(pr_device_id id);
/* Whether pr_device_intern gave id. */
bool pr_device_id_valid(pr_device_id id);

/* pr_device_intern's answer for the device asked last, for code that asks
 * the same device again and again (a pass placing one delegate's values):
 * no call, lock or thread-local lookup then. Zero-initialize it; one per
 * thread. */
typedef struct pr_device_id_memo {
	pr_device device;
	pr_device_id id;
} pr_device_id_memo;

static inline pr_device_id pr_device_intern_memo(pr_device_id_memo *m, pr_device d)
{
	if (pr_device_is_host(d))
		return PR_DEVICE_ID_HOST;
	if (!pr_device_same_spelling(&m->device, &d)) {
		m->id = pr_device_intern(d);
		m->device = d;
	}
	return m->id;
}

/* ---- the device a delegate runs on ---------------------------------- */

struct pr_delegate;

/* Where delegate d runs: its target_device compile spec (a string) read by
 * pr_device_parse, or the host when d has none. An error (the device is then
 * the host) names the delegate and the value when it is not TYPE[:INDEX] of
 * a registered type, and lists the registered types. */
pr_err *pr_delegate_device(const struct pr_delegate *d, pr_device *out);

/* ---- device types ---------------------------------------------------- */

typedef struct pr_device_type {
	size_t struct_size;       /* sizeof(pr_device_type) as the caller saw it */
	const char *name;         /* a TYPE as pr_device_parse reads it: "npu" */
	bool host_addressable;    /* host code may read and write its memory in place */
	int64_t alignment;        /* bytes, a power of two: its arenas' offsets are at
				     least multiples of it (1: no need of its own) */
} pr_device_type;

#define PR_DEVICE_TYPES_MAX 32

/* Registers t (copied; the name is lower-cased). Registering a name again
 * with the same properties is a no-op; with others, an error. */
pr_err *pr_device_type_add(const pr_device_type *t);
/* The registered type of that name (any case), or NULL. */
const pr_device_type *pr_device_type_find(const char *name);
/* The registered types in registration order: "cpu" first, then "cuda". */
int pr_device_type_count(void);
const pr_device_type *pr_device_type_get(int i);
/* "cpu, cuda, npu": the registered names, for messages. buf holds
 * PR_DEVICE_TYPES_STR_MAX bytes. */
#define PR_DEVICE_TYPES_STR_MAX (PR_DEVICE_TYPES_MAX * (PR_DEVICE_TYPE_MAX + 2))
const char *pr_device_types_str(char *buf);

#ifdef __cplusplus
}
#endif
#endif
