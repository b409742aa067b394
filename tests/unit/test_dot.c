/* --dot: the Graphviz picture of a placed program. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/dot.h"
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
	char *dot = pr_dot_render(p, &diags);
	cr_assert(strstr(dot, "digraph passrun"));
	cr_assert_eq(tu_count(dot, "shape=box"), 3, "three copies drawn as boxes:\n%s", dot);
	cr_assert_eq(tu_count(dot, "color=\"#d00000\""), 1, "only w's copy is highlighted");
	cr_assert(strstr(dot, "\"m0 x\" -> \"m0 x_h2d\" [label=\"24 B\"]"), "%s", dot);
	cr_assert(strstr(dot, "#e0e0e0"), "host colour");
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
