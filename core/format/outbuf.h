/* outbuf.h: private to the writers of both formats (binary_write.c,
 * text_print.c).
 *
 * Each writes a whole program into one buffer, whose every put checks for
 * room with one compare inline; out_reserve, out of line, grows it when that
 * fails. The buffer starts at the size out_node_count predicts, so that
 * growing is rare. */
#ifndef PASSRUN_OUTBUF_H
#define PASSRUN_OUTBUF_H

#include <stddef.h>

#include "passrun/program.h"

/* Makes room for n bytes after len in *p of *cap bytes (doubling). */
static __attribute__((noinline, unused)) void out_reserve(void **p, size_t *cap, size_t len, size_t n)
{
	size_t c = *cap ? *cap : 4096;
	while (c - len < n)
		c *= 2;
	*p = pr_xrealloc(*p, c);
	*cap = c;
}

/* The nodes of every graph of p, to size a writer's buffer by. */
static inline size_t out_node_count(const pr_program *p)
{
	size_t nodes = 0;
	for (int i = 0; i < p->n_delegates; i++)
		nodes += (size_t)p->delegates[i]->body->n_nodes;
	for (int i = 0; i < p->n_methods; i++)
		nodes += (size_t)p->methods[i]->n_nodes;
	return nodes;
}

#endif
