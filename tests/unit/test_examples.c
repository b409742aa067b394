/* test_examples.c: the example programs and the program generators.
 *
 * Every .pg file in examples/ is an input the placement passes, the runtime and the
 * benchmarks rely on, so each one must parse, verify with no error, print as a
 * fixed point, and say in its header comment which rule of docs/placement-rules.md it
 * shows. Every rule id (B1-B5, F1-F10, M1-M5) has at least one example named
 * after it, and examples/README.md lists every file.
 *
 * The generators in examples/gen/ (python3, standard library only) are run
 * into the test's temporary folder: their programs must parse and verify too,
 * be the same for the same seed, and gen_decoder.py must give exactly the
 * number of method nodes asked for. Without python3 those tests are skipped. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/diag.h"
#include "passrun/format.h"
#include "passrun/verify.h"
#include "testutil.h"

#define EXAMPLES_DIR PASSRUN_SOURCE_DIR "/examples"
#define GEN_DIR PASSRUN_SOURCE_DIR "/examples/gen"
#define MAX_EXAMPLES 256

static const char *const rule_ids[] = {
	"B1", "B2", "B3", "B4", "B5",
	"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10",
	"M1", "M2", "M3", "M4", "M5",
};
#define N_RULES (sizeof rule_ids / sizeof rule_ids[0])

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the .pg files in examples/, sorted; returns how many. */
static int list_examples(char **names, int cap)
{
	DIR *d = opendir(EXAMPLES_DIR);
	cr_assert(d, "cannot open %s", EXAMPLES_DIR);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 3 && strcmp(e->d_name + len - 3, ".pg") == 0) {
			cr_assert(n < cap, "more than %d examples", cap);
			names[n++] = strdup(e->d_name);
		}
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	return n;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
}

/* Loads path and runs the verifier; fails the test with every finding. */
static pr_program *load_and_verify(const char *path)
{
	pr_program *p = NULL;
	pr_err *e = pr_program_load_file(path, &p);
	if (e) {
		char msg[2048];
		snprintf(msg, sizeof msg, "%s", pr_err_message(e));
		pr_err_free(e);
		cr_assert_fail("%s does not load: %s", path, msg);
	}
	pr_diags d;
	pr_diags_init(&d, path);
	int errors = pr_verify(p, &d, "verifier");
	if (errors) {
		pr_diags_print(&d, 0, stderr);
		pr_diags_free(&d);
		pr_program_free(p);
		cr_assert_fail("%s: %d verifier errors (printed above)", path, errors);
	}
	pr_diags_free(&d);
	return p;
}

static int64_t method_nodes(const pr_program *p)
{
	int64_t n = 0;
	for (int i = 0; i < p->n_methods; i++)
		n += p->methods[i]->n_nodes;
	return n;
}

/* The comment lines at the top of a file: every line up to the first one
 * that is neither blank, a comment, nor the `passrun 1` line. malloc'd. */
static char *header_comment(const char *text)
{
	size_t cap = strlen(text) + 1, n = 0;
	char *out = malloc(cap);
	const char *s = text;
	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);
		const char *t = s;
		while (t < s + len && (*t == ' ' || *t == '\t'))
			t++;
		bool blank = t == s + len;
		if (!blank && *t != '#' && strncmp(t, "passrun 1", 9) != 0)
			break;
		if (!blank && *t == '#') {
			memcpy(out + n, t, (size_t)(s + len - t));
			n += (size_t)(s + len - t);
			out[n++] = '\n';
		}
		s = eol ? eol + 1 : s + len;
	}
	out[n] = 0;
	return out;
}

/* Does text mention rule id as a word ("F1" but not inside "F10")? */
static bool mentions_rule(const char *text, const char *id)
{
	size_t k = strlen(id);
	for (const char *p = text; (p = strstr(p, id)); p += k) {
		bool left = p == text || !isalnum((unsigned char)p[-1]);
		bool right = !isdigit((unsigned char)p[k]);
		if (left && right)
			return true;
	}
	return false;
}

