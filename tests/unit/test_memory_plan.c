/* Tests of the memory-plan and device-constants plugins (docs/placement-rules.md M1, M2,
 * F10), through the passrun command line on the programs in tests/memory/.
 * Each test also runs the same program without the pass or option it is
 * about and asserts the difference, so that it fails without them. Printed
 * results are parsed back and given to the core's plan checker. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/diag.h"
#include "passrun/format.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "passrun/program.h"
#include "testutil.h"

#define PROG(name) PASSRUN_SOURCE_DIR "/tests/memory/" name
#define PLACE "device-constants,propagate-device,memory-plan"

/* Runs passrun with args; asserts the exit status; returns its output. */
static tu_result run_ok(const char *args, const char *file)
{
	tu_result r = tu_run("%s %s %s", PASSRUN_EXE, args, file);
	cr_assert_eq(r.status, 0, "passrun %s %s: status %d\n%s", args, file, r.status, r.err);
	return r;
}

/* The printed program starting at "passrun 1" (stats may follow it). */
static pr_program *parse_printed(const char *out)
{
	const char *start = strstr(out, "passrun 1");
	cr_assert(start, "no program printed:\n%s", out);
	char *text = strdup(start);
	char *json = strstr(text, "\n{\n");
	if (json)
		json[1] = 0;
	pr_program *p = tu_parse(text);
	free(text);
	return p;
}

static int plan_errors(pr_program *p)
{
	pr_diags d;
	pr_diags_init(&d, "printed.pg");
	int n = pr_plan_check(p, &d, "test");
	pr_diags_print(&d, 0, stderr);
	pr_diags_free(&d);
	return n;
}

/* The integer after "KEY": in the JSON text, after the first occurrence of
 * `after` (NULL: from the start). */
static long long json_int(const char *json, const char *after, const char *key)
{
	const char *s = after ? strstr(json, after) : json;
	cr_assert(s, "no %s in\n%s", after, json);
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": ", key);
	s = strstr(s, pat);
	cr_assert(s, "no %s in\n%s", key, json);
	return atoll(s + strlen(pat));
}

/* ---- M1 --------------------------------------------------------------- */

Test(memory_plan, M1_exact_offsets_on_a_chain)
{
	tu_result r = run_ok("--passes memory-plan --print --stats=json", PROG("m1_chain.pg"));
	cr_assert(strstr(r.out, "%x: f32[16]{mem=cpu:128} = input user \"x\""), "%s", r.out);
	cr_assert(strstr(r.out, "%a: f32[32]{mem=cpu:0} = aten::widen(%x)"), "%s", r.out);
	cr_assert(strstr(r.out, "%b: f32[16]{mem=cpu:128} = aten::narrow_copy(%a)"), "%s", r.out);
	cr_assert(strstr(r.out, "%c: f32[32]{mem=cpu:0} = aten::widen(%b)"), "%s", r.out);
	cr_assert_eq(json_int(r.out, "\"planned_bytes\"", "cpu"), 192);
	cr_assert_eq(json_int(r.out, "\"planned_lower_bound_bytes\"", "cpu"), 192);
	tu_result_free(&r);
	r = run_ok("--print", PROG("m1_chain.pg"));
	cr_assert_eq(tu_count(r.out, "mem="), 0, "without memory-plan nothing is planned");
	tu_result_free(&r);
}

