/* device_sim.c: the simulated device (docs/placement-rules.md M4).
 *
 * Each allocation is its own anonymous mapping, kept PROT_NONE except while a
 * device kernel or a copy runs on that device (enter/leave, reference
 * counted), so a host kernel that touches device memory faults; the executor
 * turns the fault into a "placement violation" naming the node. Device
 * kernels run the host kernel code with the device's memory opened; the
 * executor checks beforehand that every tensor they get lies in this
 * device's memory, so a device kernel reading host memory is reported too.
 *
 * A device of a host-addressable type (device.h) is simulated with its memory
 * always open: host code may read and write it, as the type promises.
 *
 * All regions of all sim devices are also kept in one process-wide list, so
 * the SIGSEGV handler can tell a fault on sim memory from a real crash. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt.h"

typedef struct region {
	uint8_t *p;
	size_t size;
	prt_dev *owner;
} region;

typedef struct sim {
	int open;              /* nesting depth of enter() */
	bool host_addressable; /* its type says host code may touch it: never closed */
} sim;

static region *g_regions;
static int g_n_regions, g_cap_regions;

static size_t page_round(int64_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return ((size_t)n + pg - 1) / pg * pg;
}

static void set_prot(prt_dev *d, int prot)
{
	if (((sim *)d->impl)->host_addressable)
		return;
	for (int i = 0; i < g_n_regions; i++)
		if (g_regions[i].owner == d)
			mprotect(g_regions[i].p, g_regions[i].size, prot);
}

static pr_err *sim_alloc(prt_dev *d, int64_t bytes, void **out)
{
	size_t n = page_round(bytes);
	sim *s = d->impl;
	void *p = mmap(NULL, n, s->open || s->host_addressable ? PROT_READ | PROT_WRITE : PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return pr_err_new("sim device: cannot map %lld bytes", (long long)bytes);
	PR_GROW(g_regions, g_n_regions, g_cap_regions);
	g_regions[g_n_regions++] = (region){p, n, d};
	*out = p;
	return NULL;
}

static void sim_free(prt_dev *d, void *p, int64_t bytes)
{
	(void)d;
	(void)bytes;
	for (int i = 0; i < g_n_regions; i++)
		if (g_regions[i].p == p) {
			munmap(p, g_regions[i].size);
			g_regions[i] = g_regions[--g_n_regions];
			return;
		}
}

static void sim_enter(prt_dev *d)
{
	sim *s = d->impl;
	if (s->open++ == 0)
		set_prot(d, PROT_READ | PROT_WRITE);
}

static void sim_leave(prt_dev *d)
{
	sim *s = d->impl;
	if (--s->open == 0)
		set_prot(d, PROT_NONE);
}


/* The region of d holding [p, p+n), or NULL. */
static region *find_region(prt_dev *d, const void *p, int64_t n)
{
	const uint8_t *b = p;
	for (int i = 0; i < g_n_regions; i++) {
		region *r = &g_regions[i];
		if (r->owner == d && b >= r->p && b + n <= r->p + r->size)
			return r;
	}
	return NULL;
}

/* A copy opens only the regions it touches (one mprotect each way), unless
 * the device is already open for a kernel. */
static pr_err *sim_copy(prt_dev *d, void *dst, const void *src, int64_t n)
{
	sim *s = d->impl;
	bool open = s->open || s->host_addressable;
	region *rd = open ? NULL : find_region(d, dst, n);
	region *rs = open ? NULL : find_region(d, src, n);
	if (!open && !rd && !rs)
		return pr_err_new("sim device: a copy that neither reads nor writes the device's memory");
	if (rd)
		mprotect(rd->p, rd->size, PROT_READ | PROT_WRITE);
	if (rs && rs != rd)
		mprotect(rs->p, rs->size, PROT_READ | PROT_WRITE);
	memmove(dst, src, (size_t)n);
	if (rd)
		mprotect(rd->p, rd->size, PROT_NONE);
	if (rs && rs != rd)
		mprotect(rs->p, rs->size, PROT_NONE);
	return NULL;
}

static pr_err *sim_sync(prt_dev *d)
{
	(void)d;
	return NULL;    /* copies are synchronous */
}

static void sim_destroy(prt_dev *d)
{
	for (int i = g_n_regions - 1; i >= 0; i--)
		if (g_regions[i].owner == d) {
			munmap(g_regions[i].p, g_regions[i].size);
			g_regions[i] = g_regions[--g_n_regions];
		}
	if (g_n_regions == 0) {
		free(g_regions);
		g_regions = NULL;
		g_cap_regions = 0;
	}
	free(d->impl);
	free(d);
}

static bool sim_contains(prt_dev *d, const void *p, int64_t n)
{
	return find_region(d, p, n) != NULL;
}

static const prt_dev_ops sim_ops = {
	.kind = "sim",
	.alloc = sim_alloc,
	.free = sim_free,
	.h2d = sim_copy,
	.d2h = sim_copy,
	.d2d = sim_copy,
	.sync = sim_sync,
	.enter = sim_enter,
	.leave = sim_leave,
	.contains = sim_contains,
	.destroy = sim_destroy,
};

prt_dev *prt_sim_new(pr_device where, bool host_addressable)
{
	prt_dev *d = pr_xcalloc(1, sizeof *d);
	d->ops = &sim_ops;
	d->where = where;
	sim *s = pr_xcalloc(1, sizeof *s);
	s->host_addressable = host_addressable;
	d->impl = s;
	return d;
}

prt_dev *prt_sim_owner(const void *p)
{
	const uint8_t *b = p;
	for (int i = 0; i < g_n_regions; i++)
		if (b >= g_regions[i].p && b < g_regions[i].p + g_regions[i].size)
			return g_regions[i].owner;
	return NULL;
}

void prt_sim_protect_all(void)
{
	for (int i = 0; i < g_n_regions; i++) {
		sim *s = g_regions[i].owner->impl;
		s->open = 0;
		if (!s->host_addressable)
			mprotect(g_regions[i].p, g_regions[i].size, PROT_NONE);
	}
}
