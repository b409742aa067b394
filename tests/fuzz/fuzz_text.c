/* fuzz_text.c: libFuzzer target for the text parser (issue 7).
 *
 * Any bytes: pr_text_parse must return a program or an error, never crash or
 * leak. When it returns a program, printing it and parsing the print must
 * succeed and print the same text again (the printer's output is a fixed
 * point), and the binary writer must accept it and the loader read it back.
 * A difference aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pr_program *p = NULL;
	pr_err *e = pr_text_parse("fuzz.pg", (const char *)data, size, &p);
	if (e) {
		pr_err_free(e);
		return 0;
	}
	size_t len1, len2;
	char *t1 = pr_text_print(p, &len1);
	pr_program *q = NULL;
	e = pr_text_parse("print.pg", t1, len1, &q);
	if (e) {
		fprintf(stderr, "the print does not parse: %s\n%.*s\n", pr_err_message(e), (int)len1, t1);
		abort();
	}
	char *t2 = pr_text_print(q, &len2);
	if (len1 != len2 || memcmp(t1, t2, len1)) {
		fprintf(stderr, "print is not a fixed point:\n%.*s\n---\n%.*s\n", (int)len1, t1,
			(int)len2, t2);
		abort();
	}
	uint8_t *bin = NULL;
	size_t blen = 0;
	e = pr_binary_write(p, &bin, &blen);
	if (!e) {
		pr_program *r = NULL;
		e = pr_binary_load("fuzz.bin", bin, blen, false, &r);
		if (e) {
			fprintf(stderr, "the binary of a parsed program does not load: %s\n",
				pr_err_message(e));
			abort();
		}
		pr_program_free(r);
	}
	pr_err_free(e);
	free(bin);
	free(t1);
	free(t2);
	pr_program_free(p);
	pr_program_free(q);
	return 0;
}
