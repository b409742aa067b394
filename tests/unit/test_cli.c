/* Tests of the passrun command line (tools/passrun.c, docs/passrun.1): the
 * exit statuses, -o written atomically and never after a failure, convert,
 * --print, the instrumentation (--print-after*, --verify-each, --time-passes,
 * --stats=json checked by a JSON parser, --werror) and the dce plugin. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GOOD PASSRUN_BINARY_DIR "/tests/plugins/prtest_good.so"
#define BREAKER PASSRUN_BINARY_DIR "/tests/plugins/prtest_breaker.so"
#define DCE PASSRUN_BINARY_DIR "/lib/passrun/plugins/dce.so"
#define NODEF "--no-default-plugins"

static const char *const program_text =
	"passrun 1\n"
	"\n"
	"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
	"op aten::relu(Tensor self) -> Tensor\n"
	"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
	"\n"
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %y: f32[2,3] = input user \"y\"\n"
	"  %a: f32[2,3] = aten::add.Tensor(%x, %y)\n"
	"  %r: f32[2,3] = aten::relu(%a)\n"
	"  return %r\n"
	"}\n";

static const char *program(void)
{
	static char path[512];
	snprintf(path, sizeof path, "%s", tu_write_temp("prog.pg", program_text));
	return path;
}

static tu_result run(const char *fmt_args, const char *prog)
{
	return tu_run("unset PASSRUN_PLUGIN_PATH; %s " NODEF " --plugin " GOOD " %s %s",
		      PASSRUN_EXE, fmt_args, prog);
}

Test(cli, help_lists_every_option)
{
	tu_result r = tu_run("%s --help", PASSRUN_EXE);
	cr_assert_eq(r.status, 0);
	const char *opts[] = {"--pipeline", "--passes", "--set", "--plugin", "--plugin-dir", "-o",
			      "--print", "--print-after-all", "--print-after", "--verify-each",
			      "--time-passes", "--stats=json", "--run[=N]", "--device", "--check",
			      "--input", "--seed", "--output-dir", "--dot", "--list-passes",
			      "--werror", "convert IN OUT", "--print-before", "--print-changed[=diff]",
			      "--disable-verify", "--crash-reproducer"};
	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
		cr_assert(strstr(r.out, opts[i]), "--help does not mention %s", opts[i]);
	tu_result_free(&r);
}

Test(cli, bad_command_lines_exit_2)
{
	const char *bad[] = {"--frobnicate", "--stats=xml", "--run=0", "--device=tpu",
			     "--pipeline", "--pipeline x.yaml --passes a", "--seed -1",
			     "--input nameonly"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tu_result r = tu_run("%s %s %s", PASSRUN_EXE, bad[i], program());
		cr_assert_eq(r.status, 2, "'%s' gave %d: %s", bad[i], r.status, r.err);
		cr_assert(strstr(r.err, "passrun: "), "%s", r.err);
		tu_result_free(&r);
	}
	tu_result r = tu_run("%s", PASSRUN_EXE);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "no program given"));
	tu_result_free(&r);
	r = tu_run("%s --print-aftr-all %s", PASSRUN_EXE, program());
	cr_assert(strstr(r.err, "did you mean '--print-after-all'?"), "%s", r.err);
	tu_result_free(&r);
}

Test(cli, unreadable_or_malformed_program_exits_3)
{
	tu_result r = tu_run("%s /nonexistent.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 3);
	cr_assert(strstr(r.err, "/nonexistent.pg"), "%s", r.err);
	tu_result_free(&r);
	const char *bad = tu_write_temp("bad.pg", "passrun 1\nmethod @f {\n  %x = bogus\n}\n");
	r = tu_run("%s %s", PASSRUN_EXE, bad);
	cr_assert_eq(r.status, 3);
	cr_assert(strstr(r.err, "bad.pg:3:"), "FILE:LINE:COL: %s", r.err);
	tu_result_free(&r);
}

Test(cli, program_failing_verification_on_load_exits_1)
{
	const char *p = tu_write_temp("dev.pg",
		"passrun 1\nop aten::relu(Tensor self) -> Tensor\nmethod @forward {\n"
		"  %x: f32[2]@cuda:0 = input user \"x\"\n  %r: f32[2] = aten::relu(%x)\n"
		"  return %r\n}\n");
	tu_result r = tu_run("%s " NODEF " %s", PASSRUN_EXE, p);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "error[E-PLACEMENT] pass 'verifier' method 'forward'"), "%s", r.err);
	cr_assert(strstr(r.err, "fails verification"), "%s", r.err);
	tu_result_free(&r);
}

Test(cli, print_is_the_program_text)
{
	tu_result r = run("--print", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, program_text);
	tu_result_free(&r);
}

Test(cli, convert_round_trips_through_binary)
{
	const char *pg = program();
	char bin[600], back[600];
	snprintf(bin, sizeof bin, "%s/prog.bin", tu_temp_dir());
	snprintf(back, sizeof back, "%s/back.pg", tu_temp_dir());
	tu_result r = tu_run("%s convert %s %s && %s convert %s %s", PASSRUN_EXE, pg, bin,
			     PASSRUN_EXE, bin, back);
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	char *text = tu_read_file(back, NULL);
	char *bytes = tu_read_file(bin, NULL);
	cr_assert_str_eq(text, program_text);
	cr_assert(!memcmp(bytes, "PASSRUN", 7), "binary magic");
	free(text);
	free(bytes);
	r = tu_run("%s convert %s", PASSRUN_EXE, pg);
	cr_assert_eq(r.status, 2);
	tu_result_free(&r);
}

Test(cli, output_is_written_only_on_success)
{
	const char *pg = program();
	char out[600];
	snprintf(out, sizeof out, "%s/out.pg", tu_temp_dir());
	tu_result r = tu_run("%s " NODEF " --plugin " GOOD " --passes test-noop -o %s %s", PASSRUN_EXE,
		   out, pg);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *text = tu_read_file(out, NULL);
	cr_assert_str_eq(text, program_text);
	free(text);
	tu_result_free(&r);
	remove(out);
	const char *failing[] = {"test-fail", "test-error", "test-touch,test-fail"};
	for (int i = 0; i < 3; i++) {
		r = tu_run("%s " NODEF " --plugin " GOOD " --passes %s -o %s %s", PASSRUN_EXE,
			   failing[i], out, pg);
		cr_assert_eq(r.status, 1, "%s: %s", failing[i], r.err);
		cr_assert_null(tu_read_file(out, NULL), "-o written after %s failed", failing[i]);
		tu_result_free(&r);
	}
	text = tu_read_file(pg, NULL);
	cr_assert_str_eq(text, program_text, "the input file is untouched");
	free(text);
	/* Only the output file appears in the folder: no temporary left over. */
	r = tu_run("ls %s | grep -c tmp", tu_temp_dir());
	cr_assert_str_eq(r.out, "0\n");
	tu_result_free(&r);
}

