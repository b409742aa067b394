/* bench_executor: the executor's overhead per node.
 *
 * Builds a host-only method of N tiny ops (f32[1] adds and muls chained
 * through the previous result, N = 10^5 by default), loads it once, and
 * times CALLS calls (process CPU time). Every op touches one element, so the time per node is
 * almost all executor overhead: the instruction loop, argument resolution
 * and the kernel's setup. Prints ns per node; the target is under 100.
 *
 * Usage: bench_executor [N] [CALLS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passrun/format.h"
#include "passrun/strbuf.h"
#include "rt.h"

/* CPU time of this process: less disturbed by other work on the machine
 * than wall time (the calls are single-threaded and do no I/O). */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *program_text(long n)
{
	size_t cap = (size_t)n * 64 + 512, len = 0;
	char *s = malloc(cap);
	len += (size_t)snprintf(s + len, cap - len,
		"passrun 1\n"
		"op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
		"op aten::mul.Tensor(Tensor self, Tensor other) -> Tensor\n"
		"method @forward {\n"
		"  %%x: f32[1] = input user \"x\"\n"
		"  %%v0: f32[1] = aten::add.Tensor(%%x, %%x)\n");
	for (long i = 1; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "  %%v%ld: f32[1] = aten::%s(%%v%ld, %%x)\n", i,
					i % 2 ? "mul.Tensor" : "add.Tensor", i - 1);
	snprintf(s + len, cap - len, "  return %%v%ld\n}\n", n - 1);
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int calls = argc > 2 ? atoi(argv[2]) : 20;
	if (n < 1 || calls < 1) {
		fprintf(stderr, "usage: bench_executor [N >= 1] [CALLS >= 1]\n");
		return 2;
	}
	char *text = program_text(n);
	pr_program *p = NULL;
	pr_err *err = pr_text_parse("bench.pg", text, strlen(text), &p);
	free(text);
	prt_exec *e = NULL;
	prt_exec_options o = {.device = "sim"};
	if (!err)
		err = prt_exec_load(p, "forward", &o, &e);
	float one = 1.0f;
	int64_t shape[1] = {1};
	prt_tensor x = prt_tensor_make(PR_F32, 1, shape, &one);
	if (!err)
		err = prt_exec_set_input(e, 0, &x);
	if (!err)
		err = prt_exec_run(e);   /* warm-up */
	double t0 = now_s();
	for (int c = 0; !err && c < calls; c++)
		err = prt_exec_run(e);
	double dt = now_s() - t0;
	if (err) {
		fprintf(stderr, "bench_executor: %s\n", pr_err_message(err));
		return 1;
	}
	printf("nodes %ld, calls %d, %.1f ns per node, %.3f ms per call\n", n, calls,
	       dt / calls / (double)n * 1e9, dt / calls * 1e3);
	prt_exec_free(e);
	pr_program_free(p);
	return 0;
}
