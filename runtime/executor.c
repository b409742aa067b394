/* executor.c: runs a method of a (placed, planned) program, and the reference
 * interpreter, which is the same machine in a simpler mode.
 *
 * Loading compiles the method into a flat instruction list. Every node gets a
 * value slot (prt_rv); arguments are resolved once to slot pointers, so a call
 * is a loop over instructions calling kernel function pointers, with no lookup
 * (the executor's overhead per node is what bench/executor measures).
 * Storage is decided at load:
 *   - a spec with mem=ARENA:OFFSET lives at that offset of its device's
 *     arena (one allocation per device, sized from the largest offset+size);
 *   - other results and unplanned inputs (M2) get an allocation of their own
 *     on their spec's device;
 *   - host constants point at the mapped file when it has their bytes, else
 *     at a materialized copy; device-resident constants (a non-host spec
 *     device, F10) are copied to the device once, counted as load bytes, and
 *     each device is synchronized before the host staging is freed;
 *   - results that alias an argument (views, in-place ops: the schema's alias
 *     annotations) get no storage: the kernel derives them from the argument
 *     at run time, with its strides and offset.
 * Ops run on the host. A delegate whose target_device is a device runs its
 * body on that device: each body input reads the caller's storage with the
 * shape and strides the body declares (M5), body results are copied into the
 * delegate's outputs. Copies are the ops with trait h2d/d2h: each has one
 * host side and one device side, so an h2d whose argument is on a device or
 * whose result is on the host, or a d2h whose argument is on the host or
 * whose result is on a device, is refused at load (M3).
 *
 * M4 on the sim device: device memory is PROT_NONE outside device kernels and
 * copies, so a host kernel that touches it faults; a SIGSEGV/SIGBUS handler
 * installed for the call jumps back (siglongjmp) and the call fails with
 * "placement violation: node 'X' touched device memory". Before a device
 * kernel runs, every tensor it gets must lie in that device's memory.
 *
 * The reference interpreter (options.reference) puts every tensor on the
 * host, ignores the memory plan, and runs delegate bodies as host code on the
 * caller's tensors as they are: plain eager semantics. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "kernels.h"
#include "passrun/data.h"
#include "rt_cuda.h"

typedef enum instr_kind { I_OP, I_COPY, I_DELEGATE, I_GETITEM } instr_kind;

typedef struct frame frame;

typedef struct instr {
	instr_kind kind;
	prt_kernel_fn fn;
	prt_kctx k;
	int alias_arg;        /* the argument the result aliases, or -1 */
	bool meta;            /* the kernel reads no element */
	bool check_host;      /* a host kernel on a device set that cannot fault (cuda) */
	frame *body;          /* I_DELEGATE */
	int64_t index;        /* I_GETITEM */
} instr;

struct frame {
	int n_slots;
	prt_rv *slots;
	int n_code, cap_code;
	instr *code;
	int dev;              /* where ops run: 0 host */
	int n_inputs;         /* body inputs (positional), in order */
	prt_rv **inputs;
	pr_spec **input_specs;
	pr_node *ret;         /* the return node */
	prt_rv **rets;         /* the slots it returns, one per argument */
};

/* A delegate's body, compiled once for all its calls: a program has no
 * recursion (the verifier refuses it, and loading checks again), so no body
 * ever runs twice at once. */
typedef struct body_entry {
	const pr_delegate *key;
	frame *f;
	int dev;              /* where it runs: 0 host */
	bool reached;         /* the method calls it, directly or not */
	int64_t scratch_base; /* where its results start in its device's scratch */
	int depth;            /* 1: the method calls it; 2: a body it calls does; ... */
	UT_hash_handle hh;
} body_entry;

/* One body being run: the run keeps its own stack of these, not the C stack. */
typedef struct run_level {
	frame *f;
	instr *pc;            /* the next instruction */
	instr *call;          /* the caller's I_DELEGATE; NULL for the method */
	prt_dev *d;            /* the device entered for the body, or NULL */
} run_level;

typedef struct alloc_rec {
	int dev;
	void *p;
	int64_t bytes;
} alloc_rec;

typedef struct user_input {
	pr_node *node;
	prt_rv *slot;
	prt_tensor host;       /* the value every call starts from; storage malloc'd */
	bool set;
} user_input;

struct prt_exec {
	const pr_program *p;
	pr_graph *g;
	bool reference;
	prt_devset devs;
	frame main;
	int n_allocs, cap_allocs;
	alloc_rec *allocs;
	int64_t arena_size[32];
	uint8_t *arena[32];
	int64_t scratch_size[32]; /* per device: the largest delegate body's need */
	uint8_t *scratch[32];     /* shared by every body run on that device */
	int64_t scratch_used;     /* bump offset while a body is compiled */
	int n_inputs;
	user_input *inputs;
	int64_t load_h2d;
	int64_t call_h2d, call_d2h;
	prt_rv **wb_buffer;    /* per returned value: the buffer it writes back to */
	int n_frames, cap_frames;
	frame **frames;       /* delegate bodies, for freeing */
	body_entry *bodies;   /* uthash by delegate, entries in body_store */
	body_entry *body_store;
	pr_delegate **body_order; /* the program's delegates, callees first */
	int n_bodies;
	int max_depth;        /* the deepest chain of calls from the method */
	run_level *levels;    /* max_depth + 1 */
};

/* ---- storage -------------------------------------------------------------------- */

static pr_err *track_alloc(prt_exec *e, int dev, int64_t bytes, void **out)
{
	pr_err *err = prt_mem_alloc(&e->devs, dev, bytes, out);
	if (err)
		return err;
	PR_GROW(e->allocs, e->n_allocs, e->cap_allocs);
	e->allocs[e->n_allocs++] = (alloc_rec){dev, *out, bytes};
	return NULL;
}

/* One region of sizes[d] bytes on each device d that needs one (what names it
 * in an error). */
static pr_err *alloc_per_device(prt_exec *e, const int64_t *sizes, uint8_t **regions,
				const char *what)
{
	for (int d = 0; d < e->devs.n; d++)
		if (sizes[d] > 0) {
			pr_err *err = track_alloc(e, d, sizes[d], (void **)&regions[d]);
			if (err)
				return pr_err_wrap(err, "%s", what);
		}
	return NULL;
}

static pr_err *node_err(const pr_node *n, pr_err *err)
{
	return pr_err_wrap(err, "node '%s'", n->name ? n->name : "(no result)");
}

/* Storage for a tensor of spec s: planned, or its own. force_dev >= 0 puts it
 * on that device whatever the spec says (delegate bodies). */
