/* The device kernels of aten::round and aten::round.decimals (and their
 * in-place forms, runtime/kernels_cuda_nn.cu) against their host kernels:
 * halves, NaN, infinities and values whose scaled form is a half only in
 * float, on a transposed f32 view, f16, bf16, f64 and i64; decimals 0, 2, -1
 * and 40; the refusals. (test_kernels_round.c checks the host kernels
 * against PyTorch.)
 *   - staged: the cases through prt_k_staged on the sim device, always run;
 *   - cuda: the CUDA kernels, where a GPU is present (tests/gpu/run.sh
 *     fails if this was skipped there). */
#include "device_harness.h"
#include "passrun/data.h"

static const char *round_op = "aten::round(Tensor self) -> Tensor";
static const char *round_in_place = "aten::round_(Tensor(a!) self) -> Tensor(a!)";
static const char *decimals_op = "aten::round.decimals(Tensor self, *, int decimals) -> Tensor";
static const char *decimals_in_place =
	"aten::round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)";

static const double vals[6] = {0.5, 2.675, -2.5, NAN, INFINITY, 12345.678};

/* A [3, 2] tensor of dt over buf holding vals, seen transposed as [2, 3]. */
static prt_tensor transposed(pr_dtype dt, void *buf)
{
	for (int i = 0; i < 6; i++)
		pr_elem_store(dt, (uint8_t *)buf + (size_t)i * pr_dtype_size(dt), vals[i]);
	prt_tensor t = dh_mk(dt, buf, 2, 3, 2, 0);
	int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
	return dh_view(t, 2, shape, strides);
}

static void dtype_cases(dh_harness *h, pr_dtype dt)
{
	static uint64_t x[6], o[6];
	prt_rv X = dh_V(transposed(dt, x));
	prt_tensor O = dh_mk(dt, o, 2, 2, 3, 0);
	prt_karg one[1] = {dh_T(&X)};
	dh_check(h, round_op, one, 1, &O);
	dh_check(h, round_in_place, one, 1, &O);
	int64_t ds[4] = {0, 2, -1, 40};
	for (int i = 0; i < 4; i++) {
		prt_karg two[2] = {dh_T(&X), dh_I(ds[i])};
		dh_check(h, decimals_op, two, 2, &O);
	}
	prt_karg two[2] = {dh_T(&X), dh_I(1)};
	dh_check(h, decimals_in_place, two, 2, &O);
}

static void all_cases(dh_harness *h)
{
	pr_dtype floats[4] = {PR_F32, PR_F16, PR_BF16, PR_F64};
	for (int i = 0; i < 4; i++)
		dtype_cases(h, floats[i]);
	static int64_t li[6] = {7, -3, 0, 5, -8, 2}, lo[6];
	prt_rv LI = dh_V(dh_mk(PR_I64, li, 1, 6, 0, 0));
	prt_tensor LO = dh_mk(PR_I64, lo, 1, 6, 0, 0);
	prt_karg ints[2] = {dh_T(&LI), dh_I(0)};
	dh_check(h, round_op, ints, 1, &LO);
	dh_check_error(h, decimals_op, ints, 2, &LO, "round with decimals is not implemented for i64");
}

/* all_cases on device kind, through prt_k_staged when staged. */
static void run_on(const char *kind, bool staged)
{
	dh_harness h;
	dh_open(&h, kind, staged);
	all_cases(&h);
	dh_close(&h);
}

Test(staged, round_kernels_staged_on_sim_match_the_host) { run_on("sim", true); }

Test(cuda, round_kernels_match_the_host_kernels)
{
	if (!prt_cuda_available())
		cr_skip_test("no CUDA device here (tests/gpu/run.sh runs this on a GPU)");
	run_on("cuda", false);
}
