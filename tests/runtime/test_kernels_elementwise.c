/* Typed elementwise kernels (issue 12, kernels_elementwise.c): comparisons,
 * logical and bitwise ops, sqrt, rsqrt, pow, where, masked_fill, _to_copy,
 * maximum, minimum, clamp and add/sub/mul/div on integers, bools and mixed dtypes. Every expected value
 * was checked against PyTorch 2.15 (eager, CPU): type promotion as
 * torch.result_type, NaN, wrapping integer arithmetic, x86-64 casts, and
 * ATen's refusals. Inputs are broadcast, transposed or strided where the
 * layout matters. Kernels are called the way the executor calls them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_harness.h"
#include "kernels.h"
#include "passrun/data.h"

static prt_tensor mk(pr_dtype dt, void *d, int rank, int64_t s0, int64_t s1)
{
	int64_t shape[2] = {s0, s1};
	return prt_tensor_make(dt, rank, shape, d);
}


/* Exact comparison of t's logical values (NaN matches NaN, -0 is not 0). */
static void expect_exact(const prt_tensor *t, const double *want, int n)
{
	cr_assert_eq(prt_tensor_numel(t), n);
	size_t es = pr_dtype_size(t->dtype);
	int64_t idx[2] = {0, 0};
	for (int i = 0; i < n; i++) {
		int64_t off = 0;
		for (int d = 0; d < t->rank; d++)
			off += idx[d] * t->strides[d];
		double v = pr_elem_load(t->dtype, t->data + off * (int64_t)es);
		bool same = (isnan(v) && isnan(want[i])) ||
			    (v == want[i] && signbit(v) == signbit(want[i]));
		cr_expect(same, "element %d: %.17g, expected %.17g", i, v, want[i]);
		for (int d = t->rank - 1; d >= 0; d--) {
			if (++idx[d] < t->shape[d])
				break;
			idx[d] = 0;
		}
	}
}

static void expect_bools(const uint8_t *got, const char *want)
{
	for (size_t i = 0; want[i]; i++)
		cr_expect_eq(got[i], want[i] == '1', "element %zu: %d, expected %c", i, got[i], want[i]);
}

/* ---- type promotion ---------------------------------------------------------- */

static prt_ew_operand tensor_op(prt_tensor *t) { return (prt_ew_operand){.t = t, .dtype = t->dtype}; }
static prt_ew_operand number_op(pr_dtype dt) { return (prt_ew_operand){.dtype = dt}; }

Test(ew_promotion, result_type_as_torch)
{
	uint8_t buf[16] = {0};
	prt_tensor i64 = mk(PR_I64, buf, 1, 1, 0), i32 = mk(PR_I32, buf, 1, 1, 0),
		  b = mk(PR_BOOL, buf, 1, 1, 0), f16 = mk(PR_F16, buf, 1, 1, 0),
		  bf16 = mk(PR_BF16, buf, 1, 1, 0), u8 = mk(PR_U8, buf, 1, 1, 0),
		  i8 = mk(PR_I8, buf, 1, 1, 0);
	prt_tensor i64_0 = mk(PR_I64, buf, 0, 0, 0), f64_0 = mk(PR_F64, buf, 0, 0, 0),
		  f32_0 = mk(PR_F32, buf, 0, 0, 0), u8_0 = mk(PR_U8, buf, 0, 0, 0),
		  b_0 = mk(PR_BOOL, buf, 0, 0, 0);
	struct { prt_ew_operand a, b; pr_dtype want; } cases[] = {
		{tensor_op(&i32), tensor_op(&i64_0), PR_I32},    /* same category: dims win */
		{tensor_op(&i64), tensor_op(&f64_0), PR_F64},    /* a higher category counts */
		{tensor_op(&i64), number_op(PR_F64), PR_F32},    /* a Python float: the default */
		{tensor_op(&b), number_op(PR_I64), PR_I64},
		{tensor_op(&b), number_op(PR_F64), PR_F32},
		{tensor_op(&b), tensor_op(&f64_0), PR_F64},
		{tensor_op(&u8), tensor_op(&i8), PR_I16},
		{tensor_op(&f16), tensor_op(&bf16), PR_F32},
		{tensor_op(&i8), tensor_op(&u8_0), PR_I8},
		{tensor_op(&f16), tensor_op(&f32_0), PR_F16},
		{tensor_op(&b_0), tensor_op(&i64_0), PR_I64},
		{tensor_op(&b_0), number_op(PR_F64), PR_F32},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		prt_ew_operand x[2] = {cases[i].a, cases[i].b};
		pr_dtype got = prt_ew_result_type(x, 2);
		cr_expect_eq(got, cases[i].want, "case %zu: %s, expected %s", i, pr_dtype_name(got),
			     pr_dtype_name(cases[i].want));
	}
}

/* ---- arithmetic on integers, bools, f16 and mixed dtypes ----------------------- */

Test(ew_arith, int64_is_exact_and_wraps)
{
	int64_t a[3] = {(INT64_C(1) << 53) + 1, INT64_C(1) << 62, -7}, b[3] = {0, INT64_C(1) << 62, 2};
	int64_t o[3];
	prt_rv A = V(mk(PR_I64, a, 1, 3, 0)), Bv = V(mk(PR_I64, b, 1, 3, 0)), O = V(mk(PR_I64, o, 1, 3, 0));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::add.Tensor", ab, 2, &O);
	cr_expect(o[0] == (INT64_C(1) << 53) + 1, "2^53+1 + 0 stays exact: %lld", (long long)o[0]);
	cr_expect(o[1] == INT64_MIN && o[2] == -5, "2^62 + 2^62 wraps: %lld", (long long)o[1]);
	prt_karg alpha[3] = {T(&A), T(&Bv), I(3)};
	call_ok("aten::sub.Tensor", alpha, 3, &O);
	cr_expect(o[2] == -13);
	prt_karg sc[2] = {T(&A), I(INT64_C(1) << 30)};
	call_ok("aten::mul.Scalar", sc, 2, &O);
	cr_expect(o[2] == -7 * (INT64_C(1) << 30));
	prt_karg neg[1] = {T(&A)};
	call_ok("aten::neg", neg, 1, &O);
	cr_expect(o[0] == -((INT64_C(1) << 53) + 1) && o[2] == 7);
}

