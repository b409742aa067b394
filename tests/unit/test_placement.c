/* test_placement.c: properties of the placement over every case at once.
 *
 * Each case of tests/placement/ is a golden test of its own, run by
 * passrun-lit (tests/placement/CMakeLists.txt, docs/golden-tests.md); what
 * is here holds for all of them and for every example: the same placement
 * from text and from binary, the verifier passing after every pass of
 * cuda.yaml, placing a placed program changing nothing, and the input file
 * left as it was. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/manager.h"
#include "testutil.h"

#define CASE_DIR PASSRUN_SOURCE_DIR "/tests/placement"

/* ---- whole-suite properties ----------------------------------------------------- */

static int list_pg(const char *dir, char names[][256], int max)
{
	DIR *d = opendir(dir);
	int n = 0;
	cr_assert(d, "cannot open %s", dir);
	for (struct dirent *e; (e = readdir(d)) && n < max;) {
		size_t len = strlen(e->d_name);
		if (len > 3 && !strcmp(e->d_name + len - 3, ".pg")) {
			int w = snprintf(names[n++], 256, "%s/%s", dir, e->d_name);
			cr_assert(w < 256, "path too long: %s/%s", dir, e->d_name);
		}
	}
	closedir(d);
	return n;
}

/* Same placement whether the program came from text or binary. */
Test(placement, B_same_placement_from_text_and_binary)
{
	static char names[256][256];
	int n = list_pg(CASE_DIR, names, 256);
	cr_assert(n > 10);
	for (int i = 0; i < n; i++) {
		char bin[600];
		snprintf(bin, sizeof bin, "%s/case%d.bin", tu_temp_dir(), i);
		tu_result c = tu_run("%s convert %s %s", PASSRUN_EXE, names[i], bin);
		cr_expect_eq(c.status, 0, "convert %s: %s", names[i], c.err);
		const char *flags = "--set skip_h2d_for_method_inputs=true --set skip_d2h_for_method_outputs=true";
		for (int f = 0; f < 2; f++) {
			tu_result t = tu_run("%s --pipeline cuda %s --print %s", PASSRUN_EXE, f ? flags : "", names[i]);
			tu_result b = tu_run("%s --pipeline cuda %s --print %s", PASSRUN_EXE, f ? flags : "", bin);
			cr_expect_eq(t.status, b.status, "%s: exit %d from text, %d from binary", names[i],
				     t.status, b.status);
			cr_expect_str_eq(t.out, b.out, "%s: text and binary placements differ", names[i]);
			tu_result_free(&t);
			tu_result_free(&b);
		}
		tu_result_free(&c);
	}
}

/* --verify-each passes after every pass of cuda.yaml on every example and
 * case, with the skip flags off and on; a run may only fail with a placement
 * diagnostic that the program is there to show. */
Test(placement, B_verify_each_passes_on_every_example)
{
	static char names[512][256];
	int n = list_pg(PASSRUN_SOURCE_DIR "/examples", names, 512);
	n += list_pg(CASE_DIR, names + n, 512 - n);
	cr_assert(n > 20);
	const char *sets[] = {
		"",
		"--set skip_h2d_for_method_inputs=true",
		"--set skip_d2h_for_method_outputs=true",
		"--set skip_h2d_for_method_inputs=true --set skip_d2h_for_method_outputs=true",
	};
	for (int i = 0; i < n; i++) {
		for (int s = 0; s < 4; s++) {
			tu_result r = tu_run("%s --pipeline cuda --verify-each %s %s", PASSRUN_EXE, sets[s],
					     names[i]);
			cr_expect(strstr(r.err, "verifier failed") == NULL && strstr(r.err, "E-PLACEMENT") == NULL,
				  "%s %s: the verifier fails inside cuda.yaml:\n%s", names[i], sets[s], r.err);
			cr_expect(r.status == 0 || r.status == 1, "%s %s: exit %d\n%s", names[i], sets[s],
				  r.status, r.err);
			tu_result_free(&r);
		}
	}
}

/* cuda.yaml is idempotent: placing the program it wrote (with -o) gives one
 * that verifies after every pass and prints the same, skip flags off and on.
 * A _d2h_copy already reading a delegate's getitem is not given another. */
