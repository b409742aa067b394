/* test_cli_limits.c: numbers and sizes on passrun's command line and in its
 * inputs that are out of range are refused with the real limit, never
 * truncated or wrapped (issue 16, items 7 and 16). */
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
