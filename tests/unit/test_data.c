/* test_data.c: element conversions and constant data (pr_data_materialize).
 *
 * Expected bytes are computed by hand (or, for random(SEED), by an independent
 * Python implementation of the documented generator), never by the code under
 * test. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/data.h"

static pr_spec spec(pr_dtype t, int rank, const int64_t *shape, const int64_t *strides)
{
	pr_spec s;
	pr_spec_init(&s, t, rank, shape);
	if (strides)
		pr_spec_set_strides(&s, strides);
	return s;
}

/* Materializes d for s into a buffer of exactly the storage size and
 * compares it with want (hex, storage order). */
static void expect_bytes(const pr_data *d, const pr_spec *s, const char *want_hex)
{
	size_t n = strlen(want_hex) / 2;
	cr_assert_eq(pr_spec_storage_bytes(s), (int64_t)n, "storage is %lld bytes, expected %zu",
		     (long long)pr_spec_storage_bytes(s), n);
	uint8_t *buf = malloc(n ? n : 1), *want = malloc(n ? n : 1);
	memset(buf, 0xAA, n);   /* gaps must be written as zero */
	for (size_t i = 0; i < n; i++)
		sscanf(want_hex + 2 * i, "%2hhx", &want[i]);
	pr_err *e = pr_data_materialize(d, s, buf);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	char got[1024] = "";
	for (size_t i = 0; i < n && 2 * i + 2 < sizeof got; i++)
		sprintf(got + 2 * i, "%02x", buf[i]);
	cr_expect(!memcmp(buf, want, n), "got %s, expected %s", got, want_hex);
	free(buf);
	free(want);
}

static void expect_error(const pr_data *d, const pr_spec *s, const char *needle)
{
	uint8_t buf[256];
	pr_err *e = pr_data_materialize(d, s, buf);
	cr_assert_not_null(e, "expected an error mentioning '%s'", needle);
	cr_expect(strstr(pr_err_message(e), needle), "'%s' lacks '%s'", pr_err_message(e), needle);
	pr_err_free(e);
}

static const int64_t S2[] = {2}, S3[] = {3}, S23[] = {2, 3}, S22[] = {2, 2};

/* ---- each kind ------------------------------------------------------------ */

Test(data, zeros_of_every_dtype_are_zero_bytes)
{
	pr_data d = {.kind = PR_DATA_ZEROS};
	for (int t = 0; t < PR_DTYPE_COUNT; t++) {
		pr_spec s = spec((pr_dtype)t, 1, S2, NULL);
		char hex[64] = "";
		for (size_t i = 0; i < 2 * pr_dtype_size((pr_dtype)t); i++)
			strcat(hex, "00");
		expect_bytes(&d, &s, hex);
	}
}

Test(data, ones_in_every_dtype)
{
	static const char *want[PR_DTYPE_COUNT] = {
		[PR_F32] = "0000803f0000803f", [PR_F16] = "003c003c", [PR_BF16] = "803f803f",
		[PR_F64] = "000000000000f03f000000000000f03f",
		[PR_I64] = "01000000000000000100000000000000", [PR_I32] = "0100000001000000",
		[PR_I16] = "01000100", [PR_I8] = "0101", [PR_U8] = "0101", [PR_BOOL] = "0101",
	};
	pr_data d = {.kind = PR_DATA_ONES};
	for (int t = 0; t < PR_DTYPE_COUNT; t++) {
		pr_spec s = spec((pr_dtype)t, 1, S2, NULL);
		expect_bytes(&d, &s, want[t]);
	}
}

