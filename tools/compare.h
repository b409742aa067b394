/* compare.h (private to tools/): what compare.c (the cells and how they run)
 * and compare_out.c (the table, JSON, JSON Lines and CSV) share.
 *
 * A cell is one program x one pipeline x one point of the --grid. Running a
 * cell (run_cell) is one passrun session whose outcome is reduced to a
 * cell_row; every output format is written from rows alone, so that a row
 * made in another process (-j) reads back the same (row_io). */
#ifndef PASSRUN_COMPARE_H
#define PASSRUN_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "passrun/verify.h"
#include "tool.h"

/* One method of one cell's placed program. */
typedef struct method_row {
	char *name;
	int64_t h2d, d2h, h2d_bytes, d2h_bytes, load_bytes;
	int64_t n_arenas;
	pr_arena_usage *arenas;
} method_row;

/* A diagnostic code and how many times a cell reported it. */
typedef struct code_count {
	char *code;
	int64_t n;
} code_count;

typedef struct cell_row {
	char *program, *pipeline;    /* as given (after glob expansion) */
	char *label;                 /* the table's first column: pipeline [grid values] */
	int64_t status;              /* the exit status that single run would give */
	char *status_word;           /* status_word(), or "crashed" */
	char *check;                 /* match, mismatch, fault, refused, ran, not run, - */
	bool placed;                 /* every pass ran: the counts below are valid */
	int64_t warnings, errors;
	int64_t n_codes;
	code_count *codes;           /* in the order first reported */
	char *first_error;           /* the code of the first error diagnostic, or "" */
	char *message;               /* the runtime's error or mismatch, else the first
					error's message, else the failed step's; "" */
	char *device;                /* where it ran; "" */
	char *provenance;            /* pr_provenance_json */
	char *canonical;             /* the pipeline's name after the overrides */
	char *stats;                 /* --stats=json's object; NULL without it */
	char *times;                 /* --time-passes: the table's text; NULL without */
	char *times_json;            /* --time-passes: [{"name", "ms", "pass"}]; NULL */
	double ms;                   /* total of the phases and passes */
	char *log;                   /* --diagnostics: what the session printed; NULL */
	int64_t n_methods;
	method_row *methods;
} cell_row;

/* The grid: axis k is assignment NAME=VALUE with one of its values. */
typedef struct grid_axis {
	char *name;                  /* "skip_h2d_for_constants", "dce.report" */
	int n_values;
	char **values;
} grid_axis;

typedef struct sweep {
	const opts *o;
	int n_programs;
	char **programs;
	int n_pipelines;
	char **pipelines;
	int n_axes;
	grid_axis *axes;
	int n_points;                /* the product of the axes' sizes (1 without --grid) */
	int n_cells;
	cell_row *rows;              /* program-major, then pipeline, then grid point */
} sweep;

/* Grid point p's value of axis k. */
const char *grid_value(const sweep *w, int point, int k);

/* Writes (writing) or reads a row to or from f; false when a read ran short. */
bool row_io(FILE *f, cell_row *r, bool writing);
void row_free(cell_row *r);

/* The outputs (compare_out.c): table and json as before on stdout; json,
 * csv and jsonl as text (malloc'd), for stdout or -o. */
void print_tables(const sweep *w);
char *format_json(const sweep *w);
char *format_jsonl(const sweep *w);
char *format_csv(const sweep *w);

#endif
