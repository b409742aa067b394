/* Host kernels of kernels_nn.c (issue 12): convolution, batch norm, pooling
 * and the hard activations, each against a small result worked out by hand
 * (the comment above each expectation says how), with channels-last,
 * transposed and strided inputs and results where the layout matters, and
 * the arguments each kernel must refuse. Kernels are called as the executor
 * calls them: looked up by op name, a prt_kctx with the arguments and the
 * result slot (a tuple for the ops with several results). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_harness.h"
#include "passrun/data.h"
#include "rt.h"

static prt_tensor mk(pr_dtype dt, void *d, int rank, const int64_t *shape)
{
	return prt_tensor_make(dt, rank, shape, d);
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define F32(d, ...) mk(PR_F32, d, NDIMS(__VA_ARGS__), SHAPE(__VA_ARGS__))

#define INTS(...) L((int)(sizeof((prt_karg[]){__VA_ARGS__}) / sizeof(prt_karg)), (prt_karg[]){__VA_ARGS__})

#define EXPECT(t, ...) \
	expect_vals(t, (double[]){__VA_ARGS__}, (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

static void iota(float *v, int n, float from)
{
	for (int i = 0; i < n; i++)
		v[i] = from + (float)i;
}

/* convolution(input, weight, bias, stride, padding, dilation, transposed,
 * output_padding, groups) as the exporter writes it. */
static void conv_args(prt_karg *a, prt_rv *x, prt_rv *w, prt_rv *b, prt_karg st, prt_karg pad,
		      prt_karg dil, bool transposed, prt_karg opad, int64_t groups)
{
	a[0] = T(x), a[1] = T(w), a[2] = b ? T(b) : NONE();
	a[3] = st, a[4] = pad, a[5] = dil, a[6] = B(transposed), a[7] = opad, a[8] = I(groups);
}

/* ---- convolution ----------------------------------------------------------- */

Test(kernels_nn, conv2d_sums_each_window)
{
	float x[9], w[4] = {1, 0, 0, 1}, o[4];
	iota(x, 9, 1);
	prt_rv X = V(F32(x, 1, 1, 3, 3)), W = V(F32(w, 1, 1, 2, 2)), O = V(F32(o, 1, 1, 2, 2));
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(1), I(1)), INTS(I(0), I(0)), INTS(I(1), I(1)), false,
		  INTS(I(0), I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* the diagonal of each 2x2 window of [[1,2,3],[4,5,6],[7,8,9]]: 1+5, 2+6, 4+8, 5+9 */
	EXPECT(&O.t, 6, 8, 12, 14);
}

