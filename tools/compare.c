/* compare.c: passrun compare, a researcher's comparison (and sweep) of
 * pipelines.
 *
 *   passrun compare [--pipelines baseline,cuda,'ablate/?*'] [--grid NAME=V1,V2]...
 *                   [--set ...] [--format=table|json|csv|jsonl] [-o FILE] [-j N]
 *                   [--device=sim] PROGRAM...
 *
 * The cells are every program (a glob is expanded here too) x every pipeline
 * (a glob names the shipped pipelines it matches) x every point of the grid
 * (the cartesian product of the --grid axes, the last one varying fastest).
 * Each cell runs as its own passrun session (tool.h: the same steps as
 * `passrun --pipeline NAME PROGRAM --check --set ...`), so a row shows exactly
 * what that command would do; run_cell reduces the session to a cell_row.
 * From the placed program it reads, per method, the copy nodes (schema traits
 * h2d and d2h, as --stats=json counts them), the bytes they move per call, the
 * bytes loaded once (device-resident constants) and the planned memory per
 * arena (pr_plan_usage); from the session, the diagnostics counted per code,
 * the provenance record and, when the runtime is built, the --check outcome.
 * A cell whose passes did not all run has no counts (placed: false): a partly
 * placed program says nothing about the pipeline.
 *
 * The result of each cell is not verified before it runs (passrun's
 * --disable-verify): baseline reproduces ExecuTorch's copies, which the
 * verifier refuses, and the row is to show what the runtime does with them.
 *
 * A --set or --grid assignment PASS.NAME=VALUE applies to the pipelines that
 * run PASS and is left out of the others (their provenance lists what was
 * applied); naming a pass that no pipeline runs is a bad command line.
 *
 * Each cell runs in a child process of its own (fork), -j N of them at a
 * time, and sends its row back through a pipe (row_io); the rows are printed
 * in cell order, so the output is the same whatever N. A pass that crashes
 * makes its row say "crashed in pass NAME (signal N)" (the crash handler
 * writes the pass's name on the pipe, manager.h) with exit 128+N, and the
 * other cells still run.
 *
 * Every pipeline name is resolved before anything runs: an unknown one is a
 * bad command line (exit 2) with the nearest shipped name. Diagnostics are
 * counted in the rows; --diagnostics prints each cell's on stderr too, under
 * a "== LABEL ==" line, in cell order. Exit status: 0 with the rows carrying
 * each cell's status; 2 when every cell failed on the command line's account
 * (a bad --set value, a plugin); for the table and --format=json, 3 when a
 * program cannot be read, as for a single run. */
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compare.h"
#include "passrun/fileio.h"
#include "passrun/plan.h"
#include "passrun/strbuf.h"

/* ---- what one cell did ----------------------------------------------------- */

static bool is_loaded_constant(const pr_node *n)
{
	if (n->kind != PR_NODE_INPUT || n->of_kind.input->kind == PR_INPUT_USER)
		return false;
	const pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
	return s && !pr_spec_on_host(s);
}

static void count_method(pr_graph *g, method_row *m)
{
	m->name = pr_xstrdup(g->name);
	pr_graph_for_each(g, n) {
		const pr_schema *s = pr_node_schema(n);
		if (s && s->h2d) {
			m->h2d++;
			m->h2d_bytes += pr_copy_bytes(n);
		} else if (s && s->d2h) {
			m->d2h++;
			m->d2h_bytes += pr_copy_bytes(n);
		} else if (is_loaded_constant(n)) {
			m->load_bytes += pr_spec_storage_bytes(&n->type.tensor);
		}
	}
	m->n_arenas = pr_plan_usage(g, &m->arenas);
}

/* Codes in the order first reported, each with its count. */
static void count_codes(const pr_diags *d, cell_row *row)
{
	row->codes = pr_xcalloc((size_t)d->n + 1, sizeof *row->codes);
	for (int i = 0; i < d->n; i++) {
		int k = 0;
		while (k < row->n_codes && strcmp(row->codes[k].code, d->items[i].code))
			k++;
		if (k == row->n_codes)
			row->codes[row->n_codes++].code = pr_xstrdup(d->items[i].code);
		row->codes[k].n++;
	}
}

