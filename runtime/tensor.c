/* tensor.c: runtime tensors (a data pointer, dtype, shape, strides) and the
 * strided helpers every host kernel shares: gather to row-major doubles,
 * scatter back, and a broadcasting elementwise copy. Element access goes
 * through pr_elem_load/pr_elem_store (data.h) so that every dtype rounds the
 * way the constant materializer does; the copy moves bytes when the dtypes
 * agree and casts as ATen does when they differ. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "passrun/data.h"
#include "rt.h"

prt_tensor prt_tensor_from_spec(const pr_spec *s, void *data, int dev)
{
	prt_tensor t;
	memset(&t, 0, sizeof t);
	t.data = t.storage = data;
	t.storage_end = data ? t.storage + pr_spec_storage_bytes(s) : NULL;
	t.dtype = s->dtype;
	t.rank = s->rank;
	t.dev = dev;
	memcpy(t.shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
	memcpy(t.strides, pr_spec_strides(s), sizeof(int64_t) * (size_t)s->rank);
	return t;
}

prt_tensor prt_tensor_make(pr_dtype dt, int rank, const int64_t *shape, void *data)
{
	pr_spec s;
	pr_spec_init(&s, dt, rank, shape);
	return prt_tensor_from_spec(&s, data, 0);
}

int64_t prt_tensor_numel(const prt_tensor *t)
{
	return pr_layout_numel(t->rank, t->shape);
}

bool prt_tensor_is_contiguous(const prt_tensor *t)
{
	return pr_layout_is_contiguous(t->rank, t->shape, t->strides);
}

int64_t prt_tensor_span_bytes(const prt_tensor *t)
{
	int64_t last = 0;
	for (int i = 0; i < t->rank; i++) {
		if (t->shape[i] == 0)
			return 0;
		last += (t->shape[i] - 1) * t->strides[i];
	}
	return (last + 1) * (int64_t)pr_dtype_size(t->dtype);
}

/* The least and greatest element offsets t reaches from data (both 0 for a
 * tensor of no elements, *numel 0), or the error: sizes and strides come
 * from programs, so every product and sum is checked. */
static pr_err *element_span(const prt_tensor *t, const char *what, int64_t *numel, int64_t *lo,
			    int64_t *hi)
{
	int64_t n = 1, step;
	*lo = *hi = 0;
	for (int d = 0; d < t->rank; d++) {
		if (t->shape[d] < 0)
			return pr_err_new("%s's dim %d has size %lld; expected sizes >= 0", what, d,
					  (long long)t->shape[d]);
		if (__builtin_mul_overflow(n, t->shape[d], &n))
			return pr_err_new("%s's element count overflows int64", what);
	}
	*numel = n;
	for (int d = 0; n && d < t->rank; d++) {
		int64_t *end = t->strides[d] < 0 ? lo : hi;
		if (__builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &step) ||
		    __builtin_add_overflow(*end, step, end))
			return pr_err_new("%s's extent (sizes times strides) overflows int64", what);
	}
	return NULL;
}

pr_err *prt_tensor_in_storage(const prt_tensor *t, const char *what, const char *where,
			      const char *expected)
{
	int64_t numel = 0, lo, hi;
	pr_err *e = element_span(t, what, &numel, &lo, &hi);
	if (e || numel == 0 || !t->storage_end)
		return e;   /* no element reached, or a storage of unknown size */
	int64_t es = (int64_t)pr_dtype_size(t->dtype), at = t->data - t->storage;
	int64_t cap = t->storage_end - t->storage, first, last;
	if (__builtin_mul_overflow(lo, es, &first) || __builtin_add_overflow(at, first, &first) ||
	    __builtin_add_overflow(hi, 1, &last) || __builtin_mul_overflow(last, es, &last) ||
	    __builtin_add_overflow(at, last, &last) || first < 0 || last > cap)
		return pr_err_new("%s reaches outside %s of %lld bytes (elements %lld to %lld from "
				  "offset %lld bytes); expected %s", what, where, (long long)cap,
				  (long long)lo, (long long)hi, (long long)at, expected);
	return NULL;
}

/* Calls f for every element in row-major order with its storage offset (in
 * elements); the odometer keeps the offset up to date incrementally. */
