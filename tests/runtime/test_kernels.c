/* Host kernels (issue 6): each against a small hand-computed result, with
 * non-contiguous inputs (transposed or strided views) where the layout
 * matters. Kernels are called the way the executor calls them: looked up by
 * op name, a prt_kctx with resolved arguments and the result slot. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_harness.h"
#include "rt.h"

static prt_tensor mk(pr_dtype dt, void *d, int rank, int64_t s0, int64_t s1, int64_t s2)
{
	int64_t shape[3] = {s0, s1, s2};
	return prt_tensor_make(dt, rank, shape, d);
}
#define F32(d, ...) mk(PR_F32, d, __VA_ARGS__)

/* The 2x3 tensor [[1,2,3],[4,5,6]] stored transposed: bytes 1,4,2,5,3,6. */
static float tbytes[6] = {1, 4, 2, 5, 3, 6};
static prt_tensor transposed23(void)
{
	prt_tensor t = F32(tbytes, 2, 2, 3, 0);
	t.strides[0] = 1, t.strides[1] = 2;
	return t;
}


/* ---- elementwise -------------------------------------------------------------- */

Test(kernels, add_tensor_broadcasts_a_row_over_a_transposed_input_with_alpha)
{
	float b[3] = {10, 20, 30}, o[6];
	prt_rv a = V(transposed23()), bb = V(F32(b, 1, 3, 0, 0)), out = V(F32(o, 2, 2, 3, 0));
	prt_karg args[3] = {T(&a), T(&bb), I(2)};
	call_ok("aten::add.Tensor", args, 3, &out);
	double want[6] = {21, 42, 63, 24, 45, 66};
	expect_vals(&out.t, want, 6);
}

Test(kernels, sub_mul_div_and_scalar_forms)
{
	float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1}, o[4];
	prt_rv A = V(F32(a, 1, 4, 0, 0)), B = V(F32(b, 1, 4, 0, 0)), O = V(F32(o, 1, 4, 0, 0));
	prt_karg ab[2] = {T(&A), T(&B)};
	call_ok("aten::sub.Tensor", ab, 2, &O);
	expect_vals(&O.t, (double[]){-3, -1, 1, 3}, 4);
	call_ok("aten::mul.Tensor", ab, 2, &O);
	expect_vals(&O.t, (double[]){4, 6, 6, 4}, 4);
	call_ok("aten::div.Tensor", ab, 2, &O);
	expect_vals(&O.t, (double[]){0.25, 2.0 / 3, 1.5, 4}, 4);
	prt_karg as[2] = {T(&A), F(0.5)};
	call_ok("aten::mul.Scalar", as, 2, &O);
	expect_vals(&O.t, (double[]){0.5, 1, 1.5, 2}, 4);
	call_ok("aten::add.Scalar", as, 2, &O);
	expect_vals(&O.t, (double[]){1.5, 2.5, 3.5, 4.5}, 4);
	call_ok("aten::div.Scalar", as, 2, &O);
	expect_vals(&O.t, (double[]){2, 4, 6, 8}, 4);
	prt_karg as3[3] = {T(&A), I(1), I(3)};
	call_ok("aten::sub.Scalar", as3, 3, &O);
	expect_vals(&O.t, (double[]){-2, -1, 0, 1}, 4);
}

Test(kernels, unary_ops_on_known_points)
{
	float a[3] = {0, 1, -2}, o[3];
	prt_rv A = V(F32(a, 1, 3, 0, 0)), O = V(F32(o, 1, 3, 0, 0));
	prt_karg x[1] = {T(&A)};
	call_ok("aten::neg", x, 1, &O);
	expect_vals(&O.t, (double[]){0, -1, 2}, 3);
	call_ok("aten::relu", x, 1, &O);
	expect_vals(&O.t, (double[]){0, 1, 0}, 3);
	call_ok("aten::sin", x, 1, &O);
	expect_vals(&O.t, (double[]){0, 0.8414710, -0.9092974}, 3);
	call_ok("aten::cos", x, 1, &O);
	expect_vals(&O.t, (double[]){1, 0.5403023, -0.4161468}, 3);
	call_ok("aten::exp", x, 1, &O);
	expect_vals(&O.t, (double[]){1, 2.7182818, 0.1353353}, 3);
	call_ok("aten::tanh", x, 1, &O);
	expect_vals(&O.t, (double[]){0, 0.7615942, -0.9640276}, 3);
	call_ok("aten::sigmoid", x, 1, &O);
	expect_vals(&O.t, (double[]){0.5, 0.7310586, 0.1192029}, 3);
	call_ok("aten::gelu", x, 1, &O);
	expect_vals(&O.t, (double[]){0, 0.8413447, -0.0455003}, 3);
	prt_karg xt[2] = {T(&A), S("tanh")};
	call_ok("aten::gelu", xt, 2, &O);
	expect_vals(&O.t, (double[]){0, 0.8411920, -0.0454023}, 3);
}