Test(memory_plan, M1_aliases_share_and_devices_get_their_arena)
{
	tu_result r = run_ok("--passes memory-plan --print --stats=json", PROG("m1_aliases.pg"));
	pr_program *p = parse_printed(r.out);
	cr_assert_eq(plan_errors(p), 0);
	pr_graph *g = p->methods[0];
	pr_spec *h = pr_node_spec(pr_graph_find(g, "h")), *v = pr_node_spec(pr_graph_find(g, "v"));
	pr_spec *rr = pr_node_spec(pr_graph_find(g, "r")), *gi = pr_node_spec(pr_graph_find(g, "g"));
	pr_node *d = pr_graph_find(g, "d");
	cr_assert(h->has_mem && v->has_mem && rr->has_mem);
	cr_assert(h->mem_offset == v->mem_offset && h->mem_offset == rr->mem_offset, "a view and an in-place result share");
	cr_assert(gi->has_mem && d->type.elems[0].has_mem && gi->mem_offset == d->type.elems[0].mem_offset);
	cr_assert_str_eq(pr_spec_mem_arena(gi).type, "cuda");
	cr_assert_eq(pr_spec_mem_arena(gi).index, 0);
	cr_assert_str_eq(pr_spec_mem_arena(h).type, "cpu");
	/* h lives until %t reads it, so %s (defined while h is live) is apart. */
	pr_spec *s = pr_node_spec(pr_graph_find(g, "s"));
	cr_assert_neq(s->mem_offset, h->mem_offset);
	cr_assert_eq(json_int(r.out, "\"planned_bytes\"", "cpu"), json_int(r.out, "\"planned_lower_bound_bytes\"", "cpu"));
	cr_assert_eq(json_int(r.out, "\"planned_bytes\"", "cuda:0"), 128);
	pr_program_free(p);
	tu_result_free(&r);
}

/* "CUDA", "cuda:0" and "cuda" are one device: one arena, cuda:0, holds every
 * device tensor (the placement golden case checks the copies). */
Test(memory_plan, M1_spellings_of_one_device_share_one_arena)
{
	const char *prog = PASSRUN_SOURCE_DIR "/tests/placement/b5_one_device.pg";
	tu_result r = run_ok("--pipeline cuda --print --stats=json", prog);
	pr_program *p = parse_printed(r.out);
	cr_assert_eq(plan_errors(p), 0);
	int on_device = 0;
	pr_graph_for_each(p->methods[0], n) {
		bool tuple = n->type.kind == PR_TYPE_TUPLE;
		pr_spec *s = tuple ? &n->type.elems[0] : pr_node_spec(n);
		if (!s || pr_spec_on_host(s))
			continue;
		on_device++;
		cr_assert(s->has_mem, "%%%s is not planned", n->name);
		cr_assert_str_eq(pr_spec_mem_arena(s).type, "cuda", "%%%s", n->name);
		cr_assert_eq(pr_spec_mem_arena(s).index, 0, "%%%s", n->name);
	}
	cr_assert_eq(on_device, 7, "%s", r.out);
	const char *planned = strstr(r.out, "\"planned_bytes\": {\"cpu\": 24, \"cuda:0\": ");
	cr_assert(planned, "%s", r.out);
	int arenas = 1;
	for (const char *c = planned; *c && *c != '}'; c++)
		arenas += *c == ',';
	cr_assert_eq(arenas, 2, "the host's and cuda:0's arenas only:\n%s", r.out);
	pr_program_free(p);
	tu_result_free(&r);
}

/* An arena's device type comes from the registry: one nobody registered
 * gets no plan and an E-PLAN naming the registered types. */
Test(memory_plan, M1_arena_of_an_unregistered_type_is_refused)
{
	char path[512];
	snprintf(path, sizeof path, "%s/tpu.pg", tu_temp_dir());
	FILE *f = fopen(path, "w");
	fputs("passrun 1\nop aten::relu(Tensor self) -> Tensor\n"
	      "method @forward {\n  %x: f32[4] = input user \"x\"\n"
	      "  %r: f32[4] = aten::relu(%x)\n  %t: f32[4]@tpu:0 = input user \"t\"\n"
	      "  return %r, %t\n}\n", f);
	fclose(f);
	tu_result r = tu_run("%s --passes memory-plan --print %s", PASSRUN_EXE, path);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "E-PLAN"), "%s", r.err);
	cr_assert(strstr(r.err, "arena tpu:0 are on a device of type 'tpu', which is not registered "
			 "(registered: cpu, cuda"), "%s", r.err);
	tu_result_free(&r);
}

