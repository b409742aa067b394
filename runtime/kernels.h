/* kernels.h: the host kernels, one function per op, registered by full name
 * in kernel_registry.c. Each takes a prt_kctx (rt.h): positional arguments as
 * the program wrote them, the result slot, and the device it runs on. */
#ifndef PASSRUN_KERNELS_H
#define PASSRUN_KERNELS_H

#include "kernels_elementwise.h"
#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PRT_KERNELS(X)                                                         \
	X(add) X(sub) X(mul) X(div) X(neg) X(relu) X(sin) X(cos) X(exp)      \
	X(tanh) X(gelu) X(sigmoid) X(mm) X(addmm) X(linear) X(bmm)           \
	X(softmax) X(sum_dim) X(mean_dim) X(layer_norm) X(rms_norm)          \
	X(embedding) X(index_select) X(index_put_) X(cat) X(slice) X(select) \
	X(view) X(reshape) X(permute) X(transpose) X(t) X(as_strided)        \
	X(expand) X(unsqueeze) X(squeeze_dim) X(clone) X(contiguous)          \
	X(copy_) X(sym_size) X(accumulate) X(kv_update) X(alias)

#define PRT_DECLARE_KERNEL(name) pr_err *prt_k_##name(prt_kctx *k);
PRT_KERNELS(PRT_DECLARE_KERNEL)

/* Factories, cumsum, gather, advanced indexing and the split ops
 * (kernels_tensor.c). A split op's result is a tuple of views of its
 * argument: the executor leaves the elements unplaced and the kernel points
 * each into the argument's storage. */
#define PRT_KERNELS_TENSOR(X)                                                  \
	X(arange) X(arange_start) X(arange_start_step) X(full) X(full_like)  \
	X(zeros) X(ones) X(scalar_tensor) X(cumsum) X(gather) X(index)        \
	X(split) X(split_with_sizes) X(unbind)
PRT_KERNELS_TENSOR(PRT_DECLARE_KERNEL)

/* ---- kernels_nn.c: convolution, batch norm, pooling, hard activations ---- */
#define PRT_KERNELS_NN(X)                                                      \
	X(convolution) X(batch_norm) X(native_batch_norm_legit_no_training)  \
	X(max_pool1d) X(max_pool2d) X(max_pool2d_with_indices) X(avg_pool1d) \
	X(avg_pool2d) X(adaptive_avg_pool1d) X(adaptive_avg_pool2d)          \
	X(hardtanh) X(hardswish) X(hardsigmoid) X(silu)
PRT_KERNELS_NN(PRT_DECLARE_KERNEL)

/* Argument checks shared by the host and device nn kernels: a device kernel
 * that uses them refuses what the host refuses and sizes its output alike. */
/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups): 1 to 3 spatial dims, normalized to 3 (the missing
 * leading ones have size 1, kernel 1, stride 1, padding 0, dilation 1). */
typedef struct prt_conv_args {
	prt_tensor *x, *w, *b;     /* b may be NULL */
	int nsp;                  /* spatial dims the op has: 1, 2 or 3 */
	bool transposed;
	int64_t groups;
	int64_t n, cin, cout;     /* batch, input and output channels */
	int64_t stride[3], pad[3], dil[3], opad[3];
	int64_t in[3], k[3], out[3];   /* input, kernel and output sizes */
} prt_conv_args;
pr_err *prt_conv_args_get(prt_kctx *k, prt_conv_args *a);
/* batch_norm (legit: false) or _native_batch_norm_legit_no_training (true):
 * inference only (training, or no running statistics, is refused). */
typedef struct prt_bn_args {
	prt_tensor *x, *w, *b, *mean, *var;   /* w and b may be NULL */
	int64_t c;                /* channels: x's dim 1 */
	double eps;
} prt_bn_args;
pr_err *prt_bn_args_get(prt_kctx *k, bool legit, prt_bn_args *a);
/* max_pool / avg_pool with nsp (1 or 2) spatial dims, normalized to 2: self
 * is [..., *in], pooled as `planes` planes of in[0] x in[1]. */
typedef struct prt_pool_args {
	prt_tensor *x;
	int64_t kernel[2], stride[2], pad[2], dil[2];
	bool ceil_mode, count_include_pad;
	int64_t divisor;          /* avg_pool2d's divisor_override; 0: none */
	int64_t planes, in[2], out[2];
} prt_pool_args;
pr_err *prt_pool_args_get(prt_kctx *k, int nsp, bool avg, prt_pool_args *a);

/* Elementwise ops, shared by the host and CUDA kernels. */
typedef enum prt_ew_op {
	PRT_EW_ADD, PRT_EW_SUB, PRT_EW_MUL, PRT_EW_DIV, PRT_EW_NEG, PRT_EW_RELU, PRT_EW_SIN, PRT_EW_COS,
	PRT_EW_EXP, PRT_EW_TANH, PRT_EW_GELU, PRT_EW_GELU_TANH, PRT_EW_SIGMOID, PRT_EW_COPY,
} prt_ew_op;

/* Argument checks shared by the host and CUDA kernels (kernels_host.c). */
/* sum.dim_IntList / mean.dim: the dims of x that argument 1 reduces (none or
 * []: all; reduced has PR_MAX_RANK entries) and how many elements each
 * result sums, checked against the result's element count. */
pr_err *prt_reduce_dims(prt_kctx *k, const prt_tensor *x, bool *reduced, int64_t *count);
/* layer_norm / rms_norm: x normalized over its last nn dims (len elements a
 * row), the optional weight and bias (len elements each), and eps (argument
 * eps_at, else 1e-5 for layer_norm and the dtype's epsilon for rms_norm). */
