/* The program model: specs, graph editing, use lists, order. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "passrun/format.h"
#include "passrun/program.h"
#include "testutil.h"

static pr_node *add_input(pr_graph *g, const char *name)
{
	pr_node *n = pr_node_new(PR_NODE_INPUT, name);
	n->of_kind.input->kind = PR_INPUT_USER;
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

Test(spec, layouts_and_sizes)
{
	pr_spec s;
	int64_t shape[2] = {2, 3};
	pr_spec_init(&s, PR_F32, 2, shape);
	cr_assert_eq(pr_spec_strides(&s)[0], 3);
	cr_assert_eq(pr_spec_strides(&s)[1], 1);
	cr_assert(pr_spec_is_contiguous(&s));
	cr_assert_eq(pr_spec_nbytes(&s), 24);
	pr_spec_set_strides(&s, (const int64_t[]){1, 2}); /* a transposed [3,2] */
	cr_assert(!pr_spec_is_contiguous(&s));
	cr_assert(!pr_spec_stored_as_is(&s), "a transposed constant is stored contiguous");
	cr_assert_eq(pr_spec_storage_bytes(&s), 24);
	int64_t nchw[4] = {1, 3, 2, 2};
	pr_spec_init(&s, PR_F16, 4, nchw);
	cr_assert(!pr_spec_is_channels_last(&s) || s.shape[1] == 1);
	pr_spec_set_strides(&s, (const int64_t[]){12, 1, 6, 3});
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
	pr_graph_erase(dup);   /* a detached node: its storage is the program's to free */
	char *n1 = pr_graph_fresh_name(g, "x_h2d_cuda0");
	cr_assert_str_eq(n1, "x_h2d_cuda0");
	add_input(g, n1);
	char *n2 = pr_graph_fresh_name(g, "x_h2d_cuda0");
	cr_assert_str_eq(n2, "x_h2d_cuda0_1");
	free(n1);
	free(n2);
	pr_program_free(p);
}

/* The suffix a pass spells ahead of a fresh name is the one the name gets. */
Test(graph, fresh_name_suffix_is_the_one_fresh_names_get)
{
	char s[PR_FRESH_SUFFIX_MAX];
	cr_assert_eq(pr_fresh_name_suffix(s, 1), 2);
	cr_assert_str_eq(s, "_1");
	cr_assert_eq(pr_fresh_name_suffix(s, 2147483647), 11);
	cr_assert_str_eq(s, "_2147483647");
}

/* pr_pages_fill faults memory in without changing a byte of it, on a heap
 * block's inner and partial pages alike, and where the kernel takes the
 * advice (asked directly first), every page it was given is resident. */
Test(memory, pages_fill_keeps_the_bytes_and_makes_the_pages_resident)
{
	size_t n = (size_t)3 << 20;
	unsigned char *heap = pr_xmalloc(n);
	for (size_t i = 0; i < n; i++)
		heap[i] = (unsigned char)(i * 131 + 7);
	pr_pages_fill(heap + 1001, n - 2002);
	pr_pages_fill(heap, 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(heap[i], (unsigned char)(i * 131 + 7), "byte %zu", i);
	free(heap);

	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 64 * page;
	unsigned char *probe = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(probe != MAP_FAILED && m != MAP_FAILED);
#ifdef MADV_POPULATE_WRITE
	bool kernel_takes_it = madvise(probe, page, MADV_POPULATE_WRITE) == 0;
#else
	bool kernel_takes_it = false;
#endif
	pr_pages_fill(m + 10, len - 20);
	unsigned char resident[64];
	cr_assert_eq(mincore(m, len, resident), 0);
	for (int i = 0; kernel_takes_it && i < 64; i++)
		cr_assert(resident[i] & 1, "page %d", i);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(m[i], 0, "byte %zu", i);
	munmap(probe, len);
	munmap(m, len);
}

/* A loader's append by name: a name new to the program and one another
 * graph has both link and are found, the node after a name its graph has
 * stays unlinked with the same message as pr_graph_append's. */
Test(graph, append_named_links_new_and_shared_names_and_refuses_a_taken_one)
{
	pr_program *p = pr_program_new();
	pr_graph *g, *h;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	cr_assert_null(pr_program_add_method(p, "backward", &h));
	pr_node *hx = add_input(h, "x");
	const char *bytes = "xyz";   /* names are the first byte or two, no NUL */
	pr_node *x = pr_graph_new_node(g, PR_NODE_INPUT, NULL);
	pr_node *xy = pr_graph_new_node(g, PR_NODE_INPUT, NULL);
	cr_assert_null(pr_graph_append_named(g, x, bytes, 1, pr_str_hash(bytes, 1)));
	cr_assert_null(pr_graph_append_named(g, xy, bytes, 2, pr_str_hash(bytes, 2)));
	cr_assert_str_eq(xy->name, "xy");
	cr_assert_eq(pr_graph_find(g, "x"), x);
	cr_assert_eq(pr_graph_find(g, "xy"), xy);
	cr_assert_eq(pr_graph_find(h, "x"), hx);
	cr_assert(g->first == x && x->next == xy && g->last == xy && g->n_nodes == 2);
	cr_assert(pr_node_before(x, xy));
	pr_node *dup = pr_graph_new_node(g, PR_NODE_INPUT, NULL);
	pr_err *e = pr_graph_append_named(g, dup, bytes, 2, pr_str_hash(bytes, 2));
	cr_assert_not_null(e);
	cr_assert_str_eq(pr_err_message(e), "%xy is already defined in @forward");
	pr_err_free(e);
	cr_assert(g->last == xy && g->n_nodes == 2);
	pr_graph_erase(dup);
	pr_program_free(p);
}

/* A name found by its bytes and their hash, as a parser that hashed it
 * finds it: no NUL after it, each graph its own, a prefix no match. */
Test(graph, find_hashed_finds_a_name_by_its_bytes_in_each_graph)
{
	pr_program *p = pr_program_new();
	pr_graph *g, *h;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	cr_assert_null(pr_program_add_method(p, "backward", &h));
	cr_assert_null(pr_graph_find_hashed(g, "x", 1, pr_str_hash("x", 1)));   /* no nodes */
	pr_node *gx = add_input(g, "x"), *gxy = add_input(g, "xy"), *hx = add_input(h, "x");
	const char *line = "xyz";
	cr_assert_eq(pr_graph_find_hashed(g, line, 1, pr_str_hash(line, 1)), gx);
	cr_assert_eq(pr_graph_find_hashed(g, line, 2, pr_str_hash(line, 2)), gxy);
	cr_assert_eq(pr_graph_find_hashed(h, line, 1, pr_str_hash(line, 1)), hx);
	cr_assert_null(pr_graph_find_hashed(h, line, 2, pr_str_hash(line, 2)));
	cr_assert_null(pr_graph_find_hashed(g, line, 3, pr_str_hash(line, 3)));
	pr_program_free(p);
}

/* The string table is sized for what a loader reserves and then grows for
 * twice the names it has, neither a power of two: every name, put in
 * either way, is found again, and a wrapping probe finds its slot. */
Test(graph, names_are_found_in_a_table_sized_for_a_reservation_and_grown)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	enum { RESERVED = 3001, MORE = 7003 };
	pr_graph_reserve_nodes(g, RESERVED);
	pr_node **n = malloc((RESERVED + MORE) * sizeof *n);
	char name[32];
	for (int i = 0; i < RESERVED + MORE; i++) {
		snprintf(name, sizeof name, "v%d", i);
		n[i] = add_input(g, name);
	}
	for (int i = 0; i < RESERVED + MORE; i++) {
		snprintf(name, sizeof name, "v%d", i);
		cr_assert_eq(pr_graph_find(g, name), n[i], "%s", name);
		cr_assert_eq(pr_program_intern(p, name, strlen(name)), n[i]->name);
	}
	cr_assert_null(pr_graph_find(g, "v10004"));
	free(n);
	pr_program_free(p);
}

/* An interned string's length is where its NUL is: a string, its prefixes
 * and its extensions, of every length around the 4-byte alignment of the
 * strings' records, are distinct strings, each found from bytes without a
 * NUL after them, and an interned pointer passed back is itself. */
Test(program, interned_prefixes_and_extensions_are_distinct)
{
	pr_program *p = pr_program_new();
	const char *text = "layers.12.attention.wq.weight_h2d_cuda0";
	size_t n = strlen(text);
	const char **in = calloc(n + 1, sizeof *in);
	for (size_t k = 1; k <= n; k++)
		in[k] = pr_program_intern(p, text, k);
	for (size_t k = 1; k <= n; k++) {
		cr_assert_eq(strlen(in[k]), k);
		cr_assert_eq(strncmp(in[k], text, k), 0);
		cr_assert_eq(pr_program_intern(p, text, k), in[k]);
		cr_assert_eq(pr_program_intern_hashed(p, in[k], k, pr_str_hash(text, k)), in[k]);
		cr_assert_eq((uintptr_t)in[k] % 4, 0);
		for (size_t j = 1; j < k; j++)
			cr_assert_neq(in[j], in[k]);
	}
	free(in);
	pr_program_free(p);
}

/* pr_str_hash as its comment defines it: 8-byte words, then the tail as
 * one word of its bytes, zero above them. */
