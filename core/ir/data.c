/* data.c: element conversions and constant data (pr_data_materialize).
 *
 * A constant's data is either LOGICAL (zeros, ones, fill(X), arange, random,
 * [list]): one value per element in row-major order of the shape, or RAW
 * (@BLOB, or bytes mapped from a binary file): the storage-order bytes
 * themselves. Materializing a logical kind walks the shape with an odometer,
 * keeping the storage offset of the current element (sum of index * stride)
 * up to date incrementally, and stores each value there; the buffer is zeroed
 * first, so storage gaps that no element covers (strides wider than the shape)
 * are zero. Raw kinds are copied as they are, after checking that their size
 * is exactly the storage size the spec gives.
 *
 * random(SEED): element i (logical row-major index) takes z = splitmix64's
 * (i+1)-th output from state SEED:
 *     z = SEED + (i + 1) * 0x9E3779B97F4A7C15          (mod 2^64)
 *     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *     z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *     z =  z ^ (z >> 31)
 * floats: (z >> 11) * 2^-53 * 2 - 1, uniform in [-1, 1), then rounded to the
 * dtype; i8/i16/i32/i64: (z % 21) - 10; u8: z % 11; bool: z >> 63.
 * Only integer arithmetic and one exact scaling are involved, so every
 * machine gives the same bytes. */
#include "passrun/data.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- f16 / bf16 --------------------------------------------------------- */

/* Rounds v to a binary float with ebits exponent bits and mbits mantissa bits
 * (IEEE layout, sign on top), to nearest with ties to even, straight from the
 * double's bits. */
static uint32_t round_to_small_float(double v, int ebits, int mbits)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	uint32_t sign = (uint32_t)(b >> 63) << (ebits + mbits);
	int e = (int)((b >> 52) & 0x7ff);
	uint64_t m = b & ((UINT64_C(1) << 52) - 1);
	uint32_t inf = ((UINT32_C(1) << ebits) - 1) << mbits;
	if (e == 0x7ff)
		return sign | inf | (m ? UINT32_C(1) << (mbits - 1) : 0);
	if (e == 0)   /* zero or a double subnormal: far below the target's range */
		return sign;
	int bias = (1 << (ebits - 1)) - 1;
	int te = e - 1023 + bias;            /* the target's biased exponent */
	if (te >= (1 << ebits) - 1)
		return sign | inf;
	uint64_t mant = m | (UINT64_C(1) << 52);
	int shift = 52 - mbits + (te >= 1 ? 0 : 1 - te);
	if (shift > 53)                      /* below half the smallest subnormal */
		return sign;
	uint64_t q = mant >> shift;
	uint64_t rem = mant & ((UINT64_C(1) << shift) - 1);
	uint64_t half = UINT64_C(1) << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	/* A carry out of the mantissa moves into the exponent, which is what
	 * rounding up to the next binade (or to inf) means. */
	uint64_t bits = te >= 1 ? ((uint64_t)(te - 1) << mbits) + q : q;
	if (bits >= inf)
		return sign | inf;
	return sign | (uint32_t)bits;
}

uint16_t pr_f16_from_double(double v)
{
	return (uint16_t)round_to_small_float(v, 5, 10);
}

double pr_f16_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	int m = h & 0x3ff;
	double sign = (h & 0x8000) ? -1.0 : 1.0;
	if (e == 0x1f)
		return m ? NAN : sign * INFINITY;
	if (e == 0)
		return sign * ldexp(m, -24);
	return sign * ldexp(m | 0x400, e - 25);
}

uint16_t pr_bf16_from_double(double v)
{
	return (uint16_t)round_to_small_float(v, 8, 7);
}

double pr_bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* ---- element access ------------------------------------------------------ */

/* Truncates toward zero and saturates; NaN is 0. */
static int64_t double_to_int(double v, int64_t lo, int64_t hi)
{
	if (isnan(v))
		return 0;
	if (v <= (double)lo)
		return lo;
	if (v >= (double)hi)
		return hi;
	return (int64_t)v;
}

#define LOAD(T, p) ({ T x_; memcpy(&x_, (p), sizeof x_); x_; })
#define STORE(T, p, v) do { T x_ = (T)(v); memcpy((p), &x_, sizeof x_); } while (0)

double pr_elem_load(pr_dtype t, const void *p)
{
	switch (t) {
	case PR_F32: return LOAD(float, p);
	case PR_F16: return pr_f16_to_double(LOAD(uint16_t, p));
	case PR_BF16: return pr_bf16_to_double(LOAD(uint16_t, p));
	case PR_F64: return LOAD(double, p);
	case PR_I64: return (double)LOAD(int64_t, p);
	case PR_I32: return LOAD(int32_t, p);
	case PR_I16: return LOAD(int16_t, p);
	case PR_I8: return LOAD(int8_t, p);
	case PR_U8: return LOAD(uint8_t, p);
	case PR_BOOL: return LOAD(uint8_t, p) != 0;
	default: PR_ASSERT(!"bad dtype");
	}
}

