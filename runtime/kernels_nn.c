/* kernels_nn.c: host kernels for the layers of convolutional networks:
 * convolution (1-, 2- and 3-d, any stride, padding, dilation and groups,
 * transposed too), batch norm in inference form, max / average /
 * adaptive-average pooling and the hard activations (hardtanh, hardswish,
 * hardsigmoid) and silu.
 *
 * Every kernel follows ATen's semantics for the op's schema (the argument
 * order is the schema's; missing trailing arguments take its defaults). The
 * argument checks are shared helpers (prt_conv_args_get, prt_pool_args_get,
 * prt_bn_args_get, kernels.h) so that a device kernel refuses exactly what the
 * host kernel refuses and computes the same output size.
 *
 * Like the other heavy host kernels these gather their inputs into row-major
 * doubles, compute there with direct loops, and scatter into the result's
 * strides: any input, weight or result layout (channels-last included) and
 * every floating dtype take one path, f16 and bf16 computed in double and
 * rounded once. Spatial dims are normalized to three (conv) or two (pools)
 * by giving the missing leading ones size 1, so the 1-d forms are the 2-d
 * loops with a height of one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static size_t nz(int64_t n) { return n > 0 ? (size_t)n : 1; }

static prt_tensor *need_tensor(prt_kctx *k, int i, const char *what, pr_err **err)
{
	prt_tensor *t = prt_karg_tensor(k, i);
	if (!t && !*err)
		*err = prt_kernel_error(k, "argument %d (%s) must be a tensor", i, what);
	return t;
}

static pr_err *need_result(prt_kctx *k, prt_tensor **out)
{
	prt_rv *r = k->out;
	if (r->kind == PRT_RV_TUPLE && r->n > 0 && r->elems[0].kind == PRT_RV_TENSOR)
		r = &r->elems[0];   /* an op with several results: the first is the output */
	if (r->kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a tensor");
	*out = &r->t;
	return NULL;
}

static bool is_float(pr_dtype t) { return t == PR_F32 || t == PR_F64 || t == PR_F16 || t == PR_BF16; }

/* The result's shape must be `want` (rank n): the program's declared type is
 * checked before anything is written through it. */
static pr_err *check_shape(prt_kctx *k, const prt_tensor *o, int n, const int64_t *want)
{
	bool ok = o->rank == n;
	for (int i = 0; ok && i < n; i++)
		ok = o->shape[i] == want[i];
	if (ok)
		return NULL;
	char buf[256];
	int len = 0;
	for (int i = 0; i < n && len < (int)sizeof buf - 24; i++)
		len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%lld", i ? "," : "",
				(long long)want[i]);
	buf[len] = 0;
	return prt_kernel_error(k, "the result must have shape [%s] for these arguments", buf);
}

/* An int list argument of `n` entries per spatial dim: one entry stands for
 * every dim (ATen's expand_param_if_needed); missing or [] gives dflt. */
static pr_err *spatial_ints(prt_kctx *k, int i, const char *what, int n, int64_t dflt,
			    int64_t *out)
{
	int64_t v[PR_MAX_RANK];
	int c = prt_karg_ints(k, i, v, PR_MAX_RANK);
	if (c < 0 && !prt_karg_is_none(k, i))
		return prt_kernel_error(k, "%s (argument %d) must be a list of ints", what, i);
	if (c > 1 && c != n)
		return prt_kernel_error(k, "%s must have 1 or %d entries, not %d", what, n, c);
	for (int d = 0; d < n; d++)
		out[d] = c <= 0 ? dflt : v[c == 1 ? 0 : d];
	return NULL;
}

/* ---- convolution ----------------------------------------------------------- */

/* x[N, C_in, *in], w[C_out, C_in/groups, *k] (transposed: w[C_in, C_out/groups,
 * *k]): normalized to 3 spatial dims. */