static uint32_t str_hash_by_definition(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	w = 0;
	memcpy(&w, s + i, n - i);
	h = (h ^ w) * 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

/* Every tail length, after no word and after whole words (where the tail
 * is read as the string's last 8 bytes), hashes as defined, from the n
 * bytes alone: what lies before and after them changes nothing. */
Test(program, str_hash_reads_each_tail_as_defined)
{
	char buf[64];
	for (size_t n = 0; n <= 40; n++) {
		for (size_t k = 0; k < sizeof buf; k++)
			buf[k] = (char)('a' + (k * 7) % 26);
		const char *s = buf + 8;
		uint32_t h = pr_str_hash(s, n);
		cr_assert_eq(h, str_hash_by_definition(s, n), "length %zu", n);
		memset(buf, 'X', 8);
		memset(buf + 8 + n, 'Y', sizeof buf - 8 - n);
		cr_assert_eq(pr_str_hash(s, n), h, "length %zu", n);
	}
}

/* Asking for a name's slot ahead changes nothing: on a program with no
 * names yet (no table to read), and around naming a node under it. */
Test(graph, prefetching_a_name_changes_no_name)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	const char *base = "x_h2d_cuda0";
	pr_program_prefetch_name(p, pr_str_hash(base, strlen(base)));
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	add_input(g, "x");
	for (int i = 0; i < 3; i++) {
		pr_program_prefetch_name(p, pr_str_hash(base, strlen(base)));
		char *name = pr_graph_fresh_name(g, base);
		cr_assert_str_eq(name, i == 0 ? "x_h2d_cuda0" : i == 1 ? "x_h2d_cuda0_1" : "x_h2d_cuda0_2");
		add_input(g, name);
		free(name);
	}
	cr_assert_not_null(pr_graph_find(g, "x_h2d_cuda0_2"));
	pr_program_free(p);
}

/* One name in three graphs of a program: each graph finds its own node,
 * refuses a second one, and keeps finding it while the others' come and go
 * (erased, renamed away, linked again). */
Test(graph, a_name_in_several_graphs_is_each_graphs_own)
{
	pr_program *p = pr_program_new();
	pr_graph *g[3];
	pr_delegate *d;
	cr_assert_null(pr_program_add_method(p, "forward", &g[0]));
	cr_assert_null(pr_program_add_method(p, "backward", &g[1]));
	cr_assert_null(pr_program_add_delegate(p, "body", &d));
	g[2] = d->body;
	pr_node *x[3];
	for (int i = 0; i < 3; i++) {
		x[i] = add_input(g[i], "x");
		add_input(g[i], i ? "y" : "z");
	}
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pr_graph_find(g[i], "x"), x[i]);
		pr_node *dup = pr_node_new(PR_NODE_INPUT, "x");
		pr_err *e = pr_graph_append(g[i], dup);
		cr_assert_not_null(e, "graph %d took a second %%x", i);
		pr_graph_erase(dup);
		cr_assert_str_eq(pr_err_message(e), i == 2 ? "%x is already defined in @body"
			: i ? "%x is already defined in @backward" : "%x is already defined in @forward");
		pr_err_free(e);
	}
	pr_graph_erase(x[0]);
	cr_assert_null(pr_graph_find(g[0], "x"));
	cr_assert_eq(pr_graph_find(g[1], "x"), x[1]);
	cr_assert_eq(pr_graph_find(g[2], "x"), x[2]);
	pr_node *dup = pr_node_new(PR_NODE_INPUT, "x");
	pr_err *e = pr_graph_append(g[1], dup);
	cr_assert_not_null(e, "@backward's %%x is known after @forward's went");
	pr_err_free(e);
	pr_graph_erase(dup);
	e = pr_node_rename(x[1], "y");
	cr_assert_not_null(e);
	cr_assert_str_eq(pr_err_message(e), "cannot rename %x: %y is already defined in @backward");
	pr_err_free(e);
	cr_assert_null(pr_node_rename(x[1], "w"));
	cr_assert_null(pr_graph_find(g[1], "x"));
	cr_assert_eq(pr_graph_find(g[1], "w"), x[1]);
	cr_assert_null(pr_graph_find(g[0], "w"));
	cr_assert_eq(pr_graph_find(g[2], "x"), x[2]);
	char *f = pr_graph_fresh_name(g[2], "x");
	cr_assert_str_eq(f, "x_1");
	free(f);
	f = pr_graph_fresh_name(g[0], "x");
	cr_assert_str_eq(f, "x");
	free(f);
	pr_node *again = add_input(g[0], "x");
	cr_assert_eq(pr_graph_find(g[0], "x"), again);
	cr_assert_eq(pr_graph_find(g[2], "x"), x[2]);
	pr_node *fresh = pr_graph_new_node_fresh(g[1], PR_NODE_INPUT, "y", 1, NULL);
	cr_assert_str_eq(fresh->name, "y_1");
	pr_graph_erase(fresh);
	pr_graph_erase(x[2]);
	cr_assert_null(pr_graph_find(g[2], "x"));
	cr_assert_eq(pr_graph_find(g[0], "x"), again);
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

/* ---- facts the IR owns: aliases, mutable buffers, compile specs ---------- */

static const char facts_program[] =
	"passrun 1\n"
	"op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n"
	"op aten::view(Tensor(a) self, int[] size) -> Tensor(a)\n"
	"op aten::add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)\n"
	"op aten::split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]\n"
	"op aten::view_copy(Tensor self, int[] size) -> Tensor\n"
	"delegate @dd backend=\"CudaBackend\" target_device=\"cuda:0\" note=\"kept\" {\n"
	"  %a: f32[4] = input\n"
	"  return %a\n"
	"}\n"
	"method @forward {\n"
	"  %x: f32[4] = input user \"x\"\n"
	"  %k: f32[4] = input buffer \"k\"\n"
	"  %c: f32[4] = input buffer \"c\"\n"
	"  %w: f32[4] = input parameter \"w\"\n"
	"  %s: f32[4] = aten::add.Tensor(%x, %w)\n"
	"  %v: f32[2,2] = aten::view(%s, [2,2])\n"
	"  %i: f32[4] = aten::add_.Tensor(%k, %x)\n"
	"  %p: (f32[2], f32[2]) = aten::split_with_sizes(%s, [2,2])\n"
	"  %q: f32[2,2] = aten::view_copy(%s, [2,2])\n"
	"  return %v, %q, %c, %i -> buffer \"k\"\n"
	"}\n";

static pr_program *facts_parse(void)
{
	pr_program *p = NULL;
	pr_err *e = pr_text_parse("facts.pg", facts_program, sizeof facts_program - 1, &p);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	return p;
}

Test(facts, a_result_aliases_the_argument_its_schema_names)
{
	pr_program *p = facts_parse();
	pr_graph *g = pr_program_find_method(p, "forward");
	pr_node *s = pr_graph_find(g, "s"), *k = pr_graph_find(g, "k");
	cr_assert_eq(pr_node_alias_arg(pr_graph_find(g, "v"), 0), 0);      /* a view */
	cr_assert_eq(pr_node_alias_value(pr_graph_find(g, "v"), 0), s);
	cr_assert_eq(pr_node_alias_value(pr_graph_find(g, "i"), 0), k);    /* in place */
	cr_assert_eq(pr_node_alias_value(pr_graph_find(g, "p"), 1), s);    /* Tensor(a)[] */
	cr_assert_eq(pr_node_alias_arg(s, 0), -1);                         /* fresh */
	cr_assert_eq(pr_node_alias_arg(pr_graph_find(g, "q"), 0), -1);     /* view_copy */
	cr_assert_eq(pr_node_alias_arg(pr_graph_find(g, "x"), 0), -1);     /* not an op */
	cr_assert_null(pr_node_alias_value(pr_graph_find(g, "x"), 0));
	pr_program_free(p);
}

Test(facts, an_alias_to_a_missing_argument_is_no_value)
{
	pr_program *p = facts_parse();
	pr_node *v = pr_graph_find(pr_program_find_method(p, "forward"), "v");
	pr_arg *args = calloc(1, sizeof *args);
	args[0].kind = PR_ARG_INT;
	pr_node_set_args(v, args, 1);
	cr_assert_eq(pr_node_alias_arg(v, 0), 0);
	cr_assert_null(pr_node_alias_value(v, 0));
	pr_program_free(p);
}

Test(facts, mutable_buffers_are_the_buffers_written_back)
{
	pr_program *p = facts_parse();
	pr_graph *g = pr_program_find_method(p, "forward");
	pr_mutable_buffers *b = pr_graph_mutable_buffers(g);
	cr_assert(pr_mutable_buffers_has(b, pr_graph_find(g, "k")));
	cr_assert(!pr_mutable_buffers_has(b, pr_graph_find(g, "c")));   /* returned, not written */
	cr_assert(!pr_mutable_buffers_has(b, pr_graph_find(g, "x")));
	cr_assert(!pr_mutable_buffers_has(b, pr_graph_find(g, "w")));
	pr_mutable_buffers_free(b);
	pr_mutable_buffers_free(NULL);
	pr_program_free(p);
}

Test(facts, removing_a_compile_spec_keeps_the_others_in_order)
{
	pr_program *p = facts_parse();
	pr_delegate *d = pr_program_find_delegate(p, "dd");
	cr_assert_eq(d->n_specs, 3);
	cr_assert(pr_delegate_remove_spec(d, "target_device"));
	cr_assert_null(pr_delegate_spec(d, "target_device"));
	cr_assert(!pr_delegate_remove_spec(d, "target_device"));
	cr_assert_eq(d->n_specs, 2);
	cr_assert_str_eq(d->specs[0].key, "backend");
	cr_assert_str_eq(d->specs[1].key, "note");
	pr_program_free(p);
}

