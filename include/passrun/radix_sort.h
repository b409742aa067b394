/* radix_sort.h: two radix sorts of big arrays (10^6 records: the memory
 * planner's orders, the plan checker's sweep, a value's many readers in
 * propagate-device), where qsort's comparisons cost more than the work they
 * feed and a second copy of the records is the largest transient memory:
 *   - PR_RADIX_SORT_DEFINE, an in-place MSD radix sort (American flag) of
 *     records of any type, not stable, no second array;
 *   - pr_radix_sort_u64_stable, a stable LSD radix sort of 8-byte records
 *     (a key packed beside a payload), given a second array of the same
 *     size: a pass per key byte that varies, and ties keep their order.
 *
 *   PR_RADIX_SORT_DEFINE(name, type, key_byte, less)
 *
 * defines  static void name(type *a, int64_t n, int b, uint64_t varying),
 * which sorts a[0..n) on key bytes b down to 0, where
 *   - unsigned key_byte(const type *x, int b) is byte b of x's key (0..255,
 *     byte 0 the least significant; b < 64);
 *   - bool less(const type *x, const type *y) is the same order, for the
 *     insertion sort that finishes buckets of a few records;
 *   - bit b of varying says some record's byte b may differ from another's:
 *     a byte no record differs in is skipped without a pass (a superset is
 *     correct, only slower).
 * The sort is not stable: records with equal keys come out in any order, so
 * a caller wanting one order makes its keys unique. No allocation: two
 * 256-entry tables a level on the stack (4 KB, at most one level a key
 * byte).
 *
 * Templates and inline functions, not functions of the core: a per-byte
 * callback through a pointer would cost more than the sort, and neither has
 * a symbol, so the core's ABI does not grow; what they promise is written
 * here. */
#ifndef PASSRUN_RADIX_SORT_H
#define PASSRUN_RADIX_SORT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The varying mask of a key field that takes n_bytes key bytes from byte
 * first up: diff holds the bits some record's field has unlike the first
 * record's (the OR of their XORs), and each of its bytes that is not zero
 * sets its bit. The sort's callers OR one per field. */
static inline uint64_t pr_radix_varying(uint64_t diff, int first, int n_bytes)
{
	uint64_t varying = 0;
	for (int k = 0; k < n_bytes; k++)
		if (diff >> (8 * k) & 255)
			varying |= 1ull << (first + k);
	return varying;
}

/* Buckets this small are finished by insertion sort. */
#define PR_RADIX_SORT_SMALL 48

#define PR_RADIX_SORT_DEFINE(name, type, key_byte, less)                                    \
	static void name##_small(type *a, int64_t n)                                         \
	{                                                                                    \
		for (int64_t i = 1; i < n; i++) {                                            \
			type x = a[i];                                                       \
			int64_t j = i;                                                       \
			for (; j > 0 && less(&x, &a[j - 1]); j--)                            \
				a[j] = a[j - 1];                                             \
			a[j] = x;                                                            \
		}                                                                            \
	}                                                                                    \
                                                                                             \
	static void name(type *a, int64_t n, int b, uint64_t varying)                        \
	{                                                                                    \
		int64_t count[256], next[256];                                               \
		for (;; b--) { /* a byte that all of a shares splits nothing */              \
			while (b >= 0 && !(varying >> b & 1))                                \
				b--;                                                         \
			if (n <= PR_RADIX_SORT_SMALL || b < 0) {                             \
				name##_small(a, n);                                          \
				return;                                                      \
			}                                                                    \
			memset(count, 0, sizeof count);                                      \
			for (int64_t i = 0; i < n; i++)                                      \
				count[key_byte(&a[i], b)]++;                                 \
			if (count[key_byte(&a[0], b)] < n)                                   \
				break;                                                       \
		}                                                                            \
		for (int64_t v = 0, sum = 0; v < 256; v++) {                                 \
			next[v] = sum;                                                       \
			sum += count[v];                                                     \
		}                                                                            \
		int64_t end = 0;                                                             \
		for (int v = 0; v < 256; v++) {                                              \
			end += count[v];                                                     \
			while (next[v] < end) { /* carry each misplaced record home */       \
				type x = a[next[v]];                                         \
				unsigned d;                                                  \
				while ((d = key_byte(&x, b)) != (unsigned)v) {               \
					type y = a[next[d]];                                 \
					a[next[d]++] = x;                                    \
					x = y;                                               \
				}                                                            \
				a[next[v]++] = x;                                            \
			}                                                                    \
		}                                                                            \
		for (int v = 0; v < 256; v++) /* next[v]: bucket v's end now */              \
			if (count[v] > 1)                                                    \
				name(a + next[v] - count[v], count[v], b - 1, varying);      \
	}

/* A stable LSD radix sort of 64-bit records on the bytes set in `bytes`
 * (bit k: byte k, byte 0 the least significant), the other bytes carried
 * along: records equal in those bytes keep their order. A caller packs a key
 * into some bytes and a payload into the others (an id whose input order is
 * the tie order it wants). count[k][v] is how many records have v as byte k,
 * for each byte k sorted on (pr_radix_count_u64, or the caller's own loop
 * that makes the records). tmp has room for n records; the answer is
 * whichever of a and tmp holds the sorted records. A pass per byte, none for
 * a byte all records share. */
static inline uint64_t *pr_radix_sort_u64_stable(uint64_t *a, uint64_t *tmp, int64_t n, unsigned bytes,
						  int64_t (*count)[256])
{
	for (int k = 0; k < 8; k++) {
		int64_t next[256], sum = 0;
		if (!(bytes >> k & 1) || n < 2 || count[k][a[0] >> 8 * k & 255] == n)
			continue;
		for (int v = 0; v < 256; v++) {
			next[v] = sum;
			sum += count[k][v];
		}
		for (int64_t i = 0; i < n; i++)
			tmp[next[a[i] >> 8 * k & 255]++] = a[i];
		uint64_t *t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}

/* The counts pr_radix_sort_u64_stable needs: count[k] for each byte k set in
 * bytes (the other rows untouched). */
static inline void pr_radix_count_u64(const uint64_t *a, int64_t n, unsigned bytes, int64_t (*count)[256])
{
	for (int k = 0; k < 8; k++)
		if (bytes >> k & 1) {
			memset(count[k], 0, sizeof count[k]);
			for (int64_t i = 0; i < n; i++)
				count[k][a[i] >> 8 * k & 255]++;
		}
}

#endif
