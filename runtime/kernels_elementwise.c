/* kernels_elementwise.c: elementwise ops with ATen's dtype semantics: the
 * comparisons, logical and bitwise ops, sqrt, rsqrt, pow, where, masked_fill,
 * _to_copy, maximum, minimum, clamp, round, and add/sub/mul/div/neg on
 * anything but all-f32 operands.
 *
 * A kernel first makes a plan (prt_ew_plan_get): its operands (tensors seen
 * with the result's shape through broadcast strides, or numbers), the
 * compute dtype torch.result_type gives them (tensors with dimensions
 * outrank zero-dim tensors, which outrank numbers, unless a lower rank is of
 * a higher category: bool < integer < float), and ATen's refusals (sub or
 * neg on bool, a float alpha for integers, bitwise ops on floats, a result
 * type the result's dtype cannot hold). The plan is all a device needs: the
 * host runs it here, one element at a time through the functions of
 * kernels_elementwise.h, with an odometer over the result's shape. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "kernels_elementwise.h"
#include "passrun/data.h"

/* ---- type promotion ----------------------------------------------------- */

static bool is_int(pr_dtype t) { return prt_ew_domain_of(t) == PRT_EWD_INT; }
static bool is_float(pr_dtype t) { return prt_ew_domain_of(t) == PRT_EWD_FLOAT; }

static int int_bits(pr_dtype t)
{
	switch (t) {
	case PR_U8: case PR_I8: return 8;
	case PR_I16: return 16;
	case PR_I32: return 32;
	default: return 64;
	}
}

static int float_rank(pr_dtype t)
{
	return t == PR_F64 ? 3 : t == PR_F32 ? 2 : 1;   /* f16 and bf16 share 1 */
}

pr_dtype prt_ew_promote(pr_dtype a, pr_dtype b)
{
	if (a == b || b == PR_BOOL)
		return a;
	if (a == PR_BOOL)
		return b;
	if (is_float(a) != is_float(b))
		return is_float(a) ? a : b;
	if (is_float(a)) {
		if (float_rank(a) == float_rank(b))
			return PR_F32;   /* f16 with bf16 */
		return float_rank(a) > float_rank(b) ? a : b;
	}
	if ((a == PR_U8) != (b == PR_U8)) {   /* u8 with a signed type */
		pr_dtype s = a == PR_U8 ? b : a;
		return s == PR_I8 ? PR_I16 : s;
	}
	return int_bits(a) >= int_bits(b) ? a : b;
}

#define UNDEF PR_DTYPE_COUNT

static pr_dtype promote_defined(pr_dtype a, pr_dtype b)
{
	return a == UNDEF ? b : b == UNDEF ? a : prt_ew_promote(a, b);
}

/* c10's combine_categories: the lower-priority type counts only when it is of
 * a higher category (or higher is bool). */
static pr_dtype combine(pr_dtype higher, pr_dtype lower)
{
	if (higher != UNDEF && is_float(higher))
		return higher;
	if (higher == PR_BOOL || (lower != UNDEF && is_float(lower)))
		return promote_defined(higher, lower);
	return higher != UNDEF ? higher : lower;
}

pr_dtype prt_ew_result_type(const prt_ew_operand *x, int n)
{
	pr_dtype st[3] = {UNDEF, UNDEF, UNDEF};   /* dims, zero-dim, numbers */
	for (int i = 0; i < n; i++) {
		int prio = !x[i].t ? 2 : x[i].t->rank == 0 ? 1 : 0;
		pr_dtype t = x[i].dtype;
		if (prio == 2 && is_float(t))
			t = PR_F32;   /* a Python float counts as the default dtype */
		st[prio] = promote_defined(st[prio], t);
	}
	pr_dtype r = combine(st[0], combine(st[1], st[2]));
	return r == UNDEF ? PR_F32 : r;
}

/* ---- operands ------------------------------------------------------------ */

/* Argument i as an operand: a tensor, or a number (int -> i64, float -> f64,
 * bool -> bool). */
