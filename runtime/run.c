/* run.c: prt_runtime_execute, what `passrun --run --check` does (runtime.h).
 *
 * Loads the placed method on the chosen device and, with check, the original
 * method on the reference interpreter; gives both the same inputs (from .npy
 * files, else random from the seed and the input's name); calls both N times,
 * comparing every output of every call; reports the device layer's byte
 * counters, the time per call of the placed method, and the largest errors. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passrun/data.h"
#include "passrun/runtime.h"
#include "passrun/strbuf.h"
#include "rt.h"

bool prt_runtime_has_cuda(void) { return prt_cuda_available(); }

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Random values for input `name`: floats in [-1, 1); integers 0 or 1, which
 * are valid indices for any non-empty table. */
static prt_tensor random_input(const pr_spec *s, uint64_t seed, const char *name)
{
	int64_t n = pr_spec_numel(s);
	size_t es = pr_dtype_size(s->dtype);
	uint8_t *buf = pr_xmalloc((size_t)(n ? n : 1) * es);
	uint64_t key = seed ^ name_hash(name);
	for (int64_t i = 0; i < n; i++) {
		double v = pr_dtype_is_float(s->dtype) ? pr_random_value(s->dtype, key, (uint64_t)i)
						       : (double)(pr_random_bits(key, (uint64_t)i) & 1);
		pr_elem_store(s->dtype, buf + (size_t)i * es, v);
	}
	return prt_tensor_make(s->dtype, s->rank, s->shape, buf);
}

static const prt_run_input *given_input(const prt_run_options *o, const char *name)
{
	for (int i = 0; i < o->n_inputs; i++)
		if (strcmp(o->inputs[i].name, name) == 0)
			return &o->inputs[i];
	return NULL;
}

static int find_input(const prt_exec *e, const char *name)
{
	for (int i = 0; i < prt_exec_n_inputs(e); i++)
		if (strcmp(prt_exec_input_name(e, i), name) == 0)
			return i;
	return -1;
}

/* "f32[2,3]", for messages. */
static void type_text(char *buf, size_t n, pr_dtype t, int rank, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "%s[", pr_dtype_name(t));
	for (int d = 0; d < rank && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)shape[d]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

/* The array in a file must be what the input declares: the message says
 * both (it used to give only the dtype and the rank). */
static pr_err *check_given(const prt_run_input *g, const pr_spec *s, const prt_tensor *t)
{
	if (t->dtype == s->dtype && t->rank == s->rank &&
	    !memcmp(t->shape, s->shape, sizeof(int64_t) * (size_t)s->rank))
		return NULL;
	char want[PR_MAX_RANK * 21 + 16], got[PR_MAX_RANK * 21 + 16];
	type_text(want, sizeof want, s->dtype, s->rank, s->shape);
	type_text(got, sizeof got, t->dtype, t->rank, t->shape);
	return pr_err_new("%s holds %s; the input is declared %s", g->path, got, want);
}

/* Sets every input of run (and the same-named one of ref). Bad input files
 * set *status to 2. */
static pr_err *set_inputs(prt_exec *run, prt_exec *ref, const prt_run_options *o, int *status)
{
	for (int i = 0; i < o->n_inputs; i++)
		if (find_input(run, o->inputs[i].name) < 0) {
			*status = 2;
			return pr_err_new("--input %s: the method has no input named '%s'",
					  o->inputs[i].name, o->inputs[i].name);
		}
	for (int i = 0; i < prt_exec_n_inputs(run); i++) {
		const char *name = prt_exec_input_name(run, i);
		const pr_spec *s = &prt_exec_input(run, i)->type.tensor;
		const prt_run_input *g = given_input(o, name);
		prt_tensor t = {0};
		pr_err *err = NULL;
		*status = g ? 2 : 5;   /* a bad file or shape is the user's; else ours */
		if (g && !(err = prt_npy_read(g->path, &t)))
			err = check_given(g, s, &t);
		else if (!g)
			t = random_input(s, o->seed, name);
		if (!err)
			err = prt_exec_set_input(run, i, &t);
		int j = ref ? find_input(ref, name) : -1;
		if (!err && ref && j < 0)
			err = pr_err_new("the original program has no input '%s'", name);
		if (!err && ref)
			err = prt_exec_set_input(ref, j, &t);
		if (!err || g)
			free(t.storage);
		if (err)
			return g ? pr_err_wrap(err, "--input %s", name) : err;
	}
	*status = 0;
	return NULL;
}

static const char *output_name(const prt_exec *e, int i)
{
	const pr_node *n = prt_exec_output_node(e, i);
	return n && n->name ? n->name : "?";
}

