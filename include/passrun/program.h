/* program.h: the program model.
 *
 * A program is op schemas, blobs of raw constant bytes, delegate definitions
 * (compile specs + a body graph) and methods (graphs). A graph is a doubly
 * linked list of nodes in graph order (the order it runs in), ending with one
 * return node. A node that has a result *is* its value: readers point at the
 * node. Every node knows its readers (use list), so passes can replace uses
 * without scanning the graph.
 *
 * The core knows no op by name: everything it knows about an op comes from the
 * schema the program declares (pr_schema). Devices, and the device a delegate
 * runs on, are device.h's.
 *
 * Ownership: the program owns everything reachable from it; pr_program_free
 * releases it all. Strings handed to constructors are copied.
 *
 * Memory layout (what fast compilers do, so that a million nodes load, edit
 * and go in a few allocations):
 *   - Names are interned: the program keeps one string table (NUL-terminated
 *     strings in an arena, 4-aligned, each preceded by a 12-byte record of
 *     its hash and the node bound to it, found through an open-addressing
 *     table of any size, not only powers of two: it is sized for what a
 *     loader reserves, or for twice its names when it grows). A name holds
 *     no NUL but its last (the loaders refuse one), so its length is where
 *     that NUL is. A node's name points into it, so
 *     equal names of one program are the same pointer, and a name stays
 *     valid until pr_program_free, even after its node is erased. Never free
 *     or write it; rename with pr_node_rename.
 *   - Nodes live in slabs: each graph owns chunks of pr_node slots. An
 *     erased node's slot goes on the graph's free list and is reused by the
 *     next node made; other nodes never move. pr_program_free frees chunks,
 *     not nodes. pr_graph_new_node makes a node in g's slab (loaders, and
 *     passes that add many nodes); pr_node_new makes a detached node with a
 *     malloc of its own (its name kept with it, interned when it is linked),
 *     which stays where it is once linked. Both are freed by
 *     pr_graph_erase or with their graph.
 *   - The name index lives in the string table: an interned name's header
 *     holds the node that has it in one graph, and each graph keeps a small
 *     table of its own for names also bound in another graph of the program.
 *     Finding a name is one hash and one probe; linking a node whose name is
 *     interned already needs no probe.
 *   - Use lists are blocks of 2^k entries from the graph's arena, with a
 *     free list per size: one entry for a first reader (most values have
 *     one), two for a second; a list past 2048 entries moves to the heap.
 *     An entry is the reading slot alone, 8 bytes (pr_use_user).
 *     Growing a list moves it (as realloc did): do not keep a pointer into
 *     a node's uses across an edit that adds readers of that node.
 *   - Args are malloc'd (pr_node_set_args), or graph storage
 *     (pr_graph_new_args + pr_node_set_graph_args: loaders, no malloc per
 *     node; their list items and strings must then be graph or program
 *     storage too, which is never freed one by one). An argument is 24
 *     bytes: a list's item count sits beside kind, where a value keeps
 *     its use index, so that the value union is one word.
 *   - A node is 128 bytes on 64-bit hosts, two cache lines, and a slab
 *     slot starts on a line, so that a node never spans a third (a
 *     million of them, and the free slots of erased ones, are most of a
 *     big program's memory, and the passes wait on their lines). Only
 *     what most nodes use is in it: the facts of an input (its kind,
 *     quoted name and data, 80 bytes) are a record of its own (pr_input)
 *     that only inputs have, from the graph's storage (an erased input's
 *     goes to the next input made) or in a detached node's malloc. Its
 *     type is 40 bytes: a spec (32) names devices by 4-byte ids
 *     (device.h) and points at its layout once (the strides follow the
 *     shape: pr_spec_strides), and a tuple's elements overlay the spec
 *     (a type is one or the other: read tensor or elems by type.kind).
 *     kind is a byte, and kind, the use list's room (a 1-byte log2),
 *     mem and line share the first word; n_args and n_uses pair, so
 *     that nothing pads. What only one kind has (a getitem's 32-bit
 *     index, an input's record, an op's schema, a delegate call's
 *     delegate, a return's write-backs) is overlaid in one union,
 *     of_kind, so that the node carries one word for them, not five;
 *     the node has no fields of those names any more, so code that read
 *     them on a node of any kind does not compile. Read them on a node
 *     of any kind with pr_node_getitem_index (0 when not a getitem),
 *     pr_node_input (a node that is not an input gives one shared,
 *     read-only record of zeros, pr_input_none), pr_node_schema,
 *     pr_node_delegate and pr_node_writebacks (NULL when not its kind),
 *     or as n->of_kind.X once n's kind is known.
 *   - A node's other parts (an input's name and data.values, type.elems,
 *     a return's writebacks and their targets) are each either owned by
 *     the node (malloc'd, freed with it or when replaced) or graph storage
 *     (pr_graph_alloc, or strings of pr_program_intern: loaders, no malloc
 *     per node; never freed one by one). The node records which in its mem
 *     bits, so give it them only with pr_node_set_input_name,
 *     pr_node_set_data_values, pr_node_set_tuple and
 *     pr_node_set_writebacks. A one-element tuple does not point at its
 *     own type.tensor: a type is copied as a value (gi->type = call->type),
 *     and such a copy would point into the node it came from. */