Test(ew_arith, narrow_integers_wrap_in_their_own_width)
{
	int8_t a[2] = {1, 100}, o[2];
	prt_rv A = V(mk(PR_I8, a, 1, 2, 0)), O = V(mk(PR_I8, o, 1, 2, 0));
	prt_karg add[2] = {T(&A), I(1000)};   /* 1000 is -24 as i8: torch gives [-23, 76] */
	call_ok("aten::add.Scalar", add, 2, &O);
	cr_expect(o[0] == -23 && o[1] == 76, "%d %d", o[0], o[1]);
	prt_karg mul[2] = {T(&A), I(3)};
	call_ok("aten::mul.Scalar", mul, 2, &O);
	cr_expect(o[1] == 44, "100 * 3 in i8: %d", o[1]);
}

Test(ew_arith, true_division_of_integers_is_f32)
{
	int64_t a[2] = {3, -2}, b[2] = {2, 2};
	float o[2];
	prt_rv A = V(mk(PR_I64, a, 1, 2, 0)), Bv = V(mk(PR_I64, b, 1, 2, 0)), O = V(mk(PR_F32, o, 1, 2, 0));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::div.Tensor", ab, 2, &O);
	expect_exact(&O.t, (double[]){1.5, -1}, 2);
	prt_karg as[2] = {T(&A), I(0)};
	call_ok("aten::div.Scalar", as, 2, &O);
	expect_exact(&O.t, (double[]){INFINITY, -INFINITY}, 2);
}

Test(ew_arith, bool_arithmetic_and_its_refusals)
{
	uint8_t a[2] = {1, 0}, o[2];
	float fo[2];
	prt_rv A = V(mk(PR_BOOL, a, 1, 2, 0)), O = V(mk(PR_BOOL, o, 1, 2, 0)), FO = V(mk(PR_F32, fo, 1, 2, 0));
	prt_karg aa[2] = {T(&A), T(&A)};
	call_ok("aten::add.Tensor", aa, 2, &O);
	expect_bools(o, "10");
	call_ok("aten::mul.Tensor", aa, 2, &O);
	expect_bools(o, "10");
	call_ok("aten::div.Tensor", aa, 2, &FO);
	expect_exact(&FO.t, (double[]){1, NAN}, 2);
	call_refused("aten::sub.Tensor", aa, 2, &O, "bool");
	prt_karg a1[1] = {T(&A)};
	call_refused("aten::neg", a1, 1, &O, "bool");
}

Test(ew_arith, mixed_dtypes_promote_and_refuse_what_aten_refuses)
{
	uint16_t h[2];
	h[0] = pr_f16_from_double(1.5), h[1] = pr_f16_from_double(NAN);
	float tenth = 0.1f, f[2] = {2, -3};
	uint16_t ho[2];
	prt_rv H = V(mk(PR_F16, h, 1, 2, 0)), S = V(mk(PR_F32, &tenth, 0, 0, 0)),
	      HO = V(mk(PR_F16, ho, 1, 2, 0));
	prt_karg hs[2] = {T(&H), T(&S)};   /* f16 + f32 zero-dim tensor: f16 */
	call_ok("aten::add.Tensor", hs, 2, &HO);
	expect_exact(&HO.t, (double[]){1.599609375, NAN}, 2);
	uint8_t m[2] = {1, 0};
	float fo[2];
	prt_rv Fv = V(mk(PR_F32, f, 1, 2, 0)), M = V(mk(PR_BOOL, m, 1, 2, 0)), FO = V(mk(PR_F32, fo, 1, 2, 0));
	prt_karg fm[2] = {T(&Fv), T(&M)};
	call_ok("aten::mul.Tensor", fm, 2, &FO);
	expect_exact(&FO.t, (double[]){2, -0.0}, 2);
	int64_t i[2] = {3, -2}, io[2];
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), IO = {.kind = PRT_RV_TENSOR};
	prt_karg ih[2] = {T(&Iv), F(2.5)};
	pr_err *e = call_kernel("aten::add_.Scalar", ih, 2, &IO, 0, NULL);   /* i64 += 2.5 */
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "cannot be cast"), "%s", pr_err_message(e));
	pr_err_free(e);
	IO = V(mk(PR_I64, io, 1, 2, 0));
	prt_karg alpha[3] = {T(&Iv), T(&Iv), F(2.5)};
	call_refused("aten::add.Tensor", alpha, 3, &IO, "alpha");
	float f3[3] = {0};
	prt_rv F3 = V(mk(PR_F32, f3, 1, 3, 0));
	prt_karg bad[2] = {T(&Iv), T(&F3)};
	call_refused("aten::add.Tensor", bad, 2, &FO, "broadcast");
}