/* Integer and bool outputs must be equal, not close: through a double, two
 * i64 values beyond 2^53 that differ by one compare equal. Records the error
 * as a float comparison would. */
static bool int_mismatch(const uint8_t *pa, pr_dtype ta, const uint8_t *pb, pr_dtype tb,
			 prt_run_report *r)
{
	int64_t x = pr_elem_load_i64(ta, pa), y = pr_elem_load_i64(tb, pb);
	if (x == y)
		return false;
	double d = fabs((double)x - (double)y);
	d = d > 0 ? d : 1;   /* the difference rounded away */
	r->max_abs_err = fmax(r->max_abs_err, d);
	r->max_rel_err = fmax(r->max_rel_err, y ? d / fabs((double)y) : d);
	return true;
}

/* As numpy.allclose(equal_nan=True): NaN matches only NaN, an infinity only
 * the same infinity, finite values when |x - y| <= atol + rtol*|y| (a finite
 * threshold: the test alone is never true for NaN and always true for an
 * infinite y). A non-finite mismatch makes the largest errors infinite;
 * matching NaNs and infinities add no error. */
static bool float_mismatch(double x, double y, double atol, double rtol, prt_run_report *r)
{
	bool bad;
	double d = 0, rel = 0;
	if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
		bad = !(isnan(x) && isnan(y)) && x != y;
		d = rel = bad ? INFINITY : 0;
	} else {
		d = fabs(x - y);   /* may overflow to inf: still a mismatch */
		rel = y != 0 ? d / fabs(y) : d;
		bad = d > atol + rtol * fabs(y);
	}
	r->max_abs_err = fmax(r->max_abs_err, d);
	r->max_rel_err = fmax(r->max_rel_err, rel);
	return bad;
}

/* Compares output i of one call; records the largest errors and the first
 * mismatch (integers and bools exactly). */
static pr_err *compare_output(prt_exec *run, prt_exec *ref, int i, int call, const prt_run_options *o,
			      prt_run_report *r)
{
	prt_tensor a, b;
	pr_err *err = prt_exec_output(run, i, &a);
	if (err)
		return err;
	if ((err = prt_exec_output(ref, i, &b))) {
		free(a.storage);
		return err;
	}
	double atol = o->atol > 0 || o->rtol > 0 ? o->atol : 1e-5;
	double rtol = o->atol > 0 || o->rtol > 0 ? o->rtol : 1e-4;
	int64_t n = prt_tensor_numel(&a);
	bool same_shape = a.rank == b.rank && n == prt_tensor_numel(&b) &&
			  memcmp(a.shape, b.shape, sizeof(int64_t) * (size_t)a.rank) == 0;
	if (!same_shape && r->match) {
		r->match = false;
		snprintf(r->mismatch, sizeof r->mismatch, "output %d (%s) call %d: shapes differ", i,
			 output_name(run, i), call + 1);
	}
	bool exact = !pr_dtype_is_float(a.dtype) && !pr_dtype_is_float(b.dtype);
	for (int64_t j = 0; same_shape && j < n; j++) {
		const uint8_t *pa = a.data + j * (int64_t)pr_dtype_size(a.dtype);
		const uint8_t *pb = b.data + j * (int64_t)pr_dtype_size(b.dtype);
		if (exact && int_mismatch(pa, a.dtype, pb, b.dtype, r) && r->match) {
			r->match = false;
			snprintf(r->mismatch, sizeof r->mismatch,
				 "output %d (%s) call %d element %lld: %lld, reference %lld", i,
				 output_name(run, i), call + 1, (long long)j,
				 (long long)pr_elem_load_i64(a.dtype, pa),
				 (long long)pr_elem_load_i64(b.dtype, pb));
		}
		if (exact)
			continue;
		double x = pr_elem_load(a.dtype, pa), y = pr_elem_load(b.dtype, pb);
		if (float_mismatch(x, y, atol, rtol, r) && r->match) {
			r->match = false;
			snprintf(r->mismatch, sizeof r->mismatch,
				 "output %d (%s) call %d element %lld: %.9g, reference %.9g", i,
				 output_name(run, i), call + 1, (long long)j, x, y);
		}
	}
	free(a.storage);
	free(b.storage);
	return NULL;
}

