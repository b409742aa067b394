/* binary_load.c: loading the binary format (.bin), trusting nothing.
 *
 * The layout is docs/binary-format.md. The loader first checks the 64-byte
 * header (magic, version, byte-order mark, the file size it records against
 * the real one) and the section table (every section once, inside the file,
 * DATA aligned to 64 bytes). It then reads each metadata section with a
 * cursor that may never pass the section's end: every read asks for its bytes
 * first, so a short or lying file stops with an error, never a read past the
 * buffer. Counts are checked against the bytes left in the section (each
 * record takes at least PRB_MIN_* bytes) before anything is allocated for
 * them, so a huge count costs nothing. Shapes are checked for overflow the way
 * the text parser checks them; every index (schema, delegate, blob, node) is
 * checked against what exists, and a node may only read nodes before it.
 *
 * Every error reads "FILE: byte OFFSET: what was wrong, what was expected",
 * OFFSET being where the offending field starts. The first error wins; the
 * half-built program is freed.
 *
 * With borrow, blob bytes and the materialized bytes of constants point into
 * the buffer (pr_blob.borrowed, pr_data.mapped), which is how a mapped file's
 * constants are used without a copy; otherwise blobs are copied and mapped
 * stays NULL (the data can be materialized again from its description).
 *
 * Nothing is malloc'd per node: a node's args, input name, list values,
 * tuple elements and write-backs are its graph's storage (program.h), and
 * its name is interned; on an error the graph frees them with the rest. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "binary_format.h"
#include "passrun/data.h"
#include "passrun/format.h"
#include "short_copy.h"
#include "passrun/strbuf.h"

#define RD_DEVICE_MAX (1 + (PR_DEVICE_TYPE_MAX - 1) + 4)   /* length, type, index */
#define RD_KNOWN_DEVICES 8

/* A device as the file spells it and as it loaded. */
typedef struct rd_known_device {
	uint8_t raw[RD_DEVICE_MAX];
	size_t len;
	pr_device dev;
} rd_known_device;

#define RD_KNOWN_LAYOUTS 64   /* a power of two */

/* A layout as the file spells it and as it was interned (rd_layout_known). */
typedef struct rd_known_layout {
	size_t len;             /* 0: empty */
	uint8_t raw[4 + 16 * PR_MAX_RANK];
	const int64_t *shape;   /* interned: the shape then the strides */
	int64_t storage;        /* its storage span in bytes */
	uint8_t dev_raw[RD_DEVICE_MAX];   /* the device that last followed it, */
	size_t dev_len;                   /* as the file spells it (0: none yet), */
	pr_device_id dev_id;              /* and its id once loaded */
} rd_known_layout;

/* A node read but not linked yet (rd_node): its name as the file has it,
 * hashed, and where the name starts, for the duplicate's message. */
typedef struct rd_pending {
	pr_node *node;
	const char *name;     /* NULL: none */
	uint32_t len, hash;
	size_t name_at;
} rd_pending;

#define RD_LAG 8   /* nodes read ahead of the one interned and linked: a power of two */

typedef struct rd {
	const char *file;
	const uint8_t *buf;
	size_t len;
	size_t pos, end;        /* cursor, and the end of the section it reads */
	const char *section;    /* that section's name, for messages */
	bool borrow;
	pr_program *prog;
	pr_graph *graph;        /* the graph being read: its args come from its storage */
	pr_blob **blobs;        /* by index */
	size_t n_blobs;
	uint64_t data_off, data_size;   /* the DATA section */
	int depth;              /* argument list nesting */
	char *scratch;          /* the last name read (rd_name) */
	rd_known_device known[RD_KNOWN_DEVICES];   /* devices already checked (rd_device_known) */
	int n_known;
	rd_known_layout *layouts;   /* RD_KNOWN_LAYOUTS, by a hash of their bytes */
	int64_t storage;        /* the storage bytes of the last layout read, checked */
	rd_known_layout *layout;   /* where the last layout read is remembered */
	const uint8_t *last_spec;  /* the last spec read without a memory arena, */
	size_t last_spec_len;      /* as the file spells it (0: none yet), */
	pr_spec last_spec_read;    /* as it loaded, */
	int64_t last_storage;      /* and its storage bytes (rd_spec_repeated) */
	int *schema_need;       /* by schema: the arguments an op must have (schema_need) */
	size_t scratch_cap;
	rd_pending lag[RD_LAG];   /* the nodes read and not linked yet, oldest at lag_first */
	unsigned lag_first, lag_n;
	pr_err *err;
} rd;

/* For the few readers on every node that the compiler would rather call. */
#define RD_INLINE static inline __attribute__((always_inline))

static bool rd_fail(rd *r, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool rd_fail(rd *r, size_t at, const char *fmt, ...)
{
	if (r->err)
		return false;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r->err = pr_err_new("%s: byte %zu: %s", r->file, at, msg);
	return false;
}

/* ---- primitive fields -------------------------------------------------------- */

static __attribute__((noinline, cold)) bool rd_short(rd *r, size_t n, const char *what)
{
	return rd_fail(r, r->pos, "truncated %s: expected %s (%zu bytes), but the section ends at byte %zu",
		       r->section, what, n, r->end);
}

/* The reads below are on every field of every node: the check is one compare
 * inline, the message out of line. */
static inline bool rd_need(rd *r, size_t n, const char *what)
{
	if (__builtin_expect(r->end - r->pos >= n, 1))
		return true;
	return rd_short(r, n, what);
}

static inline uint64_t rd_le(rd *r, int n)
{
	uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&v, r->buf + r->pos, (size_t)n);
#else
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->buf[r->pos + (size_t)i] << (8 * i);
#endif
	r->pos += (size_t)n;
	return v;
}

static inline bool rd_u8(rd *r, const char *what, uint8_t *v)
{
	if (!rd_need(r, 1, what))
		return false;
	*v = r->buf[r->pos++];
	return true;
}

static inline bool rd_u32(rd *r, const char *what, uint32_t *v)
{
	if (!rd_need(r, 4, what))
		return false;
	*v = (uint32_t)rd_le(r, 4);
	return true;
}

static inline bool rd_u64(rd *r, const char *what, uint64_t *v)
{
	if (!rd_need(r, 8, what))
		return false;
	*v = rd_le(r, 8);
	return true;
}

static inline bool rd_i64(rd *r, const char *what, int64_t *v)
{
	uint64_t u;
	if (!rd_u64(r, what, &u))
		return false;
	*v = (int64_t)u;
	return true;
}

static inline bool rd_f64(rd *r, const char *what, double *v)
{
	uint64_t u;
	if (!rd_u64(r, what, &u))
		return false;
	memcpy(v, &u, sizeof *v);
	return true;
}

/* A u32 count of records of at least min_each bytes, which the rest of the
 * section must be able to hold. */
static __attribute__((noinline, cold)) bool rd_too_many(rd *r, size_t at, const char *what,
							  size_t min_each, uint32_t n)
{
	size_t left = r->end - r->pos;
	return rd_fail(r, at, "%s is %u, but the %zu bytes left in the %s section hold at most %zu",
		       what, n, left, r->section, left / min_each);
}

static inline bool rd_count(rd *r, const char *what, size_t min_each, uint32_t *n)
{
	size_t at = r->pos;
	if (!rd_u32(r, what, n))
		return false;
	if (__builtin_expect(*n > PRB_MAX_COUNT || (uint64_t)*n * min_each > r->end - r->pos, 0))
		return rd_too_many(r, at, what, min_each, *n);
	return true;
}

/* Whether the n bytes at s, which lie in r's buffer, hold a NUL byte: 16
 * at a time for the short strings (an input's name, a write-back's
 * target: "layers.123.feed_forward.w1.weight"), where a library call costs
 * more than the look. */