Test(data, fill_converts_to_the_dtype)
{
	pr_data d = {.kind = PR_DATA_FILL, .fill = 0.5};
	pr_spec s = spec(PR_F16, 1, S2, NULL);
	expect_bytes(&d, &s, "00380038");
	s = spec(PR_BF16, 1, S2, NULL);
	expect_bytes(&d, &s, "003f003f");
	d.fill = -3;
	s = spec(PR_I32, 1, S2, NULL);
	expect_bytes(&d, &s, "fdfffffffdffffff");
	d.fill = -2.7;   /* integers truncate toward zero */
	s = spec(PR_I16, 1, S2, NULL);
	expect_bytes(&d, &s, "fefffeff");
	d.fill = 300;    /* and saturate */
	s = spec(PR_U8, 1, S2, NULL);
	expect_bytes(&d, &s, "ffff");
	s = spec(PR_I8, 1, S2, NULL);
	expect_bytes(&d, &s, "7f7f");
	d.fill = -1;
	s = spec(PR_U8, 1, S2, NULL);
	expect_bytes(&d, &s, "0000");
	d.fill = NAN;
	s = spec(PR_I32, 1, S2, NULL);
	expect_bytes(&d, &s, "0000000000000000");
	d.fill = 0.25;   /* bool is v != 0 */
	s = spec(PR_BOOL, 1, S2, NULL);
	expect_bytes(&d, &s, "0101");
}

Test(data, arange_counts_in_logical_order)
{
	pr_data d = {.kind = PR_DATA_ARANGE};
	pr_spec s = spec(PR_I64, 1, S3, NULL);
	expect_bytes(&d, &s, "000000000000000001000000000000000200000000000000");
	s = spec(PR_F32, 1, S3, NULL);
	expect_bytes(&d, &s, "000000000000803f00000040");
	/* Transposed storage: element (i, j) lives at i + 2j. */
	s = spec(PR_I8, 2, S22, (const int64_t[]){1, 2});
	expect_bytes(&d, &s, "00020103");
}

Test(data, strided_storage_gaps_are_zero)
{
	pr_data d = {.kind = PR_DATA_ARANGE};
	pr_spec s = spec(PR_U8, 2, S23, (const int64_t[]){8, 1});
	expect_bytes(&d, &s, "0001020000000000030405");
	d.kind = PR_DATA_ONES;
	s = spec(PR_I16, 1, S3, (const int64_t[]){2});
	expect_bytes(&d, &s, "0100000001000000" "0100");
	/* A broadcast (stride 0) writes every element over the same storage. */
	d.kind = PR_DATA_ARANGE;
	s = spec(PR_U8, 1, S3, (const int64_t[]){0});
	expect_bytes(&d, &s, "02");
}

Test(data, list_values_in_logical_row_major_order)
{
	double v[] = {1.0, -2.5, 1e-7, 3.0};
	pr_data d = {.kind = PR_DATA_LIST, .n_values = 4, .values = v};
	pr_spec s = spec(PR_F32, 2, S22, NULL);
	expect_bytes(&d, &s, "0000803f000020c095bfd63300004040");
	s = spec(PR_F32, 2, S22, (const int64_t[]){1, 2});  /* transposed */
	expect_bytes(&d, &s, "0000803f95bfd633000020c000004040");
	s = spec(PR_I32, 2, S22, NULL);
	expect_bytes(&d, &s, "01000000feffffff0000000003000000");
	double b[] = {1, 0};
	pr_data db = {.kind = PR_DATA_LIST, .n_values = 2, .values = b};
	s = spec(PR_BOOL, 1, S2, NULL);
	expect_bytes(&db, &s, "0100");
}

