/* Tests of the core verifier (core/check/verify.c): each rule with a small program
 * that breaks it, asserting the code, the node named and the error count, and
 * that valid programs (every examples/NAME.pg) give no error.
 *
 * Programs are built with the program.h API, as a pass would edit them: that
 * also reaches states the text parser refuses (a use before its definition
 * after an edit, a broken use list). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passrun/diag.h"
#include "passrun/format.h"
#include "passrun/program.h"
#include "passrun/verify.h"
#include "testutil.h"

/* ---- building programs -------------------------------------------------- */

/* "f32[2,3]" or "f32[2,3]@cuda:0" into a spec. */
static pr_spec spec_of(const char *t)
{
	pr_spec s;
	const char *lb = strchr(t, '[');
	pr_dtype dt;
	cr_assert(lb && pr_dtype_parse(t, (size_t)(lb - t), &dt), "bad test type %s", t);
	int64_t shape[PR_MAX_RANK];
	int rank = 0;
	const char *q = lb + 1;
	while (*q && *q != ']') {
		shape[rank++] = strtoll(q, (char **)&q, 10);
		if (*q == ',')
			q++;
	}
	pr_spec_init(&s, dt, rank, shape);
	if (q[0] == ']' && q[1] == '@')
		cr_assert(tu_set_device(&s, q + 2));
	return s;
}

/* Gives dimension d of s the size v, keeping every stride. */
static void set_dim(pr_spec *s, int d, int64_t v)
{
	int64_t shape[PR_MAX_RANK];
	memcpy(shape, s->shape, sizeof shape[0] * (size_t)s->rank);
	shape[d] = v;
	pr_spec_set_layout(s, s->rank, shape, pr_spec_strides(s));
}

/* "f32[2]", "(f32[2], f32[3]@cuda:0)", "int" or NULL (no result). */
static void set_type(pr_node *n, const char *t)
{
	if (!t)
		return;
	if (!strcmp(t, "int")) {
		n->type.kind = PR_TYPE_INT;
		return;
	}
	if (t[0] != '(') {
		n->type.kind = PR_TYPE_TENSOR;
		n->type.tensor = spec_of(t);
		return;
	}
	n->type.kind = PR_TYPE_TUPLE;
	n->type.elems = calloc(8, sizeof(pr_spec));
	/* elements are split at the commas outside brackets */
	char buf[256];
	size_t len = 0;
	int depth = 0;
	for (const char *q = t + 1; *q; q++) {
		if ((*q == ',' && !depth) || *q == ')') {
			buf[len] = 0;
			n->type.elems[n->type.n_elems++] = spec_of(buf);
			len = 0;
			continue;
		}
		depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
		if (*q != ' ')
			buf[len++] = *q;
	}
}

static pr_arg V(pr_node *n) { return (pr_arg){.kind = PR_ARG_VALUE, .u.value = n}; }
static pr_arg I(int64_t i) { return (pr_arg){.kind = PR_ARG_INT, .u.i = i}; }
static pr_arg NONE(void) { return (pr_arg){.kind = PR_ARG_NONE}; }

static pr_arg *args_dup(const pr_arg *a, int n)
{
	pr_arg *out = calloc((size_t)(n ? n : 1), sizeof *out);
	memcpy(out, a, (size_t)n * sizeof *a);
	return out;
}
#define NARGS(...) ((int)(sizeof((pr_arg[]){__VA_ARGS__}) / sizeof(pr_arg)))
#define ARGS(...) args_dup((pr_arg[]){__VA_ARGS__}, NARGS(__VA_ARGS__)), NARGS(__VA_ARGS__)
#define NOARGS NULL, 0

static pr_arg L(int n, pr_arg *items)
{
	return (pr_arg){.kind = PR_ARG_LIST, .n_items = n, .u.items = items};
}

static pr_node *add(pr_graph *g, pr_node_kind k, const char *name, const char *type,
		    pr_arg *args, int n_args)
{
	pr_node *n = pr_node_new(k, name);
	set_type(n, type);
	if (n_args)
		pr_node_set_args(n, args, n_args);
	else
		free(args);
	pr_err *e = pr_graph_append(g, n);
	cr_assert(!e, "append %s failed", name ? name : "?");
	return n;
}

static pr_node *input(pr_graph *g, const char *name, const char *type, pr_input_kind k,
		      const char *quoted)
{
	pr_node *n = add(g, PR_NODE_INPUT, name, type, NOARGS);
	n->of_kind.input->kind = k;
	n->of_kind.input->name = quoted ? strdup(quoted) : NULL;
	return n;
}

static pr_node *call(pr_graph *g, const char *name, const char *type, pr_schema *s,
		     pr_arg *args, int n_args)
{
	pr_node *n = add(g, PR_NODE_OP, name, type, args, n_args);
	n->of_kind.schema = s;
	return n;
}

static pr_node *dcall(pr_graph *g, const char *name, const char *type, pr_delegate *d,
		      pr_arg *args, int n_args)
{
	pr_node *n = add(g, PR_NODE_DELEGATE, name, type, args, n_args);
	n->of_kind.delegate = d;
	return n;
}

static pr_node *getitem(pr_graph *g, const char *name, const char *type, pr_node *t,
			int64_t i)
{
	pr_node *n = add(g, PR_NODE_GETITEM, name, type, ARGS(V(t)));
	n->of_kind.index = (int32_t)i;
	return n;
}

static pr_node *ret(pr_graph *g, pr_arg *args, int n_args)
{
	return add(g, PR_NODE_RETURN, NULL, NULL, args, n_args);
}

static void writeback(pr_node *r, int i, pr_writeback_kind k, const char *target)
{
	if (!r->of_kind.writebacks)
		r->of_kind.writebacks = calloc((size_t)r->n_args, sizeof *r->of_kind.writebacks);
	r->of_kind.writebacks[i].kind = k;
	r->of_kind.writebacks[i].target = strdup(target);
}

static pr_schema *op(pr_program *p, const char *text)
{
	pr_schema *s = NULL;
	pr_err *e = pr_program_declare_op(p, text, &s);
	cr_assert(!e, "declare %s: %s", text, e ? pr_err_message(e) : "");
	return s;
}

static pr_graph *method(pr_program *p, const char *name)
{
	pr_graph *g = NULL;
	cr_assert(!pr_program_add_method(p, name, &g));
	return g;
}

