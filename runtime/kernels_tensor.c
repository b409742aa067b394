/* kernels_tensor.c: host kernels for the tensor ops transformers and RNNs
 * export beyond arithmetic: factories (arange, full, zeros, ones, full_like,
 * scalar_tensor), cumsum, gather, advanced indexing (index.Tensor) and the
 * ops with several results (split.Tensor, split_with_sizes, unbind.int).
 *
 * Factories take their dtype from the result's declared spec (the exporter
 * writes the dtype ATen inferred: i64 for integer arange, f32 otherwise), and
 * check the declared shape against their arguments. Integer results are
 * computed in int64 so that i64 values beyond 2^53 survive; floats in double,
 * as ATen's CPU kernels accumulate.
 *
 * gather and index.Tensor copy elements as bytes (no conversion: every dtype,
 * exactly), walking the result with an odometer and each operand through its
 * own strides. Indices may be negative (counted from the end) and are
 * checked against the dimension they index.
 *
 * The split ops are views, as their schemas say (Tensor(a)[]): the result is
 * a tuple whose elements the executor leaves unplaced, and the kernel points
 * each element into the argument's storage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "passrun/data.h"

static prt_tensor *tensor_arg(prt_kctx *k, int i, pr_err **err)
{
	prt_tensor *t = prt_karg_tensor(k, i);
	if (!t && !*err)
		*err = prt_kernel_error(k, "argument %d must be a tensor", i);
	return t;
}

static prt_tensor *result(prt_kctx *k, pr_err **err)
{
	if (k->out->kind == PRT_RV_TENSOR)
		return &k->out->t;
	*err = prt_kernel_error(k, "the result must be a tensor");
	return NULL;
}

/* Is argument i an integer (a literal, an int value, a bool)? */
static bool karg_is_int(prt_kctx *k, int i)
{
	if (i >= k->n_args)
		return false;
	const prt_karg *a = &k->args[i];
	return a->kind == PR_ARG_INT || a->kind == PR_ARG_BOOL ||
	       (a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_INT);
}

static size_t esize(const prt_tensor *t) { return pr_dtype_size(t->dtype); }

/* Advances idx over shape (row-major); false after the last element. */
static bool odometer_next(int rank, const int64_t *shape, int64_t *idx)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++idx[d] < shape[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

static uint8_t *elem_at(const prt_tensor *t, const int64_t *idx)
{
	int64_t off = 0;
	for (int d = 0; d < t->rank; d++)
		off += idx[d] * t->strides[d];
	return t->data + off * (int64_t)esize(t);
}

/* ---- factories ------------------------------------------------------------- */

/* Writes value v into every element of o: exactly, from an int64, when the
 * value is an integer and the dtype is one too. */
static void fill_impl(prt_tensor *o, bool as_int, int64_t iv, double fv)
{
	int64_t idx[PR_MAX_RANK] = {0};
	if (prt_tensor_numel(o) == 0)
		return;
	do {
		uint8_t *p = elem_at(o, idx);
		if (as_int && !pr_dtype_is_float(o->dtype))
			pr_elem_store_i64(o->dtype, p, iv);
		else
			pr_elem_store(o->dtype, p, as_int ? (double)iv : fv);
	} while (odometer_next(o->rank, o->shape, idx));
}

/* A factory's size list (argument i) must be the result's shape. */
static pr_err *check_size_arg(prt_kctx *k, int i)
{
	int64_t size[PR_MAX_RANK];
	int n = prt_karg_ints(k, i, size, PR_MAX_RANK);
	if (n < 0)
		return prt_kernel_error(k, "argument %d must be a list of at most %d sizes", i,
				       PR_MAX_RANK);
	for (int d = 0; d < n; d++)
		if (size[d] < 0)
			return prt_kernel_error(k, "size %lld of dim %d is negative", (long long)size[d], d);
	return prt_result_shape_check(k, n, size);
}

/* full(size, fill_value, *, dtype...), zeros(size), ones(size): value_at is
 * the fill value's argument, or -1 for the constant c. */
static pr_err *full_impl(prt_kctx *k, int value_at, double c)
{
	pr_err *err = NULL;
	prt_tensor *o = result(k, &err);
	if (err || (err = check_size_arg(k, 0)))
		return err;
	if (value_at >= 0 && prt_karg_is_none(k, value_at))
		return prt_kernel_error(k, "fill_value must be a number");
	bool as_int = value_at < 0 || karg_is_int(k, value_at);
	int64_t iv = value_at < 0 ? (int64_t)c : prt_karg_int(k, value_at, 0);
	fill_impl(o, as_int, iv, value_at < 0 ? c : prt_karg_float(k, value_at, 0));
	return NULL;
}

pr_err *prt_k_full(prt_kctx *k) { return full_impl(k, 1, 0); }
pr_err *prt_k_zeros(prt_kctx *k) { return full_impl(k, -1, 0); }
pr_err *prt_k_ones(prt_kctx *k) { return full_impl(k, -1, 1); }

/* full_like(self, fill_value, ...): self's shape. */
pr_err *prt_k_full_like(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err), *o = result(k, &err);
	if (err || (err = prt_result_shape_check(k, x->rank, x->shape)))
		return err;
	if (prt_karg_is_none(k, 1))
		return prt_kernel_error(k, "fill_value must be a number");
	fill_impl(o, karg_is_int(k, 1), prt_karg_int(k, 1, 0), prt_karg_float(k, 1, 0));
	return NULL;
}

