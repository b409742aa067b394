/* The tensor-op kernels (kernels_tensor.c, issue 12): factories, cumsum,
 * gather, index.Tensor and the split ops, each against hand-computed values,
 * with non-contiguous inputs (transposed or strided views) where the layout
 * matters, and their refusals. The last tests run split_with_sizes through
 * the executor and the lifetimes, as a program does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/data.h"
#include "passrun/plan.h"
#include "kernel_harness.h"
#include "rt.h"
#include "testutil.h"

static prt_tensor mk(pr_dtype dt, void *d, int rank, int64_t s0, int64_t s1, int64_t s2)
{
	int64_t shape[3] = {s0, s1, s2};
	return prt_tensor_make(dt, rank, shape, d);
}

/* ---- factories -------------------------------------------------------------- */

Test(kernels_tensor, arange_overloads_integer_float_and_negative_steps)
{
	int64_t o[5];
	prt_rv O = V(mk(PR_I64, o, 1, 5, 0, 0));
	prt_karg end[1] = {I(5)};
	call_ok("aten::arange", end, 1, &O);
	expect_vals(&O.t, (double[]){0, 1, 2, 3, 4}, 5);
	prt_karg se[2] = {I(3), I(8)};
	call_ok("aten::arange.start", se, 2, &O);
	expect_vals(&O.t, (double[]){3, 4, 5, 6, 7}, 5);
	prt_karg neg[3] = {I(10), I(0), I(-2)};    /* 10, 8, 6, 4, 2 */
	call_ok("aten::arange.start_step", neg, 3, &O);
	expect_vals(&O.t, (double[]){10, 8, 6, 4, 2}, 5);
	float f[4];
	prt_rv FO = V(mk(PR_F32, f, 1, 4, 0, 0));
	prt_karg fs[3] = {F(0.5), F(2.5), F(0.5)};  /* ceil(2 / 0.5) = 4 */
	call_ok("aten::arange.start_step", fs, 3, &FO);
	expect_vals(&FO.t, (double[]){0.5, 1, 1.5, 2}, 4);
}

Test(kernels_tensor, arange_into_a_strided_result_and_beyond_2_to_53)
{
	int64_t o[6] = {0};
	prt_rv O = V(mk(PR_I64, o, 1, 3, 0, 0));
	O.t.strides[0] = 2;                           /* every other element */
	int64_t big = ((int64_t)1 << 53) + 1;
	prt_karg a[3] = {I(big), I(big + 3), I(1)};
	call_ok("aten::arange.start_step", a, 3, &O);
	cr_expect_eq(o[0], big);
	cr_expect_eq(o[2], big + 1);
	cr_expect_eq(o[4], big + 2);
	cr_expect_eq(o[1], 0, "the gaps are not written");
}

Test(kernels_tensor, arange_refuses_a_wrong_length_zero_step_and_wrong_sign)
{
	int64_t o[4];
	prt_rv O = V(mk(PR_I64, o, 1, 4, 0, 0));
	call_refused("aten::arange", (prt_karg[]){I(5)}, 1, &O, "declared [4]; its arguments give [5]");
	call_refused("aten::arange.start_step", (prt_karg[]){I(0), I(4), I(0)}, 3, &O, "nonzero");
	call_refused("aten::arange.start_step", (prt_karg[]){I(4), I(0), I(1)}, 3, &O, "step sign");
}

Test(kernels_tensor, full_zeros_ones_full_like_and_scalar_tensor)
{
	float f[6];
	prt_rv O = V(mk(PR_F32, f, 2, 2, 3, 0));
	prt_karg size[2] = {I(2), I(3)};
	prt_karg full[2] = {L(2, size), F(-1.5)};
	call_ok("aten::full", full, 2, &O);
	expect_vals(&O.t, (double[]){-1.5, -1.5, -1.5, -1.5, -1.5, -1.5}, 6);
	prt_karg zs[1] = {L(2, size)};
	call_ok("aten::ones", zs, 1, &O);
	expect_vals(&O.t, (double[]){1, 1, 1, 1, 1, 1}, 6);
	call_ok("aten::zeros", zs, 1, &O);
	expect_vals(&O.t, (double[]){0, 0, 0, 0, 0, 0}, 6);
	/* full_like into a transposed result: every element, whatever the layout */
	float x[6];
	prt_rv X = V(mk(PR_F32, x, 2, 2, 3, 0)), OT = V(mk(PR_F32, f, 2, 2, 3, 0));
	OT.t.strides[0] = 1, OT.t.strides[1] = 2;
	call_ok("aten::full_like", (prt_karg[]){T(&X), I(7)}, 2, &OT);
	expect_vals(&OT.t, (double[]){7, 7, 7, 7, 7, 7}, 6);
	/* a bool fill, and an i64 beyond 2^53 */
	uint8_t b[2];
	prt_rv BO = V(mk(PR_BOOL, b, 1, 2, 0, 0));
	prt_karg bsize[1] = {I(2)};
	call_ok("aten::full", (prt_karg[]){L(1, bsize), B(true)}, 2, &BO);
	cr_expect(b[0] == 1 && b[1] == 1);
	int64_t s;
	prt_rv S = V(mk(PR_I64, &s, 0, 0, 0, 0));
	call_ok("aten::scalar_tensor", (prt_karg[]){I(((int64_t)1 << 60) + 1)}, 1, &S);
	cr_expect_eq(s, ((int64_t)1 << 60) + 1);
	float sf;
	prt_rv SF = V(mk(PR_F32, &sf, 0, 0, 0, 0));
	call_ok("aten::scalar_tensor", (prt_karg[]){F(-INFINITY)}, 1, &SF);
	cr_expect(isinf(sf) && sf < 0);
}

