/* fuzz_runtime.c: libFuzzer target for the runtime, end to end.
 *
 * Any bytes, read as program text. When they parse, verify and pass the plan
 * checker, and the program is small enough to run many times a second (at
 * most FUZZ_MAX_NODES nodes and FUZZ_MAX_BYTES bytes of tensors in all), the
 * target does what
 *   passrun --pipeline cuda --verify-each --set ... --run=2 --check --device=sim
 * does, through the same library calls: the shipped cuda pipeline with one of
 * the 16 combinations of its four placement options (chosen by a hash of the
 * input, so mutations explore all of them), then two calls on the strict
 * simulated device compared with the reference interpreter running the
 * original program.
 *
 * What it finds: crashes, sanitizer reports (ASan, UBSan, leaks) and hangs
 * anywhere from the parser to the kernels: a verified program must never
 * crash the runtime, whatever it asks of it (recursive delegates, views past
 * their storage, arena offsets that overflow, empty results). A refusal by a
 * pass, a kernel error or a mismatch is an answer, not a crash; with
 * FUZZ_STRICT=1 the target also aborts when a pass leaves a program that the
 * verifier refuses, or when the bytes the device layer moved differ from the
 * static counts of --stats=json (difftest's judgements for random programs).
 *
 * The plugins are loaded from FUZZ_PLUGIN_DIR (tests/fuzz/run.sh builds them
 * with the same sanitizers), the pipelines from the source tree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/format.h"
#include "passrun/manager.h"
#include "passrun/plan.h"
#include "passrun/program.h"
#include "passrun/runtime.h"
#include "passrun/verify.h"

#define FUZZ_MAX_INPUT (64 * 1024)
#define FUZZ_MAX_NODES 2000
#define FUZZ_MAX_BYTES (4 << 20)
#define N_COMBOS 16

static const char *const OPTION_NAMES[4] = {
	"skip_h2d_for_method_inputs", "skip_d2h_for_method_outputs",
	"skip_h2d_for_constants", "error_on_per_call_copies"};

static pr_registry *g_reg;
static pr_pipeline *g_pipelines[N_COMBOS];
static bool g_strict;

static void die(const char *what, pr_err *e)
{
	fprintf(stderr, "fuzz_runtime: %s: %s\n", what, e ? pr_err_message(e) : "");
	abort();
}

static pr_pipeline *load_combo(const char *path, int c)
{
	pr_pipeline *pl = NULL;
	pr_err *e = pr_pipeline_load_file(path, &pl);
	if (!e)
		e = pr_pipeline_load_plugins(pl, g_reg);
	for (int k = 0; k < 4 && !e; k++) {
		char set[96];
		snprintf(set, sizeof set, "%s=%s", OPTION_NAMES[k], c & (1 << k) ? "true" : "false");
		e = pr_pipeline_set(pl, set);
	}
	if (!e)
		e = pr_pipeline_validate(pl, g_reg);
	if (e)
		die("the cuda pipeline does not load", e);
	return pl;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	const char *dir = getenv("FUZZ_PLUGIN_DIR");
	if (!dir)
		die("FUZZ_PLUGIN_DIR is not set (tests/fuzz/run.sh sets it)", NULL);
	g_strict = getenv("FUZZ_STRICT") && !strcmp(getenv("FUZZ_STRICT"), "1");
	g_reg = pr_registry_new();
	const char *dirs[1] = {dir};
	pr_plugin_search search = {NULL, 0, dirs, 1, NULL, true};
	pr_err *e = pr_registry_load_search(g_reg, &search);
	char *path = NULL;
	if (!e)
		e = pr_pipeline_find("cuda", &path);
	if (e)
		die("cannot load the plugins or find the cuda pipeline", e);
	for (int c = 0; c < N_COMBOS; c++)
		g_pipelines[c] = load_combo(path, c);
	free(path);
	return 0;
}

/* Nodes and tensor bytes of every graph (methods and delegate bodies). */
static bool small_enough(const pr_program *p)
{
	int64_t nodes = 0, bytes = 0;
	int n_graphs = p->n_methods + p->n_delegates;
	for (int i = 0; i < n_graphs; i++) {
		const pr_graph *g = i < p->n_methods ? p->methods[i]
						     : p->delegates[i - p->n_methods]->body;
		for (const pr_node *n = g ? g->first : NULL; n; n = n->next) {
			nodes++;
			int n_specs = n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 1;
			for (int s = 0; s < n_specs; s++) {
				const pr_spec *sp = n->type.kind == PR_TYPE_TUPLE ? &n->type.elems[s]
					: n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
				int64_t b = sp ? pr_spec_storage_bytes(sp) : 0;
				if (b < 0 || b > FUZZ_MAX_BYTES)
					return false;
				bytes += b;
			}
			if (nodes > FUZZ_MAX_NODES || bytes > FUZZ_MAX_BYTES)
				return false;
		}
	}
	return true;
}

