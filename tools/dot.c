/* dot.c: Graphviz output. See dot.h for what the picture shows.
 *
 * A node's colour is its device's: the value it produces (a tuple's first
 * element), or for a delegate its target_device, so a delegate keeps its
 * colour before placement too. Colours come from a fixed table indexed by the
 * device ("cuda:N" takes entry N), so the same device has the same colour in
 * every picture, before and after a pipeline, and cuda:0..7 never share one.
 * A legend cluster lists the devices the picture uses, the copy shape, and
 * the red outline of flagged copies when there are any. Text goes through
 * dot_text, which escapes what Graphviz would read as markup; a line break in
 * a label is a real "\n" escape. */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "passrun/strbuf.h"

#define HOST_COLOUR "#e0e0e0"
#define FLAG_COLOUR "#d00000"

static const char *const palette[] = {
	"#7fb3e6", "#8fd18f", "#f2c36b", "#c39be0", "#e68f8f", "#7fd6d6", "#d6b38f", "#b3b3f2",
};
#define N_PALETTE (sizeof palette / sizeof palette[0])

static const char *device_colour(pr_device d)
{
	if (pr_device_is_host(d))
		return HOST_COLOUR;
	unsigned h = 0;
	if (strcmp(d.type, "cuda")) {   /* other device types: after cuda's, by name */
		for (const char *c = d.type; *c; c++)
			h = h * 31u + (unsigned char)*c;
		h = h % 5u + 3u;
	}
	return palette[(h + (unsigned)(d.index < 0 ? 0 : d.index)) % N_PALETTE];
}

/* Writes s between quotes for a dot ID or label; "\n" in s (a real newline)
 * becomes dot's line break. */
static void dot_text(pr_strbuf *b, const char *s)
{
	pr_strbuf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '\n')
			pr_strbuf_puts(b, "\\n");
		else if (*s == '"' || *s == '\\')
			pr_strbuf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			pr_strbuf_putc(b, *s);
	}
	pr_strbuf_putc(b, '"');
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

/* The per-call diagnostic of method g naming the tensor this copy moves (or
 * the copy itself), or NULL. */
static const pr_diag *copy_flag(const pr_node *n, const pr_graph *g, const pr_diags *diags)
{
	if (!diags || !is_copy(n) || n->n_args < 1 || n->args[0].kind != PR_ARG_VALUE)
		return NULL;
	const pr_node *src = n->args[0].u.value;
	for (int i = 0; i < diags->n; i++) {
		const pr_diag *d = &diags->items[i];
		if (!is_per_call_code(d->code) || !d->node || !d->method || strcmp(d->method, g->name))
			continue;
		if ((src->name && !strcmp(d->node, src->name)) || (n->name && !strcmp(d->node, n->name)))
			return d;
	}
	return NULL;
}

static pr_device value_device(const pr_node *n)
{
	if (n->type.kind == PR_TYPE_TENSOR)
		return n->type.tensor.device;
	if (n->type.kind == PR_TYPE_TUPLE && n->type.n_elems > 0)
		return n->type.elems[0].device;
	return pr_device_host();
}

/* A delegate's target_device (host when absent or not a device). */
static pr_device delegate_device(const pr_node *n)
{
	pr_device d = pr_device_host();
	const char *t = n->delegate ? pr_delegate_spec(n->delegate, "target_device") : NULL;
	if (!t || !pr_device_parse(t, strlen(t), &d))
		return pr_device_host();
	return d;
}

static pr_device node_device(const pr_node *n)
{
	return n->kind == PR_NODE_DELEGATE ? delegate_device(n) : value_device(n);
}

/* Bytes a value holds: a tensor's, a tuple's elements' together. */
static int64_t value_bytes(const pr_node *v)
{
	if (v->type.kind == PR_TYPE_TENSOR)
		return pr_spec_nbytes(&v->type.tensor);
	int64_t sum = 0;
	if (v->type.kind == PR_TYPE_TUPLE)
		for (int i = 0; i < v->type.n_elems; i++)
			sum += pr_spec_nbytes(&v->type.elems[i]);
	return sum;
}

static char *human_bytes(int64_t n)
{
	if (n < 1024)
		return pr_xasprintf("%lld B", (long long)n);
	if (n < 1024 * 1024)
		return pr_xasprintf("%.1f KiB", (double)n / 1024.0);
	return pr_xasprintf("%.1f MiB", (double)n / (1024.0 * 1024.0));
}

static const char *input_kind_name(pr_input_kind k)
{
	switch (k) {
	case PR_INPUT_USER: return "user input";
	case PR_INPUT_PARAMETER: return "parameter";
	case PR_INPUT_BUFFER: return "buffer";
	case PR_INPUT_CONSTANT: return "constant";
	case PR_INPUT_POSITIONAL: break;
	}
	return "input";
}