Test(kernels_tensor, full_refuses_a_size_that_is_not_the_result)
{
	float f[6];
	prt_rv O = V(mk(PR_F32, f, 2, 2, 3, 0));
	prt_karg size[2] = {I(3), I(2)};
	call_refused("aten::full", (prt_karg[]){L(2, size), F(1)}, 2, &O,
		   "declared [2,3]; its arguments give [3,2]");
	call_refused("aten::scalar_tensor", (prt_karg[]){F(1)}, 1, &O, "its arguments give []");
}

/* ---- cumsum -------------------------------------------------------------------- */

/* [[1,2,3],[4,5,6]] stored transposed. */
static float tbytes[6] = {1, 4, 2, 5, 3, 6};
static prt_tensor transposed23(void)
{
	prt_tensor t = mk(PR_F32, tbytes, 2, 2, 3, 0);
	t.strides[0] = 1, t.strides[1] = 2;
	return t;
}

Test(kernels_tensor, cumsum_along_each_dim_of_a_transposed_input)
{
	float o[6];
	prt_rv X = V(transposed23()), O = V(mk(PR_F32, o, 2, 2, 3, 0));
	call_ok("aten::cumsum", (prt_karg[]){T(&X), I(1)}, 2, &O);
	expect_vals(&O.t, (double[]){1, 3, 6, 4, 9, 15}, 6);
	call_ok("aten::cumsum", (prt_karg[]){T(&X), I(0)}, 2, &O);
	expect_vals(&O.t, (double[]){1, 2, 3, 5, 7, 9}, 6);
	call_ok("aten::cumsum", (prt_karg[]){T(&X), I(-2)}, 2, &O);
	expect_vals(&O.t, (double[]){1, 2, 3, 5, 7, 9}, 6);
	call_refused("aten::cumsum", (prt_karg[]){T(&X), I(2)}, 2, &O, "out of range");
}

Test(kernels_tensor, cumsum_of_bool_into_i64_is_exact)
{
	/* HF's position ids: cumsum(attention_mask != 0) as int64 */
	uint8_t m[5] = {1, 0, 1, 1, 0};
	int64_t o[5];
	prt_rv X = V(mk(PR_BOOL, m, 1, 5, 0, 0)), O = V(mk(PR_I64, o, 1, 5, 0, 0));
	call_ok("aten::cumsum", (prt_karg[]){T(&X), I(0)}, 2, &O);
	expect_vals(&O.t, (double[]){1, 1, 2, 3, 3}, 5);
	int64_t big[2] = {((int64_t)1 << 60), 1}, ob[2];
	prt_rv BX = V(mk(PR_I64, big, 1, 2, 0, 0)), BO = V(mk(PR_I64, ob, 1, 2, 0, 0));
	call_ok("aten::cumsum", (prt_karg[]){T(&BX), I(0)}, 2, &BO);
	cr_expect_eq(ob[1], ((int64_t)1 << 60) + 1, "int64 sums do not go through double");
}

/* ---- gather -------------------------------------------------------------------- */