static const char *check_word(const run_outcome *r, int status, bool have_runtime)
{
	if (!have_runtime)
		return "-";
	if (!r->ran)
		return "not run";
	if (status == EXIT_MISMATCH)
		return "mismatch";
	if (status == EXIT_RUNTIME)
		return strstr(r->message, "refusing") ? "refused" : "fault";
	if (status != EXIT_OK)
		return "error";
	return r->checked ? "match" : "ran";
}

/* The first error (a warning under --werror): why the passes stopped. */
static const pr_diag *first_error(const pr_diags *d)
{
	for (int i = 0; i < d->n; i++)
		if (d->items[i].severity == PR_SEV_ERROR)
			return &d->items[i];
	for (int i = 0; d->werror && i < d->n; i++)
		if (d->items[i].severity == PR_SEV_WARNING)
			return &d->items[i];
	return NULL;
}

static char *times_json(const pr_pass_report *rep, double *total)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_putc(&b, '[');
	*total = 0;
	for (int i = 0; i < rep->n; i++) {
		const pr_pass_record *r = &rep->items[i];
		*total += r->ms;
		pr_strbuf_puts(&b, i ? ", {\"name\": " : "{\"name\": ");
		pr_strbuf_json_string(&b, r->name);
		pr_strbuf_printf(&b, ", \"ms\": %.4f, \"pass\": %s}", r->ms, r->is_pass ? "true" : "false");
	}
	pr_strbuf_putc(&b, ']');
	return pr_strbuf_take(&b);
}

static char *capture_times(const pr_pass_report *rep)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return pr_xstrdup("");
	pr_pass_report_print_times(rep, f);
	fclose(f);
	return text;
}

/* The row of a finished session. */
static void fill_row(session *s, int st, bool have_runtime, cell_row *row)
{
	row->status = st;
	row->status_word = pr_xstrdup(status_word(s, st));
	row->check = pr_xstrdup(check_word(&s->run, st, have_runtime));
	row->placed = s->placed;
	if (s->prog && s->placed) {
		row->n_methods = s->prog->n_methods;
		row->methods = pr_xcalloc((size_t)row->n_methods + 1, sizeof *row->methods);
		for (int m = 0; m < s->prog->n_methods; m++)
			count_method(s->prog->methods[m], &row->methods[m]);
	}
	row->warnings = pr_diags_count(&s->diags, PR_SEV_WARNING);
	row->errors = pr_diags_count(&s->diags, PR_SEV_ERROR);
	count_codes(&s->diags, row);
	const pr_diag *err = first_error(&s->diags);
	row->first_error = pr_xstrdup(err ? err->code : "");
	row->message = pr_xstrdup(*s->run.message ? s->run.message : err ? err->message : s->error);
	row->device = pr_xstrdup(s->run.device);
	row->canonical = pr_xstrdup(s->pl ? pr_pipeline_name(s->pl) : row->pipeline);
	row->stats = s->o->stats_json ? session_stats(s, st) : NULL;
	row->provenance = session_provenance(s, st);
	if (s->o->time_passes) {
		row->times = capture_times(&s->rep);
		row->times_json = times_json(&s->rep, &row->ms);
	}
}

/* Runs one cell as `passrun --pipeline NAME PROGRAM --check --set ...` would;
 * po is that command's opts. */
static void run_cell(const opts *po, cell_row *row)
{
#ifdef PASSRUN_HAVE_RUNTIME
	bool have_runtime = true;
#else
	bool have_runtime = false;
#endif
	session s;
	session_init(&s, po);
	s.wants_provenance = true;   /* every row has its provenance */
	pr_diags_keep_messages(&s.diags, true);   /* count_codes reads every one */
	size_t log_len;
	s.log = po->diagnostics ? open_memstream(&row->log, &log_len) : NULL;
	if (s.log)
		fprintf(s.log, "== %s ==\n", row->label);
	int st = load_plugins(&s);
	if (!st)
		st = load_pipeline(&s);
	if (!st)
		st = process_program(&s);
	if (s.log)
		fclose(s.log);
	s.log = NULL;
	fill_row(&s, st, have_runtime, row);
	session_free(&s);
}

/* ---- the cells ------------------------------------------------------------- */

const char *grid_value(const sweep *w, int point, int k)
{
	for (int j = w->n_axes - 1; j > k; j--)
		point /= w->axes[j].n_values;
	return w->axes[k].values[point % w->axes[k].n_values];
}

