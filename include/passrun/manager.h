/* manager.h: the pass manager, as the passrun tool (and tests) drive it.
 *
 * Plugins never include this header: their contract is pass.h. This one is
 * for the tool that owns a run:
 *
 *   registry  passes and analyses by name, and the plugins (.so) they came
 *             from. Loading a plugin checks, before anything of it runs, that
 *             neither the file nor any folder above it can be written by
 *             group or others; then its entry point, ABI version and struct
 *             size; then that its passes' names are new.
 *   pipeline  an ordered list of passes with their options, read from YAML
 *             (docs/pipeline-format.md), from --passes 'a,b{opt=1}', and changed by
 *             --set. It is checked whole against the registry before any pass
 *             runs; every error starts with FILE:LINE:COL (1-based).
 *   run       the passes in order, with analyses cached per graph and dropped
 *             after a pass that changed the program unless it preserves them,
 *             and the instrumentation of LLVM's and MLIR's pass managers
 *             (--print-after*, --verify-each, --time-passes).
 *   stats     --stats=json (docs/stats-json.md), derived from the program.
 *
 * Errors are values (pr_err). Every message names the file (plugin, pipeline)
 * it is about. */
#ifndef PASSRUN_MANAGER_H
#define PASSRUN_MANAGER_H

#include <stdbool.h>
#include <stdio.h>

#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/pass.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the registry -------------------------------------------------------- */

pr_registry *pr_registry_new(void);
/* Frees what was registered, then unloads the plugins. */
void pr_registry_free(pr_registry *r);

/* Loads one plugin file, named by a path with a '/' ("./x.so", never a bare
 * "x.so": that is refused, see plugin.c). Loading a file that is already loaded (same device
 * and inode) does nothing. On error nothing of the plugin stays registered. */
pr_err *pr_registry_load_plugin(pr_registry *r, const char *path);
/* Loads every regular "*.so" in dir, in name order. */
pr_err *pr_registry_load_dir(pr_registry *r, const char *dir);

/* Where plugins come from, in this order: files, dirs, env_path (a
 * colon-separated PASSRUN_PLUGIN_PATH; empty entries are skipped, never taken
 * as the current directory), then the shipped folder (unless no_default). */
typedef struct pr_plugin_search {
	const char *const *files;
	int n_files;
	const char *const *dirs;
	int n_dirs;
	const char *env_path;   /* may be NULL */
	bool no_default;
} pr_plugin_search;

pr_err *pr_registry_load_search(pr_registry *r, const pr_plugin_search *s);
/* The shipped plugin folder, found next to the core library itself
 * (LIBDIR/passrun/plugins), so a build tree and any install prefix each find
 * their own; NULL when there is none. */
const char *pr_registry_default_plugin_dir(void);

int pr_registry_n_passes(const pr_registry *r);
const pr_pass_info *pr_registry_pass(const pr_registry *r, int i);
const pr_pass_info *pr_registry_find_pass(const pr_registry *r, const char *name);
const pr_analysis_info *pr_registry_find_analysis(const pr_registry *r, const char *name);
/* The plugin that registered pass i: its name, and its file ("" when the pass
 * was registered in-process). */
const char *pr_registry_pass_plugin(const pr_registry *r, int i);
const char *pr_registry_pass_plugin_file(const pr_registry *r, int i);
/* A pipeline-scope option as some registered pass declares it, or NULL. */
const pr_option_decl *pr_registry_find_pipeline_option(const pr_registry *r, const char *name);
/* --list-passes: every pass, its plugin, summary and options; then analyses. */
void pr_registry_list(const pr_registry *r, FILE *out);

/* The choice nearest to word by edit distance (ties: the first), or NULL when
 * there are no choices. For "did you mean" messages. */
const char *pr_nearest(const char *word, const char *const *choices, int n);

/* ---- pipelines ----------------------------------------------------------- */

typedef struct pr_pipeline pr_pipeline;

/* Reads a YAML pipeline (syntax and shape only; names are checked by
 * pr_pipeline_validate, once the plugins it needs are loaded). */
pr_err *pr_pipeline_load_file(const char *path, pr_pipeline **out);
pr_err *pr_pipeline_parse_yaml(const char *filename, const char *text, size_t len,
			       pr_pipeline **out);
/* An inline pipeline: 'a,b{opt=1,flag=true},c'. Errors are "--passes:1:COL". */
pr_err *pr_pipeline_parse_inline(const char *text, pr_pipeline **out);
/* A pipeline with no passes (for --set without --pipeline). */
pr_pipeline *pr_pipeline_new_empty(void);
void pr_pipeline_free(pr_pipeline *pl);

/* Resolves --pipeline ARG: a name ending in .yaml or .yml is a path; anything
 * else ("cuda", "ablate/no-copy-reuse") is looked up as NAME.yaml in the
 * source tree's pipelines folder, then the installed one. *path is malloc'd. */