static pr_err *place_tensor(prt_exec *e, const pr_spec *s, int force_dev, prt_tensor *t)
{
	int dev = 0;
	uint8_t *data = NULL;
	pr_err *err = NULL;
	int64_t bytes = pr_spec_storage_bytes(s);
	if (force_dev >= 0) {
		dev = force_dev;
		if (e->scratch[dev]) {
			int64_t at = e->scratch_used;
			e->scratch_used += (bytes + 63) / 64 * 64;
			PR_ASSERT(e->scratch_used <= e->scratch_size[dev]);
			data = e->scratch[dev] + at;
		}
	} else if (!e->reference && s->has_mem) {
		if ((err = prt_devset_slot(&e->devs, pr_spec_mem_arena(s), &dev)))
			return err;
		data = e->arena[dev] ? e->arena[dev] + s->mem_offset : NULL;   /* an empty arena is NULL */
	} else if (!e->reference) {
		err = prt_devset_slot(&e->devs, pr_spec_device(s), &dev);
	}
	if (!err && !data)
		err = track_alloc(e, dev, bytes, (void **)&data);
	if (err)
		return err;
	*t = prt_tensor_from_spec(s, data, dev);
	return NULL;
}

/* The plan checker refuses these offsets; a caller that did not run it
 * gets an error here, not an arena sized by an overflowed sum. */
static pr_err *arena_grow(prt_exec *e, const pr_node *n, const pr_spec *s)
{
	int dev;
	if (!s->has_mem)
		return NULL;
	pr_err *err = prt_devset_slot(&e->devs, pr_spec_mem_arena(s), &dev);
	if (err) {
		pr_err_free(err);   /* reported when the tensor is placed */
		return NULL;
	}
	int64_t end;
	if (s->mem_offset < 0 || __builtin_add_overflow(s->mem_offset, pr_spec_storage_bytes(s), &end))
		return node_err(n, pr_err_new("planned at offset %lld with %lld bytes: not an offset "
					      "of an arena", (long long)s->mem_offset,
					      (long long)pr_spec_storage_bytes(s)));
	if (end > e->arena_size[dev])
		e->arena_size[dev] = end;
	return NULL;
}

/* a + b, or INT64_MAX when that overflows (the allocation then fails). */
static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t s;
	return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

/* Scratch a device body's results need, each rounded to 64 bytes: its op
 * results and the results of the delegates it calls. */
static int64_t body_bytes(const pr_graph *body)
{
	int64_t total = 0;
	pr_graph_for_each(body, n) {
		bool own = n->kind == PR_NODE_OP || n->kind == PR_NODE_DELEGATE;
		int k = !own ? 0 : n->type.kind == PR_TYPE_TENSOR ? 1 :
			n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 0;
		for (int i = 0; i < k; i++) {
			const pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : &n->type.elems[i];
			total = add_sat(total, add_sat(pr_spec_storage_bytes(s), 63) / 64 * 64);
		}
	}
	return total;
}

/* Where delegate d's body runs: its target_device's slot, 0 for the host
 * (and for every body in the reference interpreter). */
static pr_err *delegate_dev(prt_exec *e, const pr_delegate *d, int *dev)
{
	pr_device where;
	*dev = 0;
	pr_err *err = pr_delegate_device(d, &where);
	if (err)
		return err;
	if (!e->reference && !pr_device_is_host(where))
		err = prt_devset_slot(&e->devs, where, dev);
	return err ? pr_err_wrap(err, "delegate @%s", d->name) : NULL;
}

static body_entry *find_body(const prt_exec *e, const pr_delegate *d)
{
	body_entry *be = NULL;
	HASH_FIND_PTR(e->bodies, &d, be);
	return be;
}

/* The bodies that body (or the method, be NULL) calls are reached; each one's
 * scratch starts above be's, which is still running while they do. */
static pr_err *reach_callees(prt_exec *e, const pr_graph *g, const body_entry *be, int64_t top)
{
	pr_graph_for_each(g, n) {
		if (n->kind != PR_NODE_DELEGATE)
			continue;
		pr_delegate *d = n->of_kind.delegate;
		body_entry *c = d ? find_body(e, d) : NULL;
		if (!c)
			return node_err(n, pr_err_new("a call to a delegate the program does not hold"));
		if (!d->body)
			return node_err(n, pr_err_new("a call to delegate @%s, which has no body",
						      d->name));
		int depth = be ? be->depth + 1 : 1;
		c->reached = true;
		c->depth = depth > c->depth ? depth : c->depth;
		c->scratch_base = top > c->scratch_base ? top : c->scratch_base;
	}
	return NULL;
}

/* Which delegates the method reaches, where each one's scratch starts, how
 * deep the calls go, and the scratch each device needs: one pass over the
 * call graph, callers first, no recursion (compiling and running recursed
 * once, and a chain of 50,000 nested delegates overflowed the stack). Bodies
 * that never run at once share scratch: one mapping instead of one per
 * tensor (on sim, each mapping is protected and opened). */
static pr_err *plan_bodies(prt_exec *e)
{
	const pr_program *p = e->p;
	e->n_bodies = p->n_delegates;
	e->body_order = pr_xcalloc((size_t)(e->n_bodies + 1), sizeof *e->body_order);
	pr_node **cycle;
	int nc = pr_delegates_callees_first(p, e->body_order, &cycle);
	if (nc) {
		pr_err *err = pr_err_new("delegate @%s calls itself%s at line %u: a recursive "
					 "program cannot run", cycle[0]->graph->name,
					 nc > 1 ? " through other delegates" : "", (unsigned)cycle[0]->line);
		free(cycle);
		return err;
	}
	e->body_store = pr_xcalloc((size_t)(e->n_bodies + 1), sizeof *e->body_store);
	for (int i = 0; i < e->n_bodies && e->body_order[i]; i++) {
		e->body_store[i].key = e->body_order[i];
		HASH_ADD_PTR(e->bodies, key, &e->body_store[i]);
	}
	pr_err *err = reach_callees(e, e->g, NULL, 0);
	for (int i = e->n_bodies - 1; i >= 0 && !err; i--) {
		body_entry *be = &e->body_store[i];
		if (!be->reached)
			continue;
		if ((err = delegate_dev(e, be->key, &be->dev)))
			break;
		int64_t top = add_sat(be->scratch_base, be->dev ? body_bytes(be->key->body) : 0);
		if (top > e->scratch_size[be->dev])
			e->scratch_size[be->dev] = top;
		if (be->depth > e->max_depth)
			e->max_depth = be->depth;
		err = reach_callees(e, be->key->body, be, top);
	}
	return err ? err : alloc_per_device(e, e->scratch_size, e->scratch, "delegate scratch memory");
}

static pr_err *compile_graph(prt_exec *e, pr_graph *g, frame *f, int dev);

