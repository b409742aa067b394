/* kernels_shape.c: host kernels that move data or only metadata: views
 * (view, reshape, permute, transpose, t, as_strided, expand, slice, select,
 * unsqueeze, squeeze, alias), copies (clone, contiguous, copy_), indexing
 * (embedding, index_select, index_put_, cat), sym_size and the KV-cache
 * update.
 *
 * A view kernel computes the view's shape, strides and data pointer over its
 * argument's storage. When the schema says the result aliases the argument
 * (Tensor(a)), that view *is* the result; when it does not (a view_copy), the
 * view's elements are copied into the result's own storage. reshape and
 * contiguous alias when the strides allow it and copy otherwise, into storage
 * the executor gives them for that case (k->own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "passrun/data.h"

static prt_tensor *arg_tensor(prt_kctx *k, int i, pr_err **err)
{
	prt_tensor *t = prt_karg_tensor(k, i);
	if (!t && !*err)
		*err = prt_kernel_error(k, "argument %d must be a tensor", i);
	return t;
}

/* "[2,3]" into buf (room for PR_MAX_RANK dims). */
static const char *shape_str(int rank, const int64_t *shape, char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "[");
	for (int d = 0; d < rank && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "",
					(long long)shape[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "]");
	return buf;
}

/* NULL when the declared shape (drank, dshape) is (rank, shape), else the
 * error that says both. */
static pr_err *declared_shape_check(prt_kctx *k, int drank, const int64_t *dshape, int rank,
				    const int64_t *shape)
{
	bool same = drank == rank;
	for (int d = 0; same && d < rank; d++)
		same = dshape[d] == shape[d];
	if (same)
		return NULL;
	char have[PR_MAX_RANK * 21 + 3], want[PR_MAX_RANK * 21 + 3];
	return prt_kernel_error(k, "the result is declared %s; its arguments give %s",
			       shape_str(drank, dshape, have, sizeof have),
			       shape_str(rank, shape, want, sizeof want));
}

pr_err *prt_result_shape_check(prt_kctx *k, int rank, const int64_t *shape)
{
	if (k->out->kind != PRT_RV_TENSOR) {
		char want[PR_MAX_RANK * 21 + 3];
		return prt_kernel_error(k, "the result must be a tensor of shape %s",
				       shape_str(rank, shape, want, sizeof want));
	}
	return declared_shape_check(k, k->out->t.rank, k->out->t.shape, rank, shape);
}

pr_err *prt_embedding_check(prt_kctx *k, const prt_tensor *w, const prt_tensor *ix)
{
	if (w->rank != 2)
		return prt_kernel_error(k, "weight must have rank 2");
	if (ix->rank + 1 > PR_MAX_RANK)
		return prt_kernel_error(k, "indices of rank %d give a result of more than %d dims",
				       ix->rank, PR_MAX_RANK);
	int64_t shape[PR_MAX_RANK];
	memcpy(shape, ix->shape, sizeof(int64_t) * (size_t)ix->rank);
	shape[ix->rank] = w->shape[1];
	return prt_result_shape_check(k, ix->rank + 1, shape);
}

pr_err *prt_cat_item_check(prt_kctx *k, const prt_tensor *o, const prt_tensor *x, int d, int64_t at,
			  int j)
{
	if (x->rank != o->rank || x->shape[d] > o->shape[d] - at)
		return prt_kernel_error(k, "item %d does not fit the result along dim %d", j, d);
	for (int i = 0; i < o->rank; i++)
		if (i != d && x->shape[i] != o->shape[i])
			return prt_kernel_error(k, "item %d has %lld elements along dim %d; the "
					       "result has %lld", j, (long long)x->shape[i], i,
					       (long long)o->shape[i]);
	return NULL;
}

/* e (may be NULL), a tensor helper's error, as the kernel's (naming its
 * node); e is freed. */
static pr_err *as_kernel_error(prt_kctx *k, pr_err *e)
{
	if (!e)
		return NULL;
	pr_err *w = prt_kernel_error(k, "%s", pr_err_message(e));
	pr_err_free(e);
	return w;
}

/* Does view v stay inside its storage, with an element count that fits in
 * int64? Every view kernel asks before its view is used: sizes, strides and
 * offsets come from the program, and as_strided with offset 100000 would
 * otherwise read and write outside its base. */
static pr_err *check_view(prt_kctx *k, const prt_tensor *v)
{
	return as_kernel_error(k, prt_tensor_in_storage(v, "the view", "its base's storage",
							"a view inside its base"));
}

