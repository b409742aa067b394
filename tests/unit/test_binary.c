/* test_binary.c: the binary format (.bin) and program files.
 *
 * Text -> binary -> text is lossless for every .pg under examples/ and tests/
 * (found at run time, so new files are covered as they land); the writer is
 * deterministic; a borrowed load points blobs and constant bytes into the
 * buffer at 64-byte-aligned places holding the materialized bytes; files are
 * loaded by content and saved atomically. */
#define _GNU_SOURCE   /* nftw */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "passrun/data.h"
#include "passrun/format.h"
#include "passrun/strbuf.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------- */

static char **found;
static int n_found, cap_found;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	size_t n = strlen(path);
	if (flag == FTW_F && n > 3 && !strcmp(path + n - 3, ".pg")) {
		if (n_found == cap_found) {
			cap_found = cap_found ? 2 * cap_found : 64;
			found = realloc(found, (size_t)cap_found * sizeof *found);
		}
		found[n_found++] = strdup(path);
	}
	return 0;
}

static void find_programs(void)
{
	n_found = 0;
	nftw(PASSRUN_SOURCE_DIR "/examples", collect, 16, FTW_PHYS);
	nftw(PASSRUN_SOURCE_DIR "/tests", collect, 16, FTW_PHYS);
}

static void free_found(void)
{
	for (int i = 0; i < n_found; i++)
		free(found[i]);
	free(found);
	found = NULL;
	n_found = cap_found = 0;
}

/* Parses a file; NULL (and no failure) when it is not a valid program, such
 * as the malformed-text corpus. */
static pr_program *parse_file(const char *path)
{
	size_t len;
	char *text = tu_read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s", path);
	pr_program *p = NULL;
	pr_err *e = pr_text_parse(path, text, len, &p);
	free(text);
	if (e) {
		pr_err_free(e);
		return NULL;
	}
	return p;
}

static void write_ok(const pr_program *p, uint8_t **bin, size_t *len, const char *what)
{
	pr_err *e = pr_binary_write(p, bin, len);
	cr_assert_null(e, "%s: binary write failed: %s", what, e ? pr_err_message(e) : "");
}

static pr_program *load_ok(const uint8_t *bin, size_t len, bool borrow, const char *what)
{
	pr_program *q = NULL;
	pr_err *e = pr_binary_load(what, bin, len, borrow, &q);
	cr_assert_null(e, "%s: binary load failed: %s", what, e ? pr_err_message(e) : "");
	return q;
}

static char *print(const pr_program *p)
{
	size_t n;
	return pr_text_print(p, &n);
}

/* ---- round trips --------------------------------------------------------- */

/* p written and loaded back (copied) prints as p does, and its text holds
 * want (what the test is about); frees p. */
static void expect_same_text_after_round_trip(pr_program *p, const char *what, const char *want)
{
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, what);
	pr_program *q = load_ok(bin, len, false, what);
	char *a = print(p), *b = print(q);
	cr_expect_str_eq(b, a);
	cr_expect(strstr(a, want), "%s: the test wants %s in the text: %s", what, want, a);
	free(a);
	free(b);
	free(bin);
	pr_program_free(q);
	pr_program_free(p);
}


/* a and b hold n arguments of the same kinds and values, lists item by
 * item with their counts, a value by its name. */
static void expect_same_args(const pr_arg *a, const pr_arg *b, int n)
{
	for (int i = 0; i < n; i++) {
		cr_assert_eq(a[i].kind, b[i].kind, "argument %d's kind", i);
		if (a[i].kind == PR_ARG_LIST) {
			cr_assert_eq(a[i].n_items, b[i].n_items, "list %d's count", i);
			expect_same_args(a[i].u.items, b[i].u.items, a[i].n_items);
		} else if (a[i].kind == PR_ARG_VALUE) {
			cr_expect_str_eq(a[i].u.value->name, b[i].u.value->name);
		} else if (a[i].kind == PR_ARG_INT) {
			cr_expect_eq(a[i].u.i, b[i].u.i);
		}
	}
}

/* A list's item count sits where a value keeps its use index: both survive
 * the trip, lists inside lists included, and each use still names a slot
 * its reader holds. */
Test(binary, lists_keep_their_items_and_counts_through_a_round_trip)
{
	pr_program *p = parse_file(PASSRUN_SOURCE_DIR "/tests/text/args.pg");
	cr_assert_not_null(p);
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "args.pg");
	pr_program *q = load_ok(bin, len, false, "args.pg");
	pr_node *m = p->methods[0]->first, *n = q->methods[0]->first;
	for (; m && n; m = m->next, n = n->next) {
		cr_assert_eq(m->n_args, n->n_args);
		expect_same_args(m->args, n->args, m->n_args);
		cr_assert_eq(n->n_uses, m->n_uses);
		for (int i = 0; i < n->n_uses; i++)
			cr_expect_eq(n->uses[i].arg->u.value, n, "a use of %%%s reads it", n->name);
	}
	cr_assert(!m && !n, "as many nodes");
	pr_node *b = pr_graph_find(q->methods[0], "b");
	cr_assert_eq(b->args[7].n_items, 4);
	cr_expect_eq(b->args[7].u.items[0].n_items, 2);
	cr_expect_eq(b->args[7].u.items[0].u.items[1].n_items, 2);
	cr_expect_eq(b->args[7].u.items[1].n_items, 0);
	pr_node *a = pr_graph_find(q->methods[0], "a");
	int in_lists = 0;
	for (int i = 0; i < a->n_uses; i++)
		in_lists += pr_use_user(&a->uses[i]) == b && a->uses[i].arg != &b->args[0];
	cr_expect_eq(in_lists, 2, "%%b reads %%a twice in its list");
	free(bin);
	pr_program_free(q);
	pr_program_free(p);
}


