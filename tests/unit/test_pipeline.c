/* Tests of pipelines (core/passmgr/pipeline.c, docs/pipeline-format.md): every error of a
 * YAML pipeline (tests/pipelines/bad/) at FILE:LINE:COL with the valid
 * choices and the nearest one; inline --passes and --set; option values as
 * the passes see them (pass level, pipeline level, per-method maps,
 * defaults); the canonical YAML form; finding shipped pipelines by name. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/manager.h"
#include "passrun/strbuf.h"
#include "testutil.h"

#define GOOD PASSRUN_BINARY_DIR "/tests/plugins/prtest_good.so"
#define NODEF "--no-default-plugins"
#define PIPES PASSRUN_SOURCE_DIR "/tests/pipelines"

static const char *program(void)
{
	static char path[512];
	snprintf(path, sizeof path, "%s", tu_write_temp("two.pg",
		"passrun 1\n"
		"op aten::relu(Tensor self) -> Tensor\n"
		"method @forward {\n  %x: f32[2] = input user \"x\"\n"
		"  %r: f32[2] = aten::relu(%x)\n  return %r\n}\n"
		"method @decode {\n  %x: f32[2] = input user \"x\"\n  return %x\n}\n"));
	return path;
}

static tu_result passrun(const char *args)
{
	return tu_run("unset PASSRUN_PLUGIN_PATH; %s " NODEF " --plugin " GOOD " %s %s",
		      PASSRUN_EXE, args, program());
}

/* Runs the bad pipeline NAME and checks exit 2 and each expected piece. */
static void bad_pipeline(const char *name, const char *const *expect)
{
	char args[600];
	snprintf(args, sizeof args, "--pipeline " PIPES "/bad/%s.yaml", name);
	tu_result r = passrun(args);
	cr_assert_eq(r.status, 2, "%s: status %d: %s", name, r.status, r.err);
	for (; *expect; expect++)
		cr_assert(strstr(r.err, *expect), "%s: expected '%s' in: %s", name, *expect, r.err);
	cr_assert_null(strstr(r.err, "note["), "no pass ran: %s", r.err);
	tu_result_free(&r);
}

#define BAD(name, ...) bad_pipeline(name, (const char *const[]){__VA_ARGS__, NULL})

Test(pipeline, unknown_pass_suggests_the_nearest)
{
	BAD("unknown-pass", "bad/unknown-pass.yaml:5:5: unknown pass 'test-cout'",
	    "did you mean 'test-count'?", "valid passes: test-noop, test-opts, test-count");
}

Test(pipeline, unknown_pass_option)
{
	BAD("unknown-option", "bad/unknown-option.yaml:3:17: pass 'test-opts' has no option 'cont'",
	    "did you mean 'count'?", "valid options: flag, count, ratio, label");
}

Test(pipeline, unknown_pipeline_option)
{
	BAD("unknown-pipeline-option",
	    "bad/unknown-pipeline-option.yaml:3:3: unknown pipeline option 'test_levl'",
	    "did you mean 'test_level'?", "valid pipeline options: test_level, test_mode");
}

Test(pipeline, wrong_type)
{
	BAD("wrong-type", "bad/wrong-type.yaml:3:24: option 'count' of pass 'test-opts' expects "
	    "an int (expected an integer), got 'many'");
	BAD("quoted-bool", "bad/quoted-bool.yaml:3:23: option 'flag' of pass 'test-opts' expects "
	    "a bool, got the quoted string \"true\"");
}

Test(pipeline, bad_per_method_maps)
{
	BAD("map-not-per-method", "bad/map-not-per-method.yaml:3:14: pipeline option 'test_mode' "
	    "is not per-method: expected a string, not a map");
	BAD("map-non-scalar", "bad/map-non-scalar.yaml:3:25: option 'test_level': the value for "
	    "method 'forward' must be a scalar, found a list");
}

Test(pipeline, malformed_yaml_and_shapes)
{
	BAD("malformed", "bad/malformed.yaml:3:5: malformed YAML: did not find expected ',' or ']'");
	BAD("duplicate-key", "bad/duplicate-key.yaml:3:27: 'count' appears twice in this map");
	BAD("pass-shape", "bad/pass-shape.yaml:3:5: expected a pass: a name, or a one-key map");
	BAD("not-a-map", "bad/not-a-map.yaml:2:1: expected a pipeline (a map with 'passes:'), "
	    "found a list");
}

