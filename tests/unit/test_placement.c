/* test_placement.c: the placement rules (behaviour.md B1-B5, F1-F9), as data.
 *
 * Each case is a program in tests/placement/ that carries its own runs and
 * expectations in comments (the parser ignores them), QBE/cproc style:
 *
 *   # RUN <label>: <passrun arguments>      passrun --print ARGS CASE.pg
 *   # EXIT <label>: N                       its exit status
 *   # CHECK <label>: text                   in the printed program, in order
 *   # CHECK-NOT <label>: text               nowhere in the printed program
 *   # COUNT <label>: N text                 exactly N times in it
 *   # DIAG <label>: CODE N                  exactly N diagnostics [CODE]
 *   # STDERR <label>: text                  in the diagnostics
 *
 * The printed program is compared with its memory plan removed ({mem=...}),
 * so that placement cases do not depend on the planner's offsets. Every case
 * has a run with cuda.yaml and a run with the pipeline that lacks the fix it
 * is about (or the baseline), and asserts what differs. A test here is named
 * after the rule and runs its case(s). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CASE_DIR PASSRUN_SOURCE_DIR "/tests/placement"
#define MAX_RUNS 16

typedef struct run {
	char label[32];
	char args[1024];
	tu_result r;
	char *out;        /* stdout without memory plan annotations */
} run;

/* Removes "{mem=...}" and ", mem=..." (up to the closing brace). */
static char *strip_mem(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	while (*s) {
		if (!strncmp(s, "{mem=", 5)) {
			while (*s && *s != '}')
				s++;
			if (*s)
				s++;
		} else if (!strncmp(s, ", mem=", 6)) {
			while (*s && *s != '}')
				s++;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
	return out;
}

/* "# KEY label: rest" -> label and rest; false when the line is not KEY. */
static bool directive(const char *line, const char *key, char *label, size_t lsize,
		      const char **rest)
{
	size_t k = strlen(key);
	if (strncmp(line, "# ", 2) || strncmp(line + 2, key, k) || line[2 + k] != ' ')
		return false;
	const char *l = line + 3 + k, *colon = strchr(l, ':');
	if (!colon || (size_t)(colon - l) >= lsize)
		return false;
	memcpy(label, l, (size_t)(colon - l));
	label[colon - l] = 0;
	*rest = colon + 1;
	while (**rest == ' ')
		(*rest)++;
	return true;
}

static run *find_run(run *runs, int n, const char *label, const char *file)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(runs[i].label, label))
			return &runs[i];
	cr_assert_fail("%s: no RUN line for label '%s'", file, label);
	return NULL;
}

static int count_diag(const char *err, const char *code)
{
	char needle[96];
	snprintf(needle, sizeof needle, "[%s]", code);
	return tu_count(err, needle);
}

/* Splits text into lines in place; returns the count. */
static int split_lines(char *text, char **lines, int max)
{
	int n = 0;
	for (char *s = strtok(text, "\n"); s && n < max; s = strtok(NULL, "\n"))
		lines[n++] = s;
	return n;
}

static void start_runs(const char *path, char **lines, int n_lines, run *runs, int *n_runs)
{
	for (int i = 0; i < n_lines; i++) {
		char label[32];
		const char *rest;
		if (!directive(lines[i], "RUN", label, sizeof label, &rest))
			continue;
		cr_assert(*n_runs < MAX_RUNS, "%s: too many runs", path);
		run *r = &runs[(*n_runs)++];
		snprintf(r->label, sizeof r->label, "%s", label);
		snprintf(r->args, sizeof r->args, "%s", rest);
		r->r = tu_run("%s --print %s %s", PASSRUN_EXE, rest, path);
		r->out = strip_mem(r->r.out);
	}
	cr_assert(*n_runs > 0, "%s has no RUN line", path);
}

static void check_in_order(const char *path, run *r, const char *text, const char **pos)
{
	const char *at = strstr(*pos, text);
	cr_expect(at != NULL,
		  "%s [%s: %s]: expected, in order, in the printed program:\n  %s\n--- output:\n%s\n--- stderr:\n%s",
		  path, r->label, r->args, text, r->out, r->r.err);
	if (at)
		*pos = at + strlen(text);
}

