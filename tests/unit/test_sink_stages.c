/* Tests of the writer thread behind pr_file_sink (core/format/fileio.c): a
 * temporary file is written from 1 MB stages, O_DIRECT where the file
 * system lets it, and through the page cache where it does not. Files of
 * every size around a block (4096) and a stage (1 MB) arrive byte for byte,
 * written whole or in odd pieces, with bytes rewritten at the front and
 * across a stage's edge; on a tmpfs (/dev/shm) as on the test folder's
 * file system; and when O_DIRECT is refused, at fcntl or at a write
 * (EINVAL), which this test makes happen by standing in for fcntl and
 * pwrite (the library calls them through the executable's symbols first).
 * An abort with stages still queued leaves no temporary file. And the
 * binary writer (binary_write.c) hands back a loaded program's mapped
 * constant pages once they are written, which read back the same. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "passrun/fileio.h"
#include "passrun/format.h"
#include "testutil.h"

#define MB ((size_t)1 << 20)
#define TMPFS_MAGIC_NUMBER 0x01021994

/* ---- O_DIRECT refused on demand ------------------------------------------ */

enum { REFUSE_NONE, REFUSE_AT_FCNTL, REFUSE_AT_WRITE };
static int refuse = REFUSE_NONE;
static int refusals;   /* how many times O_DIRECT was refused */

static long real_getfl(int fd)
{
	return syscall(SYS_fcntl, fd, F_GETFL, 0);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);   /* as glibc's own fcntl reads it, passed or not */
	va_end(ap);
	if (refuse == REFUSE_AT_FCNTL && cmd == F_SETFL && (arg & O_DIRECT)) {
		refusals++;
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
	if (refuse == REFUSE_AT_WRITE && (real_getfl(fd) & O_DIRECT)) {
		refusals++;
		errno = EINVAL;
		return -1;
	}
	return syscall(SYS_pwrite64, fd, buf, n, at);
}

/* ---- helpers --------------------------------------------------------------- */

static const size_t sizes[] = {
	0, 1, 4095, 4096, 4097, MB - 1, MB, MB + 1, 3 * MB + 17,
};

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + (i >> 12) + seed);
	return p;
}

/* The file's bytes against want, naming the first that differs: which
 * block or stage went wrong is what a failure here has to tell. */
static void assert_file_is(const char *path, const uint8_t *want, size_t n)
{
	size_t len, at = 0;
	uint8_t *got = (uint8_t *)tu_read_file(path, &len);
	cr_assert(got, "%s was not written", path);
	while (at < len && at < n && got[at] == want[at])
		at++;
	free(got);
	cr_assert(at == n && len == n, "%s: %zu bytes, expected %zu; the first to differ is at %zu "
		  "(stage %zu, block %zu)", path, len, n, at, at / MB, at % MB / 4096);
}

static int count_temps(const char *dir)
{
	tu_result r = tu_run("ls -A %s | grep -c passrun-tmp", dir);
	int n = atoi(r.out);
	tu_result_free(&r);
	return n;
}

/* The piece of at most want bytes to put next: written, or (lend) made in
 * the room the sink lends, and every third of those written after all. */
static size_t put_piece(pr_file_sink *s, const uint8_t *bytes, size_t want, bool lend, int k)
{
	size_t room;
	uint8_t *stage = lend ? pr_file_sink_lend(s, &room) : NULL;
	if (!stage || k % 3 == 2) {
		pr_file_sink_write(s, bytes, want);
		return want;
	}
	cr_assert_gt(room, 0, "a stage lent with no room");
	size_t n = want < room ? want : room;
	memcpy(stage, bytes, n);
	pr_file_sink_advance(s, n);
	return n;
}

/* n bytes in pieces of 4093 with the first bytes rewritten last (the
 * binary writer's header) and two bytes rewritten across the first stage's
 * edge. */
