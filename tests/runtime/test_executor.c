/* The executor and the reference interpreter (issue 6; docs/placement-rules.md M3, M4,
 * M5, F10): small placed programs run on the sim device and are checked
 * against hand-computed values and against the reference. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>

#include "passrun/format.h"
#include "passrun/runtime.h"
#include "rt.h"
#include "testutil.h"

#define HDR                                                                  \
	"passrun 1\n"                                                        \
	"op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n" \
	"op aten::mul.Tensor(Tensor self, Tensor other) -> Tensor\n"        \
	"op aten::relu(Tensor self) -> Tensor\n"                            \
	"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"                   \
	"op aten::sin(Tensor self) -> Tensor\n"                             \
	"op aten::t(Tensor(a) self) -> Tensor(a)\n"                         \
	"op custom::accumulate(Tensor(a!) x, Tensor y) -> ()\n"             \
	"op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"              \
	"op et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}\n"

#define ADD0                                                                 \
	"delegate @add0 backend=\"CudaBackend\" target_device=\"cuda:0\" {\n" \
	"  %a: f32[2,3] = input\n"                                          \
	"  %b: f32[2,3] = input\n"                                          \
	"  %c: f32[2,3] = aten::add.Tensor(%a, %b)\n"                       \
	"  return %c\n"                                                     \
	"}\n"

static const float X[6] = {-1, 2, -3, 4, -5, 6};

static prt_exec *load(pr_program *p, bool reference)
{
	prt_exec_options o = {.device = "sim", .reference = reference};
	prt_exec *e = NULL;
	pr_err *err = prt_exec_load(p, "forward", &o, &e);
	cr_assert_null(err, "load: %s", err ? pr_err_message(err) : "");
	return e;
}

static void set_x(prt_exec *e, const float *v)
{
	int64_t shape[2] = {2, 3};
	prt_tensor t = prt_tensor_make(PR_F32, 2, shape, (void *)v);
	cr_assert_eq(prt_exec_n_inputs(e), 1);
	pr_err *err = prt_exec_set_input(e, 0, &t);
	cr_assert_null(err);
}

static void run_ok(prt_exec *e)
{
	pr_err *err = prt_exec_run(e);
	cr_assert_null(err, "run: %s", err ? pr_err_message(err) : "");
}

static void expect_output(prt_exec *e, int i, const float *want, int n)
{
	prt_tensor t;
	pr_err *err = prt_exec_output(e, i, &t);
	cr_assert_null(err);
	cr_assert_eq(prt_tensor_numel(&t), n);
	for (int j = 0; j < n; j++)
		cr_expect_float_eq(((float *)t.data)[j], want[j], 1e-6, "output %d element %d: %g vs %g",
				   i, j, ((float *)t.data)[j], want[j]);
	free(t.storage);
}

static char *run_error(prt_exec *e)
{
	pr_err *err = prt_exec_run(e);
	cr_assert_not_null(err, "the call should fail");
	char *m = pr_xstrdup(pr_err_message(err));
	pr_err_free(err);
	return m;
}

/* weight = arange: 0..5; r = relu(x + w) computed on cuda:0 with copies. */
static const char *placed_add =
	HDR ADD0
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %w: f32[2,3] = input parameter \"weight\" data=arange\n"
	"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
	"  %w_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%w)\n"
	"  %d: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d, %w_h2d)\n"
	"  %t: f32[2,3]@cuda:0 = getitem %d, 0\n"
	"  %t_d2h: f32[2,3] = et_copy::_d2h_copy(%t)\n"
	"  %r: f32[2,3] = aten::relu(%t_d2h)\n"
	"  return %r\n"
	"}\n";

Test(executor, delegate_on_sim_device_matches_hand_values_and_counts_bytes)
{
	pr_program *p = tu_parse(placed_add);
	prt_exec *e = load(p, false);
	set_x(e, X);
	run_ok(e);
	const float want[6] = {0, 3, 0, 7, 0, 11};
	expect_output(e, 0, want, 6);
	int64_t h2d, d2h;
	prt_exec_call_bytes(e, &h2d, &d2h);
	cr_expect_eq(h2d, 48, "two 24-byte h2d copies per call, got %lld", (long long)h2d);
	cr_expect_eq(d2h, 24);
	cr_expect_eq(prt_exec_load_bytes(e), 0);
	run_ok(e);   /* a second call moves the same */
	prt_exec_call_bytes(e, &h2d, &d2h);
	cr_expect_eq(h2d, 48);
	prt_exec_free(e);
	pr_program_free(p);
}