pr_err *prt_conv_args_get(prt_kctx *k, prt_conv_args *a)
{
	pr_err *err = NULL;
	memset(a, 0, sizeof *a);
	a->x = need_tensor(k, 0, "input", &err);
	a->w = need_tensor(k, 1, "weight", &err);
	if (err)
		return err;
	a->b = prt_karg_tensor(k, 2);
	if (!a->b && !prt_karg_is_none(k, 2))
		return prt_kernel_error(k, "bias must be a tensor or none");
	int r = a->w->rank;
	if (r < 3 || r > 5 || a->x->rank != r)
		return prt_kernel_error(k, "input and weight must both have rank 3, 4 or 5 "
				       "(batch, channels, 1 to 3 spatial dims); got %d and %d",
				       a->x->rank, r);
	int ns = a->nsp = r - 2;
	int64_t st[3], pad[3], dil[3], opad[3];
	if ((err = spatial_ints(k, 3, "stride", ns, 1, st)) ||
	    (err = spatial_ints(k, 4, "padding", ns, 0, pad)) ||
	    (err = spatial_ints(k, 5, "dilation", ns, 1, dil)) ||
	    (err = spatial_ints(k, 7, "output_padding", ns, 0, opad)))
		return err;
	a->transposed = prt_karg_int(k, 6, 0) != 0;
	a->groups = prt_karg_int(k, 8, 1);
	for (int d = 0; d < 3; d++) {
		int s = d - (3 - ns);   /* the source dim, < 0 for a padded one */
		a->stride[d] = s < 0 ? 1 : st[s];
		a->pad[d] = s < 0 ? 0 : pad[s];
		a->dil[d] = s < 0 ? 1 : dil[s];
		a->opad[d] = s < 0 ? 0 : opad[s];
		a->in[d] = s < 0 ? 1 : a->x->shape[2 + s];
		a->k[d] = s < 0 ? 1 : a->w->shape[2 + s];
		if (a->stride[d] < 1 || a->dil[d] < 1 || a->pad[d] < 0 || a->opad[d] < 0)
			return prt_kernel_error(k, "stride and dilation must be positive, padding and "
					       "output_padding not negative");
		if (a->transposed && a->opad[d] >= a->stride[d] && a->opad[d] >= a->dil[d])
			return prt_kernel_error(k, "output_padding must be smaller than stride or dilation");
	}
	if (a->groups < 1)
		return prt_kernel_error(k, "groups must be positive, not %lld", (long long)a->groups);
	a->n = a->x->shape[0];
	a->cin = a->x->shape[1];
	int64_t wc = a->transposed ? a->w->shape[0] : a->w->shape[1] * a->groups;
	a->cout = a->transposed ? a->w->shape[1] * a->groups : a->w->shape[0];
	if (wc != a->cin || a->cin % a->groups || a->cout % a->groups)
		return prt_kernel_error(k, "input has %lld channels; a weight of [%lld,%lld,...] with "
				       "groups=%lld %s", (long long)a->cin, (long long)a->w->shape[0],
				       (long long)a->w->shape[1], (long long)a->groups,
				       a->transposed ? "(transposed) expects C_in = weight.shape[0]"
						     : "expects C_in = weight.shape[1] * groups");
	if (a->b && prt_tensor_numel(a->b) != a->cout)
		return prt_kernel_error(k, "bias must have %lld elements (the output channels)",
				       (long long)a->cout);
	for (int d = 0; d < 3; d++) {
		int64_t span = a->dil[d] * (a->k[d] - 1) + 1;
		a->out[d] = a->transposed ? (a->in[d] - 1) * a->stride[d] - 2 * a->pad[d] + span + a->opad[d]
					  : (a->in[d] + 2 * a->pad[d] - span) / a->stride[d] + 1;
		if (a->out[d] < 1 || (!a->transposed && a->in[d] + 2 * a->pad[d] < span))
			return prt_kernel_error(k, "the kernel (%lld with dilation %lld) is larger than the "
					       "padded input (%lld)", (long long)a->k[d],
					       (long long)a->dil[d], (long long)(a->in[d] + 2 * a->pad[d]));
	}
	return NULL;
}