/* A delegate whose body adds its two f32[2,3] inputs and returns the sum. */
static pr_delegate *add_delegate(pr_program *p, const char *name, const char *device)
{
	pr_delegate *d = NULL;
	cr_assert(!pr_program_add_delegate(p, name, &d));
	if (device)
		pr_delegate_set_spec(d, "target_device", device);
	pr_schema *add_op = op(p, "aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	pr_node *a = input(d->body, "a", "f32[2,3]", PR_INPUT_POSITIONAL, NULL);
	pr_node *b = input(d->body, "b", "f32[2,3]", PR_INPUT_POSITIONAL, NULL);
	pr_node *c = call(d->body, "c", "f32[2,3]", add_op, ARGS(V(a), V(b)));
	ret(d->body, ARGS(V(c)));
	return d;
}

/* ---- running the verifier ---------------------------------------------- */

static pr_diags diags;

static int verify(pr_program *p)
{
	pr_diags_free(&diags);
	pr_diags_init(&diags, "test.pg");
	int n = pr_verify(p, &diags, "verifier");
	cr_assert_eq(n, pr_diags_count(&diags, PR_SEV_ERROR), "return value counts the errors");
	return n;
}

static void print_diags(void)
{
	pr_diags_print(&diags, 0, stderr);
}

/* Exactly one error, with this code, about this node. */
static void expect_one(pr_program *p, const char *code, const char *node)
{
	int n = verify(p);
	if (n != 1)
		print_diags();
	cr_assert_eq(n, 1, "expected one %s error, got %d", code, n);
	pr_diag *d = &diags.items[0];
	cr_assert_str_eq(d->code, code, "code %s, message: %s", d->code, d->message);
	if (node)
		cr_assert(d->node && !strcmp(d->node, node), "node %s, expected %s (%s)",
			  d->node ? d->node : "(null)", node, d->message);
	cr_assert_str_eq(d->pass, "verifier");
	cr_assert(d->message && d->message[0]);
	cr_assert_eq(d->severity, PR_SEV_ERROR);
	pr_program_free(p);
}

static void expect_clean(pr_program *p)
{
	int n = verify(p);
	if (n)
		print_diags();
	cr_assert_eq(n, 0, "expected no error, got %d", n);
	pr_program_free(p);
}

static void init(void) { pr_diags_init(&diags, "test.pg"); }
static void fini(void) { pr_diags_free(&diags); }
TestSuite(verify, .init = init, .fini = fini);

/* The example of docs/text-format.md, built by hand: a cuda:0 delegate fed by copies,
 * a getitem, an in-place op, a written-back buffer. */
typedef struct example {
	pr_program *p;
	pr_graph *g;
	pr_delegate *d;
	pr_schema *h2d, *d2h, *relu_, *accumulate, *sym_size, *add;
	pr_node *x, *w, *k, *xc, *wc, *dl, *t, *th, *r, *acc, *ret;
} example;

static example build_example(void)
{
	example e = {.p = pr_program_new()};
	pr_program *p = e.p;
	e.add = op(p, "aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	e.relu_ = op(p, "aten::relu_(Tensor(a!) self) -> Tensor(a!)");
	e.accumulate = op(p, "custom::accumulate(Tensor(a!) x, Tensor y) -> ()");
	e.sym_size = op(p, "aten::sym_size.int(Tensor self, int dim) -> int {shape_only}");
	e.h2d = op(p, "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}");
	e.d2h = op(p, "et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}");
	e.d = add_delegate(p, "add0", "cuda:0");
	e.g = method(p, "forward");
	pr_graph *g = e.g;
	e.x = input(g, "x", "f32[2,3]", PR_INPUT_USER, "x");
	e.w = input(g, "w", "f32[2,3]", PR_INPUT_PARAMETER, "weight");
	e.k = input(g, "k", "f32[2,3]", PR_INPUT_BUFFER, "cache");
	e.xc = call(g, "x_h2d_cuda0", "f32[2,3]@cuda:0", e.h2d, ARGS(V(e.x)));
	e.wc = call(g, "w_h2d_cuda0", "f32[2,3]@cuda:0", e.h2d, ARGS(V(e.w)));
	e.dl = dcall(g, "d", "(f32[2,3]@cuda:0)", e.d, ARGS(V(e.xc), V(e.wc)));
	e.t = getitem(g, "t", "f32[2,3]@cuda:0", e.dl, 0);
	e.th = call(g, "t_d2h", "f32[2,3]", e.d2h, ARGS(V(e.t)));
	e.r = call(g, "r", "f32[2,3]", e.relu_, ARGS(V(e.th)));
	e.acc = call(g, NULL, NULL, e.accumulate, ARGS(V(e.k), V(e.r)));
	e.ret = ret(g, ARGS(V(e.r), V(e.k)));
	writeback(e.ret, 1, PR_WRITEBACK_BUFFER, "cache");
	return e;
}

/* ---- valid programs ------------------------------------------------------ */

Test(verify, valid_example_program_has_no_error)
{
	example e = build_example();
	expect_clean(e.p);
}

Test(verify, shape_only_op_may_read_a_device_tensor)
{
	example e = build_example();
	pr_node *n = pr_node_new(PR_NODE_OP, "n");
	n->of_kind.schema = e.sym_size;
	set_type(n, "int");
	pr_node_set_args(n, ARGS(V(e.t), I(0)));
	cr_assert(!pr_graph_insert_after(e.t, n));
	expect_clean(e.p);
}

Test(verify, every_example_file_verifies_clean)
{
	DIR *dir = opendir(PASSRUN_SOURCE_DIR "/examples");
	if (!dir)
		return;  /* no examples yet */
	int files = 0;
	for (struct dirent *de; (de = readdir(dir));) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".pg"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/examples/%s", PASSRUN_SOURCE_DIR, de->d_name);
		size_t len_text = 0;
		char *text = tu_read_file(path, &len_text);
		cr_assert(text, "cannot read %s", path);
		pr_program *p = NULL;
		pr_err *err = pr_text_parse(path, text, len_text, &p);
		free(text);
		cr_assert(!err, "%s", err ? pr_err_message(err) : "");
		int n = verify(p);
		if (n)
			print_diags();
		cr_expect_eq(n, 0, "%s: %d verifier errors", de->d_name, n);
		pr_program_free(p);
		files++;
	}
	closedir(dir);
	cr_log_info("verified %d example files", files);
}

/* ---- structure ----------------------------------------------------------- */

Test(verify, use_before_definition_after_an_edit)
{
	example e = build_example();
	/* %early reads %r but is inserted before it */
	pr_node *n = pr_node_new(PR_NODE_OP, "early");
	n->of_kind.schema = e.add;
	set_type(n, "f32[2,3]");
	pr_node_set_args(n, ARGS(V(e.r), V(e.x)));
	cr_assert(!pr_graph_insert_before(e.r, n));
	expect_one(e.p, "E-UNDEFINED", "early");
}

Test(verify, node_reading_itself_is_undefined)
{
	example e = build_example();
	pr_arg_set_value(&e.r->args[0], e.r);
	expect_one(e.p, "E-UNDEFINED", "r");
}

Test(verify, value_of_another_graph_is_undefined)
{
	example e = build_example();
	pr_node *body_input = e.d->body->first;
	pr_arg_set_value(&e.r->args[0], body_input);
	/* reported by the body (%a's use list names a stranger) and by the
	 * method (its argument) */
	int n = verify(e.p);
	if (n != 2)
		print_diags();
	cr_assert_eq(n, 2);
	cr_assert_str_eq(diags.items[0].code, "E-USES");
	cr_assert_str_eq(diags.items[0].method, "add0");
	cr_assert_str_eq(diags.items[0].node, "a");
	cr_assert_str_eq(diags.items[1].code, "E-UNDEFINED");
	cr_assert_str_eq(diags.items[1].node, "r");
	pr_program_free(e.p);
}

/* check_value decides a well-formed slot in one condition and runs every
 * test again for one that fails any: each failure below still reaches its
 * own report. Among p's errors, one with this code, node and words. */
static void expect_among(pr_program *p, const char *code, const char *node, const char *words)
{
	cr_assert_geq(verify(p), 1);
	bool found = false;
	for (int i = 0; i < diags.n && !found; i++)
		found = !strcmp(diags.items[i].code, code) && diags.items[i].node &&
			!strcmp(diags.items[i].node, node) && strstr(diags.items[i].message, words);
	if (!found)
		print_diags();
	cr_assert(found, "expected %s at %s saying \"%s\"", code, node, words);
	pr_program_free(p);
}

Test(verify, argument_naming_no_value_is_undefined)
{
	example e = build_example();
	e.r->args[0].u.value = NULL;   /* its value's use list still names it */
	expect_among(e.p, "E-UNDEFINED", "r", "names no value");
}

Test(verify, argument_with_another_owner)
{
	example e = build_example();
	e.r->args[0].owner = e.x;
	expect_among(e.p, "E-USES", "r", "has another owner");
}

Test(verify, reading_a_statement_without_result_is_a_type_error)
{
	example e = build_example();
	pr_node *n = pr_node_new(PR_NODE_OP, "late");
	n->of_kind.schema = e.add;
	set_type(n, "f32[2,3]");
	pr_node_set_args(n, ARGS(V(e.acc), V(e.x)));   /* accumulate returns () */
	cr_assert(!pr_graph_insert_before(e.ret, n));
	expect_one(e.p, "E-TYPE", "late");
}

Test(verify, use_missing_from_use_list)
{
	example e = build_example();
	cr_assert_eq(e.x->n_uses, 1);
	e.x->n_uses = 0;  /* forget %x_h2d_cuda0's use of %x */
	expect_one(e.p, "E-USES", "x");
}

/* Grows v's use list the way a pass would, by a reader that then goes, so
 * that a test can write one entry past its readers: a list holds only as many
 * entries as its block (a first reader's is one). */
static void make_room_for_a_use(example *e, pr_node *v)
{
	pr_node *n = pr_node_new(PR_NODE_OP, "passing_reader");
	n->of_kind.schema = e->add;
	pr_node_set_args(n, ARGS(V(v), V(v)));
	cr_assert(!pr_graph_insert_before(e->ret, n));
	pr_graph_erase(n);
	cr_assert_gt(pr_node_uses_room(v), v->n_uses);
}

Test(verify, use_list_naming_a_non_reader)
{
	example e = build_example();
	cr_assert_eq(e.w->n_uses, 1);
	make_room_for_a_use(&e, e.w);
	/* %w claims %r reads it */
	e.w->uses[e.w->n_uses++] = (pr_use){.arg = &e.r->args[0]};
	expect_one(e.p, "E-USES", "w");
}

Test(verify, scratch_is_given_back)
{
	example e = build_example();
	int tag;
	e.r->scratch = &tag;
	e.x->scratch = NULL;
	cr_assert_eq(verify(e.p), 0);
	cr_assert_eq(e.r->scratch, &tag);
	cr_assert_null(e.x->scratch);
	pr_program_free(e.p);
}

Test(verify, use_list_naming_one_argument_twice)
{
	example e = build_example();
	pr_use u = e.x->uses[0];
	make_room_for_a_use(&e, e.x);
	e.x->uses[e.x->n_uses++] = u;
	expect_one(e.p, "E-USES", "x");
}

Test(verify, too_many_arguments)
{
	example e = build_example();
	pr_node *n = pr_node_new(PR_NODE_OP, "y");
	n->of_kind.schema = e.add;
	set_type(n, "f32[2,3]");
	pr_node_set_args(n, ARGS(V(e.x), V(e.x), V(e.x)));
	cr_assert(!pr_graph_insert_before(e.ret, n));
	expect_one(e.p, "E-ARITY", "y");
}

Test(verify, missing_argument_without_default)
{
	example e = build_example();
	pr_node *n = pr_node_new(PR_NODE_OP, NULL);   /* a statement: named after its op */
	n->of_kind.schema = e.add;
	pr_node_set_args(n, ARGS(V(e.x)));
	cr_assert(!pr_graph_insert_before(e.ret, n));
	expect_one(e.p, "E-ARITY", "aten::add.Tensor");
}

static pr_program *one_op_program(const char *schema, const char *result_type,
				  pr_arg *args, int n_args, pr_node **x_out)
{
	pr_program *p = pr_program_new();
	pr_schema *s = op(p, schema);
	pr_graph *g = method(p, "forward");
	pr_node *x = input(g, "x", "f32[2,3]", PR_INPUT_USER, "x");
	for (int i = 0; i < n_args; i++)
		if (args[i].kind == PR_ARG_VALUE && !args[i].u.value)
			args[i].u.value = x;  /* V(NULL) stands for %x */
	pr_node *y = call(g, "y", result_type, s, args, n_args);
	ret(g, ARGS(V(result_type && strcmp(result_type, "int") ? y : x)));
	if (x_out)
		*x_out = x;
	return p;
}

Test(verify, missing_argument_with_default_is_fine)
{
	expect_clean(one_op_program("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor",
				    "f32[2,3]", ARGS(V(NULL), NONE()), NULL));
}

Test(verify, int_argument_given_a_tensor)
{
	expect_one(one_op_program("aten::sym_size.int(Tensor self, int dim) -> int {shape_only}",
				  "int", ARGS(V(NULL), V(NULL)), NULL), "E-TYPE", "y");
}

Test(verify, tensor_argument_given_an_int)
{
	expect_one(one_op_program("aten::relu(Tensor self) -> Tensor", "f32[2,3]", ARGS(I(3)), NULL),
		   "E-TYPE", "y");
}

Test(verify, tensor_argument_given_none)
{
	expect_one(one_op_program("aten::relu(Tensor self) -> Tensor", "f32[2,3]", ARGS(NONE()), NULL),
		   "E-TYPE", "y");
}

Test(verify, optional_tensor_given_none_is_fine)
{
	expect_clean(one_op_program("custom::f(Tensor self, Tensor? bias) -> Tensor", "f32[2,3]",
				    ARGS(V(NULL), NONE()), NULL));
}

Test(verify, list_argument_given_a_scalar)
{
	expect_one(one_op_program("aten::view(Tensor(a) self, int[] size) -> Tensor(a)", "f32[2,3]",
				  ARGS(V(NULL), I(6)), NULL), "E-TYPE", "y");
}

Test(verify, list_argument_with_a_tensor_item)
{
	pr_arg *items = args_dup((pr_arg[]){I(2), V(NULL)}, 2);
	pr_program *p = one_op_program("aten::view(Tensor(a) self, int[] size) -> Tensor(a)",
				       "f32[2,3]", ARGS(V(NULL), L(2, items)), NULL);
	/* the list item V(NULL) was not filled by one_op_program: point it at %x */
	pr_graph *g = p->methods[0];
	pr_node *x = g->first, *y = x->next;
	pr_arg_set_value(&y->args[1].u.items[1], x);
	expect_one(p, "E-TYPE", "y");
}

Test(verify, fixed_size_list_accepts_one_int)
{
	expect_clean(one_op_program("custom::pool(Tensor self, int[2] stride=1) -> Tensor", "f32[2,3]",
				    ARGS(V(NULL), I(2)), NULL));
}

Test(verify, int_list_accepts_int_values)
{
	pr_program *p = pr_program_new();
	pr_schema *size = op(p, "aten::sym_size.int(Tensor self, int dim) -> int {shape_only}");
	pr_schema *view = op(p, "aten::view(Tensor(a) self, int[] size) -> Tensor(a)");
	pr_graph *g = method(p, "forward");
	pr_node *x = input(g, "x", "f32[2,3]", PR_INPUT_USER, "x");
	pr_node *s0 = call(g, "s0", "int", size, ARGS(V(x), I(0)));
	pr_node *v = call(g, "v", "f32[6]", view,
			  ARGS(V(x), L(1, args_dup((pr_arg[]){V(s0)}, 1))));
	ret(g, ARGS(V(v)));
	/* the list item's use is recorded on %s0 */
	cr_assert_eq(s0->n_uses, 1);
	expect_clean(p);
}

Test(verify, result_of_an_op_that_returns_nothing)
{
	expect_one(one_op_program("custom::accumulate(Tensor(a!) x, Tensor y) -> ()", "f32[2,3]",
				  ARGS(V(NULL), V(NULL)), NULL), "E-TYPE", "y");
}

Test(verify, result_kind_differs_from_schema)
{
	expect_one(one_op_program("aten::relu(Tensor self) -> Tensor", "int", ARGS(V(NULL)), NULL),
		   "E-TYPE", "y");
}

Test(verify, getitem_of_a_tensor)
{
	example e = build_example();
	pr_node *gi = pr_node_new(PR_NODE_GETITEM, "bad");
	set_type(gi, "f32[2,3]");
	pr_node_set_args(gi, ARGS(V(e.x)));
	cr_assert(!pr_graph_insert_before(e.ret, gi));
	expect_one(e.p, "E-GETITEM", "bad");
}

Test(verify, getitem_index_out_of_range)
{
	example e = build_example();
	e.t->of_kind.index = 1;
	expect_one(e.p, "E-GETITEM", "t");
}

Test(verify, getitem_negative_index)
{
	example e = build_example();
	e.t->of_kind.index = -1;
	expect_one(e.p, "E-GETITEM", "t");
}

Test(verify, getitem_type_differs_from_element)
{
	example e = build_example();
	e.t->type.tensor.dtype = PR_F16;
	expect_one(e.p, "E-GETITEM", "t");
}

Test(verify, delegate_call_with_wrong_argument_count)
{
	example e = build_example();
	pr_node *d = pr_node_new(PR_NODE_DELEGATE, "d2");
	d->of_kind.delegate = e.d;
	set_type(d, "(f32[2,3]@cuda:0)");
	pr_node_set_args(d, ARGS(V(e.xc)));
	cr_assert(!pr_graph_insert_after(e.dl, d));
	expect_one(e.p, "E-ARITY", "d2");
}

Test(verify, delegate_call_with_wrong_argument_shape)
{
	example e = build_example();
	set_dim(&e.xc->type.tensor, 1, 4);
	set_dim(&e.x->type.tensor, 1, 4);
	expect_one(e.p, "E-TYPE", "d");
}

Test(verify, delegate_call_result_differs_from_body_return)
{
	example e = build_example();
	pr_node *d = pr_node_new(PR_NODE_DELEGATE, "d2");
	d->of_kind.delegate = e.d;
	set_type(d, "(f32[2,3]@cuda:0, f32[2,3]@cuda:0)");
	pr_node_set_args(d, ARGS(V(e.xc), V(e.wc)));
	cr_assert(!pr_graph_insert_after(e.dl, d));
	expect_one(e.p, "E-DELEGATE", "d2");
}

Test(verify, delegate_call_returning_one_tensor_is_fine)
{
	example e = build_example();
	pr_node *d = pr_node_new(PR_NODE_DELEGATE, "d2");
	d->of_kind.delegate = e.d;
	set_type(d, "f32[2,3]@cuda:0");
	pr_node_set_args(d, ARGS(V(e.xc), V(e.wc)));
	cr_assert(!pr_graph_insert_after(e.dl, d));
	expect_clean(e.p);
}

Test(verify, delegate_call_to_an_unknown_delegate)
{
	example e = build_example();
	pr_program *other = pr_program_new();
	pr_delegate *stranger = add_delegate(other, "add0", "cuda:0");
	e.dl->of_kind.delegate = stranger;
	expect_one(e.p, "E-DELEGATE", "d");
	pr_program_free(other);
}

Test(verify, no_return)
{
	pr_program *p = pr_program_new();
	pr_graph *g = method(p, "forward");
	input(g, "x", "f32[2,3]", PR_INPUT_USER, "x");
	expect_one(p, "E-RETURN", NULL);
}

Test(verify, return_not_last)
{
	example e = build_example();
	pr_node *n = pr_node_new(PR_NODE_OP, "after");
	n->of_kind.schema = e.add;
	set_type(n, "f32[2,3]");
	pr_node_set_args(n, ARGS(V(e.x), V(e.x)));
	cr_assert(!pr_graph_append(e.g, n));
	expect_one(e.p, "E-RETURN", "return");
}

Test(verify, two_returns)
{
	example e = build_example();
	pr_node *r = pr_node_new(PR_NODE_RETURN, NULL);
	pr_node_set_args(r, ARGS(V(e.x)));
	cr_assert(!pr_graph_insert_before(e.ret, r));
	int n = verify(e.p);
	/* the first return is not last; the second one is a second return */
	cr_assert_eq(n, 2);
	cr_assert_str_eq(diags.items[0].code, "E-RETURN");
	cr_assert_str_eq(diags.items[1].code, "E-RETURN");
	pr_program_free(e.p);
}

Test(verify, return_of_a_literal)
{
	example e = build_example();
	pr_node *r = pr_node_new(PR_NODE_RETURN, NULL);
	pr_node_set_args(r, ARGS(V(e.r), I(1)));
	pr_graph_erase(e.ret);
	cr_assert(!pr_graph_append(e.g, r));
	expect_one(e.p, "E-RETURN", "return");
}

Test(verify, writeback_to_a_buffer_that_does_not_exist)
{
	example e = build_example();
	free(e.ret->of_kind.writebacks[1].target);
	e.ret->of_kind.writebacks[1].target = strdup("cachee");
	expect_one(e.p, "E-WRITEBACK", "return");
}

Test(verify, writeback_to_a_buffer_that_is_a_user_input)
{
	example e = build_example();
	free(e.ret->of_kind.writebacks[1].target);
	e.ret->of_kind.writebacks[1].target = strdup("x");
	expect_one(e.p, "E-WRITEBACK", "return");
}

Test(verify, writeback_to_an_input_that_is_a_parameter)
{
	example e = build_example();
	e.ret->of_kind.writebacks[1].kind = PR_WRITEBACK_INPUT;
	free(e.ret->of_kind.writebacks[1].target);
	e.ret->of_kind.writebacks[1].target = strdup("weight");
	expect_one(e.p, "E-WRITEBACK", "return");
}

Test(verify, writeback_to_a_user_input_is_fine)
{
	example e = build_example();
	writeback(e.ret, 0, PR_WRITEBACK_INPUT, "x");
	expect_clean(e.p);
}

Test(verify, writeback_of_another_shape)
{
	example e = build_example();
	set_dim(&e.k->type.tensor, 0, 4);
	pr_arg_set_value(&e.ret->args[1], e.r);   /* f32[2,3] -> buffer "cache" (f32[4,3]) */
	expect_one(e.p, "E-WRITEBACK", "return");
}

Test(verify, writeback_in_a_delegate_body)
{
	example e = build_example();
	writeback(pr_graph_return(e.d->body), 0, PR_WRITEBACK_BUFFER, "cache");
	expect_one(e.p, "E-WRITEBACK", "return");
	cr_assert_str_eq(diags.items[0].method, "add0");
}

Test(verify, positional_input_in_a_method)
{
	example e = build_example();
	e.x->of_kind.input->kind = PR_INPUT_POSITIONAL;
	expect_one(e.p, "E-INPUT", "x");
}

Test(verify, named_input_in_a_delegate_body)
{
	example e = build_example();
	e.d->body->first->of_kind.input->kind = PR_INPUT_USER;
	expect_one(e.p, "E-INPUT", "a");
}

Test(verify, two_inputs_with_one_name)
{
	example e = build_example();
	free(e.w->of_kind.input->name);
	e.w->of_kind.input->name = strdup("x");
	expect_one(e.p, "E-INPUT", "w");
}

/* The name map is sized for the inputs that open a method; inputs after
 * the first op grow it, and a name they repeat is still found. */
Test(verify, inputs_after_an_op_with_one_name)
{
	pr_program *p = pr_program_new();
	pr_schema *add_op = op(p, "aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	pr_graph *g = method(p, "forward");
	char name[16];
	pr_node *first = NULL;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "i%d", i);
		pr_node *n = input(g, name, "f32[4]", PR_INPUT_USER, name);
		first = first ? first : n;
	}
	pr_node *s = call(g, "s", "f32[4]", add_op, ARGS(V(first), V(first)));
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof name, "j%d", i);
		input(g, name, "f32[4]", PR_INPUT_USER, name);
	}
	input(g, "late", "f32[4]", PR_INPUT_USER, "i7");
	ret(g, ARGS(V(s)));
	expect_one(p, "E-INPUT", "late");
}