/* dst = src, elements converted; a failure is the kernel's error. */
static pr_err *copy_into(prt_kctx *k, prt_tensor *dst, const prt_tensor *src)
{
	return as_kernel_error(k, prt_tensor_copy(dst, src));
}

/* The result is view v of an argument: alias it, or copy its elements. It
 * has the view's shape: a result declared with another is refused, not
 * broadcast into (a copy would fill f32[2] from a one-element view and say
 * nothing) nor handed to its readers with a shape they were not told. */
static pr_err *view_result(prt_kctx *k, const prt_tensor *v)
{
	pr_err *err = check_view(k, v);
	if (err)
		return err;
	if (k->out_alias) {
		const pr_node *n = k->node;
		if (n && n->type.kind == PR_TYPE_TENSOR &&
		    (err = declared_shape_check(k, n->type.tensor.rank, n->type.tensor.shape, v->rank,
						v->shape)))
			return err;
		k->out->t = *v;
		return NULL;
	}
	if ((err = prt_result_shape_check(k, v->rank, v->shape)))
		return err;
	return copy_into(k, &k->out->t, v);
}

/* PyTorch's stride computation for view(): walks the old dims in chunks that
 * are contiguous among themselves and splits each chunk over the new dims. */
bool prt_view_strides(const prt_tensor *t, int n, const int64_t *shape, int64_t *st)
{
	if (t->rank == 0 || prt_tensor_numel(t) == 0) {
		int64_t s = 1;   /* saturates: an empty view's strides are never followed */
		for (int d = n - 1; d >= 0; d--) {
			st[d] = s;
			if (__builtin_mul_overflow(s, shape[d] ? shape[d] : 1, &s))
				s = INT64_MAX;
		}
		return true;
	}
	int vd = n - 1;
	int64_t base = t->strides[t->rank - 1], tn = 1, vn = 1;
	for (int td = t->rank - 1; td >= 0; td--) {
		tn *= t->shape[td];
		if (td == 0 || (t->shape[td - 1] != 1 && t->strides[td - 1] != tn * base)) {
			while (vd >= 0 && (vn < tn || shape[vd] == 1)) {
				st[vd] = vn * base;
				vn *= shape[vd];
				vd--;
			}
			if (vn != tn)
				return false;
			if (td > 0)
				base = t->strides[td - 1], tn = vn = 1;
		}
	}
	return vd == -1;
}

/* Reads a size list (argument i), inferring one -1 from numel. */
static pr_err *size_arg(prt_kctx *k, int i, int64_t numel, int64_t *shape, int *n)
{
	*n = prt_karg_ints(k, i, shape, PR_MAX_RANK);
	if (*n < 0)
		return prt_kernel_error(k, "argument %d must be a list of sizes", i);
	int64_t known = 1;
	int infer = -1;
	for (int d = 0; d < *n; d++) {
		if (shape[d] == -1 && infer < 0)
			infer = d;
		else if (shape[d] < 0)
			return prt_kernel_error(k, "invalid size %lld", (long long)shape[d]);
		else if (__builtin_mul_overflow(known, shape[d], &known))
			return prt_kernel_error(k, "the sizes' product overflows int64; the tensor has "
					       "%lld elements", (long long)numel);
	}
	if (infer >= 0)
		shape[infer] = known ? numel / known : 0;
	int64_t total = 1;
	for (int d = 0; d < *n; d++)
		if (__builtin_mul_overflow(total, shape[d], &total))
			return prt_kernel_error(k, "the sizes' product overflows int64; the tensor has "
					       "%lld elements", (long long)numel);
	if (total != numel)
		return prt_kernel_error(k, "shape has %lld elements, the tensor %lld", (long long)total,
				       (long long)numel);
	return NULL;
}

static pr_err *reshape_impl(prt_kctx *k, bool may_copy)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	int64_t shape[PR_MAX_RANK];
	int n;
	if (err || (err = size_arg(k, 1, prt_tensor_numel(x), shape, &n)))
		return err;
	prt_tensor v = *x;
	v.rank = n;
	memcpy(v.shape, shape, sizeof(int64_t) * (size_t)n);
	if (prt_view_strides(x, n, shape, v.strides))
		return view_result(k, &v);
	if (k->out_alias && !(may_copy && k->own))
		return prt_kernel_error(k, "a view whose strides cannot express the new shape; use reshape");
	if (k->out_alias)
		k->out->t = *k->own;
	/* Same elements in row-major order: copy through doubles. */
	double *vals = prt_tensor_gather(x);
	prt_tensor_scatter(&k->out->t, vals);
	free(vals);
	return NULL;
}

