/* pass.h: passes, analyses, options and the plugin ABI.
 *
 * This is the plugin-facing contract (with the headers it includes). Like
 * sqlite3ext.h it only grows: every struct a plugin fills starts with its own
 * size, new fields go at the end, and the core reads a field only when the
 * plugin's struct_size covers it.
 *
 * A plugin is a .so exporting one symbol, PR_PLUGIN_ENTRY_SYMBOL, a function
 * returning a pr_plugin_info (modelled on LLVM's llvmGetPassPluginInfo). Its
 * register callback declares passes, analyses and device types with
 * pr_register_pass, pr_register_analysis and pr_register_device_type. A pass never calls into another plugin: it asks the
 * core for a named analysis (pr_pass_analysis), and the core computes it on
 * demand, caches it per graph, and drops it when a pass that changed the
 * program does not list it as preserved.
 *
 * A pass runs either over the whole program (run) or once per method
 * (run_graph). The per-method entry is the one to use when a pass really
 * works one method at a time: options are then read for the running method
 * without naming it, and a method the pass left unchanged keeps its cached
 * analyses. Every analysis a pass lists in `requires` is computed before it
 * runs (on the method's graph, or on every method's graph for a whole-program
 * pass), so pr_pass_analysis never returns NULL for one of them there.
 * One it lists in `uses` is computed when it first asks for it, and a
 * pipeline is checked, when it loads, to have a plugin for each of both.
 *
 * Contract errors are reported, not aborted on: reading an option the pass
 * does not declare (or as another type), or asking for an analysis nobody
 * registered, returns a neutral value (false, 0, "", NULL) and fails the pass
 * when it returns, with a message naming the pass and the name it asked for. */
