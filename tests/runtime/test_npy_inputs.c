/* test_npy_inputs.c: the .npy reader against hostile files, and what passrun
 * does with --input and --output-dir (issue 16, items 5, 9, 11, 12, 19).
 *
 * Each bad header is a case in a table: the header text, the message the
 * reader must give, and where the error is (the byte offset in the file of a
 * marker in the header). A new case is a new row. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passrun/format.h"
#include "rt.h"
#include "testutil.h"

/* Writes a version 1.0 .npy file: the prelude, the header text padded with
 * spaces and a newline to 64 bytes (numpy's alignment), then data_bytes zero
 * bytes. Returns the path (static storage). */
static const char *write_npy(const char *name, const char *header, size_t data_bytes)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/%s", tu_temp_dir(), name);
	size_t n = strlen(header), total = (10 + n + 1 + 63) / 64 * 64;
	FILE *fp = fopen(path, "wb");
	cr_assert_not_null(fp, "%s", path);
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
				 (unsigned char)((total - 10) & 0xff), (unsigned char)((total - 10) >> 8)};
	fwrite(pre, 1, 10, fp);
	fwrite(header, 1, n, fp);
	for (size_t i = 10 + n; i + 1 < total; i++)
		fputc(' ', fp);
	fputc('\n', fp);
	for (size_t i = 0; i < data_bytes; i++)
		fputc(0, fp);
	fclose(fp);
	return path;
}

static char *read_error(const char *path)
{
	prt_tensor t;
	pr_err *e = prt_npy_read(path, &t);
	free(t.storage);
	if (!e)
		return NULL;
	char *m = strdup(pr_err_message(e));
	pr_err_free(e);
	return m;
}

/* ---- item 9: the header is a Python dict literal, parsed as one ---------- */

typedef struct bad_header {
	const char *header;
	const char *message;   /* part of the error */
	const char *at;        /* the error's position: the first occurrence of this in header
	                          (after `skip` earlier ones) */
	int skip;
} bad_header;

static const bad_header bad_headers[] = {
	/* strstr found 'descr' inside the first string: f8 data read as f4 */
	{"{'note': \"'descr': '<f4'\", 'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
	 "unknown key 'note'", "'note'", 0},
	{"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
	 "key 'descr' given twice", "'descr'", 1},
	{"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,), }",
	 "must be True or False, found 'Falsey'", "Falsey", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } trailing",
	 "after the header's '}'", "trailing", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }}", "after the header's '}'",
	 "}", 1},
	{"{'descr': '<f4', 'fortran_order': False, }", "the header has no 'shape'", "}", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }",
	 "a one-dimension shape is (N,)", ")", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "expected a dimension",
	 "-2", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
	 "is larger than 9223372036854775807", "999", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }",
	 "a one-dimension shape is (N,)", ".5", 0},
	{"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "Fortran-order", "True", 0},
	{"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype '>f4'",
	 "'>f4'", 0},
	{"{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", "unsupported dtype '<f4, '",
	 "'<f4", 0},
	{"{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", "expected ',' or '}'",
	 "'fortran", 0},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'", NULL, 0},
	{"['descr', '<f4']", "expected '{'", "[", 0},
};

static size_t offset_of(const bad_header *c)
{
	if (!c->at)   /* the newline that ends the padding */
		return (10 + strlen(c->header) + 1 + 63) / 64 * 64 - 1;
	const char *p = strstr(c->header, c->at);
	for (int i = 0; i < c->skip; i++)
		p = strstr(p + 1, c->at);
	cr_assert_not_null(p, "bad test case: '%s' not in %s", c->at, c->header);
	return 10 + (size_t)(p - c->header);
}

Test(npy_header, each_bad_header_is_refused_with_its_byte_offset)
{
	for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
		const bad_header *c = &bad_headers[i];
		char *m = read_error(write_npy("bad_header.npy", c->header, 8));
		cr_expect_not_null(m, "accepted: %s", c->header);
		if (!m)
			continue;
		char where[64];
		snprintf(where, sizeof where, "bad_header.npy: .npy header, byte %zu: ", offset_of(c));
		cr_expect(strstr(m, where) && strstr(m, c->message), "header %s\nwant '%s%s'\ngot  %s",
			  c->header, where, c->message, m);
		free(m);
	}
}