#ifndef PASSRUN_PROGRAM_H
#define PASSRUN_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passrun/device.h"
#include "passrun/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dtypes ---------------------------------------------------------- */

typedef enum pr_dtype {
	PR_F32, PR_F16, PR_BF16, PR_F64, PR_I64, PR_I32, PR_I16, PR_I8, PR_U8, PR_BOOL,
	PR_DTYPE_COUNT
} pr_dtype;

const char *pr_dtype_name(pr_dtype t);                /* "f32" */
bool pr_dtype_parse(const char *s, size_t n, pr_dtype *out);
size_t pr_dtype_size(pr_dtype t);                      /* bytes per element */
bool pr_dtype_is_float(pr_dtype t);

/* ---- tensor specs and types ------------------------------------------ */

#define PR_MAX_RANK 16

/* A spec is a small value (32 bytes), copied freely. Its layout, the
 * rank numbers of shape and of strides (in elements, always filled), is not
 * in it: shape points at 2 * rank numbers, the shape then the strides, that
 * are immutable and, as built by the functions below, interned: the
 * process-wide table of pr_layout_intern keeps one copy of each distinct
 * layout until exit (in that very order), so two specs with the same dims
 * share their pointer. The strides are derived, not stored: read them with
 * pr_spec_strides (s->shape + s->rank), so a spec carries one pointer. Read
 * s->shape[i] and pr_spec_strides(s)[i] freely; never write through them
 * (they are shared): give a spec new dims with pr_spec_init,
 * pr_spec_set_contiguous, pr_spec_set_layout or pr_spec_set_strides, and
 * never change rank alone. A caller may point a spec at an array of its
 * own (it must outlive the spec and hold the shape then the strides, as
 * pr_layout_intern's do); every function here compares elements when the
 * pointers differ, so such a spec still equals its interned twin. Rank 0
 * has a non-NULL pointer too. Its devices are
 * ids too (device.h's pr_device_intern), 4 bytes each instead of a 20-byte
 * pr_device: read them with pr_spec_device / pr_spec_mem_arena (or compare
 * the ids), and give a spec a device with pr_spec_set_device. */
typedef struct pr_spec {
	pr_dtype dtype;
	int16_t rank;                   /* 0..PR_MAX_RANK; 16 bits so that has_mem
					 * fits beside it */
	bool has_mem;                   /* mem=ARENA:OFFSET was written */
	const int64_t *shape;           /* rank numbers, then rank strides;
					 * immutable */
	pr_device_id device_id;         /* where the value lives; the host when absent */
	pr_device_id mem_arena_id;      /* arenas are named after their device */
	int64_t mem_offset;
} pr_spec;

/* A later field is a deliberate decision: a big program holds a spec in
 * each of its million nodes. */
#ifndef __cplusplus   /* C++ spells it static_assert; the C builds check it */
_Static_assert(sizeof(void *) != 8 || sizeof(pr_spec) == 32, "a spec is 32 bytes");
#endif

/* s's strides, rank numbers in elements: they follow the shape. */
static inline const int64_t *pr_spec_strides(const pr_spec *s)
{
	return s->shape + s->rank;
}

/* A spec's devices as values, and the writer of its device. */
static inline pr_device pr_spec_device(const pr_spec *s)
{
	return *pr_device_of(s->device_id);
}
static inline pr_device pr_spec_mem_arena(const pr_spec *s)
{
	return *pr_device_of(s->mem_arena_id);
}
static inline bool pr_spec_on_host(const pr_spec *s)
{
	return s->device_id == PR_DEVICE_ID_HOST;
}
static inline void pr_spec_set_device(pr_spec *s, pr_device d)
{
	s->device_id = pr_device_intern(d);
}

/* The interned copy of a layout: 2 * rank numbers, the shape then the
 * strides, at an address that stays valid (and its numbers unchanged) until
 * the process exits; the same dims always give the same address. The table
 * only grows: its size is bounded by the distinct layouts the process has
 * ever seen (each costs 16 * rank bytes plus a slot). Thread-safe. */
const int64_t *pr_layout_intern(int rank, const int64_t *shape, const int64_t *strides);
size_t pr_layout_count(void);    /* distinct layouts of rank > 0 interned so far */

/* A contiguous spec on the host. */
void pr_spec_init(pr_spec *s, pr_dtype t, int rank, const int64_t *shape);
/* Gives s contiguous strides for its rank and shape (interned). */
void pr_spec_set_contiguous(pr_spec *s);
/* Gives s the layout rank, shape, strides (interned copies; strides NULL:
 * contiguous). The arrays may be s's own current ones. */
