/* plan.c: lifetimes, usage and the checker of a memory plan (behaviour.md M1,
 * M2, F10; the contract is in passrun/plan.h).
 *
 * Lifetimes. One walk in graph order numbers the nodes (positions), lists the
 * tensor values (a tensor node, or each element of a tuple node) and gives each
 * value a storage class. A value starts a new class unless it shares memory
 * with an earlier one: an op result whose schema return aliases an argument
 * (in place, Tensor(a!), or a view, Tensor(a)) joins that argument's class, and
 * a getitem joins the class of the tuple element it names. Because an alias
 * always names a value defined before it, the class is known when the alias is
 * met: no union-find is needed. Every definition and every read of a member
 * stretches the class's interval [start, end]. Inputs start at 0; mutable
 * buffers and device-resident constants live for the whole method.
 *
 * Usage. planned_bytes of an arena is the top of its highest planned class;
 * the lower bound is the peak, over positions, of the bytes of the planned
 * classes live there (a difference array per arena, one pass). A class counts
 * once however many aliases it has.
 *
 * Checking. Per method: every planned value sits in the arena of its own
 * device, at an offset >= 0 whose end (offset + bytes) fits in int64, so
 * that whoever sizes the arena from it cannot overflow; an alias has exactly
 * its base's memory; a host constant has none.
 * Overlaps are found by a sweep over positions: the live planned classes are
 * kept ordered by (arena, offset) in a Fenwick tree over their ranks, and a
 * class that starts is compared with its two neighbours only. The live set
 * never holds an overlapping pair (a class that overlaps is reported and left
 * out), so two neighbours suffice: O(n log n) for n classes, never all pairs. */
#include "passrun/plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* ---- lifetimes -------------------------------------------------------- */

typedef struct lt_builder {
	pr_lifetimes *lt;
	int64_t cap_values, cap_classes;
	int64_t *first_value;   /* per position: its first value, or -1 */
	pr_node **nodes;        /* per position */
	uint64_t order0, gap;   /* node->order == order0 + pos * gap */
} lt_builder;

static pr_device host_normalized(pr_device d)
{
	return pr_device_is_host(d) ? pr_device_host() : d;
}

/* The position of n, or -1 when it is not a node of the graph. */
static int64_t node_pos(const lt_builder *b, const pr_node *n)
{
	if (n->order < b->order0 || !b->gap)
		return b->lt->n_positions == 1 && b->nodes[0] == n ? 0 : -1;
	uint64_t pos = (n->order - b->order0) / b->gap;
	if (pos >= (uint64_t)b->lt->n_positions || b->nodes[pos] != n)
		return -1;
	return (int64_t)pos;
}

static int64_t add_class(lt_builder *b, pr_node *n, int elem, pr_spec *spec, int64_t pos)
{
	pr_lifetimes *lt = b->lt;
	if (lt->n_classes == b->cap_classes) {
		b->cap_classes = b->cap_classes ? 2 * b->cap_classes : 64;
		lt->classes = pr_xrealloc(lt->classes, (size_t)b->cap_classes * sizeof *lt->classes);
	}
	pr_plan_class *c = &lt->classes[lt->n_classes];
	c->node = n;
	c->elem = elem;
	c->spec = spec;
	c->device = host_normalized(spec->device);
	c->bytes = 0;
	c->start = c->end = pos;
	c->flags = 0;
	return lt->n_classes++;
}

static void add_value(lt_builder *b, pr_node *n, int elem, pr_spec *spec, int64_t cls)
{
	pr_lifetimes *lt = b->lt;
	if (lt->n_values == b->cap_values) {
		b->cap_values = b->cap_values ? 2 * b->cap_values : 64;
		lt->values = pr_xrealloc(lt->values, (size_t)b->cap_values * sizeof *lt->values);
	}
	lt->values[lt->n_values++] = (pr_plan_value){ n, elem, spec, cls };
	pr_plan_class *c = &lt->classes[cls];
	int64_t bytes = pr_spec_storage_bytes(spec);
	if (bytes > c->bytes)
		c->bytes = bytes;
}

