/* Devices (device.h): the TYPE[:INDEX] parser, a delegate's device, and the
 * registry of device types. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "passrun/device.h"
#include "passrun/diag.h"
#include "passrun/program.h"
#include "passrun/verify.h"
#include "testutil.h"

static pr_device parse(const char *s)
{
	pr_device d;
	cr_assert(pr_device_parse(s, strlen(s), &d), "'%s' does not parse", s);
	return d;
}

static const char *str(pr_device d)
{
	static char buf[PR_DEVICE_STR_MAX];
	return pr_device_str(d, buf);
}

Test(device, parses_case_insensitively)
{
	cr_assert_str_eq(str(parse("CUDA:1")), "cuda:1");
	cr_assert_str_eq(str(parse("Cuda:12")), "cuda:12");
	cr_assert_str_eq(parse("NPU_2:3").type, "npu_2");
	pr_device d;
	cr_assert(!pr_device_parse("cuda:", 5, &d));
	cr_assert(!pr_device_parse(":0", 2, &d));
	cr_assert(!pr_device_parse("cu da", 5, &d));
	cr_assert(!pr_device_parse("0cuda", 5, &d));
	cr_assert(!pr_device_parse("cuda:-1", 7, &d));
	cr_assert(!pr_device_parse("cuda:1x", 7, &d));
	cr_assert(!pr_device_parse("", 0, &d));
	cr_assert(!pr_device_parse("abcdefghijklmnop", 16, &d), "a type is at most 15 characters");
	cr_assert(pr_device_parse("abcdefghijklmno", 15, &d));
}

/* Specs name devices by id: equal devices, however built, share one id; the
 * host is 0; an id nobody handed out names no device anyone can run. */
Test(device, interned_ids_are_one_per_device)
{
	pr_device dirty = {.type = "cuda\0zzzzzzzzzz", .index = 5};
	pr_device_id a = pr_device_intern(parse("CUDA:5")), b = pr_device_intern(dirty);
	cr_assert_eq(a, b, "bytes after the type's 0 are not part of the device");
	cr_assert_neq(a, pr_device_intern(parse("cuda:6")));
	cr_assert_neq(a, PR_DEVICE_ID_HOST);
	cr_assert_eq(pr_device_intern((pr_device){.type = "cuda", .index = -1}),
		     pr_device_intern(parse("cuda")), "a missing index is 0");
	cr_assert_eq(pr_device_intern(parse("cpu:3")), PR_DEVICE_ID_HOST);
	cr_assert_eq(pr_device_intern((pr_device){{0}, 0}), PR_DEVICE_ID_HOST);
	cr_assert_str_eq(str(*pr_device_of(a)), "cuda:5");
	cr_assert_str_eq(str(*pr_device_of(PR_DEVICE_ID_HOST)), "cpu");
	cr_assert(pr_device_id_valid(a));
	cr_assert(!pr_device_id_valid(a + 100000));
	cr_assert_null(pr_device_type_find(pr_device_of(a + 100000)->type));
	pr_spec s;
	int64_t shape[1] = {4};
	pr_spec_init(&s, PR_F32, 1, shape);
	cr_assert(pr_spec_on_host(&s), "a new spec is on the host");
	pr_spec_set_device(&s, parse("cuda:5"));
	cr_assert_eq(s.device_id, a);
	cr_assert_str_eq(str(pr_spec_device(&s)), "cuda:5");
}

/* The memo gives pr_device_intern's answers, for the device asked last and
 * for one asked after another. */
Test(device, the_id_memo_answers_as_interning_does)
{
	pr_device_id_memo m = {0};
	const char *seq[] = {"cuda:0", "cuda:0", "cpu", "npu:2", "cuda:0", "CUDA", "npu:2"};
	for (size_t i = 0; i < sizeof seq / sizeof *seq; i++) {
		pr_device d = parse(seq[i]);
		cr_assert_eq(pr_device_intern_memo(&m, d), pr_device_intern(d), "%s", seq[i]);
	}
	cr_assert_eq(pr_device_intern_memo(&m, pr_device_host()), PR_DEVICE_ID_HOST);
}

/* Many distinct devices: ids past the first chunks of the table stay put. */
Test(device, ids_survive_the_table_growing)
{
	pr_device_id ids[3000];
	for (int i = 0; i < 3000; i++)
		ids[i] = pr_device_intern((pr_device){.type = "npu", .index = i});
	for (int i = 0; i < 3000; i++) {
		cr_assert_eq(pr_device_of(ids[i])->index, i);
		cr_assert_str_eq(pr_device_of(ids[i])->type, "npu");
		cr_assert_eq(pr_device_intern((pr_device){.type = "npu", .index = i}), ids[i]);
	}
}

