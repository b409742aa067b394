/* test_text.c: the text format (.pg): every statement kind, the model the
 * parser builds, the canonical printer, the print(parse(x)) fixed point over
 * every .pg file in examples/ and tests/, and every error message with its
 * FILE:LINE:COL. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passrun/format.h"
#include "passrun/strbuf.h"
#include "testutil.h"
#include "../../core/format/text_lex.h"   /* tp_same_bytes */

static char *read_src(const char *rel, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", PASSRUN_SOURCE_DIR, rel);
	char *text = tu_read_file(path, len);
	cr_assert_not_null(text, "cannot read %s", path);
	return text;
}

static pr_program *parse_src(const char *rel)
{
	size_t len;
	char *text = read_src(rel, &len);
	pr_program *p = NULL;
	pr_err *e = pr_text_parse(rel, text, len, &p);
	free(text);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	return p;
}

static pr_node *node(pr_graph *g, const char *name)
{
	pr_node *n = pr_graph_find(g, name);
	cr_assert_not_null(n, "no %%%s in @%s", name, g->name);
	return n;
}

static char *print(const pr_program *p)
{
	size_t len;
	char *t = pr_text_print(p, &len);
	cr_assert_eq(strlen(t), len);
	return t;
}

/* ---- every statement kind --------------------------------------------- */

Test(text, interfaces_example_builds_the_model)
{
	pr_program *p = parse_src("tests/text/interfaces_example.pg");
	cr_assert_eq(p->n_schemas, 5);
	cr_expect_str_eq(p->schemas[3]->full_name, "aten::sym_size.int");
	cr_expect(p->schemas[3]->shape_only);

	pr_delegate *d = pr_program_find_delegate(p, "add0");
	cr_assert_not_null(d);
	cr_assert_eq(d->n_specs, 2);
	cr_expect_str_eq(d->specs[0].key, "backend");
	cr_expect_str_eq(pr_delegate_spec(d, "target_device"), "cuda:0");
	cr_expect_eq(d->body->n_nodes, 4);
	cr_expect_eq(pr_node_input(node(d->body, "a"))->kind, PR_INPUT_POSITIONAL);
	cr_expect_eq(pr_node_schema(node(d->body, "c")), p->schemas[0]);

	pr_graph *g = pr_program_find_method(p, "forward");
	cr_assert_not_null(g);
	cr_expect_eq(g->n_nodes, 8);
	pr_node *x = node(g, "x"), *w = node(g, "w"), *k = node(g, "k"), *dl = node(g, "d");
	pr_node *t = node(g, "t"), *r = node(g, "r");
	cr_expect_eq(x->kind, PR_NODE_INPUT);
	cr_expect_eq(pr_node_input(x)->kind, PR_INPUT_USER);
	cr_expect_str_eq(pr_node_input(x)->name, "x");
	cr_expect_eq(x->line, 22);
	cr_expect_eq(pr_node_input(w)->kind, PR_INPUT_PARAMETER);
	cr_expect_eq(pr_node_input(w)->data.kind, PR_DATA_RANDOM);
	cr_expect_eq(pr_node_input(w)->data.seed, 7);
	cr_expect_eq(pr_spec_strides(&w->type.tensor)[0], 1);
	cr_expect_eq(pr_spec_strides(&w->type.tensor)[1], 2);
	cr_expect_eq(pr_node_input(k)->kind, PR_INPUT_BUFFER);
	cr_expect_eq(pr_node_input(k)->data.kind, PR_DATA_ZEROS);
	cr_expect_eq(dl->kind, PR_NODE_DELEGATE);
	cr_expect_eq(pr_node_delegate(dl), d);
	cr_expect_eq(dl->type.kind, PR_TYPE_TUPLE);
	cr_expect_eq(dl->type.n_elems, 1);
	cr_expect_eq(t->kind, PR_NODE_GETITEM);
	cr_expect_eq(t->of_kind.index, 0);
	cr_expect_eq(pr_node_getitem_index(t), 0);
	cr_expect_eq(pr_node_getitem_index(dl), 0, "0 on a node of another kind");
	cr_expect_eq(t->args[0].u.value, dl);
	cr_expect_eq(r->kind, PR_NODE_OP);
	cr_expect_str_eq(pr_node_schema(r)->full_name, "aten::relu_");

	/* The no-result call, and the use lists. */
	pr_node *acc = r->next;
	cr_expect_eq(acc->kind, PR_NODE_OP);
	cr_expect_null(acc->name);
	cr_expect_eq(acc->type.kind, PR_TYPE_NONE);
	cr_expect_eq(x->n_uses, 1);
	cr_expect_eq(pr_use_user(&x->uses[0]), dl);
	cr_expect_eq(k->n_uses, 2, "read by accumulate and the return");
	cr_expect_eq(r->n_uses, 2);
	cr_expect_eq(dl->n_uses, 1);

	pr_node *ret = pr_graph_return(g);
	cr_assert_not_null(ret);
	cr_assert_eq(ret->n_args, 2);
	cr_expect_eq(ret->args[0].u.value, r);
	cr_expect_eq(pr_node_writebacks(ret)[0].kind, PR_WRITEBACK_NONE);
	cr_expect_eq(pr_node_writebacks(ret)[1].kind, PR_WRITEBACK_BUFFER);
	cr_expect_str_eq(pr_node_writebacks(ret)[1].target, "cache");
	pr_program_free(p);
}

Test(text, types)
{
	pr_program *p = parse_src("tests/text/types.pg");
	pr_graph *g = p->methods[0];
	pr_spec *d = &node(g, "d")->type.tensor;
	cr_expect_eq(d->dtype, PR_F64);
	cr_expect_eq(d->rank, 0, "f64[] is a scalar tensor");
	pr_spec *f = &node(g, "f")->type.tensor;
	cr_expect_str_eq(pr_spec_device(f).type, "cuda");
	cr_expect_eq(pr_spec_device(f).index, 0);
	pr_spec *i = &node(g, "i")->type.tensor;
	cr_expect(i->has_mem);
	cr_expect_str_eq(pr_spec_mem_arena(i).type, "cuda");
	cr_expect_eq(i->mem_offset, 128);
	pr_spec *j = &node(g, "j")->type.tensor;
	cr_expect(j->has_mem);
	cr_expect(pr_device_is_host(pr_spec_mem_arena(j)));
	cr_expect_eq(j->mem_offset, 64);
	cr_expect(!pr_spec_is_contiguous(j));
	pr_spec *k = &node(g, "k")->type.tensor;
	cr_expect_str_eq(pr_spec_device(k).type, "cuda", "devices are lower-cased");
	pr_node *pk = node(g, "p");
	cr_assert_eq(pk->type.kind, PR_TYPE_TUPLE);
	cr_assert_eq(pk->type.n_elems, 2);
	cr_expect_eq(pk->type.elems[1].dtype, PR_F16);
	cr_expect_str_eq(pr_spec_device(&pk->type.elems[1]).type, "cuda");
	cr_expect_eq(node(g, "n")->type.kind, PR_TYPE_INT);
	cr_expect_eq(node(g, "q")->type.tensor.rank, PR_MAX_RANK);
	char *t = print(p);
	cr_expect(strstr(t, "%k: f32[2,3]@cuda:0 = input user \"k\"\n"));
	cr_expect(strstr(t, "%j: bool[2,2]{strides=[1,2], mem=cpu:64}"));
	cr_expect(!strstr(t, "@cpu"), "the host device is never printed");
	free(t);
	pr_program_free(p);
}

/* The parser keeps the last device text it read and the printer the text
 * of each layout it printed: neither hands one value's device, arena or
 * strides to the next value with the same shape. Canonical text prints
 * back as it was. */
