/* tool.h (private to tools/): what the files of the passrun executable share.
 *
 * passrun.c parses the command line into an `opts` and drives one run as a
 * `session` (load plugins, load the pipeline, load the program, verify, run
 * the pipeline, execute); compare.c runs that same session once per pipeline
 * (passrun compare) and reference.c writes --list-passes=markdown. Every step
 * returns an exit status (docs/diagnostics.md): */
#ifndef PASSRUN_TOOL_H
#define PASSRUN_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "passrun/manager.h"
#include "dot.h"

enum { EXIT_OK = 0, EXIT_PASS = 1, EXIT_USAGE = 2, EXIT_PROGRAM = 3, EXIT_MISMATCH = 4,
       EXIT_RUNTIME = 5, EXIT_CONTINUE = -1 };

#define MAX_LIST 64

/* Everything the command line says. */
typedef struct opts {
	const char *program;
	const char *output;                 /* -o */
	bool convert;
	const char *convert_in, *convert_out;
	bool compare;
	const char **programs;              /* compare: every PROGRAM argument (globs too);
					       malloc'd */
	int n_programs;
	const char *compare_pipelines;      /* --pipelines a,b,c (globs too) */
	const char *format;                 /* --format: table, json, csv, jsonl; NULL: table */
	const char *grid[MAX_LIST];         /* compare: --grid NAME=V1,V2,... */
	int n_grid;
	long jobs;                          /* compare: -j N; 0: 1 */
	bool diagnostics;                   /* compare: diagnostics on stderr too */
	const char *pipeline, *passes;
	const char *sets[MAX_LIST];
	int n_sets;
	const char *plugins[MAX_LIST];
	int n_plugins;
	const char *plugin_dirs[MAX_LIST];
	int n_plugin_dirs;
	bool no_default_plugins;
	bool print, print_after_all, print_pipeline;
	const char *print_pipeline_file;    /* --print-pipeline=FILE; NULL: stdout */
	const char *print_after[MAX_LIST];
	int n_print_after;
	const char *print_before[MAX_LIST];
	int n_print_before;
	pr_print_changed print_changed;     /* --print-changed[=diff] */
	bool disable_verify;                /* --disable-verify */
	const char *crash_reproducer;       /* --crash-reproducer=FILE */
	bool all_diagnostics;               /* --all-diagnostics */
	bool verify_each, time_passes, stats_json, list_passes, list_markdown, werror;
	/* The runtime's. */
	bool run;
	long run_n;
	const char *device;                 /* "sim" or "cuda"; NULL = automatic */
	bool check;
	const char *inputs[MAX_LIST];       /* NAME=FILE.npy */
	int n_inputs;
	bool has_seed;
	unsigned long long seed;
	const char *output_dir, *dot;
	pr_dot_view dot_view;               /* --dot-method, --dot-delegate, --dot-around */
	bool dot_changes;                   /* --dot-changes: marks against the input */
	const char *dot_pass;               /* --dot-pass: draw right after this pass */
	char *around_name;                  /* --dot-around's NODE when a RADIUS followed */
} opts;

/* What --run found, kept for compare's table (runtime.h's report, reduced to
 * what does not need the runtime's header). */
typedef struct run_outcome {
	bool ran;               /* the runtime was called */
	bool checked, match;
	int status;             /* the exit status it asked for */
	char device[8];
	char message[320];      /* the error or the first mismatch; "" when none */
} run_outcome;

typedef struct session {
	const opts *o;
	pr_registry *reg;
	pr_pipeline *pl;
	pr_program *prog;
	pr_program *original;   /* the program before any pass, for --check */
	pr_diags diags;
	pr_pass_report rep;
	char *run_json;         /* the "run" object of --stats=json */
	run_outcome run;
	FILE *log;              /* diagnostics and messages; NULL: kept, not printed */
	char error[320];        /* the first message of a failed step; "" when none */
	char program_hash[17];  /* FNV-1a 64 of the program file; "" until read */
	bool wants_provenance;  /* hash the program as it loads: a provenance record
				   (--stats=json, compare's rows) will name it */
	bool placed;            /* every pass of the pipeline ran */
} session;

/* The word for how a run ended (also compare's status column): ok, refused
 * (exit 1), error (2), unreadable (3), mismatch (4), runtime-refused or fault
 * (5). */
const char *status_word(const session *s, int status);
/* The provenance record of a session that ended with status (malloc'd). */
char *session_provenance(const session *s, int status);
/* The --stats=json text of a session (NULL without a program), malloc'd. */
char *session_stats(session *s, int status);

int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints e's message on stderr, frees it, returns status. */
int fail(int status, pr_err *e);
/* The same for a step of a session: the message goes to s->log and is kept
 * as s->error when it is the first. */
int session_fail(session *s, int status, pr_err *e);
/* A message of a session's step: to s->log, and kept as s->error when first. */
void session_say(session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void session_init(session *s, const opts *o);
void session_free(session *s);
int load_plugins(session *s);
int load_pipeline(session *s);
/* The steps after the pipeline is loaded: load the program, verify it, run
 * the pipeline, execute (--dot, --run). Stops at the first that fails. */
int process_program(session *s);

/* passrun compare (compare.c). */
int compare_main(const opts *o);
/* --list-passes=markdown (reference.c): the pipeline reference. */
int list_markdown(session *s, FILE *out);

#endif