Test(placement, B_placing_a_placed_program_changes_nothing)
{
	static char names[512][256];
	int n = list_pg(PASSRUN_SOURCE_DIR "/examples", names, 512);
	n += list_pg(CASE_DIR, names + n, 512 - n);
	cr_assert(n > 20);
	const char *sets[] = {
		"",
		"--set skip_h2d_for_method_inputs=true --set skip_d2h_for_method_outputs=true",
	};
	char placed[600];
	snprintf(placed, sizeof placed, "%s/placed_again.pg", tu_temp_dir());
	for (int i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++) {
			tu_result a = tu_run("%s --pipeline cuda %s --print -o %s %s", PASSRUN_EXE,
					     sets[s], placed, names[i]);
			if (a.status != 0) {    /* a case that shows a refusal */
				tu_result_free(&a);
				continue;
			}
			tu_result b = tu_run("%s --pipeline cuda --verify-each %s --print %s", PASSRUN_EXE,
					     sets[s], placed);
			cr_expect_eq(b.status, 0, "%s %s: placing its placement again fails:\n%s",
				     names[i], sets[s], b.err);
			cr_expect_str_eq(b.out, a.out, "%s %s: placing its placement again changes it",
					 names[i], sets[s]);
			tu_result_free(&a);
			tu_result_free(&b);
		}
	}
}

/* F1 edits the program in memory only: the input file is never changed,
 * even when the result is written next to it. */
Test(placement, F1_input_file_unchanged)
{
	const char *src = CASE_DIR "/f1_transposed_weight.pg";
	char *before = tu_read_file(src, NULL);
	cr_assert(before);
	char out[512];
	snprintf(out, sizeof out, "%s/f1_out.pg", tu_temp_dir());
	tu_result r = tu_run("%s --pipeline cuda -o %s %s", PASSRUN_EXE, out, src);
	cr_expect_eq(r.status, 0, "%s", r.err);
	char *after = tu_read_file(src, NULL), *written = tu_read_file(out, NULL);
	cr_expect_str_eq(after, before, "param-layout changed its input file");
	cr_assert(written, "no output written");
	cr_expect(strstr(written, "strides=[1,2]} = input parameter") == NULL,
		  "the written program still has the transposed parameter:\n%s", written);
	tu_result_free(&r);
	free(before);
	free(after);
	free(written);
}

/* ---- copies follow graph order ------------------------------------------------ */

/* %x read by 40 delegate calls on cuda:0 and cuda:1, %y by about 20 and %w
 * by 10: more readers than an insertion sort takes, and fewer. With twice,
 * every fifth call reads %x in both its arguments. */
static char *many_readers_program(bool twice)
{
	size_t cap = 1 << 16, len = 0;
	char *t = malloc(cap);
	cr_assert(t);
#define PUT(...) do { len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__); cr_assert(len < cap); } while (0)
	PUT("passrun 1\nop aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n");
	for (int d = 0; d < 2; d++)
		PUT("delegate @add%d backend=\"CudaBackend\" target_device=\"cuda:%d\" {\n"
		    "  %%a: f32[2,3] = input\n  %%b: f32[2,3] = input\n"
		    "  %%c: f32[2,3] = aten::add.Tensor(%%a, %%b)\n  return %%c\n}\n", d, d);
	PUT("method @forward {\n  %%x: f32[2,3] = input user \"x\"\n"
	    "  %%y: f32[2,3] = input parameter \"y\" data=ones\n"
	    "  %%w: f32[2,3] = input user \"w\"\n");
	for (int k = 0; k < 40; k++) {
		const char *second = k % 5 == 0 ? (twice ? "x" : "w") : k % 4 == 1 ? "w" : "y";
		PUT("  %%d%d: (f32[2,3]) = delegate @add%d(%%x, %%%s)\n  %%g%d: f32[2,3] = getitem %%d%d, 0\n",
		    k, k % 3 == 2, second, k, k);
	}
	PUT("  return");
	for (int k = 0; k < 40; k++)
		PUT("%s %%g%d", k ? "," : "", k);
	PUT("\n}\n");
#undef PUT
	return t;
}

/* Moves every reader of v to other and back, in an order of their own, so
 * that v's use list is no longer in graph order. */
