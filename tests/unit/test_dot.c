/* --dot: the Graphviz picture of a placed program. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dot.h"
#include "testutil.h"

static const char *placed =
	"passrun 1\n"
	"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
	"op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"
	"op et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}\n"
	"delegate @add0 backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
	"  %a: f32[2,3] = input\n"
	"  %b: f32[2,3] = input\n"
	"  %c: f32[2,3] = aten::add.Tensor(%a, %b)\n"
	"  return %c\n"
	"}\n"
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %w: f32[2,3] = input parameter \"w\" data=ones\n"
	"  %x_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
	"  %w_h2d: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%w)\n"
	"  %d: (f32[2,3]@cuda:0) = delegate @add0(%x_h2d, %w_h2d)\n"
	"  %t: f32[2,3]@cuda:0 = getitem %d, 0\n"
	"  %t_d2h: f32[2,3] = et_copy::_d2h_copy(%t)\n"
	"  return %t_d2h\n"
	"}\n";

Test(dot, draws_devices_copies_and_bytes)
{
	pr_program *p = tu_parse(placed);
	pr_diags diags;
	pr_diags_init(&diags, "placed.pg");
	pr_diags_add(&diags, PR_SEV_WARNING, "W-CONSTANT-COPY", "propagate-device", "forward", "w",
		     24, "constant w is copied on every call");
	pr_diags_flag_last(&diags, PR_DIAG_PER_CALL_COPY);
	/* Unflagged, whatever its code: the picture reads flags, not codes. */
	pr_diags_add(&diags, PR_SEV_WARNING, "W-INPUT-COPY", "some-plugin", "forward", "x", 24,
		     "a finding about x that is not a per-call copy");
	char *dot = pr_dot_render(p, &diags);
	cr_assert(strstr(dot, "digraph passrun"));
	/* Three copies, drawn with a double border; the legend's copy box too. */
	cr_assert_eq(tu_count(dot, "peripheries=2"), 3 + 2, "copies drawn distinctly:\n%s", dot);
	/* w's copy, its edge and the legend entry; nothing else. */
	cr_assert_eq(tu_count(dot, ", color=\"#d00000\""), 3, "only w's copy is highlighted:\n%s", dot);
	cr_assert(strstr(dot, "W-CONSTANT-COPY"), "the flagged copy names its code");
	cr_assert(strstr(dot, "\"m0 x\" -> \"m0 x_h2d\" [label=\"24 B\", penwidth=2]"), "%s", dot);
	cr_assert(strstr(dot, "h2d copy -> cuda:0\\nx_h2d\\n24 B per call"), "copy label:\n%s", dot);
	cr_assert(!strstr(dot, "\\\\n"), "line breaks are dot's \\n, not an escaped backslash");
	cr_assert(strstr(dot, "\"legend 0\" [label=\"host (cpu)\", fillcolor=\"#e0e0e0\""),
		  "legend: host colour");
	cr_assert(strstr(dot, "[label=\"cuda:0\""), "legend: the device used");
	cr_assert(strstr(dot, "skip flag"), "legend: the highlight");
	cr_assert(strstr(dot, "delegate @add0\\non cuda:0"), "%s", dot);
	char *again = pr_dot_render(p, &diags);
	cr_assert_str_eq(dot, again, "the same program draws the same file");

	char path[512];
	snprintf(path, sizeof path, "%s/placed.dot", tu_temp_dir());
	FILE *f = fopen(path, "w");
	fputs(dot, f);
	fclose(f);
	tu_result r = tu_run("command -v dot >/dev/null || exit 77; dot -Tsvg %s -o %s.svg", path, path);
	if (r.status == 77)
		cr_skip_test("graphviz is not installed");
	cr_assert_eq(r.status, 0, "dot rejected the file: %s", r.err);
	tu_result_free(&r);
	free(again);
	free(dot);
	pr_diags_free(&diags);
	pr_program_free(p);
}

static int count_colour(const char *dot, const char *colour)
{
	char want[64];
	snprintf(want, sizeof want, "fillcolor=\"%s\"", colour);
	return tu_count(dot, want);
}

/* Two delegates, @d0 on td0 and @d1 on td1, both reading %x; extra adds a
 * returned input line. */
static pr_program *two_delegates(const char *td0, const char *td1, const char *extra)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "passrun 1\n"
		 "op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		 "delegate @d0 backend=\"CudaBackend\" target_device=\"%s\" {\n"
		 "  %%a: f32[4] = input\n  %%b: f32[4] = aten::add.Tensor(%%a, %%a)\n  return %%b\n}\n"
		 "delegate @d1 backend=\"CudaBackend\" target_device=\"%s\" {\n"
		 "  %%a: f32[4] = input\n  %%b: f32[4] = aten::add.Tensor(%%a, %%a)\n  return %%b\n}\n"
		 "method @forward {\n"
		 "  %%x: f32[4] = input user \"x\"\n"
		 "  %%p: (f32[4]) = delegate @d0(%%x)\n"
		 "  %%q: (f32[4]) = delegate @d1(%%x)\n%s"
		 "  return %%p, %%q%s\n"
		 "}\n", td0, td1, extra ? extra : "", extra ? ", %n" : "");
	return tu_parse(text);
}