void pr_elem_store(pr_dtype t, void *p, double v)
{
	switch (t) {
	case PR_F32: STORE(float, p, v); break;
	case PR_F16: STORE(uint16_t, p, pr_f16_from_double(v)); break;
	case PR_BF16: STORE(uint16_t, p, pr_bf16_from_double(v)); break;
	case PR_F64: STORE(double, p, v); break;
	case PR_I64: STORE(int64_t, p, double_to_int(v, INT64_MIN, INT64_MAX)); break;
	case PR_I32: STORE(int32_t, p, double_to_int(v, INT32_MIN, INT32_MAX)); break;
	case PR_I16: STORE(int16_t, p, double_to_int(v, INT16_MIN, INT16_MAX)); break;
	case PR_I8: STORE(int8_t, p, double_to_int(v, INT8_MIN, INT8_MAX)); break;
	case PR_U8: STORE(uint8_t, p, double_to_int(v, 0, UINT8_MAX)); break;
	case PR_BOOL: STORE(uint8_t, p, v != 0); break;
	default: PR_ASSERT(!"bad dtype");
	}
}

int64_t pr_elem_load_i64(pr_dtype t, const void *p)
{
	switch (t) {
	case PR_I64: return LOAD(int64_t, p);
	case PR_I32: return LOAD(int32_t, p);
	case PR_I16: return LOAD(int16_t, p);
	case PR_I8: return LOAD(int8_t, p);
	case PR_U8: return LOAD(uint8_t, p);
	case PR_BOOL: return LOAD(uint8_t, p) != 0;
	default: return double_to_int(pr_elem_load(t, p), INT64_MIN, INT64_MAX);
	}
}

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void pr_elem_store_i64(pr_dtype t, void *p, int64_t v)
{
	switch (t) {
	case PR_I64: STORE(int64_t, p, v); break;
	case PR_I32: STORE(int32_t, p, clamp_i64(v, INT32_MIN, INT32_MAX)); break;
	case PR_I16: STORE(int16_t, p, clamp_i64(v, INT16_MIN, INT16_MAX)); break;
	case PR_I8: STORE(int8_t, p, clamp_i64(v, INT8_MIN, INT8_MAX)); break;
	case PR_U8: STORE(uint8_t, p, clamp_i64(v, 0, UINT8_MAX)); break;
	case PR_BOOL: STORE(uint8_t, p, v != 0); break;
	default: pr_elem_store(t, p, (double)v); break;
	}
}

/* ---- random(SEED) -------------------------------------------------------- */