/* Index of element (c, z, y, x) of image n in a row-major [N, C, D, H, W]. */
#define AT5(n, c, z, y, x, C, D, H, W) ((((((n) * (C) + (c)) * (D) + (z)) * (H) + (y)) * (W) + (x)))

/* Adds w * x[in plane] to every output position of one (output channel, kernel
 * tap) pair: the taps loop outside so the inner loop walks a row. */
static void conv_tap(const prt_conv_args *a, const double *xp, double wv, const int64_t *tap,
		     double *op)
{
	const int64_t *s = a->stride, *p = a->pad, *dl = a->dil, *in = a->in, *out = a->out;
	for (int64_t oz = 0; oz < out[0]; oz++) {
		int64_t iz = oz * s[0] - p[0] + tap[0] * dl[0];
		if (iz < 0 || iz >= in[0])
			continue;
		for (int64_t oy = 0; oy < out[1]; oy++) {
			int64_t iy = oy * s[1] - p[1] + tap[1] * dl[1];
			if (iy < 0 || iy >= in[1])
				continue;
			const double *xr = xp + (iz * in[1] + iy) * in[2];
			double *orow = op + (oz * out[1] + oy) * out[2];
			for (int64_t ox = 0; ox < out[2]; ox++) {
				int64_t ix = ox * s[2] - p[2] + tap[2] * dl[2];
				if (ix >= 0 && ix < in[2])
					orow[ox] += wv * xr[ix];
			}
		}
	}
}

/* The transposed form: every input position scatters into the output. */
static void conv_tap_transposed(const prt_conv_args *a, const double *xp, double wv,
				const int64_t *tap, double *op)
{
	const int64_t *s = a->stride, *p = a->pad, *dl = a->dil, *in = a->in, *out = a->out;
	for (int64_t iz = 0; iz < in[0]; iz++) {
		int64_t oz = iz * s[0] - p[0] + tap[0] * dl[0];
		if (oz < 0 || oz >= out[0])
			continue;
		for (int64_t iy = 0; iy < in[1]; iy++) {
			int64_t oy = iy * s[1] - p[1] + tap[1] * dl[1];
			if (oy < 0 || oy >= out[1])
				continue;
			const double *xr = xp + (iz * in[1] + iy) * in[2];
			double *orow = op + (oz * out[1] + oy) * out[2];
			for (int64_t ix = 0; ix < in[2]; ix++) {
				int64_t ox = ix * s[2] - p[2] + tap[2] * dl[2];
				if (ox >= 0 && ox < out[2])
					orow[ox] += wv * xr[ix];
			}
		}
	}
}

/* out[n, oc] += sum over the group's input channels and the kernel taps. */
static void conv_channel(const prt_conv_args *a, const double *x, const double *w, int64_t n,
			 int64_t oc, double *op)
{
	int64_t cig = a->cin / a->groups, cog = a->cout / a->groups, g = oc / cog;
	int64_t in_plane = a->in[0] * a->in[1] * a->in[2], taps = a->k[0] * a->k[1] * a->k[2];
	for (int64_t ic = 0; ic < cig; ic++) {
		const double *xp = x + ((n * a->cin) + g * cig + ic) * in_plane;
		/* w[oc, ic, taps] or, transposed, w[g*cig + ic, oc - g*cog, taps] */
		const double *wp = a->transposed ? w + ((g * cig + ic) * cog + oc - g * cog) * taps
						 : w + (oc * cig + ic) * taps;
		for (int64_t t = 0; t < taps; t++) {
			int64_t tap[3] = {t / (a->k[1] * a->k[2]), t / a->k[2] % a->k[1], t % a->k[2]};
			if (a->transposed)
				conv_tap_transposed(a, xp, wp[t], tap, op);
			else
				conv_tap(a, xp, wp[t], tap, op);
		}
	}
}