/* A return with many write-backs looks their targets up in stages, ahead
 * of each check (check_writebacks): each broken one is still reported, at
 * its own index and in order, among many good ones and values returned
 * without a write-back; a name two inputs share is the first input's. */
Test(verify, many_writebacks_report_each_broken_one_in_order)
{
	pr_program *p = pr_program_new();
	pr_graph *g = method(p, "forward");
	enum { N = 64 };
	pr_node *buf[N];
	char name[32], quoted[48];
	pr_node *user = input(g, "u", "f32[4]", PR_INPUT_USER, "user.0");
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "b%d", i);
		snprintf(quoted, sizeof quoted, "layers.%d.attention.k_cache", i);
		buf[i] = input(g, name, "f32[4]", PR_INPUT_BUFFER, quoted);
	}
	/* a second input named like buffer 30: reported, and not the one found */
	input(g, "again", "f32[8]", PR_INPUT_PARAMETER, "layers.30.attention.k_cache");
	pr_arg *args = calloc(N + 1, sizeof *args);
	for (int i = 0; i < N; i++)
		args[i] = V(buf[i]);
	args[N] = V(user);
	pr_node *r = add(g, PR_NODE_RETURN, NULL, NULL, args, N + 1);
	for (int i = 0; i < N; i++)
		if (i % 5 != 4) {
			snprintf(quoted, sizeof quoted, "layers.%d.attention.k_cache", i);
			writeback(r, i, PR_WRITEBACK_BUFFER, quoted);
		}
	free(r->of_kind.writebacks[0].target);
	r->of_kind.writebacks[0].target = strdup("layers.0.attention.q_cache");   /* no such input */
	free(r->of_kind.writebacks[7].target);
	r->of_kind.writebacks[7].target = strdup("user.0");                       /* a user input */
	set_dim(&buf[21]->type.tensor, 0, 2);   /* written back to itself: same shape */
	free(r->of_kind.writebacks[22].target);
	r->of_kind.writebacks[22].target = strdup("layers.21.attention.k_cache"); /* f32[4] to f32[2] */
	free(r->of_kind.writebacks[41].target);
	r->of_kind.writebacks[41].target = NULL;                                  /* no target */
	r->of_kind.writebacks[N - 1].kind = PR_WRITEBACK_INPUT;                   /* a buffer as input */
	int n = verify(p);
	if (n != 6)
		print_diags();
	cr_assert_eq(n, 6);
	static const char *const want[][2] = {
		{"E-INPUT", "\"layers.30.attention.k_cache\", like %b30"},
		{"E-WRITEBACK", "return value 0 is written back to buffer \"layers.0.attention.q_cache\", which names no input"},
		{"E-WRITEBACK", "return value 7 is written back to buffer \"user.0\", which is %u, a user input"},
		{"E-WRITEBACK", "return value 22, %b22 (f32[4]), is written back to buffer \"layers.21.attention.k_cache\" (%b21, f32[2])"},
		{"E-WRITEBACK", "return value 41 is written back to buffer \"\", which names no input"},
		{"E-WRITEBACK", "return value 63 is written back to input \"layers.63.attention.k_cache\", which is %b63, a buffer input"},
	};
	for (int i = 0; i < n; i++) {
		cr_assert_str_eq(diags.items[i].code, want[i][0], "%s", diags.items[i].message);
		cr_assert(strstr(diags.items[i].message, want[i][1]), "diagnostic %d: %s", i,
			  diags.items[i].message);
	}
	pr_program_free(p);
}

