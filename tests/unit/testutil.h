/* testutil.h: helpers shared by the Criterion tests.
 *
 * tu_run runs a shell command (printf-style) and captures its exit status,
 * standard output and standard error. Paths: PASSRUN_SOURCE_DIR and
 * PASSRUN_BINARY_DIR are compiled in; PASSRUN_EXE is the passrun binary. */
#ifndef PASSRUN_TESTUTIL_H
#define PASSRUN_TESTUTIL_H

#include <stddef.h>

#include "passrun/program.h"

typedef struct tu_result {
	int status;   /* exit status; 128+N when killed by signal N */
	char *out;    /* standard output, NUL-terminated */
	char *err;    /* standard error */
} tu_result;

tu_result tu_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tu_result_free(tu_result *r);

/* Reads a whole file (NUL-terminated); NULL when it cannot. */
char *tu_read_file(const char *path, size_t *len);
/* Writes text to a fresh file under a per-process temporary folder and
 * returns its path (static storage, valid until the next call with the same name). */
const char *tu_write_temp(const char *name, const char *text);
const char *tu_temp_dir(void);
/* examples/gen/gen_decoder.py --nodes N written under tu_temp_dir; its path
 * (static storage, valid until the next call). */
const char *tu_gen_decoder(int nodes);
/* Parses text, failing the test with the error's message if it does not parse. */
pr_program *tu_parse(const char *text);
/* Makes the device text (TYPE[:INDEX]) s's device; false if it is not one. */
bool tu_set_device(pr_spec *s, const char *text);
/* Counts occurrences of needle in haystack. */
int tu_count(const char *haystack, const char *needle);

#endif