static void write_in_pieces(const char *path, uint8_t *want, size_t n, bool lend)
{
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(path, &s));
	size_t head = n < 8 ? n : 8;
	uint8_t zeros[8] = {0};
	pr_file_sink_write(s, zeros, head);
	int k = 0;
	for (size_t at = head; at < n; k++)
		at += put_piece(s, want + at, n - at < 4093 ? n - at : 4093, lend, k);
	if (n > MB) {   /* across the edge: MB + 1 has its last byte still staged */
		want[MB - 1] ^= 0xff;
		want[MB] ^= 0xff;
		pr_file_sink_write_at(s, MB - 1, want + MB - 1, 2);
	}
	pr_file_sink_write_at(s, 0, want, head);
	cr_assert_null(pr_file_sink_commit(s), "%zu bytes", n);
	assert_file_is(path, want, n);
}

/* Every size, written in one piece, then in pieces written, then in pieces
 * made in the lent stages. */
static void write_every_size(const char *dir)
{
	char path[600];
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		size_t n = sizes[k];
		uint8_t *want = pattern(n, (unsigned)k);
		snprintf(path, sizeof path, "%s/whole-%zu.bin", dir, n);
		cr_assert_null(pr_file_write_atomic(path, want, n));
		assert_file_is(path, want, n);
		snprintf(path, sizeof path, "%s/pieces-%zu.bin", dir, n);
		write_in_pieces(path, want, n, false);
		free(want);
		want = pattern(n, (unsigned)k);
		snprintf(path, sizeof path, "%s/lent-%zu.bin", dir, n);
		write_in_pieces(path, want, n, true);
		free(want);
	}
	cr_assert_eq(count_temps(dir), 0);
}

/* ---- tests ------------------------------------------------------------------ */

Test(sink_stages, every_size_arrives_whole)
{
	write_every_size(tu_temp_dir());
}

/* A tmpfs: older kernels refuse O_DIRECT there (EINVAL), newer ones take
 * it; the file is the same either way. */
Test(sink_stages, every_size_arrives_whole_on_a_tmpfs)
{
	struct statfs fs;
	if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC_NUMBER)
		cr_skip_test("no tmpfs at /dev/shm");
	char dir[] = "/dev/shm/passrun-test-XXXXXX";
	if (!mkdtemp(dir))
		cr_skip_test("cannot make a folder in /dev/shm: %s", strerror(errno));
	write_every_size(dir);
	tu_result r = tu_run("rm -rf %s", dir);
	tu_result_free(&r);
}

Test(sink_stages, o_direct_refused_at_fcntl_writes_through_the_cache)
{
	refuse = REFUSE_AT_FCNTL;
	write_every_size(tu_temp_dir());
	cr_assert_gt(refusals, 0, "O_DIRECT was never asked for");
}

Test(sink_stages, o_direct_refused_at_a_write_writes_through_the_cache)
{
	refuse = REFUSE_AT_WRITE;
	write_every_size(tu_temp_dir());
	cr_assert_gt(refusals, 0, "no write was made with O_DIRECT");
}

/* Aborted with stages queued for the thread: the thread ends, the target
 * stays as it was, and no temporary file remains. */
Test(sink_stages, abort_with_stages_queued_leaves_nothing)
{
	char path[600];
	snprintf(path, sizeof path, "%s/aborted.bin", tu_temp_dir());
	cr_assert_null(pr_file_write_atomic(path, "old", 3));
	uint8_t *bytes = pattern(5 * MB + 3, 1);
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(path, &s));
	pr_file_sink_write(s, bytes, 5 * MB + 3);
	pr_file_sink_abort(s);
	assert_file_is(path, (const uint8_t *)"old", 3);
	cr_assert_eq(count_temps(tu_temp_dir()), 0);
	free(bytes);
}

/* The same with the stages filled where they lie, up to the last byte of
 * the third, which makes the thread write the first two: what the thread
 * has queued is dropped, and nothing remains. */
Test(sink_stages, abort_with_lent_stages_queued_leaves_nothing)
{
	char path[600];
	snprintf(path, sizeof path, "%s/aborted-lent.bin", tu_temp_dir());
	cr_assert_null(pr_file_write_atomic(path, "old", 3));
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(path, &s));
	for (size_t done = 0, room; done < 3 * MB - 1; done += room) {
		uint8_t *stage = pr_file_sink_lend(s, &room);
		cr_assert(stage && room > 0 && room <= MB, "%zu bytes lent after %zu", room, done);
		if (room > 3 * MB - 1 - done)
			room = 3 * MB - 1 - done;
		memset(stage, 'x', room);
		pr_file_sink_advance(s, room);
	}
	pr_file_sink_abort(s);
	assert_file_is(path, (const uint8_t *)"old", 3);
	cr_assert_eq(count_temps(tu_temp_dir()), 0);
}

