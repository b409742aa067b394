/* json.c: a value of --stats=json by its path, read off the text.
 *
 * Not a JSON library: it walks the text passrun printed, skipping what the
 * path does not name, and returns the span of the value it names. Keys are
 * compared as written (passrun's keys need no escapes). A path is keys and
 * array indexes joined by '.'; a last step "#" is the number of members of
 * an object or elements of an array. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* p at '"': just after the closing quote, or NULL. */
static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : NULL;
}

static const char *skip_value(const char *p);

/* p at '{' or '[': just after the matching close, or NULL. */
static const char *skip_compound(const char *p)
{
	char close = *p == '{' ? '}' : ']';
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			p = *p == '"' ? skip_string(p) : NULL;
			if (!p || *(p = ws(p)) != ':')
				return NULL;
			p = ws(p + 1);
		}
		if (!(p = skip_value(p)))
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = ws(p + 1);
	}
}

static const char *skip_value(const char *p)
{
	p = ws(p);
	if (*p == '"')
		return skip_string(p);
	if (*p == '{' || *p == '[')
		return skip_compound(p);
	const char *s = p;
	while (*p && !strchr(",}] \n\t\r", *p))
		p++;
	return p > s ? p : NULL;
}

typedef struct member {
	const char *key, *key_end;   /* NULL in an array */
	const char *value;
} member;

/* Calls visit on each member of the object or array at p; stops when it
 * returns true and returns that member's value, else NULL. */
static const char *each_member(const char *p, bool (*visit)(const member *, void *), void *ctx)
{
	char close = *p == '{' ? '}' : ']';
	for (p = ws(p + 1); *p && *p != close;) {
		member m = {0};
		if (close == '}') {
			m.key = p + 1;
			if (!(p = skip_string(p)))
				return NULL;
			m.key_end = p - 1;
			p = ws(ws(p) + 1);
		}
		m.value = p;
		if (visit(&m, ctx))
			return m.value;
		if (!(p = skip_value(p)))
			return NULL;
		p = ws(p);
		p = ws(p + (*p == ','));
	}
	return NULL;
}

typedef struct lookup {
	const char *step;
	long index, seen;
	const char *nearest;
	size_t nearest_len, nearest_d;
} lookup;

static bool visit(const member *m, void *ctx)
{
	lookup *l = ctx;
	if (!m->key)
		return l->seen++ == l->index;
	size_t len = (size_t)(m->key_end - m->key);
	if (len == strlen(l->step) && !strncmp(m->key, l->step, len))
		return true;
	char *key = lit_strndup(m->key, len);
	size_t d = lit_edit_distance(key, l->step);
	free(key);
	if (!l->nearest || d < l->nearest_d) {
		l->nearest = m->key;
		l->nearest_len = len;
		l->nearest_d = d;
	}
	return false;
}

static bool count_all(const member *m, void *ctx)
{
	(void)m;
	++*(long *)ctx;
	return false;
}

/* One step from the value at p; NULL with why on failure. */
static const char *step(const char *p, const char *name, const char *path, size_t done,
			char *why, size_t why_size)
{
	static char count[32];   /* the "#" result: passrun-lit runs one test at a time */
	lookup l = {.step = name, .index = -1};
	if (*p != '{' && *p != '[') {
		snprintf(why, why_size, "%.*s is not an object or an array", (int)done, path);
		return NULL;
	}
	if (!strcmp(name, "#")) {
		long n = 0;
		each_member(p, count_all, &n);
		snprintf(count, sizeof count, "%ld", n);
		return count;
	}
	char *end;
	if (*p == '[' && ((l.index = strtol(name, &end, 10)) < 0 || *end || end == name)) {
		snprintf(why, why_size, "%.*s is an array: '%s' is not an index", (int)done, path, name);
		return NULL;
	}
	const char *v = each_member(p, visit, &l);
	if (v)
		return ws(v);
	if (*p == '[')
		snprintf(why, why_size, "%.*s has %ld element%s, no [%ld]", (int)done, path, l.seen,
			 l.seen == 1 ? "" : "s", l.index);
	else if (l.nearest)
		snprintf(why, why_size, "%.*s has no key '%s' (did you mean '%.*s'?)", (int)done, path,
			 name, (int)l.nearest_len, l.nearest);
	else
		snprintf(why, why_size, "%.*s has no key '%s' (it is empty)", (int)done, path, name);
	return NULL;
}

const char *lit_json_find(const char *json, const char *path, const char **end, char *why,
			  size_t why_size)
{
	const char *p = ws(json);
	for (const char *s = path; p;) {
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t)(dot - s) : strlen(s);
		char *name = lit_strndup(s, n);
		size_t done = s == path ? 0 : (size_t)(s - path - 1);
		p = step(p, name, done ? path : "the stats", done ? done : strlen("the stats"), why, why_size);
		bool counted = p && !strcmp(name, "#");
		free(name);
		if (!p)
			return NULL;
		if (counted) {
			*end = p + strlen(p);
			return p;
		}
		if (!dot)
			break;
		s = dot + 1;
	}
	const char *e = p ? skip_value(p) : NULL;
	if (!e) {
		snprintf(why, why_size, "the --stats=json output is not valid JSON at %s", path);
		return NULL;
	}
	*end = e;
	return p;
}