Test(binary, round_trip_of_every_program_gives_identical_text)
{
	find_programs();
	int tried = 0;
	for (int i = 0; i < n_found; i++) {
		pr_program *p = parse_file(found[i]);
		if (!p)
			continue;
		tried++;
		uint8_t *bin;
		size_t len;
		write_ok(p, &bin, &len, found[i]);
		char *want = print(p);
		for (int borrow = 0; borrow <= 1; borrow++) {
			pr_program *q = load_ok(bin, len, borrow, found[i]);
			char *got = print(q);
			cr_expect_str_eq(got, want, "%s: text differs after a binary round trip (borrow=%d)",
					 found[i], borrow);
			free(got);
			pr_program_free(q);
		}
		free(want);
		free(bin);
		pr_program_free(p);
	}
	cr_log_info("%d of %d programs round-tripped", tried, n_found);
	cr_assert_geq(tried, 5, "expected programs under examples/ and tests/, found %d", tried);
	free_found();
}

Test(binary, writer_is_deterministic_and_stable_through_a_load)
{
	find_programs();
	for (int i = 0; i < n_found; i++) {
		pr_program *p = parse_file(found[i]);
		if (!p)
			continue;
		uint8_t *a, *b;
		size_t na, nb;
		write_ok(p, &a, &na, found[i]);
		pr_program *q = load_ok(a, na, true, found[i]);
		write_ok(q, &b, &nb, found[i]);
		cr_expect(na == nb && !memcmp(a, b, na), "%s: binary differs after load + write",
			  found[i]);
		pr_program_free(q);
		free(a);
		free(b);
		pr_program_free(p);
	}
	free_found();
}

static const char *DATA_PROGRAM =
	"passrun 1\n"
	"blob @raw hex\"0102030405060708\"\n"
	"method @m {\n"
	"  %x: f32[2] = input user \"x\"\n"
	"  %r: f32[2,3]{strides=[1,2]} = input parameter \"r\" data=random(7)\n"
	"  %a: u8[2,3]{strides=[8,1]} = input constant \"a\" data=arange\n"
	"  %b: u8[8] = input constant \"b\" data=@raw\n"
	"  %l: f16[3] = input constant \"l\" data=[1.0, 0.5, -2.0]\n"
	"  return %x\n"
	"}\n";

/* The constant's bytes as the description gives them, for comparison. */
static void expect_mapped(pr_graph *g, const char *name, const uint8_t *base)
{
	pr_node *n = pr_graph_find(g, name);
	cr_assert_not_null(n);
	cr_assert_not_null(pr_node_input(n)->data.mapped, "%%%s has no mapped bytes", name);
	cr_expect_eq(((uintptr_t)pr_node_input(n)->data.mapped - (uintptr_t)base) % 64, 0,
		     "%%%s's bytes are not 64-byte aligned in the file", name);
	int64_t size = pr_spec_storage_bytes(&n->type.tensor);
	cr_assert_eq(pr_node_input(n)->data.mapped_size, size);
	uint8_t *want = malloc((size_t)size);
	pr_data d = pr_node_input(n)->data;
	d.mapped = NULL;   /* materialize from the description */
	pr_err *e = pr_data_materialize(&d, &n->type.tensor, want);
	cr_assert_null(e);
	cr_expect(!memcmp(want, pr_node_input(n)->data.mapped, (size_t)size),
		  "%%%s: mapped bytes differ", name);
	free(want);
}

Test(binary, borrowed_load_points_constants_into_the_buffer)
{
	pr_program *p = tu_parse(DATA_PROGRAM);
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "data");
	uint8_t *aligned = aligned_alloc(64, (len + 63) / 64 * 64);
	memcpy(aligned, bin, len);
	pr_program *q = load_ok(aligned, len, true, "data");
	pr_graph *g = pr_program_find_method(q, "m");
	expect_mapped(g, "r", aligned);
	expect_mapped(g, "a", aligned);
	expect_mapped(g, "b", aligned);
	expect_mapped(g, "l", aligned);
	cr_expect_null(pr_node_input(pr_graph_find(g, "x"))->data.mapped);
	pr_blob *raw = pr_program_find_blob(q, "raw");
	cr_expect(raw->borrowed);
	cr_expect(raw->bytes > aligned && raw->bytes < aligned + len);
	pr_program_free(q);

	q = load_ok(aligned, len, false, "data");
	g = pr_program_find_method(q, "m");
	cr_expect_null(pr_node_input(pr_graph_find(g, "r"))->data.mapped,
		       "a copying load must not point into buf");
	raw = pr_program_find_blob(q, "raw");
	cr_expect(!raw->borrowed);
	cr_expect(raw->bytes < aligned || raw->bytes >= aligned + len);
	cr_expect(!memcmp(raw->bytes, "\1\2\3\4\5\6\7\10", 8));
	pr_program_free(q);
	free(aligned);
	free(bin);
	pr_program_free(p);
}

Test(binary, header_states_magic_version_and_byte_order)
{
	pr_program *p = tu_parse(DATA_PROGRAM);
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "data");
	cr_assert_geq(len, 64);
	cr_expect(!memcmp(bin, "PASSRUN\0", 8));
	cr_expect(pr_binary_sniff(bin, len));
	cr_expect(!pr_binary_sniff(bin, 7));
	cr_expect(!pr_binary_sniff((const uint8_t *)"passrun 1\n", 10));
	cr_expect_eq(bin[8], 1);                        /* version 1, little-endian */
	cr_expect(!memcmp(bin + 12, "\x0d\x0c\x0b\x0a", 4));
	uint64_t size = 0;
	for (int i = 7; i >= 0; i--)
		size = size << 8 | bin[16 + i];
	cr_expect_eq(size, len);
	free(bin);
	pr_program_free(p);
}