/* scalar_tensor(s, *, dtype...): a 0-d tensor holding s. */
pr_err *prt_k_scalar_tensor(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *o = result(k, &err);
	if (err || (err = prt_result_shape_check(k, 0, NULL)))
		return err;
	if (prt_karg_is_none(k, 0))
		return prt_kernel_error(k, "s must be a number");
	fill_impl(o, karg_is_int(k, 0), prt_karg_int(k, 0, 0), prt_karg_float(k, 0, 0));
	return NULL;
}

/* arange over [start, end) by step: start_at/step_at are -1 for 0 and 1. */
static pr_err *arange_impl(prt_kctx *k, int start_at, int end_at, int step_at)
{
	pr_err *err = NULL;
	prt_tensor *o = result(k, &err);
	if (err)
		return err;
	if (prt_karg_is_none(k, end_at))
		return prt_kernel_error(k, "end must be a number");
	bool ints = karg_is_int(k, end_at) && (start_at < 0 || karg_is_int(k, start_at)) &&
		    (step_at < 0 || prt_karg_is_none(k, step_at) || karg_is_int(k, step_at));
	double start = start_at < 0 ? 0 : prt_karg_float(k, start_at, 0);
	double end = prt_karg_float(k, end_at, 0);
	double step = step_at < 0 ? 1 : prt_karg_float(k, step_at, 1);
	if (step == 0 || step != step)
		return prt_kernel_error(k, "step must be nonzero");
	if ((step > 0 && start > end) || (step < 0 && start < end))
		return prt_kernel_error(k, "upper bound and larger bound inconsistent with step sign");
	double len = ceil((end - start) / step);
	if (ints) {   /* exact: ATen's length for integer arguments */
		int64_t s0 = start_at < 0 ? 0 : prt_karg_int(k, start_at, 0);
		int64_t e0 = prt_karg_int(k, end_at, 0), st = step_at < 0 ? 1 : prt_karg_int(k, step_at, 1);
		len = (double)((e0 - s0 + st + (st > 0 ? -1 : 1)) / st);
	}
	int64_t n = (int64_t)len;
	if ((err = prt_result_shape_check(k, 1, &n)))
		return err;
	int64_t s0 = ints && start_at >= 0 ? prt_karg_int(k, start_at, 0) : 0;
	int64_t st = ints && step_at >= 0 ? prt_karg_int(k, step_at, 1) : 1;
	for (int64_t i = 0; i < n; i++) {
		uint8_t *p = o->data + i * o->strides[0] * (int64_t)esize(o);
		if (ints && !pr_dtype_is_float(o->dtype))
			pr_elem_store_i64(o->dtype, p, s0 + i * st);
		else
			pr_elem_store(o->dtype, p, start + (double)i * step);
	}
	return NULL;
}

/* arange(end), arange.start(start, end), arange.start_step(start, end, step) */
pr_err *prt_k_arange(prt_kctx *k) { return arange_impl(k, -1, 0, -1); }
pr_err *prt_k_arange_start(prt_kctx *k) { return arange_impl(k, 0, 1, -1); }
pr_err *prt_k_arange_start_step(prt_kctx *k) { return arange_impl(k, 0, 1, 2); }

/* ---- cumsum ------------------------------------------------------------------- */

/* cumsum(self, dim, *, dtype=None): running sums along dim, in the result's
 * dtype (int64 for integer and bool inputs, as ATen promotes). */