static pr_err *operand_get(prt_kctx *k, int i, prt_ew_operand *x)
{
	memset(x, 0, sizeof *x);
	prt_karg *a = i < k->n_args ? &k->args[i] : NULL;
	if (!a || a->kind == PR_ARG_NONE)
		return prt_kernel_error(k, "argument %d must be a tensor or a number", i);
	if (a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_TENSOR) {
		x->t = &a->v->t;
		x->dtype = x->t->dtype;
		return NULL;
	}
	switch (a->kind) {
	case PR_ARG_INT: x->dtype = PR_I64, x->i = a->i, x->f = (double)a->i; return NULL;
	case PR_ARG_FLOAT: x->dtype = PR_F64, x->f = a->f; return NULL;
	case PR_ARG_BOOL: x->dtype = PR_BOOL, x->i = a->b, x->f = a->b; return NULL;
	case PR_ARG_VALUE:
		if (a->v->kind == PRT_RV_INT) {
			x->dtype = PR_I64, x->i = a->v->i, x->f = (double)a->v->i;
			return NULL;
		}
		break;
	default: break;
	}
	return prt_kernel_error(k, "argument %d must be a tensor or a number", i);
}

/* The broadcast shape of the tensor operands (and the condition). */
static bool bcast_shape(const prt_ew_plan *p, int *rank, int64_t *shape)
{
	const prt_tensor *ts[4] = {p->x[0].t, p->n > 1 ? p->x[1].t : NULL,
				   p->n > 2 ? p->x[2].t : NULL, p->cond.t};
	*rank = 0;
	for (int i = 0; i < 4; i++)
		if (ts[i] && ts[i]->rank > *rank)
			*rank = ts[i]->rank;
	for (int d = 0; d < *rank; d++)
		shape[d] = 1;
	for (int i = 0; i < 4; i++) {
		const prt_tensor *t = ts[i];
		for (int d = 0; t && d < t->rank; d++) {
			int64_t *s = &shape[*rank - t->rank + d];
			if (t->shape[d] != 1 && *s != 1 && t->shape[d] != *s)
				return false;
			if (t->shape[d] != 1)
				*s = t->shape[d];
		}
	}
	return true;
}

/* Broadcast strides of every tensor operand over the result. */
static pr_err *plan_strides(prt_kctx *k, prt_ew_plan *p)
{
	int rank;
	int64_t shape[PR_MAX_RANK];
	if (!bcast_shape(p, &rank, shape))
		return prt_kernel_error(k, "argument shapes do not broadcast together");
	pr_err *err = prt_result_shape_check(k, rank, shape);
	if (err)
		return err;
	prt_ew_operand *xs[4] = {&p->x[0], &p->x[1], &p->x[2], &p->cond};
	for (int i = 0; i < 4; i++)
		if (xs[i]->t && !prt_bcast_strides(xs[i]->t, p->out, xs[i]->st))
			return prt_kernel_error(k, "argument shapes do not broadcast to the result's");
	return NULL;
}

/* ATen's canCast: no float into an integer or bool, no integer into bool. */
static bool can_cast(pr_dtype from, pr_dtype to)
{
	if (is_float(from))
		return is_float(to);
	return !(is_int(from) && to == PR_BOOL);
}

static const char *ewt_name(prt_ewt_op op)
{
	static const char *names[] = {
		"add", "sub", "mul", "div", "pow", "neg", "abs", "sqrt", "rsqrt", "eq", "ne", "lt",
		"le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
		"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "copy", "div", "div",
		"maximum", "minimum", "clamp", "round", "round",
	};
	return names[op];
}

/* Whether op compares number operands at full width (clamp's bounds). */
static bool wide_numbers(prt_ewt_op op)
{
	return op == PRT_EWT_MAXIMUM || op == PRT_EWT_MINIMUM || op == PRT_EWT_CLAMP;
}

/* The range of integer dtype t. */
static void int_range(pr_dtype t, int64_t *lo, int64_t *hi)
{
	if (t == PR_U8) {
		*lo = 0, *hi = 255;
		return;
	}
	int bits = int_bits(t);
	*hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
	*lo = -*hi - 1;
}

/* ATen's refusals of clamp's number bounds: none on bool, and none that
 * leaves nothing of an integer dtype's range (a lower bound above its
 * largest value, an upper one below its smallest). A number operand of
 * maximum or minimum comes only from clamp_min or clamp_max (torch.maximum
 * takes tensors). */
