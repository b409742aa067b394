/* compare_out.c: the outputs of passrun compare, written from rows alone.
 *
 *   table   per program, its header line, a line per cell (and per method
 *           when the program has several) and the cells' messages: stdout.
 *   json    per program {"program", "device", "pipelines": [ROW, ...]};
 *           several programs: {"programs": [that, ...]}.
 *   jsonl   one ROW per line, one line per cell.
 *   csv     a header, then one line per cell and method (a cell without
 *           counts has one line, its counts empty).
 *
 * ROW is one JSON object, the same in json and jsonl (json_row). Counts come
 * only from cells whose passes all ran ("placed": true); the others have an
 * empty "methods" object and empty CSV cells, never the numbers of a partly
 * placed program. */
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "passrun/strbuf.h"

/* The rows of program i, which are consecutive: [*first, *first + n). */
static int program_rows(const sweep *w, int i, int *first)
{
	int per = w->n_pipelines * w->n_points;
	*first = i * per;
	return per;
}

static const char *program_device(const sweep *w, int first, int n)
{
	for (int c = first; c < first + n; c++)
		if (*w->rows[c].device)
			return w->rows[c].device;
	return "";
}

static char *codes_text(const cell_row *r)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int64_t i = 0; i < r->n_codes; i++) {
		pr_strbuf_printf(&b, "%s%s", b.len ? ", " : "", r->codes[i].code);
		if (r->codes[i].n > 1)
			pr_strbuf_printf(&b, "(%lld)", (long long)r->codes[i].n);
	}
	return pr_strbuf_take(&b);
}

static char *planned_text(const method_row *m, const char *sep)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int64_t i = 0; i < m->n_arenas; i++) {
		char dev[PR_DEVICE_STR_MAX];
		pr_strbuf_printf(&b, "%s%s=%lld", i ? sep : "", pr_device_str(m->arenas[i].arena, dev),
				 (long long)m->arenas[i].planned_bytes);
	}
	return pr_strbuf_take(&b);
}

/* ---- the table ------------------------------------------------------------ */

enum { N_COLS = 13 };
static const char *const headers[N_COLS] = {
	"pipeline", "method", "h2d", "h2d B/call", "d2h", "d2h B/call", "load B",
	"planned B", "warn", "err", "check", "exit", "codes",
};
/* Numbers are right-aligned. */
static const bool numeric[N_COLS] = {0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0};

