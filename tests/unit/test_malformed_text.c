/* test_malformed_text.c: the corpus of bad text programs in
 * tests/malformed/text/. Each file's first line is `# expect: <text>`; the
 * parser must refuse the file with an error that starts with FILE:LINE:COL:
 * and contains that text. When the passrun binary can print programs, it must
 * also refuse each file with exit status 3 (bad program file). A new case is a
 * new file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passrun/format.h"
#include "testutil.h"

#define CORPUS PASSRUN_SOURCE_DIR "/tests/malformed/text"

typedef struct corpus {
	int n;
	char **paths;
} corpus;

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static corpus corpus_list(void)
{
	corpus c = {0};
	DIR *d = opendir(CORPUS);
	cr_assert_not_null(d, "no folder %s", CORPUS);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".pg") != 0)
			continue;
		c.paths = realloc(c.paths, (size_t)(c.n + 1) * sizeof *c.paths);
		c.paths[c.n] = malloc(strlen(CORPUS) + n + 2);
		sprintf(c.paths[c.n++], "%s/%s", CORPUS, e->d_name);
	}
	closedir(d);
	qsort(c.paths, (size_t)c.n, sizeof *c.paths, by_name);
	return c;
}

static void corpus_free(corpus *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
}

/* The text after "# expect: " on the first line (malloc'd), or NULL. */
static char *expectation(const char *text)
{
	const char *tag = "# expect: ";
	if (strncmp(text, tag, strlen(tag)) != 0)
		return NULL;
	const char *b = text + strlen(tag);
	return strndup(b, strcspn(b, "\n"));
}

/* Does m start with "PATH:LINE:COL: " (LINE and COL positive numbers)? */
static bool has_location(const char *m, const char *path)
{
	size_t k = strlen(path);
	if (strncmp(m, path, k) != 0 || m[k] != ':')
		return false;
	char *end;
	long line = strtol(m + k + 1, &end, 10);
	if (line < 1 || *end != ':')
		return false;
	long col = strtol(end + 1, &end, 10);
	return col >= 1 && end[0] == ':' && end[1] == ' ';
}

Test(malformed_text, corpus_is_large_enough)
{
	corpus c = corpus_list();
	cr_expect_geq(c.n, 18, "only %d files in %s", c.n, CORPUS);
	corpus_free(&c);
}

Test(malformed_text, each_file_fails_with_its_expected_error_and_location)
{
	corpus c = corpus_list();
	for (int i = 0; i < c.n; i++) {
		size_t len;
		char *text = tu_read_file(c.paths[i], &len);
		cr_assert_not_null(text);
		char *want = expectation(text);
		cr_expect_not_null(want, "%s: the first line must be '# expect: ...'", c.paths[i]);
		pr_program *p = NULL;
		pr_err *e = pr_text_parse(c.paths[i], text, len, &p);
		free(text);
		cr_expect_not_null(e, "%s parsed but must not", c.paths[i]);
		if (e && want) {
			const char *m = pr_err_message(e);
			cr_expect(has_location(m, c.paths[i]), "%s: '%s' lacks FILE:LINE:COL", c.paths[i], m);
			cr_expect(strstr(m, want), "%s: '%s' lacks '%s'", c.paths[i], m, want);
		}
		pr_err_free(e);
		pr_program_free(p);
		free(want);
	}
	corpus_free(&c);
}

/* Does the binary exist and print a valid program with --print? */
static bool cli_prints(void)
{
	if (access(PASSRUN_EXE, X_OK) != 0)
		return false;
	tu_result r = tu_run("'%s' --print '%s/tests/text/interfaces_example.pg'", PASSRUN_EXE,
			     PASSRUN_SOURCE_DIR);
	bool ok = r.status == 0 && strncmp(r.out, "passrun 1\n", 10) == 0;
	tu_result_free(&r);
	return ok;
}

Test(malformed_text, passrun_print_exits_3_with_the_location)
{
	if (!cli_prints())
		cr_skip_test("%s does not print programs yet", PASSRUN_EXE);
	corpus c = corpus_list();
	for (int i = 0; i < c.n; i++) {
		tu_result r = tu_run("'%s' --print '%s'", PASSRUN_EXE, c.paths[i]);
		cr_expect_eq(r.status, 3, "%s: exit %d, stderr: %s", c.paths[i], r.status, r.err);
		cr_expect(strstr(r.err, c.paths[i]), "%s: stderr does not name the file: %s", c.paths[i], r.err);
		tu_result_free(&r);
	}
	corpus_free(&c);
}
