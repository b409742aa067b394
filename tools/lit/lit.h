/* lit.h: passrun-lit, the golden-test tool (docs/golden-tests.md).
 *
 * A test is a program file whose comments name runs of passrun and what each
 * run must show:
 *
 *   # RUN cuda: --pipeline cuda          passrun --print ARGS FILE
 *   # CHECK cuda: delegate @add0(%x)     in the printed program, in order
 *   # STATS cuda: methods.forward.h2d_copies = 1
 *
 * The modules, in the order a test goes through them:
 *
 *   parse.c    reads the directives of a file into a lit_case (or refuses
 *              the file with a located message: a test that cannot mean
 *              what it says never passes);
 *   exec.c     runs passrun for each RUN line and keeps its outputs;
 *   match.c    checks the printed program (CHECK, CHECK-NEXT, CHECK-NOT,
 *              CHECK-DAG, COUNT);
 *   expect.c   checks everything else (EXIT, DIAG, STDERR, STATS);
 *   json.c     finds a value in --stats=json by its path;
 *   pattern.c  plain text and {{regex}} patterns;
 *   text.c     strings, lines and the nearest match of a failed search.
 *
 * Every failure is reported as FILE:LINE of the directive, what it expected
 * and what the run showed instead; lit_fail counts them. */
#ifndef PASSRUN_LIT_H
#define PASSRUN_LIT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

/* Exit status of passrun-lit. */
enum { LIT_OK = 0, LIT_FAILED = 1, LIT_USAGE = 2 };

typedef enum lit_kind {
	LIT_RUN,
	LIT_CHECK,       /* text, after the previous match */
	LIT_CHECK_NEXT,  /* text, on the line after the previous match */
	LIT_CHECK_NOT,   /* text, not between the previous and the next match */
	LIT_CHECK_DAG,   /* text, consecutive DAGs match in any order */
	LIT_COUNT,       /* N text: exactly N times in the printed program */
	LIT_EXIT,        /* N: the exit status */
	LIT_DIAG,        /* CODE N, or severity[CODE] text */
	LIT_STDERR,      /* text, somewhere in standard error */
	LIT_STATS,       /* PATH OP VALUE, in --stats=json */
	LIT_KIND_COUNT
} lit_kind;

/* A text to look for: plain, or with {{regex}} parts (pattern.c). */
typedef struct lit_pattern {
	const char *text;   /* as written (not owned) */
	regex_t *re;        /* NULL for plain text */
} lit_pattern;

typedef struct lit_directive {
	lit_kind kind;
	int line;        /* in the test file, from 1 */
	int run;         /* index in lit_case.runs */
	char *text;      /* what follows "LABEL:", trimmed */
	long n;          /* COUNT, EXIT and DIAG CODE N: the number */
	char *pattern;   /* COUNT: the text; DIAG: the code; STATS: the path */
	char op[3];      /* STATS: = != < <= > >= */
	lit_pattern pat; /* CHECK*, STDERR: of text; COUNT: of pattern */
} lit_directive;

typedef struct lit_run {
	char *label;
	int line;
	char *args;      /* as written */
	char **argv;     /* passrun's, NULL-terminated */
	bool has_exit, wants_stats;
	/* Filled by lit_run_exec. */
	int status;      /* exit status, or 128 + signal */
	char *out;       /* the printed program (memory plan removed if asked) */
	char *err;       /* standard error */
	char *stats;     /* the --stats=json object, or NULL */
	char *command;   /* the command line, for messages */
	bool shown_out, shown_err;   /* already printed with a failure */
} lit_run;

typedef struct lit_case {
	const char *path;
	bool ignore_mem; /* "# IGNORE: mem": compare without {mem=...} */
	lit_run *runs;
	int n_runs;
	lit_directive *dirs;
	int n_dirs;
	int failures;
} lit_case;

typedef struct lit_options {
	const char *passrun;   /* the passrun executable */
	const char **plugins;  /* --plugin for every run */
	int n_plugins;
	bool verbose;
} lit_options;

/* parse.c */
const char *lit_kind_name(lit_kind k);
/* Reads path into c; false (after printing located errors) on a bad file. */
bool lit_case_parse(lit_case *c, const char *path, const lit_options *o);
void lit_case_free(lit_case *c);

/* exec.c */
/* Splits ARGS as a shell would split words (quotes, backslashes; no
 * expansion); NULL with *why set on an unterminated quote. */
char **lit_split_args(const char *args, const char **why);
void lit_run_exec(lit_case *c, lit_run *r, const lit_options *o);

/* match.c */
void lit_check_output(lit_case *c, int run);

/* expect.c */
void lit_check_expectations(lit_case *c, int run);

/* json.c */
/* The value at a dotted path ("methods.forward.h2d_copies", "passes.0.name";
 * "#" the number of members), as [*start, *end) of json. On failure NULL,
 * and *why says which step failed and the nearest key. */
const char *lit_json_find(const char *json, const char *path, const char **end, char *why,
			  size_t why_size);

/* pattern.c */
/* false, with why, on a bad {{regex}}. */
bool lit_pattern_compile(lit_pattern *p, const char *text, char *why, size_t why_size);
void lit_pattern_free(lit_pattern *p);
/* The first match starting at or after from (text is where the output
 * starts: a line begins there), its end in *end; NULL when none. */
const char *lit_pattern_find(const lit_pattern *p, const char *text, const char *from,
			     const char **end);
/* Non-overlapping matches in text. */
int lit_pattern_count(const lit_pattern *p, const char *text);

/* text.c */
void lit_fail(lit_case *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void lit_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *lit_strndup(const char *s, size_t n);
char *lit_read_file(const char *path);
int lit_count(const char *hay, const char *needle);
/* Line number (from 1) of p in text. */
int lit_line_of(const char *text, const char *p);
/* The line of text that holds p, as a new string. */
char *lit_line_at(const char *text, const char *p);
/* The line in [from, to) closest to needle (fewest edits to hold it), or
 * NULL when no line shares at least half of it. */
const char *lit_nearest_line(const char *from, const char *to, const char *needle);
size_t lit_edit_distance(const char *a, const char *b);
/* Removes "{mem=...}" and ", mem=..." (up to the closing brace). */
char *lit_strip_mem(const char *s);
/* Prints the run's command and what it wrote, for a failure's context;
 * each output once per run. */
void lit_show_run(lit_run *r, bool out, bool err);

#endif
