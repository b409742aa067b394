#define _GNU_SOURCE   /* nftw */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/format.h"

/* One fresh folder per test process, removed when that process exits.
 * Named by mkdtemp, not by the pid: pids come round again, and a folder left
 * by an earlier process (a FIFO in it, say) made mkfifo fail. Criterion's
 * test children inherit the folder of the process that made it; only that
 * process removes it. */
static char temp_dir[64];
static pid_t temp_dir_owner;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void remove_temp_dir(void)
{
	if (temp_dir[0] && getpid() == temp_dir_owner)
		nftw(temp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tu_temp_dir(void)
{
	if (!temp_dir[0]) {
		snprintf(temp_dir, sizeof temp_dir, "/tmp/passrun-test-XXXXXX");
		if (!mkdtemp(temp_dir))
			cr_assert_fail("cannot make a temporary folder: %s", strerror(errno));
		temp_dir_owner = getpid();
		atexit(remove_temp_dir);
	}
	return temp_dir;
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

tu_result tu_run(const char *fmt, ...)
{
	char cmd[8192], full[9000], out_path[300], err_path[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(out_path, sizeof out_path, "%s/run.out", tu_temp_dir());
	snprintf(err_path, sizeof err_path, "%s/run.err", tu_temp_dir());
	snprintf(full, sizeof full, "( %s ) >%s 2>%s </dev/null", cmd, out_path, err_path);
	int raw = system(full);
	tu_result r = {0};
	if (WIFEXITED(raw))
		r.status = WEXITSTATUS(raw);
	else if (WIFSIGNALED(raw))
		r.status = 128 + WTERMSIG(raw);
	else
		r.status = -1;
	r.out = tu_read_file(out_path, NULL);
	r.err = tu_read_file(err_path, NULL);
	if (!r.out)
		r.out = strdup("");
	if (!r.err)
		r.err = strdup("");
	return r;
}

void tu_result_free(tu_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

const char *tu_write_temp(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", tu_temp_dir(), name);
	FILE *f = fopen(path, "wb");
	cr_assert(f, "cannot write %s", path);
	fwrite(text, 1, strlen(text), f);
	fclose(f);
	return path;
}

const char *tu_gen_decoder(int nodes)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/decoder%d.pg", tu_temp_dir(), nodes);
	tu_result r = tu_run("python3 %s/examples/gen/gen_decoder.py --nodes %d -o %s",
			     PASSRUN_SOURCE_DIR, nodes, path);
	cr_assert_eq(r.status, 0, "gen_decoder.py --nodes %d: %s", nodes, r.err);
	tu_result_free(&r);
	return path;
}

bool tu_set_device(pr_spec *s, const char *text)
{
	pr_device d;
	if (!pr_device_parse(text, strlen(text), &d))
		return false;
	pr_spec_set_device(s, d);
	return true;
}

pr_program *tu_parse(const char *text)
{
	pr_program *p = NULL;
	pr_err *e = pr_text_parse("test.pg", text, strlen(text), &p);
	if (e) {
		char msg[2048];
		snprintf(msg, sizeof msg, "%s", pr_err_message(e));
		pr_err_free(e);
		cr_assert_fail("parse failed: %s", msg);
	}
	return p;
}

int tu_count(const char *haystack, const char *needle)
{
	int n = 0;
	size_t len = strlen(needle);
	for (const char *p = haystack; (p = strstr(p, needle)); p += len)
		n++;
	return n;
}