/* How many values node n has (a tensor: 1, a tuple: its elements). */
static int n_values_of(const pr_node *n)
{
	if (n->type.kind == PR_TYPE_TENSOR)
		return 1;
	if (n->type.kind == PR_TYPE_TUPLE)
		return n->type.n_elems;
	return 0;
}

/* The value index of element elem (-1: the tensor itself) of node v, or -1. */
static int64_t value_of(const lt_builder *b, const pr_node *v, int elem)
{
	int64_t pos = node_pos(b, v);
	if (pos < 0)
		return -1;
	int64_t first = b->first_value[pos];
	if (first < 0)
		return -1;
	if (v->type.kind == PR_TYPE_TENSOR)
		return elem < 0 ? first : -1;
	if (elem < 0 || elem >= v->type.n_elems)
		return -1;
	return first + elem;
}

/* The class that return r of op node n shares, or -1 for a fresh one. */
static int64_t aliased_class(const lt_builder *b, const pr_node *n, int r)
{
	if (n->kind == PR_NODE_GETITEM) {
		if (n->n_args < 1 || n->args[0].kind != PR_ARG_VALUE || !n->args[0].u.value)
			return -1;
		int64_t v = value_of(b, n->args[0].u.value, (int)n->index);
		return v < 0 ? -1 : b->lt->values[v].cls;
	}
	if (n->kind != PR_NODE_OP || !n->schema)
		return -1;
	if (n->type.kind == PR_TYPE_TUPLE)
		r = pr_schema_elem_return(n->schema, r);   /* every piece of a Tensor(a)[] aliases */
	if (r < 0 || r >= n->schema->n_returns)
		return -1;
	int a = pr_schema_return_alias(n->schema, r);
	if (a < 0 || a >= n->n_args || n->args[a].kind != PR_ARG_VALUE || !n->args[a].u.value)
		return -1;
	int64_t v = value_of(b, n->args[a].u.value, -1);
	return v < 0 ? -1 : b->lt->values[v].cls;
}

static void define_values(lt_builder *b, pr_node *n, int64_t pos)
{
	int nv = n_values_of(n);
	b->first_value[pos] = nv ? b->lt->n_values : -1;
	for (int i = 0; i < nv; i++) {
		int elem = n->type.kind == PR_TYPE_TUPLE ? i : -1;
		pr_spec *spec = elem < 0 ? &n->type.tensor : &n->type.elems[i];
		int64_t cls = aliased_class(b, n, i);
		if (cls < 0)
			cls = add_class(b, n, elem, spec, n->kind == PR_NODE_INPUT ? 0 : pos);
		pr_plan_class *c = &b->lt->classes[cls];
		if (pos > c->end)
			c->end = pos;
		add_value(b, n, elem, spec, cls);
	}
}

/* Stretches the classes of every value that argument a names to pos. */
static void read_arg(lt_builder *b, const pr_arg *a, int64_t pos, unsigned flags)
{
	if (a->kind == PR_ARG_LIST) {
		for (int i = 0; i < a->u.list.n; i++)
			read_arg(b, &a->u.list.items[i], pos, flags);
		return;
	}
	if (a->kind != PR_ARG_VALUE || !a->u.value)
		return;
	const pr_node *v = a->u.value;
	int64_t first = value_of(b, v, v->type.kind == PR_TYPE_TUPLE ? 0 : -1);
	for (int i = 0; first >= 0 && i < n_values_of(v); i++) {
		pr_plan_class *c = &b->lt->classes[b->lt->values[first + i].cls];
		if (pos > c->end)
			c->end = pos;
		c->flags |= flags;
	}
}

/* The names that the return node writes back as buffers: a set, so that
 * finding the mutable buffers stays linear with thousands of them. */
typedef struct name_set {
	const char *name;
	UT_hash_handle hh;
} name_set;