/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups) */
pr_err *prt_k_convolution(prt_kctx *k)
{
	prt_conv_args a;
	prt_tensor *o = NULL;
	pr_err *err = prt_conv_args_get(k, &a);
	if (err || (err = need_result(k, &o)))
		return err;
	if (!is_float(a.x->dtype) || !is_float(a.w->dtype))
		return prt_kernel_error(k, "convolution takes floating-point tensors");
	int64_t want[5] = {a.n, a.cout};
	for (int d = 0; d < a.nsp; d++)
		want[2 + d] = a.out[3 - a.nsp + d];
	if ((err = check_shape(k, o, a.nsp + 2, want)))
		return err;
	int64_t plane = a.out[0] * a.out[1] * a.out[2];
	double *x = prt_tensor_gather(a.x), *w = prt_tensor_gather(a.w);
	double *b = a.b ? prt_tensor_gather(a.b) : NULL;
	double *y = pr_xmalloc(sizeof(double) * nz(a.n * a.cout * plane));
	for (int64_t n = 0; n < a.n; n++)
		for (int64_t oc = 0; oc < a.cout; oc++) {
			double *op = y + (n * a.cout + oc) * plane;
			for (int64_t i = 0; i < plane; i++)
				op[i] = b ? b[oc] : 0;
			conv_channel(&a, x, w, n, oc, op);
		}
	prt_tensor_scatter(o, y);
	free(x), free(w), free(b), free(y);
	return NULL;
}

/* ---- batch norm --------------------------------------------------------------- */

pr_err *prt_bn_args_get(prt_kctx *k, bool legit, prt_bn_args *a)
{
	pr_err *err = NULL;
	memset(a, 0, sizeof *a);
	a->x = need_tensor(k, 0, "input", &err);
	if (err)
		return err;
	a->w = prt_karg_tensor(k, 1);
	a->b = prt_karg_tensor(k, 2);
	a->mean = prt_karg_tensor(k, 3);
	a->var = prt_karg_tensor(k, 4);
	bool training = legit ? false : prt_karg_int(k, 5, 0) != 0;
	a->eps = prt_karg_float(k, legit ? 6 : 7, 1e-5);
	if (training || !a->mean || !a->var)
		return prt_kernel_error(k, "only inference batch norm is supported (training=false, "
				       "running_mean and running_var given): export the model in eval()");
	if (a->x->rank < 2)
		return prt_kernel_error(k, "input must have rank 2 or more (batch, channels, ...), not %d",
				       a->x->rank);
	a->c = a->x->shape[1];
	const prt_tensor *per[4] = {a->w, a->b, a->mean, a->var};
	for (int i = 0; i < 4; i++)
		if (per[i] && prt_tensor_numel(per[i]) != a->c)
			return prt_kernel_error(k, "weight, bias, running_mean and running_var must have "
					       "%lld elements (the channels)", (long long)a->c);
	if (!is_float(a->x->dtype))
		return prt_kernel_error(k, "batch norm takes a floating-point input");
	return NULL;
}

/* y = (x - mean) / sqrt(var + eps) * weight + bias, per channel (dim 1). */
static pr_err *bn_impl(prt_kctx *k, bool legit)
{
	prt_bn_args a;
	prt_tensor *o = NULL;
	pr_err *err = prt_bn_args_get(k, legit, &a);
	if (err || (err = need_result(k, &o)) || (err = check_shape(k, o, a.x->rank, a.x->shape)))
		return err;
	int64_t inner = 1, n = prt_tensor_numel(a.x);
	for (int d = 2; d < a.x->rank; d++)
		inner *= a.x->shape[d];
	double *x = prt_tensor_gather(a.x), *m = prt_tensor_gather(a.mean), *v = prt_tensor_gather(a.var);
	double *w = a.w ? prt_tensor_gather(a.w) : NULL, *b = a.b ? prt_tensor_gather(a.b) : NULL;
	for (int64_t i = 0; i < n; i++) {
		int64_t c = inner ? i / inner % a.c : 0;
		double inv = 1 / sqrt(v[c] + a.eps);
		x[i] = (x[i] - m[c]) * inv * (w ? w[c] : 1) + (b ? b[c] : 0);
	}
	prt_tensor_scatter(o, x);
	free(x), free(m), free(v), free(w), free(b);
	return NULL;
}

