/* compare.c: passrun compare, a researcher's comparison of pipelines.
 *
 *   passrun compare [--pipelines baseline,cuda,ablate/no-copy-reuse]
 *                   [--format=table|json] [--set ...] [--device=sim] PROGRAM
 *
 * Each pipeline runs as its own passrun session (tool.h: the same steps as
 * `passrun --pipeline NAME PROGRAM --check`, from loading the plugins to
 * executing), so a row shows exactly what that command would do. From the
 * placed program it reads, per method, the copy nodes (schema traits h2d and
 * d2h, as --stats=json counts them), the bytes they move per call, the bytes
 * loaded once (device-resident constants) and the planned memory per arena
 * (pr_plan_usage); from the session, the diagnostics and, when the runtime is
 * built, the --check outcome: match, mismatch (exit 4), fault (exit 5), or
 * refused (exit 5, a copy the runtime refuses, M3). A pipeline whose passes
 * fail shows the exit status they gave and "not run".
 *
 * The result of each pipeline is not verified before it runs (passrun's
 * --disable-verify): baseline reproduces ExecuTorch's copies, which the
 * verifier refuses, and the row is to show what the runtime does with them.
 *
 * Each pipeline runs in a child process of its own (fork), which sends its
 * row back through a pipe: a pass that crashes one pipeline makes that row
 * say "crashed in pass NAME (signal N)" (the crash handler writes the pass's
 * name on the pipe, pass.h) with exit 128+N, and the other pipelines still
 * run.
 *
 * Every pipeline name is resolved before anything runs: an unknown one is a
 * bad command line (exit 2) with the nearest shipped name. Otherwise the exit
 * status is 0 and the table carries each pipeline's own status; a program
 * that cannot be read is exit 3, as for a single run. Diagnostics go to
 * stderr as usual, each pipeline's under a "== NAME ==" line; stdout has only
 * the table (or the JSON). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/plan.h"
#include "passrun/verify.h"
#include "passrun/strbuf.h"
#include "tool.h"

#define MAX_PIPELINES 32

/* One method of one pipeline's result. */
typedef struct method_row {
	char *name;
	int64_t h2d, d2h, h2d_bytes, d2h_bytes, load_bytes;
	int n_arenas;
	pr_arena_usage *arenas;
} method_row;

typedef struct pipeline_row {
	const char *name;
	int status;
	int warnings, errors;
	char *codes;            /* "W-CONSTANT-COPY(2), W-INPUT-COPY" */
	const char *check;      /* one of check_words */
	char message[320];
	char device[8];
	int n_methods;
	method_row *methods;
} pipeline_row;

/* ---- what one pipeline did ------------------------------------------------ */

static bool is_loaded_constant(const pr_node *n)
{
	if (n->kind != PR_NODE_INPUT || n->input_kind == PR_INPUT_USER)
		return false;
	const pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
	return s && !pr_device_is_host(s->device);
}

static void count_method(pr_graph *g, method_row *m)
{
	m->name = pr_xstrdup(g->name);
	pr_graph_for_each(g, n) {
		bool op = n->kind == PR_NODE_OP && n->schema;
		if (op && n->schema->h2d) {
			m->h2d++;
			m->h2d_bytes += pr_copy_bytes(n);
		} else if (op && n->schema->d2h) {
			m->d2h++;
			m->d2h_bytes += pr_copy_bytes(n);
		} else if (is_loaded_constant(n)) {
			m->load_bytes += pr_spec_storage_bytes(&n->type.tensor);
		}
	}
	m->n_arenas = pr_plan_usage(g, &m->arenas);
}

/* Codes in the order first reported, with a count when repeated. */
static char *diag_codes(const pr_diags *d)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int i = 0; i < d->n; i++) {
		bool seen = false;
		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(d->items[k].code, d->items[i].code);
		if (seen)
			continue;
		int count = 0;
		for (int k = i; k < d->n; k++)
			count += !strcmp(d->items[k].code, d->items[i].code);
		pr_strbuf_printf(&b, "%s%s", b.len ? ", " : "", d->items[i].code);
		if (count > 1)
			pr_strbuf_printf(&b, "(%d)", count);
	}
	return pr_strbuf_take(&b);
}

/* What a row's check column may say (sent between processes as an index). */
static const char *const check_words[] = {
	"-", "not run", "mismatch", "refused", "fault", "error", "match", "ran", "crashed",
};
#define N_CHECK_WORDS ((int)(sizeof check_words / sizeof check_words[0]))

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

