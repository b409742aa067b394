/* rt.h: the runtime's internal interfaces, shared by its files and its tests.
 *
 * Four layers, each a file or two:
 *   - tensors (prt_tensor): a data pointer with dtype, shape and strides in
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

typedef struct prt_tensor {
	uint8_t *data;       /* element 0 */
	uint8_t *storage;    /* start of the storage data points into */
	pr_dtype dtype;
	int rank;
	int dev;             /* device slot of the storage; 0 is the host */
	int64_t shape[PR_MAX_RANK];
	int64_t strides[PR_MAX_RANK];  /* in elements */
	uint8_t *storage_end; /* one past the storage's last byte; NULL: unknown
			       * (views of it are then not bounds-checked) */
} prt_tensor;

/* A tensor with spec s's dtype, shape and strides over data (storage = data). */
prt_tensor prt_tensor_from_spec(const pr_spec *s, void *data, int dev);
/* A contiguous tensor. */
prt_tensor prt_tensor_make(pr_dtype t, int rank, const int64_t *shape, void *data);
int64_t prt_tensor_numel(const prt_tensor *t);
bool prt_tensor_is_contiguous(const prt_tensor *t);
/* Bytes from data to one past the last element it can reach. */
int64_t prt_tensor_span_bytes(const prt_tensor *t);
/* NULL when every element t's shape and strides reach from data lies in its
 * storage (or the storage's size is unknown), else why not, in checked
 * arithmetic: a size below 0, an element count or extent past int64, or the
 * elements it reaches. The message reads "WHAT reaches outside WHERE of N
 * bytes (...); expected EXPECTED". */
pr_err *prt_tensor_in_storage(const prt_tensor *t, const char *what, const char *where,
			      const char *expected);
/* The logical values, row-major, as doubles (malloc'd, numel items). */
double *prt_tensor_gather(const prt_tensor *t);
/* Writes logical row-major values v into t's elements. */
void prt_tensor_scatter(prt_tensor *t, const double *v);
/* Strides of src seen with out's shape (0 on broadcast dims); false when the
 * shapes do not broadcast. */
bool prt_bcast_strides(const prt_tensor *src, const prt_tensor *out, int64_t *st);
/* Elementwise copy src -> dst (same shape or broadcastable src; any strides). */
pr_err *prt_tensor_copy(prt_tensor *dst, const prt_tensor *src);

/* ---- the device layer ------------------------------------------------- */

typedef struct prt_dev prt_dev;

typedef struct prt_dev_ops {
	const char *kind;                                   /* "sim", "cuda" */
	pr_err *(*alloc)(prt_dev *d, int64_t bytes, void **out);
	void (*free)(prt_dev *d, void *p, int64_t bytes);
	pr_err *(*h2d)(prt_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*d2h)(prt_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*d2d)(prt_dev *d, void *dst, const void *src, int64_t n);
	pr_err *(*sync)(prt_dev *d);
	/* Device kernels run between enter and leave (sim: memory opened). */
	void (*enter)(prt_dev *d);
	void (*leave)(prt_dev *d);
	/* Does [p, p+n) lie in this device's memory? */
	bool (*contains)(prt_dev *d, const void *p, int64_t n);
	void (*destroy)(prt_dev *d);
} prt_dev_ops;

struct prt_dev {
	const prt_dev_ops *ops;
	pr_device where;          /* cuda:0 */
	int64_t h2d_bytes;        /* counted copies since the counters were reset */
	int64_t d2h_bytes;
	void *impl;
};

/* Devices by kind: "sim" or "cuda". The host is slot 0 (NULL device). */
typedef struct prt_devset {
	char kind[8];
	int n;                    /* slots in use, host included */
	prt_dev *devs[32];
	pr_device where[32];
} prt_devset;

pr_err *prt_devset_init(prt_devset *s, const char *kind);
void prt_devset_free(prt_devset *s);
/* The slot of device d, created on first use; host devices are slot 0. */
pr_err *prt_devset_slot(prt_devset *s, pr_device d, int *slot);
static inline prt_dev *prt_devset_dev(const prt_devset *s, int slot) { return s->devs[slot]; }
void prt_devset_reset_counters(prt_devset *s);
void prt_devset_counters(const prt_devset *s, int64_t *h2d, int64_t *d2h);

/* Memory on a slot (host: aligned malloc). */
pr_err *prt_mem_alloc(prt_devset *s, int slot, int64_t bytes, void **out);
void prt_mem_free(prt_devset *s, int slot, void *p, int64_t bytes);
/* Copies n bytes; counted copies add to the device's counters. */
pr_err *prt_mem_copy(prt_devset *s, int dst_slot, void *dst, int src_slot, const void *src,
		    int64_t n, bool counted);
pr_err *prt_mem_sync(prt_devset *s, int slot);

/* The implementations. prt_sim_new never fails; prt_cuda_new fails with a message
 * when there is no CUDA (not built, the backend library not loadable, or no
 * GPU). The CUDA ones load the CUDA backend on first use (cuda_backend.c). */
/* A sim device of a host_addressable type keeps its memory open to host code. */
prt_dev *prt_sim_new(pr_device where, bool host_addressable);
pr_err *prt_cuda_new(pr_device where, prt_dev **out);
bool prt_cuda_available(void);
/* Sim: the device whose memory holds address p, or NULL. */
prt_dev *prt_sim_owner(const void *p);
/* Sim: protect every sim device's memory again (after a fault). */
void prt_sim_protect_all(void);

/* ---- kernels ------------------------------------------------------------ */