static pr_err *clamp_check(prt_kctx *k, const prt_ew_plan *p)
{
	if (!wide_numbers(p->op))
		return NULL;
	for (int i = 1; i < p->n; i++) {
		const prt_ew_operand *b = &p->x[i];
		if (b->t)
			continue;
		if (p->ct == PR_BOOL)
			return prt_kernel_error(k, "clamp with a number bound is not implemented for bool");
		bool lower = p->op == PRT_EWT_MAXIMUM || (p->op == PRT_EWT_CLAMP && i == 1);
		int64_t lo, hi;
		if (!is_int(p->ct))
			continue;
		int_range(p->ct, &lo, &hi);
		if (lower ? b->i > hi : b->i < lo)
			return prt_kernel_error(k, "clamp's %s bound %lld is outside the range of %s",
					       lower ? "lower" : "upper", (long long)b->i,
					       pr_dtype_name(p->ct));
	}
	return NULL;
}

/* ATen's refusals of round: bool, and decimals on anything but floats
 * (torch.round(i, decimals=0) of an integer tensor raises too); decimals is
 * an int. */
static pr_err *round_check(prt_kctx *k, const prt_ew_plan *p)
{
	bool decimals = p->op == PRT_EWT_ROUND_DECIMALS;
	pr_dtype t = p->x[0].dtype;
	if (decimals && (p->x[1].t || p->x[1].dtype != PR_I64))
		return prt_kernel_error(k, "round's decimals must be an int");
	if ((p->op == PRT_EWT_ROUND && t == PR_BOOL) || (decimals && !is_float(t)))
		return prt_kernel_error(k, "round%s is not implemented for %s",
				       decimals ? " with decimals" : "", pr_dtype_name(t));
	return NULL;
}

/* ATen's refusals for op in compute dtype ct. */
static pr_err *plan_check(prt_kctx *k, const prt_ew_plan *p)
{
	pr_err *err;
	bool any_bool = false;
	for (int i = 0; i < p->n; i++)
		any_bool |= p->x[i].t && p->x[i].dtype == PR_BOOL;
	if ((p->op == PRT_EWT_SUB && any_bool) || (p->op == PRT_EWT_NEG && p->ct == PR_BOOL))
		return prt_kernel_error(k, "%s on a bool tensor is not supported (use logical_xor or "
				       "logical_not)", ewt_name(p->op));
	if (p->op >= PRT_EWT_BITWISE_AND && p->op <= PRT_EWT_BITWISE_NOT && is_float(p->ct))
		return prt_kernel_error(k, "%s takes bool and integer operands, not %s",
				       ewt_name(p->op), pr_dtype_name(p->ct));
	if (p->op == PRT_EWT_POW && p->ct == PR_BOOL)
		return prt_kernel_error(k, "pow is not implemented for bool");
	if (p->op == PRT_EWT_POW && is_int(p->ct) && !p->x[1].t && p->x[1].i < 0)
		return prt_kernel_error(k, "integers to negative integer powers are not allowed");
	if ((err = clamp_check(k, p)) || (err = round_check(k, p)))
		return err;
	if (!prt_ewt_gives_bool(p->op) && p->op != PRT_EWT_COPY && !can_cast(p->ct, p->out->dtype))
		return prt_kernel_error(k, "result type %s cannot be cast to the result's dtype %s",
				       pr_dtype_name(p->ct), pr_dtype_name(p->out->dtype));
	return NULL;
}

/* The dtype an op computes in, given the operands' result type. */
static pr_dtype compute_dtype(prt_ewt_op op, pr_dtype rt)
{
	bool to_float = op == PRT_EWT_DIV || op == PRT_EWT_SQRT || op == PRT_EWT_RSQRT;
	return to_float && !is_float(rt) ? PR_F32 : rt;
}