RD_INLINE bool has_nul(const rd *r, const char *s, uint32_t n)
{
#ifdef __SSE2__
	size_t readable = (size_t)((const char *)r->buf + r->len - s);
	if (n <= 64 && readable >= 16) {
		__m128i zero = _mm_setzero_si128();
		unsigned found = (unsigned)_mm_movemask_epi8(
			_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)s), zero));
		if (n <= 16)
			return (found & ~(0xffffu << n)) != 0;
		for (uint32_t i = 16; i + 16 < n; i += 16)
			found |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
				_mm_loadu_si128((const __m128i *)(const void *)(s + i)), zero));
		found |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)), zero));
		return found != 0;
	}
#else
	(void)r;
#endif
	return memchr(s, 0, n) != NULL;
}

/* A string: u32 length, then that many bytes without NUL. Not necessarily
 * UTF-8: the text's \xHH escapes can put any other byte in a string. With
 * optional, the length PRB_NO_STRING means absent (*out = NULL). The bytes
 * are left in the file: *out points at them, *len says how many. */
static __attribute__((noinline)) bool rd_span_checked(rd *r, const char *what, bool optional,
						       const char **out, uint32_t *len)
{
	size_t at = r->pos;
	uint32_t n;
	*out = NULL;
	if (!rd_u32(r, what, &n))
		return false;
	if (optional && n == PRB_NO_STRING)
		return true;
	size_t left = r->end - r->pos;
	if (n > PRB_MAX_STRING)
		return rd_fail(r, at, "%s is %u bytes long, more than the %u bytes a string may "
			       "hold", what, n, PRB_MAX_STRING);
	if (n > left)
		return rd_fail(r, at, "%s is %u bytes long, which runs past the end of the %s section "
			       "(%zu bytes left)", what, n, r->section, left);
	const char *s = (const char *)r->buf + r->pos;
	if (has_nul(r, s, n))
		return rd_fail(r, at, "%s contains a NUL byte, expected text", what);
	*out = s;
	*len = n;
	r->pos += n;
	return true;
}

/* [A-Za-z0-9_.], by byte: one load per byte of every node's name. */
static const uint8_t name_byte[256] = {
	['.'] = 1, ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['_'] = 1, ['a' ... 'z'] = 1,
};

static bool all_name_bytes(const char *s, uint32_t n)
{
	unsigned ok = n > 0;
	for (uint32_t i = 0; i < n; i++)
		ok &= name_byte[(unsigned char)s[i]];
	return ok;
}

#ifdef __SSE2__
/* Which of the 16 bytes at s are name bytes, a bit each: letters are the
 * bytes that OR 0x20 takes to a-z, and a byte >= 0x80 is negative to the
 * signed compares, so it is none of them. */
static inline unsigned name_bytes16(const char *s)
{
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i l = _mm_or_si128(c, _mm_set1_epi8(0x20));
	__m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)),
				      _mm_cmplt_epi8(l, _mm_set1_epi8('z' + 1)));
	__m128i digit = _mm_and_si128(_mm_cmpgt_epi8(c, _mm_set1_epi8('0' - 1)),
				      _mm_cmplt_epi8(c, _mm_set1_epi8('9' + 1)));
	__m128i punct = _mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8('_')),
				     _mm_cmpeq_epi8(c, _mm_set1_epi8('.')));
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), punct));
}
#endif

/* all_name_bytes for the n bytes at s, which lie in r's buffer, 16 at a
 * time where 16 bytes from s are in the buffer (a name's 10 or so bytes in
 * one step): every node has a name. */
RD_INLINE bool name_bytes_in(const rd *r, const char *s, uint32_t n)
{
#ifdef __SSE2__
	size_t readable = (size_t)((const char *)r->buf + r->len - s);
	if (n > 0 && n <= 16 && readable >= 16)
		return ((name_bytes16(s) | (0xffffu << n)) & 0xffffu) == 0xffffu;
	if (n > 16) {
		for (uint32_t i = 0; i + 16 < n; i += 16)
			if (name_bytes16(s + i) != 0xffffu)
				return false;
		return name_bytes16(s + n - 16) == 0xffffu;
	}
#else
	(void)r;
#endif
	return all_name_bytes(s, n);
}

/* The string field at the cursor taken in one pass when it is all there
 * and its bytes pass their check (a name's: name bytes, which says it has
 * no NUL; any other string's: no NUL), or when it is absent and optional;
 * false, with the cursor where it was, for anything else, which the
 * checked readers then report. */
RD_INLINE bool rd_span_taken(rd *r, bool optional, bool name, const char **out, uint32_t *len)
{
	if (__builtin_expect(r->end - r->pos < 4, 0))
		return false;
	size_t at = r->pos;
	uint32_t n = (uint32_t)rd_le(r, 4);
	const char *s = (const char *)r->buf + r->pos;
	if (n <= PRB_MAX_STRING && n <= r->end - r->pos &&
	    (name ? name_bytes_in(r, s, n) : !has_nul(r, s, n))) {
		r->pos += n;
		*out = s;
		*len = n;
		return true;
	}
	if (optional && n == PRB_NO_STRING) {
		*out = NULL;
		return true;
	}
	r->pos = at;
	return false;
}

/* rd_span_checked, inline for the string it takes in one pass (every input
 * has a name or none). */
RD_INLINE bool rd_span(rd *r, const char *what, bool optional, const char **out,
		      uint32_t *len)
{
	return rd_span_taken(r, optional, false, out, len) ||
	       rd_span_checked(r, what, optional, out, len);
}

/* A NUL-terminated copy of a string, or NULL when optional and absent: in
 * the storage of graph `in` (a node's part: pr_graph_alloc), or malloc'd for
 * the caller when in is NULL. */
RD_INLINE bool rd_string(rd *r, const char *what, bool optional, pr_graph *in, char **out)
{
	const char *s;
	uint32_t n;
	*out = NULL;
	if (!rd_span(r, what, optional, &s, &n))
		return false;
	if (s && in) {
		*out = pr_graph_alloc(in, (size_t)n + 1);   /* zeroed: the NUL */
		copy_short((uint8_t *)*out, s, n);
	} else if (s)
		*out = pr_xstrndup(s, n);
	return true;
}

/* rd_name_span's checks one by one, each with its own message: the way a
 * name that is not one fails. */
static __attribute__((noinline)) bool rd_name_span_slow(rd *r, const char *what, bool optional,
							const char **out, uint32_t *len)
{
	size_t at = r->pos;
	const char *s;
	uint32_t n = 0;
	*out = NULL;
	if (!rd_span_checked(r, what, optional, &s, &n))
		return false;
	if (!s)
		return true;
	if (!all_name_bytes(s, n))
		return rd_fail(r, at, "%s is not a name, expected one or more of A-Z a-z 0-9 _ .", what);
	*out = s;
	*len = n;
	return true;
}

/* A name as the text format writes after '%' or '@': [A-Za-z0-9_.]+, left in
 * the file: *out points at its *len bytes (no NUL). A well-formed name is
 * taken in one pass; anything else goes the way rd_span and the name check
 * report it. */
RD_INLINE bool rd_name_span(rd *r, const char *what, bool optional, const char **out,
			   uint32_t *len)
{
	return rd_span_taken(r, optional, true, out, len) ||
	       rd_name_span_slow(r, what, optional, out, len);
}

/* The same as a NUL-terminated copy in r->scratch, valid until the next
 * rd_name, for the few names handed to functions that take a C string
 * (every one copies it): no allocation per name. */
static bool rd_name(rd *r, const char *what, bool optional, const char **out)
{
	const char *s;
	uint32_t n;
	*out = NULL;
	if (!rd_name_span(r, what, optional, &s, &n))
		return false;
	if (!s)
		return true;
	if (n >= r->scratch_cap) {
		r->scratch_cap = (size_t)n + 64;
		free(r->scratch);
		r->scratch = pr_xmalloc(r->scratch_cap);
	}
	memcpy(r->scratch, s, n);
	r->scratch[n] = 0;
	*out = r->scratch;
	return true;
}

