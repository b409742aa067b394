/* The device kernels of issue 12's ops (runtime/kernels_cuda_nn.cu) against
 * their host kernels: convolution (1-d, 2-d, strided, padded, dilated,
 * grouped, depthwise), batch norm, max / average / adaptive pooling, the
 * activations, the typed elementwise ops (promotion, bool, i64, f16;
 * rounding division, rsub, and add / neg off f32),
 * factories, cumsum, gather and index.Tensor. Every case has a
 * non-contiguous operand (channels-last, transposed, sliced or permuted),
 * and some a non-contiguous result.
 *   - staged: the cases through prt_k_staged on the sim device, always run:
 *     they check the cases themselves and the staging of tuple results;
 *   - cuda: the CUDA kernels, where a GPU is present (tests/gpu/run.sh
 *     fails if this was skipped there). */
#include "device_harness.h"

#define T dh_T
#define I dh_I
#define F dh_F
#define B dh_B
#define NONE dh_NONE
#define L dh_L
#define V dh_V

/* Deterministic values in [-2.2, 2.2], none of them equal to a neighbour. */
static void fill(float *p, int n, int seed)
{
	for (int i = 0; i < n; i++)
		p[i] = (float)(((i * 37 + seed * 11) % 23) - 11) / 5.0f + (float)i * 1e-3f;
}

/* A contiguous [d0,d1,d2,d3] of dtype dt over p, then seen with its dims
 * permuted by perm: a non-contiguous tensor of shape [d[perm[0]], ...]. */
