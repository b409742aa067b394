/* The device layer (issue 6) on the sim device: memory the host cannot touch
 * (M4), copies each way with byte counters (counted and uncounted), several
 * devices; plus the .npy reader and writer the runtime uses for --input and
 * --output-dir. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/format.h"
#include "rt.h"
#include "rt_cuda.h"
#include "testutil.h"

static pr_device dev(const char *s)
{
	pr_device d;
	cr_assert(pr_device_parse(s, strlen(s), &d));
	return d;
}

static void on_segv(int sig)
{
	(void)sig;
	_exit(42);
}

/* Runs f(p) in a child process; returns 42 when it faulted. */
static int child_status(void (*f)(volatile uint8_t *), volatile uint8_t *p)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_segv;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		f(p);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void host_read(volatile uint8_t *p) { (void)p[0]; }
static void host_write(volatile uint8_t *p) { p[3] = 1; }

Test(sim_device, M4_host_reads_and_writes_of_device_memory_fault)
{
	prt_devset s;
	cr_assert_null(prt_devset_init(&s, "sim"));
	int slot;
	cr_assert_null(prt_devset_slot(&s, dev("cuda:0"), &slot));
	void *p;
	cr_assert_null(prt_mem_alloc(&s, slot, 100, &p));
	cr_expect_eq(child_status(host_read, p), 42, "a host read of sim memory must fault");
	cr_expect_eq(child_status(host_write, p), 42, "a host write of sim memory must fault");
	/* Between enter and leave (a device kernel), the memory is usable. */
	prt_dev *d = prt_devset_dev(&s, slot);
	d->ops->enter(d);
	cr_expect_eq(child_status(host_write, p), 0, "open while a device kernel runs");
	d->ops->leave(d);
	cr_expect_eq(child_status(host_read, p), 42, "closed again after it");
	cr_expect(prt_sim_owner(p) == d);
	cr_expect(prt_sim_owner(&slot) == NULL);
	prt_devset_free(&s);
}

Test(sim_device, copies_round_trip_and_count_bytes_each_way)
{
	prt_devset s;
	cr_assert_null(prt_devset_init(&s, "sim"));
	int slot;
	cr_assert_null(prt_devset_slot(&s, dev("CUDA:0"), &slot));
	float in[4] = {1, 2, 3, 4}, out[4] = {0};
	void *p;
	cr_assert_null(prt_mem_alloc(&s, slot, sizeof in, &p));
	cr_assert_null(prt_mem_copy(&s, slot, p, 0, in, sizeof in, true));
	cr_assert_null(prt_mem_sync(&s, slot));
	cr_assert_null(prt_mem_copy(&s, 0, out, slot, p, 8, true));
	cr_expect(out[0] == 1 && out[1] == 2 && out[2] == 0);
	int64_t h2d, d2h;
	prt_devset_counters(&s, &h2d, &d2h);
	cr_expect_eq(h2d, 16);
	cr_expect_eq(d2h, 8);
	/* The caller's own transfers are not counted. */
	cr_assert_null(prt_mem_copy(&s, 0, out, slot, p, 16, false));
	prt_devset_counters(&s, &h2d, &d2h);
	cr_expect_eq(d2h, 8);
	cr_expect(out[3] == 4);
	prt_devset_reset_counters(&s);
	prt_devset_counters(&s, &h2d, &d2h);
	cr_expect_eq(h2d + d2h, 0);
	prt_mem_free(&s, slot, p, sizeof in);
	prt_devset_free(&s);
}