/* batch_norm(input, weight?, bias?, running_mean?, running_var?, training,
 * momentum, eps, cudnn_enabled) */
pr_err *prt_k_batch_norm(prt_kctx *k) { return bn_impl(k, false); }
/* _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean,
 * running_var, momentum, eps) -> (out, save_mean, save_rstd): the two saved
 * statistics are empty in inference; only the output is written. */
pr_err *prt_k_native_batch_norm_legit_no_training(prt_kctx *k) { return bn_impl(k, true); }

/* ---- pooling --------------------------------------------------------------- */

/* ATen's pooling_output_shape: floor or ceil division, and with ceil_mode the
 * last window must start inside the input or its left padding. */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, bool ceil)
{
	int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? s - 1 : 0);
	int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
	if (ceil && (out - 1) * s >= in + pad)
		out--;
	return out;
}

/* x[..., C, *in] with 1 or 2 spatial dims (nsp): the arguments after self are
 * kernel_size, stride, padding, then max: dilation, ceil_mode; avg:
 * ceil_mode, count_include_pad, divisor_override. Normalized to 2 dims. */
pr_err *prt_pool_args_get(prt_kctx *k, int nsp, bool avg, prt_pool_args *a)
{
	pr_err *err = NULL;
	memset(a, 0, sizeof *a);
	a->x = need_tensor(k, 0, "self", &err);
	if (err)
		return err;
	if (a->x->rank != nsp + 1 && a->x->rank != nsp + 2)
		return prt_kernel_error(k, "self must have rank %d or %d, not %d", nsp + 1, nsp + 2,
				       a->x->rank);
	int64_t ks[2], st[2], pad[2], dil[2] = {1, 1};
	if ((err = spatial_ints(k, 1, "kernel_size", nsp, 0, ks)) ||
	    (err = spatial_ints(k, 3, "padding", nsp, 0, pad)) ||
	    (!avg && (err = spatial_ints(k, 4, "dilation", nsp, 1, dil))))
		return err;
	int64_t sv[PR_MAX_RANK];
	int sc = prt_karg_ints(k, 2, sv, PR_MAX_RANK);
	if ((err = spatial_ints(k, 2, "stride", nsp, 0, st)))
		return err;
	a->ceil_mode = prt_karg_int(k, avg ? 4 : 5, 0) != 0;
	a->count_include_pad = avg && prt_karg_int(k, 5, 1) != 0;
	a->divisor = avg && nsp == 2 ? prt_karg_int(k, 6, 0) : 0;
	if (avg && nsp == 2 && !prt_karg_is_none(k, 6) && a->divisor == 0)
		return prt_kernel_error(k, "divisor_override must not be zero");
	int lead = a->x->rank - nsp;
	a->planes = 1;
	for (int d = 0; d < lead; d++)
		a->planes *= a->x->shape[d];
	for (int d = 0; d < 2; d++) {
		int s = d - (2 - nsp);
		a->kernel[d] = s < 0 ? 1 : ks[s];
		a->stride[d] = s < 0 ? 1 : sc <= 0 ? ks[s] : st[s];   /* stride=[]: the kernel size */
		a->pad[d] = s < 0 ? 0 : pad[s];
		a->dil[d] = s < 0 ? 1 : dil[s];
		a->in[d] = s < 0 ? 1 : a->x->shape[lead + s];
		if (a->kernel[d] < 1 || a->stride[d] < 1 || a->dil[d] < 1 || a->pad[d] < 0)
			return prt_kernel_error(k, "kernel_size, stride and dilation must be positive and "
					       "padding not negative");
		if (a->pad[d] > a->kernel[d] / 2)
			return prt_kernel_error(k, "padding (%lld) must be at most half the kernel size "
					       "(%lld)", (long long)a->pad[d], (long long)a->kernel[d]);
		a->out[d] = pool_out(a->in[d], a->kernel[d], a->pad[d], a->stride[d], a->dil[d],
				     a->ceil_mode);
		if (a->out[d] < 1)
			return prt_kernel_error(k, "the output would be empty: input %lld, kernel %lld, "
					       "padding %lld", (long long)a->in[d],
					       (long long)a->kernel[d], (long long)a->pad[d]);
	}
	return NULL;
}