Test(executor, reference_runs_delegate_bodies_as_host_code)
{
	pr_program *p = tu_parse(placed_add);
	prt_exec *e = load(p, true);
	set_x(e, X);
	run_ok(e);
	const float want[6] = {0, 3, 0, 7, 0, 11};
	expect_output(e, 0, want, 6);
	int64_t h2d, d2h;
	prt_exec_call_bytes(e, &h2d, &d2h);
	cr_expect_eq(h2d + d2h, 0, "the reference moves nothing through a device");
	prt_exec_free(e);
	pr_program_free(p);
}

/* M4: a host op reads the delegate's device output directly (F3's baseline). */
Test(executor, M4_host_op_reading_device_memory_faults_naming_the_node)
{
	pr_program *p = tu_parse(
		HDR ADD0
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[2,3] = input parameter \"weight\" data=arange\n"
		"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %w_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%w)\n"
		"  %d: f32[2,3]@cuda:0 = delegate @add0(%x_h2d, %w_h2d)\n"
		"  %r: f32[2,3] = aten::sin(%d)\n"
		"  return %r\n"
		"}\n");
	prt_exec *e = load(p, false);
	set_x(e, X);
	char *m = run_error(e);
	cr_expect(strstr(m, "placement violation") && strstr(m, "node 'r'") &&
		  strstr(m, "touched device memory") && strstr(m, "cuda:0"), "%s", m);
	free(m);
	/* The executor stays usable: the sim memory is protected again. */
	m = run_error(e);
	cr_expect(strstr(m, "node 'r'"), "%s", m);
	free(m);
	prt_exec_free(e);
	pr_program_free(p);
}

/* M4: a device delegate handed host memory (no h2d copy: F5's baseline). */
Test(executor, M4_device_kernel_reading_host_memory_is_refused_naming_the_node)
{
	pr_program *p = tu_parse(
		HDR ADD0
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[2,3] = input buffer \"weight\" data=arange\n"
		"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %d: f32[2,3]@cuda:0 = delegate @add0(%x_h2d, %w)\n"
		"  %r: f32[2,3] = et_copy::_d2h_copy(%d)\n"
		"  return %r\n"
		"}\n");
	prt_exec *e = load(p, false);
	set_x(e, X);
	char *m = run_error(e);
	cr_expect(strstr(m, "placement violation") && strstr(m, "node 'c'") &&
		  strstr(m, "host memory"), "%s", m);
	free(m);
	prt_exec_free(e);
	pr_program_free(p);
}

static char *load_error(const char *text)
{
	pr_program *p = tu_parse(text);
	prt_exec_options o = {.device = "sim"};
	prt_exec *e = NULL;
	pr_err *err = prt_exec_load(p, "forward", &o, &e);
	cr_assert_not_null(err, "load should fail");
	cr_assert_null(e);
	char *m = pr_xstrdup(pr_err_message(err));
	pr_err_free(err);
	pr_program_free(p);
	return m;
}

Test(executor, M3_h2d_copy_to_the_cpu_is_refused_naming_the_node)
{
	char *m = load_error(HDR
			     "method @forward {\n"
			     "  %x: f32[2,3] = input user \"x\"\n"
			     "  %x_h2d_cpu: f32[2,3] = et_copy::_h2d_copy(%x)\n"
			     "  return %x_h2d_cpu\n"
			     "}\n");
	cr_expect(strstr(m, "node 'x_h2d_cpu'") && strstr(m, "destination is on the CPU") &&
		  strstr(m, "M3"), "%s", m);
	free(m);
}

Test(executor, M3_d2h_copy_from_the_cpu_is_refused_naming_the_node)
{
	char *m = load_error(HDR
			     "method @forward {\n"
			     "  %x: f32[2,3] = input user \"x\"\n"
			     "  %back: f32[2,3] = et_copy::_d2h_copy(%x)\n"
			     "  return %back\n"
			     "}\n");
	cr_expect(strstr(m, "node 'back'") && strstr(m, "source is on the CPU"), "%s", m);
	free(m);
}