pr_err *prt_k_view(prt_kctx *k) { return reshape_impl(k, false); }
pr_err *prt_k_reshape(prt_kctx *k) { return reshape_impl(k, true); }

pr_err *prt_k_alias(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	return err ? err : view_result(k, x);
}

pr_err *prt_k_permute(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	int64_t dims[PR_MAX_RANK];
	bool seen[PR_MAX_RANK] = {false};
	if (prt_karg_ints(k, 1, dims, PR_MAX_RANK) != x->rank)
		return prt_kernel_error(k, "dims must list each of the %d dims once", x->rank);
	prt_tensor v = *x;
	for (int d = 0; d < x->rank; d++) {
		int s = prt_dim(dims[d], x->rank);
		if (s < 0 || seen[s])
			return prt_kernel_error(k, "dims must list each of the %d dims once", x->rank);
		seen[s] = true;
		v.shape[d] = x->shape[s];
		v.strides[d] = x->strides[s];
	}
	return view_result(k, &v);
}

static pr_err *transpose_impl(prt_kctx *k, int64_t d0, int64_t d1)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	prt_tensor v = *x;
	if (x->rank == 0)
		return view_result(k, &v);
	int a = prt_dim(d0, x->rank), b = prt_dim(d1, x->rank);
	if (a < 0 || b < 0)
		return prt_kernel_error(k, "dim out of range");
	v.shape[a] = x->shape[b], v.strides[a] = x->strides[b];
	v.shape[b] = x->shape[a], v.strides[b] = x->strides[a];
	return view_result(k, &v);
}

pr_err *prt_k_transpose(prt_kctx *k)
{
	return transpose_impl(k, prt_karg_int(k, 1, 0), prt_karg_int(k, 2, 1));
}

pr_err *prt_k_t(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0);
	if (x && x->rank > 2)
		return prt_kernel_error(k, "t() expects a tensor of rank <= 2");
	return transpose_impl(k, 0, x && x->rank == 2 ? 1 : 0);
}

pr_err *prt_k_as_strided(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	prt_tensor v = *x;
	int n = prt_karg_ints(k, 1, v.shape, PR_MAX_RANK);
	if (n < 0 || prt_karg_ints(k, 2, v.strides, PR_MAX_RANK) != n)
		return prt_kernel_error(k, "size and stride must be lists of the same length");
	v.rank = n;
	int64_t es = (int64_t)pr_dtype_size(x->dtype);
	int64_t off = prt_karg_int(k, 3, (x->data - x->storage) / es), at;
	if (off < 0)
		return prt_kernel_error(k, "negative storage offset");
	for (int d = 0; d < n; d++)
		if (v.strides[d] < 0)
			return prt_kernel_error(k, "stride %lld of dim %d is negative; expected "
					       "strides >= 0", (long long)v.strides[d], d);
	/* The pointer is formed only inside the storage (check_view checks the rest). */
	if (__builtin_mul_overflow(off, es, &at) || (x->storage_end && at > x->storage_end - x->storage))
		return prt_kernel_error(k, "storage offset %lld is past the end of its base's storage "
				       "(%lld bytes)", (long long)off, x->storage_end ?
				       (long long)(x->storage_end - x->storage) : -1LL);
	v.data = x->storage + at;
	return view_result(k, &v);
}

pr_err *prt_k_expand(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	prt_tensor v = *x;
	int n = prt_karg_ints(k, 1, v.shape, PR_MAX_RANK);
	if (n < x->rank)
		return prt_kernel_error(k, "expand needs at least %d sizes", x->rank);
	v.rank = n;
	int lead = n - x->rank;
	for (int d = 0; d < n; d++) {
		int sd = d - lead;
		int64_t old = sd >= 0 ? x->shape[sd] : 1;
		if (v.shape[d] == -1 && sd >= 0)
			v.shape[d] = old;
		if (sd >= 0 && old == v.shape[d])
			v.strides[d] = x->strides[sd];
		else if (old == 1 && v.shape[d] >= 0)
			v.strides[d] = 0;
		else
			return prt_kernel_error(k, "cannot expand dim %d of size %lld to %lld", d,
					       (long long)old, (long long)v.shape[d]);
	}
	return view_result(k, &v);
}