/* Compiles every body the method reaches, callees first, each once. */
static pr_err *compile_bodies(prt_exec *e)
{
	for (int i = 0; i < e->n_bodies; i++) {
		body_entry *be = &e->body_store[i];
		if (!be->reached)
			continue;
		be->f = pr_xcalloc(1, sizeof *be->f);
		PR_GROW(e->frames, e->n_frames, e->cap_frames);
		e->frames[e->n_frames++] = be->f;
		e->scratch_used = be->scratch_base;
		pr_err *err = compile_graph(e, be->key->body, be->f, be->dev);
		if (err)
			return pr_err_wrap(err, "delegate @%s", be->key->name);
	}
	e->levels = pr_xcalloc((size_t)e->max_depth + 1, sizeof *e->levels);
	return NULL;
}

/* One arena per device, sized by the plan. */
static pr_err *alloc_arenas(prt_exec *e)
{
	pr_err *err = plan_bodies(e);
	if (err || e->reference)
		return err;
	pr_graph_for_each(e->g, n) {
		if (n->type.kind == PR_TYPE_TENSOR)
			err = arena_grow(e, n, &n->type.tensor);
		for (int i = 0; !err && n->type.kind == PR_TYPE_TUPLE && i < n->type.n_elems; i++)
			err = arena_grow(e, n, &n->type.elems[i]);
		if (err)
			return err;
	}
	return alloc_per_device(e, e->arena_size, e->arena, "memory plan arena");
}

/* ---- compiling -------------------------------------------------------------------- */

static prt_rv *slot_of(const pr_node *n) { return n->scratch; }

static prt_karg resolve_arg(const pr_arg *a)
{
	prt_karg k;
	memset(&k, 0, sizeof k);
	k.kind = a->kind;
	switch (a->kind) {
	case PR_ARG_VALUE: k.v = slot_of(a->u.value); break;
	case PR_ARG_INT: k.i = a->u.i; k.f = (double)a->u.i; break;
	case PR_ARG_FLOAT: k.f = a->u.f; k.i = (int64_t)a->u.f; break;
	case PR_ARG_BOOL: k.b = a->u.b; k.i = a->u.b; k.f = a->u.b; break;
	case PR_ARG_STRING: k.s = a->u.s; break;
	case PR_ARG_LIST:
		k.n = a->n_items;
		k.items = pr_xcalloc((size_t)(k.n ? k.n : 1), sizeof *k.items);
		for (int i = 0; i < k.n; i++)
			k.items[i] = resolve_arg(&a->u.items[i]);
		break;
	case PR_ARG_NONE: break;
	}
	return k;
}

static void free_karg(prt_karg *k)
{
	if (k->kind != PR_ARG_LIST)
		return;
	for (int i = 0; i < k->n; i++)
		free_karg(&k->items[i]);
	free(k->items);
}

static instr *emit(frame *f, instr_kind kind, const pr_node *n, prt_exec *e)
{
	PR_GROW(f->code, f->n_code, f->cap_code);
	instr *in = &f->code[f->n_code++];
	memset(in, 0, sizeof *in);
	in->kind = kind;
	in->alias_arg = -1;
	in->k.node = n;
	in->k.out = slot_of(n);
	in->k.devs = &e->devs;
	in->k.dev = f->dev;
	in->k.n_args = n->n_args;
	in->k.args = pr_xcalloc((size_t)(n->n_args ? n->n_args : 1), sizeof *in->k.args);
	for (int i = 0; i < n->n_args; i++)
		in->k.args[i] = resolve_arg(&n->args[i]);
	return in;
}

/* The bytes a constant is stored with. Like ExecuTorch's emitter, a constant
 * whose layout is neither contiguous nor channels-last is stored contiguous
 * (its spec is changed to match): host ops read the right values, but a
 * delegate compiled for the original strides reads the wrong ones (F1). */
static pr_err *constant_bytes(prt_exec *e, pr_node *n, pr_spec *stored, uint8_t **out)
{
	const pr_spec *s = &n->type.tensor;
	*stored = *s;
	bool odd = !pr_spec_stored_as_is(s);
	if (odd)
		pr_spec_set_contiguous(stored);
	uint8_t *host, *raw = NULL;
	pr_err *err = track_alloc(e, 0, pr_spec_storage_bytes(stored), (void **)&host);
	if (err)
		return err;
	if (!odd)
		return (*out = host, pr_data_materialize(&n->of_kind.input->data, s, host));
	raw = pr_xmalloc((size_t)(pr_spec_storage_bytes(s) ? pr_spec_storage_bytes(s) : 1));
	err = pr_data_materialize(&n->of_kind.input->data, s, raw);
	if (!err) {
		prt_tensor from = prt_tensor_from_spec(s, raw, 0), to = prt_tensor_from_spec(stored, host, 0);
		err = prt_tensor_copy(&to, &from);
	}
	free(raw);
	*out = host;
	return err;
}

static pr_err *compile_constant(prt_exec *e, pr_node *n, uint8_t **staging)
{
	prt_rv *r = slot_of(n);
	const pr_spec *s = &n->type.tensor;
	r->kind = PRT_RV_TENSOR;
	bool on_device = !e->reference && !pr_spec_on_host(s);
	const pr_input *in = n->of_kind.input;
	bool writable = in->kind == PR_INPUT_BUFFER;
	bool odd = !pr_spec_stored_as_is(s);
	/* The copy at load moves the bytes as stored, as a per-call copy would,
	 * and a delegate reads them with the spec's strides (F5's refusal). */
	if (on_device && odd) {
		char ds[PR_DEVICE_STR_MAX];
		return pr_err_new("node '%s': refusing to load constant '%s' into %s memory: its "
				  "layout is neither contiguous nor channels-last, so the program "
				  "stores it contiguous and a delegate would read the copied bytes "
				  "in the wrong order", n->name ? n->name : "?",
				  in->name ? in->name : "?", pr_device_str(pr_spec_device(s), ds));
	}
	if (!on_device && !writable && !odd && in->data.mapped &&
	    in->data.mapped_size == pr_spec_storage_bytes(s)) {
		r->t = prt_tensor_from_spec(s, (void *)in->data.mapped, 0);
		return NULL;
	}
	pr_spec stored;
	uint8_t *host;
	pr_err *err = constant_bytes(e, n, &stored, &host);
	if (err)
		return node_err(n, err);
	if (!on_device) {
		r->t = prt_tensor_from_spec(&stored, host, 0);
		return NULL;
	}
	/* F10: a device-resident constant, copied once now; the staging is kept
	 * until the device is synchronized. */
	if ((err = place_tensor(e, &stored, -1, &r->t)))
		return node_err(n, err);
	*staging = host;
	err = prt_mem_copy(&e->devs, r->t.dev, r->t.data, 0, host, pr_spec_storage_bytes(&stored), true);
	return err ? node_err(n, err) : NULL;
}