#define FOR_EACH_OFFSET(t, off, body)                                          \
	do {                                                                   \
		int64_t idx_[PR_MAX_RANK] = {0};                               \
		int64_t n_ = prt_tensor_numel(t), off = 0;                      \
		for (int64_t k_ = 0; k_ < n_; k_++) {                          \
			body;                                                  \
			for (int d_ = (t)->rank - 1; d_ >= 0; d_--) {          \
				off += (t)->strides[d_];                       \
				if (++idx_[d_] < (t)->shape[d_])               \
					break;                                 \
				off -= (t)->strides[d_] * (t)->shape[d_];      \
				idx_[d_] = 0;                                  \
			}                                                      \
		}                                                              \
	} while (0)

/* One element of dtype from at s stored at d as dtype to: the bytes when the
 * dtypes agree, else converted as ATen's casts (kernels_elementwise.h). */
static void cast_elem(pr_dtype to, uint8_t *d, pr_dtype from, const uint8_t *s)
{
	if (to == from)
		memcpy(d, s, pr_dtype_size(to));
	else if (pr_dtype_is_float(from))
		prt_ew_store_f(to, d, pr_elem_load(from, s));
	else
		prt_ew_store_i(to, d, pr_elem_load_i64(from, s));
}

double *prt_tensor_gather(const prt_tensor *t)
{
	int64_t n = prt_tensor_numel(t);
	double *v = pr_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
	size_t es = pr_dtype_size(t->dtype);
	int64_t i = 0;
	FOR_EACH_OFFSET(t, off, v[i++] = pr_elem_load(t->dtype, t->data + off * (int64_t)es));
	return v;
}

void prt_tensor_scatter(prt_tensor *t, const double *v)
{
	size_t es = pr_dtype_size(t->dtype);
	int64_t i = 0;
	FOR_EACH_OFFSET(t, off, pr_elem_store(t->dtype, t->data + off * (int64_t)es, v[i++]));
}

pr_err *prt_tensor_copy(prt_tensor *dst, const prt_tensor *src)
{
	if (src->rank > dst->rank)
		return pr_err_new("cannot copy a rank-%d tensor into a rank-%d one", src->rank, dst->rank);
	/* src seen with dst's shape: broadcast dims get stride 0. */
	prt_tensor b = *dst;
	int lead = dst->rank - src->rank;
	for (int d = 0; d < dst->rank; d++) {
		int sd = d - lead;
		if (sd < 0 || src->shape[sd] == 1) {
			b.strides[d] = 0;
			continue;
		}
		if (src->shape[sd] != dst->shape[d])
			return pr_err_new("shape mismatch in copy: dim %d is %lld, expected %lld", d,
					  (long long)src->shape[sd], (long long)dst->shape[d]);
		b.strides[d] = src->strides[sd];
	}
	b.data = src->data;
	b.dtype = src->dtype;
	size_t ds = pr_dtype_size(dst->dtype);
	if (dst->dtype == src->dtype && prt_tensor_is_contiguous(dst) && prt_tensor_is_contiguous(&b) &&
	    prt_tensor_numel(dst) > 0) {
		memmove(dst->data, src->data, (size_t)prt_tensor_numel(dst) * ds);
		return NULL;
	}
	/* Gathered first (the two may overlap), element by element in src's own
	 * bytes: an i64 beyond 2^53 must not pass through a double. */
	size_t ss = pr_dtype_size(src->dtype);
	int64_t n = prt_tensor_numel(dst), i = 0;
	uint8_t *v = pr_xmalloc(ss * (size_t)(n ? n : 1));
	FOR_EACH_OFFSET(&b, off, memcpy(v + (size_t)i++ * ss, b.data + off * (int64_t)ss, ss));
	i = 0;
	FOR_EACH_OFFSET(dst, off, cast_elem(dst->dtype, dst->data + off * (int64_t)ds, src->dtype,
					    v + (size_t)i++ * ss));
	free(v);
	return NULL;
}

bool prt_bcast_strides(const prt_tensor *src, const prt_tensor *out, int64_t *st)
{
	int lead = out->rank - src->rank;
	if (lead < 0)
		return false;
	for (int d = 0; d < out->rank; d++) {
		int sd = d - lead;
		if (sd < 0 || (src->shape[sd] == 1 && out->shape[d] != 1))
			st[d] = 0;
		else if (src->shape[sd] == out->shape[d])
			st[d] = src->strides[sd];
		else
			return false;
	}
	return true;
}
