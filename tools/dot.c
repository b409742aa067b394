/* dot.c: Graphviz output. See dot.h for what the picture shows.
 *
 * A node's colour is its device's: the value it produces (a tuple's first
 * element), or for a delegate its target_device, so a delegate keeps its
 * colour before placement too. Colours come from a fixed table, indexed by a
 * hash of the device's type plus its index, so the same device has the same
 * colour in every picture, before and after a pipeline, whatever its type,
 * and one type's devices 0..7 never share one. Copies of tensors that a
 * diagnostic flags PR_DIAG_PER_CALL_COPY are outlined in red: the picture
 * knows no plugin and no device name. A legend cluster lists the devices the
 * picture uses, the copy shape, and the red outline when used. Text goes through
 * dot_text, which escapes what Graphviz would read as markup; a line break in
 * a label is a real "\n" escape. */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "passrun/manager.h"   /* pr_nearest */
#include "passrun/strbuf.h"

#define HOST_COLOUR "#e0e0e0"
#define FLAG_COLOUR "#d00000"
#define ADDED_COLOUR "#008a00"
#define REMOVED_COLOUR "#808080"

static const char *const palette[] = {
	"#7fb3e6", "#8fd18f", "#f2c36b", "#c39be0", "#e68f8f", "#7fd6d6", "#d6b38f", "#b3b3f2",
};
#define N_PALETTE (sizeof palette / sizeof palette[0])

/* A stable hash of the type picks the type's first entry; the index counts
 * on from there, so a type's devices 0..7 never share a colour. */
static const char *device_colour(pr_device d)
{
	if (pr_device_is_host(d))
		return HOST_COLOUR;
	d = pr_device_canonical(d);
	unsigned h = 2166136261u;   /* FNV-1a */
	for (const char *c = d.type; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	return palette[(h + (unsigned)d.index) % N_PALETTE];
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
	const pr_schema *s = pr_node_schema(n);
	return s && (s->h2d || s->d2h);
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
		if (!(d->flags & PR_DIAG_PER_CALL_COPY) || !d->node || !d->method || strcmp(d->method, g->name))
			continue;
		if ((src->name && !strcmp(d->node, src->name)) || (n->name && !strcmp(d->node, n->name)))
			return d;
	}
	return NULL;
}

static pr_device value_device(const pr_node *n)
{
	if (n->type.kind == PR_TYPE_TENSOR)
		return pr_spec_device(&n->type.tensor);
	if (n->type.kind == PR_TYPE_TUPLE && n->type.n_elems > 0)
		return pr_spec_device(&n->type.elems[0]);
	return pr_device_host();
}