/* slice.Tensor(self, dim=0, start=None, end=None, step=1) */
pr_err *prt_k_slice(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (d < 0 || x->rank == 0)
		return prt_kernel_error(k, "dim out of range");
	int64_t len = x->shape[d], start = prt_karg_int(k, 2, 0), end = prt_karg_int(k, 3, INT64_MAX);
	int64_t step = prt_karg_int(k, 4, 1);
	if (step <= 0)
		return prt_kernel_error(k, "slice step must be positive");
	if (start < 0)
		start += len;
	if (end < 0)
		end += len;
	start = start < 0 ? 0 : start > len ? len : start;
	end = end < start ? start : end > len ? len : end;
	prt_tensor v = *x;
	v.shape[d] = end > start ? (end - start - 1) / step + 1 : 0;   /* no overflow for a huge step */
	int64_t at;
	if (__builtin_mul_overflow(start, x->strides[d], &at) ||
	    __builtin_mul_overflow(at, (int64_t)pr_dtype_size(x->dtype), &at))
		return prt_kernel_error(k, "start %lld times stride %lld overflows int64",
				       (long long)start, (long long)x->strides[d]);
	v.data = v.shape[d] ? x->data + at : x->data;   /* an empty view points nowhere new */
	if (__builtin_mul_overflow(x->strides[d], step, &v.strides[d])) {
		if (v.shape[d] > 1)
			return prt_kernel_error(k, "stride %lld times step %lld overflows int64",
					       (long long)x->strides[d], (long long)step);
		v.strides[d] = x->strides[d];   /* one element: its stride is never followed */
	}
	return view_result(k, &v);
}

/* select.int(self, dim, index): the view without dim. */
pr_err *prt_select_view(prt_kctx *k, const prt_tensor *x, int64_t dim, int64_t index, prt_tensor *v)
{
	int d = prt_dim(dim, x->rank);
	if (d < 0 || x->rank == 0)
		return prt_kernel_error(k, "dim out of range");
	if (index < 0)
		index += x->shape[d];
	if (index < 0 || index >= x->shape[d])
		return prt_kernel_error(k, "index %lld out of range for dim %d of size %lld",
				       (long long)index, d, (long long)x->shape[d]);
	*v = *x;
	v->data = x->data + index * x->strides[d] * (int64_t)pr_dtype_size(x->dtype);
	for (int i = d; i < x->rank - 1; i++)
		v->shape[i] = x->shape[i + 1], v->strides[i] = x->strides[i + 1];
	v->rank = x->rank - 1;
	return NULL;
}

pr_err *prt_k_select(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err), v;
	if (err || (err = prt_select_view(k, x, prt_karg_int(k, 1, 0), prt_karg_int(k, 2, 0), &v)))
		return err;
	return view_result(k, &v);
}

pr_err *prt_k_unsqueeze(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	int64_t dim = prt_karg_int(k, 1, 0);
	if (dim < 0)
		dim += x->rank + 1;
	if (dim < 0 || dim > x->rank || x->rank == PR_MAX_RANK)
		return prt_kernel_error(k, "dim out of range");
	prt_tensor v = *x;
	for (int i = x->rank; i > dim; i--)
		v.shape[i] = x->shape[i - 1], v.strides[i] = x->strides[i - 1];
	v.shape[dim] = 1;   /* a size-1 dim's stride is never followed: 1 if it overflows */
	if (dim >= x->rank || __builtin_mul_overflow(x->shape[dim], x->strides[dim], &v.strides[dim]))
		v.strides[dim] = 1;
	v.rank = x->rank + 1;
	return view_result(k, &v);
}

pr_err *prt_k_squeeze_dim(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err), v;
	if (err)
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (x->rank == 0 || d < 0 || x->shape[d] != 1)
		return view_result(k, x);
	if ((err = prt_select_view(k, x, d, 0, &v)))
		return err;
	return view_result(k, &v);
}

/* ---- copies ------------------------------------------------------------------- */

pr_err *prt_k_clone(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	return err ? err : copy_into(k, &k->out->t, x);
}

pr_err *prt_k_contiguous(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	if (k->out_alias && prt_tensor_is_contiguous(x)) {
		k->out->t = *x;
		return NULL;
	}
	if (k->out_alias) {
		if (!k->own)
			return prt_kernel_error(k, "no storage for a non-contiguous input");
		k->out->t = *k->own;
	}
	return copy_into(k, &k->out->t, x);
}

