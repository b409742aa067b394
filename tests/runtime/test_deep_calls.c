/* Delegates that call delegates (issue 16 item 1): a chain of 50,000 nested
 * delegates loads, runs, draws, converts and compares (compiling and running
 * recursed once, one C stack frame per level, and overflowed the stack);
 * nested device bodies keep their caller's values (each body's scratch
 * starts above its callers'); the executor itself refuses a recursive
 * program that nobody verified. The verifier's E-RECURSION cases are files
 * in tests/runtime/refused/. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/runtime.h"
#include "passrun/strbuf.h"
#include "rt.h"
#include "testutil.h"

#define DEPTH 50000

/* @d0 calls @d1, ..., @d{n-1} applies relu: each body on `target` (NULL: the
 * host). */
static const char *chain(const char *name, int n, const char *target)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_printf(&b, "passrun 1\nop aten::relu(Tensor self) -> Tensor\n");
	for (int i = 0; i < n; i++) {
		pr_strbuf_printf(&b, "delegate @d%d", i);
		if (target)
			pr_strbuf_printf(&b, " target_device=\"%s\"", target);
		pr_strbuf_printf(&b, " {\n  %%a: f32[2] = input\n");
		if (i == n - 1)
			pr_strbuf_printf(&b, "  %%b: f32[2] = aten::relu(%%a)\n");
		else
			pr_strbuf_printf(&b, "  %%r: (f32[2]) = delegate @d%d(%%a)\n"
					 "  %%b: f32[2] = getitem %%r, 0\n", i + 1);
		pr_strbuf_printf(&b, "  return %%b\n}\n");
	}
	pr_strbuf_printf(&b, "method @forward {\n  %%x: f32[2] = input user \"x\"\n"
			 "  %%d: (f32[2]) = delegate @d0(%%x)\n  %%y: f32[2] = getitem %%d, 0\n"
			 "  return %%y\n}\n");
	char *text = pr_strbuf_take(&b);
	const char *path = tu_write_temp(name, text);
	free(text);
	return path;
}

static void expect_match(const char *what, tu_result *r)
{
	cr_expect_eq(r->status, 0, "%s: exit %d\n%s", what, r->status, r->err);
	cr_expect(strstr(r->out, "\"match\": true"), "%s: no match:\n%s", what, r->out);
	tu_result_free(r);
}

Test(deep_calls, a_chain_of_50000_host_delegates_runs_and_matches)
{
	const char *path = chain("chain_host.pg", DEPTH, NULL);
	tu_result r = tu_run("%s --run=2 --check --device=sim --stats=json %s", PASSRUN_EXE, path);
	expect_match("--run --check", &r);
	r = tu_run("%s compare --pipelines cuda --device=sim %s", PASSRUN_EXE, path);
	cr_expect_eq(r.status, 0, "compare: exit %d\n%s", r.status, r.err);
	cr_expect(strstr(r.out, "match"), "compare:\n%s", r.out);
	tu_result_free(&r);
}

Test(deep_calls, a_chain_of_50000_device_delegates_runs_draws_and_converts)
{
	const char *path = chain("chain_dev.pg", DEPTH, "cuda:0");
	char bin[1024], dot[1024];
	snprintf(bin, sizeof bin, "%s/chain_dev.bin", tu_temp_dir());
	snprintf(dot, sizeof dot, "%s/chain_dev.dot", tu_temp_dir());
	tu_result r = tu_run("%s --pipeline cuda --run --check --device=sim --stats=json --dot %s -o %s %s",
			     PASSRUN_EXE, dot, bin, path);
	expect_match("cuda pipeline", &r);
	r = tu_run("%s --run --check --device=sim --stats=json %s", PASSRUN_EXE, bin);
	expect_match("the converted .bin", &r);
}

/* %s in @outer is live while @inner runs on the same device: their results
 * must not share scratch (the inner body's once started at 0 too). */
Test(deep_calls, a_nested_device_body_keeps_its_callers_values)
{
	const char *path = tu_write_temp("nested.pg",
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
		"op aten::sin(Tensor self) -> Tensor\n"
		"op aten::relu(Tensor self) -> Tensor\n"
		"delegate @inner target_device=\"cuda:0\" {\n"
		"  %b: f32[4] = input\n  %c: f32[4] = aten::relu(%b)\n  return %c\n}\n"
		"delegate @outer target_device=\"cuda:0\" {\n"
		"  %a: f32[4] = input\n  %s: f32[4] = aten::sin(%a)\n"
		"  %r: (f32[4]) = delegate @inner(%a)\n  %t: f32[4] = getitem %r, 0\n"
		"  %u: f32[4] = aten::add.Tensor(%s, %t)\n  return %u\n}\n"
		"method @forward {\n  %x: f32[4] = input user \"x\"\n"
		"  %d: (f32[4]) = delegate @outer(%x)\n  %y: f32[4] = getitem %d, 0\n  return %y\n}\n");
	tu_result r = tu_run("%s --pipeline cuda --run=2 --check --device=sim --stats=json %s",
			     PASSRUN_EXE, path);
	expect_match("nested device delegates", &r);
}

/* A library caller that skips the verifier gets an error, not a stack
 * overflow. */
Test(deep_calls, loading_a_recursive_program_is_an_error)
{
	pr_program *p = tu_parse("passrun 1\n"
		"delegate @f {\n  %a: f32[2] = input\n  %r: (f32[2]) = delegate @g(%a)\n"
		"  %b: f32[2] = getitem %r, 0\n  return %b\n}\n"
		"delegate @g {\n  %a: f32[2] = input\n  %r: (f32[2]) = delegate @f(%a)\n"
		"  %b: f32[2] = getitem %r, 0\n  return %b\n}\n"
		"method @forward {\n  %x: f32[2] = input user \"x\"\n"
		"  %d: (f32[2]) = delegate @f(%x)\n  %y: f32[2] = getitem %d, 0\n  return %y\n}\n");
	for (int reference = 0; reference < 2; reference++) {
		prt_exec_options o = {.device = "sim", .reference = reference};
		prt_exec *e = NULL;
		pr_err *err = prt_exec_load(p, "forward", &o, &e);
		cr_assert_not_null(err);
		cr_expect(strstr(pr_err_message(err), "calls itself through other delegates at line"),
			  "%s", pr_err_message(err));
		cr_expect_null(e);
		pr_err_free(err);
	}
	pr_program_free(p);
}
