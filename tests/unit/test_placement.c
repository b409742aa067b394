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
