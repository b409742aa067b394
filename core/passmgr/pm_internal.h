/* pm_internal.h: what the pass manager's files (plugin.c, pipeline.c,
 * passmgr.c, stats.c) share and nobody else sees. */
#ifndef PASSRUN_PM_INTERNAL_H
#define PASSRUN_PM_INTERNAL_H

#include <stdbool.h>

#include "passrun/manager.h"

/* Where a pipeline item was written; line and col are 1-based. */
typedef struct pm_loc {
	char *file;
	int line, col;
} pm_loc;

/* One method's entry of a per-method map: {forward: true}. */
typedef struct pm_method_value {
	char *method;
	char *text;
	bool quoted;       /* written as a quoted YAML string */
	pm_loc loc;        /* the value */
	pm_loc key_loc;    /* the method's name */
} pm_method_value;

/* An option as a pipeline sets it: a scalar, or a map keyed by method. */
typedef struct pm_optval {
	char *name;
	pm_loc loc;        /* the name */
	pm_loc vloc;       /* the value */
	bool is_map;
	char *text;        /* scalar: the value (normalized once validated) */
	bool quoted;
	int n_map;
	pm_method_value *map;
} pm_optval;

typedef struct pm_optlist {
	int n, cap;
	pm_optval *items;
} pm_optlist;

typedef struct pm_pass_entry {
	char *name;
	pm_loc loc;
	pm_optlist opts;                 /* pass-level options */
	const pr_pass_info *info;        /* set by pr_pipeline_validate */
} pm_pass_entry;

typedef struct pm_plugin_ref {
	char *path;                      /* resolved against the pipeline's folder */
	pm_loc loc;
} pm_plugin_ref;

struct pr_pipeline {
	char *file;                      /* "--passes" for inline pipelines */
	char *name;
	char *description;
	pm_optlist opts;                 /* pipeline-level options */
	int n_passes, cap_passes;
	pm_pass_entry *passes;
	int n_plugins, cap_plugins;
	pm_plugin_ref *plugins;
	bool validated;
};

/* "a bool", "an int", "a float", "a string": for messages. */
const char *pm_type_article(pr_option_type t);
/* NULL when text is a good value of type t (unquoted YAML), else what is
 * wrong. When norm is not NULL it receives the canonical text (malloc'd). */
const char *pm_value_check(pr_option_type t, const char *text, char **norm);

/* The value of an option for a method: the scalar, or the map's entry for
 * method. NULL when the map has no entry for it (or method is NULL). */
const char *pm_optval_for(const pm_optval *v, const char *method);
const pm_optval *pm_optlist_find(const pm_optlist *l, const char *name);

/* Names of registered passes / pipeline options, for suggestions (the array
 * is malloc'd; the strings belong to the registry). */
int pm_registry_pass_names(const pr_registry *r, const char ***out);
int pm_registry_pipeline_option_names(const pr_registry *r, const char ***out);

#endif