/* Two or three lines: name, what it is, and the device when not the host. */
static char *node_label(const pr_node *n, const pr_diag *flag)
{
	char dev[PR_DEVICE_STR_MAX];
	pr_device d = node_device(n);
	const char *name = n->name ? n->name : "";
	const char *sep = n->name ? "\n" : "";
	if (is_copy(n)) {
		char *bytes = human_bytes(value_bytes(n));
		char *s = pr_xasprintf("%s copy -> %s\n%s\n%s per call%s%s", n->schema->h2d ? "h2d" : "d2h",
				       pr_device_str(d, dev), name, bytes, flag ? "\n" : "",
				       flag ? flag->code : "");
		free(bytes);
		return s;
	}
	const char *what = "";
	char buf[64];
	switch (n->kind) {
	case PR_NODE_INPUT: what = input_kind_name(n->input_kind); break;
	case PR_NODE_OP: what = n->schema ? n->schema->full_name : "op"; break;
	case PR_NODE_DELEGATE: what = "delegate"; break;
	case PR_NODE_GETITEM:
		snprintf(buf, sizeof buf, "getitem %lld", (long long)n->index);
		what = buf;
		break;
	case PR_NODE_RETURN: what = "return"; break;
	}
	if (n->kind == PR_NODE_DELEGATE)
		return pr_xasprintf("%s%sdelegate @%s\non %s", name, sep,
				    n->delegate ? n->delegate->name : "?", pr_device_str(d, dev));
	if (!pr_device_is_host(d))
		return pr_xasprintf("%s%s%s\n@%s", name, sep, what, pr_device_str(d, dev));
	return pr_xasprintf("%s%s%s", name, sep, what);
}

/* Stable ids, so the same program draws the same file: a node is named by
 * its method and its own name, or its position when it has no result. */
static void emit_id(pr_strbuf *b, int method, const pr_node *n, long position)
{
	char *id = n->name ? pr_xasprintf("m%d %s", method, n->name)
			   : pr_xasprintf("m%d #%ld", method, position);
	dot_text(b, id);
	free(id);
}

static const char *node_shape(const pr_node *n)
{
	switch (n->kind) {
	case PR_NODE_INPUT: return "ellipse";
	case PR_NODE_DELEGATE: return "box3d";
	case PR_NODE_GETITEM: return "ellipse";
	case PR_NODE_RETURN: return "doublecircle";
	case PR_NODE_OP: break;
	}
	return "box";
}

static void emit_node(pr_strbuf *b, const pr_graph *g, int method, const pr_node *n,
		      long position, const pr_diags *diags)
{
	const pr_diag *flag = copy_flag(n, g, diags);
	char *label = node_label(n, flag);
	pr_strbuf_puts(b, "    ");
	emit_id(b, method, n, position);
	pr_strbuf_puts(b, " [label=");
	dot_text(b, label);
	free(label);
	pr_strbuf_printf(b, ", fillcolor=\"%s\"", device_colour(node_device(n)));
	if (is_copy(n))
		pr_strbuf_printf(b, ", shape=box, style=\"filled,bold\", peripheries=2, penwidth=%d",
				 flag ? 3 : 2);
	else if (n->kind == PR_NODE_OP)
		pr_strbuf_puts(b, ", shape=box, style=\"filled,rounded\"");
	else
		pr_strbuf_printf(b, ", shape=%s", node_shape(n));
	if (flag)
		pr_strbuf_puts(b, ", color=\"" FLAG_COLOUR "\", fontcolor=\"" FLAG_COLOUR "\"");
	pr_strbuf_puts(b, "];\n");
}

static void emit_edges_of(pr_strbuf *b, int method, const pr_node *user, long position,
			  const pr_arg *args, int n, bool flagged)
{
	for (int i = 0; i < n; i++) {
		const pr_arg *a = &args[i];
		if (a->kind == PR_ARG_LIST) {
			emit_edges_of(b, method, user, position, a->u.list.items, a->u.list.n, flagged);
			continue;
		}
		if (a->kind != PR_ARG_VALUE || !a->u.value)
			continue;
		const pr_node *v = a->u.value;
		pr_strbuf_puts(b, "    ");
		emit_id(b, method, v, -1);
		pr_strbuf_puts(b, " -> ");
		emit_id(b, method, user, position);
		char *bytes = human_bytes(value_bytes(v));
		pr_strbuf_puts(b, " [label=");
		dot_text(b, bytes);
		free(bytes);
		/* What crosses between devices is drawn heavier. */
		if (is_copy(user) || is_copy(v))
			pr_strbuf_puts(b, ", penwidth=2");
		if (flagged && is_copy(user))
			pr_strbuf_puts(b, ", color=\"" FLAG_COLOUR "\", fontcolor=\"" FLAG_COLOUR "\"");
		pr_strbuf_puts(b, "];\n");
	}
}