/* "PASS.NAME=VALUE": the pass it names (malloc'd), or NULL for a pipeline
 * option. */
static char *assignment_pass(const char *a)
{
	size_t eq = strcspn(a, "=");
	const char *dot = memchr(a, '.', eq);
	return dot ? pr_xstrndup(a, (size_t)(dot - a)) : NULL;
}

/* The pipeline of a --pipelines name, for the passes it runs; NULL when it
 * cannot be read (its cells say why). */
static pr_pipeline *peek_pipeline(const char *name)
{
	pr_pipeline *pl = NULL;
	pr_err_free(pr_pipeline_load_named(name, &pl));
	return pl;
}

static bool applies(const char *assignment, const pr_pipeline *pl)
{
	char *pass = assignment_pass(assignment);
	bool yes = !pass || (pl && pr_pipeline_has_pass(pl, pass));
	free(pass);
	return yes;
}

/* The command line of cell c, its assignments in *sets (freed by the caller). */
static void cell_opts(const sweep *w, int c, pr_pipeline *const *pls, opts *po, char ***sets)
{
	int point = c % w->n_points, pipe = c / w->n_points % w->n_pipelines;
	*po = *w->o;
	po->compare = false;
	po->program = w->programs[c / w->n_points / w->n_pipelines];
	po->pipeline = w->pipelines[pipe];
	po->disable_verify = true;
#ifdef PASSRUN_HAVE_RUNTIME
	po->check = true;
#endif
	*sets = pr_xcalloc((size_t)w->n_axes + 1, sizeof **sets);
	po->n_sets = 0;
	for (int i = 0; i < w->o->n_sets; i++)
		if (applies(w->o->sets[i], pls[pipe]))
			po->sets[po->n_sets++] = w->o->sets[i];
	for (int k = 0; k < w->n_axes && po->n_sets < MAX_LIST; k++) {
		(*sets)[k] = pr_xasprintf("%s=%s", w->axes[k].name, grid_value(w, point, k));
		if (applies((*sets)[k], pls[pipe]))
			po->sets[po->n_sets++] = (*sets)[k];
	}
}

static void free_sets(const sweep *w, char **sets)
{
	for (int k = 0; k < w->n_axes; k++)
		free(sets[k]);
	free(sets);
}

static char *cell_label(const sweep *w, int c)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, w->pipelines[c / w->n_points % w->n_pipelines]);
	for (int k = 0; k < w->n_axes; k++)
		pr_strbuf_printf(&b, " %s=%s", w->axes[k].name, grid_value(w, c % w->n_points, k));
	return pr_strbuf_take(&b);
}

static void start_row(const sweep *w, int c, const opts *po, cell_row *row)
{
	memset(row, 0, sizeof *row);
	row->program = pr_xstrdup(po->program);
	row->pipeline = pr_xstrdup(po->pipeline);
	row->label = cell_label(w, c);
}

/* ---- running them, here or in N processes -------------------------------- */

/* A cell whose process died (pass: what the crash handler wrote on the
 * pipe, the crashing pass's name), or could not start (start_errno). */
static void crashed_row(cell_row *row, int wstatus, int start_errno, const char *pass)
{
	int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
	row->status = sig ? 128 + sig : WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	row->status_word = pr_xstrdup("crashed");
	row->check = pr_xstrdup("crashed");
	int n = (int)strcspn(pass, "\n");
	if (start_errno)
		row->message = pr_xasprintf("no process could be started for the cell: %s",
					    strerror(start_errno));
	else if (sig && n)
		row->message = pr_xasprintf("crashed in pass %.*s (signal %d)", n, pass, sig);
	else if (sig)
		row->message = pr_xasprintf("crashed (signal %d)", sig);
	else
		row->message = pr_xasprintf("the cell's process exited with %d before its row was "
					    "written", (int)row->status);
	row->first_error = pr_xstrdup("");
	row->device = pr_xstrdup("");
	row->canonical = pr_xstrdup(row->pipeline);
	row->provenance = pr_xstrdup("null");
}

typedef struct worker {
	pid_t pid;                   /* -1: the process could not be started */
	int fd, cell;
	int start_errno;
	pr_strbuf buf;
} worker;