/* ExecuTorch's _parse_device_spec_value: a bare type is index 0. */
Test(device, bare_type_is_index_0)
{
	pr_device upper = parse("CUDA"), lower = parse("cuda"), zero = parse("cuda:0");
	cr_assert_eq(upper.index, 0);
	cr_assert(pr_device_equal(upper, zero) && pr_device_equal(lower, zero));
	cr_assert_str_eq(str(upper), "cuda:0");
	cr_assert(!memcmp(&upper, &zero, sizeof upper), "canonical values are one value");
	cr_assert(!pr_device_equal(zero, parse("cuda:1")));
	cr_assert(!pr_device_equal(zero, parse("npu:0")));
	pr_device hand = {.type = "cuda", .index = -1};
	cr_assert(pr_device_equal(hand, zero), "a value built by hand compares canonically");
	cr_assert_str_eq(str(hand), "cuda:0");
}

Test(device, cpu_is_the_host_whatever_its_index)
{
	cr_assert(pr_device_is_host(parse("cpu")));
	cr_assert(pr_device_is_host(parse("CPU:3")));
	cr_assert(pr_device_equal(parse("cpu:1"), pr_device_host()));
	cr_assert_str_eq(str(parse("Cpu:2")), "cpu");
	cr_assert(!pr_device_is_host(parse("cuda")));
}

static pr_program *with_delegate(const char *spec)
{
	char text[512];
	snprintf(text, sizeof text,
		 "passrun 1\nop aten::relu(Tensor self) -> Tensor\n"
		 "delegate @d backend=\"B\"%s {\n  %%a: f32[2] = input\n"
		 "  %%b: f32[2] = aten::relu(%%a)\n  return %%b\n}\n", spec);
	return tu_parse(text);
}