/* %x, then %y and %z, each the negation of the one before, in @m. */
static pr_program *neg_chain(void)
{
	return tu_parse("passrun 1\n"
			"op aten::neg(Tensor self) -> Tensor\n"
			"method @m {\n"
			"  %x: f32[2] = input user \"x\"\n"
			"  %y: f32[2] = aten::neg(%x)\n"
			"  %z: f32[2] = aten::neg(%y)\n"
			"  return %z\n"
			"}\n");
}

/* Writing p fails with a message holding want, and gives no bytes. */
static void expect_write_refused(const pr_program *p, const char *want)
{
	uint8_t *bin = NULL;
	size_t len;
	pr_err *e = pr_binary_write(p, &bin, &len);
	cr_assert_not_null(e, "written, though it should fail with '%s'", want);
	cr_expect(strstr(pr_err_message(e), want), "%s", pr_err_message(e));
	cr_expect_null(bin);
	pr_err_free(e);
}

Test(binary, writer_refuses_a_value_read_before_it_is_defined)
{
	pr_program *p = neg_chain();
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *y = pr_graph_find(g, "y"), *z = pr_graph_find(g, "z");
	pr_arg_set_value(&y->args[0], z);   /* %y now reads %z, defined after it */
	expect_write_refused(p, "not defined before");
	pr_arg_set_value(&y->args[0], pr_graph_find(g, "x"));
	pr_program_free(p);
}

/* The text refuses a data value its dtype cannot hold (an i64 written 1e300,
 * 1e39 in an f32); a binary holding one must be refused too, at the value's
 * byte offset, or it would load and print as text that does not parse. */
Test(binary, loader_refuses_a_data_value_its_dtype_cannot_hold)
{
	static const struct { const char *decl; double bad; const char *says; } cases[] = {
		{"i64[2] = input constant data=[1, 2]", 1e300, "expected an integer from"},
		{"f32[2] = input constant data=[1, 2]", 1e39, "fits in f32"},
		{"i64[2] = input constant data=fill(3)", 0.5, "expected an integer from"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "passrun 1\nmethod @m {\n  %%c: %s\n  return %%c\n}\n",
			 cases[i].decl);
		pr_program *p = tu_parse(text);
		pr_node *c = pr_graph_find(pr_program_find_method(p, "m"), "c");
		if (c->of_kind.input->data.kind == PR_DATA_FILL)
			c->of_kind.input->data.fill = cases[i].bad;
		else
			c->of_kind.input->data.values[1] = cases[i].bad;
		uint8_t *bin = NULL;
		size_t len = 0;
		cr_assert_null(pr_binary_write(p, &bin, &len));
		pr_program *q = NULL;
		pr_err *e = pr_binary_load("bad.bin", bin, len, false, &q);
		cr_assert_not_null(e, "case %zu loaded", i);
		cr_expect(strstr(pr_err_message(e), cases[i].says) && strstr(pr_err_message(e), "byte"),
			  "%s", pr_err_message(e));
		pr_err_free(e);
		free(bin);
		pr_program_free(p);
	}
}

/* ---- files ----------------------------------------------------------------- */

static int count_temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	for (struct dirent *ent; (ent = readdir(d));)
		n += strstr(ent->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

Test(fileio, save_and_load_by_content_with_a_mapping)
{
	pr_program *p = tu_parse(DATA_PROGRAM);
	char *want = print(p);
	char bin_path[512], pg_path[512], odd_path[512];
	snprintf(bin_path, sizeof bin_path, "%s/saved.bin", tu_temp_dir());
	snprintf(pg_path, sizeof pg_path, "%s/saved.pg", tu_temp_dir());
	snprintf(odd_path, sizeof odd_path, "%s/binary-named.pg", tu_temp_dir());
	cr_assert_null(pr_program_save_file(p, bin_path));
	cr_assert_null(pr_program_save_file(p, pg_path));

	size_t len;
	char *bytes = tu_read_file(bin_path, &len);
	cr_expect(pr_binary_sniff((uint8_t *)bytes, len), ".bin must be written as binary");
	free(bytes);
	bytes = tu_read_file(pg_path, NULL);
	cr_expect_str_eq(bytes, want, "anything else is written as text");
	free(bytes);
	cr_expect_eq(count_temp_files(tu_temp_dir()), 0, "a temporary file was left behind");

	/* A binary file named .pg still loads as binary: content decides. */
	tu_result cp = tu_run("cp %s %s", bin_path, odd_path);
	cr_assert_eq(cp.status, 0);
	tu_result_free(&cp);
	const char *paths[] = {bin_path, pg_path, odd_path};
	for (int i = 0; i < 3; i++) {
		pr_program *q = NULL;
		pr_err *e = pr_program_load_file(paths[i], &q);
		cr_assert_null(e, "%s: %s", paths[i], e ? pr_err_message(e) : "");
		cr_expect_eq(q->mapping != NULL, i != 1, "%s: mapping", paths[i]);
		if (q->mapping) {
			cr_expect_eq(q->mapping_size, len);
			pr_node *r = pr_graph_find(pr_program_find_method(q, "m"), "r");
			cr_expect((const uint8_t *)pr_node_input(r)->data.mapped >= (const uint8_t *)q->mapping &&
				  (const uint8_t *)pr_node_input(r)->data.mapped < (const uint8_t *)q->mapping + len);
			cr_expect(pr_program_find_blob(q, "raw")->borrowed);
		}
		char *got = print(q);
		cr_expect_str_eq(got, want, "%s", paths[i]);
		free(got);
		pr_program_free(q);
	}
	free(want);
	pr_program_free(p);
}

Test(fileio, save_replaces_atomically_and_fails_cleanly)
{
	pr_program *p = tu_parse(DATA_PROGRAM);
	char path[512];
	snprintf(path, sizeof path, "%s/replace.bin", tu_temp_dir());
	tu_write_temp("replace.bin", "old contents");
	cr_assert_null(pr_program_save_file(p, path));
	pr_program *q = NULL;
	cr_assert_null(pr_program_load_file(path, &q));
	/* Saving over the very file the program maps keeps the mapping valid. */
	cr_assert_null(pr_program_save_file(q, path));
	char *a = print(p), *b = print(q);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);
	pr_program_free(q);

	char missing[512];
	snprintf(missing, sizeof missing, "%s/no-such-dir/out.bin", tu_temp_dir());
	pr_err *e = pr_program_save_file(p, missing);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), missing), "%s", pr_err_message(e));
	pr_err_free(e);
	cr_expect_eq(count_temp_files(tu_temp_dir()), 0);

	e = pr_program_load_file(missing, &q);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "cannot open"), "%s", pr_err_message(e));
	pr_err_free(e);
	e = pr_program_load_file(tu_temp_dir(), &q);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "not a regular file"), "%s", pr_err_message(e));
	pr_err_free(e);
	pr_program_free(p);
}