/* Runs one pipeline as `passrun --pipeline NAME PROGRAM --check` would. */
static int run_one(const opts *o, const char *name, pipeline_row *row)
{
	opts po = *o;
	po.compare = false;
	po.pipeline = name;
	/* The row reports what the runtime does with each result (baseline's
	 * copies are refused there, as in ExecuTorch), so the result is not
	 * refused by the verifier first: a single run's --disable-verify. */
	po.disable_verify = true;
#ifdef PASSRUN_HAVE_RUNTIME
	po.check = true;
	bool have_runtime = true;
#else
	bool have_runtime = false;
#endif
	fprintf(stderr, "== %s ==\n", name);
	session s;
	session_init(&s, &po);
	int st = load_plugins(&s);
	if (!st)
		st = load_pipeline(&s);
	if (!st)
		st = process_program(&s);
	row->name = name;
	row->status = st;
	if (s.prog) {
		row->n_methods = s.prog->n_methods;
		row->methods = pr_xcalloc((size_t)row->n_methods + 1, sizeof *row->methods);
		for (int m = 0; m < s.prog->n_methods; m++)
			count_method(s.prog->methods[m], &row->methods[m]);
	}
	row->warnings = pr_diags_count(&s.diags, PR_SEV_WARNING);
	row->errors = pr_diags_count(&s.diags, PR_SEV_ERROR);
	row->codes = diag_codes(&s.diags);
	row->check = check_word(&s.run, st, have_runtime);
	snprintf(row->message, sizeof row->message, "%s", s.run.message);
	snprintf(row->device, sizeof row->device, "%s", s.run.device);
	session_free(&s);
	return st;
}

static void row_free(pipeline_row *row)
{
	for (int m = 0; m < row->n_methods; m++) {
		free(row->methods[m].name);
		free(row->methods[m].arenas);
	}
	free(row->methods);
	free(row->codes);
}

/* ---- one pipeline in a child process ------------------------------------- */

/* The row travels as raw fields: both ends are this same binary. */
static void put_raw(pr_strbuf *b, const void *data, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pr_strbuf_putc(b, ((const char *)data)[i]);
}

static void put_text(pr_strbuf *b, const char *s)
{
	size_t n = strlen(s);
	put_raw(b, &n, sizeof n);
	put_raw(b, s, n);
}

static void row_encode(const pipeline_row *r, pr_strbuf *b)
{
	int check = 0;
	for (int i = 0; i < N_CHECK_WORDS; i++)
		if (!strcmp(check_words[i], r->check))
			check = i;
	int head[5] = {r->status, r->warnings, r->errors, check, r->n_methods};
	put_raw(b, head, sizeof head);
	put_text(b, r->codes);
	put_text(b, r->message);
	put_text(b, r->device);
	for (int m = 0; m < r->n_methods; m++) {
		const method_row *mr = &r->methods[m];
		put_text(b, mr->name);
		int64_t counts[5] = {mr->h2d, mr->d2h, mr->h2d_bytes, mr->d2h_bytes, mr->load_bytes};
		put_raw(b, counts, sizeof counts);
		put_raw(b, &mr->n_arenas, sizeof mr->n_arenas);
		put_raw(b, mr->arenas, (size_t)mr->n_arenas * sizeof *mr->arenas);
	}
}

typedef struct reader {
	const char *p, *end;
	bool bad;
} reader;

static void get_raw(reader *rd, void *out, size_t n)
{
	if (rd->bad || (size_t)(rd->end - rd->p) < n) {
		rd->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, rd->p, n);
	rd->p += n;
}

static char *get_text(reader *rd)
{
	size_t n = 0;
	get_raw(rd, &n, sizeof n);
	if (rd->bad || (size_t)(rd->end - rd->p) < n) {
		rd->bad = true;
		return pr_xstrdup("");
	}
	char *s = pr_xasprintf("%.*s", (int)n, rd->p);
	rd->p += n;
	return s;
}