/* A return of many values has their nodes and use entries fetched ahead
 * (check_many_values): a value far down the list that is not the graph's is
 * still reported, as is an argument that names no value. */
Test(verify, many_returned_values_report_a_bad_one_far_down)
{
	pr_program *p = pr_program_new();
	pr_graph *g = method(p, "forward");
	pr_graph *other = method(p, "other");
	pr_node *stranger = input(other, "s", "f32[4]", PR_INPUT_USER, "s");
	ret(other, ARGS(V(stranger)));
	enum { N = 50 };
	pr_node *in[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "i%d", i);
		in[i] = input(g, name, "f32[4]", PR_INPUT_USER, name);
	}
	pr_arg *args = calloc(N, sizeof *args);
	for (int i = 0; i < N; i++)
		args[i] = V(in[i]);
	args[37] = V(stranger);
	args[44] = (pr_arg){.kind = PR_ARG_VALUE, .u.value = NULL};
	add(g, PR_NODE_RETURN, NULL, NULL, args, N);
	int n = verify(p);
	if (n != 3)
		print_diags();
	cr_assert_eq(n, 3);
	cr_assert_str_eq(diags.items[0].code, "E-UNDEFINED");
	cr_assert(strstr(diags.items[0].message, "reads %s, which is not a node of @forward"),
		  "%s", diags.items[0].message);
	cr_assert_str_eq(diags.items[1].code, "E-UNDEFINED");
	cr_assert(strstr(diags.items[1].message, "names no value"), "%s", diags.items[1].message);
	/* the stranger's use list names a reader in another graph */
	cr_assert_str_eq(diags.items[2].code, "E-USES");
	cr_assert_str_eq(diags.items[2].method, "other");
	pr_program_free(p);
}