/* The result shape: self's leading dims, then the pooled spatial dims. */
static pr_err *pool_check(prt_kctx *k, const prt_tensor *x, int nsp, const int64_t *out2,
			  const prt_tensor *o)
{
	int64_t want[PR_MAX_RANK];
	int lead = x->rank - nsp;
	for (int d = 0; d < lead; d++)
		want[d] = x->shape[d];
	for (int d = 0; d < nsp; d++)
		want[lead + d] = out2[2 - nsp + d];
	return check_shape(k, o, x->rank, want);
}

/* The max of one window and its flat index in the plane; as in ATen a NaN
 * wins, and the last NaN's index is kept. */
static double max_window(const prt_pool_args *a, const double *xp, int64_t oy, int64_t ox,
			 int64_t *arg)
{
	double best = -INFINITY;
	int64_t at = -1;
	for (int64_t i = 0; i < a->kernel[0]; i++) {
		int64_t iy = oy * a->stride[0] - a->pad[0] + i * a->dil[0];
		for (int64_t j = 0; iy >= 0 && iy < a->in[0] && j < a->kernel[1]; j++) {
			int64_t ix = ox * a->stride[1] - a->pad[1] + j * a->dil[1];
			if (ix < 0 || ix >= a->in[1])
				continue;
			double v = xp[iy * a->in[1] + ix];
			if (at < 0 || v > best || isnan(v))
				best = v, at = iy * a->in[1] + ix;
		}
	}
	*arg = at;
	return best;
}

/* ATen's avg_pool2d: the window is clipped to the padded input for the
 * count_include_pad divisor, and to the input for the sum. */
static double avg_window(const prt_pool_args *a, const double *xp, int64_t oy, int64_t ox)
{
	int64_t y0 = oy * a->stride[0] - a->pad[0], x0 = ox * a->stride[1] - a->pad[1];
	int64_t y1 = y0 + a->kernel[0], x1 = x0 + a->kernel[1];
	if (y1 > a->in[0] + a->pad[0])
		y1 = a->in[0] + a->pad[0];
	if (x1 > a->in[1] + a->pad[1])
		x1 = a->in[1] + a->pad[1];
	int64_t padded = (y1 - y0) * (x1 - x0);
	y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
	y1 = y1 > a->in[0] ? a->in[0] : y1, x1 = x1 > a->in[1] ? a->in[1] : x1;
	double s = 0;
	for (int64_t y = y0; y < y1; y++)
		for (int64_t x = x0; x < x1; x++)
			s += xp[y * a->in[1] + x];
	int64_t div = a->divisor ? a->divisor : a->count_include_pad ? padded : (y1 - y0) * (x1 - x0);
	return div ? s / (double)div : NAN;
}