typedef struct prt_norm_args {
	prt_tensor *x, *w, *b;    /* w and b may be NULL */
	int nn;
	int64_t len;
	double eps;
} prt_norm_args;
pr_err *prt_norm_args_get(prt_kctx *k, bool rms, int weight_at, int bias_at, int eps_at,
			 prt_norm_args *a);

/* The result k writes must have exactly this shape: a kernel that writes a
 * declared result checks it against what its arguments give before writing
 * (a 0-element result given n rows was a heap overflow). */
pr_err *prt_result_shape_check(prt_kctx *k, int rank, const int64_t *shape);
/* embedding: weight of rank 2, result shape indices' shape + [D]. */
pr_err *prt_embedding_check(prt_kctx *k, const prt_tensor *w, const prt_tensor *ix);
/* cat: item j (x) fits result o at offset at along dim d, other dims equal. */
pr_err *prt_cat_item_check(prt_kctx *k, const prt_tensor *o, const prt_tensor *x, int d, int64_t at,
			  int j);
/* select.int's view: t without dim, at index (negative counts from the end). */
pr_err *prt_select_view(prt_kctx *k, const prt_tensor *t, int64_t dim, int64_t index, prt_tensor *out);
/* Runs the host kernel of k's op on host copies of its device tensors and
 * copies the written ones back (a fallback for ops with no CUDA kernel). */
pr_err *prt_k_staged(prt_kctx *k);

/* Shared by the shape kernels and the executor: the view of t with shape
 * `shape` (rank n), or false when t's strides cannot express it. */
bool prt_view_strides(const prt_tensor *t, int n, const int64_t *shape, int64_t *strides);
/* Normalizes a possibly negative dim against rank; -1 when out of range. */
int prt_dim(int64_t d, int rank);

/* ---- kernels_elementwise.c: typed elementwise ops (ATen's promotion) ---- */
#define PRT_KERNELS_EW(X)                                                      \
	X(sqrt) X(rsqrt) X(abs) X(pow) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)   \
	X(logical_and) X(logical_or) X(logical_xor) X(logical_not)            \
	X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(bitwise_not)            \
	X(where) X(masked_fill) X(to_copy) X(assert_tensor_metadata)            \
	X(div_mode) X(rsub) X(maximum) X(minimum) X(clamp) X(clamp_min)       \
	X(clamp_max) X(round) X(round_decimals)
PRT_KERNELS_EW(PRT_DECLARE_KERNEL)

/* An operand of a typed elementwise op: a tensor seen with the result's
 * shape, or a number (an int is i64, a float f64, a bool bool). */
typedef struct prt_ew_operand {
	const prt_tensor *t;           /* NULL: a number */
	pr_dtype dtype;               /* t's, or the number's */
	int64_t i;                    /* the number */
	double f;
	int64_t st[PR_MAX_RANK];      /* t's strides over the result's shape */
} prt_ew_operand;

/* Everything a device needs to run one typed elementwise op (the semantics
 * of one element are kernels_elementwise.h's): out = op(x[0], alpha * x[1])
 * computed in dtype ct (round.decimals: x[1] is the number of decimals),
 * clamp's out = clamp(x[0], x[1], x[2]), or with
 * select, out = cond ? x[0] : x[1] in ct. */
typedef struct prt_ew_plan {
	prt_ewt_op op;
	pr_dtype ct;                  /* the compute dtype */
	prt_tensor *out;
	int n;                        /* operands: 1 to 3 */
	prt_ew_operand x[3];
	bool select;                  /* where, masked_fill */
	prt_ew_operand cond;           /* their condition (bool, or u8 for where) */
	double alpha_f;               /* add/sub's alpha in the FLOAT domain */
	int64_t alpha_i;              /* ... in the INT and BOOL domains */
} prt_ew_plan;

/* torch.result_type of n operands, and the promotion of two dtypes. */
pr_dtype prt_ew_result_type(const prt_ew_operand *x, int n);
pr_dtype prt_ew_promote(pr_dtype a, pr_dtype b);
/* Plans op on arguments 0..n-1 (alpha at alpha_at, -1: none),
 * refusing what ATen refuses and a result whose shape is not the operands'
 * broadcast shape. where's plan takes (cond, self, other); masked_fill's
 * (self, mask, value) becomes out = mask ? value : self in self's dtype. */
pr_err *prt_ew_plan_get(prt_kctx *k, prt_ewt_op op, int n, int alpha_at, prt_ew_plan *p);
pr_err *prt_ew_where_plan(prt_kctx *k, prt_ew_plan *p);
pr_err *prt_ew_masked_fill_plan(prt_kctx *k, prt_ew_plan *p);
/* clamp and its one-bound forms: the lower bound is argument lo_at and the
 * upper hi_at (-1: the form has none; a None argument gives none either).
 * Both give PRT_EWT_CLAMP, one MAXIMUM (lower) or MINIMUM (upper). */
pr_err *prt_ew_clamp_plan(prt_kctx *k, int lo_at, int hi_at, prt_ew_plan *p);
/* Runs a plan on the host. */
void prt_ew_plan_run(const prt_ew_plan *p);
/* Plans and runs op: add/sub/mul/div/neg on operands that are not all f32. */
pr_err *prt_ew_arith(prt_kctx *k, prt_ewt_op op, int n, int alpha_at);
/* Stores a FLOAT- or INT-domain value into an element of dtype t, cast as
 * kernels_elementwise.h says. */
void prt_ew_store_f(pr_dtype t, void *p, double v);
void prt_ew_store_i(pr_dtype t, void *p, int64_t v);


#ifdef __cplusplus
}
#endif
#endif