/* copy_(self, src, non_blocking=False): the result is self. */
pr_err *prt_k_copy_(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *self = arg_tensor(k, 0, &err), *src = arg_tensor(k, 1, &err);
	if (err || (err = copy_into(k, self, src)))
		return err;
	if (k->out->kind == PRT_RV_TENSOR)
		k->out->t = *self;
	return NULL;
}

pr_err *prt_k_sym_size(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err);
	if (err)
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (d < 0 || x->rank == 0)
		return prt_kernel_error(k, "dim out of range");
	k->out->kind = PRT_RV_INT;
	k->out->i = x->shape[d];
	return NULL;
}

/* custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ():
 * cache[pos, ...] = value[0, ...]. */
pr_err *prt_k_kv_update(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *cache = arg_tensor(k, 0, &err), *value = arg_tensor(k, 1, &err), row, src;
	if (err)
		return err;
	if ((err = prt_select_view(k, cache, 0, prt_karg_int(k, 2, 0), &row)) ||
	    (err = prt_select_view(k, value, 0, 0, &src)))
		return err;
	return copy_into(k, &row, &src);
}

/* ---- indexing ------------------------------------------------------------------ */

static pr_err *load_index(prt_kctx *k, const prt_tensor *idx, int64_t limit, int64_t **out, int64_t *n)
{
	if (pr_dtype_is_float(idx->dtype))
		return prt_kernel_error(k, "indices must be integers, not %s", pr_dtype_name(idx->dtype));
	*n = prt_tensor_numel(idx);
	double *v = prt_tensor_gather(idx);
	*out = pr_xmalloc(sizeof(int64_t) * (size_t)(*n ? *n : 1));
	for (int64_t i = 0; i < *n; i++) {
		int64_t j = (int64_t)v[i];
		if (j < 0)
			j += limit;
		if (j < 0 || j >= limit) {
			long long bad = (long long)v[i];
			free(v), free(*out);
			*out = NULL;   /* index_put_ frees every index it loaded */
			return prt_kernel_error(k, "index %lld out of range [0, %lld)", bad, (long long)limit);
		}
		(*out)[i] = j;
	}
	free(v);
	return NULL;
}

/* Copies, for each index i, src selected at idx[i] along dim into the i-th
 * slot of dst along ddim. */
static pr_err *gather_rows(prt_kctx *k, const prt_tensor *src, int dim, const int64_t *idx, int64_t n,
			   prt_tensor *dst, int ddim)
{
	for (int64_t i = 0; i < n; i++) {
		prt_tensor s, d;
		pr_err *err = prt_select_view(k, src, dim, idx[i], &s);
		if (!err)
			err = prt_select_view(k, dst, ddim, i, &d);
		if (!err)
			err = copy_into(k, &d, &s);
		if (err)
			return err;
	}
	return NULL;
}

/* embedding(weight[V, D], indices[...]) -> [..., D] */
pr_err *prt_k_embedding(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *w = arg_tensor(k, 0, &err), *ix = arg_tensor(k, 1, &err);
	if (err)
		return err;
	if ((err = prt_embedding_check(k, w, ix)))
		return err;
	int64_t *idx, n;
	if ((err = load_index(k, ix, w->shape[0], &idx, &n)))
		return err;
	/* The result seen as [n, D]. */
	prt_tensor o = k->out->t;
	int64_t shape2[2] = {n, w->shape[1]};
	if (!prt_view_strides(&o, 2, shape2, o.strides)) {
		free(idx);
		return prt_kernel_error(k, "the result's layout cannot be seen as [N, D]");
	}
	o.rank = 2;
	o.shape[0] = n, o.shape[1] = w->shape[1];
	err = gather_rows(k, w, 0, idx, n, &o, 0);
	free(idx);
	return err;
}

/* index_select(self, dim, index[n]) */
pr_err *prt_k_index_select(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = arg_tensor(k, 0, &err), *ix = arg_tensor(k, 2, &err);
	if (err)
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (d < 0 || x->rank == 0)
		return prt_kernel_error(k, "dim out of range");
	int64_t shape[PR_MAX_RANK];
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	shape[d] = prt_tensor_numel(ix);
	if ((err = prt_result_shape_check(k, x->rank, shape)))
		return err;
	int64_t *idx, n;
	if ((err = load_index(k, ix, x->shape[d], &idx, &n)))
		return err;
	err = gather_rows(k, x, d, idx, n, &k->out->t, d);
	free(idx);
	return err;
}