static pr_err *compile_input(prt_exec *e, frame *f, pr_node *n, bool body, uint8_t **staging)
{
	prt_rv *r = slot_of(n);
	if (n->type.kind != PR_TYPE_TENSOR)
		return node_err(n, pr_err_new("an input must be a tensor"));
	if (body) {
		f->inputs = pr_xrealloc(f->inputs, sizeof *f->inputs * (size_t)(f->n_inputs + 1));
		f->input_specs = pr_xrealloc(f->input_specs, sizeof *f->input_specs * (size_t)(f->n_inputs + 1));
		f->input_specs[f->n_inputs] = &n->type.tensor;
		f->inputs[f->n_inputs++] = r;
		return NULL;
	}
	if (n->of_kind.input->kind != PR_INPUT_USER)
		return compile_constant(e, n, staging);
	r->kind = PRT_RV_TENSOR;
	pr_err *err = place_tensor(e, &n->type.tensor, -1, &r->t);
	if (err)
		return node_err(n, err);
	e->inputs = pr_xrealloc(e->inputs, sizeof *e->inputs * (size_t)(e->n_inputs + 1));
	e->inputs[e->n_inputs++] = (user_input){.node = n, .slot = r};
	return NULL;
}

/* M3: the copy's device side must be a device. */
static pr_err *check_copy(prt_exec *e, pr_node *n)
{
	const pr_schema *op = n->of_kind.schema;   /* an op with a schema: compile_node */
	if (n->n_args < 1 || n->args[0].kind != PR_ARG_VALUE || n->type.kind != PR_TYPE_TENSOR)
		return node_err(n, pr_err_new("a copy takes one tensor and returns one"));
	if (e->reference)
		return NULL;
	const pr_spec *src = pr_node_spec(n->args[0].u.value), *dst = &n->type.tensor;
	if (!src)
		return node_err(n, pr_err_new("a copy's argument must be a tensor"));
	if (op->h2d && pr_spec_on_host(dst))
		return pr_err_new("node '%s' (%s): refusing a host-to-device copy whose destination is "
				  "on the CPU (M3)", n->name ? n->name : "?", op->full_name);
	if (op->d2h && pr_spec_on_host(src))
		return pr_err_new("node '%s' (%s): refusing a device-to-host copy whose source is on "
				  "the CPU (M3)", n->name ? n->name : "?", op->full_name);
	/* As ExecuTorch's copy kernels: the host side of a copy must be the host. */
	if (op->h2d && !pr_spec_on_host(src)) {
		char ds[PR_DEVICE_STR_MAX];
		return pr_err_new("node '%s' (%s): refusing a host-to-device copy whose source %%%s "
				  "is already in device memory (%s) (M3)", n->name ? n->name : "?",
				  op->full_name,
				  n->args[0].u.value->name ? n->args[0].u.value->name : "?",
				  pr_device_str(pr_spec_device(src), ds));
	}
	if (op->d2h && !pr_spec_on_host(dst))
		return pr_err_new("node '%s' (%s): refusing a device-to-host copy whose destination "
				  "is not on the CPU (M3)", n->name ? n->name : "?", op->full_name);
	return NULL;
}

/* An op with several results (split_with_sizes: Tensor(a)[]): a tuple slot.
 * Views of an argument are left unplaced, the kernel points each element
 * into that argument's storage; other results get memory of their own. */
static pr_err *compile_op_tuple(prt_exec *e, frame *f, pr_node *n, instr *in)
{
	prt_rv *r = slot_of(n);
	r->kind = PRT_RV_TUPLE;
	r->n = n->type.n_elems;
	r->elems = pr_xcalloc((size_t)(r->n ? r->n : 1), sizeof *r->elems);
	for (int i = 0; i < r->n; i++) {
		r->elems[i].kind = PRT_RV_TENSOR;
		pr_err *err = in->alias_arg >= 0 ? NULL
			: place_tensor(e, &n->type.elems[i], f->dev ? f->dev : -1, &r->elems[i].t);
		if (err)
			return node_err(n, err);
	}
	return NULL;
}

static pr_err *compile_op(prt_exec *e, frame *f, pr_node *n)
{
	prt_rv *r = slot_of(n);
	const pr_schema *op = n->of_kind.schema;   /* an op with a schema: compile_node */
	pr_err *err;
	if (op->h2d || op->d2h) {
		if ((err = check_copy(e, n)))
			return err;
		r->kind = PRT_RV_TENSOR;
		if ((err = place_tensor(e, &n->type.tensor, f->dev ? f->dev : -1, &r->t)))
			return node_err(n, err);
		emit(f, I_COPY, n, e);
		return NULL;
	}
	const prt_kernel *kern = prt_kernel_find(op->full_name);
	if (!kern)
		return pr_err_new("node '%s': no kernel for op '%s'", n->name ? n->name : "(no result)",
				  op->full_name);
	bool meta = kern->flags & PRT_KERNEL_META;
	bool cuda = f->dev && strcmp(e->devs.kind, "cuda") == 0;
	if (cuda && !meta && !kern->cuda)
		return pr_err_new("node '%s': no CUDA kernel for op '%s'", n->name ? n->name : "?",
				  op->full_name);
	instr *in = emit(f, I_OP, n, e);
	in->fn = cuda && !meta ? kern->cuda : kern->host;
	in->meta = meta;
	in->check_host = !meta && !f->dev && strcmp(e->devs.kind, "cuda") == 0;
	in->alias_arg = pr_node_alias_arg(n, 0);
	if (in->alias_arg >= n->n_args || (in->alias_arg >= 0 && n->args[in->alias_arg].kind != PR_ARG_VALUE))
		return node_err(n, pr_err_new("the argument its result aliases is missing"));
	in->k.out_alias = in->alias_arg >= 0;
	switch (n->type.kind) {
	case PR_TYPE_NONE: r->kind = PRT_RV_NONE; return NULL;
	case PR_TYPE_INT: r->kind = PRT_RV_INT; return NULL;
	case PR_TYPE_TUPLE: return compile_op_tuple(e, f, n, in);
	case PR_TYPE_TENSOR: break;
	}
	r->kind = PRT_RV_TENSOR;
	if (in->alias_arg >= 0 && !(kern->flags & PRT_KERNEL_MAY_COPY))
		return NULL;
	prt_tensor t;
	if ((err = place_tensor(e, &n->type.tensor, f->dev ? f->dev : -1, &t)))
		return node_err(n, err);
	if (in->alias_arg < 0) {
		r->t = t;
		return NULL;
	}
	in->k.own = pr_xmalloc(sizeof t);
	*in->k.own = t;
	return NULL;
}