Test(kernels, in_place_relu_add_mul_write_a_strided_view)
{
	float a[6] = {-1, 9, 2, 9, -3, 9}, b[3] = {1, 1, 1};
	prt_tensor every_other = F32(a, 1, 3, 0, 0);
	every_other.strides[0] = 2;
	prt_rv A = V(every_other), B = V(F32(b, 1, 3, 0, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg x[1] = {T(&A)};
	call_ok_as("aten::relu_", x, 1, &O, 0);
	cr_expect(O.t.data == A.t.data && O.t.strides[0] == 2, "the result is self");
	cr_expect(a[0] == 0 && a[2] == 2 && a[4] == 0 && a[1] == 9 && a[3] == 9, "only the view changed");
	prt_karg ab[3] = {T(&A), T(&B), I(3)};
	call_ok_as("aten::add_.Tensor", ab, 3, &O, 0);
	cr_expect(a[0] == 3 && a[2] == 5 && a[4] == 3 && a[5] == 9);
	prt_karg am[2] = {T(&A), F(2)};
	call_ok_as("aten::mul_.Scalar", am, 2, &O, 0);
	cr_expect(a[0] == 6 && a[2] == 10 && a[4] == 6 && a[1] == 9);
	prt_karg amt[2] = {T(&A), T(&B)};
	call_ok_as("aten::mul_.Tensor", amt, 2, &O, 0);
	cr_expect(a[0] == 6);
}

Test(kernels, other_dtypes_f64_and_i64)
{
	double a[2] = {1.5, -2}, o[2];
	int64_t ia[2] = {7, -3}, io[2];
	prt_rv A = V(mk(PR_F64, a, 1, 2, 0, 0)), O = V(mk(PR_F64, o, 1, 2, 0, 0));
	prt_karg x[2] = {T(&A), T(&A)};
	call_ok("aten::add.Tensor", x, 2, &O);
	cr_expect(o[0] == 3 && o[1] == -4);
	prt_rv IA = V(mk(PR_I64, ia, 1, 2, 0, 0)), IO = V(mk(PR_I64, io, 1, 2, 0, 0));
	prt_karg y[2] = {T(&IA), I(2)};
	call_ok("aten::mul.Scalar", y, 2, &IO);
	cr_expect(io[0] == 14 && io[1] == -6);
}

Test(kernels, broadcast_mismatch_is_an_error)
{
	float a[2] = {0}, b[3] = {0}, o[2];
	prt_rv A = V(F32(a, 1, 2, 0, 0)), B = V(F32(b, 1, 3, 0, 0)), O = V(F32(o, 1, 2, 0, 0));
	prt_karg ab[2] = {T(&A), T(&B)};
	pr_err *e = call_kernel("aten::add.Tensor", ab, 2, &O, -1, NULL);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "broadcast"), "%s", pr_err_message(e));
	pr_err_free(e);
}

/* ---- matrix products --------------------------------------------------------------- */

Test(kernels, mm_with_a_transposed_operand)
{
	float b[6] = {1, 0, 0, 1, 1, 1}, o[4];   /* [3,2] */
	prt_rv A = V(transposed23()), B = V(F32(b, 2, 3, 2, 0)), O = V(F32(o, 2, 2, 2, 0));
	prt_karg ab[2] = {T(&A), T(&B)};
	call_ok("aten::mm", ab, 2, &O);
	/* [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] */
	expect_vals(&O.t, (double[]){4, 5, 10, 11}, 4);
}

Test(kernels, addmm_with_broadcast_bias_beta_alpha)
{
	float bias[2] = {1, 2}, b[6] = {1, 0, 0, 1, 1, 1}, o[4];
	prt_rv Bi = V(F32(bias, 1, 2, 0, 0)), A = V(transposed23()), B = V(F32(b, 2, 3, 2, 0)),
	      O = V(F32(o, 2, 2, 2, 0));
	prt_karg args[5] = {T(&Bi), T(&A), T(&B), I(2), F(0.5)};
	call_ok("aten::addmm", args, 5, &O);
	expect_vals(&O.t, (double[]){2 + 2, 4 + 2.5, 2 + 5, 4 + 5.5}, 4);
}

