/* Tests of pr_file_sink (core/format/fileio.c, fileio.h), through which every
 * program is saved as it is made (in the stages the sink lends, or through
 * pr_file_sink_write): the streamed file is the bytes the in-memory writers
 * return; an error midway (the sink's, or the writer's) leaves the target
 * as it was and no temporary file; a header rewritten at the end lands at
 * the front; a FIFO gets the binary file whole; a loaded binary's borrowed
 * bytes stay valid once the rest of its mapping is dropped. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/fileio.h"
#include "passrun/format.h"
#include "testutil.h"

/* A path in this test's temporary folder (static storage, one per slot). */
static const char *tpath(int slot, const char *name)
{
	static char paths[4][600];
	snprintf(paths[slot], sizeof paths[slot], "%s/%s", tu_temp_dir(), name);
	return paths[slot];
}

static int count_temps(void)
{
	tu_result r = tu_run("ls -A %s | grep -c passrun-tmp", tu_temp_dir());
	int n = atoi(r.out);
	tu_result_free(&r);
	return n;
}

static void write_old(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "cannot create %s", path);
	fputs("old", f);
	fclose(f);
}

static void assert_old(const char *path)
{
	char *text = tu_read_file(path, NULL);
	cr_assert(text && !strcmp(text, "old"), "%s was changed", path);
	free(text);
}

/* A program whose files take several of the writers' 1 MB chunks: a chain
 * of nodes long enough, a blob and a constant in DATA. */
static pr_program *big_program(int nodes)
{
	size_t cap = (size_t)nodes * 64 + 4096, len = 0;
	char *t = malloc(cap);
	len += (size_t)snprintf(t + len, cap - len,
				"passrun 1\n\nop aten::relu(Tensor self) -> Tensor\n\n"
				"blob @raw hex\"0102030405060708\"\n\nmethod @forward {\n"
				"  %%b: u8[8] = input constant \"b\" data=@raw\n"
				"  %%c: f32[4] = input constant \"c\" data=arange\n"
				"  %%n0: f32[2,3] = input user \"x\"\n");
	for (int i = 1; i < nodes; i++)
		len += (size_t)snprintf(t + len, cap - len,
					"  %%n%d: f32[2,3] = aten::relu(%%n%d)\n", i, i - 1);
	snprintf(t + len, cap - len, "  return %%n%d\n}\n", nodes - 1);
	pr_program *p = tu_parse(t);
	free(t);
	return p;
}

static void assert_file_is(const char *path, const void *want, size_t n)
{
	size_t len;
	char *got = tu_read_file(path, &len);
	cr_assert(got, "%s was not written", path);
	cr_assert_eq(len, n, "%s: %zu bytes, expected %zu", path, len, n);
	cr_assert(!memcmp(got, want, n), "%s differs from the in-memory writer's bytes", path);
	free(got);
}

Test(file_sink, streamed_files_are_the_in_memory_bytes)
{
	pr_program *p = big_program(40000);
	uint8_t *bin;
	size_t bin_len, text_len;
	cr_assert_null(pr_binary_write(p, &bin, &bin_len));
	cr_assert_gt(bin_len, (size_t)2 << 20, "the program must take several chunks (%zu bytes)", bin_len);
	char *text = pr_text_print(p, &text_len);
	cr_assert_null(pr_program_save_file(p, tpath(0, "out.bin")));
	cr_assert_null(pr_program_save_file(p, tpath(1, "out.pg")));
	assert_file_is(tpath(0, "out.bin"), bin, bin_len);
	assert_file_is(tpath(1, "out.pg"), text, text_len);
	cr_assert_eq(count_temps(), 0);
	free(bin);
	free(text);
	pr_program_free(p);
}

Test(file_sink, abort_leaves_the_target_and_no_temporary)
{
	const char *out = tpath(0, "out.pg");
	write_old(out);
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(out, &s));
	cr_assert(pr_file_sink_can_seek(s));
	for (int i = 0; i < 3; i++)
		pr_file_sink_write(s, "new bytes\n", 10);
	cr_assert_eq(count_temps(), 1, "the bytes go to a temporary file next to the target");
	assert_old(out);
	pr_file_sink_abort(s);
	assert_old(out);
	cr_assert_eq(count_temps(), 0);
}

