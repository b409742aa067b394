/* test_lit.c: passrun-lit fails when it should, at the right line.
 *
 * Each file of tests/lit/fail/ breaks some directives on purpose and says
 * what the tool must answer, in comments the tool itself ignores:
 *
 *   # lit-status: N        passrun-lit's exit status
 *   # lit-error: MESSAGE   "FILE:LINE: error: MESSAGE", LINE the next line
 *   # lit-note: TEXT       TEXT somewhere in what it prints (a nearest match)
 *
 * and nothing else may fail: the count of errors is the count of lit-error
 * lines. The golden cases of tests/placement/ must each fail too once their
 * expectations are broken, so that none of them passes whatever passrun
 * prints. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define LIT_EXE PASSRUN_BINARY_DIR "/bin/passrun-lit"
#define FAIL_DIR PASSRUN_SOURCE_DIR "/tests/lit/fail"

/* The lit-error lines wait for the next line that is not a lit- comment:
 * that is the directive they are about. */
static void expect_messages(const char *path, const char *text, const tu_result *r)
{
	int line = 1, n_errors = 0, status = -1, n_pending = 0;
	char *pending[16];
	for (const char *s = text; *s; line++) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char *l = strndup(s, len);
		if (!strncmp(l, "# lit-status: ", 14))
			status = atoi(l + 14);
		else if (!strncmp(l, "# lit-error: ", 13) && n_pending < 16)
			pending[n_pending++] = strdup(l + 13);
		else if (!strncmp(l, "# lit-note: ", 12))
			cr_expect(strstr(r->err, l + 12), "%s: expected '%s' in\n%s", path, l + 12, r->err);
		for (; n_pending && strncmp(l, "# lit-", 6); n_errors++) {
			char want[1024];
			snprintf(want, sizeof want, "%s:%d: error: %s", path, line, pending[--n_pending]);
			cr_expect(strstr(r->err, want), "%s: expected\n  %s\nin\n%s", path, want, r->err);
			free(pending[n_pending]);
		}
		free(l);
		s += len + (e != NULL);
	}
	cr_expect(status >= 0 && n_errors > 0, "%s: no lit-status or lit-error line", path);
	cr_expect_eq(r->status, status, "%s: exit %d, expected %d\n%s", path, r->status, status, r->err);
	cr_expect_eq(tu_count(r->err, ": error: "), n_errors, "%s: %d errors, expected %d\n%s", path,
		     tu_count(r->err, ": error: "), n_errors, r->err);
}

static void run_fail_case(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s.pg", FAIL_DIR, name);
	char *text = tu_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	tu_result r = tu_run("%s --passrun %s %s", LIT_EXE, PASSRUN_EXE, path);
	expect_messages(path, text, &r);
	tu_result_free(&r);
	free(text);
}

Test(lit, check_not_found_or_out_of_order) { run_fail_case("check"); }
Test(lit, check_next_not_on_the_next_line) { run_fail_case("check_next"); }
Test(lit, check_not_between_matches) { run_fail_case("check_not"); }
Test(lit, check_dag_no_overlap_and_next_after_it) { run_fail_case("check_dag"); }
Test(lit, count_off_by_one) { run_fail_case("count"); }
Test(lit, exit_wrong_or_missing) { run_fail_case("exit"); }
Test(lit, diag_count_and_message) { run_fail_case("diag"); }
Test(lit, stderr_text_missing) { run_fail_case("stderr"); }
Test(lit, stats_value_path_and_type) { run_fail_case("stats"); }
Test(lit, malformed_file_refused_at_each_line) { run_fail_case("malformed"); }
Test(lit, regex_patterns_that_do_not_match) { run_fail_case("patterns"); }