Test(kernels_nn, conv2d_with_padding_stride_and_bias)
{
	float x[9], w[9], bias[1] = {0.5f}, o[4];
	iota(x, 9, 1);
	for (int i = 0; i < 9; i++)
		w[i] = 1;
	prt_rv X = V(F32(x, 1, 1, 3, 3)), W = V(F32(w, 1, 1, 3, 3)), Bi = V(F32(bias, 1));
	prt_rv O = V(F32(o, 1, 1, 2, 2));
	prt_karg a[9];
	conv_args(a, &X, &W, &Bi, INTS(I(2), I(2)), INTS(I(1), I(1)), INTS(I(1), I(1)), false,
		  INTS(I(0), I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* 3x3 sums at (-1,-1), (-1,1), (1,-1), (1,1) of the zero-padded input: the
	 * 2x2 corners 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9, plus the bias */
	EXPECT(&O.t, 12.5, 16.5, 24.5, 28.5);
}

Test(kernels_nn, conv2d_dilation_2)
{
	float x[25], w[4] = {1, 1, 1, 1}, o[9];
	iota(x, 25, 0);
	prt_rv X = V(F32(x, 1, 1, 5, 5)), W = V(F32(w, 1, 1, 2, 2)), O = V(F32(o, 1, 1, 3, 3));
	prt_karg a[9];
	/* a one-entry list stands for every spatial dim, as in ATen */
	conv_args(a, &X, &W, NULL, INTS(I(1)), INTS(I(0)), INTS(I(2)), false, INTS(I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* x[r][c] = 5r + c; out[i][j] = x[i][j] + x[i][j+2] + x[i+2][j] + x[i+2][j+2]
	 * = 20i + 4j + 24 */
	EXPECT(&O.t, 24, 28, 32, 44, 48, 52, 64, 68, 72);
}

Test(kernels_nn, depthwise_and_grouped_channels)
{
	/* channel 0 = [1,2,3,4], channel 1 = [10,20,30,40] */
	float x[8] = {1, 2, 3, 4, 10, 20, 30, 40}, w[4] = {1, 2, 3, 4}, o[16];
	prt_rv X = V(F32(x, 1, 2, 2, 2)), W = V(F32(w, 4, 1, 1, 1)), O = V(F32(o, 1, 4, 2, 2));
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(1), I(1)), INTS(I(0), I(0)), INTS(I(1), I(1)), false,
		  INTS(I(0), I(0)), 2);
	call_ok("aten::convolution", a, 9, &O);
	/* groups=2, two outputs per group: 1*ch0, 2*ch0, 3*ch1, 4*ch1 */
	EXPECT(&O.t, 1, 2, 3, 4, 2, 4, 6, 8, 30, 60, 90, 120, 40, 80, 120, 160);

	float x4[4] = {1, 2, 3, 4}, w2[4] = {1, 1, 1, -1}, o2[2];
	prt_rv X4 = V(F32(x4, 1, 4, 1, 1)), W2 = V(F32(w2, 2, 2, 1, 1)), O2 = V(F32(o2, 1, 2, 1, 1));
	conv_args(a, &X4, &W2, NULL, INTS(I(1), I(1)), INTS(I(0), I(0)), INTS(I(1), I(1)), false,
		  INTS(I(0), I(0)), 2);
	call_ok("aten::convolution", a, 9, &O2);
	/* group 0 reads channels 0-1 with [1,1]: 1+2; group 1 reads 2-3 with [1,-1]: 3-4 */
	EXPECT(&O2.t, 3, -1);
}

Test(kernels_nn, channels_last_input_weight_and_result)
{
	/* x[0, c, h, w] stored NHWC: channel 0 = [1,2,3,4], channel 1 = [5,6,7,8] */
	float x[8] = {1, 5, 2, 6, 3, 7, 4, 8}, w[4] = {1, 10, 2, 20}, o[8];
	prt_tensor xt = F32(x, 1, 2, 2, 2), wt = F32(w, 2, 2, 1, 1), ot = F32(o, 1, 2, 2, 2);
	memcpy(xt.strides, SHAPE(8, 1, 4, 2), sizeof(int64_t) * 4);
	/* the weight [2,2,1,1] stored transposed: w[0] = [1,2], w[1] = [10,20] */
	memcpy(wt.strides, SHAPE(1, 2, 1, 1), sizeof(int64_t) * 4);
	memcpy(ot.strides, SHAPE(8, 1, 4, 2), sizeof(int64_t) * 4);   /* a channels-last result */
	prt_rv X = V(xt), W = V(wt), O = V(ot);
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(1), I(1)), INTS(I(0), I(0)), INTS(I(1), I(1)), false,
		  INTS(I(0), I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* out0 = ch0 + 2 ch1 = [11,14,17,20]; out1 = 10 ch0 + 20 ch1 = [110,140,170,200] */
	EXPECT(&O.t, 11, 14, 17, 20, 110, 140, 170, 200);
	/* and stored channels-last: out0 and out1 interleaved */
	cr_expect(o[0] == 11 && o[1] == 110 && o[2] == 14 && o[7] == 200);
}

Test(kernels_nn, conv1d_f64_and_f16)
{
	double x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 2}, o[3];
	prt_rv X = V(mk(PR_F64, x, 3, SHAPE(1, 1, 5))), W = V(mk(PR_F64, w, 3, SHAPE(1, 1, 2)));
	prt_rv O = V(mk(PR_F64, o, 3, SHAPE(1, 1, 3)));
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(2)), INTS(I(1)), INTS(I(1)), false, INTS(I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* padded [0,1,2,3,4,5,0], windows at 0, 2, 4 with [1,2]: 0+2, 2+6, 4+10 */
	EXPECT(&O.t, 2, 8, 14);

	uint16_t hx[5], hw[2], ho[3];
	for (int i = 0; i < 5; i++)
		hx[i] = pr_f16_from_double(x[i]);
	hw[0] = pr_f16_from_double(1), hw[1] = pr_f16_from_double(2);
	prt_rv HX = V(mk(PR_F16, hx, 3, SHAPE(1, 1, 5))), HW = V(mk(PR_F16, hw, 3, SHAPE(1, 1, 2)));
	prt_rv HO = V(mk(PR_F16, ho, 3, SHAPE(1, 1, 3)));
	conv_args(a, &HX, &HW, NULL, INTS(I(2)), INTS(I(1)), INTS(I(1)), false, INTS(I(0)), 1);
	call_ok("aten::convolution", a, 9, &HO);
	EXPECT(&HO.t, 2, 8, 14);
}

Test(kernels_nn, transposed_convolution)
{
	float x[2] = {1, 2}, w[3] = {1, 1, 1}, o[6];
	prt_rv X = V(F32(x, 1, 1, 2)), W = V(F32(w, 1, 1, 3)), O = V(F32(o, 1, 1, 5));
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(2)), INTS(I(0)), INTS(I(1)), true, INTS(I(0)), 1);
	call_ok("aten::convolution", a, 9, &O);
	/* x0 spreads over outputs 0..2, x1 (stride 2) over 2..4 */
	EXPECT(&O.t, 1, 1, 3, 2, 2);
	prt_rv P = V(F32(o, 1, 1, 3));
	conv_args(a, &X, &W, NULL, INTS(I(2)), INTS(I(1)), INTS(I(1)), true, INTS(I(0)), 1);
	call_ok("aten::convolution", a, 9, &P);
	EXPECT(&P.t, 1, 3, 2);   /* padding 1 crops one output at each end */
	prt_rv Q = V(F32(o, 1, 1, 6));
	conv_args(a, &X, &W, NULL, INTS(I(2)), INTS(I(0)), INTS(I(1)), true, INTS(I(1)), 1);
	call_ok("aten::convolution", a, 9, &Q);
	EXPECT(&Q.t, 1, 1, 3, 2, 2, 0);   /* output_padding 1 adds one at the end */
}