Test(cli, pass_error_names_the_pass)
{
	tu_result r = run("--passes test-noop,test-fail,test-noop --time-passes", program());
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "pass 'test-fail' failed: test-fail always fails"), "%s", r.err);
	/* The run stopped: the second test-noop never ran. */
	cr_assert_eq(tu_count(r.err, "test-noop\n"), 1, "%s", r.err);
	tu_result_free(&r);
}

Test(cli, verify_each_names_the_pass_that_broke_the_program)
{
	tu_result r = tu_run("%s " NODEF " --plugin " GOOD " --plugin " BREAKER
			     " --passes test-noop,test-break,test-noop --verify-each %s",
			     PASSRUN_EXE, program());
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "verifier failed after pass 'test-break'"), "%s", r.err);
	cr_assert(strstr(r.err, "error[E-PLACEMENT] pass 'test-break'"), "%s", r.err);
	tu_result_free(&r);
	/* Only --disable-verify lets the broken program through. */
	r = tu_run("%s " NODEF " --plugin " BREAKER " --passes test-break --disable-verify %s",
		   PASSRUN_EXE, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
}

Test(cli, werror_turns_warnings_into_errors)
{
	tu_result r = run("--passes test-warn", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "prog.pg: warning[W-TEST] pass 'test-warn' method 'forward': "),
		  "§5 format: %s", r.err);
	tu_result_free(&r);
	r = run("--passes test-warn --werror", program());
	cr_assert_eq(r.status, 1, "%s", r.err);
	tu_result_free(&r);
}

