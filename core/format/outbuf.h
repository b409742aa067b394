/* outbuf.h: private to the writers of both formats (binary_write.c,
 * text_print.c) and to fileio.c, which saves through them.
 *
 * Each writes a program into an outbuf, whose every put checks for room
 * with one compare inline; out_reserve, out of line, makes room when that
 * fails. Without a sink the buffer is the whole output: it starts at the
 * size out_node_count predicts, so that growing is rare. With a sink
 * (fileio.h) it is a chunk of OUT_CHUNK bytes, handed to the sink each time
 * it fills, so that the output is never held whole in memory and the chunk
 * stays in the cache. */
#ifndef PASSRUN_OUTBUF_H
#define PASSRUN_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/fileio.h"
#include "passrun/program.h"

#define OUT_CHUNK ((size_t)1 << 20)

typedef struct outbuf {
	uint8_t *p;
	size_t len, cap;
	size_t base;          /* the output's bytes before p[0], handed to the sink */
	pr_file_sink *sink;   /* NULL: p holds the whole output */
} outbuf;

/* Makes room for n bytes after len: hands the chunk to the sink, if any,
 * and grows the buffer (doubling) when that is not enough. */
static __attribute__((noinline, unused)) void out_reserve(outbuf *b, size_t n)
{
	if (b->sink && b->len) {
		pr_file_sink_write(b->sink, b->p, b->len);
		b->base += b->len;
		b->len = 0;
	}
	if (b->cap - b->len >= n)
		return;
	size_t c = b->cap ? b->cap : 4096;
	while (c - b->len < n)
		c *= 2;
	b->p = pr_xrealloc(b->p, c);
	b->cap = c;
}

/* Room for n more bytes at b->p + b->len. */
static inline uint8_t *out_room(outbuf *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len < n, 0))
		out_reserve(b, n);
	return b->p + b->len;
}

/* Appends n bytes. With a sink, a run longer than the room left goes to it
 * directly rather than through the chunk. */
static __attribute__((unused)) void out_bytes(outbuf *b, const void *s, size_t n)
{
	if (b->sink && b->cap - b->len < n) {
		out_reserve(b, 0);   /* the chunk first: the order of the bytes */
		pr_file_sink_write(b->sink, s, n);
		b->base += n;
	} else if (n) {
		memcpy(out_room(b, n), s, n);
		b->len += n;
	}
}

/* Where the next byte goes in the output. */
static inline size_t out_pos(const outbuf *b)
{
	return b->base + b->len;
}

/* Hands what is left to the sink and frees the buffer. */
static __attribute__((unused)) void out_finish(outbuf *b)
{
	if (b->len)
		pr_file_sink_write(b->sink, b->p, b->len);
	b->base += b->len;
	b->len = 0;
	free(b->p);
	b->p = NULL;
	b->cap = 0;
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

/* The program written to sink, chunk by chunk: the bytes pr_binary_write and
 * pr_text_print return (format.h), less the text's terminating NUL. Errors
 * are the writer's; the sink's own stay in it for pr_file_sink_commit. */
pr_err *pr_binary_write_sink(const pr_program *p, pr_file_sink *sink);
void pr_text_print_sink(const pr_program *p, pr_file_sink *sink);

#endif
