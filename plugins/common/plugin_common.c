/* plugin_common.c: the shared plugin library (plugin_common.h). */
#include "plugin_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- devices -------------------------------------------------------------- */

/* pr_delegate_device keeps its answer in the delegate, so this is cheap per
 * call and argument; only a host answer asks whether target_device was
 * written at all (cpu, a device in the baseline) or left out (host code). */
pl_where pl_delegate_where(const pr_delegate *d, bool cpu_is_device, pr_device *out)
{
	if (!d)
		return PL_HOST_CODE;
	pr_device dev;
	pr_err *err = pr_delegate_device(d, &dev);
	if (err) {
		pr_err_free(err);
		return PL_BAD_DEVICE;
	}
	if (!pr_device_is_host(dev)) {
		if (out)
			*out = dev;
		return PL_ON_DEVICE;
	}
	if (!pr_delegate_spec(d, "target_device"))
		return PL_HOST_CODE;
	if (out)
		*out = dev;
	return cpu_is_device ? PL_ON_DEVICE : PL_HOST_CODE;
}

/* ---- node lists ------------------------------------------------------------ */

void pl_nodes_push(pl_nodes *v, pr_node *n)
{
	PR_GROW(v->items, v->n, v->cap);
	v->items[v->n++] = n;
}

void pl_nodes_free(pl_nodes *v)
{
	free(v->items);
	*v = (pl_nodes){0};
}

/* ---- readers and placeholders ---------------------------------------------- */

pr_node *pl_alias_root(pr_node *n)
{
	for (pr_node *a; (a = pr_node_alias_value(n, 0)) != NULL;)
		n = a;
	return n;
}

const pr_use *pl_first_use(const pr_node *v)
{
	const pr_use *first = NULL;
	for (int i = 0; i < v->n_uses; i++)
		if (!first || pr_node_before(pr_use_user(&v->uses[i]), pr_use_user(first)))
			first = &v->uses[i];
	return first;
}

int pl_return_slot(const pr_use *u)
{
	const pr_node *n = pr_use_user(u);
	if (n->kind != PR_NODE_RETURN)
		return -1;
	return (int)(u->arg - n->args);
}

bool pl_use_is_output(const pr_use *u)
{
	int i = pl_return_slot(u);
	if (i < 0)
		return false;
	const pr_writeback *wbs = pr_use_user(u)->of_kind.writebacks;   /* a return's */
	return !wbs || wbs[i].kind == PR_WRITEBACK_NONE;
}

bool pl_is_method_input(const pr_node *n, const pr_mutable_buffers *b)
{
	return n->kind == PR_NODE_INPUT &&
	       (n->of_kind.input->kind == PR_INPUT_USER || pr_mutable_buffers_has(b, n));
}

/* A parameter, a constant, or a buffer that is not mutable: the set is
 * asked only about buffers, as placement asks this of every input. */
bool pl_is_constant(const pr_node *n, const pr_mutable_buffers *b)
{
	if (n->kind != PR_NODE_INPUT)
		return false;
	switch (n->of_kind.input->kind) {
	case PR_INPUT_PARAMETER:
	case PR_INPUT_CONSTANT: return true;
	case PR_INPUT_BUFFER: return !pr_mutable_buffers_has(b, n);
	default: return false;
	}
}

const char *pl_input_kind_word(const pr_node *n, const pr_mutable_buffers *b)
{
	switch (pr_node_input(n)->kind) {
	case PR_INPUT_USER: return "method input";
	case PR_INPUT_PARAMETER: return "parameter";
	case PR_INPUT_BUFFER: return b && pr_mutable_buffers_has(b, n) ? "mutable buffer" : "buffer";
	case PR_INPUT_CONSTANT: return "constant";
	default: return "input";
	}
}

static void describe_return_slot(const pr_node *ret, int slot, char *buf, size_t len)
{
	const pr_writeback *w = ret->of_kind.writebacks ? &ret->of_kind.writebacks[slot] : NULL;
	if (w && w->kind == PR_WRITEBACK_BUFFER)
		snprintf(buf, len, "the write-back to buffer '%s'", w->target);
	else if (w && w->kind == PR_WRITEBACK_INPUT)
		snprintf(buf, len, "the write-back to input '%s'", w->target);
	else
		snprintf(buf, len, "the method output %d", slot);
}

/* The text for reader n: a return's slot when slot >= 0 (pl_return_slot),
 * else the node. */
static void describe_reader(const pr_node *n, int slot, char *buf, size_t len)
{
	if (slot >= 0) {
		describe_return_slot(n, slot, buf, len);
	} else if (n->kind == PR_NODE_DELEGATE) {
		snprintf(buf, len, "delegate @%s (%%%s)",
			 n->of_kind.delegate ? n->of_kind.delegate->name : "?",
			 n->name ? n->name : "");
	} else if (n->kind == PR_NODE_OP) {
		const char *op = n->of_kind.schema ? n->of_kind.schema->full_name : "?";
		const char *what = pl_is_copy(n) ? "copy" : "host op";
		if (n->name)
			snprintf(buf, len, "%s %s (%%%s)", what, op, n->name);
		else
			snprintf(buf, len, "%s %s", what, op);
	} else {
		snprintf(buf, len, "%%%s", n->name ? n->name : "?");
	}
}

void pl_describe_use(const pr_use *u, char *buf, size_t len)
{
	describe_reader(pr_use_user(u), pl_return_slot(u), buf, len);
}

void pl_describe_node(const pr_node *n, char *buf, size_t len)
{
	describe_reader(n, -1, buf, len);
}

void pl_strides_str(const pr_spec *s, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < s->rank && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? "," : "", pr_spec_strides(s)[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

int64_t pl_bytes(pr_node *n)
{
	pr_spec *s = pr_node_spec(n);
	return s ? pr_spec_nbytes(s) : -1;
}