Test(ew_arith, div_rounding_modes_and_integer_division_by_zero)
{
	int64_t a[4] = {7, -7, 7, -7}, b[4] = {2, 2, -2, -2}, o[4];
	prt_rv A = V(mk(PR_I64, a, 1, 4, 0)), Bv = V(mk(PR_I64, b, 1, 4, 0)), O = V(mk(PR_I64, o, 1, 4, 0));
	prt_karg fl[3] = {T(&A), T(&Bv), S("floor")};
	call_ok("aten::div.Tensor_mode", fl, 3, &O);
	cr_expect(o[0] == 3 && o[1] == -4 && o[2] == -4 && o[3] == 3);
	prt_karg tr[3] = {T(&A), T(&Bv), S("trunc")};
	call_ok("aten::div.Tensor_mode", tr, 3, &O);
	cr_expect(o[0] == 3 && o[1] == -3 && o[2] == -3 && o[3] == 3);
	float f[5] = {7.5f, -7.5f, 1, -0.0f, 5}, g[5] = {2, 2, 0, 3, -0.0f}, fo[5];
	prt_rv Fv = V(mk(PR_F32, f, 1, 5, 0)), G = V(mk(PR_F32, g, 1, 5, 0)), FO = V(mk(PR_F32, fo, 1, 5, 0));
	prt_karg ffl[3] = {T(&Fv), T(&G), S("floor")};
	call_ok("aten::div.Tensor_mode", ffl, 3, &FO);
	expect_exact(&FO.t, (double[]){3, -4, INFINITY, -0.0, -INFINITY}, 5);
	prt_karg ftr[3] = {T(&Fv), T(&G), S("trunc")};
	call_ok("aten::div.Tensor_mode", ftr, 3, &FO);
	expect_exact(&FO.t, (double[]){3, -3, INFINITY, -0.0, -INFINITY}, 5);
	float o2[2];
	prt_rv A2 = V(mk(PR_I64, a, 1, 2, 0)), O2 = V(mk(PR_F32, o2, 1, 2, 0));
	prt_karg sc[3] = {T(&A2), F(2.5), S("floor")};   /* i64 // 2.5: f32 */
	call_ok("aten::div.Scalar_mode", sc, 3, &O2);
	expect_exact(&O2.t, (double[]){2, -3}, 2);
	prt_karg none[3] = {T(&A2), I(2), NONE()};   /* no mode: true division */
	call_ok("aten::div.Scalar_mode", none, 3, &O2);
	expect_exact(&O2.t, (double[]){3.5, -3.5}, 2);
	int64_t z[4] = {1, 0, 1, 1};
	prt_rv Z = V(mk(PR_I64, z, 1, 4, 0));
	prt_karg dz[3] = {T(&A), T(&Z), S("floor")};
	call_refused("aten::div.Tensor_mode", dz, 3, &O, "division by zero");
	prt_karg bad[3] = {T(&A), T(&Bv), S("round")};
	call_refused("aten::div.Tensor_mode", bad, 3, &O, "rounding_mode");
}

Test(ew_arith, rsub_is_other_minus_alpha_self)
{
	float a[2] = {1, 2}, o[2];
	prt_rv A = V(mk(PR_F32, a, 1, 2, 0)), O = V(mk(PR_F32, o, 1, 2, 0));
	prt_karg args[3] = {T(&A), I(1), I(2)};
	call_ok("aten::rsub.Scalar", args, 3, &O);
	expect_exact(&O.t, (double[]){-1, -3}, 2);
	int64_t i[2] = {1, 2}, io[2];
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), IO = V(mk(PR_I64, io, 1, 2, 0));
	prt_karg two[2] = {T(&Iv), I(10)};
	call_ok("aten::rsub.Scalar", two, 2, &IO);
	cr_expect(io[0] == 9 && io[1] == 8);
}

/* ---- sqrt, rsqrt, pow ------------------------------------------------------ */

Test(ew_math, sqrt_rsqrt_with_nan_zero_and_integers)
{
	float a[4] = {4, -1, 0, -0.0f}, o[4];
	prt_rv A = V(mk(PR_F32, a, 1, 4, 0)), O = V(mk(PR_F32, o, 1, 4, 0));
	prt_karg x[1] = {T(&A)};
	call_ok("aten::sqrt", x, 1, &O);
	expect_exact(&O.t, (double[]){2, NAN, 0, -0.0}, 4);
	call_ok("aten::rsqrt", x, 1, &O);
	expect_exact(&O.t, (double[]){0.5, NAN, INFINITY, -INFINITY}, 4);
	int64_t i[2] = {9, 2};
	float fo[2];
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), FO = V(mk(PR_F32, fo, 1, 2, 0));
	prt_karg ix[1] = {T(&Iv)};
	call_ok("aten::sqrt", ix, 1, &FO);
	expect_exact(&FO.t, (double[]){3, (float)sqrt(2)}, 2);
}

Test(ew_math, pow_overloads_on_a_transposed_input)
{
	float a[4] = {1, 3, 2, -4};   /* [[1,2],[3,-4]] stored transposed */
	float o[4];
	prt_tensor at = mk(PR_F32, a, 2, 2, 2);
	at.strides[0] = 1, at.strides[1] = 2;
	prt_rv A = V(at), O = V(mk(PR_F32, o, 2, 2, 2));
	prt_karg sq[2] = {T(&A), I(2)};
	call_ok("aten::pow.Tensor_Scalar", sq, 2, &O);
	expect_exact(&O.t, (double[]){1, 4, 9, 16}, 4);
	prt_karg half[2] = {T(&A), F(0.5)};
	call_ok("aten::pow.Tensor_Scalar", half, 2, &O);
	expect_exact(&O.t, (double[]){1, (float)sqrt(2), (float)sqrt(3), NAN}, 4);
	int64_t e[2] = {3, -2};
	prt_rv E = V(mk(PR_I64, e, 1, 2, 0));
	prt_karg tt[2] = {T(&A), T(&E)};   /* f32 ** i64 row, broadcast */
	call_ok("aten::pow.Tensor_Tensor", tt, 2, &O);
	expect_exact(&O.t, (double[]){1, 0.25, 27, 0.0625}, 4);
	prt_karg sc[2] = {F(2.5), T(&E)};
	float o2[2];
	prt_rv O2 = V(mk(PR_F32, o2, 1, 2, 0));
	call_ok("aten::pow.Scalar", sc, 2, &O2);
	expect_exact(&O2.t, (double[]){15.625, (float)0.16}, 2);
}