Test(graph, fresh_names_from_a_cursor_match_the_plain_search)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	add_input(g, "t_1");   /* taken before the first search */
	int next = 0;
	const char *want[] = {"t", "t_2", "t_3"};
	for (int i = 0; i < 3; i++) {
		char *plain = pr_graph_fresh_name(g, "t");
		char *n = pr_graph_fresh_name_next(g, "t", &next);
		cr_assert_str_eq(n, want[i]);
		cr_assert_str_eq(plain, n);
		add_input(g, n);
		free(plain);
		free(n);
	}
	cr_assert_eq(next, 4);
	pr_program_free(p);
}

/* Links a pr_graph_new_node_fresh node (or _hashed, given the base's
 * hash) named after base (the first len bytes of it) and checks its name
 * against the cursor search's. */
static void fresh_node_matches(pr_graph *g, const char *base, size_t len, int *next,
			       int *next_plain, bool hashed)
{
	char *b = calloc(1, len + 1);
	memcpy(b, base, len);
	char *want = pr_graph_fresh_name_next(g, b, next_plain);
	pr_node *n = hashed
		? pr_graph_new_node_fresh_hashed(g, PR_NODE_INPUT, base, len,
						 pr_str_hash(base, len), next)
		: pr_graph_new_node_fresh(g, PR_NODE_INPUT, base, len, next);
	cr_assert_str_eq(n->name, want);
	cr_assert_eq(*next, *next_plain);
	cr_assert_eq(n->name, pr_program_intern(g->program, want, strlen(want)), "interned");
	cr_assert_null(pr_graph_insert_before(g->first, n));
	cr_assert_eq(pr_graph_find(g, want), n, "indexed under its name");
	free(want);
	free(b);
}

Test(graph, fresh_nodes_are_named_as_the_cursor_search_names)
{
	pr_program *p = pr_program_new();
	pr_graph *g;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	add_input(g, "x_h2d_cuda0_2");   /* a clash ahead of the cursor */
	add_input(g, "x_h2d_cuda0_9");
	int next = 0, plain = 0;
	for (int i = 0; i < 12; i++)     /* x_h2d_cuda0, _1, _3, ..., _8, _10, ... */
		fresh_node_matches(g, "x_h2d_cuda0_tail", 11, &next, &plain, i % 2);
	cr_assert_eq(next, 14);
	cr_assert_not_null(pr_graph_find(g, "x_h2d_cuda0_13"));
	cr_assert_null(pr_graph_find(g, "x_h2d_cuda0_14"));

	add_input(g, "y");               /* the base itself taken, no cursor */
	int none = 0, none_plain = 0;
	fresh_node_matches(g, "y", 1, &none, &none_plain, true);
	cr_assert_str_eq(g->first->name, "y_1");

	char longer[300];                /* past the stack buffer */
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	add_input(g, longer);
	int l = 0, l_plain = 0;
	fresh_node_matches(g, longer, strlen(longer), &l, &l_plain, true);
	cr_assert_eq(strlen(g->first->name), strlen(longer) + 2);
	pr_program_free(p);
}

Test(spec, one_layout_rule_for_specs_and_tensors)
{
	int64_t shape[3] = {2, 1, 3}, strides[3] = {3, 99, 1};   /* size 1: any stride */
	cr_assert(pr_layout_is_contiguous(3, shape, strides));
	int64_t t_strides[3] = {1, 1, 2};                          /* a transpose */
	cr_assert(!pr_layout_is_contiguous(3, shape, t_strides));
	int64_t empty[3] = {2, 0, 3};                              /* no elements */
	cr_assert(pr_layout_is_contiguous(3, empty, t_strides));
	cr_assert_eq(pr_layout_numel(3, shape), 6);
	cr_assert_eq(pr_layout_numel(3, empty), 0);
	cr_assert_eq(pr_layout_numel(0, shape), 1);
}

/* ---- interned layouts ---------------------------------------------------- */

Test(layouts, same_dims_share_one_copy)
{
	int64_t shape[2] = {4, 5}, other_shape[2] = {4, 5};
	pr_spec a, b;
	pr_spec_init(&a, PR_F32, 2, shape);
	pr_spec_init(&b, PR_I64, 2, other_shape);
	cr_assert_eq(a.shape, b.shape, "same dims, same pointer (the dtype is not the layout's)");
	cr_assert_eq(pr_spec_strides(&a), pr_spec_strides(&b));
	cr_assert_eq(pr_spec_strides(&a), a.shape + 2, "the strides follow the shape");
	cr_assert_neq(a.shape, shape, "a copy, not the caller's array");
	cr_assert_eq(a.shape[0], 4);
	cr_assert_eq(a.shape[1], 5);
	cr_assert_eq(pr_spec_strides(&a)[0], 5);
	cr_assert_eq(pr_spec_strides(&a)[1], 1);
	pr_spec copy = a;   /* a value: copies share the dims */
	cr_assert(pr_spec_equal(&copy, &a));
	pr_spec_set_strides(&b, (const int64_t[]){1, 4});
	cr_assert_neq(b.shape, a.shape, "other strides, another layout");
	cr_assert_eq(b.shape[0], 4);
	cr_assert_eq(pr_spec_strides(&b)[0], 1);
	cr_assert_eq(pr_spec_strides(&b)[1], 4);
	cr_assert_eq(pr_spec_strides(&a)[0], 5, "a's layout is untouched");
	pr_spec_set_contiguous(&b);
	cr_assert_eq(b.shape, a.shape, "back to contiguous: back to a's copy");
	int64_t swapped[2] = {5, 4};
	pr_spec_set_layout(&b, 2, swapped, NULL);
	cr_assert_neq(b.shape, a.shape);
}

Test(layouts, rank_0_and_the_largest_rank)
{
	pr_spec s, t;
	pr_spec_init(&s, PR_F32, 0, NULL);
	cr_assert_not_null(s.shape, "rank 0 has a valid pointer too");
	cr_assert_not_null(pr_spec_strides(&s));
	pr_spec_init(&t, PR_BOOL, 0, NULL);
	cr_assert(pr_spec_same_layout(&s, &(pr_spec){.dtype = PR_F32, .shape = t.shape}));
	cr_assert_eq(pr_spec_numel(&s), 1);
	int64_t big[PR_MAX_RANK], strides[PR_MAX_RANK];
	for (int i = 0; i < PR_MAX_RANK; i++)
		big[i] = 1 + i % 2;
	pr_spec_init(&s, PR_F32, PR_MAX_RANK, big);
	cr_assert_eq(s.rank, PR_MAX_RANK);
	cr_assert_eq(pr_spec_numel(&s), 1 << (PR_MAX_RANK / 2));
	cr_assert_eq(pr_spec_strides(&s)[PR_MAX_RANK - 1], 1);
	cr_assert_eq(pr_spec_strides(&s)[0], 1 << (PR_MAX_RANK / 2), "dims 1, 3, ... are 2");
	memcpy(strides, pr_spec_strides(&s), sizeof strides);
	strides[PR_MAX_RANK - 1] = 7;
	pr_spec_set_strides(&t, NULL);   /* rank 0: contiguous, nothing to copy */
	pr_spec_init(&t, PR_F32, PR_MAX_RANK, big);
	cr_assert_eq(t.shape, s.shape);
	pr_spec_set_strides(&t, strides);
	cr_assert_neq(t.shape, s.shape, "the last stride alone tells them apart");
	cr_assert_eq(pr_spec_strides(&t)[PR_MAX_RANK - 1], 7);
	cr_assert_eq(pr_spec_strides(&s)[PR_MAX_RANK - 1], 1);
}

/* Enough layouts to fill many chunks: the first ones' copies neither move
 * nor change, and interning them again finds them. */
Test(layouts, earlier_copies_stay_put_as_the_table_grows)
{
	enum { N = 40000, KEEP = 64 };
	size_t before = pr_layout_count();
	const int64_t *kept[KEEP];
	for (int i = 0; i < N; i++) {
		int64_t shape[3] = {7, 1000003 + i, 3};
		const int64_t *d = pr_layout_intern(3, shape, (const int64_t[]){0, 0, 0});
		if (i < KEEP)
			kept[i] = d;
	}
	cr_assert_geq(pr_layout_count(), before + N);
	for (int i = 0; i < KEEP; i++) {
		int64_t shape[3] = {7, 1000003 + i, 3};
		cr_assert_eq(kept[i][1], 1000003 + i, "layout %d's copy changed", i);
		cr_assert_eq(kept[i][3] + kept[i][4] + kept[i][5], 0);
		cr_assert_eq(pr_layout_intern(3, shape, (const int64_t[]){0, 0, 0}), kept[i]);
	}
	size_t after = pr_layout_count();
	int64_t shape[3] = {7, 1000003, 3};
	pr_layout_intern(3, shape, (const int64_t[]){0, 0, 0});
	cr_assert_eq(pr_layout_count(), after, "no second copy");
}

