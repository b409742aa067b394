/* text_print.c: the canonical text of a program (docs/text-format.md).
 *
 * `passrun 1`, a blank line, then the op statements (in declaration order),
 * the blobs, each delegate and each method, the groups separated by blank
 * lines and graph bodies indented by two spaces. Everything is printed in one
 * form only (floats as the shortest text that reads back exactly, strides only
 * when not contiguous, the host device never), which is what makes printing a
 * parsed program a fixed point. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/format.h"
#include "passrun/strbuf.h"

static void put_string(pr_strbuf *b, const char *s)
{
	pr_strbuf_putc(b, '"');
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c;) {
		size_t k;
		if (*c == '"' || *c == '\\') {
			pr_strbuf_putc(b, '\\');
			pr_strbuf_putc(b, (char)*c++);
		} else if (*c == '\n') {
			pr_strbuf_puts(b, "\\n"), c++;
		} else if (*c == '\t') {
			pr_strbuf_puts(b, "\\t"), c++;
		} else if (*c >= 0x20 && *c < 0x7f) {
			pr_strbuf_putc(b, (char)*c++);
		} else if (*c >= 0x80 && (k = pr_utf8_len(c, SIZE_MAX))) {
			pr_strbuf_add(b, (const char *)c, k);
			c += k;
		} else {
			pr_strbuf_printf(b, "\\x%02x", *c++);
		}
	}
	pr_strbuf_putc(b, '"');
}

static void put_ints(pr_strbuf *b, const int64_t *v, int n)
{
	pr_strbuf_putc(b, '[');
	for (int i = 0; i < n; i++)
		pr_strbuf_printf(b, i ? ",%" PRId64 : "%" PRId64, v[i]);
	pr_strbuf_putc(b, ']');
}

static void put_spec(pr_strbuf *b, const pr_spec *s)
{
	char dev[PR_DEVICE_STR_MAX];
	pr_strbuf_puts(b, pr_dtype_name(s->dtype));
	put_ints(b, s->shape, s->rank);
	if (!pr_device_is_host(s->device))
		pr_strbuf_printf(b, "@%s", pr_device_str(s->device, dev));
	bool strides = !pr_spec_is_contiguous(s);
	if (!strides && !s->has_mem)
		return;
	pr_strbuf_putc(b, '{');
	if (strides) {
		pr_strbuf_puts(b, "strides=");
		put_ints(b, s->strides, s->rank);
	}
	if (s->has_mem)
		pr_strbuf_printf(b, "%smem=%s:%" PRId64, strides ? ", " : "",
				 pr_device_str(s->mem_arena, dev), s->mem_offset);
	pr_strbuf_putc(b, '}');
}

static void put_type(pr_strbuf *b, const pr_type *t)
{
	switch (t->kind) {
	case PR_TYPE_TENSOR:
		put_spec(b, &t->tensor);
		break;
	case PR_TYPE_TUPLE:
		pr_strbuf_putc(b, '(');
		for (int i = 0; i < t->n_elems; i++) {
			if (i)
				pr_strbuf_puts(b, ", ");
			put_spec(b, &t->elems[i]);
		}
		pr_strbuf_putc(b, ')');
		break;
	case PR_TYPE_INT:
	case PR_TYPE_NONE:
		pr_strbuf_puts(b, "int");
		break;
	}
}

static void put_value(pr_strbuf *b, const pr_node *v)
{
	pr_strbuf_printf(b, "%%%s", v && v->name ? v->name : "?");
}

static void put_arg(pr_strbuf *b, const pr_arg *a)
{
	switch (a->kind) {
	case PR_ARG_VALUE: put_value(b, a->u.value); break;
	case PR_ARG_INT: pr_strbuf_printf(b, "%" PRId64, a->u.i); break;
	case PR_ARG_FLOAT: pr_strbuf_double(b, a->u.f); break;
	case PR_ARG_BOOL: pr_strbuf_puts(b, a->u.b ? "true" : "false"); break;
	case PR_ARG_NONE: pr_strbuf_puts(b, "none"); break;
	case PR_ARG_STRING: put_string(b, a->u.s); break;
	case PR_ARG_LIST:
		pr_strbuf_putc(b, '[');
		for (int i = 0; i < a->u.list.n; i++) {
			if (i)
				pr_strbuf_puts(b, ", ");
			put_arg(b, &a->u.list.items[i]);
		}
		pr_strbuf_putc(b, ']');
		break;
	}
}

static void put_args(pr_strbuf *b, const pr_node *n)
{
	pr_strbuf_putc(b, '(');
	for (int i = 0; i < n->n_args; i++) {
		if (i)
			pr_strbuf_puts(b, ", ");
		put_arg(b, &n->args[i]);
	}
	pr_strbuf_putc(b, ')');
}

/* A data value: true/false for bool tensors, integers for integer tensors
 * (when it is one), else the shortest exact float. */
static void put_number(pr_strbuf *b, double v, pr_dtype t, bool is_float)
{
	if (t == PR_BOOL && (v == 0 || v == 1))
		pr_strbuf_puts(b, v == 1 ? "true" : "false");
	else if (!is_float && v == floor(v) && fabs(v) < 9.0e15)
		pr_strbuf_printf(b, "%" PRId64, (int64_t)v);
	else
		pr_strbuf_double(b, v);
}