/* A delegate's device (host when it has none or it is not a device). */
static pr_device delegate_device(const pr_node *n)
{
	pr_device d = pr_device_host();
	const pr_delegate *dl = pr_node_delegate(n);
	pr_err *err = dl ? pr_delegate_device(dl, &d) : NULL;
	pr_err_free(err);
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
		const char *dir = n->of_kind.schema->h2d ? "h2d" : "d2h";   /* a copy: an op */
		char *s = pr_xasprintf("%s copy -> %s\n%s\n%s per call%s%s", dir,
				       pr_device_str(d, dev), name, bytes, flag ? "\n" : "",
				       flag ? flag->code : "");
		free(bytes);
		return s;
	}
	const char *what = "";
	char buf[64];
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT: what = input_kind_name(n->of_kind.input->kind); break;
	case PR_NODE_OP: what = n->of_kind.schema ? n->of_kind.schema->full_name : "op"; break;
	case PR_NODE_DELEGATE: what = "delegate"; break;
	case PR_NODE_GETITEM:
		snprintf(buf, sizeof buf, "getitem %lld", (long long)n->of_kind.index);
		what = buf;
		break;
	case PR_NODE_RETURN: what = "return"; break;
	}
	if (n->kind == PR_NODE_DELEGATE)
		return pr_xasprintf("%s%sdelegate @%s\non %s", name, sep,
				    n->of_kind.delegate ? n->of_kind.delegate->name : "?",
				    pr_device_str(d, dev));
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
	switch ((pr_node_kind)n->kind) {
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

/* One cluster: a method or a delegate's body, and its namesake before the
 * change that --dot-changes marks (NULL: none, or no namesake). */
typedef struct drawn_graph {
	const pr_graph *g;
	const pr_graph *before;
	int index;             /* the cluster's number: stable ids */
	bool is_delegate;
	const char *name;
	const pr_node **nodes; /* graph order */
	int *dist;             /* per node: edges from the window's centre, -1 outside */
	int n;
} drawn_graph;

/* Positions by node: a sorted copy of nodes for bsearch. */
typedef struct node_index {
	const pr_node **sorted;
	int *pos;
	int n;
} node_index;

static bool is_drawn(const drawn_graph *d, const node_index *ix, const pr_node *n);


/* Edges from what user reads, when both ends are drawn. */
static void emit_edges_of(pr_strbuf *b, int method, const pr_node *user, long position,
			  const pr_arg *args, int n, bool flagged, const drawn_graph *d,
			  const node_index *ix)
{
	for (int i = 0; i < n; i++) {
		const pr_arg *a = &args[i];
		if (a->kind == PR_ARG_LIST) {
			emit_edges_of(b, method, user, position, a->u.items, a->n_items, flagged,
				      d, ix);
			continue;
		}
		if (a->kind != PR_ARG_VALUE || !a->u.value || !is_drawn(d, ix, a->u.value))
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
static void emit_legend(pr_strbuf *b, const device_set *devs, bool any_copy, bool any_flag,
			const pr_dot_view *changes)
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
	if (changes) {
		const char *by = changes->changed_by ? changes->changed_by : "the change";
		pr_strbuf_printf(b, "    \"legend %d\" [label=", k++);
		char *t = pr_xasprintf("added by %s", by);
		dot_text(b, t);
		free(t);
		pr_strbuf_puts(b, ", fillcolor=white, shape=box, penwidth=3, color=\"" ADDED_COLOUR "\"];\n");
		pr_strbuf_printf(b, "    \"legend %d\" [label=", k++);
		t = pr_xasprintf("removed by %s", by);
		dot_text(b, t);
		free(t);
		pr_strbuf_puts(b, ", fillcolor=white, shape=box, style=dashed, color=\"" REMOVED_COLOUR
				  "\", fontcolor=\"" REMOVED_COLOUR "\"];\n");
	}
	for (int i = 1; i < k; i++)
		pr_strbuf_printf(b, "    \"legend %d\" -> \"legend %d\" [style=invis];\n", i - 1, i);
	pr_strbuf_puts(b, "  }\n");
}

/* Which devices, copies and flagged copies the drawn part has. */
static void survey(const drawn_graph *list, int n, const pr_diags *diags, device_set *devs,
		   bool *any_copy, bool *any_flag)
{
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < list[i].n; k++) {
			const pr_node *node = list[i].nodes[k];
			if (list[i].dist[k] < 0)
				continue;
			device_set_add(devs, node_device(node));
			if (node->type.kind == PR_TYPE_TUPLE)
				for (int e = 0; e < node->type.n_elems; e++)
					device_set_add(devs, pr_spec_device(&node->type.elems[e]));
			*any_copy |= is_copy(node);
			*any_flag |= copy_flag(node, list[i].g, diags) != NULL;
		}
	}
	qsort(devs->items, (size_t)devs->n, sizeof devs->items[0], by_device);
}

/* ---- what is drawn: graphs, windows, changes ----------------------------- */

static int node_cmp(const void *a, const void *b)
{
	const pr_node *x = *(const pr_node *const *)a, *y = *(const pr_node *const *)b;
	return (x > y) - (x < y);
}