/* The fill colour of the first node whose text follows `after`. */
static void fill_after(const char *dot, const char *after, char out[16])
{
	const char *at = strstr(dot, after);
	cr_assert(at, "no %s in\n%s", after, dot);
	out[0] = 0;
	sscanf(strstr(at, "fillcolor=\"") + 11, "%15[^\"]", out);
}

/* Each device its own colour, the same before and after placement: a
 * delegate takes its target_device's before any tensor is placed. */
Test(dot, devices_keep_distinct_colours_before_and_after)
{
	pr_program *p = two_delegates("cuda:0", "cuda:1", NULL);
	char *dot = pr_dot_render(p, NULL);
	char col0[16], col1[16];
	fill_after(dot, "delegate @d0", col0);
	fill_after(dot, "delegate @d1", col1);
	cr_assert_str_neq(col0, col1, "cuda:0 and cuda:1 share a colour:\n%s", dot);
	cr_assert_str_neq(col0, "#e0e0e0", "a delegate is drawn in its device's colour");
	cr_assert_eq(count_colour(dot, col0), 2, "the delegate and its legend entry:\n%s", dot);
	cr_assert(strstr(dot, "legend 1") && strstr(dot, "legend 2"), "both devices in the legend");
	cr_assert(!strstr(dot, "skip flag"), "no highlight legend without flagged copies");
	cr_assert(strstr(dot, "[label=\"16 B\"]"), "bytes on plain edges:\n%s", dot);
	free(dot);
	pr_program_free(p);
}

/* ---- views: one method, one delegate, a window, what changed ------------ */

/* A chain x -> a1 -> a2 -> ... -> a6 in @forward, and a second method. */
static const char *chain =
	"passrun 1\n"
	"op aten::relu(Tensor self) -> Tensor\n"
	"delegate @body backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
	"  %i: f32[4] = input\n  %o: f32[4] = aten::relu(%i)\n  return %o\n}\n"
	"method @forward {\n"
	"  %x: f32[4] = input user \"x\"\n"
	"  %a1: f32[4] = aten::relu(%x)\n  %a2: f32[4] = aten::relu(%a1)\n"
	"  %a3: f32[4] = aten::relu(%a2)\n  %a4: f32[4] = aten::relu(%a3)\n"
	"  %a5: f32[4] = aten::relu(%a4)\n  %a6: f32[4] = aten::relu(%a5)\n"
	"  return %a6\n"
	"}\n"
	"method @other {\n"
	"  %y: f32[4] = input user \"y\"\n"
	"  %d: (f32[4]) = delegate @body(%y)\n"
	"  return %d\n"
	"}\n";

static char *render_view(const pr_program *p, const pr_dot_view *v, int *drawn)
{
	char *text = NULL;
	pr_err *e = pr_dot_render_view(p, NULL, v, &text, drawn);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	return text;
}

Test(dot, view_of_one_method_or_one_delegate)
{
	pr_program *p = tu_parse(chain);
	int drawn;
	char *dot = render_view(p, &(pr_dot_view){.method = "other"}, &drawn);
	cr_assert(strstr(dot, "method @other") && !strstr(dot, "method @forward"), "%s", dot);
	cr_assert_eq(drawn, 3, "y, the delegate call and the return: %d", drawn);
	free(dot);
	dot = render_view(p, &(pr_dot_view){.delegate = "body"}, &drawn);
	cr_assert(strstr(dot, "delegate @body") && !strstr(dot, "method @"), "%s", dot);
	cr_assert(strstr(dot, "aten::relu"), "the body's op is drawn:\n%s", dot);
	cr_assert_eq(drawn, 3);
	free(dot);
	pr_program_free(p);
}

