/* Device kernels against the host kernels, the way ggml's test-backend-ops
 * checks every backend against the CPU (style.md), through
 * device_harness.h: each case runs an op's host kernel on host tensors and
 * its device kernel on device copies of the same tensors (same strides, so
 * transposed inputs stay transposed), and the results must agree.
 *   - staged: the host-staging fallback (prt_k_staged) on the sim device,
 *     always run;
 *   - cuda: the CUDA kernels, run only where a GPU is present
 *     (tests/gpu/run.sh); skipped elsewhere. */
#include "device_harness.h"
#include "rt_cuda.h"

/* The harness's names, short (device_harness.h). An index out of range
 * (check_error) is reported with the host kernel's message before anything
 * is written: argument 0 is as it was. */
typedef dh_harness harness;
#define mk dh_mk
#define T dh_T
#define I dh_I
#define F dh_F
#define B dh_B
#define NONE dh_NONE
#define L dh_L
#define V dh_V
#define check dh_check
#define check_error dh_check_error

static float tbytes[6] = {1, -4, 2, 5, -3, 6};
static prt_tensor transposed23(void)   /* logical [[1,2,-3],[-4,5,6]] */
{
	prt_tensor t = mk(PR_F32, tbytes, 2, 2, 3, 0);
	t.strides[0] = 1, t.strides[1] = 2;
	return t;
}

