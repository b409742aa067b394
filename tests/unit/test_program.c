/* The program model: devices, specs, graph editing, use lists, order. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/program.h"

static pr_node *add_input(pr_graph *g, const char *name)
{
	pr_node *n = pr_node_new(PR_NODE_INPUT, name);
	n->input_kind = PR_INPUT_USER;
	n->type.kind = PR_TYPE_TENSOR;
	int64_t shape[2] = {2, 3};
	pr_spec_init(&n->type.tensor, PR_F32, 2, shape);
	cr_assert_null(pr_graph_append(g, n));
	return n;
}

static pr_node *new_reader(const char *name, pr_node *a, pr_node *b)
{
	pr_node *n = pr_node_new(PR_NODE_OP, name);
	pr_arg *args = calloc(2, sizeof *args);
	args[0].kind = args[1].kind = PR_ARG_VALUE;
	args[0].u.value = a;
	args[1].u.value = b;
	pr_node_set_args(n, args, 2);
	return n;
}

Test(device, parses_case_insensitively)
{
	pr_device d;
	char buf[PR_DEVICE_STR_MAX];
	cr_assert(pr_device_parse("CUDA:1", 6, &d));
	cr_assert_str_eq(pr_device_str(d, buf), "cuda:1");
	cr_assert(pr_device_parse("cpu", 3, &d));
	cr_assert(pr_device_is_host(d));
	cr_assert(!pr_device_parse("cuda:", 5, &d));
	cr_assert(!pr_device_parse(":0", 2, &d));
	cr_assert(!pr_device_parse("cu da", 5, &d));
	cr_assert(pr_device_equal(pr_device_host(), d));
}

Test(spec, layouts_and_sizes)
{
	pr_spec s;
	int64_t shape[2] = {2, 3};
	pr_spec_init(&s, PR_F32, 2, shape);
	cr_assert_eq(s.strides[0], 3);
	cr_assert_eq(s.strides[1], 1);
	cr_assert(pr_spec_is_contiguous(&s));
	cr_assert_eq(pr_spec_nbytes(&s), 24);
	s.strides[0] = 1;
	s.strides[1] = 2; /* a transposed [3,2] */
	cr_assert(!pr_spec_is_contiguous(&s));
	cr_assert(!pr_spec_stored_as_is(&s), "a transposed constant is stored contiguous");
	cr_assert_eq(pr_spec_storage_bytes(&s), 24);
	int64_t nchw[4] = {1, 3, 2, 2};
	pr_spec_init(&s, PR_F16, 4, nchw);
	cr_assert(!pr_spec_is_channels_last(&s) || s.shape[1] == 1);
	s.strides[0] = 12; s.strides[1] = 1; s.strides[2] = 6; s.strides[3] = 3;
	cr_assert(pr_spec_is_channels_last(&s));
	cr_assert(!pr_spec_is_contiguous(&s));
	cr_assert(pr_spec_stored_as_is(&s), "channels-last is stored as it is");
}

Test(graph, use_lists_follow_edits)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	pr_node *x = add_input(g, "x");
	pr_node *y = add_input(g, "y");
	pr_node *r = new_reader("r", x, x);
	cr_assert_null(pr_graph_append(g, r));
	cr_assert_eq(x->n_uses, 2);
	cr_assert_eq(y->n_uses, 0);

	pr_node *c = new_reader("c", x, y);
	cr_assert_null(pr_graph_insert_before(r, c));
	cr_assert(pr_node_before(c, r));
	cr_assert(pr_node_before(y, c));
	pr_node_replace_uses_except(x, c, c);
	cr_assert_eq(x->n_uses, 1, "only the copy still reads x");
	cr_assert_eq(c->n_uses, 2);
	cr_assert_eq(r->args[0].u.value, c);

	pr_arg_set_value(&r->args[1], y);
	cr_assert_eq(c->n_uses, 1);
	cr_assert_eq(y->n_uses, 2);

	pr_graph_erase(r);
	cr_assert_eq(g->n_nodes, 3);
	cr_assert_eq(c->n_uses, 0);
	cr_assert_eq(y->n_uses, 1);
	cr_assert_null(pr_graph_find(g, "r"));
	pr_program_free(p);
}

Test(graph, duplicate_names_are_refused_and_fresh_names_are_readable)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	add_input(g, "x");
	pr_node *dup = pr_node_new(PR_NODE_INPUT, "x");
	pr_err *e = pr_graph_append(g, dup);
	cr_assert_not_null(e);
	cr_assert(strstr(pr_err_message(e), "%x is already defined"));
	pr_err_free(e);
	free(dup->name);
	free(dup);
	char *n1 = pr_graph_fresh_name(g, "x_h2d_cuda0");
	cr_assert_str_eq(n1, "x_h2d_cuda0");
	add_input(g, n1);
	char *n2 = pr_graph_fresh_name(g, "x_h2d_cuda0");
	cr_assert_str_eq(n2, "x_h2d_cuda0_1");
	free(n1);
	free(n2);
	pr_program_free(p);
}

Test(graph, order_survives_many_insertions_at_one_place)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	pr_node *a = add_input(g, "a");
	pr_node *b = add_input(g, "b");
	pr_node *prev = a;
	for (int i = 0; i < 200; i++) {
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		pr_node *n = pr_node_new(PR_NODE_INPUT, name);
		cr_assert_null(pr_graph_insert_before(b, n));
		cr_assert(pr_node_before(prev, n), "insert %d", i);
		cr_assert(pr_node_before(n, b));
		prev = n;
	}
	pr_program_free(p);
}

Test(program, declares_ops_once)
{
	pr_program *p = pr_program_new();
	pr_schema *s1, *s2;
	cr_assert_null(pr_program_declare_op(p, "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}", &s1));
	cr_assert_null(pr_program_declare_op(p, "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}", &s2));
	cr_assert_eq(s1, s2);
	cr_assert(s1->h2d);
	pr_err *e = pr_program_declare_op(p, "et_copy::_h2d_copy(Tensor self, int x) -> Tensor", &s2);
	cr_assert_not_null(e);
	pr_err_free(e);
	cr_assert_eq(p->n_schemas, 1);
	pr_program_free(p);
}