Test(text, repeated_devices_and_layouts_print_their_own_text)
{
	const char *src = "passrun 1\n\nmethod @m {\n"
		"  %a: f32[2,3]@cuda:0 = input user \"a\"\n"
		"  %b: f32[2,3]@cuda:1 = input user \"b\"\n"
		"  %c: f32[2,3]{mem=cuda:0:64} = input user \"c\"\n"
		"  %d: f32[2,3]@cuda:0{mem=cuda:1:0} = input user \"d\"\n"
		"  %e: f32[2,3]{strides=[1,2], mem=cpu:8} = input user \"e\"\n"
		"  %f: f32[2,3] = input user \"f\"\n"
		"  %g: i64[2,3]@cuda:1{strides=[1,2]} = input user \"g\"\n"
		"  %h: f32[2,3]@cuda:1 = input user \"h\"\n"
		"  return %a, %b, %c, %d, %e, %f, %g, %h\n}\n";
	pr_program *p = tu_parse(src);
	char *t = pr_text_print(p, NULL);
	cr_expect_str_eq(t, src);
	free(t);
	pr_program_free(p);
}

/* The parser keeps the shapes it has read and hands a repeated one out
 * again: each use still gets its own device and strides, text that differs
 * only in blanks gives an equal spec, and a shape that the last one only
 * begins (a longer dimension, one more) is read as itself. */
Test(text, repeated_shapes_keep_their_own_attributes)
{
	const char *src = "passrun 1\nmethod @m {\n"
		"  %a: f32[2,3] = input user \"a\"\n"
		"  %b: f32[2,3]@cuda:1 = input user \"b\"\n"
		"  %c: f32[2,3]{strides=[1,2]} = input user \"c\"\n"
		"  %d: f32[ 2, 3 ] = input user \"d\"\n"
		"  %e: f32[2,3] = input user \"e\"\n"
		"  %g: f32[2,30] = input user \"g\"\n"
		"  %h: f32[2,3] = input user \"h\"\n"
		"  %i: f32[2,3,4] = input user \"i\"\n"
		"  %f: i64[2,3] = input user \"f\"\n"
		"  return %a, %b, %c, %d, %e, %f, %g, %h, %i\n}\n";
	pr_program *p = tu_parse(src);
	pr_graph *g = p->methods[0];
	const pr_spec *a = &node(g, "a")->type.tensor, *b = &node(g, "b")->type.tensor;
	const pr_spec *c = &node(g, "c")->type.tensor, *d = &node(g, "d")->type.tensor;
	const pr_spec *s = &node(g, "e")->type.tensor, *f = &node(g, "f")->type.tensor;
	cr_expect(pr_spec_on_host(a) && pr_spec_on_host(s));
	cr_expect_str_eq(pr_spec_device(b).type, "cuda");
	cr_expect_eq(pr_spec_device(b).index, 1);
	cr_expect(pr_spec_same_layout(a, b) && pr_spec_is_contiguous(b));
	cr_expect(!pr_spec_is_contiguous(c));
	cr_expect_eq(pr_spec_strides(c)[0], 1);
	cr_expect_eq(pr_spec_strides(c)[1], 2);
	cr_expect(pr_spec_equal(a, d) && pr_spec_equal(a, s));
	cr_expect(pr_spec_is_contiguous(s), "the strides of %%c are not kept for a later f32[2,3]");
	cr_expect_eq(f->dtype, PR_I64);
	cr_expect(!pr_spec_equal(a, f));
	cr_expect_eq(node(g, "g")->type.tensor.shape[1], 30);
	cr_expect(pr_spec_equal(a, &node(g, "h")->type.tensor));
	cr_expect_eq(node(g, "i")->type.tensor.rank, 3);
	pr_program_free(p);
}

Test(text, data)
{
	pr_program *p = parse_src("tests/text/data.pg");
	pr_graph *g = p->methods[0];
	cr_expect_eq(pr_node_input(node(g, "z"))->data.kind, PR_DATA_ZEROS);
	cr_expect_eq(pr_node_input(node(g, "o"))->data.kind, PR_DATA_ONES);
	cr_expect_eq(pr_node_input(node(g, "f"))->data.kind, PR_DATA_FILL);
	cr_expect_eq(pr_node_input(node(g, "f"))->data.fill, 0.5);
	cr_expect_eq(pr_node_input(node(g, "fi"))->data.fill, -3.0);
	cr_expect_eq(pr_node_input(node(g, "a"))->data.kind, PR_DATA_ARANGE);
	cr_expect_eq(pr_node_input(node(g, "r"))->data.kind, PR_DATA_RANDOM);
	cr_expect_eq(pr_node_input(node(g, "r"))->data.seed, 12345);
	const pr_data *l = &pr_node_input(node(g, "l"))->data;
	cr_assert_eq(l->kind, PR_DATA_LIST);
	cr_assert_eq(l->n_values, 4);
	cr_expect_eq(l->values[1], -2.5);
	cr_expect_eq(l->values[2], 1e-07);
	const pr_data *lb = &pr_node_input(node(g, "lb"))->data;
	cr_expect_eq(lb->values[0], 1.0);
	cr_expect_eq(lb->values[1], 0.0);
	const pr_data *b = &pr_node_input(node(g, "b"))->data;
	cr_assert_eq(b->kind, PR_DATA_BLOB);
	cr_assert_not_null(b->blob);
	cr_expect_str_eq(b->blob->name, "w2");
	cr_expect_eq(b->blob->size, 8);
	cr_expect_eq(b->blob->bytes[3], 0x3f);
	cr_expect_eq(pr_node_input(node(g, "e"))->data.blob->size, 0);
	cr_expect_eq(pr_node_input(node(g, "s"))->data.blob->size, 11,
		     "storage order: strides decide the size");
	cr_expect_eq(pr_node_input(node(g, "nodata"))->data.kind, PR_DATA_NONE);
	cr_expect_null(pr_node_input(node(g, "noname"))->name);
	char *t = print(p);
	cr_expect(strstr(t, "data=[true, false]"), "bool data prints as true/false");
	cr_expect(strstr(t, "data=[1, -2, 3]"), "integer data prints as integers");
	cr_expect(strstr(t, "data=fill(-3)"));
	cr_expect(strstr(t, "blob @empty hex\"\"\n"));
	free(t);
	pr_program_free(p);
}

Test(text, arguments)
{
	pr_program *p = parse_src("tests/text/args.pg");
	pr_graph *g = p->methods[0];
	pr_node *a = node(g, "a"), *b = node(g, "b"), *c = node(g, "c");
	cr_expect_str_eq(pr_node_input(a)->name, "a\tb\n\"q\"\\ \x01 \xc3\xa9");
	cr_assert_eq(b->n_args, 9);
	cr_expect_eq(b->args[0].kind, PR_ARG_VALUE);
	cr_expect_eq(b->args[1].kind, PR_ARG_INT);
	cr_expect_eq(b->args[1].u.i, 3);
	cr_expect_eq(b->args[2].kind, PR_ARG_FLOAT);
	cr_expect_eq(b->args[2].u.f, 0.1);
	cr_expect_eq(b->args[3].kind, PR_ARG_BOOL);
	cr_expect(b->args[3].u.b);
	cr_expect_eq(b->args[4].kind, PR_ARG_STRING);
	cr_expect_str_eq(b->args[4].u.s, "hi");
	pr_arg *dims = &b->args[5];
	cr_assert_eq(dims->kind, PR_ARG_LIST);
	cr_assert_eq(dims->n_items, 3);
	cr_expect_eq(dims->u.items[1].u.i, -1);
	cr_expect_eq(dims->u.items[2].u.i, INT64_MAX);
	cr_expect_eq(b->args[6].u.items[1].u.value, a);
	pr_arg *nested = &b->args[7];
	cr_expect_eq(nested->u.items[0].u.items[1].u.items[1].kind, PR_ARG_BOOL);
	cr_expect_eq(nested->u.items[1].n_items, 0);
	cr_expect_eq(nested->u.items[2].kind, PR_ARG_NONE);
	cr_expect_eq(b->args[8].kind, PR_ARG_NONE);
	cr_expect_eq(a->n_uses, 5, "3 in %%b (twice in a list), the sink, the return");
	pr_arg *fl = &c->args[7];
	cr_expect(isinf(fl->u.items[0].u.f) && fl->u.items[0].u.f > 0);
	cr_expect(isinf(fl->u.items[1].u.f) && fl->u.items[1].u.f < 0);
	cr_expect(isnan(fl->u.items[2].u.f));
	cr_expect_eq(fl->u.items[3].u.f, 5e-324);
	cr_expect(signbit(fl->u.items[4].u.f), "-0.0 keeps its sign");
	cr_expect_eq(c->args[2].u.f, 1e300);
	pr_node *ret = pr_graph_return(g);
	cr_expect_eq(pr_node_writebacks(ret)[1].kind, PR_WRITEBACK_INPUT);
	cr_expect_str_eq(pr_node_writebacks(ret)[1].target, pr_node_input(a)->name);
	pr_program_free(p);
}