Test(cli, print_after_prints_after_that_pass)
{
	tu_result r = run("--passes test-noop,test-touch --print-after=test-touch", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.err, "# *** program after pass"), 1, "%s", r.err);
	cr_assert(strstr(r.err, "after pass 'test-touch'"), "%s", r.err);
	cr_assert(strstr(r.err, "%a: f32[2,3] = aten::add.Tensor(%x, %y)"), "%s", r.err);
	tu_result_free(&r);
	r = run("--passes test-noop,test-touch --print-after-all", program());
	cr_assert_eq(tu_count(r.err, "# *** program after pass"), 2, "%s", r.err);
	tu_result_free(&r);
	r = run("--passes test-noop --print-after=test-tuch", program());
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "did you mean 'test-touch'?"), "%s", r.err);
	tu_result_free(&r);
}

Test(cli, time_passes_prints_a_table)
{
	tu_result r = run("--passes test-noop,test-touch --time-passes", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "passrun: time per pass"), "%s", r.err);
	cr_assert(strstr(r.err, "yes      test-touch"), "%s", r.err);
	cr_assert(strstr(r.err, "no       test-noop"), "%s", r.err);
	cr_assert(strstr(r.err, "(load plugins)"), "%s", r.err);
	cr_assert(strstr(r.err, "total"), "%s", r.err);
	tu_result_free(&r);
}

/* Runs python3 on the JSON in out, with the checks in `code` (d is the
 * parsed object); returns python's exit status. */
static int check_json(const char *json, const char *code)
{
	const char *file = tu_write_temp("stats.json", json);
	tu_result r = tu_run("python3 -c 'import json,sys\nd=json.load(open(sys.argv[1]))\n%s' %s",
			     code, file);
	if (r.status)
		fprintf(stderr, "python: %s\n", r.err);
	int st = r.status;
	tu_result_free(&r);
	return st;
}

Test(cli, stats_json_is_valid_and_complete)
{
	const char *pg = tu_write_temp("copies.pg",
		"passrun 1\n"
		"op aten::relu(Tensor self) -> Tensor\n"
		"op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"
		"op et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}\n"
		"delegate @d backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3] = input\n  return %a\n}\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[4]@cuda:0 = input parameter \"w\" data=zeros\n"
		"  %k: f32[2,3] = input buffer \"k\" data=zeros\n"
		"  %c: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %e: f32[2,3]@cuda:0 = delegate @d(%c)\n"
		"  %h: f32[2,3] = et_copy::_d2h_copy(%e)\n"
		"  %r: f32[2,3] = aten::relu(%h)\n"
		"  return %r, %e, %r -> buffer \"k\"\n"
		"}\n");
	tu_result r = tu_run("%s " NODEF " --plugin " GOOD " --passes test-warn,test-noop "
			     "--time-passes --stats=json %s", PASSRUN_EXE, pg);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(check_json(r.out,
		"m=d[\"methods\"][\"forward\"]\n"
		"assert m[\"nodes\"]==8, m\n"
		"assert (m[\"h2d_copies\"],m[\"d2h_copies\"])==(1,1), m\n"
		"assert (m[\"h2d_bytes_per_call\"],m[\"d2h_bytes_per_call\"])==(24,24), m\n"
		"assert m[\"load_h2d_bytes\"]==16, m\n"
		"assert m[\"inputs\"]==[{\"name\":\"x\",\"device\":\"cpu\"}], m\n"
		"assert m[\"outputs\"]==[{\"index\":0,\"name\":\"r\",\"device\":\"cpu\"},"
		"{\"index\":1,\"name\":\"e\",\"device\":\"cuda:0\"}], m\n"
		"x=d[\"diagnostics\"][0]\n"
		"assert x[\"severity\"]==\"warning\" and x[\"code\"]==\"W-TEST\", x\n"
		"assert x[\"method\"]==\"forward\", x\n"
		"assert x[\"message\"]==\"a test warning about \\\"x\\\"\\twith a tab\", x\n"
		"assert x[\"pass\"]==\"test-warn\" and x[\"bytes\"]==24 and x[\"node\"]==\"x\", x\n"
		"assert [p[\"name\"] for p in d[\"passes\"]]==[\"test-warn\",\"test-noop\"], d\n"
		"assert all(p[\"changed\"] is False and p[\"ms\"]>=0 for p in d[\"passes\"])\n"), 0,
		"stats: %s", r.out);
	cr_assert(strstr(r.err, "time per pass"), "--time-passes goes to stderr");
	tu_result_free(&r);
}