Test(kernels_tensor, gather_along_dims_with_negative_indices_and_a_transposed_self)
{
	/* self [[1,2,3],[4,5,6]] (transposed storage); index [[2,0],[-1,1]] on dim 1 */
	int64_t ix[4] = {2, 0, -1, 1};
	float o[4];
	prt_rv X = V(transposed23()), IX = V(mk(PR_I64, ix, 2, 2, 2, 0)), O = V(mk(PR_F32, o, 2, 2, 2, 0));
	call_ok("aten::gather", (prt_karg[]){T(&X), I(1), T(&IX)}, 3, &O);
	expect_vals(&O.t, (double[]){3, 1, 6, 5}, 4);
	/* dim 0, an index narrower than self along dim 1 and stored transposed:
	 * logical [[1,0],[0,1]] */
	int64_t ix0[4] = {1, 0, 0, 1};
	prt_rv IX0 = V(mk(PR_I64, ix0, 2, 2, 2, 0));
	IX0.t.strides[0] = 1, IX0.t.strides[1] = 2;
	call_ok("aten::gather", (prt_karg[]){T(&X), I(0), T(&IX0)}, 3, &O);
	expect_vals(&O.t, (double[]){4, 2, 1, 5}, 4);
}

Test(kernels_tensor, gather_copies_i64_exactly_and_refuses_bad_indices)
{
	int64_t x[3] = {((int64_t)1 << 60) + 3, 5, 7}, o[2];
	int64_t ix[2] = {0, 2};
	prt_rv X = V(mk(PR_I64, x, 1, 3, 0, 0)), IX = V(mk(PR_I64, ix, 1, 2, 0, 0)),
	      O = V(mk(PR_I64, o, 1, 2, 0, 0));
	call_ok("aten::gather", (prt_karg[]){T(&X), I(0), T(&IX)}, 3, &O);
	cr_expect_eq(o[0], ((int64_t)1 << 60) + 3);
	cr_expect_eq(o[1], 7);
	ix[1] = 3;
	call_refused("aten::gather", (prt_karg[]){T(&X), I(0), T(&IX)}, 3, &O, "index 3 out of range [0, 3)");
	float fi[2] = {0, 1};
	prt_rv FI = V(mk(PR_F32, fi, 1, 2, 0, 0));
	call_refused("aten::gather", (prt_karg[]){T(&X), I(0), T(&FI)}, 3, &O, "must be i64 or i32");
}

/* ---- index.Tensor ------------------------------------------------------------- */

/* 2x3x4 values 0..23, row-major. */
static float v234[24];
static prt_tensor x234(void)
{
	for (int i = 0; i < 24; i++)
		v234[i] = (float)i;
	return mk(PR_F32, v234, 3, 2, 3, 4);
}

Test(kernels_tensor, index_one_tensor_on_the_first_dim_with_a_negative_index)
{
	int64_t ix[2] = {-1, 0};
	float o[24];
	prt_rv X = V(x234()), IX = V(mk(PR_I64, ix, 1, 2, 0, 0)), O = V(mk(PR_F32, o, 3, 2, 3, 4));
	prt_karg items[1] = {T(&IX)};
	call_ok("aten::index.Tensor", (prt_karg[]){T(&X), L(1, items)}, 2, &O);
	double want[24];
	for (int i = 0; i < 12; i++)
		want[i] = 12 + i, want[12 + i] = i;
	expect_vals(&O.t, want, 24);
}

Test(kernels_tensor, index_with_none_then_a_2d_index_replaces_the_dim_in_place)
{
	/* x[:, [[0, 2], [1, 1]]] -> [2, 2, 2, 4]: dim 1 replaced by the index's shape */
	int64_t ix[4] = {0, 2, 1, 1};
	float o[32];
	prt_rv X = V(x234()), IX = V(mk(PR_I64, ix, 2, 2, 2, 0));
	int64_t shape[4] = {2, 2, 2, 4};
	prt_rv O = V(prt_tensor_make(PR_F32, 4, shape, o));
	prt_karg items[2] = {NONE(), T(&IX)};
	call_ok("aten::index.Tensor", (prt_karg[]){T(&X), L(2, items)}, 2, &O);
	double want[32];
	int rows[4] = {0, 2, 1, 1};
	for (int a = 0; a < 2; a++)
		for (int r = 0; r < 4; r++)
			for (int c = 0; c < 4; c++)
				want[a * 16 + r * 4 + c] = a * 12 + rows[r] * 4 + c;
	expect_vals(&O.t, want, 32);
}

