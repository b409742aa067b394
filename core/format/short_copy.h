/* short_copy.h: private to core/format (the binary loader and writer, the
 * text printer): the copy of the short byte runs they move per node. */
#ifndef PASSRUN_SHORT_COPY_H
#define PASSRUN_SHORT_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* n bytes from s to q, inline for the short ones (a node's name, an
 * input's, a spec's text, a number: written or loaded in either format): a
 * library call costs more than their copy.
 * Exactly n bytes are read and written, in moves that overlap. */
static inline void copy_short(uint8_t *q, const void *s, size_t n)
{
	const uint8_t *p = s;
	uint64_t a, b;
	uint32_t c, d;
	if (n >= 8 && n <= 16) {
		memcpy(&a, p, 8);
		memcpy(&b, p + n - 8, 8);
		memcpy(q, &a, 8);
		memcpy(q + n - 8, &b, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(&c, p, 4);
		memcpy(&d, p + n - 4, 4);
		memcpy(q, &c, 4);
		memcpy(q + n - 4, &d, 4);
	} else if (n > 16 && n <= 32) {
		uint64_t e, f;
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&e, p + n - 16, 8);
		memcpy(&f, p + n - 8, 8);
		memcpy(q, &a, 8);
		memcpy(q + 8, &b, 8);
		memcpy(q + n - 16, &e, 8);
		memcpy(q + n - 8, &f, 8);
	} else if (n >= 2 && n < 4) {
		uint16_t g, h;
		memcpy(&g, p, 2);
		memcpy(&h, p + n - 2, 2);
		memcpy(q, &g, 2);
		memcpy(q + n - 2, &h, 2);
	} else if (n == 1) {
		*q = *p;
	} else if (n > 32) {
		memcpy(q, p, n);
	}
}

#endif
