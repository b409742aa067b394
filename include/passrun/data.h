/* data.h: element values of every dtype, and constant data.
 *
 * One place converts between a double and an element of any dtype, so that the
 * constant materializer, the binary format, the host kernels and the reference
 * interpreter round the same way:
 *   - f16 and bf16 are rounded from the double directly, to nearest, ties to
 *     even (no double rounding through f32); NaN stays NaN, overflow gives inf.
 *   - integers truncate toward zero and saturate at the dtype's range; NaN
 *     gives 0. bool is v != 0.
 * Elements are read and written in the host's byte order (every supported
 * host is little-endian, which is also the order of the binary format).
 *
 * random(SEED) data (docs/binary-format.md, "Constant data") is a pure
 * function of the seed, the dtype and the logical row-major index, so it gives
 * the same bytes on every machine. */
#ifndef PASSRUN_DATA_H
#define PASSRUN_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

uint16_t pr_f16_from_double(double v);
double pr_f16_to_double(uint16_t h);
uint16_t pr_bf16_from_double(double v);
double pr_bf16_to_double(uint16_t h);

/* The element at p (pr_dtype_size(t) bytes, any alignment) as a double. */
double pr_elem_load(pr_dtype t, const void *p);
/* Stores v into the element at p, converted as described above. */
void pr_elem_store(pr_dtype t, void *p, double v);
/* Can a constant of dtype t hold data value v? An integer dtype takes
 * integers in its range (1e300 in an i64 would saturate); a float dtype
 * anything but a finite value that rounds to infinity (inf and nan are
 * written as such); bool any number. When not, why says what was expected,
 * in words the text parser and the binary loader both print. */
bool pr_data_value_fits(pr_dtype t, double v, char *why, size_t why_size);
/* Exact integer access (i64 values beyond 2^53 survive); floats convert. */
int64_t pr_elem_load_i64(pr_dtype t, const void *p);
void pr_elem_store_i64(pr_dtype t, void *p, int64_t v);

/* splitmix64's (index+1)-th output from state seed: the bits behind
 * random(SEED) for the element at logical index `index`. */
uint64_t pr_random_bits(uint64_t seed, uint64_t index);
/* The value random(seed) gives the element at logical index `index`:
 * floats uniform in [-1, 1) (before rounding to the dtype), signed integers in
 * [-10, 10], u8 in [0, 10], bool 0 or 1. */
double pr_random_value(pr_dtype t, uint64_t seed, uint64_t index);

/* Bytes the storage of s spans, like pr_spec_storage_bytes, but checked: false
 * when a dimension or stride is negative or the size does not fit in int64. */
bool pr_spec_storage_bytes_checked(const pr_spec *s, int64_t *out);
/* The number of elements, checked the same way. */
bool pr_spec_numel_checked(const pr_spec *s, int64_t *out);

#ifdef __cplusplus
}
#endif
#endif