static bool row_decode(const char *data, size_t len, pipeline_row *r)
{
	reader rd = {data, data + len, false};
	int head[5];
	get_raw(&rd, head, sizeof head);
	r->status = head[0], r->warnings = head[1], r->errors = head[2];
	r->check = check_words[head[3] >= 0 && head[3] < N_CHECK_WORDS ? head[3] : 0];
	r->n_methods = rd.bad || head[4] < 0 ? 0 : head[4];
	r->codes = get_text(&rd);
	char *msg = get_text(&rd), *dev = get_text(&rd);
	snprintf(r->message, sizeof r->message, "%s", msg);
	snprintf(r->device, sizeof r->device, "%s", dev);
	free(msg);
	free(dev);
	r->methods = pr_xcalloc((size_t)r->n_methods + 1, sizeof *r->methods);
	for (int m = 0; m < r->n_methods && !rd.bad; m++) {
		method_row *mr = &r->methods[m];
		mr->name = get_text(&rd);
		int64_t counts[5];
		get_raw(&rd, counts, sizeof counts);
		mr->h2d = counts[0], mr->d2h = counts[1], mr->h2d_bytes = counts[2];
		mr->d2h_bytes = counts[3], mr->load_bytes = counts[4];
		get_raw(&rd, &mr->n_arenas, sizeof mr->n_arenas);
		if (rd.bad || mr->n_arenas < 0 || mr->n_arenas > 4096)
			mr->n_arenas = 0, rd.bad = true;
		mr->arenas = pr_xcalloc((size_t)mr->n_arenas + 1, sizeof *mr->arenas);
		get_raw(&rd, mr->arenas, (size_t)mr->n_arenas * sizeof *mr->arenas);
	}
	return !rd.bad;
}

static void write_all(int fd, const char *data, size_t n)
{
	while (n) {
		ssize_t w = write(fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		data += w;
		n -= (size_t)w;
	}
}

static char *read_all(int fd, size_t *len)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		put_raw(&b, chunk, (size_t)n);
	}
	*len = b.len;
	return b.data ? pr_strbuf_take(&b) : pr_xstrdup("");
}

/* The child: runs the pipeline, sends its row, exits with its status. A
 * crash instead leaves the crashing pass's name on the pipe. */
static _Noreturn void child(const opts *o, const char *name, int fd)
{
	pr_crash_handler_install(fd);
	pipeline_row row;
	memset(&row, 0, sizeof row);
	int st = run_one(o, name, &row);
	pr_strbuf b;
	pr_strbuf_init(&b);
	row_encode(&row, &b);
	write_all(fd, b.data ? b.data : "", b.len);
	pr_strbuf_free(&b);
	row_free(&row);
	fflush(stderr);
	_exit(st & 0xff);
}

static void crashed_row(pipeline_row *row, const char *pass, int sig)
{
	row->status = 128 + sig;
	row->check = "crashed";
	row->codes = pr_xstrdup("");
	size_t n = strcspn(pass, "\n");
	if (n)
		snprintf(row->message, sizeof row->message, "crashed in pass %.*s (signal %d)",
			 (int)n, pass, sig);
	else
		snprintf(row->message, sizeof row->message, "crashed (signal %d)", sig);
}

/* Runs one pipeline in a child process; the row comes back through a pipe. */
static int run_isolated(const opts *o, const char *name, pipeline_row *row)
{
	row->name = name;
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	pid_t pid = pipe(fds) == 0 ? fork() : -1;
	if (pid < 0) {
		fprintf(stderr, "passrun compare: cannot start a process for '%s': %s\n", name,
			strerror(errno));
		return run_one(o, name, row);
	}
	if (pid == 0) {
		close(fds[0]);
		child(o, name, fds[1]);
	}
	close(fds[1]);
	size_t len;
	char *data = read_all(fds[0], &len);
	close(fds[0]);
	int wst = 0;
	while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(wst))
		crashed_row(row, data, WTERMSIG(wst));
	else if (!row_decode(data, len, row))
		snprintf(row->message, sizeof row->message, "its process sent no result (exit %d)",
			 row->status = WEXITSTATUS(wst));
	free(data);
	return row->status;
}

/* ---- the pipelines -------------------------------------------------------- */

/* Splits "a,b,c" into names (pointers into buf, which is modified). */
static int split_names(char *buf, const char **names)
{
	int n = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (n == MAX_PIPELINES)
			return -1;
		names[n++] = tok;
	}
	return n;
}