Test(executor, op_without_kernel_is_refused_at_load_naming_the_op)
{
	char *m = load_error("passrun 1\n"
			     "op aten::frobnicate(Tensor self) -> Tensor\n"
			     "method @forward {\n"
			     "  %x: f32[2] = input user \"x\"\n"
			     "  %y: f32[2] = aten::frobnicate(%x)\n"
			     "  return %y\n"
			     "}\n");
	cr_expect(strstr(m, "aten::frobnicate") && strstr(m, "no kernel") && strstr(m, "'y'"), "%s", m);
	free(m);
}

/* A method that calls @id0 on cuda:0 with its input x, copied there and
 * back. */
#define CALL_ID0_ON_CUDA0                                                    \
	"method @forward {\n"                                                \
	"  %x: f32[2,3] = input user \"x\"\n"                                \
	"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"               \
	"  %d: f32[2,3]@cuda:0 = delegate @id0(%x_h2d)\n"                    \
	"  %r: f32[2,3] = et_copy::_d2h_copy(%d)\n"                          \
	"  return %r\n"                                                      \
	"}\n"

/* M5: the body was compiled for a transposed layout (strides [1,2]); the
 * caller's copy is contiguous. The body reads the bytes with its strides. */
Test(executor, M5_delegate_reads_inputs_with_the_body_layout)
{
	pr_program *p = tu_parse(
		HDR
		"delegate @id0 target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3]{strides=[1,2]} = input\n"
		"  %b: f32[2,3] = aten::mul.Tensor(%a, %a)\n"
		"  return %b\n"
		"}\n"
		CALL_ID0_ON_CUDA0);
	prt_exec *e = load(p, false);
	set_x(e, X);
	run_ok(e);
	/* Bytes x0..x5 read as a[i][j] = x[i + 2j]: rows (x0,x2,x4), (x1,x3,x5). */
	const float want[6] = {1, 9, 25, 4, 16, 36};
	expect_output(e, 0, want, 6);
	prt_exec_free(e);
	prt_exec *r = load(p, true);
	set_x(r, X);
	run_ok(r);
	const float eager[6] = {1, 4, 9, 16, 25, 36};
	expect_output(r, 0, eager, 6);
	prt_exec_free(r);
	pr_program_free(p);
}

/* M5: a body layout that reaches past its argument's storage (strides
 * [1,9] over six elements: element 19) is refused before the body runs, on
 * the device and in a body run on the host alike, instead of read; the
 * reference reads the caller's layout and runs. */
#define PAST_BODY(TARGET)                                                    \
	"delegate @id0 target_device=\"" TARGET "\" {\n"                    \
	"  %a: f32[2,3]{strides=[1,9]} = input\n"                           \
	"  %b: f32[2,3] = aten::mul.Tensor(%a, %a)\n"                       \
	"  return %b\n"                                                     \
	"}\n"

Test(executor, M5_a_body_layout_past_the_argument_is_refused)
{
	static const char *const programs[] = {
		HDR PAST_BODY("cuda:0")
		CALL_ID0_ON_CUDA0,
		HDR PAST_BODY("cpu")
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %r: f32[2,3] = delegate @id0(%x)\n"
		"  return %r\n"
		"}\n",
	};
	static const char *const callers[] = {"node 'd'", "node 'r'"};   /* the calls' names */
	for (int i = 0; i < 2; i++) {
		pr_program *p = tu_parse(programs[i]);
		prt_exec *e = load(p, false);
		set_x(e, X);
		char *m = run_error(e);
		cr_expect(strstr(m, callers[i]), "program %d: %s", i, m);
		cr_expect(strstr(m, "input 0 of @id0") &&
			  strstr(m, "reaches outside the storage of its argument of 24 bytes") &&
			  strstr(m, "elements 0 to 19"), "program %d: %s", i, m);
		free(m);
		prt_exec_free(e);
		prt_exec *r = load(p, true);
		set_x(r, X);
		run_ok(r);
		prt_exec_free(r);
		pr_program_free(p);
	}
}

/* F10: a device-resident constant is copied once at load, never per call,
 * and the first call reads the right data. */
