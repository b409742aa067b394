/* runtime.h: the runtime's contract with passrun (docs/passrun.1, docs/stats-json.md).
 *
 * prt_runtime_execute runs one method of the placed program N times on a
 * device ("sim": the strict simulated device; "cuda": a real GPU), and with
 * check set also runs the ORIGINAL program (before any pass) on the
 * reference interpreter, the same N times with the same inputs, comparing
 * every output of every call. Mutable buffers and written-back inputs keep
 * their values from one call to the next, in both.
 *
 * Inputs come from .npy files (NAME=FILE.npy) or are random from the seed.
 * Byte counts in the report are what the device layer moved: the copy nodes
 * of one call (the average over the calls), and the one-time loads of
 * device-resident constants (F10). What the runtime does as the caller
 * (putting inputs on a device, reading outputs back) is not counted.
 *
 * Errors: the function returns a pr_err (NULL when every call ran) and sets
 * report->exit_status to the status passrun should exit with:
 *   0 ran (and matched, with check); 2 a bad --input (file, name, shape), or
 *   an output that cannot be written to output_dir (each written atomically);
 *   4 --check found a mismatch; 5 the runtime failed (a kernel, a device, a
 *   placement violation such as "placement violation: node 'X' touched device
 *   memory", a copy refused by M3, an op with no kernel). */
#ifndef PASSRUN_RUNTIME_H
#define PASSRUN_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prt_run_input {
	const char *name;      /* the user input's quoted name (or node name) */
	const char *path;      /* a .npy file */
} prt_run_input;

typedef struct prt_run_options {
	const char *method;    /* NULL: "forward" when present, else the first method */
	int iterations;        /* calls; < 1 means 1 */
	const char *device;    /* "sim", "cuda", or NULL: cuda when a GPU is present, else sim */
	bool check;            /* compare with the reference interpreter */
	uint64_t seed;         /* for inputs not given by a file */
	int n_inputs;
	const prt_run_input *inputs;
	const char *output_dir;/* NULL, or write each output of the last call as
	                          DIR/<method>.<index>.npy */
	double atol, rtol;     /* mismatch when |a-r| > atol + rtol*|r|; 0,0 means 1e-5, 1e-4;
	                          NaN matches only NaN, an infinity only the same one */
} prt_run_options;

typedef struct prt_run_report {
	char device[8];        /* "sim" or "cuda" */
	char method[64];
	int iterations;
	bool checked;
	bool match;            /* true when not checked */
	double max_abs_err, max_rel_err; /* infinite when a NaN or an infinity met anything
	                                    else (null in JSON); matching ones add 0 */
	int64_t h2d_bytes_per_call, d2h_bytes_per_call, load_h2d_bytes;
	double ms_per_call;
	int exit_status;       /* see above */
	char mismatch[256];    /* the first mismatch: "output 0 (r) call 2 element 5: 1.5 vs 1.25" */
} prt_run_report;

/* original may be NULL when check is false. */
pr_err *prt_runtime_execute(const pr_program *original, const pr_program *placed,
			   const prt_run_options *opts, prt_run_report *out);

/* True when a CUDA device can be used (built with CUDA and a GPU present). */
bool prt_runtime_has_cuda(void);

/* Prints the report as the "run" object of --stats=json (no trailing newline). */
void prt_run_report_json(const prt_run_report *r, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
