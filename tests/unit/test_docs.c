/* The docs that are built from the code cannot go stale: the pipeline
 * reference is what `passrun --list-passes=markdown` prints, and the man page
 * describes every option `passrun --help` lists. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *read_doc(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/docs/%s", PASSRUN_SOURCE_DIR, name);
	char *text = tu_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	return text;
}

/* The first line where a and b differ, for the failure message. */
static int first_difference(const char *a, const char *b)
{
	int line = 1;
	for (; *a && *a == *b; a++, b++)
		line += *a == '\n';
	return line;
}

Test(docs, pipeline_reference_is_generated_from_the_code)
{
	tu_result r = tu_run("env -u PASSRUN_PLUGIN_PATH %s --list-passes=markdown", PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "--list-passes=markdown failed: %s", r.err);
	char *committed = read_doc("pipeline-reference.md");
	cr_assert(strcmp(r.out, committed) == 0,
		  "docs/pipeline-reference.md is stale (first difference at line %d): run "
		  "docs/gen-pipeline-reference.sh %s and commit the result",
		  first_difference(r.out, committed), PASSRUN_EXE);
	free(committed);
	tu_result_free(&r);
}

/* Each pass and each of its options (as --list-passes prints them) has a row
 * in the reference: the check above, stated the way a reader would ask. */
Test(docs, every_pass_option_is_in_the_reference)
{
	tu_result r = tu_run("env -u PASSRUN_PLUGIN_PATH %s --list-passes", PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *ref = read_doc("pipeline-reference.md");
	int options = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];
		/* "    NAME: TYPE = DEFAULT ..." is an option; "  NAME  (plugin ...)" a pass. */
		if (!strcmp(line, "Analyses:"))
			break;   /* analyses have no options; the reference names them with their users */
		int end = 0;
		bool option_line = !strncmp(line, "    ", 4) && line[4] != ' ';
		bool pass_line = !strncmp(line, "  ", 2) && line[2] != ' ' && strstr(line, "  (plugin ");
		if (option_line && sscanf(line + 4, "%127[A-Za-z0-9_-]:%n", name, &end) == 1 && end) {
			char want[160];
			snprintf(want, sizeof want, "| `%s` |", name);
			cr_assert(strstr(ref, want), "option '%s' is not in docs/pipeline-reference.md: "
				  "run docs/gen-pipeline-reference.sh", name);
			options++;
		} else if (pass_line && sscanf(line + 2, "%127[A-Za-z0-9_-]", name) == 1) {
			char want[160];
			snprintf(want, sizeof want, "### `%s`", name);
			cr_assert(strstr(ref, want), "pass '%s' is not in the reference", name);
		}
	}
	cr_assert_gt(options, 5, "the shipped passes declare options");
	free(ref);
	tu_result_free(&r);
}

Test(docs, every_shipped_pipeline_is_in_the_reference)
{
	char *ref = read_doc("pipeline-reference.md");
	const char *names[] = {"baseline", "cuda", "ablate/no-copy-reuse", "ablate/no-param-layout"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char want[128];
		snprintf(want, sizeof want, "### `%s`", names[i]);
		cr_assert(strstr(ref, want), "pipeline %s missing", names[i]);
	}
	free(ref);
}

/* "--foo-bar" as roff writes it: "\-\-foo\-bar". */
static void roff_name(const char *flag, char *out, size_t cap)
{
	size_t n = 0;
	for (; *flag && n + 3 < cap; flag++) {
		if (*flag == '-')
			out[n++] = '\\';
		out[n++] = *flag;
	}
	out[n] = '\0';
}

/* Does the tag line at line name the flag (not just a longer flag that
 * starts the same, like --pipelines for --pipeline)? */