/* indices (when not NULL) gets each max's flat index in its input plane. */
static pr_err *pool_impl(prt_kctx *k, int nsp, bool avg, prt_tensor *indices)
{
	prt_pool_args a;
	prt_tensor *o = NULL;
	pr_err *err = prt_pool_args_get(k, nsp, avg, &a);
	if (err || (err = need_result(k, &o)) || (err = pool_check(k, a.x, nsp, a.out, o)) ||
	    (indices && (err = pool_check(k, a.x, nsp, a.out, indices))))
		return err;
	if (avg && !is_float(a.x->dtype))
		return prt_kernel_error(k, "average pooling takes a floating-point input");
	int64_t in_plane = a.in[0] * a.in[1], out_plane = a.out[0] * a.out[1];
	double *x = prt_tensor_gather(a.x), *y = pr_xmalloc(sizeof(double) * nz(a.planes * out_plane));
	double *ix = indices ? pr_xmalloc(sizeof(double) * nz(a.planes * out_plane)) : NULL;
	for (int64_t p = 0; p < a.planes; p++)
		for (int64_t oy = 0; oy < a.out[0]; oy++)
			for (int64_t ox = 0; ox < a.out[1]; ox++) {
				int64_t at = -1, i = p * out_plane + oy * a.out[1] + ox;
				y[i] = avg ? avg_window(&a, x + p * in_plane, oy, ox)
					   : max_window(&a, x + p * in_plane, oy, ox, &at);
				if (ix)
					ix[i] = (double)at;
			}
	prt_tensor_scatter(o, y);
	if (ix)
		prt_tensor_scatter(indices, ix);
	free(x), free(y), free(ix);
	return NULL;
}

/* max_pool1d / max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) */
pr_err *prt_k_max_pool1d(prt_kctx *k) { return pool_impl(k, 1, false, NULL); }
pr_err *prt_k_max_pool2d(prt_kctx *k) { return pool_impl(k, 2, false, NULL); }

