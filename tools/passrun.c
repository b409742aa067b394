/* passrun: the command line (docs/passrun.1).
 *
 *   passrun [OPTIONS] PROGRAM
 *   passrun convert IN OUT
 *   passrun compare --pipelines A,B,... PROGRAM   (compare.c)
 *
 * This file only parses arguments and wires the library together; main()
 * reads as the steps of a run: load plugins, load the pipeline, load the
 * program, verify it, run the pipeline, execute it, write the result and
 * report. Each step is one call that returns an exit status (tool.h):
 *
 *   0 fine; 1 a pass or the verifier reported an error (also a program that
 *   parses but fails verification on load); 2 bad command line, pipeline or
 *   plugin (also an -o path that cannot be written); 3 a program file that
 *   cannot be read or parsed; 4 --check found a mismatch; 5 the runtime
 *   failed.
 *
 * When a step fails nothing is written with -o. --stats=json and
 * --time-passes still report what happened once the program was loaded. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dot.h"
#include "passrun/fileio.h"
#include "passrun/format.h"
#include "passrun/manager.h"
#include "passrun/passrun.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "passrun/strbuf.h"
#ifdef PASSRUN_HAVE_RUNTIME
#include "passrun/runtime.h"
#endif

#include "tool.h"

/* ---- the command line ----------------------------------------------------- */

enum arg_kind { ARG_NONE, ARG_REQUIRED, ARG_OPTIONAL };

typedef struct flag {
	const char *name;
	enum arg_kind arg;
	const char *metavar;
	const char *help;
} flag;

static const flag flags[] = {
	{"--pipeline", ARG_REQUIRED, "FILE|NAME", "run that pipeline (a bare name like 'cuda' or "
	 "'ablate/no-copy-reuse' finds the shipped one)"},
	{"--passes", ARG_REQUIRED, "'a,b{opt=1},c'", "an inline pipeline instead"},
	{"--set", ARG_REQUIRED, "NAME=VALUE", "override a pipeline option, or PASS.NAME=VALUE "
	 "a pass option (VALUE may be a map: '{forward: true}')"},
	{"--plugin", ARG_REQUIRED, "FILE.so", "load a plugin (before the shipped ones)"},
	{"--load-pass-plugin", ARG_REQUIRED, "FILE.so", "the same as --plugin (LLVM's name)"},
	{"--plugin-dir", ARG_REQUIRED, "DIR", "load every .so in DIR (also PASSRUN_PLUGIN_PATH, "
	 "colon-separated)"},
	{"--no-default-plugins", ARG_NONE, NULL, "do not load the shipped plugins"},
	{"-o", ARG_REQUIRED, "OUT", "write the result (.bin: binary, else text), atomically"},
	{"--print", ARG_NONE, NULL, "print the resulting program as text on stdout"},
	{"--print-after-all", ARG_NONE, NULL, "print the program after every pass (stderr)"},
	{"--print-after", ARG_REQUIRED, "PASS", "print the program after PASS (stderr; repeatable)"},
	{"--print-before", ARG_REQUIRED, "PASS", "print the program before PASS (stderr; "
	 "repeatable)"},
	{"--print-changed", ARG_OPTIONAL, "diff", "print the program after each pass that changed "
	 "it (=diff: a unified diff of before and after; stderr)"},
	{"--print-pipeline", ARG_OPTIONAL, "FILE", "write the checked pipeline, after --set, as "
	 "YAML that reloads to it (stdout, or FILE atomically; needs no program)"},
	{"--verify-each", ARG_NONE, NULL, "run the verifier after every pass, and name a pass that "
	 "changed the program while reporting no change"},
	{"--disable-verify", ARG_NONE, NULL, "do not verify the result of the pipeline before "
	 "writing, printing or running it"},
	{"--crash-reproducer", ARG_REQUIRED, "FILE", "on a crash in a pass, write the program the "
	 "pipeline got to FILE and the pipeline to FILE.yaml"},
	{"--time-passes", ARG_NONE, NULL, "a table of time per pass (stderr)"},
	{"--stats", ARG_REQUIRED, "json", "statistics as JSON on stdout"},
	{"--list-passes", ARG_OPTIONAL, "markdown", "every registered pass, its plugin and its "
	 "options (=markdown: the pipeline reference, with the shipped pipelines)"},
	{"--werror", ARG_NONE, NULL, "warnings are errors"},
	{"--all-diagnostics", ARG_NONE, NULL, "print every note and warning (default: 10 of "
	 "each code, then one line that sums up the rest)"},
	{"--run", ARG_OPTIONAL, "N", "execute the result N times (default 1; --device, --check, "
	 "--input, --seed and --output-dir imply --run)"},
	{"--device", ARG_REQUIRED, "sim|cuda", "where delegates run (default: cuda with a GPU, "
	 "else sim)"},
	{"--check", ARG_NONE, NULL, "compare every output with the reference interpreter"},
	{"--input", ARG_REQUIRED, "NAME=FILE.npy", "an input (repeatable; others are random)"},
	{"--seed", ARG_REQUIRED, "N", "seed of the random inputs"},
	{"--output-dir", ARG_REQUIRED, "DIR", "write each output as .npy"},
	{"--dot", ARG_REQUIRED, "FILE", "a Graphviz picture of the result"},
	{"--dot-method", ARG_REQUIRED, "NAME", "--dot: draw only this method"},
	{"--dot-delegate", ARG_REQUIRED, "NAME", "--dot: draw only this delegate's body"},
	{"--dot-around", ARG_REQUIRED, "NODE[:RADIUS]", "--dot: draw only the nodes within "
	 "RADIUS edges of NODE (default 2)"},
	{"--dot-changes", ARG_NONE, NULL, "--dot: mark what the pipeline added (green) and "
	 "removed (dashed)"},
	{"--dot-pass", ARG_REQUIRED, "PASS", "--dot: draw the program right after PASS first "
	 "runs, marking what PASS added and removed"},
	{"--pipelines", ARG_REQUIRED, "A,B,...", "compare: the pipelines to compare (default "
	 "baseline,cuda; globs such as 'ablate/*' name shipped pipelines)"},
	{"--grid", ARG_REQUIRED, "NAME=V1,V2,...", "compare: run every pipeline with each value "
	 "(repeatable: every combination)"},
	{"--format", ARG_REQUIRED, "table|json|csv|jsonl", "compare: a table (default), one JSON "
	 "document, CSV or JSON Lines"},
	{"-j", ARG_REQUIRED, "N", "compare: run N cells at a time (processes; same output)"},
	{"--diagnostics", ARG_NONE, NULL, "compare: also print each cell's diagnostics on stderr"},
	{"--version", ARG_NONE, NULL, "passrun's version and the plugin ABI version"},
	{"--help", ARG_NONE, NULL, "this list (also -h)"},
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))

