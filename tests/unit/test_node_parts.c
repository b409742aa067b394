/* A node's other parts (program.h): input name, list values, tuple elements
 * and write-backs, each owned by the node or graph storage. What is checked
 * here is who frees what: under ASan (detect_leaks) an owned part the node
 * forgets leaks, and a graph part it frees is a bad free. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/program.h"

static pr_program *one_method(pr_graph **g)
{
	pr_program *p = pr_program_new();
	cr_assert_null(pr_program_add_method(p, "forward", g));
	return p;
}

static char *graph_string(pr_graph *g, const char *s)
{
	return strcpy(pr_graph_alloc(g, strlen(s) + 1), s);
}

static double *values_of(double *v, int n, double first)
{
	for (int i = 0; i < n; i++)
		v[i] = first + i;
	return v;
}

static pr_spec *specs_of(pr_spec *s, int n)
{
	int64_t shape[1] = {3};
	for (int i = 0; i < n; i++)
		pr_spec_init(&s[i], PR_F32, 1, shape);
	return s;
}

Test(node_parts, graph_storage_is_zeroed_and_aligned)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	for (size_t size = 0; size < 40; size++) {
		unsigned char *b = pr_graph_alloc(g, size);
		cr_assert_not_null(b);
		cr_assert_eq((uintptr_t)b % 8, 0);
		for (size_t i = 0; i < size; i++)
			cr_assert_eq(b[i], 0);
		memset(b, 0xff, size);   /* the next one is not this one */
		pr_arg *a = pr_graph_new_args(g, (int)size % 5);
		for (int i = 0; i < (int)size % 5; i++)
			cr_assert(a[i].kind == PR_ARG_VALUE && !a[i].u.value && !a[i].owner);
		memset(a, 0xff, sizeof *a);
	}
	pr_program_free(p);
}

Test(node_parts, input_name_owned_graph_and_back)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *a = pr_graph_new_node(g, PR_NODE_INPUT, "a");
	pr_node_set_input_name(a, strdup("owned"), PR_STORAGE_OWNED);
	pr_node_set_input_name(a, graph_string(g, "graph"), PR_STORAGE_GRAPH);   /* frees "owned" */
	cr_assert_str_eq(pr_node_input(a)->name, "graph");
	pr_node_set_input_name(a, strdup("again"), PR_STORAGE_OWNED);   /* does not free "graph" */
	cr_assert_str_eq(pr_node_input(a)->name, "again");
	pr_node *b = pr_graph_new_node(g, PR_NODE_INPUT, "b");
	pr_node_set_input_name(b, (char *)pr_program_intern(p, "interned", 8), PR_STORAGE_GRAPH);
	cr_assert_null(pr_graph_append(g, a));
	cr_assert_null(pr_graph_append(g, b));
	pr_graph_erase(b);   /* an interned name is not freed */
	pr_node *c = pr_graph_new_node(g, PR_NODE_INPUT, "c");   /* b's record, zeroed */
	cr_assert_null(pr_node_input(c)->name);
	pr_node_set_input_name(c, strdup("c's own"), PR_STORAGE_OWNED);   /* b's bit is gone */
	pr_node *d = pr_node_new(PR_NODE_INPUT, "d");   /* detached: owned only */
	pr_node_set_input_name(d, strdup("detached"), PR_STORAGE_OWNED);
	pr_node_set_input_name(d, NULL, PR_STORAGE_OWNED);
	cr_assert_null(pr_node_input(d)->name);
	pr_graph_erase(d);
	pr_program_free(p);   /* frees "again" and "c's own" */
}

Test(node_parts, data_values_owned_graph_and_back)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *a = pr_graph_new_node(g, PR_NODE_INPUT, "a");
	a->of_kind.input->data.kind = PR_DATA_LIST;
	pr_node_set_data_values(a, values_of(malloc(2 * sizeof(double)), 2, 1), 2, PR_STORAGE_OWNED);
	double *gv = values_of(pr_graph_alloc(g, 3 * sizeof(double)), 3, 10);
	pr_node_set_data_values(a, gv, 3, PR_STORAGE_GRAPH);
	cr_assert_eq(pr_node_input(a)->data.values, gv);
	cr_assert_eq(pr_node_input(a)->data.n_values, 3);
	cr_assert_eq(pr_node_input(a)->data.values[2], 12.0);
	pr_node *b = pr_graph_new_node(g, PR_NODE_INPUT, "b");
	pr_node_set_data_values(b, gv, 3, PR_STORAGE_GRAPH);   /* shared graph storage */
	cr_assert_null(pr_graph_append(g, a));
	pr_graph_erase(a);
	cr_assert_eq(pr_node_input(b)->data.values[0], 10.0, "graph storage outlives a node");
	pr_node_set_data_values(b, values_of(malloc(sizeof(double)), 1, 5), 1, PR_STORAGE_OWNED);
	pr_program_free(p);   /* frees b's own */
}