Test(kernels_nn, conv_refuses_bad_arguments)
{
	float x[18] = {0}, w[50] = {0}, o[18];
	prt_rv X = V(F32(x, 1, 2, 3, 3)), W = V(F32(w, 2, 1, 3, 3)), O = V(F32(o, 1, 2, 1, 1));
	prt_karg a[9];
	conv_args(a, &X, &W, NULL, INTS(I(1)), INTS(I(0)), INTS(I(1)), false, INTS(I(0)), 1);
	call_refused("aten::convolution", a, 9, &O, "channels");   /* 2 channels, weight takes 1 */
	conv_args(a, &X, &W, NULL, INTS(I(1)), INTS(I(0)), INTS(I(1)), false, INTS(I(0)), 2);
	call_ok("aten::convolution", a, 9, &O);                    /* groups=2 takes them */
	prt_rv O2 = V(F32(o, 1, 1, 2, 2));
	call_refused("aten::convolution", a, 9, &O2, "[1,2,1,1]");  /* the declared result */
	conv_args(a, &X, &W, NULL, INTS(I(1), I(1), I(1)), INTS(I(0)), INTS(I(1)), false, INTS(I(0)), 2);
	call_refused("aten::convolution", a, 9, &O, "stride must have 1 or 2 entries");
	prt_rv W5 = V(F32(w, 2, 1, 5, 5));
	conv_args(a, &X, &W5, NULL, INTS(I(1)), INTS(I(0)), INTS(I(1)), false, INTS(I(0)), 2);
	call_refused("aten::convolution", a, 9, &O, "larger than the padded input");
	int64_t ix[9] = {0}, iw[1] = {0}, io[9];
	prt_rv IX = V(mk(PR_I64, ix, 4, SHAPE(1, 1, 3, 3))), IW = V(mk(PR_I64, iw, 4, SHAPE(1, 1, 1, 1)));
	prt_rv IO = V(mk(PR_I64, io, 4, SHAPE(1, 1, 3, 3)));
	conv_args(a, &IX, &IW, NULL, INTS(I(1)), INTS(I(0)), INTS(I(1)), false, INTS(I(0)), 1);
	call_refused("aten::convolution", a, 9, &IO, "floating-point");
}