Test(text, names_defined_later_are_resolved_at_the_end)
{
	pr_program *p = parse_src("tests/text/forward_refs.pg");
	pr_graph *g = pr_program_find_method(p, "forward");
	cr_expect_eq(pr_node_delegate(node(g, "d")), pr_program_find_delegate(p, "later"));
	cr_expect_eq(pr_node_schema(node(g, "y")), pr_program_find_schema(p, "late::op"));
	cr_expect_eq(pr_node_input(node(g, "c"))->data.blob, pr_program_find_blob(p, "late"));
	pr_delegate *e = pr_program_find_delegate(p, "empty_specs");
	cr_assert_not_null(e);
	cr_expect_eq(e->n_specs, 0);
	cr_expect_eq(pr_graph_return(e->body)->n_args, 0);
	pr_program_free(p);
}

Test(text, an_op_may_be_declared_twice_with_the_same_schema)
{
	pr_program *p = tu_parse("passrun 1\nop a::b(Tensor x) -> Tensor\nop a::b( Tensor x )->Tensor\n");
	cr_expect_eq(p->n_schemas, 1);
	pr_program_free(p);
}

/* ---- the printer ------------------------------------------------------ */

Test(text, prints_the_canonical_form)
{
	const char *messy =
		"# leading comment\n\n  passrun   1   # version\n"
		"method @m{\n"
		"\t%x :f32[ 2 , 3 ]@cpu{ mem = cpu:0 } = input   user \"x\"  # comment\n"
		"  %y: f32[2,3] = a::f( %x,[ 1,2 ],\"s\" , 1.50 , -0 )\n\n"
		"  return %y , %x->input \"x\"\n"
		"}\n"
		"op a::f( Tensor x , int[] l , str s , float f , int i ) -> Tensor\n"
		"blob @b hex\"ABcd\"\n"
		"delegate @d   k=\"v\"  {\n  return\n}";
	const char *want =
		"passrun 1\n"
		"\n"
		"op a::f(Tensor x, int[] l, str s, float f, int i) -> Tensor\n"
		"\n"
		"blob @b hex\"abcd\"\n"
		"\n"
		"delegate @d k=\"v\" {\n"
		"  return\n"
		"}\n"
		"\n"
		"method @m {\n"
		"  %x: f32[2,3]{mem=cpu:0} = input user \"x\"\n"
		"  %y: f32[2,3] = a::f(%x, [1, 2], \"s\", 1.5, 0)\n"
		"  return %y, %x -> input \"x\"\n"
		"}\n";
	pr_program *p = tu_parse(messy);
	char *t = print(p);
	cr_expect_str_eq(t, want);
	free(t);
	pr_program_free(p);
}

Test(text, empty_program_prints_the_version_only)
{
	pr_program *p = tu_parse("passrun 1");
	char *t = print(p);
	cr_expect_str_eq(t, "passrun 1\n");
	free(t);
	pr_program_free(p);
}

Test(text, strings_escape_control_bytes_and_bad_utf8)
{
	pr_program *p = tu_parse("passrun 1\nmethod @m {\n  %x: f32[1] = input user \"a\"\n  return %x\n}\n");
	pr_node *x = pr_graph_find(p->methods[0], "x");
	pr_node_set_input_name(x, strdup("q\"\\\n\t\x01\x7f\xc3\xa9\xff."), PR_STORAGE_OWNED);
	char *t = print(p);
	cr_expect(strstr(t, "input user \"q\\\"\\\\\\n\\t\\x01\\x7f\xc3\xa9\\xff.\"\n"), "%s", t);
	pr_program *q = tu_parse(t);
	cr_expect_str_eq(pr_node_input(pr_graph_find(q->methods[0], "x"))->name,
			 pr_node_input(x)->name);
	free(t);
	pr_program_free(q);
	pr_program_free(p);
}

Test(text, floats_round_trip_exactly)
{
	const double values[] = { 0.1, 1.0 / 3.0, 1e300, 5e-324, -2.5, 123456789.125, 1e-7 };
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		pr_program *p = tu_parse("passrun 1\nop a::f(float v) -> ()\nmethod @m {\n  a::f(0.5)\n  return\n}\n");
		pr_node *n = p->methods[0]->first;
		n->args[0].u.f = values[i];
		char *t = print(p);
		pr_program *q = tu_parse(t);
		double got = q->methods[0]->first->args[0].u.f;
		cr_expect_eq(memcmp(&got, &values[i], sizeof got), 0, "%.17g printed as %s", values[i], t);
		free(t);
		pr_program_free(q);
		pr_program_free(p);
	}
}

/* ---- the fixed point over every file ---------------------------------- */

static int n_fixed;

static void check_fixed_point(const char *path)
{
	size_t len;
	char *text = tu_read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s", path);
	pr_program *p = NULL;
	pr_err *e = pr_text_parse(path, text, len, &p);
	free(text);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	char *once = print(p);
	pr_program_free(p);
	e = pr_text_parse(path, once, strlen(once), &p);
	cr_assert_null(e, "printed %s does not parse: %s", path, e ? pr_err_message(e) : "");
	char *twice = print(p);
	pr_program_free(p);
	cr_expect_str_eq(twice, once, "print(parse(x)) of %s is not a fixed point", path);
	free(once);
	free(twice);
	n_fixed++;
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	size_t n = strlen(path);
	if (flag != FTW_F || n < 3 || strcmp(path + n - 3, ".pg") != 0)
		return 0;
	if (strstr(path, "/malformed/"))   /* those must not parse */
		return 0;
	check_fixed_point(path);
	return 0;
}

Test(text, print_parse_is_a_fixed_point_for_every_file)
{
	char dir[1024];
	n_fixed = 0;
	snprintf(dir, sizeof dir, "%s/examples", PASSRUN_SOURCE_DIR);
	nftw(dir, visit, 16, FTW_PHYS);
	snprintf(dir, sizeof dir, "%s/tests", PASSRUN_SOURCE_DIR);
	nftw(dir, visit, 16, FTW_PHYS);
	cr_expect_geq(n_fixed, 5, "only %d .pg files found", n_fixed);
}

/* ---- scale ------------------------------------------------------------ */