Test(kernels, linear_with_bias_over_a_batch)
{
	float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 0, 1, 1}, bias[2] = {10, 20}, o[4];
	prt_rv X = V(F32(x, 2, 2, 3, 0)), W = V(F32(w, 2, 2, 3, 0)), B = V(F32(bias, 1, 2, 0, 0)),
	      O = V(F32(o, 2, 2, 2, 0));
	prt_karg args[3] = {T(&X), T(&W), T(&B)};
	call_ok("aten::linear", args, 3, &O);
	expect_vals(&O.t, (double[]){11, 25, 14, 31}, 4);
	prt_karg nob[3] = {T(&X), T(&W), NONE()};
	call_ok("aten::linear", nob, 3, &O);
	expect_vals(&O.t, (double[]){1, 5, 4, 11}, 4);
}

Test(kernels, bmm_two_batches)
{
	float a[8] = {1, 2, 3, 4, 1, 0, 0, 1}, b[8] = {1, 1, 1, 1, 5, 6, 7, 8}, o[8];
	prt_rv A = V(F32(a, 3, 2, 2, 2)), B = V(F32(b, 3, 2, 2, 2)), O = V(F32(o, 3, 2, 2, 2));
	prt_karg ab[2] = {T(&A), T(&B)};
	call_ok("aten::bmm", ab, 2, &O);
	expect_vals(&O.t, (double[]){3, 3, 7, 7, 5, 6, 7, 8}, 8);
}

/* ---- softmax, reductions, norms ----------------------------------------------------- */

Test(kernels, softmax_along_each_dim)
{
	float a[4] = {0, (float)log(3.0), 0, 0}, o[4];
	prt_rv A = V(F32(a, 2, 2, 2, 0)), O = V(F32(o, 2, 2, 2, 0));
	prt_karg d1[3] = {T(&A), I(1), I(0)};
	call_ok("aten::_softmax", d1, 3, &O);
	expect_vals(&O.t, (double[]){0.25, 0.75, 0.5, 0.5}, 4);
	prt_karg d0[2] = {T(&A), I(0)};
	call_ok("aten::softmax.int", d0, 2, &O);
	expect_vals(&O.t, (double[]){0.5, 0.75, 0.5, 0.25}, 4);
}

Test(kernels, sum_and_mean_over_dims_of_a_transposed_input)
{
	float o2[2], o3[3], o1[1];
	prt_rv A = V(transposed23());
	prt_karg d1[1] = {I(1)}, d0[1] = {I(-2)};
	prt_rv O2 = V(F32(o2, 2, 2, 1, 0));
	prt_karg s1[3] = {T(&A), L(1, d1), (prt_karg){.kind = PR_ARG_BOOL, .b = true}};
	call_ok("aten::sum.dim_IntList", s1, 3, &O2);
	expect_vals(&O2.t, (double[]){6, 15}, 2);
	prt_rv O3 = V(F32(o3, 1, 3, 0, 0));
	prt_karg m0[2] = {T(&A), L(1, d0)};
	call_ok("aten::mean.dim", m0, 2, &O3);
	expect_vals(&O3.t, (double[]){2.5, 3.5, 4.5}, 3);
	prt_rv O1 = V(F32(o1, 0, 0, 0, 0));
	prt_karg all[2] = {T(&A), NONE()};
	call_ok("aten::sum.dim_IntList", all, 2, &O1);
	expect_vals(&O1.t, (double[]){21}, 1);
}

Test(kernels, layer_norm_and_rms_norm)
{
	float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 2}, b[4] = {0, 0, 0, 1}, o[4];
	prt_rv X = V(F32(x, 2, 1, 4, 0)), W = V(F32(w, 1, 4, 0, 0)), B = V(F32(b, 1, 4, 0, 0)),
	      O = V(F32(o, 2, 1, 4, 0));
	prt_karg ns[1] = {I(4)};
	prt_karg ln[5] = {T(&X), L(1, ns), T(&W), T(&B), F(0)};
	call_ok("aten::layer_norm", ln, 5, &O);
	double s = sqrt(1.25);
	expect_vals(&O.t, (double[]){-1.5 / s, -0.5 / s, 2 * 0.5 / s, 2 * 1.5 / s + 1}, 4);
	prt_karg rn[4] = {T(&X), L(1, ns), T(&W), F(0)};
	call_ok("aten::rms_norm", rn, 4, &O);
	double r = sqrt(7.5);
	expect_vals(&O.t, (double[]){1 / r, 2 / r, 6 / r, 8 / r}, 4);
}