pr_err *prt_ew_plan_get(prt_kctx *k, prt_ewt_op op, int n, int alpha_at, prt_ew_plan *p)
{
	memset(p, 0, sizeof *p);
	p->op = op, p->n = n, p->alpha_f = 1, p->alpha_i = 1;
	if (k->out->kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a tensor");
	p->out = &k->out->t;
	pr_err *err = NULL;
	for (int i = 0; i < n && !err; i++)
		err = operand_get(k, i, &p->x[i]);
	if (err)
		return err;
	if (!p->x[0].t && (n < 2 || !p->x[1].t))
		return prt_kernel_error(k, "one argument must be a tensor");
	p->ct = op == PRT_EWT_COPY ? p->out->dtype : compute_dtype(op, prt_ew_result_type(p->x, n));
	if (alpha_at >= 0 && !prt_karg_is_none(k, alpha_at)) {
		prt_ew_operand al;
		if ((err = operand_get(k, alpha_at, &al)))
			return err;
		if (!is_float(p->ct) && is_float(al.dtype))
			return prt_kernel_error(k, "for integer and bool operands alpha must not be a "
					       "floating point number");
		p->alpha_f = al.f, p->alpha_i = al.i;
	}
	if ((err = plan_check(k, p)))
		return err;
	return plan_strides(k, p);
}

/* ---- the loop --------------------------------------------------------------- */

/* v rounded to float dtype t. */
static double round_to(pr_dtype t, double v)
{
	switch (t) {
	case PR_F32: return (float)v;
	case PR_F16: return pr_f16_to_double(pr_f16_from_double(v));
	case PR_BF16: return pr_bf16_to_double(pr_bf16_from_double(v));
	default: return v;
	}
}

/* Element `off` of operand x in the FLOAT domain of ct: a tensor's element
 * rounded to ct, a number to ct's arithmetic type (f32 for f16 and bf16, as
 * ATen keeps a scalar in its "opmath" type). */
static double load_f(const prt_ew_operand *x, int64_t off, pr_dtype ct)
{
	if (!x->t)
		return round_to(ct == PR_F64 ? PR_F64 : PR_F32, x->f);
	const uint8_t *p = x->t->data + off * (int64_t)pr_dtype_size(x->dtype);
	if (is_float(x->dtype))
		return round_to(ct, pr_elem_load(x->dtype, p));
	int64_t i = pr_elem_load_i64(x->dtype, p);
	return ct == PR_F32 ? (float)i : round_to(ct, (double)i);   /* one rounding for f32 */
}

/* ... in the INT or BOOL domain of ct (a float operand only reaches here in
 * a cast or masked_fill, and converts as a cast does). */
static int64_t load_i(const prt_ew_operand *x, int64_t off, pr_dtype ct)
{
	if (!x->t)
		return is_float(x->dtype) ? prt_ew_float_to_int(ct, x->f) : prt_ew_wrap(ct, x->i);
	const uint8_t *p = x->t->data + off * (int64_t)pr_dtype_size(x->dtype);
	if (is_float(x->dtype))
		return prt_ew_float_to_int(ct, pr_elem_load(x->dtype, p));
	return prt_ew_wrap(ct, pr_elem_load_i64(x->dtype, p));
}

void prt_ew_store_f(pr_dtype t, void *p, double v)
{
	if (is_float(t))
		pr_elem_store(t, p, v);
	else
		pr_elem_store_i64(t, p, prt_ew_float_to_int(t, v));
}

void prt_ew_store_i(pr_dtype t, void *p, int64_t v)
{
	if (t == PR_F32) {
		float f = (float)v;   /* one rounding, not two through double */
		memcpy(p, &f, sizeof f);
	} else if (is_float(t)) {
		pr_elem_store(t, p, (double)v);
	} else {
		pr_elem_store_i64(t, p, prt_ew_wrap(t, v));
	}
}

static bool cond_at(const prt_ew_plan *p, int64_t off)
{
	const prt_tensor *c = p->cond.t;
	return pr_elem_load_i64(c->dtype, c->data + off * (int64_t)pr_dtype_size(c->dtype)) != 0;
}

/* load_i, but a number operand of maximum, minimum or clamp (a bound) at
 * full width, as ATen compares it. */
static int64_t load_bound_i(const prt_ew_plan *p, const prt_ew_operand *x, int64_t off)
{
	return !x->t && wide_numbers(p->op) ? x->i : load_i(x, off, p->ct);
}

/* One element: the operands at offsets off[0..n-1], the result at o. */
static void ew_element(const prt_ew_plan *p, uint8_t *o, const int64_t *off)
{
	pr_dtype ct = p->ct, od = p->out->dtype;
	const prt_ew_operand *a = &p->x[0], *b = &p->x[1], *c = &p->x[2];
	bool add = p->op == PRT_EWT_ADD || p->op == PRT_EWT_SUB;
	if (is_float(ct)) {
		double av = load_f(a, off[0], ct), bv = p->n > 1 ? load_f(b, off[1], ct) : 0;
		if (add && p->alpha_f != 1)
			bv = round_to(ct, bv * p->alpha_f);
		double r = p->op == PRT_EWT_CLAMP ? prt_ew_clamp_f(av, bv, load_f(c, off[2], ct))
						  : prt_ewt_float_in(ct, p->op, av, bv);
		prt_ew_store_f(od, o, prt_ewt_gives_bool(p->op) ? r : round_to(ct, r));
	} else {
		int64_t av = load_i(a, off[0], ct), bv = p->n > 1 ? load_bound_i(p, b, off[1]) : 0;
		if (add && p->alpha_i != 1)
			bv = prt_ewt_int(PRT_EWT_MUL, bv, p->alpha_i);
		int64_t r = p->op == PRT_EWT_CLAMP
				    ? prt_ew_wrap(ct, prt_ew_clamp_i(av, bv, load_bound_i(p, c, off[2])))
				    : prt_ewt_int_in(ct, p->op, av, bv);
		prt_ew_store_i(od, o, r);
	}
}

/* where / masked_fill: the result is x[0] where the condition holds, else
 * x[1] (off[3] is the condition's offset). */
static void ew_select(const prt_ew_plan *p, uint8_t *o, const int64_t *offs)
{
	bool c = cond_at(p, offs[3]);
	const prt_ew_operand *x = c ? &p->x[0] : &p->x[1];
	int64_t off = c ? offs[0] : offs[1];
	if (is_float(p->ct))
		prt_ew_store_f(p->out->dtype, o, load_f(x, off, p->ct));
	else
		prt_ew_store_i(p->out->dtype, o, load_i(x, off, p->ct));
}

void prt_ew_plan_run(const prt_ew_plan *p)
{
	const prt_tensor *o = p->out;
	size_t es = pr_dtype_size(o->dtype);
	/* The operands' strides and offsets; the condition's last. */
	const int64_t *st[4] = {p->x[0].st, p->x[1].st, p->x[2].st, p->cond.st};
	int64_t idx[PR_MAX_RANK] = {0}, n = prt_tensor_numel(o);
	int64_t oo = 0, off[4] = {0};
	for (int64_t i = 0; i < n; i++) {
		uint8_t *op = o->data + oo * (int64_t)es;
		if (p->select)
			ew_select(p, op, off);
		else
			ew_element(p, op, off);
		for (int d = o->rank - 1; d >= 0; d--) {
			oo += o->strides[d];
			for (int j = 0; j < 4; j++)
				off[j] += st[j][d];
			if (++idx[d] < o->shape[d])
				break;
			oo -= o->strides[d] * o->shape[d];
			for (int j = 0; j < 4; j++)
				off[j] -= st[j][d] * o->shape[d];
			idx[d] = 0;
		}
	}
}

/* ---- kernels ------------------------------------------------------------------ */

static pr_err *ew_run(prt_kctx *k, prt_ewt_op op, int n, int alpha_at)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_plan_get(k, op, n, alpha_at, &p);
	if (!err)
		prt_ew_plan_run(&p);
	return err;
}

