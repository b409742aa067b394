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

/* pr_device_parse of s[0, k), remembering the last text it parsed: a
 * program names one or two devices (and arenas) on every value. */
static bool tp_device_text(tp *p, const char *s, size_t k, pr_device *out)
{
	if (k && k == p->last_device_len && !memcmp(p->last_device_text, s, k)) {
		*out = p->last_device;
		return true;
	}
	if (!pr_device_parse(s, k, out))
		return false;
	if (k <= sizeof p->last_device_text) {
		memcpy(p->last_device_text, s, k);
		p->last_device_len = k;
		p->last_device = *out;
	}
	return true;
}

static bool tp_device(tp *p, pr_device *out)
{
	tp_ws(p);
	size_t b = p->pos;
	size_t k = tp_device_chars(p);
	if (!k || !tp_device_text(p, p->s + b, k, out)) {
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
	pr_device arena;
	if (!colon || colon == p->s + b || !tp_device_text(p, p->s + b, (size_t)(colon - (p->s + b)), &arena))
		return tp_expected(p, b, what);
	s->mem_arena_id = pr_device_intern(arena);
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
		if (__builtin_mul_overflow(s->shape[i] - 1, pr_spec_strides(s)[i], &t) ||
		    __builtin_add_overflow(span, t, &span))
			return tp_error_at(p, at, "expected strides whose storage span fits in int64, found one that overflows");
	if (__builtin_add_overflow(span, 1, &span) ||
	    __builtin_mul_overflow(span, (int64_t)pr_dtype_size(s->dtype), &span))
		return tp_error_at(p, at, "expected strides whose storage span fits in int64, found one that overflows");
	return true;
}

/* A DTYPE[DIMS] text parsed before, as its bytes and the contiguous spec it
 * gave: a program spells a few shapes a million times, and a shape seen
 * before then costs a hash and a compare instead of its parse, checks and
 * intern. Only a parse that succeeded is kept, so equal bytes give the same
 * spec and end at the same place (at their first ']'). */
#define TP_KNOWN_SHAPES 64     /* a power of two */
#define TP_SHAPE_TEXT_MAX 56   /* longer texts are always parsed */

struct tp_known_shape {
	uint32_t len;           /* 0: empty */
	char text[TP_SHAPE_TEXT_MAX];
	pr_spec spec;
};

static tp_known_shape *shape_slot(tp *p, const char *t, size_t len)
{
	if (!p->shapes)
		p->shapes = pr_xcalloc(TP_KNOWN_SHAPES, sizeof *p->shapes);
	return &p->shapes[pr_str_hash(t, len) & (TP_KNOWN_SHAPES - 1)];
}

/* The length of the text from the cursor to its first ']' (included) when
 * it is short enough to be a known shape's, else 0. */
static size_t shape_text_len(const tp *p)
{
	size_t room = p->n - p->pos < TP_SHAPE_TEXT_MAX ? p->n - p->pos : TP_SHAPE_TEXT_MAX;
	const char *end = memchr(p->s + p->pos, ']', room);
	return end ? (size_t)(end - (p->s + p->pos)) + 1 : 0;
}

/* Does the text at the cursor start with k's? Its one ']' ends it, so the
 * cursor's first ']' is then where k's is. */
static bool shape_is_next(const tp *p, const tp_known_shape *k)
{
	return k && k->len && k->len <= p->n - p->pos && tp_same_bytes(k->text, p->s + p->pos, k->len);
}

/* The shape the last value spelled is tried first, without a scan for the
 * ']' or a hash: runs of values share one (f32[1,4] down a whole layer). */
static bool tp_shape_known(tp *p, pr_spec *s)
{
	const tp_known_shape *k = p->last_shape;
	if (!shape_is_next(p, k)) {
		size_t len = shape_text_len(p);
		if (!len)
			return false;
		k = shape_slot(p, p->s + p->pos, len);
		if (k->len != len || !tp_same_bytes(k->text, p->s + p->pos, len))
			return false;
		p->last_shape = k;
	}
	*s = k->spec;
	p->pos += k->len;
	return true;
}

static void tp_shape_remember(tp *p, size_t at, const pr_spec *s)
{
	size_t len = p->pos - at;
	if (len > TP_SHAPE_TEXT_MAX || p->s[p->pos - 1] != ']')
		return;
	tp_known_shape *k = shape_slot(p, p->s + at, len);
	k->len = (uint32_t)len;
	memcpy(k->text, p->s + at, len);
	k->spec = *s;
	p->last_shape = k;
}

/* DTYPE[DIMS]: a contiguous spec on the host. */
static bool tp_shape(tp *p, pr_spec *s)
{
	size_t at = (tp_ws(p), p->pos);
	if (tp_shape_known(p, s))
		return true;
	const char *w;
	size_t k = tp_word(p, &w);
	pr_dtype dt;
	if (!k || !pr_dtype_parse(w, k, &dt)) {
		p->pos = at;
		return tp_expected(p, at, "a type (a dtype f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool with a "
				   "shape like f32[2,3], a tuple (T, ...) or int)");
	}
	int64_t shape[PR_MAX_RANK];
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
	tp_shape_remember(p, at, s);
	return true;
}

static bool tp_spec(tp *p, pr_spec *s)
{
	size_t at = (tp_ws(p), p->pos);
	if (!tp_shape(p, s))
		return false;
	/* The shape then the strides, as a spec's dims are laid out. */
	int64_t dims[2 * PR_MAX_RANK], *strides = dims + s->rank;
	pr_device dev;
	if (tp_accept(p, '@')) {
		if (!tp_device(p, &dev))
			return false;
		s->device_id = pr_device_intern(dev);
	}
	bool has_strides = false;
	if (tp_accept(p, '{') && !tp_attrs(p, s, &has_strides, strides))
		return false;
	if (!has_strides)   /* contiguous: its span is the byte size tp_shape checked */
		return true;
	pr_spec given = *s;   /* checked before its strides are interned */
	memcpy(dims, s->shape, sizeof(int64_t) * (size_t)s->rank);
	given.shape = dims;
	if (!tp_check_span(p, at, &given))
		return false;
	pr_spec_set_strides(s, strides);
	return true;
}

/* The specs of a tuple, after its '(': read on the stack while they fit,
 * then copied into g's storage of their exact size (pr_node_set_tuple,
 * PR_STORAGE_GRAPH), which n keeps: no malloc per tuple (a million-node
 * program has a quarter of a million), and a pass that gives n another
 * type leaves them, as it leaves a loaded .bin's. On an error too, so that
 * the node has what was read. */
#define TP_INLINE_SPECS 8

static bool tp_tuple(tp *p, pr_node *node)
{
	pr_spec inl[TP_INLINE_SPECS], *v = inl;
	int n = 0, cap = TP_INLINE_SPECS;
	bool ok = true;
	if (!tp_accept(p, ')')) {
		do {
			if (n == cap) {
				cap *= 2;
				v = v == inl ? memcpy(pr_xmalloc((size_t)cap * sizeof *v), inl, sizeof inl)
					     : pr_xrealloc(v, (size_t)cap * sizeof *v);
			}
			ok = tp_spec(p, &v[n++]);
		} while (ok && tp_accept(p, ','));
		ok = ok && tp_expect(p, ')', "',' or ')' in a tuple type");
	}
	size_t size = (size_t)n * sizeof *v;
	pr_spec *elems = n ? memcpy(pr_graph_alloc(node->graph, size), v, size) : NULL;
	pr_node_set_tuple(node, elems, n, PR_STORAGE_GRAPH);
	if (v != inl)
		free(v);
	return ok;
}

bool tp_type(tp *p, pr_node *n)
{
	pr_type *out = &n->type;
	memset(out, 0, sizeof *out);
	tp_ws(p);
	size_t at = p->pos;
	if (at < p->n && p->s[at] == 'i') {   /* int, or a dtype: i64 i32 ... */
		const char *w;
		size_t k = tp_word(p, &w);
		if (tp_word_is(w, k, "int")) {
			out->kind = PR_TYPE_INT;
			return true;
		}
		p->pos = at;
	}
	if (tp_accept(p, '('))
		return tp_tuple(p, n);
	out->kind = PR_TYPE_TENSOR;
	return tp_spec(p, &out->tensor);
}