Test(node_parts, tuple_owned_graph_and_back)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *n = pr_graph_new_node(g, PR_NODE_DELEGATE, "t");
	pr_node_set_tuple(n, specs_of(malloc(2 * sizeof(pr_spec)), 2), 2, PR_STORAGE_OWNED);
	cr_assert_eq(n->type.kind, PR_TYPE_TUPLE);
	cr_assert_eq(n->type.n_elems, 2);
	pr_spec *ge = specs_of(pr_graph_alloc(g, sizeof(pr_spec)), 1);
	pr_node_set_tuple(n, ge, 1, PR_STORAGE_GRAPH);
	cr_assert_eq(n->type.elems, ge);
	/* Other edits of the node keep its storage bits (mem is 16 bits). */
	pr_arg *args = calloc(1, sizeof *args);
	args->kind = PR_ARG_INT;
	pr_node_set_args(n, args, 1);
	cr_assert_null(pr_graph_append(g, n));
	cr_assert_null(pr_node_rename(n, "t2"));
	pr_node_set_tuple(n, NULL, 0, PR_STORAGE_OWNED);   /* an empty tuple; ge is not freed */
	cr_assert_eq(n->type.n_elems, 0);
	pr_node_set_tuple(n, specs_of(malloc(sizeof(pr_spec)), 1), 1, PR_STORAGE_OWNED);
	pr_node *d = pr_node_new(PR_NODE_DELEGATE, "d");
	pr_node_set_tuple(d, specs_of(malloc(sizeof(pr_spec)), 1), 1, PR_STORAGE_OWNED);
	pr_graph_erase(d);
	pr_node *e = pr_graph_new_node(g, PR_NODE_DELEGATE, "e");
	pr_node_set_tuple(e, specs_of(pr_graph_alloc(g, sizeof(pr_spec)), 1), 1, PR_STORAGE_GRAPH);
	cr_assert_null(pr_graph_append(g, e));
	pr_graph_erase(e);
	pr_program_free(p);
}

static pr_writeback *owned_writebacks(int n, const char *target)
{
	pr_writeback *w = calloc((size_t)n, sizeof *w);
	w[n - 1] = (pr_writeback){PR_WRITEBACK_BUFFER, strdup(target)};
	return w;
}

Test(node_parts, writebacks_owned_graph_and_back)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = pr_graph_new_node(g, PR_NODE_INPUT, "x");
	x->of_kind.input->kind = PR_INPUT_BUFFER;
	pr_node_set_input_name(x, graph_string(g, "buf"), PR_STORAGE_GRAPH);
	cr_assert_null(pr_graph_append(g, x));
	pr_node *ret = pr_graph_new_node(g, PR_NODE_RETURN, NULL);
	pr_arg *args = pr_graph_new_args(g, 2);
	args[0].kind = args[1].kind = PR_ARG_VALUE;
	args[0].u.value = args[1].u.value = x;
	pr_node_set_graph_args(ret, args, 2);
	pr_node_set_writebacks(ret, owned_writebacks(2, "buf"), PR_STORAGE_OWNED);
	cr_assert_null(pr_graph_append(g, ret));
	pr_mutable_buffers *mb = pr_graph_mutable_buffers(g);
	cr_assert(pr_mutable_buffers_has(mb, x));
	pr_mutable_buffers_free(mb);
	pr_writeback *gw = pr_graph_alloc(g, 2 * sizeof *gw);
	gw[0] = (pr_writeback){PR_WRITEBACK_BUFFER, (char *)pr_program_intern(p, "buf", 3)};
	pr_node_set_writebacks(ret, gw, PR_STORAGE_GRAPH);   /* frees the array and "buf" */
	mb = pr_graph_mutable_buffers(g);
	cr_assert(pr_mutable_buffers_has(mb, x));
	pr_mutable_buffers_free(mb);
	pr_node_set_writebacks(ret, owned_writebacks(2, "again"), PR_STORAGE_OWNED);
	pr_node_set_writebacks(ret, NULL, PR_STORAGE_OWNED);
	cr_assert_null(pr_node_writebacks(ret));
	pr_node_set_writebacks(ret, owned_writebacks(2, "last"), PR_STORAGE_OWNED);
	pr_graph_erase(ret);   /* frees them */
	pr_program_free(p);
}

