/* placement.h: the placement rules that every placement plugin agrees on.
 *
 * Header-only on purpose: plugins never call into each other's .so, so the
 * few facts they share (which delegates run on a device, what a copy node
 * looks like, which placeholders count as method inputs, how an alias is
 * read off a schema) live here as static inline functions, compiled into
 * each plugin that includes it. Nothing here keeps state.
 *
 * Devices (B5): a delegate's compile spec target_device is parsed
 * case-insensitively as TYPE[:INDEX]. The valid types are PL_DEVICE_TYPES:
 * "cpu" (the host) and "cuda" (a GPU, real or simulated). A bare "cuda" is
 * kept as the device "cuda" (no index), as the core's parser and verifier see
 * it. Any other type is E-UNKNOWN-DEVICE, reported by propagate-device.
 *
 * Placeholders: a *method input* is a `user` input or a mutable buffer (a
 * buffer the method writes back): the caller owns its memory, so the skip
 * flags apply to it. A *constant* is any other parameter, buffer or constant:
 * its data is stored in the program on the host (F5). */
#ifndef PLACEMENT_H
#define PLACEMENT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "passrun/passrun.h"

/* ---- options (docs/pipeline-format.md; all pipeline-scope, per method) --- */

#define PL_OPT_SKIP_H2D "skip_h2d_for_method_inputs"
#define PL_OPT_SKIP_D2H "skip_d2h_for_method_outputs"
#define PL_OPT_SKIP_CONST "skip_h2d_for_constants"
#define PL_OPT_ERROR_COPIES "error_on_per_call_copies"
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
	  "constants read only by one device's delegates live in its memory (F10)",   \
	  PR_SCOPE_PIPELINE, true }
#define PL_DECL_ERROR_COPIES                                                           \
	{ PL_OPT_ERROR_COPIES, PR_OPT_BOOL, "false",                                   \
	  "copies that run on every call although a skip flag asked for none are errors (F9)", \
	  PR_SCOPE_PIPELINE, true }
#define PL_DECL_SHARE_BUFFERS                                                          \
	{ PL_OPT_SHARE_BUFFERS, PR_OPT_BOOL, "false",                                  \
	  "methods share a mutable buffer of the same name", PR_SCOPE_PIPELINE, true }

/* ---- devices -------------------------------------------------------------- */

#define PL_DEVICE_TYPES "cpu, cuda"

typedef enum pl_where {
	PL_HOST_CODE,    /* no target_device, or target_device=cpu (F7) */
	PL_ON_DEVICE,    /* a device delegate */
	PL_BAD_DEVICE,   /* a target_device that is not a device (B5) */
} pl_where;

static inline bool pl_device_type_valid(const pr_device *d)
{
	return !strcmp(d->type, "cpu") || !strcmp(d->type, "cuda");
}

/* Where delegate d runs. cpu_is_device reproduces the baseline, which treated
 * target_device=cpu like any device (F7 removes the copies it made). */
static inline pl_where pl_delegate_where(const pr_delegate *d, bool cpu_is_device, pr_device *out)
{
	const char *td = d ? pr_delegate_spec(d, "target_device") : NULL;
	if (!td)
		return PL_HOST_CODE;
	pr_device dev;
	if (!pr_device_parse(td, strlen(td), &dev) || !pl_device_type_valid(&dev))
		return PL_BAD_DEVICE;
	if (!strcmp(dev.type, "cpu"))
		dev = pr_device_host();
	if (out)
		*out = dev;
	if (pr_device_is_host(dev))
		return cpu_is_device ? PL_ON_DEVICE : PL_HOST_CODE;
	return PL_ON_DEVICE;
}

/* The device of a delegate call node, when it is a device delegate. */
static inline bool pl_call_device(const pr_node *n, bool cpu_is_device, pr_device *out)
{
	if (!n || n->kind != PR_NODE_DELEGATE)
		return false;
	return pl_delegate_where(n->delegate, cpu_is_device, out) == PL_ON_DEVICE;
}

