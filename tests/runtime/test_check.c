/* test_check.c: what --check (and compare, which runs the same comparison)
 * calls a match when the reference has NaN or infinities (issue 16, item 6):
 * NaN matches only NaN at the same position, an infinity only the same
 * infinity, as numpy.allclose(equal_nan=True).
 *
 * Each case is two constants: what the placed program returns and what the
 * reference returns, run through prt_runtime_execute. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/runtime.h"
#include "testutil.h"

static pr_program *returning(const char *values)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "passrun 1\n"
		 "op aten::clone(Tensor self) -> Tensor\n"
		 "method @forward {\n"
		 "  %%c: f32[4] = input constant \"c\" data=[%s]\n"
		 "  %%r: f32[4] = aten::clone(%%c)\n"
		 "  return %%r\n"
		 "}\n", values);
	return tu_parse(text);
}

typedef struct check_case {
	const char *placed, *reference;
	bool match;
	const char *mismatch;   /* part of the first mismatch, when not a match */
} check_case;

static const check_case cases[] = {
	/* the issue's: all 1.0 against nan, nan, 1, 1 was a "match" */
	{"1, 1, 1, 1", "nan, nan, 1, 1", false, "element 0: 1, reference nan"},
	{"nan, 1, 1, 1", "1, 1, 1, 1", false, "element 0: nan, reference 1"},
	{"1, 5, 1, 1", "1, inf, 1, 1", false, "element 1: 5, reference inf"},
	{"1, 1, -inf, 1", "1, 1, inf, 1", false, "element 2: -inf, reference inf"},
	{"1, 1, 1, inf", "1, 1, 1, 3e38", false, "element 3: inf, reference 3"},
	{"nan, inf, -inf, 1", "nan, inf, -inf, 1", true, NULL},
	{"-nan, inf, -inf, 1.000001", "nan, inf, -inf, 1", true, NULL},
	{"3e38, -3e38, 1, 1", "-3e38, 3e38, 1, 1", false, "element 0: 3.0000000"},
};

static void run_case(const check_case *c, prt_run_report *r)
{
	pr_program *placed = returning(c->placed), *ref = returning(c->reference);
	prt_run_options o = {.iterations = 1, .device = "sim", .check = true};
	pr_err *e = prt_runtime_execute(ref, placed, &o, r);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	pr_program_free(placed);
	pr_program_free(ref);
}

Test(check, nan_matches_only_nan_and_inf_only_the_same_inf)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const check_case *c = &cases[i];
		prt_run_report r;
		run_case(c, &r);
		cr_expect_eq(r.match, c->match, "[%s] against reference [%s]: %s", c->placed,
			     c->reference, r.match ? "match" : r.mismatch);
		cr_expect_eq(r.exit_status, c->match ? 0 : 4, "[%s] against [%s]", c->placed,
			     c->reference);
		if (c->mismatch)
			cr_expect(strstr(r.mismatch, c->mismatch), "[%s] against [%s]: %s", c->placed,
				  c->reference, r.mismatch);
		if (c->match)
			cr_expect(r.max_abs_err < 1e-5, "matching NaNs and infinities add no error: %g",
				  r.max_abs_err);
	}
}

static char *report_json(const prt_run_report *r)
{
	char *json = NULL;
	size_t len;
	FILE *mem = open_memstream(&json, &len);
	cr_assert_not_null(mem);
	prt_run_report_json(r, mem);
	fclose(mem);
	return json;
}

Test(check, an_infinite_error_is_null_in_json_not_the_largest_double)
{
	prt_run_report r;
	run_case(&cases[0], &r);
	char *json = report_json(&r);
	cr_expect(strstr(json, "\"match\": false, \"max_abs_err\": null, \"max_rel_err\": null"),
		  "%s", json);
	free(json);
	run_case(&(check_case){"1, 1, 1, 1.5", "1, 1, 1, 1", false, NULL}, &r);
	json = report_json(&r);
	cr_expect(strstr(json, "\"max_abs_err\": 0.5, \"max_rel_err\": 0.5"), "%s", json);
	free(json);
}