/* index_put_(self, Tensor?[] indices, values, accumulate=False): the leading
 * index tensors (all of one size L) pick L sub-tensors of self, which take
 * values (of L sub-tensors, or one broadcast to all). */
pr_err *prt_k_index_put_(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *self = arg_tensor(k, 0, &err), *vals = arg_tensor(k, 2, &err);
	if (err)
		return err;
	prt_karg *list = k->n_args > 1 ? &k->args[1] : NULL;
	if (!list || list->kind != PR_ARG_LIST || list->n < 1 || list->n > self->rank)
		return prt_kernel_error(k, "indices must be a list of 1 to %d tensors", self->rank);
	int ni = list->n;
	int64_t *idx[PR_MAX_RANK] = {NULL}, L = -1;
	for (int j = 0; j < ni && !err; j++) {
		prt_karg *it = &list->items[j];
		int64_t n;
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR)
			err = prt_kernel_error(k, "only leading tensor indices are supported");
		else if (!(err = load_index(k, &it->v->t, self->shape[j], &idx[j], &n)) && L >= 0 && n != L)
			err = prt_kernel_error(k, "index tensors must have the same number of elements");
		else
			L = n;
	}
	bool acc = prt_karg_int(k, 3, 0) != 0;
	int64_t es = (int64_t)pr_dtype_size(self->dtype);
	prt_tensor sub = *self;    /* the dims left after the indexed ones */
	sub.rank = self->rank - ni;
	memmove(sub.shape, self->shape + ni, sizeof(int64_t) * (size_t)sub.rank);
	memmove(sub.strides, self->strides + ni, sizeof(int64_t) * (size_t)sub.rank);
	int64_t R = prt_tensor_numel(&sub), nv = prt_tensor_numel(vals);
	if (!err && nv != L * R && nv != R && nv != 1)
		err = prt_kernel_error(k, "values has %lld elements; expected %lld, %lld or 1",
				      (long long)nv, (long long)(L * R), (long long)R);
	double *v = err ? NULL : prt_tensor_gather(vals);
	for (int64_t l = 0; !err && l < L; l++) {
		sub.data = self->data;
		for (int j = 0; j < ni; j++)
			sub.data += idx[j][l] * self->strides[j] * es;
		double *row = prt_tensor_gather(&sub);
		for (int64_t r = 0; r < R; r++) {
			double x = v[nv == 1 ? 0 : nv == R ? r : l * R + r];
			row[r] = acc ? row[r] + x : x;
		}
		prt_tensor_scatter(&sub, row);
		free(row);
	}
	free(v);
	for (int j = 0; j < ni; j++)
		free(idx[j]);
	if (!err && k->out->kind == PRT_RV_TENSOR)
		k->out->t = *self;
	return err;
}

/* cat(Tensor[] tensors, int dim=0) */
pr_err *prt_k_cat(prt_kctx *k)
{
	prt_karg *list = k->n_args > 0 ? &k->args[0] : NULL;
	if (!list || list->kind != PR_ARG_LIST)
		return prt_kernel_error(k, "argument 0 must be a list of tensors");
	prt_tensor *o = &k->out->t;
	int d = prt_dim(prt_karg_int(k, 1, 0), o->rank);
	if (d < 0)
		return prt_kernel_error(k, "dim out of range");
	int64_t at = 0, es = (int64_t)pr_dtype_size(o->dtype);
	for (int j = 0; j < list->n; j++) {
		prt_karg *it = &list->items[j];
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR)
			return prt_kernel_error(k, "item %d of the list is not a tensor", j);
		prt_tensor *x = &it->v->t;
		if (x->rank == 1 && x->shape[0] == 0 && o->rank != 1)
			continue;   /* legacy empty tensors are skipped, as in PyTorch */
		pr_err *err = prt_cat_item_check(k, o, x, d, at, j);
		if (err)
			return err;
		prt_tensor part = *o;
		part.data = o->data + at * o->strides[d] * es;
		part.shape[d] = x->shape[d];
		err = copy_into(k, &part, x);
		if (err)
			return err;
		at += x->shape[d];
	}
	if (at != o->shape[d])
		return prt_kernel_error(k, "the inputs fill %lld of %lld along dim %d", (long long)at,
				       (long long)o->shape[d], d);
	return NULL;
}
