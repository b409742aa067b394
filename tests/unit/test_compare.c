/* passrun compare: one table (or JSON) with a row per pipeline. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* The row of pipeline `name` in the table (a copy of its line), or NULL. */
static char *row_of(const char *table, const char *name)
{
	size_t n = strlen(name);
	for (const char *line = table; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > n && !strncmp(line, name, n) && line[n] == ' ')
			return strndup(line, len);
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

/* Column k (0-based, split on runs of spaces) of a row, as a number. */
static long column(const char *row, int k)
{
	const char *p = row;
	for (int i = 0; i < k; i++) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	return strtol(p, NULL, 10);
}

enum { COL_H2D = 1, COL_H2D_BYTES = 2 };   /* single-method programs have no method column */

Test(compare, a_row_per_pipeline)
{
	tu_result r = tu_run("%s compare --pipelines baseline,cuda,ablate/no-copy-reuse "
			     "--device=sim %s/examples/f8_copy_reuse.pg", PASSRUN_EXE,
			     PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "compare failed (%d): %s", r.status, r.err);
	const char *names[] = {"baseline", "cuda", "ablate/no-copy-reuse"};
	for (int i = 0; i < 3; i++) {
		char *row = row_of(r.out, names[i]);
		cr_assert(row, "no row for %s:\n%s", names[i], r.out);
		free(row);
	}
	cr_assert(strstr(r.out, "h2d B/call"), "a header row:\n%s", r.out);
	cr_assert(!strstr(r.err, "== cuda =="), "diagnostics stay in the rows: %s", r.err);
	tu_result_free(&r);
}

/* --diagnostics prints each cell's diagnostics, grouped, on stderr. */
Test(compare, diagnostics_on_request)
{
	tu_result r = tu_run("%s compare --diagnostics --pipelines baseline,cuda --device=sim "
			     "%s/examples/f1_transposed_weight.pg", PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *cuda = strstr(r.err, "== cuda ==");
	cr_assert(cuda, "diagnostics are grouped per pipeline on stderr: %s", r.err);
	cr_assert(strstr(cuda, "warning[W-LAYOUT-CHANGED]"), "%s", r.err);
	cr_assert_lt(strstr(r.err, "== baseline =="), cuda, "in cell order: %s", r.err);
	tu_result_free(&r);
	r = tu_run("%s compare --pipelines baseline,cuda --device=sim "
		   "%s/examples/f1_transposed_weight.pg", PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert(!strstr(r.err, "W-LAYOUT-CHANGED"), "not without --diagnostics: %s", r.err);
	tu_result_free(&r);
}

/* F8: the baseline copies a tensor once per reader, cuda once per device. */
Test(compare, baseline_copies_more_than_cuda_on_f8)
{
	const char *files[] = {"f8_copy_reuse", "f8_constant_three_delegates",
			       "f8_input_three_devices", "f8_written_between"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		tu_result r = tu_run("%s compare --pipelines baseline,cuda --device=sim "
				     "%s/examples/%s.pg", PASSRUN_EXE, PASSRUN_SOURCE_DIR, files[i]);
		cr_assert_eq(r.status, 0, "%s: %s", files[i], r.err);
		char *base = row_of(r.out, "baseline"), *cuda = row_of(r.out, "cuda");
		cr_assert(base && cuda, "%s:\n%s", files[i], r.out);
		cr_assert_gt(column(base, COL_H2D), column(cuda, COL_H2D), "%s:\n%s", files[i], r.out);
		cr_assert_gt(column(base, COL_H2D_BYTES), column(cuda, COL_H2D_BYTES), "%s", files[i]);
		free(base);
		free(cuda);
		tu_result_free(&r);
	}
}

/* The check column says what `passrun --pipeline NAME --check` would: the
 * baseline gets F1's transposed weight wrong, cuda right. */
Test(compare, check_result_and_exit_per_pipeline)
{
	tu_result v = tu_run("%s --pipeline baseline %s/examples/f1_transposed_weight.pg "
			     "--device=sim --check", PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	if (v.status == 2 && strstr(v.err, "without"))
		cr_skip_test("passrun was built without the runtime");
	tu_result r = tu_run("%s compare --device=sim %s/examples/f1_transposed_weight.pg",
			     PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *base = row_of(r.out, "baseline"), *cuda = row_of(r.out, "cuda");
	cr_assert(base && cuda, "default pipelines are baseline,cuda:\n%s", r.out);
	cr_assert_eq(v.status, 4, "the single run mismatches: %s", v.err);
	cr_assert(strstr(base, "mismatch"), "%s", base);
	cr_assert(strstr(base, " 4  "), "exit 4 in the row: %s", base);
	cr_assert(strstr(cuda, "match"), "%s", cuda);
	cr_assert(strstr(cuda, "W-LAYOUT-CHANGED"), "cuda's diagnostics: %s", cuda);
	cr_assert(strstr(r.out, "baseline: output 0"), "the mismatch is explained:\n%s", r.out);
	free(base);
	free(cuda);
	tu_result_free(&r);
	tu_result_free(&v);
}

Test(compare, refused_copy_is_told_apart_from_a_fault)
{
	tu_result r = tu_run("%s compare --device=sim %s/examples/m3_cpu_target_copies.pg",
			     PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	if (!strstr(r.out, "--check)"))
		cr_skip_test("passrun was built without the runtime");
	char *base = row_of(r.out, "baseline");
	cr_assert(base && strstr(base, "refused"), "M3: %s", r.out);
	free(base);
	tu_result_free(&r);
}

Test(compare, unknown_pipeline_is_exit_2_with_a_suggestion)
{
	tu_result r = tu_run("%s compare --pipelines baseline,cudda %s/examples/f8_copy_reuse.pg",
			     PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "unknown pipeline 'cudda'"), "%s", r.err);
	cr_assert(strstr(r.err, "did you mean 'cuda'?"), "%s", r.err);
	cr_assert_eq(r.out[0], '\0', "nothing ran: %s", r.out);
	tu_result_free(&r);
}

Test(compare, json_for_scripts)
{
	tu_result r = tu_run("%s compare --format=json --pipelines baseline,cuda --device=sim "
			     "%s/examples/f8_copy_reuse.pg | python3 -c 'import json,sys; "
			     "d=json.load(sys.stdin); p=d[\"pipelines\"]; "
			     "print(p[0][\"name\"], p[1][\"name\"], "
			     "p[0][\"methods\"][\"forward\"][\"h2d_copies\"] > "
			     "p[1][\"methods\"][\"forward\"][\"h2d_copies\"], "
			     "sorted(p[1][\"methods\"][\"forward\"][\"planned_bytes\"]))'",
			     PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "not valid JSON: %s", r.err);
	cr_assert_str_eq(r.out, "baseline cuda True ['cpu', 'cuda:0']\n");
	tu_result_free(&r);
}

Test(compare, options_that_name_one_result_are_refused)
{
	tu_result r = tu_run("%s compare -o x.pg %s/examples/f8_copy_reuse.pg", PASSRUN_EXE,
			     PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "compare does not take -o"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --pipelines cuda %s/examples/f8_copy_reuse.pg", PASSRUN_EXE,
		   PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2, "--pipelines without compare");
	tu_result_free(&r);
}

/* Every method gets its own line when there are several. */
Test(compare, a_line_per_method)
{
	const char *prog =
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"delegate @add0 backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3] = input\n"
		"  %b: f32[2,3] = input\n"
		"  %c: f32[2,3] = aten::add.Tensor(%a, %b)\n"
		"  return %c\n"
		"}\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %d: (f32[2,3]) = delegate @add0(%x, %x)\n"
		"  %t: f32[2,3] = getitem %d, 0\n"
		"  return %t\n"
		"}\n"
		"method @other {\n"
		"  %y: f32[2,3] = input user \"y\"\n"
		"  %z: f32[2,3] = aten::add.Tensor(%y, %y)\n"
		"  return %z\n"
		"}\n";
	const char *path = tu_write_temp("two_methods.pg", prog);
	tu_result r = tu_run("%s compare --pipelines baseline,cuda --device=sim %s", PASSRUN_EXE,
			     path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "method"), "a method column:\n%s", r.out);
	cr_assert_eq(tu_count(r.out, "forward"), 2, "%s", r.out);
	cr_assert_eq(tu_count(r.out, "other"), 2, "%s", r.out);
	tu_result_free(&r);
}

Test(compare, unreadable_program_is_exit_3)
{
	tu_result r = tu_run("%s compare /nonexistent/x.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 3, "%s", r.err);
	tu_result_free(&r);
}

/* A row counts every diagnostic of a code, also those past the 10 that
 * passrun prints (which a plain run only counts). */
Test(compare, codes_count_past_the_print_limit)
{
	tu_result r = tu_run("%s compare --pipelines cuda --format json %s", PASSRUN_EXE,
			     tu_gen_decoder(1000));
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *w = strstr(r.out, "\"warnings\": ");
	cr_assert(w, "%s", r.out);
	long warnings = strtol(w + strlen("\"warnings\": "), NULL, 10);
	cr_assert_gt(warnings, 10, "more than are printed:\n%s", r.out);
	char want[64];
	snprintf(want, sizeof want, "\"codes\": {\"W-CONSTANT-COPY\": %ld}", warnings);
	cr_assert(strstr(r.out, want), "want %s:\n%s", want, r.out);
	tu_result_free(&r);
}
