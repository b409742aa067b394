/* lifetimes.c: the lifetimes of a method's tensors (docs/placement-rules.md M1, F10; the
 * contract is in passrun/plan.h).
 *
 * One walk in graph order numbers the nodes (positions), lists the
 * tensor values (a tensor node, or each element of a tuple node) and gives each
 * value a storage class. A value starts a new class unless it shares memory
 * with an earlier one: an op result whose schema return aliases an argument
 * (in place, Tensor(a!), or a view, Tensor(a)) joins that argument's class, and
 * a getitem joins the class of the tuple element it names. Because an alias
 * always names a value defined before it, the class is known when the alias is
 * met: no union-find is needed. Every definition and every read of a member
 * stretches the class's interval [start, end]. Inputs start at 0; mutable
 * buffers and device-resident constants live for the whole method. */
#include "passrun/plan.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lifetimes -------------------------------------------------------- */

/* What the walk does per node or per value, inlined into it: a call's
 * saves and restores would cost about as much as the work. */
#define LT_INLINE static inline __attribute__((always_inline))

/* Storage bytes by layout: a value mostly has the layout of one met just
 * before, and the interned dims (immutable; the shape then the strides, so
 * the pointer and rank name both) name it. */
#define BYTES_MEMO 64

typedef struct bytes_memo {
	const int64_t *shape;
	int rank;               /* INT_MIN in an empty slot: no spec's (16 bits) */
	pr_dtype dtype;
	int64_t bytes;
} bytes_memo;

/* The argument an op's tensor result aliases, by schema: a method calls few
 * schemas many times, and the schema (immutable) decides it. */
#define ALIAS_MEMO 32

typedef struct alias_memo {
	const pr_schema *schema;
	int arg;
} alias_memo;

/* The index of a device in lt->devices by its id: a method's classes are
 * on few devices, each met again and again, mostly alternating (a value
 * and its copy), so one remembered answer would miss at every switch. key
 * is the id + 1, 0 when the slot is empty. */
#define DEVICE_MEMO 8

typedef struct device_memo {
	uint64_t key;
	uint16_t index;
} device_memo;

/* The walk's state. The arrays it fills are here, not behind lt, and are
 * handed to lt when it ends: every read of a value would otherwise load lt
 * first, and again after each store the compiler cannot tell apart from
 * lt's fields. */
typedef struct lt_builder {
	pr_lifetimes *lt;       /* its devices; the rest when the walk ends */
	pr_plan_value *values;
	pr_plan_class *classes;
	int64_t n_values, n_classes;
	int64_t n_split;        /* pr_lifetimes.n_split */
	int64_t cap;            /* of values and of classes alike: a class is
				 * made just before its first value, so there
				 * are never more classes than values, and one
				 * check makes room for both */
	int64_t values_ready, classes_ready; /* records faulted in (ready_more) */
	int32_t *first;         /* per position visited: its node's first value,
				 * or -1 (it has none): 4 bytes a node, the value
				 * naming the node and its class */
	int64_t n_positions, cap_positions;
	int32_t *whole;         /* the classes that live for the whole method:
				 * their end is known when the walk ends */
	int64_t n_whole, cap_whole;
	uint64_t order0, gap;   /* node->order == order0 + pos * gap */
	int gap_shift;          /* log2 of gap when it is a power of two, else -1 */
	device_memo devices[DEVICE_MEMO];
	pr_device_id *device_ids; /* per device: its id */
	int64_t cap_devices;
	pr_mutable_buffers *mutable_buffers; /* the graph's, for the inputs' flags */
	bytes_memo memo[BYTES_MEMO];
	alias_memo alias[ALIAS_MEMO];
} lt_builder;

/* n's first value (a tuple's next ones follow it), or NULL when n has none
 * yet or is not a node of the graph: the value at the position n's order
 * gives must name n. That check alone decides; an order below the first
 * node's wraps to a position past the end or to one that names another
 * node, so it needs no test of its own. */