Test(kernels_tensor, index_broadcasts_adjacent_index_tensors)
{
	/* x[[1], [0, 2]] (i32 and i64, shapes [1] and [2] broadcast to [2]) -> [2, 4]:
	 * rows x[1,0,:] and x[1,2,:] */
	int32_t i0[1] = {1};
	int64_t i1[2] = {0, 2};
	float o[8];
	prt_rv X = V(x234()), A = V(mk(PR_I32, i0, 1, 1, 0, 0)), Bv = V(mk(PR_I64, i1, 1, 2, 0, 0)),
	      O = V(mk(PR_F32, o, 2, 2, 4, 0));
	prt_karg items[2] = {T(&A), T(&Bv)};
	call_ok("aten::index.Tensor", (prt_karg[]){T(&X), L(2, items)}, 2, &O);
	expect_vals(&O.t, (double[]){12, 13, 14, 15, 20, 21, 22, 23}, 8);
}

Test(kernels_tensor, index_separated_by_none_puts_the_broadcast_dims_first)
{
	/* x[[0, 1], :, [3, 0]] -> [2, 3]: element (b, j) = x[i0[b], j, i2[b]], on a
	 * transposed view of x (strides of x.permute(0, 1, 2) over a [4,3,2] store) */
	float st[24];
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 3; b++)
			for (int c = 0; c < 4; c++)
				st[c * 6 + b * 2 + a] = (float)(a * 12 + b * 4 + c);
	prt_tensor xt = mk(PR_F32, st, 3, 2, 3, 4);
	xt.strides[0] = 1, xt.strides[1] = 2, xt.strides[2] = 6;
	int64_t i0[2] = {0, 1}, i2[2] = {3, 0};
	float o[6];
	prt_rv X = V(xt), A = V(mk(PR_I64, i0, 1, 2, 0, 0)), C = V(mk(PR_I64, i2, 1, 2, 0, 0)),
	      O = V(mk(PR_F32, o, 2, 2, 3, 0));
	prt_karg items[3] = {T(&A), NONE(), T(&C)};
	call_ok("aten::index.Tensor", (prt_karg[]){T(&X), L(3, items)}, 2, &O);
	expect_vals(&O.t, (double[]){3, 7, 11, 12, 16, 20}, 6);
}

Test(kernels_tensor, index_refuses_masks_out_of_range_and_shapes_that_do_not_broadcast)
{
	float o[24];
	prt_rv X = V(x234()), O = V(mk(PR_F32, o, 3, 2, 3, 4));
	int64_t bad[2] = {0, 2};
	prt_rv IX = V(mk(PR_I64, bad, 1, 2, 0, 0));
	prt_karg items[1] = {T(&IX)};
	call_refused("aten::index.Tensor", (prt_karg[]){T(&X), L(1, items)}, 2, &O,
		   "index 2 out of range [0, 2) for dim 0");
	uint8_t m[2] = {1, 0};
	prt_rv M = V(mk(PR_BOOL, m, 1, 2, 0, 0));
	prt_karg mi[1] = {T(&M)};
	call_refused("aten::index.Tensor", (prt_karg[]){T(&X), L(1, mi)}, 2, &O, "is a mask");
	int64_t a[2] = {0, 1}, b[3] = {0, 1, 2};
	prt_rv A = V(mk(PR_I64, a, 1, 2, 0, 0)), Bv = V(mk(PR_I64, b, 1, 3, 0, 0));
	prt_karg two[2] = {T(&A), T(&Bv)};
	call_refused("aten::index.Tensor", (prt_karg[]){T(&X), L(2, two)}, 2, &O, "does not broadcast");
	prt_karg nones[1] = {NONE()};
	call_refused("aten::index.Tensor", (prt_karg[]){T(&X), L(1, nones)}, 2, &O, "no tensor");
}

/* ---- ops with several results -------------------------------------------------- */

static prt_rv tuple_of(int n, prt_rv *elems)
{
	memset(elems, 0, sizeof *elems * (size_t)n);
	return (prt_rv){.kind = PRT_RV_TUPLE, .n = n, .elems = elems};
}

Test(kernels_tensor, split_with_sizes_gives_views_into_a_transposed_input)
{
	prt_rv X = V(transposed23()), el[2], O = tuple_of(2, el);
	prt_karg sizes[2] = {I(1), I(2)};
	call_ok("aten::split_with_sizes", (prt_karg[]){T(&X), L(2, sizes), I(1)}, 3, &O);
	expect_vals(&el[0].t, (double[]){1, 4}, 2);
	expect_vals(&el[1].t, (double[]){2, 3, 5, 6}, 4);
	cr_expect_eq(el[1].t.data, (uint8_t *)&tbytes[2], "a view: no copy");
	cr_expect_eq(el[1].t.strides[0], 1);
	cr_expect_eq(el[1].t.strides[1], 2);
	call_refused("aten::split_with_sizes", (prt_karg[]){T(&X), L(2, sizes), I(0)}, 3, &O,
		   "add up to 3; dim 0 has 2");
	prt_rv O1 = tuple_of(1, el);
	call_refused("aten::split_with_sizes", (prt_karg[]){T(&X), L(2, sizes), I(1)}, 3, &O1,
		   "tuple of 1; the arguments give 2");
}