int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("passrun: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (passrun --help lists every option)\n", stderr);
	return EXIT_USAGE;
}

static void print_help(FILE *out)
{
	fputs("usage: passrun [OPTIONS] PROGRAM      PROGRAM: .pg text or .bin, by content\n"
	      "       passrun convert IN OUT         text <-> binary (by OUT's extension)\n"
	      "       passrun compare [--pipelines A,B,...] [--grid NAME=V1,V2] [OPTIONS] PROGRAM...\n"
	      "                                      one row per program, pipeline and grid point:\n"
	      "                                      copies, bytes, memory, diagnostics and the\n"
	      "                                      --check result (PROGRAM may be a glob)\n\n"
	      "options:\n", out);
	for (int i = 0; i < N_FLAGS; i++) {
		const flag *f = &flags[i];
		char head[64];
		if (f->arg == ARG_NONE)
			snprintf(head, sizeof head, "%s", f->name);
		else if (f->arg == ARG_OPTIONAL)
			snprintf(head, sizeof head, "%s[=%s]", f->name, f->metavar);
		else
			snprintf(head, sizeof head, "%s%s%s", f->name, f->name[1] == '-' ? "=" : " ",
				 f->metavar);
		fprintf(out, "  %-30s %s\n", head, f->help);
	}
	fputs("\nexit status: 0 fine, 1 a pass or the verifier reported an error, 2 bad command\n"
	      "line, pipeline or plugin, 3 bad program file, 4 --check mismatch, 5 runtime error\n",
	      out);
}

static void print_version(FILE *out)
{
	const char *git = pr_version_git();
	fprintf(out, "passrun %s%s%s%s\nplugin ABI %u\n", pr_version(), *git ? " (" : "", git,
		*git ? ")" : "", PR_PLUGIN_ABI_VERSION);
}

static bool push(const char **list, int *n, const char *v, const char *what)
{
	if (*n == MAX_LIST) {
		usage_error("too many %s (at most %d)", what, MAX_LIST);
		return false;
	}
	list[(*n)++] = v;
	return true;
}

/* The runtime counts calls in an int: a larger count would wrap (4294967296
 * ran once). Digits only: strtol would also take spaces, a sign, "0x". */
#define MAX_RUN_COUNT INT_MAX

static bool parse_count(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || v < 1 || v > MAX_RUN_COUNT)
		return false;
	*out = v;
	return true;
}

/* Is NAME of "NAME=FILE" already given by an earlier --input? */
static bool input_given(const opts *o, const char *v)
{
	size_t n = strcspn(v, "=");
	for (int i = 0; i < o->n_inputs; i++)
		if (strcspn(o->inputs[i], "=") == n && !strncmp(o->inputs[i], v, n))
			return true;
	return false;
}

/* --dot-around=NODE[:RADIUS]: a node's name may hold ':' only before the last one. */
static int parse_dot_around(opts *o, const char *v)
{
	const char *colon = strrchr(v, ':');
	o->dot_view.around = v;
	o->dot_view.radius = 2;
	if (!colon)
		return EXIT_CONTINUE;
	char *end;
	errno = 0;
	long r = strtol(colon + 1, &end, 10);
	if (colon == v || !colon[1] || *end || errno || r < 0 || r > 1000000)
		return usage_error("--dot-around=%s: expected NODE or NODE:RADIUS, RADIUS 0 to 1000000", v);
	o->around_name = pr_xasprintf("%.*s", (int)(colon - v), v);
	o->dot_view.around = o->around_name;
	o->dot_view.radius = (int)r;
	return EXIT_CONTINUE;
}