void pr_spec_set_layout(pr_spec *s, int rank, const int64_t *shape, const int64_t *strides);
/* Keeps s's shape and gives it strides (s->rank numbers; interned). */
void pr_spec_set_strides(pr_spec *s, const int64_t *strides);
bool pr_spec_is_contiguous(const pr_spec *s);
/* The layout facts of a spec and of a runtime tensor alike, on their shape
 * and strides: row-major contiguity (a size-1 dimension's stride does not
 * matter, and a tensor with a size-0 dimension is contiguous) and the
 * element count. */
bool pr_layout_is_contiguous(int rank, const int64_t *shape, const int64_t *strides);
int64_t pr_layout_numel(int rank, const int64_t *shape);
bool pr_spec_is_channels_last(const pr_spec *s);   /* rank 4 NHWC strides */
/* Whether a program stores a constant's bytes in the spec's own layout: it
 * does for a contiguous or channels-last one and stores any other layout
 * contiguous (as ExecuTorch's emitter does), so only then does a copy of the
 * stored bytes (per call, or once at load) hold what the spec describes. */
bool pr_spec_stored_as_is(const pr_spec *s);
int64_t pr_spec_numel(const pr_spec *s);            /* product of the shape */
/* Bytes the storage spans: (1 + max offset) * element size; 0 if numel is 0. */
int64_t pr_spec_storage_bytes(const pr_spec *s);
int64_t pr_spec_nbytes(const pr_spec *s);           /* numel * element size */
bool pr_spec_equal(const pr_spec *a, const pr_spec *b);   /* all fields */
bool pr_spec_same_layout(const pr_spec *a, const pr_spec *b); /* dtype, shape, strides */

typedef enum pr_type_kind {
	PR_TYPE_NONE,    /* a statement with no result */
	PR_TYPE_TENSOR,
	PR_TYPE_TUPLE,
	PR_TYPE_INT,     /* a shape_only result */
} pr_type_kind;

/* A type is a tensor or a tuple, never both, so its spec and its elements
 * are overlaid (40 bytes, not 48): read tensor only where kind is
 * PR_TYPE_TENSOR and elems only where it is PR_TYPE_TUPLE (elsewhere they
 * are each other's bytes). A type of kind none or int is all zeros as
 * made. Give a node a tuple with pr_node_set_tuple, which frees owned
 * elements of a tuple it replaces; writing tensor over a tuple overwrites
 * the elements' pointer, so free owned ones first (graph storage stays
 * with the graph). */
typedef struct pr_type {
	pr_type_kind kind;
	int n_elems;        /* PR_TYPE_TUPLE */
	union {
		pr_spec tensor;     /* PR_TYPE_TENSOR */
		pr_spec *elems;     /* PR_TYPE_TUPLE: owned or graph storage
				     * (pr_node_set_tuple) */
	};
} pr_type;

/* ---- op schemas (PyTorch function-schema syntax) --------------------- */

/* One alias annotation: Tensor(a) or Tensor(a!). set is the alias set's
 * name ("a"); empty when the argument has none. */
typedef struct pr_alias {
	char set[16];
	bool write;         /* the '!' */
} pr_alias;

typedef struct pr_schema_arg {
	char *type;         /* as written, without the annotation: "Tensor", "int[]", "Tensor?" */
	char *name;         /* may be NULL for returns */
	char *default_value;/* text after '=', or NULL */
	pr_alias alias;
	bool kwarg_only;    /* after a bare '*' */
	bool is_tensor;     /* Tensor or Tensor? (not a list) */
} pr_schema_arg;

typedef struct pr_schema {
	char *name;         /* "aten::add" */
	char *overload;     /* "Tensor", or "" */
	char *full_name;    /* "aten::add.Tensor": what op calls name */
	int n_args;
	pr_schema_arg *args;
	int n_returns;
	pr_schema_arg *returns;
	bool returns_tuple; /* written "(... )": also "()" with n_returns 0 */
	bool shape_only;    /* trait {shape_only}: reads only metadata */
	bool h2d;           /* trait {h2d}: copies its host argument to a device */
	bool d2h;           /* trait {d2h}: copies its device argument to the host */
	int n_traits;
	char **traits;      /* every trait, as written, in order */
	char *text;         /* the canonical text, as printed */
} pr_schema;

/* Parses "aten::add.Tensor(Tensor self, Tensor other) -> Tensor {shape_only}".
 * On error, *err_col is the 0-based column of the problem. */
pr_err *pr_schema_parse(const char *text, size_t n, pr_schema **out, size_t *err_col);
void pr_schema_free(pr_schema *s);
/* Does argument i get written (Tensor(a!))? */
bool pr_schema_arg_writes(const pr_schema *s, int i);
/* Index of the argument that return r aliases (same alias set), or -1. */
int pr_schema_return_alias(const pr_schema *s, int r);
/* The return that element elem of a tuple result comes from: elem itself
 * when the schema returns a tuple, 0 for every element of a single list
 * return (split_with_sizes' Tensor(a)[]), -1 when there is none. */