/* Every name must resolve before anything runs. */
static int resolve_all(const char *const *names, int n)
{
	for (int i = 0; i < n; i++) {
		char *path;
		pr_err *e = pr_pipeline_find(names[i], &path);
		free(path);
		if (!e)
			continue;
		char **shipped;
		int n_shipped = pr_pipeline_list_shipped(&shipped);
		const char *near = pr_nearest(names[i], (const char *const *)shipped, n_shipped);
		fprintf(stderr, "passrun compare: unknown pipeline '%s'%s%s%s\n%s\n", names[i],
			near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
			pr_err_message(e));
		pr_names_free(shipped, n_shipped);
		pr_err_free(e);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* ---- the table ------------------------------------------------------------ */

enum { N_COLS = 13 };
static const char *const headers[N_COLS] = {
	"pipeline", "method", "h2d", "h2d B/call", "d2h", "d2h B/call", "load B",
	"planned B", "warn", "err", "check", "exit", "codes",
};
/* Numbers are right-aligned. */
static const bool numeric[N_COLS] = {0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0};

static char *planned_text(const method_row *m)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int i = 0; i < m->n_arenas; i++) {
		char dev[PR_DEVICE_STR_MAX];
		pr_strbuf_printf(&b, "%s%s=%lld", i ? " " : "", pr_device_str(m->arenas[i].arena, dev),
				 (long long)m->arenas[i].planned_bytes);
	}
	if (!b.len)
		pr_strbuf_puts(&b, "-");
	return pr_strbuf_take(&b);
}

/* The cells of one line; a pipeline with no program (exit 3) has one line of
 * dashes. */
static void fill_cells(const pipeline_row *r, const method_row *m, char **c)
{
	c[0] = pr_xstrdup(r->name);
	c[1] = pr_xstrdup(m ? m->name : "-");
	if (m) {
		c[2] = pr_xasprintf("%lld", (long long)m->h2d);
		c[3] = pr_xasprintf("%lld", (long long)m->h2d_bytes);
		c[4] = pr_xasprintf("%lld", (long long)m->d2h);
		c[5] = pr_xasprintf("%lld", (long long)m->d2h_bytes);
		c[6] = pr_xasprintf("%lld", (long long)m->load_bytes);
		c[7] = planned_text(m);
	} else {
		for (int i = 2; i <= 7; i++)
			c[i] = pr_xstrdup("-");
	}
	c[8] = pr_xasprintf("%d", r->warnings);
	c[9] = pr_xasprintf("%d", r->errors);
	c[10] = pr_xstrdup(r->check);
	c[11] = pr_xasprintf("%d", r->status);
	c[12] = pr_xstrdup(*r->codes ? r->codes : "-");
}

static void print_line(char *const *c, const int *width, bool show_method)
{
	for (int i = 0; i < N_COLS; i++) {
		if (i == 1 && !show_method)
			continue;
		int w = i == N_COLS - 1 ? 0 : width[i];
		printf(i ? "  " : "");
		printf(numeric[i] ? "%*s" : "%-*s", w, c[i]);
	}
	putchar('\n');
}