static pr_err *write_outputs(prt_exec *run, const char *dir, const char *method)
{
	for (int i = 0; i < prt_exec_n_outputs(run); i++) {
		prt_tensor t;
		pr_err *err = prt_exec_output(run, i, &t);
		if (err)
			return err;
		char *path = pr_xasprintf("%s/%s.%d.npy", dir, method, i);
		err = prt_npy_write(path, &t);
		free(path);
		free(t.storage);
		if (err)
			return err;
	}
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *pick_method(const pr_program *p, const prt_run_options *o)
{
	if (o->method)
		return o->method;
	if (pr_program_find_method(p, "forward"))
		return "forward";
	return p->n_methods ? p->methods[0]->name : "forward";
}

static pr_err *calls(prt_exec *run, prt_exec *ref, const prt_run_options *o, prt_run_report *r)
{
	double ms = 0;
	int64_t h2d = 0, d2h = 0;
	for (int c = 0; c < r->iterations; c++) {
		double t0 = now_ms();
		pr_err *err = prt_exec_run(run);
		ms += now_ms() - t0;
		if (err)
			return pr_err_wrap(err, "call %d", c + 1);
		int64_t a, b;
		prt_exec_call_bytes(run, &a, &b);
		h2d += a, d2h += b;
		if (!ref)
			continue;
		if ((err = prt_exec_run(ref)))
			return pr_err_wrap(err, "reference interpreter, call %d", c + 1);
		if (prt_exec_n_outputs(run) != prt_exec_n_outputs(ref))
			return pr_err_new("the placed method returns %d values, the original %d",
					  prt_exec_n_outputs(run), prt_exec_n_outputs(ref));
		for (int i = 0; i < prt_exec_n_outputs(run); i++)
			if ((err = compare_output(run, ref, i, c, o, r)))
				return err;
	}
	r->ms_per_call = ms / r->iterations;
	r->h2d_bytes_per_call = h2d / r->iterations;
	r->d2h_bytes_per_call = d2h / r->iterations;
	return NULL;
}

pr_err *prt_runtime_execute(const pr_program *original, const pr_program *placed,
			   const prt_run_options *o, prt_run_report *r)
{
	memset(r, 0, sizeof *r);
	const char *device = o->device ? o->device : prt_cuda_available() ? "cuda" : "sim";
	const char *method = pick_method(placed, o);
	snprintf(r->device, sizeof r->device, "%s", device);
	snprintf(r->method, sizeof r->method, "%s", method);
	r->iterations = o->iterations < 1 ? 1 : o->iterations;
	r->checked = o->check;
	r->match = true;
	r->exit_status = 5;
	prt_exec *run = NULL, *ref = NULL;
	prt_exec_options eo = {.device = device};
	pr_err *err = prt_exec_load(placed, method, &eo, &run);
	if (!err && o->check) {
		prt_exec_options ro = {.reference = true};
		err = original ? prt_exec_load(original, method, &ro, &ref)
			       : pr_err_new("--check needs the original program");
		if (err)
			err = pr_err_wrap(err, "reference interpreter");
	}
	if (!err) {
		r->load_h2d_bytes = prt_exec_load_bytes(run);
		int status = 0;
		err = set_inputs(run, ref, o, &status);
		if (err)
			r->exit_status = status ? status : 5;
	}
	if (!err && !(err = calls(run, ref, o, r)) && o->output_dir &&
	    (err = write_outputs(run, o->output_dir, method)))
		r->exit_status = 2;   /* an output that cannot be written, as for -o */
	if (!err)
		r->exit_status = r->match ? 0 : 4;
	else
		r->match = false;   /* nothing was compared to the end */
	prt_exec_free(run);
	prt_exec_free(ref);
	return err;
}

static void json_error(FILE *out, const char *key, double v)
{
	if (isinf(v))
		fprintf(out, "\"%s\": null, ", key);
	else
		fprintf(out, "\"%s\": %.9g, ", key, v);
}

void prt_run_report_json(const prt_run_report *r, FILE *out)
{
	pr_strbuf b;   /* names escaped as every JSON string passrun prints */
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "{\"device\": ");
	pr_strbuf_json_string(&b, r->device);
	pr_strbuf_puts(&b, ", \"method\": ");
	pr_strbuf_json_string(&b, r->method);
	fprintf(out, "%s, \"iterations\": %d, ", b.data, r->iterations);
	pr_strbuf_free(&b);
	/* JSON has no infinity: an infinite error (a NaN or an infinity where the
	 * other side has none) prints as null, not as a huge number. */
	if (r->checked) {
		fprintf(out, "\"match\": %s, ", r->match ? "true" : "false");
		json_error(out, "max_abs_err", r->max_abs_err);
		json_error(out, "max_rel_err", r->max_rel_err);
	} else {
		fprintf(out, "\"match\": null, ");
	}
	fprintf(out, "\"h2d_bytes_per_call\": %lld, \"d2h_bytes_per_call\": %lld, "
		     "\"load_h2d_bytes\": %lld, \"ms_per_call\": %.6f}",
		(long long)r->h2d_bytes_per_call, (long long)r->d2h_bytes_per_call,
		(long long)r->load_h2d_bytes, r->ms_per_call);
}