/* One reader of target_device, a located error for what is not a device. */
Test(device, delegate_device_reads_target_device)
{
	const char *cases[][2] = {
		{"", "cpu"}, {" target_device=\"CUDA\"", "cuda:0"},
		{" target_device=\"cuda:2\"", "cuda:2"}, {" target_device=\"cpu\"", "cpu"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pr_program *p = with_delegate(cases[i][0]);
		pr_device d;
		pr_err *err = pr_delegate_device(p->delegates[0], &d);
		cr_assert_null(err, "%s: %s", cases[i][0], err ? pr_err_message(err) : "");
		cr_assert_str_eq(str(d), cases[i][1]);
		pr_program_free(p);
	}
	const char *bad[] = {" target_device=\"tpu:0\"", " target_device=\"cuda:\"",
			     " target_device=\"\""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		pr_program *p = with_delegate(bad[i]);
		pr_device d = parse("cuda:5");
		pr_err *err = pr_delegate_device(p->delegates[0], &d);
		cr_assert_not_null(err, "%s is a device", bad[i]);
		const char *m = pr_err_message(err);
		cr_assert(strstr(m, "delegate @d has target_device="), "%s", m);
		cr_assert(strstr(m, "registered device type (cpu, cuda"), "%s", m);
		cr_assert(pr_device_is_host(d), "the device is the host on error");
		pr_err_free(err);
		pr_program_free(p);
	}
}

/* The answer is kept in the delegate: each spec writer must make it stale. */
Test(device, delegate_device_follows_its_specs)
{
	pr_program *p = with_delegate(" target_device=\"cuda:1\"");
	pr_delegate *dl = p->delegates[0];
	pr_device d;
	cr_assert_null(pr_delegate_device(dl, &d));
	cr_assert_str_eq(str(d), "cuda:1");
	pr_delegate_set_spec(dl, "target_device", "CUDA:3");
	cr_assert_null(pr_delegate_device(dl, &d));
	cr_assert_str_eq(str(d), "cuda:3", "set_spec forgets the kept device");
	cr_assert(pr_delegate_remove_spec(dl, "target_device"));
	cr_assert_null(pr_delegate_device(dl, &d));
	cr_assert(pr_device_is_host(d), "remove_spec forgets it too");
	pr_delegate_set_spec(dl, "target_device", "tpu:0");
	pr_err *err = pr_delegate_device(dl, &d);
	cr_assert_not_null(err, "a refused value is not kept as the host");
	pr_err_free(err);
	err = pr_delegate_device(dl, &d);
	cr_assert_not_null(err, "and is refused again");
	pr_err_free(err);
	pr_program_free(p);
}

/* Equality and printing read only up to the type's 0: a value built by hand
 * may hold anything after it. */
Test(device, compares_and_prints_by_the_type_name)
{
	pr_device junk;
	memset(&junk, 'x', sizeof junk);
	memcpy(junk.type, "cuda", 5);
	junk.index = 2147483647;
	cr_assert_str_eq(str(junk), "cuda:2147483647");
	pr_device two = {.type = "cuda", .index = 2147483647};
	cr_assert(pr_device_equal(junk, two) && pr_device_equal(two, junk));
	junk.index = 7;
	cr_assert(!pr_device_equal(junk, two));
	pr_device cpu = {.type = "", .index = 4};
	cr_assert(pr_device_equal(cpu, pr_device_host()), "an empty type is the host");
	cr_assert(!pr_device_equal(cpu, parse("cuda")));
	cr_assert(!pr_device_equal(parse("cudax"), parse("cuda")));
	cr_assert(!pr_device_equal(parse("cpux"), pr_device_host()), "only cpu itself is the host");
	cr_assert_str_eq(str(parse("abcdefghijklmno:10")), "abcdefghijklmno:10");
}

Test(device, registry_holds_cpu_and_cuda)
{
	const pr_device_type *cpu = pr_device_type_find("CPU"), *cuda = pr_device_type_find("cuda");
	cr_assert(cpu && cuda);
	cr_assert(cpu->host_addressable);
	cr_assert(!cuda->host_addressable);
	cr_assert_eq(pr_device_type_get(0), cpu);
	cr_assert_eq(pr_device_type_get(1), cuda);
	cr_assert_null(pr_device_type_get(pr_device_type_count()));
	cr_assert_null(pr_device_type_find("tpu"));
	cr_assert_null(pr_device_type_find("cuda:0"), "a type, not a device");
}

Test(device, registry_grows_and_refuses_conflicts)
{
	pr_device_type npu = {sizeof npu, "NPU", false, 64};
	cr_assert_null(pr_device_type_add(&npu));
	const pr_device_type *t = pr_device_type_find("npu");
	cr_assert(t);
	cr_assert_str_eq(t->name, "npu", "names are lower-cased and copied");
	cr_assert_eq(t->alignment, 64);
	cr_assert_null(pr_device_type_add(&npu), "the same type again is a no-op");
	int n = pr_device_type_count();
	char buf[PR_DEVICE_TYPES_STR_MAX];
	cr_assert_str_eq(pr_device_types_str(buf), "cpu, cuda, npu");

	pr_device_type other = npu;
	other.alignment = 128;
	pr_err *err = pr_device_type_add(&other);
	cr_assert(err && strstr(pr_err_message(err), "already registered"));
	pr_err_free(err);
	pr_device_type cuda = {sizeof cuda, "cuda", true, 16};
	err = pr_device_type_add(&cuda);
	cr_assert(err, "a plugin cannot redefine the core's cuda");
	pr_err_free(err);

	pr_device_type bad_align = {sizeof bad_align, "dsp", false, 24};
	err = pr_device_type_add(&bad_align);
	cr_assert(err && strstr(pr_err_message(err), "power of two"));
	pr_err_free(err);
	pr_device_type bad_name = {sizeof bad_name, "npu:0", false, 16};
	err = pr_device_type_add(&bad_name);
	cr_assert(err && strstr(pr_err_message(err), "a name is a letter"));
	pr_err_free(err);
	pr_device_type short_struct = {4, "dsp", false, 16};
	err = pr_device_type_add(&short_struct);
	cr_assert(err && strstr(pr_err_message(err), "too small"));
	pr_err_free(err);
	cr_assert_eq(pr_device_type_count(), n, "refused types are not added");

	pr_program *p = with_delegate(" target_device=\"Npu:1\"");
	pr_device d;
	err = pr_delegate_device(p->delegates[0], &d);
	cr_assert_null(err, "a registered type is a device");
	cr_assert_str_eq(str(d), "npu:1");
	pr_program_free(p);
}

static int verify_errors(const char *device)
{
	char text[512];
	snprintf(text, sizeof text,
		 "passrun 1\nop aten::relu(Tensor self) -> Tensor\n"
		 "method @forward {\n  %%x: f32[2]@%s = input user \"x\"\n"
		 "  %%r: f32[2] = aten::relu(%%x)\n  return %%r\n}\n", device);
	pr_program *p = tu_parse(text);
	pr_diags diags;
	pr_diags_init(&diags, "t.pg");
	int n = pr_verify(p, &diags, "verifier");
	for (int i = 0; i < diags.n; i++)
		cr_assert_str_eq(diags.items[i].code, "E-PLACEMENT", "%s", diags.items[i].message);
	pr_diags_free(&diags);
	pr_program_free(p);
	return n;
}

/* The verifier asks the registry: host code may read a device of a type
 * registered host addressable in place, and no other device. */
Test(device, verifier_lets_host_code_read_host_addressable_types)
{
	cr_assert_eq(verify_errors("cuda:0"), 1, "a host op reads cuda memory");
	cr_assert_eq(verify_errors("shared:0"), 1, "an unregistered type is not host addressable");
	pr_device_type shared = {sizeof shared, "shared", true, 16};
	cr_assert_null(pr_device_type_add(&shared));
	cr_assert_eq(verify_errors("shared:0"), 0, "a host-addressable type is read in place");
	cr_assert_eq(verify_errors("cuda:0"), 1);
}
