/* plugin_common.h: what two or more of the shipped plugins share.
 *
 * A static library (passrun_plugin_common) linked into each shipped plugin:
 * plugins never call into each other's .so, so the few facts they share live
 * here, compiled into each plugin. Nothing here keeps state. What only one
 * plugin uses lives in that plugin; what any plugin needs about the program
 * itself (aliases, mutable buffers, fresh names) is the core's IR API.
 *
 * Devices: a delegate's device is the core's pr_delegate_device
 * (device.h): TYPE[:INDEX] in any case, a bare type is index 0, and TYPE a
 * registered device type. Any other value is E-UNKNOWN-DEVICE, reported by
 * propagate-device.
 *
 * Placeholders: a *method input* is a `user` input or a mutable buffer (a
 * buffer the method writes back): the caller owns its memory, so the skip
 * flags apply to it. A *constant* is any other parameter, buffer or constant:
 * its data is stored in the program on the host (F5). */
#ifndef PLUGIN_COMMON_H
#define PLUGIN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "passrun/passrun.h"

/* ---- pipeline options that several passes declare (all per method) ------ */

#define PL_OPT_SKIP_H2D "skip_h2d_for_method_inputs"
#define PL_OPT_SKIP_D2H "skip_d2h_for_method_outputs"
#define PL_OPT_SKIP_CONST "skip_h2d_for_constants"
#define PL_OPT_SHARE_BUFFERS "share_mutable_buffers"

#define PL_DECL_SKIP_H2D                                                               \
	{ PL_OPT_SKIP_H2D, PR_OPT_BOOL, "false",                                       \
	  "the caller passes method inputs that device delegates read in device memory (B1, F6)", \
	  PR_SCOPE_PIPELINE, true }
#define PL_DECL_SKIP_D2H                                                               \
	{ PL_OPT_SKIP_D2H, PR_OPT_BOOL, "false",                                       \
	  "returned delegate outputs stay in device memory (B3, F4)", PR_SCOPE_PIPELINE, true }
#define PL_DECL_SKIP_CONST                                                             \
	{ PL_OPT_SKIP_CONST, PR_OPT_BOOL, "false",                                     \
	  "keep constants read only by one device's delegates in that device's memory, copied once at load (F10)", \
	  PR_SCOPE_PIPELINE, true }
#define PL_DECL_SHARE_BUFFERS                                                          \
	{ PL_OPT_SHARE_BUFFERS, PR_OPT_BOOL, "false",                                  \
	  "methods of one program share a mutable buffer of the same name", PR_SCOPE_PIPELINE, true }

/* ---- devices -------------------------------------------------------------- */

typedef enum pl_where {
	PL_HOST_CODE,    /* no target_device, or target_device=cpu (F7) */
	PL_ON_DEVICE,    /* a device delegate */
	PL_BAD_DEVICE,   /* a target_device that is not a device (B5) */
} pl_where;

/* Where delegate d runs. cpu_is_device reproduces the baseline, which treated
 * target_device=cpu like any device (F7 removes the copies it made). */
pl_where pl_delegate_where(const pr_delegate *d, bool cpu_is_device, pr_device *out);
/* The device of a delegate call node, when it is a device delegate. Inline
 * (as are the copy tests below): placement asks it of every reader, and most
 * readers are not delegates. */
static inline bool pl_call_device(const pr_node *n, bool cpu_is_device, pr_device *out)
{
	return n && n->kind == PR_NODE_DELEGATE &&
	       pl_delegate_where(n->of_kind.delegate, cpu_is_device, out) == PL_ON_DEVICE;
}

/* What a diagnostic calls input n: its quoted name, else its value's. */
static inline const char *pl_input_name(const pr_node *n)
{
	const char *quoted = pr_node_input(n)->name;
	return quoted ? quoted : n->name;
}

/* ---- node lists ------------------------------------------------------------ */

typedef struct pl_nodes {
	int n, cap;
	pr_node **items;
} pl_nodes;

void pl_nodes_push(pl_nodes *v, pr_node *n);
void pl_nodes_free(pl_nodes *v);

/* ---- copies ---------------------------------------------------------------- */

/* A copy is an op whose schema has the h2d or d2h trait: one load of the
 * schema, no name compared. */
static inline bool pl_is_h2d(const pr_node *n)
{
	return n && n->kind == PR_NODE_OP && n->of_kind.schema && n->of_kind.schema->h2d;
}

static inline bool pl_is_d2h(const pr_node *n)
{
	return n && n->kind == PR_NODE_OP && n->of_kind.schema && n->of_kind.schema->d2h;
}

/* an h2d or a d2h */
static inline bool pl_is_copy(const pr_node *n)
{
	const pr_schema *s = n ? pr_node_schema(n) : NULL;
	return s && (s->h2d || s->d2h);
}

/* The value a copy (or any one-argument node) reads. */
static inline pr_node *pl_copy_src(const pr_node *n)
{
	return n->n_args > 0 && n->args[0].kind == PR_ARG_VALUE ? n->args[0].u.value : NULL;
}

/* ---- readers and placeholders ---------------------------------------------- */

/* The tensor whose storage n uses (itself when it is not a view). */
pr_node *pl_alias_root(pr_node *n);
/* v's first reader in graph order (use lists have no order), or NULL. */
const pr_use *pl_first_use(const pr_node *v);
/* Slot index of a use in the return node, or -1. */
int pl_return_slot(const pr_use *u);
/* Does u read its value as a method output (a return slot with no
 * write-back)? */
bool pl_use_is_output(const pr_use *u);

/* A placeholder whose memory the caller provides. */
bool pl_is_method_input(const pr_node *n, const pr_mutable_buffers *b);
/* A placeholder whose data the program stores on the host. */
bool pl_is_constant(const pr_node *n, const pr_mutable_buffers *b);
/* "method input", "parameter", "mutable buffer", ...; b may be NULL: a buffer
 * is then just "buffer". */
const char *pl_input_kind_word(const pr_node *n, const pr_mutable_buffers *b);

/* A short description of a reader, for messages: "delegate @add0 (%d)". */
void pl_describe_use(const pr_use *u, char *buf, size_t len);
void pl_describe_node(const pr_node *n, char *buf, size_t len);
/* "[12,1,4]": s's strides, for messages (cut short to fit len). */
void pl_strides_str(const pr_spec *s, char *buf, size_t len);
/* The bytes of n's tensor, or -1 when n has none. */
int64_t pl_bytes(pr_node *n);

#endif