typedef enum prt_rv_kind { PRT_RV_NONE, PRT_RV_TENSOR, PRT_RV_TUPLE, PRT_RV_INT } prt_rv_kind;

/* A runtime value: what a node's result holds during a call. */
typedef struct prt_rv {
	prt_rv_kind kind;
	prt_tensor t;
	int64_t i;
	int n;                    /* PRT_RV_TUPLE */
	struct prt_rv *elems;
} prt_rv;

/* An argument as a kernel sees it. */
typedef struct prt_karg {
	pr_arg_kind kind;
	prt_rv *v;                 /* PR_ARG_VALUE */
	int64_t i;
	double f;
	bool b;
	const char *s;
	int n;                    /* PR_ARG_LIST */
	struct prt_karg *items;
} prt_karg;

typedef struct prt_kctx {
	const pr_node *node;
	int n_args;
	prt_karg *args;
	prt_rv *out;               /* the node's result slot */
	bool out_alias;           /* the result aliases an argument: a view or in-place */
	prt_tensor *own;           /* storage of its own for an aliasing result that may need
	                             a copy (reshape, contiguous), else NULL */
	prt_devset *devs;
	int dev;                  /* where the kernel runs; 0 is the host */
} prt_kctx;

typedef pr_err *(*prt_kernel_fn)(prt_kctx *k);

enum {
	PRT_KERNEL_META = 1,       /* reads no element (views, sym_size): runs anywhere */
	PRT_KERNEL_MAY_COPY = 2,   /* an aliasing result that needs storage when not viewable */
};

typedef struct prt_kernel {
	const char *op;           /* the op's full name: "aten::add.Tensor" */
	prt_kernel_fn host;
	prt_kernel_fn cuda;        /* NULL when there is no CUDA kernel */
	unsigned flags;
} prt_kernel;

const prt_kernel *prt_kernel_find(const char *full_name);

/* Argument access for kernels. A missing argument (fewer given than the
 * schema has) takes the default passed in. */
prt_tensor *prt_karg_tensor(prt_kctx *k, int i);   /* NULL when not a tensor */
int64_t prt_karg_int(prt_kctx *k, int i, int64_t dflt);
double prt_karg_float(prt_kctx *k, int i, double dflt);
bool prt_karg_is_none(prt_kctx *k, int i);
/* An int list (items may be int values); returns the count or -1. */
int prt_karg_ints(prt_kctx *k, int i, int64_t *out, int max);
const char *prt_karg_str(prt_kctx *k, int i, const char *dflt);
/* An error naming the node and the op. */
pr_err *prt_kernel_error(prt_kctx *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The host kernels' table (kernels_host.c) and the CUDA ones (kernels_cuda.cu,
 * none until the CUDA backend is loaded): prt_kernel_find merges them. */
extern const prt_kernel prt_host_kernels[];
extern const int prt_n_host_kernels;
typedef struct prt_cuda_kernel { const char *op; prt_kernel_fn fn; } prt_cuda_kernel;
const prt_cuda_kernel *prt_cuda_kernels(int *n);

/* ---- the executor (executor.c) ------------------------------------------ */

typedef struct prt_exec prt_exec;

typedef struct prt_exec_options {
	const char *device;   /* "sim" or "cuda" (ignored by the reference) */
	bool reference;       /* the reference interpreter: every tensor on the
	                         host, no memory plan, delegates as host code
	                         reading their inputs as the caller passes them */
} prt_exec_options;

/* Loads method `method` of p (which must outlive the executor): arenas,
 * constants (device-resident ones copied and synchronized, F10), kernels
 * (an op without a kernel is refused here, naming it), copies (M3). */
pr_err *prt_exec_load(const pr_program *p, const char *method, const prt_exec_options *o,
		     prt_exec **out);
void prt_exec_free(prt_exec *e);
/* The method's user inputs, in graph order. */
int prt_exec_n_inputs(const prt_exec *e);
const pr_node *prt_exec_input(const prt_exec *e, int i);
/* The name a user input is known by (its quoted name, else the node's). */
const char *prt_exec_input_name(const prt_exec *e, int i);
/* Sets input i from a contiguous host tensor of its dtype and shape. The
 * value is kept: every call starts from it, and a write-back to that input
 * (`-> input "NAME"`) replaces it for the next call. */
pr_err *prt_exec_set_input(prt_exec *e, int i, const prt_tensor *host);
/* One call of the method. A placement violation (M4) is an error whose
 * message starts with "placement violation". */
pr_err *prt_exec_run(prt_exec *e);
/* The returned values of the last call. */
int prt_exec_n_outputs(const prt_exec *e);
const pr_node *prt_exec_output_node(const prt_exec *e, int i);
/* A contiguous host copy of output i (storage malloc'd, free(out->storage)). */
pr_err *prt_exec_output(prt_exec *e, int i, prt_tensor *out);
/* Bytes the device layer moved for the copies of the last call, and at load. */
void prt_exec_call_bytes(const prt_exec *e, int64_t *h2d, int64_t *d2h);
int64_t prt_exec_load_bytes(const prt_exec *e);
bool prt_is_placement_violation(const pr_err *err);

/* ---- .npy ---------------------------------------------------------------- */

/* Reads a .npy file (format 1.0-3.0, little-endian, C order) into a
 * contiguous host tensor whose storage is malloc'd. */
pr_err *prt_npy_read(const char *path, prt_tensor *out);
/* Writes t (any strides, host memory) as a C-order .npy file. */
pr_err *prt_npy_write(const char *path, const prt_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