static double parse_chain(int n)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "passrun 1\nop a::add(Tensor x, Tensor y) -> Tensor\nmethod @m {\n"
			   "  %v0: f32[2] = input user \"x\"\n");
	for (int i = 1; i < n; i++)
		pr_strbuf_printf(&b, "  %%v%d: f32[2] = a::add(%%v%d, %%v0)\n", i, i - 1);
	pr_strbuf_printf(&b, "  return %%v%d\n}\n", n - 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pr_program *p = NULL;
	pr_err *e = pr_text_parse("big.pg", b.data, b.len, &p);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	cr_expect_eq(p->methods[0]->n_nodes, n + 1);
	cr_expect_eq(pr_graph_find(p->methods[0], "v0")->n_uses, n, "twice by %%v1, once by each later one");
	pr_program_free(p);
	pr_strbuf_free(&b);
	return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

Test(text, parse_time_grows_linearly)
{
	/* The best of a few runs, so a busy machine does not decide the ratio. */
	double small = 1e9, big = 1e9;
	for (int i = 0; i < 3; i++)
		small = fmin(small, parse_chain(25000));
	for (int i = 0; i < 2; i++)
		big = fmin(big, parse_chain(200000));
	/* Linear: about 8x; quadratic would be about 64x. */
	cr_expect_lt(big, small * 32 + 0.05, "25k nodes: %.3fs, 200k nodes: %.3fs", small, big);
}

/* ---- errors ----------------------------------------------------------- */

typedef struct bad_case {
	const char *text;
	const char *where;   /* "LINE:COL" */
	const char *msg;
} bad_case;

#define HEAD "passrun 1\nop a::f(Tensor x, int n=0) -> Tensor\nop a::g(Tensor(a!) x) -> ()\nmethod @m {\n" \
	     "  %x: f32[2,3] = input user \"x\"\n"
#define TAIL "  return %x\n}\n"

static const bad_case bad_cases[] = {
	/* version */
	{ "", "1:1", "expected 'passrun 1' (the format version) as the first statement, found end of file" },
	{ "# hi\nmethod @m {\n}\n", "2:1", "expected 'passrun 1' (the format version) as the first statement, found 'method'" },
	{ "passrun 2\n", "1:9", "expected format version 1, found version 2" },
	{ "passrun\n", "1:8", "expected the format version number (1), found end of line" },
	{ "passrun 1 x\n", "1:11", "expected end of line after the format version, found 'x'" },
	/* UTF-8 */
	{ "passrun 1\n# caf\xc3\xa9 \xff\n", "2:8", "expected UTF-8 text, found the invalid byte 0xff" },
	{ "passrun 1\n# \xc0\xaf overlong\n", "2:3", "invalid byte 0xc0" },
	{ "passrun 1\n# \xed\xa0\x80 surrogate\n", "2:3", "invalid byte 0xed" },
	{ "passrun 1\n# trunc \xe2\x82", "2:9", "invalid byte 0xe2" },
	{ "passrun 1\n#\0\n", "2:2", "found a NUL byte" },
	/* top level */
	{ "passrun 1\nfoo\n", "2:1", "expected a top-level statement (op, blob, delegate or method), found 'foo'" },
	{ "passrun 1\nop\n", "2:3", "expected an op name (namespace::name), found end of schema" },
	{ "passrun 1\nop a::b(Tesnor x) -> Tensor\n", "2:9", "expected a type" },
	{ "passrun 1\nop   a::b(Tensor x) Tensor\n", "2:21", "expected '->', found 'Tensor'" },
	{ "passrun 1\nop a::b(Tensor x) -> Tensor\nop a::b(Tensor y) -> Tensor\n", "3:4",
	  "expected one schema per op: 'a::b' was declared differently at line 2" },
	{ "passrun 1\nblob b hex\"00\"\n", "2:6", "expected '@' and a name, found 'b'" },
	{ "passrun 1\nblob @b \"00\"\n", "2:9", "expected hex\"...\" (the blob's bytes in hexadecimal), found a string" },
	{ "passrun 1\nblob @b hex\"0g\"\n", "2:14", "expected a hex digit or '\"' closing the blob, found 'g'" },
	{ "passrun 1\nblob @b hex\"000\"\n", "2:16", "expected an even number of hex digits (two per byte), found 3" },
	{ "passrun 1\nblob @b hex\"00\n", "2:15", "expected a hex digit or '\"' closing the blob, found end of line" },
	{ "passrun 1\nblob @b hex\"00\"\nblob @b hex\"01\"\n", "3:6", "duplicate blob '@b': expected a new name (first defined at line 2)" },
	{ "passrun 1\nmethod @m {\n  return\n}\nmethod @m {\n  return\n}\n", "5:8",
	  "duplicate method '@m': expected a new name (first defined at line 2)" },
	{ "passrun 1\ndelegate @d {\n  return\n}\ndelegate @d {\n  return\n}\n", "5:10", "duplicate delegate '@d'" },
	{ "passrun 1\ndelegate @d a=\"1\" a=\"2\" {\n  return\n}\n", "2:19", "expected each compile spec once, found a second 'a'" },
	{ "passrun 1\ndelegate @d a {\n  return\n}\n", "2:15", "expected '=' after the compile spec's key, found '{'" },
	{ "passrun 1\ndelegate @d a=b {\n  return\n}\n", "2:15", "expected a string (\"...\"), found 'b'" },
	{ "passrun 1\ndelegate @d \"x\" {\n  return\n}\n", "2:13", "expected a compile spec (key=\"value\") or '{', found a string" },
	{ "passrun 1\nmethod @m\n", "2:10", "expected '{' to open the method's body, found end of line" },
	{ "passrun 1\nmethod @m { x\n", "2:13", "expected end of line after '{', found 'x'" },
	{ "passrun 1\nmethod @m {\n  return\n", "4:1", "expected '}' to close '@m' (opened at line 2), found end of file" },
	{ "passrun 1\nmethod @m {\n}\n", "3:1", "expected a 'return' statement before '}' closing '@m'" },
	{ "passrun 1\nmethod @m {\n  return\n  return\n}\n", "4:3", "expected '}' after the return statement, found 'return'" },
	{ "passrun 1\nmethod @m {\n  return\n} x\n", "4:3", "expected end of line after '}', found 'x'" },
	/* statements */
	{ HEAD "  ; \n" TAIL, "6:3", "expected a statement (%name: TYPE = ..., an op call, return or '}'), found ';'" },
	{ HEAD "  foo(%x)\n" TAIL, "6:3", "expected an op call (namespace::name(...)), found 'foo'" },
	{ HEAD "  a::(%x)\n" TAIL, "6:6", "expected an op name after '::'" },
	{ HEAD "  %y f32[2] = input user\n" TAIL, "6:6", "expected ':' and the value's type, found 'f32'" },
	{ HEAD "  %: f32[2] = input user\n" TAIL, "6:4", "expected a value name after '%', found ':'" },
	{ HEAD "  %y: f32[2] input user\n" TAIL, "6:14", "expected '=' after the type, found 'input'" },
	{ HEAD "  %y: f32[2] = \n" TAIL, "6:16", "expected input, delegate @NAME(...), getitem or an op call, found end of line" },
	{ HEAD "  %x: f32[2] = input user\n" TAIL, "6:3",
	  "duplicate name '%x': expected a name not yet used in '@m' (first defined at line 5)" },
	/* the name is bound after the rest of the statement is read: a duplicate
	 * is still the error, before one later in its statement */
	{ HEAD "  %x: f33[2] = input user\n" TAIL, "6:3",
	  "duplicate name '%x': expected a name not yet used in '@m' (first defined at line 5)" },
	{ HEAD "  %x: f32[2] = a::f(%nope) junk\n" TAIL, "6:3",
	  "duplicate name '%x': expected a name not yet used in '@m' (first defined at line 5)" },
	{ HEAD "  %x: (f32[2], f32[3]) = a::f(%x)\n" TAIL, "6:3",
	  "duplicate name '%x': expected a name not yet used in '@m' (first defined at line 5)" },
	{ HEAD "  %y: f32[2] = a::f(%z)\n" TAIL, "6:21", "undefined value '%z': expected a value defined earlier in '@m'" },
	{ HEAD "  %y: f32[2] = a::f(%y)\n" TAIL, "6:21", "undefined value '%y'" },
	/* %w is in the table of values used lately, but as @m's */
	{ "passrun 1\nop a::f(Tensor x) -> Tensor\nmethod @m {\n  %w: f32[2] = input user \"w\"\n"
	  "  %y: f32[2] = a::f(%w)\n  %z: f32[2] = a::f(%w)\n  return %z\n}\ndelegate @d {\n"
	  "  %x: f32[2] = input\n  %z: f32[2] = a::f(%w)\n  return %z\n}\n", "11:21",
	  "undefined value '%w': expected a value defined earlier in '@d'" },
	/* a name defined just before in another graph is not this graph's */
	{ "passrun 1\nop a::f(Tensor x) -> Tensor\ndelegate @d {\n  %w: f32[2] = input\n  return %w\n}\n"
	  "method @m {\n  %x: f32[2] = input user\n  %y: f32[2] = a::f(%w)\n  return %y\n}\n", "9:21",
	  "undefined value '%w': expected a value defined earlier in '@m'" },
	{ HEAD "  %y: f32[2] = a::f(%x) junk\n" TAIL, "6:25", "expected end of line after the statement, found 'junk'" },
	{ HEAD "  a::g(%x) junk\n" TAIL, "6:12", "expected end of line after the op call, found 'junk'" },
	{ HEAD "  %y: f32[2] = a::nope(%x)\n" TAIL, "6:16", "unknown op 'a::nope': expected an op declared with an 'op' statement" },
	{ HEAD "  %y: f32[2] = a::f(%x, 1, 2)\n" TAIL, "6:16", "expected at most 2 arguments for 'a::f', found 3" },
	{ HEAD "  %y: f32[2] = a::f()\n" TAIL, "6:16", "expected at least 1 arguments for 'a::f', found 0" },
	{ HEAD "  %y: f32[2] = a::f(%x,)\n" TAIL, "6:24", "expected an argument (a %value, a number, a string, true, false, none or a [list]), found ')'" },
	{ HEAD "  %y: f32[2] = a::f(%x, 1\n" TAIL, "6:26", "expected ',' or ')' after an argument, found end of line" },
	{ HEAD "  %y: f32[2] = a::f(%x, [1, 2)\n" TAIL, "6:30", "expected ',' or ']' in a list, found ')'" },
	{ HEAD "  %y: f32[2] = a::f(%x, [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])\n" TAIL, "6:57",
	  "expected lists nested at most 32 deep, found deeper nesting" },
	{ HEAD "  %y: f32[2] = a::f(%x, 99999999999999999999)\n" TAIL, "6:25", "expected an integer that fits in 64 bits" },
	{ HEAD "  %y: f32[2] = a::f(%x, 1e)\n" TAIL, "6:27", "expected digits in the exponent" },
	{ HEAD "  %y: f32[2] = a::f(%x, 12abc)\n" TAIL, "6:25", "expected a number, found '12abc'" },
	{ HEAD "  %y: f32[2] = a::f(%x, \"abc)\n" TAIL, "6:25", "unterminated string: expected '\"' before the end of the line" },
	{ HEAD "  %y: f32[2] = a::f(%x, \"a\\qb\")\n" TAIL, "6:27", "expected an escape" },
	{ HEAD "  %y: f32[2] = a::f(%x, \"a\\x4\")\n" TAIL, "6:27", "expected two hex digits after '\\x'" },
	{ HEAD "  %y: f32[2] = a::f(%x, \"a\\x00\")\n" TAIL, "6:27", "'\\x00' is not allowed in a string" },
	{ HEAD "  %y: f32[2] = a::f(%x, \"a\tb\")\n" TAIL, "6:27", "expected a printable character in a string (write control byte 0x09 as \\x09)" },
	/* types */
	{ HEAD "  %y: f33[2] = input user\n" TAIL, "6:7", "expected a type (a dtype f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool" },
	{ HEAD "  %y: f32 = input user\n" TAIL, "6:11", "expected '[', found '='" },
	{ HEAD "  %y: f32[2,-1] = input user\n" TAIL, "6:13", "expected a dimension >= 0, found -1" },
	{ HEAD "  %y: f32[2.5] = input user\n" TAIL, "6:11", "expected a dimension, found '2.5'" },
	{ HEAD "  %y: f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] = input user\n" TAIL, "6:43",
	  "expected at most 16 dimensions (the maximum rank), found 17" },
	{ HEAD "  %y: f32[4294967296,4294967296] = input user\n" TAIL, "6:7",
	  "expected a shape whose element count fits in int64, found one that overflows" },
	{ HEAD "  %y: f32[0,4294967296,4294967296] = input user\n" TAIL, "6:7",
	  "expected a shape whose element count fits in int64, found one that overflows" },
	{ HEAD "  %y: f64[2147483648,2147483648] = input user\n" TAIL, "6:7",
	  "expected a tensor whose size in bytes fits in int64" },
	{ HEAD "  %y: f32[2,2]{strides=[4611686018427387904,1]} = input user\n" TAIL, "6:7",
	  "expected strides whose storage span fits in int64" },
	{ HEAD "  %y: f32[2]@ = input user\n" TAIL, "6:15", "expected a device (like cpu or cuda:0), found '='" },
	{ HEAD "  %y: f32[2]@cuda:x = input user\n" TAIL, "6:14", "expected a device (like cpu or cuda:0), found 'cuda'" },
	{ HEAD "  %y: f32[2]{layout=x} = input user\n" TAIL, "6:14", "expected a tensor attribute (strides=[...] or mem=ARENA:OFFSET), found 'layout'" },
	{ HEAD "  %y: f32[2,3]{strides=[1]} = input user\n" TAIL, "6:24", "expected 2 strides (one per dimension), found 1" },
	{ HEAD "  %y: f32[2]{strides=[-1]} = input user\n" TAIL, "6:23", "expected a stride >= 0, found -1" },
	{ HEAD "  %y: f32[2]{strides=[1], strides=[1]} = input user\n" TAIL, "6:27", "expected each attribute once, found a second 'strides'" },
	{ HEAD "  %y: f32[2]{mem=cuda} = input user\n" TAIL, "6:18", "expected a memory location ARENA:OFFSET (like cuda:0:128), found 'cuda'" },
	{ HEAD "  %y: f32[2]{mem=cuda:0:x} = input user\n" TAIL, "6:25", "expected a byte offset (digits) after the arena, found 'x'" },
	{ HEAD "  %y: f32[2]{mem=cpu:1} x = input user\n" TAIL, "6:25", "expected '=' after the type, found 'x'" },
	{ HEAD "  %y: f32[2]{mem=cpu:1 = input user\n" TAIL, "6:24", "expected ',' or '}' after a tensor attribute, found '='" },
	{ HEAD "  %y: (f32[2] f32[3]) = a::f(%x)\n" TAIL, "6:15", "expected ',' or ')' in a tuple type, found 'f32'" },
	/* inputs and data */
	{ HEAD "  %y: f32[2] = input\n" TAIL, "6:21", "expected an input kind (user, parameter, buffer or constant; plain 'input' is only for delegate bodies), found end of line" },
	{ HEAD "  %y: f32[2] = input weight\n" TAIL, "6:22", "expected an input kind" },
	{ "passrun 1\ndelegate @d {\n  %a: f32[2] = input user\n  return %a\n}\n", "3:22",
	  "expected end of line (inputs of a delegate body are plain 'input'), found 'user'" },
	{ HEAD "  %y: f32[2] = input user \"y\" data=zeros\n" TAIL, "6:31", "expected end of line: data= is only for parameters, buffers and constants, not user inputs" },
	{ HEAD "  %y: f32[2] = input constant \"y\" dat=zeros\n" TAIL, "6:35", "expected end of line or data=..., found 'dat'" },
	{ HEAD "  %y: int = input constant \"y\" data=zeros\n" TAIL, "6:32", "expected a tensor type for a value with data=" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=twos\n" TAIL, "6:40",
	  "expected data (zeros, ones, fill(X), arange, random(SEED), [values] or @BLOB), found 'twos'" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=[1.0, 2.0, 3.0]\n" TAIL, "6:40",
	  "expected 2 values (the tensor's element count), found 3" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=[1.0 2.0]\n" TAIL, "6:45", "expected ',' or ']' in the data list, found '2.0'" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=random(-1)\n" TAIL, "6:47", "expected a seed (an integer >= 0), found '-1'" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=random(1.5)\n" TAIL, "6:47", "expected a seed (an integer >= 0)" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=fill()\n" TAIL, "6:45", "expected a number, found ')'" },
	{ HEAD "  %y: f32[2] = input constant \"y\" data=@nope\n" TAIL, "6:40",
	  "unknown blob '@nope': expected a blob defined with a 'blob' statement" },
	{ "passrun 1\nblob @b hex\"00\"\nmethod @m {\n  %y: f32[2] = input constant \"y\" data=@b\n  return %y\n}\n", "4:40",
	  "expected a blob of 8 bytes (the tensor's storage), found '@b' with 1 bytes" },
	/* getitem, delegate calls, return */
	{ HEAD "  %y: f32[2] = getitem %x 0\n" TAIL, "6:27", "expected ',' after the getitem's value, found '0'" },
	{ HEAD "  %y: f32[2] = getitem %x, -1\n" TAIL, "6:28", "expected an index (an integer from 0 to 2147483647), found '-1'" },
	{ HEAD "  %y: f32[2] = getitem %x, 2147483648\n" TAIL, "6:28", "expected an index (an integer from 0 to 2147483647), found '2147483648'" },
	{ HEAD "  %y: f32[2] = getitem %q, 0\n" TAIL, "6:24", "undefined value '%q'" },
	{ HEAD "  %y: (f32[2]) = delegate add0(%x)\n" TAIL, "6:27", "expected '@' and the delegate's name, found 'add0'" },
	{ HEAD "  %y: (f32[2]) = delegate @nope(%x)\n" TAIL, "6:27", "unknown delegate '@nope': expected a delegate defined in this file" },
	{ HEAD "  return %x -> buf \"x\"\n}\n", "6:16", "expected 'buffer' or 'input' after '->', found 'buf'" },
	{ HEAD "  return %x -> buffer x\n}\n", "6:23", "expected a string (\"...\"), found 'x'" },
	{ HEAD "  return %x %x\n}\n", "6:13", "expected end of line after the return values, found '%x'" },
	{ HEAD "  return x\n}\n", "6:10", "expected a value (%name), found 'x'" },
	/* columns count characters, not bytes */
	{ "passrun 1\nmethod @m {\n  %x: f32[2] = input user \"\xc3\xa9\xc3\xa9\" data=zeros\n  return %x\n}\n", "3:32",
	  "data= is only for parameters" },
};

Test(text, every_error_names_file_line_column_and_what_was_expected)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const bad_case *c = &bad_cases[i];
		/* The NUL-byte case has an embedded NUL: its length is known. */
		size_t len = strlen(c->text);
		if (strstr(c->msg, "NUL byte"))
			len = strlen(c->text) + 2;
		pr_program *p = (pr_program *)1;
		pr_err *e = pr_text_parse("t.pg", c->text, len, &p);
		cr_expect_not_null(e, "case %zu parsed but should fail: %s", i, c->msg);
		if (!e)
			continue;
		cr_expect_null(p);
		const char *m = pr_err_message(e);
		char prefix[64];
		snprintf(prefix, sizeof prefix, "t.pg:%s: ", c->where);
		cr_expect(strncmp(m, prefix, strlen(prefix)) == 0, "case %zu: '%s' does not start with '%s'", i, m, prefix);
		cr_expect(strstr(m, c->msg), "case %zu: '%s' lacks '%s'", i, m, c->msg);
		pr_err_free(e);
	}
}