static pr_err *compile_delegate(prt_exec *e, frame *f, pr_node *n)
{
	prt_rv *r = slot_of(n);
	pr_delegate *d = n->of_kind.delegate;
	body_entry *be = find_body(e, d);
	PR_ASSERT(be && be->f);   /* compile_bodies compiled every body the method reaches */
	frame *body = be->f;
	int dev = be->dev;
	pr_err *err;
	if (body->n_inputs != n->n_args)
		return node_err(n, pr_err_new("delegate @%s takes %d inputs, given %d", d->name,
					      body->n_inputs, n->n_args));
	int n_out = n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 1;
	int n_ret = body->ret ? body->ret->n_args : 0;
	if (n_ret != n_out || n->type.kind == PR_TYPE_NONE)
		return node_err(n, pr_err_new("delegate @%s returns %d values, the call expects %d",
					      d->name, n_ret, n_out));
	prt_rv *outs = r;
	if (n->type.kind == PR_TYPE_TUPLE) {
		r->kind = PRT_RV_TUPLE;
		r->n = n_out;
		r->elems = pr_xcalloc((size_t)n_out, sizeof *r->elems);
		outs = r->elems;
	}
	for (int i = 0; i < n_out; i++) {
		pr_spec *s = n->type.kind == PR_TYPE_TUPLE ? &n->type.elems[i] : &n->type.tensor;
		outs[i].kind = PRT_RV_TENSOR;
		if ((err = place_tensor(e, s, f->dev ? f->dev : -1, &outs[i].t)))
			return node_err(n, err);
	}
	instr *in = emit(f, I_DELEGATE, n, e);
	in->body = body;
	in->k.dev = dev;
	return NULL;
}

static pr_err *compile_node(prt_exec *e, frame *f, pr_node *n, bool body, uint8_t **staging)
{
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT: return compile_input(e, f, n, body, staging);
	case PR_NODE_OP:
		if (!n->of_kind.schema)
			return node_err(n, pr_err_new("an op call without a schema"));
		return compile_op(e, f, n);
	case PR_NODE_DELEGATE: return compile_delegate(e, f, n);
	case PR_NODE_GETITEM: {
		if (n->n_args != 1 || n->args[0].kind != PR_ARG_VALUE)
			return node_err(n, pr_err_new("getitem takes one value"));
		instr *in = emit(f, I_GETITEM, n, e);
		in->index = n->of_kind.index;
		slot_of(n)->kind = PRT_RV_TENSOR;
		return NULL;
	}
	case PR_NODE_RETURN:
		f->ret = n;
		f->rets = pr_xcalloc((size_t)(n->n_args ? n->n_args : 1), sizeof *f->rets);
		for (int i = 0; i < n->n_args; i++)
			f->rets[i] = n->args[i].kind == PR_ARG_VALUE ? slot_of(n->args[i].u.value) : NULL;
		return NULL;
	}
	return NULL;
}

/* Device-resident constants were copied during compilation: wait for every
 * device before the staging buffers go (F10). */
static pr_err *finish_staging(prt_exec *e, uint8_t **staging, int n)
{
	pr_err *err = NULL;
	for (int d = 1; d < e->devs.n && !err; d++)
		err = prt_mem_sync(&e->devs, d);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < e->n_allocs; j++)
			if (e->allocs[j].p == staging[i]) {
				prt_mem_free(&e->devs, 0, staging[i], e->allocs[j].bytes);
				e->allocs[j] = e->allocs[--e->n_allocs];
				break;
			}
	return err;
}

static pr_err *compile_graph(prt_exec *e, pr_graph *g, frame *f, int dev)
{
	f->dev = dev;
	f->n_slots = (int)g->n_nodes;
	f->slots = pr_xcalloc((size_t)(f->n_slots ? f->n_slots : 1), sizeof *f->slots);
	void **saved = pr_xmalloc(sizeof(void *) * (size_t)(f->n_slots ? f->n_slots : 1));
	int i = 0;
	pr_graph_for_each(g, n) {
		PR_ASSERT(i < f->n_slots);
		saved[i] = n->scratch;
		n->scratch = &f->slots[i++];
	}
	uint8_t **staging = pr_xcalloc((size_t)(f->n_slots ? f->n_slots : 1), sizeof *staging);
	int n_staging = 0;
	pr_err *err = NULL;
	bool body = g->delegate != NULL;
	pr_graph_for_each(g, n) {
		uint8_t *st = NULL;
		if ((err = compile_node(e, f, n, body, &st)))
			break;
		if (st)
			staging[n_staging++] = st;
	}
	pr_err *err2 = finish_staging(e, staging, n_staging);
	if (!err)
		err = err2;
	else
		pr_err_free(err2);
	free(staging);
	i = 0;
	pr_graph_for_each(g, n) n->scratch = saved[i++];
	free(saved);
	if (!err && !f->ret)
		err = pr_err_new("graph '%s' has no return", g->name);
	return err;
}

/* ---- running ------------------------------------------------------------------ */

static __thread sigjmp_buf *g_jmp;
static __thread const pr_node *g_node;
static __thread void *g_fault_addr;
static struct sigaction g_old_segv, g_old_bus;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (g_jmp && prt_sim_owner(si->si_addr)) {
		g_fault_addr = si->si_addr;
		siglongjmp(*g_jmp, 1);
	}
	/* Not ours: put the old handler back; the access faults again into it. */
	sigaction(sig, sig == SIGSEGV ? &g_old_segv : &g_old_bus, NULL);
}

static const char *node_name(const pr_node *n)
{
	return n && n->name ? n->name : "(no result)";
}

static pr_err *violation(const pr_node *n, const char *what, int dev_slot, const prt_devset *s)
{
	char buf[PR_DEVICE_STR_MAX];
	const pr_schema *op = n ? pr_node_schema(n) : NULL;
	return pr_err_new("placement violation: node '%s'%s%s %s (%s)", node_name(n),
			  op ? " " : "", op ? op->full_name : "", what,
			  pr_device_str(s->where[dev_slot], buf));
}

bool prt_is_placement_violation(const pr_err *err)
{
	return err && strstr(pr_err_message(err), "placement violation") != NULL;
}

/* A device kernel gets only memory of its device (M4). */
static pr_err *check_device_arg(const instr *in, const prt_tensor *t)
{
	prt_dev *d = prt_devset_dev(in->k.devs, in->k.dev);
	if (prt_tensor_numel(t) == 0 || d->ops->contains(d, t->data, prt_tensor_span_bytes(t)))
		return NULL;
	return violation(in->k.node, "device kernel touched host memory on", in->k.dev, in->k.devs);
}

static pr_err *check_device_kargs(const instr *in, const prt_karg *a, int n)
{
	for (int i = 0; i < n; i++) {
		pr_err *err = NULL;
		if (a[i].kind == PR_ARG_VALUE && a[i].v->kind == PRT_RV_TENSOR)
			err = check_device_arg(in, &a[i].v->t);
		else if (a[i].kind == PR_ARG_LIST)
			err = check_device_kargs(in, a[i].items, a[i].n);
		if (err)
			return err;
	}
	return NULL;
}