Test(file_sink, write_at_rewrites_the_front_and_the_mode_is_kept)
{
	const char *out = tpath(0, "out.bin");
	write_old(out);
	cr_assert_eq(chmod(out, 0640), 0);
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(out, &s));
	pr_file_sink_write(s, "....", 4);
	pr_file_sink_write(s, "body", 4);
	pr_file_sink_write_at(s, 0, "head", 4);
	cr_assert_null(pr_file_sink_commit(s));
	assert_file_is(out, "headbody", 8);
	struct stat st;
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert_eq(count_temps(), 0);
}

/* Files past the sink's writeback steps (it starts the disk on every 8 MB
 * written): one long run, split in steps, then many short writes, and bytes
 * rewritten at the front and inside, arrive whole and in place. */
Test(file_sink, long_files_arrive_whole_past_the_writeback_steps)
{
	size_t n = (size_t)27 << 20, piece = 4093, head = n / 2;
	uint8_t *want = malloc(n);
	for (size_t i = 0; i < n; i++)
		want[i] = (uint8_t)(i * 131 + (i >> 20));
	const char *out = tpath(0, "long.bin");
	write_old(out);
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(out, &s));
	pr_file_sink_write(s, "....", 4);
	pr_file_sink_write(s, want + 4, head - 4);
	for (size_t at = head; at < n; at += piece)
		pr_file_sink_write(s, want + at, at + piece < n ? piece : n - at);
	pr_file_sink_write_at(s, 0, want, 4);
	pr_file_sink_write_at(s, (uint64_t)head - 2, "xy", 2);
	want[head - 2] = 'x';
	want[head - 1] = 'y';
	cr_assert_null(pr_file_sink_commit(s));
	assert_file_is(out, want, n);
	cr_assert_eq(count_temps(), 0);
	free(want);
}

/* A replaced file past 8 MB is let go by a thread of the sink's (freeing
 * it is slow), not by the rename: the name gets the new bytes at once, the
 * old file's other name and a reader that opened it before keep the old
 * bytes, and the old file, its last name gone, is freed. */
Test(file_sink, big_replaced_file_is_released_whole)
{
	size_t n = (size_t)9 << 20;
	uint8_t *old = malloc(n);
	memset(old, 'o', n);
	const char *out = tpath(0, "big.bin"), *other = tpath(1, "big-other.bin");
	cr_assert_null(pr_file_write_atomic(out, old, n));
	cr_assert_eq(link(out, other), 0);
	int reader = open(out, O_RDONLY);
	cr_assert_geq(reader, 0);
	cr_assert_null(pr_file_write_atomic(out, "new", 3));
	assert_file_is(out, "new", 3);
	assert_file_is(other, old, n);
	cr_assert_null(pr_file_write_atomic(other, "new too", 7));
	assert_file_is(other, "new too", 7);
	struct stat st;
	cr_assert_eq(fstat(reader, &st), 0);
	cr_assert_eq(st.st_nlink, 0, "the old file keeps a name");
	char *got = malloc(n);
	cr_assert_eq(pread(reader, got, n, 0), (ssize_t)n);
	cr_assert(!memcmp(got, old, n), "the old file changed under its reader");
	close(reader);
	cr_assert_eq(count_temps(), 0);
	free(got);
	free(old);
}

/* The sink's own error midway: the file system refuses a write once the
 * file passes RLIMIT_FSIZE (EFBIG, SIGXFSZ ignored), chunks after the
 * first. Each test runs in its own process, so the limit stays here. */