/* The lexer reads integers of up to 18 digits itself and hands longer ones,
 * and floats, to the C library: both sides of that line, and the signs. */
Test(text, integers_on_both_sides_of_the_fast_path_read_exactly)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op t::f(int[] v) -> int\n"
				 "method @m {\n"
				 "  %a: int = t::f([999999999999999999, 1000000000000000000, "
				 "-999999999999999999, -9223372036854775808, +9223372036854775807, "
				 "+12, 0, -0, - inf, nan])\n"
				 "  return %a\n"
				 "}\n");
	cr_assert_not_null(p);
	const pr_arg *v = &p->methods[0]->first->args[0];
	cr_assert_eq(v->n_items, 10);
	const pr_arg *it = v->u.items;
	cr_expect_eq(it[0].u.i, INT64_C(999999999999999999));
	cr_expect_eq(it[1].u.i, INT64_C(1000000000000000000));
	cr_expect_eq(it[2].u.i, -INT64_C(999999999999999999));
	cr_expect_eq(it[3].u.i, INT64_MIN);
	cr_expect_eq(it[4].u.i, INT64_MAX);
	cr_expect_eq(it[5].u.i, 12);
	cr_expect(it[6].kind == PR_ARG_INT && it[6].u.i == 0 && it[7].u.i == 0);
	cr_expect(it[8].kind == PR_ARG_FLOAT && isinf(it[8].u.f) && it[8].u.f < 0,
		  "a sign, blanks, then inf is still a float");
	cr_expect(it[9].kind == PR_ARG_FLOAT && isnan(it[9].u.f));
	pr_program_free(p);
	pr_program *q = NULL;
	const char *big = "passrun 1\nop t::f(int v) -> int\nmethod @m {\n"
			  "  %a: int = t::f(9223372036854775808)\n  return %a\n}\n";
	pr_err *e = pr_text_parse("t.pg", big, strlen(big), &q);
	cr_assert_not_null(e, "a 19-digit integer past int64 must be refused");
	cr_expect(strstr(pr_err_message(e), "t.pg:4:"), "%s", pr_err_message(e));
	cr_expect(strstr(pr_err_message(e), "fits in 64 bits"), "%s", pr_err_message(e));
	pr_err_free(e);
}