/* Applies one flag; returns EXIT_CONTINUE or an exit status. */
static int apply(opts *o, const flag *f, const char *v)
{
	const char *n = f->name;
	if (!strcmp(n, "--pipeline")) o->pipeline = v;
	else if (!strcmp(n, "--passes")) o->passes = v;
	else if (!strcmp(n, "--set")) { if (!push(o->sets, &o->n_sets, v, "--set")) return EXIT_USAGE; }
	else if (!strcmp(n, "--plugin") || !strcmp(n, "--load-pass-plugin")) { if (!push(o->plugins, &o->n_plugins, v, "--plugin")) return EXIT_USAGE; }
	else if (!strcmp(n, "--plugin-dir")) { if (!push(o->plugin_dirs, &o->n_plugin_dirs, v, "--plugin-dir")) return EXIT_USAGE; }
	else if (!strcmp(n, "--no-default-plugins")) o->no_default_plugins = true;
	else if (!strcmp(n, "-o")) o->output = v;
	else if (!strcmp(n, "--print")) o->print = true;
	else if (!strcmp(n, "--print-after-all")) o->print_after_all = true;
	else if (!strcmp(n, "--print-after")) { if (!push(o->print_after, &o->n_print_after, v, "--print-after")) return EXIT_USAGE; }
	else if (!strcmp(n, "--print-before")) { if (!push(o->print_before, &o->n_print_before, v, "--print-before")) return EXIT_USAGE; }
	else if (!strcmp(n, "--print-changed")) {
		if (v && strcmp(v, "diff"))
			return usage_error("--print-changed=%s: the only format is diff", v);
		o->print_changed = v ? PR_PRINT_CHANGED_DIFF : PR_PRINT_CHANGED_FULL;
	}
	else if (!strcmp(n, "--disable-verify")) o->disable_verify = true;
	else if (!strcmp(n, "--crash-reproducer")) o->crash_reproducer = v;
	else if (!strcmp(n, "--print-pipeline")) {
		o->print_pipeline = true;
		o->print_pipeline_file = v;
	}
	else if (!strcmp(n, "--verify-each")) o->verify_each = true;
	else if (!strcmp(n, "--time-passes")) o->time_passes = true;
	else if (!strcmp(n, "--stats")) {
		if (strcmp(v, "json"))
			return usage_error("--stats=%s: the only format is json", v);
		o->stats_json = true;
	} else if (!strcmp(n, "--list-passes")) {
		if (v && strcmp(v, "markdown"))
			return usage_error("--list-passes=%s: the only format is markdown", v);
		o->list_passes = true;
		o->list_markdown = v != NULL;
	}
	else if (!strcmp(n, "--werror")) o->werror = true;
	else if (!strcmp(n, "--run")) {
		o->run = true;
		o->run_n = 1;
		if (v && !parse_count(v, &o->run_n))
			return usage_error("--run=%s: expected a count from 1 to %d", v, MAX_RUN_COUNT);
	} else if (!strcmp(n, "--device")) {
		if (strcmp(v, "sim") && strcmp(v, "cuda"))
			return usage_error("--device=%s: expected sim or cuda", v);
		o->device = v;
	} else if (!strcmp(n, "--check")) o->check = true;
	else if (!strcmp(n, "--input")) {
		if (!strchr(v, '=') || *v == '=')
			return usage_error("--input %s: expected NAME=FILE.npy", v);
		if (input_given(o, v))
			return usage_error("--input %.*s= given twice", (int)strcspn(v, "="), v);
		if (!push(o->inputs, &o->n_inputs, v, "--input"))
			return EXIT_USAGE;
	} else if (!strcmp(n, "--seed")) {
		char *end;
		errno = 0;
		o->seed = strtoull(v, &end, 10);
		if (!*v || *end || errno || *v == '-')
			return usage_error("--seed %s: expected a non-negative integer", v);
		o->has_seed = true;
	} else if (!strcmp(n, "--output-dir")) o->output_dir = v;
	else if (!strcmp(n, "--dot")) o->dot = v;
	else if (!strcmp(n, "--dot-method")) o->dot_view.method = v;
	else if (!strcmp(n, "--dot-delegate")) o->dot_view.delegate = v;
	else if (!strcmp(n, "--dot-around")) return parse_dot_around(o, v);
	else if (!strcmp(n, "--dot-changes")) o->dot_changes = true;
	else if (!strcmp(n, "--dot-pass")) o->dot_pass = v;
	else if (!strcmp(n, "--all-diagnostics")) o->all_diagnostics = true;
	else if (!strcmp(n, "--pipelines")) o->compare_pipelines = v;
	else if (!strcmp(n, "--grid")) { if (!push(o->grid, &o->n_grid, v, "--grid")) return EXIT_USAGE; }
	else if (!strcmp(n, "--format")) {
		if (strcmp(v, "table") && strcmp(v, "json") && strcmp(v, "csv") && strcmp(v, "jsonl"))
			return usage_error("--format=%s: expected table, json, csv or jsonl", v);
		o->format = v;
	} else if (!strcmp(n, "-j")) {
		if (!parse_count(v, &o->jobs))
			return usage_error("-j %s: expected a count from 1 to %d", v, MAX_RUN_COUNT);
	}
	else if (!strcmp(n, "--diagnostics")) o->diagnostics = true;
	else if (!strcmp(n, "--version")) { print_version(stdout); return EXIT_OK; }
	else if (!strcmp(n, "--help")) { print_help(stdout); return EXIT_OK; }
	return EXIT_CONTINUE;
}

