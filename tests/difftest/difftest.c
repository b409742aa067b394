/* difftest.c: the differential tester (issue 7), in one process.
 *
 * For each program file and each of the 16 combinations of the four
 * placement options (skip_h2d_for_method_inputs, skip_d2h_for_method_outputs,
 * skip_h2d_for_constants, error_on_per_call_copies), it does what
 *   passrun --pipeline P --verify-each --set ... FILE --run=2 --check --device=sim --stats=json
 * does, through the same library calls as tools/passrun.c, and judges the
 * result:
 *   - the program must verify before the passes (else the generator is wrong);
 *   - every pass must succeed and the result verify (--verify-each), except an
 *     expected refusal: with error_on_per_call_copies, the F9 errors
 *     (E-OUTPUT-ON-HOST, E-CONSTANT-COPY, E-INPUT-COPY), each of which the same
 *     options without error_on_per_call_copies must have reported as its
 *     warning (W-...); with skip_h2d_for_method_inputs, E-INPUT-WRITTEN-ON-HOST;
 *   - running the placed program twice on the strict simulated device must
 *     succeed (a placement violation faults, exit 5) and every output of every
 *     call must equal the reference interpreter's on the original program;
 *   - the bytes the device layer moved per call (h2d, d2h) and at load time
 *     must equal the static numbers of that method in --stats=json.
 * Doing it in one process (plugins loaded once, 16 pipelines validated once)
 * makes a run some hundred times cheaper than starting passrun 16 times, which
 * is what lets CI test thousands of programs; tests/difftest/difftest.py
 * cross-checks a sample through the passrun binary itself.
 *
 * Output: one line per failing run, "FAIL FILE combo=C (OPTIONS): KIND: detail",
 * then a summary line. KIND is one of invalid, pass-error, verify-error,
 * refusal-unexplained, fault, mismatch, bytes, load-error. Exit status: 0 when
 * nothing failed (or with --count-only), 1 when something did, 2 on bad usage;
 * with --expect-fail, 0 only when every program had a failing run.
 * --no-verify-each lets a wrong placement reach the device (to count what the
 * runtime alone catches, e.g. with pipelines/baseline.yaml).
 * --allow LIST (comma-separated) names what a pipeline that lacks a fix may
 * do besides passing: an error code (E-CONSTANT-LAYOUT) is then an accepted
 * refusal wherever it is reported; a KIND (fault, mismatch, ...) is accepted
 * (counted, not a failure) only where the same program has that result with
 * every option off too, because an option changes where tensors live and
 * what is copied, and may ask for a refusal, but must never turn a right
 * answer into a wrong one; KIND-anywhere accepts it under any combination,
 * for a fix that is what keeps an option right (without host-writes, a skip
 * flag lets a delegate read an input the host wrote after it was copied). An ablation (pipelines/ablate/) is run with the
 * ways its missing fix's problem shows and nothing else, so that any other
 * failure under any option combination is a bug of the fixes it keeps (a
 * transposed constant that no-param-layout refuses with every option off but
 * reads wrong with skip_h2d_for_constants is such a bug).
 *
 *   difftest [--pipeline FILE] [--combos MASK] [--count-only] [--expect-fail]
 *            [--no-verify-each] [--allow LIST] [--quiet] FILE.pg...
 *   (--combos: a 16-bit mask of combinations to run, default all; a FILE
 *   argument "@LIST" reads file names from LIST, one a line.)
 */
#include <stdbool.h>
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

#define N_COMBOS 16
#define N_OPTIONS 4

static const char *const OPTION_NAMES[N_OPTIONS] = {
	"skip_h2d_for_method_inputs", "skip_d2h_for_method_outputs",
	"skip_h2d_for_constants", "error_on_per_call_copies"};
enum { SKIP_INPUTS = 1, SKIP_OUTPUTS = 2, SKIP_CONSTANTS = 4, ERROR_ON = 8 };

/* What happened to one (program, combination) run. */
typedef enum {
	R_OK, R_REFUSED, R_INVALID, R_PASS_ERROR, R_VERIFY_ERROR, R_UNEXPLAINED,
	R_FAULT, R_MISMATCH, R_BYTES, R_LOAD_ERROR, R_N
} result_kind;

static const char *const KIND_NAMES[R_N] = {
	"ok", "refused", "invalid", "pass-error", "verify-error", "refusal-unexplained",
	"fault", "mismatch", "bytes", "load-error"};