pr_err *pr_pipeline_find(const char *arg, char **path);
/* pr_pipeline_find, then pr_pipeline_load_file: --pipeline ARG's pipeline. */
pr_err *pr_pipeline_load_named(const char *arg, pr_pipeline **out);

/* Loads the pipeline's `plugins:` (paths relative to its file). */
pr_err *pr_pipeline_load_plugins(pr_pipeline *pl, pr_registry *r);
/* --set NAME=VALUE (pipeline option) or PASS.NAME=VALUE (that pass's option,
 * at every place the pipeline runs it). VALUE is YAML: a scalar or a flow map
 * {method: value}. Replaces what the pipeline said. */
pr_err *pr_pipeline_set(pr_pipeline *pl, const char *assignment);
/* Checks every pass, option, type and per-method map, and that every analysis
 * a pass requires is registered. All errors, one per line. */
pr_err *pr_pipeline_validate(pr_pipeline *pl, const pr_registry *r);

/* Per-method maps name methods the program may not have (a typo there would
 * silently do nothing): adds a warning W-UNKNOWN-METHOD (pass "pipeline") for
 * each, at its FILE:LINE:COL, with the nearest method. Returns how many. */
int pr_pipeline_check_methods(const pr_pipeline *pl, const pr_program *p, pr_diags *diags);

const char *pr_pipeline_name(const pr_pipeline *pl);
const char *pr_pipeline_file(const pr_pipeline *pl);
int pr_pipeline_n_passes(const pr_pipeline *pl);
const char *pr_pipeline_pass_name(const pr_pipeline *pl, int i);
/* The pipeline as canonical YAML (for replaying a failing run). malloc'd. */
char *pr_pipeline_to_yaml(const pr_pipeline *pl);
/* Its `description:`, or NULL. */
const char *pr_pipeline_description(const pr_pipeline *pl);
/* The shipped pipelines as --pipeline names ("baseline", "ablate/no-copy-reuse"),
 * sorted; *names is malloc'd, each name too (free with pr_names_free). Returns
 * the count (0 when there is no shipped folder). */
int pr_pipeline_list_shipped(char ***names);
void pr_names_free(char **names, int n);

/* ---- running ------------------------------------------------------------- */

/* How --print-changed prints: the whole program, or a unified diff of its
 * printed form before and after the pass. */
typedef enum pr_print_changed {
	PR_PRINT_CHANGED_OFF, PR_PRINT_CHANGED_FULL, PR_PRINT_CHANGED_DIFF,
} pr_print_changed;

/* The instruments of a run. Each is a set of hooks (before a pass, after it,
 * after it failed) on one list, as MLIR's PassInstrumentation: timing, the
 * new diagnostics, the printers, the verifier, the crash note. Fields are
 * added at the end; a zeroed struct means no instrument. */
/* A caller's own instrument, run after the manager's own: before and after
 * every pass (failed passes get no after). The program may be read, not
 * changed. after may stop the run with an error. */
typedef struct pr_pass_hook {
	void *ctx;
	void (*before)(void *ctx, const char *pass, int index, const pr_program *p);
	pr_err *(*after)(void *ctx, const char *pass, int index, const pr_program *p, bool changed);
} pr_pass_hook;

typedef struct pr_instrument_opts {
	bool print_after_all;
	const char *const *print_after;  /* pass names */
	int n_print_after;
	bool verify_each;  /* pr_verify and pr_plan_check after every pass, and a
			      pass that changed the program while reporting no
			      change is an error (a fingerprint, see passmgr.c) */
	FILE *print_out;   /* --print-*: NULL means stderr */
	FILE *diag_out;    /* new diagnostics are printed here after each pass; NULL: not printed */
	const char *const *print_before; /* pass names */
	int n_print_before;
	pr_print_changed print_changed;
	bool verify_after; /* verify once the pipeline has run (unless verify_each
			      did after every pass); a failure names the last pass
			      that reported a change */
	/* With a crash handler installed (pr_crash_handler_install): on a crash
	 * in a pass, write the program as it was when the pipeline started to
	 * this file (text) and the pipeline to FILE.yaml, which reproduce the
	 * crash with `passrun --pipeline FILE.yaml FILE`. NULL: none. */
	const char *crash_reproducer;
	const pr_pass_hook *hook;  /* NULL: none */
} pr_instrument_opts;

typedef struct pr_pass_record {
	char *name;
	double ms;
	bool changed;
	bool is_pass;      /* false: a phase of passrun itself (loading plugins, ...) */
} pr_pass_record;

typedef struct pr_pass_report {
	int n, cap;
	pr_pass_record *items;
} pr_pass_report;

