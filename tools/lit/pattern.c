/* pattern.c: what a CHECK, COUNT or STDERR text matches.
 *
 * Plain text matches as written. A text with "{{...}}" in it is a pattern:
 * what is inside the braces is a POSIX extended regular expression, the rest
 * is still plain text (FileCheck's rule), e.g.
 *
 *   # CHECK cuda: %x: f32[2,3]@cuda:0{mem=cuda:0:{{[0-9]+}}} = input user "x"
 *
 * A pattern never matches across a line end ('.' and [^...] stop at it,
 * '^' and '$' are the ends of a line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

/* Appends the plain text [s, e) to the regex, each special character escaped. */
static char *add_literal(char *o, const char *s, const char *e)
{
	for (; s < e; s++) {
		if (strchr(".[]{}()\\*+?|^$", *s))
			*o++ = '\\';
		*o++ = *s;
	}
	return o;
}

bool lit_pattern_compile(lit_pattern *p, const char *text, char *why, size_t why_size)
{
	p->text = text;
	p->re = NULL;
	if (!strstr(text, "{{"))
		return true;
	char *src = malloc(2 * strlen(text) + 1), *o = src;
	for (const char *s = text; *s;) {
		const char *open = strstr(s, "{{");
		const char *close = open ? strstr(open + 2, "}}") : NULL;
		if (open && !close) {
			snprintf(why, why_size, "a '{{' is not closed by '}}'");
			free(src);
			return false;
		}
		o = add_literal(o, s, open ? open : s + strlen(s));
		if (!open)
			break;
		*o++ = '(';
		memcpy(o, open + 2, (size_t)(close - open - 2));
		o += close - open - 2;
		*o++ = ')';
		s = close + 2;
	}
	*o = 0;
	p->re = malloc(sizeof *p->re);
	int rc = regcomp(p->re, src, REG_EXTENDED | REG_NEWLINE);
	free(src);
	if (rc) {
		char msg[256];
		regerror(rc, p->re, msg, sizeof msg);
		snprintf(why, why_size, "the regular expression does not compile: %s", msg);
		free(p->re);
		p->re = NULL;
		return false;
	}
	return true;
}

void lit_pattern_free(lit_pattern *p)
{
	if (p->re)
		regfree(p->re);
	free(p->re);
	p->re = NULL;
}

const char *lit_pattern_find(const lit_pattern *p, const char *text, const char *from,
			     const char **end)
{
	if (!p->re) {
		const char *at = strstr(from, p->text);
		if (at)
			*end = at + strlen(p->text);
		return at;
	}
	regmatch_t m;
	int flags = from > text && from[-1] != '\n' ? REG_NOTBOL : 0;
	if (regexec(p->re, from, 1, &m, flags))
		return NULL;
	*end = from + m.rm_eo;
	return from + m.rm_so;
}

int lit_pattern_count(const lit_pattern *p, const char *text)
{
	int n = 0;
	const char *end;
	for (const char *at = text; *at && (at = lit_pattern_find(p, text, at, &end)); n++)
		at = end > at ? end : at + 1;   /* an empty match moves on by one */
	return n;
}