/* ---- batch norm --------------------------------------------------------------- */

Test(kernels_nn, batch_norm_inference_per_channel)
{
	/* channel 0 = [1,3], channel 1 = [2,6]; stored channels-last: 1,2,3,6 */
	float x[4] = {1, 2, 3, 6}, w[2] = {2, 3}, b[2] = {0.5f, -1}, m[2] = {2, 4}, v[2] = {1, 4}, o[4];
	prt_tensor xt = F32(x, 1, 2, 1, 2);
	memcpy(xt.strides, SHAPE(4, 1, 4, 2), sizeof(int64_t) * 4);
	prt_rv X = V(xt), W = V(F32(w, 2)), Bi = V(F32(b, 2)), M = V(F32(m, 2)), Va = V(F32(v, 2));
	prt_rv O = V(F32(o, 1, 2, 1, 2));
	prt_karg a[9] = {T(&X), T(&W), T(&Bi), T(&M), T(&Va), B(false), F(0.1), F(0), B(true)};
	call_ok("aten::batch_norm", a, 9, &O);
	/* (x - mean) / sqrt(var): ch0 [-1, 1], ch1 [-1, 1]; times [2,3] plus [0.5,-1] */
	EXPECT(&O.t, -1.5, 2.5, -4, 2);

	/* _native_batch_norm_legit_no_training returns (out, save_mean, save_rstd):
	 * the statistics are empty in inference and only out is written. */
	float o2[4];
	prt_rv elems[3] = {V(F32(o2, 1, 2, 1, 2)), V(F32(NULL, 0)), V(F32(NULL, 0))};
	prt_rv tup = {.kind = PRT_RV_TUPLE, .n = 3, .elems = elems};
	prt_karg l[7] = {T(&X), NONE(), NONE(), T(&M), T(&Va), F(0.1), F(0)};
	call_ok("aten::_native_batch_norm_legit_no_training", l, 7, &tup);
	EXPECT(&elems[0].t, -1, 1, -1, 1);   /* no weight, no bias */
}

Test(kernels_nn, batch_norm_rank_2_eps_and_refusals)
{
	float x[2] = {3, 3}, m[2] = {1, 2}, v[2] = {3, 0}, o[2];
	prt_rv X = V(F32(x, 1, 2)), M = V(F32(m, 2)), Va = V(F32(v, 2)), O = V(F32(o, 1, 2));
	prt_karg a[9] = {T(&X), NONE(), NONE(), T(&M), T(&Va), B(false), F(0.1), F(1), B(true)};
	call_ok("aten::batch_norm", a, 9, &O);
	/* eps 1: (3-1)/sqrt(4), (3-2)/sqrt(1) */
	EXPECT(&O.t, 1, 1);
	a[5] = B(true);
	call_refused("aten::batch_norm", a, 9, &O, "eval()");
	a[5] = B(false), a[3] = NONE();
	call_refused("aten::batch_norm", a, 9, &O, "running_mean");
	float m3[3] = {0};
	prt_rv M3 = V(F32(m3, 3));
	a[3] = T(&M3);
	call_refused("aten::batch_norm", a, 9, &O, "2 elements");
}

/* ---- pooling --------------------------------------------------------------- */

/* max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode) */
Test(kernels_nn, max_pool2d_padding_counts_as_minus_infinity)
{
	float x[16], o[4];
	for (int i = 0; i < 16; i++)
		x[i] = -1 - (float)i;
	prt_rv X = V(F32(x, 1, 1, 4, 4)), O = V(F32(o, 1, 1, 2, 2));
	prt_karg a[6] = {T(&X), INTS(I(3), I(3)), INTS(I(2), I(2)), INTS(I(1), I(1)),
			INTS(I(1), I(1)), B(false)};
	call_ok("aten::max_pool2d", a, 6, &O);
	/* x[i] = -1 - i; windows (rows, cols) [-1..1]x[-1..1] holds i = 0 first,
	 * [-1..1]x[1..3] i = 1, [1..3]x[-1..1] i = 4, [1..3]x[1..3] i = 5 (a zero
	 * padding would give 0s) */
	EXPECT(&O.t, -1, -2, -5, -6);
}