static int unknown_flag(const char *arg)
{
	const char *names[N_FLAGS];
	for (int i = 0; i < N_FLAGS; i++)
		names[i] = flags[i].name;
	size_t n = strcspn(arg, "=");
	char *word = strndup(arg, n);
	const char *near = pr_nearest(word, names, N_FLAGS);
	int st = usage_error("unknown option '%s'; did you mean '%s'?", word, near);
	free(word);
	return st;
}

/* One option at argv[*i]; moves *i past its value. */
static int parse_flag(opts *o, int argc, char **argv, int *i)
{
	const char *arg = argv[*i];
	if (!strcmp(arg, "-h"))
		arg = "--help";
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	for (int k = 0; k < N_FLAGS; k++) {
		const flag *f = &flags[k];
		if (strlen(f->name) != n || strncmp(f->name, arg, n))
			continue;
		const char *v = eq ? eq + 1 : NULL;
		if (f->arg == ARG_NONE && v)
			return usage_error("%s takes no value", f->name);
		if (f->arg == ARG_REQUIRED && !v) {
			if (*i + 1 >= argc)
				return usage_error("%s needs a value (%s)", f->name, f->metavar);
			v = argv[++*i];
		}
		return apply(o, f, v);
	}
	return unknown_flag(arg);
}

static int positionals(opts *o, const char **pos, int n)
{
	if (n && !strcmp(pos[0], "convert")) {
		if (n != 3)
			return usage_error("usage: passrun convert IN OUT");
		o->convert = true;
		o->convert_in = pos[1];
		o->convert_out = pos[2];
		return EXIT_CONTINUE;
	}
	if (n && !strcmp(pos[0], "compare")) {
		if (n < 2)
			return usage_error("usage: passrun compare [--pipelines A,B,...] PROGRAM...");
		o->compare = true;
		o->programs = pr_xcalloc((size_t)n, sizeof *o->programs);
		memcpy(o->programs, pos + 1, (size_t)(n - 1) * sizeof *pos);
		o->n_programs = n - 1;
		o->program = pos[1];
		return EXIT_CONTINUE;
	}
	if (n > 1)
		return usage_error("one program at a time (got '%s' and '%s')", pos[0], pos[1]);
	if (n == 0 && !o->list_passes && !o->print_pipeline)
		return usage_error("no program given");
	o->program = n ? pos[0] : NULL;
	return EXIT_CONTINUE;
}

/* compare runs every pipeline the same way and prints one table: flags that
 * pick one pipeline or write one result make no sense there. */
static int check_compare_args(const opts *o)
{
	const char *bad = o->pipeline ? "--pipeline" : o->passes ? "--passes"
		: o->output && (!o->format || !strcmp(o->format, "table")) ? "-o (but csv, json "
		  "and jsonl may be written with -o)"
		: o->print || o->print_after_all || o->n_print_after || o->n_print_before
		  || o->print_changed || o->print_pipeline ? "--print*"
		: o->crash_reproducer ? "--crash-reproducer"
		: o->dot ? "--dot" : o->output_dir ? "--output-dir"
		: o->list_passes ? "--list-passes" : NULL;
	if (bad)
		return usage_error("compare does not take %s (it runs each pipeline of --pipelines)",
				   bad);
	return EXIT_CONTINUE;
}

/* The --dot-* flags shape --dot's picture: they need it, and one of a kind. */
static int check_dot_args(const opts *o)
{
	const pr_dot_view *v = &o->dot_view;
	const char *part = v->method ? "--dot-method" : v->delegate ? "--dot-delegate"
			 : v->around ? "--dot-around" : o->dot_changes ? "--dot-changes"
			 : o->dot_pass ? "--dot-pass" : NULL;
	if (part && !o->dot)
		return usage_error("%s shapes the picture of --dot FILE, which is not given", part);
	if (v->method && v->delegate)
		return usage_error("give --dot-method or --dot-delegate, not both");
	if (o->dot_changes && o->dot_pass)
		return usage_error("give --dot-changes (what the pipeline changed) or --dot-pass "
				   "(what one pass changed), not both");
	return EXIT_CONTINUE;
}

static int parse_args(int argc, char **argv, opts *o)
{
	memset(o, 0, sizeof *o);
	const char **pos = calloc((size_t)argc + 1, sizeof *pos);
	int n_pos = 0, st = EXIT_CONTINUE;
	bool only_positional = false;
	for (int i = 1; i < argc && st == EXIT_CONTINUE; i++) {
		if (!only_positional && !strcmp(argv[i], "--"))
			only_positional = true;
		else if (!only_positional && argv[i][0] == '-' && argv[i][1])
			st = parse_flag(o, argc, argv, &i);
		else
			pos[n_pos++] = argv[i];
	}
	if (st == EXIT_CONTINUE)
		st = positionals(o, pos, n_pos);
	if (st == EXIT_CONTINUE && o->pipeline && o->passes)
		st = usage_error("give --pipeline or --passes, not both");
	if (st == EXIT_CONTINUE && o->convert && (o->pipeline || o->passes || o->output))
		st = usage_error("convert takes only IN and OUT");
	if (st == EXIT_CONTINUE && !o->compare &&
	    (o->compare_pipelines || o->format || o->n_grid || o->jobs || o->diagnostics))
		st = usage_error("--pipelines, --grid, --format, -j and --diagnostics belong to "
				 "'passrun compare'");
	if (st == EXIT_CONTINUE && o->compare)
		st = check_compare_args(o);
	if (st == EXIT_CONTINUE)
		st = check_dot_args(o);
	free(pos);
	return st;
}

