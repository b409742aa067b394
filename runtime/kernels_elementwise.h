/* kernels_elementwise.h: what one element of each typed elementwise op is,
 * with ATen's semantics, in functions the host kernels (kernels_elementwise.c)
 * and the CUDA kernels both call, so that the two compute the same thing.
 *
 * An op computes in one of three domains, chosen by its compute dtype (the
 * dtype torch.result_type gives its operands, prt_ew_result_type):
 *   - FLOAT (f16, bf16, f32, f64): operands are rounded to the compute dtype,
 *     the op runs in double and its result is rounded to the compute dtype
 *     again (for + - * / and sqrt that is exactly IEEE arithmetic in that
 *     dtype: double holds more than twice its digits);
 *   - INT (u8, i8, i16, i32, i64): int64 arithmetic that wraps, then wrapped
 *     to the compute dtype's width, as C++ integer arithmetic in that dtype;
 *   - BOOL: the INT arithmetic on 0 and 1, the result then v != 0.
 * Comparisons and logical ops give bool whatever the domain; true division,
 * sqrt and rsqrt compute integers and bools in f32 (the default dtype), as
 * ATen promotes integer inputs to float for them. maximum, minimum and
 * clamp give NaN when any operand is NaN; clamp's number bounds are compared
 * at full width, not wrapped to an integer compute dtype first (clamp of i8
 * 100 to [-300, 300] is 100), as ATen does. round rounds half to even and
 * leaves integers as they are; round with decimals computes in ATen's
 * "opmath" type, not in the compute dtype (prt_ewt_float_in).
 *
 * Casts between dtypes (prt_ew_store_f / prt_ew_store_i) are C++'s as PyTorch
 * does them on x86-64: integers wrap to a narrower width; a float to an
 * integer truncates toward zero, and NaN or a value out of range gives
 * INT64_MIN for i64, INT32_MIN for i32, and for i16, i8 and u8 the low bits
 * of that 32-bit (u8: 64-bit) conversion; anything to bool is v != 0 (NaN
 * is true). */
#ifndef PASSRUN_KERNELS_ELEMENTWISE_H
#define PASSRUN_KERNELS_ELEMENTWISE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "passrun/program.h"

#ifdef __CUDACC__
#define PRT_EW_FN static inline __host__ __device__
#else
#define PRT_EW_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum prt_ewt_op {
	PRT_EWT_ADD, PRT_EWT_SUB, PRT_EWT_MUL, PRT_EWT_DIV, PRT_EWT_POW,
	PRT_EWT_NEG, PRT_EWT_ABS, PRT_EWT_SQRT, PRT_EWT_RSQRT,
	PRT_EWT_EQ, PRT_EWT_NE, PRT_EWT_LT, PRT_EWT_LE, PRT_EWT_GT, PRT_EWT_GE,
	PRT_EWT_LOGICAL_AND, PRT_EWT_LOGICAL_OR, PRT_EWT_LOGICAL_XOR, PRT_EWT_LOGICAL_NOT,
	PRT_EWT_BITWISE_AND, PRT_EWT_BITWISE_OR, PRT_EWT_BITWISE_XOR, PRT_EWT_BITWISE_NOT,
	PRT_EWT_COPY,           /* the value itself: casts */
	PRT_EWT_DIV_TRUNC,      /* div with rounding_mode="trunc" */
	PRT_EWT_DIV_FLOOR,      /* ... "floor" (Python's //) */
	PRT_EWT_MAXIMUM,        /* the larger; NaN if either is NaN */
	PRT_EWT_MINIMUM,        /* the smaller; NaN if either is NaN */
	PRT_EWT_CLAMP,          /* three operands: minimum(maximum(x, lo), hi) */
	PRT_EWT_ROUND,          /* to the nearest integer, half to even */
	PRT_EWT_ROUND_DECIMALS, /* two operands: x and the number of decimals */
} prt_ewt_op;

typedef enum prt_ew_domain { PRT_EWD_BOOL, PRT_EWD_INT, PRT_EWD_FLOAT } prt_ew_domain;

PRT_EW_FN prt_ew_domain prt_ew_domain_of(pr_dtype t)
{
	switch (t) {
	case PR_BOOL: return PRT_EWD_BOOL;
	case PR_U8: case PR_I8: case PR_I16: case PR_I32: case PR_I64: return PRT_EWD_INT;
	default: return PRT_EWD_FLOAT;
	}
}

/* Comparisons and logical ops: their result is bool. */
PRT_EW_FN bool prt_ewt_gives_bool(prt_ewt_op op)
{
	return op >= PRT_EWT_EQ && op <= PRT_EWT_LOGICAL_NOT;
}

/* ---- rounding to a dtype ---------------------------------------------------- */

/* v wrapped to an integer dtype's width (bool: v != 0); floats keep v. */
PRT_EW_FN int64_t prt_ew_wrap(pr_dtype t, int64_t v)
{
	switch (t) {
	case PR_BOOL: return v != 0;
	case PR_U8: return (uint8_t)v;
	case PR_I8: return (int8_t)(uint8_t)v;
	case PR_I16: return (int16_t)(uint16_t)v;
	case PR_I32: return (int32_t)(uint32_t)v;
	default: return v;
	}
}