static void worker_start(const sweep *w, int c, pr_pipeline *const *pls, worker *k)
{
	opts po;
	char **sets;
	cell_opts(w, c, pls, &po, &sets);
	int fds[2] = {-1, -1};
	fflush(stdout);
	fflush(stderr);
	pid_t pid = pipe(fds) == 0 ? fork() : -1;
	k->start_errno = pid < 0 ? errno : 0;
	if (pid == 0) {
		close(fds[0]);
		pr_crash_handler_install(fds[1]);
		cell_row row;
		start_row(w, c, &po, &row);
		run_cell(&po, &row);
		FILE *f = fdopen(fds[1], "wb");
		bool ok = f && row_io(f, &row, true) && fclose(f) == 0;
		_exit(ok ? 0 : 1);
	}
	k->pid = pid;
	k->cell = c;
	k->fd = pid > 0 ? fds[0] : -1;
	pr_strbuf_init(&k->buf);
	if (pid != 0 && fds[1] >= 0)
		close(fds[1]);
	if (pid < 0 && fds[0] >= 0)
		close(fds[0]);
	free_sets(w, sets);
}

/* Reads the finished worker's row into its cell. */
static void worker_finish(sweep *w, worker *k)
{
	int wstatus = 0;
	if (k->fd >= 0)
		close(k->fd);
	if (k->pid > 0)
		waitpid(k->pid, &wstatus, 0);
	cell_row *row = &w->rows[k->cell];
	FILE *f = k->pid > 0 && k->buf.len ? fmemopen(k->buf.data, k->buf.len, "rb") : NULL;
	cell_row got;
	memset(&got, 0, sizeof got);
	bool ok = f && WIFEXITED(wstatus) && !WEXITSTATUS(wstatus) && row_io(f, &got, false);
	if (f)
		fclose(f);
	if (ok) {
		/* What names the cell was set here, before the fork. */
		got.program = row->program;
		got.pipeline = row->pipeline;
		got.label = row->label;
		row->program = row->pipeline = row->label = NULL;
		row_free(row);
		*row = got;
	} else {
		row_free(&got);
		pr_strbuf_putc(&k->buf, '\0');   /* a crash leaves the pass's name there */
		crashed_row(row, k->pid > 0 ? wstatus : 0, k->start_errno, k->buf.data);
	}
	pr_strbuf_free(&k->buf);
	k->pid = 0;
}

/* Drains the workers' pipes until one ends; returns its index. */
static int wait_one(worker *ws, int n)
{
	struct pollfd p[64];
	for (;;) {
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ws[i].fd, POLLIN, 0};
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			return 0;
		for (int i = 0; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[65536];
			ssize_t got = read(ws[i].fd, chunk, sizeof chunk);
			if (got <= 0)
				return i;
			pr_strbuf_add(&ws[i].buf, chunk, (size_t)got);
		}
	}
}

static void run_parallel(sweep *w, pr_pipeline *const *pls, int jobs)
{
	worker ws[64];
	int n = 0, next = 0;
	while (next < w->n_cells || n) {
		while (n < jobs && next < w->n_cells) {
			worker_start(w, next++, pls, &ws[n]);
			if (ws[n].fd < 0)
				worker_finish(w, &ws[n]);
			else
				n++;
		}
		if (!n)
			continue;
		int i = wait_one(ws, n);
		worker_finish(w, &ws[i]);
		ws[i] = ws[--n];
	}
}

static void run_cells(sweep *w, pr_pipeline *const *pls)
{
	w->rows = pr_xcalloc((size_t)w->n_cells + 1, sizeof *w->rows);
	for (int c = 0; c < w->n_cells; c++) {
		opts po;
		char **sets;
		cell_opts(w, c, pls, &po, &sets);
		start_row(w, c, &po, &w->rows[c]);
		free_sets(w, sets);
	}
	long jobs = w->o->jobs > 1 ? w->o->jobs : 1;
	run_parallel(w, pls, jobs > 64 ? 64 : (int)jobs);
}

/* ---- rows across a pipe ----------------------------------------------------- */

/* One layout for both directions, so writer and reader cannot disagree. */
static bool io_i64(FILE *f, int64_t *v, bool w)
{
	return w ? fwrite(v, sizeof *v, 1, f) == 1 : fread(v, sizeof *v, 1, f) == 1;
}

static bool io_bytes(FILE *f, void **p, size_t n, bool w)
{
	if (w)
		return !n || fwrite(*p, 1, n, f) == n;
	*p = pr_xcalloc(n + 1, 1);
	return !n || fread(*p, 1, n, f) == n;
}