LT_INLINE const pr_plan_value *first_value(const lt_builder *b, const pr_node *n)
{
	uint64_t d = n->order - b->order0;
	/* pr_graph_renumber's step is a power of two: a shift, not a
	 * division, on every read. */
	uint64_t pos = __builtin_expect(b->gap_shift >= 0, 1) ? d >> b->gap_shift : d / b->gap;
	if (pos >= (uint64_t)b->n_positions)
		return NULL;
	int32_t v = b->first[pos];   /* -1, or a value the walk has added */
	if (v < 0 || b->values[v].node != n)
		return NULL;
	return &b->values[v];
}

/* A memo's miss, out of line: the walk inlines only the hit. */
static int64_t remember_bytes(bytes_memo *m, const pr_spec *s)
{
	*m = (bytes_memo){s->shape, s->rank, s->dtype, pr_spec_storage_bytes(s)};
	return m->bytes;
}

LT_INLINE int64_t storage_bytes(lt_builder *b, const pr_spec *s)
{
	bytes_memo *m = &b->memo[((uintptr_t)s->shape >> 4) % BYTES_MEMO];
	if (m->shape != s->shape || m->rank != s->rank || m->dtype != s->dtype)
		return remember_bytes(m, s);
	return m->bytes;
}

static unsigned input_flags(const pr_node *in, const pr_mutable_buffers *mutable_buffers)
{
	switch (in->of_kind.input->kind) {
	case PR_INPUT_POSITIONAL:
	case PR_INPUT_USER:
		return PR_CLASS_USER_INPUT;
	case PR_INPUT_BUFFER:
		if (pr_mutable_buffers_has(mutable_buffers, in))
			return PR_CLASS_MUTABLE | PR_CLASS_WHOLE;
		/* fall through */
	case PR_INPUT_PARAMETER:
	case PR_INPUT_CONSTANT:
		break;
	}
	unsigned f = PR_CLASS_CONSTANT;
	if (in->type.kind == PR_TYPE_TENSOR && !pr_spec_on_host(&in->type.tensor))
		f |= PR_CLASS_WHOLE;
	return f;
}

/* device_index's search and insertion, when the memo does not know id. */
static uint16_t find_device(lt_builder *b, pr_device_id id, device_memo *m)
{
	pr_lifetimes *lt = b->lt;
	int64_t i = 0;
	while (i < lt->n_devices && b->device_ids[i] != id)
		i++;
	if (i == lt->n_devices) {
		PR_ASSERT(lt->n_devices < UINT16_MAX);   /* plan.h: a 16-bit index */
		if (lt->n_devices == b->cap_devices) {
			b->cap_devices = b->cap_devices ? 2 * b->cap_devices : 4;
			lt->devices = pr_xrealloc(lt->devices, (size_t)b->cap_devices * sizeof *lt->devices);
			b->device_ids = pr_xrealloc(b->device_ids, (size_t)b->cap_devices * sizeof *b->device_ids);
		}
		lt->devices[lt->n_devices] = *pr_device_of(id);
		b->device_ids[lt->n_devices++] = id;
	}
	*m = (device_memo){ (uint64_t)id + 1, (uint16_t)i };
	return m->index;
}

/* The index of the device of id in lt->devices, added when new. Ids are
 * canonical devices, so one compare per device. */
LT_INLINE uint16_t device_index(lt_builder *b, pr_device_id id)
{
	device_memo *m = &b->devices[id % DEVICE_MEMO];
	return m->key == (uint64_t)id + 1 ? m->index : find_device(b, id, m);
}

/* Records of values or classes faulted in at a time: the arrays are sized
 * for every node, a fifth of them never written (10^6 nodes: 1.48 M values,
 * 1.21 M classes, 1.57 M nodes), so they are faulted in a batch at a time as
 * they fill (pr_pages_fill, one call) instead of a fault per page, which
 * costs 3-4 us on a virtual machine, and their tails stay out of memory. */
#define READY_BATCH 16384

/* Faults in the next batch of records of array a (size bytes each) from
 * record ready, up to cap; returns how far it is ready now. */