/* The per-call codes of F9: an error code with error_on_per_call_copies, whose
 * warning twin is "W-" + the same suffix. */
static const char *const F9_SUFFIXES[] = {"OUTPUT-ON-HOST", "CONSTANT-COPY", "INPUT-COPY"};
#define N_F9 3

typedef struct tester {
	pr_registry *reg;
	pr_pipeline *pl[N_COMBOS];
	unsigned combos;
	bool quiet;
	bool verify_each;
	long counts[R_N];
	long program_counts[R_N];    /* programs whose first failing run was of that kind */
	long programs, programs_failed;
	unsigned warned[N_COMBOS];   /* per program: F9 warnings (bit per suffix) of each combo */
	const char *allow;           /* --allow: ",CODE,KIND," (commas around each), or NULL */
} tester;

/* Is NAME (an error code or a result kind) in --allow? */
static bool allowed(const tester *t, const char *name)
{
	char item[96];
	snprintf(item, sizeof item, ",%s,", name);
	return t->allow && strstr(t->allow, item);
}

static void combo_text(int c, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int k = 0; k < N_OPTIONS; k++)
		if (c & (1 << k))
			n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
					      n ? "," : "", OPTION_NAMES[k]);
	if (!n)
		snprintf(buf, size, "defaults");
}

static pr_err *load_pipelines(tester *t, const char *pipeline)
{
	pr_plugin_search search = {NULL, 0, NULL, 0, getenv("PASSRUN_PLUGIN_PATH"), false};
	pr_err *e = pr_registry_load_search(t->reg, &search);
	char *path = NULL;
	if (!e)
		e = pr_pipeline_find(pipeline, &path);
	for (int c = 0; c < N_COMBOS && !e; c++) {
		e = pr_pipeline_load_file(path, &t->pl[c]);
		if (!e)
			e = pr_pipeline_load_plugins(t->pl[c], t->reg);
		for (int k = 0; k < N_OPTIONS && !e; k++) {
			char set[96];
			snprintf(set, sizeof set, "%s=%s", OPTION_NAMES[k], c & (1 << k) ? "true" : "false");
			e = pr_pipeline_set(t->pl[c], set);
		}
		if (!e)
			e = pr_pipeline_validate(t->pl[c], t->reg);
	}
	free(path);
	return e;
}

/* "KEY": N in method's object of a --stats=json text. The runtime runs one
 * method (forward, else the first), so its measured bytes are compared with
 * that method's static numbers. */
static int64_t method_key(const char *json, const char *method, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": {", method);
	const char *m = strstr(json, pat);
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *s = m ? strstr(m, pat) : NULL;
	return s ? strtoll(s + strlen(pat), NULL, 10) : -1;
}

static bool has_code(const pr_diags *d, pr_severity sev, const char *code)
{
	for (int i = 0; i < d->n; i++)
		if (d->items[i].severity == sev && d->items[i].code && !strcmp(d->items[i].code, code))
			return true;
	return false;
}

static unsigned f9_warnings(const pr_diags *d)
{
	unsigned bits = 0;
	for (int k = 0; k < N_F9; k++) {
		char code[48];
		snprintf(code, sizeof code, "W-%s", F9_SUFFIXES[k]);
		if (has_code(d, PR_SEV_WARNING, code))
			bits |= 1u << k;
	}
	return bits;
}

/* A pass error is an expected refusal when every error it reported is one the
 * options ask for (and an F9 error's warning twin was given without
 * error_on_per_call_copies). Writes why not into why. */
static result_kind classify_refusal(const tester *t, int c, const pr_diags *d, char *why,
				    size_t size)
{
	bool any = false;
	for (int i = 0; i < d->n; i++) {
		const pr_diag *g = &d->items[i];
		if (g->severity != PR_SEV_ERROR)
			continue;
		any = true;
		const char *code = g->code ? g->code : "";
		if (((c & SKIP_INPUTS) && !strcmp(code, "E-INPUT-WRITTEN-ON-HOST")) ||
		    allowed(t, code))
			continue;
		int k = 0;
		while (k < N_F9 && strcmp(code + (code[0] ? 2 : 0), F9_SUFFIXES[k]))
			k++;
		if ((c & ERROR_ON) && k < N_F9 && !strncmp(code, "E-", 2)) {
			if (t->warned[c & ~ERROR_ON] & (1u << k))
				continue;
			snprintf(why, size, "%s without its warning W-%s when error_on_per_call_copies "
				 "is off: %s", code, F9_SUFFIXES[k], g->message);
			return R_UNEXPLAINED;
		}
		snprintf(why, size, "%s: %s", code, g->message ? g->message : "");
		return strstr(code, "PLACEMENT") || !strcmp(g->pass ? g->pass : "", "verifier")
			       ? R_VERIFY_ERROR : R_PASS_ERROR;
	}
	if (!any)
		snprintf(why, size, "a pass failed with no error diagnostic");
	return any ? R_REFUSED : R_PASS_ERROR;
}