Test(layouts, a_spec_on_its_own_arrays_equals_its_interned_twin)
{
	int64_t dims[4] = {2, 3, 1, 2};   /* the shape then the strides, as a spec's */
	const int64_t *shape = dims, *strides = dims + 2;
	pr_spec own = {.dtype = PR_F32, .rank = 2, .shape = dims};
	pr_spec interned;
	pr_spec_init(&interned, PR_F32, 2, shape);
	cr_assert(!pr_spec_equal(&own, &interned), "the strides differ");
	pr_spec_set_strides(&interned, strides);
	cr_assert_neq(own.shape, interned.shape);
	cr_assert(pr_spec_equal(&own, &interned), "compared by element when the pointers differ");
	cr_assert(pr_spec_same_layout(&interned, &own));
	pr_spec_set_contiguous(&own);   /* re-interned from its own shape */
	cr_assert_neq(own.shape, dims);
	cr_assert_eq(pr_spec_strides(&own)[0], 3);
	cr_assert_eq(strides[0], 1, "the caller's arrays are never written");
	pr_spec_set_device(&own, pr_device_canonical((pr_device){.type = "cuda", .index = 0}));
	pr_spec_set_contiguous(&interned);
	cr_assert(pr_spec_same_layout(&own, &interned));
	cr_assert(!pr_spec_equal(&own, &interned), "the device still counts");
}

enum { THREAD_LAYOUTS = 5000 };

typedef struct intern_job {
	int start;                                /* each thread its own order */
	const int64_t *got[THREAD_LAYOUTS];
} intern_job;

static void *intern_many(void *arg)
{
	intern_job *job = arg;
	for (int k = 0; k < THREAD_LAYOUTS; k++) {
		int i = (job->start + k) % THREAD_LAYOUTS;
		int64_t shape[2] = {3, 2000003 + i}, strides[2] = {1, 3};
		job->got[i] = pr_layout_intern(2, shape, strides);
	}
	return NULL;
}

Test(layouts, threads_interning_the_same_layouts_get_the_same_copies)
{
	enum { THREADS = 4 };
	static intern_job jobs[THREADS];
	pthread_t tid[THREADS];
	for (int t = 0; t < THREADS; t++) {
		jobs[t].start = t * THREAD_LAYOUTS / THREADS;
		cr_assert_eq(pthread_create(&tid[t], NULL, intern_many, &jobs[t]), 0);
	}
	for (int t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_join(tid[t], NULL), 0);
	for (int i = 0; i < THREAD_LAYOUTS; i++) {
		cr_assert_eq(jobs[0].got[i][1], 2000003 + i);
		cr_assert_eq(jobs[0].got[i][3], 3);
		for (int t = 1; t < THREADS; t++)
			cr_assert_eq(jobs[t].got[i], jobs[0].got[i], "layout %d: thread %d got another copy",
				     i, t);
	}
}
/* ---- storage: slabs, the string table, the name index, use blocks ----- */

static pr_node *slab_input(pr_graph *g, const char *name)
{
	pr_node *n = pr_graph_new_node(g, PR_NODE_INPUT, name);
	n->of_kind.input->kind = PR_INPUT_USER;
	return n;
}

static pr_program *one_method(pr_graph **g)
{
	pr_program *p = pr_program_new();
	cr_assert_null(pr_program_add_method(p, "forward", g));
	return p;
}

Test(storage, slab_nodes_survive_churn_and_reuse_erased_slots)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	enum { N = 20000 };
	pr_node **nodes = calloc(N, sizeof *nodes);
	char name[32];
	pr_graph_reserve_nodes(g, N / 2);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "v%d", i);
		/* a pr_node_new node every seventh, in the same list */
		nodes[i] = i % 7 ? slab_input(g, name) : pr_node_new(PR_NODE_INPUT, name);
		cr_assert_null(pr_graph_append(g, nodes[i]));
	}
	for (int i = 1; i < N; i += 2) {
		pr_node *gone = nodes[i];
		bool slab = i % 7 != 0;
		pr_graph_erase(gone);
		nodes[i] = NULL;
		if (slab && i % 3 == 0) {   /* the free list hands the last slot back first */
			snprintf(name, sizeof name, "w%d", i);
			pr_node *again = slab_input(g, name);
			cr_assert_eq(again, gone, "erased slot %d is reused", i);
			cr_assert_null(pr_graph_insert_after(nodes[i - 1], again));
			nodes[i] = again;
		}
	}
	int64_t linked = 0;
	for (int i = 0; i < N; i++) {
		if (!nodes[i])
			continue;
		linked++;
		snprintf(name, sizeof name, i % 2 ? "w%d" : "v%d", i);
		cr_assert_str_eq(nodes[i]->name, name, "node %d keeps its name", i);
		cr_assert_eq(pr_graph_find(g, name), nodes[i]);
		cr_assert_eq(nodes[i]->graph, g);
	}
	cr_assert_eq(g->n_nodes, linked);
	int64_t walked = 0;
	pr_node *prev = NULL;
	pr_graph_for_each(g, n) {
		cr_assert(!prev || pr_node_before(prev, n));
		prev = n;
		walked++;
	}
	cr_assert_eq(walked, linked);
	free(nodes);
	pr_program_free(p);
}

Test(storage, interned_strings_are_one_pointer_per_string)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	const char *a = pr_program_intern(p, "alpha_beta", 5);
	cr_assert_str_eq(a, "alpha");
	cr_assert_eq(pr_program_intern(p, "alpha", 5), a);
	cr_assert_neq(pr_program_intern(p, "alph", 4), a);
	cr_assert_str_eq(pr_program_intern(p, "", 0), "");
	enum { N = 50000 };
	const char **s = calloc(N, sizeof *s);
	char buf[40];
	for (int i = 0; i < N; i++) {   /* enough to grow the table many times */
		int k = snprintf(buf, sizeof buf, "a_rather_long_name_%d", i);
		s[i] = pr_program_intern(p, buf, (size_t)k);
	}
	for (int i = 0; i < N; i++) {
		int k = snprintf(buf, sizeof buf, "a_rather_long_name_%d", i);
		cr_assert_eq(pr_program_intern(p, buf, (size_t)k), s[i]);
		cr_assert_str_eq(s[i], buf);
	}
	cr_assert_eq(pr_program_intern(p, "alpha", 5), a);
	/* node names are the program's strings, and outlive their node */
	pr_node *x = add_input(g, "x");
	pr_node *y = slab_input(g, "y");
	cr_assert_null(pr_graph_append(g, y));
	cr_assert_eq(x->name, pr_program_intern(p, "x", 1));
	cr_assert_eq(y->name, pr_program_intern(p, "y", 1));
	const char *yname = y->name;
	pr_graph_erase(y);
	cr_assert_str_eq(yname, "y");
	free(s);
	pr_program_free(p);
}

Test(storage, name_index_at_scale)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	enum { N = 200000 };
	pr_node **nodes = calloc(N, sizeof *nodes);
	char name[32];
	pr_graph_reserve_nodes(g, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "t_%d", i);
		nodes[i] = slab_input(g, name);
		cr_assert_null(pr_graph_append(g, nodes[i]));
	}
	pr_node *dup = slab_input(g, "t_77");
	pr_err *e = pr_graph_append(g, dup);
	cr_assert_not_null(e, "a taken name is refused");
	pr_err_free(e);
	pr_graph_erase(dup);
	for (int i = 0; i < N; i += 2) {   /* rename the even ones */
		snprintf(name, sizeof name, "r_%d", i);
		cr_assert_null(pr_node_rename(nodes[i], name));
	}
	snprintf(name, sizeof name, "t_%d", 1);
	e = pr_node_rename(nodes[3], name);
	cr_assert_not_null(e, "renaming onto a taken name is refused");
	pr_err_free(e);
	for (int i = 0; i < N; i += 3) {   /* erase every third */
		pr_graph_erase(nodes[i]);
		nodes[i] = NULL;
	}
	for (int i = 0; i < N; i++) {
		char old[32];
		snprintf(old, sizeof old, "t_%d", i);
		snprintf(name, sizeof name, i % 2 ? "t_%d" : "r_%d", i);
		cr_assert_eq(pr_graph_find(g, name), nodes[i], "%s", name);
		if (i % 2 == 0)
			cr_assert_null(pr_graph_find(g, old), "%s was renamed", old);
	}
	/* t_0 is free again (renamed, then erased), t_1.. are taken where odd
	 * and not a multiple of three */
	int next = 0;
	char *f = pr_graph_fresh_name_next(g, "t", &next);
	cr_assert_str_eq(f, "t");
	free(f);
	cr_assert_null(pr_graph_append(g, slab_input(g, "t")));
	for (int k = 0; k < 1000; k++) {
		f = pr_graph_fresh_name_next(g, "t", &next);
		cr_assert_null(pr_graph_find(g, f), "%s is fresh", f);
		char *plain = pr_graph_fresh_name(g, "t");
		cr_assert_str_eq(plain, f, "the cursor finds the first free name");
		free(plain);
		cr_assert_null(pr_graph_append(g, slab_input(g, f)));
		free(f);
	}
	free(nodes);
	pr_program_free(p);
}

/* Is a one of the n slots at args, or an item of a list among them? */
static bool holds_slot(const pr_arg *args, int n, const pr_arg *a)
{
	for (int i = 0; i < n; i++)
		if (&args[i] == a ||
		    (args[i].kind == PR_ARG_LIST && holds_slot(args[i].u.items, args[i].n_items, a)))
			return true;
	return false;
}