/* A string (NULL travels as length -1). */
static bool io_str(FILE *f, char **s, bool w)
{
	int64_t n = w ? (*s ? (int64_t)strlen(*s) : -1) : 0;
	if (!io_i64(f, &n, w) || n < -1 || n > (int64_t)1 << 40)
		return false;
	if (n < 0) {
		*s = NULL;
		return true;
	}
	return io_bytes(f, (void **)s, (size_t)n, w);
}

static bool io_method(FILE *f, method_row *m, bool w)
{
	int64_t *nums[] = {&m->h2d, &m->d2h, &m->h2d_bytes, &m->d2h_bytes, &m->load_bytes,
			   &m->n_arenas};
	bool ok = io_str(f, &m->name, w);
	for (int i = 0; ok && i < 6; i++)
		ok = io_i64(f, nums[i], w);
	if (!ok || m->n_arenas < 0 || m->n_arenas > 1 << 20)
		return false;
	return io_bytes(f, (void **)&m->arenas, (size_t)m->n_arenas * sizeof *m->arenas, w);
}

bool row_io(FILE *f, cell_row *r, bool w)
{
	char **strs[] = {&r->status_word, &r->check, &r->first_error, &r->message, &r->device,
			 &r->provenance, &r->canonical, &r->stats, &r->times, &r->times_json,
			 &r->log};
	int64_t placed = r->placed, ms = 0;
	memcpy(&ms, &r->ms, sizeof ms);
	int64_t *nums[] = {&r->status, &placed, &r->warnings, &r->errors, &ms, &r->n_codes,
			   &r->n_methods};
	bool ok = true;
	for (size_t i = 0; ok && i < sizeof strs / sizeof *strs; i++)
		ok = io_str(f, strs[i], w);
	for (size_t i = 0; ok && i < sizeof nums / sizeof *nums; i++)
		ok = io_i64(f, nums[i], w);
	if (!ok || r->n_codes < 0 || r->n_codes > 1 << 20 || r->n_methods < 0 ||
	    r->n_methods > 1 << 20)
		return false;
	r->placed = placed;
	memcpy(&r->ms, &ms, sizeof ms);
	if (!w) {
		r->codes = pr_xcalloc((size_t)r->n_codes + 1, sizeof *r->codes);
		r->methods = pr_xcalloc((size_t)r->n_methods + 1, sizeof *r->methods);
	}
	for (int64_t i = 0; ok && i < r->n_codes; i++)
		ok = io_str(f, &r->codes[i].code, w) && io_i64(f, &r->codes[i].n, w);
	for (int64_t i = 0; ok && i < r->n_methods; i++)
		ok = io_method(f, &r->methods[i], w);
	return ok;
}

void row_free(cell_row *r)
{
	for (int64_t m = 0; m < r->n_methods && r->methods; m++) {
		free(r->methods[m].name);
		free(r->methods[m].arenas);
	}
	for (int64_t i = 0; i < r->n_codes && r->codes; i++)
		free(r->codes[i].code);
	char *strs[] = {r->program, r->pipeline, r->label, r->status_word, r->check,
			r->first_error, r->message, r->device, r->provenance, r->canonical,
			r->stats, r->times, r->times_json, r->log};
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
		free(strs[i]);
	free(r->methods);
	free(r->codes);
	memset(r, 0, sizeof *r);
}

/* ---- the command line's lists -------------------------------------------- */

