/* test_cli_limits.c: numbers and sizes on passrun's command line and in its
 * inputs that are out of range are refused with the real limit, never
 * truncated or wrapped, and pipelines too large or too deeply nested for
 * libyaml are refused before it spends minutes on them; one limit on a
 * string's length holds in the text parser, the binary writer and the binary
 * loader (issue 16, items 7, 16 and 17). */
#define _GNU_SOURCE   /* memmem */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
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

/* ---- item 16: pipelines and --set values handed to libyaml ---------------- */

/* Writes `head`, then n copies of c, then `tail` to a temporary file. */
static const char *write_repeated(const char *name, const char *head, char c, size_t n,
				  const char *tail)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/%s", tu_temp_dir(), name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(head, f);
	for (size_t i = 0; i < n; i++)
		fputc(c, f);
	fputs(tail, f);
	fclose(f);
	return path;
}

Test(cli_limits, deep_nesting_in_a_pipeline_is_refused_at_its_place)
{
	/* 128 KB of '[' took 28 s inside libyaml (quadratic in the depth), then
	 * failed at 2:1; the 64th '[' after "passes: " is at column 72 */
	char args[1200];
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("deep.yaml", "passes: ", '[', 128 * 1024, "\n"));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "deep.yaml:1:72: lists and maps nested more than 64 deep"), "%s",
		  r.err);
	tu_result_free(&r);
	/* 60 deep is fine as YAML (and then not a pass list) */
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("ok.yaml", "passes: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", ']', 30, "\n"));
	r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(!strstr(r.err, "nested") && strstr(r.err, "ok.yaml:1:10: expected a pass"), "%s",
		  r.err);
	tu_result_free(&r);
}

Test(cli_limits, deep_nesting_in_a_set_value_is_refused_at_its_place)
{
	/* the value, 100,000 '[', comes from a file: tu_run's command is short */
	char args[1200];
	snprintf(args, sizeof args, "--set \"skip_h2d_for_method_inputs=$(cat %s)\"",
		 write_repeated("deep.set", "", '[', 100000, ""));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	/* "skip_h2d_for_method_inputs=" is 27 characters: the 65th '[' is column 92 */
	cr_expect(strstr(r.err, "--set:1:92: lists and maps nested more than 64 deep"), "%s",
		  r.err);
	tu_result_free(&r);
}

Test(cli_limits, a_pipeline_over_one_mib_is_refused)
{
	char args[1200];
	snprintf(args, sizeof args, "--pipeline %s",
		 write_repeated("big.yaml", "# ", 'x', 2 * 1024 * 1024, "\npasses: []\n"));
	tu_result r = run(args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "big.yaml:1:1: more than 1048576 bytes of YAML"), "%s", r.err);
	tu_result_free(&r);
}

/* ---- item 17: one limit on strings, in both formats ----------------------- */

/* A program calling x::f with a string of n bytes ('a'), at 4:8. */
static char *program_with_string(size_t n)
{
	const char *head = "passrun 1\nop x::f(str a) -> ()\nmethod @m {\n  x::f(\"";
	const char *tail = "\")\n  return\n}\n";
	size_t k = strlen(head);
	char *text = malloc(k + n + strlen(tail) + 1);
	memcpy(text, head, k);
	memset(text + k, 'a', n);
	strcpy(text + k + n, tail);
	return text;
}

static pr_err *parse(const char *text, pr_program **p)
{
	return pr_text_parse("big.pg", text, strlen(text), p);
}

Test(string_limit, the_text_parser_refuses_a_string_the_binary_format_cannot_hold)
{
	/* 17 MiB converted, and the .bin was then refused ("runs past the end
	 * of the METHODS section"): convert wrote a file that did not load */
	char *text = program_with_string(PR_MAX_STRING_BYTES + 1);
	pr_program *p = NULL;
	pr_err *e = parse(text, &p);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "big.pg:4:8: a string of more than 16777216 bytes"),
		  "%.200s", pr_err_message(e));
	pr_err_free(e);
	free(text);
}

Test(string_limit, a_string_at_the_limit_converts_and_loads)
{
	char *text = program_with_string(PR_MAX_STRING_BYTES);
	pr_program *p = NULL, *q = NULL;
	pr_err *e = parse(text, &p);
	cr_assert_null(e, "%.200s", e ? pr_err_message(e) : "");
	uint8_t *bin;
	size_t len;
	cr_assert_null(pr_binary_write(p, &bin, &len));
	e = pr_binary_load("big.bin", bin, len, false, &q);
	cr_expect_null(e, "%.200s", e ? pr_err_message(e) : "");
	pr_err_free(e);
	pr_program_free(q);
	free(bin);
	pr_program_free(p);
	free(text);
}

static pr_arg *string_arg(pr_program *p)
{
	pr_graph *g = p->methods[0];
	pr_graph_for_each(g, n)
		for (int i = 0; i < n->n_args; i++)
			if (n->args[i].kind == PR_ARG_STRING)
				return &n->args[i];
	cr_assert_fail("no string argument");
	return NULL;
}

Test(string_limit, the_writer_refuses_a_longer_string_and_the_loader_names_the_limit)
{
	char *text = program_with_string(8);
	pr_program *p = NULL;
	cr_assert_null(parse(text, &p));
	pr_arg *a = string_arg(p);
	char *keep = a->u.s;
	a->u.s = malloc(PR_MAX_STRING_BYTES + 2);   /* as a pass might make one */
	memset(a->u.s, 'b', PR_MAX_STRING_BYTES + 1);
	a->u.s[PR_MAX_STRING_BYTES + 1] = 0;
	uint8_t *bin = NULL;
	size_t len;
	pr_err *e = pr_binary_write(p, &bin, &len);
	cr_assert_not_null(e, "wrote a .bin that cannot load");
	cr_expect(strstr(pr_err_message(e), "a string of 16777217 bytes, more than the 16777216"),
		  "%s", pr_err_message(e));
	pr_err_free(e);
	free(a->u.s);
	a->u.s = keep;
	/* the loader's own message for a length over the limit: the 8-byte string's
	 * length field, patched */
	cr_assert_null(pr_binary_write(p, &bin, &len));
	uint8_t *at = memmem(bin, len, "\x08\0\0\0aaaaaaaa", 12);
	cr_assert_not_null(at);
	uint32_t n = PR_MAX_STRING_BYTES + 1;
	memcpy(at, &n, 4);   /* the format is little-endian, as is this machine */
	pr_program *q = NULL;
	e = pr_binary_load("big.bin", bin, len, false, &q);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "is 16777217 bytes long, more than the 16777216 bytes a "
				      "string may hold"), "%s", pr_err_message(e));
	pr_err_free(e);
	free(bin);
	pr_program_free(p);
	free(text);
}