Test(cli, stats_json_is_printed_after_a_failing_pass)
{
	tu_result r = run("--passes test-error --stats=json", program());
	cr_assert_eq(r.status, 1);
	cr_assert_eq(check_json(r.out, "assert d[\"diagnostics\"][0][\"code\"]==\"E-TEST\"\n"
				"assert d[\"diagnostics\"][0][\"node\"] is None\n"), 0, "%s", r.out);
	tu_result_free(&r);
}

/* ---- the dce plugin ------------------------------------------------------- */

Test(cli, dce_removes_dead_ops_and_keeps_writes_copies_delegates_and_returns)
{
	const char *pg = tu_write_temp("dce.pg",
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"op aten::relu(Tensor self) -> Tensor\n"
		"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
		"op aten::view(Tensor(a) self, int[] size) -> Tensor(a)\n"
		"op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"
		"delegate @d backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3] = input\n  return %a\n}\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %k: f32[2,3] = input buffer \"k\" data=zeros\n"
		"  %a: f32[2,3] = aten::add.Tensor(%x, %x)\n"
		"  %dead1: f32[2,3] = aten::relu(%a)\n"
		"  %dead2: f32[2,3] = aten::add.Tensor(%dead1, %a)\n"
		"  %deadview: f32[6] = aten::view(%a, [6])\n"
		"  %v: f32[6] = aten::view(%k, [6])\n"
		"  %written: f32[6] = aten::relu_(%v)\n"
		"  %c: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		"  %e: f32[2,3]@cuda:0 = delegate @d(%c)\n"
		"  %b: f32[2,3] = aten::relu(%k)\n"
		"  return %a, %b -> buffer \"k\"\n"
		"}\n");
	tu_result r = tu_run("%s " NODEF " --plugin " DCE " --passes 'dce{report=true}' --print "
			     "--verify-each %s", PASSRUN_EXE, pg);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "%dead1"), "%s", r.out);
	cr_assert_null(strstr(r.out, "%dead2"), "%s", r.out);
	cr_assert_null(strstr(r.out, "%deadview"), "%s", r.out);
	cr_assert(strstr(r.out, "%written: f32[6] = aten::relu_(%v)"), "writes are kept: %s", r.out);
	cr_assert(strstr(r.out, "%v: f32[6] = aten::view(%k, [6])"), "%s", r.out);
	cr_assert(strstr(r.out, "%c: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)"), "copies: %s", r.out);
	cr_assert(strstr(r.out, "%e: f32[2,3]@cuda:0 = delegate @d(%c)"), "delegates: %s", r.out);
	cr_assert(strstr(r.out, "%b: f32[2,3] = aten::relu(%k)"), "write-backs: %s", r.out);
	cr_assert_eq(tu_count(r.err, "note[N-DCE-REMOVED] pass 'dce' method 'forward'"), 3,
		     "%s", r.err);
	tu_result_free(&r);
	/* A second run finds nothing to do. */
	r = tu_run("%s " NODEF " --plugin " DCE " --passes dce,dce --stats=json %s", PASSRUN_EXE, pg);
	cr_assert_eq(check_json(r.out, "assert [p[\"changed\"] for p in d[\"passes\"]]==[True,False]\n"),
		     0, "%s", r.out);
	tu_result_free(&r);
}

/* ---- execution and pictures (the runtime, tools/dot.c) ---------------------- */

