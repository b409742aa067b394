/* param_layout.c: contiguous storage for odd layouts (docs/placement-rules.md F1).
 *
 * A parameter, buffer or constant whose strides are neither contiguous nor
 * channels-last (a transposed weight) is stored contiguous by the program,
 * but a delegate that reads it was compiled for its original strides, so it
 * would read the stored bytes in the wrong order (and constant-copies, F5,
 * refuses to copy it). This pass runs first and, for each such tensor:
 *
 *   - makes its spec contiguous. Its logical values do not change: data given
 *     by logical index (zeros, ones, fill, arange, random, a value list) is
 *     kept as it is; storage-order bytes (a blob, mapped data) are gathered
 *     into a new blob in logical row-major order;
 *   - makes every reader agree: a delegate's compiled input layout (the
 *     declared strides of its body's input) becomes the new layout, and a view
 *     computed from the tensor (its result's strides follow the old strides
 *     dimension by dimension, as a transpose or permute does) gets the strides
 *     those dimensions have now, and so on through views of views;
 *   - warns once (W-LAYOUT-CHANGED), naming the tensor, its size, its device
 *     and a reader.
 *
 * It edits the program in memory only, never the file it came from, and a
 * second run finds nothing left to change. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_common.h"

static bool odd_layout(const pr_spec *s)
{
	return !pr_spec_stored_as_is(s);
}

/* Storage-order bytes of old, gathered into logical row-major order. */
static void gather_logical(const pr_spec *old, const uint8_t *storage, uint8_t *out)
{
	size_t es = pr_dtype_size(old->dtype);
	int64_t numel = pr_spec_numel(old), idx[PR_MAX_RANK] = {0};
	for (int64_t l = 0; l < numel; l++) {
		int64_t off = 0;
		for (int d = 0; d < old->rank; d++)
			off += idx[d] * pr_spec_strides(old)[d];
		memcpy(out + (size_t)l * es, storage + (size_t)off * es, es);
		for (int d = old->rank - 1; d >= 0; d--) {
			if (++idx[d] < old->shape[d])
				break;
			idx[d] = 0;
		}
	}
}

/* n is a constant: an input, whose record holds the data rewritten here. */
static pr_err *rewrite_stored_bytes(pr_program *p, pr_node *n, const pr_spec *old)
{
	pr_data *d = &n->of_kind.input->data;
	if (d->kind != PR_DATA_BLOB) {
		/* Values by logical index: the same under any layout. Bytes a
		 * binary file holds for them are in the old storage order. */
		d->mapped = NULL;
		d->mapped_size = 0;
		return NULL;
	}
	int64_t sb = pr_spec_storage_bytes(old), nb = pr_spec_nbytes(old);
	uint8_t *storage = pr_xmalloc((size_t)(sb > 0 ? sb : 1));
	uint8_t *logical = pr_xmalloc((size_t)(nb > 0 ? nb : 1));
	pr_err *e = pr_data_materialize(d, old, storage);
	if (!e) {
		gather_logical(old, storage, logical);
		char *base = pr_xasprintf("%s_contiguous", n->name);
		char *name = pr_xstrdup(base);
		for (int i = 1; pr_program_find_blob(p, name); i++) {
			free(name);
			name = pr_xasprintf("%s_%d", base, i);
		}
		pr_blob *b = NULL;
		e = pr_program_add_blob(p, name, logical, nb, false, &b);
		if (!e) {
			d->kind = PR_DATA_BLOB;
			d->blob = b;
			d->mapped = NULL;
			d->mapped_size = 0;
		}
		free(name);
		free(base);
	}
	free(storage);
	free(logical);
	return e;
}

/* The strides view v should have now that its base went from old to now:
 * each of v's dimensions that matched a base dimension (size and stride)
 * takes that dimension's new stride. False when some dimension does not
 * match (a reshape), in which case v is left as it is. */
static bool remap_view(const pr_spec *old, const pr_spec *now, pr_spec *v)
{
	int64_t strides[PR_MAX_RANK];
	bool used[PR_MAX_RANK] = {false};
	for (int j = 0; j < v->rank; j++) {
		int k = 0;
		while (k < old->rank && (used[k] || old->shape[k] != v->shape[j] ||
					 pr_spec_strides(old)[k] != pr_spec_strides(v)[j]))
			k++;
		if (k == old->rank) {
			if (v->shape[j] != 1)
				return false;
			strides[j] = pr_spec_strides(v)[j];
			continue;
		}
		used[k] = true;
		strides[j] = pr_spec_strides(now)[k];
	}
	pr_spec_set_strides(v, strides);
	return true;
}