/* Each use of v is a slot that reads v at its place in the list, and its
 * reader (the slot's owner) is the node that holds the slot. */
static void check_uses(const pr_node *v)
{
	for (int i = 0; i < v->n_uses; i++) {
		const pr_use *u = &v->uses[i];
		cr_assert_eq(u->arg->use_index, i);
		cr_assert_eq(u->arg->u.value, v);
		const pr_node *r = pr_use_user(u);
		cr_assert_not_null(r);
		cr_assert(holds_slot(r->args, r->n_args, u->arg), "use %d: its reader holds the slot", i);
	}
}

Test(storage, use_lists_grow_past_their_pool_blocks)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = add_input(g, "x");
	pr_node *y = slab_input(g, "y");
	cr_assert_null(pr_graph_append(g, y));
	enum { R = 5000 };   /* more readers than the biggest pool block holds */
	pr_node **readers = calloc(R, sizeof *readers);
	char name[32];
	for (int i = 0; i < R; i++) {
		snprintf(name, sizeof name, "r%d", i);
		readers[i] = pr_graph_new_node(g, PR_NODE_OP, name);
		pr_arg *args = i % 2 ? pr_graph_new_args(g, 2) : calloc(2, sizeof *args);
		args[0].kind = PR_ARG_VALUE;
		args[0].u.value = x;
		args[1].kind = PR_ARG_LIST;   /* a list reading y, from the same storage */
		args[1].n_items = 1;
		args[1].u.items = i % 2 ? pr_graph_new_args(g, 1) : calloc(1, sizeof(pr_arg));
		args[1].u.items[0].kind = PR_ARG_VALUE;
		args[1].u.items[0].u.value = y;
		if (i % 2)
			pr_node_set_graph_args(readers[i], args, 2);
		else
			pr_node_set_args(readers[i], args, 2);
		cr_assert_null(pr_graph_append(g, readers[i]));
	}
	cr_assert_eq(x->n_uses, R);
	cr_assert_eq(y->n_uses, R);
	check_uses(x);
	check_uses(y);
	for (int i = 0; i < R; i += 3) {   /* erase some, in an order apart from the list's */
		pr_graph_erase(readers[i]);
		readers[i] = NULL;
	}
	int left = R - (R + 2) / 3;
	cr_assert_eq(x->n_uses, left);
	check_uses(x);
	check_uses(y);
	pr_node *z = add_input(g, "z");
	pr_node_replace_all_uses(x, z);
	cr_assert_eq(x->n_uses, 0);
	cr_assert_eq(z->n_uses, left);
	check_uses(z);
	for (int i = 1; i < R; i += 3) {   /* new args, malloc'd, for graph-args nodes too */
		pr_arg *a = calloc(1, sizeof *a);
		a->kind = PR_ARG_VALUE;
		a->u.value = y;
		pr_node_set_args(readers[i], a, 1);
	}
	cr_assert_eq(z->n_uses, left - (R + 1) / 3);
	cr_assert_eq(y->n_uses, left);
	check_uses(z);
	check_uses(y);
	/* small lists churn through the pool blocks' free lists */
	for (int round = 0; round < 50; round++) {
		pr_node *v = slab_input(g, NULL);
		pr_node *w = pr_graph_new_node(g, PR_NODE_OP, NULL);
		pr_arg *a = pr_graph_new_args(g, 3);
		for (int k = 0; k < 3; k++) {
			a[k].kind = PR_ARG_VALUE;
			a[k].u.value = v;
		}
		pr_node_set_graph_args(w, a, 3);
		cr_assert_eq(v->n_uses, 3);
		check_uses(v);
		pr_graph_erase(w);
		cr_assert_eq(v->n_uses, 0);
		pr_graph_erase(v);
	}
	free(readers);
	pr_program_free(p);
}

/* args: x, [y, [x, y]], with its lists from the same storage as it. */
static pr_arg *nested_reads(pr_graph *g, bool graph_storage, pr_node *x, pr_node *y)
{
	pr_arg *a = graph_storage ? pr_graph_new_args(g, 2) : calloc(2, sizeof *a);
	pr_arg *outer = graph_storage ? pr_graph_new_args(g, 2) : calloc(2, sizeof *a);
	pr_arg *inner = graph_storage ? pr_graph_new_args(g, 2) : calloc(2, sizeof *a);
	a[0] = (pr_arg){.kind = PR_ARG_VALUE, .u.value = x};
	a[1] = (pr_arg){.kind = PR_ARG_LIST, .n_items = 2, .u.items = outer};
	outer[0] = (pr_arg){.kind = PR_ARG_VALUE, .u.value = y};
	outer[1] = (pr_arg){.kind = PR_ARG_LIST, .n_items = 2, .u.items = inner};
	inner[0] = (pr_arg){.kind = PR_ARG_VALUE, .u.value = x};
	inner[1] = (pr_arg){.kind = PR_ARG_VALUE, .u.value = y};
	return a;
}

/* How many of v's uses r reads through. */
static int uses_by(const pr_node *v, const pr_node *r)
{
	int n = 0;
	for (int i = 0; i < v->n_uses; i++)
		n += pr_use_user(&v->uses[i]) == r;
	return n;
}

/* A use entry is its slot alone (8 bytes): its reader is the slot's owner,
 * right through set_args (owned and graph storage, lists inside lists),
 * replace_all_uses, and the erase of a reader. An argument is 24 bytes: a
 * list keeps its count where a value keeps its use index. */
Test(storage, a_use_is_its_slot_and_its_reader_the_slots_owner)
{
	if (sizeof(void *) == 8) {
		cr_expect_eq(sizeof(pr_use), 8);
		cr_expect_eq(sizeof(pr_arg), 24);
	}
	cr_expect_eq(offsetof(pr_arg, n_items), offsetof(pr_arg, use_index), "a list's count is "
		     "where a value's use index is");
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = add_input(g, "x"), *y = add_input(g, "y"), *z = add_input(g, "z");
	pr_node *r = pr_graph_new_node(g, PR_NODE_OP, "r");
	pr_node *s = pr_graph_new_node(g, PR_NODE_OP, "s");
	pr_node_set_args(r, nested_reads(g, false, x, y), 2);
	pr_node_set_graph_args(s, nested_reads(g, true, x, y), 2);
	cr_assert_null(pr_graph_append(g, r));
	cr_assert_null(pr_graph_append(g, s));
	cr_assert_eq(x->n_uses, 4);
	cr_assert_eq(uses_by(x, r), 2);
	cr_assert_eq(uses_by(y, s), 2);
	check_uses(x);
	check_uses(y);
	pr_node_replace_all_uses(x, z);
	cr_assert_eq(x->n_uses, 0);
	cr_assert_eq(uses_by(z, r), 2);
	cr_assert_eq(uses_by(z, s), 2);
	check_uses(z);
	pr_node_replace_uses_except(y, x, s);
	cr_assert_eq(uses_by(x, r), 2, "r's reads of y moved");
	cr_assert_eq(uses_by(y, s), 2, "s's stayed");
	check_uses(x);
	check_uses(y);
	pr_graph_erase(s);
	cr_assert_eq(z->n_uses, 2);
	cr_assert_eq(uses_by(z, r), 2);
	cr_assert_eq(y->n_uses, 0);
	check_uses(z);
	check_uses(x);
	/* the uses' edits wrote the values' use indexes, never the lists' counts */
	cr_expect_eq(r->args[1].n_items, 2);
	cr_expect_eq(r->args[1].u.items[1].n_items, 2);
	cr_expect_eq(r->args[1].u.items[1].u.items[1].u.value, x);
	pr_program_free(p);
}

/* A node given arguments again lets go of the uses of those it had, graph
 * storage or its own, and registers the new ones. */
Test(storage, arguments_set_again_move_their_uses)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *v = slab_input(g, "v"), *w = slab_input(g, "w");
	pr_node *r = pr_graph_new_node(g, PR_NODE_OP, NULL);
	pr_arg *a = pr_graph_new_args(g, 2);
	a[0].kind = a[1].kind = PR_ARG_VALUE;
	a[0].u.value = v;
	a[1].u.value = w;
	pr_node_set_graph_args(r, a, 2);
	cr_assert_eq(v->n_uses, 1);
	cr_assert_eq(w->n_uses, 1);
	pr_arg *b = pr_graph_new_args(g, 1);
	b->kind = PR_ARG_VALUE;
	b->u.value = w;
	pr_node_set_graph_args(r, b, 1);
	cr_assert_eq(v->n_uses, 0, "the first arguments' uses are gone");
	cr_assert_eq(w->n_uses, 1);
	cr_assert_eq(w->uses[0].arg, b);
	cr_assert_eq(r->args, b);
	cr_assert_eq(r->n_args, 1);
	pr_arg *own = calloc(1, sizeof *own);
	own->kind = PR_ARG_VALUE;
	own->u.value = v;
	pr_node_set_args(r, own, 1);
	cr_assert_eq(w->n_uses, 0);
	cr_assert_eq(v->n_uses, 1);
	cr_assert_eq(pr_use_user(&v->uses[0]), r);
	check_uses(v);
	pr_node_set_graph_args(r, a, 2);   /* frees own, which r owned */
	cr_assert_eq(v->n_uses, 1);
	cr_assert_eq(w->n_uses, 1);
	check_uses(v);
	check_uses(w);
	pr_program_free(p);
}