Test(cli, run_and_check_report_the_run_object)
{
	tu_result r = run("--passes test-noop --run=2 --check --seed 3 --stats=json", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(check_json(r.out, "x=d[\"run\"]\n"
				"assert x[\"iterations\"]==2 and x[\"match\"] is True, x\n"
				"assert x[\"device\"] in (\"sim\",\"cuda\"), x\n"), 0, "%s", r.out);
	tu_result_free(&r);
	/* A bad --input is a bad command line; nothing is written. */
	char out[600];
	snprintf(out, sizeof out, "%s/run.pg", tu_temp_dir());
	r = tu_run("%s " NODEF " --input nosuch=/nonexistent.npy -o %s %s", PASSRUN_EXE, out,
		   program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "nosuch"), "%s", r.err);
	cr_assert_null(tu_read_file(out, NULL));
	tu_result_free(&r);
	/* A real input name with a file that cannot be opened: exit 2, the file named. */
	r = tu_run("%s " NODEF " --run --input x=/nonexistent.npy -o %s %s", PASSRUN_EXE, out,
		   program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "/nonexistent.npy") && strstr(r.err, "No such file"), "%s", r.err);
	cr_assert_null(tu_read_file(out, NULL));
	tu_result_free(&r);
}

Test(cli, dot_writes_a_graphviz_file)
{
	char dot[600];
	snprintf(dot, sizeof dot, "%s/p.dot", tu_temp_dir());
	tu_result r = tu_run("%s " NODEF " --dot %s %s", PASSRUN_EXE, dot, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *text = tu_read_file(dot, NULL);
	cr_assert(text && !strncmp(text, "digraph", 7), "%s", text ? text : "(no file)");
	free(text);
	tu_result_free(&r);
}

/* The 1,000-node decoder drawn whole is more than Graphviz's dot lays out in
 * minutes; a window around one node is drawn at once and passrun says how to
 * ask for one. */
Test(cli, dot_window_of_a_large_program_is_drawn_and_the_whole_is_warned_about)
{
	const char *dir = tu_temp_dir(), *d1k = tu_gen_decoder(1000);
	tu_result r = tu_run("%s --pipeline cuda --dot %s/whole.dot %s", PASSRUN_EXE, dir, d1k);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "--dot-around=NODE[:RADIUS]"), "the note on a large picture:\n%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --dot %s/part.dot --dot-around=l3_wq:2 --dot-changes %s",
		   PASSRUN_EXE, dir, d1k);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strstr(r.err, "--dot-around=NODE"), "no note for a window:\n%s", r.err);
	char path[600];
	snprintf(path, sizeof path, "%s/part.dot", dir);
	char *text = tu_read_file(path, NULL);
	cr_assert(text && strstr(text, "\"m0 l3_wq\" [label"), "%s", text ? text : "(no file)");
	cr_assert(strstr(text, "added by pipeline 'cuda'"), "the h2d copy of l3_wq is new:\n%s", text);
	/* Its warning is past the 10 printed: --dot keeps it for the outline. */
	cr_assert(strstr(text, "W-CONSTANT-COPY"), "the copy is named by its code:\n%s", text);
	cr_assert(strstr(text, "fontcolor=\"#d00000\""), "outlined as a per-call copy:\n%s", text);
	cr_assert_lt(tu_count(text, "[label="), 40, "a window, not the program:\n%s", text);
	free(text);
	tu_result_free(&r);
	r = tu_run("command -v dot >/dev/null || exit 77; dot -Tsvg %s/part.dot -o %s/part.svg", dir, dir);
	cr_assert(r.status == 0 || r.status == 77, "dot refused the window: %s", r.err);
	tu_result_free(&r);
}

/* --dot-pass draws the program right after one pass, marked against the
 * program right before it: B4's round trip removed by elide-round-trips. */