/* "cuda:0" -> "cuda0", for node names. */
static inline void pl_device_tag(pr_device d, char *buf)
{
	char s[PR_DEVICE_STR_MAX];
	pr_device_str(d, s);
	size_t j = 0;
	for (size_t i = 0; s[i] && j + 1 < PR_DEVICE_STR_MAX; i++)
		if (s[i] != ':')
			buf[j++] = s[i];
	buf[j] = 0;
}

static inline const char *pl_dev(pr_device d, char *buf)
{
	return pr_device_str(d, buf);
}

/* ---- small arrays ------------------------------------------------------------ */

typedef struct pl_nodes {
	int n, cap;
	pr_node **items;
} pl_nodes;

static inline void pl_nodes_push(pl_nodes *v, pr_node *n)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 8;
		v->items = pr_xrealloc(v->items, (size_t)v->cap * sizeof *v->items);
	}
	v->items[v->n++] = n;
}

static inline void pl_nodes_free(pl_nodes *v)
{
	free(v->items);
	*v = (pl_nodes){0};
}

/* ---- copies ---------------------------------------------------------------- */

#define PL_H2D_SCHEMA "et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}"
#define PL_D2H_SCHEMA "et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}"

static inline bool pl_is_h2d(const pr_node *n)
{
	return n && n->kind == PR_NODE_OP && n->schema && n->schema->h2d;
}

static inline bool pl_is_d2h(const pr_node *n)
{
	return n && n->kind == PR_NODE_OP && n->schema && n->schema->d2h;
}

static inline bool pl_is_copy(const pr_node *n)
{
	return pl_is_h2d(n) || pl_is_d2h(n);
}

/* The value a copy (or any one-argument node) reads. */
static inline pr_node *pl_copy_src(const pr_node *n)
{
	return n->n_args > 0 && n->args[0].kind == PR_ARG_VALUE ? n->args[0].u.value : NULL;
}

/* A new, detached copy of src onto dev (h2d) or the host (d2h). Its output
 * moves the bytes as stored: same dtype, shape and strides as src, on the
 * destination device, with no memory (planned later) and never a constant
 * (it is an op's result). Its argument is set by pl_copy_attach, so that a
 * caller moving many readers can order the use-list edits. */
/* A name not used in g: base, else base_N. *next (may be NULL) remembers where
 * the last search for this base ended, so that naming k copies of one tensor
 * costs O(k), not O(k^2) as probing base_1, base_2, ... each time would. */
static inline char *pl_fresh_name(const pr_graph *g, const char *base, int *next)
{
	if ((!next || *next == 0) && !pr_graph_find(g, base)) {
		if (next)
			*next = 1;
		return pr_xstrdup(base);
	}
	for (int i = next && *next > 0 ? *next : 1;; i++) {
		char *name = pr_xasprintf("%s_%d", base, i);
		if (!pr_graph_find(g, name)) {
			if (next)
				*next = i + 1;
			return name;
		}
		free(name);
	}
}

static inline pr_node *pl_copy_new_named(pr_program *p, pr_node *src, bool h2d, pr_device dev,
					 int *next, pr_err **err);

static inline pr_node *pl_copy_new(pr_program *p, pr_node *src, bool h2d, pr_device dev,
				   pr_err **err)
{
	return pl_copy_new_named(p, src, h2d, dev, NULL, err);
}