static result_kind execute(pr_program *original, pr_program *placed, pr_diags *d,
			   const pr_pass_report *rep, uint64_t seed, char *why, size_t size)
{
	prt_run_options ro = {NULL, 2, "sim", true, seed, 0, NULL, NULL, 0, 0};
	prt_run_report rr;
	memset(&rr, 0, sizeof rr);
	pr_err *e = prt_runtime_execute(original, placed, &ro, &rr);
	result_kind k = R_OK;
	if (e || rr.exit_status) {
		snprintf(why, size, "exit %d: %s", rr.exit_status ? rr.exit_status : 5,
			 e ? pr_err_message(e) : rr.mismatch);
		k = rr.exit_status == 4 ? R_MISMATCH : R_FAULT;
	} else if (!rr.match) {
		snprintf(why, size, "%s", rr.mismatch);
		k = R_MISMATCH;
	}
	pr_err_free(e);
	if (k != R_OK)
		return k;
	char *json = pr_stats_json(placed, d, rep, NULL);
	int64_t h2d = method_key(json, rr.method, "h2d_bytes_per_call");
	int64_t d2h = method_key(json, rr.method, "d2h_bytes_per_call");
	int64_t load = method_key(json, rr.method, "load_h2d_bytes");
	free(json);
	if (h2d == rr.h2d_bytes_per_call && d2h == rr.d2h_bytes_per_call && load == rr.load_h2d_bytes)
		return R_OK;
	snprintf(why, size, "measured h2d/d2h/load %lld/%lld/%lld bytes, static %lld/%lld/%lld",
		 (long long)rr.h2d_bytes_per_call, (long long)rr.d2h_bytes_per_call,
		 (long long)rr.load_h2d_bytes, (long long)h2d, (long long)d2h, (long long)load);
	return R_BYTES;
}

/* One program under one combination. */
static result_kind run_one(tester *t, const char *file, int c, uint64_t seed, char *why,
			   size_t size)
{
	pr_program *prog = NULL, *original = NULL;
	pr_err *e = pr_program_load_file(file, &prog);
	if (!e)
		e = pr_program_load_file(file, &original);
	if (e) {
		snprintf(why, size, "%s", pr_err_message(e));
		pr_err_free(e);
		pr_program_free(prog);
		return R_LOAD_ERROR;
	}
	pr_diags d;
	pr_diags_init(&d, file);
	pr_pass_report rep;
	pr_pass_report_init(&rep);
	result_kind k = R_OK;
	if (pr_verify(prog, &d, "verifier") + pr_plan_check(prog, &d, "verifier")) {
		snprintf(why, size, "the program fails verification before any pass");
		k = R_INVALID;
	} else {
		pr_instrument_opts io = {.verify_each = t->verify_each};
		e = pr_pipeline_run(t->pl[c], t->reg, prog, &d, &io, &rep);
		if (e)
			k = classify_refusal(t, c, &d, why, size);
		else
			k = execute(original, prog, &d, &rep, seed, why, size);
		if (!e && !(c & ERROR_ON))
			t->warned[c] = f9_warnings(&d);
		pr_err_free(e);
	}
	pr_pass_report_free(&rep);
	pr_diags_free(&d);
	pr_program_free(prog);
	pr_program_free(original);
	return k;
}

/* The inputs' seed: a hash of the file's name without its folder, so that a
 * program gets the same inputs in every run, whatever temporary folder the
 * generator wrote it to (a failure then reproduces). */