/* The rule a file name claims: "f6_shared_input.pg" -> "F6"; "" if none. */
static void rule_of_name(const char *name, char *id, size_t cap)
{
	id[0] = 0;
	if (!strchr("bfm", name[0]) || !isdigit((unsigned char)name[1]))
		return;
	size_t i = 1;
	while (isdigit((unsigned char)name[i]))
		i++;
	if (name[i] != '_' || i + 1 >= cap)
		return;
	id[0] = (char)toupper((unsigned char)name[0]);
	memcpy(id + 1, name + 1, i - 1);
	id[i] = 0;
}

Test(examples, every_example_parses_and_verifies)
{
	char *names[MAX_EXAMPLES];
	int n = list_examples(names, MAX_EXAMPLES);
	cr_assert_gt(n, 0, "no examples found in %s", EXAMPLES_DIR);
	for (int i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", EXAMPLES_DIR, names[i]);
		pr_program *p = load_and_verify(path);
		cr_expect_gt(p->n_methods, 0, "%s has no method", names[i]);
		pr_program_free(p);
	}
	free_names(names, n);
}

Test(examples, every_example_prints_as_a_fixed_point)
{
	char *names[MAX_EXAMPLES];
	int n = list_examples(names, MAX_EXAMPLES);
	for (int i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", EXAMPLES_DIR, names[i]);
		pr_program *p = load_and_verify(path);
		size_t len1, len2;
		char *once = pr_text_print(p, &len1);
		pr_program *q = NULL;
		pr_err *e = pr_text_parse(names[i], once, len1, &q);
		cr_assert_null(e, "%s: printed text does not parse: %s", names[i],
			       e ? pr_err_message(e) : "");
		char *twice = pr_text_print(q, &len2);
		cr_expect_str_eq(once, twice, "%s: print(parse(print(x))) differs", names[i]);
		free(once);
		free(twice);
		pr_program_free(q);
		pr_program_free(p);
	}
	free_names(names, n);
}

Test(examples, every_example_names_its_rule_in_its_header)
{
	char *names[MAX_EXAMPLES];
	int n = list_examples(names, MAX_EXAMPLES);
	for (int i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", EXAMPLES_DIR, names[i]);
		char *text = tu_read_file(path, NULL);
		cr_assert(text, "cannot read %s", path);
		cr_expect(strncmp(text, "passrun 1\n", 10) == 0,
			  "%s does not start with the format version line", names[i]);
		char *head = header_comment(text);
		bool any = false;
		for (size_t r = 0; r < N_RULES; r++)
			any = any || mentions_rule(head, rule_ids[r]);
		cr_expect(any, "%s: its header comment names no rule id (B1..M5)", names[i]);
		char id[8];
		rule_of_name(names[i], id, sizeof id);
		if (id[0])
			cr_expect(mentions_rule(head, id), "%s is named after %s but its header "
				  "does not mention %s", names[i], id, id);
		cr_expect(strstr(head, "passrun ") != NULL,
			  "%s: its header says no command line to run it with", names[i]);
		free(head);
		free(text);
	}
	free_names(names, n);
}

Test(examples, every_rule_has_an_example)
{
	char *names[MAX_EXAMPLES];
	int n = list_examples(names, MAX_EXAMPLES);
	for (size_t r = 0; r < N_RULES; r++) {
		bool found = false;
		for (int i = 0; i < n && !found; i++) {
			char id[8];
			rule_of_name(names[i], id, sizeof id);
			found = strcmp(id, rule_ids[r]) == 0;
		}
		cr_expect(found, "no example named %c%s_*.pg for rule %s",
			  tolower((unsigned char)rule_ids[r][0]), rule_ids[r] + 1, rule_ids[r]);
	}
	free_names(names, n);
}

Test(examples, readme_lists_every_example)
{
	char *readme = tu_read_file(EXAMPLES_DIR "/README.md", NULL);
	cr_assert(readme, "examples/README.md is missing");
	char *names[MAX_EXAMPLES];
	int n = list_examples(names, MAX_EXAMPLES);
	for (int i = 0; i < n; i++)
		cr_expect(strstr(readme, names[i]) != NULL, "examples/README.md does not list %s",
			  names[i]);
	free_names(names, n);
	free(readme);
}