Test(fileio, a_truncated_binary_file_is_an_error_with_its_byte_offset)
{
	pr_program *p = tu_parse(DATA_PROGRAM);
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "data");
	for (size_t cut = 8; cut < len; cut += (cut < 200 ? 1 : 61)) {
		uint8_t *copy = malloc(cut);   /* exact size: ASan sees any overread */
		memcpy(copy, bin, cut);
		pr_program *q = NULL;
		pr_err *e = pr_binary_load("cut.bin", copy, cut, true, &q);
		cr_assert_not_null(e, "a file cut at %zu bytes loaded", cut);
		cr_expect(strstr(pr_err_message(e), "cut.bin: byte "), "%s", pr_err_message(e));
		pr_err_free(e);
		free(copy);
	}
	free(bin);
	pr_program_free(p);
}

Test(binary, broadcast_constant_keeps_only_its_description)
{
	/* 2^40 elements over 4 bytes of storage: computing them would take hours,
	 * so the writer stores no bytes and the round trip keeps the text. */
	pr_program *p = tu_parse("passrun 1\n"
				 "method @m {\n"
				 "  %c: f32[1099511627776]{strides=[0]} = input constant \"c\" data=ones\n"
				 "  return %c\n"
				 "}\n");
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "broadcast");
	pr_program *q = load_ok(bin, len, true, "broadcast");
	cr_expect_null(pr_node_input(pr_graph_find(pr_program_find_method(q, "m"), "c"))->data.mapped);
	char *a = print(p), *b = print(q);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);
	free(bin);
	pr_program_free(q);
	pr_program_free(p);
}

/* %late = aten::neg(%x), appended to g after its return. */
static pr_node *append_after_the_return(pr_program *p, pr_graph *g)
{
	pr_node *late = pr_graph_new_node(g, PR_NODE_OP, "late");
	late->of_kind.schema = pr_program_find_schema(p, "aten::neg");
	pr_arg *args = pr_graph_new_args(g, 1);
	args[0].kind = PR_ARG_VALUE;
	args[0].u.value = pr_graph_find(g, "x");
	pr_node_set_graph_args(late, args, 1);
	cr_assert_null(pr_graph_append(g, late));
	return late;
}

static void expect_misshapen(const pr_program *p)
{
	expect_write_refused(p, "@m: it must end with its one return node");
}

Test(binary, writer_refuses_a_graph_that_does_not_end_with_its_return)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op aten::neg(Tensor self) -> Tensor\n"
				 "method @m {\n"
				 "  %x: f32[2] = input user \"x\"\n"
				 "  return %x\n"
				 "}\n");
	append_after_the_return(p, pr_program_find_method(p, "m"));
	expect_misshapen(p);
	pr_program_free(p);
}

Test(binary, strings_keep_any_byte_the_text_can_escape)
{
	/* \xff is not UTF-8, but the text allows it in a string: so does the binary. */
	pr_program *p = tu_parse("passrun 1\n"
				 "op custom::tag(Tensor self, str s) -> Tensor\n"
				 "delegate @d backend=\"B\\xfe\" {\n"
				 "  %a: f32[2] = input\n"
				 "  return %a\n"
				 "}\n"
				 "method @m {\n"
				 "  %x: f32[2] = input user \"a\\xffb\\n\\\"\"\n"
				 "  %y: f32[2] = custom::tag(%x, \"\\x80\\t\")\n"
				 "  return %y, %x -> input \"a\\xffb\\n\\\"\"\n"
				 "}\n");
	expect_same_text_after_round_trip(p, "strings", "\\xff");
}

/* Lists nest: the writer and the loader read a node's arguments inline and
 * a nested list through a call of their own (w_list, rd_list), which must
 * hand the cursor back where the list ends, for the arguments after it. */
Test(binary, nested_lists_and_the_arguments_after_them_round_trip)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op custom::mix(Tensor a, Tensor[] xs, int[] dims, str tag, Tensor b) -> Tensor\n"
				 "method @m {\n"
				 "  %a: f32[2] = input user \"a\"\n"
				 "  %b: f32[2] = input user \"b\"\n"
				 "  %y: f32[2] = custom::mix(%a, [[%a, %b], [], [[%b]]], "
				 "[[1, -2], [3.5, true, none, \"s\"]], \"t\", %b)\n"
				 "  return %y\n"
				 "}\n");
	expect_same_text_after_round_trip(p, "nested lists",
					  "[[%a, %b], [], [[%b]]], [[1, -2], [3.5, true, none, \"s\"]], \"t\", %b)");
}

/* A spec with the bytes of the last one loads as a copy of it, its storage
 * size included: %b repeats %a's spec after a spec with a memory arena (never
 * copied, and of other storage) came between, so %b's data is checked
 * against its own storage, and the memory offsets stay each node's own. */
