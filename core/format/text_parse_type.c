/* text_parse_type.c: value types in the text format.
 *
 *   TYPE   = SPEC | '(' [SPEC {',' SPEC}] ')' | 'int'
 *   SPEC   = DTYPE '[' [DIM {',' DIM}] ']' ['@' DEVICE] ['{' ATTR {',' ATTR} '}']
 *   ATTR   = 'strides' '=' '[' [INT {',' INT}] ']' | 'mem' '=' DEVICE ':' OFFSET
 *
 * Everything a later stage multiplies is checked here, so nothing downstream
 * can overflow: the rank is at most PR_MAX_RANK, dimensions and strides are
 * not negative, and the element count, byte size and storage span all fit in
 * int64. */
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"
#include "text_lex.h"

/* '[' [INT {',' INT}] ']' into v (at most PR_MAX_RANK); *count gets how many
 * were written, even past the limit (so the caller can say how many). */
static bool tp_int_list(tp *p, const char *what, int64_t *v, int *count, size_t *over_pos)
{
	*count = 0;
	*over_pos = 0;
	if (!tp_expect(p, '[', "'['"))
		return false;
	if (tp_accept(p, ']'))
		return true;
	do {
		tp_ws(p);
		size_t at = p->pos;
		int64_t x;
		if (!tp_int(p, what, &x))
			return false;
		if (x < 0)
			return tp_error_at(p, at, "expected %s >= 0, found %lld", what, (long long)x);
		if (*count == PR_MAX_RANK)
			*over_pos = at;
		if (*count < PR_MAX_RANK)
			v[*count] = x;
		(*count)++;
	} while (tp_accept(p, ','));
	return tp_expect(p, ']', "',' or ']'");
}

/* A run of [A-Za-z0-9_:] (a device, or a device and an offset). */
static size_t tp_device_chars(tp *p)
{
	size_t b = p->pos;
	while (p->pos < p->n) {
		char c = p->s[p->pos];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':')
			p->pos++;
		else
			break;
	}
	return p->pos - b;
}

static bool tp_device(tp *p, pr_device *out)
{
	tp_ws(p);
	size_t b = p->pos;
	size_t k = tp_device_chars(p);
	if (!k || !pr_device_parse(p->s + b, k, out)) {
		p->pos = b;
		return tp_expected(p, b, "a device (like cpu or cuda:0)");
	}
	return true;
}

/* mem=ARENA:OFFSET: the arena is a device, the offset follows the last ':'. */
static bool tp_mem(tp *p, pr_spec *s)
{
	tp_ws(p);
	size_t b = p->pos;
	size_t k = tp_device_chars(p);
	const char *colon = NULL;
	for (size_t i = b; i < b + k; i++)
		if (p->s[i] == ':')
			colon = p->s + i;
	const char *what = "a memory location ARENA:OFFSET (like cuda:0:128)";
	if (!colon || colon == p->s + b || !pr_device_parse(p->s + b, (size_t)(colon - (p->s + b)), &s->mem_arena))
		return tp_expected(p, b, what);
	size_t off = (size_t)(colon + 1 - p->s);
	if (off == b + k)
		return tp_expected(p, off, "an offset after ':'");
	int64_t v = 0;
	for (size_t i = off; i < b + k; i++) {
		char c = p->s[i];
		if (c < '0' || c > '9')
			return tp_expected(p, off, "a byte offset (digits) after the arena");
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v))
			return tp_error_at(p, off, "expected an offset that fits in 64 bits");
	}
	s->has_mem = true;
	s->mem_offset = v;
	return true;
}

static bool tp_attrs(tp *p, pr_spec *s, bool *has_strides, int64_t *strides)
{
	bool seen_mem = false;
	do {
		const char *w;
		size_t at = (tp_ws(p), p->pos);
		size_t k = tp_word(p, &w);
		bool is_strides = tp_word_is(w, k, "strides");
		if (!is_strides && !tp_word_is(w, k, "mem")) {
			p->pos = at;
			return tp_expected(p, at, "a tensor attribute (strides=[...] or mem=ARENA:OFFSET)");
		}
		if (is_strides ? *has_strides : seen_mem)
			return tp_error_at(p, at, "expected each attribute once, found a second '%.*s'", (int)k, w);
		if (!tp_expect(p, '=', "'=' after the attribute name"))
			return false;
		if (!is_strides) {
			seen_mem = true;
			if (!tp_mem(p, s))
				return false;
			continue;
		}
		*has_strides = true;
		tp_ws(p);
		size_t list_at = p->pos, over;
		int count;
		if (!tp_int_list(p, "a stride", strides, &count, &over))
			return false;
		if (count != s->rank)
			return tp_error_at(p, list_at, "expected %d strides (one per dimension), found %d",
					   s->rank, count);
	} while (tp_accept(p, ','));
	return tp_expect(p, '}', "',' or '}' after a tensor attribute");
}