/* ---- generators ------------------------------------------------------- */

static void need_python3(void)
{
	tu_result r = tu_run("command -v python3");
	int status = r.status;
	tu_result_free(&r);
	if (status != 0)
		cr_skip_test("python3 is not installed: the generators cannot run");
}

/* Runs a generator with args into the temporary folder; returns the path. */
static const char *generate(const char *script, const char *args, const char *out_name)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/%s", tu_temp_dir(), out_name);
	tu_result r = tu_run("python3 %s/%s %s > %s", GEN_DIR, script, args, path);
	cr_assert_eq(r.status, 0, "%s %s failed (%d): %s", script, args, r.status, r.err);
	tu_result_free(&r);
	return path;
}

/* The tensor whose storage v is: through views and in-place results. */
static const pr_node *storage_base(const pr_node *v)
{
	while (v->kind == PR_NODE_OP && v->of_kind.schema->n_returns == 1) {
		int a = pr_schema_return_alias(v->of_kind.schema, 0);
		if (a < 0 || a >= v->n_args || v->args[a].kind != PR_ARG_VALUE)
			break;
		v = v->args[a].u.value;
	}
	return v;
}

static bool same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
	bool same = x && y && la == lb && memcmp(x, y, la) == 0;
	free(x);
	free(y);
	return same;
}

Test(generators, decoder_gives_exactly_the_nodes_asked_for)
{
	need_python3();
	static const int sizes[] = {40, 97, 500, 2000};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char args[64], name[64];
		snprintf(args, sizeof args, "--nodes %d --seed 3", sizes[i]);
		snprintf(name, sizeof name, "dec%d.pg", sizes[i]);
		pr_program *p = load_and_verify(generate("gen_decoder.py", args, name));
		cr_expect_eq(method_nodes(p), sizes[i], "gen_decoder.py %s: %lld method nodes",
			     args, (long long)method_nodes(p));
		pr_program_free(p);
	}
}

Test(generators, decoder_has_the_shape_the_benchmarks_need)
{
	need_python3();
	const char *path = generate("gen_decoder.py", "--nodes 1000 --seed 5", "dec_shape.pg");
	pr_program *p = load_and_verify(path);
	pr_graph *g = pr_program_find_method(p, "forward");
	cr_assert(g, "no method @forward");
	int device_calls = 0, host_writes = 0, constants_to_delegates = 0, max_delegate_readers = 0;
	pr_graph_for_each(g, n) {
		if (n->kind == PR_NODE_DELEGATE) {
			const char *dev = pr_delegate_spec(n->of_kind.delegate, "target_device");
			device_calls += dev && strcmp(dev, "cuda:0") == 0;
		}
		if (n->kind == PR_NODE_OP)
			for (int a = 0; a < n->of_kind.schema->n_args && a < n->n_args; a++)
				host_writes += pr_schema_arg_writes(n->of_kind.schema, a);
		if (n->kind != PR_NODE_INPUT)
			continue;
		int readers = 0;
		for (int u = 0; u < n->n_uses; u++)
			readers += pr_use_user(&n->uses[u])->kind == PR_NODE_DELEGATE;
		if (n->of_kind.input->kind == PR_INPUT_PARAMETER && readers > 0)
			constants_to_delegates++;
		if (n->of_kind.input->kind == PR_INPUT_USER && readers > max_delegate_readers)
			max_delegate_readers = readers;
	}
	cr_expect_gt(device_calls, 50, "only %d cuda:0 delegate calls", device_calls);
	cr_expect_gt(host_writes, 10, "only %d host writes", host_writes);
	cr_expect_gt(constants_to_delegates, 20, "only %d constants feed delegates",
		     constants_to_delegates);
	cr_expect_gt(max_delegate_readers, 5, "no user input is read by several delegates");
	pr_program_free(p);
}