/* ---- placement ----------------------------------------------------------- */

/* A placement error about a tensor that is read names that tensor and its size. */
static void expect_placement(pr_program *p, const char *node, int64_t bytes)
{
	int n = verify(p);
	if (n != 1)
		print_diags();
	cr_assert_eq(n, 1);
	cr_assert_str_eq(diags.items[0].code, "E-PLACEMENT", "%s", diags.items[0].message);
	cr_assert_str_eq(diags.items[0].node, node, "%s", diags.items[0].message);
	cr_assert_eq(diags.items[0].bytes, bytes);
	pr_program_free(p);
}

Test(verify, host_op_reads_a_device_tensor)
{
	example e = build_example();
	pr_node *s = pr_node_new(PR_NODE_OP, "s");
	s->of_kind.schema = e.add;
	set_type(s, "f32[2,3]");
	pr_node_set_args(s, ARGS(V(e.x), V(e.t)));   /* a host add of the device result */
	cr_assert(!pr_graph_insert_after(e.t, s));
	int n = verify(e.p);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(diags.items[0].code, "E-PLACEMENT");
	cr_assert_str_eq(diags.items[0].node, "t");
	cr_assert_eq(diags.items[0].bytes, 24);
	cr_assert(strstr(diags.items[0].message, "%s reads %t"), "names the reader: %s",
		  diags.items[0].message);
	pr_program_free(e.p);
}