static name_set *writeback_buffers(const pr_node *ret)
{
	name_set *set = NULL;
	for (int i = 0; ret && ret->writebacks && i < ret->n_args; i++) {
		const pr_writeback *w = &ret->writebacks[i];
		name_set *e;
		if (w->kind != PR_WRITEBACK_BUFFER || !w->target)
			continue;
		HASH_FIND_STR(set, w->target, e);
		if (e)
			continue;
		e = pr_xmalloc(sizeof *e);
		e->name = w->target;
		HASH_ADD_KEYPTR(hh, set, e->name, strlen(e->name), e);
	}
	return set;
}

static void name_set_free(name_set *set)
{
	name_set *e, *tmp;
	HASH_ITER(hh, set, e, tmp) {
		HASH_DEL(set, e);
		free(e);
	}
}

static unsigned input_flags(const pr_node *in, name_set *mutable_buffers)
{
	name_set *e = NULL;
	switch (in->input_kind) {
	case PR_INPUT_POSITIONAL:
	case PR_INPUT_USER:
		return PR_CLASS_USER_INPUT;
	case PR_INPUT_BUFFER:
		if (in->input_name)
			HASH_FIND_STR(mutable_buffers, in->input_name, e);
		if (e)
			return PR_CLASS_MUTABLE | PR_CLASS_WHOLE;
		/* fall through */
	case PR_INPUT_PARAMETER:
	case PR_INPUT_CONSTANT:
		break;
	}
	unsigned f = PR_CLASS_CONSTANT;
	if (in->type.kind == PR_TYPE_TENSOR && !pr_device_is_host(in->type.tensor.device))
		f |= PR_CLASS_WHOLE;
	return f;
}

static void read_args(lt_builder *b, pr_node *n, int64_t pos)
{
	for (int i = 0; i < n->n_args; i++) {
		/* A getitem is its element, not a read of the whole tuple. */
		if (n->kind == PR_NODE_GETITEM && i == 0)
			continue;
		unsigned flags = 0;
		if (n->kind == PR_NODE_RETURN) {
			bool wb = n->writebacks && n->writebacks[i].kind != PR_WRITEBACK_NONE;
			flags = wb ? PR_CLASS_WRITEBACK : PR_CLASS_OUTPUT;
		}
		read_arg(b, &n->args[i], pos, flags);
	}
}

static void finish_classes(pr_lifetimes *lt, pr_node *ret)
{
	name_set *mutable_buffers = writeback_buffers(ret);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		pr_plan_class *c = &lt->classes[i];
		if (c->elem < 0 && c->node->kind == PR_NODE_INPUT)
			c->flags |= input_flags(c->node, mutable_buffers);
		if (c->flags & PR_CLASS_WHOLE) {
			c->start = 0;
			c->end = lt->n_positions - 1;
		}
	}
	name_set_free(mutable_buffers);
}

/* The graph is a linked list of large nodes: on a big method every first
 * touch of a node is a cache miss, so the nodes are walked once, numbering
 * and processing each, with the next node's lines prefetched. Positions come
 * from node->order: the walk checks that the orders step evenly (they do
 * after pr_graph_renumber, which it calls and starts again when they do
 * not), so a node's position is one division away and nothing is written
 * into the nodes. */

/* Every cache line of the node that the walk reads: the spec's head, shape
 * and strides, the links and arguments. */
static void prefetch_node(const pr_node *n)
{
	const char *p = (const char *)n;
	for (size_t off = 0; off < sizeof *n; off += 64)
		__builtin_prefetch(p + off);
}

static void builder_grow(lt_builder *b, int64_t *cap)
{
	*cap *= 2;
	b->nodes = pr_xrealloc(b->nodes, (size_t)*cap * sizeof *b->nodes);
	b->first_value = pr_xrealloc(b->first_value, (size_t)*cap * sizeof *b->first_value);
}

