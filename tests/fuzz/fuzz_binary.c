/* fuzz_binary.c: libFuzzer target for the binary loader (issue 7).
 *
 * Any bytes: pr_binary_load (copying and borrowing) must return a program or
 * an error, never read out of bounds, crash or leak. A program it returns
 * must print as text that parses again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/program.h"

static void load(const uint8_t *data, size_t size, bool borrow)
{
	/* A heap copy of exactly size bytes, so ASan sees any read past the end. */
	uint8_t *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	pr_program *p = NULL;
	pr_err *e = pr_binary_load("fuzz.bin", buf, size, borrow, &p);
	if (e) {
		pr_err_free(e);
		free(buf);
		return;
	}
	size_t len;
	char *text = pr_text_print(p, &len);
	pr_program *q = NULL;
	e = pr_text_parse("print.pg", text, len, &q);
	if (e) {
		fprintf(stderr, "a loaded binary prints as text that does not parse: %s\n%.*s\n",
			pr_err_message(e), (int)len, text);
		abort();
	}
	pr_program_free(q);
	free(text);
	pr_program_free(p);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load(data, size, false);
	load(data, size, true);
	return 0;
}