Test(binary, a_repeated_spec_loads_as_its_own)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op custom::pair(Tensor a, Tensor b) -> (Tensor, Tensor)\n"
				 "method @m {\n"
				 "  %a: u8[2,3]{strides=[8,1]} = input constant \"a\" data=arange\n"
				 "  %x: f32[4]{mem=cpu:0} = input user \"x\"\n"
				 "  %y: f32[4]{mem=cpu:64} = input user \"y\"\n"
				 "  %b: u8[2,3]{strides=[8,1]} = input constant \"b\" data=arange\n"
				 "  %t: (u8[2,3]{strides=[8,1]}, u8[2,3]{strides=[8,1]}) = custom::pair(%a, %b)\n"
				 "  %u: u8[2,3]{strides=[8,1]} = getitem %t, 1\n"
				 "  return %u, %x, %y\n"
				 "}\n");
	expect_same_text_after_round_trip(p, "repeated specs", "{mem=cpu:64}");
}

/* The loader checks and parses each distinct device once and reuses the
 * result for the same bytes: more devices than it keeps (8), in an order
 * that replaces them, in specs and memory arenas alike, all load as
 * written. */
Test(binary, many_devices_load_as_written)
{
	pr_strbuf t;
	pr_strbuf_init(&t);
	pr_strbuf_puts(&t, "passrun 1\nop t::id(Tensor self) -> Tensor\nmethod @m {\n"
			   "  %x: f32[2] = input user \"x\"\n");
	for (int i = 0; i < 40; i++) {
		int dev = (i * 7) % 13;   /* cuda:0 .. cuda:12, revisited out of order */
		char prev[16] = "x";
		if (i)
			snprintf(prev, sizeof prev, "v%d", i - 1);
		pr_strbuf_printf(&t, "  %%v%d: f32[2]@cuda:%d{mem=npu_2:%d:%d} = t::id(%%%s)\n", i,
				 dev, 12 - dev, 64 * i, prev);
	}
	pr_strbuf_puts(&t, "  return %v39\n}\n");
	expect_same_text_after_round_trip(tu_parse(t.data), "devices", "@cuda:12{mem=npu_2:0:");
	pr_strbuf_free(&t);
}

/* A u64 of the section table: entry i (0-based, in the writer's order),
 * field at (8: offset, 16: size). */
static uint64_t section_field(const uint8_t *bin, int i, int at)
{
	uint64_t v;
	memcpy(&v, bin + 64 + 24 * i + at, 8);
	return v;
}

/* A constant whose data cannot be materialized keeps its description and
 * takes no room in DATA: not its bytes, not the padding before them. */
Test(binary, a_constant_that_cannot_be_materialized_leaves_data_as_it_was)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "method @m {\n"
				 "  %a: f32[1] = input constant \"a\" data=ones\n"
				 "  %b: f32[3] = input constant \"b\" data=[1.0, 2.0, 3.0]\n"
				 "  return %a, %b\n"
				 "}\n");
	pr_node *b = pr_graph_find(pr_program_find_method(p, "m"), "b");
	b->of_kind.input->data.n_values = 2;   /* one short of its 3 elements: materializing it fails */
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "short list");
	cr_expect_eq(section_field(bin, 4, 16), 4, "DATA holds %%a's 4 bytes only, found %llu",
		     (unsigned long long)section_field(bin, 4, 16));
	cr_expect_eq(section_field(bin, 4, 8) + 4, len);
	b->of_kind.input->data.n_values = 3;
	free(bin);
	pr_program_free(p);
}

/* Devices the writer keeps encoded by id, and more, each keep their own bytes,
 * and a device built with bytes after its type's NUL (which interning drops:
 * test_device.c) writes as the clean one. */
Test(binary, devices_are_written_by_their_type_and_index)
{
	pr_strbuf t;
	pr_strbuf_init(&t);
	pr_strbuf_puts(&t, "passrun 1\nop t::id(Tensor self) -> Tensor\nmethod @m {\n"
		       "  %x: f32[2] = input user \"x\"\n");
	for (int i = 0; i < 7; i++)
		pr_strbuf_printf(&t, "  %%y%d: f32[2]@cuda:%d{mem=npu:%d:0} = t::id(%%x)\n", i, i % 6, i);
	pr_strbuf_puts(&t, "  return %y6\n}\n");
	pr_program *p = tu_parse(t.data);
	uint8_t *bin, *again;
	size_t len, again_len;
	write_ok(p, &bin, &len, "devices");
	pr_device dirty = {.type = "cuda\0zzzzzzzzzz", .index = 3};
	pr_graph_for_each(pr_program_find_method(p, "m"), n)
		if (n->type.kind == PR_TYPE_TENSOR && n->type.tensor.device_id == pr_device_intern((pr_device){"cuda", 3}))
			pr_spec_set_device(&n->type.tensor, dirty);
	write_ok(p, &again, &again_len, "devices with bytes after their types");
	cr_assert_eq(again_len, len);
	cr_expect(!memcmp(bin, again, len), "the bytes after a device type's NUL reached the file");
	pr_program *q = load_ok(bin, len, true, "devices");
	char *a = print(p), *c = print(q);
	cr_expect_str_eq(a, c);
	free(a);
	free(c);
	free(bin);
	free(again);
	pr_program_free(q);
	pr_program_free(p);
	pr_strbuf_free(&t);
}

/* The writer numbers nodes in their scratch and puts the caller's values
 * back, whether it writes the graph or refuses it. */
Test(binary, the_writer_leaves_the_nodes_scratch_as_it_found_it)
{
	pr_program *p = neg_chain();
	pr_graph *g = pr_program_find_method(p, "m");
	static char marks[5];
	int i = 0;
	pr_graph_for_each(g, n)
		n->scratch = &marks[i++];
	uint8_t *bin;
	size_t len;
	write_ok(p, &bin, &len, "scratch");
	free(bin);
	i = 0;
	pr_graph_for_each(g, n) {
		cr_expect_eq(n->scratch, &marks[i], "node %d's scratch after a write", i);
		i++;
	}
	pr_node *late = append_after_the_return(p, g);
	late->scratch = &marks[4];
	pr_err *e = pr_binary_write(p, &bin, &len);
	cr_assert_not_null(e);
	pr_err_free(e);
	i = 0;
	pr_graph_for_each(g, n) {
		cr_expect_eq(n->scratch, &marks[i], "node %d's scratch after a refusal", i);
		i++;
	}
	pr_program_free(p);
}