Test(ew_math, integer_pow_is_exact_wraps_and_refuses_negative_scalars)
{
	int64_t a[3] = {1, -1, 2}, b[3] = {-1, -3, -1}, o[3];
	prt_rv A = V(mk(PR_I64, a, 1, 3, 0)), Bv = V(mk(PR_I64, b, 1, 3, 0)), O = V(mk(PR_I64, o, 1, 3, 0));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::pow.Tensor_Tensor", ab, 2, &O);
	cr_expect(o[0] == 1 && o[1] == -1 && o[2] == 0);
	int64_t big[1] = {3}, bo[1];
	prt_rv Big = V(mk(PR_I64, big, 1, 1, 0)), BO = V(mk(PR_I64, bo, 1, 1, 0));
	prt_karg p39[2] = {T(&Big), I(39)};
	call_ok("aten::pow.Tensor_Scalar", p39, 2, &BO);
	cr_expect(bo[0] == INT64_C(4052555153018976267), "3^39 exactly: %lld", (long long)bo[0]);
	int8_t i8[1] = {3}, i8o[1];
	prt_rv I8 = V(mk(PR_I8, i8, 1, 1, 0)), I8O = V(mk(PR_I8, i8o, 1, 1, 0));
	prt_karg p5[2] = {T(&I8), I(5)};
	call_ok("aten::pow.Tensor_Scalar", p5, 2, &I8O);
	cr_expect(i8o[0] == -13, "3^5 in i8: %d", i8o[0]);
	prt_karg s2[2] = {I(2), T(&Bv)};
	call_ok("aten::pow.Scalar", s2, 2, &O);
	cr_expect(o[0] == 0 && o[2] == 0);
	prt_karg neg[2] = {T(&A), I(-1)};
	call_refused("aten::pow.Tensor_Scalar", neg, 2, &O, "negative");
	uint8_t bb[1] = {1}, bbo[1];
	prt_rv Bb = V(mk(PR_BOOL, bb, 1, 1, 0)), BBO = V(mk(PR_BOOL, bbo, 1, 1, 0));
	prt_karg bools[2] = {T(&Bb), T(&Bb)};
	call_refused("aten::pow.Tensor_Tensor", bools, 2, &BBO, "bool");
}

/* ---- comparisons, logical and bitwise ops ------------------------------------ */

Test(ew_logic, comparisons_broadcast_promote_and_handle_nan)
{
	float a[3] = {1, NAN, 3};
	int64_t b[2] = {1, 3};   /* a column [2,1] against a row [3] */
	uint8_t o[6];
	prt_rv A = V(mk(PR_F32, a, 1, 3, 0)), Bv = V(mk(PR_I64, b, 2, 2, 1)), O = V(mk(PR_BOOL, o, 2, 2, 3));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::eq.Tensor", ab, 2, &O);
	expect_bools(o, "100001");
	call_ok("aten::ne.Tensor", ab, 2, &O);
	expect_bools(o, "011110");
	call_ok("aten::lt.Tensor", ab, 2, &O);
	expect_bools(o, "000100");
	call_ok("aten::le.Tensor", ab, 2, &O);
	expect_bools(o, "100101");
	call_ok("aten::gt.Tensor", ab, 2, &O);
	expect_bools(o, "001000");
	call_ok("aten::ge.Tensor", ab, 2, &O);
	expect_bools(o, "101001");
}

Test(ew_logic, scalar_comparisons_compare_in_the_promoted_type)
{
	int64_t i[3] = {2, 3, (INT64_C(1) << 53) + 1};
	uint8_t o[3];
	prt_rv Iv = V(mk(PR_I64, i, 1, 3, 0)), O = V(mk(PR_BOOL, o, 1, 3, 0));
	prt_karg f[2] = {T(&Iv), F(2.5)};   /* in f32: 2 == 2.5 is false, not truncated */
	call_ok("aten::eq.Scalar", f, 2, &O);
	expect_bools(o, "000");
	call_ok("aten::ge.Scalar", f, 2, &O);
	expect_bools(o, "011");
	prt_karg big[2] = {T(&Iv), I(INT64_C(1) << 53)};   /* exact in int64 */
	call_ok("aten::eq.Scalar", big, 2, &O);
	expect_bools(o, "000");
	float x[2] = {0.1f, 0.2f};
	prt_rv X = V(mk(PR_F32, x, 1, 2, 0)), O2 = V(mk(PR_BOOL, o, 1, 2, 0));
	prt_karg tenth[2] = {T(&X), F(0.1)};   /* 0.1 rounds to f32 first, as ATen does */
	call_ok("aten::eq.Scalar", tenth, 2, &O2);
	expect_bools(o, "10");
	uint8_t m[2] = {1, 0};
	prt_rv M = V(mk(PR_BOOL, m, 1, 2, 0));
	prt_karg mf[2] = {T(&M), B(false)};
	call_ok("aten::eq.Scalar", mf, 2, &O2);
	expect_bools(o, "01");
}

Test(ew_logic, logical_ops_take_any_dtype_nan_is_true)
{
	float a[3] = {1.5f, NAN, 0};
	int64_t b[3] = {3, 0, 1};
	uint8_t o[3];
	prt_rv A = V(mk(PR_F32, a, 1, 3, 0)), Bv = V(mk(PR_I64, b, 1, 3, 0)), O = V(mk(PR_BOOL, o, 1, 3, 0));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::logical_and", ab, 2, &O);
	expect_bools(o, "100");
	call_ok("aten::logical_or", ab, 2, &O);
	expect_bools(o, "111");
	call_ok("aten::logical_xor", ab, 2, &O);
	expect_bools(o, "011");
	prt_karg a1[1] = {T(&A)};
	call_ok("aten::logical_not", a1, 1, &O);
	expect_bools(o, "001");
}

