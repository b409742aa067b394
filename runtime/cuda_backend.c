/* cuda_backend.c: the CUDA device and kernels, loaded on first use.
 *
 * They live in a library of their own, libpassrun_cuda.so, in the passrun/
 * folder beside libpassrun_runtime.so (build tree and install alike), because
 * CUDA's libraries cost every process that maps them 0.1 s and 210 MB before
 * main() (and 15 s under Valgrind), while most runs use the simulated device.
 * The library is opened the first time a caller asks whether there is a CUDA
 * device or for one; it hands back one table (prt_cuda_backend, rt_cuda.h).
 * Until then prt_cuda_kernels lists none and the registry merges none in. */
#define _GNU_SOURCE   /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"
#include "rt_cuda.h"

static const prt_cuda_backend *backend;
static char why_not[4200];          /* why there is no backend, once tried */
static pthread_once_t tried = PTHREAD_ONCE_INIT;

#ifdef PASSRUN_HAVE_CUDA
/* The module's path: passrun/libpassrun_cuda.so beside this library (only
 * a build with CUDA has one: without, an unused function fails -Werror). */
static bool module_path(char *out, size_t size)
{
	Dl_info info;
	if (!dladdr((void *)&prt_cuda_available, &info) || !info.dli_fname) {
		snprintf(why_not, sizeof why_not, "cannot find where libpassrun_runtime is loaded from");
		return false;
	}
	const char *slash = strrchr(info.dli_fname, '/');
	int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
	const char *dir = slash ? info.dli_fname : ".";
	int n = snprintf(out, size, "%.*s/passrun/libpassrun_cuda.so", dir_len, dir);
	if (n < 0 || (size_t)n >= size) {
		snprintf(why_not, sizeof why_not, "the CUDA backend's path is too long");
		return false;
	}
	return true;
}
#endif

static void load(void)
{
#ifndef PASSRUN_HAVE_CUDA
	snprintf(why_not, sizeof why_not,
		 "this passrun was built without CUDA (the CUDA toolkit was not found)");
#else
	char path[4096];
	if (!module_path(path, sizeof path))
		return;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why_not, sizeof why_not, "cannot load the CUDA backend: %s", dlerror());
		return;
	}
	const prt_cuda_backend *b = dlsym(h, PRT_CUDA_BACKEND_SYMBOL);
	if (!b || b->abi != PRT_CUDA_BACKEND_ABI) {
		snprintf(why_not, sizeof why_not, "%s: %s", path,
			 b ? "built for another passrun (ABI mismatch)" : "no " PRT_CUDA_BACKEND_SYMBOL);
		dlclose(h);
		return;
	}
	backend = b;   /* never closed: kernels and devices point into it */
#endif
}

static const prt_cuda_backend *get(void)
{
	pthread_once(&tried, load);
	return backend;
}

bool prt_cuda_loaded(void) { return backend != NULL; }

bool prt_cuda_available(void)
{
	const prt_cuda_backend *b = get();
	return b && b->available();
}

pr_err *prt_cuda_new(pr_device where, prt_dev **out)
{
	*out = NULL;
	const prt_cuda_backend *b = get();
	return b ? b->dev_new(where, out) : pr_err_new("%s", why_not);
}

const prt_cuda_kernel *prt_cuda_kernels(int *n)
{
	*n = 0;
	return backend ? backend->kernels(n) : NULL;
}

pr_err *prt_cuda_copy(prt_kctx *k, prt_tensor *dst, const prt_tensor *src)
{
	const prt_cuda_backend *b = get();
	return b ? b->copy(k, dst, src) : pr_err_new("%s", why_not);
}
