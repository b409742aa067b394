/* device.c: devices, a delegate's device, and the registry of device types.
 *
 * Canonical values make equality a comparison: pr_device_parse and
 * pr_device_canonical give the host one spelling and every device an index,
 * so "CUDA", "cuda" and "cuda:0" compare, print and hash alike.
 *
 * The registry is a fixed table (no allocation, so nothing to free at exit);
 * names are copied, because a plugin's strings go away with its .so. The
 * core's own types are the table's first entries. */
#include "passrun/device.h"

#include <stdio.h>
#include <string.h>

#include "passrun/program.h"

/* ---- devices ----------------------------------------------------------- */

pr_device pr_device_host(void)
{
	pr_device d = {.type = "cpu", .index = -1};
	return d;
}

/* Two type names, at most PR_DEVICE_TYPE_MAX bytes each. */
static bool same_type_name(const char *a, const char *b)
{
	for (int i = 0; i < PR_DEVICE_TYPE_MAX; i++) {
		if (a[i] != b[i])
			return false;
		if (a[i] == 0)
			return true;
	}
	return true;
}

/* The one external definition of the header's inline. */
extern inline bool pr_device_is_host(pr_device d);

pr_device pr_device_canonical(pr_device d)
{
	if (pr_device_is_host(d))
		return pr_device_host();
	if (d.index < 0)
		d.index = 0;
	return d;
}

/* pr_device_canonical's equality without building the canonical values. */
bool pr_device_equal(pr_device a, pr_device b)
{
	bool ha = pr_device_is_host(a), hb = pr_device_is_host(b);
	if (ha || hb)
		return ha == hb;
	return (a.index < 0 ? 0 : a.index) == (b.index < 0 ? 0 : b.index) &&
	       same_type_name(a.type, b.type);
}

/* ASCII classes, not <ctype.h>'s: a device's syntax does not depend on the
 * locale, and these run per value the loaders read. */
static bool is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The TYPE of TYPE[:INDEX], lower-cased into out; its length, 0 if none. */
static size_t parse_type(const char *s, size_t n, char out[PR_DEVICE_TYPE_MAX])
{
	size_t i = 0;
	for (; i < n && s[i] != ':'; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(is_alpha(c) || (i > 0 && (is_digit(c) || c == '_'))) || i + 1 >= PR_DEVICE_TYPE_MAX)
			return 0;
		out[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	out[i] = 0;
	return i;
}

bool pr_device_parse(const char *s, size_t n, pr_device *out)
{
	pr_device d = {.index = 0};
	size_t i = parse_type(s, n, d.type);
	if (i == 0)
		return false;
	if (i < n) {
		i++; /* ':' */
		if (i == n)
			return false;
		int64_t index = 0;
		for (; i < n; i++) {
			if (!is_digit((unsigned char)s[i]) || index > 100000)
				return false;
			index = index * 10 + (s[i] - '0');
		}
		d.index = (int32_t)index;
	}
	*out = pr_device_canonical(d);
	return true;
}

/* Written by hand, not by snprintf: copies and arenas name their device per
 * value. A canonical index is 0..INT32_MAX, so "TYPE:INDEX" fits. */
const char *pr_device_str(pr_device d, char *buf)
{
	d = pr_device_canonical(d);
	if (pr_device_is_host(d)) {
		memcpy(buf, "cpu", 4);
		return buf;
	}
	size_t n = 0;
	while (n + 1 < PR_DEVICE_TYPE_MAX && d.type[n])
		n++;
	memcpy(buf, d.type, n);
	buf[n++] = ':';
	char digits[12];
	int k = 0;
	uint32_t v = (uint32_t)d.index;
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k)
		buf[n++] = digits[--k];
	buf[n] = 0;
	return buf;
}

/* ---- the device a delegate runs on ----------------------------------- */

/* target_device read and checked: a device of a registered type, or not. */
static bool parse_target(const char *td, pr_device *out)
{
	pr_device dev;
	if (!pr_device_parse(td, strlen(td), &dev) || !pr_device_type_find(dev.type))
		return false;
	*out = dev;
	return true;
}

/* The answer is kept in the delegate (device_known, device), because passes
 * ask it per call and per argument; pr_delegate_set_spec and _remove_spec,
 * the only writers of the specs, forget it. The registry only grows, so a
 * type found once stays found; a value refused once is checked again, as its
 * type may have been registered since. The cache is not part of the
 * delegate's value, hence the cast. */
