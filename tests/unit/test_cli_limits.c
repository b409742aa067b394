/* test_cli_limits.c: numbers and sizes on passrun's command line and in its
 * inputs that are out of range are refused with the real limit, never
 * truncated or wrapped, and pipelines too large or too deeply nested for
 * libyaml are refused before it spends minutes on them (issue 16, items 7
 * and 16). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *const program_text =
	"passrun 1\n"
	"op aten::relu(Tensor self) -> Tensor\n"
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %r: f32[2,3] = aten::relu(%x)\n"
	"  return %r\n"
	"}\n";

static tu_result run(const char *args)
{
	const char *prog = tu_write_temp("prog.pg", program_text);
	return tu_run("unset PASSRUN_PLUGIN_PATH; %s --no-default-plugins %s %s", PASSRUN_EXE, args,
		      prog);
}

/* ---- item 7: --run=N ---------------------------------------------------- */

Test(cli_limits, run_counts_out_of_range_name_the_limit)
{
	/* 4294967296 ran once ("iterations": 1): the count went through an int */
	const char *bad[] = {"--run=4294967296", "--run=99999999999999999999", "--run=2147483648",
			     "--run=0", "--run=-1", "--run=' 3'", "--run=+3", "--run=0x3",
			     "--run=3x", "--run="};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tu_result r = run(bad[i]);
		cr_expect_eq(r.status, 2, "%s: %s", bad[i], r.err);
		cr_expect(strstr(r.err, "expected a count from 1 to 2147483647"), "%s: %s", bad[i],
			  r.err);
		tu_result_free(&r);
	}
}

Test(cli_limits, a_count_in_range_runs_that_many_times)
{
	tu_result r = run("--run=3 --device=sim --stats=json");
	if (r.status == 2 && strstr(r.err, "without the runtime")) {
		tu_result_free(&r);
		cr_skip_test("passrun was built without the runtime");
	}
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "\"iterations\": 3"), "%s", r.out);
	tu_result_free(&r);
}

/* ---- item 16: pipelines and --set values handed to libyaml ---------------- */

/* Writes `head`, then n copies of c, then `tail` to a temporary file. */
static const char *write_repeated(const char *name, const char *head, char c, size_t n,
				  const char *tail)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/%s", tu_temp_dir(), name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(head, f);
	for (size_t i = 0; i < n; i++)
		fputc(c, f);
	fputs(tail, f);
	fclose(f);
	return path;
}

Test(cli_limits, deep_nesting_in_a_pipeline_is_refused_at_its_place)
{
	/* 128 KB of '[' took 28 s inside libyaml (quadratic in the depth), then
	 * failed at 2:1; the 64th '[' after "passes: " is at column 72 */
	char args[1200];
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("deep.yaml", "passes: ", '[', 128 * 1024, "\n"));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "deep.yaml:1:72: lists and maps nested more than 64 deep"), "%s",
		  r.err);
	tu_result_free(&r);
	/* 60 deep is fine as YAML (and then not a pass list) */
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("ok.yaml", "passes: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", ']', 30, "\n"));
	r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(!strstr(r.err, "nested") && strstr(r.err, "ok.yaml:1:10: expected a pass"), "%s",
		  r.err);
	tu_result_free(&r);
}

Test(cli_limits, deep_nesting_in_a_set_value_is_refused_at_its_place)
{
	/* the value, 100,000 '[', comes from a file: tu_run's command is short */
	char args[1200];
	snprintf(args, sizeof args, "--set \"skip_h2d_for_method_inputs=$(cat %s)\"",
		 write_repeated("deep.set", "", '[', 100000, ""));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	/* "skip_h2d_for_method_inputs=" is 27 characters: the 65th '[' is column 92 */
	cr_expect(strstr(r.err, "--set:1:92: lists and maps nested more than 64 deep"), "%s",
		  r.err);
	tu_result_free(&r);
}

Test(cli_limits, a_pipeline_over_one_mib_is_refused)
{
	char args[1200];
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("big.yaml", "# ", 'x', 2 * 1024 * 1024, "\npasses: []\n"));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "big.yaml:1:1: more than 1048576 bytes of YAML"), "%s", r.err);
	tu_result_free(&r);
}