Test(ew_logic, bitwise_ops_on_bool_and_integers)
{
	uint8_t m[4] = {1, 0, 1, 1}, n[4] = {1, 1, 0, 9}, o[4];
	prt_tensor mt = mk(PR_BOOL, m, 1, 2, 0);   /* every other element: [1, 1] */
	mt.strides[0] = 2;
	prt_rv M = V(mt), N = V(mk(PR_BOOL, n, 1, 2, 0)), O = V(mk(PR_BOOL, o, 1, 2, 0));
	prt_karg mn[2] = {T(&M), T(&N)};
	call_ok("aten::bitwise_and.Tensor", mn, 2, &O);
	expect_bools(o, "11");
	call_ok("aten::bitwise_xor.Tensor", mn, 2, &O);
	expect_bools(o, "00");
	prt_karg m1[1] = {T(&N)};
	call_ok("aten::bitwise_not", m1, 1, &O);   /* ~True is False, not -2 */
	expect_bools(o, "00");
	int64_t i[2] = {3, -2}, io[2];
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), IO = V(mk(PR_I64, io, 1, 2, 0));
	prt_karg i1[1] = {T(&Iv)};
	call_ok("aten::bitwise_not", i1, 1, &IO);
	cr_expect(io[0] == -4 && io[1] == 1);
	prt_karg ib[2] = {T(&Iv), T(&N)};
	call_ok("aten::bitwise_and.Tensor", ib, 2, &IO);
	cr_expect(io[0] == 1 && io[1] == 0);
	prt_karg ix[2] = {T(&Iv), I(3)};
	call_ok("aten::bitwise_xor.Scalar", ix, 2, &IO);
	cr_expect(io[0] == 0 && io[1] == -3);
	prt_karg bo[2] = {T(&N), I(3)};   /* bool & 3: i64 */
	call_ok("aten::bitwise_or.Scalar", bo, 2, &IO);
	cr_expect(io[0] == 3 && io[1] == 3);
	float f[2] = {1, 2};
	prt_rv Fv = V(mk(PR_F32, f, 1, 2, 0));
	prt_karg ff[2] = {T(&Fv), T(&Fv)};
	call_refused("aten::bitwise_and.Tensor", ff, 2, &O, "not f32");
}

/* ---- where, masked_fill --------------------------------------------------- */

Test(ew_select, where_broadcasts_condition_and_operands)
{
	uint8_t c[2] = {1, 0};
	float x[6] = {1, 4, 2, 5, 3, 6}, nine = 9, o[6];   /* x = [[1,2,3],[4,5,6]], transposed */
	prt_tensor xt = mk(PR_F32, x, 2, 2, 3);
	xt.strides[0] = 1, xt.strides[1] = 2;
	prt_rv C = V(mk(PR_BOOL, c, 2, 2, 1)), X = V(xt), N = V(mk(PR_F32, &nine, 0, 0, 0)),
	      O = V(mk(PR_F32, o, 2, 2, 3));
	prt_karg args[3] = {T(&C), T(&X), T(&N)};
	call_ok("aten::where.self", args, 3, &O);
	expect_exact(&O.t, (double[]){1, 2, 3, 9, 9, 9}, 6);
	int64_t i[2] = {3, -2};
	float fo[2];
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), C1 = V(mk(PR_BOOL, c, 1, 2, 0)), FO = V(mk(PR_F32, fo, 1, 2, 0));
	prt_karg so[3] = {T(&C1), T(&Iv), F(2.5)};   /* i64 with a float number: f32 */
	call_ok("aten::where.ScalarOther", so, 3, &FO);
	expect_exact(&FO.t, (double[]){3, 2.5}, 2);
	int64_t io[2];
	prt_rv IO = V(mk(PR_I64, io, 1, 2, 0));
	prt_karg ss[3] = {T(&C1), I(1), I(0)};
	call_ok("aten::where.Scalar", ss, 3, &IO);
	cr_expect(io[0] == 1 && io[1] == 0);
	prt_rv CU = V(mk(PR_U8, c, 1, 2, 0));
	prt_karg u8[3] = {T(&CU), T(&Iv), T(&Iv)};
	call_ok("aten::where.self", u8, 3, &IO);
	prt_karg bad[3] = {T(&Iv), T(&Iv), T(&Iv)};
	call_refused("aten::where.self", bad, 3, &IO, "bool");
	call_refused("aten::where.ScalarOther", so, 3, &IO, "cannot be cast");
}

Test(ew_select, masked_fill_forms)
{
	int64_t i[2] = {3, -2}, io[2];
	uint8_t m[2] = {1, 0};
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), M = V(mk(PR_BOOL, m, 1, 2, 0)), IO = V(mk(PR_I64, io, 1, 2, 0));
	prt_karg f[3] = {T(&Iv), T(&M), F(2.5)};   /* truncated to self's dtype */
	call_ok("aten::masked_fill.Scalar", f, 3, &IO);
	cr_expect(io[0] == 2 && io[1] == -2);
	int64_t seven = 7;
	prt_rv S = V(mk(PR_I64, &seven, 0, 0, 0));
	prt_karg t[3] = {T(&Iv), T(&M), T(&S)};
	call_ok("aten::masked_fill.Tensor", t, 3, &IO);
	cr_expect(io[0] == 7 && io[1] == -2);
	float z[2] = {0, 0}, zo[4];   /* zeros [2,1] with a mask [1,2]: [2,2] */
	prt_rv Z = V(mk(PR_F32, z, 2, 2, 1)), M2 = V(mk(PR_BOOL, m, 2, 1, 2)), ZO = V(mk(PR_F32, zo, 2, 2, 2));
	prt_karg bz[3] = {T(&Z), T(&M2), F(-1e9)};
	call_ok("aten::masked_fill.Scalar", bz, 3, &ZO);
	expect_exact(&ZO.t, (double[]){-1e9, 0, -1e9, 0}, 4);
	prt_karg nan[3] = {T(&Iv), T(&M), F(NAN)};
	call_refused("aten::masked_fill.Scalar", nan, 3, &IO, "cannot be converted");
	prt_rv MU = V(mk(PR_U8, m, 1, 2, 0));
	prt_karg u8[3] = {T(&Iv), T(&MU), I(1)};
	call_refused("aten::masked_fill.Scalar", u8, 3, &IO, "bool");
	int64_t two[2] = {7, 7};
	prt_rv S2 = V(mk(PR_I64, two, 1, 2, 0));
	prt_karg t2[3] = {T(&Iv), T(&M), T(&S2)};
	call_refused("aten::masked_fill.Tensor", t2, 3, &IO, "0-dim");
}

