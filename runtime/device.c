/* device.c: the device layer's common part.
 *
 * A prt_devset holds the devices of one kind ("sim" or "cuda") that a program
 * names, created on first use; slot 0 is the host, which has no prt_dev. A
 * device's type must be registered (device.h); sim simulates every
 * registered type, cuda runs the cuda type on the GPU. Every
 * allocation and copy goes through here so that the byte counters (what
 * --stats reports as bytes moved per call and at load) are kept in one place:
 * a counted copy adds its size to the device side's h2d or d2h counter. What
 * the caller itself does (placing inputs, reading outputs back) is uncounted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

pr_err *prt_devset_init(prt_devset *s, const char *kind)
{
	memset(s, 0, sizeof *s);
	if (strcmp(kind, "sim") != 0 && strcmp(kind, "cuda") != 0)
		return pr_err_new("unknown device kind '%s' (valid: sim, cuda)", kind);
	if (strcmp(kind, "cuda") == 0 && !prt_cuda_available())
		return pr_err_new("--device=cuda: no CUDA device is available");
	snprintf(s->kind, sizeof s->kind, "%s", kind);
	s->n = 1;
	s->where[0] = pr_device_host();
	return NULL;
}

void prt_devset_free(prt_devset *s)
{
	for (int i = 1; i < s->n; i++)
		if (s->devs[i])
			s->devs[i]->ops->destroy(s->devs[i]);
	s->n = 0;
}

/* sim simulates a device of every registered type; cuda runs cuda only. */
static pr_err *check_device_type(const prt_devset *s, pr_device d)
{
	char buf[PR_DEVICE_STR_MAX], types[PR_DEVICE_TYPES_STR_MAX];
	if (!pr_device_type_find(d.type))
		return pr_err_new("device '%s' is of no registered device type (registered: %s)",
				  pr_device_str(d, buf), pr_device_types_str(types));
	if (strcmp(s->kind, "cuda") == 0 && strcmp(d.type, "cuda") != 0)
		return pr_err_new("device '%s': --device=cuda runs cuda devices only "
				  "(--device=sim simulates every registered type)",
				  pr_device_str(d, buf));
	return NULL;
}

pr_err *prt_devset_slot(prt_devset *s, pr_device d, int *slot)
{
	if (pr_device_is_host(d)) {
		*slot = 0;
		return NULL;
	}
	d = pr_device_canonical(d);
	for (int i = 1; i < s->n; i++)
		if (pr_device_equal(s->where[i], d)) {
			*slot = i;
			return NULL;
		}
	pr_err *err = check_device_type(s, d);
	if (err)
		return err;
	if (s->n == (int)(sizeof s->devs / sizeof s->devs[0]))
		return pr_err_new("too many devices (at most %d)", s->n - 1);
	prt_dev *dev = NULL;
	if (strcmp(s->kind, "sim") == 0) {
		dev = prt_sim_new(d, pr_device_type_find(d.type)->host_addressable);
	} else {
		pr_err *e = prt_cuda_new(d, &dev);
		if (e)
			return e;
	}
	s->devs[s->n] = dev;
	s->where[s->n] = d;
	*slot = s->n++;
	return NULL;
}

void prt_devset_reset_counters(prt_devset *s)
{
	for (int i = 1; i < s->n; i++)
		s->devs[i]->h2d_bytes = s->devs[i]->d2h_bytes = 0;
}

void prt_devset_counters(const prt_devset *s, int64_t *h2d, int64_t *d2h)
{
	*h2d = *d2h = 0;
	for (int i = 1; i < s->n; i++) {
		*h2d += s->devs[i]->h2d_bytes;
		*d2h += s->devs[i]->d2h_bytes;
	}
}

pr_err *prt_mem_alloc(prt_devset *s, int slot, int64_t bytes, void **out)
{
	if (bytes <= 0)
		bytes = 1;      /* every tensor gets an address, even an empty one */
	if (slot == 0) {
		size_t n = ((size_t)bytes + 63) & ~(size_t)63;
		*out = aligned_alloc(64, n);
		if (!*out)
			return pr_err_new("out of host memory allocating %lld bytes", (long long)bytes);
		memset(*out, 0, n);
		return NULL;
	}
	prt_dev *d = s->devs[slot];
	return d->ops->alloc(d, bytes, out);
}

void prt_mem_free(prt_devset *s, int slot, void *p, int64_t bytes)
{
	if (!p)
		return;
	if (slot == 0) {
		free(p);
		return;
	}
	prt_dev *d = s->devs[slot];
	d->ops->free(d, p, bytes <= 0 ? 1 : bytes);
}

pr_err *prt_mem_copy(prt_devset *s, int dst_slot, void *dst, int src_slot, const void *src,
		    int64_t n, bool counted)
{
	if (n <= 0)
		return NULL;
	if (dst_slot == 0 && src_slot == 0) {
		memmove(dst, src, (size_t)n);
		return NULL;
	}
	if (dst_slot != 0 && src_slot != 0) {
		if (dst_slot != src_slot)
			return pr_err_new("copies between two devices are not supported");
		prt_dev *d = s->devs[dst_slot];
		return d->ops->d2d(d, dst, src, n);
	}
	if (dst_slot != 0) {
		prt_dev *d = s->devs[dst_slot];
		pr_err *e = d->ops->h2d(d, dst, src, n);
		if (!e && counted)
			d->h2d_bytes += n;
		return e;
	}
	prt_dev *d = s->devs[src_slot];
	pr_err *e = d->ops->d2h(d, dst, src, n);
	if (!e && counted)
		d->d2h_bytes += n;
	return e;
}

pr_err *prt_mem_sync(prt_devset *s, int slot)
{
	if (slot == 0)
		return NULL;
	prt_dev *d = s->devs[slot];
	return d->ops->sync(d);
}