Test(memory_plan, M1_second_run_changes_nothing)
{
	tu_result once = run_ok("--passes memory-plan --print", PROG("m1_aliases.pg"));
	tu_result twice = run_ok("--passes memory-plan,memory-plan --print --stats=json", PROG("m1_aliases.pg"));
	const char *prog = strstr(twice.out, "passrun 1");
	cr_assert(prog && !strncmp(prog, strstr(once.out, "passrun 1"), strlen(strstr(once.out, "passrun 1"))));
	cr_assert(strstr(twice.out, "{\"name\": \"memory-plan\"") && tu_count(twice.out, "\"changed\": false") == 1,
		  "the second run reports no change:\n%s", twice.out);
	tu_result_free(&once);
	tu_result_free(&twice);
}

Test(memory_plan, M1_plan_survives_binary_round_trip)
{
	char bin[600], back[600];
	snprintf(bin, sizeof bin, "%s/plan.bin", tu_temp_dir());
	snprintf(back, sizeof back, "%s/plan_back.pg", tu_temp_dir());
	tu_result r = tu_run("%s --passes memory-plan -o %s %s && %s convert %s %s", PASSRUN_EXE, bin, PROG("m1_aliases.pg"),
		   PASSRUN_EXE, bin, back);
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	tu_result printed = run_ok("--passes memory-plan --print", PROG("m1_aliases.pg"));
	char *text = tu_read_file(back, NULL);
	cr_assert(text && strstr(printed.out, text), "the plan is the same after text -> binary -> text:\n%s", text);
	cr_assert_gt(tu_count(text, "mem="), 8);
	free(text);
	tu_result_free(&printed);
}

Test(memory_plan, M1_bad_alignment_is_refused)
{
	tu_result r = tu_run("%s --passes 'memory-plan{alignment=24}' %s", PASSRUN_EXE, PROG("m1_chain.pg"));
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "alignment") && strstr(r.err, "power of two"), "%s", r.err);
	tu_result_free(&r);
}

Test(memory_plan, M1_alignment_option_aligns_offsets)
{
	/* Every size rounds up to 256: two slots, x and b in one, a and c in the
	 * other; the top one ends at 256 + 128. */
	tu_result r = run_ok("--passes 'memory-plan{alignment=256}' --print --stats=json", PROG("m1_chain.pg"));
	cr_assert_eq(tu_count(r.out, "{mem=cpu:0}") + tu_count(r.out, "{mem=cpu:256}"), 4, "%s", r.out);
	cr_assert_eq(tu_count(r.out, "{mem=cpu:256}"), 2, "%s", r.out);
	long long planned = json_int(r.out, "\"planned_bytes\"", "cpu");
	cr_assert(planned == 384 || planned == 320, "planned %lld", planned);
	tu_result_free(&r);
}

/* Every example plans, passes the checker, and meets the lower bound exactly
 * when nothing is padded (alignment 1). */
Test(memory_plan, M1_examples_plan_at_the_lower_bound)
{
	DIR *dir = opendir(PASSRUN_SOURCE_DIR "/examples");
	cr_assert(dir);
	/* The shipped cuda pipeline when it loads, else the base placement. */
	const char *pipeline = "--pipeline " PASSRUN_SOURCE_DIR "/pipelines/cuda.yaml";
	tu_result probe = tu_run("%s %s %s", PASSRUN_EXE, pipeline, PROG("m1_chain.pg"));
	if (probe.status != 0)
		pipeline = "--passes propagate-device,memory-plan";
	tu_result_free(&probe);
	struct dirent *e;
	int planned = 0;
	while ((e = readdir(dir))) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".pg"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/examples/%s", PASSRUN_SOURCE_DIR, e->d_name);
		tu_result r = tu_run("%s %s --set memory-plan.alignment=1 --set memory-plan.device_alignment=1 "
				     "--print --stats=json %s", PASSRUN_EXE, pipeline, path);
		if (r.status != 0) { /* examples of refused programs */
			tu_result_free(&r);
			continue;
		}
		pr_program *p = parse_printed(r.out);
		cr_assert_eq(plan_errors(p), 0, "%s", path);
		for (int m = 0; m < p->n_methods; m++) {
			pr_arena_usage *u = NULL;
			int k = pr_plan_usage(p->methods[m], &u);
			for (int a = 0; a < k; a++)
				cr_assert_eq(u[a].planned_bytes, u[a].lower_bound_bytes, "%s: %s planned %lld, bound %lld",
					     path, u[a].arena.type, (long long)u[a].planned_bytes,
					     (long long)u[a].lower_bound_bytes);
			free(u);
		}
		pr_program_free(p);
		tu_result_free(&r);
		planned++;
	}
	closedir(dir);
	cr_assert_gt(planned, 10);
}