Test(cli, dot_pass_marks_what_one_pass_removed)
{
	char path[600];
	snprintf(path, sizeof path, "%s/b4.dot", tu_temp_dir());
	tu_result r = tu_run("%s --pipeline cuda --dot %s --dot-pass=elide-round-trips "
			     "%s/examples/b4_round_trip.pg", PASSRUN_EXE, path, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *text = tu_read_file(path, NULL);
	cr_assert(text, "no picture");
	cr_assert(strstr(text, "\"m0 removed z_d2h_h2d_cuda0#7\" [label=\"h2d copy -> cuda:0"),
		  "the round trip's h2d copy, drawn as removed:\n%s", text);
	cr_assert_eq(tu_count(text, "removed by pass 'elide-round-trips'"), 2, "the copy and the legend");
	cr_assert(!strstr(text, "xlabel=\"added by"), "elide-round-trips adds nothing:\n%s", text);
	cr_assert(!strstr(text, "mem="), "the picture is taken before memory-plan ran:\n%s", text);
	free(text);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --dot %s --dot-pass=dce %s/examples/b4_round_trip.pg",
		   PASSRUN_EXE, path, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--dot-pass=dce: pass 'dce' is not in the pipeline (its passes: "),
		  "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --dot-pass=copy-reuse %s/examples/b4_round_trip.pg",
		   PASSRUN_EXE, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--dot-pass shapes the picture of --dot FILE"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --dot %s --dot-pass=copy-reuse --dot-changes "
		   "%s/examples/b4_round_trip.pg", PASSRUN_EXE, path, PASSRUN_SOURCE_DIR);
	cr_assert_eq(r.status, 2, "%s", r.err);
	tu_result_free(&r);
}

/* Diagnostics at scale: 10 of a code, then one line for the rest; every one
 * under --all-diagnostics and in --stats=json. decoder.pg has 20
 * W-CONSTANT-COPY. */
Test(cli, diagnostics_of_one_code_past_ten_become_one_summary_line)
{
	const char *decoder = PASSRUN_SOURCE_DIR "/examples/decoder.pg";
	tu_result r = tu_run("%s --pipeline cuda --stats=json %s", PASSRUN_EXE, decoder);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.err, "warning[W-CONSTANT-COPY]"), 10 + 1, "ten and the summary:\n%s",
		     r.err);
	cr_assert(strstr(r.err, "decoder.pg: note: 20 warning[W-CONSTANT-COPY] in all, 10 printed "
			 "(--all-diagnostics prints every one); 1488 bytes in all, the largest 128 (%l0_w1, "
			 "method 'forward')"), "%s", r.err);
	cr_assert_eq(tu_count(r.out, "\"W-CONSTANT-COPY\""), 20, "--stats=json keeps each:\n%s", r.out);
	tu_result_free(&r);
	r = tu_run("%s --pipeline cuda --all-diagnostics %s", PASSRUN_EXE, decoder);
	cr_assert_eq(tu_count(r.err, "warning[W-CONSTANT-COPY]"), 20, "%s", r.err);
	cr_assert(!strstr(r.err, "in all,"), "no summary when every one is printed:\n%s", r.err);
	tu_result_free(&r);
}

Test(cli, dot_view_errors_are_usage_errors)
{
	tu_result r = tu_run("%s " NODEF " --dot %s/x.dot --dot-around=nosuch %s", PASSRUN_EXE,
			     tu_temp_dir(), program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "no node named 'nosuch'"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --dot %s/x.dot --dot-around=x:-1 %s", PASSRUN_EXE, tu_temp_dir(),
		   program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "expected NODE or NODE:RADIUS"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --dot %s/x.dot --dot-method=nosuch %s", PASSRUN_EXE, tu_temp_dir(),
		   program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "no method named 'nosuch' (did you mean 'forward'?)"), "%s", r.err);
	tu_result_free(&r);
}

Test(cli, overlapping_memory_plan_fails_verification_on_load)
{
	const char *p = tu_write_temp("overlap.pg",
		"passrun 1\nop aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"method @forward {\n  %x: f32[2,3] = input user \"x\"\n"
		"  %a: f32[2,3]{mem=cpu:0} = aten::add.Tensor(%x, %x)\n"
		"  %b: f32[2,3]{mem=cpu:8} = aten::add.Tensor(%a, %x)\n"
		"  %c: f32[2,3] = aten::add.Tensor(%a, %b)\n  return %c\n}\n");
	tu_result r = tu_run("%s " NODEF " %s", PASSRUN_EXE, p);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "error[E-PLAN] pass 'verifier' method 'forward'"), "%s", r.err);
	tu_result_free(&r);
}

/* ---- the plugin author's safety net --------------------------------------- */

#define CORRUPT PASSRUN_BINARY_DIR "/tests/plugins/prtest_corrupt.so"
#define CRASHER PASSRUN_BINARY_DIR "/tests/plugins/prtest_crasher.so"