int pr_schema_elem_return(const pr_schema *s, int elem);

/* ---- arguments -------------------------------------------------------- */

typedef struct pr_node pr_node;

typedef enum pr_arg_kind {
	PR_ARG_VALUE, PR_ARG_INT, PR_ARG_FLOAT, PR_ARG_BOOL, PR_ARG_NONE,
	PR_ARG_STRING, PR_ARG_LIST,
} pr_arg_kind;

/* 24 bytes (every node's arguments and every copy's are one of these):
 * a value's use_index, or a list's item count (a list is no value and has
 * no use index), sits beside kind, where it fills what would pad, so that
 * u is one word. */
typedef struct pr_arg {
	pr_arg_kind kind;
	union {
		int use_index;   /* PR_ARG_VALUE: its place in the value's use list */
		int n_items;     /* PR_ARG_LIST: how many items u.items holds */
	};
	union {
		pr_node *value;
		int64_t i;
		double f;
		bool b;
		char *s;
		struct pr_arg *items;   /* PR_ARG_LIST: n_items of them */
	} u;
	pr_node *owner;      /* the node whose argument this is */
} pr_arg;

/* A reader of a value: the argument slot that names it, 8 bytes (a big
 * program has about two of these a node). The reader is the slot's owner,
 * so the entry does not keep it a second time: read it with pr_use_user. */
typedef struct pr_use {
	pr_arg *arg;
} pr_use;

/* The node that reads through u: its slot's owner. */
static inline pr_node *pr_use_user(const pr_use *u)
{
	return u->arg->owner;
}

/* ---- constant data ---------------------------------------------------- */

typedef enum pr_data_kind {
	PR_DATA_NONE, PR_DATA_ZEROS, PR_DATA_ONES, PR_DATA_FILL, PR_DATA_ARANGE,
	PR_DATA_RANDOM, PR_DATA_LIST, PR_DATA_BLOB,
} pr_data_kind;

typedef struct pr_blob pr_blob;

typedef struct pr_data {
	pr_data_kind kind;
	double fill;         /* PR_DATA_FILL */
	uint64_t seed;       /* PR_DATA_RANDOM */
	int64_t n_values;    /* PR_DATA_LIST: logical row-major values */
	double *values;      /* owned or graph storage: pr_node_set_data_values */
	pr_blob *blob;       /* PR_DATA_BLOB: storage-order bytes */
	const uint8_t *mapped; /* storage-order bytes inside a mapped binary file, or NULL */
	int64_t mapped_size;
} pr_data;

struct pr_blob {
	char *name;
	int64_t size;
	const uint8_t *bytes; /* owned unless the program maps its file */
	bool borrowed;        /* bytes point into a mapping the program holds */
	pr_blob *next;
};

/* Storage-order bytes of a constant with spec s and data d, written into buf
 * of pr_spec_storage_bytes(s) bytes. random(SEED) is defined in core/ir/data.c
 * (and docs/binary-format.md) and gives the same bytes on every machine. */
pr_err *pr_data_materialize(const pr_data *d, const pr_spec *s, uint8_t *buf);

/* ---- nodes ------------------------------------------------------------ */

typedef enum pr_node_kind {
	PR_NODE_INPUT,    /* a placeholder */
	PR_NODE_OP,       /* an op call: schema + args */
	PR_NODE_DELEGATE, /* delegate @name(args) */
	PR_NODE_GETITEM,  /* getitem %v, index */
	PR_NODE_RETURN,   /* the graph's last node: args are the returned values */
} pr_node_kind;

typedef enum pr_input_kind {
	PR_INPUT_POSITIONAL, /* in a delegate body: plain `input` */
	PR_INPUT_USER, PR_INPUT_PARAMETER, PR_INPUT_BUFFER, PR_INPUT_CONSTANT,
} pr_input_kind;

typedef enum pr_writeback_kind {
	PR_WRITEBACK_NONE, PR_WRITEBACK_BUFFER, PR_WRITEBACK_INPUT,
} pr_writeback_kind;

typedef struct pr_writeback {
	pr_writeback_kind kind;
	char *target;        /* the buffer or user input's name; stored as its
			      * node's writebacks are (pr_node_set_writebacks) */
} pr_writeback;

typedef struct pr_graph pr_graph;
typedef struct pr_delegate pr_delegate;

/* What only an input has. */
typedef struct pr_input {
	pr_input_kind kind;
	char *name;           /* the quoted name, or NULL; owned or program
			       * storage: pr_node_set_input_name */
	pr_data data;
} pr_input;

/* kind, mem and name first (a free slab slot keeps them readable); the
 * ints in pairs, so that none pads (see the top of this file). */