Test(executor, F10_device_constant_copied_once_at_load)
{
	pr_program *p = tu_parse(
		HDR ADD0
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[2,3]@cuda:0 = input parameter \"weight\" data=arange\n"
		"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %d: f32[2,3]@cuda:0 = delegate @add0(%x_h2d, %w)\n"
		"  %r: f32[2,3] = et_copy::_d2h_copy(%d)\n"
		"  return %r\n"
		"}\n");
	prt_exec *e = load(p, false);
	cr_expect_eq(prt_exec_load_bytes(e), 24);
	set_x(e, X);
	run_ok(e);
	const float want[6] = {-1, 3, -1, 7, -1, 11};
	expect_output(e, 0, want, 6);
	int64_t h2d, d2h;
	prt_exec_call_bytes(e, &h2d, &d2h);
	cr_expect_eq(h2d, 24, "only x is copied per call, got %lld", (long long)h2d);
	cr_expect_eq(d2h, 24);
	prt_exec_free(e);
	pr_program_free(p);
}

/* Memory plan: tensors at offsets of one arena per device; a view (t) and an
 * in-place op (relu_) share their base's storage. */
Test(executor, planned_arenas_views_and_in_place_results)
{
	pr_program *p = tu_parse(
		HDR
		"method @forward {\n"
		"  %x: f32[2,3]{mem=cpu:0} = input user \"x\"\n"
		"  %y: f32[2,3]{mem=cpu:32} = aten::sin(%x)\n"
		"  %z: f32[2,3]{mem=cpu:0} = aten::relu_(%y)\n"
		"  %v: f32[3,2]{strides=[1,3], mem=cpu:32} = aten::t(%z)\n"
		"  %s: f32[3,2]{mem=cpu:64} = aten::add.Tensor(%v, %v)\n"
		"  return %s, %y\n"
		"}\n");
	prt_exec *e = load(p, false);
	set_x(e, X);
	run_ok(e);
	float sy[6], s[6];
	for (int i = 0; i < 6; i++)
		sy[i] = fmaxf(0, sinf(X[i]));
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			s[i * 2 + j] = 2 * sy[j * 3 + i];
	expect_output(e, 0, s, 6);
	expect_output(e, 1, sy, 6);   /* relu_ wrote y in place */
	prt_exec_free(e);
	pr_program_free(p);
}

/* A mutable buffer keeps its value from one call to the next. */
Test(executor, mutable_buffer_persists_between_calls)
{
	pr_program *p = tu_parse(
		HDR
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %k: f32[2,3] = input buffer \"cache\" data=ones\n"
		"  custom::accumulate(%k, %x)\n"
		"  %r: f32[2,3] = aten::relu(%k)\n"
		"  return %r, %k -> buffer \"cache\"\n"
		"}\n");
	for (int ref = 0; ref < 2; ref++) {
		prt_exec *e = load(p, ref);
		set_x(e, X);
		run_ok(e);
		run_ok(e);
		float want[6];
		for (int i = 0; i < 6; i++)
			want[i] = fmaxf(0, 1 + 2 * X[i]);
		expect_output(e, 0, want, 6);
		prt_exec_free(e);
	}
	pr_program_free(p);
}

/* A written-back input: the next call starts from the returned value. */
Test(executor, written_back_input_feeds_the_next_call)
{
	pr_program *p = tu_parse(
		HDR
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %y: f32[2,3] = aten::add.Tensor(%x, %x)\n"
		"  return %y -> input \"x\"\n"
		"}\n");
	prt_exec *e = load(p, false);
	set_x(e, X);
	run_ok(e);
	run_ok(e);
	float want[6];
	for (int i = 0; i < 6; i++)
		want[i] = 4 * X[i];
	expect_output(e, 0, want, 6);
	prt_exec_free(e);
	pr_program_free(p);
}

Test(executor, missing_input_is_an_error_naming_it)
{
	pr_program *p = tu_parse(placed_add);
	prt_exec *e = load(p, false);
	char *m = run_error(e);
	cr_expect(strstr(m, "input 'x'"), "%s", m);
	free(m);
	prt_exec_free(e);
	pr_program_free(p);
}