/* forward's %a is written in place by %b, for test-bad-shape. */
static const char *inplace_program(void)
{
	static char path[512];
	snprintf(path, sizeof path, "%s", tu_write_temp("inplace.pg",
		"passrun 1\n\n"
		"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %y: f32[2,3] = input user \"y\"\n"
		"  %a: f32[2,3] = aten::add.Tensor(%x, %y)\n"
		"  %b: f32[2,3] = aten::relu_(%a)\n"
		"  return %b\n"
		"}\n"));
	return path;
}

static void caught_without_flags(const char *pass, const char *code)
{
	char out[600];
	snprintf(out, sizeof out, "%s/corrupt_out.pg", tu_temp_dir());
	remove(out);
	tu_result r = tu_run("%s " NODEF " --plugin " CORRUPT " --plugin " GOOD
			     " --passes test-noop,%s,test-noop -o %s %s", PASSRUN_EXE, pass, out,
			     inplace_program());
	cr_assert_eq(r.status, 1, "%s: %s", pass, r.err);
	cr_assert(strstr(r.err, code), "%s: no %s in: %s", pass, code, r.err);
	char expect[300];
	snprintf(expect, sizeof expect, "verifier failed after the pipeline (");
	cr_assert(strstr(r.err, expect), "%s", r.err);
	snprintf(expect, sizeof expect, "most likely at fault: pass '%s', the last that "
		 "reported a change (rerun with --verify-each", pass);
	cr_assert(strstr(r.err, expect), "%s", r.err);
	cr_assert_null(tu_read_file(out, NULL), "%s: -o wrote %s", pass, out);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --plugin " CORRUPT " --passes %s --verify-each %s", PASSRUN_EXE,
		   pass, inplace_program());
	snprintf(expect, sizeof expect, "verifier failed after pass '%s'", pass);
	cr_assert(r.status == 1 && strstr(r.err, expect), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --plugin " CORRUPT " --passes %s --disable-verify -o %s %s",
		   PASSRUN_EXE, pass, out, inplace_program());
	cr_assert_eq(r.status, 0, "--disable-verify: %s", r.err);
	char *text = tu_read_file(out, NULL);
	cr_assert(text, "--disable-verify writes the result");
	free(text);
	tu_result_free(&r);
}

Test(cli, a_corrupting_pass_is_caught_without_flags)
{
	caught_without_flags("test-bad-uses", "error[E-USES] pass 'verifier'");
	caught_without_flags("test-bad-shape", "in-place result %b is f32[2,3] but writes %a, "
			     "which is f32[7,3]");
	caught_without_flags("test-bad-device", "error[E-PLACEMENT] pass 'verifier'");
}

Test(cli, verify_each_names_a_pass_that_reports_no_change_but_made_one)
{
	tu_result r = tu_run("%s " NODEF " --plugin " CORRUPT " --passes test-hide-change "
			     "--verify-each %s", PASSRUN_EXE, inplace_program());
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "pass 'test-hide-change' changed the program but reported no "
			 "change"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --plugin " CORRUPT " --passes test-hide-change %s", PASSRUN_EXE,
		   inplace_program());
	cr_assert_eq(r.status, 0, "a valid result, no fingerprints without --verify-each: %s",
		     r.err);
	tu_result_free(&r);
}

static void assert_crash_report(const tu_result *r, const char *plugin_path)
{
	cr_assert_eq(r->status, 128 + 11, "killed by SIGSEGV, got %d: %s", r->status, r->err);
	char expect[1200];
	snprintf(expect, sizeof expect, "passrun: crash: signal 11 (SIGSEGV) in pass 'test-crash' "
		 "of plugin 'crasher' (%s), method 'forward'\n", plugin_path);
	cr_assert(strstr(r->err, expect), "expected: %s\nin: %s", expect, r->err);
}