Test(data, random_follows_the_documented_generator)
{
	/* splitmix64's first output from state 0, as published. */
	cr_expect_eq(pr_random_bits(0, 0), UINT64_C(0xE220A8397B1DCDAF));
	/* The example in docs/binary-format.md. */
	pr_data d0 = {.kind = PR_DATA_RANDOM, .seed = 0};
	pr_spec one = spec(PR_F32, 0, NULL, NULL);
	expect_bytes(&d0, &one, "5041443f");
	one = spec(PR_I32, 0, NULL, NULL);
	expect_bytes(&d0, &one, "06000000");
	one = spec(PR_U8, 0, NULL, NULL);
	expect_bytes(&d0, &one, "01");
	one = spec(PR_BOOL, 0, NULL, NULL);
	expect_bytes(&d0, &one, "01");
	pr_data d = {.kind = PR_DATA_RANDOM, .seed = 12345};
	pr_spec s = spec(PR_F32, 1, S3, NULL);
	expect_bytes(&d, &s, "fbdc3bbf462217bf51cb42bf");
	s = spec(PR_I32, 1, S3, NULL);
	expect_bytes(&d, &s, "fbfffffff9ffffff02000000");
	s = spec(PR_U8, 1, S3, NULL);
	expect_bytes(&d, &s, "03090a");
	d.seed = 7;
	s = spec(PR_BOOL, 1, (const int64_t[]){8}, NULL);
	expect_bytes(&d, &s, "0000010100000000");
	/* Strided: element i goes to its storage offset, (i/3) + 2(i%3). */
	s = spec(PR_F32, 2, S23, (const int64_t[]){1, 2});
	expect_bytes(&d, &s, "f1a061be5cd7293e866777bf4accc2bd81304d3f834a00bf");
	for (uint64_t i = 0; i < 1000; i++) {
		double f = pr_random_value(PR_F32, 99, i), n = pr_random_value(PR_I64, 99, i);
		cr_assert(f >= -1.0 && f < 1.0);
		cr_assert(n >= -10 && n <= 10 && n == floor(n));
		cr_assert(pr_random_value(PR_U8, 99, i) <= 10);
	}
}

Test(data, blob_and_mapped_bytes_are_copied_as_storage)
{
	pr_blob blob = {.name = "w", .size = 4, .bytes = (const uint8_t *)"\x01\x02\x03\x04"};
	pr_data d = {.kind = PR_DATA_BLOB, .blob = &blob};
	pr_spec s = spec(PR_I16, 1, S2, NULL);
	expect_bytes(&d, &s, "01020304");
	s = spec(PR_U8, 1, S2, (const int64_t[]){3});   /* storage spans 4 bytes */
	expect_bytes(&d, &s, "01020304");
	/* Mapped bytes, when present, are the data. */
	pr_data m = {.kind = PR_DATA_ZEROS, .mapped = (const uint8_t *)"\x05\x06", .mapped_size = 2};
	s = spec(PR_U8, 1, S2, NULL);
	expect_bytes(&m, &s, "0506");
}

Test(data, bad_data_is_an_error)
{
	pr_spec s = spec(PR_F32, 1, S3, NULL);
	pr_data none = {.kind = PR_DATA_NONE};
	expect_error(&none, &s, "no data");
	double v[] = {1, 2};
	pr_data list = {.kind = PR_DATA_LIST, .n_values = 2, .values = v};
	expect_error(&list, &s, "lists 2 values, but the tensor has 3 elements");
	pr_blob blob = {.name = "w", .size = 4, .bytes = (const uint8_t *)"abcd"};
	pr_data d = {.kind = PR_DATA_BLOB, .blob = &blob};
	expect_error(&d, &s, "blob @w holds 4 bytes, but the tensor's storage spans 12");
	pr_spec huge = s;   /* set by hand: pr_spec_init would compute overflowing strides */
	const int64_t huge_shape[2] = {INT64_C(1) << 40, INT64_C(1) << 40}, huge_strides[2] = {0, 0};
	pr_spec_set_layout(&huge, 2, huge_shape, huge_strides);
	pr_data z = {.kind = PR_DATA_ZEROS};
	expect_error(&z, &huge, "too large");
}

/* ---- f16 / bf16 ----------------------------------------------------------- */