/* On CUDA nothing faults politely: a host kernel given device memory is
 * refused from the tensors' device slots. */
static pr_err *check_host_kargs(const instr *in, const prt_karg *a, int n)
{
	for (int i = 0; i < n; i++) {
		if (a[i].kind == PR_ARG_VALUE && a[i].v->kind == PRT_RV_TENSOR && a[i].v->t.dev != 0)
			return violation(in->k.node, "touched device memory", a[i].v->t.dev, in->k.devs);
		if (a[i].kind == PR_ARG_LIST) {
			pr_err *err = check_host_kargs(in, a[i].items, a[i].n);
			if (err)
				return err;
		}
	}
	return NULL;
}

static pr_err *run_frame(prt_exec *e, frame *f);

static pr_err *run_op(instr *in)
{
	prt_kctx *k = &in->k;
	if (in->alias_arg >= 0) {
		prt_rv *a = k->args[in->alias_arg].v;
		if (a->kind == PRT_RV_TENSOR && k->out->kind == PRT_RV_TENSOR)
			k->out->t = a->t;
	}
	if (!in->meta && k->dev) {
		pr_err *err = check_device_kargs(in, k->args, k->n_args);
		if (!err && k->out->kind == PRT_RV_TENSOR && in->alias_arg < 0)
			err = check_device_arg(in, &k->out->t);
		if (err)
			return err;
	} else if (in->check_host) {
		pr_err *err = check_host_kargs(in, k->args, k->n_args);
		if (err)
			return err;
	}
	return in->fn(k);
}

/* Copies move the bytes as stored (the copy does not know strides). */
static pr_err *run_copy(prt_exec *e, instr *in)
{
	const prt_tensor *src = &in->k.args[0].v->t;
	prt_tensor *dst = &in->k.out->t;
	int64_t n = prt_tensor_span_bytes(src);
	if (in->k.args[0].v->kind != PRT_RV_TENSOR)
		return pr_err_new("node '%s': a copy's argument must be a tensor", node_name(in->k.node));
	if (n > prt_tensor_span_bytes(dst) || src->dtype != dst->dtype)
		return pr_err_new("node '%s': copy source (%lld bytes, %s) does not fit its result",
				  node_name(in->k.node), (long long)n, pr_dtype_name(src->dtype));
	if (e->reference)
		return prt_tensor_copy(dst, src);
	pr_err *err = prt_mem_copy(&e->devs, dst->dev, dst->data, src->dev, src->data, n, true);
	return err ? pr_err_wrap(err, "node '%s'", node_name(in->k.node)) : NULL;
}

/* Copies a body result into the delegate's output, on the delegate's device. */
static pr_err *delegate_result(prt_exec *e, instr *in, prt_tensor *dst, const prt_tensor *src)
{
	if (in->k.dev) {
		pr_err *err = check_device_arg(in, dst);
		if (!err)
			err = check_device_arg(in, src);
		if (err)
			return err;
	}
	bool same = src->dtype == dst->dtype && src->rank == dst->rank && prt_tensor_is_contiguous(src) &&
		    prt_tensor_is_contiguous(dst) && prt_tensor_numel(src) == prt_tensor_numel(dst);
	if (in->k.dev && strcmp(e->devs.kind, "cuda") == 0) {
		if (!same)
			return prt_cuda_copy(&in->k, dst, src);
		return prt_mem_copy(&e->devs, in->k.dev, dst->data, in->k.dev, src->data,
				   prt_tensor_span_bytes(src), false);
	}
	pr_err *err = prt_tensor_copy(dst, src);
	return err ? pr_err_wrap(err, "node '%s'", node_name(in->k.node)) : NULL;
}

/* Does body input i of call `in`, t (the layout the body declares over the
 * argument's storage), stay inside that storage? Asked on every call, so
 * the input's label is formatted only when it does not. */
static pr_err *input_in_storage(const instr *in, int i, const prt_tensor *t)
{
	static const char where[] = "the storage of its argument";
	static const char expected[] = "the argument's strides, or strides inside its storage";
	pr_err *why = prt_tensor_in_storage(t, "the input", where, expected);
	if (!why)
		return NULL;
	pr_err_free(why);
	char what[160];
	snprintf(what, sizeof what, "input %d of @%s (the strides its body declares)", i,
		 in->k.node->of_kind.delegate->name);
	return pr_err_wrap(prt_tensor_in_storage(t, what, where, expected), "node '%s'",
			   node_name(in->k.node));
}