/* A device is written in place and a failed sink writes nothing: neither
 * lends a stage, and a writer falls back to pr_file_sink_write. A file to
 * replace lends the rest of the stage being filled. */
Test(sink_stages, only_a_working_temporary_file_lends_a_stage)
{
	pr_file_sink *s;
	size_t room = 1;
	cr_assert_null(pr_file_sink_open("/dev/null", &s));
	cr_assert_null(pr_file_sink_lend(s, &room));
	cr_assert_eq(room, 0);
	pr_file_sink_write(s, "x", 1);
	cr_assert_null(pr_file_sink_lend(s, &room), "lent once opened");
	cr_assert_null(pr_file_sink_commit(s));

	char path[600];
	snprintf(path, sizeof path, "%s/lend.bin", tu_temp_dir());
	cr_assert_null(pr_file_sink_open(path, &s));
	pr_file_sink_write(s, "abc", 3);
	cr_assert(pr_file_sink_lend(s, &room));
	cr_assert_eq(room, MB - 3);
	pr_file_sink_write_at(s, 4, "d", 1);   /* past the end: the sink fails */
	room = 1;
	cr_assert_null(pr_file_sink_lend(s, &room), "a failed sink lent a stage");
	cr_assert_eq(room, 0);
	pr_err *e = pr_file_sink_commit(s);
	cr_assert(e && strstr(pr_err_message(e), "past the bytes written"));
	pr_err_free(e);
	cr_assert_eq(count_temps(tu_temp_dir()), 0);
}

/* Rewriting bytes not written yet is the caller's mistake: commit says so,
 * naming the file, and leaves the target as it was. */
Test(sink_stages, write_at_past_the_end_is_an_error)
{
	char path[600];
	snprintf(path, sizeof path, "%s/past.bin", tu_temp_dir());
	cr_assert_null(pr_file_write_atomic(path, "old", 3));
	uint8_t *bytes = pattern(MB + 5, 2);
	pr_file_sink *s;
	cr_assert_null(pr_file_sink_open(path, &s));
	pr_file_sink_write(s, bytes, MB + 5);
	pr_file_sink_write_at(s, MB + 1, "abcd", 5);
	pr_err *e = pr_file_sink_commit(s);
	cr_assert(e, "a rewrite past the end was committed");
	cr_assert(strstr(pr_err_message(e), path) && strstr(pr_err_message(e), "past the bytes written"),
		  "%s", pr_err_message(e));
	pr_err_free(e);
	assert_file_is(path, (const uint8_t *)"old", 3);
	cr_assert_eq(count_temps(tu_temp_dir()), 0);
	free(bytes);
}

/* ---- the writers, filling the stages --------------------------------------- */

/* A program with strings at every offset around a stage's edge (names of
 * 1000 to 4000 bytes, each longer than the last), and one longer than a
 * stage, which the writers make in a buffer of their own. */
static pr_program *program_with_long_names(void)
{
	const int nodes = 1200;
	const size_t huge = MB + MB / 2;
	size_t cap = 2 * huge + (size_t)nodes * 9000 + 4096, len = 0;
	char *t = malloc(cap), *hs = malloc(huge + 1), *last = malloc(huge + 1);
	memset(hs, 'h', huge);
	hs[huge] = 0;
	strcpy(last, hs);
	len += (size_t)snprintf(t + len, cap - len, "passrun 1\n\nop aten::relu(Tensor self) -> Tensor\n\n"
				"method @forward {\n  %%%s: f32[2,3] = input user \"x\"\n", last);
	for (int i = 1; i < nodes; i++) {
		int w = 1000 + 3 * i;
		len += (size_t)snprintf(t + len, cap - len, "  %%n%d_%.*s: f32[2,3] = aten::relu(%%%s)\n",
					i, w, hs, last);
		snprintf(last, huge + 1, "n%d_%.*s", i, w, hs);
	}
	snprintf(t + len, cap - len, "  return %%%s\n}\n", last);
	pr_program *p = tu_parse(t);
	free(last);
	free(hs);
	free(t);
	return p;
}