/* A view said to be on another device than its base: one memory cannot be in
 * two arenas, and planning says so. */
Test(memory_plan, M1_alias_on_another_device_is_an_error)
{
	tu_result r = tu_run("%s --passes memory-plan %s", PASSRUN_EXE, PROG("m1_split_view.pg"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "error[E-PLAN] pass 'memory-plan'") && strstr(r.err, "%v is on cuda:0") &&
		  strstr(r.err, "%h") && strstr(r.err, "two arenas"), "%s", r.err);
	tu_result_free(&r);
}

/* ---- M2 --------------------------------------------------------------- */

Test(memory_plan, M2_no_memory_for_inputs)
{
	tu_result with = run_ok("--passes memory-plan --print", PROG("m2_inplace_output.pg"));
	cr_assert(strstr(with.out, "%x: f32[16]{mem=cpu:"), "planned by default:\n%s", with.out);
	tu_result r = run_ok("--passes 'memory-plan{alloc_graph_input=false}' --print", PROG("m2_inplace_output.pg"));
	cr_assert(strstr(r.out, "%x: f32[16] = input user \"x\""), "%s", r.out);
	cr_assert(strstr(r.out, "%t: f32[16]{mem=cpu:"), "%s", r.out);
	pr_program *p = parse_printed(r.out);
	cr_assert_eq(plan_errors(p), 0);
	pr_program_free(p);
	tu_result_free(&r);
	r = run_ok("--passes memory-plan --set memory-plan.alloc_graph_input=false --print", PROG("m2_inplace_output.pg"));
	cr_assert(strstr(r.out, "%x: f32[16] = input user \"x\""), "--set works too:\n%s", r.out);
	tu_result_free(&r);
	tu_result_free(&with);
}

Test(memory_plan, M2_no_memory_for_outputs_and_their_aliases)
{
	tu_result with = run_ok("--passes memory-plan --print", PROG("m2_inplace_output.pg"));
	cr_assert(strstr(with.out, "%r: f32[16]{mem=cpu:"), "%s", with.out);
	tu_result r = run_ok("--passes 'memory-plan{alloc_graph_output=false}' --print --stats=json",
			     PROG("m2_inplace_output.pg"));
	cr_assert(strstr(r.out, "%r: f32[16] = aten::relu_(%h)"), "%s", r.out);
	cr_assert(strstr(r.out, "%h: f32[16] = aten::add.Tensor(%t, %x)"), "the output's base is the caller's too:\n%s", r.out);
	cr_assert(strstr(r.out, "%x: f32[16]{mem=cpu:"), "%s", r.out);
	cr_assert_eq(json_int(r.out, "\"planned_bytes\"", "cpu"), 128, "x and t only");
	tu_result_free(&r);
	tu_result_free(&with);
}

/* ---- F10 -------------------------------------------------------------- */