static int64_t ready_more(void *a, size_t size, int64_t ready, int64_t cap)
{
	int64_t to = cap - ready < READY_BATCH ? cap : ready + READY_BATCH;
	pr_pages_fill((char *)a + (size_t)ready * size, (size_t)(to - ready) * size);
	return to;
}

/* Room for one more value, and so for its class: the next batch of
 * values, or both arrays grown when they are full. */
static void grow_values(lt_builder *b)
{
	if (b->n_values == b->cap) {
		PR_ASSERT(b->n_values < INT32_MAX);   /* plan.h: indexes are 32-bit */
		b->cap = b->cap < INT32_MAX / 2 ? 2 * b->cap : INT32_MAX;
		b->classes = pr_xrealloc(b->classes, (size_t)b->cap * sizeof *b->classes);
		b->values = pr_xrealloc(b->values, (size_t)b->cap * sizeof *b->values);
	}
	b->values_ready = ready_more(b->values, sizeof *b->values, b->n_values, b->cap);
}

/* Room for one more class: the next batch of the classes (grow_values has
 * made room for its value, so for it). */
static void ready_classes(lt_builder *b)
{
	b->classes_ready = ready_more(b->classes, sizeof *b->classes, b->n_classes, b->cap);
}

/* Adds value (n, elem) of class cls, whose class the caller has made room
 * for already; spec is the value's. */
LT_INLINE void add_value(lt_builder *b, pr_node *n, int elem, const pr_spec *spec, int32_t cls)
{
	b->values[b->n_values++] = (pr_plan_value){ n, cls, elem };
	pr_plan_class *c = &b->classes[cls];
	int64_t bytes = storage_bytes(b, spec);
	if (bytes > c->bytes)
		c->bytes = bytes;
}

/* Class cls, an input's, lives for the whole method (only an input's
 * flags say so, and reads never add it). */
static void note_whole(lt_builder *b, int32_t cls)
{
	PR_GROW(b->whole, b->n_whole, b->cap_whole);
	b->whole[b->n_whole++] = cls;
}

/* A new class, for value (n, elem) (elem -1: the tensor) of a node of
 * kind kind, added with it. Its flags are known here, while the node is in
 * cache: an input's, and the host's. */
LT_INLINE void add_class(lt_builder *b, pr_node *n, pr_node_kind kind, int elem, const pr_spec *spec, int32_t pos)
{
	if (__builtin_expect(b->n_classes == b->classes_ready, 0))
		ready_classes(b);
	pr_plan_class *c = &b->classes[b->n_classes];
	/* An input lives from 0 (plan.h); a class's bytes are never negative. */
	int64_t bytes = storage_bytes(b, spec);
	*c = (pr_plan_class){
		.bytes = bytes > 0 ? bytes : 0,
		.start = kind == PR_NODE_INPUT ? 0 : pos,
		.end = pos,
		.base = (int32_t)b->n_values,
		.flags = (uint16_t)((elem < 0 && kind == PR_NODE_INPUT ? input_flags(n, b->mutable_buffers) : 0) |
				    (spec->device_id == PR_DEVICE_ID_HOST ? PR_CLASS_HOST : 0)),
		.device = device_index(b, spec->device_id),
	};
	if (kind == PR_NODE_INPUT && (c->flags & PR_CLASS_WHOLE))
		note_whole(b, (int32_t)b->n_classes);
	b->values[b->n_values++] = (pr_plan_value){ n, (int32_t)b->n_classes++, elem };
}

/* Value (n, elem) joins class cls, which it stretches to pos. Ids are
 * canonical devices (device.h), so one compare tells a member on another
 * device than its base. */
LT_INLINE void join_class(lt_builder *b, pr_node *n, int elem, const pr_spec *spec, int32_t cls, int32_t pos)
{
	pr_plan_class *c = &b->classes[cls];
	if (pos > c->end)
		c->end = pos;
	b->n_split += spec->device_id != b->device_ids[c->device];
	add_value(b, n, elem, spec, cls);
}