/* The body input a delegate call reads its argument `slot` as. */
static pr_node *body_input(pr_delegate *d, int slot)
{
	int i = 0;
	if (!d || !d->body)
		return NULL;
	pr_graph_for_each(d->body, n)
		if (n->kind == PR_NODE_INPUT && i++ == slot)
			return n;
	return NULL;
}

/* Does reader u read v as the base of a view (u's result aliases v)? */
static bool reads_as_view(const pr_node *u, const pr_node *v)
{
	return pr_node_alias_value(u, 0) == v && u->type.kind == PR_TYPE_TENSOR;
}

/* Every reader of t, whose layout went from old to t's, agrees with it. */
static void update_readers(pr_node *t, const pr_spec *old)
{
	const pr_spec *now = pr_node_spec(t);
	for (int i = 0; i < t->n_uses; i++) {
		pr_use *u = &t->uses[i];
		pr_node *r = pr_use_user(u);
		if (r->kind == PR_NODE_DELEGATE) {
			pr_node *in = body_input(r->of_kind.delegate, (int)(u->arg - r->args));
			if (in && pr_node_spec(in) && pr_spec_same_layout(pr_node_spec(in), old))
				pr_spec_set_strides(&in->type.tensor, pr_spec_strides(now));
		} else if (reads_as_view(r, t)) {
			pr_spec before = r->type.tensor;
			if (remap_view(old, now, &r->type.tensor) &&
			    !pr_spec_same_layout(&before, &r->type.tensor))
				update_readers(r, &before);
		}
	}
}

static pr_err *make_contiguous(pr_pass_ctx *ctx, pr_program *p, pr_graph *g, pr_node *n)
{
	pr_spec old = n->type.tensor;
	pr_err *e = rewrite_stored_bytes(p, n, &old);
	if (e)
		return pr_err_wrap(e, "param-layout: %%%s", n->name);
	pr_spec_set_contiguous(&n->type.tensor);
	update_readers(n, &old);
	char was[128], now[128], ds[PR_DEVICE_STR_MAX], r[160] = "nothing";
	pl_strides_str(&old, was, sizeof was);
	pl_strides_str(&n->type.tensor, now, sizeof now);
	if (n->n_uses)
		pl_describe_use(pl_first_use(n), r, sizeof r);
	pr_pass_diag(ctx, PR_SEV_WARNING, "W-LAYOUT-CHANGED", g->name, n->name, pl_bytes(n),
		     "%s '%s' (%%%s, %" PRId64 " bytes, on %s) had strides %s, neither contiguous "
		     "nor channels-last: it is now stored contiguous with strides %s, and %s "
		     "(with every other reader) reads it with that layout",
		     pl_input_kind_word(n, NULL), pl_input_name(n), n->name,
		     pl_bytes(n), pr_device_str(pr_spec_device(&n->type.tensor), ds), was, now, r);
	return NULL;
}

static pr_err *param_layout_run(pr_pass_ctx *ctx, pr_program *p, bool *changed)
{
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		pr_graph_for_each(g, n) {
			pr_node_prefetch_ahead(n);
			if (n->kind != PR_NODE_INPUT || n->type.kind != PR_TYPE_TENSOR ||
			    n->of_kind.input->kind == PR_INPUT_USER ||
			    n->of_kind.input->kind == PR_INPUT_POSITIONAL ||
			    !odd_layout(&n->type.tensor))
				continue;
			pr_err *e = make_contiguous(ctx, p, g, n);
			if (e)
				return e;
			*changed = true;
		}
	}
	return NULL;
}

static const pr_pass_info param_layout_pass = {
	.struct_size = sizeof(pr_pass_info),
	.name = "param-layout",
	.summary = "parameters, buffers and constants neither contiguous nor channels-last become contiguous; readers follow (F1)",
	.run = param_layout_run,
};

static pr_err *param_layout_register(pr_registry *r)
{
	return pr_register_pass(r, &param_layout_pass);
}

PR_PLUGIN("param-layout", "1.0", param_layout_register)