pr_err *prt_k_cumsum(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err), *o = result(k, &err);
	if (err || (err = prt_result_shape_check(k, x->rank, x->shape)))
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (d < 0)
		return prt_kernel_error(k, "dim %lld out of range for a tensor of rank %d",
				       (long long)prt_karg_int(k, 1, 0), x->rank);
	if (prt_tensor_numel(x) == 0)
		return NULL;
	bool ints = !pr_dtype_is_float(o->dtype) && !pr_dtype_is_float(x->dtype);
	int64_t len = x->rank ? x->shape[d] : 1, xs = x->rank ? x->strides[d] : 0;
	int64_t os = o->rank ? o->strides[d] : 0;
	prt_tensor lines = *x;       /* one element per line: dim d of size 1 */
	if (x->rank)
		lines.shape[d] = 1;
	int64_t idx[PR_MAX_RANK] = {0};
	do {
		const uint8_t *px = elem_at(x, idx);
		uint8_t *po = elem_at(o, idx);
		int64_t si = 0;
		double sf = 0;
		for (int64_t j = 0; j < len; j++) {
			const uint8_t *a = px + j * xs * (int64_t)esize(x);
			uint8_t *b = po + j * os * (int64_t)esize(o);
			if (ints) {
				si += pr_elem_load_i64(x->dtype, a);
				pr_elem_store_i64(o->dtype, b, si);
			} else {
				sf += pr_elem_load(x->dtype, a);
				pr_elem_store(o->dtype, b, sf);
			}
		}
	} while (odometer_next(lines.rank, lines.shape, idx));
	return NULL;
}

/* ---- gather -------------------------------------------------------------------- */

/* An index element, made non-negative against limit; false when out of range. */
static bool index_load(const prt_tensor *ix, const uint8_t *p, int64_t limit, int64_t *out)
{
	int64_t j = pr_elem_load_i64(ix->dtype, p);
	if (j < 0)
		j += limit;
	*out = j;
	return j >= 0 && j < limit;
}

static pr_err *index_dtype_check(prt_kctx *k, const prt_tensor *ix)
{
	if (ix->dtype != PR_I64 && ix->dtype != PR_I32)
		return prt_kernel_error(k, "indices must be i64 or i32, not %s", pr_dtype_name(ix->dtype));
	return NULL;
}

/* gather(self, dim, index, *, sparse_grad): out[i...] = self[i... with
 * index[i...] along dim]; index has self's rank and is no larger elsewhere. */
pr_err *prt_k_gather(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err), *ix = tensor_arg(k, 2, &err), *o = result(k, &err);
	if (err || (err = index_dtype_check(k, ix)))
		return err;
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	int xr = x->rank ? x->rank : 1;
	if (d < 0)
		return prt_kernel_error(k, "dim out of range for a tensor of rank %d", x->rank);
	if ((ix->rank ? ix->rank : 1) != xr)
		return prt_kernel_error(k, "index has rank %d; expected self's rank %d", ix->rank, x->rank);
	for (int i = 0; i < ix->rank; i++)
		if (i != d && ix->shape[i] > (x->rank ? x->shape[i] : 1))
			return prt_kernel_error(k, "index has %lld elements along dim %d, more than "
					       "self's %lld", (long long)ix->shape[i], i,
					       (long long)x->shape[i]);
	if ((err = prt_result_shape_check(k, ix->rank, ix->shape)) || prt_tensor_numel(ix) == 0)
		return err;
	int64_t limit = x->rank ? x->shape[d] : 1, idx[PR_MAX_RANK] = {0}, src[PR_MAX_RANK];
	do {
		int64_t j;
		if (!index_load(ix, elem_at(ix, idx), limit, &j))
			return prt_kernel_error(k, "index %lld out of range [0, %lld) along dim %d",
					       (long long)pr_elem_load_i64(ix->dtype, elem_at(ix, idx)),
					       (long long)limit, d);
		memcpy(src, idx, sizeof src);
		src[d] = j;
		memcpy(elem_at(o, idx), elem_at(x, src), esize(x));
	} while (odometer_next(ix->rank, ix->shape, idx));
	return NULL;
}

/* ---- index.Tensor --------------------------------------------------------------- */

/* Advanced indexing: indices[i] (a tensor or none) indexes dim i of self.
 * The index tensors broadcast to one shape B. When they index adjacent dims,
 * B replaces those dims in place; when a none separates them, B comes first
 * and the dims not indexed follow, as in NumPy and ATen. */
typedef struct adv_index {
	int n;                            /* entries in the indices list */
	const prt_tensor *ix[PR_MAX_RANK]; /* NULL: none (the whole dim) */
	int nb;                           /* B's rank */
	int64_t b[PR_MAX_RANK];           /* B */
	int64_t bst[PR_MAX_RANK][PR_MAX_RANK]; /* each index's strides seen with B */
	int first, last;                  /* first and last indexed dims */
	bool front;                       /* not adjacent: B goes first */
} adv_index;