pr_err *prt_ew_arith(prt_kctx *k, prt_ewt_op op, int n, int alpha_at)
{
	return ew_run(k, op, n, alpha_at);
}

/* Does a tensor operand hold a zero? (an integer divisor, before dividing) */
static bool has_zero(const prt_ew_operand *x)
{
	if (!x->t)
		return is_float(x->dtype) ? x->f == 0 : x->i == 0;
	const prt_tensor *t = x->t;
	int64_t idx[PR_MAX_RANK] = {0}, off = 0, n = prt_tensor_numel(t);
	size_t es = pr_dtype_size(t->dtype);
	for (int64_t i = 0; i < n; i++) {
		if (pr_elem_load_i64(t->dtype, t->data + off * (int64_t)es) == 0)
			return true;
		for (int d = t->rank - 1; d >= 0; d--) {
			off += t->strides[d];
			if (++idx[d] < t->shape[d])
				break;
			off -= t->strides[d] * t->shape[d];
			idx[d] = 0;
		}
	}
	return false;
}

/* div.Tensor_mode / div.Scalar_mode(self, other, *, rounding_mode): none is
 * true division; "trunc" and "floor" keep the operands' result type. */
pr_err *prt_k_div_mode(prt_kctx *k)
{
	const char *mode = prt_karg_str(k, 2, NULL);
	if (!mode)
		return prt_k_div(k);
	bool fl = strcmp(mode, "floor") == 0;
	if (!fl && strcmp(mode, "trunc") != 0)
		return prt_kernel_error(k, "rounding_mode must be none, \"trunc\" or \"floor\", not "
				       "\"%s\"", mode);
	prt_ew_plan p;
	pr_err *err = prt_ew_plan_get(k, fl ? PRT_EWT_DIV_FLOOR : PRT_EWT_DIV_TRUNC, 2, -1, &p);
	if (err)
		return err;
	if (!is_float(p.ct) && has_zero(&p.x[1]))
		return prt_kernel_error(k, "integer division by zero");
	prt_ew_plan_run(&p);
	return NULL;
}