Test(memory_plan, F10_constant_read_only_by_one_device_lives_there)
{
	tu_result base = run_ok("--passes " PLACE " --print --stats=json", PROG("f10_constants.pg"));
	cr_assert(strstr(base.out, "_h2d_copy(%w)"), "without the option: a per-call copy\n%s", base.out);
	cr_assert_eq(json_int(base.out, NULL, "load_h2d_bytes"), 0);
	tu_result r = run_ok("--passes " PLACE " --set skip_h2d_for_constants=true --print --stats=json",
			     PROG("f10_constants.pg"));
	cr_assert(strstr(r.out, "%w: f32[4,4]@cuda:0{mem=cuda:0:0} = input parameter \"w\""), "%s", r.out);
	cr_assert_eq(tu_count(r.out, "_h2d_copy(%w)"), 0, "no per-call copy of w:\n%s", r.out);
	cr_assert_eq(json_int(r.out, NULL, "load_h2d_bytes"), 64, "copied once at load");
	int w_copies = tu_count(base.out, "_h2d_copy(%w)");
	cr_assert_gt(w_copies, 0);
	cr_assert_eq(json_int(r.out, NULL, "h2d_copies"), json_int(base.out, NULL, "h2d_copies") - w_copies);
	pr_program *p = parse_printed(r.out);
	cr_assert_eq(plan_errors(p), 0);
	pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
	for (int64_t i = 0; i < lt->n_classes; i++)
		if (pr_plan_class_base(lt, &lt->classes[i])->node == pr_graph_find(p->methods[0], "w"))
			cr_assert(lt->classes[i].start == 0 && lt->classes[i].end == lt->n_positions - 1,
				  "planned for the whole method");
	pr_lifetimes_free(lt);
	pr_program_free(p);
	tu_result_free(&r);
	tu_result_free(&base);
}

Test(memory_plan, F10_other_readers_keep_the_host)
{
	tu_result r = run_ok("--passes " PLACE " --set skip_h2d_for_constants=true --print", PROG("f10_constants.pg"));
	cr_assert(strstr(r.out, "%wh: f32[4,4] = input parameter"), "a host op reads wh:\n%s", r.out);
	cr_assert(strstr(r.out, "_h2d_copy(%wh)"));
	cr_assert(strstr(r.out, "%wt: f32[4,4] = input parameter"), "wt is transposed on the host first");
	cr_assert(strstr(r.out, "%w2: f32[4,4] = input constant"), "w2 is read on cuda:0 and cuda:1");
	cr_assert(strstr(r.out, "_h2d_copy(%w2)"));
	cr_assert(strstr(r.out, "%k: f32[4,4]{mem=cpu:"), "a mutable buffer stays a planned host tensor");
	tu_result_free(&r);
}

Test(memory_plan, F10_empty_constant_is_tagged_and_planned)
{
	tu_result r = run_ok("--passes " PLACE " --set skip_h2d_for_constants=true --print --stats=json",
			     PROG("f10_empty.pg"));
	cr_assert(strstr(r.out, "%pad: f32[0,4]@cuda:0{mem=cuda:0:"), "%s", r.out);
	cr_assert_eq(tu_count(r.out, "_h2d_copy(%pad)"), 0);
	cr_assert_eq(json_int(r.out, NULL, "load_h2d_bytes"), 0, "an empty tensor moves no bytes");
	pr_program *p = parse_printed(r.out);
	cr_assert_eq(plan_errors(p), 0);
	pr_program_free(p);
	tu_result_free(&r);
}

Test(memory_plan, F10_shared_mutable_buffers_refused)
{
	tu_result r = tu_run("%s --passes " PLACE " --set skip_h2d_for_constants=true --set share_mutable_buffers=true %s",
			     PASSRUN_EXE, PROG("f10_constants.pg"));
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "error[E-SHARED-MUTABLE-BUFFERS]"), "%s", r.err);
	cr_assert(strstr(r.err, "share_mutable_buffers") && strstr(r.err, "skip_h2d_for_constants"), "%s", r.err);
	tu_result_free(&r);
	r = tu_run("%s --passes " PLACE " --set share_mutable_buffers=true %s", PASSRUN_EXE, PROG("f10_constants.pg"));
	cr_assert_eq(r.status, 0, "sharing alone is fine: %s", r.err);
	tu_result_free(&r);
}

/* ---- random programs ---------------------------------------------------- */

/* A random program of n nodes mixing host ops, in-place ops, views and copies
 * to and from cuda:0 and cuda:1, sizes from 4 B to 16 KiB. */