static void push_name(char ***list, int *n, const char *name)
{
	*list = pr_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
	(*list)[(*n)++] = pr_xstrdup(name);
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Each PROGRAM, a glob expanded in name order (one that matches nothing
 * stays as written: its cells say it cannot be read). */
static void expand_programs(sweep *w)
{
	for (int i = 0; i < w->o->n_programs; i++) {
		glob_t g;
		if (glob(w->o->programs[i], GLOB_NOCHECK, NULL, &g) != 0) {
			push_name(&w->programs, &w->n_programs, w->o->programs[i]);
			continue;
		}
		for (size_t k = 0; k < g.gl_pathc; k++)
			push_name(&w->programs, &w->n_programs, g.gl_pathv[k]);
		globfree(&g);
	}
}

static int unknown_pipeline(const char *name, pr_err *e)
{
	char **shipped;
	int n_shipped = pr_pipeline_list_shipped(&shipped);
	const char *near = pr_nearest(name, (const char *const *)shipped, n_shipped);
	fprintf(stderr, "passrun compare: unknown pipeline '%s'%s%s%s\n%s\n", name,
		near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
		e ? pr_err_message(e) : "");
	pr_names_free(shipped, n_shipped);
	pr_err_free(e);
	return EXIT_USAGE;
}

/* A glob of shipped names ("ablate/?*" matches the ablations), or of .yaml files. */
static int expand_pipeline_glob(sweep *w, const char *pat)
{
	int before = w->n_pipelines;
	size_t n = strlen(pat);
	if (n > 5 && (!strcmp(pat + n - 5, ".yaml") || !strcmp(pat + n - 4, ".yml"))) {
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0)
			for (size_t k = 0; k < g.gl_pathc; k++)
				push_name(&w->pipelines, &w->n_pipelines, g.gl_pathv[k]);
		globfree(&g);
	} else {
		char **shipped;
		int n_shipped = pr_pipeline_list_shipped(&shipped);
		for (int k = 0; k < n_shipped; k++)
			if (!fnmatch(pat, shipped[k], FNM_PATHNAME))
				push_name(&w->pipelines, &w->n_pipelines, shipped[k]);
		pr_names_free(shipped, n_shipped);
	}
	if (w->n_pipelines > before)
		return EXIT_OK;
	return unknown_pipeline(pat, pr_err_new("--pipelines '%s' matches no pipeline", pat));
}

/* Every name must resolve before anything runs. */
static int expand_pipelines(sweep *w)
{
	char *buf = pr_xstrdup(w->o->compare_pipelines ? w->o->compare_pipelines : "baseline,cuda");
	int st = EXIT_OK;
	for (char *tok = strtok(buf, ","); tok && !st; tok = strtok(NULL, ",")) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		char *path = NULL;
		pr_err *e = is_glob(tok) ? NULL : pr_pipeline_find(tok, &path);
		free(path);
		if (is_glob(tok))
			st = expand_pipeline_glob(w, tok);
		else if (e)
			st = unknown_pipeline(tok, e);
		else
			push_name(&w->pipelines, &w->n_pipelines, tok);
	}
	free(buf);
	if (!st && !w->n_pipelines)
		st = usage_error("compare: --pipelines names no pipeline");
	return st;
}

/* "NAME=V1,V2": values split at commas outside braces ({forward: true, ...}). */
static int parse_axis(const char *text, grid_axis *a)
{
	const char *eq = strchr(text, '=');
	if (!eq || eq == text || !eq[1])
		return usage_error("--grid %s: expected NAME=V1,V2,...", text);
	a->name = pr_xstrndup(text, (size_t)(eq - text));
	const char *start = eq + 1;
	int depth = 0;
	for (const char *p = start;; p++) {
		depth += *p == '{' || *p == '[' ? 1 : *p == '}' || *p == ']' ? -1 : 0;
		if (*p && (*p != ',' || depth > 0))
			continue;
		a->values = pr_xrealloc(a->values, (size_t)(a->n_values + 1) * sizeof *a->values);
		a->values[a->n_values++] = pr_xstrndup(start, (size_t)(p - start));
		if (!*p)
			break;
		start = p + 1;
	}
	return EXIT_OK;
}

/* The grid (at most 1,000,000 cells, a guard against a runaway product). */
static int parse_grid(sweep *w)
{
	w->axes = pr_xcalloc((size_t)w->o->n_grid + 1, sizeof *w->axes);
	w->n_points = 1;
	for (int i = 0; i < w->o->n_grid; i++) {
		int st = parse_axis(w->o->grid[i], &w->axes[w->n_axes++]);
		if (st)
			return st;
		w->n_points *= w->axes[i].n_values;
		if (w->n_points > 1000000)
			return usage_error("--grid: more than 1000000 combinations");
	}
	if (w->o->n_sets + w->n_axes > MAX_LIST)
		return usage_error("compare: at most %d --set and --grid together", MAX_LIST);
	return EXIT_OK;
}

/* A PASS.NAME assignment must name a pass that some pipeline runs. */
static int check_pass_assignment(const sweep *w, pr_pipeline *const *pls, const char *what,
				 const char *a)
{
	char *pass = assignment_pass(a);
	bool hit = !pass;
	for (int i = 0; i < w->n_pipelines && !hit; i++)
		hit = pls[i] && pr_pipeline_has_pass(pls[i], pass);
	int st = hit ? EXIT_OK : usage_error("%s %s: no pipeline of --pipelines runs pass '%s'",
					     what, a, pass);
	free(pass);
	return st;
}