Test(file_sink, write_error_midway_leaves_the_target_and_no_temporary)
{
	pr_program *p = big_program(40000);
	const char *names[] = {"out.bin", "out.pg"};
	for (int i = 0; i < 2; i++)
		write_old(tpath(i, names[i]));
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit lim = {(rlim_t)3 << 19, (rlim_t)3 << 19};   /* 1.5 MB */
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 2; i++) {
		pr_err *e = pr_program_save_file(p, tpath(i, names[i]));
		cr_assert(e, "%s: saved past the file size limit", names[i]);
		const char *m = pr_err_message(e);
		cr_assert(strstr(m, tpath(i, names[i])) && strstr(m, "cannot write"), "%s", m);
		pr_err_free(e);
		assert_old(tpath(i, names[i]));
		cr_assert_eq(count_temps(), 0, "%s: a temporary file was left", names[i]);
	}
	pr_program_free(p);
}

/* The writer's own error, found after chunks were written: a string too long
 * for the format, in the first section, is reported once the metadata is
 * done. */
Test(file_sink, writer_error_midway_leaves_the_target_and_no_temporary)
{
	pr_program *p = big_program(40000);
	const char *out = tpath(0, "out.bin");
	write_old(out);
	size_t n = (size_t)PR_MAX_STRING_BYTES + 1;
	char *huge = malloc(n + 1);
	memset(huge, 'a', n);
	huge[n] = 0;
	char *text = p->schemas[0]->text;
	p->schemas[0]->text = huge;
	pr_err *e = pr_program_save_file(p, out);
	p->schemas[0]->text = text;
	free(huge);
	cr_assert(e, "a string over the format's limit was saved");
	cr_assert(strstr(pr_err_message(e), "more than the"), "%s", pr_err_message(e));
	pr_err_free(e);
	assert_old(out);
	cr_assert_eq(count_temps(), 0);
	pr_program_free(p);
}

/* A FIFO cannot seek: the binary file, whose header comes last, reaches its
 * reader whole and in order all the same. */
Test(file_sink, binary_to_a_fifo_arrives_whole)
{
	pr_program *p = big_program(20000);
	uint8_t *bin;
	size_t bin_len;
	cr_assert_null(pr_binary_write(p, &bin, &bin_len));
	const char *fifo = tpath(0, "pipe.bin"), *copy = tpath(1, "copy.bin");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {   /* the reader */
		int in = open(fifo, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		char buf[65536];
		ssize_t k;
		while (in >= 0 && out >= 0 && (k = read(in, buf, sizeof buf)) > 0)
			if (write(out, buf, (size_t)k) != k)
				_exit(1);
		_exit(in >= 0 && out >= 0 ? 0 : 1);
	}
	cr_assert_null(pr_program_save_file(p, fifo));
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct stat sb;
	cr_assert_eq(lstat(fifo, &sb), 0);
	cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
	assert_file_is(copy, bin, bin_len);
	free(bin);
	pr_program_free(p);
}

/* After a load the mapping's pages outside DATA are handed back; the blob
 * and the constant, which borrow from DATA, still read their bytes, and the
 * program prints as the one saved. */
Test(file_sink, loaded_binary_keeps_its_borrowed_bytes)
{
	pr_program *p = big_program(20000);
	const char *out = tpath(0, "in.bin");
	cr_assert_null(pr_program_save_file(p, out));
	pr_program *q;
	cr_assert_null(pr_program_load_file(out, &q));
	cr_assert_not_null(q->mapping);
	cr_assert(q->blobs && q->blobs->borrowed);
	cr_assert(!memcmp(q->blobs->bytes, "\1\2\3\4\5\6\7\10", 8));
	pr_node *c = pr_graph_find(q->methods[0], "c");
	cr_assert(c && pr_node_input(c)->data.mapped);
	const float want[4] = {0, 1, 2, 3};
	cr_assert(!memcmp(pr_node_input(c)->data.mapped, want, sizeof want));
	size_t n1, n2;
	char *a = pr_text_print(p, &n1), *b = pr_text_print(q, &n2);
	cr_assert(n1 == n2 && !memcmp(a, b, n1), "the loaded program differs from the saved one");
	free(a);
	free(b);
	pr_program_free(q);
	pr_program_free(p);
}