Test(verify, host_op_reads_a_device_tensor_in_a_list)
{
	pr_program *p = pr_program_new();
	pr_schema *cat = op(p, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
	pr_schema *h2d = op(p, "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}");
	pr_graph *g = method(p, "forward");
	pr_node *x = input(g, "x", "f32[2,3]", PR_INPUT_USER, "x");
	pr_node *xc = call(g, "xc", "f32[2,3]@cuda:1", h2d, ARGS(V(x)));
	pr_node *y = call(g, "y", "f32[4,3]", cat, ARGS(L(2, args_dup((pr_arg[]){V(x), V(xc)}, 2))));
	ret(g, ARGS(V(y)));
	expect_placement(p, "xc", 24);
}

Test(verify, device_delegate_reads_a_host_tensor)
{
	example e = build_example();
	pr_arg_set_value(&e.dl->args[1], e.w);
	expect_placement(e.p, "w", 24);
}

Test(verify, device_delegate_reads_another_device)
{
	example e = build_example();
	cr_assert(tu_set_device(&e.wc->type.tensor, "cuda:1"));
	expect_placement(e.p, "w_h2d_cuda0", 24);
}

Test(verify, device_delegate_result_on_the_host)
{
	example e = build_example();
	pr_spec_set_device(&e.dl->type.elems[0], pr_device_host());
	pr_spec_set_device(&e.t->type.tensor, pr_device_host());
	/* and the d2h copy of %t now reads a host tensor */
	int n = verify(e.p);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(diags.items[0].code, "E-PLACEMENT");
	cr_assert_str_eq(diags.items[0].node, "d");
	cr_assert_str_eq(diags.items[1].node, "t");
	pr_program_free(e.p);
}

Test(verify, getitem_of_a_device_result_on_the_host)
{
	example e = build_example();
	pr_spec_set_device(&e.t->type.tensor, pr_device_host());
	/* its d2h copy now reads a host tensor too */
	int n = verify(e.p);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(diags.items[0].code, "E-PLACEMENT");
	cr_assert_str_eq(diags.items[0].node, "t");
	cr_assert_str_eq(diags.items[1].code, "E-PLACEMENT");
	cr_assert_str_eq(diags.items[1].node, "t");
	pr_program_free(e.p);
}

static example host_delegate_example(const char *target)
{
	example e = build_example();
	if (target)
		pr_delegate_set_spec(e.d, "target_device", target);
	else {
		/* no target_device at all (there is no call to drop a spec) */
		for (int i = 0; i < e.d->n_specs; i++) {
			free(e.d->specs[i].key);
			free(e.d->specs[i].value);
		}
		e.d->n_specs = 0;
	}
	return e;
}

Test(verify, host_delegate_reads_a_device_tensor)
{
	example e = host_delegate_example(NULL);
	/* the calls still feed it cuda:0 copies and give cuda:0 results */
	int n = verify(e.p);
	cr_assert_eq(n, 3, "two device arguments and a device result");
	cr_assert_str_eq(diags.items[0].node, "x_h2d_cuda0");
	cr_assert_str_eq(diags.items[1].node, "w_h2d_cuda0");
	cr_assert_str_eq(diags.items[2].node, "d");
	for (int i = 0; i < 3; i++)
		cr_assert_str_eq(diags.items[i].code, "E-PLACEMENT");
	pr_program_free(e.p);
}

Test(verify, cpu_target_delegate_is_host_code)
{
	example e = host_delegate_example("CPU");
	pr_arg_set_value(&e.dl->args[0], e.x);
	pr_arg_set_value(&e.dl->args[1], e.w);
	pr_spec_set_device(&e.dl->type.elems[0], pr_device_host());
	pr_spec_set_device(&e.t->type.tensor, pr_device_host());
	/* the d2h copy now reads a host tensor: that is the one error left */
	expect_placement(e.p, "t", 24);
}

Test(verify, unparsable_target_device_is_left_to_the_passes)
{
	example e = host_delegate_example("not a device!");
	expect_clean(e.p);
}

/* A program as the user wrote it: no copies, host results. */
static example unplaced_example(void)
{
	example e = build_example();
	pr_arg_set_value(&e.dl->args[0], e.x);
	pr_arg_set_value(&e.dl->args[1], e.w);
	pr_arg_set_value(&e.th->args[0], e.x);  /* drop the d2h copy's read of %t */
	pr_arg_set_value(&e.r->args[0], e.t);
	pr_node_replace_all_uses(e.th, e.x);
	pr_graph_erase(e.th);
	pr_graph_erase(e.xc);
	pr_graph_erase(e.wc);
	pr_spec_set_device(&e.dl->type.elems[0], pr_device_host());
	pr_spec_set_device(&e.t->type.tensor, pr_device_host());
	return e;
}

Test(verify, unplaced_device_delegate_may_read_host_tensors)
{
	example e = unplaced_example();
	expect_clean(e.p);
}

Test(verify, unplaced_device_delegate_may_read_its_device_constant)
{
	example e = unplaced_example();
	/* a device-constants pass tagged %w before propagate-device ran */
	cr_assert(tu_set_device(&e.w->type.tensor, "cuda:0"));
	expect_clean(e.p);
}

Test(verify, unplaced_device_delegate_reads_another_device)
{
	example e = unplaced_example();
	cr_assert(tu_set_device(&e.w->type.tensor, "cuda:1"));
	expect_placement(e.p, "w", 24);
}

Test(verify, h2d_copy_reads_a_device_tensor)
{
	example e = build_example();
	pr_arg_set_value(&e.wc->args[0], e.xc);
	expect_placement(e.p, "x_h2d_cuda0", 24);
}

Test(verify, h2d_copy_produces_a_host_tensor)
{
	example e = build_example();
	pr_arg_set_value(&e.dl->args[0], e.x);  /* so that only the copy is wrong */
	pr_spec_set_device(&e.xc->type.tensor, pr_device_host());
	int n = verify(e.p);
	cr_assert_eq(n, 2, "the copy's result, and the delegate reading %%x");
	cr_assert_str_eq(diags.items[0].node, "x_h2d_cuda0");
	pr_program_free(e.p);
}

Test(verify, d2h_copy_reads_a_host_tensor)
{
	example e = build_example();
	pr_arg_set_value(&e.th->args[0], e.x);
	expect_placement(e.p, "x", 24);
}

Test(verify, d2h_copy_produces_a_device_tensor)
{
	example e = build_example();
	pr_spec_set_device(&e.th->type.tensor, pr_spec_device(&e.t->type.tensor));
	pr_spec_set_device(&e.r->type.tensor, pr_spec_device(&e.t->type.tensor));
	/* then relu_ and accumulate read device tensors too: three errors, the
	 * first the copy's */
	int n = verify(e.p);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(diags.items[0].code, "E-PLACEMENT");
	cr_assert_str_eq(diags.items[0].node, "t_d2h");
	cr_assert(strstr(diags.items[0].message, "produces a host tensor"), "%s",
		  diags.items[0].message);
	pr_program_free(e.p);
}

Test(verify, inplace_result_with_another_memory)
{
	example e = build_example();
	e.r->type.tensor.has_mem = true;
	e.r->type.tensor.mem_arena_id = PR_DEVICE_ID_HOST;
	e.r->type.tensor.mem_offset = 64;
	expect_one(e.p, "E-PLACEMENT", "r");
}

Test(verify, inplace_result_with_another_layout)
{
	example e = build_example();
	pr_spec_set_strides(&e.r->type.tensor, (const int64_t[]){1, 2});
	expect_one(e.p, "E-PLACEMENT", "r");
}

Test(verify, host_op_placement_is_not_checked_in_a_delegate_body)
{
	example e = build_example();
	pr_node *a = e.d->body->first;
	cr_assert(tu_set_device(&a->type.tensor, "cuda:0"));
	/* the body's add reads a cuda:0 tensor: fine, the body runs on cuda:0 */
	expect_clean(e.p);
}

Test(verify, errors_carry_pass_and_method)
{
	example e = build_example();
	e.t->of_kind.index = 3;
	pr_diags_free(&diags);
	pr_diags_init(&diags, "t.pg");
	cr_assert_eq(pr_verify(e.p, &diags, "copy-reuse"), 1);
	cr_assert_str_eq(diags.items[0].pass, "copy-reuse");
	cr_assert_str_eq(diags.items[0].method, "forward");
	cr_assert_eq(diags.items[0].bytes, 24);
	cr_assert(strstr(diags.items[0].message, "%t"), "%s", diags.items[0].message);
	pr_program_free(e.p);
}

Test(verify, several_errors_are_all_reported)
{
	example e = build_example();
	e.t->of_kind.index = 3;
	e.x->of_kind.input->kind = PR_INPUT_POSITIONAL;
	free(e.ret->of_kind.writebacks[1].target);
	e.ret->of_kind.writebacks[1].target = strdup("nope");
	cr_assert_eq(verify(e.p), 3);
	pr_program_free(e.p);
}

/* ---- text programs ------------------------------------------------------- */

Test(verify, parsed_interfaces_example_is_clean)
{
	pr_program *p = tu_parse(
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
		"op aten::view(Tensor(a) self, int[] size) -> Tensor(a)\n"
		"op aten::sym_size.int(Tensor self, int dim) -> int {shape_only}\n"
		"op custom::accumulate(Tensor(a!) x, Tensor y) -> ()\n"
		"delegate @add0 backend=\"CudaBackend\" target_device=\"cuda:0\" {\n"
		"  %a: f32[2,3] = input\n"
		"  %b: f32[2,3] = input\n"
		"  %c: f32[2,3] = aten::add.Tensor(%a, %b)\n"
		"  return %c\n"
		"}\n"
		"method @forward {\n"
		"  %x: f32[2,3] = input user \"x\"\n"
		"  %w: f32[2,3]{strides=[1,2]} = input parameter \"weight\" data=random(7)\n"
		"  %k: f32[4,3] = input buffer \"cache\" data=zeros\n"
		"  %d: (f32[2,3]) = delegate @add0(%x, %w)\n"
		"  %t: f32[2,3] = getitem %d, 0\n"
		"  %r: f32[2,3] = aten::relu_(%t)\n"
		"  %n: int = aten::sym_size.int(%r, 0)\n"
		"  return %r, %k -> buffer \"cache\"\n"
		"}\n");
	/* the text example is not placed yet: its cuda:0 delegate reads host tensors */
	expect_clean(p);
}

/* The same rules through the text format, as a user meets them. */
static void expect_text(const char *method_body, const char *code, const char *node)
{
	char text[4096];
	snprintf(text, sizeof text,
		 "passrun 1\n"
		 "op aten::relu(Tensor self) -> Tensor\n"
		 "op aten::sym_size.int(Tensor self, int dim) -> int {shape_only}\n"
		 "op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"
		 "delegate @two target_device=\"cuda:0\" {\n"
		 "  %%a: f32[2,3] = input\n"
		 "  return %%a, %%a\n"
		 "}\n"
		 "method @forward {\n"
		 "  %%x: f32[2,3] = input user \"x\"\n"
		 "  %%k: f32[2,3] = input buffer \"cache\" data=zeros\n"
		 "%s"
		 "}\n", method_body);
	pr_program *p = tu_parse(text);
	expect_one(p, code, node);
}

Test(verify, text_host_op_reads_a_device_input)
{
	expect_text("  %xc: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		    "  %n: int = aten::sym_size.int(%xc, 0)\n"   /* fine: shape_only */
		    "  %y: f32[2,3] = aten::relu(%xc)\n"
		    "  return %y\n", "E-PLACEMENT", "xc");
	cr_assert(strstr(diags.items[0].message, "%y reads %xc"), "%s", diags.items[0].message);
}

Test(verify, text_writeback_to_an_unknown_buffer)
{
	expect_text("  return %x, %k -> buffer \"cahce\"\n", "E-WRITEBACK", "return");
	cr_assert(strstr(diags.items[0].message, "cahce"), "%s", diags.items[0].message);
}

Test(verify, text_writeback_to_an_input_that_is_a_buffer)
{
	expect_text("  return %x, %k -> input \"cache\"\n", "E-WRITEBACK", "return");
	cr_assert(strstr(diags.items[0].message, "buffer input"), "%s", diags.items[0].message);
}

Test(verify, text_getitem_out_of_range)
{
	expect_text("  %xc: f32[2,3]@cuda:0 = et_copy::_h2d_copy(%x)\n"
		    "  %d: (f32[2,3]@cuda:0, f32[2,3]@cuda:0) = delegate @two(%xc)\n"
		    "  %t: f32[2,3]@cuda:0 = getitem %d, 2\n"
		    "  return %t\n", "E-GETITEM", "t");
}

Test(verify, text_placed_device_delegate_reads_a_host_tensor)
{
	expect_text("  %d: (f32[2,3]@cuda:0, f32[2,3]@cuda:0) = delegate @two(%x)\n"
		    "  %t: f32[2,3]@cuda:0 = getitem %d, 0\n"
		    "  return %t\n", "E-PLACEMENT", "x");
}

Test(verify, text_delegate_call_of_the_wrong_size)
{
	expect_text("  %d: (f32[2,3]) = delegate @two(%x)\n"
		    "  %t: f32[2,3] = getitem %d, 0\n"
		    "  return %t\n", "E-DELEGATE", "d");
}

/* ---- performance ------------------------------------------------------- */

/* The verifier checks nodes while it walks the links, some nodes behind:
 * a break far down a long method is still all that is reported, not the
 * findings about the nodes before it. */
Test(verify, broken_link_far_down_is_all_that_is_reported)
{
	pr_program *p = pr_program_new();
	pr_schema *add = op(p, "aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	pr_graph *g = method(p, "forward");
	pr_node *x = input(g, "x", "f32[4]", PR_INPUT_USER, "x");
	input(g, "y", "f32[4]", PR_INPUT_USER, "x");   /* an E-INPUT, before the break */
	pr_node *prev = x, *bad = NULL;
	char name[32];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof name, "v%d", i);
		prev = call(g, name, "f32[4]", add, ARGS(V(prev), V(x)));
		if (i == 80)
			bad = prev;
	}
	ret(g, ARGS(V(prev)));
	pr_node *was = bad->prev;
	bad->prev = bad;
	int n = verify(p);
	bad->prev = was;
	if (n != 1)
		print_diags();
	cr_assert_eq(n, 1);
	cr_assert_str_eq(diags.items[0].code, "E-STRUCTURE");
	cr_assert_str_eq(diags.items[0].node, "v80");
	pr_program_free(p);
}