/* ---- types ------------------------------------------------------------------ */

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

#ifdef __SSE2__
/* The 16 bytes at a + at and b + at, XORed. */
static inline __m128i xor16(const uint8_t *a, const uint8_t *b, size_t at)
{
	return _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(a + at)),
			     _mm_loadu_si128((const __m128i *)(const void *)(b + at)));
}
#endif

/* memcmp(a, b, len) == 0 for the short records (devices, layouts) compared
 * on every spec, len >= 4, in a few word compares instead of a call. */
static inline bool bytes_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (len < 8)
		return load32(a) == load32(b) && load32(a + len - 4) == load32(b + len - 4);
	if (len <= 16)
		return ((load64(a) ^ load64(b)) | (load64(a + len - 8) ^ load64(b + len - 8))) == 0;
#ifdef __SSE2__
	/* 16 bytes a step, the differences ORed and looked at once (a spec of
	 * rank 2 on the host is 44 bytes: three steps, one branch) */
	__m128i diff = _mm_or_si128(xor16(a, b, 0), xor16(a, b, len - 16));
	for (size_t i = 16; i + 16 < len; i += 16)
		diff = _mm_or_si128(diff, xor16(a, b, i));
	return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xffff;
#else
	for (size_t i = 0; i + 8 < len; i += 8)
		if (load64(a + i) != load64(b + i))
			return false;
	return load64(a + len - 8) == load64(b + len - 8);
#endif
}

/* The device at the cursor when its bytes are those of one already checked:
 * a program names a handful of devices a million times, and checking and
 * parsing each costs more than the rest of its spec. */
static bool rd_device_known(rd *r, pr_device *d)
{
	if (r->end - r->pos < 5)
		return false;
	const uint8_t *at = r->buf + r->pos;
	size_t len = (size_t)at[0] + 5;
	if (len > RD_DEVICE_MAX || r->end - r->pos < len)
		return false;
	for (int i = 0; i < r->n_known; i++) {
		const rd_known_device *k = &r->known[i];
		if (k->len == len && bytes_equal(k->raw, at, len)) {
			*d = k->dev;
			r->pos += len;
			return true;
		}
	}
	return false;
}

static void rd_device_remember(rd *r, size_t at, pr_device d)
{
	rd_known_device *k = &r->known[r->n_known < RD_KNOWN_DEVICES ? r->n_known++ :
				       (int)(at % RD_KNOWN_DEVICES)];
	k->len = r->pos - at;
	memcpy(k->raw, r->buf + at, k->len);
	k->dev = d;
}

static bool rd_device(rd *r, const char *what, pr_device *d)
{
	if (rd_device_known(r, d))
		return true;
	size_t at = r->pos;
	uint8_t n;
	if (!rd_u8(r, what, &n))
		return false;
	if (n >= PR_DEVICE_TYPE_MAX)
		return rd_fail(r, at, "%s's type is %u bytes long, expected at most %d", what, n,
			       PR_DEVICE_TYPE_MAX - 1);
	if (!rd_need(r, (size_t)n + 4, what))
		return false;
	memset(d, 0, sizeof *d);
	for (int i = 0; i < n; i++) {
		char c = (char)r->buf[r->pos + (size_t)i];
		bool ok = (c >= 'a' && c <= 'z') || (i > 0 && ((c >= '0' && c <= '9') || c == '_'));
		if (!ok)
			return rd_fail(r, r->pos + (size_t)i, "%s's type has the byte 0x%02x, expected a "
				       "lower-case device type like \"cuda\"", what, (unsigned char)c);
		d->type[i] = c;
	}
	r->pos += n;
	size_t iat = r->pos;
	d->index = (int32_t)(uint32_t)rd_le(r, 4);
	if (d->index < -1 || (n == 0 && d->index != -1))
		return rd_fail(r, iat, "%s's index is %d, expected -1 (none) or a device index >= 0",
			       what, (int)d->index);
	/* The text's devices only, made canonical as the text's are (device.h:
	 * an index of -1 on a device is 0, cpu:N is the host). */
	char buf[PR_DEVICE_STR_MAX];
	pr_device back;
	const char *str = pr_device_str(*d, buf);
	if (n > 0 && !pr_device_parse(str, strlen(str), &back))
		return rd_fail(r, at, "%s is '%s', expected a device like cpu or cuda:0", what, str);
	*d = pr_device_canonical(*d);
	rd_device_remember(r, at, *d);
	return true;
}

/* The sizes a later stage multiplies must fit in int64 (as in the text);
 * *storage is the storage span in bytes. */
static bool rd_spec_sizes(rd *r, size_t at, const pr_spec *s, int64_t *storage)
{
	int64_t numel, bytes;
	if (!pr_spec_numel_checked(s, &numel) ||
	    __builtin_mul_overflow(numel, (int64_t)pr_dtype_size(s->dtype), &bytes))
		return rd_fail(r, at, "the tensor's shape overflows: its element count or size in bytes "
			       "does not fit in int64, expected a shape whose size fits");
	if (!pr_spec_storage_bytes_checked(s, storage))
		return rd_fail(r, at, "the tensor's strides overflow: its storage span does not fit in "
			       "int64, expected strides whose span fits");
	return true;
}

static bool rd_dims(rd *r, const char *what, int rank, int64_t *v)
{
	for (int i = 0; i < rank; i++) {
		size_t at = r->pos;
		if (!rd_i64(r, what, &v[i]))
			return false;
		if (v[i] < 0)
			return rd_fail(r, at, "%s %d is %lld, expected a value >= 0", what, i,
				       (long long)v[i]);
	}
	return true;
}

/* The file's bytes of a layout (dtype, rank, flags, reserved, shape,
 * strides) as they were read before, checked and interned: most of a
 * program's specs repeat a few layouts, and reading one again then costs a
 * hash and a compare instead of its checks and an intern. */
static size_t layout_bytes(const uint8_t *at)
{
	return 4 + 16 * (size_t)at[1];
}

static rd_known_layout *layout_slot(rd *r, const uint8_t *at, size_t len)
{
	uint64_t h = load32(at);
	for (size_t i = 4; i < len; i += 8) {
		h = (h ^ load64(at + i)) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
	}
	return &r->layouts[(h >> 32) & (RD_KNOWN_LAYOUTS - 1)];
}

static bool rd_layout_known(rd *r, pr_spec *s)
{
	const uint8_t *at = r->buf + r->pos;
	if (r->end - r->pos < 4 || at[1] > PR_MAX_RANK || r->end - r->pos < layout_bytes(at))
		return false;
	size_t len = layout_bytes(at);
	rd_known_layout *k = layout_slot(r, at, len);
	if (k->len != len || !bytes_equal(k->raw, at, len))
		return false;
	r->layout = k;
	s->dtype = (pr_dtype)at[0];   /* s comes zeroed: see rd_layout */
	s->rank = at[1];
	s->shape = k->shape;
	r->storage = k->storage;
	r->pos += len;
	return true;
}

static void rd_layout_remember(rd *r, size_t at, const pr_spec *s)
{
	const uint8_t *raw = r->buf + at;
	size_t len = layout_bytes(raw);
	rd_known_layout *k = layout_slot(r, raw, len);
	k->len = len;
	memcpy(k->raw, raw, len);
	k->shape = s->shape;
	k->storage = r->storage;
	k->dev_len = 0;
	r->layout = k;
}

/* A spec's layout: dtype, rank, flags and dims, all checked, into s, which
 * its owner has zeroed (rd_type's type, its tuple's pr_graph_alloc'd
 * elements). */