/* Most values have one reader: its list takes a block of one, and a second
 * reader moves it into a block of two, the block of one going to the next
 * value's first reader. */
Test(storage, a_first_reader_takes_a_block_of_one)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *v = slab_input(g, "v"), *w = slab_input(g, "w");
	pr_node *r[3];
	const pr_use *first_block = NULL;
	for (int i = 0; i < 3; i++) {
		r[i] = pr_graph_new_node(g, PR_NODE_OP, NULL);
		pr_arg *a = pr_graph_new_args(g, 1);
		a->kind = PR_ARG_VALUE;
		a->u.value = i < 2 ? v : w;
		pr_node_set_graph_args(r[i], a, 1);
		if (i == 0) {
			cr_assert_eq(pr_node_uses_room(v), 1, "one reader, one entry");
			first_block = v->uses;
		}
	}
	cr_assert_eq(v->n_uses, 2);
	cr_assert_eq(pr_node_uses_room(v), 2);
	cr_assert_eq(pr_use_user(&v->uses[0]), r[0], "moving keeps the order");
	cr_assert_eq(pr_use_user(&v->uses[1]), r[1]);
	check_uses(v);
	cr_assert_eq(pr_node_uses_room(w), 1);
	cr_assert_eq(w->uses, first_block, "the block of one given back is taken again");
	check_uses(w);
	pr_program_free(p);
}

Test(storage, detached_nodes_keep_their_names_until_linked)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *n = pr_node_new(PR_NODE_INPUT, "a");
	cr_assert_null(pr_node_rename(n, "b"));
	cr_assert_str_eq(n->name, "b");
	cr_assert_null(pr_graph_append(g, n));
	cr_assert_eq(n->name, pr_program_intern(p, "b", 1), "interned once linked");
	cr_assert_eq(pr_graph_find(g, "b"), n);
	cr_assert_null(pr_graph_find(g, "a"));
	pr_node *s = pr_graph_new_node(g, PR_NODE_INPUT, "c");
	cr_assert_null(pr_node_rename(s, "d"));   /* unlinked: not indexed yet */
	cr_assert_null(pr_graph_find(g, "d"));
	cr_assert_null(pr_graph_append(g, s));
	cr_assert_eq(pr_graph_find(g, "d"), s);
	pr_node *never = pr_graph_new_node(g, PR_NODE_INPUT, "e");   /* freed with g */
	never->of_kind.input->name = strdup("quoted");
	pr_program_free(p);
}

Test(storage, input_records_are_inputs_only)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *op = pr_graph_new_node(g, PR_NODE_OP, "op");
	pr_node *det = pr_node_new(PR_NODE_DELEGATE, NULL);
	/* Read on any kind: the zeros every node had before inputs had records. */
	cr_assert_eq(pr_node_input(op), &pr_input_none);
	cr_assert_eq(pr_node_input(det), &pr_input_none, "non-inputs share one record");
	cr_expect_eq(pr_input_none.kind, PR_INPUT_POSITIONAL);
	cr_expect_null(pr_input_none.name);
	cr_expect_eq(pr_input_none.data.kind, PR_DATA_NONE);
	pr_node *a = pr_graph_new_node(g, PR_NODE_INPUT, "a");
	pr_node *b = pr_node_new(PR_NODE_INPUT, "b");
	cr_assert(pr_node_input(a) != &pr_input_none && pr_node_input(b) != &pr_input_none &&
		  a->of_kind.input != b->of_kind.input);
	cr_expect_eq(pr_node_input(b)->data.kind, PR_DATA_NONE);
	cr_assert_str_eq(b->name, "b", "a detached input's name after its record");
	/* A parser that learns the kind later: slab and detached nodes alike. */
	pr_node_make_input(op);
	pr_node_make_input(det);
	cr_expect_eq(op->kind, PR_NODE_INPUT);
	cr_assert(pr_node_input(op) != &pr_input_none && pr_node_input(det) != &pr_input_none);
	cr_assert(op->of_kind.input != a->of_kind.input && det->of_kind.input != b->of_kind.input &&
		  det->of_kind.input != a->of_kind.input);
	op->of_kind.input->name = strdup("x");
	det->of_kind.input->name = strdup("y");
	a->of_kind.input->data.kind = PR_DATA_LIST;
	a->of_kind.input->data.values = calloc(2, sizeof(double));
	a->of_kind.input->data.n_values = 2;
	/* An erased input's record goes to the next input made, zeroed. */
	pr_input *old = a->of_kind.input;
	pr_graph_erase(a);
	pr_node *c = pr_graph_new_node(g, PR_NODE_INPUT, "c");
	cr_expect_eq(c->of_kind.input, old);
	cr_expect_eq(c->of_kind.input->data.kind, PR_DATA_NONE);
	cr_expect_null(c->of_kind.input->data.values);
	cr_expect_null(pr_node_input(pr_graph_new_node(g, PR_NODE_OP, "d"))->name);
	pr_graph_erase(det);
	pr_graph_erase(b);
	cr_assert_null(pr_graph_append(g, op));
	pr_program_free(p);   /* op's, c's and d's parts with the graph */
}

/* ---- of_kind: the pointers only one kind has, overlaid ----------------- */

/* Each accessor gives n's member only when n is of its kind. */
static void expect_of_kind(const pr_node *n, const pr_input *in, const pr_schema *s,
			   const pr_delegate *d, const pr_writeback *w)
{
	cr_expect_eq(pr_node_input(n), in, "kind %d: input", (int)n->kind);
	cr_expect_eq(pr_node_schema(n), s, "kind %d: schema", (int)n->kind);
	cr_expect_eq(pr_node_delegate(n), d, "kind %d: delegate", (int)n->kind);
	cr_expect_eq(pr_node_writebacks(n), w, "kind %d: write-backs", (int)n->kind);
}

Test(of_kind, a_node_is_128_bytes_with_one_pointer_for_five)
{
	if (sizeof(void *) == 8)
		cr_expect_eq(sizeof(pr_node), 128);
	size_t at = offsetof(pr_node, of_kind);
	cr_expect_eq(sizeof(((pr_node *)0)->of_kind), sizeof(void *));
	cr_expect_eq(offsetof(pr_node, of_kind.input), at);
	cr_expect_eq(offsetof(pr_node, of_kind.schema), at);
	cr_expect_eq(offsetof(pr_node, of_kind.delegate), at);
	cr_expect_eq(offsetof(pr_node, of_kind.writebacks), at);
	cr_expect_eq(offsetof(pr_node, of_kind.index), at, "a getitem's index too");
}

/* A 128-byte node on a line of its own never spans a third line. */
Test(of_kind, slab_slots_start_on_a_cache_line)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	for (int i = 0; i < 300; i++) {   /* past the first chunk's 64 slots */
		pr_node *n = pr_graph_new_node(g, PR_NODE_OP, NULL);
		cr_expect_eq((uintptr_t)n % 64, 0, "slot %d", i);
	}
	pr_graph_reserve_nodes(g, 1000);
	cr_expect_eq((uintptr_t)pr_graph_new_node(g, PR_NODE_OP, NULL) % 64, 0, "a reserved chunk's");
	pr_program_free(p);
}

/* tensor and elems share their bytes: a tensor's are no elements to free,
 * when it becomes a tuple or when it is erased. */
Test(of_kind, only_a_tuple_has_elements_to_free)
{
	cr_expect_eq(offsetof(pr_type, tensor), offsetof(pr_type, elems));
	if (sizeof(void *) == 8)
		cr_expect_eq(sizeof(pr_type), 40);
	pr_graph *g;
	pr_program *p = one_method(&g);
	int64_t shape[2] = {2, 3};
	for (int detached = 0; detached < 2; detached++) {
		pr_node *n = detached ? pr_node_new(PR_NODE_OP, NULL) :
			     pr_graph_new_node(g, PR_NODE_OP, NULL);
		n->type.kind = PR_TYPE_TENSOR;
		pr_spec_init(&n->type.tensor, PR_F32, 2, shape);
		pr_spec *e = pr_xmalloc(sizeof *e);
		*e = n->type.tensor;
		pr_node_set_tuple(n, e, 1, PR_STORAGE_OWNED);
		cr_expect_eq(n->type.elems, e);
		cr_expect_eq(n->type.elems[0].shape[1], 3);
		pr_node_set_tuple(n, NULL, 0, PR_STORAGE_OWNED);   /* frees e */
		n->type.kind = PR_TYPE_TENSOR;
		pr_spec_init(&n->type.tensor, PR_F32, 2, shape);
		pr_graph_erase(n);
	}
	pr_program_free(p);
}

