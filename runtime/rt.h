/* rt.h: the runtime's internal interfaces, shared by its files and its tests.
 *
 * Four layers, each a file or two:
 *   - tensors (pr_tensor): a data pointer with dtype, shape and strides in
 *     elements, and the device slot its storage lives on;
 *   - the device layer (device.c, device_sim.c, device_cuda.c): allocate,
 *     free, copy each way, synchronize, with byte counters per device;
 *   - kernels (kernels_*.c, kernels_cuda.cu): one function per op full name,
 *     looked up in a registry (kernel_registry.c);
 *   - the executor (executor.c): compiles a method into an instruction list
 *     and runs it; run.c drives it for passrun (runtime.h).
 * The public contract for the CLI is passrun/runtime.h; this header is for
 * the runtime's own files and its unit tests. */
#ifndef PASSRUN_RT_H
#define PASSRUN_RT_H

#include <stdbool.h>
#include <stdint.h>

#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tensors ------------------------------------------------------------ */

typedef struct pr_tensor {
	uint8_t *data;       /* element 0 */
	uint8_t *storage;    /* start of the storage data points into */
	pr_dtype dtype;
	int rank;
	int dev;             /* device slot of the storage; 0 is the host */
	int64_t shape[PR_MAX_RANK];
	int64_t strides[PR_MAX_RANK];  /* in elements */
	uint8_t *storage_end; /* one past the storage's last byte; NULL: unknown
			       * (views of it are then not bounds-checked) */
} pr_tensor;

/* A tensor with spec s's dtype, shape and strides over data (storage = data). */
pr_tensor pr_tensor_from_spec(const pr_spec *s, void *data, int dev);
/* A contiguous tensor. */
pr_tensor pr_tensor_make(pr_dtype t, int rank, const int64_t *shape, void *data);
int64_t pr_tensor_numel(const pr_tensor *t);
bool pr_tensor_is_contiguous(const pr_tensor *t);
/* Bytes from data to one past the last element it can reach. */
int64_t pr_tensor_span_bytes(const pr_tensor *t);
/* The logical values, row-major, as doubles (malloc'd, numel items). */
double *pr_tensor_gather(const pr_tensor *t);
/* Writes logical row-major values v into t's elements. */
void pr_tensor_scatter(pr_tensor *t, const double *v);
/* Strides of src seen with out's shape (0 on broadcast dims); false when the
 * shapes do not broadcast. */
bool pr_bcast_strides(const pr_tensor *src, const pr_tensor *out, int64_t *st);
/* Elementwise copy src -> dst (same shape or broadcastable src; any strides). */
pr_err *pr_tensor_copy(pr_tensor *dst, const pr_tensor *src);

/* ---- the device layer ------------------------------------------------- */

typedef struct pr_dev pr_dev;

typedef struct pr_dev_ops {
	const char *kind;                                   /* "sim", "cuda" */
	pr_err *(*alloc)(pr_dev *d, int64_t bytes, void **out);
	void (*free)(pr_dev *d, void *p, int64_t bytes);
	pr_err *(*h2d)(pr_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*d2h)(pr_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*d2d)(pr_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*sync)(pr_dev *d);
	/* Device kernels run between enter and leave (sim: memory opened). */
	void (*enter)(pr_dev *d);
	void (*leave)(pr_dev *d);
	/* Does [p, p+n) lie in this device's memory? */
	bool (*contains)(pr_dev *d, const void *p, int64_t n);
	void (*destroy)(pr_dev *d);
} pr_dev_ops;

struct pr_dev {
	const pr_dev_ops *ops;
	pr_device where;          /* cuda:0 */
	int64_t h2d_bytes;        /* counted copies since the counters were reset */
	int64_t d2h_bytes;
	void *impl;
};

/* Devices by kind: "sim" or "cuda". The host is slot 0 (NULL device). */
typedef struct pr_devset {
	char kind[8];
	int n;                    /* slots in use, host included */
	pr_dev *devs[32];
	pr_device where[32];
} pr_devset;

pr_err *pr_devset_init(pr_devset *s, const char *kind);
void pr_devset_free(pr_devset *s);
/* The slot of device d, created on first use; host devices are slot 0. */
pr_err *pr_devset_slot(pr_devset *s, pr_device d, int *slot);
static inline pr_dev *pr_devset_dev(const pr_devset *s, int slot) { return s->devs[slot]; }
void pr_devset_reset_counters(pr_devset *s);
void pr_devset_counters(const pr_devset *s, int64_t *h2d, int64_t *d2h);

/* Memory on a slot (host: aligned malloc). */
pr_err *pr_mem_alloc(pr_devset *s, int slot, int64_t bytes, void **out);
void pr_mem_free(pr_devset *s, int slot, void *p, int64_t bytes);
/* Copies n bytes; counted copies add to the device's counters. */
pr_err *pr_mem_copy(pr_devset *s, int dst_slot, void *dst, int src_slot, const void *src,
		    int64_t n, bool counted);
pr_err *pr_mem_sync(pr_devset *s, int slot);

/* The implementations. pr_sim_new never fails; pr_cuda_new fails with a message
 * when there is no CUDA (not built, the backend library not loadable, or no
 * GPU). The CUDA ones load the CUDA backend on first use (cuda_backend.c). */
/* A sim device of a host_addressable type keeps its memory open to host code. */
pr_dev *pr_sim_new(pr_device where, bool host_addressable);
pr_err *pr_cuda_new(pr_device where, pr_dev **out);
bool pr_cuda_available(void);
/* Sim: the device whose memory holds address p, or NULL. */
pr_dev *pr_sim_owner(const void *p);
/* Sim: protect every sim device's memory again (after a fault). */
void pr_sim_protect_all(void);