Test(sim_device, devices_get_their_own_slots_and_memory)
{
	prt_devset s;
	cr_assert_null(prt_devset_init(&s, "sim"));
	int a, b, a2, h, plain;
	cr_assert_null(prt_devset_slot(&s, dev("cuda:0"), &a));
	cr_assert_null(prt_devset_slot(&s, dev("cuda:1"), &b));
	cr_assert_null(prt_devset_slot(&s, dev("cuda:0"), &a2));
	cr_assert_null(prt_devset_slot(&s, dev("cpu"), &h));
	cr_assert_null(prt_devset_slot(&s, dev("cuda"), &plain));
	cr_expect(a != b && a == a2 && h == 0 && plain == a, "%d %d %d %d %d", a, b, a2, h, plain);
	void *p;
	cr_assert_null(prt_mem_alloc(&s, b, 10, &p));
	prt_dev *d0 = prt_devset_dev(&s, a), *d1 = prt_devset_dev(&s, b);
	cr_expect(d1->ops->contains(d1, p, 10));
	cr_expect(!d0->ops->contains(d0, p, 10), "cuda:1 memory is not cuda:0's");
	prt_devset_free(&s);
}

Test(sim_device, unknown_device_types_and_kinds_are_errors)
{
	prt_devset s;
	pr_err *e = prt_devset_init(&s, "tpu");
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "sim, cuda"), "%s", pr_err_message(e));
	pr_err_free(e);
	cr_assert_null(prt_devset_init(&s, "sim"));
	int slot;
	e = prt_devset_slot(&s, dev("mps:0"), &slot);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "mps:0"), "%s", pr_err_message(e));
	pr_err_free(e);
	prt_devset_free(&s);
}

/* sim simulates a device of every registered type (device.h): a plugin's
 * npu gets closed memory like cuda; a host-addressable type stays open to
 * host code, as its registration promises. */
Test(sim_device, registered_device_types_are_simulated)
{
	prt_devset s;
	cr_assert_null(prt_devset_init(&s, "sim"));
	int slot;
	pr_err *e = prt_devset_slot(&s, dev("npu:0"), &slot);
	cr_assert(e && strstr(pr_err_message(e), "no registered device type (registered: cpu, cuda)"),
		  "%s", e ? pr_err_message(e) : "npu is known");
	pr_err_free(e);
	pr_device_type npu = {sizeof npu, "npu", false, 64}, shared = {sizeof shared, "shared", true, 16};
	cr_assert_null(pr_device_type_add(&npu));
	cr_assert_null(pr_device_type_add(&shared));
	int n, sh;
	cr_assert_null(prt_devset_slot(&s, dev("NPU"), &n));
	cr_assert_null(prt_devset_slot(&s, dev("shared:0"), &sh));
	void *p, *q;
	cr_assert_null(prt_mem_alloc(&s, n, 100, &p));
	cr_assert_null(prt_mem_alloc(&s, sh, 100, &q));
	cr_expect_eq(child_status(host_write, p), 42, "npu memory is closed to host code");
	cr_expect_eq(child_status(host_write, q), 0, "host-addressable memory is open");
	prt_sim_protect_all();
	cr_expect_eq(child_status(host_read, q), 0, "and stays open after a fault closed the others");
	float in[2] = {1, 2}, out[2] = {0};
	cr_assert_null(prt_mem_copy(&s, sh, q, 0, in, sizeof in, true));
	cr_assert_null(prt_mem_copy(&s, 0, out, sh, q, sizeof out, true));
	cr_expect(out[0] == 1 && out[1] == 2);
	prt_devset_free(&s);
}

Test(sim_device, cuda_kind_without_a_gpu_says_so)
{
	if (prt_cuda_available())
		cr_skip_test("a GPU is present; tests/gpu/run.sh covers it");
	prt_devset s;
	pr_err *e = prt_devset_init(&s, "cuda");
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "CUDA"), "%s", pr_err_message(e));
	pr_err_free(e);
}

/* CUDA's libraries cost a process 210 MB and 0.1 s when mapped: a run on the
 * simulated device (devices, kernel lookups, a method loaded and called)
 * never opens the CUDA backend. */