static uint64_t hash_name(const char *s)
{
	const char *slash = strrchr(s, '/');
	s = slash ? slash + 1 : s;
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* --allow's rule for a result KIND: the same result with every option off
 * (*defaults, run here first when --combos leaves combination 0 out). */
static bool kind_allowed(tester *t, const char *file, int c, result_kind k, result_kind *defaults)
{
	char anywhere[64];
	snprintf(anywhere, sizeof anywhere, "%s-anywhere", KIND_NAMES[k]);
	if (allowed(t, anywhere))
		return true;
	if (!allowed(t, KIND_NAMES[k]))
		return false;
	if (*defaults == R_N) {
		char why[1024];
		*defaults = run_one(t, file, 0, hash_name(file), why, sizeof why);
	}
	return c == 0 || *defaults == k;
}

static void test_program(tester *t, const char *file)
{
	result_kind first = R_OK, defaults = R_N;
	memset(t->warned, 0, sizeof t->warned);
	/* Without error_on_per_call_copies first: its warnings explain the errors. */
	for (int c = 0; c < N_COMBOS; c++) {
		if (!(t->combos & (1u << c)))
			continue;
		char why[1024] = "", opts[160];
		result_kind k = run_one(t, file, c, hash_name(file) + (uint64_t)c, why, sizeof why);
		t->counts[k]++;
		if (c == 0)
			defaults = k;
		if (k == R_OK || k == R_REFUSED || kind_allowed(t, file, c, k, &defaults))
			continue;
		if (first == R_OK)
			first = k;
		combo_text(c, opts, sizeof opts);
		if (!t->quiet)
			printf("FAIL %s combo=%d (%s): %s: %s\n", file, c, opts, KIND_NAMES[k], why);
	}
	t->programs++;
	t->programs_failed += first != R_OK;
	t->program_counts[first]++;
	fflush(stdout);
}

static void test_list(tester *t, const char *list)
{
	FILE *f = fopen(list, "r");
	if (!f) {
		fprintf(stderr, "difftest: cannot read %s\n", list);
		exit(2);
	}
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0])
			test_program(t, line);
	}
	fclose(f);
}

static void summary(const tester *t)
{
	printf("difftest: %ld programs, %ld with a failing run;", t->programs, t->programs_failed);
	for (int k = 0; k < R_N; k++)
		if (t->counts[k])
			printf(" %s=%ld", KIND_NAMES[k], t->counts[k]);
	printf("\ndifftest: programs by first failing run:");
	for (int k = 0; k < R_N; k++)
		if (t->program_counts[k])
			printf(" %s=%ld", KIND_NAMES[k], t->program_counts[k]);
	printf("\n");
}

int main(int argc, char **argv)
{
	tester t;
	memset(&t, 0, sizeof t);
	t.combos = 0xffff;
	t.verify_each = true;
	const char *pipeline = "cuda";
	bool count_only = false, expect_fail = false;
	const char *allow = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--pipeline") && i + 1 < argc)
			pipeline = argv[++i];
		else if (!strcmp(argv[i], "--combos") && i + 1 < argc)
			t.combos = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--count-only"))
			count_only = true;
		else if (!strcmp(argv[i], "--expect-fail"))
			expect_fail = true;
		else if (!strcmp(argv[i], "--no-verify-each"))
			t.verify_each = false;
		else if (!strcmp(argv[i], "--quiet"))
			t.quiet = true;
		else if (!strcmp(argv[i], "--allow") && i + 1 < argc)
			allow = argv[++i];
		else {
			fprintf(stderr, "usage: difftest [--pipeline FILE] [--combos MASK] "
				"[--count-only] [--expect-fail] [--no-verify-each] [--allow LIST] [--quiet] "
				"FILE.pg|@LIST...\n");
			return 2;
		}
	}
	t.reg = pr_registry_new();
	pr_err *e = load_pipelines(&t, pipeline);
	if (e) {
		fprintf(stderr, "difftest: %s\n", pr_err_message(e));
		pr_err_free(e);
		return 2;
	}
	char *allow_list = allow ? pr_xasprintf(",%s,", allow) : NULL;
	t.allow = allow_list;
	for (; i < argc; i++) {
		if (argv[i][0] == '@')
			test_list(&t, argv[i] + 1);
		else
			test_program(&t, argv[i]);
	}
	summary(&t);
	for (int c = 0; c < N_COMBOS; c++)
		pr_pipeline_free(t.pl[c]);
	pr_registry_free(t.reg);
	free(allow_list);
	if (expect_fail)   /* every program must be caught (the baseline's regressions) */
		return t.programs && t.programs_failed == t.programs ? 0 : 1;
	return t.programs_failed && !count_only ? 1 : 0;
}
