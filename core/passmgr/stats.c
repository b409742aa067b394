/* stats.c: --stats=json (docs/stats-json.md), derived from the program.
 *
 * Everything is computed from the graph when asked, never kept alongside it:
 * copies are op nodes whose schema has the h2d or d2h trait (never an op
 * name); bytes per call add up the storage each copy's argument spans (what
 * the copy moves, and what the runtime measures);
 * load_h2d_bytes adds up the storage bytes of constants (parameter, buffer,
 * constant placeholders) whose spec puts them on a device, which the runtime
 * copies once when the method loads (F10). "inputs" are the user inputs;
 * "outputs" are the return entries that are not write-backs, with their index
 * in the return statement. The memory plan figures come from pr_plan_usage
 * (plan.h), which is referenced weakly: a build without the planner leaves the
 * two keys out rather than failing to link. pr_stats_json_with puts the
 * caller's provenance record (provenance.c) first. docs/stats-json.md lists
 * every key. */
#include "passrun/manager.h"

#include <stdlib.h>
#include <string.h>

#include "passrun/plan.h"
#include "passrun/verify.h"
#include "passrun/strbuf.h"
#include "pm_internal.h"

#pragma weak pr_plan_usage

/* What one walk over a method finds. */
typedef struct method_stats {
	int64_t h2d, d2h, h2d_bytes, d2h_bytes, load_bytes;
	int n_inputs, cap_inputs;
	pr_node **inputs;     /* user inputs, in graph order */
} method_stats;

static void add_input(method_stats *m, pr_node *n)
{
	PR_GROW(m->inputs, m->n_inputs, m->cap_inputs);
	m->inputs[m->n_inputs++] = n;
}

static bool is_constant(const pr_node *n)
{
	if (n->kind != PR_NODE_INPUT)
		return false;
	pr_input_kind k = n->of_kind.input->kind;
	return k == PR_INPUT_PARAMETER || k == PR_INPUT_BUFFER || k == PR_INPUT_CONSTANT;
}

int64_t pr_copy_bytes(const pr_node *n)
{
	pr_node *src = n->n_args > 0 && n->args[0].kind == PR_ARG_VALUE ? n->args[0].u.value : NULL;
	pr_spec *s = src ? pr_node_spec(src) : NULL;
	if (!s)
		s = pr_node_spec((pr_node *)n);
	return s ? pr_spec_storage_bytes(s) : 0;
}

static method_stats count(pr_graph *g)
{
	method_stats m = {0};
	pr_graph_for_each(g, n) {
		const pr_schema *s = pr_node_schema(n);
		if (s && s->h2d) {
			m.h2d++;
			m.h2d_bytes += pr_copy_bytes(n);
		} else if (s && s->d2h) {
			m.d2h++;
			m.d2h_bytes += pr_copy_bytes(n);
		} else if (is_constant(n)) {
			pr_spec *spec = pr_node_spec(n);
			if (spec && !pr_spec_on_host(spec))
				m.load_bytes += pr_spec_storage_bytes(spec);
		} else if (n->kind == PR_NODE_INPUT && n->of_kind.input->kind == PR_INPUT_USER) {
			add_input(&m, n);
		}
	}
	return m;
}

/* The device of a value: its spec's, a tuple's first element's, else host. */
static void put_device(pr_strbuf *b, pr_node *n)
{
	char buf[PR_DEVICE_STR_MAX];
	pr_device d = pr_device_host();
	pr_spec *s = n ? pr_node_spec(n) : NULL;
	if (s)
		d = pr_spec_device(s);
	else if (n && n->type.kind == PR_TYPE_TUPLE && n->type.n_elems > 0)
		d = pr_spec_device(&n->type.elems[0]);
	pr_strbuf_json_string(b, pr_device_str(d, buf));
}