/* The unplaced example with an h2d copy after the delegate call, next to it
 * or after many nodes (filler of them before the copy). */
static example unplaced_with_copy_after(int filler)
{
	example e = unplaced_example();
	pr_node *pos = e.dl;
	char name[32];
	for (int i = 0; i < filler; i++) {
		snprintf(name, sizeof name, "f%d", i);
		pr_node *f = pr_node_new(PR_NODE_OP, name);
		set_type(f, "f32[2,3]");
		f->of_kind.schema = e.add;
		pr_node_set_args(f, ARGS(V(e.x), V(e.x)));
		cr_assert(!pr_graph_insert_after(pos, f));
		pos = f;
	}
	pr_node *c = pr_node_new(PR_NODE_OP, "late_copy");
	set_type(c, "f32[2,3]@cuda:0");
	c->of_kind.schema = e.h2d;
	pr_node_set_args(c, ARGS(V(e.x)));
	cr_assert(!pr_graph_insert_after(pos, c));
	return e;
}

/* A copy anywhere in the method makes its device delegate calls placed ones,
 * however far after the call it comes: the same findings either way. */
Test(verify, copy_far_after_a_device_delegate_call_places_it)
{
	example near = unplaced_with_copy_after(0);
	int n = verify(near.p);
	cr_assert(n > 0, "a placed device delegate reading host tensors");
	pr_diags first = diags;
	pr_diags_init(&diags, "test.pg");
	example far = unplaced_with_copy_after(100);
	cr_assert_eq(verify(far.p), n);
	for (int i = 0; i < n; i++) {
		cr_assert_str_eq(diags.items[i].code, first.items[i].code);
		cr_assert_str_eq(diags.items[i].code, "E-PLACEMENT");
		cr_assert_str_eq(diags.items[i].node, first.items[i].node);
		cr_assert_str_eq(diags.items[i].message, first.items[i].message);
	}
	pr_diags_free(&first);
	pr_program_free(near.p);
	pr_program_free(far.p);
}