static void scramble_uses(pr_node *v, pr_node *other, uint32_t seed)
{
	int n = v->n_uses;
	pr_arg **args = malloc((size_t)n * sizeof *args);
	cr_assert(args);
	for (int i = 0; i < n; i++)
		args[i] = v->uses[i].arg;
	for (int i = n - 1; i > 0; i--) {   /* a fixed shuffle */
		seed = seed * 1103515245u + 12345u;
		int j = (int)((seed >> 8) % (uint32_t)(i + 1));
		pr_arg *a = args[i];
		args[i] = args[j];
		args[j] = a;
	}
	for (int i = 0; i < n; i++)
		pr_arg_set_value(args[i], other);
	for (int i = 0; i < n; i++)
		pr_arg_set_value(args[i], v);
	free(args);
}

/* text placed by propagate-device, in process; scramble: its inputs' use
 * lists shuffled first. */
static char *placed_text(const char *text, bool scramble)
{
	pr_program *p = tu_parse(text);
	pr_graph *g = pr_program_find_method(p, "forward");
	cr_assert(g);
	if (scramble) {
		pr_node *x = pr_graph_find(g, "x"), *y = pr_graph_find(g, "y"),
			*w = pr_graph_find(g, "w");
		scramble_uses(x, w, 1);
		scramble_uses(y, x, 2);
		scramble_uses(w, y, 3);
	}
	pr_registry *r = pr_registry_new();
	pr_err *e = pr_registry_load_dir(r, PASSRUN_BINARY_DIR "/lib/passrun/plugins");
	cr_assert_null(e, "%s", pr_err_message(e));
	pr_pipeline *pl;
	cr_assert_null(pr_pipeline_parse_inline("propagate-device", &pl));
	e = pr_pipeline_validate(pl, r);
	cr_assert_null(e, "%s", pr_err_message(e));
	pr_diags diags;
	pr_diags_init(&diags, "many.pg");
	pr_pass_report rep;
	pr_pass_report_init(&rep);
	pr_instrument_opts o = {0};
	e = pr_pipeline_run(pl, r, p, &diags, &o, &rep);
	cr_assert_null(e, "%s", pr_err_message(e));
	char *out = pr_text_print(p, NULL);
	pr_pass_report_free(&rep);
	pr_diags_free(&diags);
	pr_pipeline_free(pl);
	pr_registry_free(r);
	pr_program_free(p);
	return out;
}

/* Every line of lines (NULL-ended) stands in text. */
static void expect_lines(const char *text, const char *const *lines)
{
	for (; *lines; lines++)
		cr_expect(strstr(text, *lines), "no '%s' in:\n%s", *lines, text);
}

/* B1: a value's copies are named in their readers' graph order (first
 * reader first, per device), however its use list is ordered: the program
 * placed from use lists in graph order and from shuffled ones prints the
 * same, with the names in graph order. */
Test(placement, B1_copy_names_follow_graph_order)
{
	char *text = many_readers_program(false);
	char *plain = placed_text(text, false), *shuffled = placed_text(text, true);
	cr_expect_str_eq(shuffled, plain);
	expect_lines(plain, (const char *const[]){
		"%d0: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0, %w_h2d_cuda0)",
		"%d1: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_1, %w_h2d_cuda0_1)",
		"%d2: (f32[2,3]@cuda:1) = delegate @add1(%x_h2d_cuda1, %y_h2d_cuda1)",
		"%d39: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_26, %y_h2d_cuda0_15)",
		NULL });
	free(shuffled);
	free(plain);
	free(text);
}

/* B1: a reader that reads a value twice gets a copy per argument, named one
 * after the other in the order of their places in the value's use list. */
Test(placement, B1_a_reader_of_two_arguments_gets_two_copies)
{
	char *text = many_readers_program(true);
	char *plain = placed_text(text, false), *shuffled = placed_text(text, true);
	expect_lines(plain, (const char *const[]){
		"%d0: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0, %x_h2d_cuda0_1)",
		"%d1: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_2, %w_h2d_cuda0)",
		"%d10: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_8, %x_h2d_cuda0_9)",
		"%d39: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_31, %y_h2d_cuda0_15)",
		NULL });
	/* the shuffle put %d10's second argument before its first in %x's uses */
	expect_lines(shuffled, (const char *const[]){
		"%d10: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_9, %x_h2d_cuda0_8)",
		"%d39: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d_cuda0_31, %y_h2d_cuda0_15)",
		NULL });
	free(shuffled);
	free(plain);
	free(text);
}