struct pr_node {
	uint8_t kind;         /* a pr_node_kind, in a byte: -Wswitch checks a
			       * switch on it for missing kinds only when cast,
			       * switch ((pr_node_kind)n->kind), as ours are */
	uint8_t uses_room;    /* program.c's: 0 when the node has no use list,
			       * else 1 + log2 of its entries (pr_node_uses_room) */
	uint16_t mem;         /* how program.c stores the node and its parts; not
			       * for passes */
	uint32_t line;        /* source line, 0 when made by a pass */
	const char *name;     /* without '%'; NULL when the node has no result;
			       * interned (see the top of this file) */
	pr_graph *graph;
	pr_node *prev, *next;
	uint64_t order;       /* increases along the graph; see pr_graph_renumber */

	int n_args;
	int n_uses;
	pr_arg *args;         /* owned (or graph storage); never reallocated while the node lives */
	pr_use *uses;         /* readers of this node's value, in no set order */

	pr_type type;

	/* What one kind of node has, overlaid (see the top of this file): read
	 * the member of n's kind as n->of_kind.X where n's kind is known, else
	 * through pr_node_input, pr_node_schema, pr_node_delegate or
	 * pr_node_writebacks (pr_node_getitem_index for index); write only the
	 * member of n's kind. A node is made with of_kind NULL (index 0), an
	 * input with a zeroed record of its own. */
	union {
		int32_t index;            /* PR_NODE_GETITEM, 0..INT32_MAX; the
					   * value is args[0] */
		pr_input *input;          /* PR_NODE_INPUT: its own record, never NULL */
		pr_schema *schema;        /* PR_NODE_OP (owned by the program) */
		pr_delegate *delegate;    /* PR_NODE_DELEGATE */
		pr_writeback *writebacks; /* PR_NODE_RETURN: one per arg, or NULL;
					   * pr_node_set_writebacks */
	} of_kind;

	void *scratch;        /* free for the pass that is running */
};

/* Two cache lines: a later field is a deliberate decision (see the top of
 * this file). */
#ifndef __cplusplus
_Static_assert(sizeof(void *) != 8 || sizeof(pr_node) == 128, "a node is two cache lines");
#endif

/* The record of zeros (PR_INPUT_POSITIONAL, no name, PR_DATA_NONE) that
 * pr_node_input gives for a node that is not an input; read-only. */
extern const pr_input pr_input_none;

/* n's member of of_kind on a node of any kind: an input's own record (the
 * zeros record for any other kind, so that reading it is right on any
 * node), an op's schema, a delegate call's delegate, a return's
 * write-backs, or NULL where n is not of that kind. */
static inline const pr_input *pr_node_input(const pr_node *n)
{
	return n->kind == PR_NODE_INPUT ? n->of_kind.input : &pr_input_none;
}
static inline pr_schema *pr_node_schema(const pr_node *n)
{
	return n->kind == PR_NODE_OP ? n->of_kind.schema : NULL;
}
static inline pr_delegate *pr_node_delegate(const pr_node *n)
{
	return n->kind == PR_NODE_DELEGATE ? n->of_kind.delegate : NULL;
}
static inline pr_writeback *pr_node_writebacks(const pr_node *n)
{
	return n->kind == PR_NODE_RETURN ? n->of_kind.writebacks : NULL;
}
/* A getitem's index; 0 for a node of another kind. */
static inline int32_t pr_node_getitem_index(const pr_node *n)
{
	return n->kind == PR_NODE_GETITEM ? n->of_kind.index : 0;
}

/* The entries n's use list has room for: a power of two, or 0. */
static inline int pr_node_uses_room(const pr_node *n)
{
	return n->uses_room ? 1 << (n->uses_room - 1) : 0;
}


typedef struct pr_graph_store pr_graph_store;

struct pr_graph {
	char *name;           /* the method's or delegate's name, without '@' */
	pr_node *first, *last;
	int64_t n_nodes;
	pr_graph_store *store;/* private: node slabs, name index, use and arg storage */
	pr_delegate *delegate;/* when this is a delegate body */
	struct pr_program *program;
	bool order_stale;     /* an insertion ran out of gaps */
};

typedef struct pr_kv {
	char *key;
	char *value;
} pr_kv;

struct pr_delegate {
	char *name;
	int n_specs;
	pr_kv *specs;         /* compile specs, in the order written; change them
				 only with pr_delegate_set_spec/_remove_spec */
	pr_graph *body;
	/* pr_delegate_device's answer once asked (device.h); the two spec
	 * writers forget it. */
	bool device_known;
	pr_device device;
};

typedef struct pr_program {
	int n_schemas, cap_schemas;
	pr_schema **schemas;
	pr_blob *blobs;       /* in the order written */
	int n_delegates, cap_delegates;
	pr_delegate **delegates;
	int n_methods, cap_methods;
	pr_graph **methods;
	void *mapping;        /* a mapped binary file that blobs may point into */
	size_t mapping_size;
	void *index;          /* private lookup tables */
} pr_program;

/* ---- building and querying ------------------------------------------- */

pr_program *pr_program_new(void);
void pr_program_free(pr_program *p);

