/* aten::round and aten::round.decimals (kernels_elementwise.c) and their
 * in-place forms. Every expected value was checked against PyTorch 2.15
 * (eager, CPU): halves to even, NaN, infinities and large values in f32,
 * f16, bf16 and f64; decimals 0, 2, -1 and out-of-range ones, scaled in
 * ATen's opmath type (float for f16 and bf16, so an f32 2.675 with decimals
 * 2 is 2.68: 2.675f * 100 is 267.5 in float); integers left as they are by
 * round, and refused with decimals as ATen refuses them. Kernels are called
 * the way the executor calls them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_harness.h"
#include "kernels.h"
#include "passrun/data.h"

enum { MAXN = 12, NO_DECIMALS = 1000000 };

/* A 1-D tensor of dtype dt over buf, holding vals rounded to dt. */
static prt_tensor vec(pr_dtype dt, void *buf, const double *vals, int n)
{
	int64_t shape[1] = {n};
	for (int i = 0; i < n; i++)
		pr_elem_store(dt, (uint8_t *)buf + (size_t)i * pr_dtype_size(dt), vals[i]);
	return prt_tensor_make(dt, 1, shape, buf);
}

/* t's values are want's exactly: NaN matches NaN, -0 is not 0. */
static void expect_same(const prt_tensor *t, const double *want, int n)
{
	cr_assert_eq(prt_tensor_numel(t), n);
	double *v = prt_tensor_gather(t);
	for (int i = 0; i < n; i++)
		cr_expect(isnan(want[i]) ? isnan(v[i]) : v[i] == want[i] && !signbit(v[i]) == !signbit(want[i]),
			  "%s element %d: %.17g, expected %.17g", pr_dtype_name(t->dtype), i, v[i], want[i]);
	free(v);
}

/* round (decimals NO_DECIMALS) or round.decimals of a dt tensor holding in
 * gives want, in dt. */
static void expect_round(pr_dtype dt, const double *in, int n, int64_t decimals, const double *want)
{
	uint64_t xb[MAXN], ob[MAXN];
	prt_rv X = V(vec(dt, xb, in, n)), O = V(vec(dt, ob, in, n));
	prt_karg args[2] = {T(&X), I(decimals)};
	if (decimals == NO_DECIMALS)
		call_ok("aten::round", args, 1, &O);
	else
		call_ok("aten::round.decimals", args, 2, &O);
	expect_same(&O.t, want, n);
}

/* ---- round ------------------------------------------------------------------- */

Test(round, f32_halves_to_even_nan_infinities_and_large_values)
{
	double in[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4999999701976776, NAN, INFINITY, -INFINITY,
		       3.3999999521443642e+38, -0.0};
	double want[] = {0, 2, 2, -0.0, -2, -2, 0, NAN, INFINITY, -INFINITY, 3.3999999521443642e+38, -0.0};
	expect_round(PR_F32, in, 12, NO_DECIMALS, want);
}

Test(round, f16_bf16_and_f64_halves_to_even)
{
	double in[] = {0.5, 1.5, 2.5, -0.5, 3.5, -2.5, 65504, NAN};
	double want[] = {0, 2, 2, -0.0, 4, -2, 65504, NAN};
	expect_round(PR_F16, in, 8, NO_DECIMALS, want);
	in[6] = want[6] = 3.00405527047391e+38;   /* a large bf16 is whole already */
	expect_round(PR_BF16, in, 8, NO_DECIMALS, want);
	double d_in[] = {0.5, 1.5, 2.5, -0.5, 4503599627370495.5, -0.0};
	double d_want[] = {0, 2, 2, -0.0, 4503599627370496, -0.0};
	expect_round(PR_F64, d_in, 6, NO_DECIMALS, d_want);
}

Test(round, integers_are_left_as_they_are_bool_is_refused)
{
	double in[] = {-7, 0, 3, 100};
	double u_in[] = {0, 3, 200, 255};
	expect_round(PR_I64, in, 4, NO_DECIMALS, in);
	expect_round(PR_I32, in, 4, NO_DECIMALS, in);
	expect_round(PR_I8, in, 4, NO_DECIMALS, in);
	expect_round(PR_U8, u_in, 4, NO_DECIMALS, u_in);
	uint8_t b[2] = {1, 0}, bo[2];
	prt_rv Bv = V(vec(PR_BOOL, b, (double[]){1, 0}, 2)), BO = V(vec(PR_BOOL, bo, (double[]){0, 0}, 2));
	prt_karg args[1] = {T(&Bv)};
	call_refused("aten::round", args, 1, &BO, "round is not implemented for bool");
}

/* ---- round.decimals ------------------------------------------------------------ */