static void put_data(pr_strbuf *b, const pr_data *d, const pr_type *t)
{
	pr_dtype dt = t->kind == PR_TYPE_TENSOR ? t->tensor.dtype : PR_F32;
	bool is_float = pr_dtype_is_float(dt);
	switch (d->kind) {
	case PR_DATA_NONE: return;
	case PR_DATA_ZEROS: pr_strbuf_puts(b, " data=zeros"); return;
	case PR_DATA_ONES: pr_strbuf_puts(b, " data=ones"); return;
	case PR_DATA_ARANGE: pr_strbuf_puts(b, " data=arange"); return;
	case PR_DATA_FILL:
		pr_strbuf_puts(b, " data=fill(");
		put_number(b, d->fill, dt, is_float);
		pr_strbuf_putc(b, ')');
		return;
	case PR_DATA_RANDOM: pr_strbuf_printf(b, " data=random(%" PRIu64 ")", d->seed); return;
	case PR_DATA_LIST:
		pr_strbuf_puts(b, " data=[");
		for (int64_t i = 0; i < d->n_values; i++) {
			if (i)
				pr_strbuf_puts(b, ", ");
			put_number(b, d->values[i], dt, is_float);
		}
		pr_strbuf_putc(b, ']');
		return;
	case PR_DATA_BLOB: pr_strbuf_printf(b, " data=@%s", d->blob ? d->blob->name : "?"); return;
	}
}

static void put_input(pr_strbuf *b, const pr_node *n)
{
	static const char *const kinds[] = {
		[PR_INPUT_POSITIONAL] = "", [PR_INPUT_USER] = " user",
		[PR_INPUT_PARAMETER] = " parameter", [PR_INPUT_BUFFER] = " buffer",
		[PR_INPUT_CONSTANT] = " constant",
	};
	pr_strbuf_puts(b, "input");
	pr_strbuf_puts(b, kinds[n->input_kind]);
	if (n->input_name) {
		pr_strbuf_putc(b, ' ');
		put_string(b, n->input_name);
	}
	put_data(b, &n->data, &n->type);
}

static void put_return(pr_strbuf *b, const pr_node *n)
{
	pr_strbuf_puts(b, "return");
	for (int i = 0; i < n->n_args; i++) {
		pr_strbuf_puts(b, i ? ", " : " ");
		put_arg(b, &n->args[i]);
		const pr_writeback *w = n->writebacks ? &n->writebacks[i] : NULL;
		if (w && w->kind != PR_WRITEBACK_NONE) {
			pr_strbuf_puts(b, w->kind == PR_WRITEBACK_BUFFER ? " -> buffer " : " -> input ");
			put_string(b, w->target);
		}
	}
}

static void put_node(pr_strbuf *b, const pr_node *n)
{
	pr_strbuf_puts(b, "  ");
	if (n->kind == PR_NODE_RETURN) {
		put_return(b, n);
		pr_strbuf_putc(b, '\n');
		return;
	}
	if (n->name || n->kind != PR_NODE_OP) {
		put_value(b, n);
		pr_strbuf_puts(b, ": ");
		put_type(b, &n->type);
		pr_strbuf_puts(b, " = ");
	}
	switch (n->kind) {
	case PR_NODE_INPUT:
		put_input(b, n);
		break;
	case PR_NODE_OP:
		pr_strbuf_puts(b, n->schema ? n->schema->full_name : "unknown::op");
		put_args(b, n);
		break;
	case PR_NODE_DELEGATE:
		pr_strbuf_printf(b, "delegate @%s", n->delegate ? n->delegate->name : "?");
		put_args(b, n);
		break;
	case PR_NODE_GETITEM:
		pr_strbuf_puts(b, "getitem ");
		if (n->n_args)
			put_arg(b, &n->args[0]);
		pr_strbuf_printf(b, ", %" PRId64, n->index);
		break;
	case PR_NODE_RETURN:
		break;
	}
	pr_strbuf_putc(b, '\n');
}

static void put_body(pr_strbuf *b, const pr_graph *g)
{
	pr_strbuf_puts(b, " {\n");
	pr_graph_for_each(g, n)
		put_node(b, n);
	pr_strbuf_puts(b, "}\n");
}

static void put_blob(pr_strbuf *b, const pr_blob *blob)
{
	static const char hex[] = "0123456789abcdef";
	pr_strbuf_printf(b, "blob @%s hex\"", blob->name);
	for (int64_t i = 0; i < blob->size; i++) {
		char two[2] = { hex[blob->bytes[i] >> 4], hex[blob->bytes[i] & 15] };
		pr_strbuf_add(b, two, 2);
	}
	pr_strbuf_puts(b, "\"\n");
}

char *pr_text_print(const pr_program *p, size_t *len)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "passrun 1\n");
	if (p->n_schemas)
		pr_strbuf_putc(&b, '\n');
	for (int i = 0; i < p->n_schemas; i++)
		pr_strbuf_printf(&b, "op %s\n", p->schemas[i]->text);
	if (p->blobs)
		pr_strbuf_putc(&b, '\n');
	for (const pr_blob *blob = p->blobs; blob; blob = blob->next)
		put_blob(&b, blob);
	for (int i = 0; i < p->n_delegates; i++) {
		const pr_delegate *d = p->delegates[i];
		pr_strbuf_printf(&b, "\ndelegate @%s", d->name);
		for (int k = 0; k < d->n_specs; k++) {
			pr_strbuf_printf(&b, " %s=", d->specs[k].key);
			put_string(&b, d->specs[k].value);
		}
		put_body(&b, d->body);
	}
	for (int i = 0; i < p->n_methods; i++) {
		pr_strbuf_printf(&b, "\nmethod @%s", p->methods[i]->name);
		put_body(&b, p->methods[i]);
	}
	if (len)
		*len = b.len;
	char *out = pr_strbuf_take(&b);
	pr_strbuf_free(&b);
	return out;
}