/* Numbers and processes every node; false (and b half done) when the orders
 * do not step evenly. */
static bool walk_nodes(lt_builder *b, pr_graph *g)
{
	int64_t cap = g->n_nodes > 0 ? g->n_nodes : 16, n = 0;
	b->nodes = pr_xmalloc((size_t)cap * sizeof *b->nodes);
	b->first_value = pr_xmalloc((size_t)cap * sizeof *b->first_value);
	b->cap_values = b->cap_classes = cap;
	b->lt->values = pr_xmalloc((size_t)b->cap_values * sizeof *b->lt->values);
	b->lt->classes = pr_xmalloc((size_t)b->cap_classes * sizeof *b->lt->classes);
	pr_graph_for_each(g, node) {
		if (node->next)
			prefetch_node(node->next);
		if (n == cap)
			builder_grow(b, &cap);
		if (n == 0)
			b->order0 = node->order;
		else if (n == 1)
			b->gap = node->order - b->order0;
		if (n > 0 && (b->gap == 0 || node->order != b->order0 + (uint64_t)n * b->gap))
			return false;
		b->nodes[n] = node;
		b->lt->n_positions = n + 1;
		read_args(b, node, n);
		define_values(b, node, n);
		n++;
	}
	return true;
}

static void builder_reset(lt_builder *b)
{
	free(b->nodes);
	free(b->first_value);
	free(b->lt->values);
	free(b->lt->classes);
	memset(b->lt, 0, sizeof *b->lt);
	pr_lifetimes *lt = b->lt;
	memset(b, 0, sizeof *b);
	b->lt = lt;
}

pr_lifetimes *pr_lifetimes_compute(pr_graph *g)
{
	lt_builder b = { 0 };
	b.lt = pr_xcalloc(1, sizeof *b.lt);
	if (g->order_stale)
		pr_graph_renumber(g);
	if (!walk_nodes(&b, g)) {
		builder_reset(&b);
		pr_graph_renumber(g);
		PR_ASSERT(walk_nodes(&b, g));
	}
	finish_classes(b.lt, pr_graph_return(g));
	free(b.first_value);
	free(b.nodes);
	return b.lt;
}

void pr_lifetimes_free(pr_lifetimes *lt)
{
	if (!lt)
		return;
	free(lt->values);
	free(lt->classes);
	free(lt);
}

bool pr_plan_class_plannable(const pr_plan_class *c)
{
	if (c->flags & PR_CLASS_CONSTANT)
		return !pr_device_is_host(c->device);
	return true;
}

const char *pr_plan_value_name(const pr_node *n, int elem, char *buf, size_t cap)
{
	const char *name = n->name ? n->name : "?";
	if (elem < 0)
		snprintf(buf, cap, "%s", name);
	else
		snprintf(buf, cap, "%s[%d]", name, elem);
	return buf;
}

/* ---- usage ------------------------------------------------------------ */

/* Index of arena d in the list, adding it when new. */
static int arena_index(pr_device **arenas, int *n, pr_device d)
{
	for (int i = 0; i < *n; i++)
		if (pr_device_equal((*arenas)[i], d))
			return i;
	*arenas = pr_xrealloc(*arenas, (size_t)(*n + 1) * sizeof **arenas);
	(*arenas)[*n] = d;
	return (*n)++;
}

static int64_t peak_live_bytes(const pr_lifetimes *lt, const int *arena_of, int arena)
{
	/* 128-bit sums: tensors of up to 2^63 bytes each add up past int64; the
	 * peak is then reported as INT64_MAX. */
	int64_t T = lt->n_positions;
	__int128 *diff = pr_xcalloc((size_t)T + 1, sizeof *diff);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena_of[i] != arena)
			continue;
		const pr_plan_class *c = &lt->classes[i];
		diff[c->start] += c->bytes;
		diff[c->end + 1] -= c->bytes;
	}
	__int128 live = 0, peak = 0;
	for (int64_t t = 0; t < T; t++) {
		live += diff[t];
		if (live > peak)
			peak = live;
	}
	free(diff);
	return peak > INT64_MAX ? INT64_MAX : (int64_t)peak;
}

