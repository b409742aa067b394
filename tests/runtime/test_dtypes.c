/* bool, int64 and f16 end to end (issue 12): each program in
 * tests/runtime/dtypes/ goes through the text format, the cuda pipeline
 * (placement, copies, memory planning), the sim device, --check against the
 * reference interpreter, an --input .npy written by numpy and --output-dir;
 * the outputs read back must be exactly the values PyTorch computes for the
 * same inputs (worked out in each case's comment). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/data.h"
#include "rt.h"
#include "testutil.h"

#define DIR PASSRUN_SOURCE_DIR "/tests/runtime/dtypes"

/* Runs PROGRAM with --input NAME=DIR/FILE under the cuda pipeline on sim with --check
 * and --output-dir, expecting exit status 0; returns the output folder. */
static const char *run_program(const char *program, const char *name, const char *file)
{
	static char out[512];
	snprintf(out, sizeof out, "%s/%s.out", tu_temp_dir(), program);
	tu_result r = tu_run("rm -rf '%s' && mkdir -p '%s' && %s --pipeline cuda --device=sim "
			     "--verify-each --run --check --input %s=%s/%s --output-dir '%s' %s/%s.pg",
			     out, out, PASSRUN_EXE, name, DIR, file, out, DIR, program);
	cr_assert_eq(r.status, 0, "%s: exit %d\n%s", program, r.status, r.err);
	tu_result_free(&r);
	return out;
}

/* Output i of method forward, read back from dir. */
static prt_tensor output(const char *dir, int i, pr_dtype dtype, int64_t numel)
{
	char path[600];
	snprintf(path, sizeof path, "%s/forward.%d.npy", dir, i);
	prt_tensor t;
	pr_err *e = prt_npy_read(path, &t);
	cr_assert_null(e, "%s: %s", path, e ? pr_err_message(e) : "");
	cr_assert_eq(t.dtype, dtype, "%s: dtype %s, expected %s", path, pr_dtype_name(t.dtype),
		     pr_dtype_name(dtype));
	cr_assert_eq(prt_tensor_numel(&t), numel, "%s", path);
	return t;
}

static void expect_i64(const char *dir, int i, const int64_t *want, int n)
{
	prt_tensor t = output(dir, i, PR_I64, n);
	for (int j = 0; j < n; j++) {
		int64_t v = pr_elem_load_i64(PR_I64, t.data + 8 * j);
		cr_expect_eq(v, want[j], "output %d element %d: %lld, expected %lld", i, j,
			     (long long)v, (long long)want[j]);
	}
	free(t.storage);
}

static void expect_bool(const char *dir, int i, const char *want)
{
	int n = (int)strlen(want);
	prt_tensor t = output(dir, i, PR_BOOL, n);
	for (int j = 0; j < n; j++)
		cr_expect_eq(t.data[j], want[j] == '1', "output %d element %d", i, j);
	free(t.storage);
}

static void expect_float(const char *dir, int i, pr_dtype dt, const double *want, int n)
{
	prt_tensor t = output(dir, i, dt, n);
	for (int j = 0; j < n; j++) {
		double v = pr_elem_load(dt, t.data + (int64_t)pr_dtype_size(dt) * j);
		cr_expect_eq(v, want[j], "output %d element %d: %.17g, expected %.17g", i, j, v, want[j]);
	}
	free(t.storage);
}

#define P53 (INT64_C(1) << 53)
#define P60 (INT64_C(1) << 60)

Test(dtypes, int64_beyond_2_to_the_53_stays_exact)
{
	/* x = [[2^53+1, 2^53+3, -5], [7, 2^60+1, 0]], c = [[2^52, 1, 2], [3, 4, 5]]:
	 * s = x + 2c = [[2^54+1, 2^53+5, -1], [13, 2^60+9, 10]], m = s >= 2^53+1,
	 * w = where(m, s, x) = [[2^54+1, 2^53+5, -5], [7, 2^60+9, 0]], y = 3 w^T. */
	const char *dir = run_program("i64", "x", "x_i64.npy");
	int64_t y[6] = {3 * (2 * P53 + 1), 21, 3 * (P53 + 5), 3 * (P60 + 9), -15, 0};
	expect_i64(dir, 0, y, 6);
	expect_bool(dir, 1, "110010");
}

Test(dtypes, bool_through_a_delegate_a_strided_view_and_a_cast)
{
	/* a = [T, F, F, T], b = [T, T, F, T]: c = ~a & b = [F, T, F, F],
	 * c[1::2] = [T, F], logical_or with itself the same, c as f32. */
	const char *dir = run_program("bool", "a", "a_bool.npy");
	expect_bool(dir, 0, "10");
	expect_float(dir, 1, PR_F32, (double[]){0, 1, 0, 0}, 4);
	expect_bool(dir, 2, "0100");
}

Test(dtypes, f16_rounds_as_pytorch)
{
	/* x = [[1, 2], [0.5, 3]], w = [[1, 4], [9, 0.25]] (f16): sqrt(x * w) + 0.1,
	 * every step rounded to f16, as torch gives it. */
	const char *dir = run_program("f16", "x", "x_f16.npy");
	double want[4] = {1.099609375, 2.927734375, 2.220703125, 0.96630859375};
	expect_float(dir, 0, PR_F16, want, 4);
	expect_float(dir, 1, PR_F32, want, 4);
}

Test(dtypes, check_compares_integers_exactly)
{
	/* x = [2^60, -2^60, 2^53], y = 0: the reference gives 2 (x + 1); the
	 * baseline's stale read gives 2x. 2^61 and 2^61 + 2 are one double. */
	tu_result r = tu_run("%s --pipeline baseline --device=sim --run --check --input x=%s/x3_i64.npy "
			     "%s/i64_stale.pg", PASSRUN_EXE, DIR, DIR);
	cr_expect_eq(r.status, 4, "exit %d\n%s", r.status, r.err);
	cr_expect(strstr(r.err, "element 0: 2305843009213693952, reference 2305843009213693954"),
		  "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --device=sim --run --check --input x=%s/x3_i64.npy "
		   "%s/i64_stale.pg", PASSRUN_EXE, DIR, DIR);
	cr_expect_eq(r.status, 0, "exit %d\n%s", r.status, r.err);
	tu_result_free(&r);
}
