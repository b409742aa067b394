/* test_refused.c: programs that once crashed passrun or wrote outside a
 * tensor (issue 16), in tests/runtime/refused/. Each file opens with
 *   # expect-exit: N
 *   # expect: TEXT            (any number of lines; each must be on stderr)
 *   # args: ARGS              (optional; default --run --check --device=sim)
 * and passrun ARGS FILE must exit with N (never a signal) and print each
 * TEXT on standard error. A new case is a new file. Under the sanitizer
 * build, a heap overflow or a signed overflow also fails the case, as a
 * crash (exit 1 from ASan is not N). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CORPUS PASSRUN_SOURCE_DIR "/tests/runtime/refused"

/* The value of header line "# KEY: value" number i (0-based among that key),
 * copied into buf; false when there is none. */
static bool header(const char *text, const char *key, int i, char *buf, size_t cap)
{
	char tag[64];
	snprintf(tag, sizeof tag, "# %s: ", key);
	for (const char *line = text; line && *line == '#';) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		if (strncmp(line, tag, strlen(tag)) == 0 && i-- == 0) {
			n -= strlen(tag);
			n = n < cap - 1 ? n : cap - 1;
			memcpy(buf, line + strlen(tag), n);
			buf[n] = 0;
			return true;
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

static void check_case(const char *path)
{
	char *text = tu_read_file(path, NULL);
	cr_assert_not_null(text, "cannot read %s", path);
	char exit_s[16], args[512], want[512];
	cr_assert(header(text, "expect-exit", 0, exit_s, sizeof exit_s), "%s: no # expect-exit:", path);
	if (!header(text, "args", 0, args, sizeof args))
		snprintf(args, sizeof args, "--run --check --device=sim");
	tu_result r = tu_run("%s %s %s", PASSRUN_EXE, args, path);
	cr_expect_eq(r.status, atoi(exit_s), "%s: exit %d, expected %s\n%s", path, r.status, exit_s,
		     r.err);
	for (int i = 0; header(text, "expect", i, want, sizeof want); i++)
		cr_expect(strstr(r.err, want), "%s: stderr lacks \"%s\":\n%s", path, want, r.err);
	tu_result_free(&r);
	free(text);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(refused, every_case_exits_as_expected_with_its_message)
{
	DIR *d = opendir(CORPUS);
	cr_assert_not_null(d, "no folder %s", CORPUS);
	char *paths[512];
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 512;) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 3, ".pg") != 0)
			continue;
		paths[n] = malloc(strlen(CORPUS) + len + 2);
		sprintf(paths[n++], "%s/%s", CORPUS, e->d_name);
	}
	closedir(d);
	qsort(paths, (size_t)n, sizeof *paths, by_name);
	cr_expect(n > 0, "no cases in %s", CORPUS);
	for (int i = 0; i < n; i++) {
		check_case(paths[i]);
		free(paths[i]);
	}
}