static bool rd_layout(rd *r, pr_spec *s)
{
	if (rd_layout_known(r, s))
		return true;
	size_t at = r->pos;
	uint8_t dtype, rank, flags, reserved;
	if (!rd_u8(r, "a dtype", &dtype) || !rd_u8(r, "a rank", &rank) ||
	    !rd_u8(r, "the tensor flags", &flags) || !rd_u8(r, "a reserved byte", &reserved))
		return false;
	if (dtype >= PR_DTYPE_COUNT)
		return rd_fail(r, at, "dtype %u is unknown, expected 0..%d", dtype, PR_DTYPE_COUNT - 1);
	if (rank > PR_MAX_RANK)
		return rd_fail(r, at + 1, "rank %u is too large, expected at most %d", rank, PR_MAX_RANK);
	if (flags & ~PRB_SPEC_HAS_MEM)
		return rd_fail(r, at + 2, "tensor flags 0x%02x has unknown bits, expected 0 or 1", flags);
	if (reserved)
		return rd_fail(r, at + 3, "reserved byte is %u, expected 0", reserved);
	s->dtype = (pr_dtype)dtype;
	/* Checked on the file's dims, interned only once accepted. */
	int64_t dims[2 * PR_MAX_RANK];   /* the shape then the strides, as a spec's */
	pr_spec read = {.dtype = s->dtype, .rank = rank, .shape = dims};
	if (!rd_dims(r, "dimension", rank, dims) || !rd_dims(r, "stride", rank, dims + rank) ||
	    !rd_spec_sizes(r, at, &read, &r->storage))
		return false;
	pr_spec_set_layout(s, rank, dims, dims + rank);
	rd_layout_remember(r, at, s);
	return true;
}

/* A spec's device id: most often the one that followed the same layout
 * last time, which is then one compare and no intern. */
static bool rd_spec_device(rd *r, pr_device_id *id)
{
	rd_known_layout *k = r->layout;
	if (k->dev_len && r->end - r->pos >= k->dev_len &&
	    bytes_equal(k->dev_raw, r->buf + r->pos, k->dev_len)) {
		*id = k->dev_id;
		r->pos += k->dev_len;
		return true;
	}
	size_t at = r->pos;
	pr_device d;
	if (!rd_device(r, "the tensor's device", &d))
		return false;
	k->dev_len = r->pos - at;
	memcpy(k->dev_raw, r->buf + at, k->dev_len);
	k->dev_id = *id = pr_device_intern(d);
	return true;
}

/* The spec at the cursor when its bytes are those of the last spec read
 * (without a memory arena): consecutive nodes mostly have the same type (a
 * delegate call's one-tuple and the getitem of it), and the same bytes were
 * checked and loaded then, so they load the same now, in one compare. */
RD_INLINE bool rd_spec_repeated(rd *r, pr_spec *s)
{
	size_t len = r->last_spec_len;
	if (!len || r->end - r->pos < len || !bytes_equal(r->last_spec, r->buf + r->pos, len))
		return false;
	*s = r->last_spec_read;
	r->storage = r->last_storage;
	r->pos += len;
	return true;
}

/* Inline in rd_type: a call per node cost more than the repeated spec. */
RD_INLINE bool rd_spec(rd *r, pr_spec *s)
{
	if (rd_spec_repeated(r, s))
		return true;
	size_t at = r->pos;
	pr_device dev;
	if (!rd_layout(r, s) || !rd_spec_device(r, &s->device_id))
		return false;
	s->has_mem = r->buf[at + 2] & PRB_SPEC_HAS_MEM;   /* the flags, checked */
	if (!s->has_mem) {
		r->last_spec = r->buf + at;
		r->last_spec_len = r->pos - at;
		r->last_spec_read = *s;
		r->last_storage = r->storage;
		return true;
	}
	size_t oat;
	if (!rd_device(r, "the memory arena", &dev))
		return false;
	s->mem_arena_id = pr_device_intern(dev);
	oat = r->pos;
	if (!rd_i64(r, "a memory offset", &s->mem_offset))
		return false;
	if (s->mem_offset < 0)
		return rd_fail(r, oat, "memory offset %lld is negative, expected >= 0",
			       (long long)s->mem_offset);
	return true;
}

/* n is fresh (pr_graph_new_node): its type is zeroed. A tuple's elements
 * are the graph's storage. */
static bool rd_type(rd *r, pr_node *n)
{
	pr_type *t = &n->type;
	size_t at = r->pos;
	uint8_t kind;
	if (!rd_u8(r, "a type kind", &kind))
		return false;
	if (kind > PR_TYPE_INT)
		return rd_fail(r, at, "type kind %u is unknown, expected 0 (none), 1 (tensor), 2 (tuple) "
			       "or 3 (int)", kind);
	t->kind = (pr_type_kind)kind;
	if (kind == PR_TYPE_TENSOR)
		return rd_spec(r, &t->tensor);
	if (kind != PR_TYPE_TUPLE)
		return true;
	uint32_t count;
	if (!rd_count(r, "the tuple's element count", PRB_MIN_SPEC, &count))
		return false;
	pr_node_set_tuple(n, pr_graph_alloc(r->graph, count * sizeof *t->elems), (int)count,
			  PR_STORAGE_GRAPH);
	for (uint32_t i = 0; i < count; i++)
		if (!rd_spec(r, &t->elems[i]))
			return false;
	return true;
}

/* ---- arguments ---------------------------------------------------------------- */

static bool rd_list(rd *r, pr_node *nodes, uint64_t self, pr_arg **out, int *n_out);

static bool rd_value_ref(rd *r, pr_node *nodes, uint64_t self, pr_arg *a)
{
	size_t at = r->pos;
	uint64_t ix;
	if (!rd_u64(r, "a node index", &ix))
		return false;
	if (ix >= self)
		return rd_fail(r, at, "the argument reads node %llu, expected a node defined before this "
			       "one (index < %llu)", (unsigned long long)ix, (unsigned long long)self);
	if (!nodes[ix].name)
		return rd_fail(r, at, "the argument reads node %llu, which has no result, expected a "
			       "node with a value", (unsigned long long)ix);
	a->u.value = &nodes[ix];
	return true;
}

static __attribute__((noinline)) bool rd_arg(rd *r, pr_node *nodes, uint64_t self, pr_arg *a)
{
	size_t at = r->pos;
	uint8_t kind, b;
	if (!rd_u8(r, "an argument kind", &kind))
		return false;
	if (kind > PR_ARG_LIST)
		return rd_fail(r, at, "argument kind %u is unknown, expected 0..%d", kind, PR_ARG_LIST);
	a->kind = PR_ARG_NONE;   /* nothing owned until it is complete */
	switch ((pr_arg_kind)kind) {
	case PR_ARG_VALUE:
		if (!rd_value_ref(r, nodes, self, a))
			return false;
		break;
	case PR_ARG_INT:
		if (!rd_i64(r, "an integer argument", &a->u.i))
			return false;
		break;
	case PR_ARG_FLOAT:
		if (!rd_f64(r, "a float argument", &a->u.f))
			return false;
		break;
	case PR_ARG_BOOL:
		if (!rd_u8(r, "a bool argument", &b))
			return false;
		if (b > 1)
			return rd_fail(r, at + 1, "bool argument is %u, expected 0 or 1", b);
		a->u.b = b;
		break;
	case PR_ARG_NONE:
		break;
	case PR_ARG_STRING: {
		const char *str;
		uint32_t len;
		if (!rd_span(r, "a string argument", false, &str, &len))
			return false;
		a->u.s = (char *)pr_program_intern(r->prog, str, len);   /* graph args' strings */
		break;
	}
	case PR_ARG_LIST:
		if (r->depth >= PRB_MAX_LIST_DEPTH)
			return rd_fail(r, at, "argument lists nest deeper than %d, expected at most %d levels",
				       PRB_MAX_LIST_DEPTH, PRB_MAX_LIST_DEPTH);
		r->depth++;
		bool ok = rd_list(r, nodes, self, &a->u.items, &a->n_items);
		r->depth--;
		if (!ok)
			return false;
		break;
	}
	a->kind = (pr_arg_kind)kind;
	return true;
}