Test(npy_header, the_forms_python_writes_are_accepted)
{
	static const struct {
		const char *header;
		pr_dtype dtype;
		int rank;
		int64_t d0, d1;
	} good[] = {
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", PR_F64, 2, 2, 3},
		{"{'shape': (2,3), 'fortran_order': False, 'descr': '<i4'}", PR_I32, 2, 2, 3},
		{"{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (6,)}", PR_U8, 1, 6, 0},
		{"{'descr':'<i8','fortran_order':False,'shape':(3, 2,),}", PR_I64, 2, 3, 2},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", PR_F32, 0, 0, 0},
		{"{ 'descr' : '<f2' ,\t'fortran_order' : False , 'shape' : ( 0 , ) }", PR_F16, 1, 0, 0},
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		int64_t numel = good[i].rank == 0 ? 1 : good[i].d0 * (good[i].rank > 1 ? good[i].d1 : 1);
		const char *path = write_npy("good.npy", good[i].header,
					     (size_t)numel * pr_dtype_size(good[i].dtype));
		prt_tensor t;
		pr_err *e = prt_npy_read(path, &t);
		cr_expect_null(e, "%s: %s", good[i].header, e ? pr_err_message(e) : "");
		pr_err_free(e);
		cr_expect(t.dtype == good[i].dtype && t.rank == good[i].rank, "%s", good[i].header);
		if (t.rank > 0)
			cr_expect_eq(t.shape[0], good[i].d0, "%s", good[i].header);
		if (t.rank > 1)
			cr_expect_eq(t.shape[1], good[i].d1, "%s", good[i].header);
		free(t.storage);
	}
}

/* ---- item 5: the shape against the file's size, before allocating -------- */

Test(npy_size, a_huge_shape_in_a_small_file_is_refused_not_allocated)
{
	/* 128 bytes in all: the header says 4e15 bytes follow */
	const char *path = write_npy("huge.npy",
				     "{'descr': '<f4', 'fortran_order': False, 'shape': "
				     "(1000000000000000,), }", 0);
	char *m = read_error(path);
	cr_assert_not_null(m);
	cr_expect(strstr(m, "huge.npy: truncated data") && strstr(m, "4000000000000000 bytes"),
		  "%s", m);
	free(m);
	path = write_npy("overflow.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': "
				      "(4294967296, 4294967296), }", 0);
	m = read_error(path);
	cr_assert_not_null(m);
	cr_expect(strstr(m, "overflow.npy: the array is too large"), "%s", m);
	free(m);
}

Test(npy_size, bytes_after_the_data_are_refused)
{
	const char *path = write_npy("long.npy", "{'descr': '<f4', 'fortran_order': False, "
				     "'shape': (2,), }", 12);
	char *m = read_error(path);
	cr_assert_not_null(m);
	cr_expect(strstr(m, "long.npy: 4 bytes after the data"), "%s", m);
	free(m);
}

/* ---- item 12: only regular files, and no blocking on a FIFO -------------- */

Test(npy_open, a_fifo_with_no_writer_is_refused_at_once, .timeout = 20)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/fifo.npy", tu_temp_dir());
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	char *m = read_error(path);
	cr_assert_not_null(m);
	cr_expect(strstr(m, "fifo.npy: not a regular file") && strstr(m, "FIFO"), "%s", m);
	free(m);
	m = read_error(tu_temp_dir());
	cr_assert_not_null(m);
	cr_expect(strstr(m, "not a regular file") && strstr(m, "folder"), "%s", m);
	free(m);
	unlink(path);
}

/* ---- through passrun: exit 2 naming the file ------------------------------ */

#define PROGRAM                                                              \
	"passrun 1\n"                                                        \
	"op aten::relu(Tensor self) -> Tensor\n"                            \
	"method @forward {\n"                                               \
	"  %x: f32[2,3] = input user \"x\"\n"                               \
	"  %r: f32[2,3] = aten::relu(%x)\n"                                 \
	"  return %r\n"                                                     \
	"}\n"

static tu_result run_with(const char *prefix, const char *args)
{
	const char *prog = tu_write_temp("prog.pg", PROGRAM);
	return tu_run("%s %s --no-default-plugins --device=sim %s %s", prefix, PASSRUN_EXE, args,
		      prog);
}

Test(npy_cli, a_huge_shape_is_exit_2_naming_the_file_without_allocating)
{
	/* shape (4e9,) f4: 16 GB announced. Under a 4 GB address-space limit the
	 * old reader died allocating it ("out of memory", exit 134); the sanitizers
	 * reserve more than that, so they run without the limit. */
	const char *path = write_npy("big.npy", "{'descr': '<f4', 'fortran_order': False, "
				     "'shape': (4000000000,), }", 24);
#if defined(__SANITIZE_ADDRESS__)
	const char *limit = "";
#else
	const char *limit = "ulimit -v 4000000;";
#endif
	char args[1200];
	snprintf(args, sizeof args, "--input x=%s", path);
	tu_result r = run_with(limit, args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "--input x") && strstr(r.err, "big.npy: truncated data"), "%s",
		  r.err);
	tu_result_free(&r);
}