Test(kernels_tensor, split_tensor_leaves_a_shorter_last_piece)
{
	float x[5] = {1, 2, 3, 4, 5};
	prt_rv X = V(mk(PR_F32, x, 1, 5, 0, 0)), el[3], O = tuple_of(3, el);
	call_ok("aten::split.Tensor", (prt_karg[]){T(&X), I(2)}, 2, &O);
	expect_vals(&el[0].t, (double[]){1, 2}, 2);
	expect_vals(&el[1].t, (double[]){3, 4}, 2);
	expect_vals(&el[2].t, (double[]){5}, 1);
	prt_rv O2 = tuple_of(2, el);
	call_refused("aten::split.Tensor", (prt_karg[]){T(&X), I(2)}, 2, &O2, "give 3 pieces");
}

Test(kernels_tensor, unbind_selects_each_index_of_a_dim)
{
	prt_rv X = V(transposed23()), el[3], O = tuple_of(3, el);
	call_ok("aten::unbind.int", (prt_karg[]){T(&X), I(1)}, 2, &O);
	expect_vals(&el[0].t, (double[]){1, 4}, 2);
	expect_vals(&el[2].t, (double[]){3, 6}, 2);
	cr_expect_eq(el[2].t.rank, 1);
}

/* ---- through the executor and the lifetimes ------------------------------------- */

#define SPLIT_PG                                                                          \
	"passrun 1\n"                                                                     \
	"op aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) " \
	"-> Tensor(a)[]\n"                                                                \
	"op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"   \
	"method @forward {\n"                                                             \
	"  %x: f32[2,5] = input user \"x\"\n"                                             \
	"  %s: (f32[2,2]{strides=[5,1]}, f32[2,3]{strides=[5,1]}) = "                     \
	"aten::split_with_sizes(%x, [2, 3], 1)\n"                                         \
	"  %a: f32[2,2]{strides=[5,1]} = getitem %s, 0\n"                                 \
	"  %b: f32[2,3]{strides=[5,1]} = getitem %s, 1\n"                                 \
	"  %c: f32[2,3] = aten::add.Tensor(%b, %b)\n"                                     \
	"  return %a, %c\n"                                                               \
	"}\n"

Test(kernels_tensor, split_with_sizes_runs_in_a_program_on_sim_and_the_reference)
{
	float x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	for (int ref = 0; ref < 2; ref++) {
		pr_program *p = tu_parse(SPLIT_PG);
		prt_exec_options o = {.device = "sim", .reference = ref};
		prt_exec *e = NULL;
		pr_err *err = prt_exec_load(p, "forward", &o, &e);
		cr_assert_null(err, "load: %s", err ? pr_err_message(err) : "");
		int64_t shape[2] = {2, 5};
		prt_tensor t = prt_tensor_make(PR_F32, 2, shape, x);
		cr_assert_null(prt_exec_set_input(e, 0, &t));
		err = prt_exec_run(e);
		cr_assert_null(err, "run: %s", err ? pr_err_message(err) : "");
		prt_tensor a, c;
		cr_assert_null(prt_exec_output(e, 0, &a));
		cr_assert_null(prt_exec_output(e, 1, &c));
		expect_vals(&a, (double[]){0, 1, 5, 6}, 4);
		expect_vals(&c, (double[]){4, 6, 8, 14, 16, 18}, 6);
		free(a.storage), free(c.storage);
		prt_exec_free(e);
		pr_program_free(p);
	}
}

Test(kernels_tensor, every_piece_of_a_split_shares_its_argument_s_storage_class)
{
	pr_program *p = tu_parse(SPLIT_PG);
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	int64_t x_cls = -1;
	int pieces = 0;
	for (int64_t i = 0; i < lt->n_values; i++) {
		const pr_plan_value *v = &lt->values[i];
		if (strcmp(v->node->name, "x") == 0)
			x_cls = v->cls;
		if (strcmp(v->node->name, "s") == 0 || strcmp(v->node->name, "a") == 0 ||
		    strcmp(v->node->name, "b") == 0) {
			cr_expect_eq(v->cls, x_cls, "%s[%d] has its own class", v->node->name, v->elem);
			pieces++;
		}
	}
	cr_expect_eq(pieces, 4, "two tuple elements and two getitems");
	pr_lifetimes_free(lt);
	pr_program_free(p);
}