Test(pipeline, names_must_be_words)
{
	BAD("bad-names", "bad/bad-names.yaml:3:5: 'test noop' is not a valid pass name: only "
	    "letters, digits, '_', '-' and '.' may follow",
	    "bad/bad-names.yaml:4:17: 'co unt' is not a valid option name",
	    "bad/bad-names.yaml:5:25: 'for ward' is not a valid method name");
	tu_result r = passrun("--passes 'test-noop{a b=1}'");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--passes:1:11: 'a b' is not a valid option name"), "%s", r.err);
	tu_result_free(&r);
}

Test(pipeline, every_error_is_reported_and_nothing_runs)
{
	const char *yaml = tu_write_temp("many.yaml",
		"passes:\n  - test-fail\n  - test-nop\n  - test-opts: {count: x, flag: 2}\n");
	char args[600];
	snprintf(args, sizeof args, "--pipeline %s", yaml);
	tu_result r = passrun(args);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "many.yaml:3:5: unknown pass 'test-nop'"), "%s", r.err);
	cr_assert(strstr(r.err, "many.yaml:4:24:"), "%s", r.err);
	cr_assert(strstr(r.err, "many.yaml:4:33:"), "%s", r.err);
	cr_assert_null(strstr(r.err, "always fails"), "test-fail ran: %s", r.err);
	tu_result_free(&r);
}

Test(pipeline, options_reach_passes_by_scope_and_method)
{
	tu_result r = passrun("--pipeline " PIPES "/good.yaml");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "method 'forward': flag=1 count=11 ratio=2.5 label=hello level=7 "
			 "mode=fast"), "%s", r.err);
	/* decode is not in the per-method map: the default. */
	cr_assert(strstr(r.err, "method 'decode': flag=1 count=11 ratio=2.5 label=hello level=0 "
			 "mode=fast"), "%s", r.err);
	cr_assert(strstr(r.err, "method 'forward': nodes=3 computed=1 same=1"), "%s", r.err);
	tu_result_free(&r);
}

Test(pipeline, set_overrides_pipeline_and_pass_options)
{
	tu_result r = passrun("--pipeline " PIPES "/good.yaml --set test_mode=slow "
			      "--set 'test_level={decode: 3}' --set test-opts.count=-4 "
			      "--set test-opts.label='two words'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "'forward': flag=1 count=-4 ratio=2.5 label=two words level=0 "
			 "mode=slow"), "%s", r.err);
	cr_assert(strstr(r.err, "'decode': flag=1 count=-4 ratio=2.5 label=two words level=3"),
		  "%s", r.err);
	tu_result_free(&r);
	r = passrun("--pipeline " PIPES "/good.yaml --set test-ops.count=1");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--set:1:1: pass 'test-ops' is not in the pipeline; did you mean "
			 "'test-opts'?"), "%s", r.err);
	tu_result_free(&r);
	r = passrun("--pipeline " PIPES "/good.yaml --set test_mode");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "expected NAME=VALUE"), "%s", r.err);
	tu_result_free(&r);
	r = passrun("--passes test-opts --set test-opts.flag=maybe");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--set:1:16: option 'flag' of pass 'test-opts' expects a bool"),
		  "%s", r.err);
	tu_result_free(&r);
}