Test(kernels_nn, max_pool2d_default_stride_ceil_mode_dilation_and_transposed_input)
{
	float x[16], o[8];
	iota(x, 16, 0);
	prt_rv X = V(F32(x, 1, 1, 4, 4)), O = V(F32(o, 1, 1, 2, 2));
	prt_karg a[2] = {T(&X), INTS(I(2), I(2))};   /* stride=[] and the rest: the schema's defaults */
	call_ok("aten::max_pool2d", a, 2, &O);
	EXPECT(&O.t, 5, 7, 13, 15);

	/* the same input seen transposed: the maxima of the windows of x^T */
	prt_tensor xt = X.t;
	xt.strides[2] = 1, xt.strides[3] = 4;
	prt_rv XT = V(xt);
	a[0] = T(&XT);
	call_ok("aten::max_pool2d", a, 2, &O);
	EXPECT(&O.t, 5, 13, 7, 15);

	float r[5] = {1, 5, 2, 4, 3};
	prt_rv R = V(F32(r, 1, 1, 1, 5)), C = V(F32(o, 1, 1, 1, 3)), D = V(F32(o, 1, 1, 1, 2));
	prt_karg c[6] = {T(&R), INTS(I(1), I(2)), INTS(I(1), I(2)), INTS(I(0)), INTS(I(1)), B(true)};
	call_ok("aten::max_pool2d", c, 6, &C);
	/* ceil_mode: windows at 0, 2 and a last partial one at 4 */
	EXPECT(&C.t, 5, 4, 3);
	c[5] = B(false);
	call_ok("aten::max_pool2d", c, 6, &D);
	EXPECT(&D.t, 5, 4);
	/* dilation 2, stride 1: max(x0,x2), max(x1,x3), max(x2,x4) */
	prt_karg d[6] = {T(&R), INTS(I(1), I(2)), INTS(I(1), I(1)), INTS(I(0)), INTS(I(1), I(2)), B(false)};
	call_ok("aten::max_pool2d", d, 6, &C);
	EXPECT(&C.t, 2, 5, 3);
}

Test(kernels_nn, max_pool2d_with_indices_and_nan)
{
	float x[16], o[4];
	int64_t ix[4];
	iota(x, 16, 0);
	x[4] = NAN;
	prt_rv elems[2] = {V(F32(o, 1, 1, 2, 2)), V(mk(PR_I64, ix, 4, SHAPE(1, 1, 2, 2)))};
	prt_rv tup = {.kind = PRT_RV_TUPLE, .n = 2, .elems = elems};
	prt_rv X = V(F32(x, 1, 1, 4, 4));
	prt_karg a[2] = {T(&X), INTS(I(2), I(2))};
	call_ok("aten::max_pool2d_with_indices", a, 2, &tup);
	/* a NaN wins its window (as in ATen); the indices are flat in the 4x4 plane */
	EXPECT(&elems[0].t, NAN, 7, 13, 15);
	cr_expect(ix[0] == 4 && ix[1] == 7 && ix[2] == 13 && ix[3] == 15,
		  "indices %lld %lld %lld %lld", (long long)ix[0], (long long)ix[1],
		  (long long)ix[2], (long long)ix[3]);
}