/* The UTF-8 check takes ASCII 32 bytes, then eight, at a time: a bad byte
 * or a NUL at every place in such blocks is still found, at its column. */
Test(text, a_bad_byte_is_found_wherever_it_falls_in_a_block)
{
	static const char filler[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH";
	for (int nul = 0; nul < 2; nul++) {
		for (int at = 0; at < 40; at++) {
			char text[160];
			int n = snprintf(text, sizeof text, "passrun 1\n# abcdefgh%.*s", at, filler);
			text[n] = nul ? 0 : (char)0xff;
			snprintf(text + n + 1, sizeof text - (size_t)n - 1,
				 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnop\n");
			size_t len = (size_t)n + 1 + strlen(text + n + 1);
			pr_program *p = NULL;
			pr_err *e = pr_text_parse("t.pg", text, len, &p);
			cr_assert_not_null(e, "byte %d after %d bytes was not found", nul ? 0 : 0xff, at);
			char want[64];
			snprintf(want, sizeof want, "t.pg:2:%d: ", n - 10 + 1);
			cr_expect(strstr(pr_err_message(e), want) &&
				  strstr(pr_err_message(e), nul ? "NUL byte" : "0xff"),
				  "'%s' lacks '%s'", pr_err_message(e), want);
			pr_err_free(e);
		}
	}
}

/* Ops and delegates called lately are found by their name's bytes in a
 * small table: with many more of each than it has slots, called in a
 * shuffled order, every call still gets its own. */
Test(text, every_call_finds_its_own_op_and_delegate_among_many)
{
	enum { N = 40, ROUNDS = 3 };
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "passrun 1\n");
	for (int i = 0; i < N; i++)
		pr_strbuf_printf(&b, "op t::f%d.o(Tensor x) -> Tensor\n"
				 "delegate @d%d {\n  %%x: f32[2] = input\n  return %%x\n}\n", i, i);
	pr_strbuf_puts(&b, "method @m {\n  %x: f32[2] = input user \"x\"\n");
	for (int r = 0; r < ROUNDS; r++)
		for (int k = 0; k < N; k++) {
			int i = (k * 7 + r) % N;
			pr_strbuf_printf(&b, "  %%o%d_%d: f32[2] = t::f%d.o(%%x)\n"
					 "  %%c%d_%d: (f32[2]) = delegate @d%d(%%x)\n", r, i, i, r, i, i);
		}
	pr_strbuf_puts(&b, "  return %x\n}\n");
	pr_program *p = tu_parse(b.data);
	pr_strbuf_free(&b);
	pr_graph *g = pr_program_find_method(p, "m");
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < N; i++) {
			char name[32], op[32], d[32];
			snprintf(op, sizeof op, "t::f%d.o", i);
			snprintf(d, sizeof d, "d%d", i);
			snprintf(name, sizeof name, "o%d_%d", r, i);
			cr_expect_eq(pr_node_schema(node(g, name)), pr_program_find_schema(p, op), "%s", name);
			snprintf(name, sizeof name, "c%d_%d", r, i);
			cr_expect_eq(pr_node_delegate(node(g, name)), pr_program_find_delegate(p, d), "%s", name);
		}
	pr_program_free(p);
}