/* Adds a schema; refuses a second schema with the same full name. */
pr_err *pr_program_add_schema(pr_program *p, pr_schema *s);
pr_schema *pr_program_find_schema(const pr_program *p, const char *full_name);
/* Parses and adds, or returns the existing schema when the text is the same. */
pr_err *pr_program_declare_op(pr_program *p, const char *text, pr_schema **out);

pr_err *pr_program_add_blob(pr_program *p, const char *name, const uint8_t *bytes,
			    int64_t size, bool borrowed, pr_blob **out);
pr_blob *pr_program_find_blob(const pr_program *p, const char *name);

pr_err *pr_program_add_delegate(pr_program *p, const char *name, pr_delegate **out);
pr_delegate *pr_program_find_delegate(const pr_program *p, const char *name);
void pr_delegate_set_spec(pr_delegate *d, const char *key, const char *value);
/* Removes compile spec key (the others keep their order); false when d has
 * none. */
bool pr_delegate_remove_spec(pr_delegate *d, const char *key);
const char *pr_delegate_spec(const pr_delegate *d, const char *key);
/* The delegates of p into order (room for p->n_delegates), each after every
 * delegate its body calls: callees first. No recursion, so any depth of
 * nesting is fine. When a body calls itself, directly or through others,
 * returns the number of calls on that cycle and sets *cycle (malloc'd; the
 * caller frees it) to them in call order: each is a call in the body of the
 * delegate the one before it calls, and the last calls the delegate whose
 * body holds the first; order is then incomplete. Returns 0, with *cycle
 * NULL, when no call cycle exists. Calls to delegates that are not p's are
 * not followed (the verifier reports them). */
int pr_delegates_callees_first(const pr_program *p, pr_delegate **order, pr_node ***cycle);

pr_err *pr_program_add_method(pr_program *p, const char *name, pr_graph **out);
pr_graph *pr_program_find_method(const pr_program *p, const char *name);

/* The graph's return node, or NULL before one is added. */
pr_node *pr_graph_return(const pr_graph *g);
pr_node *pr_graph_find(const pr_graph *g, const char *name);
/* The same for the len bytes at name (no NUL needed) whose pr_str_hash is
 * hash: for a caller that hashed the name already (a parser's own table of
 * recent names), so that it is not hashed twice. */
pr_node *pr_graph_find_hashed(const pr_graph *g, const char *name, size_t len, uint32_t hash);
/* A name not yet used in g: base itself, else base_1, base_2, ... */
char *pr_graph_fresh_name(const pr_graph *g, const char *base);
/* The same, for naming many nodes after one base: *next (0 at first)
 * remembers where the last search for this base ended, so that naming k of
 * them costs O(k), not O(k^2). Names must not be freed up in between. */
char *pr_graph_fresh_name_next(const pr_graph *g, const char *base, int *next);
/* The room a fresh name's suffix takes after its base: "_" and the digits
 * of an int, then its 0. */
#define PR_FRESH_SUFFIX_MAX 13
/* Writes the suffix of a fresh name's i-th try (i >= 1), "_i" and its 0, at
 * s; returns its length without the 0. The fresh-name functions spell their
 * tries with it, so that a pass that asks ahead for the string-table slot of
 * a name it will get (pr_program_prefetch_name) spells it the same. */
size_t pr_fresh_name_suffix(char *s, int i);

/* The program's copy of the n bytes at s, NUL-terminated: the same bytes
 * give the same pointer for the program's life. The n bytes hold no NUL
 * (the loaders refuse one in a name or a string), here and in every call
 * below that takes a name's bytes and length. */
const char *pr_program_intern(pr_program *p, const char *s, size_t n);
/* The hash the string table and the name index use (8 bytes a round, as
 * names are long and alike: "layers.12.attention.wq.weight"), for other
 * tables of names. */
uint32_t pr_str_hash(const char *s, size_t n);
/* pr_program_intern with h = pr_str_hash(s, n) already known. */
const char *pr_program_intern_hashed(pr_program *p, const char *s, size_t n, uint32_t h);
/* Asks the cache for the string-table slot that a lookup or interning of
 * the string whose pr_str_hash is h would read first, ahead of that step
 * (pr_graph_find, pr_program_intern, pr_graph_new_node_fresh): in a table
 * of a million names each probe is a cache miss, and a loader that learns a
 * name well before it interns it, or a pass naming many new nodes, can have
 * several in flight. A hint: it changes nothing but time. */
void pr_program_prefetch_name(const pr_program *p, uint32_t h);

/* A detached node; name may be NULL. Args are set with pr_node_set_args. */
pr_node *pr_node_new(pr_node_kind kind, const char *name);
/* The same, in g's slab (no malloc of its own, name interned): link it into
 * g only (append/insert), or erase it. */
pr_node *pr_graph_new_node(pr_graph *g, pr_node_kind kind, const char *name);
/* The same, named as pr_graph_fresh_name_next(g, base, next) would name it
 * (base is base_len bytes, no NUL needed), in one step: each candidate
 * hashed once, no malloc for the name. */
pr_node *pr_graph_new_node_fresh(pr_graph *g, pr_node_kind kind, const char *base,
				 size_t base_len, int *next);