int pr_plan_usage(pr_graph *g, pr_arena_usage **out)
{
	*out = NULL;
	pr_lifetimes *lt = pr_lifetimes_compute(g);
	pr_device *arenas = NULL;
	int n_arenas = 0;
	int *arena_of = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *arena_of);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		const pr_spec *s = lt->classes[i].spec;
		arena_of[i] = s->has_mem ? arena_index(&arenas, &n_arenas, host_normalized(s->mem_arena)) : -1;
	}
	pr_arena_usage *u = n_arenas ? pr_xcalloc((size_t)n_arenas, sizeof *u) : NULL;
	for (int a = 0; a < n_arenas; a++) {
		u[a].arena = arenas[a];
		u[a].lower_bound_bytes = peak_live_bytes(lt, arena_of, a);
	}
	for (int64_t i = 0; i < lt->n_classes; i++) {
		if (arena_of[i] < 0)
			continue;
		int64_t top;
		if (__builtin_add_overflow(lt->classes[i].spec->mem_offset, lt->classes[i].bytes, &top))
			top = INT64_MAX;   /* the checker reports it */
		if (top > u[arena_of[i]].planned_bytes)
			u[arena_of[i]].planned_bytes = top;
	}
	free(arenas);
	free(arena_of);
	pr_lifetimes_free(lt);
	*out = u;
	return n_arenas;
}

/* ---- the checker ------------------------------------------------------ */

typedef struct check_ctx {
	pr_diags *diags;
	const char *pass;
	const char *method;
	const pr_lifetimes *lt;
	int errors;
} check_ctx;

static void plan_error(check_ctx *k, const pr_plan_value *v, const char *msg)
{
	char name[128];
	pr_plan_value_name(v->node, v->elem, name, sizeof name);
	pr_diags_add(k->diags, PR_SEV_ERROR, "E-PLAN", k->pass, k->method, name,
		     pr_spec_storage_bytes(v->spec), "%%%s %s", name, msg);
	k->errors++;
}

static bool same_mem(const pr_spec *a, const pr_spec *b)
{
	if (a->has_mem != b->has_mem)
		return false;
	return !a->has_mem || (pr_device_equal(host_normalized(a->mem_arena), host_normalized(b->mem_arena)) &&
			       a->mem_offset == b->mem_offset);
}

/* "cuda:0:128", or "none". */
static const char *mem_str(const pr_spec *s, char *buf, size_t cap)
{
	char arena[PR_DEVICE_STR_MAX];
	if (!s->has_mem)
		snprintf(buf, cap, "none");
	else
		snprintf(buf, cap, "%s:%lld", pr_device_str(host_normalized(s->mem_arena), arena),
			 (long long)s->mem_offset);
	return buf;
}