Test(of_kind, each_accessor_answers_for_its_kind_only)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_schema *s;
	pr_delegate *d;
	cr_assert_null(pr_program_declare_op(p, "aten::neg(Tensor self) -> Tensor", &s));
	cr_assert_null(pr_program_add_delegate(p, "body", &d));
	for (int detached = 0; detached < 2; detached++) {
		pr_node *n[5];
		for (int k = PR_NODE_INPUT; k <= PR_NODE_RETURN; k++)
			n[k] = detached ? pr_node_new((pr_node_kind)k, NULL) :
				   pr_graph_new_node(g, (pr_node_kind)k, NULL);
		/* made with their kind's member NULL, an input with its own record */
		cr_assert(pr_node_input(n[PR_NODE_INPUT]) != &pr_input_none);
		cr_assert_not_null(pr_node_input(n[PR_NODE_INPUT]));
		for (int k = PR_NODE_OP; k <= PR_NODE_RETURN; k++)
			cr_expect_null(n[k]->of_kind.schema, "kind %d made with a member", k);
		n[PR_NODE_OP]->of_kind.schema = s;
		n[PR_NODE_DELEGATE]->of_kind.delegate = d;
		pr_writeback *w = calloc(1, sizeof *w);
		pr_node_set_writebacks(n[PR_NODE_RETURN], w, PR_STORAGE_OWNED);
		const pr_input *own = n[PR_NODE_INPUT]->of_kind.input;
		expect_of_kind(n[PR_NODE_INPUT], own, NULL, NULL, NULL);
		expect_of_kind(n[PR_NODE_OP], &pr_input_none, s, NULL, NULL);
		expect_of_kind(n[PR_NODE_DELEGATE], &pr_input_none, NULL, d, NULL);
		expect_of_kind(n[PR_NODE_GETITEM], &pr_input_none, NULL, NULL, NULL);
		expect_of_kind(n[PR_NODE_RETURN], &pr_input_none, NULL, NULL, w);
		for (int k = PR_NODE_INPUT; k <= PR_NODE_RETURN; k++)
			pr_graph_erase(n[k]);   /* the return frees w */
	}
	pr_program_free(p);
}

Test(of_kind, an_op_made_an_input_has_no_schema)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *n = pr_graph_new_node(g, PR_NODE_OP, "n");
	pr_node *det = pr_node_new(PR_NODE_OP, "det");
	pr_node_make_input(n);
	pr_node_make_input(det);
	for (int i = 0; i < 2; i++) {
		pr_node *x = i ? det : n;
		cr_expect_eq(x->kind, PR_NODE_INPUT);
		cr_assert(pr_node_input(x) != &pr_input_none);
		cr_expect_null(pr_node_schema(x));
		cr_expect_eq(pr_node_input(x)->kind, PR_INPUT_POSITIONAL);
		cr_expect_null(pr_node_input(x)->name);
		cr_expect_eq(pr_node_input(x)->data.kind, PR_DATA_NONE);
	}
	pr_node_set_input_name(det, strdup("q"), PR_STORAGE_OWNED);
	cr_expect_str_eq(pr_node_input(det)->name, "q");
	pr_graph_erase(det);
	pr_graph_erase(n);
	pr_program_free(p);
}

Test(of_kind, an_erased_inputs_slot_comes_back_as_an_op_without_a_schema)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *a = pr_graph_new_node(g, PR_NODE_INPUT, "a");
	pr_node_set_input_name(a, strdup("quoted"), PR_STORAGE_OWNED);
	pr_input *rec = a->of_kind.input;
	pr_graph_erase(a);
	pr_node *op = pr_graph_new_node(g, PR_NODE_OP, NULL);
	cr_assert_eq(op, a, "the erased slot is reused first");
	cr_expect_null(op->of_kind.schema, "the slot's record pointer is not a schema");
	expect_of_kind(op, &pr_input_none, NULL, NULL, NULL);
	/* and the record goes to the next input, not to the op */
	pr_node *b = pr_graph_new_node(g, PR_NODE_INPUT, "b");
	cr_expect_eq(b->of_kind.input, rec);
	cr_expect_null(pr_node_input(b)->name);
	/* a return's slot: its write-backs are not an op's schema either */
	pr_node *r = pr_graph_new_node(g, PR_NODE_RETURN, NULL);
	pr_node_set_writebacks(r, calloc(1, sizeof(pr_writeback)), PR_STORAGE_OWNED);
	pr_graph_erase(r);
	pr_node *op2 = pr_graph_new_node(g, PR_NODE_OP, NULL);
	cr_assert_eq(op2, r);
	expect_of_kind(op2, &pr_input_none, NULL, NULL, NULL);
	pr_program_free(p);
}

Test(of_kind, parsed_nodes_have_their_kinds_member)
{
	/* the parser makes each node as an op and learns its kind later */
	pr_program *p = tu_parse(
		"passrun 1\n"
		"op aten::neg(Tensor self) -> Tensor\n"
		"delegate @body backend=\"CudaBackend\" target_device=\"cpu\" {\n"
		"  %x: f32[2] = input\n"
		"  return %x\n"
		"}\n"
		"method @m {\n"
		"  %a: f32[2] = input buffer \"a\"\n"
		"  %n: f32[2] = aten::neg(%a)\n"
		"  %d: (f32[2]) = delegate @body(%n)\n"
		"  %e: f32[2] = getitem %d, 0\n"
		"  return %e -> buffer \"a\"\n"
		"}\n");
	pr_graph *g = pr_program_find_method(p, "m");
	pr_node *a = pr_graph_find(g, "a"), *n = pr_graph_find(g, "n");
	pr_node *d = pr_graph_find(g, "d"), *e = pr_graph_find(g, "e");
	cr_assert(a && n && d && e);
	cr_assert_str_eq(pr_node_input(a)->name, "a");
	expect_of_kind(a, a->of_kind.input, NULL, NULL, NULL);
	expect_of_kind(n, &pr_input_none, p->schemas[0], NULL, NULL);
	expect_of_kind(d, &pr_input_none, NULL, p->delegates[0], NULL);
	expect_of_kind(e, &pr_input_none, NULL, NULL, NULL);
	pr_node *ret = pr_graph_return(g);
	cr_assert_not_null(pr_node_writebacks(ret));
	expect_of_kind(ret, &pr_input_none, NULL, NULL, ret->of_kind.writebacks);
	cr_expect_str_eq(pr_node_writebacks(ret)[0].target, "a");
	pr_program_free(p);
}

/* The hash spelt out a byte at a time (little-endian words, as on the
 * machines the tests run on): an oracle that shares no code with the one
 * under test. */
static uint32_t hash_reference(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t done = n / 8 * 8;
	for (size_t at = 0; at <= done; at += 8) {
		uint64_t w = 0;
		size_t take = at < done ? 8 : n - done;
		for (size_t k = 0; k < take; k++)
			w |= (uint64_t)(unsigned char)s[at + k] << (8 * k);
		h = (h ^ w) * (at < done ? 0xbf58476d1ce4e5b9ull : 0x94d049bb133111ebull);
		h ^= h >> (at < done ? 31 : 29);
	}
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ h >> 32);
}

Test(strings, hash_reads_exactly_n_bytes)
{
	const char *text = "layers.12.attention.wq.weight_h2d_cuda0";
	for (size_t n = 0; n <= strlen(text); n++) {
		/* Its own malloc of n bytes: a read past them is ASan's to see. */
		char *s = malloc(n ? n : 1);
		memcpy(s, text, n);
		cr_expect_eq(pr_str_hash(s, n), hash_reference(s, n), "length %zu", n);
		/* Every tail byte counts, each in its place. */
		for (size_t i = 0; i < n; i++) {
			s[i] ^= 1;
			cr_expect_neq(pr_str_hash(s, n), hash_reference(text, n), "byte %zu of %zu", i, n);
			s[i] ^= 1;
		}
		free(s);
	}
}


/* ---- fresh nodes linked in one step, and their one value argument ---- */

/* The links and orders of g's list agree, each node before the next. */
static void check_list(const pr_graph *g)
{
	int64_t walked = 0;
	const pr_node *prev = NULL;
	pr_graph_for_each(g, n) {
		cr_assert_eq(n->prev, prev);
		cr_assert(!prev || pr_node_before(prev, n), "%%%s runs after %%%s",
			  n->name, prev->name);
		prev = n;
		walked++;
	}
	cr_assert_eq(g->last, prev);
	cr_assert_eq(walked, g->n_nodes);
}

/* A node made before pos with base (NUL-terminated here) and the cursor
 * next (NULL: none, and next_plain is not used): named as the cursor search names it, linked before pos, found. */
static pr_node *fresh_before_matches(pr_node *pos, const char *base, int *next, int *next_plain)
{
	pr_graph *g = pos->graph;
	char *want = pr_graph_fresh_name_next(g, base, next ? next_plain : NULL);
	pr_node *before = pos->prev;
	int64_t count = g->n_nodes;
	pr_node *n = pr_graph_new_node_fresh_before(pos, PR_NODE_OP, base, strlen(base),
						    pr_str_hash(base, strlen(base)), next);
	cr_assert_str_eq(n->name, want);
	if (next)
		cr_assert_eq(*next, *next_plain);
	cr_assert_eq(n->name, pr_program_intern(g->program, want, strlen(want)), "interned");
	cr_assert_eq(pr_graph_find(g, want), n, "indexed under its name");
	cr_assert_eq(n->graph, g);
	cr_assert_eq(n->kind, PR_NODE_OP);
	cr_assert_eq(n->next, pos);
	cr_assert_eq(n->prev, before);
	cr_assert_eq(pos->prev, n);
	cr_assert_eq(before ? before->next : g->first, n);
	cr_assert_eq(g->n_nodes, count + 1);
	free(want);
	return n;
}