/* The same with base_hash = pr_str_hash(base, base_len) already known (a
 * pass that prefetched the name's slot has it): the base is not hashed
 * again. */
pr_node *pr_graph_new_node_fresh_hashed(pr_graph *g, pr_node_kind kind, const char *base,
					size_t base_len, uint32_t base_hash, int *next);
/* The same, linked into pos's graph right before pos (which must be
 * linked) in the same step: the name the search found free is bound as
 * it is, with no second lookup, and the node gets its order once. The
 * name is as pr_graph_new_node_fresh_hashed gives it, so this cannot fail;
 * pr_graph_erase takes it out again. For a pass that puts many new nodes
 * before the nodes that read them (device copies). */
pr_node *pr_graph_new_node_fresh_before(pr_node *pos, pr_node_kind kind, const char *base,
					size_t base_len, uint32_t base_hash, int *next);
/* Makes n, a node made as another kind that is not an input yet, an input
 * with a record of its own (zeroed: PR_INPUT_POSITIONAL, no name, no data),
 * from its graph's storage (a node of pr_graph_new_node) or malloc'd (a
 * detached one). The node makers do this for PR_NODE_INPUT themselves; a
 * parser that learns the kind later calls it. */
void pr_node_make_input(pr_node *n);
/* Room for count more nodes in g's slab in one chunk, for a loader that
 * knows how many it will make. Returns where they will be when g has no
 * erased slot to reuse first (a new graph has none): the next count nodes
 * pr_graph_new_node makes in g are that slot and the ones after it, in
 * order, so that the i-th is found by adding i; else NULL. */
pr_node *pr_graph_reserve_nodes(pr_graph *g, size_t count);
/* Takes ownership of args (n items, malloc'd), sets each arg's owner and adds
 * the uses of every value they name (lists included). */
void pr_node_set_args(pr_node *n, pr_arg *args, int n_args);
/* n_args zeroed slots (at least one) of g's storage, freed with g. */
pr_arg *pr_graph_new_args(pr_graph *g, int n_args);
/* pr_node_set_args for args from pr_graph_new_args of n's graph (n made by
 * pr_graph_new_node, or linked): their list items come from
 * pr_graph_new_args too and their strings from pr_program_intern (cast). */
void pr_node_set_graph_args(pr_node *n, pr_arg *args, int n_args);
/* Gives n, a node of a graph with no arguments yet (a node just made),
 * one argument from its graph's storage, naming value v, and adds that use
 * to v's list: what pr_graph_new_args(g, 1) and pr_node_set_graph_args
 * do for one value, in one step. */
void pr_node_set_value_arg(pr_node *n, pr_node *v);
/* Puts n, a node of a graph with no arguments yet, between slot a and the
 * value v it reads: a reads n and n reads v, as pr_arg_set_value(a, n) and
 * then pr_node_set_value_arg(n, v) would leave them (the same use-list
 * edits, in that order), in one step: a copy made for its one reader. */
void pr_node_interpose(pr_node *n, pr_arg *a);
/* size bytes (at least one) of g's storage, zeroed, aligned to 8 (for
 * pointers, int64_t and double), freed with g: for the parts below that a
 * loader gives its nodes. */
void *pr_graph_alloc(pr_graph *g, size_t size);

/* Where a node's part lives (see the top of this file). */
typedef enum pr_storage {
	PR_STORAGE_OWNED,     /* malloc'd: the node frees it */
	PR_STORAGE_GRAPH,     /* pr_graph_alloc of the node's graph, or a string
			       * of pr_program_intern: freed with them */
} pr_storage;

/* Each setter frees the part it replaces when the node owned it, and takes
 * the new one as storage says (PR_STORAGE_GRAPH needs n in a graph). */
/* An input's quoted name, or NULL (then storage does not matter). */
void pr_node_set_input_name(pr_node *n, char *name, pr_storage storage);
/* An input's PR_DATA_LIST values (n_values of them); its data kind is the
 * caller's to set. */
void pr_node_set_data_values(pr_node *n, double *values, int64_t n_values, pr_storage storage);
/* Makes n's type a tuple of the n_elems specs at elems (NULL when 0). */
void pr_node_set_tuple(pr_node *n, pr_spec *elems, int n_elems, pr_storage storage);
/* A return node's write-backs, one per argument, or NULL: the array and
 * every target in it are stored alike (graph storage: targets interned). */
void pr_node_set_writebacks(pr_node *n, pr_writeback *writebacks, pr_storage storage);

/* Replaces argument slot a (which must name a value) with v, fixing uses. */
void pr_arg_set_value(pr_arg *a, pr_node *v);

pr_err *pr_graph_append(pr_graph *g, pr_node *n);          /* at the end */
/* For a loader: pr_graph_append of n, made by pr_graph_new_node(g, kind,
 * NULL) and not linked, named by the len bytes at s (no NUL needed; h =
 * pr_str_hash(s, len)), interning and indexing the name in the same step.
 * On a name g has, n keeps the interned name and stays unlinked. */
