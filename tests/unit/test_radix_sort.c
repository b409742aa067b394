/* Tests of include/passrun/radix_sort.h, the in-place MSD radix sort that
 * the memory planner (its orders) and the plan checker (its sweep) use:
 * checked against qsort on keys like the planner's (two signed 64-bit
 * fields, a signed 32-bit one, a unique id), with many equal fields, keys
 * differing in several bytes, in one byte only, or not at all, and a
 * varying mask wider than the bytes that vary. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "passrun/radix_sort.h"

typedef struct rec {
	int64_t k1, k2;
	int32_t k3, id;
} rec;

static uint64_t rec_word(const rec *r, int w)
{
	if (w == 0)
		return (uint64_t)((uint32_t)r->k3 ^ 0x80000000u) << 32 | (uint32_t)r->id;
	return (uint64_t)(w == 1 ? r->k2 : r->k1) ^ (1ull << 63);
}

static unsigned rec_byte(const rec *r, int b)
{
	return rec_word(r, b >> 3) >> (8 * (b & 7)) & 255;
}

static int rec_cmp(const void *a, const void *b)
{
	const rec *x = a, *y = b;
	for (int w = 2; w >= 0; w--)
		if (rec_word(x, w) != rec_word(y, w))
			return rec_word(x, w) < rec_word(y, w) ? -1 : 1;
	return 0;
}

static bool rec_less(const rec *x, const rec *y)
{
	return rec_cmp(x, y) < 0;
}

PR_RADIX_SORT_DEFINE(sort_recs, rec, rec_byte, rec_less)

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The bytes in which some record differs from the first. */
static uint64_t varying_of(const rec *a, int64_t n)
{
	uint64_t v = 0;
	for (int64_t i = 1; i < n; i++)
		for (int b = 0; b < 24; b++)
			if (rec_byte(&a[i], b) != rec_byte(&a[0], b))
				v |= 1ull << b;
	return v;
}

/* Sorts a copy both ways and compares them record by record. */
static void check_sorts(rec *a, int64_t n, uint64_t varying)
{
	rec *want = malloc((size_t)(n + 1) * sizeof *want);
	for (int64_t i = 0; i < n; i++)
		want[i] = a[i];
	qsort(want, (size_t)n, sizeof *want, rec_cmp);
	sort_recs(a, n, 23, varying);
	for (int64_t i = 0; i < n; i++)
		cr_assert(!rec_cmp(&a[i], &want[i]), "record %lld: (%lld %lld %d %d), expected (%lld %lld %d %d)",
			  (long long)i, (long long)a[i].k1, (long long)a[i].k2, a[i].k3, a[i].id,
			  (long long)want[i].k1, (long long)want[i].k2, want[i].k3, want[i].id);
	free(want);
}

/* n records: k1 of n_k1 values (negative, as the planner's -size), k2 of
 * n_k2, k3 a position, a unique id; shuffled. */
static rec *make_recs(int64_t n, int n_k1, int n_k2, uint64_t seed)
{
	rec *a = malloc((size_t)(n + 1) * sizeof *a);
	for (int64_t i = 0; i < n; i++) {
		a[i].k1 = -(int64_t)(next_rand(&seed) % (uint64_t)n_k1) * 4096;
		a[i].k2 = (int64_t)(next_rand(&seed) % (uint64_t)n_k2) - n_k2 / 2;
		a[i].k3 = (int32_t)(next_rand(&seed) % 70000);
		a[i].id = (int32_t)i;
	}
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(next_rand(&seed) % (uint64_t)(i + 1));
		rec t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	return a;
}

Test(radix_sort, many_equal_leading_fields)
{
	int64_t n = 50000;
	rec *a = make_recs(n, 3, 2, 0x9e3779b97f4a7c15ull);
	check_sorts(a, n, varying_of(a, n));
	free(a);
}

Test(radix_sort, several_key_bytes_in_every_field)
{
	int64_t n = 30000;
	rec *a = make_recs(n, 1000, 100000, 12345);
	for (int64_t i = 0; i < n; i += 7)
		a[i].k1 = INT64_MIN + i;   /* the top bytes of k1 vary too */
	check_sorts(a, n, varying_of(a, n));
	free(a);
}

Test(radix_sort, equal_keys_sort_equal)
{
	/* Without the id, keys repeat: each equal run is one key, any order. */
	int64_t n = 20000;
	rec *a = make_recs(n, 4, 3, 777);
	for (int64_t i = 0; i < n; i++) {
		a[i].id = 0;
		a[i].k3 %= 5;
	}
	check_sorts(a, n, varying_of(a, n));
	free(a);
}

