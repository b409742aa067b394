/* binary_format.h: private to the binary format (core/binary_*.c).
 *
 * The constants of the layout documented byte by byte in
 * docs/binary-format.md, and the limits the loader holds a file to. Every
 * multi-byte field is little-endian. */
#ifndef PASSRUN_BINARY_FORMAT_H
#define PASSRUN_BINARY_FORMAT_H

#include <stddef.h>
#include <stdint.h>

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

#endif