Test(sim_device, a_sim_run_never_loads_the_cuda_backend)
{
	pr_program *p = NULL;
	pr_err *e = pr_program_load_file(PASSRUN_SOURCE_DIR "/examples/decoder.pg", &p);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	prt_exec_options o = {.device = "sim"};
	prt_exec *x = NULL;
	e = prt_exec_load(p, "forward", &o, &x);
	cr_assert_null(e, "%s", e ? pr_err_message(e) : "");
	cr_expect_not_null(prt_kernel_find("aten::add.Tensor"));
	cr_expect(!prt_cuda_loaded(), "a sim run opened libpassrun_cuda.so");
	prt_exec_free(x);
	pr_program_free(p);
}

Test(npy, round_trip_of_a_strided_tensor_and_its_header)
{
	float a[6] = {1, 4, 2, 5, 3, 6};
	int64_t shape[2] = {2, 3};
	prt_tensor t = prt_tensor_make(PR_F32, 2, shape, a);
	t.strides[0] = 1, t.strides[1] = 2;   /* logical [[1,2,3],[4,5,6]] */
	char path[512];
	snprintf(path, sizeof path, "%s/t.npy", tu_temp_dir());
	cr_assert_null(prt_npy_write(path, &t));
	size_t len;
	char *bytes = tu_read_file(path, &len);
	cr_assert_not_null(bytes);
	cr_expect(memcmp(bytes, "\x93NUMPY\x01\x00", 8) == 0);
	cr_expect(strstr(bytes + 10, "'descr': '<f4'") && strstr(bytes + 10, "'shape': (2, 3)"));
	cr_expect_eq(len % 64, 24 % 64, "64-byte aligned header, then 24 data bytes");
	free(bytes);
	prt_tensor r;
	cr_assert_null(prt_npy_read(path, &r));
	cr_expect(r.dtype == PR_F32 && r.rank == 2 && r.shape[0] == 2 && r.shape[1] == 3);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(((float *)r.data)[i], (float)(i + 1));
	free(r.storage);
}

Test(npy, one_dim_and_scalar_shapes)
{
	int64_t v[3] = {7, -8, 9}, s = 5, shape[1] = {3};
	prt_tensor t = prt_tensor_make(PR_I64, 1, shape, v);
	char path[512];
	snprintf(path, sizeof path, "%s/v.npy", tu_temp_dir());
	cr_assert_null(prt_npy_write(path, &t));
	prt_tensor r;
	cr_assert_null(prt_npy_read(path, &r));
	cr_expect(r.dtype == PR_I64 && r.rank == 1 && r.shape[0] == 3 && ((int64_t *)r.data)[1] == -8);
	free(r.storage);
	t = prt_tensor_make(PR_I64, 0, NULL, &s);
	cr_assert_null(prt_npy_write(path, &t));
	cr_assert_null(prt_npy_read(path, &r));
	cr_expect(r.rank == 0 && ((int64_t *)r.data)[0] == 5);
	free(r.storage);
}

Test(npy, bad_files_are_errors_naming_the_file)
{
	const char *p = tu_write_temp("bad.npy", "not numpy at all");
	prt_tensor r;
	pr_err *e = prt_npy_read(p, &r);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "bad.npy") && strstr(pr_err_message(e), "magic"), "%s",
		  pr_err_message(e));
	pr_err_free(e);
	/* A valid header announcing 4 floats, followed by only 2. */
	static const char hdr[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
	char q[512];
	snprintf(q, sizeof q, "%s/short.npy", tu_temp_dir());
	FILE *fp = fopen(q, "wb");
	cr_assert_not_null(fp);
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, sizeof hdr, 0};
	float two[2] = {1, 2};
	fwrite(pre, 1, 10, fp);
	fwrite(hdr, 1, sizeof hdr - 1, fp);
	fputc('\n', fp);
	fwrite(two, sizeof two, 1, fp);
	fclose(fp);
	e = prt_npy_read(q, &r);
	cr_assert_not_null(e);
	cr_expect(strstr(pr_err_message(e), "truncated"), "%s", pr_err_message(e));
	pr_err_free(e);
	e = prt_npy_read("/nonexistent/x.npy", &r);
	cr_assert_not_null(e);
	pr_err_free(e);
}