static int check_assignments(const sweep *w, pr_pipeline *const *pls)
{
	int st = EXIT_OK;
	for (int i = 0; i < w->o->n_sets && !st; i++)
		st = check_pass_assignment(w, pls, "--set", w->o->sets[i]);
	for (int k = 0; k < w->n_axes && !st; k++)
		st = check_pass_assignment(w, pls, "--grid", w->o->grid[k]);
	return st;
}

/* ---- the command ----------------------------------------------------------- */

static bool sweep_format(const opts *o)
{
	return o->format && (!strcmp(o->format, "csv") || !strcmp(o->format, "jsonl"));
}

/* Failures that are the command line's, not a cell's: as a single run. */
static int overall_status(const sweep *w)
{
	int usage = 0;
	for (int c = 0; c < w->n_cells; c++)
		usage += w->rows[c].status == EXIT_USAGE && !w->rows[c].placed;
	const cell_row *bad = NULL;
	int st = EXIT_OK;
	if (usage == w->n_cells) {
		bad = &w->rows[0];
		st = EXIT_USAGE;
	}
	for (int c = 0; c < w->n_cells && !bad && !sweep_format(w->o); c++)
		if (w->rows[c].status == EXIT_PROGRAM) {
			bad = &w->rows[c];
			st = EXIT_PROGRAM;
		}
	if (bad && !w->o->diagnostics)
		fprintf(stderr, "%s\n", bad->message);
	return st;
}

static void print_logs(const sweep *w)
{
	for (int c = 0; c < w->n_cells; c++)
		if (w->rows[c].log)
			fputs(w->rows[c].log, stderr);
	fflush(stderr);
}

static int write_output(const sweep *w)
{
	const char *f = w->o->format ? w->o->format : "table";
	if (!strcmp(f, "table")) {
		print_tables(w);
		return EXIT_OK;
	}
	char *text = !strcmp(f, "json") ? format_json(w) : !strcmp(f, "csv") ? format_csv(w)
		: format_jsonl(w);
	pr_err *e = NULL;
	if (w->o->output)
		e = pr_file_write_atomic(w->o->output, text, strlen(text));
	else
		fputs(text, stdout);
	free(text);
	return e ? fail(EXIT_USAGE, e) : EXIT_OK;
}

static void sweep_free(sweep *w)
{
	for (int c = 0; c < w->n_cells; c++)
		row_free(&w->rows[c]);
	free(w->rows);
	pr_names_free(w->programs, w->n_programs);
	pr_names_free(w->pipelines, w->n_pipelines);
	for (int k = 0; k < w->n_axes; k++) {
		pr_names_free(w->axes[k].values, w->axes[k].n_values);
		free(w->axes[k].name);
	}
	free(w->axes);
}

static int refuse_stats_table(const opts *o)
{
	if (o->stats_json && (!o->format || !strcmp(o->format, "table") || !strcmp(o->format, "csv")))
		return usage_error("compare --stats=json: the statistics go into each row of "
				   "--format=json or --format=jsonl");
	return EXIT_OK;
}

int compare_main(const opts *o)
{
	sweep w;
	memset(&w, 0, sizeof w);
	w.o = o;
	int st = refuse_stats_table(o);
	if (!st)
		st = expand_pipelines(&w);
	if (!st)
		st = parse_grid(&w);
	pr_pipeline **pls = pr_xcalloc((size_t)w.n_pipelines + 1, sizeof *pls);
	for (int i = 0; !st && i < w.n_pipelines; i++)
		pls[i] = peek_pipeline(w.pipelines[i]);
	if (!st)
		st = check_assignments(&w, pls);
	if (!st) {
		expand_programs(&w);
		w.n_cells = w.n_programs * w.n_pipelines * w.n_points;
		run_cells(&w, pls);
		print_logs(&w);
		st = overall_status(&w);
	}
	if (!st)
		st = write_output(&w);
	for (int i = 0; i < w.n_pipelines; i++)
		pr_pipeline_free(pls[i]);
	free(pls);
	sweep_free(&w);
	fflush(stdout);
	return st;
}