/* ---- kernels ------------------------------------------------------------ */

typedef enum pr_rv_kind { PR_RV_NONE, PR_RV_TENSOR, PR_RV_TUPLE, PR_RV_INT } pr_rv_kind;

/* A runtime value: what a node's result holds during a call. */
typedef struct pr_rv {
	pr_rv_kind kind;
	pr_tensor t;
	int64_t i;
	int n;                    /* PR_RV_TUPLE */
	struct pr_rv *elems;
} pr_rv;

/* An argument as a kernel sees it. */
typedef struct pr_karg {
	pr_arg_kind kind;
	pr_rv *v;                 /* PR_ARG_VALUE */
	int64_t i;
	double f;
	bool b;
	const char *s;
	int n;                    /* PR_ARG_LIST */
	struct pr_karg *items;
} pr_karg;

typedef struct pr_kctx {
	const pr_node *node;
	int n_args;
	pr_karg *args;
	pr_rv *out;               /* the node's result slot */
	bool out_alias;           /* the result aliases an argument: a view or in-place */
	pr_tensor *own;           /* storage of its own for an aliasing result that may need
	                             a copy (reshape, contiguous), else NULL */
	pr_devset *devs;
	int dev;                  /* where the kernel runs; 0 is the host */
} pr_kctx;

typedef pr_err *(*pr_kernel_fn)(pr_kctx *k);

enum {
	PR_KERNEL_META = 1,       /* reads no element (views, sym_size): runs anywhere */
	PR_KERNEL_MAY_COPY = 2,   /* an aliasing result that needs storage when not viewable */
};

typedef struct pr_kernel {
	const char *op;           /* the op's full name: "aten::add.Tensor" */
	pr_kernel_fn host;
	pr_kernel_fn cuda;        /* NULL when there is no CUDA kernel */
	unsigned flags;
} pr_kernel;

const pr_kernel *pr_kernel_find(const char *full_name);

/* Argument access for kernels. A missing argument (fewer given than the
 * schema has) takes the default passed in. */
pr_tensor *pr_karg_tensor(pr_kctx *k, int i);   /* NULL when not a tensor */
int64_t pr_karg_int(pr_kctx *k, int i, int64_t dflt);
double pr_karg_float(pr_kctx *k, int i, double dflt);
bool pr_karg_is_none(pr_kctx *k, int i);
/* An int list (items may be int values); returns the count or -1. */
int pr_karg_ints(pr_kctx *k, int i, int64_t *out, int max);
const char *pr_karg_str(pr_kctx *k, int i, const char *dflt);
/* An error naming the node and the op. */
pr_err *pr_kernel_error(pr_kctx *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The host kernels' table (kernels_host.c) and the CUDA ones (kernels_cuda.cu,
 * none until the CUDA backend is loaded): pr_kernel_find merges them. */
extern const pr_kernel pr_host_kernels[];
extern const int pr_n_host_kernels;
typedef struct pr_cuda_kernel { const char *op; pr_kernel_fn fn; } pr_cuda_kernel;
const pr_cuda_kernel *pr_cuda_kernels(int *n);

/* ---- the executor (executor.c) ------------------------------------------ */

typedef struct pr_exec pr_exec;

typedef struct pr_exec_options {
	const char *device;   /* "sim" or "cuda" (ignored by the reference) */
	bool reference;       /* the reference interpreter: every tensor on the
	                         host, no memory plan, delegates as host code
	                         reading their inputs as the caller passes them */
} pr_exec_options;

/* Loads method `method` of p (which must outlive the executor): arenas,
 * constants (device-resident ones copied and synchronized, F10), kernels
 * (an op without a kernel is refused here, naming it), copies (M3). */
pr_err *pr_exec_load(const pr_program *p, const char *method, const pr_exec_options *o,
		     pr_exec **out);
void pr_exec_free(pr_exec *e);
/* The method's user inputs, in graph order. */
int pr_exec_n_inputs(const pr_exec *e);
const pr_node *pr_exec_input(const pr_exec *e, int i);
/* The name a user input is known by (its quoted name, else the node's). */
const char *pr_exec_input_name(const pr_exec *e, int i);
/* Sets input i from a contiguous host tensor of its dtype and shape. The
 * value is kept: every call starts from it, and a write-back to that input
 * (`-> input "NAME"`) replaces it for the next call. */
pr_err *pr_exec_set_input(pr_exec *e, int i, const pr_tensor *host);
/* One call of the method. A placement violation (M4) is an error whose
 * message starts with "placement violation". */
pr_err *pr_exec_run(pr_exec *e);
/* The returned values of the last call. */
int pr_exec_n_outputs(const pr_exec *e);
const pr_node *pr_exec_output_node(const pr_exec *e, int i);
/* A contiguous host copy of output i (storage malloc'd, free(out->storage)). */
pr_err *pr_exec_output(pr_exec *e, int i, pr_tensor *out);
/* Bytes the device layer moved for the copies of the last call, and at load. */
void pr_exec_call_bytes(const pr_exec *e, int64_t *h2d, int64_t *d2h);
int64_t pr_exec_load_bytes(const pr_exec *e);
bool pr_is_placement_violation(const pr_err *err);

/* ---- .npy ---------------------------------------------------------------- */

/* Reads a .npy file (format 1.0-3.0, little-endian, C order) into a
 * contiguous host tensor whose storage is malloc'd. */
pr_err *pr_npy_read(const char *path, pr_tensor *out);
/* Writes t (any strides, host memory) as a C-order .npy file. */
pr_err *pr_npy_write(const char *path, const pr_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