Test(cli, a_crash_names_its_pass_and_the_reproducer_reproduces_it)
{
	char repro[600];
	snprintf(repro, sizeof repro, "%s/crash.pg", tu_temp_dir());
	tu_result r = tu_run("%s " NODEF " --plugin " CRASHER " --plugin " GOOD
			     " --passes test-touch,test-crash --crash-reproducer %s %s", PASSRUN_EXE,
			     repro, program());
	assert_crash_report(&r, CRASHER);
	cr_assert(strstr(r.err, "reproduce with: passrun --pipeline"), "%s", r.err);
	tu_result_free(&r);
	/* The documented command: the second line of the reproducer. */
	char *text = tu_read_file(repro, NULL);
	cr_assert(text, "no reproducer written");
	const char *cmd = strstr(text, "# Reproduce with: passrun ");
	cr_assert(cmd, "%s", text);
	cmd += strlen("# Reproduce with: passrun ");
	char args[1500];
	snprintf(args, sizeof args, "%.*s", (int)strcspn(cmd, "\n"), cmd);
	cr_assert(strstr(text, "%a: f32[2,3] = aten::add.Tensor(%x, %y)"), "%s", text);
	free(text);
	r = tu_run("unset PASSRUN_PLUGIN_PATH; %s %s", PASSRUN_EXE, args);
	char real[1024];
	cr_assert(realpath(CRASHER, real));
	assert_crash_report(&r, real);
	tu_result_free(&r);
}

Test(cli, compare_survives_a_crashing_pipeline)
{
	char yaml[800];
	snprintf(yaml, sizeof yaml, "plugins:\n  - %s\npasses:\n  - test-crash\n", CRASHER);
	char crash[600];
	snprintf(crash, sizeof crash, "%s", tu_write_temp("crash.yaml", yaml));
	tu_result r = tu_run("%s compare --pipelines %s,cuda --format=json %s", PASSRUN_EXE, crash,
			     program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "\"message\": \"crashed in pass test-crash (signal 11)\""), "%s",
		  r.out);
	cr_assert(strstr(r.out, "\"exit\": 139, \"check\": \"crashed\""), "%s", r.out);
	cr_assert(strstr(r.out, "{\"name\": \"cuda\", \"exit\": 0"), "the next row ran: %s", r.out);
	cr_assert(strstr(r.err, "in pass 'test-crash' of plugin 'crasher'"), "%s", r.err);
	tu_result_free(&r);
}

Test(cli, print_changed_prints_only_after_passes_that_changed)
{
	tu_result r = run("--passes test-noop,test-touch,test-noop --print-changed", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.err, "# *** program after pass"), 1, "%s", r.err);
	cr_assert(strstr(r.err, "# *** program after pass 'test-touch' ***"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s " NODEF " --plugin " CORRUPT " --plugin " GOOD " --passes "
		   "test-noop,test-bad-device --print-changed=diff --disable-verify %s",
		   PASSRUN_EXE, inplace_program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "--- before pass 'test-bad-device'\n"
			 "+++ after pass 'test-bad-device'\n"
			 "@@ -4,7 +4,7 @@\n"
			 " op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
			 " \n"
			 " method @forward {\n"
			 "-  %x: f32[2,3] = input user \"x\"\n"
			 "+  %x: f32[2,3]@cuda:0 = input user \"x\"\n"
			 "   %y: f32[2,3] = input user \"y\"\n"), "%s", r.err);
	cr_assert_null(strstr(r.err, "pass 'test-noop'"), "test-noop changed nothing: %s", r.err);
	tu_result_free(&r);
	r = run("--passes test-noop --print-changed=full", program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	tu_result_free(&r);
}

Test(cli, print_before_prints_before_that_pass)
{
	tu_result r = run("--passes test-noop,test-touch --print-before=test-touch", program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.err, "# *** program before pass 'test-touch' ***"), 1, "%s", r.err);
	cr_assert_eq(tu_count(r.err, "# *** program"), 1, "%s", r.err);
	tu_result_free(&r);
}

Test(cli, printing_a_pass_not_in_the_pipeline_is_a_usage_error)
{
	const char *flags[] = {"--print-after=test-touch", "--print-before=test-touch"};
	for (int i = 0; i < 2; i++) {
		char args[200];
		snprintf(args, sizeof args, "--passes test-noop,test-warn %s", flags[i]);
		tu_result r = run(args, program());
		cr_assert_eq(r.status, 2, "%s: %s", flags[i], r.err);
		cr_assert(strstr(r.err, "pass 'test-touch' is not in the pipeline (its passes: "
				 "test-noop, test-warn)"), "%s", r.err);
		cr_assert_eq(r.out[0], 0);
		tu_result_free(&r);
	}
}