static node_index index_nodes(const drawn_graph *d)
{
	node_index ix = {pr_xmalloc(((size_t)d->n + 1) * sizeof *ix.sorted),
			 pr_xmalloc(((size_t)d->n + 1) * sizeof *ix.pos), d->n};
	memcpy(ix.sorted, d->nodes, (size_t)d->n * sizeof *ix.sorted);
	qsort(ix.sorted, (size_t)d->n, sizeof *ix.sorted, node_cmp);
	for (int i = 0; i < d->n; i++) {
		const pr_node **hit = bsearch(&d->nodes[i], ix.sorted, (size_t)d->n,
					      sizeof *ix.sorted, node_cmp);
		ix.pos[hit - ix.sorted] = i;
	}
	return ix;
}

static int position_of(const node_index *ix, const pr_node *n)
{
	const pr_node **hit = bsearch(&n, ix->sorted, (size_t)ix->n, sizeof *ix->sorted, node_cmp);
	return hit ? ix->pos[hit - ix->sorted] : -1;
}

static bool is_drawn(const drawn_graph *d, const node_index *ix, const pr_node *n)
{
	int k = position_of(ix, n);
	return k >= 0 && d->dist[k] >= 0;
}

static void free_index(node_index *ix)
{
	free(ix->sorted);
	free(ix->pos);
}

/* Calls visit(node, ctx) for every value node n reads (lists included). */
static void for_each_arg(const pr_arg *args, int n, void (*visit)(const pr_node *, void *), void *ctx)
{
	for (int i = 0; i < n; i++) {
		if (args[i].kind == PR_ARG_LIST)
			for_each_arg(args[i].u.items, args[i].n_items, visit, ctx);
		else if (args[i].kind == PR_ARG_VALUE && args[i].u.value)
			visit(args[i].u.value, ctx);
	}
}

typedef struct bfs {
	const node_index *ix;
	int *dist, *queue, tail, d;
} bfs;

static void bfs_visit(const pr_node *v, void *ctx)
{
	bfs *b = ctx;
	int i = position_of(b->ix, v);
	if (i >= 0 && b->dist[i] < 0) {
		b->dist[i] = b->d + 1;
		b->queue[b->tail++] = i;
	}
}

/* dist[i] = edges (arguments or readers, either way) from centre, up to
 * radius; -1 beyond. */
static void window(drawn_graph *d, int centre, int radius)
{
	node_index ix = index_nodes(d);
	bfs b = {&ix, d->dist, pr_xmalloc(((size_t)d->n + 1) * sizeof(int)), 0, 0};
	for (int i = 0; i < d->n; i++)
		d->dist[i] = -1;
	d->dist[centre] = 0;
	b.queue[b.tail++] = centre;
	for (int head = 0; head < b.tail; head++) {
		const pr_node *n = d->nodes[b.queue[head]];
		b.d = d->dist[b.queue[head]];
		if (b.d == radius)
			continue;
		for_each_arg(n->args, n->n_args, bfs_visit, &b);
		for (int u = 0; u < n->n_uses; u++)
			bfs_visit(pr_use_user(&n->uses[u]), &b);
	}
	free(b.queue);
	free_index(&ix);
}

static void add_graph(drawn_graph **list, int *n, const pr_graph *g, const pr_graph *before,
		      bool is_delegate, const char *name)
{
	*list = pr_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
	drawn_graph *d = &(*list)[*n];
	*d = (drawn_graph){g, before, *n, is_delegate, name, NULL, NULL, 0};
	pr_graph_for_each(g, node) d->n++;
	d->nodes = pr_xmalloc(((size_t)d->n + 1) * sizeof *d->nodes);
	d->dist = pr_xmalloc(((size_t)d->n + 1) * sizeof *d->dist);
	int i = 0;
	pr_graph_for_each(g, node) {
		d->dist[i] = 0;
		d->nodes[i++] = node;
	}
	(*n)++;
}

static void free_graphs(drawn_graph *list, int n)
{
	for (int i = 0; i < n; i++) {
		free(list[i].nodes);
		free(list[i].dist);
	}
	free(list);
}