static pr_err *adv_broadcast(prt_kctx *k, adv_index *a)
{
	a->nb = 0;
	for (int i = 0; i < a->n; i++) {
		const prt_tensor *t = a->ix[i];
		if (!t)
			continue;
		if (t->rank > a->nb) {
			for (int d = a->nb - 1; d >= 0; d--)
				a->b[d + t->rank - a->nb] = a->b[d];
			for (int d = 0; d < t->rank - a->nb; d++)
				a->b[d] = 1;
			a->nb = t->rank;
		}
		for (int d = 0; d < t->rank; d++) {
			int64_t *bd = &a->b[a->nb - t->rank + d];
			if (*bd == 1)
				*bd = t->shape[d];
			else if (t->shape[d] != 1 && t->shape[d] != *bd)
				return prt_kernel_error(k, "index tensor %d (dim %d has %lld elements) does "
						       "not broadcast with the others (%lld)", i, d,
						       (long long)t->shape[d], (long long)*bd);
		}
	}
	prt_tensor bt = {.rank = a->nb};
	memcpy(bt.shape, a->b, sizeof a->b);
	for (int i = 0; i < a->n; i++)
		if (a->ix[i] && !prt_bcast_strides(a->ix[i], &bt, a->bst[i]))
			return prt_kernel_error(k, "index tensor %d does not broadcast", i);
	return NULL;
}

static pr_err *adv_parse(prt_kctx *k, const prt_tensor *x, adv_index *a)
{
	if (k->n_args < 2 || k->args[1].kind != PR_ARG_LIST)
		return prt_kernel_error(k, "indices must be a list of tensors or none");
	const prt_karg *l = &k->args[1];
	if (l->n > x->rank)
		return prt_kernel_error(k, "%d indices for a tensor of rank %d", l->n, x->rank);
	a->n = l->n;
	a->first = a->last = -1;
	for (int i = 0; i < l->n; i++) {
		const prt_karg *it = &l->items[i];
		a->ix[i] = NULL;
		if (it->kind == PR_ARG_NONE)
			continue;
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR)
			return prt_kernel_error(k, "index %d must be a tensor or none", i);
		a->ix[i] = &it->v->t;
		if (a->ix[i]->dtype == PR_BOOL || a->ix[i]->dtype == PR_U8)
			return prt_kernel_error(k, "index %d is a mask (%s); only integer index tensors "
					       "are supported (a mask's result shape depends on its values)",
					       i, pr_dtype_name(a->ix[i]->dtype));
		pr_err *err = index_dtype_check(k, a->ix[i]);
		if (err)
			return err;
		if (a->first < 0)
			a->first = i;
		a->last = i;
	}
	if (a->first < 0)
		return prt_kernel_error(k, "indices has no tensor");
	a->front = false;
	for (int i = a->first; i <= a->last; i++)
		a->front |= a->ix[i] == NULL;
	return adv_broadcast(k, a);
}

/* The result's shape; pos_b is where B starts in it. */
static int adv_shape(const adv_index *a, const prt_tensor *x, int64_t *shape, int *pos_b)
{
	int r = 0;
	if (a->front) {
		*pos_b = 0;
		memcpy(shape, a->b, sizeof(int64_t) * (size_t)a->nb);
		r = a->nb;
		for (int d = 0; d < x->rank; d++)
			if (d >= a->n || !a->ix[d])
				shape[r++] = x->shape[d];
		return r;
	}
	for (int d = 0; d < a->first; d++)
		shape[r++] = x->shape[d];
	*pos_b = r;
	for (int d = 0; d < a->nb; d++)
		shape[r++] = a->b[d];
	for (int d = a->last + 1; d < x->rank; d++)
		shape[r++] = x->shape[d];
	return r;
}

pr_err *prt_k_index(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err), *o = result(k, &err);
	adv_index a;
	int64_t shape[2 * PR_MAX_RANK];
	int pos_b;
	if (err || (err = adv_parse(k, x, &a)))
		return err;
	int r = adv_shape(&a, x, shape, &pos_b);
	if (r > PR_MAX_RANK)
		return prt_kernel_error(k, "the result would have %d dims, more than %d", r, PR_MAX_RANK);
	if ((err = prt_result_shape_check(k, r, shape)) || prt_tensor_numel(o) == 0)
		return err;
	int64_t idx[PR_MAX_RANK] = {0}, src[PR_MAX_RANK];
	do {
		const int64_t *bi = idx + pos_b;   /* the position in B */
		int od = 0;                        /* the next result dim of a plain dim */
		for (int d = 0; d < x->rank; d++) {
			if (od == pos_b)
				od += a.nb;
			if (d < a.n && a.ix[d]) {
				const prt_tensor *t = a.ix[d];
				int64_t off = 0;
				for (int j = 0; j < a.nb; j++)
					off += bi[j] * a.bst[d][j];
				if (!index_load(t, t->data + off * (int64_t)esize(t), x->shape[d], &src[d]))
					return prt_kernel_error(k, "index %lld out of range [0, %lld) for dim %d",
							       (long long)pr_elem_load_i64(t->dtype, t->data + off * (int64_t)esize(t)),
							       (long long)x->shape[d], d);
			} else {
				src[d] = idx[od++];
			}
		}
		memcpy(elem_at(o, idx), elem_at(x, src), esize(x));
	} while (odometer_next(o->rank, o->shape, idx));
	return NULL;
}