/* Arguments are the graph's storage (pr_graph_new_args): no malloc per node,
 * and nothing to free on error, the graph owns them. A value argument whose
 * whole record (kind, node index) is in the section and whose index reads a
 * node before self with a result is taken with one length check, the cursor
 * in a local: most arguments are. Anything else is left at the cursor for
 * rd_arg, which reads it field by field and reports what is wrong. Inline
 * in the node's reader, as nearly every node has arguments; a nested list
 * is read through rd_list, a call. */
RD_INLINE bool rd_args(rd *r, pr_node *nodes, uint64_t self, pr_arg **out, int *n_out)
{
	uint32_t n;
	if (!rd_count(r, "the argument count", PRB_MIN_ARG, &n))
		return false;
	pr_arg *args = pr_graph_new_args(r->graph, (int)n);
	const uint8_t *buf = r->buf;
	const size_t end = r->end;
	size_t pos = r->pos;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ix;
		if (end - pos >= 9 && buf[pos] == PR_ARG_VALUE && (ix = load64(buf + pos + 1)) < self &&
		    nodes[ix].name) {
			args[i].kind = PR_ARG_VALUE;
			args[i].u.value = &nodes[ix];
			pos += 9;
			continue;
		}
		r->pos = pos;
		if (!rd_arg(r, nodes, self, &args[i]))
			return false;
		pos = r->pos;
	}
	r->pos = pos;
	*out = args;
	*n_out = (int)n;
	return true;
}

static __attribute__((noinline)) bool rd_list(rd *r, pr_node *nodes, uint64_t self, pr_arg **out,
					      int *n_out)
{
	return rd_args(r, nodes, self, out, n_out);
}

/* ---- nodes ---------------------------------------------------------------------- */

static inline bool rd_segment(rd *r, size_t at, uint64_t off, uint64_t size)
{
	if (off % PRB_ALIGN)
		return rd_fail(r, at, "segment offset %llu is misaligned, expected a multiple of %u",
			       (unsigned long long)off, PRB_ALIGN);
	if (off > r->data_size || size > r->data_size - off)
		return rd_fail(r, at, "segment [%llu, +%llu) lies outside the DATA section (%llu bytes)",
			       (unsigned long long)off, (unsigned long long)size,
			       (unsigned long long)r->data_size);
	return true;
}

static bool host_is_little_endian(void)
{
	return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}

/* The materialized bytes of a logical constant: offset and size in DATA. */
static bool rd_data_bytes(rd *r, pr_node *n)
{
	size_t at = r->pos;
	uint64_t off, size;
	if (!rd_u64(r, "a data segment offset", &off) || !rd_u64(r, "a data segment size", &size))
		return false;
	if (size == 0)
		return true;
	if (n->type.kind != PR_TYPE_TENSOR)
		return rd_fail(r, at, "a constant that is not a tensor has %llu data bytes, expected none",
			       (unsigned long long)size);
	int64_t storage = r->storage;   /* n's layout was the last read */
	if ((uint64_t)storage != size)
		return rd_fail(r, at + 8, "data segment is %llu bytes, expected the tensor's storage "
			       "size, %lld bytes", (unsigned long long)size, (long long)storage);
	if (!rd_segment(r, at, off, size))
		return false;
	if (r->borrow && host_is_little_endian()) {
		n->of_kind.input->data.mapped = r->buf + r->data_off + off;
		n->of_kind.input->data.mapped_size = (int64_t)size;
	}
	return true;
}

static bool rd_blob_ref(rd *r, pr_node *n)
{
	size_t at = r->pos;
	uint32_t ix;
	if (!rd_u32(r, "a blob index", &ix))
		return false;
	if (ix >= r->n_blobs)
		return rd_fail(r, at, "blob index %u is out of range, expected < %zu", ix, r->n_blobs);
	n->of_kind.input->data.blob = r->blobs[ix];
	int64_t storage = r->storage;   /* for a tensor n: its layout was the last read */
	/* As in the text: a blob holds exactly the tensor's storage, which every
	 * reader of the data (the runtime, the printer) relies on. */
	if (n->type.kind == PR_TYPE_TENSOR && storage != n->of_kind.input->data.blob->size)
		return rd_fail(r, at, "expected a blob of %lld bytes (the tensor's storage), found "
			       "blob %u with %lld bytes", (long long)pr_spec_storage_bytes(&n->type.tensor),
			       ix, (long long)n->of_kind.input->data.blob->size);
	if (r->borrow && host_is_little_endian() && n->type.kind == PR_TYPE_TENSOR) {
		n->of_kind.input->data.mapped = n->of_kind.input->data.blob->bytes;
		n->of_kind.input->data.mapped_size = storage;
	}
	return true;
}

/* The text's rule for data values (pr_data_value_fits), so that a binary
 * never loads a constant its text print could not be parsed back from. */
static bool rd_value_fits(rd *r, const pr_node *n, double v, size_t at)
{
	char why[160];
	if (n->type.kind != PR_TYPE_TENSOR || pr_data_value_fits(n->type.tensor.dtype, v, why, sizeof why))
		return true;
	return rd_fail(r, at, "%s", why);
}

static bool rd_data(rd *r, pr_node *n)
{
	size_t at = r->pos;
	uint8_t kind;
	if (!rd_u8(r, "a data kind", &kind))
		return false;
	if (kind > PR_DATA_BLOB)
		return rd_fail(r, at, "data kind %u is unknown, expected 0..%d", kind, PR_DATA_BLOB);
	pr_data *d = &n->of_kind.input->data;
	d->kind = (pr_data_kind)kind;
	switch (d->kind) {
	case PR_DATA_NONE:
		return true;
	case PR_DATA_BLOB:
		return rd_blob_ref(r, n);
	case PR_DATA_FILL:
		if (!rd_f64(r, "a fill value", &d->fill) || !rd_value_fits(r, n, d->fill, r->pos - 8))
			return false;
		break;
	case PR_DATA_RANDOM:
		if (!rd_u64(r, "a random seed", &d->seed))
			return false;
		if (d->seed > (uint64_t)INT64_MAX)   /* the text's seeds are int64 >= 0 */
			return rd_fail(r, r->pos - 8, "random seed %llu is too large, expected an "
				       "integer in 0..%lld", (unsigned long long)d->seed,
				       (long long)INT64_MAX);
		break;
	case PR_DATA_LIST: {
		size_t cat = r->pos;
		uint64_t count;
		if (!rd_u64(r, "a value count", &count))
			return false;
		size_t left = r->end - r->pos;
		if (count > left / 8)
			return rd_fail(r, cat, "value count is %llu, but the %zu bytes left in the %s "
				       "section hold at most %zu", (unsigned long long)count, left,
				       r->section, left / 8);
		int64_t numel = n->type.kind == PR_TYPE_TENSOR ? pr_spec_numel(&n->type.tensor) : -1;
		if (numel >= 0 && count != (uint64_t)numel)   /* as the text requires */
			return rd_fail(r, cat, "value count is %llu, expected %lld (the tensor's "
				       "element count)", (unsigned long long)count, (long long)numel);
		/* the graph's storage: the file's doubles are neither aligned nor
		 * necessarily kept after the load (without borrow) */
		pr_node_set_data_values(n, pr_graph_alloc(r->graph, (size_t)count * sizeof *d->values),
					(int64_t)count, PR_STORAGE_GRAPH);
		for (uint64_t i = 0; i < count; i++)
			if (!rd_f64(r, "a value", &d->values[i]) ||
			    !rd_value_fits(r, n, d->values[i], r->pos - 8))
				return false;
		break;
	}
	default:
		break;
	}
	return rd_data_bytes(r, n);
}