#ifndef PASSRUN_PASS_H
#define PASSRUN_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passrun/diag.h"
#include "passrun/error.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a struct that plugins read changes its layout, so that a
 * plugin built against other headers is refused rather than misreading the
 * program. 2: specs point at interned shapes and strides, an input's facts
 * are a record of their own (pr_node.input), names are interned. 3: a
 * lifetimes' positions and class indexes are 32-bit (pr_plan_class,
 * pr_plan_value in plan.h). 4: a pr_plan_class names its device by an index
 * into pr_lifetimes.devices (plan.h), and pr_arg's use_index follows its
 * kind (32 bytes, not 40). 5: pr_plan_class and pr_plan_value keep no spec
 * pointer (plan.h: pr_plan_class_spec, pr_plan_value_spec), 32 and 16 bytes.
 * 6: a node's input name, list values, tuple elements and write-backs may
 * be graph storage: set them with pr_node_set_input_name,
 * pr_node_set_data_values, pr_node_set_tuple and pr_node_set_writebacks;
 * pr_node.mem is 16 bits. A pr_diags that does not keep messages stores
 * no note or warning past print_limit of its code, only counts it
 * (pr_diags_count, pr_diags_errors; n and items leave it out); a
 * pr_diag's message is never NULL. 7: a spec names its devices by id
 * (pr_spec.device_id and mem_arena_id, device.h's pr_device_intern): 40
 * bytes, not 72; a getitem's index is 32 bits and the use list's room a
 * log2 (pr_node_uses_room) in what pads after mem: a node is 176 bytes,
 * not 216. 8: a node's input record, schema, delegate and write-backs are
 * one union, pr_node.of_kind (read them with pr_node_input,
 * pr_node_schema, pr_node_delegate and pr_node_writebacks): 152 bytes;
 * a use entry is its argument slot alone (pr_use_user reads the reader),
 * 8 bytes; a list's item count is pr_arg.n_items, beside kind where a
 * value's use_index is, and its items u.items: an argument is 24 bytes;
 * a pr_plan_class names its base by the index of its value
 * (pr_plan_class_base, pr_plan_class_spec take the lifetimes): 24 bytes.
 * 9: a spec keeps no strides pointer: its shape points at the shape then
 * the strides (read them with pr_spec_strides): 32 bytes, not 40; a
 * type's tensor and elems share their bytes (40, not 56); pr_node.kind is
 * a byte, beside uses_room, mem and line; a getitem's index is
 * of_kind.index (pr_node_getitem_index): a node is 128 bytes, two cache
 * lines, not 152. */
#define PR_PLUGIN_ABI_VERSION 9u
/* The entry point's name, as a C name and as the string dlsym looks up. */
#define PR_PLUGIN_ENTRY passrun_plugin_info
#define PR_PLUGIN_ENTRY_SYMBOL PR_PLUGIN_STR_(PR_PLUGIN_ENTRY)
#define PR_PLUGIN_STR_(x) PR_PLUGIN_STR2_(x)
#define PR_PLUGIN_STR2_(x) #x

/* ---- options ----------------------------------------------------------- */

typedef enum pr_option_type {
	PR_OPT_BOOL, PR_OPT_INT, PR_OPT_FLOAT, PR_OPT_STRING,
} pr_option_type;

/* "bool", "int", "float" or "string": the name messages and docs give a type. */
const char *pr_option_type_name(pr_option_type t);

typedef enum pr_option_scope {
	PR_SCOPE_PASS,      /* set under the pass: `- memory-plan: {alloc_graph_input: true}` */
	PR_SCOPE_PIPELINE,  /* read from the pipeline's `options:`; every pass may declare it */
} pr_option_scope;

typedef struct pr_option_decl {
	const char *name;
	pr_option_type type;
	const char *default_value;  /* as YAML text: "false", "64", "" */
	const char *help;
	pr_option_scope scope;
	bool per_method;            /* may be a map keyed by method name */
} pr_option_decl;

/* ---- passes and analyses ---------------------------------------------- */

typedef struct pr_pass_ctx pr_pass_ctx;

/* Runs over the whole program. Sets *changed when it changed anything.
 * Findings the user should see go to pr_pass_diag; an error status means the
 * pass could not do its job (the program is then not written). */
typedef pr_err *(*pr_pass_run_fn)(pr_pass_ctx *ctx, pr_program *p, bool *changed);
/* Runs over one method g of p (the manager calls it for each method, in
 * order). Sets *changed when it changed anything. It may edit the delegates
 * g calls; it must not edit another method. */
typedef pr_err *(*pr_pass_graph_fn)(pr_pass_ctx *ctx, pr_program *p, pr_graph *g,
				    bool *changed);

typedef struct pr_pass_info {
	size_t struct_size;          /* sizeof(pr_pass_info) as the plugin saw it */
	const char *name;            /* "copy-reuse" */
	const char *summary;         /* one line, for --list-passes */
	const pr_option_decl *options;
	size_t n_options;
	const char *const *requires; /* analyses it asks for; NULL-terminated or NULL */
	const char *const *preserves;/* analyses still valid after it changes things */
	pr_pass_run_fn run;          /* whole program; NULL when run_graph is set */
	void *user;                  /* handed back by pr_pass_user */
	/* Fields below are read only when struct_size covers them. */
	pr_pass_graph_fn run_graph;  /* per method; preferred over run when both are set */
	/* Analyses it may ask for, only where it needs one (NULL-terminated or
	 * NULL): nothing is computed before it runs, but a pipeline holding the
	 * pass is refused when one of them has no loaded plugin, as for
	 * requires. */
	const char *const *uses;
} pr_pass_info;

/* An analysis computes a result for one graph (a method or a delegate body). */
typedef struct pr_analysis_info {
	size_t struct_size;
	const char *name;            /* "host-writes" */
	const char *summary;
	void *(*compute)(pr_pass_ctx *ctx, pr_graph *g);
	void (*destroy)(void *result);
	void *user;
} pr_analysis_info;

typedef struct pr_registry pr_registry;

pr_err *pr_register_pass(pr_registry *r, const pr_pass_info *pass);
pr_err *pr_register_analysis(pr_registry *r, const pr_analysis_info *analysis);
/* Adds a device type to the process-wide registry (device.h), so that the
 * placement passes, the verifier, the memory planner and the sim runtime
 * accept devices of that type. */
pr_err *pr_register_device_type(pr_registry *r, const pr_device_type *type);

/* ---- the plugin entry point --------------------------------------------- */

typedef struct pr_plugin_info {
	uint32_t abi_version;        /* PR_PLUGIN_ABI_VERSION */
	uint32_t struct_size;        /* sizeof(pr_plugin_info) */
	const char *name;
	const char *version;
	pr_err *(*register_fn)(pr_registry *r);
} pr_plugin_info;

typedef const pr_plugin_info *(*pr_plugin_entry_fn)(void);

#define PR_PLUGIN_EXPORT __attribute__((visibility("default")))

/* Defines a plugin's entry point, at file scope, once per plugin:
 *
 *     PR_PLUGIN("my-pass", "1.0", register_passes)
 *
 * expands to the exported PR_PLUGIN_ENTRY function returning a pr_plugin_info
 * of this ABI version and size, with that name, version and register
 * callback (a pr_err *(*)(pr_registry *)). */
#define PR_PLUGIN(NAME, VERSION, REGISTER_FN)                                         \
	PR_PLUGIN_EXPORT const pr_plugin_info *PR_PLUGIN_ENTRY(void);                 \
	PR_PLUGIN_EXPORT const pr_plugin_info *PR_PLUGIN_ENTRY(void)                  \
	{                                                                             \
		static const pr_plugin_info info = {                                  \
			.abi_version = PR_PLUGIN_ABI_VERSION,                         \
			.struct_size = sizeof(pr_plugin_info),                        \
			.name = (NAME),                                               \
			.version = (VERSION),                                         \
			.register_fn = (REGISTER_FN),                                 \
		};                                                                    \
		return &info;                                                         \
	}

/* ---- what a running pass can ask for ------------------------------------ */

const char *pr_pass_name(const pr_pass_ctx *ctx);
void *pr_pass_user(const pr_pass_ctx *ctx);
/* The method a run_graph entry is running on; NULL in a whole-program run. */
const char *pr_pass_method(const pr_pass_ctx *ctx);

/* The option's value for a method. method NULL means the running method
 * under run_graph, program-wide under run. Pass-scope values first, then the
 * pipeline's options, then the default. Reading an option the running pass
 * does not declare, or with the getter of another type, is a contract error
 * (see above): the neutral value is returned and the pass fails. */
bool pr_pass_opt_bool(pr_pass_ctx *ctx, const char *name, const char *method);
int64_t pr_pass_opt_int(pr_pass_ctx *ctx, const char *name, const char *method);
double pr_pass_opt_float(pr_pass_ctx *ctx, const char *name, const char *method);
const char *pr_pass_opt_string(pr_pass_ctx *ctx, const char *name, const char *method);

/* A named analysis of g, computed now or taken from the cache. An analysis
 * nobody registered, or one that asks for itself, is a contract error: NULL,
 * and the pass fails. */
void *pr_pass_analysis(pr_pass_ctx *ctx, const char *name, pr_graph *g);
/* Drops cached analyses of g now (a pass that edits g and then wants a fresh
 * analysis of the same graph in the same run). */
void pr_pass_invalidate(pr_pass_ctx *ctx, pr_graph *g);

/* Reports a diagnostic tagged with the running pass. method/node may be NULL;
 * bytes -1 when no tensor is involved. The message is formatted only when
 * someone will read it (pr_diags_keep_messages): count and bytes always. */
void pr_pass_diag(pr_pass_ctx *ctx, pr_severity sev, const char *code,
		  const char *method, const char *node, int64_t bytes,
		  const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* Whether pr_pass_diag would format a message of this severity and code now:
 * a pass that builds part of a message itself asks first. */
bool pr_pass_diag_wanted(pr_pass_ctx *ctx, pr_severity sev, const char *code);
/* Adds PR_DIAG_* flags (diag.h) to the diagnostic this pass reported last
 * (with none reported yet, a contract error that fails the pass; nothing
 * when that one was only counted, pr_diags_keep_messages). */
void pr_pass_diag_flag(pr_pass_ctx *ctx, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