static void assert_saved_as_in_memory(const pr_program *p, const char *dir)
{
	uint8_t *bin;
	size_t bin_len, text_len;
	char bin_path[600], text_path[600];
	cr_assert_null(pr_binary_write(p, &bin, &bin_len));
	char *text = pr_text_print(p, &text_len);
	cr_assert_gt(bin_len, 3 * MB, "the file must take several stages (%zu bytes)", bin_len);
	snprintf(bin_path, sizeof bin_path, "%s/long-names.bin", dir);
	snprintf(text_path, sizeof text_path, "%s/long-names.pg", dir);
	cr_assert_null(pr_program_save_file(p, bin_path));
	cr_assert_null(pr_program_save_file(p, text_path));
	assert_file_is(bin_path, bin, bin_len);
	assert_file_is(text_path, (const uint8_t *)text, text_len);
	free(bin);
	free(text);
}

Test(sink_stages, writers_fill_the_stages_with_the_in_memory_bytes)
{
	pr_program *p = program_with_long_names();
	assert_saved_as_in_memory(p, tu_temp_dir());
	refuse = REFUSE_AT_WRITE;
	assert_saved_as_in_memory(p, tu_temp_dir());
	cr_assert_gt(refusals, 0, "no write was made with O_DIRECT");
	pr_program_free(p);
	cr_assert_eq(count_temps(tu_temp_dir()), 0);
}

/* ---- the loaded program's pages, handed back once written ------------------- */

/* How many kB of the mapping that starts at map this process holds. */
static long mapping_rss_kb(const void *map)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	cr_assert(f, "cannot read /proc/self/smaps");
	char line[512];
	bool in_it = false;
	long kb = -1;
	while (kb < 0 && fgets(line, sizeof line, f)) {
		char *end;
		unsigned long lo = strtoul(line, &end, 16);
		if (end > line && *end == '-')   /* a mapping's first line: its range */
			in_it = lo == (unsigned long)(uintptr_t)map;
		else if (in_it && sscanf(line, "Rss: %ld kB", &kb) != 1)
			kb = -1;
	}
	fclose(f);
	cr_assert_geq(kb, 0, "no mapping at %p in /proc/self/smaps", map);
	return kb;
}

/* A loaded binary's 4 MB constant, written again from its mapping, leaves
 * none of its pages with the process (a page at each end at most), and
 * reads back the same afterwards: a dropped page comes back from the file. */
Test(sink_stages, written_constants_leave_the_mapping)
{
	pr_program *p = tu_parse("passrun 1\n\nmethod @forward {\n"
				 "  %c: f32[1048576] = input constant \"c\" data=arange\n"
				 "  return %c\n}\n");
	char in[600], out[600];
	snprintf(in, sizeof in, "%s/in.bin", tu_temp_dir());
	snprintf(out, sizeof out, "%s/out.bin", tu_temp_dir());
	cr_assert_null(pr_program_save_file(p, in));
	pr_program_free(p);
	cr_assert_null(pr_program_load_file(in, &p));
	const float *c = (const float *)(const void *)pr_node_input(p->methods[0]->first)->data.mapped;
	cr_assert(c, "the constant does not borrow from the mapping");
	cr_assert_null(pr_program_save_file(p, out));
	long kb = mapping_rss_kb(p->mapping);
	cr_assert_leq(kb, 16, "%ld kB of the mapping are still held after the write", kb);
	for (size_t i = 0; i < (size_t)1 << 20; i++)
		cr_assert_eq(c[i], (float)i, "element %zu reads %g after the write", i, (double)c[i]);
	size_t n;
	char *want = tu_read_file(in, &n);
	assert_file_is(out, (const uint8_t *)want, n);
	free(want);
	pr_program_free(p);
}