Test(kernels_nn, max_pool_refusals_and_the_1d_form)
{
	float x[5] = {1, 5, 2, 4, 3}, o[4];
	prt_rv X = V(F32(x, 1, 5)), O = V(F32(o, 1, 2));
	prt_karg a[3] = {T(&X), INTS(I(2)), INTS(I(2))};
	call_ok("aten::max_pool1d", a, 3, &O);
	EXPECT(&O.t, 5, 4);   /* an unbatched [C, L] input */
	prt_rv O3 = V(F32(o, 1, 3));
	call_refused("aten::max_pool1d", a, 3, &O3, "[1,2]");
	prt_karg p[4] = {T(&X), INTS(I(2)), INTS(I(2)), INTS(I(2))};
	call_refused("aten::max_pool1d", p, 4, &O, "half the kernel size");
	prt_rv X1 = V(F32(x, 5));
	a[0] = T(&X1);
	call_refused("aten::max_pool1d", a, 3, &O, "rank 2 or 3");
}

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override) */
Test(kernels_nn, avg_pool2d_padding_divisors)
{
	float x[9], o[4];
	iota(x, 9, 1);
	prt_rv X = V(F32(x, 1, 1, 3, 3)), O = V(F32(o, 1, 1, 2, 2));
	prt_karg a[7] = {T(&X), INTS(I(2), I(2)), INTS(I(1), I(1))};
	call_ok("aten::avg_pool2d", a, 3, &O);
	EXPECT(&O.t, 3, 4, 6, 7);   /* the 2x2 means of [[1,2,3],[4,5,6],[7,8,9]] */

	/* padding 1, stride 2: the windows hold {1}, {2,3}, {4,7}, {5,6,8,9} */
	prt_karg p[7] = {T(&X), INTS(I(2), I(2)), INTS(I(2), I(2)), INTS(I(1), I(1)), B(false),
			B(true), NONE()};
	call_ok("aten::avg_pool2d", p, 7, &O);
	EXPECT(&O.t, 0.25, 1.25, 2.75, 7);    /* count_include_pad: always / 4 */
	p[5] = B(false);
	call_ok("aten::avg_pool2d", p, 7, &O);
	EXPECT(&O.t, 1, 2.5, 5.5, 7);         /* / the elements inside */
	p[6] = I(3);
	call_ok("aten::avg_pool2d", p, 7, &O);
	EXPECT(&O.t, 1.0 / 3, 5.0 / 3, 11.0 / 3, 28.0 / 3);   /* divisor_override */
	p[6] = I(0);
	call_refused("aten::avg_pool2d", p, 7, &O, "divisor_override");
}

Test(kernels_nn, avg_pool_ceil_mode_and_1d_on_a_strided_input)
{
	float x[10], o[3];
	iota(x, 10, 1);
	/* every other element of 1..10: [1,3,5,7,9] */
	prt_tensor xt = F32(x, 1, 1, 1, 5);
	xt.strides[3] = 2;
	prt_rv X = V(xt), O = V(F32(o, 1, 1, 1, 3));
	prt_karg a[7] = {T(&X), INTS(I(1), I(2)), INTS(I(1), I(2)), INTS(I(0)), B(true), B(true), NONE()};
	call_ok("aten::avg_pool2d", a, 7, &O);
	/* windows [1,3], [5,7] and the last, clipped to the input: [9] / 1 */
	EXPECT(&O.t, 2, 6, 9);

	prt_tensor x1 = F32(x, 1, 5);
	x1.strides[1] = 2;
	prt_rv X1 = V(x1), O1 = V(F32(o, 1, 3));
	prt_karg b[6] = {T(&X1), INTS(I(3)), INTS(I(2)), INTS(I(1)), B(false), B(false)};
	call_ok("aten::avg_pool1d", b, 6, &O1);
	/* padding 1, kernel 3, stride 2, padding not counted: {1,3} / 2, {3,5,7} / 3, {7,9} / 2 */
	EXPECT(&O1.t, 2, 5, 8);
}

Test(kernels_nn, adaptive_avg_pool_uses_atens_start_and_end)
{
	float x[9], o[4];
	iota(x, 9, 1);
	prt_rv X = V(F32(x, 1, 1, 1, 5)), O = V(F32(o, 1, 1, 1, 3));
	prt_karg a[2] = {T(&X), INTS(I(1), I(3))};
	call_ok("aten::_adaptive_avg_pool2d", a, 2, &O);
	/* cell o covers [floor(5o/3), ceil(5(o+1)/3)): [0,2), [1,4), [3,5) */
	EXPECT(&O.t, 1.5, 3, 4.5);

	prt_tensor xt = F32(x, 1, 3, 3);   /* unbatched [C, H, W], seen transposed */
	xt.strides[1] = 1, xt.strides[2] = 3;
	prt_rv XT = V(xt), O2 = V(F32(o, 1, 2, 2));
	prt_karg b[2] = {T(&XT), INTS(I(2))};
	call_ok("aten::adaptive_avg_pool2d", b, 2, &O2);
	/* overlapping 2x2 cells of [[1,4,7],[2,5,8],[3,6,9]] */
	EXPECT(&O2.t, 3, 6, 4, 7);

	prt_rv X1 = V(F32(x, 1, 1, 5)), O1 = V(F32(o, 1, 1, 2));
	prt_karg c[2] = {T(&X1), INTS(I(2))};
	call_ok("aten::adaptive_avg_pool1d", c, 2, &O1);
	EXPECT(&O1.t, 2, 4);   /* [0,3) and [2,5) */
	prt_karg z[2] = {T(&X1), INTS(I(0))};
	call_refused("aten::adaptive_avg_pool1d", z, 2, &O1, "positive");
}

