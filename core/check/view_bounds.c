/* view_bounds.c: does a strided view stay inside its base's storage?
 *
 * The verifier knows no op by name, so it bounds only views whose schema
 * states their geometry: a return aliasing argument 0 without writing it
 * (`Tensor(a)`), and arguments named `size` and `stride` (int lists) and,
 * optionally, `storage_offset` (an int), as PyTorch spells as_strided. Such a
 * view addresses, of the storage under argument 0, the elements
 *     offset + sum over d of i_d * stride_d,   0 <= i_d < size_d,
 * so with constant arguments the last one is offset + sum (size_d - 1) *
 * stride_d, computed with checked arithmetic. The storage is that of the root
 * of the alias chain (a view of a view shares its base's storage), and holds
 * pr_spec_storage_bytes(root) / element size elements. Without an explicit
 * storage_offset the view starts where argument 0 starts, known statically
 * only when argument 0 is the root itself (offset 0). Every other view op
 * (view, expand, slice, select, ...) builds its geometry from its base's
 * shape, and its kernel checks it at run time, as it checks these. */
#include "view_bounds.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The index of the schema argument named name, or -1. */
static int schema_arg(const pr_schema *s, const char *name)
{
	for (int i = 0; i < s->n_args; i++)
		if (s->args[i].name && !strcmp(s->args[i].name, name))
			return i;
	return -1;
}

void pr_view_geometry_of(const pr_schema *s, pr_view_geometry *out)
{
	*out = (pr_view_geometry){false, -1, -1, -1};
	if (s->n_returns != 1 || pr_schema_return_alias(s, 0) != 0 || pr_schema_arg_writes(s, 0))
		return;
	out->size = schema_arg(s, "size");
	out->stride = schema_arg(s, "stride");
	out->offset = schema_arg(s, "storage_offset");
	out->strided = out->size > 0 && out->stride > 0;
}

/* The values of a constant int list argument; -1 when it is not one. */
static int const_ints(const pr_node *n, int i, int64_t *out, int max)
{
	if (i >= n->n_args || n->args[i].kind != PR_ARG_LIST || n->args[i].n_items > max)
		return -1;
	for (int k = 0; k < n->args[i].n_items; k++) {
		const pr_arg *a = &n->args[i].u.items[k];
		if (a->kind != PR_ARG_INT)
			return -1;
		out[k] = a->u.i;
	}
	return n->args[i].n_items;
}

/* What n's argument 0 is a view of, through every alias on the way. */
static const pr_node *storage_root(const pr_node *v)
{
	while (v->kind == PR_NODE_OP && v->of_kind.schema && v->n_args > 0) {
		const pr_node *base = pr_node_value_arg(v, pr_schema_return_alias(v->of_kind.schema, 0));
		if (!base)
			break;
		v = base;
	}
	return v;
}

/* The last element the geometry reaches, or false on a size or stride that
 * is negative or an extent that overflows (*why says which). */
static bool last_element(const int64_t *size, const int64_t *stride, int rank, int64_t offset,
			 int64_t *last, const char **why)
{
	*last = offset;
	for (int d = 0; d < rank; d++)
		if (size[d] == 0) {
			*last = -1;   /* no element at all */
			return true;
		}
	for (int d = 0; d < rank; d++) {
		int64_t t;
		if (size[d] < 0 || stride[d] < 0) {
			*why = size[d] < 0 ? "a negative size" : "a negative stride";
			return false;
		}
		if (__builtin_mul_overflow(size[d] - 1, stride[d], &t) ||
		    __builtin_add_overflow(*last, t, last)) {
			*why = "an extent (sizes times strides) that overflows int64";
			return false;
		}
	}
	return true;
}

bool pr_view_within_storage(const pr_node *n, const pr_view_geometry *g, char *msg, size_t cap)
{
	if (!g->strided || n->n_args < 1 || n->args[0].kind != PR_ARG_VALUE || !n->args[0].u.value)
		return true;
	int is = g->size, ist = g->stride, io = g->offset;
	int64_t size[PR_MAX_RANK], stride[PR_MAX_RANK], offset = 0;
	int rank = const_ints(n, is, size, PR_MAX_RANK);
	if (rank < 0 || const_ints(n, ist, stride, PR_MAX_RANK) != rank)
		return true;   /* not constant, or a mismatch the kernel reports */
	const pr_node *base = n->args[0].u.value, *root = storage_root(base);
	if (io >= 0 && io < n->n_args && n->args[io].kind == PR_ARG_INT)
		offset = n->args[io].u.i;
	else if (root != base)
		return true;   /* starts where a view starts: known at run time */
	if (root->type.kind != PR_TYPE_TENSOR)
		return true;
	const pr_spec *rs = &root->type.tensor;
	int64_t elems = pr_spec_storage_bytes(rs) / (int64_t)pr_dtype_size(rs->dtype), last;
	const char *why = NULL;
	if (offset < 0)
		why = "a negative storage offset";
	else if (last_element(size, stride, rank, offset, &last, &why) && last < elems)
		return true;
	if (why)
		snprintf(msg, cap, "is a strided view with %s; expected sizes, strides and offset >= 0 "
			 "inside its base's storage", why);
	else
		snprintf(msg, cap, "is a strided view that reaches element %lld of the storage of %%%s, "
			 "which holds %lld elements; expected a view inside its base's storage",
			 (long long)last, root->name ? root->name : "?", (long long)elems);
	return false;
}