static pr_err *not_found(const char *what, const char *name, const char **names, int n)
{
	const char *near = pr_nearest(name, names, n);
	pr_err *e = near ? pr_err_new("--dot: no %s named '%s' (did you mean '%s'?)", what, name, near)
			 : pr_err_new("--dot: no %s named '%s'", what, name);
	free(names);
	return e;
}

/* The graphs the view asks for: every method, one method, or one delegate. */
static pr_err *choose_graphs(const pr_program *p, const pr_dot_view *v, drawn_graph **list, int *n)
{
	const pr_program *b = v ? v->before : NULL;
	if (v && v->delegate) {
		const pr_delegate *dl = pr_program_find_delegate(p, v->delegate);
		if (!dl) {
			const char **names = pr_xmalloc(((size_t)p->n_delegates + 1) * sizeof *names);
			for (int i = 0; i < p->n_delegates; i++)
				names[i] = p->delegates[i]->name;
			return not_found("delegate", v->delegate, names, p->n_delegates);
		}
		const pr_delegate *old = b ? pr_program_find_delegate(b, dl->name) : NULL;
		add_graph(list, n, dl->body, old ? old->body : NULL, true, dl->name);
		return NULL;
	}
	for (int m = 0; m < p->n_methods; m++) {
		const pr_graph *g = p->methods[m];
		if (v && v->method && strcmp(v->method, g->name))
			continue;
		add_graph(list, n, g, b ? pr_program_find_method(b, g->name) : NULL, false, g->name);
	}
	if (v && v->method && !*n) {
		const char **names = pr_xmalloc(((size_t)p->n_methods + 1) * sizeof *names);
		for (int i = 0; i < p->n_methods; i++)
			names[i] = p->methods[i]->name;
		return not_found("method", v->method, names, p->n_methods);
	}
	return NULL;
}

/* Narrows the graphs to the window around v->around (in the first graph that
 * has a node of that name). */
static pr_err *apply_window(drawn_graph *list, int n, const pr_dot_view *v)
{
	if (!v || !v->around)
		return NULL;
	if (v->radius < 0)
		return pr_err_new("--dot: a window's radius must be >= 0, not %d", v->radius);
	for (int i = 0; i < n; i++) {
		const pr_node *c = pr_graph_find(list[i].g, v->around);
		if (!c)
			continue;
		for (int k = 0; k < list[i].n; k++)
			if (list[i].nodes[k] == c)
				window(&list[i], k, v->radius);
		for (int j = 0; j < n; j++)
			if (j != i)
				list[j].n = 0;   /* the window lies in one graph */
		return NULL;
	}
	int total = 0;
	for (int i = 0; i < n; i++)
		total += list[i].n;
	const char **names = pr_xmalloc(((size_t)total + 1) * sizeof *names);
	int k = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < list[i].n; j++)
			if (list[i].nodes[j]->name)
				names[k++] = list[i].nodes[j]->name;
	return not_found("node", v->around, names, k);
}

/* ---- changes: what the graph has that its namesake before had not -------- */

/* A nameless node (a call without a result) is known by its op and the
 * names of what it reads; named nodes by their name. */
static bool same_nameless(const pr_node *a, const pr_node *b)
{
	const pr_schema *sa = pr_node_schema(a), *sb = pr_node_schema(b);
	if (a->name || b->name || a->kind != b->kind || sa != sb ||
	    (sa && sb && strcmp(sa->full_name, sb->full_name)) || a->n_args != b->n_args)
		return false;
	for (int i = 0; i < a->n_args; i++) {
		const pr_arg *x = &a->args[i], *y = &b->args[i];
		if (x->kind != y->kind)
			return false;
		if (x->kind == PR_ARG_VALUE && x->u.value && y->u.value &&
		    (!x->u.value->name || !y->u.value->name || strcmp(x->u.value->name, y->u.value->name)))
			return false;
	}
	return true;
}