Test(radix_sort, a_wider_mask_changes_nothing)
{
	int64_t n = 10000;
	rec *a = make_recs(n, 10, 10, 4242);
	check_sorts(a, n, (1ull << 24) - 1);
	free(a);
}

Test(radix_sort, small_and_one_byte_inputs)
{
	for (int64_t n = 0; n <= 200; n += 7) {
		rec *a = make_recs(n, 2, 1, (uint64_t)n + 1);
		for (int64_t i = 0; i < n; i++)
			a[i].k3 = a[i].id = (int32_t)(n - i) & 255;   /* one byte each */
		check_sorts(a, n, varying_of(a, n));
		free(a);
	}
}

/* pr_radix_varying, one call a key word, gives the bytes that vary: the
 * mask the byte-by-byte comparison above finds. */
Test(radix_sort, varying_of_each_word_is_the_bytes_that_vary)
{
	int64_t n = 5000;
	rec *a = make_recs(n, 1000, 3, 99);
	for (int64_t i = 0; i < n; i += 11)
		a[i].k1 = INT64_MIN + i;
	uint64_t diff[3] = {0, 0, 0};
	for (int64_t i = 1; i < n; i++)
		for (int w = 0; w < 3; w++)
			diff[w] |= rec_word(&a[i], w) ^ rec_word(&a[0], w);
	uint64_t varying = 0;
	for (int w = 0; w < 3; w++)
		varying |= pr_radix_varying(diff[w], 8 * w, 8);
	cr_assert_eq(varying, varying_of(a, n));
	cr_assert_eq(pr_radix_varying(0x00ff000000000100ull, 4, 8), (1ull << 5) | (1ull << 10));
	cr_assert_eq(pr_radix_varying(0xff00000000ull, 12, 4), 0, "bytes past n_bytes are not looked at");
	free(a);
}

/* pr_radix_sort_u64_stable against a stable reference (qsort on the key
 * bytes, then the input position): keys with many ties packed into some
 * bytes, a payload (the input position) in the others. */
typedef struct keyed {
	uint64_t key;   /* the record's sorted bytes, masked */
	int64_t pos;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void check_stable(int64_t n, unsigned bytes, int n_values, uint64_t seed)
{
	uint64_t mask = 0;
	for (int k = 0; k < 8; k++)
		if (bytes >> k & 1)
			mask |= 255ull << (8 * k);
	uint64_t *a = malloc((size_t)(n + 1) * sizeof *a), *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
	keyed *want = malloc((size_t)(n + 1) * sizeof *want);
	uint64_t *values = malloc((size_t)n_values * sizeof *values);
	for (int v = 0; v < n_values; v++)
		values[v] = next_rand(&seed) & mask;
	int64_t (*count)[256] = malloc(8 * sizeof *count);
	for (int64_t i = 0; i < n; i++) {
		/* a key from a few values, the position in the bytes not sorted */
		uint64_t key = values[next_rand(&seed) % (uint64_t)n_values];
		uint64_t payload = ((uint64_t)i * 0x9e3779b97f4a7c15ull) & ~mask;
		a[i] = key | payload;
		want[i] = (keyed){ key, i };
	}
	uint64_t *in = malloc((size_t)(n + 1) * sizeof *in);
	for (int64_t i = 0; i < n; i++)
		in[i] = a[i];
	qsort(want, (size_t)n, sizeof *want, keyed_cmp);
	pr_radix_count_u64(a, n, bytes, count);
	uint64_t *got = pr_radix_sort_u64_stable(a, tmp, n, bytes, count);
	cr_assert(got == a || got == tmp);
	for (int64_t i = 0; i < n; i++)
		cr_assert_eq(got[i], in[want[i].pos], "record %lld of %lld (bytes %#x): %#llx, expected %#llx", (long long)i,
			     (long long)n, bytes, (unsigned long long)got[i], (unsigned long long)in[want[i].pos]);
	free(a);
	free(tmp);
	free(want);
	free(values);
	free(count);
	free(in);
}

Test(radix_sort, stable_sort_keeps_the_order_of_equal_keys)
{
	check_stable(20000, 0xf0, 7, 1);          /* a few keys in the high half, as the planner packs them */
	check_stable(20000, 0xf0, 5000, 2);       /* many */
	check_stable(5000, 0x11, 3, 3);           /* bytes apart */
	check_stable(5000, 0xff, 40, 4);          /* every byte: no payload, equal records */
	check_stable(5000, 0x80, 1, 5);           /* one key: no pass */
	for (int64_t n = 0; n <= 70; n += 3)      /* small inputs */
		check_stable(n, 0x30, 4, (uint64_t)n + 6);
}