static void check_line(const char *path, const char *line, run *runs, int n_runs,
		       const char **pos)
{
	char label[32];
	const char *rest;
	if (directive(line, "EXIT", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		cr_expect_eq(r->r.status, atoi(rest), "%s [%s: %s]: exit %d, expected %d\n%s", path,
			     label, r->args, r->r.status, atoi(rest), r->r.err);
	} else if (directive(line, "CHECK", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		check_in_order(path, r, rest, &pos[r - runs]);
	} else if (directive(line, "CHECK-NOT", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		cr_expect(strstr(r->out, rest) == NULL, "%s [%s: %s]: unexpected '%s' in\n%s", path,
			  label, r->args, rest, r->out);
	} else if (directive(line, "COUNT", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		char *text;
		long want = strtol(rest, &text, 10);
		while (*text == ' ')
			text++;
		cr_expect_eq(tu_count(r->out, text), want, "%s [%s: %s]: '%s' %d times, expected %ld\n%s",
			     path, label, r->args, text, tu_count(r->out, text), want, r->out);
	} else if (directive(line, "DIAG", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		char code[64];
		int want = 0;
		cr_assert(sscanf(rest, "%63s %d", code, &want) == 2, "%s: bad DIAG line", path);
		cr_expect_eq(count_diag(r->r.err, code), want, "%s [%s: %s]: %d [%s], expected %d\n%s",
			     path, label, r->args, count_diag(r->r.err, code), code, want, r->r.err);
	} else if (directive(line, "STDERR", label, sizeof label, &rest)) {
		run *r = find_run(runs, n_runs, label, path);
		cr_expect(strstr(r->r.err, rest) != NULL, "%s [%s: %s]: expected '%s' in stderr:\n%s",
			  path, label, r->args, rest, r->r.err);
	}
}

/* Runs every RUN of a case and checks every expectation. */
static void run_case(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", CASE_DIR, name);
	char *text = tu_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	static char *lines[4096];
	int n_lines = split_lines(text, lines, 4096);
	run runs[MAX_RUNS];
	int n_runs = 0, n_checks = 0;
	start_runs(path, lines, n_lines, runs, &n_runs);
	const char *pos[MAX_RUNS];
	for (int i = 0; i < n_runs; i++)
		pos[i] = runs[i].out;
	for (int i = 0; i < n_lines; i++) {
		check_line(path, lines[i], runs, n_runs, pos);
		n_checks += !strncmp(lines[i], "# ", 2) && strchr(lines[i], ':') &&
			    strncmp(lines[i], "# RUN", 5) != 0;
	}
	cr_expect(n_checks > 0, "%s checks nothing", path);
	for (int i = 0; i < n_runs; i++) {
		tu_result_free(&runs[i].r);
		free(runs[i].out);
	}
	free(text);
}

/* ---- B: the base placement --------------------------------------------------- */

Test(placement, B1_each_device_argument_gets_h2d_copy) { run_case("b1_h2d_copies.pg"); }
Test(placement, B1_skip_h2d_tags_single_reader_input) { run_case("b1_skip_h2d.pg"); }
Test(placement, B1_baseline_copies_argument_already_on_device) { run_case("b1_device_argument_copied.pg"); }
Test(placement, B2_delegate_results_on_device) { run_case("b2_results_on_device.pg"); }
Test(placement, B3_getitem_gets_d2h_copy) { run_case("b3_d2h_after_getitem.pg"); }
Test(placement, B3_skip_d2h_only_output_reader) { run_case("b3_skip_d2h.pg"); }
Test(placement, B4_same_device_round_trip_removed) { run_case("b4_round_trip.pg"); }
Test(placement, B4_real_move_between_devices_kept) { run_case("b4_two_devices.pg"); }
Test(placement, B5_device_parsed_case_insensitively) { run_case("b5_device_case.pg"); }
Test(placement, B5_unknown_device_lists_valid_types) { run_case("b5_unknown_device.pg"); }
Test(placement, B3_placed_program_placed_again_unchanged) { run_case("b3_placed_again.pg"); }

/* ExecuTorch's own scenarios. */
Test(placement, B_et_two_chained_cuda0_adds) { run_case("et_chained_adds.pg"); }
Test(placement, B_et_cuda0_then_cuda1) { run_case("et_two_devices.pg"); }
Test(placement, B_et_output_feeds_several_cuda0_delegates) { run_case("et_output_to_many.pg"); }
Test(placement, B_et_output_feeds_delegate_and_host_relu) { run_case("et_output_to_delegate_and_host.pg"); }
Test(placement, B_et_output_feeds_cuda0_and_cuda1) { run_case("et_output_to_two_devices.pg"); }
Test(placement, B_et_cuda1_index_propagates) { run_case("et_cuda1_index.pg"); }
Test(placement, B_et_skip_flags_alone_and_together) { run_case("et_skip_flags.pg"); }

/* ---- F: the fixes ------------------------------------------------------------ */

Test(placement, F1_transposed_parameter_made_contiguous) { run_case("f1_transposed_weight.pg"); }
Test(placement, F1_blob_data_gathered_and_view_follows) { run_case("f1_blob_and_view.pg"); }
Test(placement, F1_idempotent) { run_case("f1_idempotent.pg"); }
Test(placement, F2_write_before_copy_back_keeps_round_trip) { run_case("f2_relu_between.pg"); }
Test(placement, F2_write_through_view_keeps_round_trip) { run_case("f2_write_through_view.pg"); }
Test(placement, F2_write_after_read_keeps_nothing) { run_case("f2_write_after_read.pg"); }
Test(placement, F3_single_tensor_result_gets_d2h_copy) { run_case("f3_single_result.pg"); }
Test(placement, F4_returned_output_stays_on_device) { run_case("f4_output_also_read.pg"); }
Test(placement, F4_output_written_on_host_returned_from_host) { run_case("f4_output_written.pg"); }
Test(placement, F5_constant_copied_with_warning) { run_case("f5_constant_copy.pg"); }
Test(placement, F5_constant_odd_layout_refused) { run_case("f5_layout_refused.pg"); }
Test(placement, F6_shared_input_stays_on_device) { run_case("f6_shared_input.pg"); }
Test(placement, F6_input_read_on_other_device) { run_case("f6_other_device.pg"); }
Test(placement, F6_returned_input_with_both_flags) { run_case("f6_returned_input.pg"); }
Test(placement, F6_input_written_on_host_refused) { run_case("f6_written_on_host.pg"); }
Test(placement, F7_cpu_delegate_gets_no_copies) { run_case("f7_cpu_delegate.pg"); }
Test(placement, F8_one_copy_per_device) { run_case("f8_copy_reuse.pg"); }
Test(placement, F8_written_between_not_reused) { run_case("f8_written_between.pg"); }
Test(placement, F8_F2_write_to_viewed_base_not_reused) { run_case("f8_view_base_written.pg"); }
Test(placement, F9_per_call_copies_become_errors) { run_case("f9_errors.pg"); }
Test(placement, F9_no_skip_flag_warns_no_effect) { run_case("f9_no_effect.pg"); }

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