/* Every fail case is named above: a new one is not silently skipped. */
Test(lit, every_fail_case_is_run)
{
	DIR *d = opendir(FAIL_DIR);
	cr_assert(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strstr(e->d_name, ".pg") != NULL;
	closedir(d);
	cr_expect_eq(n, 11, "tests/lit/fail has %d cases; test_lit.c runs 11", n);
}

Test(lit, command_line_errors_are_status_2)
{
	const char *bad[] = {
		"",                                            /* no file */
		"--frobnicate " FAIL_DIR "/count.pg",          /* unknown option */
		"--passrun /nonexistent/passrun " FAIL_DIR "/count.pg",
		"--plugin",                                    /* no value */
		"--passrun " PASSRUN_EXE " /nonexistent/case.pg",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		tu_result r = tu_run("%s %s", LIT_EXE, bad[i]);
		cr_expect_eq(r.status, 2, "passrun-lit %s: exit %d\n%s", bad[i], r.status, r.err);
		cr_expect(strstr(r.err, "passrun-lit: ") || strstr(r.err, ": error: "),
			  "passrun-lit %s: no message\n%s", bad[i], r.err);
		tu_result_free(&r);
	}
}

/* With no --passrun, the passrun beside passrun-lit is the one run. */
Test(lit, finds_the_passrun_beside_it)
{
	tu_result r = tu_run("env -u PASSRUN %s %s/tests/lit/pass/directives.pg", LIT_EXE,
			     PASSRUN_SOURCE_DIR);
	cr_expect_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
}

/* Appends "ZZZ" to every CHECK and STDERR text and adds one to every EXIT,
 * COUNT and DIAG number: nothing of the case can still hold. */
static char *break_case(const char *text)
{
	size_t len = strlen(text);
	char *out = malloc(2 * len + 1), *o = out;
	for (const char *s = text; *s;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		bool text_line = !strncmp(s, "# CHECK", 7) || !strncmp(s, "# STDERR ", 9);
		bool number = !strncmp(s, "# EXIT ", 7) || !strncmp(s, "# COUNT ", 8) ||
			      !strncmp(s, "# DIAG ", 7);
		const char *colon = memchr(s, ':', n);
		if (number && colon) {
			/* "# KEY label: N ..." or "# DIAG label: CODE N" */
			long v = 0;
			char rest[1024] = "", code[128];
			if (!strncmp(s, "# DIAG ", 7) && sscanf(colon + 1, " %127s %ld", code, &v) == 2)
				o += sprintf(o, "%.*s %s %ld", (int)(colon + 1 - s), s, code, v + 1);
			else if (sscanf(colon + 1, " %ld%1023[^\n]", &v, rest) >= 1)
				o += sprintf(o, "%.*s %ld%s", (int)(colon + 1 - s), s, v + 1, rest);
			else
				o += sprintf(o, "%.*s", (int)n, s);
		} else {
			o += sprintf(o, "%.*s%s", (int)n, s, text_line ? "ZZZ" : "");
		}
		if (e)
			*o++ = '\n';
		s += n + (e != NULL);
	}
	*o = 0;
	return out;
}

Test(lit, every_placement_case_fails_when_broken)
{
	DIR *d = opendir(PASSRUN_SOURCE_DIR "/tests/placement");
	cr_assert(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strstr(e->d_name, ".pg"))
			continue;
		char src[512], dst[600];
		snprintf(src, sizeof src, "%s/tests/placement/%s", PASSRUN_SOURCE_DIR, e->d_name);
		snprintf(dst, sizeof dst, "%s/broken_%s", tu_temp_dir(), e->d_name);
		char *text = tu_read_file(src, NULL), *broken = break_case(text);
		FILE *f = fopen(dst, "w");
		cr_assert(f);
		fputs(broken, f);
		fclose(f);
		tu_result r = tu_run("%s --passrun %s %s", LIT_EXE, PASSRUN_EXE, dst);
		cr_expect_eq(r.status, 1, "%s still passes (exit %d) with every expectation broken", src,
			     r.status);
		/* each run breaks on its own */
		cr_expect(tu_count(r.err, ": error: ") >= tu_count(text, "# RUN "),
			  "%s: fewer located errors than runs\n%s", src, r.err);
		tu_result_free(&r);
		free(text);
		free(broken);
		n++;
	}
	closedir(d);
	cr_expect(n > 30, "only %d placement cases", n);
}
