/* Tests of pr_file_write_atomic (core/format/fileio.c, fileio.h), the one writer of
 * every file passrun writes, through the API and through -o, --dot and
 * convert: a device or FIFO is written in place, never replaced; a symbolic
 * link is followed and stays a link; an existing file keeps its mode and
 * owner; the temporary file of a killed writer is removed by the next write
 * once its process is gone (issue 16, item 10). A text of several
 * megabytes reaches a FIFO whole: a target written in place lends no
 * stage, and the printer's own buffer goes to it as it fills. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/fileio.h"
#include "passrun/format.h"
#include "testutil.h"

#define NODEF "--no-default-plugins"

static const char *const program_text =
	"passrun 1\n"
	"\n"
	"op aten::relu(Tensor self) -> Tensor\n"
	"\n"
	"method @forward {\n"
	"  %x: f32[2,3] = input user \"x\"\n"
	"  %r: f32[2,3] = aten::relu(%x)\n"
	"  return %r\n"
	"}\n";

/* A path in this test's temporary folder (static storage, one per slot). */
static const char *tpath(int slot, const char *name)
{
	static char paths[8][600];
	snprintf(paths[slot], sizeof paths[slot], "%s/%s", tu_temp_dir(), name);
	return paths[slot];
}

static const char *program(void)
{
	return tu_write_temp("prog.pg", program_text);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "cannot create %s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

static void assert_content(const char *path, const char *want)
{
	char *text = tu_read_file(path, NULL);
	cr_assert(text, "%s was not written", path);
	cr_assert_str_eq(text, want, "%s", path);
	free(text);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return st.st_mode & 07777;
}

/* Entries of the temporary folder that look like our temporary files. */
static int count_temps(void)
{
	tu_result r = tu_run("ls -A %s | grep -c passrun-tmp", tu_temp_dir());
	int n = atoi(r.out);
	tu_result_free(&r);
	return n;
}

static void api_write(const char *path, const char *text)
{
	pr_err *e = pr_file_write_atomic(path, text, strlen(text));
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
}

Test(fileio, new_file_gets_what_a_plain_create_gives)
{
	umask(027);
	const char *out = tpath(0, "new.txt");
	api_write(out, "hello\n");
	assert_content(out, "hello\n");
	cr_assert_eq(mode_of(out), 0640, "mode %04o", (unsigned)mode_of(out));
	cr_assert_eq(count_temps(), 0, "a temporary file is left over");
}

Test(fileio, existing_file_keeps_its_mode)
{
	umask(022);
	const char *out = tpath(0, "out.pg");
	write_text(out, "old\n", 0600);
	tu_result r = tu_run("%s " NODEF " -o %s %s", PASSRUN_EXE, out, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	assert_content(out, program_text);
	cr_assert_eq(mode_of(out), 0600, "-o made a 0600 file %04o", (unsigned)mode_of(out));
	/* --dot had a writer of its own: it keeps the mode too. */
	const char *dot = tpath(1, "out.dot");
	write_text(dot, "old\n", 0640);
	r = tu_run("%s " NODEF " --dot %s %s", PASSRUN_EXE, dot, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	cr_assert_eq(mode_of(dot), 0640, "--dot made a 0640 file %04o", (unsigned)mode_of(dot));
	/* Set-id bits are never carried over to the new file. */
	write_text(out, "old\n", 04755);
	api_write(out, "new\n");
	cr_assert_eq(mode_of(out), 0755, "mode %04o", (unsigned)mode_of(out));
}

Test(fileio, existing_file_keeps_its_owner)
{
	if (geteuid() != 0)
		cr_skip_test("only root may give a file to another user");
	const char *out = tpath(0, "owned.pg");
	write_text(out, "old\n", 0644);
	cr_assert_eq(chown(out, 4242, 4343), 0);
	api_write(out, "new\n");
	struct stat st;
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_eq(st.st_uid, 4242);
	cr_assert_eq(st.st_gid, 4343);
	assert_content(out, "new\n");
}

Test(fileio, symbolic_link_is_followed_and_stays_a_link)
{
	const char *sub = tpath(0, "sub");
	cr_assert_eq(mkdir(sub, 0755), 0);
	const char *real = tpath(1, "sub/real.pg");
	write_text(real, "old\n", 0600);
	/* out.pg -> hop.pg -> sub/real.pg, both relative to their folder. */
	cr_assert_eq(symlink("sub/real.pg", tpath(2, "hop.pg")), 0);
	cr_assert_eq(symlink("hop.pg", tpath(3, "out.pg")), 0);
	tu_result r = tu_run("%s " NODEF " -o %s %s", PASSRUN_EXE, tpath(3, "out.pg"), program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	struct stat st;
	cr_assert_eq(lstat(tpath(3, "out.pg"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "-o replaced the link with a file");
	cr_assert_eq(lstat(tpath(2, "hop.pg"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "-o replaced the second link with a file");
	assert_content(real, program_text);
	cr_assert_eq(mode_of(real), 0600);
	/* convert follows it too, and the temporary went next to the target. */
	cr_assert_eq(symlink("sub/real.bin", tpath(4, "out.bin")), 0);
	r = tu_run("%s convert %s %s", PASSRUN_EXE, program(), tpath(4, "out.bin"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	cr_assert_eq(lstat(tpath(4, "out.bin"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "convert replaced the link with a file");
	cr_assert_eq(stat(tpath(5, "sub/real.bin"), &st), 0, "a dangling link's target is created");
	cr_assert_eq(count_temps(), 0);
	tu_result_free(&r);
}

Test(fileio, link_loop_is_an_error)
{
	cr_assert_eq(symlink("b", tpath(0, "a")), 0);
	cr_assert_eq(symlink("a", tpath(1, "b")), 0);
	pr_err *e = pr_file_write_atomic(tpath(0, "a"), "x", 1);
	cr_assert(e);
	cr_assert(strstr(pr_err_message(e), tpath(0, "a")), "%s", pr_err_message(e));
	cr_assert(strstr(pr_err_message(e), "symbolic links"), "%s", pr_err_message(e));
	pr_err_free(e);
}

Test(fileio, fifo_is_written_in_place)
{
	const char *fifo = tpath(0, "pipe");
	const char *copy = tpath(1, "copy.pg");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *how[] = {NODEF " -o %s %s", NODEF " --dot %s %s", "convert %2$s %1$s"};
	for (int i = 0; i < 3; i++) {
		char args[1400];
		snprintf(args, sizeof args, how[i], fifo, program());
		/* Bounded: a writer that replaced the FIFO would leave cat waiting. */
		tu_result r = tu_run("timeout 20 cat %s >%s & timeout 20 %s %s; st=$?; wait; "
				     "exit $st", fifo, copy, PASSRUN_EXE, args);
		cr_assert_eq(r.status, 0, "%s: %s", how[i], r.err);
		tu_result_free(&r);
		struct stat st;
		cr_assert_eq(lstat(fifo, &st), 0);
		cr_assert(S_ISFIFO(st.st_mode), "%s replaced the FIFO with a file", how[i]);
		char *text = tu_read_file(copy, NULL);
		cr_assert(text && (i == 1 ? !strncmp(text, "digraph", 7)
					 : !strcmp(text, program_text)),
			  "%s: the reader got: %s", how[i], text ? text : "(nothing)");
		free(text);
	}
	cr_assert_eq(count_temps(), 0);
}

/* The canonical text of a chain of n relus, malloc'd. */
static char *chain_text(int n)
{
	size_t cap = (size_t)n * 64 + 4096, len = 0;
	char *t = malloc(cap);
	len += (size_t)snprintf(t + len, cap - len, "passrun 1\n\nop aten::relu(Tensor self) -> Tensor\n\n"
				"method @forward {\n  %%n0: f32[2,3] = input user \"x\"\n");
	for (int i = 1; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "  %%n%d: f32[2,3] = aten::relu(%%n%d)\n", i,
					i - 1);
	snprintf(t + len, cap - len, "  return %%n%d\n}\n", n - 1);
	return t;
}

Test(fileio, long_text_reaches_a_fifo_whole)
{
	const char *fifo = tpath(0, "long-pipe");
	const char *copy = tpath(1, "long-copy.pg");
	char *text = chain_text(100000);
	cr_assert_gt(strlen(text), (size_t)3 << 20, "the text must fill several buffers");
	const char *in = tu_write_temp("long.pg", text);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	tu_result r = tu_run("timeout 20 cat %s >%s & timeout 20 %s " NODEF " convert %s %s; st=$?; "
			     "wait; exit $st", fifo, copy, PASSRUN_EXE, in, fifo);
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	assert_content(copy, text);
	free(text);
	cr_assert_eq(count_temps(), 0);
}

Test(fileio, device_is_written_in_place)
{
	/* A private copy of /dev/null's node: the test must not touch the real
	 * one, which the bug replaced. */
	const char *dev = tpath(0, "null");
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0)
		cr_skip_test("cannot create a device node here (mknod: not permitted)");
	tu_result r = tu_run("%s " NODEF " -o %s --dot %s %s", PASSRUN_EXE, dev, dev, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	struct stat st;
	cr_assert_eq(lstat(dev, &st), 0);
	cr_assert(S_ISCHR(st.st_mode), "-o replaced the device with a regular file");
	cr_assert_eq(st.st_rdev, makedev(1, 3));
	cr_assert_eq(count_temps(), 0);
}

Test(fileio, folder_is_an_error)
{
	pr_err *e = pr_file_write_atomic(tu_temp_dir(), "x", 1);
	cr_assert(e);
	cr_assert(strstr(pr_err_message(e), "it is a folder"), "%s", pr_err_message(e));
	pr_err_free(e);
	tu_result r = tu_run("%s " NODEF " -o %s %s", PASSRUN_EXE, tu_temp_dir(), program());
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "it is a folder"), "%s", r.err);
	tu_result_free(&r);
}

Test(fileio, missing_folder_is_an_error_naming_the_path)
{
	const char *out = tpath(0, "nosuch/out.pg");
	pr_err *e = pr_file_write_atomic(out, "x", 1);
	cr_assert(e);
	cr_assert(strstr(pr_err_message(e), out), "%s", pr_err_message(e));
	cr_assert(strstr(pr_err_message(e), "No such file or directory"), "%s", pr_err_message(e));
	pr_err_free(e);
}

/* The pid of a process that has exited (and been reaped). */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

Test(fileio, stale_temporary_of_a_killed_writer_is_removed)
{
	const char *out = tpath(0, "out.pg");
	pid_t dead = dead_pid();
	char name[600];
	/* What kill -9 during a write leaves: .NAME.passrun-tmp.PID.XXXXXX. */
	snprintf(name, sizeof name, "%s/.out.pg.passrun-tmp.%d.a1b2c3", tu_temp_dir(), (int)dead);
	write_text(name, "half", 0600);
	char live[600], other[600], odd[600];
	/* A writer still running (this test), another name, not our pattern. */
	snprintf(live, sizeof live, "%s/.out.pg.passrun-tmp.%d.d4e5f6", tu_temp_dir(), (int)getpid());
	snprintf(other, sizeof other, "%s/.other.pg.passrun-tmp.%d.a1b2c3", tu_temp_dir(), (int)dead);
	snprintf(odd, sizeof odd, "%s/.out.pg.passrun-tmp.%d.abc", tu_temp_dir(), (int)dead);
	write_text(live, "busy", 0600);
	write_text(other, "half", 0600);
	write_text(odd, "mine", 0600);
	tu_result r = tu_run("%s " NODEF " -o %s %s", PASSRUN_EXE, out, program());
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_result_free(&r);
	assert_content(out, program_text);
	cr_assert_eq(access(name, F_OK), -1, "the stale temporary file is still there");
	cr_assert_eq(access(live, F_OK), 0, "a running writer's temporary file was removed");
	cr_assert_eq(access(other, F_OK), 0, "another name's temporary file was removed");
	cr_assert_eq(access(odd, F_OK), 0, "a file not named like ours was removed");
}

/* A text file is parsed in place, from its mapping: one that ends at a page
 * boundary in a comment, with no newline after it, loads, and one that ends
 * there in a string, unterminated, is refused; neither is read past. */
Test(fileio, text_ending_at_a_page_boundary_is_parsed_in_place)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static const char *const heads[] = {
		"passrun 1\nmethod @m {\n  %x: f32[2] = input user \"x\"\n  return %x\n}\n#",
		"passrun 1\nmethod @m {\n  %x: f32[2] = input user \"",
	};
	for (int cut = 0; cut < 2; cut++) {
		char *text = malloc(page + 1);
		size_t head = strlen(heads[cut]);
		memcpy(text, heads[cut], head);
		memset(text + head, 'x', page - head);
		text[page] = 0;
		const char *path = tu_write_temp(cut ? "cut.pg" : "page.pg", text);
		free(text);
		pr_program *p = NULL;
		pr_err *e = pr_program_load_file(path, &p);
		if (cut) {
			cr_assert_not_null(e);
			cr_expect(strstr(pr_err_message(e), ":3:27: unterminated string"), "%s", pr_err_message(e));
		} else {
			cr_expect_null(e, "%s", e ? pr_err_message(e) : "");
			cr_expect(p && pr_program_find_method(p, "m"));
		}
		pr_err_free(e);
		pr_program_free(p);
	}
}