/* The cells of one line; a cell with no counts has dashes there. */
static void fill_cells(const cell_row *r, const method_row *m, char **c)
{
	c[0] = pr_xstrdup(r->label);
	c[1] = pr_xstrdup(m ? m->name : "-");
	if (m) {
		c[2] = pr_xasprintf("%lld", (long long)m->h2d);
		c[3] = pr_xasprintf("%lld", (long long)m->h2d_bytes);
		c[4] = pr_xasprintf("%lld", (long long)m->d2h);
		c[5] = pr_xasprintf("%lld", (long long)m->d2h_bytes);
		c[6] = pr_xasprintf("%lld", (long long)m->load_bytes);
		c[7] = planned_text(m, " ");
		if (!*c[7]) {
			free(c[7]);
			c[7] = pr_xstrdup("-");
		}
	} else {
		for (int i = 2; i <= 7; i++)
			c[i] = pr_xstrdup("-");
	}
	c[8] = pr_xasprintf("%lld", (long long)r->warnings);
	c[9] = pr_xasprintf("%lld", (long long)r->errors);
	c[10] = pr_xstrdup(r->check);
	c[11] = pr_xasprintf("%lld", (long long)r->status);
	c[12] = codes_text(r);
	if (!*c[12]) {
		free(c[12]);
		c[12] = pr_xstrdup("-");
	}
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

static void print_header(const sweep *w, const char *program, const char *device)
{
	const opts *o = w->o;
	printf("%s", program);
	if (*device)
		printf(" (device %s, %ld call%s, --check)", device, o->run ? o->run_n : 1,
		       o->run && o->run_n > 1 ? "s" : "");
	printf("\n");
}

static void print_table(const sweep *w, const cell_row *rows, int n)
{
	int n_lines = 0;
	bool show_method = false;
	for (int i = 0; i < n; i++) {
		n_lines += rows[i].n_methods ? (int)rows[i].n_methods : 1;
		show_method |= rows[i].n_methods > 1;
	}
	char *(*cells)[N_COLS] = pr_xcalloc((size_t)n_lines + 1, sizeof *cells);
	int line = 0;
	for (int i = 0; i < n; i++) {
		int64_t k = 0;
		do {
			fill_cells(&rows[i], rows[i].n_methods ? &rows[i].methods[k] : NULL,
				   cells[line++]);
		} while (++k < rows[i].n_methods);
	}
	int width[N_COLS];
	for (int c = 0; c < N_COLS; c++) {
		width[c] = (int)strlen(headers[c]);
		for (int l = 0; l < n_lines; l++)
			if ((int)strlen(cells[l][c]) > width[c])
				width[c] = (int)strlen(cells[l][c]);
	}
	print_header(w, rows[0].program, program_device(w, (int)(rows - w->rows), n));
	print_line((char *const *)headers, width, show_method);
	for (int l = 0; l < n_lines; l++) {
		print_line(cells[l], width, show_method);
		for (int c = 0; c < N_COLS; c++)
			free(cells[l][c]);
	}
	free(cells);
	for (int i = 0; i < n; i++)
		if (*rows[i].message)
			printf("%s: %s\n", rows[i].label, rows[i].message);
	if (w->o->time_passes)
		for (int i = 0; i < n; i++)
			fprintf(stderr, "== %s ==\n%s", rows[i].label, rows[i].times ? rows[i].times : "");
}

void print_tables(const sweep *w)
{
	for (int i = 0; i < w->n_programs; i++) {
		int first, n = program_rows(w, i, &first);
		if (i)
			putchar('\n');
		print_table(w, &w->rows[first], n);
	}
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
	for (int64_t i = 0; i < m->n_arenas; i++) {
		char dev[PR_DEVICE_STR_MAX];
		pr_strbuf_printf(b, "%s", i ? ", " : "");
		pr_strbuf_json_string(b, pr_device_str(m->arenas[i].arena, dev));
		pr_strbuf_printf(b, ": %lld", (long long)m->arenas[i].planned_bytes);
	}
	pr_strbuf_puts(b, "}}");
}

static void json_key(pr_strbuf *b, const char *key, const char *value)
{
	pr_strbuf_puts(b, ", ");
	pr_strbuf_json_string(b, key);
	pr_strbuf_puts(b, ": ");
	pr_strbuf_json_string(b, value);
}

static void json_grid(pr_strbuf *b, const sweep *w, int cell)
{
	pr_strbuf_puts(b, ", \"grid\": {");
	for (int k = 0; k < w->n_axes; k++) {
		pr_strbuf_puts(b, k ? ", " : "");
		pr_strbuf_json_string(b, w->axes[k].name);
		pr_strbuf_puts(b, ": ");
		pr_strbuf_json_string(b, grid_value(w, cell % w->n_points, k));
	}
	pr_strbuf_putc(b, '}');
}

/* One row on one line. */
static void json_row(pr_strbuf *b, const sweep *w, int cell)
{
	const cell_row *r = &w->rows[cell];
	pr_strbuf_puts(b, "{\"name\": ");
	pr_strbuf_json_string(b, r->label);
	pr_strbuf_printf(b, ", \"exit\": %lld", (long long)r->status);
	json_key(b, "check", r->check);
	json_key(b, "status", r->status_word);
	json_key(b, "program", r->program);
	json_key(b, "pipeline", r->pipeline);
	json_key(b, "pipeline_canonical", r->canonical);
	json_grid(b, w, cell);
	json_key(b, "first_error", r->first_error);
	json_key(b, "message", r->message);
	json_key(b, "device", r->device);
	pr_strbuf_printf(b, ", \"warnings\": %lld, \"errors\": %lld, \"codes\": {",
			 (long long)r->warnings, (long long)r->errors);
	for (int64_t i = 0; i < r->n_codes; i++) {
		pr_strbuf_puts(b, i ? ", " : "");
		pr_strbuf_json_string(b, r->codes[i].code);
		pr_strbuf_printf(b, ": %lld", (long long)r->codes[i].n);
	}
	pr_strbuf_printf(b, "}, \"placed\": %s, \"methods\": {", r->placed ? "true" : "false");
	for (int64_t m = 0; m < r->n_methods; m++) {
		pr_strbuf_puts(b, m ? ", " : "");
		json_method(b, &r->methods[m]);
	}
	pr_strbuf_printf(b, "}, \"provenance\": %s", r->provenance);
	if (r->times_json)
		pr_strbuf_printf(b, ", \"ms\": %.4f, \"times\": %s", r->ms, r->times_json);
	if (r->stats) {
		/* The --stats=json text ends in a newline: a JSON Lines row must not. */
		size_t n = strlen(r->stats);
		while (n && r->stats[n - 1] == '\n')
			n--;
		pr_strbuf_puts(b, ", \"stats\": ");
		for (size_t i = 0; i < n; i++)
			pr_strbuf_putc(b, r->stats[i] == '\n' ? ' ' : r->stats[i]);
	}
	pr_strbuf_putc(b, '}');
}

static void json_program(pr_strbuf *b, const sweep *w, int i, const char *indent)
{
	int first, n = program_rows(w, i, &first);
	pr_strbuf_printf(b, "%s{\n%s  \"program\": ", indent, indent);
	pr_strbuf_json_string(b, w->rows[first].program);
	const char *device = program_device(w, first, n);
	pr_strbuf_printf(b, ",\n%s  \"device\": ", indent);
	if (*device)
		pr_strbuf_json_string(b, device);
	else
		pr_strbuf_puts(b, "null");
	pr_strbuf_printf(b, ",\n%s  \"pipelines\": [\n", indent);
	for (int c = first; c < first + n; c++) {
		pr_strbuf_printf(b, "%s    ", indent);
		json_row(b, w, c);
		pr_strbuf_puts(b, c + 1 < first + n ? ",\n" : "\n");
	}
	pr_strbuf_printf(b, "%s  ]\n%s}", indent, indent);
}

char *format_json(const sweep *w)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	if (w->n_programs == 1) {
		json_program(&b, w, 0, "");
	} else {
		pr_strbuf_puts(&b, "{\"programs\": [\n");
		for (int i = 0; i < w->n_programs; i++) {
			json_program(&b, w, i, "  ");
			pr_strbuf_puts(&b, i + 1 < w->n_programs ? ",\n" : "\n");
		}
		pr_strbuf_puts(&b, "]}");
	}
	pr_strbuf_putc(&b, '\n');
	return pr_strbuf_take(&b);
}

