/* kernels_staged.c: the fallback for device work no CUDA kernel does: copy
 * each device tensor argument to the host, run the op's host kernel there,
 * and copy back what it wrote (the result, every tensor of a tuple result,
 * and every argument the schema marks Tensor(a!)). Slow but exact, and it shares the host kernel, so a fix
 * lands once. These transfers are the kernel's own, not copy nodes, so they
 * are not counted.
 *
 * What still goes through it:
 *   - every op of the host registry that reads elements and has no entry in
 *     kernels_cuda.cu (kernel_registry.c installs it; today there is none,
 *     which tests/runtime/test_device_kernels.c checks);
 *   - softmax, sum / mean, layer_norm and rms_norm on tensors that are not
 *     f32, and embedding, index_select and index_put_ on data that is not
 *     f32 or with indices that are not i64 / i32 (their CUDA kernels call it);
 *   - the kernels of kernels_cuda_nn.cu on the arguments they do not take
 *     (other dtypes, transposed or 3-d convolution, arguments the host
 *     kernel refuses: it then reports them). */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

typedef struct shadow {
	prt_tensor *t;          /* the device tensor, redirected to host memory */
	prt_tensor saved;
	uint8_t *host;
	int64_t bytes;
} shadow;

/* Host copy of the storage range [storage, data + span) of t. */
static pr_err *shadow_in(prt_kctx *k, prt_tensor *t, shadow *s, bool load)
{
	int64_t off = t->data - t->storage;
	s->t = t;
	s->saved = *t;
	s->bytes = off + prt_tensor_span_bytes(t);
	s->host = pr_xmalloc((size_t)(s->bytes ? s->bytes : 1));
	pr_err *err = load ? prt_mem_copy(k->devs, 0, s->host, t->dev, t->storage, s->bytes, false) : NULL;
	t->storage = s->host;
	t->storage_end = s->host + s->bytes;
	t->data = s->host + off;
	t->dev = 0;
	return err;
}

static pr_err *shadow_out(prt_kctx *k, shadow *s, bool store)
{
	pr_err *err = store ? prt_mem_copy(k->devs, s->saved.dev, s->saved.storage, 0, s->host,
					  s->bytes, false)
			    : NULL;
	prt_tensor now = *s->t;
	*s->t = s->saved;
	/* A view result keeps the kernel's shape/strides over the device storage. */
	s->t->rank = now.rank;
	memcpy(s->t->shape, now.shape, sizeof now.shape);
	memcpy(s->t->strides, now.strides, sizeof now.strides);
	s->t->data = s->saved.storage + (now.data - now.storage);
	free(s->host);
	return err;
}

/* The results a kernel writes that live on a device: the result, or each
 * tensor of a tuple (batch norm's output and statistics, a max pool's
 * values and indices), redirected to host memory (not loaded: the kernel
 * writes them whole). An aliasing result is its base's, shadowed already. */
enum { PRT_MAX_OUTS = 16 };

static pr_err *shadow_results(prt_kctx *k, shadow *outs, int *n)
{
	prt_rv *r = k->out;
	int m = r->kind == PRT_RV_TUPLE ? r->n : 1;
	if (k->out_alias)
		return NULL;
	for (int i = 0; i < m; i++) {
		prt_rv *e = r->kind == PRT_RV_TUPLE ? &r->elems[i] : r;
		if (e->kind != PRT_RV_TENSOR || e->t.dev == 0)
			continue;
		if (*n == PRT_MAX_OUTS)
			return prt_kernel_error(k, "too many results to stage");
		pr_err *err = shadow_in(k, &e->t, &outs[(*n)++], false);
		if (err)
			return err;
	}
	return NULL;
}

pr_err *prt_k_staged(prt_kctx *k)
{
	const pr_schema *op = k->node->of_kind.schema;   /* the op this kernel runs */
	const prt_kernel *kern = prt_kernel_find(op->full_name);
	shadow sh[64];
	bool written[64];
	int n = 0;
	pr_err *err = NULL;
	for (int i = 0; i < k->n_args && !err; i++) {
		prt_karg *a = &k->args[i];
		int m = a->kind == PR_ARG_LIST ? a->n : 1;
		for (int j = 0; j < m && !err; j++) {
			prt_karg *it = a->kind == PR_ARG_LIST ? &a->items[j] : a;
			if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR || it->v->t.dev == 0)
				continue;
			if (n == 64)
				return prt_kernel_error(k, "too many tensor arguments to stage");
			written[n] = pr_schema_arg_writes(op, i);
			err = shadow_in(k, &it->v->t, &sh[n++], true);
		}
	}
	int ai = k->out_alias ? pr_node_alias_arg(k->node, 0) : -1;
	prt_tensor *base = ai >= 0 && ai < k->n_args && k->args[ai].kind == PR_ARG_VALUE &&
				  k->args[ai].v->kind == PRT_RV_TENSOR ? &k->args[ai].v->t : NULL;
	shadow outs[PRT_MAX_OUTS];
	int n_outs = 0;
	if (!err)
		err = shadow_results(k, outs, &n_outs);
	if (!err && base)
		k->out->t = *base;   /* the aliasing result starts as its (shadowed) base */
	if (!err)
		err = kern->host(k);
	prt_tensor r = k->out->t;
	int64_t roff = r.storage ? r.data - r.storage : 0;
	while (n_outs-- > 0) {
		pr_err *e2 = shadow_out(k, &outs[n_outs], !err);
		if (e2 && !err)
			err = e2;
		else if (e2)
			pr_err_free(e2);
	}
	while (n-- > 0) {
		pr_err *e2 = shadow_out(k, &sh[n], !err && written[n]);
		if (e2 && !err)
			err = e2;
		else if (e2)
			pr_err_free(e2);
	}
	/* The aliasing result, computed over the shadow, is moved back over the
	 * base's device storage (same offset, the kernel's shape and strides). */
	if (base && r.dev == 0 && r.storage) {
		k->out->t = r;
		k->out->t.storage = base->storage;
		k->out->t.storage_end = base->storage_end;
		k->out->t.data = base->storage + roff;
		k->out->t.dev = base->dev;
	}
	return err;
}