/* Strings are scanned eight bytes at a time: a quote, a backslash, a
 * control byte or DEL is seen wherever it falls in a block, and a byte of
 * UTF-8 is kept as it is. */
Test(text, a_string_byte_that_needs_care_is_found_wherever_it_falls_in_an_eight_byte_block)
{
	static const char *const specials[] = { "\\\"", "\\\\", "\xc3\xa9", "\t", "\x7f" };
	static const char *const read_as[] = { "\"", "\\", "\xc3\xa9", NULL, NULL };
	for (int at = 0; at < 17; at++) {
		for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
			char text[256], want[64];
			snprintf(text, sizeof text, "passrun 1\nmethod @m {\n  %%x: f32[2] = input user "
				 "\"%.*s%sabcdefghijklmnopq\"\n  return %%x\n}\n", at, "0123456789abcdefg",
				 specials[k]);
			pr_program *p = NULL;
			pr_err *e = pr_text_parse("t.pg", text, strlen(text), &p);
			if (!read_as[k]) {
				cr_assert_not_null(e, "byte %zu after %d bytes was not found", k, at);
				snprintf(want, sizeof want, "t.pg:3:%d: expected a printable character", 28 + at);
				cr_expect(strstr(pr_err_message(e), want), "'%s' lacks '%s'", pr_err_message(e), want);
				pr_err_free(e);
				continue;
			}
			cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
			snprintf(want, sizeof want, "%.*s%sabcdefghijklmnopq", at, "0123456789abcdefg", read_as[k]);
			cr_expect_str_eq(pr_node_input(node(p->methods[0], "x"))->name, want);
			pr_program_free(p);
		}
	}
}

/* A tuple's specs are the graph's storage (no malloc per tuple), also past
 * the eight read on the stack, marked so: a pass that gives the node a
 * type of its own does not free them (free() of what malloc did not give
 * aborts), and the program frees that one. */
Test(text, a_tuple_type_keeps_its_specs_in_graph_storage)
{
	pr_program *p = tu_parse("passrun 1\nop a::f(Tensor x) -> Tensor[]\nmethod @m {\n"
				 "  %x: f32[2] = input user \"x\"\n"
				 "  %one: (f32[2]) = a::f(%x)\n"
				 "  %ten: (f32[1], f32[2], f32[3], f32[4], f32[5], f32[6], f32[7], f32[8], "
				 "f32[9]@cuda:0, i64[10]) = a::f(%x)\n"
				 "  return %x\n}\n");
	pr_graph *g = p->methods[0];
	pr_node *one = node(g, "one"), *ten = node(g, "ten");
	cr_assert_eq(one->type.n_elems, 1);
	cr_expect_eq(one->type.elems[0].shape[0], 2);
	cr_assert_eq(ten->type.n_elems, 10);
	for (int i = 0; i < 10; i++) {
		cr_expect_eq(ten->type.elems[i].rank, 1);
		cr_expect_eq(ten->type.elems[i].shape[0], i + 1);
	}
	cr_expect_eq(ten->type.elems[9].dtype, PR_I64);
	cr_expect_str_eq(pr_spec_device(&ten->type.elems[8]).type, "cuda");
	pr_spec *own = malloc(sizeof *own);
	*own = ten->type.elems[9];
	pr_node_set_tuple(ten, own, 1, PR_STORAGE_OWNED);
	pr_node_set_tuple(one, NULL, 0, PR_STORAGE_OWNED);
	cr_expect_eq(ten->type.elems[0].dtype, PR_I64);
	pr_program_free(p);
}

/* Input names are the graph's storage, escaped or not; write-back targets
 * and string arguments the program's interned strings: no malloc for
 * either, and a pass may still replace a name with one of its own. */
Test(text, quoted_names_and_strings_are_the_programs_storage)
{
	pr_program *p = tu_parse("passrun 1\nop a::f(Tensor x, str s) -> Tensor\nmethod @m {\n"
				 "  %x: f32[2] = input user \"plain.name\"\n"
				 "  %b: f32[2] = input buffer \"tab\\there\" data=zeros\n"
				 "  %y: f32[2] = a::f(%x, \"s\\x01\")\n"
				 "  return %y, %b -> buffer \"tab\\there\"\n}\n");
	pr_graph *g = p->methods[0];
	cr_expect_str_eq(pr_node_input(node(g, "x"))->name, "plain.name");
	cr_expect_str_eq(pr_node_input(node(g, "b"))->name, "tab\there");
	cr_expect_eq(node(g, "y")->args[1].u.s, pr_program_intern(p, "s\x01", 2));
	const pr_node *ret = g->last;
	cr_assert_not_null(pr_node_writebacks(ret));
	cr_expect_eq(pr_node_writebacks(ret)[0].kind, PR_WRITEBACK_NONE);
	cr_expect_eq(pr_node_writebacks(ret)[1].kind, PR_WRITEBACK_BUFFER);
	cr_expect_eq(pr_node_writebacks(ret)[1].target, pr_program_intern(p, "tab\there", 8));
	pr_node_set_input_name(node(g, "b"), strdup("other"), PR_STORAGE_OWNED);
	cr_expect_str_eq(pr_node_input(node(g, "b"))->name, "other");
	char *t = pr_text_print(p, NULL);
	cr_expect(strstr(t, "input buffer \"other\" data=zeros\n"), "%s", t);
	cr_expect(strstr(t, "-> buffer \"tab\\there\"\n"), "%s", t);
	free(t);
	pr_program_free(p);
}

/* The printer scans strings four bytes a round: each byte it must escape,
 * or check as UTF-8, is printed right wherever it falls. */
