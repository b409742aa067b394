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

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "passrun/program.h"

/* ---- devices ----------------------------------------------------------- */

pr_device pr_device_host(void)
{
	pr_device d = {.type = "cpu", .index = -1};
	return d;
}

bool pr_device_is_host(pr_device d)
{
	return d.type[0] == 0 || !strcmp(d.type, "cpu");
}

pr_device pr_device_canonical(pr_device d)
{
	if (pr_device_is_host(d))
		return pr_device_host();
	if (d.index < 0)
		d.index = 0;
	return d;
}

bool pr_device_equal(pr_device a, pr_device b)
{
	a = pr_device_canonical(a);
	b = pr_device_canonical(b);
	return !strcmp(a.type, b.type) && a.index == b.index;
}

/* The TYPE of TYPE[:INDEX], lower-cased into out; its length, 0 if none. */
static size_t parse_type(const char *s, size_t n, char out[PR_DEVICE_TYPE_MAX])
{
	size_t i = 0;
	for (; i < n && s[i] != ':'; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(isalpha(c) || (i > 0 && (isdigit(c) || c == '_'))) || i + 1 >= PR_DEVICE_TYPE_MAX)
			return 0;
		out[i] = (char)tolower(c);
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
			if (!isdigit((unsigned char)s[i]) || index > 100000)
				return false;
			index = index * 10 + (s[i] - '0');
		}
		d.index = (int32_t)index;
	}
	*out = pr_device_canonical(d);
	return true;
}

const char *pr_device_str(pr_device d, char *buf)
{
	d = pr_device_canonical(d);
	if (pr_device_is_host(d))
		snprintf(buf, PR_DEVICE_STR_MAX, "cpu");
	else
		snprintf(buf, PR_DEVICE_STR_MAX, "%s:%d", d.type, (int)d.index);
	return buf;
}

/* ---- the device a delegate runs on ----------------------------------- */

pr_err *pr_delegate_device(const pr_delegate *d, pr_device *out)
{
	*out = pr_device_host();
	const char *td = pr_delegate_spec(d, "target_device");
	if (!td)
		return NULL;
	pr_device dev;
	if (pr_device_parse(td, strlen(td), &dev) && pr_device_type_find(dev.type)) {
		*out = dev;
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
		if (!strcmp(types[i].name, lower))
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