Test(fresh_before, names_links_and_orders_as_the_two_steps_would)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = add_input(g, "x");
	add_input(g, "x_h2d_cuda0_1");   /* a clash ahead of the cursor */
	pr_node *r = new_reader("r", x, x);
	cr_assert_null(pr_graph_append(g, r));
	int next = 0, plain = 0;
	const char *want[] = {"x_h2d_cuda0", "x_h2d_cuda0_2", "x_h2d_cuda0_3"};
	pr_node *made[3];
	for (int i = 0; i < 3; i++) {
		made[i] = fresh_before_matches(r, "x_h2d_cuda0", &next, &plain);
		cr_assert_str_eq(made[i]->name, want[i]);
		check_list(g);
	}
	cr_assert_eq(next, 4);
	/* no cursor, the base taken: base_1 is taken too, so base_4 */
	pr_node *bare = fresh_before_matches(r, "x_h2d_cuda0", NULL, NULL);
	cr_assert_str_eq(bare->name, "x_h2d_cuda0_4");
	/* before the first node: the graph's first changes */
	pr_node *head = fresh_before_matches(g->first, "x", NULL, NULL);
	cr_assert_str_eq(head->name, "x_1");
	cr_assert_eq(g->first, head);
	check_list(g);
	/* erased again: unlinked, unnamed, the name free for the next one */
	pr_graph_erase(made[1]);
	cr_assert_null(pr_graph_find(g, "x_h2d_cuda0_2"));
	cr_assert_eq(made[0]->next, made[2]);
	pr_graph_erase(head);
	cr_assert_eq(g->first, x);
	check_list(g);
	int again = 0, again_plain = 0;
	pr_node *refill = fresh_before_matches(made[0], "x_h2d_cuda0", &again, &again_plain);
	cr_assert_str_eq(refill->name, "x_h2d_cuda0_2", "the erased name is free again");
	check_list(g);
	pr_program_free(p);
}

/* Before a detached node that was linked (its own malloc), and with the
 * base bound in another graph of the program (that graph keeps its node,
 * this one gets its own under the same name) or held by an unlinked node
 * (not a name in use). */
Test(fresh_before, detached_positions_and_names_other_graphs_hold)
{
	pr_program *p = pr_program_new();
	pr_graph *g, *h;
	cr_assert_null(pr_program_add_method(p, "forward", &g));
	cr_assert_null(pr_program_add_method(p, "backward", &h));
	pr_node *hx = add_input(h, "t_d2h");
	pr_node *x = add_input(g, "x");
	pr_node *heap = new_reader("heap", x, x);   /* pr_node_new, then linked */
	cr_assert_null(pr_graph_append(g, heap));
	pr_node *n = fresh_before_matches(heap, "t_d2h", NULL, NULL);
	cr_assert_str_eq(n->name, "t_d2h");
	cr_assert_eq(pr_graph_find(h, "t_d2h"), hx, "the other graph keeps its node");
	cr_assert_eq(pr_graph_find(g, "t_d2h"), n);
	pr_node *unlinked = pr_graph_new_node(g, PR_NODE_OP, "u");
	pr_node *u = fresh_before_matches(heap, "u", NULL, NULL);
	cr_assert_str_eq(u->name, "u", "an unlinked node's name is not in use");
	cr_assert_eq(u->name, unlinked->name);
	check_list(g);
	pr_graph_erase(n);
	cr_assert_null(pr_graph_find(g, "t_d2h"));
	cr_assert_eq(pr_graph_find(h, "t_d2h"), hx);
	pr_graph_erase(unlinked);
	pr_program_free(p);
}

/* Many nodes before one place use up the gap between two orders: the graph
 * is renumbered when next asked, and from a stale order too. */
Test(fresh_before, orders_hold_past_a_used_up_gap_and_a_stale_graph)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *a = add_input(g, "a");
	pr_node *b = add_input(g, "b");
	int next = 0;
	pr_node *prev = a;
	for (int i = 0; i < 200; i++) {
		pr_node *n = pr_graph_new_node_fresh_before(b, PR_NODE_OP, "c", 1,
							    pr_str_hash("c", 1), &next);
		cr_assert(pr_node_before(prev, n), "insert %d", i);
		cr_assert(pr_node_before(n, b));
		prev = n;
	}
	cr_assert_eq(next, 200);
	cr_assert_not_null(pr_graph_find(g, "c_199"));
	g->order_stale = true;   /* as an insertion that found no gap leaves it */
	pr_node *late = pr_graph_new_node_fresh_before(a, PR_NODE_OP, "c", 1, pr_str_hash("c", 1),
						       &next);
	cr_assert_str_eq(late->name, "c_200");
	cr_assert(pr_node_before(late, a));
	cr_assert(!pr_node_before(b, late));
	check_list(g);
	pr_program_free(p);
}

/* A fresh node's one value argument: graph storage, owned by the node,
 * registered in the value's list as pr_node_set_graph_args registers it;
 * it moves with pr_arg_set_value and goes with the node. */
Test(fresh_before, a_value_argument_is_one_use)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = add_input(g, "x");
	pr_node *y = add_input(g, "y");
	pr_node *r = new_reader("r", x, y);
	cr_assert_null(pr_graph_append(g, r));
	int next = 0;
	pr_node *c[3];
	for (int i = 0; i < 3; i++) {
		c[i] = pr_graph_new_node_fresh_before(r, PR_NODE_OP, "x_copy", 6,
						      pr_str_hash("x_copy", 6), &next);
		pr_node_set_value_arg(c[i], x);
		cr_assert_eq(c[i]->n_args, 1);
		cr_assert_eq(c[i]->args[0].kind, PR_ARG_VALUE);
		cr_assert_eq(c[i]->args[0].u.value, x);
		cr_assert_eq(c[i]->args[0].owner, c[i]);
		cr_assert_eq(x->n_uses, 2 + i, "r and %d copies", i + 1);
		cr_assert_eq(pr_use_user(&x->uses[1 + i]), c[i], "appended, as set_graph_args appends");
		cr_assert_eq(x->uses[1 + i].arg, &c[i]->args[0]);
		check_uses(x);
	}
	/* the same list as the two steps give */
	pr_node *twin = pr_graph_new_node(g, PR_NODE_OP, NULL);
	pr_arg *a = pr_graph_new_args(g, 1);
	a->kind = PR_ARG_VALUE;
	a->u.value = y;
	pr_node_set_graph_args(twin, a, 1);
	cr_assert_eq(y->n_uses, 2);
	cr_assert_eq(y->uses[1].arg->use_index, 1);
	pr_arg_set_value(&c[1]->args[0], y);
	cr_assert_eq(x->n_uses, 3);
	cr_assert_eq(y->n_uses, 3);
	cr_assert_eq(pr_use_user(&y->uses[2]), c[1]);
	check_uses(x);
	check_uses(y);
	pr_graph_erase(c[0]);   /* its argument is the graph's: not freed */
	cr_assert_eq(x->n_uses, 2);
	check_uses(x);
	for (int i = 0; i < x->n_uses; i++)
		cr_assert_neq(pr_use_user(&x->uses[i]), c[0]);
	pr_arg_set_value(&twin->args[0], NULL);
	pr_graph_erase(twin);
	pr_program_free(p);
}

/* pr_node_interpose leaves the lists pr_arg_set_value and then
 * pr_node_set_value_arg leave: the same entries in the same places, for a
 * reader in the middle of its value's list and at its end. */
Test(fresh_before, interpose_is_set_value_then_value_arg)
{
	pr_graph *g;
	pr_program *p = one_method(&g);
	pr_node *x = add_input(g, "x");
	pr_node *y = add_input(g, "y");
	pr_node *r[4];
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof name, "r%d", i);
		r[i] = new_reader(name, x, y);
		cr_assert_null(pr_graph_append(g, r[i]));
	}
	pr_node *a = pr_graph_new_node_fresh_before(r[1], PR_NODE_OP, "a", 1, pr_str_hash("a", 1),
						    NULL);
	pr_node *b = pr_graph_new_node_fresh_before(r[1], PR_NODE_OP, "b", 1, pr_str_hash("b", 1),
						    NULL);
	pr_arg_set_value(&r[1]->args[0], a);   /* x: r0 r3 r2, then a */
	pr_node_set_value_arg(a, x);
	pr_node_interpose(b, &r[1]->args[1]);  /* y: r0 r3 r2, then b */
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pr_use_user(&x->uses[i]) == a, pr_use_user(&y->uses[i]) == b, "%d", i);
		if (pr_use_user(&x->uses[i]) != a)
			cr_assert_eq(pr_use_user(&x->uses[i]), pr_use_user(&y->uses[i]), "%d", i);
	}
	cr_assert_eq(b->n_args, 1);
	cr_assert_eq(b->args[0].u.value, y);
	cr_assert_eq(b->args[0].owner, b);
	cr_assert_eq(b->n_uses, 1);
	cr_assert_eq(b->uses[0].arg, &r[1]->args[1]);
	cr_assert_eq(r[1]->args[1].u.value, b);
	pr_node *c = pr_graph_new_node_fresh_before(b, PR_NODE_OP, "c", 1, pr_str_hash("c", 1),
						    NULL);
	pr_node_interpose(c, y->uses[y->n_uses - 1].arg);   /* the last entry: b's own */
	cr_assert_eq(pr_use_user(&y->uses[y->n_uses - 1]), c);
	cr_assert_eq(b->args[0].u.value, c);
	check_uses(x);
	check_uses(y);
	check_uses(b);
	check_uses(c);
	pr_program_free(p);
}