/* rsub.Scalar(self, other, alpha=1) = other - alpha * self (what `1 - x`
 * traces to): sub with its operands swapped. */
pr_err *prt_k_rsub(prt_kctx *k)
{
	prt_karg swapped[3] = {k->args[1], k->args[0], {.kind = PR_ARG_INT, .i = 1}};
	if (k->n_args < 2)
		return prt_kernel_error(k, "rsub takes self and other");
	if (k->n_args > 2)
		swapped[2] = k->args[2];
	prt_kctx c = *k;
	c.args = swapped, c.n_args = 3;
	return prt_ew_arith(&c, PRT_EWT_SUB, 2, 2);
}

pr_err *prt_k_sqrt(prt_kctx *k) { return ew_run(k, PRT_EWT_SQRT, 1, -1); }
pr_err *prt_k_rsqrt(prt_kctx *k) { return ew_run(k, PRT_EWT_RSQRT, 1, -1); }
pr_err *prt_k_abs(prt_kctx *k) { return ew_run(k, PRT_EWT_ABS, 1, -1); }
pr_err *prt_k_pow(prt_kctx *k) { return ew_run(k, PRT_EWT_POW, 2, -1); }
pr_err *prt_k_eq(prt_kctx *k) { return ew_run(k, PRT_EWT_EQ, 2, -1); }
pr_err *prt_k_ne(prt_kctx *k) { return ew_run(k, PRT_EWT_NE, 2, -1); }
pr_err *prt_k_lt(prt_kctx *k) { return ew_run(k, PRT_EWT_LT, 2, -1); }
pr_err *prt_k_le(prt_kctx *k) { return ew_run(k, PRT_EWT_LE, 2, -1); }
pr_err *prt_k_gt(prt_kctx *k) { return ew_run(k, PRT_EWT_GT, 2, -1); }
pr_err *prt_k_ge(prt_kctx *k) { return ew_run(k, PRT_EWT_GE, 2, -1); }
pr_err *prt_k_logical_and(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_AND, 2, -1); }
pr_err *prt_k_logical_or(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_OR, 2, -1); }
pr_err *prt_k_logical_xor(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_XOR, 2, -1); }
pr_err *prt_k_logical_not(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_NOT, 1, -1); }
pr_err *prt_k_bitwise_and(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_AND, 2, -1); }
pr_err *prt_k_bitwise_or(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_OR, 2, -1); }
pr_err *prt_k_bitwise_xor(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_XOR, 2, -1); }
pr_err *prt_k_bitwise_not(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_NOT, 1, -1); }

/* _to_copy(self, *, dtype?, layout?, device?, pin_memory?, non_blocking,
 * memory_format?): the result's spec carries the dtype (and layout). */
pr_err *prt_k_to_copy(prt_kctx *k) { return ew_run(k, PRT_EWT_COPY, 1, -1); }

/* The condition of where (argument 0: bool, or u8 as ATen still accepts) or
 * masked_fill (argument 1: bool). */
