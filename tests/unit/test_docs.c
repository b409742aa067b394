/* The docs that are built from the code cannot go stale: the pipeline
 * reference is what `passrun --list-passes=markdown` prints, and the man page
 * describes every option `passrun --help` lists. The contracts a user relies
 * on are each checked against what the code accepts or prints: every
 * diagnostic code the sources emit and every exit status --help lists
 * (docs/diagnostics.md), every top-level key the pipeline parser accepts
 * (docs/pipeline-format.md), every field --stats=json prints, with its JSON
 * type (docs/stats-json.md). A failure says what is missing and where. */
#define _GNU_SOURCE   /* asprintf */
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

/* Every diagnostic code the sources emit: a string literal "E-...", "W-..."
 * or "N-..." in core/, plugins/, runtime/ or tools/, one a line (r.out). */
static tu_result source_codes(void)
{
	tu_result r = tu_run("cd %s && grep -rhoE '\"[EWN]-[A-Z0-9-]+\"' core plugins runtime tools "
			     "| tr -d '\"' | sort -u", PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	return r;
}

/* ... is in the man page's DIAGNOSTICS, so a new code cannot ship undocumented. */
Test(docs, man_page_lists_every_diagnostic_code)
{
	char *man = read_doc("passrun.1");
	tu_result r = source_codes();
	int n = 0;
	for (char *code = strtok(r.out, "\n"); code; code = strtok(NULL, "\n"), n++) {
		char roff[64] = {0};   /* the man page writes '-' as '\\-' */
		for (size_t i = 0, j = 0; code[i] && j + 2 < sizeof roff; i++) {
			if (code[i] == '-')
				roff[j++] = '\\';
			roff[j++] = code[i];
		}
		cr_assert(strstr(man, roff), "%s missing from DIAGNOSTICS in docs/passrun.1", code);
	}
	cr_assert_geq(n, 20, "found only %d codes in the sources", n);
	tu_result_free(&r);
	free(man);
}

/* The table row of docs that starts with "| `key` |", or NULL. */
static const char *table_row(const char *doc, const char *key)
{
	char want[256];
	snprintf(want, sizeof want, "| `%s` |", key);
	for (const char *p = strstr(doc, want); p; p = strstr(p + 1, want))
		if (p == doc || p[-1] == '\n')
			return p;
	return NULL;
}

/* Cell i (0: the key) of the row at row, trimmed, into out. */
static void table_cell(const char *row, int i, char *out, size_t cap)
{
	const char *p = row + 1;
	for (int k = 0; k < i && p; k++) {
		p = strchr(p, '|');
		p = p ? p + 1 : NULL;
	}
	size_t n = 0;
	while (p && *p == ' ')
		p++;
	for (; p && *p && *p != '|' && *p != '\n' && n + 1 < cap; p++)
		out[n++] = *p;
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

/* ... and has a row in docs/diagnostics.md, whose severity is the one its
 * prefix says. */
Test(docs, diagnostics_md_has_a_row_for_every_code)
{
	char *doc = read_doc("diagnostics.md");
	tu_result r = source_codes();
	int n = 0;
	for (char *code = strtok(r.out, "\n"); code; code = strtok(NULL, "\n"), n++) {
		const char *row = table_row(doc, code);
		cr_assert(row, "%s is emitted by the sources (grep -rn '\"%s\"' core plugins runtime "
			  "tools) but docs/diagnostics.md has no row for it: add "
			  "\"| `%s` | SEVERITY | PASS | meaning | what to do |\" to its Codes table",
			  code, code, code);
		char sev[32];
		table_cell(row, 1, sev, sizeof sev);
		const char *want = code[0] == 'E' ? "error" : code[0] == 'W' ? "warning" : "note";
		cr_assert_str_eq(sev, want, "docs/diagnostics.md gives %s the severity '%s'; its "
				 "prefix says %s", code, sev, want);
	}
	cr_assert_geq(n, 20, "found only %d codes in the sources", n);
	tu_result_free(&r);
	free(doc);
}

/* Every row of the Codes table is a code the sources emit: a code that is
 * gone does not stay documented. */
Test(docs, diagnostics_md_documents_no_code_the_sources_lack)
{
	char *doc = read_doc("diagnostics.md");
	tu_result r = source_codes();
	char *listed = NULL;   /* "\nCODE\n" finds a whole line */
	cr_assert(asprintf(&listed, "\n%s", r.out) > 0);
	int rows = 0;
	for (const char *p = strstr(doc, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
		char code[64], line[80];
		if (sscanf(p + 4, "%63[A-Z0-9-]", code) != 1 || code[1] != '-')
			continue;   /* another table's row (exit statuses) */
		snprintf(line, sizeof line, "\n%s\n", code);
		cr_assert(strstr(listed, line), "docs/diagnostics.md documents %s, which no source "
			  "in core, plugins, runtime or tools emits: remove its row", code);
		rows++;
	}
	cr_assert_geq(rows, 20, "the Codes table has only %d rows", rows);
	free(listed);
	tu_result_free(&r);
	free(doc);
}

/* Every exit status --help lists ("exit status: 0 fine, 1 ...") has a row
 * in docs/diagnostics.md. */
Test(docs, diagnostics_md_has_a_row_for_every_exit_status)
{
	tu_result r = tu_run("%s --help", PASSRUN_EXE);
	cr_assert_eq(r.status, 0);
	char *doc = read_doc("diagnostics.md");
	const char *list = strstr(r.out, "exit status:");
	cr_assert(list, "--help names the exit statuses: %s", r.out);
	int n = 0;
	for (const char *p = list + strlen("exit status:"); *p; p++) {
		char status[16];
		if ((p[-1] != ':' && p[-1] != ',') || sscanf(p, " %15[0-9]", status) != 1)
			continue;
		cr_assert(table_row(doc, status), "passrun --help lists exit status %s, but "
			  "docs/diagnostics.md has no row for it: add \"| `%s` | meaning |\" to its "
			  "Exit statuses table (and a .TP entry to EXIT STATUS in docs/passrun.1)",
			  status, status);
		n++;
	}
	cr_assert_geq(n, 6, "--help lists only %d exit statuses: %s", n, list);
	free(doc);
	tu_result_free(&r);
}

/* Every top-level key the pipeline parser accepts (it lists them when it
 * refuses an unknown one) has a row in docs/pipeline-format.md. */
Test(docs, pipeline_format_md_has_a_row_for_every_key)
{
	const char *yaml = tu_write_temp("keys.yaml", "no_such_key: 1\npasses: [dce]\n");
	tu_result r = tu_run("%s --pipeline %s --list-passes", PASSRUN_EXE, yaml);
	cr_assert_eq(r.status, 2, "an unknown key is refused: %s", r.err);
	const char *list = strstr(r.err, "(valid keys: ");
	cr_assert(list, "the error lists the valid keys: %s", r.err);
	char *doc = read_doc("pipeline-format.md");
	int n = 0;
	char key[64];
	for (const char *p = list + strlen("(valid keys: "); sscanf(p, "%63[a-z_]", key) == 1;
	     p += strlen(key) + 2) {
		cr_assert(table_row(doc, key), "the pipeline parser accepts the key '%s' but "
			  "docs/pipeline-format.md has no row for it: add \"| `%s` | TYPE | DEFAULT | "
			  "meaning | example |\" to its Top-level keys table", key, key);
		n++;
		if (p[strlen(key)] != ',')
			break;   /* the ')' after the last */
	}
	cr_assert_geq(n, 5, "read only %d keys from: %s", n, r.err);
	free(doc);
	tu_result_free(&r);
}

/* Does the type cell ("integer or null") admit a value of JSON type t? A
 * whole number may print without a fraction, so "number" admits "integer". */
static bool type_admits(const char *cell, const char *t)
{
	char copy[128];
	snprintf(copy, sizeof copy, "%s", cell);
	for (char *save = NULL, *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		if (!strcmp(w, t) || (!strcmp(w, "number") && !strcmp(t, "integer")))
			return true;
	return false;
}

/* Runs that between them print every field: a run with --check, diagnostics
 * with and without a node, a method and bytes, a run without --check. */
static const char *const stats_runs[] = {
	"--pipeline cuda examples/f5_buffer_outside_delegate.pg --run --check --device=sim",
	"--pipeline cuda --set error_on_per_call_copies=true "
	"--set 'skip_d2h_for_method_outputs={no_such_method: true}' examples/f8_copy_reuse.pg "
	"--run --device=sim",
	"--passes 'propagate-device{share_inputs=true},memory-plan' examples/f8_copy_reuse.pg",
};

/* Every field --stats=json prints (as tests/docs/json_paths.py names it) has
 * a row in docs/stats-json.md whose type admits the value printed, and every
 * row is a field these runs print. */
Test(docs, stats_json_md_has_a_row_for_every_field)
{
	char files[1024] = "";
	for (size_t i = 0; i < sizeof stats_runs / sizeof stats_runs[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "stats%zu.json", i);
		char path[512];
		snprintf(path, sizeof path, "%s", tu_write_temp(name, ""));
		tu_result r = tu_run("cd %s && env -u PASSRUN_PLUGIN_PATH %s %s --stats=json >%s",
				     PASSRUN_SOURCE_DIR, PASSRUN_EXE, stats_runs[i], path);
		if (r.status == 2 && strstr(r.err, "without the runtime"))
			cr_skip_test("passrun is built without the runtime: no \"run\" object");
		cr_assert_eq(r.status, 0, "passrun %s: %s", stats_runs[i], r.err);
		tu_result_free(&r);
		snprintf(files + strlen(files), sizeof files - strlen(files), " %s", path);
	}
	tu_result r = tu_run("python3 %s/tests/docs/json_paths.py%s", PASSRUN_SOURCE_DIR, files);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *doc = read_doc("stats-json.md"), *printed = NULL;
	cr_assert(asprintf(&printed, "\n%s", r.out) > 0);   /* "\nPATH TYPE" lines, kept whole */
	int n = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n"), n++) {
		char path[200], type[32], cell[128];
		cr_assert_eq(sscanf(line, "%199s %31s", path, type), 2, "%s", line);
		const char *row = table_row(doc, path);
		cr_assert(row, "--stats=json prints the field %s (%s), but docs/stats-json.md has "
			  "no row for it: add \"| `%s` | %s | meaning |\" to its Fields table (a map "
			  "keyed by data, like METHOD, goes in MAPS in tests/docs/json_paths.py)",
			  path, type, path, type);
		table_cell(row, 1, cell, sizeof cell);
		cr_assert(type_admits(cell, type), "--stats=json prints %s as %s, but "
			  "docs/stats-json.md gives its type as '%s'", path, type, cell);
	}
	cr_assert_geq(n, 40, "json_paths.py found only %d fields", n);
	for (const char *p = strstr(doc, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
		char path[200], want[208];
		if (sscanf(p + 4, "%199[^`]", path) != 1)
			continue;
		snprintf(want, sizeof want, "\n%s ", path);
		cr_assert(strstr(printed, want), "docs/stats-json.md documents %s, which none of the "
			  "runs in stats_runs (tests/unit/test_docs.c) prints: remove the row, or add a "
			  "run that prints it", path);
	}
	free(printed);
	free(doc);
	tu_result_free(&r);
}

/* The README's first command (its first ```sh block) is .ci/run's first,
 * and .ci/run's test command is in the README, byte for byte: what a
 * newcomer runs is what CI runs. */
Test(docs, readme_commands_are_the_ci_commands)
{
	char path[512];
	snprintf(path, sizeof path, "%s/README.md", PASSRUN_SOURCE_DIR);
	char *readme = tu_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/.ci/run", PASSRUN_SOURCE_DIR);
	char *ci = tu_read_file(path, NULL);
	cr_assert(readme && ci, "cannot read README.md or .ci/run");
	const char *block = strstr(readme, "```sh\n");
	cr_assert(block, "README.md has no ```sh block");
	block += strlen("```sh\n");
	char *first = NULL;
	cr_assert(asprintf(&first, "\n%.*s\n", (int)strcspn(block, "\n"), block) > 0);
	cr_assert(strstr(ci, first), "README.md's first command is not a line of .ci/run (keep "
		  "the two byte-identical):%s", first);
	const char *tests = strstr(ci, "\nctest --test-dir build ");
	cr_assert(tests, ".ci/run runs the suite with ctest --test-dir build");
	char *line = NULL;
	cr_assert(asprintf(&line, "\n%.*s\n", (int)strcspn(tests + 1, "\n"), tests + 1) > 0);
	cr_assert(strstr(readme, line), ".ci/run's test command is not a line of README.md (keep "
		  "the two byte-identical):%s", line);
	free(line);
	free(first);
	free(ci);
	free(readme);
}

/* The repository documents itself: no tracked file points outside the clone
 * for its documentation (the project brief beside it is not shipped), by
 * path or by the brief's file names (behaviour.md, interfaces.md,
 * architecture.md, written without the docs/ of a file of ours). */
Test(docs, no_file_refers_outside_the_repository)
{
	tu_result r = tu_run("cd %s && command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 "
			     "|| exit 77; git grep -nE '\\.\\./shared/|shared/(spec|seeds)/|"
			     "(^|[^/])(behaviour|interfaces|architecture)\\.md' -- . "
			     "':!tests/unit/test_docs.c' ':!docs/architecture.md'", PASSRUN_SOURCE_DIR);
	if (r.status == 77)
		cr_skip_test("not a git checkout");
	cr_assert_eq(r.status, 1, "files refer outside the repository (name the repository's own "
		     "doc instead: docs/placement-rules.md for rule ids, docs/text-format.md, "
		     "docs/pipeline-format.md, docs/passrun.1, docs/diagnostics.md, "
		     "docs/stats-json.md):\n%s", r.out);
	tu_result_free(&r);
}