pr_err *pr_graph_append_named(pr_graph *g, pr_node *n, const char *s, size_t len, uint32_t h);
pr_err *pr_graph_insert_before(pr_node *pos, pr_node *n);
pr_err *pr_graph_insert_after(pr_node *pos, pr_node *n);
/* Unlinks and frees n (a detached node too); n must have no readers left. */
void pr_graph_erase(pr_node *n);
/* Every reader of old reads new instead. */
void pr_node_replace_all_uses(pr_node *old, pr_node *new_value);
/* Every reader of old except `except` reads new instead. */
void pr_node_replace_uses_except(pr_node *old, pr_node *new_value, const pr_node *except);
/* Renames n, keeping the name index right; refuses a name in use. */
pr_err *pr_node_rename(pr_node *n, const char *name);

/* Recomputes node->order along the graph (done automatically when needed). */
void pr_graph_renumber(pr_graph *g);
/* True when a runs before b in graph order. */
bool pr_node_before(const pr_node *a, const pr_node *b);

/* The spec of a tensor value, or NULL when it is not a single tensor. */
pr_spec *pr_node_spec(pr_node *n);

/* The argument that result r of op node n aliases, as its schema declares
 * (Tensor(a) or Tensor(a!): a view, or an in-place result, which is a view of
 * what it writes), or -1 for a fresh result or a node that is not an op. For
 * a tuple result r is the element: every piece of a Tensor(a)[] aliases the
 * list's argument. The index may lie past the node's arguments (a program the
 * verifier refuses); pr_node_alias_value checks it. */
int pr_node_alias_arg(const pr_node *n, int r);
/* The value result r of n is a view of, or NULL (no alias, or an aliased
 * argument that is missing or not a value). */
pr_node *pr_node_alias_value(const pr_node *n, int r);
/* The value argument a of n names, or NULL: a out of n's arguments (a -1
 * from pr_node_alias_arg included), or an argument that is not a value. */
static inline pr_node *pr_node_value_arg(const pr_node *n, int a)
{
	return a >= 0 && a < n->n_args && n->args[a].kind == PR_ARG_VALUE ? n->args[a].u.value : NULL;
}

/* The mutable buffers of a method: the buffer placeholders its return node
 * writes back (`-> buffer "NAME"`), as a set built once in one walk, so
 * that a query costs a hash lookup however many buffers there are (keyed by
 * the placeholder itself when it is the value written back, the usual case,
 * so that no name is hashed). It borrows the return node's names and knows
 * placeholders by their address: rebuild it after changing those names, or
 * an input's, or erasing a placeholder. */
typedef struct pr_mutable_buffers pr_mutable_buffers;
pr_mutable_buffers *pr_graph_mutable_buffers(const pr_graph *g);
/* Is in a buffer placeholder of the set's method that it writes back? The
 * first query that needs the targets' names hashes them into the set
 * (a buffer written back through another value), so one set is not for
 * queries from two threads at once. */
bool pr_mutable_buffers_has(const pr_mutable_buffers *b, const pr_node *in);
/* Asks for the line of the set that pr_mutable_buffers_has(b, in) reads
 * first (a hint, reading nothing of in): a walk that asks it some nodes
 * ahead does not wait for it (a big set is out of cache, and its entries
 * are all over it). */
void pr_mutable_buffers_prefetch(const pr_mutable_buffers *b, const pr_node *in);
void pr_mutable_buffers_free(pr_mutable_buffers *b);

/* Iteration in graph order. */
#define pr_graph_for_each(g, n) for (pr_node *n = (g)->first; n; n = n->next)

/* A walk over every node of a large graph waits for each next node, a cache
 * miss that the one before gives the address of. The nodes a graph was
 * loaded or built with lie one after another in its node storage, in graph
 * order, so a walk at n asks for the lines of the node that far ahead in
 * memory, which is most often the one it will come to then. A hint: the
 * address is never read, so it need not be a node. */
#define PR_NODE_PREFETCH_AHEAD 6
/* Asks for every line that a node at address at spans: two for a slab
 * node (its slot starts on a line), up to three for a detached one. A
 * hint: nothing is read there. */
static inline void pr_node_prefetch_lines(uintptr_t at)
{
	for (size_t off = 0; off < sizeof(pr_node); off += 64)
		__builtin_prefetch((const void *)(at + off));
	__builtin_prefetch((const void *)(at + sizeof(pr_node) - 1));
}
static inline void pr_node_prefetch_ahead(const pr_node *n)
{
	pr_node_prefetch_lines((uintptr_t)n + PR_NODE_PREFETCH_AHEAD * sizeof *n);
}
#define pr_graph_for_each_safe(g, n, tmp) \
	for (pr_node *n = (g)->first, *tmp = n ? n->next : NULL; n; n = tmp, tmp = n ? n->next : NULL)

#ifdef __cplusplus
}
#endif
#endif