/* The class of element elem (-1: the tensor itself) of node v, or -1. A
 * tuple's values follow each other, each naming v. */
LT_INLINE int32_t class_of(const lt_builder *b, const pr_node *v, int64_t elem)
{
	const pr_plan_value *first = first_value(b, v);
	if (!first)
		return -1;
	if (first->elem < 0)
		return elem < 0 ? first->cls : -1;
	if (elem < 0 || elem >= b->values + b->n_values - first)
		return -1;
	return first[elem].node == v ? first[elem].cls : -1;
}

static int remember_alias(alias_memo *m, const pr_node *n)
{
	*m = (alias_memo){n->of_kind.schema, pr_node_alias_arg(n, 0)};
	return m->arg;
}

/* pr_node_alias_arg(n, r) of op node n, asked once per schema of a
 * tensor-valued op (r is 0 there); a tuple's elements ask it each time. */
LT_INLINE int alias_arg(lt_builder *b, const pr_node *n, int r)
{
	if (!n->of_kind.schema || n->type.kind != PR_TYPE_TENSOR)
		return pr_node_alias_arg(n, r);
	alias_memo *m = &b->alias[((uintptr_t)n->of_kind.schema >> 4) % ALIAS_MEMO];
	return m->schema == n->of_kind.schema ? m->arg : remember_alias(m, n);
}

/* The class that value (n, elem) of a node of kind kind shares, or -1 for
 * a fresh one: an op's result that its schema makes a view or an in-place
 * result of an argument, or a getitem's element. An input's, a delegate
 * call's or a return's value shares none (pr_node_alias_arg: only an op's
 * aliases). */
LT_INLINE int32_t shared_class(lt_builder *b, const pr_node *n, pr_node_kind kind, int elem)
{
	if (kind == PR_NODE_OP) {
		const pr_node *base = pr_node_value_arg(n, alias_arg(b, n, elem < 0 ? 0 : elem));   /* pr_node_alias_value, memoized */
		return base ? class_of(b, base, -1) : -1;
	}
	if (kind == PR_NODE_GETITEM) {
		const pr_node *tuple = pr_node_value_arg(n, 0);
		return tuple ? class_of(b, tuple, (int)n->of_kind.index) : -1;
	}
	return -1;
}

/* Value (n, elem) after n's reads: an alias of n itself names nothing (n's
 * position does not count yet). */
LT_INLINE void define_value(lt_builder *b, pr_node *n, pr_node_kind kind, int elem, int32_t pos)
{
	if (__builtin_expect(b->n_values == b->values_ready, 0))
		grow_values(b);
	const pr_spec *spec = pr_plan_spec_of(n, elem);
	int32_t cls = shared_class(b, n, kind, elem);
	if (cls < 0)
		add_class(b, n, kind, elem, spec, pos);
	else
		join_class(b, n, elem, spec, cls, pos);
}

/* The node's values: a tensor's one (the common case, without the tuple's
 * loop), or a tuple's one per element. */
LT_INLINE void define_values(lt_builder *b, pr_node *n, pr_node_kind kind, int32_t pos)
{
	int32_t first = (int32_t)b->n_values;
	if (n->type.kind == PR_TYPE_TENSOR) {
		define_value(b, n, kind, -1, pos);
	} else if (n->type.kind == PR_TYPE_TUPLE && n->type.n_elems > 0) {
		for (int i = 0; i < n->type.n_elems; i++)
			define_value(b, n, kind, i, pos);
	} else {
		first = -1;   /* no values */
	}
	b->first[pos] = first;
}

/* Stretches the classes of value node v's values (a tuple's: each) to pos. */
LT_INLINE void read_value(lt_builder *b, const pr_node *v_node, int32_t pos, unsigned flags)
{
	const pr_plan_value *v = first_value(b, v_node);
	if (!v)
		return;
	for (;;) {
		pr_plan_class *c = &b->classes[v->cls];
		if (pos > c->end)
			c->end = pos;
		c->flags |= (uint16_t)flags;
		/* A tensor has one value; a tuple's follow its first. */
		if (v->elem < 0 || ++v == b->values + b->n_values || v->node != v_node)
			return;
	}
}