void pr_pass_report_init(pr_pass_report *rep);
void pr_pass_report_free(pr_pass_report *rep);
void pr_pass_report_add(pr_pass_report *rep, const char *name, double ms, bool changed,
		       bool is_pass);
/* --time-passes: a table, largest first, with the total. */
void pr_pass_report_print_times(const pr_pass_report *rep, FILE *out);
/* Milliseconds on a monotonic clock, for timing phases. */
double pr_now_ms(void);

/* Runs a validated pipeline over p. Stops at the first pass that returns an
 * error (returned, naming the pass), that reports error diagnostics (counting
 * warnings under diags->werror; returns an error too), that broke a contract
 * of pass.h (an undeclared option, an unregistered analysis, a required
 * analysis with no result), or after which the verifier fails under
 * verify_each ("verifier failed after pass 'X'"). */
pr_err *pr_pipeline_run(const pr_pipeline *pl, const pr_registry *r, pr_program *p,
			pr_diags *diags, const pr_instrument_opts *opts, pr_pass_report *rep);

/* Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (on an
 * alternate stack). A signal while a pass runs writes, with write(2) of
 * strings prepared before the pass, "passrun: crash: signal N (NAME) in pass
 * 'P' of plugin 'L' (FILE), method 'M'" on stderr, the pass's name and a
 * newline on report_fd (when >= 0), and the crash reproducer (when the run
 * asked for one); then the signal is raised again with its default action,
 * so the process ends as killed by it (a shell's status 128+N, a core dump
 * where enabled). Outside a pass the handlers only re-raise. */
void pr_crash_handler_install(int report_fd);

/* ---- statistics ---------------------------------------------------------- */

/* --stats=json (docs/stats-json.md). run_json is the "run" object's text, or
 * NULL to leave it out. Returns a malloc'd string ending in a newline. */
char *pr_stats_json(pr_program *p, const pr_diags *diags, const pr_pass_report *rep,
		    const char *run_json);
/* --stats=json with a "provenance" member (provenance_json, the text of
 * pr_provenance_json; NULL leaves it out). pr_stats_json is this with NULL. */
char *pr_stats_json_with(pr_program *p, const pr_diags *diags, const pr_pass_report *rep,
			 const char *run_json, const char *provenance_json);
/* The bytes copy node n (an h2d or d2h copy) moves on every call: the storage
 * its argument spans, gaps of a strided view included, as the runtime moves
 * and measures them. --stats=json and compare both count with it. */
int64_t pr_copy_bytes(const pr_node *n);

/* ---- provenance ---------------------------------------------------------- */

/* passrun's version (the project's, "0.1.0"), and `git describe --always
 * --dirty --tags` of the source tree it was configured from ("" when that was
 * no git checkout). Both are fixed when the build is configured. */
const char *pr_version(void);
const char *pr_version_git(void);

/* The 64-bit FNV-1a hash of a file's bytes as 16 lowercase hex digits (hex
 * holds 17 bytes): what provenance records of a program, so that two rows
 * can be told to come from the same bytes. */
pr_err *pr_file_fnv1a64(const char *path, char hex[17]);

/* The plugins the registry loaded, in load order. */
int pr_registry_n_plugins(const pr_registry *r);
const char *pr_registry_plugin_name(const pr_registry *r, int i);
const char *pr_registry_plugin_version(const pr_registry *r, int i);
const char *pr_registry_plugin_file(const pr_registry *r, int i);

/* Does the pipeline run a pass of that name? */
bool pr_pipeline_has_pass(const pr_pipeline *pl, const char *pass);
/* The pipeline as a JSON object: {"name", "file", "options": {...},
 * "passes": [{"name", "options": {...}}]}, values as the YAML wrote them
 * (booleans and numbers bare, the rest strings, per-method maps as objects).
 * malloc'd. */
char *pr_pipeline_to_json(const pr_pipeline *pl);

/* What produced a result, for --stats=json and compare's rows. */
typedef struct pr_provenance {
	const pr_pipeline *pipeline;     /* after every --set; NULL: not loaded */
	const pr_registry *registry;     /* for the plugins' versions; may be NULL */
	const char *program;             /* the file as given; NULL: none */
	const char *program_hash;        /* pr_file_fnv1a64's; NULL: not read */
	const char *const *overrides;    /* the --set assignments applied, in order */
	int n_overrides;
	bool has_seed;                   /* a run drew random inputs from seed */
	unsigned long long seed;
	const char *status;              /* "ok", "refused", ... (the caller's word) */
	int exit_status;
} pr_provenance;

/* The "provenance" object (docs/passrun.1 lists its keys) on one line, so
 * that a JSON Lines row can carry it too. malloc'd. */
char *pr_provenance_json(const pr_provenance *pv);

#ifdef __cplusplus
}
#endif
#endif