Test(ew_select, masked_fill_in_place_on_a_strided_view)
{
	float a[4] = {1, 2, 3, 4};
	uint8_t m[2] = {0, 1};
	prt_tensor every_other = mk(PR_F32, a, 1, 2, 0);
	every_other.strides[0] = 2;
	prt_rv A = V(every_other), M = V(mk(PR_BOOL, m, 1, 2, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg args[3] = {T(&A), T(&M), F(-5)};
	pr_err *e = call_kernel("aten::masked_fill_.Scalar", args, 3, &O, 0, NULL);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	cr_expect(a[0] == 1 && a[1] == 2 && a[2] == -5 && a[3] == 4, "only a[2] is written");
}

/* ---- maximum, minimum, clamp ------------------------------------------------------ */

Test(ew_clamp, number_bounds_nan_and_crossed_bounds)
{
	float x[4] = {NAN, 3, 0.5f, -2}, o[4];   /* [-2, 0.5, 3, NaN] read backwards */
	prt_tensor xt = mk(PR_F32, x + 3, 1, 4, 0);
	xt.strides[0] = -1;
	prt_rv X = V(xt), O = V(mk(PR_F32, o, 1, 4, 0));
	prt_karg both[3] = {T(&X), I(-1), I(1)};
	call_ok("aten::clamp", both, 3, &O);
	expect_exact(&O.t, (double[]){-1, 0.5, 1, NAN}, 4);
	prt_karg crossed[3] = {T(&X), F(2), F(1)};   /* min > max gives max */
	call_ok("aten::clamp", crossed, 3, &O);
	expect_exact(&O.t, (double[]){1, 1, 1, NAN}, 4);
	prt_karg nan_lo[3] = {T(&X), F(NAN), NONE()};   /* a NaN bound: every element NaN */
	call_ok("aten::clamp", nan_lo, 3, &O);
	expect_exact(&O.t, (double[]){NAN, NAN, NAN, NAN}, 4);
	prt_karg hi_only[3] = {T(&X), NONE(), F(0)};
	call_ok("aten::clamp", hi_only, 3, &O);
	expect_exact(&O.t, (double[]){-2, 0, 0, NAN}, 4);
	prt_karg lo[2] = {T(&X), F(0.75)};
	call_ok("aten::clamp_min", lo, 2, &O);
	expect_exact(&O.t, (double[]){0.75, 0.75, 3, NAN}, 4);
	call_ok("aten::clamp_max", lo, 2, &O);
	expect_exact(&O.t, (double[]){-2, 0.5, 0.75, NAN}, 4);
	prt_karg none[3] = {T(&X), NONE(), NONE()};
	call_refused("aten::clamp", none, 3, &O, "at least one of min and max");
}

Test(ew_clamp, tensor_bounds_broadcast)
{
	float x[6] = {1, 2, 3, 4, 5, 6}, lo[3] = {2, NAN, 0}, hi = 5, o[6];
	prt_rv X = V(mk(PR_F32, x, 2, 2, 3)), L = V(mk(PR_F32, lo, 1, 3, 0)),
	      H = V(mk(PR_F32, &hi, 0, 0, 0)), O = V(mk(PR_F32, o, 2, 2, 3));
	prt_karg args[3] = {T(&X), T(&L), T(&H)};
	call_ok("aten::clamp.Tensor", args, 3, &O);
	expect_exact(&O.t, (double[]){2, NAN, 3, 4, NAN, 5}, 6);
	int64_t big[2] = {3, 1};   /* [2] does not broadcast with [2, 3] */
	prt_rv Bad = V(mk(PR_I64, big, 1, 2, 0));
	prt_karg bad[3] = {T(&X), T(&Bad), NONE()};
	call_refused("aten::clamp.Tensor", bad, 3, &O, "broadcast");
}

Test(ew_clamp, integers_promote_and_compare_bounds_at_full_width)
{
	int64_t i[3] = {-5, 0, 7}, io[3];
	float fo[3];
	prt_rv Iv = V(mk(PR_I64, i, 1, 3, 0)), IO = V(mk(PR_I64, io, 1, 3, 0)),
	      FO = V(mk(PR_F32, fo, 1, 3, 0));
	prt_karg ints[3] = {T(&Iv), I(-1), I(2)};
	call_ok("aten::clamp", ints, 3, &IO);
	cr_expect(io[0] == -1 && io[1] == 0 && io[2] == 2);
	prt_karg floats[3] = {T(&Iv), F(-1.5), F(2.5)};   /* a float bound: f32 */
	call_ok("aten::clamp", floats, 3, &FO);
	expect_exact(&FO.t, (double[]){-1.5, 0, 2.5}, 3);
	float half = 1.5f;
	prt_rv Hf = V(mk(PR_F32, &half, 0, 0, 0));
	prt_karg zero_dim[2] = {T(&Iv), T(&Hf)};
	call_ok("aten::clamp_min.Tensor", zero_dim, 2, &FO);
	expect_exact(&FO.t, (double[]){1.5, 1.5, 7}, 3);
	int8_t s[3] = {100, -100, 5}, so[3];
	prt_rv S = V(mk(PR_I8, s, 1, 3, 0)), SO = V(mk(PR_I8, so, 1, 3, 0));
	prt_karg wide[3] = {T(&S), I(-300), I(50)};   /* -300 is not wrapped to i8 */
	call_ok("aten::clamp", wide, 3, &SO);
	cr_expect(so[0] == 50 && so[1] == -100 && so[2] == 5, "%d %d %d", so[0], so[1], so[2]);
	prt_karg above[3] = {T(&S), I(200), I(300)};
	call_refused("aten::clamp", above, 3, &SO, "lower bound 200 is outside the range of i8");
	uint8_t u = 5, uo;
	prt_rv U = V(mk(PR_U8, &u, 1, 1, 0)), UO = V(mk(PR_U8, &uo, 1, 1, 0));
	prt_karg below[2] = {T(&U), I(-1)};
	call_refused("aten::clamp_max", below, 2, &UO, "upper bound -1 is outside the range of u8");
}

Test(ew_clamp, bool_and_in_place_refusals)
{
	uint8_t b[2] = {1, 0}, bo[2];
	prt_rv Bv = V(mk(PR_BOOL, b, 1, 2, 0)), BO = V(mk(PR_BOOL, bo, 1, 2, 0));
	prt_karg num[2] = {T(&Bv), B(true)};
	call_refused("aten::clamp_min", num, 2, &BO, "not implemented for bool");
	uint8_t f[2] = {0, 0};
	prt_rv Fv = V(mk(PR_BOOL, f, 1, 2, 0));
	prt_karg ten[3] = {T(&Bv), T(&Fv), NONE()};   /* tensor bounds take bools */
	call_ok("aten::clamp.Tensor", ten, 3, &BO);
	expect_bools(bo, "10");
	int64_t i[2] = {-5, 3};
	prt_rv Iv = V(mk(PR_I64, i, 1, 2, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg half[3] = {T(&Iv), F(0.5), NONE()};
	pr_err *e = call_kernel("aten::clamp_", half, 3, &O, 0, NULL);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "cannot be cast"), "%s", pr_err_message(e));
	pr_err_free(e);
	prt_karg one[3] = {T(&Iv), I(0), NONE()};
	e = call_kernel("aten::clamp_", one, 3, &O, 0, NULL);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	cr_expect(i[0] == 0 && i[1] == 3);
}

Test(ew_clamp, f16_rounds_bounds_and_result)
{
	uint16_t h[3] = {pr_f16_from_double(1), pr_f16_from_double(5), pr_f16_from_double(0.1)}, ho[3];
	prt_rv H = V(mk(PR_F16, h, 1, 3, 0)), HO = V(mk(PR_F16, ho, 1, 3, 0));
	prt_karg args[3] = {T(&H), F(0.1), F(2.3)};
	call_ok("aten::clamp", args, 3, &HO);
	expect_exact(&HO.t, (double[]){1, 2.30078125, 0.0999755859375}, 3);
}

Test(ew_clamp, maximum_and_minimum_propagate_nan_and_promote)
{
	float a[2] = {1, NAN}, b[2] = {NAN, 0}, o[2];
	prt_rv A = V(mk(PR_F32, a, 1, 2, 0)), Bv = V(mk(PR_F32, b, 1, 2, 0)), O = V(mk(PR_F32, o, 1, 2, 0));
	prt_karg ab[2] = {T(&A), T(&Bv)};
	call_ok("aten::maximum", ab, 2, &O);
	expect_exact(&O.t, (double[]){NAN, NAN}, 2);
	call_ok("aten::minimum", ab, 2, &O);
	expect_exact(&O.t, (double[]){NAN, NAN}, 2);
	int32_t p[2] = {1, 5};
	int64_t q[2] = {3, 2}, r[2];
	prt_rv P = V(mk(PR_I32, p, 1, 2, 0)), Q = V(mk(PR_I64, q, 1, 2, 0)), R = V(mk(PR_I64, r, 1, 2, 0));
	prt_karg pq[2] = {T(&P), T(&Q)};
	call_ok("aten::maximum", pq, 2, &R);
	cr_expect(r[0] == 3 && r[1] == 5);
	call_ok("aten::minimum", pq, 2, &R);
	cr_expect(r[0] == 1 && r[1] == 2);
}

/* ---- _to_copy: casts ---------------------------------------------------------- */

Test(ew_cast, float_to_integer_as_pytorch_on_x86_64)
{
	float a[6] = {NAN, 1e20f, -1e20f, -1.5f, 300.7f, -200.5f};
	prt_rv A = V(mk(PR_F32, a, 1, 6, 0));
	prt_karg x[1] = {T(&A)};
	struct { pr_dtype t; double want[6]; } cases[] = {
		{PR_I64, {(double)INT64_MIN, (double)INT64_MIN, (double)INT64_MIN, -1, 300, -200}},
		{PR_I32, {INT32_MIN, INT32_MIN, INT32_MIN, -1, 300, -200}},
		{PR_I16, {0, 0, 0, -1, 300, -200}},
		{PR_I8, {0, 0, 0, -1, 44, 56}},
		{PR_U8, {0, 0, 0, 255, 44, 56}},
		{PR_BOOL, {1, 1, 1, 1, 1, 1}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t o[6];
		prt_rv O = V(mk(cases[i].t, o, 1, 6, 0));
		call_ok("aten::_to_copy", x, 1, &O);
		expect_exact(&O.t, cases[i].want, 6);
	}
}

Test(ew_cast, integers_wrap_floats_round_bools_are_nonzero)
{
	int64_t a[3] = {300, -1, (INT64_C(1) << 40) + 5};
	prt_rv A = V(mk(PR_I64, a, 1, 3, 0));
	prt_karg x[1] = {T(&A)};
	uint8_t u[3];
	int8_t s[3];
	int32_t w[3];
	prt_rv U = V(mk(PR_U8, u, 1, 3, 0)), S = V(mk(PR_I8, s, 1, 3, 0)), W = V(mk(PR_I32, w, 1, 3, 0));
	call_ok("aten::_to_copy", x, 1, &U);
	call_ok("aten::_to_copy", x, 1, &S);
	call_ok("aten::_to_copy", x, 1, &W);
	cr_expect(u[0] == 44 && u[1] == 255 && u[2] == 5);
	cr_expect(s[0] == 44 && s[1] == -1 && s[2] == 5);
	cr_expect(w[0] == 300 && w[1] == -1 && w[2] == 5);
	int64_t big[1] = {(INT64_C(1) << 53) + 1};
	float f[1];
	prt_rv Big = V(mk(PR_I64, big, 1, 1, 0)), Fo = V(mk(PR_F32, f, 1, 1, 0));
	prt_karg bx[1] = {T(&Big)};
	call_ok("aten::_to_copy", bx, 1, &Fo);
	cr_expect(f[0] == 9007199254740992.0f);
	float g[4] = {70000, 1e-8f, 0.1f, -0.0f};
	uint16_t h[4];
	prt_rv G = V(mk(PR_F32, g, 1, 4, 0)), Hh = V(mk(PR_F16, h, 1, 4, 0));
	prt_karg gx[1] = {T(&G)};
	call_ok("aten::_to_copy", gx, 1, &Hh);
	expect_exact(&Hh.t, (double[]){INFINITY, 0, 0.0999755859375, -0.0}, 4);
	float r[4] = {1.00390625f, 1.01171875f, 3.0e38f, -0.0f};   /* ties go to even */
	uint16_t bf[4], bh[4];
	prt_rv R = V(mk(PR_F32, r, 1, 4, 0)), BF = V(mk(PR_BF16, bf, 1, 4, 0)), BH = V(mk(PR_F16, bh, 1, 4, 0));
	prt_karg rx[1] = {T(&R)}, bfx[1] = {T(&BF)};
	call_ok("aten::_to_copy", rx, 1, &BF);
	expect_exact(&BF.t, (double[]){1, 1.015625, 3.00405527047391e+38, -0.0}, 4);
	call_ok("aten::_to_copy", bfx, 1, &BH);   /* bf16 -> f16: out of range is inf */
	expect_exact(&BH.t, (double[]){1, 1.015625, INFINITY, -0.0}, 4);
	uint8_t b[4] = {1, 0, 1, 1};   /* a transposed bool [[1,1],[0,1]] to f32 */
	float bo[4];
	prt_tensor bt = mk(PR_BOOL, b, 2, 2, 2);
	bt.strides[0] = 1, bt.strides[1] = 2;
	prt_rv Bt = V(bt), BO = V(mk(PR_F32, bo, 2, 2, 2));
	prt_karg bbx[1] = {T(&Bt)};
	call_ok("aten::_to_copy", bbx, 1, &BO);
	expect_exact(&BO.t, (double[]){1, 1, 0, 1}, 4);
}

Test(ew_cast, assert_tensor_metadata_checks_the_dtype)
{
	float a[1] = {0};
	prt_rv A = V(mk(PR_F32, a, 1, 1, 0)), O = {.kind = PRT_RV_NONE};
	prt_karg ok[4] = {T(&A), NONE(), NONE(), I(6)};
	call_ok("aten::_assert_tensor_metadata", ok, 4, &O);
	prt_karg none[1] = {T(&A)};
	call_ok("aten::_assert_tensor_metadata", none, 1, &O);
	prt_karg bad[4] = {T(&A), NONE(), NONE(), I(11)};
	call_refused("aten::_assert_tensor_metadata", bad, 4, &O, "asserts bool");
	prt_karg unknown[4] = {T(&A), NONE(), NONE(), I(9)};
	call_refused("aten::_assert_tensor_metadata", unknown, 4, &O, "dtype code 9");
}

Test(ew_registry, every_op_has_a_host_kernel)
{
	const char *ops[] = {
		"aten::sqrt", "aten::rsqrt", "aten::abs", "aten::pow.Tensor_Scalar",
		"aten::pow.Tensor_Tensor", "aten::pow.Scalar", "aten::eq.Tensor", "aten::eq.Scalar",
		"aten::ne.Tensor", "aten::ne.Scalar", "aten::lt.Tensor", "aten::lt.Scalar",
		"aten::le.Tensor", "aten::le.Scalar", "aten::gt.Tensor", "aten::gt.Scalar",
		"aten::ge.Tensor", "aten::ge.Scalar", "aten::logical_and", "aten::logical_or",
		"aten::logical_xor", "aten::logical_not", "aten::bitwise_and.Tensor",
		"aten::bitwise_and.Scalar", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar",
		"aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar", "aten::bitwise_not",
		"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther",
		"aten::where.Scalar", "aten::masked_fill.Scalar", "aten::masked_fill.Tensor",
		"aten::masked_fill_.Scalar", "aten::masked_fill_.Tensor", "aten::_to_copy",
		"aten::_assert_tensor_metadata", "aten::div.Tensor_mode", "aten::div.Scalar_mode",
		"aten::rsub.Scalar", "aten::maximum", "aten::minimum", "aten::clamp",
		"aten::clamp.Tensor", "aten::clamp_", "aten::clamp_.Tensor", "aten::clamp_min",
		"aten::clamp_min.Tensor", "aten::clamp_min_", "aten::clamp_min_.Tensor",
		"aten::clamp_max", "aten::clamp_max.Tensor", "aten::clamp_max_",
		"aten::clamp_max_.Tensor",
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		const prt_kernel *k = prt_kernel_find(ops[i]);
		cr_expect(k && k->host, "%s", ops[i]);
	}
}