/* x86-64's cvttsd2si: truncation, with NaN and out-of-range values giving the
 * "integer indefinite" value (the most negative one). */
PRT_EW_FN int64_t prt_ew_f2i64(double v)
{
	return v != v || v >= 9223372036854775808.0 || v < -9223372036854775808.0 ? INT64_MIN
										     : (int64_t)v;
}

PRT_EW_FN int64_t prt_ew_f2i32(double v)
{
	return v != v || v >= 2147483648.0 || v <= -2147483649.0 ? INT32_MIN : (int64_t)v;
}

/* A float value converted to integer dtype t (as header comment says). */
PRT_EW_FN int64_t prt_ew_float_to_int(pr_dtype t, double v)
{
	switch (t) {
	case PR_BOOL: return v != 0;
	case PR_I64: return prt_ew_f2i64(v);
	case PR_U8: return prt_ew_wrap(t, prt_ew_f2i64(v));
	default: return prt_ew_wrap(t, prt_ew_f2i32(v));
	}
}

/* ---- one element ---------------------------------------------------------------- */

/* a ** b for integers, wrapping; a negative b gives what ATen gives
 * (1 for a == 1, +-1 for a == -1, else 0). */
PRT_EW_FN int64_t prt_ew_powi(int64_t a, int64_t b)
{
	if (b < 0)
		return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
	uint64_t r = 1, x = (uint64_t)a;
	for (; b; b >>= 1, x *= x)
		if (b & 1)
			r *= x;
	return (int64_t)r;
}

/* ATen's floor division of floats (div_floor_floating): from fmod, so that
 * the quotient is the exact one rounded down, not floor of a rounded a / b. */
PRT_EW_FN double prt_ew_div_floor_f(double a, double b)
{
	if (b == 0)
		return a / b;
	double mod = fmod(a, b), div = (a - mod) / b;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1;
	if (div == 0)
		return copysign(0.0, a / b);
	double fl = floor(div);
	return div - fl > 0.5 ? fl + 1 : fl;
}

/* Integer division rounded toward zero or down; b != 0 (the caller checks).
 * INT64_MIN / -1 wraps to INT64_MIN. */
PRT_EW_FN int64_t prt_ew_div_i(int64_t a, int64_t b, bool floor_mode)
{
	if (b == -1)
		return (int64_t)(0 - (uint64_t)a);
	int64_t q = a / b;
	if (floor_mode && a % b != 0 && ((a < 0) != (b < 0)))
		q -= 1;
	return q;
}

/* torch.maximum / torch.minimum of floats: a NaN operand gives NaN. */
PRT_EW_FN double prt_ew_max_f(double a, double b)
{
	return a != a ? a : b != b ? b : a > b ? a : b;
}

PRT_EW_FN double prt_ew_min_f(double a, double b)
{
	return a != a ? a : b != b ? b : a < b ? a : b;
}

/* clamp(x, lo, hi) as ATen computes it: a NaN x or bound gives NaN, and
 * lo > hi gives hi. */
PRT_EW_FN double prt_ew_clamp_f(double x, double lo, double hi)
{
	return prt_ew_min_f(prt_ew_max_f(x, lo), hi);
}

PRT_EW_FN int64_t prt_ew_clamp_i(int64_t x, int64_t lo, int64_t hi)
{
	int64_t r = x > lo ? x : lo;
	return r < hi ? r : hi;
}

/* torch.round(a, decimals=d) as ATen's CPU kernel computes it: in the
 * opmath type (double for f64, else float: f16 and bf16 too), with
 * s = 10^|d| rounded to it, nearbyint(a * s) / s, or for d < 0
 * nearbyint(a / s) * s, each step rounded to the opmath type. So an f32
 * 3.4e38 with d = 2 overflows to inf, and |d| >= 39 makes s inf in float:
 * every result NaN (0 * inf, inf / inf). */
PRT_EW_FN double prt_ew_round_decimals(double a, double d, bool f64)
{
	double s = pow(10.0, fabs(d));
	if (f64)
		return d < 0 ? nearbyint(a / s) * s : nearbyint(a * s) / s;
	float af = (float)a, sf = (float)s;
	return d < 0 ? nearbyintf(af / sf) * sf : nearbyintf(af * sf) / sf;
}