/* ---- the legend ---------------------------------------------------------- */

typedef struct device_set {
	int n;
	pr_device items[32];
} device_set;

static void device_set_add(device_set *s, pr_device d)
{
	if (pr_device_is_host(d))
		return;   /* the host is always in the legend */
	for (int i = 0; i < s->n; i++)
		if (pr_device_equal(s->items[i], d))
			return;
	if (s->n < (int)(sizeof s->items / sizeof s->items[0]))
		s->items[s->n++] = d;
}

static int by_device(const void *a, const void *b)
{
	const pr_device *x = a, *y = b;
	int c = strcmp(x->type, y->type);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* One row of boxes, kept in order by invisible edges: host, the devices
 * used (sorted), the copy shape, the flagged copy. */
static void emit_legend(pr_strbuf *b, const device_set *devs, bool any_copy, bool any_flag)
{
	pr_strbuf_puts(b, "  subgraph cluster_legend {\n    label=\"legend\"; style=dashed; "
			   "rank=same;\n"
			   "    \"legend 0\" [label=\"host (cpu)\", fillcolor=\"" HOST_COLOUR
			   "\", shape=box];\n");
	int k = 1;
	for (int i = 0; i < devs->n; i++, k++) {
		char dev[PR_DEVICE_STR_MAX];
		pr_strbuf_printf(b, "    \"legend %d\" [label=\"%s\", fillcolor=\"%s\", shape=box];\n",
				 k, pr_device_str(devs->items[i], dev), device_colour(devs->items[i]));
	}
	if (any_copy)
		pr_strbuf_printf(b, "    \"legend %d\" [label=\"copy (h2d/d2h)\\nbytes per call\", "
				 "fillcolor=white, shape=box, style=\"filled,bold\", peripheries=2, "
				 "penwidth=2];\n", k++);
	if (any_flag)
		pr_strbuf_printf(b, "    \"legend %d\" [label=\"copy on every call that\\na skip "
				 "flag asked to remove\", fillcolor=white, shape=box, "
				 "style=\"filled,bold\", peripheries=2, penwidth=3, color=\""
				 FLAG_COLOUR "\", fontcolor=\"" FLAG_COLOUR "\"];\n", k++);
	for (int i = 1; i < k; i++)
		pr_strbuf_printf(b, "    \"legend %d\" -> \"legend %d\" [style=invis];\n", i - 1, i);
	pr_strbuf_puts(b, "  }\n");
}

/* Which devices, copies and flagged copies the picture has. */
static void survey(const pr_program *p, const pr_diags *diags, device_set *devs, bool *any_copy,
		   bool *any_flag)
{
	for (int m = 0; m < p->n_methods; m++) {
		const pr_graph *g = p->methods[m];
		pr_graph_for_each(g, n) {
			device_set_add(devs, node_device(n));
			if (n->type.kind == PR_TYPE_TUPLE)
				for (int i = 0; i < n->type.n_elems; i++)
					device_set_add(devs, n->type.elems[i].device);
			*any_copy |= is_copy(n);
			*any_flag |= copy_flag(n, g, diags) != NULL;
		}
	}
	qsort(devs->items, (size_t)devs->n, sizeof devs->items[0], by_device);
}

char *pr_dot_render(const pr_program *p, const pr_diags *diags)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "digraph passrun {\n  rankdir=TB; fontname=\"Helvetica\";\n"
			   "  node [style=filled, shape=ellipse, fontname=\"Helvetica\"];\n"
			   "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	device_set devs = {0};
	bool any_copy = false, any_flag = false;
	survey(p, diags, &devs, &any_copy, &any_flag);
	emit_legend(&b, &devs, any_copy, any_flag);
	for (int m = 0; m < p->n_methods; m++) {
		const pr_graph *g = p->methods[m];
		pr_strbuf_printf(&b, "  subgraph cluster_%d {\n    label=", m);
		char *title = pr_xasprintf("method @%s", g->name);
		dot_text(&b, title);
		free(title);
		pr_strbuf_puts(&b, ";\n");
		long position = 0;
		pr_graph_for_each(g, n) {
			emit_node(&b, g, m, n, position, diags);
			emit_edges_of(&b, m, n, position, n->args, n->n_args,
				      copy_flag(n, g, diags) != NULL);
			position++;
		}
		pr_strbuf_puts(&b, "  }\n");
	}
	pr_strbuf_puts(&b, "}\n");
	return pr_strbuf_take(&b);
}