/* ---- ops with several results ----------------------------------------------------- */

/* Points element i of the result tuple at x's slice [start, start+len) of dim d. */
static pr_err *split_piece(prt_kctx *k, const prt_tensor *x, int d, int64_t start, int64_t len, int i)
{
	prt_tensor v = *x;
	v.data = x->data + start * x->strides[d] * (int64_t)esize(x);
	v.shape[d] = len;
	k->out->elems[i].kind = PRT_RV_TENSOR;
	k->out->elems[i].t = v;
	return NULL;
}

/* The tuple result must have n elements. */
static pr_err *tuple_check(prt_kctx *k, int64_t n)
{
	if (k->out->kind != PRT_RV_TUPLE)
		return prt_kernel_error(k, "the result must be a tuple of %lld tensors", (long long)n);
	if (k->out->n != n)
		return prt_kernel_error(k, "the result is a tuple of %d; the arguments give %lld pieces",
				       k->out->n, (long long)n);
	return NULL;
}

static pr_err *split_dim(prt_kctx *k, const prt_tensor *x, int at, int *d)
{
	*d = x->rank ? prt_dim(prt_karg_int(k, at, 0), x->rank) : -1;
	if (*d < 0)
		return prt_kernel_error(k, "dim %lld out of range for a tensor of rank %d",
				       (long long)prt_karg_int(k, at, 0), x->rank);
	return NULL;
}

/* split_with_sizes(self, split_sizes, dim=0): pieces of the given sizes. */
pr_err *prt_k_split_with_sizes(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err);
	int64_t sizes[256];
	int d, n;
	if (err || (err = split_dim(k, x, 2, &d)))
		return err;
	if ((n = prt_karg_ints(k, 1, sizes, 256)) < 0)
		return prt_kernel_error(k, "split_sizes must be a list of at most 256 sizes");
	int64_t total = 0;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return prt_kernel_error(k, "split size %d is negative (%lld)", i, (long long)sizes[i]);
		total += sizes[i];
	}
	if (total != x->shape[d])
		return prt_kernel_error(k, "split sizes add up to %lld; dim %d has %lld", (long long)total,
				       d, (long long)x->shape[d]);
	if ((err = tuple_check(k, n)))
		return err;
	for (int i = 0, at = 0; i < n; at += (int)sizes[i], i++)
		split_piece(k, x, d, at, sizes[i], i);
	return NULL;
}

/* split.Tensor(self, split_size, dim=0): pieces of split_size, the last one
 * smaller when the dim does not divide (one empty piece for an empty dim). */
pr_err *prt_k_split(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err);
	int d;
	if (err || (err = split_dim(k, x, 2, &d)))
		return err;
	int64_t size = prt_karg_int(k, 1, 0), len = x->shape[d];
	if (size < 0 || (size == 0 && len != 0))
		return prt_kernel_error(k, "split_size must be positive, not %lld", (long long)size);
	int64_t n = size ? (len + size - 1) / size : 1;
	if (n == 0)
		n = 1;
	if ((err = tuple_check(k, n)))
		return err;
	for (int64_t i = 0; i < n; i++) {
		int64_t at = i * size, piece = len - at < size ? len - at : size;
		split_piece(k, x, d, at, piece, (int)i);
	}
	return NULL;
}

/* unbind.int(self, dim=0): one view per index along dim, without dim. */
pr_err *prt_k_unbind(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = tensor_arg(k, 0, &err);
	int d;
	if (err || (err = split_dim(k, x, 1, &d)) || (err = tuple_check(k, x->shape[d])))
		return err;
	for (int64_t i = 0; i < x->shape[d]; i++) {
		k->out->elems[i].kind = PRT_RV_TENSOR;
		if ((err = prt_select_view(k, x, d, i, &k->out->elems[i].t)))
			return err;
	}
	return NULL;
}