static prt_tensor permuted(pr_dtype dt, void *p, int rank, const int64_t *dims, const int *perm)
{
	prt_tensor t = prt_tensor_make(dt, rank, dims, p);
	int64_t shape[PR_MAX_RANK], st[PR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		shape[i] = dims[perm[i]], st[i] = t.strides[perm[i]];
	return dh_view(t, rank, shape, st);
}

/* NCHW logical shape stored channels-last (NHWC). */
static prt_tensor channels_last(void *p, int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t dims[4] = {n, h, w, c};
	int perm[4] = {0, 3, 1, 2};
	return permuted(PR_F32, p, 4, dims, perm);
}

static const char *conv = "aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor";

static void conv_cases(dh_harness *h)
{
	static float x1[90], w1[108], b1[4], o1[72], x2[128], w2[36], o2[128], x3[100], w3[108], b3[6], o3[150];
	static float x4[120], w4[45], b4[5], o4[40], o5[300];
	static double xd[18], wd[8], od[8];
	fill(x1, 90, 1), fill(w1, 108, 2), fill(b1, 4, 3), fill(x2, 128, 4), fill(w2, 36, 5);
	fill(x3, 100, 6), fill(w3, 108, 7), fill(b3, 6, 8), fill(x4, 120, 9), fill(w4, 45, 10), fill(b4, 5, 11);
	for (int i = 0; i < 18; i++)
		xd[i] = i * 0.25 - 2;
	for (int i = 0; i < 8; i++)
		wd[i] = 1 - i * 0.3;

	/* channels-last input [1,3,5,6], stride [2,1], padding [1,2], dilation [1,2]: [1,4,3,6] */
	prt_rv X1 = V(channels_last(x1, 1, 3, 5, 6)), W1 = V(dh_mk(PR_F32, w1, 3, 4, 3, 9)), B1 = V(dh_mk(PR_F32, b1, 1, 4, 0, 0));
	int64_t w1s[4] = {4, 3, 3, 3}, w1st[4] = {27, 9, 3, 1};
	W1.t = dh_view(W1.t, 4, w1s, w1st);
	int64_t o1s[4] = {1, 4, 3, 6};
	prt_tensor O1 = prt_tensor_make(PR_F32, 4, o1s, o1);
	prt_karg s21[2] = {I(2), I(1)}, p12[2] = {I(1), I(2)}, d12[2] = {I(1), I(2)}, z2[2] = {I(0), I(0)};
	prt_karg c1[9] = {T(&X1), T(&W1), T(&B1), L(2, s21), L(2, p12), L(2, d12), B(false), L(2, z2), I(1)};
	dh_check(h, conv, c1, 9, &O1);

	/* depthwise: [2,4,4,4] with H and W swapped, weight [4,1,3,3] transposed
	 * in its taps, padding 1 (one entry for both dims), no bias */
	int64_t d2[4] = {2, 4, 4, 4}, dw[4] = {4, 1, 3, 3};
	int pswap[4] = {0, 1, 3, 2};
	prt_rv X2 = V(permuted(PR_F32, x2, 4, d2, pswap)), W2 = V(permuted(PR_F32, w2, 4, dw, pswap));
	prt_tensor O2 = prt_tensor_make(PR_F32, 4, d2, o2);
	prt_karg one[1] = {I(1)}, p1[1] = {I(1)}, z1[1] = {I(0)};
	prt_karg c2[9] = {T(&X2), T(&W2), NONE(), L(1, one), L(1, p1), L(1, one), B(false), L(1, z1), I(4)};
	dh_check(h, conv, c2, 9, &O2);

	/* groups 2: [1,4,5,5] -> [1,6,5,5] into a channels-last result */
	int64_t d3[4] = {1, 4, 5, 5}, dw3[4] = {6, 2, 3, 3};
	prt_rv X3 = V(prt_tensor_make(PR_F32, 4, d3, x3)), W3 = V(prt_tensor_make(PR_F32, 4, dw3, w3)),
	      B3 = V(dh_mk(PR_F32, b3, 1, 6, 0, 0));
	prt_tensor O3 = channels_last(o3, 1, 6, 5, 5);
	prt_karg c3[9] = {T(&X3), T(&W3), T(&B3), L(1, one), L(1, p1), L(1, one), B(false), L(1, z1), I(2)};
	dh_check(h, conv, c3, 9, &O3);

	/* 1-d: every other element of [2,3,20] along L, stride 2, padding 1, dilation 2: [2,5,4] */
	prt_tensor X4t = dh_mk(PR_F32, x4, 3, 2, 3, 20);
	int64_t x4s[3] = {2, 3, 10}, x4st[3] = {60, 20, 2};
	prt_rv X4 = V(dh_view(X4t, 3, x4s, x4st)), W4 = V(dh_mk(PR_F32, w4, 3, 5, 3, 3)), B4 = V(dh_mk(PR_F32, b4, 1, 5, 0, 0));
	prt_tensor O4 = dh_mk(PR_F32, o4, 3, 2, 5, 4);
	prt_karg two[1] = {I(2)};
	prt_karg c4[9] = {T(&X4), T(&W4), T(&B4), L(1, two), L(1, p1), L(1, two), B(false), L(1, z1), I(1)};
	dh_check(h, conv, c4, 9, &O4);

	/* transposed (the host kernel on the device's data): [1,4,5,5], stride 2,
	 * padding 1, output_padding 1 -> [1,3,10,10] */
	int64_t dt5[4] = {1, 4, 5, 5}, wt5[4] = {4, 3, 3, 3}, ot5[4] = {1, 3, 10, 10};
	prt_rv X5 = V(prt_tensor_make(PR_F32, 4, dt5, x3)), W5 = V(prt_tensor_make(PR_F32, 4, wt5, w1));
	prt_tensor O5 = prt_tensor_make(PR_F32, 4, ot5, o5);
	prt_karg op1[1] = {I(1)};
	prt_karg c5[9] = {T(&X5), T(&W5), NONE(), L(1, two), L(1, p1), L(1, one), B(true), L(1, op1), I(1)};
	dh_check(h, conv, c5, 9, &O5);

	/* f64 (staged on CUDA too): [1,2,3,3] * [2,1,2,2] groups 2 -> [1,2,2,2] */
	int64_t dx[4] = {1, 2, 3, 3}, dwd[4] = {2, 1, 2, 2}, dod[4] = {1, 2, 2, 2};
	prt_rv XD = V(prt_tensor_make(PR_F64, 4, dx, xd)), WD = V(prt_tensor_make(PR_F64, 4, dwd, wd));
	prt_tensor OD = prt_tensor_make(PR_F64, 4, dod, od);
	prt_karg c6[9] = {T(&XD), T(&WD), NONE(), L(1, one), L(1, z1), L(1, one), B(false), L(1, z1), I(2)};
	dh_check(h, conv, c6, 9, &OD);
}

static void bn_cases(dh_harness *h)
{
	static float x[24], w[3], b[3], m[3], v[3] = {0.5f, 2, 1.25f}, o[24], none[1];
	fill(x, 24, 12), fill(w, 3, 13), fill(b, 3, 14), fill(m, 3, 15);
	int64_t dims[4] = {2, 2, 3, 2};   /* stored [N, H, C, W], seen [N, C, H, W] */
	int perm[4] = {0, 2, 1, 3};
	prt_rv X = V(permuted(PR_F32, x, 4, dims, perm)), W = V(dh_mk(PR_F32, w, 1, 3, 0, 0)),
	      Bb = V(dh_mk(PR_F32, b, 1, 3, 0, 0)), M = V(dh_mk(PR_F32, m, 1, 3, 0, 0)), Vr = V(dh_mk(PR_F32, v, 1, 3, 0, 0));
	int64_t os[4] = {2, 3, 2, 2};
	prt_tensor outs[3] = {prt_tensor_make(PR_F32, 4, os, o), dh_mk(PR_F32, none, 1, 0, 0, 0), dh_mk(PR_F32, none, 1, 0, 0, 0)};
	prt_karg legit[7] = {T(&X), T(&W), T(&Bb), T(&M), T(&Vr), F(0.1), F(1e-5)};
	dh_check_n(h, "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
		   legit, 7, outs, 3);
	prt_karg bn[9] = {T(&X), NONE(), T(&Bb), T(&M), T(&Vr), B(false), F(0.1), F(1e-3), B(true)};
	dh_check(h, "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
		 bn, 9, &outs[0]);
}

static const char *max2i = "aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)";
static const char *max2 = "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor";
static const char *max1 = "aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> Tensor";
static const char *avg2 = "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor";
static const char *avg1 = "aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor";
static const char *ada2 = "aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor";
static const char *ada2b = "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor";
static const char *ada1 = "aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor";

static void pool_cases(dh_harness *h)
{
	static float x[70], x7[49], x1[54], o[24], o25[25], o30[30], o18[18];
	static int64_t ix[24];
	fill(x, 70, 16), fill(x7, 49, 17), fill(x1, 54, 18);
	x[9] = NAN;   /* a NaN wins its windows */
	int64_t d[4] = {1, 2, 6, 5};    /* stored with H and W swapped: seen [1,2,5,6] */
	int swap[4] = {0, 1, 3, 2};
	prt_rv X = V(permuted(PR_F32, x, 4, d, swap));
	int64_t os[4] = {1, 2, 3, 4};
	prt_tensor outs[2] = {prt_tensor_make(PR_F32, 4, os, o), prt_tensor_make(PR_I64, 4, os, ix)};
	prt_karg k3[2] = {I(3), I(3)}, s2[2] = {I(2), I(2)}, p1[2] = {I(1), I(1)}, d1[2] = {I(1), I(1)};
	prt_karg mi[6] = {T(&X), L(2, k3), L(2, s2), L(2, p1), L(2, d1), B(true)};   /* ceil_mode */
	dh_check_n(h, max2i, mi, 6, outs, 2);

	/* dilation 2 on a transposed [1,1,7,7], kernel 2, stride 1 -> [1,1,5,5] */
	int64_t d7[4] = {1, 1, 7, 7};
	prt_rv X7 = V(permuted(PR_F32, x7, 4, d7, swap));
	int64_t o5s[4] = {1, 1, 5, 5};
	prt_tensor O5 = prt_tensor_make(PR_F32, 4, o5s, o25);
	prt_karg k2[1] = {I(2)}, s1[1] = {I(1)}, z[1] = {I(0)}, dl2[1] = {I(2)}, empty[1];
	prt_karg m2[6] = {T(&X7), L(1, k2), L(1, s1), L(1, z), L(1, dl2), B(false)};
	dh_check(h, max2, m2, 6, &O5);

	/* 1-d: [2,3,9] over a [9,3,2] storage, dims reversed; kernel 3, stride
	 * 2, padding 1 -> [2,3,5] */
	int64_t x1s[3] = {2, 3, 9}, x1st[3] = {1, 2, 6};
	prt_rv X1 = V(dh_view(dh_mk(PR_F32, x1, 3, 2, 3, 9), 3, x1s, x1st));
	prt_tensor O1 = dh_mk(PR_F32, o30, 3, 2, 3, 5);
	prt_karg k31[1] = {I(3)}, s21[1] = {I(2)}, p11[1] = {I(1)}, d11[1] = {I(1)};
	prt_karg m1[6] = {T(&X1), L(1, k31), L(1, s21), L(1, p11), L(1, d11), B(false)};
	dh_check(h, max1, m1, 6, &O1);
	/* stride [] is the kernel size: [2,3,9] by 3 -> [2,3,3] */
	prt_tensor O13 = dh_mk(PR_F32, o18, 3, 2, 3, 3);
	prt_karg m1b[3] = {T(&X1), L(1, k31), L(0, empty)};
	dh_check(h, max1, m1b, 3, &O13);

	/* average over the same [1,2,5,6], its NaN replaced: kernel 3, stride 2,
	 * padding 1; count_include_pad off and on, ceil_mode, a divisor */
	x[9] = 0.5f;
	int64_t os33[4] = {1, 2, 3, 3};
	prt_tensor O = prt_tensor_make(PR_F32, 4, os, o), O33 = prt_tensor_make(PR_F32, 4, os33, o);
	prt_karg a1[7] = {T(&X), L(2, k3), L(2, s2), L(2, p1), B(false), B(false), NONE()};
	dh_check(h, avg2, a1, 7, &O33);
	prt_karg a2[7] = {T(&X), L(2, k3), L(2, s2), L(2, p1), B(true), B(true), NONE()};
	dh_check(h, avg2, a2, 7, &O);
	prt_karg a3[7] = {T(&X), L(2, k3), L(2, s2), L(2, p1), B(false), B(true), I(5)};
	dh_check(h, avg2, a3, 7, &O33);
	prt_tensor O14 = dh_mk(PR_F32, o30, 3, 2, 3, 5);
	prt_karg a4[6] = {T(&X1), L(1, k31), L(1, s21), L(1, p11), B(false), B(true)};
	dh_check(h, avg1, a4, 6, &O14);

	/* adaptive: uneven windows, [1,2,5,6] -> [1,2,3,4]; 1-d [2,3,9] -> [2,3,4] */
	prt_karg o34[2] = {I(3), I(4)}, o4[1] = {I(4)};
	prt_karg ad[2] = {T(&X), L(2, o34)};
	dh_check(h, ada2, ad, 2, &O);
	dh_check(h, ada2b, ad, 2, &O);
	prt_tensor O24 = dh_mk(PR_F32, o30, 3, 2, 3, 4);
	prt_karg ad1[2] = {T(&X1), L(1, o4)};
	dh_check(h, ada1, ad1, 2, &O24);
}

static void activation_cases(dh_harness *h)
{
	static float x[24], o[24];
	fill(x, 24, 19);
	int64_t d[3] = {2, 3, 4};
	int perm[3] = {2, 0, 1};
	prt_rv X = V(permuted(PR_F32, x, 3, d, perm));    /* [4,2,3] */
	int64_t os[3] = {4, 2, 3};
	prt_tensor O = prt_tensor_make(PR_F32, 3, os, o);
	prt_karg ht[3] = {T(&X), F(-0.5), F(0.75)}, un[1] = {T(&X)};
	dh_check(h, "aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", ht, 3, &O);
	dh_check(h, "aten::hardswish(Tensor self) -> Tensor", un, 1, &O);
	dh_check(h, "aten::hardsigmoid(Tensor self) -> Tensor", un, 1, &O);
	dh_check(h, "aten::silu(Tensor self) -> Tensor", un, 1, &O);
	dh_check(h, "aten::hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)", ht, 3, &O);
	dh_check(h, "aten::silu_(Tensor(a!) self) -> Tensor(a!)", un, 1, &O);
}

static void elementwise_cases(dh_harness *h)
{
	static float x[6], y[3] = {0.5f, -1, 2}, o[6];
	static int64_t li[6] = {1, -4, 2, 50, -3, 6}, lo[6];
	static int32_t io[6];
	static uint8_t bo[6], bm[6] = {1, 0, 0, 1, 1, 0}, bn[3] = {0, 1, 1};
	static uint16_t ho[6], hx[6];
	static double dv[1] = {-7.25};
	fill(x, 6, 20);
	x[2] = 0.5f;   /* equal to y[0] somewhere */
	for (int i = 0; i < 6; i++)
		hx[i] = (uint16_t)(0x3c00 + i * 0x155);   /* f16 1.0 and up */
	int64_t d[2] = {3, 2};
	int tr[2] = {1, 0};
	prt_rv X = V(permuted(PR_F32, x, 2, d, tr)), Y = V(dh_mk(PR_F32, y, 1, 3, 0, 0)),
	      LI = V(permuted(PR_I64, li, 2, d, tr)), BM = V(permuted(PR_BOOL, bm, 2, d, tr)),
	      BN = V(dh_mk(PR_BOOL, bn, 1, 3, 0, 0)), HX = V(permuted(PR_F16, hx, 2, d, tr)),
	      D0 = V(dh_mk(PR_F64, dv, 0, 0, 0, 0));
	prt_tensor O = dh_mk(PR_F32, o, 2, 2, 3, 0), OL = dh_mk(PR_I64, lo, 2, 2, 3, 0), OB = dh_mk(PR_BOOL, bo, 2, 2, 3, 0),
		  OI = dh_mk(PR_I32, io, 2, 2, 3, 0), OH = dh_mk(PR_F16, ho, 2, 2, 3, 0);
	prt_karg un[1] = {T(&X)}, lun[1] = {T(&LI)}, bun[1] = {T(&BM)};
	dh_check(h, "aten::sqrt(Tensor self) -> Tensor", un, 1, &O);      /* NaN for the negatives, on both */
	dh_check(h, "aten::rsqrt(Tensor self) -> Tensor", un, 1, &O);
	dh_check(h, "aten::sqrt(Tensor self) -> Tensor", lun, 1, &O);     /* i64 -> f32 */
	dh_check(h, "aten::abs(Tensor self) -> Tensor", lun, 1, &OL);
	prt_karg pw[2] = {T(&X), F(2.0)}, pwt[2] = {T(&LI), T(&LI)}, pws[2] = {F(1.5), T(&X)};
	dh_check(h, "aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", pw, 2, &O);
	li[1] = 2;   /* integer powers: non-negative exponents (a negative one gives 0) */
	li[4] = 3;
	dh_check(h, "aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", pwt, 2, &OL);
	dh_check(h, "aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor", pws, 2, &O);
	prt_karg eq[2] = {T(&X), T(&Y)}, lt[2] = {T(&LI), I(3)}, ge[2] = {T(&HX), T(&X)}, ne[2] = {T(&X), F(0.5)};
	dh_check(h, "aten::eq.Tensor(Tensor self, Tensor other) -> Tensor", eq, 2, &OB);
	dh_check(h, "aten::ne.Scalar(Tensor self, Scalar other) -> Tensor", ne, 2, &OB);
	dh_check(h, "aten::lt.Scalar(Tensor self, Scalar other) -> Tensor", lt, 2, &OB);
	dh_check(h, "aten::ge.Tensor(Tensor self, Tensor other) -> Tensor", ge, 2, &OB);
	prt_karg land[2] = {T(&BM), T(&BN)}, lx[2] = {T(&BM), T(&X)};
	dh_check(h, "aten::logical_and(Tensor self, Tensor other) -> Tensor", land, 2, &OB);
	dh_check(h, "aten::logical_xor(Tensor self, Tensor other) -> Tensor", lx, 2, &OB);
	dh_check(h, "aten::logical_not(Tensor self) -> Tensor", un, 1, &OB);
	dh_check(h, "aten::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor", land, 2, &OB);
	dh_check(h, "aten::bitwise_not(Tensor self) -> Tensor", bun, 1, &OB);
	dh_check(h, "aten::bitwise_not(Tensor self) -> Tensor", lun, 1, &OL);
	prt_karg band[2] = {T(&LI), I(6)};
	dh_check(h, "aten::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor", band, 2, &OL);
	prt_karg wh[3] = {T(&BM), T(&X), T(&Y)}, whs[3] = {T(&BM), T(&LI), F(2.5)};
	dh_check(h, "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", wh, 3, &O);
	dh_check(h, "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", whs, 3, &O);
	prt_karg mf[3] = {T(&X), T(&BN), F(-1e9)}, mft[3] = {T(&LI), T(&BM), T(&D0)};
	dh_check(h, "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", mf, 3, &O);
	dh_check(h, "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", mft, 3, &OL);
	dh_check(h, "aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", mf, 3, &O);
	const char *to_copy = "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor";
	x[0] = 3e9f;   /* out of i32's range */
	dh_check(h, to_copy, un, 1, &OL);
	dh_check(h, to_copy, un, 1, &OI);
	dh_check(h, to_copy, un, 1, &OH);
	dh_check(h, to_copy, un, 1, &OB);
	dh_check(h, to_copy, lun, 1, &O);
	dh_check(h, to_copy, bun, 1, &O);
	prt_karg hun[1] = {T(&HX)};
	dh_check(h, to_copy, hun, 1, &O);

	/* rounding division (floor and trunc, integers and floats), a zero
	 * integer divisor (number and tensor: the host's error), rsub */
	const char *divt = "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor";
	const char *divs = "aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor";
	static int64_t dl[3] = {3, -2, 7}, dz[3] = {3, 0, 7};
	prt_rv DL = V(dh_mk(PR_I64, dl, 1, 3, 0, 0)), DZ = V(dh_mk(PR_I64, dz, 1, 3, 0, 0));
	prt_karg floor_s = {.kind = PR_ARG_STRING, .s = "floor"}, trunc_s = {.kind = PR_ARG_STRING, .s = "trunc"};
	prt_karg dv1[3] = {T(&LI), T(&DL), floor_s}, dv2[3] = {T(&LI), T(&DL), trunc_s}, dv3[3] = {T(&X), F(-0.75), floor_s},
		dv4[3] = {T(&X), T(&Y), NONE()}, dz1[3] = {T(&LI), I(0), floor_s}, dz2[3] = {T(&LI), T(&DZ), trunc_s};
	dh_check(h, divt, dv1, 3, &OL);
	dh_check(h, divt, dv2, 3, &OL);
	dh_check(h, divs, dv3, 3, &O);
	dh_check(h, divt, dv4, 3, &O);
	dh_check_error(h, divs, dz1, 3, &OL, "integer division by zero");

	/* maximum, minimum and clamp: NaN, broadcast tensor bounds, integers
	 * with number bounds at full width, a float bound making f32 */
	x[1] = NAN;
	prt_karg mx[2] = {T(&X), T(&Y)}, cl[3] = {T(&X), F(-0.5), F(0.75)}, clt[3] = {T(&X), T(&Y), NONE()},
		cli[3] = {T(&LI), I(-300), I(4)}, clf[3] = {T(&LI), F(-1.5), NONE()}, clh[3] = {T(&HX), F(1.1), F(2.3)};
	dh_check(h, "aten::maximum(Tensor self, Tensor other) -> Tensor", mx, 2, &O);
	dh_check(h, "aten::minimum(Tensor self, Tensor other) -> Tensor", mx, 2, &O);
	const char *clamp = "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor";
	dh_check(h, clamp, cl, 3, &O);
	dh_check(h, clamp, cli, 3, &OL);
	dh_check(h, clamp, clf, 3, &O);
	dh_check(h, clamp, clh, 3, &OH);
	dh_check(h, "aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", clt, 3, &O);
	prt_karg cmax[2] = {T(&X), F(0.25)};
	dh_check(h, "aten::clamp_max(Tensor self, Scalar max) -> Tensor", cmax, 2, &O);
	dh_check(h, "aten::clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)", cmax, 2, &O);
	dh_check_error(h, divt, dz2, 3, &OL, "integer division by zero");
	prt_karg rs[2] = {T(&X), F(1)}, rsl[3] = {T(&LI), I(10), I(3)};
	const char *rsub = "aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor";
	dh_check(h, rsub, rs, 2, &O);
	dh_check(h, rsub, rsl, 3, &OL);
	/* add and neg on i64 and f16 (the typed plan on the device) */
	prt_karg addl[3] = {T(&LI), T(&DL), I(2)}, addh[2] = {T(&HX), T(&X)}, negh[1] = {T(&HX)};
	const char *add = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
	dh_check(h, add, addl, 3, &OL);
	dh_check(h, add, addh, 2, &O);
	dh_check(h, "aten::neg(Tensor self) -> Tensor", negh, 1, &OH);
}

static void factory_cases(dh_harness *h)
{
	static float o[8];
	static int64_t lo[8];
	static int32_t io[6];
	static uint16_t ho[3];
	static uint8_t bo[4];
	static double dd[1];
	prt_tensor O23 = dh_mk(PR_F32, o, 2, 2, 3, 0), L22 = dh_mk(PR_I64, lo, 2, 2, 2, 0), H3 = dh_mk(PR_F16, ho, 1, 3, 0, 0),
		  B22 = dh_mk(PR_BOOL, bo, 2, 2, 2, 0), D0 = dh_mk(PR_F64, dd, 0, 0, 0, 0), I23 = dh_mk(PR_I32, io, 2, 2, 3, 0);
	/* a result with stride 2: every other element of 8 */
	int64_t s4[1] = {4}, st2[1] = {2};
	prt_tensor L4 = dh_view(dh_mk(PR_I64, lo, 1, 8, 0, 0), 1, s4, st2);
	prt_tensor F2 = dh_mk(PR_F32, o, 1, 2, 0, 0);
	prt_karg sz23[2] = {I(2), I(3)}, sz22[2] = {I(2), I(2)}, sz3[1] = {I(3)};
	const char *full = "aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
	prt_karg f1[2] = {L(2, sz23), F(2.5)}, f2[2] = {L(2, sz22), I(-7)};
	dh_check(h, full, f1, 2, &O23);
	dh_check(h, full, f2, 2, &L22);
	prt_karg z[1] = {L(1, sz3)}, on[1] = {L(2, sz22)};
	dh_check(h, "aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", z, 1, &H3);
	dh_check(h, "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", on, 1, &B22);
	static float xl[6];
	prt_rv XL = V(dh_mk(PR_F32, xl, 2, 2, 3, 0));
	prt_karg fl[2] = {T(&XL), I(-3)};
	dh_check(h, "aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", fl, 2, &I23);
	prt_karg st[1] = {F(1.5)};
	dh_check(h, "aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", st, 1, &D0);
	prt_karg a1[1] = {I(4)}, a2[2] = {F(1), F(2.5)}, a3[3] = {I(10), I(0), I(-3)};
	dh_check(h, "aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", a1, 1, &L4);
	dh_check(h, "aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", a2, 2, &F2);
	dh_check(h, "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", a3, 3, &L4);
}

static const char *cumsum = "aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor";
static const char *gather = "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor";

static void cumsum_gather_cases(dh_harness *h)
{
	static float x[24], o[24];
	static int64_t li[6] = {1, -4, 2, 50, -3, 6}, lo[6];
	static uint8_t bm[6] = {1, 0, 1, 1, 1, 0};
	fill(x, 24, 21);
	int64_t d2[2] = {3, 2}, d3[3] = {2, 3, 4};
	int tr[2] = {1, 0}, perm[3] = {2, 0, 1};
	prt_rv X = V(permuted(PR_F32, x, 2, d2, tr)), X3 = V(permuted(PR_F32, x, 3, d3, perm)),
	      LI = V(permuted(PR_I64, li, 2, d2, tr)), BM = V(dh_mk(PR_BOOL, bm, 2, 2, 3, 0));
	prt_tensor O = dh_mk(PR_F32, o, 2, 2, 3, 0), OL = dh_mk(PR_I64, lo, 2, 2, 3, 0);
	int64_t o3[3] = {4, 2, 3};
	prt_tensor O3 = prt_tensor_make(PR_F32, 3, o3, o);
	prt_karg c1[2] = {T(&X), I(1)}, c2[2] = {T(&LI), I(0)}, c3[2] = {T(&BM), I(-1)}, c4[2] = {T(&X3), I(-1)};
	dh_check(h, cumsum, c1, 2, &O);
	dh_check(h, cumsum, c2, 2, &OL);
	dh_check(h, cumsum, c3, 2, &OL);
	dh_check(h, cumsum, c4, 2, &O3);

	/* gather from [2,3] transposed: along dim 1 with i64 [2,2] (a negative
	 * index counts from the end), along dim 0 with i32 [1,3] */
	static int64_t g1[4] = {2, 0, -1, 1};
	static int32_t g2[3] = {1, 0, 1};
	static int64_t bad[2] = {0, 7};
	prt_rv G1 = V(dh_mk(PR_I64, g1, 2, 2, 2, 0)), G2 = V(dh_mk(PR_I32, g2, 2, 1, 3, 0)), Bad = V(dh_mk(PR_I64, bad, 2, 1, 2, 0));
	prt_tensor O22 = dh_mk(PR_F32, o, 2, 2, 2, 0), O13 = dh_mk(PR_F32, o, 2, 1, 3, 0), O12 = dh_mk(PR_F32, o, 2, 1, 2, 0);
	prt_karg ga[3] = {T(&X), I(1), T(&G1)}, gb[3] = {T(&X), I(0), T(&G2)}, gbad[3] = {T(&X), I(1), T(&Bad)};
	dh_check(h, gather, ga, 3, &O22);
	dh_check(h, gather, gb, 3, &O13);
	dh_check_error(h, gather, gbad, 3, &O12, "index 7 out of range [0, 3)");

	/* index.Tensor on [4,2,3] (permuted): an adjacent index with a negative
	 * entry, two separated by a none (B goes first), broadcast indices on
	 * the transposed [2,3], an index out of range */
	const char *index = "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor";
	static int64_t i22[4] = {1, -1, 0, 1}, ia[2] = {3, 0}, ib[2] = {-1, 1}, ic[2] = {1, 0}, i5[1] = {5};
	static int32_t id[2] = {1, 0};
	static float ob[48];
	prt_rv I22 = V(dh_mk(PR_I64, i22, 2, 2, 2, 0)), Ia = V(dh_mk(PR_I64, ia, 1, 2, 0, 0)), Ib = V(dh_mk(PR_I64, ib, 1, 2, 0, 0)),
	      Ic = V(dh_mk(PR_I64, ic, 2, 2, 1, 0)), Id = V(dh_mk(PR_I32, id, 1, 2, 0, 0)), I5 = V(dh_mk(PR_I64, i5, 1, 1, 0, 0));
	int64_t o4223[4] = {4, 2, 2, 3};
	prt_tensor OA = prt_tensor_make(PR_F32, 4, o4223, ob), OB22 = dh_mk(PR_F32, ob, 2, 2, 2, 0), O1x3 = dh_mk(PR_F32, ob, 2, 1, 3, 0);
	prt_karg l1[2] = {NONE(), T(&I22)}, l2[3] = {T(&Ia), NONE(), T(&Ib)}, l3[2] = {T(&Ic), T(&Id)}, l4[1] = {T(&I5)};
	prt_karg x1[2] = {T(&X3), L(2, l1)}, x2[2] = {T(&X3), L(3, l2)}, x3[2] = {T(&X), L(2, l3)}, x4[2] = {T(&X), L(1, l4)};
	dh_check(h, index, x1, 2, &OA);
	dh_check(h, index, x2, 2, &OB22);
	dh_check(h, index, x3, 2, &OB22);
	dh_check_error(h, index, x4, 2, &O1x3, "index 5 out of range [0, 2) for dim 0");
}

static void all_cases(dh_harness *h)
{
	conv_cases(h);
	bn_cases(h);
	pool_cases(h);
	activation_cases(h);
	elementwise_cases(h);
	factory_cases(h);
	cumsum_gather_cases(h);
}

Test(staged, nn_kernels_staged_on_sim_match_the_host)
{
	dh_harness h;
	dh_open(&h, "sim", true);
	all_cases(&h);
	dh_close(&h);
}

Test(cuda, nn_kernels_match_the_host_kernels)
{
	if (!prt_cuda_available())
		cr_skip_test("no CUDA device here (tests/gpu/run.sh runs this on a GPU)");
	dh_harness h;
	dh_open(&h, "cuda", false);
	all_cases(&h);
	dh_close(&h);
}
