/* format.h: reading and writing programs, as text (.pg) and binary (.bin).
 *
 * The formats are public contracts (docs/text-format.md,
 * docs/binary-format.md). Loaders trust nothing: a bad file is an error whose
 * message starts with FILE:LINE:COL (text) or FILE: byte OFFSET (binary) and
 * says what was expected. Text -> binary -> text is lossless, and printing a
 * parsed program is a fixed point. */
#ifndef PASSRUN_FORMAT_H
#define PASSRUN_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "passrun/fileio.h"
#include "passrun/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest string (a name, a quoted string, a schema) either format
 * holds, in bytes: the text parser, the binary writer and the binary loader
 * all refuse a longer one, so that what converts also loads. */
#define PR_MAX_STRING_BYTES (16u << 20)

/* Text. filename is only used in messages. */
pr_err *pr_text_parse(const char *filename, const char *text, size_t len, pr_program **out);
char *pr_text_print(const pr_program *p, size_t *len);   /* malloc'd */

/* Binary. */
#define PR_BINARY_MAGIC "PASSRUN\0"
bool pr_binary_sniff(const uint8_t *buf, size_t len);
/* Serializes into a malloc'd buffer. */
pr_err *pr_binary_write(const pr_program *p, uint8_t **out, size_t *len);
/* Loads from memory. The program copies what it needs unless borrow is true,
 * in which case blobs point into buf, which must outlive the program. */
pr_err *pr_binary_load(const char *filename, const uint8_t *buf, size_t len,
		       bool borrow, pr_program **out);
/* Where the DATA section of the binary file buf lies: the only bytes a
 * borrowing load keeps pointing into. false when the header or section
 * table is malformed. */
bool pr_binary_data_range(const uint8_t *buf, size_t len, size_t *off, size_t *size);

/* Files: reads by content (text or binary; binary files are mmapped and
 * constant data points into the mapping). */
pr_err *pr_program_load_file(const char *path, pr_program **out);
/* Writes text or binary by extension (.bin is binary, anything else text),
 * with pr_file_write_atomic (fileio.h: atomic, follows symbolic links, keeps
 * the mode, writes a device or FIFO in place). */
pr_err *pr_program_save_file(const pr_program *p, const char *path);

#ifdef __cplusplus
}
#endif
#endif