/* A node not written yet cannot pass its scratch off as an index: %y reads
 * %z (after it), then itself, while every node's scratch holds what an
 * index would, and each is refused. */
Test(binary, a_read_before_the_definition_is_refused_whatever_the_scratch_holds)
{
	pr_program *p = neg_chain();
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *y = pr_graph_find(g, "y"), *z = pr_graph_find(g, "z");
	pr_node *reads[2] = {z, y};
	for (int r = 0; r < 2; r++) {
		for (uintptr_t fake = 1; fake <= 3; fake++) {
			pr_graph_for_each(g, n)
				n->scratch = (void *)fake;   /* 1 is %x's index + 1 once written */
			pr_arg_set_value(&y->args[0], reads[r]);
			uint8_t *bin = NULL;
			size_t len;
			pr_err *e = pr_binary_write(p, &bin, &len);
			cr_assert_not_null(e, "%%y reading %%%s with scratch %u", reads[r]->name, (unsigned)fake);
			cr_expect(strstr(pr_err_message(e), "@m: %y reads a value that is not defined before"),
				  "%s", pr_err_message(e));
			pr_err_free(e);
			pr_graph_for_each(g, n)
				cr_expect_eq(n->scratch, (void *)fake);
		}
	}
	pr_arg_set_value(&y->args[0], pr_graph_find(g, "x"));
	pr_program_free(p);
}

/* The writer counts a value's reads against its use list, to give the
 * caller's scratch back at the last: a read the list does not count (an
 * argument set around pr_arg_set_value, which the verifier reports as
 * E-USES) is refused, and a use with no read leaves the scratch to the
 * end; both leave every scratch as it was. */
Test(binary, a_read_its_use_list_does_not_count_is_refused_and_scratch_kept)
{
	pr_program *p = neg_chain();
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *x = pr_graph_find(g, "x"), *y = pr_graph_find(g, "y"), *z = pr_graph_find(g, "z");
	static char marks[4];
	int i = 0;
	pr_graph_for_each(g, n)
		n->scratch = &marks[i++];
	z->args[0].u.value = x;   /* %x read twice, its list counts once; %y's use unread */
	expect_write_refused(p, "@m: %z reads %x more often than its use list says");
	i = 0;
	pr_graph_for_each(g, n) {
		cr_expect_eq(n->scratch, &marks[i], "node %d's scratch after the refusal", i);
		i++;
	}
	z->args[0].u.value = y;
	pr_program_free(p);
}

/* Of a graph's faults, its shape is reported first, as when the writer
 * looked at it before writing: here %y reads a later value too. */
Test(binary, a_misshapen_graph_is_reported_as_such_before_a_bad_read)
{
	pr_program *p = neg_chain();
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *y = pr_graph_find(g, "y"), *z = pr_graph_find(g, "z");
	pr_arg_set_value(&y->args[0], z);
	append_after_the_return(p, g);
	expect_misshapen(p);
	pr_arg_set_value(&y->args[0], pr_graph_find(g, "x"));
	pr_program_free(p);
}

/* A value of another graph is refused even when its scratch holds what an
 * index of this one would. */
Test(binary, a_read_of_another_graphs_value_is_refused_whatever_its_scratch_holds)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op aten::neg(Tensor self) -> Tensor\n"
				 "delegate @d backend=\"B\" {\n"
				 "  %a: f32[2] = input\n"
				 "  return %a\n"
				 "}\n"
				 "method @m {\n"
				 "  %x: f32[2] = input user \"x\"\n"
				 "  %y: f32[2] = aten::neg(%x)\n"
				 "  return %y\n"
				 "}\n");
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *y = pr_graph_find(g, "y");
	pr_node *a = pr_program_find_delegate(p, "d")->body->first;
	a->scratch = (void *)1;   /* %x's index + 1 once written */
	pr_arg_set_value(&y->args[0], a);
	expect_write_refused(p, "@m: %y reads a value that is not defined before");
	cr_expect_eq(a->scratch, (void *)1);
	pr_arg_set_value(&y->args[0], pr_graph_find(g, "x"));
	pr_program_free(p);
}

/* ---- node names: interned a few nodes after they are read ------------------ */

/* %n00 (an input), then %n01 .. %n19, each the negation of the one before, as
 * binary: more nodes than the loader reads ahead of the one it links. */
static uint8_t *long_chain(size_t *len)
{
	pr_strbuf sb = {0};
	pr_strbuf_puts(&sb, "passrun 1\nop aten::neg(Tensor self) -> Tensor\nmethod @m {\n"
			    "  %n00: f32[2] = input user \"x\"\n");
	for (int i = 1; i < 20; i++)
		pr_strbuf_printf(&sb, "  %%n%02d: f32[2] = aten::neg(%%n%02d)\n", i, i - 1);
	pr_strbuf_puts(&sb, "  return %n19\n}\n");
	pr_program *p = tu_parse(sb.data);
	pr_strbuf_free(&sb);
	uint8_t *bin;
	write_ok(p, &bin, len, "long chain");
	pr_program_free(p);
	return bin;
}

/* Where node %NAME's name field (u32 length, bytes) starts. */
static size_t name_field(const uint8_t *bin, size_t len, const char *name)
{
	uint8_t field[8] = {3, 0, 0, 0};
	memcpy(field + 4, name, 3);
	for (size_t at = 0; at + 7 <= len; at++)
		if (!memcmp(bin + at, field, 7))
			return at;
	cr_assert_fail("no name field for %%%s", name);
	return 0;
}

