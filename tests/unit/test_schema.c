/* test_schema.c: the op-schema parser (PyTorch function-schema syntax). */
#include <criterion/criterion.h>
#include <string.h>

#include "passrun/program.h"

static pr_schema *parse_ok(const char *text)
{
	pr_schema *s = NULL;
	size_t col = 99;
	pr_err *e = pr_schema_parse(text, strlen(text), &s, &col);
	cr_assert_null(e, "'%s' did not parse: %s (col %zu)", text, e ? pr_err_message(e) : "", col);
	cr_assert_not_null(s);
	return s;
}

/* Asserts the schema fails at 0-based column col with a message containing msg. */
static void parse_bad(const char *text, size_t col, const char *msg)
{
	pr_schema *s = (pr_schema *)1;
	size_t got = 12345;
	pr_err *e = pr_schema_parse(text, strlen(text), &s, &got);
	cr_assert_not_null(e, "'%s' parsed but should not", text);
	cr_expect_null(s);
	cr_expect_eq(got, col, "'%s': error at column %zu, expected %zu (%s)", text, got, col,
		     pr_err_message(e));
	cr_expect(strstr(pr_err_message(e), msg), "'%s': message '%s' lacks '%s'", text,
		  pr_err_message(e), msg);
	pr_err_free(e);
}

