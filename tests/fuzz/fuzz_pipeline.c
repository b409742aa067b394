/* fuzz_pipeline.c: libFuzzer target for the YAML pipeline loader (issue 7).
 *
 * Any bytes: pr_pipeline_parse_yaml must return a pipeline or an error,
 * never crash or leak; a pipeline it returns must print as canonical YAML
 * that parses again. Passes and options are not validated here (that needs
 * the plugins); this is the syntax and shape layer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/manager.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pr_pipeline *pl = NULL;
	pr_err *e = pr_pipeline_parse_yaml("fuzz.yaml", (const char *)data, size, &pl);
	if (e) {
		pr_err_free(e);
		return 0;
	}
	char *yaml = pr_pipeline_to_yaml(pl);
	pr_pipeline *again = NULL;
	e = pr_pipeline_parse_yaml("print.yaml", yaml, strlen(yaml), &again);
	if (e) {
		fprintf(stderr, "canonical YAML does not parse: %s\n%s\n", pr_err_message(e), yaml);
		abort();
	}
	if (pr_pipeline_n_passes(again) != pr_pipeline_n_passes(pl)) {
		fprintf(stderr, "canonical YAML has %d passes, the pipeline %d\n%s\n",
			pr_pipeline_n_passes(again), pr_pipeline_n_passes(pl), yaml);
		abort();
	}
	pr_pipeline_free(again);
	free(yaml);
	pr_pipeline_free(pl);
	return 0;
}