uint64_t pr_random_bits(uint64_t seed, uint64_t index)
{
	uint64_t z = seed + (index + 1) * UINT64_C(0x9E3779B97F4A7C15);
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

double pr_random_value(pr_dtype t, uint64_t seed, uint64_t index)
{
	uint64_t z = pr_random_bits(seed, index);
	if (pr_dtype_is_float(t))
		return (double)(z >> 11) * 0x1p-53 * 2.0 - 1.0;
	switch (t) {
	case PR_BOOL: return (double)(z >> 63);
	case PR_U8: return (double)(z % 11);
	default: return (double)(int64_t)(z % 21) - 10.0;
	}
}

/* ---- materializing ------------------------------------------------------- */

bool pr_spec_storage_bytes_checked(const pr_spec *s, int64_t *out)
{
	if (s->rank < 0 || s->rank > PR_MAX_RANK || (unsigned)s->dtype >= PR_DTYPE_COUNT)
		return false;
	int64_t max_offset = 0;
	bool empty = false;
	for (int i = 0; i < s->rank; i++) {
		if (s->shape[i] < 0 || pr_spec_strides(s)[i] < 0)
			return false;
		if (s->shape[i] == 0)
			empty = true;
	}
	if (empty) {
		*out = 0;
		return true;
	}
	for (int i = 0; i < s->rank; i++) {
		int64_t span;
		if (__builtin_mul_overflow(s->shape[i] - 1, pr_spec_strides(s)[i], &span) ||
		    __builtin_add_overflow(max_offset, span, &max_offset))
			return false;
	}
	int64_t bytes;
	if (__builtin_add_overflow(max_offset, 1, &bytes) ||
	    __builtin_mul_overflow(bytes, (int64_t)pr_dtype_size(s->dtype), &bytes))
		return false;
	*out = bytes;
	return true;
}

bool pr_spec_numel_checked(const pr_spec *s, int64_t *out)
{
	if (s->rank < 0 || s->rank > PR_MAX_RANK)
		return false;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		if (s->shape[i] < 0 || __builtin_mul_overflow(n, s->shape[i], &n))
			return false;
	*out = n;
	return true;
}

/* The logical value of element i of a logical kind. */
static double logical_value(const pr_data *d, pr_dtype t, int64_t i)
{
	switch (d->kind) {
	case PR_DATA_ONES: return 1.0;
	case PR_DATA_FILL: return d->fill;
	case PR_DATA_ARANGE: return (double)i;
	case PR_DATA_RANDOM: return pr_random_value(t, d->seed, (uint64_t)i);
	case PR_DATA_LIST: return d->values[i];
	default: return 0.0;
	}
}

/* Stores every logical element at its storage offset. */
static void place_logical(const pr_data *d, const pr_spec *s, uint8_t *buf)
{
	int64_t numel = pr_spec_numel(s);
	size_t esize = pr_dtype_size(s->dtype);
	int64_t idx[PR_MAX_RANK] = {0};
	int64_t offset = 0;
	for (int64_t i = 0; i < numel; i++) {
		uint8_t *p = buf + (size_t)offset * esize;
		if (d->kind == PR_DATA_ARANGE && !pr_dtype_is_float(s->dtype))
			pr_elem_store_i64(s->dtype, p, i);
		else
			pr_elem_store(s->dtype, p, logical_value(d, s->dtype, i));
		for (int k = s->rank - 1; k >= 0; k--) {   /* odometer step */
			offset += pr_spec_strides(s)[k];
			if (++idx[k] < s->shape[k])
				break;
			offset -= idx[k] * pr_spec_strides(s)[k];
			idx[k] = 0;
		}
	}
}

static pr_err *copy_raw(const char *what, const uint8_t *bytes, int64_t size,
			int64_t storage, uint8_t *buf)
{
	if (size != storage)
		return pr_err_new("%s holds %lld bytes, but the tensor's storage spans %lld",
				  what, (long long)size, (long long)storage);
	if (size)
		memcpy(buf, bytes, (size_t)size);
	return NULL;
}

pr_err *pr_data_materialize(const pr_data *d, const pr_spec *s, uint8_t *buf)
{
	int64_t storage;
	int64_t numel;
	if (!pr_spec_storage_bytes_checked(s, &storage) || !pr_spec_numel_checked(s, &numel))
		return pr_err_new("the tensor's size is negative or too large");
	if (d->mapped)
		return copy_raw("the mapped data", d->mapped, d->mapped_size, storage, buf);
	switch (d->kind) {
	case PR_DATA_NONE:
		return pr_err_new("the tensor has no data");
	case PR_DATA_BLOB: {
		if (!d->blob)
			return pr_err_new("the tensor's data names no blob");
		char what[300];
		snprintf(what, sizeof what, "blob @%s", d->blob->name);
		return copy_raw(what, d->blob->bytes, d->blob->size, storage, buf);
	}
	case PR_DATA_LIST:
		if (d->n_values != numel)
			return pr_err_new("the data lists %lld values, but the tensor has %lld elements",
					  (long long)d->n_values, (long long)numel);
		break;
	default:
		break;
	}
	if (storage)
		memset(buf, 0, (size_t)storage);
	if (d->kind != PR_DATA_ZEROS)
		place_logical(d, s, buf);
	return NULL;
}

/* The largest finite value of a float dtype. */
static double float_max(pr_dtype t)
{
	switch (t) {
	case PR_F16: return 65504.0;
	case PR_BF16: return 3.3895313892515355e38;
	case PR_F32: return FLT_MAX;
	default: return DBL_MAX;
	}
}

bool pr_data_value_fits(pr_dtype t, double v, char *why, size_t why_size)
{
	static const struct { pr_dtype t; int64_t lo, hi; double end; } ints[] = {
		{PR_I64, INT64_MIN, INT64_MAX, 9223372036854775808.0},   /* 2^63, exact */
		{PR_I32, INT32_MIN, INT32_MAX, 2147483648.0}, {PR_I16, INT16_MIN, INT16_MAX, 32768.0},
		{PR_I8, INT8_MIN, INT8_MAX, 128.0}, {PR_U8, 0, UINT8_MAX, 256.0},
	};
	if (pr_dtype_is_float(t)) {
		uint8_t buf[8];
		pr_elem_store(t, buf, v);
		if (!isfinite(v) || isfinite(pr_elem_load(t, buf)))
			return true;
		snprintf(why, why_size, "expected a value that fits in %s (at most %.9g in "
			 "magnitude), found %.9g", pr_dtype_name(t), float_max(t), v);
		return false;
	}
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		if (ints[i].t != t)
			continue;
		if (isfinite(v) && v == trunc(v) && v >= (double)ints[i].lo && v < ints[i].end)
			return true;
		snprintf(why, why_size, "expected an integer from %lld to %lld for %s data, found %.9g",
			 (long long)ints[i].lo, (long long)ints[i].hi, pr_dtype_name(t), v);
		return false;
	}
	return true;   /* bool: any number, nonzero is true */
}