static void print_table(const opts *o, const pipeline_row *rows, int n)
{
	int n_lines = 0;
	for (int i = 0; i < n; i++)
		n_lines += rows[i].n_methods ? rows[i].n_methods : 1;
	bool show_method = false;
	for (int i = 0; i < n; i++)
		show_method |= rows[i].n_methods > 1;
	char *(*cells)[N_COLS] = pr_xcalloc((size_t)n_lines + 1, sizeof *cells);
	int line = 0;
	for (int i = 0; i < n; i++) {
		int k = 0;
		do {
			fill_cells(&rows[i], rows[i].n_methods ? &rows[i].methods[k] : NULL, cells[line++]);
		} while (++k < rows[i].n_methods);
	}
	int width[N_COLS];
	for (int c = 0; c < N_COLS; c++) {
		width[c] = (int)strlen(headers[c]);
		for (int l = 0; l < n_lines; l++)
			if ((int)strlen(cells[l][c]) > width[c])
				width[c] = (int)strlen(cells[l][c]);
	}
	const char *device = "";
	for (int i = 0; i < n && !*device; i++)
		device = rows[i].device;
	printf("%s", o->program);
	if (*device)
		printf(" (device %s, %ld call%s, --check)", device, o->run ? o->run_n : 1,
		       o->run && o->run_n > 1 ? "s" : "");
	printf("\n");
	print_line((char *const *)headers, width, show_method);
	for (int l = 0; l < n_lines; l++) {
		print_line(cells[l], width, show_method);
		for (int c = 0; c < N_COLS; c++)
			free(cells[l][c]);
	}
	free(cells);
	for (int i = 0; i < n; i++)
		if (*rows[i].message)
			printf("%s: %s\n", rows[i].name, rows[i].message);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_method(pr_strbuf *b, const method_row *m)
{
	pr_strbuf_json_string(b, m->name);
	pr_strbuf_printf(b, ": {\"h2d_copies\": %lld, \"d2h_copies\": %lld, "
			 "\"h2d_bytes_per_call\": %lld, \"d2h_bytes_per_call\": %lld, "
			 "\"load_h2d_bytes\": %lld, \"planned_bytes\": {",
			 (long long)m->h2d, (long long)m->d2h, (long long)m->h2d_bytes,
			 (long long)m->d2h_bytes, (long long)m->load_bytes);
	for (int i = 0; i < m->n_arenas; i++) {
		char dev[PR_DEVICE_STR_MAX];
		pr_strbuf_printf(b, "%s", i ? ", " : "");
		pr_strbuf_json_string(b, pr_device_str(m->arenas[i].arena, dev));
		pr_strbuf_printf(b, ": %lld", (long long)m->arenas[i].planned_bytes);
	}
	pr_strbuf_puts(b, "}}");
}

static void json_row(pr_strbuf *b, const pipeline_row *r)
{
	pr_strbuf_puts(b, "    {\"name\": ");
	pr_strbuf_json_string(b, r->name);
	pr_strbuf_printf(b, ", \"exit\": %d, \"check\": ", r->status);
	pr_strbuf_json_string(b, r->check);
	pr_strbuf_puts(b, ", \"message\": ");
	pr_strbuf_json_string(b, r->message);
	pr_strbuf_printf(b, ", \"warnings\": %d, \"errors\": %d, \"codes\": [", r->warnings,
			 r->errors);
	/* codes holds "A(2), B": list each code once. */
	char *copy = pr_xstrdup(r->codes);
	int k = 0;
	for (char *tok = strtok(copy, ", "); tok; tok = strtok(NULL, ", ")) {
		char *paren = strchr(tok, '(');
		if (paren)
			*paren = '\0';
		pr_strbuf_puts(b, k++ ? ", " : "");
		pr_strbuf_json_string(b, tok);
	}
	free(copy);
	pr_strbuf_puts(b, "], \"methods\": {");
	for (int m = 0; m < r->n_methods; m++) {
		pr_strbuf_puts(b, m ? ", " : "");
		json_method(b, &r->methods[m]);
	}
	pr_strbuf_puts(b, "}}");
}

static void print_json(const opts *o, const pipeline_row *rows, int n)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "{\n  \"program\": ");
	pr_strbuf_json_string(&b, o->program);
	const char *device = "";
	for (int i = 0; i < n && !*device; i++)
		device = rows[i].device;
	pr_strbuf_puts(&b, ",\n  \"device\": ");
	if (*device)
		pr_strbuf_json_string(&b, device);
	else
		pr_strbuf_puts(&b, "null");
	pr_strbuf_puts(&b, ",\n  \"pipelines\": [\n");
	for (int i = 0; i < n; i++) {
		json_row(&b, &rows[i]);
		pr_strbuf_puts(&b, i + 1 < n ? ",\n" : "\n");
	}
	pr_strbuf_puts(&b, "  ]\n}\n");
	fputs(b.data, stdout);
	pr_strbuf_free(&b);
}

/* ---- the command ----------------------------------------------------------- */

int compare_main(const opts *o)
{
	char *buf = pr_xstrdup(o->compare_pipelines ? o->compare_pipelines : "baseline,cuda");
	const char *names[MAX_PIPELINES];
	int n = split_names(buf, names);
	int st = n < 0 ? usage_error("compare: at most %d pipelines", MAX_PIPELINES)
		: n == 0 ? usage_error("compare: --pipelines names no pipeline")
		: resolve_all(names, n);
	if (st) {
		free(buf);
		return st;
	}
	pipeline_row rows[MAX_PIPELINES];
	memset(rows, 0, sizeof rows);
	for (int i = 0; i < n; i++) {
		int one = run_isolated(o, names[i], &rows[i]);
		/* A program that cannot be read, or a bad --set or plugin, is the
		 * same for every pipeline: stop, as a single run would. */
		if (one == EXIT_PROGRAM || (one == EXIT_USAGE && !rows[i].n_methods)) {
			st = one;
			n = i + 1;
			break;
		}
	}
	if (!st) {
		if (o->compare_json)
			print_json(o, rows, n);
		else
			print_table(o, rows, n);
	}
	for (int i = 0; i < n; i++)
		row_free(&rows[i]);
	free(buf);
	fflush(stdout);
	return st;
}
