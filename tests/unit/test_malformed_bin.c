/* test_malformed_bin.c: the corpus of bad binary programs in
 * tests/malformed/bin/, made by gen.py there (an independent writer that
 * follows docs/binary-format.md) from base.valid.
 *
 * base.valid must load and print as base.valid.txt, and the C writer must
 * produce exactly its bytes: the documented layout and the code agree. Each
 * NAME.bin must fail to load with an error that says "byte" and contains
 * every line of NAME.expect, from memory (an exact-size buffer, so that the
 * sanitizers see any read past it) and from the file; `passrun --print` must
 * exit 3 on each. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passrun/format.h"
#include "testutil.h"

#define CORPUS PASSRUN_SOURCE_DIR "/tests/malformed/bin"

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
	cr_assert_not_null(d, "cannot open %s", CORPUS);
	for (struct dirent *ent; (ent = readdir(d));) {
		size_t n = strlen(ent->d_name);
		if (n < 5 || strcmp(ent->d_name + n - 4, ".bin"))
			continue;
		c.paths = realloc(c.paths, (size_t)(c.n + 1) * sizeof *c.paths);
		char *path = malloc(strlen(CORPUS) + n + 2);
		sprintf(path, "%s/%s", CORPUS, ent->d_name);
		c.paths[c.n++] = path;
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

/* NAME.expect next to NAME.bin. */
static char *expect_of(const char *bin_path)
{
	size_t n = strlen(bin_path);
	char *path = malloc(n + 4);
	memcpy(path, bin_path, n - 4);
	strcpy(path + n - 4, ".expect");
	char *text = tu_read_file(path, NULL);
	cr_assert_not_null(text, "%s is missing", path);
	free(path);
	return text;
}

/* Every non-empty line of expect must be in msg. */
static void expect_lines(const char *what, const char *msg, const char *expect)
{
	char *copy = strdup(expect), *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		cr_expect(strstr(msg, line), "%s: '%s' lacks '%s'", what, msg, line);
	free(copy);
}

static void check_message(const char *path, const char *msg, const char *expect)
{
	cr_expect(strstr(msg, path), "%s: '%s' does not name the file", path, msg);
	cr_expect(strstr(msg, ": byte "), "%s: '%s' does not give a byte offset", path, msg);
	expect_lines(path, msg, expect);
}

Test(malformed_bin, corpus_is_large_enough)
{
	corpus c = corpus_list();
	cr_expect_geq(c.n, 15, "only %d malformed binary files in %s", c.n, CORPUS);
	corpus_free(&c);
}

Test(malformed_bin, base_loads_prints_its_text_and_matches_the_c_writer)
{
	size_t len;
	uint8_t *bin = (uint8_t *)tu_read_file(CORPUS "/base.valid", &len);
	cr_assert_not_null(bin);
	pr_program *p = NULL;
	pr_err *e = pr_program_load_file(CORPUS "/base.valid", &p);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	char *text = tu_read_file(CORPUS "/base.valid.txt", NULL);
	pr_program *t = tu_parse(text);
	size_t n;
	char *want = pr_text_print(t, &n), *got = pr_text_print(p, &n);
	cr_expect_str_eq(got, want);

	uint8_t *mine;
	size_t mine_len;
	cr_assert_null(pr_binary_write(t, &mine, &mine_len));
	cr_expect_eq(mine_len, len, "the C writer gives %zu bytes, gen.py %zu", mine_len, len);
	for (size_t i = 0; i < len && i < mine_len; i++) {
		if (mine[i] != bin[i]) {
			cr_expect_fail("the C writer and gen.py differ first at byte %zu", i);
			break;
		}
	}
	free(mine);
	free(want);
	free(got);
	free(text);
	free(bin);
	pr_program_free(t);
	pr_program_free(p);
}

Test(malformed_bin, each_file_fails_with_its_expected_error_and_offset)
{
	corpus c = corpus_list();
	for (int i = 0; i < c.n; i++) {
		const char *path = c.paths[i];
		char *expect = expect_of(path);
		size_t len;
		char *whole = tu_read_file(path, &len);
		uint8_t *exact = malloc(len ? len : 1);   /* no slack after the last byte */
		memcpy(exact, whole, len);
		pr_program *p = NULL;
		pr_err *e = pr_binary_load(path, exact, len, true, &p);
		cr_expect_not_null(e, "%s loaded", path);
		if (e)
			check_message(path, pr_err_message(e), expect);
		else
			pr_program_free(p);
		pr_err_free(e);

		/* By file: binary by content (a file without the magic is text,
		 * and must fail as text). */
		p = NULL;
		e = pr_program_load_file(path, &p);
		cr_expect_not_null(e, "%s loaded from its file", path);
		if (e && pr_binary_sniff(exact, len))
			check_message(path, pr_err_message(e), expect);
		if (!e)
			pr_program_free(p);
		pr_err_free(e);
		free(exact);
		free(whole);
		free(expect);
	}
	corpus_free(&c);
}

/* Does the binary exist and print a valid program with --print? */
static bool cli_prints(void)
{
	if (access(PASSRUN_EXE, X_OK) != 0)
		return false;
	tu_result r = tu_run("'%s' --print '%s/base.valid'", PASSRUN_EXE, CORPUS);
	bool ok = r.status == 0 && strncmp(r.out, "passrun 1\n", 10) == 0;
	tu_result_free(&r);
	return ok;
}

Test(malformed_bin, passrun_print_exits_3_naming_the_byte)
{
	if (!cli_prints())
		cr_skip_test("%s does not print binary programs yet", PASSRUN_EXE);
	corpus c = corpus_list();
	for (int i = 0; i < c.n; i++) {
		tu_result r = tu_run("'%s' --print '%s'", PASSRUN_EXE, c.paths[i]);
		cr_expect_eq(r.status, 3, "%s: exit %d, stderr: %s", c.paths[i], r.status, r.err);
		cr_expect(strstr(r.err, c.paths[i]), "%s: stderr does not name the file: %s",
			  c.paths[i], r.err);
		tu_result_free(&r);
	}
	corpus_free(&c);
}