/* The FLOAT domain: a and b rounded to the compute dtype already. */
PRT_EW_FN double prt_ewt_float(prt_ewt_op op, double a, double b)
{
	switch (op) {
	case PRT_EWT_ADD: return a + b;
	case PRT_EWT_SUB: return a - b;
	case PRT_EWT_MUL: return a * b;
	case PRT_EWT_DIV: return a / b;
	case PRT_EWT_POW: return pow(a, b);
	case PRT_EWT_NEG: return -a;
	case PRT_EWT_ABS: return fabs(a);
	case PRT_EWT_SQRT: return sqrt(a);
	case PRT_EWT_RSQRT: return 1 / sqrt(a);
	case PRT_EWT_EQ: return a == b;
	case PRT_EWT_NE: return a != b;
	case PRT_EWT_LT: return a < b;
	case PRT_EWT_LE: return a <= b;
	case PRT_EWT_GT: return a > b;
	case PRT_EWT_GE: return a >= b;
	case PRT_EWT_LOGICAL_AND: return a != 0 && b != 0;
	case PRT_EWT_LOGICAL_OR: return a != 0 || b != 0;
	case PRT_EWT_LOGICAL_XOR: return (a != 0) != (b != 0);
	case PRT_EWT_LOGICAL_NOT: return a == 0;
	case PRT_EWT_COPY: return a;
	case PRT_EWT_DIV_TRUNC: return trunc(a / b);
	case PRT_EWT_DIV_FLOOR: return prt_ew_div_floor_f(a, b);
	case PRT_EWT_MAXIMUM: return prt_ew_max_f(a, b);
	case PRT_EWT_MINIMUM: return prt_ew_min_f(a, b);
	case PRT_EWT_ROUND: return nearbyint(a);   /* half to even in the default mode */
	default: return NAN;   /* bitwise ops take no floats (refused before); clamp
				* has three operands (prt_ew_clamp_f); round with
				* decimals needs ct (prt_ewt_float_in) */
	}
}

/* prt_ewt_float in compute dtype ct (the caller rounds the result to ct):
 * what computes in an opmath type of its own, round with decimals, is told
 * which. */
PRT_EW_FN double prt_ewt_float_in(pr_dtype ct, prt_ewt_op op, double a, double b)
{
	if (op == PRT_EWT_ROUND_DECIMALS)
		return prt_ew_round_decimals(a, b, ct == PR_F64);
	return prt_ewt_float(op, a, b);
}

/* The INT and BOOL domains: wrapping int64 arithmetic (the caller wraps the
 * result to the compute dtype). Integer true division computes in f32; an
 * integer division with a rounding mode by zero is refused before the loop,
 * as ATen raises ZeroDivisionError. */
PRT_EW_FN int64_t prt_ewt_int(prt_ewt_op op, int64_t a, int64_t b)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (op) {
	case PRT_EWT_ADD: return (int64_t)(ua + ub);
	case PRT_EWT_SUB: return (int64_t)(ua - ub);
	case PRT_EWT_MUL: return (int64_t)(ua * ub);
	case PRT_EWT_POW: return prt_ew_powi(a, b);
	case PRT_EWT_NEG: return (int64_t)(0 - ua);
	case PRT_EWT_ABS: return a < 0 ? (int64_t)(0 - ua) : a;
	case PRT_EWT_EQ: return a == b;
	case PRT_EWT_NE: return a != b;
	case PRT_EWT_LT: return a < b;
	case PRT_EWT_LE: return a <= b;
	case PRT_EWT_GT: return a > b;
	case PRT_EWT_GE: return a >= b;
	case PRT_EWT_LOGICAL_AND: return a != 0 && b != 0;
	case PRT_EWT_LOGICAL_OR: return a != 0 || b != 0;
	case PRT_EWT_LOGICAL_XOR: return (a != 0) != (b != 0);
	case PRT_EWT_LOGICAL_NOT: return a == 0;
	case PRT_EWT_BITWISE_AND: return a & b;
	case PRT_EWT_BITWISE_OR: return a | b;
	case PRT_EWT_BITWISE_XOR: return a ^ b;
	case PRT_EWT_BITWISE_NOT: return ~a;   /* bool: see prt_ewt_int_in */
	case PRT_EWT_COPY: return a;
	case PRT_EWT_DIV_TRUNC: return b ? prt_ew_div_i(a, b, false) : 0;   /* b == 0: refused before */
	case PRT_EWT_DIV_FLOOR: return b ? prt_ew_div_i(a, b, true) : 0;
	case PRT_EWT_MAXIMUM: return a > b ? a : b;
	case PRT_EWT_MINIMUM: return a < b ? a : b;
	case PRT_EWT_ROUND: return a;   /* integers are whole (bool is refused before) */
	default: return 0;   /* DIV, SQRT, RSQRT compute in FLOAT; CLAMP: prt_ew_clamp_i;
			      * ROUND_DECIMALS takes floats only (refused before) */
	}
}

/* prt_ewt_int in compute dtype ct, the result wrapped to ct (bool results of
 * comparisons and logical ops stay 0 or 1). ~ on a bool is logical not. */
PRT_EW_FN int64_t prt_ewt_int_in(pr_dtype ct, prt_ewt_op op, int64_t a, int64_t b)
{
	if (ct == PR_BOOL && op == PRT_EWT_BITWISE_NOT)
		return a == 0;
	int64_t r = prt_ewt_int(op, a, b);
	return prt_ewt_gives_bool(op) ? r : prt_ew_wrap(ct, r);
}

#ifdef __cplusplus
}
#endif
#endif