/* Every part the loader gives, in one small program. */
static const char program_text[] =
	"passrun 1\n"
	"\n"
	"op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
	"\n"
	"delegate @add0 backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
	"  %a: f32[2] = input\n"
	"  %b: f32[2] = input\n"
	"  %c: f32[2] = aten::add.Tensor(%a, %b)\n"
	"  return %c\n"
	"}\n"
	"\n"
	"method @forward {\n"
	"  %x: f32[2] = input user \"x\"\n"
	"  %w: f32[2] = input parameter \"w\" data=[1, 2]\n"
	"  %k: f32[3] = input constant \"k.3\" data=[4, 5, 6]\n"
	"  %last: f32[2] = input buffer \"last\" data=zeros\n"
	"  %d: (f32[2]) = delegate @add0(%x, %w)\n"
	"  %s: f32[2] = getitem %d, 0\n"
	"  return %s, %x -> buffer \"last\"\n"
	"}\n";

static pr_program *parsed(void)
{
	pr_program *p = NULL;
	pr_err *e = pr_text_parse("parts.pg", program_text, strlen(program_text), &p);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	return p;
}

/* Loaded from the binary p writes, with or without borrowing the buffer,
 * which *buf keeps for the caller to free after the program. */
static pr_program *loaded(const pr_program *p, bool borrow, uint8_t **buf)
{
	size_t len;
	cr_assert_null(pr_binary_write(p, buf, &len));
	pr_program *q = NULL;
	pr_err *e = pr_binary_load("parts.bin", *buf, len, borrow, &q);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	return q;
}

static pr_node *node_named(pr_program *p, const char *name)
{
	pr_node *n = pr_graph_find(pr_program_find_method(p, "forward"), name);
	cr_assert_not_null(n, "%%%s", name);
	return n;
}

Test(node_parts, loaded_parts_print_as_parsed)
{
	pr_program *p = parsed();
	uint8_t *buf;
	pr_program *q = loaded(p, false, &buf);
	free(buf);   /* without borrow nothing points into it */
	char *a = pr_text_print(p, NULL), *b = pr_text_print(q, NULL);
	cr_assert_str_eq(a, b);
	pr_node *k = node_named(q, "k");
	cr_assert_str_eq(pr_node_input(k)->name, "k.3");
	cr_assert_eq(pr_node_input(k)->data.n_values, 3);
	cr_assert_eq(pr_node_input(k)->data.values[2], 6.0);
	cr_assert_eq(node_named(q, "d")->type.n_elems, 1);
	free(a);
	free(b);
	pr_program_free(q);
	pr_program_free(p);
}

Test(node_parts, loaded_nodes_erase_and_take_owned_parts)
{
	pr_program *p = parsed();
	uint8_t *buf;
	pr_program *q = loaded(p, true, &buf);
	pr_graph *g = pr_program_find_method(q, "forward");
	pr_graph_erase(node_named(q, "k"));      /* graph name and values: not freed */
	pr_graph_erase(pr_graph_return(g));      /* graph write-backs and target */
	pr_node *d = node_named(q, "d");
	pr_node_set_tuple(d, specs_of(malloc(sizeof(pr_spec)), 1), 1, PR_STORAGE_OWNED);
	pr_node *w = node_named(q, "w");
	pr_node_set_input_name(w, strdup("w2"), PR_STORAGE_OWNED);
	pr_node_set_data_values(w, values_of(malloc(2 * sizeof(double)), 2, 7), 2,
				PR_STORAGE_OWNED);
	pr_node *x = node_named(q, "x");
	pr_node_set_input_name(x, strdup("x2"), PR_STORAGE_OWNED);
	pr_node_set_input_name(x, graph_string(g, "x3"), PR_STORAGE_GRAPH);   /* frees "x2" */
	pr_program_free(q);   /* frees d's elems, w's name and values: no leak */
	free(buf);
	pr_program_free(p);
}

Test(node_parts, parsed_parts_are_owned)
{
	pr_program *p = parsed();
	pr_graph *g = pr_program_find_method(p, "forward");
	/* Each replaced by graph storage: the parser's malloc'd part is freed
	 * then (else ASan reports a leak), and the graph's is not later. */
	pr_node_set_input_name(node_named(p, "x"), graph_string(g, "x"), PR_STORAGE_GRAPH);
	pr_node_set_data_values(node_named(p, "k"), pr_graph_alloc(g, 3 * sizeof(double)), 3,
				PR_STORAGE_GRAPH);
	pr_node_set_tuple(node_named(p, "d"), specs_of(pr_graph_alloc(g, sizeof(pr_spec)), 1), 1,
			  PR_STORAGE_GRAPH);
	pr_node *ret = pr_graph_return(g);
	pr_writeback *gw = pr_graph_alloc(g, 2 * sizeof *gw);
	gw[1] = (pr_writeback){PR_WRITEBACK_BUFFER, graph_string(g, "last")};
	pr_node_set_writebacks(ret, gw, PR_STORAGE_GRAPH);
	char *a = pr_text_print(p, NULL);
	cr_assert(strstr(a, "data=[0.0, 0.0, 0.0]"), "%s", a);
	cr_assert(strstr(a, "-> buffer \"last\""), "%s", a);
	free(a);
	pr_program_free(p);
}