/* ---- the steps of a run ---------------------------------------------------- */

/* Messages start with the file they are about (FILE:LINE:COL for pipelines
 * and programs), so that editors can jump to them: printed as they are. */
int fail(int status, pr_err *e)
{
	fprintf(stderr, "%s\n", pr_err_message(e));
	pr_err_free(e);
	return status;
}

static void keep_error(session *s, const char *text)
{
	if (!*s->error)
		snprintf(s->error, sizeof s->error, "%s", text);
}

void session_say(session *s, const char *fmt, ...)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	pr_strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	char *text = pr_strbuf_take(&b);
	if (s->log)
		fprintf(s->log, "%s\n", text);
	keep_error(s, text);
	free(text);
}

int session_fail(session *s, int status, pr_err *e)
{
	session_say(s, "%s", pr_err_message(e));
	pr_err_free(e);
	return status;
}

static int convert(const opts *o)
{
	pr_program *p = NULL;
	pr_err *e = pr_program_load_file(o->convert_in, &p);
	if (e)
		return fail(EXIT_PROGRAM, e);
	e = pr_program_save_file(p, o->convert_out);
	pr_program_free(p);
	return e ? fail(EXIT_USAGE, e) : EXIT_OK;
}

int load_plugins(session *s)
{
	const opts *o = s->o;
	double t0 = pr_now_ms();
	pr_plugin_search search = {o->plugins, o->n_plugins, o->plugin_dirs, o->n_plugin_dirs,
				   getenv("PASSRUN_PLUGIN_PATH"), o->no_default_plugins};
	pr_err *e = pr_registry_load_search(s->reg, &search);
	pr_pass_report_add(&s->rep, "load plugins", pr_now_ms() - t0, false, false);
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

static pr_err *read_pipeline(const opts *o, pr_pipeline **pl)
{
	if (o->passes)
		return pr_pipeline_parse_inline(o->passes, pl);
	if (!o->pipeline) {
		*pl = pr_pipeline_new_empty();
		return NULL;
	}
	return pr_pipeline_load_named(o->pipeline, pl);
}

/* --print-before/--print-after name a pass of the pipeline: an unknown pass
 * gets the nearest registered one, a known one that this pipeline does not
 * run gets the pipeline's passes. */
static pr_err *check_printed_pass(const char *flag, const char *pass, const pr_registry *r,
				  const pr_pipeline *pl)
{
	for (int i = 0; i < pr_pipeline_n_passes(pl); i++)
		if (!strcmp(pr_pipeline_pass_name(pl, i), pass))
			return NULL;
	if (pr_registry_find_pass(r, pass)) {
		pr_strbuf b;
		pr_strbuf_init(&b);
		for (int i = 0; i < pr_pipeline_n_passes(pl); i++)
			pr_strbuf_printf(&b, "%s%s", i ? ", " : "", pr_pipeline_pass_name(pl, i));
		pr_err *e = pr_err_new("%s=%s: pass '%s' is not in the pipeline (its passes: %s)",
				       flag, pass, pass, b.len ? b.data : "none");
		pr_strbuf_free(&b);
		return e;
	}
	int n = pr_registry_n_passes(r);
	const char **names = calloc((size_t)n + 1, sizeof *names);
	for (int k = 0; k < n; k++)
		names[k] = pr_registry_pass(r, k)->name;
	const char *near = pr_nearest(pass, names, n);
	pr_err *e = pr_err_new("%s=%s: unknown pass%s%s%s", flag, pass,
			       near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
	free(names);
	return e;
}

static pr_err *check_print_flags(const opts *o, const pr_registry *r, const pr_pipeline *pl)
{
	pr_err *e = NULL;
	for (int i = 0; i < o->n_print_after && !e; i++)
		e = check_printed_pass("--print-after", o->print_after[i], r, pl);
	for (int i = 0; i < o->n_print_before && !e; i++)
		e = check_printed_pass("--print-before", o->print_before[i], r, pl);
	if (!e && o->dot_pass)
		e = check_printed_pass("--dot-pass", o->dot_pass, r, pl);
	return e;
}

int load_pipeline(session *s)
{
	const opts *o = s->o;
	double t0 = pr_now_ms();
	pr_err *e = read_pipeline(o, &s->pl);
	if (!e)
		e = pr_pipeline_load_plugins(s->pl, s->reg);
	for (int i = 0; i < o->n_sets && !e; i++)
		e = pr_pipeline_set(s->pl, o->sets[i]);
	if (!e)
		e = pr_pipeline_validate(s->pl, s->reg);
	if (!e)
		e = check_print_flags(o, s->reg, s->pl);
	pr_pass_report_add(&s->rep, "load pipeline", pr_now_ms() - t0, false, false);
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

/* --print-pipeline[=FILE]: the checked pipeline, after --set, as YAML that
 * pr_pipeline_load_file reads back to the same pipeline. */
static int print_pipeline(session *s)
{
	char *yaml = pr_pipeline_to_yaml(s->pl);
	pr_err *e = NULL;
	if (s->o->print_pipeline_file)
		e = pr_file_write_atomic(s->o->print_pipeline_file, yaml, strlen(yaml));
	else
		fputs(yaml, stdout);
	free(yaml);
	fflush(stdout);
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

static int list_passes(session *s)
{
	if (s->o->list_markdown)
		return list_markdown(s, stdout);
	pr_registry_list(s->reg, stdout);
	return EXIT_OK;
}

static int load_program(session *s)
{
	double t0 = pr_now_ms();
	/* Before anything is written: -o may name the program file itself. */
	pr_err *e = s->wants_provenance ? pr_file_fnv1a64(s->o->program, s->program_hash) : NULL;
	if (!e)
		e = pr_program_load_file(s->o->program, &s->prog);
	/* --check runs, and --dot-changes compares with, the program as it was
	 * before the passes: a second copy. */
	if (!e && (s->o->check || s->o->dot_changes))
		e = pr_program_load_file(s->o->program, &s->original);
	pr_pass_report_add(&s->rep, "load program", pr_now_ms() - t0, false, false);
	return e ? session_fail(s, EXIT_PROGRAM, e) : EXIT_OK;
}

static int verify_program(session *s)
{
	double t0 = pr_now_ms();
	int bad = pr_verify(s->prog, &s->diags, "verifier");
	bad += pr_plan_check(s->prog, &s->diags, "verifier");
	pr_pipeline_check_methods(s->pl, s->prog, &s->diags);
	pr_pass_report_add(&s->rep, "verify", pr_now_ms() - t0, false, false);
	if (s->log)
		pr_diags_print(&s->diags, 0, s->log);
	if (!bad && pr_diags_errors(&s->diags)) {
		session_say(s, "%s: warnings are errors (--werror)", s->o->program);
		return EXIT_PASS;
	}
	if (!bad)
		return EXIT_OK;
	session_say(s, "%s: the program fails verification (%d error%s)", s->o->program, bad,
		    bad == 1 ? "" : "s");
	return EXIT_PASS;
}

/* Past this many nodes Graphviz's dot takes minutes: say how to draw less. */
#define DOT_COMFORTABLE_NODES 400

/* Draws p, marked against before when not NULL, into --dot's file. */
static int write_dot_of(session *s, const pr_program *p, const pr_program *before, const char *by)
{
	pr_dot_view view = s->o->dot_view;
	view.before = before;
	view.changed_by = by;
	char *text;
	int drawn = 0;
	pr_err *e = pr_dot_render_view(p, &s->diags, &view, &text, &drawn);
	if (e)
		return session_fail(s, EXIT_USAGE, e);
	e = pr_file_write_atomic(s->o->dot, text, strlen(text));
	free(text);
	if (!e && drawn > DOT_COMFORTABLE_NODES && !view.around && !view.delegate)
		fprintf(stderr, "passrun: note: %s draws %d nodes, more than Graphviz's dot lays out "
			"in reasonable time; draw a part with --dot-around=NODE[:RADIUS], --dot-method "
			"or --dot-delegate\n", s->o->dot, drawn);
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

/* --dot-pass=PASS: the program before PASS first runs (a copy), then the
 * picture right after it, marked against that copy. */
typedef struct dot_pass_state {
	session *s;
	pr_program *before;
	bool drawn;
} dot_pass_state;

static pr_err *copy_program(const pr_program *p, pr_program **out)
{
	uint8_t *bytes;
	size_t len;
	pr_err *e = pr_binary_write(p, &bytes, &len);
	if (e)
		return e;
	e = pr_binary_load("(copy)", bytes, len, false, out);
	free(bytes);
	return e;
}

static void dot_pass_before(void *ctx, const char *pass, int index, const pr_program *p)
{
	dot_pass_state *dp = ctx;
	(void)index;
	if (dp->drawn || dp->before || strcmp(pass, dp->s->o->dot_pass))
		return;
	pr_err *e = copy_program(p, &dp->before);
	if (e) {   /* a program that loaded copies; say so if not, and draw unmarked */
		fprintf(stderr, "passrun: --dot-pass: %s\n", pr_err_message(e));
		pr_err_free(e);
	}
}

static pr_err *dot_pass_after(void *ctx, const char *pass, int index, const pr_program *p,
			      bool changed)
{
	dot_pass_state *dp = ctx;
	(void)index;
	(void)changed;
	if (dp->drawn || strcmp(pass, dp->s->o->dot_pass))
		return NULL;
	dp->drawn = true;
	char *by = pr_xasprintf("pass '%s'", pass);
	int st = write_dot_of(dp->s, p, dp->before, by);
	free(by);
	return st ? pr_err_new("--dot-pass=%s: the picture was not written", pass) : NULL;
}

static int run_pipeline(session *s)
{
	const opts *o = s->o;
	pr_instrument_opts ro = {
		.print_after_all = o->print_after_all, .print_after = o->print_after,
		.n_print_after = o->n_print_after, .verify_each = o->verify_each,
		.print_out = stderr, .diag_out = s->log, .print_before = o->print_before,
		.n_print_before = o->n_print_before, .print_changed = o->print_changed,
		.verify_after = !o->disable_verify, .crash_reproducer = o->crash_reproducer,
	};
	dot_pass_state dp = {s, NULL, false};
	pr_pass_hook hook = {&dp, dot_pass_before, dot_pass_after};
	if (o->dot && o->dot_pass)
		ro.hook = &hook;
	pr_err *e = pr_pipeline_run(s->pl, s->reg, s->prog, &s->diags, &ro, &s->rep);
	pr_program_free(dp.before);
	if (e) {
		session_say(s, "%s: %s", o->program, pr_err_message(e));
		pr_err_free(e);
		return EXIT_PASS;
	}
	s->placed = true;
	return EXIT_OK;
}

static bool wants_run(const opts *o)
{
	return o->run || o->device || o->check || o->n_inputs || o->has_seed || o->output_dir;
}

#ifdef PASSRUN_HAVE_RUNTIME
static void keep_outcome(run_outcome *out, const prt_run_report *rr, const pr_err *e, int st)
{
	out->ran = true;
	out->checked = rr->checked;
	out->match = rr->match;
	out->status = st;
	snprintf(out->device, sizeof out->device, "%s", rr->device);
	snprintf(out->message, sizeof out->message, "%s",
		 e ? pr_err_message(e) : rr->checked && !rr->match ? rr->mismatch : "");
}

/* --run and the flags that go with it (each of them alone runs once). */
static int run_program(session *s)
{
	const opts *o = s->o;
	prt_run_input inputs[MAX_LIST];
	char *names[MAX_LIST];
	for (int i = 0; i < o->n_inputs; i++) {
		const char *eq = strchr(o->inputs[i], '=');
		names[i] = strndup(o->inputs[i], (size_t)(eq - o->inputs[i]));
		inputs[i] = (prt_run_input){names[i], eq + 1};
	}
	prt_run_options ro = {NULL, o->run ? (int)o->run_n : 1, o->device, o->check,
			     o->has_seed ? o->seed : 0, o->n_inputs, inputs, o->output_dir, 0, 0};
	prt_run_report rr;
	memset(&rr, 0, sizeof rr);
	double t0 = pr_now_ms();
	pr_err *e = prt_runtime_execute(s->original, s->prog, &ro, &rr);
	pr_pass_report_add(&s->rep, "run", pr_now_ms() - t0, false, false);
	for (int i = 0; i < o->n_inputs; i++)
		free(names[i]);
	size_t len;
	FILE *mem = open_memstream(&s->run_json, &len);
	if (mem) {
		prt_run_report_json(&rr, mem);
		fclose(mem);
	}
	int st = rr.exit_status ? rr.exit_status : e ? EXIT_RUNTIME : EXIT_OK;
	if (e)
		session_say(s, "%s: %s", o->program, pr_err_message(e));
	else if (rr.checked && !rr.match)
		session_say(s, "%s: --check: %s", o->program, rr.mismatch);
	keep_outcome(&s->run, &rr, e, st);
	pr_err_free(e);
	return st;
}
#else
static int run_program(session *s)
{
	(void)s;
	fprintf(stderr, "passrun: --run, --device, --check, --input, --seed and --output-dir "
		"need the runtime, which this passrun was built without\n");
	return EXIT_USAGE;
}
#endif

/* --dot after the pipeline (--dot-pass drew during it). */
static int write_dot(session *s)
{
	if (s->o->dot_pass)
		return EXIT_OK;
	if (!s->o->dot_changes)
		return write_dot_of(s, s->prog, NULL, NULL);
	char *by = pr_xasprintf("pipeline '%s'", s->pl ? pr_pipeline_name(s->pl) : "none");
	int st = write_dot_of(s, s->prog, s->original, by);
	free(by);
	return st;
}

/* Executes the result (--run ...) and draws it (--dot). */
static int execute(session *s)
{
	int st = s->o->dot ? write_dot(s) : EXIT_OK;
	if (!st && wants_run(s->o))
		st = run_program(s);
	return st;
}

/* mkdir -p: every missing folder on the way, then dir itself. */
static pr_err *make_folders(const char *dir)
{
	char *path = pr_xstrdup(dir);
	pr_err *e = NULL;
	for (char *p = path + 1; !e; p++) {
		bool last = !*p;
		if (*p != '/' && !last)
			continue;
		*p = 0;
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			e = pr_err_new("--output-dir %s: cannot create %s: %s", dir, path,
				       strerror(errno));
		if (last)
			break;
		*p = '/';
	}
	free(path);
	return e;
}

/* --output-dir is created when missing and checked to be a folder this
 * process may write before anything runs: a bad one used to fail with exit 5
 * once the whole program had run. */
static int prepare_output_dir(session *s, const char *dir)
{
	struct stat st;
	pr_err *e = *dir ? make_folders(dir) : pr_err_new("--output-dir: an empty name");
	if (!e && stat(dir, &st) != 0)
		e = pr_err_new("--output-dir %s: %s", dir, strerror(errno));
	else if (!e && !S_ISDIR(st.st_mode))
		e = pr_err_new("--output-dir %s: not a folder", dir);
	else if (!e && access(dir, W_OK | X_OK) != 0)
		e = pr_err_new("--output-dir %s: cannot write there: %s", dir, strerror(errno));
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

int process_program(session *s)
{
	int st = s->o->output_dir ? prepare_output_dir(s, s->o->output_dir) : EXIT_OK;
	if (!st)
		st = load_program(s);
	if (!st)
		st = verify_program(s);
	if (!st)
		st = run_pipeline(s);
	if (!st)
		st = execute(s);
	return st;
}

static int write_result(session *s)
{
	double t0 = pr_now_ms();
	if (s->o->print) {
		size_t len;
		char *text = pr_text_print(s->prog, &len);
		fwrite(text, 1, len, stdout);
		free(text);
	}
	pr_err *e = s->o->output ? pr_program_save_file(s->prog, s->o->output) : NULL;
	if (s->o->print || s->o->output)
		pr_pass_report_add(&s->rep, "write program", pr_now_ms() - t0, false, false);
	return e ? session_fail(s, EXIT_USAGE, e) : EXIT_OK;
}

const char *status_word(const session *s, int status)
{
	switch (status) {
	case EXIT_OK: return "ok";
	case EXIT_PASS: return "refused";
	case EXIT_PROGRAM: return "unreadable";
	case EXIT_MISMATCH: return "mismatch";
	case EXIT_RUNTIME: return strstr(s->run.message, "refusing") ? "runtime-refused" : "fault";
	default: return "error";
	}
}

/* A run draws random inputs from the seed (0 unless --seed) when it runs. */
char *session_provenance(const session *s, int status)
{
	const opts *o = s->o;
	pr_provenance pv = {s->pl, s->reg, o->program, *s->program_hash ? s->program_hash : NULL,
			    o->sets, o->n_sets, s->run.ran, o->has_seed ? o->seed : 0,
			    status_word(s, status), status};
	return pr_provenance_json(&pv);
}

char *session_stats(session *s, int status)
{
	if (!s->prog)
		return NULL;
	double t0 = pr_now_ms();
	char *pv = session_provenance(s, status);
	char *json = pr_stats_json_with(s->prog, &s->diags, &s->rep, s->run_json, pv);
	free(pv);
	pr_pass_report_add(&s->rep, "stats", pr_now_ms() - t0, false, false);
	return json;
}

/* --time-passes and --stats=json, also after a failed pass. */
static void report(session *s, int status)
{
	pr_diags_print_summary(&s->diags, stderr);
	char *json = s->o->stats_json ? session_stats(s, status) : NULL;
	if (s->o->time_passes)
		pr_pass_report_print_times(&s->rep, stderr);
	if (json)
		fputs(json, stdout);
	free(json);
	fflush(stdout);
}

/* Notes and warnings printed of one code before the rest is a summary line
 * (--all-diagnostics prints every one; --stats=json lists every one). */
#define DIAGS_PRINTED_PER_CODE 10

void session_init(session *s, const opts *o)
{
	memset(s, 0, sizeof *s);
	s->o = o;
	s->log = stderr;
	s->reg = pr_registry_new();
	pr_diags_init(&s->diags, o->program);
	s->diags.werror = o->werror;
	s->diags.print_limit = o->all_diagnostics ? 0 : DIAGS_PRINTED_PER_CODE;
	/* Only --stats=json reads the diagnostics that are not printed, and
	 * --dot the flags of every one (the per-call copies it outlines). */
	pr_diags_keep_messages(&s->diags, o->stats_json || o->dot);
	s->wants_provenance = o->stats_json;
	pr_pass_report_init(&s->rep);
}

void session_free(session *s)
{
	pr_program_free(s->prog);
	pr_program_free(s->original);
	free(s->run_json);
	pr_pipeline_free(s->pl);
	pr_diags_free(&s->diags);
	pr_pass_report_free(&s->rep);
	pr_registry_free(s->reg);
}

/* One run allocates and frees big arrays pass after pass (lifetimes, plans,
 * tables of a million entries). By default glibc maps each of them afresh and
 * unmaps it on free, so every pass faults in and zeroes new pages: at a
 * million nodes that was half the page faults and a second of system time.
 * Keeping freed memory in the heap lets the next pass reuse it; a run is one
 * short process, so memory it no longer needs is returned at exit. */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

/* At exit the kernel takes a process's memory back at once; freeing the
 * program node by node first was 23 M of a 100,000-node run's 860 M
 * instructions (ten times that at a million). So, as clang's driver does
 * (-disable-free), the last session leaves its programs to the exit. Their
 * pointers stay here, so leak checkers (the Valgrind tier, LeakSanitizer)
 * see reachable memory, not a leak; every other path, compare's sessions
 * among them, frees as before. */
static pr_program *volatile left_to_exit[2];  /* volatile: the stores must stay */

static void session_free_at_exit(session *s)
{
	left_to_exit[0] = s->prog;
	left_to_exit[1] = s->original;
	s->prog = s->original = NULL;
	session_free(s);
}

int main(int argc, char **argv)
{
	keep_freed_memory();
	opts o;
	int st = parse_args(argc, argv, &o);
	if (st != EXIT_CONTINUE) {
		free(o.programs);
		free(o.around_name);
		return st;
	}
	if (o.convert)
		return convert(&o);
	if (o.compare) {
		st = compare_main(&o);
		free(o.programs);
		free(o.around_name);
		return st;
	}

	pr_crash_handler_install(-1);
	session s;
	session_init(&s, &o);
	st = load_plugins(&s);
	if (!st)
		st = load_pipeline(&s);
	if (!st && o.print_pipeline)
		st = print_pipeline(&s);
	if (!st && o.list_passes) {
		st = list_passes(&s);
	} else if (!st && o.program) {
		st = process_program(&s);
		if (!st)
			st = write_result(&s);
		report(&s, st);
	}
	session_free_at_exit(&s);
	free(o.around_name);
	return st;
}
