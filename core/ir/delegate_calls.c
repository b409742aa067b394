/* delegate_calls.c: the call graph of a program's delegates (program.h).
 *
 * A delegate body may call other delegates. What follows calls (the
 * verifier's recursion check, the executor compiling each body after the
 * bodies it calls) needs one order, computed here by a depth-first walk that
 * keeps its own stack on the heap: a chain of 50,000 nested delegates
 * overflowed the C stack when the walks recursed. Each delegate and each call
 * is visited once: linear in the program. A call back into a delegate that is
 * still on the walk's stack closes a cycle, and the calls on the stack from
 * that delegate up are the cycle. */
#include "passrun/program.h"

#include <stdlib.h>
#include <uthash.h>

typedef struct dindex {
	const pr_delegate *key;
	int index;
	UT_hash_handle hh;
} dindex;

typedef struct walk_level {
	int d;                /* index of the delegate whose body is walked */
	pr_node *next;        /* the next node of its body to look at */
	int64_t seen;         /* nodes looked at: a broken list is not followed far */
	pr_node *via;         /* the call that led here (NULL for a root) */
} walk_level;

typedef struct walk {
	const pr_program *p;
	dindex *by_ptr, *entries;
	char *state;          /* 0 not seen, 1 on the stack, 2 done */
	walk_level *stack;
	int depth;
	pr_delegate **order;
	int n_order;
} walk;

static int index_of(const walk *w, const pr_delegate *d)
{
	dindex *e = NULL;
	HASH_FIND_PTR(w->by_ptr, &d, e);
	return e ? e->index : -1;
}

static void push(walk *w, int d, pr_node *via)
{
	const pr_graph *body = w->p->delegates[d]->body;
	w->state[d] = 1;
	w->stack[w->depth++] = (walk_level){d, body ? body->first : NULL, 0, via};
}

/* The next call in the body of level l to a delegate of the program. */
static pr_node *next_call(walk *w, walk_level *l, int *callee)
{
	const pr_graph *body = w->p->delegates[l->d]->body;
	while (l->next && body && l->seen++ < body->n_nodes) {
		pr_node *n = l->next;
		l->next = n->next;
		if (n->kind == PR_NODE_DELEGATE && n->of_kind.delegate &&
		    (*callee = index_of(w, n->of_kind.delegate)) >= 0)
			return n;
	}
	return NULL;
}

/* The calls from the level of delegate `to` up the stack, then `closing`. */
static int cycle_of(const walk *w, int to, pr_node *closing, pr_node ***cycle)
{
	int from = w->depth - 1;
	while (w->stack[from].d != to)
		from--;
	int n = w->depth - from;
	*cycle = pr_xmalloc(sizeof **cycle * (size_t)n);
	for (int i = from + 1; i < w->depth; i++)
		(*cycle)[i - from - 1] = w->stack[i].via;
	(*cycle)[n - 1] = closing;
	return n;
}

/* Walks from root; returns the cycle's length when it meets one. */
static int walk_from(walk *w, int root, pr_node ***cycle)
{
	push(w, root, NULL);
	while (w->depth > 0) {
		walk_level *l = &w->stack[w->depth - 1];
		int callee = -1;
		pr_node *call = next_call(w, l, &callee);
		if (!call) {
			w->state[l->d] = 2;
			w->order[w->n_order++] = w->p->delegates[l->d];
			w->depth--;
		} else if (w->state[callee] == 1) {
			return cycle_of(w, callee, call, cycle);
		} else if (w->state[callee] == 0) {
			push(w, callee, call);
		}
	}
	return 0;
}

int pr_delegates_callees_first(const pr_program *p, pr_delegate **order, pr_node ***cycle)
{
	int n = p->n_delegates, found = 0;
	*cycle = NULL;
	walk w = {.p = p, .order = order};
	w.entries = pr_xcalloc((size_t)(n ? n : 1), sizeof *w.entries);
	w.state = pr_xcalloc((size_t)(n ? n : 1), 1);
	w.stack = pr_xmalloc(sizeof *w.stack * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++) {
		const pr_delegate *d = p->delegates[i];
		if (index_of(&w, d) >= 0)
			continue;   /* listed twice: one entry */
		w.entries[i] = (dindex){.key = d, .index = i};
		HASH_ADD_PTR(w.by_ptr, key, &w.entries[i]);
	}
	for (int i = 0; i < n && !found; i++)
		if (!w.state[i] && index_of(&w, p->delegates[i]) == i)
			found = walk_from(&w, i, cycle);
	HASH_CLEAR(hh, w.by_ptr);
	free(w.entries);
	free(w.state);
	free(w.stack);
	return found;
}