Test(pipeline, inline_passes)
{
	tu_result r = passrun("--passes ' test-noop , test-opts{flag=true, count=2,label=a b}'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "'forward': flag=1 count=2 ratio=0.5 label=a b level=0 mode=a"),
		  "%s", r.err);
	tu_result_free(&r);
	struct { const char *text, *expect; } bad[] = {
		{"test-noop,,test-opts", "--passes:1:11: expected a pass name"},
		{"test-opts{flag=true", "--passes:1:10: this '{' has no matching '}'"},
		{"test-opts{flag}", "--passes:1:11: expected NAME=VALUE inside { }"},
		{"test-opts{count=x}", "--passes:1:17: option 'count' of pass 'test-opts' expects an int"},
		{"test-noop}", "--passes:1:10: expected ',' between passes"},
		{"tset-noop", "--passes:1:1: unknown pass 'tset-noop'; did you mean 'test-noop'?"},
		{"", "--passes:1:1: expected a pass name"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char args[256];
		snprintf(args, sizeof args, "--passes '%s'", bad[i].text);
		r = passrun(args);
		cr_assert_eq(r.status, 2, "'%s'", bad[i].text);
		cr_assert(strstr(r.err, bad[i].expect), "'%s': %s", bad[i].text, r.err);
		tu_result_free(&r);
	}
}

/* ---- through the API ------------------------------------------------------ */

Test(pipeline, canonical_yaml_is_a_fixed_point)
{
	const char *text =
		"# comment\nname: x\ndescription: 'a: b'\noptions:\n  test_mode: \"quoted\"\n"
		"  test_level: {forward: 1, decode: 2}\npasses:\n  - test-noop\n"
		"  - test-opts: {label: 'with space', count: 3}\n  - test-count:\n";
	pr_pipeline *pl;
	pr_err *e = pr_pipeline_parse_yaml("t.yaml", text, strlen(text), &pl);
	cr_assert_null(e, "%s", pr_err_message(e));
	char *y1 = pr_pipeline_to_yaml(pl);
	pr_pipeline *pl2;
	e = pr_pipeline_parse_yaml("t2.yaml", y1, strlen(y1), &pl2);
	cr_assert_null(e, "%s\n%s", pr_err_message(e), y1);
	char *y2 = pr_pipeline_to_yaml(pl2);
	cr_assert_str_eq(y1, y2);
	cr_assert(strstr(y1, "description: \"a: b\"\n"), "%s", y1);
	cr_assert(strstr(y1, "  test_level: {forward: 1, decode: 2}\n"), "%s", y1);
	cr_assert(strstr(y1, "  - test-opts: {label: \"with space\", count: 3}\n"), "%s", y1);
	cr_assert_eq(pr_pipeline_n_passes(pl2), 3);
	cr_assert_str_eq(pr_pipeline_pass_name(pl2, 2), "test-count");
	free(y1);
	free(y2);
	pr_pipeline_free(pl);
	pr_pipeline_free(pl2);
}

Test(pipeline, name_defaults_to_the_file_name)
{
	pr_pipeline *pl;
	const char *empty = "passes: []\n", *no_passes = "name: x\n",
		*two = "passes: []\n---\npasses: []\n";
	cr_assert_null(pr_pipeline_parse_yaml("dir/no-copy-reuse.yaml", empty, strlen(empty), &pl));
	cr_assert_str_eq(pr_pipeline_name(pl), "no-copy-reuse");
	pr_pipeline_free(pl);
	pr_err *e = pr_pipeline_parse_yaml("e.yaml", "", 0, &pl);
	cr_assert(e && strstr(pr_err_message(e), "e.yaml:1:1: empty pipeline"));
	pr_err_free(e);
	e = pr_pipeline_parse_yaml("m.yaml", no_passes, strlen(no_passes), &pl);
	cr_assert(e && strstr(pr_err_message(e), "m.yaml:1:1: a pipeline needs a 'passes:' list"));
	pr_err_free(e);
	e = pr_pipeline_parse_yaml("d.yaml", two, strlen(two), &pl);
	cr_assert(e && strstr(pr_err_message(e), "holds one YAML document"));
	pr_err_free(e);
}

/* Every shipped pipeline (pipelines/, subfolders too) is found by its bare
 * name; an unknown name lists what there is. */
static int find_all(const char *dir, const char *prefix)
{
	int found = 0;
	DIR *d = opendir(dir);
	for (struct dirent *ent; d && (ent = readdir(d));) {
		if (ent->d_name[0] == '.')
			continue;
		char path[1024], name[512];
		snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
		size_t n = strlen(ent->d_name);
		if (n > 5 && !strcmp(ent->d_name + n - 5, ".yaml")) {
			snprintf(name, sizeof name, "%s%.*s", prefix, (int)(n - 5), ent->d_name);
			char *got;
			pr_err *e = pr_pipeline_find(name, &got);
			cr_assert_null(e, "%s: %s", name, pr_err_message(e));
			cr_assert_str_eq(got, path);
			free(got);
			found++;
		} else if (!strchr(ent->d_name, '.')) {
			snprintf(name, sizeof name, "%s%s/", prefix, ent->d_name);
			found += find_all(path, name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

Test(pipeline, shipped_pipelines_are_found_by_name)
{
	int n = find_all(PASSRUN_SOURCE_DIR "/pipelines", "");
	char *path;
	pr_err *e = pr_pipeline_find("no-such-pipeline", &path);
	cr_assert_not_null(e);
	cr_assert(strstr(pr_err_message(e), "--pipeline no-such-pipeline: unknown pipeline"));
	if (n == 0)
		cr_assert(strstr(pr_err_message(e), "none found"), "%s", pr_err_message(e));
	/* The message names what pr_pipeline_list_shipped lists, in its order. */
	char **names;
	int k = pr_pipeline_list_shipped(&names);
	pr_strbuf want;
	pr_strbuf_init(&want);
	for (int i = 0; i < k; i++)
		pr_strbuf_printf(&want, "%s%s", i ? ", " : "shipped pipelines: ", names[i]);
	cr_assert_eq(k, n);
	if (k)
		cr_assert(strstr(pr_err_message(e), want.data), "%s", pr_err_message(e));
	pr_strbuf_free(&want);
	pr_names_free(names, k);
	pr_err_free(e);
	cr_assert_null(pr_pipeline_find("some/where.yaml", &path));
	cr_assert_str_eq(path, "some/where.yaml");
	free(path);
}

Test(pipeline, nearest_is_by_edit_distance)
{
	const char *const choices[] = {"copy-reuse", "propagate-device", "memory-plan"};
	cr_assert_str_eq(pr_nearest("copy-resue", choices, 3), "copy-reuse");
	cr_assert_str_eq(pr_nearest("memoryplan", choices, 3), "memory-plan");
	cr_assert_str_eq(pr_nearest("propagate", choices, 3), "propagate-device");
	cr_assert_null(pr_nearest("x", choices, 0));
}

/* Every shipped pipeline checks against the shipped plugins (the placement
 * plugins' options are what the YAML files say). */
static void check_shipped(const char *dir, const char *prefix, int *n)
{
	DIR *d = opendir(dir);
	for (struct dirent *ent; d && (ent = readdir(d));) {
		char path[1024], name[512];
		size_t len = strlen(ent->d_name);
		snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
		if (len > 5 && !strcmp(ent->d_name + len - 5, ".yaml")) {
			snprintf(name, sizeof name, "%s%.*s", prefix, (int)(len - 5), ent->d_name);
			tu_result r = tu_run("unset PASSRUN_PLUGIN_PATH; %s --pipeline %s "
					     "--print-pipeline --list-passes", PASSRUN_EXE, name);
			cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
			cr_assert(strstr(r.out, "passes:"), "--print-pipeline: %s", r.out);
			tu_result_free(&r);
			(*n)++;
		} else if (ent->d_name[0] != '.' && !strchr(ent->d_name, '.')) {
			snprintf(name, sizeof name, "%s%s/", prefix, ent->d_name);
			check_shipped(path, name, n);
		}
	}
	if (d)
		closedir(d);
}

Test(pipeline, shipped_pipelines_check_against_shipped_plugins)
{
	int n = 0;
	check_shipped(PASSRUN_SOURCE_DIR "/pipelines", "", &n);
	cr_log_info("%d shipped pipelines checked", n);
}

Test(pipeline, a_per_method_map_naming_no_method_warns)
{
	char yaml[512];   /* tu_write_temp's buffer is reused by program() */
	snprintf(yaml, sizeof yaml, "%s", tu_write_temp("typo.yaml",
		"options:\n  test_level: {fowrard: 3, decode: 1}\npasses: [test-opts]\n"));
	char args[600];
	snprintf(args, sizeof args, "--pipeline %s", yaml);
	tu_result r = passrun(args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "warning[W-UNKNOWN-METHOD] pass 'pipeline'"), "%s", r.err);
	cr_assert(strstr(r.err, "typo.yaml:2:16: option 'test_level' names method 'fowrard', which "
			 "the program does not have; did you mean 'forward'?"), "%s", r.err);
	cr_assert_eq(tu_count(r.err, "W-UNKNOWN-METHOD"), 1, "decode exists: %s", r.err);
	tu_result_free(&r);
	snprintf(args, sizeof args, "--pipeline %s --werror", yaml);
	r = passrun(args);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "warnings are errors"), "%s", r.err);
	tu_result_free(&r);
}
