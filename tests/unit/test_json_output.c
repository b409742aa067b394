/* test_json_output.c: every JSON passrun prints parses, whatever bytes the
 * names in the program hold (issue 16, item 18): control characters are
 * escaped and a byte that is not part of well-formed UTF-8 becomes U+FFFD.
 * Each output is read back by Python's json module. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/strbuf.h"
#include "testutil.h"

static char *json_of(const char *s)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_json_string(&b, s);
	return pr_strbuf_take(&b);
}

Test(json_string, bad_utf8_becomes_the_replacement_character)
{
	static const struct { const char *in, *out; } cases[] = {
		{"a\xff" "b", "\"a\\ufffdb\""},                        /* the name */
		{"\xc0\xaf", "\"\\ufffd\\ufffd\""},                    /* overlong '/' */
		{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},         /* a surrogate */
		{"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* above U+10FFFF */
		{"x\xe2\x82", "\"x\\ufffd\\ufffd\""},                  /* cut short at the end */
		{"\xe2\x82" "a", "\"\\ufffd\\ufffda\""},               /* cut short by ASCII */
		{"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
		{"\x01\x7f\"\\\n", "\"\\u0001\\u007f\\\"\\\\\\n\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *j = json_of(cases[i].in);
		cr_expect_str_eq(j, cases[i].out, "case %zu", i);
		free(j);
	}
}

/* Runs python3 on json (a file): it must parse, and `code` (with d the
 * parsed value) must pass. */
static void expect_json(const char *json, const char *code)
{
	const char *file = tu_write_temp("out.json", json);
	tu_result r = tu_run("python3 -c 'import json,sys\nd=json.load(open(sys.argv[1], "
			     "encoding=\"utf-8\"))\n%s' %s", code, file);
	cr_expect_eq(r.status, 0, "%s\n%s", r.err, json);
	tu_result_free(&r);
}

/* An input named "a\xffb", a parameter with a control character in its
 * name, and a diagnostic that quotes them. */
static const char *const program_text =
	"passrun 1\n"
	"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
	"method @forward {\n"
	"  %x: f32[2] = input user \"a\\xffb\"\n"
	"  %w: f32[2] = input parameter \"w\\x01\\xc3\" data=ones\n"
	"  %r: f32[2] = aten::add.Tensor(%x, %w)\n"
	"  return %r\n"
	"}\n";

Test(json_output, stats_json_with_non_utf8_names_parses)
{
	char prog[1024];   /* tu_write_temp's storage is reused by expect_json */
	snprintf(prog, sizeof prog, "%s", tu_write_temp("names.pg", program_text));
	tu_result r = tu_run("unset PASSRUN_PLUGIN_PATH; %s --pipeline cuda --stats=json %s",
			     PASSRUN_EXE, prog);
	cr_expect_eq(r.status, 0, "%s", r.err);
	expect_json(r.out, "assert d[\"methods\"][\"forward\"][\"inputs\"][0][\"name\"]=="
			   "\"a\\ufffdb\", d\n");
	tu_result_free(&r);
	r = tu_run("unset PASSRUN_PLUGIN_PATH; %s --pipeline cuda --stats=json --run --check "
		   "--device=sim %s", PASSRUN_EXE, prog);
	if (!(r.status == 2 && strstr(r.err, "without the runtime"))) {
		cr_expect_eq(r.status, 0, "%s", r.err);
		expect_json(r.out, "assert d[\"run\"][\"match\"] is True, d\n");
	}
	tu_result_free(&r);
}

Test(json_output, compare_json_with_non_utf8_names_parses)
{
	char prog[1024];   /* tu_write_temp's storage is reused by expect_json */
	snprintf(prog, sizeof prog, "%s", tu_write_temp("names.pg", program_text));
	tu_result r = tu_run("unset PASSRUN_PLUGIN_PATH; %s compare --pipelines baseline,cuda "
			     "--format=json --device=sim %s", PASSRUN_EXE, prog);
	if (strstr(r.err, "--device") && r.status == 2) {   /* built without the runtime */
		tu_result_free(&r);
		r = tu_run("unset PASSRUN_PLUGIN_PATH; %s compare --pipelines baseline,cuda "
			   "--format=json %s", PASSRUN_EXE, prog);
	}
	cr_expect_eq(r.status, 0, "%s", r.err);
	expect_json(r.out, "pass\n");
	tu_result_free(&r);
}