static inline pr_node *pl_copy_new_named(pr_program *p, pr_node *src, bool h2d, pr_device dev,
					 int *next, pr_err **err)
{
	pr_schema *s = NULL;
	*err = pr_program_declare_op(p, h2d ? PL_H2D_SCHEMA : PL_D2H_SCHEMA, &s);
	if (*err)
		return NULL;
	char tag[PR_DEVICE_STR_MAX], *base;
	pl_device_tag(dev, tag);
	if (h2d)
		base = pr_xasprintf("%s_h2d_%s", src->name ? src->name : "t", tag);
	else
		base = pr_xasprintf("%s_d2h", src->name ? src->name : "t");
	char *name = pl_fresh_name(src->graph, base, next);
	free(base);
	pr_node *c = pr_node_new(PR_NODE_OP, name);
	free(name);
	c->schema = s;
	c->type.kind = PR_TYPE_TENSOR;
	c->type.tensor = *pr_node_spec(src);
	c->type.tensor.device = h2d ? dev : pr_device_host();
	c->type.tensor.has_mem = false;
	c->type.tensor.mem_arena = pr_device_host();
	c->type.tensor.mem_offset = 0;
	return c;
}

static inline void pl_copy_attach(pr_node *c, pr_node *src)
{
	pr_arg *a = pr_xcalloc(1, sizeof *a);
	a->kind = PR_ARG_VALUE;
	a->u.value = src;
	pr_node_set_args(c, a, 1);
}