/* Arena, alias and constant rules, one value at a time. */
static void check_value(check_ctx *k, const pr_plan_value *v)
{
	const pr_plan_class *c = &k->lt->classes[v->cls];
	const pr_spec *s = v->spec;
	char msg[512], dev[PR_DEVICE_STR_MAX], mem[64], base_mem[64], base[128];
	if (s->has_mem && !pr_device_equal(host_normalized(s->mem_arena), host_normalized(s->device))) {
		snprintf(msg, sizeof msg, "is on %s but planned in another arena (mem=%s)",
			 pr_device_str(host_normalized(s->device), dev), mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
	if (s->has_mem && s->mem_offset < 0) {
		snprintf(msg, sizeof msg, "has a negative offset (mem=%s)", mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
	int64_t end;
	if (s->has_mem && s->mem_offset >= 0 &&
	    __builtin_add_overflow(s->mem_offset, pr_spec_storage_bytes(s), &end)) {
		snprintf(msg, sizeof msg, "ends past the largest offset an arena can have (mem=%s and "
			 "%lld bytes overflow int64); expected offset + size of at most %lld",
			 mem_str(s, mem, sizeof mem), (long long)pr_spec_storage_bytes(s),
			 (long long)INT64_MAX);
		plan_error(k, v, msg);
	}
	if (v->spec != c->spec && !same_mem(s, c->spec)) {
		snprintf(msg, sizeof msg, "shares the memory of %%%s (an in-place result, view or getitem of it) but is planned apart (mem=%s, %%%s has mem=%s)",
			 pr_plan_value_name(c->node, c->elem, base, sizeof base), mem_str(s, mem, sizeof mem),
			 base, mem_str(c->spec, base_mem, sizeof base_mem));
		plan_error(k, v, msg);
	}
	if (v->spec == c->spec && s->has_mem && !pr_plan_class_plannable(c)) {
		snprintf(msg, sizeof msg, "is a constant on the host but has planned memory (mem=%s); only device-resident constants are planned",
			 mem_str(s, mem, sizeof mem));
		plan_error(k, v, msg);
	}
}

/* A Fenwick tree of 0/1 counts over ranks, for the sweep's live set. */
typedef struct fenwick {
	int64_t n;
	int64_t *t;
	int64_t count;
} fenwick;

static void fw_add(fenwick *f, int64_t i, int64_t d)
{
	f->count += d;
	for (i++; i <= f->n; i += i & -i)
		f->t[i] += d;
}

static int64_t fw_prefix(const fenwick *f, int64_t i) /* sum over [0, i) */
{
	int64_t s = 0;
	for (; i > 0; i -= i & -i)
		s += f->t[i];
	return s;
}

static int64_t fw_kth(const fenwick *f, int64_t k) /* rank of the k-th (1-based) live */
{
	int64_t pos = 0, step = 1;
	while (step * 2 <= f->n)
		step *= 2;
	for (; step; step /= 2)
		if (pos + step <= f->n && f->t[pos + step] < k) {
			pos += step;
			k -= f->t[pos];
		}
	return pos;
}

typedef struct planned_class {
	int64_t cls;
	int arena;
	int64_t offset;
} planned_class;

static int cmp_planned(const void *a, const void *b)
{
	const planned_class *x = a, *y = b;
	if (x->arena != y->arena)
		return x->arena < y->arena ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->cls < y->cls ? -1 : x->cls > y->cls;
}

static bool pc_overlap(const check_ctx *k, const planned_class *a, const planned_class *b)
{
	if (a->arena != b->arena)
		return false;
	const planned_class *lo = a->offset <= b->offset ? a : b, *hi = lo == a ? b : a;
	return k->lt->classes[lo->cls].bytes > hi->offset - lo->offset;  /* offsets >= 0 */
}

static void overlap_error(check_ctx *k, const planned_class *a, const planned_class *b)
{
	const pr_plan_class *ca = &k->lt->classes[a->cls], *cb = &k->lt->classes[b->cls];
	char na[128], nb[128], arena[PR_DEVICE_STR_MAX];
	pr_plan_value_name(ca->node, ca->elem, na, sizeof na);
	pr_plan_value_name(cb->node, cb->elem, nb, sizeof nb);
	pr_diags_add(k->diags, PR_SEV_ERROR, "E-PLAN", k->pass, k->method, na, ca->bytes,
		     "%%%s (offset %lld, %lld bytes, live %lld..%lld) and %%%s (offset %lld, %lld bytes, live %lld..%lld) overlap in arena %s while both are live",
		     na, (long long)a->offset, (long long)ca->bytes, (long long)ca->start, (long long)ca->end,
		     nb, (long long)b->offset, (long long)cb->bytes, (long long)cb->start, (long long)cb->end,
		     pr_device_str(host_normalized(ca->spec->mem_arena), arena));
	k->errors++;
}

/* Inserts rank r into the live set unless it overlaps a neighbour. */
static void sweep_insert(check_ctx *k, fenwick *f, const planned_class *pcs, int64_t r)
{
	int64_t below = fw_prefix(f, r);
	if (below > 0) {
		const planned_class *p = &pcs[fw_kth(f, below)];
		if (pc_overlap(k, p, &pcs[r])) {
			overlap_error(k, p, &pcs[r]);
			return;
		}
	}
	if (below < f->count) {
		const planned_class *s = &pcs[fw_kth(f, below + 1)];
		if (pc_overlap(k, &pcs[r], s)) {
			overlap_error(k, s, &pcs[r]);
			return;
		}
	}
	fw_add(f, r, 1);
}

static void check_overlaps(check_ctx *k)
{
	const pr_lifetimes *lt = k->lt;
	pr_device *arenas = NULL;
	int n_arenas = 0;
	int64_t n = 0;
	planned_class *pcs = pr_xmalloc((size_t)(lt->n_classes + 1) * sizeof *pcs);
	for (int64_t i = 0; i < lt->n_classes; i++) {
		const pr_plan_class *c = &lt->classes[i];
		int64_t end;
		if (!c->spec->has_mem || c->bytes <= 0 || c->spec->mem_offset < 0 ||
		    __builtin_add_overflow(c->spec->mem_offset, c->bytes, &end))
			continue;   /* check_value reported an offset that is not one */
		pcs[n++] = (planned_class){ i, arena_index(&arenas, &n_arenas, host_normalized(c->spec->mem_arena)),
					    c->spec->mem_offset };
	}
	qsort(pcs, (size_t)n, sizeof *pcs, cmp_planned);
	/* Bucket the ranks by start and by end position (counting sort). */
	int64_t T = lt->n_positions;
	int64_t *start_head = pr_xmalloc((size_t)(T + 1) * sizeof *start_head);
	int64_t *end_head = pr_xmalloc((size_t)(T + 1) * sizeof *end_head);
	int64_t *next_start = pr_xmalloc((size_t)(n + 1) * sizeof *next_start);
	int64_t *next_end = pr_xmalloc((size_t)(n + 1) * sizeof *next_end);
	for (int64_t t = 0; t <= T; t++)
		start_head[t] = end_head[t] = -1;
	for (int64_t r = n - 1; r >= 0; r--) {
		const pr_plan_class *c = &lt->classes[pcs[r].cls];
		next_start[r] = start_head[c->start];
		start_head[c->start] = r;
		next_end[r] = end_head[c->end];
		end_head[c->end] = r;
	}
	fenwick f = { n, pr_xcalloc((size_t)n + 1, sizeof(int64_t)), 0 };
	bool *live = pr_xcalloc((size_t)n + 1, sizeof *live);
	for (int64_t t = 0; t < T; t++) {
		for (int64_t r = start_head[t]; r >= 0; r = next_start[r]) {
			int64_t before = f.count;
			sweep_insert(k, &f, pcs, r);
			live[r] = f.count > before;
		}
		for (int64_t r = end_head[t]; r >= 0; r = next_end[r])
			if (live[r]) {
				fw_add(&f, r, -1);
				live[r] = false;
			}
	}
	free(live);
	free(f.t);
	free(start_head);
	free(end_head);
	free(next_start);
	free(next_end);
	free(pcs);
	free(arenas);
}

int pr_plan_check(pr_program *p, pr_diags *diags, const char *pass_name)
{
	int errors = 0;
	for (int m = 0; m < p->n_methods; m++) {
		pr_graph *g = p->methods[m];
		check_ctx k = { diags, pass_name ? pass_name : "verifier", g->name, NULL, 0 };
		k.lt = pr_lifetimes_compute(g);
		for (int64_t i = 0; i < k.lt->n_values; i++)
			check_value(&k, &k.lt->values[i]);
		check_overlaps(&k);
		errors += k.errors;
		pr_lifetimes_free((pr_lifetimes *)k.lt);
	}
	return errors;
}