/* ---- indexing ------------------------------------------------------------------------ */

Test(kernels, embedding_picks_rows)
{
	float w[6] = {1, 2, 3, 4, 5, 6}, o[4];
	int64_t ix[2] = {2, 0};
	prt_rv W = V(F32(w, 2, 3, 2, 0)), X = V(mk(PR_I64, ix, 1, 2, 0, 0)), O = V(F32(o, 2, 2, 2, 0));
	prt_karg args[2] = {T(&W), T(&X)};
	call_ok("aten::embedding", args, 2, &O);
	expect_vals(&O.t, (double[]){5, 6, 1, 2}, 4);
	ix[0] = 3;
	pr_err *e = call_kernel("aten::embedding", args, 2, &O, -1, NULL);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "out of range"), "%s", pr_err_message(e));
	pr_err_free(e);
}

Test(kernels, index_select_along_dim_1_of_a_transposed_input)
{
	float o[4];
	int64_t ix[2] = {2, 0};
	prt_rv A = V(transposed23()), X = V(mk(PR_I64, ix, 1, 2, 0, 0)), O = V(F32(o, 2, 2, 2, 0));
	prt_karg args[3] = {T(&A), I(1), T(&X)};
	call_ok("aten::index_select", args, 3, &O);
	expect_vals(&O.t, (double[]){3, 1, 6, 4}, 4);
}

Test(kernels, index_put_rows_with_and_without_accumulate)
{
	float s[6] = {0}, v[3] = {1, 2, 3};
	int64_t ix[1] = {1};
	prt_rv Sv = V(F32(s, 2, 2, 3, 0)), Vv = V(F32(v, 2, 1, 3, 0)), X = V(mk(PR_I64, ix, 1, 1, 0, 0));
	prt_rv O = {.kind = PRT_RV_TENSOR};
	prt_karg idx[1] = {T(&X)};
	prt_karg args[4] = {T(&Sv), L(1, idx), T(&Vv), (prt_karg){.kind = PR_ARG_BOOL, .b = false}};
	call_ok_as("aten::index_put_", args, 4, &O, 0);
	expect_vals(&Sv.t, (double[]){0, 0, 0, 1, 2, 3}, 6);
	args[3].b = true;
	call_ok_as("aten::index_put_", args, 4, &O, 0);
	expect_vals(&Sv.t, (double[]){0, 0, 0, 2, 4, 6}, 6);
	cr_expect(O.t.data == Sv.t.data);
}

Test(kernels, cat_along_dims_0_and_1)
{
	float b[3] = {7, 8, 9}, o[9], o2[8];
	prt_rv A = V(transposed23()), B = V(F32(b, 2, 1, 3, 0)), O = V(F32(o, 2, 3, 3, 0));
	prt_karg items[2] = {T(&A), T(&B)};
	prt_karg args[2] = {L(2, items), I(0)};
	call_ok("aten::cat", args, 2, &O);
	expect_vals(&O.t, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, 9);
	float c[2] = {-1, -2};
	prt_rv C = V(F32(c, 2, 2, 1, 0)), O2 = V(F32(o2, 2, 2, 4, 0));
	prt_karg it2[2] = {T(&A), T(&C)};
	prt_karg a2[2] = {L(2, it2), I(-1)};
	call_ok("aten::cat", a2, 2, &O2);
	expect_vals(&O2.t, (double[]){1, 2, 3, -1, 4, 5, 6, -2}, 8);
}

/* ---- views and copies ------------------------------------------------------------------ */