static bool has_counterpart(const pr_graph *other, const pr_node *n)
{
	if (n->kind == PR_NODE_RETURN)
		return true;   /* every graph has one; what it returns shows on its edges */
	if (n->name)
		return pr_graph_find(other, n->name) != NULL;
	pr_graph_for_each(other, o) {
		if (same_nameless(o, n))
			return true;
	}
	return false;
}

/* The node of g, drawn in the window, that a removed node's argument a named
 * (by name: the removed node belongs to the program before), or NULL. */
static const pr_node *drawn_arg(const drawn_graph *d, const node_index *ix, const pr_arg *a)
{
	if (a->kind != PR_ARG_VALUE || !a->u.value || !a->u.value->name)
		return NULL;
	const pr_node *now = pr_graph_find(d->g, a->u.value->name);
	return now && is_drawn(d, ix, now) ? now : NULL;
}

/* A node of before that g no longer has, drawn dashed, with dashed edges
 * from what it read that g still has and draws. */
static void emit_removed(pr_strbuf *b, const drawn_graph *d, const node_index *ix,
			 const pr_node *old, long position, const char *by)
{
	pr_strbuf_puts(b, "    ");
	char *id = pr_xasprintf("m%d removed %s#%ld", d->index, old->name ? old->name : "", position);
	dot_text(b, id);
	char *label = node_label(old, NULL);
	char *full = pr_xasprintf("%s\nremoved by %s", label, by);
	pr_strbuf_puts(b, " [label=");
	dot_text(b, full);
	pr_strbuf_puts(b, ", shape=box, style=\"dashed\", fillcolor=white, color=\"" REMOVED_COLOUR
			  "\", fontcolor=\"" REMOVED_COLOUR "\"];\n");
	for (int i = 0; i < old->n_args; i++) {
		const pr_node *now = drawn_arg(d, ix, &old->args[i]);
		if (!now)
			continue;
		pr_strbuf_puts(b, "    ");
		emit_id(b, d->index, now, -1);
		pr_strbuf_puts(b, " -> ");
		dot_text(b, id);
		pr_strbuf_puts(b, " [style=dashed, color=\"" REMOVED_COLOUR "\"];\n");
	}
	free(full);
	free(label);
	free(id);
}

/* Whether a removed node touches the window: it read a drawn node. */
static bool removed_in_window(const drawn_graph *d, const node_index *ix, const pr_node *old)
{
	for (int i = 0; i < old->n_args; i++)
		if (drawn_arg(d, ix, &old->args[i]))
			return true;
	return false;
}

/* ---- the picture ---------------------------------------------------------- */

typedef struct render {
	pr_strbuf *b;
	const pr_diags *diags;
	const pr_dot_view *view;
	bool windowed;
	int n_drawn, n_added, n_removed;
} render;

/* How many of n's neighbours the window leaves out. */
static int hidden_neighbours(const drawn_graph *d, const node_index *ix, const pr_node *n)
{
	int hidden = 0;
	for (int i = 0; i < n->n_args; i++) {
		const pr_arg *a = &n->args[i];
		if (a->kind == PR_ARG_VALUE && a->u.value)
			hidden += !is_drawn(d, ix, a->u.value);
	}
	for (int u = 0; u < n->n_uses; u++)
		hidden += !is_drawn(d, ix, pr_use_user(&n->uses[u]));
	return hidden;
}

static void emit_window_note(render *r, const drawn_graph *d, const node_index *ix,
			     const pr_node *n, long position)
{
	int hidden = r->windowed ? hidden_neighbours(d, ix, n) : 0;
	if (!hidden)
		return;
	pr_strbuf_puts(r->b, "    ");
	emit_id(r->b, d->index, n, position);
	pr_strbuf_printf(r->b, " [xlabel=\"+%d not drawn\"];\n", hidden);
}