Test(schema, simple_op)
{
	pr_schema *s = parse_ok("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
	cr_expect_str_eq(s->name, "aten::add");
	cr_expect_str_eq(s->overload, "Tensor");
	cr_expect_str_eq(s->full_name, "aten::add.Tensor");
	cr_assert_eq(s->n_args, 3);
	cr_expect_str_eq(s->args[0].type, "Tensor");
	cr_expect_str_eq(s->args[0].name, "self");
	cr_expect(s->args[0].is_tensor);
	cr_expect(!s->args[1].kwarg_only);
	cr_expect(s->args[2].kwarg_only);
	cr_expect_str_eq(s->args[2].type, "Scalar");
	cr_expect(!s->args[2].is_tensor);
	cr_expect_str_eq(s->args[2].default_value, "1");
	cr_assert_eq(s->n_returns, 1);
	cr_expect(!s->returns_tuple);
	cr_expect_str_eq(s->returns[0].type, "Tensor");
	cr_expect_str_eq(s->text, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
	cr_expect(!s->shape_only && !s->h2d && !s->d2h);
	pr_schema_free(s);
}

Test(schema, no_overload)
{
	pr_schema *s = parse_ok("aten::relu(Tensor self) -> Tensor");
	cr_expect_str_eq(s->name, "aten::relu");
	cr_expect_str_eq(s->overload, "");
	cr_expect_str_eq(s->full_name, "aten::relu");
	pr_schema_free(s);
}

Test(schema, alias_annotations)
{
	pr_schema *s = parse_ok("my::op(Tensor(a) x, Tensor(b!) y, Tensor(c -> *) z, Tensor(d! -> d|e) w, "
				"Tensor(a!)[] outs) -> Tensor(a)");
	cr_assert_eq(s->n_args, 5);
	cr_expect_str_eq(s->args[0].alias.set, "a");
	cr_expect(!s->args[0].alias.write);
	cr_expect_str_eq(s->args[1].alias.set, "b");
	cr_expect(s->args[1].alias.write);
	cr_expect_str_eq(s->args[2].alias.set, "c");
	cr_expect(!s->args[2].alias.write);
	cr_expect_str_eq(s->args[3].alias.set, "d");
	cr_expect(s->args[3].alias.write);
	cr_expect_str_eq(s->args[4].type, "Tensor[]", "the type is kept without the annotation");
	cr_expect(!s->args[4].is_tensor, "a list is not a tensor");
	cr_expect(s->args[4].alias.write);
	cr_expect(!pr_schema_arg_writes(s, 0));
	cr_expect(pr_schema_arg_writes(s, 1));
	cr_expect(pr_schema_arg_writes(s, 3));
	cr_expect(!pr_schema_arg_writes(s, 5));
	cr_expect(!pr_schema_arg_writes(s, -1));
	cr_expect_eq(pr_schema_return_alias(s, 0), 0);
	cr_expect_eq(pr_schema_return_alias(s, 1), -1);
	cr_expect_str_eq(s->text, "my::op(Tensor(a) x, Tensor(b!) y, Tensor(c -> *) z, Tensor(d! -> d|e) w, "
				  "Tensor(a!)[] outs) -> Tensor(a)");
	pr_schema_free(s);
}

Test(schema, in_place_return_aliases_its_argument)
{
	pr_schema *s = parse_ok("aten::add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
	cr_expect_eq(pr_schema_return_alias(s, 0), 0);
	cr_expect(s->returns[0].alias.write);
	pr_schema_free(s);
	s = parse_ok("aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
	cr_expect_eq(pr_schema_return_alias(s, 0), -1);
	pr_schema_free(s);
}

Test(schema, types)
{
	pr_schema *s = parse_ok("x::t(Tensor? a, Tensor[] b, int c, int[] d, int[2] e, SymInt f, SymInt[] g, "
				"float h, bool i, str j, Scalar k, ScalarType? l, Layout? m, Device? n, "
				"MemoryFormat? o, Generator? p, int[]? q, Tensor?[] r) -> ()");
	static const char *types[] = { "Tensor?", "Tensor[]", "int", "int[]", "int[2]", "SymInt", "SymInt[]",
				       "float", "bool", "str", "Scalar", "ScalarType?", "Layout?", "Device?",
				       "MemoryFormat?", "Generator?", "int[]?", "Tensor?[]" };
	cr_assert_eq(s->n_args, 18);
	for (int i = 0; i < 18; i++)
		cr_expect_str_eq(s->args[i].type, types[i], "arg %d", i);
	cr_expect(s->args[0].is_tensor, "Tensor? is a tensor");
	cr_expect(!s->args[17].is_tensor);
	cr_expect(s->returns_tuple);
	cr_expect_eq(s->n_returns, 0);
	pr_schema_free(s);
}

Test(schema, returns)
{
	pr_schema *s = parse_ok("aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
	cr_expect(s->returns_tuple);
	cr_assert_eq(s->n_returns, 2);
	cr_expect_str_eq(s->returns[0].name, "values");
	cr_expect_str_eq(s->returns[1].name, "indices");
	cr_expect_str_eq(s->args[2].default_value, "False");
	pr_schema_free(s);

	s = parse_ok("aten::split(Tensor(a -> *) self, int size) -> Tensor(a)[]");
	cr_expect(!s->returns_tuple);
	cr_expect_str_eq(s->returns[0].type, "Tensor[]");
	cr_expect_eq(pr_schema_return_alias(s, 0), 0);
	pr_schema_free(s);

	s = parse_ok("aten::sym_size.int(Tensor self, int dim) -> int");
	cr_expect_str_eq(s->returns[0].type, "int");
	cr_expect(!s->returns[0].is_tensor);
	pr_schema_free(s);

	s = parse_ok("x::two(Tensor a) -> (Tensor, Tensor)");
	cr_expect_eq(s->n_returns, 2);
	cr_expect_null(s->returns[0].name);
	pr_schema_free(s);
}

Test(schema, traits)
{
	pr_schema *s = parse_ok("aten::sym_size.int(Tensor self, int dim) -> int {shape_only}");
	cr_expect(s->shape_only);
	cr_assert_eq(s->n_traits, 1);
	cr_expect_str_eq(s->traits[0], "shape_only");
	pr_schema_free(s);

	s = parse_ok("et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}");
	cr_expect(s->h2d && !s->d2h);
	pr_schema_free(s);
	s = parse_ok("et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}");
	cr_expect(s->d2h && !s->h2d);
	pr_schema_free(s);

	s = parse_ok("x::y(Tensor self) -> Tensor {  pure ,shape_only,  my_trait2 }");
	cr_assert_eq(s->n_traits, 3);
	cr_expect_str_eq(s->traits[0], "pure", "unknown traits are kept");
	cr_expect_str_eq(s->traits[2], "my_trait2");
	cr_expect(s->shape_only);
	cr_expect_str_eq(s->text, "x::y(Tensor self) -> Tensor {pure, shape_only, my_trait2}");
	pr_schema_free(s);
}

Test(schema, canonical_text_is_a_fixed_point)
{
	const char *messy = "  aten::foo.bar (  Tensor(a! ->a|b)  self ,int[] size = [1, 2] ,  * ,"
			    " str mode = \"x, y\" )->( Tensor(a!) out ,int n ){h2d}  ";
	pr_schema *s = parse_ok(messy);
	cr_expect_str_eq(s->text, "aten::foo.bar(Tensor(a! -> a|b) self, int[] size=[1, 2], *, "
				  "str mode=\"x, y\") -> (Tensor(a!) out, int n) {h2d}");
	cr_expect_str_eq(s->args[2].default_value, "\"x, y\"");
	pr_schema *again = parse_ok(s->text);
	cr_expect_str_eq(again->text, s->text);
	pr_schema_free(again);
	pr_schema_free(s);
}

Test(schema, empty_args)
{
	pr_schema *s = parse_ok("x::make() -> Tensor");
	cr_expect_eq(s->n_args, 0);
	cr_expect_str_eq(s->text, "x::make() -> Tensor");
	pr_schema_free(s);
}

Test(schema, errors_say_what_was_expected_and_where)
{
	parse_bad("add(Tensor self) -> Tensor", 3, "expected '::' after the namespace");
	parse_bad("aten::(Tensor self) -> Tensor", 6, "expected an op name after '::'");
	parse_bad("aten::add.(Tensor self) -> Tensor", 10, "expected an overload name");
	parse_bad("aten::add Tensor self) -> Tensor", 10, "expected '('");
	parse_bad("aten::add(Tesnor self) -> Tensor", 10, "expected a type");
	parse_bad("aten::add(Tensor) -> Tensor", 16, "expected an argument name");
	parse_bad("aten::add(Tensor self Tensor other) -> Tensor", 22, "expected ',' or ')' after an argument");
	parse_bad("aten::add(Tensor self)", 22, "expected '->', found end of schema");
	parse_bad("aten::add(Tensor self) -> ", 26, "expected a type");
	parse_bad("aten::add(Tensor self) -> Tensor extra stuff", 39, "expected '{' (traits)");
	parse_bad("aten::add(Tensor self) -> Tensor {1}", 34, "expected a trait name");
	parse_bad("aten::add(Tensor self) -> Tensor {a", 35, "expected '}'");
	parse_bad("aten::add(Tensor self) -> Tensor {a} x", 37, "expected the end of the schema");
	parse_bad("aten::add(Tensor(a self) -> Tensor", 19, "expected ')'");
	parse_bad("aten::add(Tensor(1) self) -> Tensor", 17, "expected an alias set name");
	parse_bad("aten::add(Tensor(abcdefghijklmnopq!) self) -> Tensor", 17, "at most 15 characters");
	parse_bad("aten::add(int[x] self) -> Tensor", 14, "expected a list size or ']'");
	parse_bad("aten::add(int self=) -> Tensor", 19, "expected a default value");
	parse_bad("aten::add(str s=\"abc) -> Tensor", 31, "closing quote");
	parse_bad("aten::sum(Tensor self, *, ScalarType? dtype=Non#) -> Tensor", 47,
		  "without control characters or an unquoted '#'");
	parse_bad("aten::add(str s=\"a\nb\") -> Tensor", 18, "without control characters");
	parse_bad("aten::add(*, *, Tensor x) -> Tensor", 13, "a second '*'");
	parse_bad("aten::add(Tensor x) -> (Tensor x Tensor)", 33, "expected ',' or ')' in the returns");
	parse_bad("", 0, "expected an op name");
}