static void read_list(lt_builder *b, const pr_arg *list, int32_t pos, unsigned flags);

/* Stretches the classes of every value that argument a names to pos. A
 * list is rare: it alone is a call, so the common value is read inline. */
LT_INLINE void read_arg(lt_builder *b, const pr_arg *a, int32_t pos, unsigned flags)
{
	if (a->kind == PR_ARG_VALUE) {
		if (a->u.value)
			read_value(b, a->u.value, pos, flags);
	} else if (a->kind == PR_ARG_LIST) {
		read_list(b, a, pos, flags);
	}
}

static void read_list(lt_builder *b, const pr_arg *list, int32_t pos, unsigned flags)
{
	for (int i = 0; i < list->n_items; i++)
		read_arg(b, &list->u.items[i], pos, flags);
}

/* The return node's reads flag its values as outputs or write-backs. */
static void read_return_args(lt_builder *b, pr_node *n, int32_t pos)
{
	for (int i = 0; i < n->n_args; i++) {
		bool wb = n->of_kind.writebacks && n->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE;
		read_arg(b, &n->args[i], pos, wb ? PR_CLASS_WRITEBACK : PR_CLASS_OUTPUT);
	}
}

/* The reads of node n of kind kind. */
LT_INLINE void read_args(lt_builder *b, pr_node *n, pr_node_kind kind, int32_t pos)
{
	if (kind == PR_NODE_RETURN) {
		read_return_args(b, n, pos);
		return;
	}
	/* A getitem is its element, not a read of the whole tuple. */
	for (int i = kind == PR_NODE_GETITEM ? 1 : 0; i < n->n_args; i++)
		read_arg(b, &n->args[i], pos, 0);
}

/* Node n's reads, then its values; kind is n's, a constant where
 * visit_node calls it, so that each kind's copy keeps only its own steps. */
LT_INLINE void visit(lt_builder *b, pr_node *n, pr_node_kind kind, int32_t pos)
{
	read_args(b, n, kind, pos);
	define_values(b, n, kind, pos);
}

/* One case split per node, instead of a test of the kind at each step. */
LT_INLINE void visit_node(lt_builder *b, pr_node *n, int32_t pos)
{
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT:
		visit(b, n, PR_NODE_INPUT, pos);
		break;
	case PR_NODE_OP:
		visit(b, n, PR_NODE_OP, pos);
		break;
	case PR_NODE_GETITEM:
		visit(b, n, PR_NODE_GETITEM, pos);
		break;
	case PR_NODE_RETURN:
		visit(b, n, PR_NODE_RETURN, pos);
		break;
	case PR_NODE_DELEGATE:
	default:   /* read and defined as a delegate call: all its arguments, no alias */
		visit(b, n, PR_NODE_DELEGATE, pos);
		break;
	}
}

/* Classes live for the whole method span every position, known at the end:
 * the few the walk noted, not a pass over every class. */
static void finish_classes(const lt_builder *b)
{
	for (int64_t i = 0; i < b->n_whole; i++) {
		pr_plan_class *c = &b->classes[b->whole[i]];
		c->start = 0;
		c->end = (int32_t)(b->n_positions - 1);
	}
}

/* The graph is a linked list of large nodes: on a big method every first
 * touch of a node is a cache miss, so the nodes are walked once, numbering
 * and processing each, with the next node's lines prefetched. Positions come
 * from node->order: the orders must step evenly, so that a node's position
 * is one division away. They do after pr_graph_renumber; erasing nodes since
 * leaves holes, so from the first node off the step on, the walk writes each
 * node the order the step gives it (the line is in cache: it was just read)
 * instead of renumbering the whole graph first, which would walk every node
 * once more. Orders only ever compare, so any strictly rising numbering is
 * as good as pr_graph_renumber's; the first nodes' step is its step unless
 * the graph was built otherwise. */