static void cases(harness *h)
{
	float o6[6], o4[4], o9[9], row[3] = {10, 20, 30};
	float b32[6] = {1, 0, 0, 1, 1, 1}, bias2[2] = {1, 2}, w23[6] = {1, 0, 2, 0, 1, 1};
	prt_rv A = V(transposed23()), R = V(mk(PR_F32, row, 1, 3, 0, 0));
	prt_tensor O23 = mk(PR_F32, o6, 2, 2, 3, 0), O22 = mk(PR_F32, o4, 2, 2, 2, 0);
	prt_karg add[3] = {T(&A), T(&R), I(2)};
	check(h, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add, 3, &O23);
	prt_karg muls[2] = {T(&A), F(-1.5)};
	check(h, "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", muls, 2, &O23);
	prt_karg un[1] = {T(&A)};
	check(h, "aten::sin(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::exp(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::gelu(Tensor self, *, str approximate='none') -> Tensor", un, 1, &O23);
	check(h, "aten::sigmoid(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::relu_(Tensor(a!) self) -> Tensor(a!)", un, 1, &O23);
	check(h, "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", un, 1, &O23);
	prt_rv B = V(mk(PR_F32, b32, 2, 3, 2, 0)), Bi = V(mk(PR_F32, bias2, 1, 2, 0, 0)),
	      W = V(mk(PR_F32, w23, 2, 2, 3, 0));
	prt_karg mm[2] = {T(&A), T(&B)};
	check(h, "aten::mm(Tensor self, Tensor mat2) -> Tensor", mm, 2, &O22);
	prt_karg addmm[5] = {T(&Bi), T(&A), T(&B), F(0.5), F(2)};
	check(h, "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
	      addmm, 5, &O22);
	prt_karg lin[3] = {T(&A), T(&W), T(&Bi)};
	check(h, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", lin, 3, &O22);
	prt_karg items[2] = {T(&A), T(&R)};
	prt_rv R13 = V(mk(PR_F32, row, 2, 1, 3, 0));
	items[1] = T(&R13);
	prt_karg cat[2] = {L(2, items), I(0)};
	prt_tensor O33 = mk(PR_F32, o9, 2, 3, 3, 0);
	check(h, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat, 2, &O33);
	prt_karg sm[3] = {T(&A), I(1), I(0)};
	check(h, "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", sm, 3, &O23);
	prt_karg ns[1] = {I(3)};
	prt_karg ln[5] = {T(&A), L(1, ns), T(&R), T(&R), F(1e-5)};
	check(h, "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
	      ln, 5, &O23);
	float cache[6] = {0};
	prt_rv C = V(mk(PR_F32, cache, 2, 2, 3, 0));
	prt_karg kv[3] = {T(&C), T(&A), I(1)};
	check(h, "custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()", kv, 3, NULL);
	prt_karg acc[2] = {T(&C), T(&R)};
	check(h, "custom::accumulate(Tensor(a!) x, Tensor y) -> ()", acc, 2, NULL);
	int64_t ix[2] = {1, 0};
	prt_rv X = V(mk(PR_I64, ix, 1, 2, 0, 0));
	prt_karg idx[1] = {T(&X)};
	float vals[6] = {1, 2, 3, 4, 5, 6};
	prt_rv Vv = V(mk(PR_F32, vals, 2, 2, 3, 0));
	prt_karg ip[4] = {T(&C), L(1, idx), T(&Vv), (prt_karg){.kind = PR_ARG_BOOL, .b = true}};
	check(h, "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
	      ip, 4, &O23);
}

/* Other dtypes: the copy ops move i64 and f64 elements on the device
 * (copy_bits), the arithmetic runs staged; both must match the host. */
static void dtype_cases(harness *h)
{
	static int64_t li[6] = {1, -4, 2, 50, -3, 6}, lr[3] = {10, 20, 30};
	int64_t lo[6], l9[9], lcache[6] = {0};
	prt_tensor LT = mk(PR_I64, li, 2, 2, 3, 0);   /* transposed, like transposed23 */
	LT.strides[0] = 1, LT.strides[1] = 2;
	prt_rv A = V(LT), R = V(mk(PR_I64, lr, 2, 1, 3, 0)), C = V(mk(PR_I64, lcache, 2, 2, 3, 0));
	prt_tensor O23 = mk(PR_I64, lo, 2, 2, 3, 0), O33 = mk(PR_I64, l9, 2, 3, 3, 0);
	prt_karg un[1] = {T(&A)};
	check(h, "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", un, 1, &O23);
	prt_karg items[2] = {T(&A), T(&R)}, cat[2] = {L(2, items), I(0)};
	check(h, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat, 2, &O33);
	prt_karg kv[3] = {T(&C), T(&R), I(1)};
	check(h, "custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()", kv, 3, NULL);
	prt_karg add[3] = {T(&A), T(&R), I(2)};
	check(h, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add, 3, &O23);
	prt_karg neg[1] = {T(&A)};
	check(h, "aten::neg(Tensor self) -> Tensor", neg, 1, &O23);
	double d6[6] = {0.5, -1, 2, 3, 4, -6}, e4[4], b6[6] = {1, 0, 0, 1, 1, 1};
	prt_rv D = V(mk(PR_F64, d6, 2, 2, 3, 0)), Db = V(mk(PR_F64, b6, 2, 3, 2, 0));
	prt_tensor O22 = mk(PR_F64, e4, 2, 2, 2, 0);
	prt_karg mm[2] = {T(&D), T(&Db)};
	check(h, "aten::mm(Tensor self, Tensor mat2) -> Tensor", mm, 2, &O22);
}

/* [2,3] rows 1 and 3 of a [4,3] storage: a slice with an offset. */
static float sbytes[12] = {9, 9, 9, 0.5f, -1, 2, 9, 9, 9, 3, 0.25f, -2};
static prt_tensor sliced23(void)
{
	prt_tensor t = mk(PR_F32, sbytes, 2, 2, 3, 0);
	t.storage = (uint8_t *)sbytes;
	t.data = (uint8_t *)(sbytes + 3);
	t.strides[0] = 6;
	return t;
}

/* [2,3,4] over a contiguous [4,3,2] storage, dims reversed (strides [1,2,6]). */
static float pbytes[24];
static prt_tensor permuted234(void)
{
	for (int i = 0; i < 24; i++)
		pbytes[i] = (float)((i * 7) % 11) - 4.5f;
	prt_tensor t = mk(PR_F32, pbytes, 3, 2, 3, 4);
	t.strides[0] = 1, t.strides[1] = 2, t.strides[2] = 6;
	return t;
}

/* The row kernels: softmax, sum / mean over dims (keepdim or not), norms. */
static void row_cases(harness *h)
{
	float o24[24], o6[6], o3[3], o2[2], o8[8], o1[1], row[3] = {10, 20, 30}, w12[12];
	double x6[6] = {1, -2, 3, 0.5, 4, -1}, od[3];
	for (int i = 0; i < 12; i++)
		w12[i] = 0.5f + (float)i / 8;
	prt_rv A = V(transposed23()), S = V(sliced23()), X = V(permuted234()), R = V(mk(PR_F32, row, 1, 3, 0, 0));
	prt_rv D = V(mk(PR_F64, x6, 2, 2, 3, 0));
	prt_tensor W34 = mk(PR_F32, w12, 2, 3, 4, 0);  /* a transposed [4,3] */
	W34.strides[0] = 1, W34.strides[1] = 3;
	prt_rv Wt = V(W34);
	prt_tensor O23 = mk(PR_F32, o6, 2, 2, 3, 0), O234 = mk(PR_F32, o24, 3, 2, 3, 4);
	const char *softmax = "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor";
	const char *_softmax = "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor";
	prt_karg sm0[3] = {T(&A), I(0), B(false)}, sm1[3] = {T(&S), I(-1), NONE()}, sm3[3] = {T(&X), I(1), NONE()};
	check(h, _softmax, sm0, 3, &O23);
	check(h, softmax, sm1, 3, &O23);
	check(h, softmax, sm3, 3, &O234);

	const char *sum = "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
	const char *mean = "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
	prt_karg d02[2] = {I(0), I(-1)}, d1[1] = {I(1)}, dm1[1] = {I(-1)}, d0[1] = {I(0)}, empty[1];
	prt_tensor O3 = mk(PR_F32, o3, 1, 3, 0, 0), O131 = mk(PR_F32, o3, 3, 1, 3, 1),
		  O2 = mk(PR_F32, o2, 1, 2, 0, 0), O24 = mk(PR_F32, o8, 2, 2, 4, 0),
		  O0 = mk(PR_F32, o1, 0, 0, 0, 0), O3d = mk(PR_F64, od, 1, 3, 0, 0);
	prt_karg s1[3] = {T(&X), L(2, d02), B(false)}, s2[3] = {T(&X), L(2, d02), B(true)},
		s3[3] = {T(&A), L(1, dm1), B(false)}, s4[3] = {T(&X), L(0, empty), B(false)},
		s5[3] = {T(&X), NONE(), B(false)};
	check(h, sum, s1, 3, &O3);
	check(h, sum, s2, 3, &O131);
	check(h, sum, s3, 3, &O2);
	check(h, sum, s4, 3, &O0);
	check(h, sum, s5, 3, &O0);
	prt_karg m1[3] = {T(&X), L(1, d1), B(false)}, m2[3] = {T(&S), L(1, d0), B(true)},
		m3[3] = {T(&D), L(1, d0), B(false)};
	check(h, mean, m1, 3, &O24);
	check(h, mean, m2, 3, &O3);
	check(h, mean, m3, 3, &O3d);     /* f64: staged on CUDA too */

	const char *ln = "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor";
	const char *rms = "aten::rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor";
	prt_karg ns34[2] = {I(3), I(4)}, ns3[1] = {I(3)}, ns4[1] = {I(4)};
	prt_karg ln1[5] = {T(&X), L(2, ns34), T(&Wt), NONE(), F(1e-3)}, ln2[4] = {T(&S), L(1, ns3), NONE(), T(&R)};
	check(h, ln, ln1, 5, &O234);
	check(h, ln, ln2, 4, &O23);
	prt_karg r1[4] = {T(&A), L(1, ns3), T(&R), NONE()}, r2[4] = {T(&X), L(1, ns4), NONE(), F(1e-6)};
	check(h, rms, r1, 4, &O23);
	check(h, rms, r2, 4, &O234);
}

static const char *embedding = "aten::embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor";
static const char *index_select = "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor";
static const char *index_put = "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)";

/* The index kernels: i64 and i32 indices (negative ones count from the
 * end, as on the host), repeated indices, strided operands. */
static void index_cases(harness *h)
{
	float w12[12], o12[12], o9[9], o8[8], o6[6], self[12] = {0}, v9[9], one[1] = {2.5f}, v4[4];
	for (int i = 0; i < 12; i++)
		w12[i] = (float)i - 5.5f;
	for (int i = 0; i < 9; i++)
		v9[i] = (float)(i + 1);
	for (int i = 0; i < 4; i++)
		v4[i] = (float)(10 * i);
	prt_tensor W = mk(PR_F32, w12, 2, 4, 3, 0);   /* [4,3] seen transposed from [3,4] */
	W.strides[0] = 1, W.strides[1] = 4;
	int64_t i4[4] = {3, 0, -1, 1}, i3[3] = {1, 1, 0}, i3b[3] = {1, 0, 1};
	int32_t j3[3] = {2, 2, 0}, j3b[3] = {2, 0, 2};
	int16_t k2[2] = {1, 0};
	prt_rv Wv = V(W), I22 = V(mk(PR_I64, i4, 2, 2, 2, 0)), J3 = V(mk(PR_I32, j3, 1, 3, 0, 0)),
	      I3 = V(mk(PR_I64, i3, 1, 3, 0, 0)), I3b = V(mk(PR_I64, i3b, 1, 3, 0, 0)),
	      J3b = V(mk(PR_I32, j3b, 1, 3, 0, 0)), K2 = V(mk(PR_I16, k2, 1, 2, 0, 0));
	prt_tensor O223 = mk(PR_F32, o12, 3, 2, 2, 3), O33 = mk(PR_F32, o9, 2, 3, 3, 0);
	prt_karg e1[2] = {T(&Wv), T(&I22)}, e2[2] = {T(&Wv), T(&J3)};
	check(h, embedding, e1, 2, &O223);
	check(h, embedding, e2, 2, &O33);

	prt_rv A = V(transposed23()), X = V(permuted234());
	prt_tensor O24 = mk(PR_F32, o8, 2, 2, 4, 0), O134 = mk(PR_F32, o12, 3, 1, 3, 4),
		  O23 = mk(PR_F32, o6, 2, 2, 3, 0);
	int64_t i4b[4] = {2, 0, -1, 1};
	prt_rv I4 = V(mk(PR_I64, i4b, 1, 4, 0, 0));
	int32_t j1[1] = {1};
	prt_rv J1 = V(mk(PR_I32, j1, 1, 1, 0, 0));
	prt_karg s1[3] = {T(&A), I(1), T(&I4)}, s2[3] = {T(&X), I(0), T(&J1)}, s3[3] = {T(&A), I(0), T(&K2)};
	check(h, index_select, s1, 3, &O24);
	check(h, index_select, s2, 3, &O134);
	check(h, index_select, s3, 3, &O23);   /* i16 indices: staged on CUDA too */

	/* self: [3,4] stored transposed; [2,3] and one value broadcast. */
	prt_tensor Sf = mk(PR_F32, self, 2, 3, 4, 0);
	Sf.strides[0] = 1, Sf.strides[1] = 3;
	prt_rv Self = V(Sf), V9 = V(mk(PR_F32, v9, 2, 3, 3, 0)), One = V(mk(PR_F32, one, 1, 1, 0, 0)),
	      V4 = V(mk(PR_F32, v4, 1, 4, 0, 0));
	prt_tensor O34 = mk(PR_F32, o12, 2, 3, 4, 0);
	prt_tensor Self23 = mk(PR_F32, self, 2, 2, 3, 0);
	prt_rv S23 = V(Self23);
	prt_karg l1[1] = {T(&I3)}, l2[2] = {T(&I3b), T(&J3b)}, l3[1] = {T(&J3)};
	prt_karg p1[4] = {T(&S23), L(1, l1), T(&V9), B(false)};   /* rows 1, 1, 0: the last write wins */
	check(h, index_put, p1, 4, &O23);
	prt_karg p2[4] = {T(&Self), L(2, l2), T(&One), B(true)};  /* (1,2) twice: adds twice */
	check(h, index_put, p2, 4, &O34);
	prt_karg p3[4] = {T(&Self), L(1, l3), T(&V4), B(true)};   /* values [4] for every row */
	check(h, index_put, p3, 4, &O34);
	prt_karg p4[4] = {T(&Self), L(1, l3), T(&V4), B(false)};
	check(h, index_put, p4, 4, &O34);
}

/* An index out of range: the host kernel's message, nothing written. */
static void bad_index_cases(harness *h)
{
	float w12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, o6[6], o8[8], o12[12], self[12] = {1, 2, 3}, v3[3] = {7, 8, 9};
	int64_t bad[2] = {1, 5}, neg[2] = {0, -5};
	int32_t ok[2] = {0, 2}, bad32[2] = {2, 4};
	prt_rv W = V(mk(PR_F32, w12, 2, 4, 3, 0)), Bad = V(mk(PR_I64, bad, 1, 2, 0, 0)),
	      Neg = V(mk(PR_I64, neg, 1, 2, 0, 0)), Ok = V(mk(PR_I32, ok, 1, 2, 0, 0)),
	      Bad32 = V(mk(PR_I32, bad32, 1, 2, 0, 0)), S = V(mk(PR_F32, self, 2, 4, 3, 0)),
	      V3 = V(mk(PR_F32, v3, 1, 3, 0, 0));
	prt_tensor O23 = mk(PR_F32, o6, 2, 2, 3, 0);
	prt_karg e[2] = {T(&W), T(&Bad)};
	check_error(h, embedding, e, 2, &O23, "index 5 out of range [0, 4)");
	prt_karg s[3] = {T(&W), I(1), T(&Neg)};
	prt_tensor O42 = mk(PR_F32, o8, 2, 4, 2, 0);
	check_error(h, index_select, s, 3, &O42, "index -5 out of range [0, 3)");
	prt_karg l1[2] = {T(&Ok), T(&Bad32)}, l2[2] = {T(&Bad), T(&Ok)};
	prt_tensor O43 = mk(PR_F32, o12, 2, 4, 3, 0);
	prt_karg p1[4] = {T(&S), L(2, l1), T(&V3), B(false)};
	check_error(h, index_put, p1, 4, &O43, "index 4 out of range [0, 3)");
	prt_karg p2[4] = {T(&S), L(2, l2), T(&V3), B(true)};
	check_error(h, index_put, p2, 4, &O43, "index 5 out of range [0, 4)");
}

static void on_device(const char *kind, bool staged)
{
	harness h;
	dh_open(&h, kind, staged);
	cases(&h);
	dtype_cases(&h);
	row_cases(&h);
	index_cases(&h);
	bad_index_cases(&h);
	dh_close(&h);
}

Test(staged, host_fallback_on_sim_matches_the_host_kernels) { on_device("sim", true); }

Test(cuda, kernels_match_the_host_kernels)
{
	if (!prt_cuda_available())
		cr_skip_test("no CUDA device here (tests/gpu/run.sh runs this on a GPU)");
	on_device("cuda", false);
}

/* Every op that reads elements has a CUDA kernel of its own: prt_k_staged is
 * only the fallback those kernels take for dtypes they do not handle. Asking
 * for a device loads the CUDA backend (GPU or not), and its kernels with it. */
Test(cuda, no_op_is_staged_by_default)
{
#ifdef PASSRUN_HAVE_CUDA
	(void)prt_cuda_available();
	cr_assert(prt_cuda_loaded(), "the CUDA backend library did not load");
	for (int i = 0; i < prt_n_host_kernels; i++) {
		const prt_kernel *k = prt_kernel_find(prt_host_kernels[i].op);
		cr_expect(k->cuda != prt_k_staged, "%s has no CUDA kernel (staged)", k->op);
		cr_expect((k->cuda != NULL) == !(k->flags & PRT_KERNEL_META), "%s", k->op);
	}
#else
	cr_skip_test("built without CUDA");
#endif
}