/* The element count and byte size must fit in int64, and so must the product
 * of the non-zero dimensions: contiguous strides are computed from it, even
 * for an empty tensor. */
static bool tp_check_shape(tp *p, size_t at, pr_dtype dt, const int64_t *shape, int rank)
{
	int64_t nonzero = 1, bytes;
	bool empty = false;
	for (int i = 0; i < rank; i++) {
		empty |= shape[i] == 0;
		if (shape[i] && __builtin_mul_overflow(nonzero, shape[i], &nonzero))
			return tp_error_at(p, at, "expected a shape whose element count fits in int64, "
					   "found one that overflows");
	}
	if (!empty && __builtin_mul_overflow(nonzero, (int64_t)pr_dtype_size(dt), &bytes))
		return tp_error_at(p, at, "expected a tensor whose size in bytes fits in int64, found one that overflows");
	return true;
}

/* The storage span, (1 + the largest offset) * element size, must fit too. */
static bool tp_check_span(tp *p, size_t at, const pr_spec *s)
{
	int64_t span = 0, t;
	for (int i = 0; i < s->rank; i++)
		if (s->shape[i] == 0)
			return true;
	for (int i = 0; i < s->rank; i++)
		if (__builtin_mul_overflow(s->shape[i] - 1, s->strides[i], &t) || __builtin_add_overflow(span, t, &span))
			return tp_error_at(p, at, "expected strides whose storage span fits in int64, found one that overflows");
	if (__builtin_add_overflow(span, 1, &span) ||
	    __builtin_mul_overflow(span, (int64_t)pr_dtype_size(s->dtype), &span))
		return tp_error_at(p, at, "expected strides whose storage span fits in int64, found one that overflows");
	return true;
}

static bool tp_spec(tp *p, pr_spec *s)
{
	const char *w;
	size_t at = (tp_ws(p), p->pos);
	size_t k = tp_word(p, &w);
	pr_dtype dt;
	if (!k || !pr_dtype_parse(w, k, &dt)) {
		p->pos = at;
		return tp_expected(p, at, "a type (a dtype f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool with a "
				   "shape like f32[2,3], a tuple (T, ...) or int)");
	}
	int64_t shape[PR_MAX_RANK], strides[PR_MAX_RANK];
	int rank;
	size_t over;
	if (!tp_int_list(p, "a dimension", shape, &rank, &over))
		return false;
	if (rank > PR_MAX_RANK)
		return tp_error_at(p, over, "expected at most %d dimensions (the maximum rank), found %d",
				   PR_MAX_RANK, rank);
	if (!tp_check_shape(p, at, dt, shape, rank))
		return false;
	pr_spec_init(s, dt, rank, shape);
	if (tp_accept(p, '@') && !tp_device(p, &s->device))
		return false;
	bool has_strides = false;
	if (tp_accept(p, '{') && !tp_attrs(p, s, &has_strides, strides))
		return false;
	pr_spec given = *s;   /* checked before its strides are interned */
	if (has_strides)
		given.strides = strides;
	if (!tp_check_span(p, at, &given))
		return false;
	if (has_strides)
		pr_spec_set_strides(s, strides);
	return true;
}

bool tp_type(tp *p, pr_type *out)
{
	memset(out, 0, sizeof *out);
	const char *w;
	size_t at = (tp_ws(p), p->pos);
	size_t k = tp_word(p, &w);
	if (tp_word_is(w, k, "int")) {
		out->kind = PR_TYPE_INT;
		return true;
	}
	p->pos = at;
	if (!tp_accept(p, '(')) {
		out->kind = PR_TYPE_TENSOR;
		return tp_spec(p, &out->tensor);
	}
	out->kind = PR_TYPE_TUPLE;
	if (tp_accept(p, ')'))
		return true;
	int cap = 0;
	do {
		PR_GROW(out->elems, out->n_elems, cap);
		if (!tp_spec(p, &out->elems[out->n_elems++]))
			return false;
	} while (tp_accept(p, ','));
	return tp_expect(p, ')', "',' or ')' in a tuple type");
}