/* F1: a constant that is neither contiguous nor channels-last is stored
 * contiguous (as ExecuTorch's emitter does). Host ops read the right values;
 * a delegate compiled for the original strides reads the stored bytes with
 * them, which gives the wrong elements, the bug param-layout fixes. */
Test(executor, F1_odd_layout_constant_is_stored_contiguous)
{
	pr_program *p = tu_parse(
		HDR
		"delegate @dbl target_device=\"cuda:0\" {\n"
		"  %b: f32[3,2]{strides=[1,3]} = input\n"
		"  %c: f32[3,2] = aten::add.Tensor(%b, %b)\n"
		"  return %c\n"
		"}\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[3,2]{strides=[1,3]} = input parameter \"weight\" data=arange\n"
		"  %sq: f32[3,2] = aten::mul.Tensor(%w, %w)\n"
		"  %w_h2d: f32[3,2]@cuda:0{strides=[1,3]} = et_copy::_h2d_copy(%w)\n"
		"  %d: f32[3,2]@cuda:0 = delegate @dbl(%w_h2d)\n"
		"  %r: f32[3,2] = et_copy::_d2h_copy(%d)\n"
		"  return %sq, %r\n"
		"}\n");
	prt_exec *e = load(p, false);
	set_x(e, X);
	run_ok(e);
	const float sq[6] = {0, 1, 4, 9, 16, 25};
	expect_output(e, 0, sq, 6);
	/* Stored bytes 0..5 read with strides [1,3]: [[0,3],[1,4],[2,5]], doubled. */
	const float wrong[6] = {0, 6, 2, 8, 4, 10};
	expect_output(e, 1, wrong, 6);
	prt_exec_free(e);
	pr_program_free(p);
}

/* ---- prt_runtime_execute: what passrun --run --check does ------------------------ */

static const char *original_add =
	HDR ADD0
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %w: f32[2,3] = input parameter \"weight\" data=arange\n"
	"  %d: (f32[2,3]) = delegate @add0(%x, %w)\n"
	"  %t: f32[2,3] = getitem %d, 0\n"
	"  %r: f32[2,3] = aten::relu(%t)\n"
	"  return %r\n"
	"}\n";

Test(execute, placed_program_matches_the_reference_and_reports_device_bytes)
{
	pr_program *orig = tu_parse(original_add), *placed = tu_parse(placed_add);
	prt_run_options o = {.iterations = 3, .device = "sim", .check = true, .seed = 7,
			    .output_dir = tu_temp_dir()};
	prt_run_report r;
	pr_err *err = prt_runtime_execute(orig, placed, &o, &r);
	cr_assert_null(err, "%s", err ? pr_err_message(err) : "");
	cr_expect_eq(r.exit_status, 0);
	cr_expect(r.checked && r.match, "%s", r.mismatch);
	cr_expect_eq(r.iterations, 3);
	cr_expect_eq(r.h2d_bytes_per_call, 48);
	cr_expect_eq(r.d2h_bytes_per_call, 24);
	cr_expect_eq(r.load_h2d_bytes, 0);
	cr_expect_str_eq(r.device, "sim");
	cr_expect_str_eq(r.method, "forward");
	char path[512];
	snprintf(path, sizeof path, "%s/forward.0.npy", tu_temp_dir());
	prt_tensor t;
	cr_assert_null(prt_npy_read(path, &t), "--output-dir writes forward.0.npy");
	cr_expect(t.rank == 2 && t.shape[1] == 3);
	free(t.storage);
	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);
	prt_run_report_json(&r, f);
	fclose(f);
	cr_expect(strstr(json, "\"match\": true") && strstr(json, "\"h2d_bytes_per_call\": 48") &&
		  strstr(json, "\"iterations\": 3"), "%s", json);
	free(json);
	pr_program_free(orig);
	pr_program_free(placed);
}