static bool rd_input(rd *r, pr_node *n)
{
	size_t at = r->pos;
	uint8_t kind;
	if (!rd_u8(r, "an input kind", &kind))
		return false;
	if (kind > PR_INPUT_CONSTANT)
		return rd_fail(r, at, "input kind %u is unknown, expected 0 (positional), 1 (user), "
			       "2 (parameter), 3 (buffer) or 4 (constant)", kind);
	/* What the text can say, so that the loaded program prints as text that
	 * parses: positional inputs (only and all in delegate bodies) have no
	 * name and no data; data is for constants of tensor type. */
	bool body = n->graph->delegate != NULL;
	if (body != (kind == PR_INPUT_POSITIONAL))
		return rd_fail(r, at, "input kind %u in %s @%s, expected %s", kind,
			       body ? "delegate" : "method", n->graph->name,
			       body ? "0 (positional)" : "1..4 (user, parameter, buffer, constant)");
	n->of_kind.input->kind = (pr_input_kind)kind;
	size_t name_at = r->pos;
	char *quoted;
	if (!rd_string(r, "the input's name", true, r->graph, &quoted))
		return false;
	pr_node_set_input_name(n, quoted, PR_STORAGE_GRAPH);
	if (body && quoted)
		return rd_fail(r, name_at, "a delegate body's input has a name, expected none");
	size_t data_at = r->pos;
	if (!rd_data(r, n))
		return false;
	bool constant = kind >= PR_INPUT_PARAMETER && n->type.kind == PR_TYPE_TENSOR;
	if (n->of_kind.input->data.kind != PR_DATA_NONE && !constant)
		return rd_fail(r, data_at, "a %s has data, expected data only on a parameter, buffer or "
			       "constant of tensor type", n->type.kind == PR_TYPE_TENSOR ?
			       "user or positional input" : "non-tensor input");
	return true;
}

RD_INLINE bool rd_node_args(rd *r, pr_node *nodes, uint64_t self, pr_node *n)
{
	pr_arg *args;
	int count;
	if (!rd_args(r, nodes, self, &args, &count))
		return false;
	pr_node_set_graph_args(n, args, count);
	return true;
}

static inline bool rd_index(rd *r, const char *what, uint32_t limit, uint32_t *ix)
{
	size_t at = r->pos;
	if (!rd_u32(r, what, ix))
		return false;
	if (*ix >= limit)
		return rd_fail(r, at, "%s %u is out of range, expected < %u", what, *ix, limit);
	return true;
}

/* The graph's storage, the array and its targets. */
static bool rd_writebacks(rd *r, pr_node *n)
{
	pr_node_set_writebacks(n, pr_graph_alloc(r->graph, (size_t)n->n_args * sizeof *n->of_kind.writebacks),
			       PR_STORAGE_GRAPH);
	for (int i = 0; i < n->n_args; i++) {
		size_t at = r->pos;
		uint8_t kind;
		if (!rd_u8(r, "a write-back kind", &kind))
			return false;
		if (kind > PR_WRITEBACK_INPUT)
			return rd_fail(r, at, "write-back kind %u is unknown, expected 0 (none), "
				       "1 (buffer) or 2 (input)", kind);
		pr_writeback *wb = &n->of_kind.writebacks[i];
		if (!rd_string(r, "the write-back's target", true, r->graph, &wb->target))
			return false;
		if ((kind == PR_WRITEBACK_NONE) != (wb->target == NULL))
			return rd_fail(r, at + 1, "write-back %s a target, expected %s", wb->target ?
				       "has" : "lacks", wb->target ? "none (kind 0)" : "a buffer or input name");
		wb->kind = (pr_writeback_kind)kind;
	}
	return true;
}

/* The text's loose arity (text_parse.c): not more arguments than the schema
 * has, none missing without a default, so what loads also prints as text that
 * parses. */
static int schema_need(const pr_schema *s)
{
	int need = 0;
	for (int i = 0; i < s->n_args; i++)
		if (!s->args[i].default_value)
			need = i + 1;
	return need;
}

static bool rd_check_arity(rd *r, size_t at, const pr_node *n, int need)
{
	const pr_schema *s = n->of_kind.schema;
	if (n->n_args > s->n_args)
		return rd_fail(r, at, "expected at most %d arguments for '%s', found %d", s->n_args,
			       s->full_name, n->n_args);
	if (n->n_args < need)
		return rd_fail(r, at, "expected at least %d arguments for '%s', found %d", need,
			       s->full_name, n->n_args);
	return true;
}

static bool rd_node_rest(rd *r, pr_node *nodes, uint64_t self, pr_node *n)
{
	size_t at = r->pos;
	uint32_t ix;
	int64_t index;
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT:
		return rd_input(r, n);
	case PR_NODE_OP:
		if (!rd_index(r, "op schema index", (uint32_t)r->prog->n_schemas, &ix))
			return false;
		n->of_kind.schema = r->prog->schemas[ix];
		return rd_node_args(r, nodes, self, n) && rd_check_arity(r, at, n, r->schema_need[ix]);
	case PR_NODE_DELEGATE:
		if (!rd_index(r, "delegate index", (uint32_t)r->prog->n_delegates, &ix))
			return false;
		n->of_kind.delegate = r->prog->delegates[ix];
		return rd_node_args(r, nodes, self, n);
	case PR_NODE_GETITEM:
		if (!rd_i64(r, "a getitem index", &index))
			return false;
		if (index < 0 || index > INT32_MAX)   /* as the text's "an index" */
			return rd_fail(r, r->pos - 8, "getitem index %lld is out of range, expected an "
				       "integer from 0 to 2147483647", (long long)index);
		n->of_kind.index = (int32_t)index;
		if (!rd_node_args(r, nodes, self, n))
			return false;
		if (n->n_args != 1 || n->args[0].kind != PR_ARG_VALUE)
			return rd_fail(r, at + 8, "getitem has %d arguments, expected one value", n->n_args);
		return true;
	case PR_NODE_RETURN:
		if (!rd_node_args(r, nodes, self, n))
			return false;
		for (int i = 0; i < n->n_args; i++)   /* the text returns %values only */
			if (n->args[i].kind != PR_ARG_VALUE)
				return rd_fail(r, at, "return argument %d is not a value, expected "
					       "a node (the text's %%name)", i);
		return rd_writebacks(r, n);
	}
	return false;
}

/* Inputs, delegate calls and getitems always have a result, and the text
 * writes it only as %NAME: TYPE = ...; an op may be a statement without one,
 * and a return has none. */
static bool needs_name(pr_node_kind kind)
{
	return kind == PR_NODE_INPUT || kind == PR_NODE_DELEGATE || kind == PR_NODE_GETITEM;
}

static const char *node_kind_word(pr_node_kind kind)
{
	return kind == PR_NODE_INPUT ? "an input" : kind == PR_NODE_DELEGATE ? "a delegate call"
									: "a getitem";
}

/* rd_link's failure, out of line: p's name is taken. */
static __attribute__((noinline, cold)) bool rd_duplicate(rd *r, pr_graph *g, const rd_pending *p,
							  pr_err *e)
{
	pr_err_free(e);   /* the one way it fails: the name is taken */
	pr_err_free(r->err);
	r->err = NULL;
	rd_fail(r, p->name_at, "%%%s is defined twice in @%s, expected unique names", p->node->name,
		g->name);
	return false;   /* the node stays unlinked (nodes read after it may read it) */
}

/* A node's name is hashed as soon as it is read and its string-table slot
 * prefetched; the node is interned and appended RD_LAG nodes later, so that
 * the cache miss of the probe (one per name at a million names) overlaps
 * the reading of the nodes in between. Until then the node's name points at
 * the file's bytes: what is read meanwhile only asks whether it has one.
 * Errors still come in file order: on any error the nodes before it (and
 * the failing node, when its name was read) are linked first, and a
 * duplicate name among them replaces the later error. A node that is never
 * linked (the duplicate, those after it) is freed with its graph's slab all
 * the same. */
RD_INLINE bool rd_link(rd *r, pr_graph *g, const rd_pending *p)
{
	pr_node *n = p->node;
	n->name = NULL;   /* the file's bytes until now */
	pr_err *e = p->name ? pr_graph_append_named(g, n, p->name, p->len, p->hash)
			    : pr_graph_append(g, n);
	return !e || rd_duplicate(r, g, p, e);
}