/* Speed is measured in bench/, not here: this checks that a value with a
 * great many readers verifies clean (the use-list check counts, it does not
 * search). */
Test(verify, a_value_read_by_200000_nodes_verifies_clean)
{
	pr_program *p = pr_program_new();
	pr_schema *add = op(p, "aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	pr_graph *g = method(p, "forward");
	pr_node *x = input(g, "x", "f32[4]", PR_INPUT_USER, "x");
	pr_node *prev = x;
	char name[32];
	for (int i = 0; i < 200000; i++) {
		snprintf(name, sizeof name, "v%d", i);
		prev = call(g, name, "f32[4]", add, ARGS(V(prev), V(x)));
	}
	ret(g, ARGS(V(prev)));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int n = verify(p);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	cr_assert_eq(n, 0);
	cr_assert_eq(x->n_uses, 200001);
	cr_log_info("verified 200,002 nodes in %.3f s", s);
	pr_program_free(p);
}

/* ---- E-VIEW: strided views inside their base's storage ------------------- */

static int view_errors(const char *call, const char **msg)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "passrun 1\n"
		 "op aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
		 "SymInt? storage_offset=None) -> Tensor(a)\n"
		 "op aten::t(Tensor(a) self) -> Tensor(a)\n"
		 "method @forward {\n"
		 "  %%x: f32[2,3] = input user \"x\"\n"
		 "  %%xt: f32[3,2] = aten::t(%%x)\n"
		 "  %s\n"
		 "  return %%v\n"
		 "}\n", call);
	pr_program *p = tu_parse(text);
	static pr_diags d;
	pr_diags_init(&d, "view.pg");
	int errors = pr_verify(p, &d, "verifier");
	static char first[512];
	snprintf(first, sizeof first, "%s", d.n ? d.items[0].message : "");
	*msg = first;
	for (int i = 0; i < d.n; i++)
		cr_assert_str_eq(d.items[i].code, "E-VIEW", "%s", d.items[i].message);
	pr_diags_free(&d);
	pr_program_free(p);
	return errors;
}

Test(verify, E_VIEW_strided_view_inside_its_storage_verifies)
{
	const char *msg;
	cr_assert_eq(view_errors("%v: f32[2] = aten::as_strided(%x, [2], [1], 4)", &msg), 0, "%s", msg);
	cr_assert_eq(view_errors("%v: f32[3,2] = aten::as_strided(%x, [3, 2], [1, 3])", &msg), 0, "%s", msg);
	cr_assert_eq(view_errors("%v: f32[0] = aten::as_strided(%x, [0], [1], 99)", &msg), 0,
		     "an empty view reaches nothing: %s", msg);
	cr_assert_eq(view_errors("%v: f32[6] = aten::as_strided(%xt, [6], [1], 0)", &msg), 0,
		     "a view of a view is bounded by the root's storage: %s", msg);
	cr_assert_eq(view_errors("%v: f32[9] = aten::as_strided(%xt, [9], [1])", &msg), 0,
		     "without an offset, a view of a view starts at run time: %s", msg);
}

Test(verify, E_VIEW_strided_view_past_its_storage_is_refused)
{
	const char *msg;
	cr_assert_eq(view_errors("%v: f32[2] = aten::as_strided(%x, [2], [1], 5)", &msg), 1);
	cr_assert(strstr(msg, "%v is a strided view that reaches element 6 of the storage of %x, "
			      "which holds 6 elements"), "%s", msg);
	cr_assert_eq(view_errors("%v: f32[2] = aten::as_strided(%xt, [2], [1], 100000)", &msg), 1,
		     "the root's storage bounds a view of a view");
	cr_assert_eq(view_errors("%v: f32[2,2] = aten::as_strided(%x, [2, 2], [4, 2])", &msg), 1, "%s", msg);
	cr_assert_eq(view_errors("%v: f32[2] = aten::as_strided(%x, [2], [-1], 1)", &msg), 1);
	cr_assert(strstr(msg, "a negative stride"), "%s", msg);
	cr_assert_eq(view_errors("%v: f32[2] = aten::as_strided(%x, [2], [1], -1)", &msg), 1);
	cr_assert(strstr(msg, "a negative storage offset"), "%s", msg);
	cr_assert_eq(view_errors("%v: f32[2,2] = aten::as_strided(%x, [2, 2], "
				 "[4611686018427387904, 4611686018427387904], 0)", &msg), 1);
	cr_assert(strstr(msg, "overflows int64"), "%s", msg);
}