Test(execute, M5_layout_mismatch_is_found_by_check_with_exit_4)
{
	const char *body = HDR
		"delegate @sq0 target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3]{strides=[1,2]} = input\n"
		"  %b: f32[2,3] = aten::mul.Tensor(%a, %a)\n"
		"  return %b\n"
		"}\n";
	char *orig_text = pr_xasprintf("%s"
		"method @forward {\n"
		"  %%w: f32[2,3]{strides=[1,2]} = input parameter \"w\" data=arange\n"
		"  %%d: f32[2,3] = delegate @sq0(%%w)\n"
		"  return %%d\n"
		"}\n", body);
	/* Baseline F1: the copy of the weight is contiguous; the body still reads
	 * it with strides [1,2]. */
	char *placed_text = pr_xasprintf("%s"
		"method @forward {\n"
		"  %%w: f32[2,3] = input parameter \"w\" data=arange\n"
		"  %%w_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%%w)\n"
		"  %%d: f32[2,3]@cuda:0 = delegate @sq0(%%w_h2d)\n"
		"  %%r: f32[2,3] = et_copy::_d2h_copy(%%d)\n"
		"  return %%r\n"
		"}\n", body);
	pr_program *orig = tu_parse(orig_text), *placed = tu_parse(placed_text);
	prt_run_options o = {.iterations = 1, .device = "sim", .check = true};
	prt_run_report r;
	pr_err *err = prt_runtime_execute(orig, placed, &o, &r);
	cr_assert_null(err, "%s", err ? pr_err_message(err) : "");
	cr_expect_eq(r.exit_status, 4);
	cr_expect(!r.match);
	cr_expect(strstr(r.mismatch, "output 0 (r)"), "%s", r.mismatch);
	cr_expect(r.max_abs_err > 1);
	pr_program_free(orig);
	pr_program_free(placed);
	free(orig_text);
	free(placed_text);
}

Test(execute, placement_violation_is_exit_5_and_bad_input_exit_2)
{
	pr_program *orig = tu_parse(original_add);
	pr_program *bad = tu_parse(
		HDR ADD0
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[2,3] = input parameter \"weight\" data=arange\n"
		"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %w_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%w)\n"
		"  %d: f32[2,3]@cuda:0 = delegate @add0(%x_h2d, %w_h2d)\n"
		"  %r: f32[2,3] = aten::relu(%d)\n"
		"  return %r\n"
		"}\n");
	prt_run_options o = {.iterations = 1, .device = "sim", .check = true};
	prt_run_report r;
	pr_err *err = prt_runtime_execute(orig, bad, &o, &r);
	cr_assert_not_null(err);
	cr_expect_eq(r.exit_status, 5);
	cr_expect(prt_is_placement_violation(err) && strstr(pr_err_message(err), "node 'r'"), "%s",
		  pr_err_message(err));
	pr_err_free(err);
	prt_run_input in = {"nope", "/nonexistent.npy"};
	o.n_inputs = 1;
	o.inputs = &in;
	err = prt_runtime_execute(orig, orig, &o, &r);
	cr_assert_not_null(err);
	cr_expect_eq(r.exit_status, 2);
	cr_expect(strstr(pr_err_message(err), "nope"), "%s", pr_err_message(err));
	pr_err_free(err);
	pr_program_free(orig);
	pr_program_free(bad);
}

Test(execute, input_from_npy_file_is_used_by_both)
{
	pr_program *orig = tu_parse(original_add), *placed = tu_parse(placed_add);
	int64_t shape[2] = {2, 3};
	prt_tensor x = prt_tensor_make(PR_F32, 2, shape, (void *)X);
	char path[1024], dir[512];
	snprintf(path, sizeof path, "%s/x.npy", tu_temp_dir());
	snprintf(dir, sizeof dir, "%s/out", tu_temp_dir());
	mkdir(dir, 0700);
	cr_assert_null(prt_npy_write(path, &x));
	prt_run_input in = {"x", path};
	prt_run_options o = {.iterations = 1, .device = "sim", .check = true, .n_inputs = 1,
			    .inputs = &in, .output_dir = dir};
	prt_run_report r;
	pr_err *err = prt_runtime_execute(orig, placed, &o, &r);
	cr_assert_null(err, "%s", err ? pr_err_message(err) : "");
	cr_expect(r.match);
	snprintf(path, sizeof path, "%s/forward.0.npy", dir);
	prt_tensor t;
	cr_assert_null(prt_npy_read(path, &t));
	const float want[6] = {0, 3, 0, 7, 0, 11};
	for (int i = 0; i < 6; i++)
		cr_expect_eq(((float *)t.data)[i], want[i]);
	free(t.storage);
	pr_program_free(orig);
	pr_program_free(placed);
}