static void put_inputs(pr_strbuf *b, const method_stats *m)
{
	pr_strbuf_puts(b, "\"inputs\": [");
	for (int i = 0; i < m->n_inputs; i++) {
		pr_node *n = m->inputs[i];
		pr_strbuf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
		const char *quoted = n->of_kind.input->name;   /* an input's */
		pr_strbuf_json_string(b, quoted ? quoted : n->name ? n->name : "");
		pr_strbuf_puts(b, ", \"device\": ");
		put_device(b, n);
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_puts(b, "]");
}

static void put_outputs(pr_strbuf *b, pr_graph *g)
{
	pr_strbuf_puts(b, "\"outputs\": [");
	pr_node *ret = pr_graph_return(g);
	int k = 0;
	for (int i = 0; ret && i < ret->n_args; i++) {
		if (ret->of_kind.writebacks && ret->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE)
			continue;
		pr_node *v = ret->args[i].kind == PR_ARG_VALUE ? ret->args[i].u.value : NULL;
		pr_strbuf_printf(b, "%s{\"index\": %d, \"name\": ", k++ ? ", " : "", i);
		pr_strbuf_json_string(b, v && v->name ? v->name : "");
		pr_strbuf_puts(b, ", \"device\": ");
		put_device(b, v);
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_puts(b, "]");
}

static void put_plan(pr_strbuf *b, pr_graph *g)
{
	if (!pr_plan_usage)
		return;
	pr_arena_usage *u = NULL;
	int n = pr_plan_usage(g, &u);
	char buf[PR_DEVICE_STR_MAX];
	for (int pass = 0; pass < 2; pass++) {
		pr_strbuf_puts(b, pass ? ",\n      \"planned_lower_bound_bytes\": {"
				       : ",\n      \"planned_bytes\": {");
		for (int i = 0; i < n; i++) {
			pr_strbuf_puts(b, i ? ", " : "");
			pr_strbuf_json_string(b, pr_device_str(u[i].arena, buf));
			pr_strbuf_printf(b, ": %lld", (long long)(pass ? u[i].lower_bound_bytes
								       : u[i].planned_bytes));
		}
		pr_strbuf_putc(b, '}');
	}
	free(u);
}

static void put_method(pr_strbuf *b, pr_graph *g)
{
	method_stats m = count(g);
	pr_strbuf_puts(b, "    ");
	pr_strbuf_json_string(b, g->name);
	pr_strbuf_printf(b, ": {\n      \"nodes\": %lld,\n", (long long)g->n_nodes);
	pr_strbuf_printf(b, "      \"h2d_copies\": %lld, \"d2h_copies\": %lld,\n",
			 (long long)m.h2d, (long long)m.d2h);
	pr_strbuf_printf(b, "      \"h2d_bytes_per_call\": %lld, \"d2h_bytes_per_call\": %lld,\n",
			 (long long)m.h2d_bytes, (long long)m.d2h_bytes);
	pr_strbuf_printf(b, "      \"load_h2d_bytes\": %lld,\n      ", (long long)m.load_bytes);
	put_inputs(b, &m);
	pr_strbuf_puts(b, ",\n      ");
	put_outputs(b, g);
	put_plan(b, g);
	pr_strbuf_puts(b, "\n    }");
	free(m.inputs);
}

static void put_diags(pr_strbuf *b, const pr_diags *d)
{
	pr_strbuf_puts(b, "  \"diagnostics\": [");
	for (int i = 0; d && i < d->n; i++) {
		const pr_diag *x = &d->items[i];
		pr_strbuf_puts(b, i ? ",\n    {\"severity\": " : "\n    {\"severity\": ");
		pr_strbuf_json_string(b, pr_severity_name(x->severity));
		pr_strbuf_puts(b, ", \"code\": ");
		pr_strbuf_json_string(b, x->code);
		pr_strbuf_puts(b, ", \"pass\": ");
		pr_strbuf_json_string(b, x->pass);
		pr_strbuf_puts(b, ", \"method\": ");
		pr_strbuf_json_string_or_null(b, x->method);
		pr_strbuf_puts(b, ", \"node\": ");
		pr_strbuf_json_string_or_null(b, x->node);
		if (x->bytes >= 0)
			pr_strbuf_printf(b, ", \"bytes\": %lld", (long long)x->bytes);
		else
			pr_strbuf_puts(b, ", \"bytes\": null");
		pr_strbuf_puts(b, ", \"message\": ");
		pr_strbuf_json_string(b, x->message);
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_puts(b, d && d->n ? "\n  ]" : "]");
}

static void put_passes(pr_strbuf *b, const pr_pass_report *rep)
{
	pr_strbuf_puts(b, "  \"passes\": [");
	int k = 0;
	for (int i = 0; rep && i < rep->n; i++) {
		const pr_pass_record *r = &rep->items[i];
		if (!r->is_pass)
			continue;
		pr_strbuf_puts(b, k++ ? ",\n    {\"name\": " : "\n    {\"name\": ");
		pr_strbuf_json_string(b, r->name);
		pr_strbuf_printf(b, ", \"ms\": %.4f, \"changed\": %s}", r->ms,
				 r->changed ? "true" : "false");
	}
	pr_strbuf_puts(b, k ? "\n  ]" : "]");
}

char *pr_stats_json(pr_program *p, const pr_diags *diags, const pr_pass_report *rep,
		    const char *run_json)
{
	return pr_stats_json_with(p, diags, rep, run_json, NULL);
}

char *pr_stats_json_with(pr_program *p, const pr_diags *diags, const pr_pass_report *rep,
			 const char *run_json, const char *provenance_json)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "{\n");
	if (provenance_json)
		pr_strbuf_printf(&b, "  \"provenance\": %s,\n", provenance_json);
	pr_strbuf_puts(&b, "  \"methods\": {");
	for (int i = 0; i < p->n_methods; i++) {
		pr_strbuf_puts(&b, i ? ",\n" : "\n");
		put_method(&b, p->methods[i]);
	}
	pr_strbuf_puts(&b, p->n_methods ? "\n  },\n" : "},\n");
	put_diags(&b, diags);
	pr_strbuf_puts(&b, ",\n");
	put_passes(&b, rep);
	if (run_json) {
		pr_strbuf_puts(&b, ",\n  \"run\": ");
		pr_strbuf_puts(&b, run_json);
	}
	pr_strbuf_puts(&b, "\n}\n");
	return pr_strbuf_take(&b);
}