static void rename_node(uint8_t *bin, size_t len, const char *from, const char *to)
{
	memcpy(bin + name_field(bin, len, from) + 4, to, 3);
}

/* Loading bin fails with a message holding want. */
static void expect_load_refused(const uint8_t *bin, size_t len, const char *want)
{
	pr_program *q = NULL;
	pr_err *e = pr_binary_load("chain.bin", bin, len, false, &q);
	cr_assert_not_null(e, "loaded, expected: %s", want);
	cr_expect(strstr(pr_err_message(e), want), "got '%s', expected '%s'", pr_err_message(e), want);
	pr_err_free(e);
}

/* A duplicate is found where it was when names were linked as read: before
 * a fault of a later node, before a fault in the rest of its own record,
 * and with nodes after it already reading it. */
Test(binary, a_duplicate_node_name_is_reported_before_any_later_fault)
{
	size_t len;
	uint8_t *bin = long_chain(&len);
	size_t n05 = name_field(bin, len, "n05"), n08 = name_field(bin, len, "n08");
	uint8_t *bad = malloc(len);

	memcpy(bad, bin, len);   /* a later node's kind: that fault alone */
	bad[n08 - 1] = 9;
	expect_load_refused(bad, len, "chain.bin: byte");
	expect_load_refused(bad, len, "node kind 9 is unknown");

	rename_node(bad, len, "n05", "n03");   /* and a duplicate before it */
	char want[64];
	snprintf(want, sizeof want, "byte %zu: %%n03 is defined twice in @m", n05);
	expect_load_refused(bad, len, want);

	memcpy(bad, bin, len);   /* the duplicate's own type kind */
	rename_node(bad, len, "n05", "n03");
	bad[n05 + 7] = 9;
	expect_load_refused(bad, len, want);

	memcpy(bad, bin, len);   /* the duplicate alone, read by %n06 */
	rename_node(bad, len, "n05", "n03");
	expect_load_refused(bad, len, want);

	memcpy(bad, bin, len);   /* at the end, after the last node is read */
	rename_node(bad, len, "n19", "n00");
	snprintf(want, sizeof want, "byte %zu: %%n00 is defined twice in @m",
		 name_field(bin, len, "n19"));
	expect_load_refused(bad, len, want);

	pr_program_free(load_ok(bin, len, false, "long chain"));
	free(bad);
	free(bin);
}

/* Where the one value argument of the node named `name` (that reads node
 * `reads`) keeps its node index. */
static size_t value_arg_index(const uint8_t *bin, size_t len, const char *name, uint8_t reads)
{
	const uint8_t arg[13] = {1, 0, 0, 0, PR_ARG_VALUE, reads};   /* count, kind, u64 index */
	for (size_t at = name_field(bin, len, name); at + sizeof arg <= len; at++)
		if (!memcmp(bin + at, arg, sizeof arg))
			return at + 5;
	cr_assert_fail("no value argument for %%%s", name);
	return 0;
}

/* A value argument that does not read a node before its own is reported at
 * its index, whatever the index holds. */
Test(binary, a_value_argument_that_reads_no_earlier_node_is_refused_at_its_index)
{
	size_t len;
	uint8_t *bin = long_chain(&len);
	size_t ix = value_arg_index(bin, len, "n06", 5);
	uint8_t *bad = malloc(len);
	char want[128];

	memcpy(bad, bin, len);
	bad[ix] = 6;   /* itself */
	snprintf(want, sizeof want, "byte %zu: the argument reads node 6, expected a node defined "
		 "before this one (index < 6)", ix);
	expect_load_refused(bad, len, want);

	memcpy(bad, bin, len);
	bad[ix + 5] = 1;   /* 2^40 */
	snprintf(want, sizeof want, "byte %zu: the argument reads node 1099511627781, expected", ix);
	expect_load_refused(bad, len, want);

	memcpy(bad, bin, len);
	bad[ix - 1] = PR_ARG_INT;   /* no longer a value: loads, as an integer */
	pr_program *q = load_ok(bad, len, false, "an integer argument");
	pr_node *n = pr_graph_find(q->methods[0], "n06");
	cr_assert(n && n->n_args == 1);
	cr_expect_eq(n->args[0].kind, PR_ARG_INT);
	cr_expect_eq(n->args[0].u.i, 5);
	pr_program_free(q);

	free(bad);
	free(bin);
}

/* A getitem's index is 32 bits in the node: the loader refuses one past
 * INT32_MAX at its byte, rather than truncate it into a valid index. */
Test(binary, a_getitem_index_past_32_bits_is_refused_at_its_byte)
{
	pr_program *p = tu_parse("passrun 1\n"
				 "op custom::pair(Tensor a) -> (Tensor, Tensor)\n"
				 "method @m {\n"
				 "  %a: f32[2] = input user \"a\"\n"
				 "  %t: (f32[2], f32[2]) = custom::pair(%a)\n"
				 "  %u: f32[2] = getitem %t, 1\n"
				 "  return %u\n"
				 "}\n");
	pr_node *u = pr_graph_find(pr_program_find_method(p, "m"), "u");
	u->of_kind.index = 0x5a6b7c1d;   /* a sentinel to find in the file */
	uint8_t *bin;
	size_t len, at = 0;
	write_ok(p, &bin, &len, "getitem");
	const uint8_t sentinel[8] = {0x1d, 0x7c, 0x6b, 0x5a, 0, 0, 0, 0};
	while (at + 8 <= len && memcmp(bin + at, sentinel, 8))
		at++;
	cr_assert_leq(at + 8, len, "the index is in the file");
	const uint8_t past[8] = {0, 0, 0, 0x80, 0, 0, 0, 0};   /* 2^31 */
	memcpy(bin + at, past, 8);
	pr_program *q = NULL;
	pr_err *e = pr_binary_load("g.bin", bin, len, false, &q);
	cr_assert_not_null(e, "2^31 loaded");
	char want[64];
	snprintf(want, sizeof want, "byte %zu", at);
	cr_expect(strstr(pr_err_message(e), want), "%s (want %s)", pr_err_message(e), want);
	cr_expect(strstr(pr_err_message(e), "getitem index 2147483648 is out of range"), "%s", pr_err_message(e));
	cr_assert_null(q);
	pr_err_free(e);
	free(bin);
	pr_program_free(p);
}