/* Every cache line of the node that the walk reads: the spec's head, shape
 * and strides, the links and arguments (and the first line of the argument
 * array). */
static void prefetch_node(const pr_node *n)
{
	pr_node_prefetch_lines((uintptr_t)n);
	__builtin_prefetch(n->args);
}

/* The line holding the order of every value node n reads directly, which
 * first_value reads (most are recent, but a layer's weights were defined
 * near the start and are long out of cache), and an input's record. */
static void prefetch_reads(const pr_node *n)
{
	if (n->kind == PR_NODE_INPUT)
		__builtin_prefetch(n->of_kind.input);
	for (int i = 0; i < n->n_args; i++) {
		const pr_arg *a = &n->args[i];
		if (a->kind == PR_ARG_VALUE && a->u.value)
			__builtin_prefetch(&a->u.value->order);
	}
}

/* For a buffer input n (its record in cache: prefetch_reads), the line of
 * the mutable buffers that input_flags asks about it: at 10^6 nodes the
 * set holds 71,000 buffers, out of cache. */
static void prefetch_flags(const lt_builder *b, const pr_node *n)
{
	if (n->kind == PR_NODE_INPUT && n->of_kind.input->kind == PR_INPUT_BUFFER)
		pr_mutable_buffers_prefetch(b->mutable_buffers, n);
}

/* How far ahead of the node visited the walk asks for a node's lines and
 * argument array (LINES_AHEAD), then for the values it reads and its input
 * record (READS_AHEAD), then for its mutable-buffer query (FLAGS_AHEAD),
 * each once the stage before has come in. */
#define LINES_AHEAD 8
#define READS_AHEAD 4
#define FLAGS_AHEAD 2

static pr_node *node_ahead(pr_node *n, int k)
{
	while (n && k--)
		n = n->next;
	return n;
}

static void grow_positions(lt_builder *b)
{
	PR_ASSERT(b->n_positions < INT32_MAX);   /* plan.h: positions are 32-bit */
	b->cap_positions = b->cap_positions < INT32_MAX / 2 ? 2 * b->cap_positions : INT32_MAX;
	b->first = pr_xrealloc(b->first, (size_t)b->cap_positions * sizeof *b->first);
}

static void set_gap(lt_builder *b, uint64_t gap)
{
	b->gap = gap;
	b->gap_shift = gap && !(gap & (gap - 1)) ? __builtin_ctzll(gap) : -1;
}

/* Gives node n of the walk the order the step gives it; false when that
 * order would overflow (then the graph is renumbered and walked again). */
static bool keep_step(lt_builder *b, pr_node *node, int64_t n)
{
	uint64_t order;
	if (b->gap == 0 || __builtin_mul_overflow((uint64_t)n, b->gap, &order) ||
	    __builtin_add_overflow(order, b->order0, &order))
		return false;
	node->order = order;
	return true;
}

/* Node n of the walk, when it is one of the first two (they set the step)
 * or off the step; false when the step cannot be kept. */
static bool step_order(lt_builder *b, pr_node *node, int64_t n, uint64_t *order)
{
	if (n == 0) {
		b->order0 = node->order;
		/* Node 0 names no value yet, whatever the step: a step of 1
		 * until node 1 gives the real one. */
		set_gap(b, 1);
		*order = node->order;
		return true;
	}
	if (n == 1) {
		set_gap(b, node->order - b->order0);
		*order = node->order;
	}
	return (b->gap != 0 && node->order == *order) || keep_step(b, node, n);
}

/* Numbers and processes every node; false (and b half done) when the
 * orders cannot be made to step evenly. */
