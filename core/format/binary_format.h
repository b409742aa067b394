/* binary_format.h: private to the binary format (core/binary_*.c).
 *
 * The constants of the layout documented byte by byte in
 * docs/binary-format.md, and the limits the loader holds a file to. Every
 * multi-byte field is little-endian. */
#ifndef PASSRUN_BINARY_FORMAT_H
#define PASSRUN_BINARY_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "passrun/format.h"

#define PRB_VERSION 1u
#define PRB_BYTE_ORDER 0x0A0B0C0Du       /* reads back as this only in little-endian */
#define PRB_HEADER_SIZE 64u
#define PRB_SECTION_ENTRY_SIZE 24u
#define PRB_ALIGN 64u                    /* data section and every segment */

/* Section kinds, each present exactly once. */
enum {
	PRB_SEC_SCHEMAS = 1,
	PRB_SEC_BLOBS = 2,
	PRB_SEC_DELEGATES = 3,
	PRB_SEC_METHODS = 4,
	PRB_SEC_DATA = 5,
	PRB_SEC_COUNT = 5,
};

#define PRB_NO_STRING 0xFFFFFFFFu        /* an absent optional string */
#define PRB_MAX_STRING PR_MAX_STRING_BYTES   /* bytes in one string (format.h) */
#define PRB_MAX_LIST_DEPTH 32            /* nested argument lists */
#define PRB_MAX_COUNT 0x7FFFFFFFu        /* anything counted in an int */

/* The fewest bytes one record can take, so that a count is checked against
 * the bytes left before anything is allocated for it. */
#define PRB_MIN_NODE 6u      /* kind, name length, type kind */
#define PRB_MIN_SPEC 9u      /* dtype, rank, flags, reserved, device: length + index */
#define PRB_MIN_ARG 1u
#define PRB_MIN_SCHEMA 4u
#define PRB_MIN_BLOB 20u
#define PRB_MIN_DELEGATE 8u
#define PRB_MIN_METHOD 12u   /* name length, node count */
#define PRB_MIN_KV 8u

#define PRB_SPEC_HAS_MEM 0x01u

/* n bytes from s to q, inline for the short ones (a node's name, an
 * input's, written or loaded): a library call costs more than their copy.
 * Exactly n bytes are read and written, in moves that overlap. */
static inline void prb_copy_short(uint8_t *q, const void *s, size_t n)
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
	} else if (n < 4) {
		for (size_t i = 0; i < n; i++)
			q[i] = p[i];
	} else {
		memcpy(q, p, n);
	}
}

#endif