Test(data, f16_rounds_to_nearest_even)
{
	cr_expect_eq(pr_f16_from_double(1.0), 0x3c00);
	cr_expect_eq(pr_f16_from_double(1.0 + 0x1p-11), 0x3c00);        /* tie: even */
	cr_expect_eq(pr_f16_from_double(1.0 + 3 * 0x1p-11), 0x3c02);    /* tie: even */
	cr_expect_eq(pr_f16_from_double(1.0 + 0x1p-11 + 0x1p-30), 0x3c01); /* above the tie */
	cr_expect_eq(pr_f16_from_double(65504.0), 0x7bff);              /* largest finite */
	cr_expect_eq(pr_f16_from_double(65519.99), 0x7bff);
	cr_expect_eq(pr_f16_from_double(65520.0), 0x7c00);              /* rounds to inf */
	cr_expect_eq(pr_f16_from_double(1e300), 0x7c00);
	cr_expect_eq(pr_f16_from_double(-INFINITY), 0xfc00);
	cr_expect_eq(pr_f16_from_double(0x1p-14), 0x0400);              /* smallest normal */
	cr_expect_eq(pr_f16_from_double(0x1p-24), 0x0001);              /* smallest subnormal */
	cr_expect_eq(pr_f16_from_double(0x1p-25), 0x0000);              /* tie: even (zero) */
	cr_expect_eq(pr_f16_from_double(0x1.8p-24), 0x0002);            /* tie: even (two) */
	cr_expect_eq(pr_f16_from_double(0x1p-25 * 1.0001), 0x0001);
	cr_expect_eq(pr_f16_from_double(0x1.ffcp-15), 0x0400);          /* carries into normal */
	cr_expect_eq(pr_f16_from_double(-0.0), 0x8000);
	cr_expect_eq(pr_f16_from_double(1e-300), 0x0000);
	cr_expect_eq(pr_f16_from_double(NAN) & 0x7e00, 0x7e00);
	cr_expect_eq(pr_f16_to_double(0x3555), 0x1.554p-2);
	cr_expect(isinf(pr_f16_to_double(0xfc00)) && pr_f16_to_double(0xfc00) < 0);
	cr_expect(isnan(pr_f16_to_double(0x7e01)));
}

Test(data, bf16_rounds_to_nearest_even)
{
	cr_expect_eq(pr_bf16_from_double(1.0), 0x3f80);
	cr_expect_eq(pr_bf16_from_double(1.0 + 0x1p-8), 0x3f80);
	cr_expect_eq(pr_bf16_from_double(1.0 + 3 * 0x1p-8), 0x3f82);
	cr_expect_eq(pr_bf16_from_double(-2.0), 0xc000);
	cr_expect_eq(pr_bf16_from_double(0x1.fep127), 0x7f7f);           /* largest finite */
	cr_expect_eq(pr_bf16_from_double(0x1.ffp127), 0x7f80);           /* tie: even = inf */
	cr_expect_eq(pr_bf16_from_double(0x1p-133), 0x0001);             /* smallest subnormal */
	cr_expect_eq(pr_bf16_from_double(NAN) & 0x7fc0, 0x7fc0);
	cr_expect_eq(pr_bf16_to_double(0x4049), 3.140625);
}

Test(data, every_f16_and_bf16_value_survives_a_round_trip)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		double v = pr_f16_to_double((uint16_t)h);
		if (!isnan(v))
			cr_assert_eq(pr_f16_from_double(v), h, "f16 0x%04x -> %g -> 0x%04x", h, v,
				     pr_f16_from_double(v));
		v = pr_bf16_to_double((uint16_t)h);
		if (!isnan(v))
			cr_assert_eq(pr_bf16_from_double(v), h, "bf16 0x%04x", h);
	}
}

Test(data, element_load_and_store_in_every_dtype)
{
	uint8_t buf[8];
	for (int t = 0; t < PR_DTYPE_COUNT; t++) {
		pr_elem_store((pr_dtype)t, buf, 3.0);
		cr_expect_eq(pr_elem_load((pr_dtype)t, buf), t == PR_BOOL ? 1.0 : 3.0, "%s",
			     pr_dtype_name((pr_dtype)t));
		pr_elem_store_i64((pr_dtype)t, buf, -2);
		cr_expect_eq(pr_elem_load_i64((pr_dtype)t, buf), t == PR_BOOL ? 1 : t == PR_U8 ? 0 : -2,
			     "%s", pr_dtype_name((pr_dtype)t));
	}
	pr_elem_store_i64(PR_I64, buf, INT64_MAX);   /* beyond a double's 53 bits */
	cr_expect_eq(pr_elem_load_i64(PR_I64, buf), INT64_MAX);
}