/* Gives body b of call `in` its inputs and enters its device (*d). */
static pr_err *delegate_begin(prt_exec *e, instr *in, prt_dev **d)
{
	frame *b = in->body;
	for (int i = 0; i < b->n_inputs; i++) {
		prt_rv *a = in->k.args[i].kind == PR_ARG_VALUE ? in->k.args[i].v : NULL;
		if (!a || a->kind != PRT_RV_TENSOR)
			return pr_err_new("node '%s': delegate argument %d is not a tensor",
					  node_name(in->k.node), i);
		b->inputs[i]->kind = PRT_RV_TENSOR;
		b->inputs[i]->t = a->t;
		if (e->reference)
			continue;
		/* M5: the layout the body was compiled for, over the caller's storage. */
		prt_tensor *t = &b->inputs[i]->t;
		const pr_spec *s = b->input_specs[i];
		t->rank = s->rank;
		t->dtype = s->dtype;
		memcpy(t->shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
		memcpy(t->strides, pr_spec_strides(s), sizeof(int64_t) * (size_t)s->rank);
		/* The verifier asks the argument for the body's dtype and shape,
		 * not its strides: a layout reaching past the argument's storage
		 * would read (and write) outside it. */
		pr_err *outside = input_in_storage(in, i, t);
		if (outside)
			return outside;
	}
	*d = in->k.dev ? prt_devset_dev(&e->devs, in->k.dev) : NULL;
	if (*d)
		(*d)->ops->enter(*d);
	return NULL;
}

/* After body b of call `in` ran (err: how): its results into the call's
 * outputs, and its device left. */
static pr_err *delegate_end(prt_exec *e, instr *in, pr_err *err, prt_dev *d)
{
	frame *b = in->body;
	prt_rv *outs = in->k.out->kind == PRT_RV_TUPLE ? in->k.out->elems : in->k.out;
	for (int i = 0; !err && i < b->ret->n_args; i++) {
		prt_rv *v = b->rets[i];
		g_node = in->k.node;
		if (!v || v->kind != PRT_RV_TENSOR)
			err = pr_err_new("delegate @%s: result %d is not a tensor",
					 in->k.node->of_kind.delegate->name, i);
		else
			err = delegate_result(e, in, &outs[i].t, &v->t);
	}
	if (d)
		d->ops->leave(d);
	return err;
}

static pr_err *run_getitem(instr *in)
{
	prt_rv *t = in->k.args[0].v;
	if (t->kind == PRT_RV_TUPLE) {
		if (in->index < 0 || in->index >= t->n)
			return pr_err_new("node '%s': getitem index %lld out of range",
					  node_name(in->k.node), (long long)in->index);
		in->k.out->t = t->elems[in->index].t;
	} else if (t->kind == PRT_RV_TENSOR && in->index == 0) {
		in->k.out->t = t->t;
	} else {
		return pr_err_new("node '%s': getitem of a value that is not a tuple", node_name(in->k.node));
	}
	return NULL;
}

/* Runs the method's frame and, at each call, the body it calls, on a stack
 * of levels of its own: the depth of nested calls costs no C stack. */
static pr_err *run_frame(prt_exec *e, frame *f)
{
	run_level *lv = e->levels;
	int depth = 1;
	lv[0] = (run_level){f, f->code, NULL, NULL};
	pr_err *err = NULL;
	while (depth > 0) {
		run_level *l = &lv[depth - 1];
		if (err || l->pc == l->f->code + l->f->n_code) {
			if (l->call)
				err = delegate_end(e, l->call, err, l->d);
			depth--;
			continue;
		}
		instr *in = l->pc++;
		g_node = in->k.node;
		prt_dev *d = NULL;
		switch (in->kind) {
		case I_OP: err = run_op(in); break;
		case I_COPY: err = run_copy(e, in); break;
		case I_GETITEM: err = run_getitem(in); break;
		case I_DELEGATE:
			if ((err = delegate_begin(e, in, &d)))
				break;
			PR_ASSERT(depth <= e->max_depth);
			lv[depth++] = (run_level){in->body, in->body->code, in, d};
			break;
		}
	}
	return err;
}

/* ---- calls ------------------------------------------------------------------------ */

static pr_err *host_to_tensor(prt_exec *e, prt_tensor *dst, const prt_tensor *host)
{
	if (dst->dev == 0)
		return prt_tensor_copy(dst, host);
	if (!prt_tensor_is_contiguous(dst))
		return pr_err_new("a device tensor with a non-contiguous layout cannot be set from the host");
	return prt_mem_copy(&e->devs, dst->dev, dst->data, 0, host->data,
			   prt_tensor_numel(dst) * (int64_t)pr_dtype_size(dst->dtype), false);
}

/* A contiguous host copy of t (uncounted: the caller's own transfer). */
static pr_err *tensor_to_host(prt_exec *e, const prt_tensor *t, prt_tensor *out)
{
	int64_t span = prt_tensor_span_bytes(t);
	uint8_t *raw = t->data;
	pr_err *err = NULL;
	if (t->dev != 0) {
		raw = pr_xmalloc((size_t)(span ? span : 1));
		err = prt_mem_copy(&e->devs, 0, raw, t->dev, t->data, span, false);
	}
	void *buf = pr_xmalloc(pr_dtype_size(t->dtype) * (size_t)(prt_tensor_numel(t) ? prt_tensor_numel(t) : 1));
	*out = prt_tensor_make(t->dtype, t->rank, t->shape, buf);
	if (!err) {
		prt_tensor view = *t;
		view.data = raw;
		err = prt_tensor_copy(out, &view);
	}
	if (raw != t->data)
		free(raw);
	return err;
}

static user_input *find_user_input(prt_exec *e, const char *name)
{
	for (int i = 0; i < e->n_inputs; i++)
		if (strcmp(prt_exec_input_name(e, i), name) == 0)
			return &e->inputs[i];
	return NULL;
}

/* Copies between any two tensors of one shape (uncounted). */
static pr_err *copy_any(prt_exec *e, prt_tensor *dst, const prt_tensor *src)
{
	if (dst->dev == 0 && src->dev == 0)
		return prt_tensor_copy(dst, src);
	prt_tensor h;
	pr_err *err = tensor_to_host(e, src, &h);
	if (!err)
		err = host_to_tensor(e, dst, &h);
	free(h.storage);
	return err;
}

/* Write-backs: a mutable buffer takes the returned value into its storage,
 * a user input keeps it for the next call. */
static pr_err *write_back(prt_exec *e)
{
	pr_node *ret = e->main.ret;
	for (int i = 0; ret->of_kind.writebacks && i < ret->n_args; i++) {
		pr_writeback *w = &ret->of_kind.writebacks[i];
		prt_rv *v = e->main.rets[i];
		if (w->kind == PR_WRITEBACK_NONE || !v || v->kind != PRT_RV_TENSOR)
			continue;
		pr_err *err = NULL;
		if (w->kind == PR_WRITEBACK_INPUT) {
			user_input *u = find_user_input(e, w->target);
			if (!u)
				return pr_err_new("write-back to unknown input \"%s\"", w->target);
			free(u->host.storage);
			err = tensor_to_host(e, &v->t, &u->host);
		} else {
			prt_rv *b = e->wb_buffer[i];
			if (!b)
				return pr_err_new("write-back to unknown buffer \"%s\"", w->target);
			prt_tensor *dst = &b->t;
			if (dst->data == v->t.data)
				continue;
			err = copy_any(e, dst, &v->t);
		}
		if (err)
			return pr_err_wrap(err, "write-back of output %d", i);
	}
	return NULL;
}

static pr_err *load_inputs(prt_exec *e)
{
	for (int i = 0; i < e->n_inputs; i++) {
		user_input *u = &e->inputs[i];
		if (!u->set)
			return pr_err_new("input '%s' was not given", prt_exec_input_name(e, i));
		pr_err *err = host_to_tensor(e, &u->slot->t, &u->host);
		if (err)
			return pr_err_wrap(err, "input '%s'", prt_exec_input_name(e, i));
	}
	return NULL;
}

static pr_err *guarded_run(prt_exec *e)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &g_old_segv);
	sigaction(SIGBUS, &sa, &g_old_bus);
	sigjmp_buf jb;
	pr_err *volatile err = NULL;
	if (sigsetjmp(jb, 0) == 0) {
		g_jmp = &jb;
		err = run_frame(e, &e->main);
	} else {
		prt_sim_protect_all();
		prt_dev *d = prt_sim_owner(g_fault_addr);
		char buf[PR_DEVICE_STR_MAX];
		const pr_node *n = g_node;
		const pr_schema *op = n ? pr_node_schema(n) : NULL;
		err = pr_err_new("placement violation: node '%s'%s%s touched device memory (%s) from "
				 "host code", node_name(n), op ? " " : "",
				 op ? op->full_name : "",
				 d ? pr_device_str(d->where, buf) : "?");
	}
	g_jmp = NULL;
	sigaction(SIGSEGV, &g_old_segv, NULL);
	sigaction(SIGBUS, &g_old_bus, NULL);
	return err;
}