static bool tag_names(const char *line, const char *roff_flag)
{
	const char *end = strchr(line, '\n');
	size_t n = strlen(roff_flag);
	for (const char *p = strstr(line, roff_flag); p && (!end || p < end);
	     p = strstr(p + 1, roff_flag)) {
		char after = p[n];
		bool word_ends = !(after >= 'a' && after <= 'z') && after != '\\';
		bool word_starts = p == line || p[-1] == ' ' || p[-1] == '"';
		if (word_ends && word_starts)
			return true;
	}
	return false;
}

Test(docs, man_page_describes_every_option_of_help)
{
	tu_result r = tu_run("%s --help", PASSRUN_EXE);
	cr_assert_eq(r.status, 0);
	char *man = read_doc("passrun.1");
	int flags = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char flag[64];
		if (sscanf(line, "  %63[-a-z]", flag) != 1 || flag[0] != '-')
			continue;
		char want[160];
		roff_name(flag, want, sizeof want);
		/* Described in OPTIONS: the line after a .TP (a tagged paragraph) names it. */
		bool described = false;
		for (const char *p = strstr(man, ".TP\n"); p && !described; p = strstr(p + 1, ".TP\n"))
			described = tag_names(p + 4, want);
		cr_assert(described, "option %s of --help has no .TP entry in docs/passrun.1", flag);
		flags++;
	}
	cr_assert_gt(flags, 20, "--help lists the options");
	for (const char *s = "convert\0compare\0PASSRUN_PLUGIN_PATH\0EXIT STATUS\0DIAGNOSTICS\0";
	     *s; s += strlen(s) + 1)
		cr_assert(strstr(man, s), "the man page mentions %s", s);
	free(man);
	tu_result_free(&r);
}

Test(docs, man_page_renders_without_warnings)
{
	tu_result r = tu_run("command -v groff >/dev/null || exit 77; "
			     "groff -man -Tutf8 -ww -z %s/docs/passrun.1", PASSRUN_SOURCE_DIR);
	if (r.status == 77)
		cr_skip_test("groff is not installed");
	cr_assert_eq(r.status, 0, "groff failed: %s", r.err);
	cr_assert_eq(r.err[0], '\0', "groff warns: %s", r.err);
	tu_result_free(&r);
}

/* Every diagnostic code the sources emit (a string literal "E-...", "W-..."
 * or "N-..." in core/, plugins/, runtime/ or tools/) is in DIAGNOSTICS, so a
 * new code cannot ship undocumented. */
Test(docs, man_page_lists_every_diagnostic_code)
{
	char *man = read_doc("passrun.1");
	tu_result r = tu_run("cd %s && grep -rhoE '\"[EWN]-[A-Z0-9-]+\"' core plugins runtime tools "
			     "| tr -d '\"' | sort -u", PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	int n = 0;
	for (char *code = strtok(r.out, "\n"); code; code = strtok(NULL, "\n"), n++) {
		char roff[64] = {0};   /* the man page writes '-' as '\\-' */
		for (size_t i = 0, j = 0; code[i] && j + 2 < sizeof roff; i++) {
			if (code[i] == '-')
				roff[j++] = '\\';
			roff[j++] = code[i];
		}
		cr_assert(strstr(man, roff), "%s missing from DIAGNOSTICS", code);
	}
	cr_assert_geq(n, 20, "found only %d codes in the sources", n);
	tu_result_free(&r);
	free(man);
}

/* The repository documents itself: no tracked file points outside the clone
 * for its documentation (the project brief beside it is not shipped). */
Test(docs, no_file_refers_outside_the_repository)
{
	tu_result r = tu_run("cd %s && command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 "
			     "|| exit 77; git grep -nE '\\.\\./shared/|shared/(spec|seeds)/' -- . "
			     "':!tests/unit/test_docs.c'", PASSRUN_SOURCE_DIR);
	if (r.status == 77)
		cr_skip_test("not a git checkout");
	cr_assert_eq(r.status, 1, "files refer outside the repository:\n%s", r.out);
	tu_result_free(&r);
}