Test(dot, window_draws_only_nodes_near_the_centre_and_says_what_it_left_out)
{
	pr_program *p = tu_parse(chain);
	int drawn;
	char *dot = render_view(p, &(pr_dot_view){.around = "a3", .radius = 1}, &drawn);
	cr_assert_eq(drawn, 3, "a2, a3, a4:\n%s", dot);
	cr_assert(strstr(dot, "\"m0 a2\" [label") && strstr(dot, "\"m0 a4\" [label"), "%s", dot);
	cr_assert(!strstr(dot, "\"m0 a1\" [label") && !strstr(dot, "\"m0 a5\""), "%s", dot);
	cr_assert(strstr(dot, "\"m0 a2\" -> \"m0 a3\""), "edges inside the window:\n%s", dot);
	cr_assert(!strstr(dot, "\"m0 a1\" ->"), "no edge from outside:\n%s", dot);
	cr_assert_eq(tu_count(dot, "+1 not drawn"), 2, "a2 and a4 each hide one:\n%s", dot);
	cr_assert(!strstr(dot, "method @other"), "the window lies in one method");
	free(dot);
	dot = render_view(p, &(pr_dot_view){.around = "a3", .radius = 0}, &drawn);
	cr_assert_eq(drawn, 1);
	cr_assert(strstr(dot, "+2 not drawn"), "%s", dot);
	free(dot);
	pr_program_free(p);
}

Test(dot, unknown_names_are_errors_naming_the_nearest)
{
	pr_program *p = tu_parse(chain);
	char *text = NULL;
	pr_err *e = pr_dot_render_view(p, NULL, &(pr_dot_view){.around = "a33", .radius = 1}, &text, NULL);
	cr_assert(e && strstr(pr_err_message(e), "no node named 'a33'") &&
		  strstr(pr_err_message(e), "did you mean 'a3'"), "%s", e ? pr_err_message(e) : "no error");
	cr_assert_null(text);
	pr_err_free(e);
	e = pr_dot_render_view(p, NULL, &(pr_dot_view){.method = "forwrd"}, &text, NULL);
	cr_assert(e && strstr(pr_err_message(e), "did you mean 'forward'"));
	pr_err_free(e);
	e = pr_dot_render_view(p, NULL, &(pr_dot_view){.delegate = "bdy"}, &text, NULL);
	cr_assert(e && strstr(pr_err_message(e), "no delegate named 'bdy'"));
	pr_err_free(e);
	pr_program_free(p);
}

Test(dot, changes_mark_added_and_removed_nodes)
{
	pr_program *before = tu_parse(chain);
	const char *after_text =
		"passrun 1\n"
		"op aten::relu(Tensor self) -> Tensor\n"
		"op aten::sin(Tensor self) -> Tensor\n"
		"method @forward {\n"
		"  %x: f32[4] = input user \"x\"\n"
		"  %a1: f32[4] = aten::relu(%x)\n"
		"  %s: f32[4] = aten::sin(%a1)\n"
		"  return %s\n"
		"}\n";
	pr_program *after = tu_parse(after_text);
	int drawn;
	char *dot = render_view(after, &(pr_dot_view){.before = before, .changed_by = "pass 'x'"}, &drawn);
	cr_assert_eq(tu_count(dot, "xlabel=\"added by pass 'x'\""), 1, "only %%s is new:\n%s", dot);
	cr_assert(strstr(dot, "\"m0 s\" [color=\"#008a00\""), "%s", dot);
	cr_assert_eq(tu_count(dot, "removed by pass 'x'"), 5 + 1, "a2..a6 and the legend:\n%s", dot);
	cr_assert(strstr(dot, "\"m0 a1\" -> \"m0 removed a2#2\" [style=dashed"),
		  "a removed node's edge from what it read:\n%s", dot);
	free(dot);
	dot = render_view(after, &(pr_dot_view){.before = after}, &drawn);
	cr_assert(!strstr(dot, "added by") && !strstr(dot, "removed by"), "no change, no mark:\n%s", dot);
	free(dot);
	pr_program_free(before);
	pr_program_free(after);
}

/* One device, one colour: "CUDA", "cuda" and "cuda:0" are cuda:0; a device
 * type no code names (a plugin's "npu") gets a colour of its own too. */
Test(dot, one_device_one_colour_whatever_its_spelling)
{
	pr_program *p = two_delegates("CUDA", "cuda:0", "  %n: f32[4]@npu:0 = input user \"n\"\n");
	char *dot = pr_dot_render(p, NULL);
	char col_upper[16], col_zero[16], col_npu[16];
	fill_after(dot, "delegate @d0", col_upper);
	fill_after(dot, "delegate @d1", col_zero);
	fill_after(dot, "user input\\n@npu:0", col_npu);
	cr_assert_str_eq(col_upper, col_zero, "CUDA and cuda:0 differ:\n%s", dot);
	cr_assert(strstr(dot, "delegate @d0\\non cuda:0"), "%s", dot);
	cr_assert_eq(tu_count(dot, "[label=\"cuda:0\""), 1, "one legend entry:\n%s", dot);
	cr_assert_str_neq(col_npu, "#e0e0e0", "npu is a device, not the host");
	cr_assert_str_neq(col_npu, col_zero, "npu:0 is not cuda:0");
	cr_assert(strstr(dot, "[label=\"npu:0\""), "npu in the legend:\n%s", dot);
	free(dot);
	pr_program_free(p);
}