Test(generators, same_seed_same_program_other_seed_other_program)
{
	need_python3();
	const char *a = strdup(generate("gen_decoder.py", "--nodes 300 --seed 7", "d7a.pg"));
	const char *b = strdup(generate("gen_decoder.py", "--nodes 300 --seed 7", "d7b.pg"));
	const char *c = strdup(generate("gen_decoder.py", "--nodes 300 --seed 8", "d8.pg"));
	cr_expect(same_file(a, b), "gen_decoder.py is not deterministic for a seed");
	cr_expect(!same_file(a, c), "gen_decoder.py ignores its seed");
	const char *r1 = strdup(generate("gen_random.py", "--seed 11", "r11a.pg"));
	const char *r2 = strdup(generate("gen_random.py", "--seed 11", "r11b.pg"));
	const char *r3 = strdup(generate("gen_random.py", "--seed 12", "r12.pg"));
	cr_expect(same_file(r1, r2), "gen_random.py is not deterministic for a seed");
	cr_expect(!same_file(r1, r3), "gen_random.py ignores its seed");
	free((void *)a), free((void *)b), free((void *)c);
	free((void *)r1), free((void *)r2), free((void *)r3);
}

Test(generators, random_programs_parse_and_verify)
{
	need_python3();
	/* One python run writes many programs, so the test stays fast. */
	char dir[512];
	snprintf(dir, sizeof dir, "%s/random", tu_temp_dir());
	tu_result r = tu_run("mkdir -p %s && python3 %s/gen_random.py --seed 1 --count 200 "
			     "--out-dir %s", dir, GEN_DIR, dir);
	cr_assert_eq(r.status, 0, "gen_random.py failed (%d): %s", r.status, r.err);
	tu_result_free(&r);
	int features[8] = {0};
	for (int s = 1; s <= 200; s++) {
		char path[600];
		snprintf(path, sizeof path, "%s/random_%d.pg", dir, s);
		pr_program *p = load_and_verify(path);
		char *text = tu_read_file(path, NULL);
		features[0] += strstr(text, "target_device=\"cuda:1\"") != NULL;
		features[1] += strstr(text, "target_device=\"cpu\"") != NULL;
		features[2] += strstr(text, "custom::accumulate(%") != NULL;
		features[3] += strstr(text, "{shape_only}") != NULL && tu_count(text, "sym_size.int(%") > 0;
		features[4] += strstr(text, "-> buffer") != NULL;
		features[5] += strstr(text, "{strides=") != NULL;
		features[6] += strstr(text, "custom::kv_update(%") != NULL;
		free(text);
		pr_program_free(p);
	}
	static const char *const what[] = {
		"cuda:1 delegates", "cpu delegates", "custom::accumulate", "sym_size readers",
		"buffer write-backs", "strided tensors", "custom::kv_update",
	};
	for (int f = 0; f < 7; f++)
		cr_expect_gt(features[f], 10, "only %d of 200 random programs have %s",
			     features[f], what[f]);
}

Test(generators, random_programs_without_refusals_parse_and_verify)
{
	need_python3();
	char dir[512];
	snprintf(dir, sizeof dir, "%s/placeable", tu_temp_dir());
	tu_result r = tu_run("mkdir -p %s && python3 %s/gen_random.py --seed 1000 --count 100 "
			     "--no-refusals --out-dir %s", dir, GEN_DIR, dir);
	cr_assert_eq(r.status, 0, "gen_random.py --no-refusals failed (%d): %s", r.status, r.err);
	tu_result_free(&r);
	for (int s = 1000; s < 1100; s++) {
		char path[600];
		snprintf(path, sizeof path, "%s/random_%d.pg", dir, s);
		pr_program *p = load_and_verify(path);
		pr_graph_for_each(p->methods[0], n) {
			if (n->kind != PR_NODE_DELEGATE)
				continue;
			const char *dev = pr_delegate_spec(n->of_kind.delegate, "target_device");
			if (!dev || strcmp(dev, "cpu") == 0)
				continue;
			for (int a = 0; a < n->n_args; a++) {
				const pr_node *b = storage_base(n->args[a].u.value);
				cr_expect(!(b->kind == PR_NODE_INPUT && b->of_kind.input->kind == PR_INPUT_BUFFER),
					  "random_%d.pg: device delegate %%%s reads buffer %%%s", s,
					  n->name, b->name);
			}
		}
		pr_program_free(p);
	}
}
