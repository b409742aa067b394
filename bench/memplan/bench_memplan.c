/* bench_memplan.c: planned bytes against the lower bound, and planning time,
 * for every method of the programs named on the command line.
 *
 * It runs the memory-plan plugin's own code (planner.c's mp_plan_graph, the
 * function the pass calls) with the pass's defaults, then checks the result
 * with the core's plan checker and compares the planner's figures with
 * pr_plan_usage (what --stats=json prints). One markdown table row per arena:
 *   program | method | arena | tensors | planned | lower bound | ratio |
 *   aligned bound | ratio to it | order | lifetimes ms | plan ms
 * The plan time is mp_plan_graph's (lifetimes + every arena: the whole pass),
 * not parsing; lifetimes ms is the part pr_lifetimes_compute takes alone.
 *
 * usage: bench_memplan [--alignment N] [--device-alignment N] FILE.pg... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passrun/format.h"
#include "passrun/passrun.h"
#include "passrun/plan.h"
#include "passrun/verify.h"
#include "planner.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, f);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int bench_method(const char *file, pr_graph *g, const mp_graph_options *o)
{
	mp_arena_report reps[16];
	int n_reps = 0;
	double tl = now_ms();
	pr_lifetimes_free(pr_lifetimes_compute(g));
	double lifetimes_ms = now_ms() - tl;
	double t0 = now_ms();
	mp_plan_graph(g, o, reps, 16, &n_reps);
	double ms = now_ms() - t0;
	pr_arena_usage *u = NULL;
	int n_u = pr_plan_usage(g, &u);
	for (int a = 0; a < n_reps; a++) {
		const mp_result *r = &reps[a].result;
		char dev[PR_DEVICE_STR_MAX];
		for (int k = 0; k < n_u; k++)
			if (pr_device_equal(u[k].arena, reps[a].arena) &&
			    (u[k].planned_bytes != r->planned_bytes || u[k].lower_bound_bytes != r->lower_bound_bytes))
				fprintf(stderr, "%s: pr_plan_usage disagrees on %s\n", file, pr_device_str(reps[a].arena, dev));
		double ratio = r->lower_bound_bytes ? (double)r->planned_bytes / r->lower_bound_bytes : 1.0;
		double aratio = r->aligned_lower_bound ? (double)r->planned_bytes / r->aligned_lower_bound : 1.0;
		printf("| %s | %s | %s | %lld | %lld | %lld | %.4f | %lld | %.4f | %s%s (%d tried) | %.1f | %.1f |\n",
		       base_name(file), g->name, pr_device_str(reps[a].arena, dev), (long long)reps[a].n_items,
		       (long long)r->planned_bytes, (long long)r->lower_bound_bytes, ratio,
		       (long long)r->aligned_lower_bound, aratio, mp_order_names[r->best_order], r->first_fit ? ", first fit" : "",
		       r->orders_tried, lifetimes_ms, ms);
	}
	free(u);
	return 0;
}

static int bench_file(const char *path, const mp_graph_options *o)
{
	size_t len;
	char *text = read_all(path, &len);
	if (!text) {
		fprintf(stderr, "%s: cannot read\n", path);
		return 1;
	}
	pr_program *p = NULL;
	pr_err *err = pr_text_parse(path, text, len, &p);
	free(text);
	if (err) {
		fprintf(stderr, "%s\n", pr_err_message(err));
		pr_err_free(err);
		return 1;
	}
	for (int m = 0; m < p->n_methods; m++)
		bench_method(path, p->methods[m], o);
	pr_diags d;
	pr_diags_init(&d, path);
	int errors = pr_plan_check(p, &d, "bench");
	pr_diags_print(&d, 0, stderr);
	pr_diags_free(&d);
	pr_program_free(p);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	mp_graph_options o = { true, true, 16, 16 };
	int status = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--alignment") && i + 1 < argc)
			o.host_alignment = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--device-alignment") && i + 1 < argc)
			o.device_alignment = atoll(argv[++i]);
		else
			status |= bench_file(argv[i], &o);
	}
	return status;
}