/* Orders uses by their readers' graph order (the graph must be numbered). */
static inline int pl_use_by_order(const void *a, const void *b)
{
	const pr_node *x = ((const pr_use *)a)->user, *y = ((const pr_use *)b)->user;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* v's first reader in graph order (use lists have no order), or NULL. */
static inline const pr_use *pl_first_use(const pr_node *v)
{
	const pr_use *first = NULL;
	for (int i = 0; i < v->n_uses; i++)
		if (!first || pr_node_before(v->uses[i].user, first->user))
			first = &v->uses[i];
	return first;
}

/* Does delegate reader u need v copied to its device (set in *dev)? A v
 * already on that device needs none, unless copy_placed: the baseline copied
 * every argument, a device tensor too (a copy the runtime then refuses). */
static inline bool pl_needs_copy(const pr_use *u, pr_node *v, bool cpu_is_device,
				 bool copy_placed, pr_device *dev)
{
	/* A delegate on the CPU counts as a device only in the baseline (F7),
	 * which copied every argument "to the CPU". */
	return pl_call_device(u->user, cpu_is_device, dev) &&
	       (copy_placed || pr_device_is_host(*dev) ||
		!pr_device_equal(*dev, pr_node_spec(v)->device));
}

/* B1 for one value: every device delegate reading v off its device (or on
 * it, with copy_placed) reads its own new _h2d_copy of v, placed right
 * before it. */
static inline pr_err *pl_copy_to_readers(pr_program *p, pr_node *v, bool cpu_is_device,
					 bool copy_placed, bool *changed)
{
	/* Use lists have no order: sort the readers by graph order, so that the
	 * copies get the same names whatever the edits before. */
	pr_use *uses = pr_xmalloc((size_t)(v->n_uses ? v->n_uses : 1) * sizeof *uses);
	int n = 0;
	for (int i = 0; i < v->n_uses; i++) {
		pr_device dev;
		if (pl_needs_copy(&v->uses[i], v, cpu_is_device, copy_placed, &dev))
			uses[n++] = v->uses[i];
	}
	if (v->graph->order_stale)
		pr_graph_renumber(v->graph);
	qsort(uses, (size_t)n, sizeof *uses, pl_use_by_order);
	pl_nodes readers = {0};
	pr_arg **args = pr_xmalloc((size_t)(n ? n : 1) * sizeof *args);
	for (int k = 0; k < n; k++) {
		pl_nodes_push(&readers, uses[k].user);
		args[k] = uses[k].arg;
	}
	free(uses);
	pl_nodes copies = {0};
	pr_err *e = NULL;
	pr_device devs[8];
	int next[8] = {0}, n_devs = 0;
	/* Named first reader first (%x_h2d_cuda0, then %x_h2d_cuda0_1, ...). */
	for (int k = 0; k < readers.n && !e; k++) {
		pr_device dev;
		pl_call_device(readers.items[k], cpu_is_device, &dev);
		int d = 0;
		while (d < n_devs && !pr_device_equal(devs[d], dev))
			d++;
		if (d == n_devs && n_devs < 8)
			devs[n_devs++] = dev;
		pr_node *c = pl_copy_new_named(p, v, true, dev, d < 8 ? &next[d] : NULL, &e);
		if (!e)
			e = pr_graph_insert_before(readers.items[k], c);
		if (!e)
			pl_nodes_push(&copies, c);
	}
	for (int k = copies.n - 1; k >= 0; k--)
		pr_arg_set_value(args[k], copies.items[k]);
	for (int k = 0; k < copies.n; k++)
		pl_copy_attach(copies.items[k], v);
	*changed |= copies.n > 0;
	pl_nodes_free(&copies);
	pl_nodes_free(&readers);
	free(args);
	return e;
}

/* ---- placeholders ---------------------------------------------------------- */

/* The buffers a method writes back (`-> buffer "NAME"`), as a set of names
 * built once per method: asking the return node for each placeholder would
 * make a pass quadratic in a decoder with a cache per layer. */
typedef struct pl_buffer_name {
	const char *name;       /* the return node's own string */
	UT_hash_handle hh;
} pl_buffer_name;

typedef struct pl_buffers {
	pl_buffer_name *set;
} pl_buffers;

static inline void pl_buffers_init(pl_buffers *b, const pr_graph *g)
{
	b->set = NULL;
	const pr_node *ret = pr_graph_return(g);
	for (int i = 0; ret && ret->writebacks && i < ret->n_args; i++) {
		const pr_writeback *w = &ret->writebacks[i];
		pl_buffer_name *e = NULL;
		if (w->kind != PR_WRITEBACK_BUFFER || !w->target)
			continue;
		HASH_FIND_STR(b->set, w->target, e);
		if (e)
			continue;
		e = pr_xmalloc(sizeof *e);
		e->name = w->target;
		HASH_ADD_KEYPTR(hh, b->set, e->name, strlen(e->name), e);
	}
}

static inline void pl_buffers_free(pl_buffers *b)
{
	pl_buffer_name *e, *tmp;
	HASH_ITER(hh, b->set, e, tmp) {
		HASH_DEL(b->set, e);
		free(e);
	}
}

static inline bool pl_is_mutable_buffer(const pr_node *in, const pl_buffers *b)
{
	pl_buffer_name *e = NULL;
	if (in->kind != PR_NODE_INPUT || in->input_kind != PR_INPUT_BUFFER || !in->input_name)
		return false;
	HASH_FIND_STR(b->set, in->input_name, e);
	return e != NULL;
}

/* A placeholder whose memory the caller provides. */
static inline bool pl_is_method_input(const pr_node *n, const pl_buffers *b)
{
	return n->kind == PR_NODE_INPUT &&
	       (n->input_kind == PR_INPUT_USER || pl_is_mutable_buffer(n, b));
}

/* A placeholder whose data the program stores on the host. */
static inline bool pl_is_constant(const pr_node *n, const pl_buffers *b)
{
	return n->kind == PR_NODE_INPUT && n->input_kind != PR_INPUT_USER &&
	       n->input_kind != PR_INPUT_POSITIONAL && !pl_is_mutable_buffer(n, b);
}

/* b may be NULL: a buffer is then just "buffer". */
static inline const char *pl_input_kind_word(const pr_node *n, const pl_buffers *b)
{
	switch (n->input_kind) {
	case PR_INPUT_USER: return "method input";
	case PR_INPUT_PARAMETER: return "parameter";
	case PR_INPUT_BUFFER: return b && pl_is_mutable_buffer(n, b) ? "mutable buffer" : "buffer";
	case PR_INPUT_CONSTANT: return "constant";
	default: return "input";
	}
}

/* ---- aliases (schemas) ----------------------------------------------------- */

/* The value n is a view of: an op whose first result aliases an argument
 * (Tensor(a) or Tensor(a!); an in-place result is a view of what it writes).
 * A view_copy has no alias annotation, so it is not a view. */
static inline pr_node *pl_alias_of(const pr_node *n)
{
	if (!n || n->kind != PR_NODE_OP || !n->schema || n->schema->n_returns < 1)
		return NULL;
	int i = pr_schema_return_alias(n->schema, 0);
	if (i < 0 || i >= n->n_args || n->args[i].kind != PR_ARG_VALUE)
		return NULL;
	return n->args[i].u.value;
}

/* The tensor whose storage n uses (itself when it is not a view). */
static inline pr_node *pl_alias_root(pr_node *n)
{
	for (pr_node *a; (a = pl_alias_of(n)) != NULL;)
		n = a;
	return n;
}

/* Does reader u read v as the base of a view (u's result aliases v)? */
static inline bool pl_reads_as_view(const pr_node *u, const pr_node *v)
{
	return pl_alias_of(u) == v && u->type.kind == PR_TYPE_TENSOR;
}

/* ---- readers --------------------------------------------------------------- */

/* Slot index of a use in the return node, or -1. */
static inline int pl_return_slot(const pr_use *u)
{
	if (u->user->kind != PR_NODE_RETURN)
		return -1;
	return (int)(u->arg - u->user->args);
}

static inline bool pl_use_is_output(const pr_use *u)
{
	int i = pl_return_slot(u);
	return i >= 0 && (!u->user->writebacks || u->user->writebacks[i].kind == PR_WRITEBACK_NONE);
}

/* A short description of a reader, for messages: "delegate @add0 (%d)". */
static inline void pl_describe_use(const pr_use *u, char *buf, size_t len)
{
	const pr_node *n = u->user;
	int slot = pl_return_slot(u);
	if (slot >= 0) {
		const pr_writeback *w = n->writebacks ? &n->writebacks[slot] : NULL;
		if (w && w->kind == PR_WRITEBACK_BUFFER)
			snprintf(buf, len, "the write-back to buffer '%s'", w->target);
		else if (w && w->kind == PR_WRITEBACK_INPUT)
			snprintf(buf, len, "the write-back to input '%s'", w->target);
		else
			snprintf(buf, len, "the method output %d", slot);
	} else if (n->kind == PR_NODE_DELEGATE) {
		snprintf(buf, len, "delegate @%s (%%%s)", n->delegate ? n->delegate->name : "?",
			 n->name ? n->name : "");
	} else if (n->kind == PR_NODE_OP) {
		const char *op = n->schema ? n->schema->full_name : "?";
		const char *what = pl_is_copy(n) ? "copy" : "host op";
		if (n->name)
			snprintf(buf, len, "%s %s (%%%s)", what, op, n->name);
		else
			snprintf(buf, len, "%s %s", what, op);
	} else {
		snprintf(buf, len, "%%%s", n->name ? n->name : "?");
	}
}

static inline void pl_describe_node(const pr_node *n, char *buf, size_t len)
{
	pr_use u = {.user = (pr_node *)n, .arg = NULL};
	pl_describe_use(&u, buf, len);
}

static inline int64_t pl_bytes(pr_node *n)
{
	pr_spec *s = pr_node_spec(n);
	return s ? pr_spec_nbytes(s) : -1;
}

/* Erases the nodes of v that have no readers left, last first (a node
 * erased first may be the only reader keeping an earlier one). */
static inline void pl_erase_unused(pl_nodes *v)
{
	for (int i = v->n - 1; i >= 0; i--)
		if (v->items[i] && v->items[i]->n_uses == 0)
			pr_graph_erase(v->items[i]);
}

/* The plugin entry point for a plugin with passes and analyses. */
#define PL_PLUGIN(NAME, REGISTER)                                                      \
	PR_PLUGIN_EXPORT const pr_plugin_info *passrun_plugin_info(void)               \
	{                                                                              \
		static const pr_plugin_info info = {PR_PLUGIN_ABI_VERSION,             \
						    sizeof(pr_plugin_info), NAME, "1.0", \
						    REGISTER};                         \
		return &info;                                                          \
	}

#endif