Test(npy_cli, a_fifo_input_is_exit_2_without_blocking, .timeout = 30)
{
	char path[1024], args[1200];
	snprintf(path, sizeof path, "%s/in.fifo", tu_temp_dir());
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(args, sizeof args, "--input x=%s", path);
	tu_result r = run_with("timeout 20", args);   /* a regression must not hang the suite */
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "in.fifo: not a regular file"), "%s", r.err);
	tu_result_free(&r);
	unlink(path);
}

Test(npy_cli, a_repeated_input_is_a_usage_error)
{
	const char *path = write_npy("x.npy", "{'descr': '<f4', 'fortran_order': False, "
				     "'shape': (2, 3), }", 24);
	char args[2200];
	snprintf(args, sizeof args, "--input x=%s --input x=%s", path, path);
	tu_result r = run_with("", args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "--input x= given twice"), "%s", r.err);
	tu_result_free(&r);
	snprintf(args, sizeof args, "--input x=%s", path);
	r = run_with("", args);
	cr_expect_eq(r.status, 0, "one --input x= runs: %s", r.err);
	tu_result_free(&r);
}

/* ---- item 11: --output-dir checked before running, outputs atomic -------- */

#define BIG_PROGRAM                                                          \
	"passrun 1\n"                                                        \
	"op aten::relu(Tensor self) -> Tensor\n"                            \
	"method @forward {\n"                                               \
	"  %x: f32[100000] = input user \"x\"\n"                            \
	"  %r: f32[100000] = aten::relu(%x)\n"                              \
	"  return %r\n"                                                     \
	"}\n"

static tu_result run_output_dir(const char *prefix, const char *dir, const char *text)
{
	const char *prog = tu_write_temp("out_prog.pg", text);
	return tu_run("%s %s --no-default-plugins --device=sim --output-dir %s %s", prefix,
		      PASSRUN_EXE, dir, prog);
}

static bool exists(const char *dir, const char *name)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	struct stat st;
	return stat(path, &st) == 0;
}

Test(output_dir, a_missing_folder_is_created_with_its_parents)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/made/for/outputs", tu_temp_dir());
	tu_result r = run_output_dir("", dir, PROGRAM);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(exists(dir, "forward.0.npy"), "no %s/forward.0.npy", dir);
	tu_result_free(&r);
}

Test(output_dir, a_folder_that_cannot_be_made_is_exit_2_before_running)
{
	/* under a regular file: no folder can be made there, root or not (a 0555
	 * folder would not do: root may write it). The run used to end with exit 5. */
	char file[1024], dir[1100];
	snprintf(file, sizeof file, "%s", tu_write_temp("plain_file", "x"));
	snprintf(dir, sizeof dir, "%s/sub", file);
	tu_result r = run_output_dir("", dir, PROGRAM);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "--output-dir") && strstr(r.err, "Not a directory"), "%s", r.err);
	tu_result_free(&r);
	r = run_output_dir("", file, PROGRAM);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "plain_file: not a folder"), "%s", r.err);
	tu_result_free(&r);
}

Test(output_dir, an_output_that_does_not_fit_leaves_no_partial_file)
{
	/* A file-size limit of 16 KiB stands in for a full disk: the 400 KB
	 * output cannot be written. fopen("wb") left its first 16 KiB as
	 * forward.0.npy; the atomic writer leaves nothing, and says so (exit 2). */
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/full", tu_temp_dir());
	mkdir(dir, 0700);
	tu_result r = run_output_dir("trap '' XFSZ; ulimit -f 16;", dir, BIG_PROGRAM);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "forward.0.npy"), "%s", r.err);
	cr_expect(!exists(dir, "forward.0.npy"), "a partial forward.0.npy was left");
	tu_result_free(&r);
	r = tu_run("ls -A %s", dir);
	cr_expect_str_empty(r.out, "left behind: %s", r.out);
	tu_result_free(&r);
}

/* ---- item 19: a file of the wrong shape names both shapes ----------------- */

Test(npy_cli, a_wrong_shape_names_the_declared_and_the_given_one)
{
	/* it said "must be f32 with shape of rank 2 as declared" */
	const char *path = write_npy("wrong.npy", "{'descr': '<f8', 'fortran_order': False, "
				     "'shape': (3, 2), }", 48);
	char args[1200];
	snprintf(args, sizeof args, "--input x=%s", path);
	tu_result r = run_with("", args);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "--input x: ") &&
		  strstr(r.err, "wrong.npy holds f64[3,2]; the input is declared f32[2,3]"), "%s",
		  r.err);
	tu_result_free(&r);
}
