/* passrun --run --check on every example (issue 6, "Done when"):
 *   - with cuda.yaml on the sim device, every example that the pipeline
 *     accepts runs and matches the reference interpreter, and the bytes the
 *     device layer moved (the "run" block of --stats=json) equal the static
 *     per-call numbers the passes report for that method (and the load
 *     bytes, with skip_h2d_for_constants for F10); the PyTorch exports in
 *     examples/torch too;
 *   - with baseline.yaml, F1 and F2 show wrong numbers (exit 4) and F3 a
 *     placement fault naming the host op (exit 5, M4); M3's copies to a cpu
 *     delegate are refused (exit 5). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* The integer after "key": in s at or after from, or -1. */
static long long json_int(const char *s, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": ", key);
	const char *p = s ? strstr(s, pat) : NULL;
	return p ? atoll(p + strlen(pat)) : -1;
}

/* The static block of method m in "methods". */
static const char *method_block(const char *out, const char *m)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": {", m);
	const char *methods = strstr(out, "\"methods\"");
	return methods ? strstr(methods, pat) : NULL;
}

static void check_example(const char *file, const char *extra)
{
	tu_result r = tu_run("%s --pipeline cuda %s --run=2 --check --stats=json --device=sim %s", PASSRUN_EXE,
			     extra, file);
	if (r.status == 1 || r.status == 2) {   /* the pipeline refuses it: an E- rule */
		cr_expect(strstr(r.err, "error"), "%s: exit %d without an error:\n%s", file, r.status, r.err);
		tu_result_free(&r);
		return;
	}
	cr_expect_eq(r.status, 0, "%s %s: exit %d\n%s", file, extra, r.status, r.err);
	const char *run = strstr(r.out, "\"run\":");
	cr_assert_not_null(run, "%s: no run block:\n%s", file, r.out);
	cr_expect(strstr(run, "\"match\": true"), "%s: no match: %s", file, run);
	char method[64] = "forward";
	const char *m = strstr(run, "\"method\": \"");
	if (m)
		sscanf(m + strlen("\"method\": \""), "%63[^\"]", method);
	const char *st = method_block(r.out, method);
	cr_assert_not_null(st, "%s: no stats for method %s", file, method);
	const char *keys[] = {"h2d_bytes_per_call", "d2h_bytes_per_call", "load_h2d_bytes"};
	for (int i = 0; i < 3; i++)
		cr_expect_eq(json_int(run, keys[i]), json_int(st, keys[i]),
			     "%s %s: %s moved %lld, the passes say %lld", file, extra, keys[i],
			     json_int(run, keys[i]), json_int(st, keys[i]));
	tu_result_free(&r);
}

/* The programs exported from PyTorch (examples/torch/NAME/model.pg): real
 * strided copies (a channels-last weight, a sliced activation) whose bytes
 * are the storage they span, not their element count. Returns how many. */
static int each_torch_example(const char *extra)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/examples/torch", PASSRUN_SOURCE_DIR);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char path[2048];
		snprintf(path, sizeof path, "%s/%s/model.pg", dir, e->d_name);
		if (e->d_name[0] == '.' || access(path, R_OK) != 0)
			continue;
		check_example(path, extra);
		n++;
	}
	closedir(d);
	return n;
}

static void each_example(const char *extra)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/examples", PASSRUN_SOURCE_DIR);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 3, ".pg") != 0)
			continue;
		char path[2048];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		check_example(path, extra);
		n++;
	}
	closedir(d);
	cr_expect(n >= 10, "only %d examples found", n);
	cr_expect(each_torch_example(extra) >= 5, "too few examples/torch/*/model.pg");
}

Test(run_examples, cuda_pipeline_matches_and_counts_the_static_bytes)
{
	each_example("");
}

Test(run_examples, F10_device_constants_move_their_bytes_at_load)
{
	each_example("--set skip_h2d_for_constants=true");
	tu_result r = tu_run("%s --pipeline cuda --set skip_h2d_for_constants=true --run=2 --check "
			     "--stats=json --device=sim %s/examples/f10_device_constants.pg",
			     PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(json_int(strstr(r.out, "\"run\":"), "load_h2d_bytes"), 36, "%s", r.out);
	tu_result_free(&r);
}

static tu_result baseline(const char *example)
{
	return tu_run("%s --pipeline baseline --disable-verify --run --check --device=sim "
		      "%s/examples/%s.pg", PASSRUN_EXE, PASSRUN_SOURCE_DIR, example);
}

Test(run_examples, F1_F2_baseline_gives_wrong_numbers)
{
	const char *ex[] = {"f1_transposed_weight", "f2_relu_between_delegates"};
	for (int i = 0; i < 2; i++) {
		tu_result r = baseline(ex[i]);
		cr_expect_eq(r.status, 4, "%s: exit %d\n%s", ex[i], r.status, r.err);
		tu_result_free(&r);
	}
}

Test(run_examples, F3_M4_baseline_host_op_faults_naming_the_node)
{
	tu_result r = baseline("f3_single_tensor_result");
	cr_expect_eq(r.status, 5, "exit %d\n%s", r.status, r.err);
	cr_expect(strstr(r.err, "placement violation") && strstr(r.err, "node '"), "%s", r.err);
	tu_result_free(&r);
}

/* Without --disable-verify the verifier catches the same programs first. */
Test(run_examples, baseline_faults_are_caught_by_the_default_verification)
{
	const char *ex[] = {"f3_single_tensor_result", "m3_cpu_target_copies"};
	for (int i = 0; i < 2; i++) {
		tu_result r = tu_run("%s --pipeline baseline --run --device=sim %s/examples/%s.pg",
				     PASSRUN_EXE, PASSRUN_SOURCE_DIR, ex[i]);
		cr_expect_eq(r.status, 1, "%s: exit %d\n%s", ex[i], r.status, r.err);
		cr_expect(strstr(r.err, "error[E-PLACEMENT] pass 'verifier'"), "%s", r.err);
		tu_result_free(&r);
	}
}

Test(run_examples, M3_baseline_copies_for_a_cpu_delegate_are_refused)
{
	tu_result r = baseline("m3_cpu_target_copies");
	cr_expect_eq(r.status, 5, "exit %d\n%s", r.status, r.err);
	cr_expect(strstr(r.err, "M3") && strstr(r.err, "node '"), "%s", r.err);
	tu_result_free(&r);
}