static char *random_program(unsigned seed, int n)
{
	size_t cap = 256 + (size_t)n * 160, len = 0;
	char *t = malloc(cap);
	int *size = calloc((size_t)n + 1, sizeof *size), *dev = calloc((size_t)n + 1, sizeof *dev);
	len += (size_t)snprintf(t + len, cap - len,
		"passrun 1\n"
		"op aten::f(Tensor self, Tensor other) -> Tensor\n"
		"op aten::relu_(Tensor(a!) self) -> Tensor(a!)\n"
		"op aten::view(Tensor(a) self, int[] size) -> Tensor(a)\n"
		"op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}\n"
		"op et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}\n"
		"method @forward {\n  %%v0: f32[16] = input user \"x\"\n");
	size[0] = 16;
	srand(seed);
	int last_host = 0;
	for (int i = 1; i < n; i++) {
		int r = rand() % 100, a = i - 1 - (rand() % 4 == 0 ? rand() % i : rand() % (i < 3 ? i : 3));
		const char *dn = dev[a] == 0 ? "" : dev[a] == 1 ? "@cuda:0" : "@cuda:1";
		if (dev[a] != 0 || r < 15) { /* a device value: copy it back; a host one: to a device */
			int to = dev[a] ? 0 : 1 + rand() % 2;
			size[i] = size[a];
			dev[i] = to;
			len += (size_t)snprintf(t + len, cap - len, "  %%v%d: f32[%d]%s = et_copy::%s(%%v%d)\n", i, size[i],
						to == 0 ? "" : to == 1 ? "@cuda:0" : "@cuda:1",
						to ? "_h2d_copy" : "_d2h_copy", a);
		} else if (r < 25) {
			size[i] = size[a];
			len += (size_t)snprintf(t + len, cap - len, "  %%v%d: f32[%d]%s = aten::relu_(%%v%d)\n", i, size[i], dn, a);
		} else if (r < 35) {
			size[i] = size[a];
			len += (size_t)snprintf(t + len, cap - len, "  %%v%d: f32[%d]%s = aten::view(%%v%d, [%d])\n", i, size[i], dn,
						a, size[a]);
		} else {
			int b = last_host;
			size[i] = 1 << (rand() % 13);
			len += (size_t)snprintf(t + len, cap - len, "  %%v%d: f32[%d] = aten::f(%%v%d, %%v%d)\n", i, size[i], a, b);
		}
		if (dev[i] == 0)
			last_host = i;
	}
	snprintf(t + len, cap - len, "  return %%v%d\n}\n", last_host);
	free(size);
	free(dev);
	return t;
}

Test(memory_plan, M1_random_programs_plan_without_overlap)
{
	static const char *aligns[] = { "1", "16", "64" };
	for (unsigned seed = 1; seed <= 24; seed++) {
		char *text = random_program(seed, 40 + (int)seed * 10);
		char name[64];
		snprintf(name, sizeof name, "random_%u.pg", seed);
		const char *path = tu_write_temp(name, text);
		tu_result r = tu_run("%s --passes 'memory-plan{alignment=%s,device_alignment=%s}' --print %s", PASSRUN_EXE,
				     aligns[seed % 3], aligns[(seed + 1) % 3], path);
		cr_assert_eq(r.status, 0, "seed %u: %s", seed, r.err);
		pr_program *p = parse_printed(r.out);
		cr_assert_eq(plan_errors(p), 0, "seed %u", seed);
		pr_lifetimes *lt = pr_lifetimes_compute(p->methods[0]);
		for (int64_t i = 0; i < lt->n_values; i++) /* every tensor, the input too (default) */
			cr_assert(pr_plan_value_spec(&lt->values[i])->has_mem, "seed %u: %s unplanned", seed, lt->values[i].node->name);
		pr_lifetimes_free(lt);
		pr_arena_usage *u = NULL;
		int k = pr_plan_usage(p->methods[0], &u);
		for (int a = 0; a < k; a++)
			cr_assert_geq(u[a].planned_bytes, u[a].lower_bound_bytes);
		free(u);
		pr_program_free(p);
		tu_result_free(&r);
		free(text);
	}
}