Test(kernels, slice_and_select_are_views)
{
	float a[6] = {0, 1, 2, 3, 4, 5};
	prt_rv A = V(F32(a, 2, 2, 3, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg args[5] = {T(&A), I(1), I(1), I(INT64_MAX), I(1)};
	call_ok_as("aten::slice.Tensor", args, 5, &O, 0);
	cr_expect(O.t.data == (uint8_t *)&a[1] && O.t.shape[1] == 2 && O.t.strides[0] == 3);
	expect_vals(&O.t, (double[]){1, 2, 4, 5}, 4);
	prt_karg step[5] = {T(&A), I(1), I(0), I(-1), I(2)};
	call_ok_as("aten::slice.Tensor", step, 5, &O, 0);
	expect_vals(&O.t, (double[]){0, 3}, 2);
	prt_karg sel[3] = {T(&A), I(0), I(-1)};
	call_ok_as("aten::select.int", sel, 3, &O, 0);
	expect_vals(&O.t, (double[]){3, 4, 5}, 3);
}

Test(kernels, view_reshape_and_the_non_viewable_case)
{
	float a[6] = {0, 1, 2, 3, 4, 5}, own[6];
	prt_rv A = V(F32(a, 2, 2, 3, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg sz[2] = {I(-1), I(2)};
	prt_karg args[2] = {T(&A), L(2, sz)};
	call_ok_as("aten::view", args, 2, &O, 0);
	cr_expect(O.t.rank == 2 && O.t.shape[0] == 3 && O.t.strides[0] == 2 && O.t.data == A.t.data);
	/* A transposed tensor cannot be flattened by a view; reshape copies. */
	prt_rv Tt = V(transposed23());
	prt_karg flat[1] = {I(6)};
	prt_karg targs[2] = {T(&Tt), L(1, flat)};
	pr_err *e = call_kernel("aten::view", targs, 2, &O, 0, NULL);
	cr_assert_not_null(e);
	pr_err_free(e);
	prt_tensor ownt = F32(own, 1, 6, 0, 0);
	e = call_kernel("aten::reshape", targs, 2, &O, 0, &ownt);
	cr_assert_null(e);
	cr_expect(O.t.data == (uint8_t *)own);
	expect_vals(&O.t, (double[]){1, 2, 3, 4, 5, 6}, 6);
	/* A view_copy (no alias) copies into the result. */
	float c[6];
	prt_rv C = V(F32(c, 2, 3, 2, 0));
	prt_karg sz32[2] = {I(3), I(2)};
	prt_karg vargs[2] = {T(&A), L(2, sz32)};
	call_ok("aten::view", vargs, 2, &C);
	cr_expect(c[5] == 5 && C.t.data == (uint8_t *)c);
}

Test(kernels, permute_transpose_t_as_strided_expand_unsqueeze_squeeze)
{
	float a[6] = {0, 1, 2, 3, 4, 5};
	prt_rv A = V(F32(a, 2, 2, 3, 0)), O = {.kind = PRT_RV_TENSOR};
	prt_karg p[2] = {I(1), I(0)};
	prt_karg pa[2] = {T(&A), L(2, p)};
	call_ok_as("aten::permute", pa, 2, &O, 0);
	expect_vals(&O.t, (double[]){0, 3, 1, 4, 2, 5}, 6);
	prt_karg ta[3] = {T(&A), I(0), I(-1)};
	call_ok_as("aten::transpose.int", ta, 3, &O, 0);
	expect_vals(&O.t, (double[]){0, 3, 1, 4, 2, 5}, 6);
	prt_karg t1[1] = {T(&A)};
	call_ok_as("aten::t", t1, 1, &O, 0);
	cr_expect(O.t.strides[0] == 1 && O.t.strides[1] == 3);
	prt_karg sz[2] = {I(2), I(2)}, st[2] = {I(1), I(2)};
	prt_karg as[4] = {T(&A), L(2, sz), L(2, st), I(1)};
	call_ok_as("aten::as_strided", as, 4, &O, 0);
	expect_vals(&O.t, (double[]){1, 3, 2, 4}, 4);
	float r[3] = {7, 8, 9};
	prt_rv R = V(F32(r, 1, 3, 0, 0));
	prt_karg es[2] = {I(2), I(-1)};
	prt_karg ea[2] = {T(&R), L(2, es)};
	call_ok_as("aten::expand", ea, 2, &O, 0);
	cr_expect(O.t.strides[0] == 0);
	expect_vals(&O.t, (double[]){7, 8, 9, 7, 8, 9}, 6);
	prt_karg un[2] = {T(&R), I(0)};
	call_ok_as("aten::unsqueeze", un, 2, &O, 0);
	cr_expect(O.t.rank == 2 && O.t.shape[0] == 1 && O.t.shape[1] == 3);
	prt_rv U = O;
	prt_karg sq[2] = {T(&U), I(0)};
	call_ok_as("aten::squeeze.dim", sq, 2, &O, 0);
	cr_expect(O.t.rank == 1 && O.t.shape[0] == 3);
}

Test(kernels, clone_contiguous_copy_)
{
	float o[6], own[6], d[6] = {0};
	prt_rv A = V(transposed23()), O = V(F32(o, 2, 2, 3, 0));
	prt_karg x[1] = {T(&A)};
	call_ok("aten::clone", x, 1, &O);
	cr_expect(o[0] == 1 && o[1] == 2 && o[3] == 4, "clone is contiguous");
	prt_rv C = {.kind = PRT_RV_TENSOR};
	prt_tensor ownt = F32(own, 2, 2, 3, 0);
	pr_err *e = call_kernel("aten::contiguous", x, 1, &C, 0, &ownt);
	cr_assert_null(e);
	cr_expect(C.t.data == (uint8_t *)own && own[1] == 2);
	prt_rv Oc = V(F32(o, 2, 2, 3, 0));
	prt_karg xc[1] = {T(&Oc)};
	e = call_kernel("aten::contiguous", xc, 1, &C, 0, &ownt);
	cr_assert_null(e);
	cr_expect(C.t.data == (uint8_t *)o, "already contiguous: an alias");
	prt_rv D = V(F32(d, 2, 2, 3, 0)), R = {.kind = PRT_RV_TENSOR};
	prt_karg cp[2] = {T(&D), T(&A)};
	call_ok_as("aten::copy_", cp, 2, &R, 0);
	expect_vals(&D.t, (double[]){1, 2, 3, 4, 5, 6}, 6);
}

Test(kernels, sym_size_reads_only_the_shape)
{
	prt_rv A = V(transposed23()), O = {.kind = PRT_RV_INT};
	A.t.data = A.t.storage = NULL;   /* no element is read */
	prt_karg args[2] = {T(&A), I(-1)};
	call_ok("aten::sym_size.int", args, 2, &O);
	cr_expect_eq(O.kind, PRT_RV_INT);
	cr_expect_eq(O.i, 3);
	cr_expect(prt_kernel_find("aten::sym_size.int")->flags & PRT_KERNEL_META);
}

Test(kernels, custom_accumulate_and_kv_update)
{
	float x[6] = {1, 1, 1, 1, 1, 1}, y[3] = {1, 2, 3};
	prt_rv X = V(F32(x, 2, 2, 3, 0)), Y = V(F32(y, 1, 3, 0, 0)), O = {.kind = PRT_RV_NONE};
	prt_karg acc[2] = {T(&X), T(&Y)};
	call_ok("custom::accumulate", acc, 2, &O);
	expect_vals(&X.t, (double[]){2, 3, 4, 2, 3, 4}, 6);
	float cache[8] = {0}, val[4] = {5, 6, 7, 8};
	prt_rv Cc = V(F32(cache, 2, 4, 2, 0)), Vv = V(F32(val, 2, 2, 2, 0));
	prt_karg kv[3] = {T(&Cc), T(&Vv), I(2)};
	call_ok("custom::kv_update", kv, 3, &O);
	expect_vals(&Cc.t, (double[]){0, 0, 0, 0, 5, 6, 0, 0}, 8);
	prt_karg bad[3] = {T(&Cc), T(&Vv), I(4)};
	pr_err *e = call_kernel("custom::kv_update", bad, 3, &O, -1, NULL);
	cr_assert_not_null(e, "pos 4 is out of range for 4 rows");
	pr_err_free(e);
}

Test(kernels, registry_knows_every_listed_op_and_not_others)
{
	const char *ops[] = {"aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor",
			     "aten::mul.Scalar", "aten::div.Tensor", "aten::neg", "aten::relu_",
			     "aten::add_.Tensor", "aten::mul_.Tensor", "aten::mm", "aten::addmm",
			     "aten::linear", "aten::bmm", "aten::_softmax", "aten::softmax.int",
			     "aten::sum.dim_IntList", "aten::mean.dim", "aten::layer_norm",
			     "aten::rms_norm", "aten::embedding", "aten::index_select",
			     "aten::index_put_", "aten::cat", "aten::slice.Tensor", "aten::view",
			     "aten::reshape", "aten::permute", "aten::transpose.int", "aten::t",
			     "aten::as_strided", "aten::expand", "aten::clone", "aten::contiguous",
			     "aten::copy_", "aten::sym_size.int", "custom::accumulate",
			     "custom::kv_update"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		cr_expect_not_null(prt_kernel_find(ops[i]), "%s", ops[i]);
	cr_expect_null(prt_kernel_find("aten::add"));
	cr_expect_null(prt_kernel_find("et_copy::_h2d_copy"), "copies are the executor's, by trait");
}
