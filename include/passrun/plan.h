/* plan.h: the lifetimes of a method's tensors, the facts a memory plan (the
 * mem=ARENA:OFFSET of specs) is made from and checked against: used by the
 * memory-plan plugin, the plan checker (verify.h) and --stats=json.
 *
 * Lifetimes follow docs/placement-rules.md M1: a tensor lives from the node that defines
 * it to its last reader in graph order; in-place results and views share their
 * base's memory and extend its life. */
#ifndef PASSRUN_PLAN_H
#define PASSRUN_PLAN_H

#include "passrun/diag.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- lifetimes ------------------------------------------------------------
 *
 * A storage class is one tensor and everything that shares its memory: the
 * results of in-place ops on it, views of it (a return aliasing an argument,
 * with or without '!'), and getitems of it when it is a tuple element (a
 * delegate's or op's outputs are the tensors; getitem is the element itself).
 * Positions are node indexes in graph order (0 .. n_positions-1; the return
 * node is last). A class lives from its first definition to its last reader,
 * inclusive; the return node reads the method outputs, so they live to the
 * end. Inputs of every kind live from position 0 (the caller's data is there
 * before the first node runs). Two kinds live for the whole method:
 *   - mutable buffers (a buffer with a `-> buffer "NAME"` write-back): they hold
 *     state between calls, so they are planned like ExecuTorch plans them, in
 *     the arena of their device, for the whole method, their data being the
 *     memory's initial value;
 *   - device-resident constants (F10): a parameter/buffer/constant whose spec
 *     device is not the host; the runtime copies them once at load.
 * Other constants (on the host) are never planned: they point at the
 * program's data. */

enum {
	PR_CLASS_USER_INPUT = 1u << 0,  /* a member is a method input (kind user) */
	PR_CLASS_OUTPUT = 1u << 1,      /* a member is returned as a method output */
	PR_CLASS_CONSTANT = 1u << 2,    /* the base is a parameter/buffer/constant, not mutable */
	PR_CLASS_MUTABLE = 1u << 3,     /* the base is a mutable buffer */
	PR_CLASS_WHOLE = 1u << 4,       /* lives for the whole method (see above) */
	PR_CLASS_WRITEBACK = 1u << 5,   /* a member is written back to a buffer or input */
	PR_CLASS_HOST = 1u << 6,        /* the base is on the host */
};

/* Positions and indexes are 32-bit (a 10^6-node method's records are then
 * a third smaller, and the memory they take is time: every first-touched page
 * is zeroed): pr_lifetimes_compute stops with an invariant failure on a
 * method of 2^31 nodes or values, which would need hundreds of GB as nodes.
 * For the same reason a class names its device by an index into the
 * lifetimes' few devices, its base by the index of its value (the node and
 * element are there: a class's base is its first value, so class i's is
 * value i or a later one), and neither record keeps its spec: it is the
 * node's own, one address away (pr_plan_class_spec, pr_plan_value_spec):
 * 24 bytes a class (32 with the base's node and element in it, 64 with the
 * device and the spec too) and 16 a value (24 with its spec). */
typedef struct pr_plan_class {
	int64_t bytes;       /* storage bytes, the largest over the members */
	int32_t start, end;  /* positions, inclusive */
	int32_t base;        /* its first value, the one its spec is read from:
			      * index into pr_lifetimes.values */
	uint16_t flags;      /* PR_CLASS_* */
	uint16_t device;     /* the base's device: index into pr_lifetimes.devices */
} pr_plan_class;

typedef struct pr_plan_value {
	pr_node *node;
	int32_t cls;         /* index into classes */
	int32_t elem;        /* tuple element, or -1 for a tensor node */
} pr_plan_value;

/* How many values node n has: a tensor one, a tuple one per element,
 * other nodes none (pr_lifetimes.values lists them node by node). */
static inline int pr_plan_node_n_values(const pr_node *n)
{
	return n->type.kind == PR_TYPE_TENSOR ? 1 : n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 0;
}

/* The spec of element elem (-1: the tensor itself) of node n. */
static inline pr_spec *pr_plan_spec_of(pr_node *n, int elem)
{
	return elem < 0 ? &n->type.tensor : &n->type.elems[elem];
}

static inline pr_spec *pr_plan_value_spec(const pr_plan_value *v)
{
	return pr_plan_spec_of(v->node, v->elem);
}

typedef struct pr_lifetimes {
	int64_t n_positions;     /* nodes in the graph */
	int64_t n_values;
	pr_plan_value *values;   /* every tensor value, in graph order */
	int64_t n_classes;
	pr_plan_class *classes;  /* in order of their base's definition */
	int64_t n_devices;
	pr_device *devices;      /* the classes' devices, canonical (the host is
				  * "cpu"), each spelling once, in order of first use */
	int64_t n_split;         /* values on another device than their class
				  * (an in-place result or view said to be on
				  * another device than its base): 0 spares a
				  * walk over the values looking for them */
} pr_lifetimes;

/* The base of class c of lt (the value whose spec the plan is read from),
 * and its spec. */
static inline const pr_plan_value *pr_plan_class_base(const pr_lifetimes *lt, const pr_plan_class *c)
{
	return &lt->values[c->base];
}

static inline pr_spec *pr_plan_class_spec(const pr_lifetimes *lt, const pr_plan_class *c)
{
	return pr_plan_value_spec(pr_plan_class_base(lt, c));
}

/* Is v, a value of lt, the base of class c? */
static inline bool pr_plan_value_is_base(const pr_lifetimes *lt, const pr_plan_value *v, const pr_plan_class *c)
{
	return v - lt->values == c->base;
}

/* Computes the storage classes of method g. Writes nothing into the graph
 * but node->order: when the orders do not step evenly, the nodes from the
 * first one off the step get the orders the step gives them (a stale graph
 * is renumbered first, as pr_node_before would), so that they do after. */
pr_lifetimes *pr_lifetimes_compute(pr_graph *g);
void pr_lifetimes_free(pr_lifetimes *lt);
/* The device of class c of lt. */
pr_device pr_plan_class_device(const pr_lifetimes *lt, const pr_plan_class *c);
/* May the class get planned memory at all? Host constants may not. */
bool pr_plan_class_plannable(const pr_plan_class *c);
/* "x", or "d[1]" for element 1 of tuple %d; into buf of at least 128 bytes. */
const char *pr_plan_value_name(const pr_node *n, int elem, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