/* Links the oldest pending node: inline in rd_node, once a node. */
RD_INLINE bool rd_link_oldest(rd *r, pr_graph *g)
{
	const rd_pending *p = &r->lag[r->lag_first];
	r->lag_first = (r->lag_first + 1) & (RD_LAG - 1);
	r->lag_n--;
	if (rd_link(r, g, p))
		return true;
	r->lag_n = 0;   /* the rest stay unlinked */
	return false;
}

/* Links every pending node, in order; false on a duplicate name. */
static bool rd_link_all(rd *r, pr_graph *g)
{
	while (r->lag_n)
		if (!rd_link_oldest(r, g))
			return false;
	return true;
}

static void rd_pend(rd *r, pr_node *n, const char *name, uint32_t len, uint32_t h, size_t name_at)
{
	r->lag[(r->lag_first + r->lag_n++) & (RD_LAG - 1)] =
		(rd_pending){.node = n, .name = name, .len = len, .hash = h, .name_at = name_at};
}

static bool rd_node(rd *r, pr_graph *g, pr_node *nodes, uint64_t self, uint64_t count)
{
	size_t at = r->pos;
	uint8_t kind;
	const char *name;
	uint32_t len, h = 0;
	if (r->lag_n == RD_LAG && !rd_link_oldest(r, g))
		return false;
	if (!rd_u8(r, "a node kind", &kind))
		return false;
	if (kind > PR_NODE_RETURN)
		return rd_fail(r, at, "node kind %u is unknown, expected 0 (input), 1 (op), 2 (delegate), "
			       "3 (getitem) or 4 (return)", kind);
	if ((kind == PR_NODE_RETURN) != (self == count - 1))
		return rd_fail(r, at, "node %llu of %llu is %s, expected the return node exactly at the end "
			       "of the graph", (unsigned long long)self, (unsigned long long)count,
			       kind == PR_NODE_RETURN ? "a return" : "not a return");
	size_t name_at = r->pos;
	if (!rd_name_span(r, "the node's name", true, &name, &len))
		return false;
	if (!name && needs_name((pr_node_kind)kind))
		return rd_fail(r, name_at, "node %llu (%s) has no name, expected one: its result is "
			       "read by name (the text's %%NAME: TYPE = ...)", (unsigned long long)self,
			       node_kind_word((pr_node_kind)kind));
	if (name) {
		h = pr_str_hash(name, len);
		pr_program_prefetch_name(r->prog, h);
	}
	pr_node *n = pr_graph_new_node(g, (pr_node_kind)kind, NULL);
	n->name = name;   /* not NUL-terminated: rd_link interns it */
	rd_pend(r, n, name, len, h, name_at);
	PR_ASSERT(n == &nodes[self]);
	return rd_type(r, n) && rd_node_rest(r, nodes, self, n);
}

static bool rd_graph(rd *r, pr_graph *g)
{
	size_t at = r->pos;
	uint64_t count;
	if (!rd_u64(r, "a node count", &count))
		return false;
	size_t left = r->end - r->pos;
	if (count > left / PRB_MIN_NODE || count > PRB_MAX_COUNT)
		return rd_fail(r, at, "node count is %llu, but the %zu bytes left in the %s section hold "
			       "at most %zu", (unsigned long long)count, left, r->section,
			       left / PRB_MIN_NODE);
	if (count == 0)
		return rd_fail(r, at, "@%s has no nodes, expected at least its return node", g->name);
	/* the graph is new: its nodes come one after another, node i at nodes + i */
	pr_node *nodes = pr_graph_reserve_nodes(g, (size_t)count);
	PR_ASSERT(nodes);
	r->graph = g;
	bool ok = true;
	for (uint64_t i = 0; i < count && ok; i++)
		ok = rd_node(r, g, nodes, i, count);
	return rd_link_all(r, g) && ok;   /* first: a duplicate before an error wins */
}

/* ---- sections -------------------------------------------------------------------- */

/* Where s stops being valid UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF), or (size_t)-1. A schema is printed as it is, and
 * the text lexer accepts UTF-8 only. */
static size_t utf8_invalid_at(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0, k; s[i]; i += k)
		if (!(k = pr_utf8_len(s + i, SIZE_MAX)))
			return i;
	return (size_t)-1;
}

static bool rd_schemas(rd *r)
{
	uint32_t n;
	if (!rd_count(r, "the schema count", PRB_MIN_SCHEMA, &n))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		size_t at = r->pos;
		char *text;
		if (!rd_string(r, "an op schema", false, NULL, &text))
			return false;
		size_t bad = utf8_invalid_at(text);
		if (bad != (size_t)-1) {
			unsigned byte = (unsigned char)text[bad];
			free(text);
			return rd_fail(r, at, "op schema %u has the invalid byte 0x%02x at column %zu, "
				       "expected UTF-8 text (the text format writes it verbatim)", i,
				       byte, bad + 1);
		}
		pr_schema *s = NULL;
		size_t col = 0;
		pr_err *e = pr_schema_parse(text, strlen(text), &s, &col);
		if (!e && (e = pr_program_add_schema(r->prog, s)))
			pr_schema_free(s);
		free(text);
		if (e) {
			rd_fail(r, at, "op schema %u: %s (column %zu), expected a valid, new schema", i,
				pr_err_message(e), col + 1);
			pr_err_free(e);
			return false;
		}
	}
	int count = r->prog->n_schemas;
	r->schema_need = pr_xmalloc((size_t)(count ? count : 1) * sizeof *r->schema_need);
	for (int i = 0; i < count; i++)
		r->schema_need[i] = schema_need(r->prog->schemas[i]);
	return true;
}

static bool rd_blobs(rd *r)
{
	uint32_t n;
	if (!rd_count(r, "the blob count", PRB_MIN_BLOB, &n))
		return false;
	r->blobs = pr_xcalloc(n ? n : 1, sizeof *r->blobs);
	for (uint32_t i = 0; i < n; i++) {
		size_t at = r->pos;
		const char *name;
		uint64_t size, off;
		if (!rd_name(r, "a blob name", false, &name))
			return false;
		size_t sat = r->pos;
		if (!rd_u64(r, "a blob size", &size) || !rd_u64(r, "a blob offset", &off) ||
		    !rd_segment(r, sat, off, size))
			return false;
		pr_err *e = pr_program_add_blob(r->prog, name, r->buf + r->data_off + off,
						(int64_t)size, r->borrow, &r->blobs[i]);
		if (e) {
			rd_fail(r, at, "%s, expected unique blob names", pr_err_message(e));
			pr_err_free(e);
			return false;
		}
		r->n_blobs++;
	}
	return true;
}

static bool rd_delegate_head(rd *r)
{
	size_t at = r->pos;
	const char *name;
	uint32_t n;
	if (!rd_name(r, "a delegate name", false, &name))
		return false;
	pr_delegate *d;
	pr_err *e = pr_program_add_delegate(r->prog, name, &d);
	if (e) {
		rd_fail(r, at, "%s, expected unique delegate names", pr_err_message(e));
		pr_err_free(e);
		return false;
	}
	if (!rd_count(r, "the compile spec count", PRB_MIN_KV, &n))
		return false;
	for (uint32_t k = 0; k < n; k++) {
		size_t kat = r->pos;
		const char *key;   /* in r->scratch: no rd_name until it is used */
		char *value;
		if (!rd_name(r, "a compile spec key", false, &key))
			return false;
		if ((key[0] >= '0' && key[0] <= '9') || strchr(key, '.'))
			/* the text's key is a word: [A-Za-z_][A-Za-z0-9_]* */
			return rd_fail(r, kat, "compile spec key '%s' is not a word, expected letters, "
				       "digits and '_', not starting with a digit", key);
		if (!rd_string(r, "a compile spec value", false, NULL, &value))
			return false;
		if (pr_delegate_spec(d, key)) {
			free(value);
			return rd_fail(r, kat, "compile spec %s appears twice in @%s, expected unique keys",
				       key, d->name);
		}
		pr_delegate_set_spec(d, key, value);
		free(value);
	}
	return true;
}

