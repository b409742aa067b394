/* outbuf.h: private to the writers of both formats (binary_write.c,
 * text_print.c) and to fileio.c, which saves through them.
 *
 * Each writes a program into an outbuf, whose every put checks for room
 * with one compare inline; out_reserve, out of line, makes room when that
 * fails. Without a sink the buffer is the whole output: it starts at the
 * size out_node_count predicts, so that growing is rare. With a sink
 * (fileio.h) the buffer is the free part of the sink's current stage, lent
 * (pr_file_sink_lend) and handed back filled (pr_file_sink_advance), so
 * that the bytes are made where the file is written from, never copied
 * there, and the output is never held whole in memory. A put longer than
 * the stage has left, and every put when the sink lends no stage (a device,
 * a FIFO, a sink that failed), goes to a buffer of the outbuf's own, handed
 * to the sink (pr_file_sink_write) at the next reserve. */
#ifndef PASSRUN_OUTBUF_H
#define PASSRUN_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/fileio.h"
#include "passrun/program.h"

#define OUT_CHUNK ((size_t)1 << 20)   /* the own buffer of a sink that lends no stage */

typedef struct outbuf {
	uint8_t *p;           /* own, or the sink's stage */
	size_t len, cap;
	size_t base;          /* the output's bytes before p[0], handed to the sink */
	pr_file_sink *sink;   /* NULL: p holds the whole output */
	uint8_t *own;         /* allocated here: without a sink, p is always own */
	size_t own_cap;
} outbuf;

/* p at the own buffer, with room for n bytes from len (grown, kept). */
static __attribute__((unused)) void out_use_own(outbuf *b, size_t n)
{
	if (b->own_cap - b->len < n) {
		size_t c = b->own_cap ? b->own_cap : 4096;
		while (c - b->len < n)
			c *= 2;
		b->own = pr_xrealloc(b->own, c);
		b->own_cap = c;
	}
	b->p = b->own;
	b->cap = b->own_cap;
}

/* Hands the bytes made so far to the sink: a stage's are in place already
 * and only counted, the own buffer's are written. */
static __attribute__((unused)) void out_flush(outbuf *b)
{
	if (b->p == b->own)
		pr_file_sink_write(b->sink, b->p, b->len);
	else
		pr_file_sink_advance(b->sink, b->len);
	b->base += b->len;
	b->len = 0;
}

/* p at the sink's stage when it has room for n; else at the own buffer,
 * sized to n only when it is a stage's tail that is too short, so that the
 * bytes after go to the next stage directly. */
static __attribute__((unused)) void out_lend(outbuf *b, size_t n)
{
	size_t room;
	uint8_t *stage = pr_file_sink_lend(b->sink, &room);
	if (stage && room >= n) {
		b->p = stage;
		b->cap = room;
		return;
	}
	out_use_own(b, stage || n > OUT_CHUNK ? n : OUT_CHUNK);
	if (stage)
		b->cap = n;
}

/* Makes room for n bytes after len: with a sink, hands it what is made and
 * starts again in the next room; without, grows the buffer (doubling). */
static __attribute__((noinline, unused)) void out_reserve(outbuf *b, size_t n)
{
	if (b->sink) {
		out_flush(b);
		out_lend(b, n);
	} else {
		out_use_own(b, n);
	}
}

/* Room for n more bytes at b->p + b->len. */
static inline uint8_t *out_room(outbuf *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len < n, 0))
		out_reserve(b, n);
	return b->p + b->len;
}

/* Appends n bytes. With a sink, a run longer than the room left goes to it
 * directly, which copies it into its stages. */
static __attribute__((unused)) void out_bytes(outbuf *b, const void *s, size_t n)
{
	if (b->sink && b->cap - b->len < n) {
		out_flush(b);   /* first: the order of the bytes */
		pr_file_sink_write(b->sink, s, n);
		b->base += n;
		out_lend(b, 0);
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

/* An outbuf that writes to sink, with its first room. */
static inline outbuf out_to_sink(pr_file_sink *sink)
{
	outbuf b = {.sink = sink};
	out_lend(&b, 0);
	return b;
}

/* Hands what is left to the sink and frees the own buffer. */
static __attribute__((unused)) void out_finish(outbuf *b)
{
	out_flush(b);
	free(b->own);
	*b = (outbuf){.base = b->base, .sink = b->sink};
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

/* The program written to sink, stage by stage: the bytes pr_binary_write and
 * pr_text_print return (format.h), less the text's terminating NUL. Errors
 * are the writer's; the sink's own stay in it for pr_file_sink_commit. */
pr_err *pr_binary_write_sink(const pr_program *p, pr_file_sink *sink);
void pr_text_print_sink(const pr_program *p, pr_file_sink *sink);

#endif