Test(round_decimals, f32_scales_in_float)
{
	double in[] = {0.125, 1.0049999952316284, 2.674999952316284, 12345.677734375, 3.3999999521443642e+38,
		       -0.5, 16777216, NAN};
	double two[] = {0.11999999731779099, 1, 2.680000066757202, 12345.6796875, INFINITY, -0.5, 16777216, NAN};
	double zero[] = {0, 1, 3, 12346, 3.3999999521443642e+38, -0.0, 16777216, NAN};
	double minus_one[] = {0, 0, 0, 12350, 3.3999999521443642e+38, -0.0, 16777220, NAN};
	double all_nan[] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};   /* 10^40 is inf in float */
	expect_round(PR_F32, in, 8, 2, two);
	expect_round(PR_F32, in, 8, 0, zero);
	expect_round(PR_F32, in, 8, -1, minus_one);
	expect_round(PR_F32, in, 8, 40, all_nan);
	expect_round(PR_F32, in, 8, -40, all_nan);
}

Test(round_decimals, f16_and_bf16_scale_in_float_then_round_to_their_dtype)
{
	double h_in[] = {0.125, 2.67578125, 12344, -0.0};
	expect_round(PR_F16, h_in, 4, 2, (double[]){0.1199951171875, 2.6796875, 12344, -0.0});
	expect_round(PR_F16, h_in, 4, -1, (double[]){0, 0, 12336, -0.0});   /* 12340: half to even */
	double b_in[] = {0.125, 2.671875, 12352, -0.0};
	expect_round(PR_BF16, b_in, 4, 2, (double[]){0.1201171875, 2.671875, 12352, -0.0});
	expect_round(PR_BF16, b_in, 4, -1, (double[]){0, 0, 12352, -0.0});
	expect_round(PR_BF16, b_in + 2, 1, -2, (double[]){12416});   /* 12400 in bf16 */
}

Test(round_decimals, f64_scales_in_double)
{
	double in[] = {0.49999997, 1e30, 2.675, -0.0};
	expect_round(PR_F64, in, 4, 2, (double[]){0.5, 1e30, 2.68, -0.0});
	expect_round(PR_F64, in, 4, 40, in);   /* 10^40 is finite in double */
	expect_round(PR_F64, in, 4, -40, (double[]){0, 0, 0, -0.0});
	expect_round(PR_F64, in, 4, 400, (double[]){NAN, NAN, NAN, NAN});
}

Test(round_decimals, integers_bool_and_a_float_decimals_are_refused)
{
	int64_t i[2] = {1, 2}, io[2];
	prt_rv Iv = V(vec(PR_I64, i, (double[]){1, 2}, 2)), IO = V(vec(PR_I64, io, (double[]){0, 0}, 2));
	prt_karg zero[2] = {T(&Iv), I(0)};   /* torch refuses decimals=0 on integers too */
	call_refused("aten::round.decimals", zero, 2, &IO, "round with decimals is not implemented for i64");
	uint8_t b[2] = {1, 0}, bo[2];
	prt_rv Bv = V(vec(PR_BOOL, b, (double[]){1, 0}, 2)), BO = V(vec(PR_BOOL, bo, (double[]){0, 0}, 2));
	prt_karg bools[2] = {T(&Bv), I(1)};
	call_refused("aten::round.decimals", bools, 2, &BO, "not implemented for bool");
	float f[2] = {1.25f, 2}, fo[2];
	prt_rv Fv = V(vec(PR_F32, f, (double[]){1.25, 2}, 2)), FO = V(vec(PR_F32, fo, (double[]){0, 0}, 2));
	prt_karg half[2] = {T(&Fv), F(1.5)};
	call_refused("aten::round.decimals", half, 2, &FO, "decimals must be an int");
}

/* ---- in place, registry ------------------------------------------------------------ */

Test(round_inplace, round_and_round_decimals_write_a_strided_view)
{
	float x[6] = {0.5f, 9, 1.5f, 9, 2.5f, 9};
	prt_tensor t = vec(PR_F32, x, (double[]){0.5, 9, 1.5, 9, 2.5, 9}, 6);
	t.shape[0] = 3, t.strides[0] = 2;   /* x[::2] */
	prt_rv X = V(t), O = {.kind = PRT_RV_TENSOR};
	prt_karg args[2] = {T(&X), I(3)};
	call_ok_as("aten::round_", args, 1, &O, 0);
	cr_expect(x[0] == 0 && x[1] == 9 && x[2] == 2 && x[3] == 9 && x[4] == 2 && x[5] == 9);
	x[0] = 1.2345f, x[2] = -1.2355f;
	call_ok_as("aten::round_.decimals", args, 2, &O, 0);
	cr_expect(x[0] == (float)1.2339999675750732 && x[2] == (float)-1.2359999418258667 && x[3] == 9,
		  "%.9g %.9g", x[0], x[2]);
}

Test(round_registry, every_form_has_a_host_kernel)
{
	const char *ops[] = {"aten::round", "aten::round_", "aten::round.decimals", "aten::round_.decimals"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		cr_expect_not_null(prt_kernel_find(ops[i]), "%s", ops[i]);
}