pr_err *prt_exec_run(prt_exec *e)
{
	pr_err *err = load_inputs(e);
	if (err)
		return err;
	prt_devset_reset_counters(&e->devs);
	err = guarded_run(e);
	for (int d = 1; !err && d < e->devs.n; d++)
		err = prt_mem_sync(&e->devs, d);
	prt_devset_counters(&e->devs, &e->call_h2d, &e->call_d2h);
	if (!err)
		err = write_back(e);
	return err;
}

/* ---- loading and the public accessors ------------------------------------------ */

typedef struct buffer_entry {
	const char *name;
	prt_rv *slot;
	UT_hash_handle hh;
} buffer_entry;

/* The slot of each mutable buffer a returned value is written back to: one
 * walk and a name table, so programs with many caches load in linear time. */
static void resolve_write_backs(prt_exec *e)
{
	pr_node *ret = e->main.ret;
	e->wb_buffer = pr_xcalloc((size_t)(ret->n_args ? ret->n_args : 1), sizeof *e->wb_buffer);
	if (!ret->of_kind.writebacks)
		return;
	buffer_entry *table = NULL, *it, *tmp;
	int idx = 0;
	pr_graph_for_each(e->g, n) {
		const pr_input *in = pr_node_input(n);
		if (n->kind == PR_NODE_INPUT && in->kind != PR_INPUT_USER && in->name) {
			HASH_FIND_STR(table, in->name, it);
			if (!it) {
				it = pr_xcalloc(1, sizeof *it);
				it->name = in->name;
				it->slot = &e->main.slots[idx];
				HASH_ADD_KEYPTR(hh, table, it->name, strlen(it->name), it);
			}
		}
		idx++;
	}
	for (int i = 0; i < ret->n_args; i++) {
		if (ret->of_kind.writebacks[i].kind != PR_WRITEBACK_BUFFER)
			continue;
		HASH_FIND_STR(table, ret->of_kind.writebacks[i].target, it);
		e->wb_buffer[i] = it ? it->slot : NULL;
	}
	HASH_ITER(hh, table, it, tmp) {
		HASH_DEL(table, it);
		free(it);
	}
}

pr_err *prt_exec_load(const pr_program *p, const char *method, const prt_exec_options *o,
		     prt_exec **out)
{
	*out = NULL;
	pr_graph *g = pr_program_find_method(p, method);
	if (!g)
		return pr_err_new("the program has no method '%s'", method);
	prt_exec *e = pr_xcalloc(1, sizeof *e);
	e->p = p;
	e->g = g;
	e->reference = o->reference;
	pr_err *err = prt_devset_init(&e->devs, o->reference || !o->device ? "sim" : o->device);
	if (err) {
		free(e);
		return err;
	}
	err = alloc_arenas(e);
	if (!err)
		err = compile_bodies(e);
	if (!err)
		err = compile_graph(e, g, &e->main, 0);
	if (!err) {
		resolve_write_backs(e);
		prt_devset_counters(&e->devs, &e->load_h2d, &e->call_d2h);
		e->call_d2h = 0;
	}
	if (err) {
		prt_exec_free(e);
		return pr_err_wrap(err, "loading method '%s'", method);
	}
	*out = e;
	return NULL;
}

static void free_frame(frame *f)
{
	for (int i = 0; i < f->n_code; i++) {
		instr *in = &f->code[i];
		for (int j = 0; j < in->k.n_args; j++)
			free_karg(&in->k.args[j]);
		free(in->k.args);
		free(in->k.own);
	}
	for (int i = 0; i < f->n_slots; i++)
		free(f->slots[i].elems);
	free(f->code);
	free(f->slots);
	free(f->inputs);
	free(f->input_specs);
	free(f->rets);
}

void prt_exec_free(prt_exec *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->n_frames; i++) {
		free_frame(e->frames[i]);
		free(e->frames[i]);
	}
	free(e->frames);
	HASH_CLEAR(hh, e->bodies);
	free(e->body_store);
	free(e->body_order);
	free(e->levels);
	free_frame(&e->main);
	for (int i = 0; i < e->n_allocs; i++)
		prt_mem_free(&e->devs, e->allocs[i].dev, e->allocs[i].p, e->allocs[i].bytes);
	free(e->allocs);
	for (int i = 0; i < e->n_inputs; i++)
		free(e->inputs[i].host.storage);
	free(e->inputs);
	free(e->wb_buffer);
	prt_devset_free(&e->devs);
	free(e);
}

int prt_exec_n_inputs(const prt_exec *e) { return e->n_inputs; }
const pr_node *prt_exec_input(const prt_exec *e, int i) { return e->inputs[i].node; }

const char *prt_exec_input_name(const prt_exec *e, int i)
{
	const pr_node *n = e->inputs[i].node;   /* a user input */
	return n->of_kind.input->name ? n->of_kind.input->name : n->name;
}

pr_err *prt_exec_set_input(prt_exec *e, int i, const prt_tensor *host)
{
	user_input *u = &e->inputs[i];
	const pr_spec *s = &u->node->type.tensor;
	bool same = host->dtype == s->dtype && host->rank == s->rank &&
		    memcmp(host->shape, s->shape, sizeof(int64_t) * (size_t)s->rank) == 0;
	if (!same)
		return pr_err_new("input '%s' must be %s with shape of rank %d as declared",
				  prt_exec_input_name(e, i), pr_dtype_name(s->dtype), s->rank);
	free(u->host.storage);
	int64_t bytes = prt_tensor_numel(host) * (int64_t)pr_dtype_size(host->dtype);
	void *buf = pr_xmalloc((size_t)(bytes ? bytes : 1));
	u->host = prt_tensor_make(host->dtype, host->rank, host->shape, buf);
	u->set = true;
	return prt_tensor_copy(&u->host, host);
}

int prt_exec_n_outputs(const prt_exec *e) { return e->main.ret->n_args; }

const pr_node *prt_exec_output_node(const prt_exec *e, int i)
{
	const pr_arg *a = &e->main.ret->args[i];
	return a->kind == PR_ARG_VALUE ? a->u.value : NULL;
}

pr_err *prt_exec_output(prt_exec *e, int i, prt_tensor *out)
{
	prt_rv *v = e->main.rets[i];
	if (v && v->kind == PRT_RV_INT) {
		int64_t *buf = pr_xmalloc(sizeof *buf);
		*buf = v->i;
		*out = prt_tensor_make(PR_I64, 0, NULL, buf);
		return NULL;
	}
	if (!v || v->kind != PRT_RV_TENSOR)
		return pr_err_new("output %d is not a tensor", i);
	return tensor_to_host(e, &v->t, out);
}

void prt_exec_call_bytes(const prt_exec *e, int64_t *h2d, int64_t *d2h)
{
	*h2d = e->call_h2d;
	*d2h = e->call_d2h;
}

int64_t prt_exec_load_bytes(const prt_exec *e) { return e->load_h2d; }
