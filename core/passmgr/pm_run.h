/* pm_run.h: what the running pass manager (passmgr.c) shares with its
 * instruments (instrument.c), the crash note (crash.c) and the unified diff
 * (udiff.c). Private to core/passmgr. */
#ifndef PASSRUN_PM_RUN_H
#define PASSRUN_PM_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "pm_internal.h"

/* One run of a pipeline over a program. */
typedef struct pm_run {
	const pr_registry *registry;
	const pr_pipeline *pipeline;
	pr_program *program;
	pr_diags *diags;
	const pr_instrument_opts *opts;
	pr_pass_report *rep;        /* may be NULL */
	const char *last_changed;   /* the last pass that reported a change, or NULL */
} pm_run;

/* One pass as the instruments see it. */
typedef struct pm_pass_event {
	const pr_pass_info *info;
	int index;                  /* its place in the pipeline */
	bool changed;               /* after: what the pass reported */
	int diags_before;           /* diagnostics before the pass ran */
} pm_pass_event;

/* The hooks of one instrument (MLIR's PassInstrumentation). after may stop
 * the run with an error; failed runs instead of after when the pass failed. */
typedef struct pm_instrument {
	void (*before)(void *self, pm_run *run, const pm_pass_event *ev);
	pr_err *(*after)(void *self, pm_run *run, const pm_pass_event *ev);
	void (*failed)(void *self, pm_run *run, const pm_pass_event *ev);
	void *self;                 /* malloc'd state, freed with the list */
} pm_instrument;

#define PM_MAX_INSTRUMENTS 8

typedef struct pm_instruments {
	int n;
	pm_instrument items[PM_MAX_INSTRUMENTS];
} pm_instruments;

/* The instruments run->opts asks for, in hook order: timing, diagnostics,
 * the crash note, printing, --verify-each. */
void pm_instruments_init(pm_instruments *l, const pm_run *run);
void pm_instruments_free(pm_instruments *l);
void pm_instruments_before(pm_instruments *l, pm_run *run, const pm_pass_event *ev);
pr_err *pm_instruments_after(pm_instruments *l, pm_run *run, const pm_pass_event *ev);
void pm_instruments_failed(pm_instruments *l, pm_run *run, const pm_pass_event *ev);

/* A cheap fingerprint of p (see instrument.c for what it covers). */
uint64_t pm_program_fingerprint(const pr_program *p);

/* The crash note (crash.c): what the signal handler writes. Prepared before
 * each pass and each method, cleared after. */
void pm_crash_enter(const pr_registry *r, const pr_pass_info *pass, const char *method);
void pm_crash_leave(void);
/* Prepares the crash reproducer of this run (p as it is now, and the
 * pipeline), or forgets it when opts ask for none. */
void pm_crash_prepare_reproducer(const pm_run *run);
void pm_crash_forget_reproducer(void);

/* Unified diff of two texts, 3 lines of context, headed by the two labels.
 * malloc'd; "" when they are equal. */
char *pm_unified_diff(const char *a, const char *b, const char *label_a, const char *label_b);

/* The canonical YAML of pl with `plugins:` replaced by the given files
 * (pipeline.c). */
char *pm_pipeline_yaml_with_plugins(const pr_pipeline *pl, const char *const *plugins, int n);
/* Index in r of pass info, or -1 (plugin.c). */
int pm_registry_pass_index(const pr_registry *r, const pr_pass_info *info);

#endif
