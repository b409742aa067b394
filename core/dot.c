/* dot.c: Graphviz output. See dot.h for what the picture shows. */
#include "passrun/dot.h"

#include <stdlib.h>
#include <string.h>

#include "passrun/strbuf.h"

static const char *const palette[] = {
	"#8fd18f", "#7fb3e6", "#f2c36b", "#c39be0", "#e68f8f", "#7fd6d6",
};

static const char *device_colour(pr_device d)
{
	if (pr_device_is_host(d))
		return "#e0e0e0";
	unsigned h = (unsigned)(d.index < 0 ? 0 : d.index);
	for (const char *c = d.type; *c; c++)
		h = h * 31u + (unsigned char)*c;
	return palette[h % (sizeof palette / sizeof palette[0])];
}

static bool is_copy(const pr_node *n)
{
	return n->kind == PR_NODE_OP && n->schema && (n->schema->h2d || n->schema->d2h);
}

static bool is_per_call_code(const char *code)
{
	return strstr(code, "-CONSTANT-COPY") || strstr(code, "-INPUT-COPY") ||
	       strstr(code, "-OUTPUT-ON-HOST");
}

/* Does a per-call diagnostic of method g name the tensor this copy moves? */
static bool copy_flagged(const pr_node *n, const pr_graph *g, const pr_diags *diags)
{
	if (!diags || !is_copy(n) || n->n_args < 1 || n->args[0].kind != PR_ARG_VALUE)
		return false;
	const pr_node *src = n->args[0].u.value;
	for (int i = 0; i < diags->n; i++) {
		const pr_diag *d = &diags->items[i];
		if (!is_per_call_code(d->code) || !d->node || !d->method || strcmp(d->method, g->name))
			continue;
		if ((src->name && !strcmp(d->node, src->name)) || (n->name && !strcmp(d->node, n->name)))
			return true;
	}
	return false;
}

static const char *node_label(const pr_node *n, char *buf, size_t size)
{
	const char *what = "";
	switch (n->kind) {
	case PR_NODE_INPUT: what = "input"; break;
	case PR_NODE_OP: what = n->schema ? n->schema->full_name : "op"; break;
	case PR_NODE_DELEGATE: what = n->delegate ? n->delegate->name : "delegate"; break;
	case PR_NODE_GETITEM: what = "getitem"; break;
	case PR_NODE_RETURN: what = "return"; break;
	}
	snprintf(buf, size, "%s%s%s", n->name ? n->name : "", n->name ? "\\n" : "", what);
	return buf;
}

static pr_device node_device(const pr_node *n)
{
	if (n->type.kind == PR_TYPE_TENSOR)
		return n->type.tensor.device;
	if (n->type.kind == PR_TYPE_TUPLE && n->type.n_elems > 0)
		return n->type.elems[0].device;
	return pr_device_host();
}

/* Stable ids, so the same program draws the same file: a node is named by
 * its method and its own name, or its position when it has no result. */
static void emit_id(pr_strbuf *b, int method, const pr_node *n, long position)
{
	if (n->name) {
		char *id = pr_xasprintf("m%d %s", method, n->name);
		pr_strbuf_json_string(b, id);
		free(id);
	} else {
		pr_strbuf_printf(b, "\"m%d #%ld\"", method, position);
	}
}

static void emit_node(pr_strbuf *b, const pr_graph *g, int method, const pr_node *n,
		      long position, const pr_diags *diags)
{
	char label[512];
	node_label(n, label, sizeof label);
	pr_strbuf_puts(b, "    ");
	emit_id(b, method, n, position);
	pr_strbuf_puts(b, " [label=");
	pr_strbuf_json_string(b, label);
	pr_strbuf_printf(b, ", fillcolor=\"%s\"", device_colour(node_device(n)));
	if (is_copy(n))
		pr_strbuf_puts(b, ", shape=box, style=\"filled,bold\", penwidth=2");
	if (copy_flagged(n, g, diags))
		pr_strbuf_puts(b, ", color=\"#d00000\", penwidth=3");
	pr_strbuf_puts(b, "];\n");
}

static void emit_edges_of(pr_strbuf *b, int method, const pr_node *user, long position,
			  const pr_arg *args, int n)
{
	for (int i = 0; i < n; i++) {
		const pr_arg *a = &args[i];
		if (a->kind == PR_ARG_LIST) {
			emit_edges_of(b, method, user, position, a->u.list.items, a->u.list.n);
			continue;
		}
		if (a->kind != PR_ARG_VALUE || !a->u.value)
			continue;
		const pr_spec *s = a->u.value->type.kind == PR_TYPE_TENSOR ? &a->u.value->type.tensor : NULL;
		pr_strbuf_puts(b, "    ");
		emit_id(b, method, a->u.value, -1);
		pr_strbuf_puts(b, " -> ");
		emit_id(b, method, user, position);
		if (s)
			pr_strbuf_printf(b, " [label=\"%lld B\"]", (long long)pr_spec_nbytes(s));
		pr_strbuf_puts(b, ";\n");
	}
}

char *pr_dot_render(const pr_program *p, const pr_diags *diags)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "digraph passrun {\n  rankdir=TB;\n"
			   "  node [style=filled, shape=ellipse, fontname=\"Helvetica\"];\n"
			   "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	for (int m = 0; m < p->n_methods; m++) {
		const pr_graph *g = p->methods[m];
		pr_strbuf_printf(&b, "  subgraph cluster_%d {\n    label=", m);
		pr_strbuf_json_string(&b, g->name);
		pr_strbuf_puts(&b, ";\n");
		long position = 0;
		pr_graph_for_each(g, n) {
			emit_node(&b, g, m, n, position, diags);
			emit_edges_of(&b, m, n, position, n->args, n->n_args);
			position++;
		}
		pr_strbuf_puts(&b, "  }\n");
	}
	pr_strbuf_puts(&b, "}\n");
	return pr_strbuf_take(&b);
}