static pr_err *cond_get(prt_kctx *k, int i, bool u8_too, prt_ew_operand *c)
{
	prt_tensor *t = prt_karg_tensor(k, i);
	if (!t)
		return prt_kernel_error(k, "argument %d (the condition) must be a tensor", i);
	if (t->dtype != PR_BOOL && !(u8_too && t->dtype == PR_U8))
		return prt_kernel_error(k, "the condition must be a bool tensor, not %s",
				       pr_dtype_name(t->dtype));
	memset(c, 0, sizeof *c);
	c->t = t, c->dtype = t->dtype;
	return NULL;
}

pr_err *prt_ew_where_plan(prt_kctx *k, prt_ew_plan *p)
{
	memset(p, 0, sizeof *p);
	if (k->out->kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a tensor");
	p->op = PRT_EWT_COPY, p->n = 2, p->select = true, p->out = &k->out->t;
	pr_err *err = cond_get(k, 0, true, &p->cond);
	for (int i = 0; i < 2 && !err; i++)
		err = operand_get(k, i + 1, &p->x[i]);
	if (err)
		return err;
	p->ct = prt_ew_result_type(p->x, 2);
	if (!can_cast(p->ct, p->out->dtype))
		return prt_kernel_error(k, "result type %s cannot be cast to the result's dtype %s",
				       pr_dtype_name(p->ct), pr_dtype_name(p->out->dtype));
	return plan_strides(k, p);
}

/* where.self(condition, self, other) and its ScalarSelf, ScalarOther and
 * Scalar forms (a number for self or other). */
pr_err *prt_k_where(prt_kctx *k)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_where_plan(k, &p);
	if (!err)
		prt_ew_plan_run(&p);
	return err;
}

/* The fill value of masked_fill: a number, or a zero-dim tensor's element. */
static pr_err *fill_value(prt_kctx *k, pr_dtype ct, prt_ew_operand *v)
{
	pr_err *err = operand_get(k, 2, v);
	if (err)
		return err;
	if (v->t) {
		if (v->t->rank != 0)
			return prt_kernel_error(k, "the value must be a number or a 0-dim tensor, "
					       "not rank %d", v->t->rank);
		const prt_tensor *t = v->t;
		v->t = NULL;
		v->f = pr_elem_load(t->dtype, t->data);
		v->i = pr_elem_load_i64(t->dtype, t->data);
		v->dtype = is_float(t->dtype) ? PR_F64 : t->dtype == PR_BOOL ? PR_BOOL : PR_I64;
	}
	if (!is_float(ct) && is_float(v->dtype) && !isfinite(v->f))
		return prt_kernel_error(k, "the value %g cannot be converted to %s", v->f,
				       pr_dtype_name(ct));
	return NULL;
}

pr_err *prt_ew_masked_fill_plan(prt_kctx *k, prt_ew_plan *p)
{
	memset(p, 0, sizeof *p);
	if (k->out->kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a tensor");
	p->op = PRT_EWT_COPY, p->n = 2, p->select = true, p->out = &k->out->t;
	pr_err *err = operand_get(k, 0, &p->x[1]);
	if (!err && !p->x[1].t)
		err = prt_kernel_error(k, "argument 0 must be a tensor");
	if (!err)
		err = cond_get(k, 1, false, &p->cond);
	if (err)
		return err;
	p->ct = p->x[1].dtype;   /* the result has self's dtype */
	if ((err = fill_value(k, p->ct, &p->x[0])))
		return err;
	return plan_strides(k, p);
}

/* masked_fill(self, mask, value) and masked_fill_ (the result aliases self):
 * value where mask holds, else self. value is a number or a 0-dim tensor. */
pr_err *prt_k_masked_fill(prt_kctx *k)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_masked_fill_plan(k, &p);
	if (!err)
		prt_ew_plan_run(&p);
	return err;
}

/* ---- maximum, minimum, clamp ---------------------------------------------------- */

/* maximum(self, other) / minimum(self, other): NaN if either is NaN. */
pr_err *prt_k_maximum(prt_kctx *k) { return ew_run(k, PRT_EWT_MAXIMUM, 2, -1); }
pr_err *prt_k_minimum(prt_kctx *k) { return ew_run(k, PRT_EWT_MINIMUM, 2, -1); }