Test(text, a_string_byte_printed_with_care_is_found_wherever_it_falls_in_an_eight_byte_block)
{
	static const char *const raw[] = { "\"", "\\", "\t", "\x7f", "\xc3\xa9", "\xff" };
	static const char *const printed[] = { "\\\"", "\\\\", "\\t", "\\x7f", "\xc3\xa9", "\\xff" };
	pr_program *p = tu_parse("passrun 1\nmethod @m {\n  %x: f32[1] = input user \"a\"\n  return %x\n}\n");
	pr_node *x = pr_graph_find(p->methods[0], "x");
	for (int at = 0; at < 17; at++) {
		for (size_t k = 0; k < sizeof raw / sizeof raw[0]; k++) {
			char name[64], want[96];
			snprintf(name, sizeof name, "%.*s%sabcdefghijklmnopq", at, "0123456789abcdefg", raw[k]);
			snprintf(want, sizeof want, "input user \"%.*s%sabcdefghijklmnopq\"\n", at,
				 "0123456789abcdefg", printed[k]);
			pr_node_set_input_name(x, strdup(name), PR_STORAGE_OWNED);
			char *t = print(p);
			cr_expect(strstr(t, want), "byte %zu after %d bytes: %s", k, at, t);
			free(t);
		}
	}
	pr_program_free(p);
}

/* in, canonical text, parses and prints as itself; in is freed. */
static void expect_prints_back(pr_strbuf *in)
{
	pr_program *p = tu_parse(in->data);
	char *t = print(p);
	cr_expect_str_eq(t, in->data);
	free(t);
	pr_program_free(p);
	pr_strbuf_free(in);
}

/* The printer writes numbers two digits a step and copies short texts in
 * overlapping moves: every digit count of a mem offset, a seed and an
 * integer argument (both signs, the int64 limits), and names of every
 * length around the moves' sizes, print as they were read. */
Test(text, numbers_of_every_digit_count_and_names_of_every_length_print_back)
{
	pr_strbuf in;
	pr_strbuf_init(&in);
	pr_strbuf_printf(&in, "passrun 1\n\nop a::f(Tensor x, int i) -> Tensor\n\nmethod @m {\n");
	int64_t v = 1;
	for (int k = 0; k <= 18; k++) {
		int64_t vals[2] = { v - 1, v };
		for (int j = 0; j < 2; j++)
			pr_strbuf_printf(&in, "  %%%.*s: f32[1]{mem=cpu:%lld} = input buffer \"b%d_%d\" data=random(%lld)\n",
				       2 * k + j + 1, "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", (long long)vals[j], k, j,
				       (long long)vals[j]);
		if (k < 18)
			v *= 10;   /* 10^19 is past int64 */
	}
	pr_strbuf_printf(&in, "  %%max: f32[1]{mem=cpu:%lld} = input buffer \"m\" data=random(%lld)\n",
		       (long long)INT64_MAX, (long long)INT64_MAX);
	pr_strbuf_printf(&in, "  %%lo: f32[1] = a::f(%%max, %lld)\n", (long long)INT64_MIN);
	pr_strbuf_printf(&in, "  %%neg: f32[1] = a::f(%%max, -1000000007)\n  return %%lo, %%neg\n}\n");
	expect_prints_back(&in);
}

/* The printer keeps each spec's whole text, mem included, by what it
 * depends on: one layout with and without mem, in two arenas, at offsets
 * that repeat, more of them than it keeps (so that texts alike but for one
 * field meet in a slot), and strided, print as they were read. */
Test(text, specs_alike_but_for_their_mem_print_as_their_own_text)
{
	static const char *const layouts[] = { "f32[4,4]", "f32[4,4]@cuda:0", "f32[4,4]{strides=[1,4]" };
	static const char *const arenas[] = { "", "cpu", "cuda:0" };
	pr_strbuf in;
	pr_strbuf_init(&in);
	pr_strbuf_printf(&in, "passrun 1\n\nop a::f(Tensor x) -> Tensor\n\nmethod @m {\n"
			 "  %%x: f32[4,4] = input user \"x\"\n");
	for (int i = 0; i < 4000; i++) {   /* offsets that share a slot: many more than slots */
		const char *layout = layouts[i % 3], *arena = arenas[i / 3 % 3];
		bool strided = strchr(layout, '{') != NULL;
		long long off = 64LL * (i % 997);
		pr_strbuf_printf(&in, "  %%v%d: %s", i, layout);
		if (*arena)
			pr_strbuf_printf(&in, "%s%s:%lld}", strided ? ", mem=" : "{mem=", arena, off);
		else if (strided)
			pr_strbuf_printf(&in, "}");
		pr_strbuf_printf(&in, " = a::f(%%x)\n");
	}
	pr_strbuf_printf(&in, "  return %%x\n}\n");
	expect_prints_back(&in);
}

/* Names and words are scanned four bytes a round while four are left: a
 * name of every length that ends where the text does is read whole and no
 * further, though name bytes follow in memory. */
Test(text, a_name_that_ends_the_text_is_read_to_its_end_only)
{
	for (int k = 1; k <= 12; k++) {
		char text[256];
		int len = snprintf(text, sizeof text, "passrun 1\nmethod @m {\n  %%%.*s: f32[1] = input user \"x\"\n"
				   "  return %%%.*s", k, "abcdefghijkl", k, "abcdefghijkl");
		memcpy(text + len, "zzzz", 5);   /* not part of the text */
		pr_program *p = NULL;
		pr_err *e = pr_text_parse("t.pg", text, (size_t)len, &p);
		cr_assert_not_null(e);
		cr_expect(strstr(pr_err_message(e), "t.pg:4:"), "%s", pr_err_message(e));
		cr_expect(strstr(pr_err_message(e), "expected '}' to close '@m' (opened at line 2), found end of file"),
			  "%d: %s", k, pr_err_message(e));
		pr_err_free(e);
	}
}

/* The parser compares the names and shapes it looks up in place, in
 * overlapping moves: equal bytes of every length are the same, and a byte
 * changed anywhere in them is told. */
Test(text, same_bytes_tells_a_change_at_every_offset_of_every_length)
{
	char a[32], b[32];
	for (size_t n = 0; n <= 24; n++) {
		for (size_t i = 0; i < sizeof a; i++)
			a[i] = b[i] = (char)('a' + i % 26);
		b[n] = 'X';   /* past the n: not looked at */
		cr_expect(tp_same_bytes(a, b, n), "n %zu", n);
		for (size_t i = 0; i < n; i++) {
			b[i] = 'X';
			cr_expect(!tp_same_bytes(a, b, n), "n %zu, byte %zu", n, i);
			b[i] = a[i];
		}
	}
}

/* A value argument prints with its separator and '%' in one put: calls
 * with no argument, a value first, a value after a literal or a list, and
 * a call with no result print as read. */
Test(text, arguments_of_every_kind_and_place_print_back)
{
	pr_strbuf in;
	pr_strbuf_init(&in);
	pr_strbuf_printf(&in, "passrun 1\n\nop a::f(Tensor? x=None, Scalar y=1, Tensor? z=None) -> Tensor\n"
			 "op a::g(Tensor x) -> ()\n\nmethod @m {\n"
			 "  %%x: f32[2] = input user \"x\"\n"
			 "  %%none: f32[2] = a::f()\n"
			 "  %%first: f32[2] = a::f(%%x)\n"
			 "  %%after: f32[2] = a::f(none, 2, %%first)\n"
			 "  %%listed: f32[2] = a::f([%%x, %%first], 1.5, %%after)\n"
			 "  a::g(%%listed)\n"
			 "  return %%listed\n}\n");
	expect_prints_back(&in);
}