static bool rd_delegates(rd *r)
{
	uint32_t n;
	if (!rd_count(r, "the delegate count", PRB_MIN_DELEGATE, &n))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!rd_delegate_head(r))
			return false;
	for (uint32_t i = 0; i < n; i++)
		if (!rd_graph(r, r->prog->delegates[i]->body))
			return false;
	return true;
}

static bool rd_methods(rd *r)
{
	uint32_t n;
	if (!rd_count(r, "the method count", PRB_MIN_METHOD, &n))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		size_t at = r->pos;
		const char *name;
		if (!rd_name(r, "a method name", false, &name))
			return false;
		pr_graph *g;
		pr_err *e = pr_program_add_method(r->prog, name, &g);
		if (e) {
			rd_fail(r, at, "%s, expected unique method names", pr_err_message(e));
			pr_err_free(e);
			return false;
		}
		if (!rd_graph(r, g))
			return false;
	}
	return true;
}

/* ---- header and section table ------------------------------------------------------- */

typedef struct section {
	uint64_t off, size;
	size_t entry_at;      /* where its table entry is, for messages */
} section;

static const char *section_names[PRB_SEC_COUNT + 1] = {
	"", "SCHEMAS", "BLOBS", "DELEGATES", "METHODS", "DATA",
};

static bool rd_header(rd *r)
{
	r->pos = 0;
	r->end = r->len;
	r->section = "header";
	if (r->len < PRB_HEADER_SIZE)
		return rd_fail(r, r->len, "truncated header: the file is %zu bytes, expected at least the "
			       "%u-byte header", r->len, PRB_HEADER_SIZE);
	if (memcmp(r->buf, PR_BINARY_MAGIC, 8))
		return rd_fail(r, 0, "wrong magic, expected \"PASSRUN\\0\"");
	r->pos = 8;
	uint32_t version = (uint32_t)rd_le(r, 4), bom = (uint32_t)rd_le(r, 4);
	uint64_t file_size = rd_le(r, 8), table = rd_le(r, 8);
	uint32_t count = (uint32_t)rd_le(r, 4), entry = (uint32_t)rd_le(r, 4);
	if (version != PRB_VERSION)
		return rd_fail(r, 8, "format version %u is not supported, expected version %u", version,
			       PRB_VERSION);
	if (bom != PRB_BYTE_ORDER)
		return rd_fail(r, 12, "byte-order mark reads 0x%08x, expected 0x%08x (a little-endian "
			       "file)", bom, PRB_BYTE_ORDER);
	if (file_size != r->len)
		return rd_fail(r, 16, "the header records a file size of %llu bytes, but the file is %zu "
			       "bytes (truncated or extended?)", (unsigned long long)file_size, r->len);
	if (count != PRB_SEC_COUNT || entry != PRB_SECTION_ENTRY_SIZE)
		return rd_fail(r, 32, "section table has %u entries of %u bytes, expected %u entries of "
			       "%u bytes", count, entry, PRB_SEC_COUNT, PRB_SECTION_ENTRY_SIZE);
	if (table < PRB_HEADER_SIZE || table > r->len || r->len - table < PRB_SEC_COUNT * PRB_SECTION_ENTRY_SIZE)
		return rd_fail(r, 24, "section table offset %llu is outside the file, expected an offset "
			       ">= %u with %u bytes after it", (unsigned long long)table, PRB_HEADER_SIZE,
			       PRB_SEC_COUNT * PRB_SECTION_ENTRY_SIZE);
	for (size_t i = 40; i < PRB_HEADER_SIZE; i++)
		if (r->buf[i])
			return rd_fail(r, i, "reserved header byte is 0x%02x, expected 0", r->buf[i]);
	r->pos = (size_t)table;
	return true;
}

static bool rd_section_table(rd *r, section *secs)
{
	size_t table_end = r->pos + PRB_SEC_COUNT * PRB_SECTION_ENTRY_SIZE;
	for (int i = 0; i < PRB_SEC_COUNT; i++) {
		size_t at = r->pos;
		uint32_t kind = (uint32_t)rd_le(r, 4), reserved = (uint32_t)rd_le(r, 4);
		uint64_t off = rd_le(r, 8), size = rd_le(r, 8);
		if (kind < 1 || kind > PRB_SEC_COUNT)
			return rd_fail(r, at, "section kind %u is unknown, expected 1..%d", kind, PRB_SEC_COUNT);
		if (secs[kind].entry_at)
			return rd_fail(r, at, "section %s appears twice, expected each section once",
				       section_names[kind]);
		if (reserved)
			return rd_fail(r, at + 4, "reserved field is %u, expected 0", reserved);
		if (off < table_end || off > r->len || size > r->len - off)
			return rd_fail(r, at + 8, "section %s [%llu, +%llu) lies outside the file (%zu bytes), "
				       "expected it after the section table and inside the file", section_names[kind],
				       (unsigned long long)off, (unsigned long long)size, r->len);
		if (kind == PRB_SEC_DATA && off % PRB_ALIGN)
			return rd_fail(r, at + 8, "section DATA starts at byte %llu, which is misaligned, "
				       "expected a multiple of %u", (unsigned long long)off, PRB_ALIGN);
		secs[kind] = (section){off, size, at};
	}
	return true;
}

static bool rd_section(rd *r, const section *secs, int kind, bool (*fn)(rd *))
{
	r->pos = (size_t)secs[kind].off;
	r->end = (size_t)(secs[kind].off + secs[kind].size);
	r->section = section_names[kind];
	if (!fn(r))
		return false;
	if (r->pos != r->end)
		return rd_fail(r, r->pos, "%zu bytes are left over at the end of the %s section, expected "
			       "none", r->end - r->pos, r->section);
	return true;
}

pr_err *pr_binary_load(const char *filename, const uint8_t *buf, size_t len, bool borrow,
		       pr_program **out)
{
	rd r = {.file = filename ? filename : "<binary>", .buf = buf, .len = len, .borrow = borrow};
	section secs[PRB_SEC_COUNT + 1] = {{0}};
	if (!rd_header(&r) || !rd_section_table(&r, secs))
		return r.err;
	r.data_off = secs[PRB_SEC_DATA].off;
	r.data_size = secs[PRB_SEC_DATA].size;
	r.prog = pr_program_new();
	r.layouts = pr_xcalloc(RD_KNOWN_LAYOUTS, sizeof *r.layouts);
	bool ok = rd_section(&r, secs, PRB_SEC_SCHEMAS, rd_schemas) &&
		  rd_section(&r, secs, PRB_SEC_BLOBS, rd_blobs) &&
		  rd_section(&r, secs, PRB_SEC_DELEGATES, rd_delegates) &&
		  rd_section(&r, secs, PRB_SEC_METHODS, rd_methods);
	free(r.blobs);
	free(r.schema_need);
	free(r.scratch);
	free(r.layouts);
	if (!ok) {
		pr_program_free(r.prog);
		return r.err;
	}
	*out = r.prog;
	return NULL;
}

bool pr_binary_data_range(const uint8_t *buf, size_t len, size_t *off, size_t *size)
{
	rd r = {.file = "<binary>", .buf = buf, .len = len};
	section secs[PRB_SEC_COUNT + 1] = {{0}};
	if (!rd_header(&r) || !rd_section_table(&r, secs)) {
		pr_err_free(r.err);
		return false;
	}
	*off = (size_t)secs[PRB_SEC_DATA].off;
	*size = (size_t)secs[PRB_SEC_DATA].size;
	return true;
}

bool pr_binary_sniff(const uint8_t *buf, size_t len)
{
	return len >= 8 && !memcmp(buf, PR_BINARY_MAGIC, 8);
}