/* ---- activations ----------------------------------------------------------- */

Test(kernels_nn, hardtanh_relu6_and_nan)
{
	float x[5] = {-3, -0.5f, 0.5f, 3, NAN}, o[5];
	prt_rv X = V(F32(x, 5)), O = V(F32(o, 5));
	prt_karg a[1] = {T(&X)};
	call_ok("aten::hardtanh", a, 1, &O);
	EXPECT(&O.t, -1, -0.5, 0.5, 1, NAN);   /* [-1, 1]; NaN stays NaN */
	prt_karg r6[3] = {T(&X), F(0), F(6)};
	call_ok("aten::hardtanh", r6, 3, &O);
	EXPECT(&O.t, 0, 0, 0.5, 3, NAN);
	prt_karg bad[3] = {T(&X), F(1), F(0)};
	call_refused("aten::hardtanh", bad, 3, &O, "min_val");
}

Test(kernels_nn, hardswish_hardsigmoid_silu)
{
	float x[5] = {-4, -1, 0, 1, 4}, o[5];
	prt_rv X = V(F32(x, 5)), O = V(F32(o, 5));
	prt_karg a[1] = {T(&X)};
	call_ok("aten::hardswish", a, 1, &O);
	EXPECT(&O.t, 0, -1.0 / 3, 0, 4.0 / 6, 4);   /* x * clamp(x + 3, 0, 6) / 6 */
	call_ok("aten::hardsigmoid", a, 1, &O);
	EXPECT(&O.t, 0, 1.0 / 3, 0.5, 4.0 / 6, 1);  /* clamp(x + 3, 0, 6) / 6 */
	call_ok("aten::silu", a, 1, &O);
	/* x * sigmoid(x): sigmoid(1) = 0.7310586, sigmoid(4) = 0.9820138 */
	EXPECT(&O.t, -4 * 0.0179862, -0.2689414, 0, 0.7310586, 4 * 0.9820138);
}

Test(kernels_nn, in_place_forms_write_a_strided_view)
{
	float x[6] = {-4, 9, 1, 9, 4, 9};
	prt_tensor every_other = F32(x, 3);
	every_other.strides[0] = 2;
	prt_rv X = V(every_other), O = {.kind = PRT_RV_TENSOR};
	prt_karg a[3] = {T(&X), F(-2), F(2)};
	cr_assert_null(call_kernel("aten::hardtanh_", a, 3, &O, 0, NULL));
	cr_expect(x[0] == -2 && x[2] == 1 && x[4] == 2 && x[1] == 9 && x[3] == 9 && x[5] == 9);
	cr_assert_null(call_kernel("aten::hardswish_", a, 1, &O, 0, NULL));
	/* -2 * 1/6, 1 * 4/6, 2 * 5/6 */
	cr_expect(fabsf(x[0] + 2.0f / 6) < 1e-6f && fabsf(x[2] - 4.0f / 6) < 1e-6f &&
		  fabsf(x[4] - 10.0f / 6) < 1e-6f && x[1] == 9);
	cr_assert_null(call_kernel("aten::silu_", a, 1, &O, 0, NULL));
	cr_assert_null(call_kernel("aten::hardsigmoid_", a, 1, &O, 0, NULL));
	cr_expect(x[3] == 9 && x[5] == 9, "only the view changed");
	float ho[3];
	prt_rv HO = V(F32(ho, 4));
	call_refused("aten::hardsigmoid", a, 1, &HO, "[3]");
}