static bool walk_nodes(lt_builder *b, pr_graph *g)
{
	int64_t cap = g->n_nodes > 0 ? g->n_nodes : 16;
	if (cap > INT32_MAX)
		cap = INT32_MAX;   /* plan.h: positions and indexes are 32-bit */
	uint64_t order = 0;   /* order0 + n * gap (mod 2^64): a sum, not a product */
	b->cap = b->cap_positions = cap;
	/* Allocated in the order they are freed, the first lowest: passrun's
	 * heap keeps what is freed, so holes stay. The planner frees the
	 * classes before it plans, and its arrays then fit in their hole;
	 * first, freed when the walk ends, is the top one and goes back to the
	 * heap's top, where the planner's items then take it and the tail the
	 * values leave when they shrink to one index each. */
	b->classes = pr_xmalloc((size_t)b->cap * sizeof *b->classes);
	b->values = pr_xmalloc((size_t)b->cap * sizeof *b->values);
	b->first = pr_xmalloc((size_t)cap * sizeof *b->first);
	pr_pages_fill(b->first, (size_t)cap * sizeof *b->first);   /* one per node */
	pr_node *lines = node_ahead(g->first, LINES_AHEAD), *reads = node_ahead(g->first, READS_AHEAD);
	pr_node *flags = node_ahead(g->first, FLAGS_AHEAD);
	pr_graph_for_each(g, node) {
		if (lines) {
			prefetch_node(lines);
			lines = lines->next;
		}
		if (reads) {
			prefetch_reads(reads);
			reads = reads->next;
		}
		if (flags) {
			prefetch_flags(b, flags);
			flags = flags->next;
		}
		int64_t n = b->n_positions;
		if (n == b->cap_positions)
			grow_positions(b);
		if ((n < 2 || node->order != order) && !step_order(b, node, n, &order))
			return false;
		/* Its position counts once it is visited: a node reading
		 * itself reads nothing. */
		visit_node(b, node, (int32_t)n);
		b->n_positions = n + 1;
		order += b->gap;
	}
	return true;
}

/* A builder that fills lt (empty), nothing met yet. */
static void builder_init(lt_builder *b, pr_lifetimes *lt, pr_mutable_buffers *mutable_buffers)
{
	*b = (lt_builder){ .lt = lt, .mutable_buffers = mutable_buffers };
	for (int i = 0; i < BYTES_MEMO; i++)
		b->memo[i].rank = INT_MIN;
}

/* The builder as new, for a second walk. */
static void builder_reset(lt_builder *b)
{
	pr_lifetimes *lt = b->lt;
	pr_mutable_buffers *mutable_buffers = b->mutable_buffers;
	free(b->values);
	free(b->classes);
	free(b->first);
	free(b->device_ids);
	free(b->whole);
	free(lt->devices);
	*lt = (pr_lifetimes){ 0 };
	builder_init(b, lt, mutable_buffers);
}

pr_lifetimes *pr_lifetimes_compute(pr_graph *g)
{
	lt_builder b;
	builder_init(&b, pr_xcalloc(1, sizeof *b.lt), pr_graph_mutable_buffers(g));
	if (g->order_stale)
		pr_graph_renumber(g);
	if (!walk_nodes(&b, g)) {
		builder_reset(&b);
		pr_graph_renumber(g);
		PR_ASSERT(walk_nodes(&b, g));
	}
	pr_lifetimes *lt = b.lt;
	lt->n_positions = b.n_positions;
	lt->values = b.values;
	lt->n_values = b.n_values;
	lt->classes = b.classes;
	lt->n_classes = b.n_classes;
	lt->n_split = b.n_split;
	finish_classes(&b);
	pr_mutable_buffers_free(b.mutable_buffers);
	free(b.first);
	free(b.device_ids);
	free(b.whole);
	return lt;
}

void pr_lifetimes_free(pr_lifetimes *lt)
{
	if (!lt)
		return;
	free(lt->values);
	free(lt->classes);
	free(lt->devices);
	free(lt);
}

pr_device pr_plan_class_device(const pr_lifetimes *lt, const pr_plan_class *c)
{
	return lt->devices[c->device];
}

bool pr_plan_class_plannable(const pr_plan_class *c)
{
	if (c->flags & PR_CLASS_CONSTANT)
		return !(c->flags & PR_CLASS_HOST);
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