pr_err *prt_ew_clamp_plan(prt_kctx *k, int lo_at, int hi_at, prt_ew_plan *p)
{
	if (lo_at >= 0 && prt_karg_is_none(k, lo_at))
		lo_at = -1;
	if (hi_at >= 0 && prt_karg_is_none(k, hi_at))
		hi_at = -1;
	if (lo_at < 0 && hi_at < 0)
		return prt_kernel_error(k, "clamp needs at least one of min and max (both are None)");
	if (k->n_args < 1 || lo_at >= k->n_args || hi_at >= k->n_args)
		return prt_kernel_error(k, "clamp takes self and its bounds");
	/* (self, lower, upper) with the bounds that are given, in that order. */
	prt_karg args[3] = {k->args[0]};
	int n = 1;
	if (lo_at >= 0)
		args[n++] = k->args[lo_at];
	if (hi_at >= 0)
		args[n++] = k->args[hi_at];
	prt_ewt_op op = n == 3 ? PRT_EWT_CLAMP : lo_at >= 0 ? PRT_EWT_MAXIMUM : PRT_EWT_MINIMUM;
	prt_kctx c = *k;
	c.args = args, c.n_args = n;
	return prt_ew_plan_get(&c, op, n, -1, p);
}

static pr_err *clamp_run(prt_kctx *k, int lo_at, int hi_at)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_clamp_plan(k, lo_at, hi_at, &p);
	if (!err)
		prt_ew_plan_run(&p);
	return err;
}

/* clamp(self, min=None, max=None) with numbers or (clamp.Tensor) tensors,
 * and clamp_: minimum(maximum(self, min), max); min > max gives max. */
pr_err *prt_k_clamp(prt_kctx *k) { return clamp_run(k, 1, 2); }
/* clamp_min(self, min) / clamp_max(self, max), their .Tensor and in-place forms. */
pr_err *prt_k_clamp_min(prt_kctx *k) { return clamp_run(k, 1, -1); }
pr_err *prt_k_clamp_max(prt_kctx *k) { return clamp_run(k, -1, 1); }

/* ---- round -------------------------------------------------------------------- */

/* round(self) and round_: half to even; integers stay as they are. */
pr_err *prt_k_round(prt_kctx *k) { return ew_run(k, PRT_EWT_ROUND, 1, -1); }
/* round.decimals(self, *, decimals) and round_.decimals: floats only. */
pr_err *prt_k_round_decimals(prt_kctx *k) { return ew_run(k, PRT_EWT_ROUND_DECIMALS, 2, -1); }

/* _assert_tensor_metadata(a, size?, stride?, dtype?, *, device?, layout?) -> ():
 * PyTorch's check, written next to every .to(): the dtype (a c10 ScalarType
 * number) must be a's. Size and stride are the tracer's and left alone. */
/* c10's ScalarType numbers (what the exporter writes for a dtype). */
static bool dtype_of_code(int64_t code, pr_dtype *t)
{
	switch (code) {
	case 0: *t = PR_U8; return true;
	case 1: *t = PR_I8; return true;
	case 2: *t = PR_I16; return true;
	case 3: *t = PR_I32; return true;
	case 4: *t = PR_I64; return true;
	case 5: *t = PR_F16; return true;
	case 6: *t = PR_F32; return true;
	case 7: *t = PR_F64; return true;
	case 11: *t = PR_BOOL; return true;
	case 15: *t = PR_BF16; return true;
	default: return false;
	}
}

pr_err *prt_k_assert_tensor_metadata(prt_kctx *k)
{
	prt_tensor *t = prt_karg_tensor(k, 0);
	pr_dtype want;
	if (!t)
		return prt_kernel_error(k, "argument 0 must be a tensor");
	if (prt_karg_is_none(k, 3))
		return NULL;
	int64_t code = prt_karg_int(k, 3, -1);
	if (!dtype_of_code(code, &want))
		return prt_kernel_error(k, "dtype code %lld is not one passrun knows", (long long)code);
	if (want != t->dtype)
		return prt_kernel_error(k, "the tensor is %s; the program asserts %s",
				       pr_dtype_name(t->dtype), pr_dtype_name(want));
	return NULL;
}