/* Where the n bytes of s first occur in bin, which must hold them. */
static size_t find_bytes(const uint8_t *bin, size_t len, const char *s, size_t n)
{
	size_t at = 0;
	while (at + n <= len && memcmp(bin + at, s, n))
		at++;
	cr_assert_leq(at + n, len, "'%.*s' is in the file", (int)n, s);
	return at;
}

/* The loader checks a node's name 16 bytes at a time: a byte that is not a
 * name byte, at any place in a name of any length (one step, several, the
 * overlapping last one), is refused at the name, whichever side of a range
 * of name bytes it lies on (letters are found with OR 0x20, so 0xdf and '@'
 * are tried), and every name byte is taken. */
Test(binary, a_byte_that_is_not_a_name_byte_is_refused_anywhere_in_a_name)
{
	static const uint8_t bad_bytes[] = {'-', '/', ':', '@', '[', '^', '`', '{', 0x7f, 0x80,
					    0xc1, 0xdf, 0xfa, ' '};
	for (size_t n = 1; n <= 40; n++) {
		char name[48];
		for (size_t i = 0; i < n; i++)
			name[i] = "aZ09_.zAy"[i % 9];
		name[n] = 0;
		char text[256];
		snprintf(text, sizeof text, "passrun 1\nmethod @m {\n  %%%s: f32[2] = input user \"x\"\n"
			 "  return %%%s\n}\n", name, name);
		pr_program *p = tu_parse(text);
		uint8_t *bin;
		size_t len;
		write_ok(p, &bin, &len, "a name");
		pr_program *q = load_ok(bin, len, false, "a name");
		cr_expect_not_null(pr_graph_find(q->methods[0], name), "%s loads", name);
		pr_program_free(q);
		size_t at = find_bytes(bin, len, name, n);
		char want[96];
		snprintf(want, sizeof want, "byte %zu: the node's name is not a name", at - 4);
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < sizeof bad_bytes; k++) {
				uint8_t keep = bin[at + i];
				bin[at + i] = bad_bytes[k];
				expect_load_refused(bin, len, want);
				bin[at + i] = keep;
			}
		free(bin);
		pr_program_free(p);
	}
}

/* A string's NUL byte is found 16 bytes at a time in a short string and by
 * memchr in a long one: at every place of strings of every length around
 * those steps, it is refused at the string. */
Test(binary, a_nul_byte_is_refused_anywhere_in_a_string)
{
	for (size_t n = 1; n <= 70; n++) {
		char s[80];
		for (size_t i = 0; i < n; i++)
			s[i] = (char)('a' + i % 26);
		s[n] = 0;
		char text[256];
		snprintf(text, sizeof text, "passrun 1\nmethod @m {\n  %%x: f32[2] = input user \"%s\"\n"
			 "  return %%x\n}\n", s);
		pr_program *p = tu_parse(text);
		uint8_t *bin;
		size_t len;
		write_ok(p, &bin, &len, "a string");
		size_t at = find_bytes(bin, len, s, n);
		char want[96];
		snprintf(want, sizeof want, "byte %zu: the input's name contains a NUL byte", at - 4);
		for (size_t i = 0; i < n; i++) {
			bin[at + i] = 0;
			expect_load_refused(bin, len, want);
			bin[at + i] = (uint8_t)s[i];
		}
		pr_program *q = load_ok(bin, len, false, "a string");
		cr_expect_str_eq(pr_node_input(pr_graph_find(q->methods[0], "x"))->name, s);
		pr_program_free(q);
		free(bin);
		pr_program_free(p);
	}
}

/* The loader takes a spec whose bytes equal the last one's, and the writer
 * a spec whose layout and device it has written before, as those: specs
 * one byte apart (a dimension, a stride, the dtype, the device's index), of
 * ranks up to 5 (past the 48 bytes the writer copies in one block), on a
 * device and on the host, with and without a memory plan, each load as
 * written. */
Test(binary, specs_a_byte_apart_load_as_their_own)
{
	pr_strbuf t;
	pr_strbuf_init(&t);
	pr_strbuf_puts(&t, "passrun 1\nop t::id(Tensor self) -> Tensor\nmethod @m {\n"
		       "  %x: f32[2] = input user \"x\"\n");
	int k = 0;
	for (int rank = 1; rank <= 5; rank++)
		for (int d = 0; d < rank; d++)
			for (int v = 0; v < 6; v++) {
				char dims[64] = "", strides[64] = "";
				for (int i = 0, o = 0, so = 0; i < rank; i++) {
					int dim = 2 + i + (i == d && v % 2);
					o += snprintf(dims + o, sizeof dims - (size_t)o, "%s%d", i ? "," : "", dim);
					so += snprintf(strides + so, sizeof strides - (size_t)so, "%s%d",
						       i ? "," : "", 100 * (rank - i) + (i == d && v >= 4));
				}
				pr_strbuf_printf(&t, "  %%v%d: %s[%s]%s{strides=[%s]%s} = t::id(%%x)\n", k++,
						 v == 2 ? "f16" : "f32", dims, v % 3 ? "@cuda:1" : v == 3 ? "@cuda:2" : "",
						 strides, v == 1 ? ", mem=cuda:1:64" : "");
			}
	pr_strbuf_puts(&t, "  return %x\n}\n");
	expect_same_text_after_round_trip(tu_parse(t.data), "specs a byte apart",
					  "f32[2,3,4,5,7]@cuda:1{strides=[500,400,300,200,101]}");
	pr_strbuf_free(&t);
}