/* max_pool2d_with_indices(...) -> (values, indices): indices are flat in H*W. */
pr_err *prt_k_max_pool2d_with_indices(prt_kctx *k)
{
	prt_rv *r = k->out;
	if (r->kind != PRT_RV_TUPLE || r->n != 2 || r->elems[1].kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a (values, indices) tuple");
	if (r->elems[1].t.dtype != PR_I64)
		return prt_kernel_error(k, "the indices must be i64");
	return pool_impl(k, 2, false, &r->elems[1].t);
}

/* avg_pool1d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
 * count_include_pad=True); avg_pool2d also takes divisor_override=None. */
pr_err *prt_k_avg_pool1d(prt_kctx *k) { return pool_impl(k, 1, true, NULL); }
pr_err *prt_k_avg_pool2d(prt_kctx *k) { return pool_impl(k, 2, true, NULL); }

/* Adaptive average pooling: output cell o of `out` over an input of `in`
 * averages [floor(o*in/out), ceil((o+1)*in/out)). */
static int64_t ad_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
static int64_t ad_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

static pr_err *adaptive_impl(prt_kctx *k, int nsp)
{
	pr_err *err = NULL;
	prt_tensor *xt = need_tensor(k, 0, "self", &err), *o = NULL;
	if (err || (err = need_result(k, &o)))
		return err;
	if (xt->rank != nsp + 1 && xt->rank != nsp + 2)
		return prt_kernel_error(k, "self must have rank %d or %d, not %d", nsp + 1, nsp + 2,
				       xt->rank);
	if (!is_float(xt->dtype))
		return prt_kernel_error(k, "adaptive average pooling takes a floating-point input");
	int64_t os[2], in[2] = {1, 1}, out[2] = {1, 1}, planes = 1;
	if ((err = spatial_ints(k, 1, "output_size", nsp, 0, os)))
		return err;
	int lead = xt->rank - nsp;
	for (int d = 0; d < lead; d++)
		planes *= xt->shape[d];
	for (int d = 0; d < nsp; d++) {
		in[2 - nsp + d] = xt->shape[lead + d];
		out[2 - nsp + d] = os[d];
		if (os[d] < 1 || xt->shape[lead + d] < 1)
			return prt_kernel_error(k, "output_size and the input's spatial dims must be positive");
	}
	if ((err = pool_check(k, xt, nsp, out, o)))
		return err;
	double *x = prt_tensor_gather(xt), *y = pr_xmalloc(sizeof(double) * nz(planes * out[0] * out[1]));
	double *yp = y;
	for (int64_t p = 0; p < planes; p++) {
		const double *xp = x + p * in[0] * in[1];
		for (int64_t oy = 0; oy < out[0]; oy++)
			for (int64_t ox = 0; ox < out[1]; ox++) {
				int64_t y0 = ad_start(oy, in[0], out[0]), y1 = ad_end(oy, in[0], out[0]);
				int64_t x0 = ad_start(ox, in[1], out[1]), x1 = ad_end(ox, in[1], out[1]);
				double s = 0;
				for (int64_t yy = y0; yy < y1; yy++)
					for (int64_t xx = x0; xx < x1; xx++)
						s += xp[yy * in[1] + xx];
				*yp++ = s / (double)((y1 - y0) * (x1 - x0));
			}
	}
	prt_tensor_scatter(o, y);
	free(x), free(y);
	return NULL;
}

/* adaptive_avg_pool1d / _adaptive_avg_pool2d / adaptive_avg_pool2d(self, output_size) */
pr_err *prt_k_adaptive_avg_pool1d(prt_kctx *k) { return adaptive_impl(k, 1); }
pr_err *prt_k_adaptive_avg_pool2d(prt_kctx *k) { return adaptive_impl(k, 2); }

/* ---- activations ----------------------------------------------------------- */

/* Comparisons, not fmin/fmax, so that NaN stays NaN as in ATen's clamp. */
static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

typedef enum nn_act { ACT_HARDTANH, ACT_HARDSWISH, ACT_HARDSIGMOID, ACT_SILU } nn_act;

static double act_apply(nn_act f, double v, double lo, double hi)
{
	switch (f) {
	case ACT_HARDTANH: return clampd(v, lo, hi);
	case ACT_HARDSWISH: return v * clampd(v + 3, 0, 6) / 6;
	case ACT_HARDSIGMOID: return clampd(v + 3, 0, 6) / 6;
	case ACT_SILU: return v / (1 + exp(-v));
	}
	return v;
}

/* out = f(self): same shape; the in-place forms have out aliasing self (the
 * values are gathered before anything is written). */
static pr_err *act_impl(prt_kctx *k, nn_act f)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, "self", &err), *o = NULL;
	if (err || (err = need_result(k, &o)) || (err = check_shape(k, o, x->rank, x->shape)))
		return err;
	if (f != ACT_HARDTANH && !is_float(x->dtype))
		return prt_kernel_error(k, "this activation takes a floating-point input");
	double lo = prt_karg_float(k, 1, -1), hi = prt_karg_float(k, 2, 1);
	if (f == ACT_HARDTANH && lo > hi)
		return prt_kernel_error(k, "min_val (%g) must not be greater than max_val (%g)", lo, hi);
	int64_t n = prt_tensor_numel(x);
	double *v = prt_tensor_gather(x);
	for (int64_t i = 0; i < n; i++)
		v[i] = act_apply(f, v[i], lo, hi);
	prt_tensor_scatter(o, v);
	free(v);
	return NULL;
}

/* hardtanh(self, min_val=-1, max_val=1) and hardtanh_ */
pr_err *prt_k_hardtanh(prt_kctx *k) { return act_impl(k, ACT_HARDTANH); }
/* hardswish(self) = self * relu6(self + 3) / 6, and hardswish_ */
pr_err *prt_k_hardswish(prt_kctx *k) { return act_impl(k, ACT_HARDSWISH); }
/* hardsigmoid(self) = relu6(self + 3) / 6, and hardsigmoid_ */
pr_err *prt_k_hardsigmoid(prt_kctx *k) { return act_impl(k, ACT_HARDSIGMOID); }
/* silu(self) = self * sigmoid(self), and silu_ */
pr_err *prt_k_silu(prt_kctx *k) { return act_impl(k, ACT_SILU); }