static void emit_added_mark(render *r, const drawn_graph *d, const pr_node *n, long position)
{
	if (!d->before || has_counterpart(d->before, n))
		return;
	r->n_added++;
	pr_strbuf_puts(r->b, "    ");
	emit_id(r->b, d->index, n, position);
	char *note = pr_xasprintf("added by %s", r->view->changed_by ? r->view->changed_by : "the change");
	pr_strbuf_puts(r->b, " [color=\"" ADDED_COLOUR "\", penwidth=3, xlabel=");
	dot_text(r->b, note);
	pr_strbuf_puts(r->b, ", fontcolor=\"" ADDED_COLOUR "\"];\n");
	free(note);
}

/* Edges into user from drawn nodes only. */
typedef struct edge_ctx {
	render *r;
	const drawn_graph *d;
	const node_index *ix;
} edge_ctx;

static void emit_graph(render *r, const drawn_graph *d)
{
	pr_strbuf *b = r->b;
	pr_strbuf_printf(b, "  subgraph cluster_%d {\n    label=", d->index);
	char *title = pr_xasprintf("%s @%s", d->is_delegate ? "delegate" : "method", d->name);
	dot_text(b, title);
	free(title);
	pr_strbuf_puts(b, ";\n");
	node_index ix = index_nodes(d);
	for (int i = 0; i < d->n; i++) {
		const pr_node *n = d->nodes[i];
		if (d->dist[i] < 0)
			continue;
		r->n_drawn++;
		const pr_diag *flag = copy_flag(n, d->g, r->diags);
		emit_node(b, d->g, d->index, n, i, r->diags);
		emit_added_mark(r, d, n, i);
		emit_window_note(r, d, &ix, n, i);
		emit_edges_of(b, d->index, n, i, n->args, n->n_args, flag != NULL, d, &ix);
	}
	if (d->before) {
		long position = 0;
		pr_graph_for_each(d->before, old) {
			if (!has_counterpart(d->g, old) && (!r->windowed || removed_in_window(d, &ix, old))) {
				emit_removed(b, d, &ix, old, position, r->view->changed_by ? r->view->changed_by
											 : "the change");
				r->n_removed++;
			}
			position++;
		}
	}
	free_index(&ix);
	pr_strbuf_puts(b, "  }\n");
}

pr_err *pr_dot_render_view(const pr_program *p, const pr_diags *diags, const pr_dot_view *view,
			   char **text, int *n_drawn)
{
	static const pr_dot_view whole = {0};
	drawn_graph *list = NULL;
	int n = 0;
	*text = NULL;
	view = view ? view : &whole;
	pr_err *e = choose_graphs(p, view, &list, &n);
	if (!e)
		e = apply_window(list, n, view);
	if (e) {
		free_graphs(list, n);
		return e;
	}
	pr_strbuf body, head;
	pr_strbuf_init(&body);
	pr_strbuf_init(&head);
	render r = {&body, diags, view, view->around != NULL, 0, 0, 0};
	for (int i = 0; i < n; i++)
		if (list[i].n)
			emit_graph(&r, &list[i]);
	pr_strbuf_puts(&head, "digraph passrun {\n  rankdir=TB; fontname=\"Helvetica\";\n"
			      "  node [style=filled, shape=ellipse, fontname=\"Helvetica\"];\n"
			      "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	device_set devs = {0};
	bool any_copy = false, any_flag = false;
	survey(list, n, diags, &devs, &any_copy, &any_flag);
	emit_legend(&head, &devs, any_copy, any_flag, r.n_added || r.n_removed ? view : NULL);
	pr_strbuf_puts(&head, body.data ? body.data : "");
	pr_strbuf_puts(&head, "}\n");
	free(pr_strbuf_take(&body));
	free_graphs(list, n);
	if (n_drawn)
		*n_drawn = r.n_drawn;
	*text = pr_strbuf_take(&head);
	return NULL;
}

char *pr_dot_render(const pr_program *p, const pr_diags *diags)
{
	char *text;
	pr_err *e = pr_dot_render_view(p, diags, NULL, &text, NULL);
	PR_ASSERT(!e);   /* the whole program has nothing to look up */
	return text;
}