char *format_jsonl(const sweep *w)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int c = 0; c < w->n_cells; c++) {
		json_row(&b, w, c);
		pr_strbuf_putc(&b, '\n');
	}
	return pr_strbuf_take(&b);
}

/* ---- CSV (RFC 4180) ------------------------------------------------------- */

static void csv_field(pr_strbuf *b, const char *s, bool first)
{
	if (!first)
		pr_strbuf_putc(b, ',');
	if (!strpbrk(s, ",\"\r\n")) {
		pr_strbuf_puts(b, s);
		return;
	}
	pr_strbuf_putc(b, '"');
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			pr_strbuf_putc(b, '"');
		pr_strbuf_putc(b, *p);
	}
	pr_strbuf_putc(b, '"');
}

static void csv_num(pr_strbuf *b, int64_t v)
{
	pr_strbuf_printf(b, ",%lld", (long long)v);
}

static const char *const csv_head[] = {
	"status", "exit", "check", "method", "h2d_copies", "h2d_bytes_per_call", "d2h_copies",
	"d2h_bytes_per_call", "load_h2d_bytes", "planned_bytes", "warnings", "errors", "codes",
	"first_error", "message", "device", "pipeline_canonical", "provenance",
};

static void csv_header(pr_strbuf *b, const sweep *w)
{
	csv_field(b, "program", true);
	csv_field(b, "pipeline", false);
	for (int k = 0; k < w->n_axes; k++)
		csv_field(b, w->axes[k].name, false);
	for (size_t i = 0; i < sizeof csv_head / sizeof *csv_head; i++)
		csv_field(b, csv_head[i], false);
	if (w->o->time_passes)
		csv_field(b, "ms", false);
	pr_strbuf_putc(b, '\n');
}

/* "W-CONSTANT-COPY=3;W-INPUT-COPY=1" */
static char *csv_codes(const cell_row *r)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	for (int64_t i = 0; i < r->n_codes; i++)
		pr_strbuf_printf(&b, "%s%s=%lld", i ? ";" : "", r->codes[i].code,
				 (long long)r->codes[i].n);
	return pr_strbuf_take(&b);
}

static void csv_counts(pr_strbuf *b, const method_row *m)
{
	if (!m) {
		pr_strbuf_puts(b, ",,,,,,,");
		return;
	}
	csv_field(b, m->name, false);
	int64_t nums[] = {m->h2d, m->h2d_bytes, m->d2h, m->d2h_bytes, m->load_bytes};
	for (int i = 0; i < 5; i++)
		csv_num(b, nums[i]);
	char *planned = planned_text(m, ";");
	csv_field(b, planned, false);
	free(planned);
}

static void csv_line(pr_strbuf *b, const sweep *w, int cell, const method_row *m)
{
	const cell_row *r = &w->rows[cell];
	csv_field(b, r->program, true);
	csv_field(b, r->pipeline, false);
	for (int k = 0; k < w->n_axes; k++)
		csv_field(b, grid_value(w, cell % w->n_points, k), false);
	csv_field(b, r->status_word, false);
	csv_num(b, r->status);
	csv_field(b, r->check, false);
	csv_counts(b, m);
	csv_num(b, r->warnings);
	csv_num(b, r->errors);
	char *codes = csv_codes(r);
	const char *rest[] = {codes, r->first_error, r->message, r->device, r->canonical,
			      r->provenance};
	for (int i = 0; i < 6; i++)
		csv_field(b, rest[i], false);
	free(codes);
	if (w->o->time_passes)
		pr_strbuf_printf(b, ",%.4f", r->ms);
	pr_strbuf_putc(b, '\n');
}

char *format_csv(const sweep *w)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	csv_header(&b, w);
	for (int c = 0; c < w->n_cells; c++) {
		const cell_row *r = &w->rows[c];
		int64_t k = 0;
		do {
			csv_line(&b, w, c, r->n_methods ? &r->methods[k] : NULL);
		} while (++k < r->n_methods);
	}
	return pr_strbuf_take(&b);
}