static uint64_t hash_bytes(const uint8_t *d, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211ull;
	return h;
}

static bool verifies(pr_program *p, const char *as)
{
	pr_diags d;
	pr_diags_init(&d, "fuzz.pg");
	bool ok = !pr_verify(p, &d, as) && !pr_plan_check(p, &d, as);
	pr_diags_free(&d);
	return ok;
}

/* "KEY": N in method's object of a --stats=json text. */
static int64_t method_key(const char *json, const char *method, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": {", method);
	const char *m = strstr(json, pat);
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *s = m ? strstr(m, pat) : NULL;
	return s ? strtoll(s + strlen(pat), NULL, 10) : -1;
}

static void run_placed(const pr_program *original, pr_program *placed, pr_diags *d,
		       const pr_pass_report *rep, uint64_t seed)
{
	prt_run_options ro = {NULL, 2, "sim", true, seed, 0, NULL, NULL, 0, 0};
	prt_run_report rr;
	memset(&rr, 0, sizeof rr);
	pr_err *e = prt_runtime_execute(original, placed, &ro, &rr);
	bool ran = !e && !rr.exit_status;
	pr_err_free(e);
	if (!ran || !g_strict)
		return;
	char *json = pr_stats_json(placed, d, rep, NULL);
	int64_t h2d = method_key(json, rr.method, "h2d_bytes_per_call");
	int64_t d2h = method_key(json, rr.method, "d2h_bytes_per_call");
	free(json);
	if (h2d != rr.h2d_bytes_per_call || d2h != rr.d2h_bytes_per_call) {
		fprintf(stderr, "fuzz_runtime: measured h2d/d2h %lld/%lld bytes, static %lld/%lld\n",
			(long long)rr.h2d_bytes_per_call, (long long)rr.d2h_bytes_per_call,
			(long long)h2d, (long long)d2h);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FUZZ_MAX_INPUT)
		return 0;
	pr_program *p = NULL, *original = NULL;
	pr_err *e = pr_text_parse("fuzz.pg", (const char *)data, size, &p);
	if (e || !small_enough(p) || !verifies(p, "verifier")) {
		pr_err_free(e);
		pr_program_free(p);
		return 0;
	}
	if ((e = pr_text_parse("fuzz.pg", (const char *)data, size, &original)))
		die("the same text parsed once and not twice", e);
	uint64_t h = hash_bytes(data, size);
	pr_diags d;
	pr_diags_init(&d, "fuzz.pg");
	pr_pass_report rep;
	pr_pass_report_init(&rep);
	pr_instrument_opts io = {.verify_each = true};
	e = pr_pipeline_run(g_pipelines[h % N_COMBOS], g_reg, p, &d, &io, &rep);
	if (!e)
		run_placed(original, p, &d, &rep, h);
	else if (g_strict && strstr(pr_err_message(e), "verifier failed after pass"))
		die("a pass left a program the verifier refuses", e);
	pr_err_free(e);
	pr_pass_report_free(&rep);
	pr_diags_free(&d);
	pr_program_free(p);
	pr_program_free(original);
	return 0;
}