pr_err *pr_delegate_device(const pr_delegate *d, pr_device *out)
{
	if (d->device_known) {
		*out = d->device;
		return NULL;
	}
	*out = pr_device_host();
	const char *td = pr_delegate_spec(d, "target_device");
	if (!td || parse_target(td, out)) {
		pr_delegate *cache = (pr_delegate *)d;
		cache->device = *out;
		cache->device_known = true;
		return NULL;
	}
	char types[PR_DEVICE_TYPES_STR_MAX];
	return pr_err_new("delegate @%s has target_device=\"%s\", which is not a device: "
			  "expected TYPE[:INDEX] (any case) with TYPE a registered device type "
			  "(%s)", d->name, td, pr_device_types_str(types));
}

/* ---- device types ------------------------------------------------------ */

typedef struct type_entry {
	char name[PR_DEVICE_TYPE_MAX];
	pr_device_type t;     /* t.name points at name */
} type_entry;

/* cpu and cuda need no alignment of their own: the memory planner's options
 * (16 bytes by default) align their arenas. */
static type_entry types[PR_DEVICE_TYPES_MAX] = {
	{"cpu", {sizeof(pr_device_type), types[0].name, true, 1}},
	{"cuda", {sizeof(pr_device_type), types[1].name, false, 1}},
};
static int n_types = 2;

static bool same_type(const pr_device_type *a, const pr_device_type *b)
{
	return a->host_addressable == b->host_addressable && a->alignment == b->alignment;
}

/* t's fields, those a caller with a shorter struct did not have left zero. */
static pr_device_type read_type(const pr_device_type *t)
{
	pr_device_type v = {0};
	memcpy(&v, t, t->struct_size < sizeof v ? t->struct_size : sizeof v);
	v.struct_size = sizeof v;
	return v;
}

static pr_err *check_type(const pr_device_type *t, char name[PR_DEVICE_TYPE_MAX])
{
	size_t n = t->name ? strlen(t->name) : 0;
	if (!n || parse_type(t->name, n, name) != n)
		return pr_err_new("device type \"%s\": a name is a letter, then letters, digits or "
				  "'_', at most %d characters", t->name ? t->name : "",
				  PR_DEVICE_TYPE_MAX - 1);
	if (t->alignment <= 0 || (t->alignment & (t->alignment - 1)))
		return pr_err_new("device type '%s': alignment %lld is not a power of two", name,
				  (long long)t->alignment);
	return NULL;
}

pr_err *pr_device_type_add(const pr_device_type *t)
{
	if (!t || t->struct_size < offsetof(pr_device_type, alignment) + sizeof t->alignment)
		return pr_err_new("a device type struct is too small (struct_size %zu)",
				  t ? t->struct_size : 0);
	pr_device_type v = read_type(t);
	char name[PR_DEVICE_TYPE_MAX];
	pr_err *err = check_type(&v, name);
	if (err)
		return err;
	const pr_device_type *old = pr_device_type_find(name);
	if (old)
		return same_type(old, &v) ? NULL :
			pr_err_new("device type '%s' is already registered with other properties "
				   "(host addressable: %s, alignment %lld)", name,
				   old->host_addressable ? "yes" : "no", (long long)old->alignment);
	if (n_types == PR_DEVICE_TYPES_MAX)
		return pr_err_new("device type '%s': at most %d types can be registered", name,
				  PR_DEVICE_TYPES_MAX);
	type_entry *e = &types[n_types++];
	memcpy(e->name, name, sizeof e->name);
	e->t = v;
	e->t.name = e->name;
	return NULL;
}

const pr_device_type *pr_device_type_find(const char *name)
{
	char lower[PR_DEVICE_TYPE_MAX];
	size_t n = strlen(name);
	if (parse_type(name, n, lower) != n)
		return NULL;
	for (int i = 0; i < n_types; i++)
		if (same_type_name(types[i].name, lower))
			return &types[i].t;
	return NULL;
}

int pr_device_type_count(void)
{
	return n_types;
}

const pr_device_type *pr_device_type_get(int i)
{
	return i >= 0 && i < n_types ? &types[i].t : NULL;
}

const char *pr_device_types_str(char *buf)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < n_types; i++)
		len += (size_t)snprintf(buf + len, PR_DEVICE_TYPES_STR_MAX - len, "%s%s", i ? ", " : "",
					types[i].name);
	return buf;
}
