/* exec.c: running passrun for a RUN line.
 *
 * No shell: the arguments are split here, as sh splits words ('...' and
 * "..." quote, a backslash escapes the next character), and passrun is
 * started with execv, so that a test means the same on every machine and a
 * program path with spaces is one argument. Standard output and error go to
 * temporary files, read once the run has ended (no pipe to fill up). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lit.h"

typedef struct words {
	char **v;
	int n, cap;
} words;

static void words_add(words *w, char *s)
{
	if (w->n + 2 > w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->v = realloc(w->v, (size_t)w->cap * sizeof *w->v);
		if (!w->v)
			abort();
	}
	w->v[w->n++] = s;
	w->v[w->n] = NULL;
}

/* One word starting at *s; NULL with *why on an unterminated quote. */
static char *next_word(const char **s, const char **why)
{
	const char *p = *s;
	char *out = malloc(strlen(p) + 1), *o = out, quote = 0;
	for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
		if (quote && *p == quote)
			quote = 0;
		else if (!quote && (*p == '\'' || *p == '"'))
			quote = *p;
		else if (*p == '\\' && quote != '\'' && p[1])
			*o++ = *++p;
		else
			*o++ = *p;
	}
	*o = 0;
	*s = p;
	if (quote) {
		*why = quote == '\'' ? "a ' is not closed" : "a \" is not closed";
		free(out);
		return NULL;
	}
	return out;
}

char **lit_split_args(const char *args, const char **why)
{
	words w = {0};
	words_add(&w, NULL);
	w.n = 0;
	for (const char *s = args;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return w.v;
		char *word = next_word(&s, why);
		if (!word) {
			for (int i = 0; i < w.n; i++)
				free(w.v[i]);
			free(w.v);
			return NULL;
		}
		words_add(&w, word);
	}
}

static char *read_back(FILE *f)
{
	fflush(f);
	long len = ftell(f);
	char *buf = malloc(len > 0 ? (size_t)len + 1 : 1);
	if (!buf)
		abort();
	rewind(f);
	size_t got = len > 0 ? fread(buf, 1, (size_t)len, f) : 0;
	buf[got] = 0;
	fclose(f);
	return buf;
}

static char *command_line(char **argv)
{
	size_t len = 1;
	for (int i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 3;
	char *s = malloc(len), *o = s;
	for (int i = 0; argv[i]; i++) {
		bool q = argv[i][strcspn(argv[i], " \t{}'\"*")] != 0;
		o += sprintf(o, i ? (q ? " '%s'" : " %s") : "%s", argv[i]);
	}
	return s;
}

/* The --stats=json object is the last thing on standard output. */
static void split_stats(lit_run *r, char *out)
{
	char *json = NULL;
	if (!strncmp(out, "{\n", 2))
		json = out;
	for (char *p = out; (p = strstr(p, "\n{\n")); p++)
		json = p + 1;
	if (json) {
		r->stats = strdup(json);
		*json = 0;
	}
}

static bool has_arg(char **argv, const char *a)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], a))
			return true;
	return false;
}

void lit_run_exec(lit_case *c, lit_run *r, const lit_options *o)
{
	r->command = command_line(r->argv);
	if (o->verbose)
		fprintf(stderr, "%s:%d: RUN %s: %s\n", c->path, r->line, r->label, r->command);
	FILE *out = tmpfile(), *err = tmpfile();
	if (!out || !err) {
		perror("passrun-lit: tmpfile");
		exit(LIT_USAGE);
	}
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		execv(r->argv[0], r->argv);
		perror(r->argv[0]);
		_exit(127);
	}
	int ws = 0;
	if (pid < 0 || waitpid(pid, &ws, 0) < 0) {
		perror("passrun-lit: running passrun");
		exit(LIT_USAGE);
	}
	r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	char *text = read_back(out);
	r->err = read_back(err);
	if (has_arg(r->argv, "--stats=json"))
		split_stats(r, text);
	r->out = c->ignore_mem ? lit_strip_mem(text) : strdup(text);
	free(text);
}
